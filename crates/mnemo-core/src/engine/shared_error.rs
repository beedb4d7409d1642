//! One failure of a group commit's shared work (the write lock, recording the batch's turns)
//! answered to each caller of the batch: every caller gets an error of the same variant and
//! kind (so a door answers it the same way: busy stays busy, read-only stays read-only), the
//! backend's cause kept as its message.
use crate::error::CoreError;

/// A copy of `e` for one more caller: same variant, kind and message.
pub(crate) fn for_each_caller(e: &CoreError) -> CoreError {
    let cause = |source: &(dyn std::error::Error + Send + Sync + 'static)| -> Box<dyn std::error::Error + Send + Sync> {
        Box::new(std::io::Error::other(source.to_string()))
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
        CoreError::Store(m) => CoreError::Store(m.clone()),
        CoreError::StoreFailure { kind, source } => CoreError::StoreFailure { kind: *kind, source: cause(&**source) },
        CoreError::IndexFailure { kind, source } => CoreError::IndexFailure { kind: *kind, source: cause(&**source) },
        CoreError::Embedder(m) => CoreError::Embedder(m.clone()),
        CoreError::ModelFailure { role, kind, source } => {
            CoreError::ModelFailure { role: *role, kind: *kind, source: cause(&**source) }
        }
        CoreError::Reasoner(m) => CoreError::Reasoner(m.clone()),
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
    use crate::error::StoreErrorKind;

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
}
