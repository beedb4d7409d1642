//! One failure of a group commit's shared work (the write lock, recording the batch's turns)
//! answered to each caller of the batch: every caller gets an error of the same variant and
//! kind (so a door answers it the same way: busy stays busy, read-only stays read-only), and
//! the backend's cause with its whole chain: the cause is shared ([`share`]), not copied as
//! text.
use std::sync::Arc;

use mnemo_contract::error::CoreError;

type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A backend cause shared by every caller a group commit answers. It prints as the cause, and
/// its `source()` is the cause's own source, so an error-chain printer (a log line, a door's
/// message) sees the same chain as the original.
#[derive(Clone)]
struct SharedCause(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl SharedCause {
    fn of(cause: Cause) -> SharedCause {
        match cause.downcast::<SharedCause>() {
            Ok(already) => *already,
            Err(cause) => SharedCause(Arc::from(cause)),
        }
    }
}

impl std::fmt::Display for SharedCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Debug for SharedCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SharedCause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// `e` ready to be answered to many callers: its backend cause moved behind a shared pointer.
pub(crate) fn share(e: CoreError) -> CoreError {
    let shared = |cause: Cause| -> Cause { Box::new(SharedCause::of(cause)) };
    match e {
        CoreError::StoreFailure { kind, source } => CoreError::StoreFailure { kind, source: shared(source) },
        CoreError::IndexFailure { kind, source } => CoreError::IndexFailure { kind, source: shared(source) },
        CoreError::ModelFailure { role, kind, source } => {
            CoreError::ModelFailure { role, kind, source: shared(source) }
        }
        CoreError::Unextracted { turn, error } => CoreError::Unextracted { turn, error: Box::new(share(*error)) },
        other => other,
    }
}

/// A copy of `e` for one more caller: same variant, kind and message; a cause [`share`]d
/// keeps its whole chain, any other is kept as its message.
pub(crate) fn for_each_caller(e: &CoreError) -> CoreError {
    let cause = |source: &(dyn std::error::Error + Send + Sync + 'static)| -> Cause {
        match source.downcast_ref::<SharedCause>() {
            Some(shared) => Box::new(shared.clone()),
            None => Box::new(std::io::Error::other(source.to_string())),
        }
    };
    match e {
        CoreError::InvalidInput(m) => CoreError::InvalidInput(m.clone()),
        CoreError::InvalidUtf8 { valid_up_to, detail } => {
            CoreError::InvalidUtf8 { valid_up_to: *valid_up_to, detail: detail.clone() }
        }
        CoreError::Config(m) => CoreError::Config(m.clone()),
        CoreError::UnknownKind { origin, role, kind, known } => CoreError::UnknownKind {
            origin: origin.clone(),
            role: role.clone(),
            kind: kind.clone(),
            known: known.clone(),
        },
        CoreError::NotFound(m) => CoreError::NotFound(m.clone()),
        CoreError::StoreFailure { kind, source } => CoreError::StoreFailure { kind: *kind, source: cause(&**source) },
        CoreError::IndexFailure { kind, source } => CoreError::IndexFailure { kind: *kind, source: cause(&**source) },
        CoreError::ModelFailure { role, kind, source } => {
            CoreError::ModelFailure { role: *role, kind: *kind, source: cause(&**source) }
        }
        CoreError::Grounder(m) => CoreError::Grounder(m.clone()),
        CoreError::Assessor(m) => CoreError::Assessor(m.clone()),
        CoreError::Unextracted { turn, error } => {
            CoreError::Unextracted { turn: *turn, error: Box::new(for_each_caller(error)) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_contract::error::StoreErrorKind;

    #[test]
    fn a_copy_keeps_the_variant_the_kind_and_the_message() {
        let busy =
            CoreError::StoreFailure { kind: StoreErrorKind::Busy, source: Box::new(std::io::Error::other("locked")) };
        let copy = for_each_caller(&busy);
        assert_eq!(copy.store_kind(), Some(StoreErrorKind::Busy));
        assert_eq!(copy.to_string(), busy.to_string());
        let bad = CoreError::InvalidInput("time only moves forward".into());
        assert_eq!(for_each_caller(&bad).to_string(), bad.to_string());
    }

    /// The messages of `e`'s whole source chain, outermost first.
    fn chain(e: &dyn std::error::Error) -> Vec<String> {
        let mut out = vec![e.to_string()];
        let mut next = e.source();
        while let Some(s) = next {
            out.push(s.to_string());
            next = s.source();
        }
        out
    }

    /// A backend error with a cause of its own.
    #[derive(Debug)]
    struct Backend(std::io::Error);

    impl std::fmt::Display for Backend {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("disk I/O error")
        }
    }

    impl std::error::Error for Backend {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_shared_cause_keeps_its_whole_chain_for_every_caller() {
        let original = CoreError::StoreFailure {
            kind: StoreErrorKind::Busy,
            source: Box::new(Backend(std::io::Error::other("database is locked"))),
        };
        let want = chain(&original);
        assert_eq!(want.len(), 3, "{want:?}");
        let shared = share(original);
        assert_eq!(chain(&shared), want);
        for _ in 0..3 {
            let copy = for_each_caller(&shared);
            assert_eq!(copy.store_kind(), Some(StoreErrorKind::Busy));
            assert_eq!(chain(&copy), want, "every caller sees the backend's chain");
        }
        // Sharing twice does not nest.
        assert_eq!(chain(&share(for_each_caller(&shared))), want);
        // Inside an unextracted turn too.
        let inner = CoreError::IndexFailure {
            kind: mnemo_contract::error::IndexErrorKind::Unavailable,
            source: Box::new(Backend(std::io::Error::other("no route"))),
        };
        let wrapped = share(CoreError::Unextracted { turn: mnemo_contract::TurnId(7), error: Box::new(inner) });
        // (An unextracted turn says its error in its message; the error itself keeps the chain.)
        let CoreError::Unextracted { error, .. } = for_each_caller(&wrapped) else { panic!("still unextracted") };
        assert_eq!(chain(&*error), ["index error: disk I/O error", "disk I/O error", "no route"]);
    }
}
