//! The one error type of Mnemo (the contract and the engine).
use thiserror::Error;

/// Result alias for Mnemo.
pub type Result<T, E = CoreError> = std::result::Result<T, E>;

/// Everything that can go wrong in the core, and in the traits' implementations
/// (backends map their own errors into the closest variant, keeping the message).
#[derive(Debug, Error)]
pub enum CoreError {
    /// Input that the caller can fix: it names what is wrong.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A turn's bytes are not UTF-8.
    #[error("invalid UTF-8 in turn text at byte {valid_up_to}: {detail}")]
    InvalidUtf8 {
        /// Bytes before the first invalid sequence.
        valid_up_to: usize,
        /// What the decoder said.
        detail: String,
    },
    /// A configuration value or section is wrong.
    #[error("config error: {0}")]
    Config(String),
    /// No plugin of that kind is registered for the role.
    #[error("{origin}: unknown {role} kind {kind:?}; known kinds: {known}")]
    UnknownKind {
        /// Where it was asked for (file and section).
        origin: String,
        /// The role (store, index, embedder, ...).
        role: String,
        /// The kind asked for.
        kind: String,
        /// Comma-separated registered kinds.
        known: String,
    },
    /// A memory or turn was not found.
    #[error("not found: {0}")]
    NotFound(String),
    /// The store failed, its cause kept as the error's source (downcast it to the backend's
    /// error for detail; a [`FailureMessage`] when there is only a message) and classified, so a caller can match on what happened: wait and
    /// retry when `Busy`, read only when `ReadOnly`, restore when `Damaged`...
    #[error("store error: {source}")]
    StoreFailure {
        /// What kind of failure.
        kind: StoreErrorKind,
        /// The backend's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// The index failed, its cause kept as the error's source and classified, so a caller can
    /// match on what happened: rebuild from the store when `Damaged`/`Stale`, free space when
    /// `Full`, serve reads when `ReadOnly`...
    #[error("index error: {source}")]
    IndexFailure {
        /// What kind of failure.
        kind: IndexErrorKind,
        /// The backend's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// A model call failed or answered something invalid (the live client, a cassette, the fake,
    /// the reasoner's or embedder's own checks of an answer), its cause kept as the error's
    /// source (a [`FailureMessage`] when there is only a message) and classified, so a caller can retry when `Unavailable`/`RateLimited`,
    /// fix the key when `Unauthorized`, re-record when `CassetteMiss`...
    #[error("{role} error: {source}")]
    ModelFailure {
        /// Which seam: the reasoner or the embedder.
        role: ModelRole,
        /// What kind of failure.
        kind: ModelErrorKind,
        /// The client's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// A grounder failed: what happened, classified (retry a source that is `Unavailable`,
    /// distrust one that gives a `BadAnswer`), its cause kept as the error's source when there
    /// is one (a plugin host's error).
    #[error("grounder error: {0}")]
    Grounder(#[source] ClassifiedFailure<GrounderErrorKind>),
    /// The assessor failed: what happened, classified (an answer that cannot be applied, or
    /// anything else), its cause kept as the error's source when there is one.
    #[error("assessor error: {0}")]
    Assessor(#[source] ClassifiedFailure<AssessorErrorKind>),
    /// A turn was recorded durably, but deriving memories from it failed: it stays recorded and
    /// unextracted (no derived change was applied) and can be extracted again later.
    // The cause is part of the message (not a `#[source]`), so a chain printer says it once.
    #[error("turn {turn} was recorded but not extracted: {} failed, so nothing was derived from it (`mnemo reextract` retries it): {error}", error.derive_stage())]
    Unextracted {
        /// The recorded turn.
        turn: crate::model::TurnId,
        /// Why extraction (or planning what it said) failed.
        error: Box<CoreError>,
    },
}

/// What kind of store failure a [`CoreError::StoreFailure`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// Another writer holds the store (a lock not released in time): retrying later may work.
    Busy,
    /// The store cannot be written (read-only file, directory or mount): reads still work.
    ReadOnly,
    /// No space left for the write: reads still work; free space and retry.
    Full,
    /// The file is not a store of this program (another format or application).
    Foreign,
    /// The store was written by a newer version of this program.
    Newer,
    /// The store's content is damaged or cut off: restore it from a backup.
    Damaged,
    /// The store cannot be reached or opened (a missing server, a file that cannot be opened).
    Unavailable,
    /// Anything else.
    Other,
}

impl std::fmt::Display for StoreErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StoreErrorKind::Busy => "busy",
            StoreErrorKind::ReadOnly => "read-only",
            StoreErrorKind::Full => "full",
            StoreErrorKind::Foreign => "foreign",
            StoreErrorKind::Newer => "newer",
            StoreErrorKind::Damaged => "damaged",
            StoreErrorKind::Unavailable => "unavailable",
            StoreErrorKind::Other => "other",
        })
    }
}

/// What kind of index failure a [`CoreError::IndexFailure`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IndexErrorKind {
    /// The index is damaged (a missing or unreadable file, a failed search inside it): it is
    /// rebuilt from the store.
    Damaged,
    /// The index must be rebuilt before use (a failed commit, another store's index).
    Stale,
    /// No space left for the index's files.
    Full,
    /// The index's files cannot be written.
    ReadOnly,
    /// Another process holds the index.
    Busy,
    /// The index's server cannot be reached.
    Unavailable,
    /// Anything else.
    Other,
}

impl std::fmt::Display for IndexErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            IndexErrorKind::Damaged => "damaged",
            IndexErrorKind::Stale => "stale",
            IndexErrorKind::Full => "full",
            IndexErrorKind::ReadOnly => "read-only",
            IndexErrorKind::Busy => "busy",
            IndexErrorKind::Unavailable => "unavailable",
            IndexErrorKind::Other => "other",
        })
    }
}

/// Which model seam failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModelRole {
    /// The reasoner (extraction, planning).
    Reasoner,
    /// The embedder.
    Embedder,
}

impl std::fmt::Display for ModelRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ModelRole::Reasoner => "reasoner",
            ModelRole::Embedder => "embedder",
        })
    }
}

/// What kind of model failure a [`CoreError::ModelFailure`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ModelErrorKind {
    /// No answer (network, timeout, a server error): retrying later may work.
    Unavailable,
    /// The endpoint refused the key (HTTP 401/403).
    Unauthorized,
    /// Too many requests (HTTP 429): back off.
    RateLimited,
    /// The endpoint refused the request (another HTTP 4xx).
    Rejected,
    /// The answer does not have the API's shape.
    BadAnswer,
    /// A cassette has no recording of the request (or cannot be read or written).
    Cassette,
    /// The offline fake does not do this (it proves plumbing, it never guesses).
    Unsupported,
    /// A setting or the request is wrong.
    Config,
    /// Anything else.
    Other,
}

impl std::fmt::Display for ModelErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ModelErrorKind::Unavailable => "unavailable",
            ModelErrorKind::Unauthorized => "unauthorized",
            ModelErrorKind::RateLimited => "rate-limited",
            ModelErrorKind::Rejected => "rejected",
            ModelErrorKind::BadAnswer => "bad answer",
            ModelErrorKind::Cassette => "cassette",
            ModelErrorKind::Unsupported => "unsupported",
            ModelErrorKind::Config => "config",
            ModelErrorKind::Other => "other",
        })
    }
}

/// What kind of grounder failure a [`CoreError::Grounder`] is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GrounderErrorKind {
    /// The system of record cannot be reached or read (a refused connection, an HTTP error
    /// status, a file or database that cannot be opened or queried): retrying later may work.
    Unavailable,
    /// The source answered, but nothing that can be used as one value (not the shape the
    /// mapping expects, several values for one claim, an `as_of` that is no time).
    BadAnswer,
    /// Anything else (a mapping that names no real column, a failed lookup task, a plugin's own
    /// error).
    #[default]
    Other,
}

impl std::fmt::Display for GrounderErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GrounderErrorKind::Unavailable => "unavailable",
            GrounderErrorKind::BadAnswer => "bad answer",
            GrounderErrorKind::Other => "other",
        })
    }
}

/// What kind of assessor failure a [`CoreError::Assessor`] is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AssessorErrorKind {
    /// The assessor answered something that cannot be applied (a correction of a memory outside
    /// the assessed pack, an answer that is not the plugin ABI's JSON).
    BadAnswer,
    /// Anything else (a plugin's own error, corrections applied that do not match those asked
    /// for).
    #[default]
    Other,
}

impl std::fmt::Display for AssessorErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AssessorErrorKind::BadAnswer => "bad answer",
            AssessorErrorKind::Other => "other",
        })
    }
}

/// A failure of kind `K` with its message and, when there is one, the error that caused it
/// (the payload of [`CoreError::Grounder`] and [`CoreError::Assessor`]). It displays as its
/// message, and its `source()` is the cause itself, so a caller can downcast it to the
/// implementation's error (a plugin host's `HostError`). The cause is shared (`Arc`), so that
/// one failure can be answered, kind and cause intact, to every caller of a group commit.
#[derive(Clone, Debug)]
pub struct ClassifiedFailure<K> {
    kind: K,
    message: String,
    cause: Option<std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl<K: Copy> ClassifiedFailure<K> {
    /// A failure of `kind` with no underlying error, only what happened.
    pub fn new(kind: K, message: impl Into<String>) -> Self {
        ClassifiedFailure { kind, message: message.into(), cause: None }
    }

    /// A failure of `kind` caused by `cause`, saying what `cause` says.
    pub fn caused_by(kind: K, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        ClassifiedFailure { kind, message: cause.to_string(), cause: Some(std::sync::Arc::new(cause)) }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> K {
        self.kind
    }

    /// What happened, in words (the error's `Display`).
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// A message alone is a failure of kind `Other` (what `CoreError::Grounder(message.into())`
/// builds, as `CoreError::Grounder(message)` did before failures had kinds).
impl<K: Default> From<String> for ClassifiedFailure<K> {
    fn from(message: String) -> Self {
        ClassifiedFailure { kind: K::default(), message, cause: None }
    }
}

impl<K: Default> From<&str> for ClassifiedFailure<K> {
    fn from(message: &str) -> Self {
        ClassifiedFailure::from(message.to_string())
    }
}

impl<K> std::fmt::Display for ClassifiedFailure<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl<K: std::fmt::Debug> std::error::Error for ClassifiedFailure<K> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // The cause itself, not the `Arc` around it: downcasting it must find the cause's type.
        self.cause.as_deref().map(|c| c as &(dyn std::error::Error + 'static))
    }
}

/// A failure described by a message only (no underlying error to keep), for the `source` of a
/// classified failure.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct FailureMessage(pub String);

impl CoreError {
    /// An index failure of `kind`, keeping `source` as the cause.
    pub fn index(kind: IndexErrorKind, source: impl std::error::Error + Send + Sync + 'static) -> CoreError {
        CoreError::IndexFailure { kind, source: Box::new(source) }
    }

    /// An index failure of `kind` with no underlying error, only what happened.
    pub fn index_message(kind: IndexErrorKind, message: impl Into<String>) -> CoreError {
        CoreError::index(kind, FailureMessage(message.into()))
    }

    /// A model failure of `role` and `kind`, keeping `source` as the cause.
    pub fn model(
        role: ModelRole,
        kind: ModelErrorKind,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> CoreError {
        CoreError::ModelFailure { role, kind, source: Box::new(source) }
    }

    /// A model failure of `role` and `kind` with no underlying error, only what happened (it
    /// displays as "{role} error: {message}").
    pub fn model_message(role: ModelRole, kind: ModelErrorKind, message: impl Into<String>) -> CoreError {
        CoreError::model(role, kind, FailureMessage(message.into()))
    }

    /// The kind of model failure this is, looking through an unextracted turn's cause (None:
    /// not a model failure).
    pub fn model_kind(&self) -> Option<ModelErrorKind> {
        match self {
            CoreError::ModelFailure { kind, .. } => Some(*kind),
            CoreError::Unextracted { error, .. } => error.model_kind(),
            _ => None,
        }
    }

    /// The stage of deriving memories from a turn that this error stopped, for the message of
    /// [`CoreError::Unextracted`]: after a good extraction a failed embedding must not read as a
    /// failed extraction.
    pub fn derive_stage(&self) -> &'static str {
        match self {
            CoreError::ModelFailure { role: ModelRole::Embedder, .. } => "embedding (the extraction itself succeeded)",
            CoreError::ModelFailure { role: ModelRole::Reasoner, .. } => "the model (extraction or reconcile)",
            CoreError::Unextracted { error, .. } => error.derive_stage(),
            CoreError::InvalidInput(_) => "checking what the model extracted",
            _ => "storing what was extracted",
        }
    }

    /// The kind of index failure this is (None: not an index failure).
    pub fn index_kind(&self) -> Option<IndexErrorKind> {
        match self {
            CoreError::IndexFailure { kind, .. } => Some(*kind),
            CoreError::Unextracted { error, .. } => error.index_kind(),
            _ => None,
        }
    }

    /// A grounder failure of `kind`, keeping `source` as the cause (its message is the cause's).
    pub fn grounder(kind: GrounderErrorKind, source: impl std::error::Error + Send + Sync + 'static) -> CoreError {
        CoreError::Grounder(ClassifiedFailure::caused_by(kind, source))
    }

    /// A grounder failure of `kind` with no underlying error, only what happened.
    pub fn grounder_message(kind: GrounderErrorKind, message: impl Into<String>) -> CoreError {
        CoreError::Grounder(ClassifiedFailure::new(kind, message))
    }

    /// The kind of grounder failure this is (None: not a grounder failure).
    pub fn grounder_kind(&self) -> Option<GrounderErrorKind> {
        match self {
            CoreError::Grounder(failure) => Some(failure.kind()),
            CoreError::Unextracted { error, .. } => error.grounder_kind(),
            _ => None,
        }
    }

    /// An assessor failure of `kind`, keeping `source` as the cause (its message is the cause's).
    pub fn assessor(kind: AssessorErrorKind, source: impl std::error::Error + Send + Sync + 'static) -> CoreError {
        CoreError::Assessor(ClassifiedFailure::caused_by(kind, source))
    }

    /// An assessor failure of `kind` with no underlying error, only what happened.
    pub fn assessor_message(kind: AssessorErrorKind, message: impl Into<String>) -> CoreError {
        CoreError::Assessor(ClassifiedFailure::new(kind, message))
    }

    /// The kind of assessor failure this is (None: not an assessor failure).
    pub fn assessor_kind(&self) -> Option<AssessorErrorKind> {
        match self {
            CoreError::Assessor(failure) => Some(failure.kind()),
            CoreError::Unextracted { error, .. } => error.assessor_kind(),
            _ => None,
        }
    }

    /// A store failure of `kind`, keeping `source` as the cause.
    pub fn store(kind: StoreErrorKind, source: impl std::error::Error + Send + Sync + 'static) -> CoreError {
        CoreError::StoreFailure { kind, source: Box::new(source) }
    }

    /// A store failure of `kind` with no underlying error, only what happened (it displays as
    /// "store error: {message}").
    pub fn store_message(kind: StoreErrorKind, message: impl Into<String>) -> CoreError {
        CoreError::store(kind, FailureMessage(message.into()))
    }

    /// The kind of store failure this is, looking through an unextracted turn's cause
    /// (None: not a store failure with a kind).
    pub fn store_kind(&self) -> Option<StoreErrorKind> {
        match self {
            CoreError::StoreFailure { kind, .. } => Some(*kind),
            CoreError::Unextracted { error, .. } => error.store_kind(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unextracted_turn_says_which_stage_failed() {
        let turn = crate::model::TurnId(7);
        let no_vectors = CoreError::model_message(ModelRole::Embedder, ModelErrorKind::BadAnswer, "no vectors");
        let embed = CoreError::Unextracted { turn, error: Box::new(no_vectors) };
        let msg = embed.to_string();
        assert!(msg.contains("turn t7") && msg.contains("embedding (the extraction itself succeeded) failed"), "{msg}");
        let bad_json = CoreError::model_message(ModelRole::Reasoner, ModelErrorKind::BadAnswer, "bad JSON");
        let model = CoreError::Unextracted { turn, error: Box::new(bad_json) };
        assert!(model.to_string().contains("the model (extraction or reconcile) failed"), "{model}");
    }

    #[test]
    fn a_message_only_store_or_model_failure_has_its_kind_and_reads_as_before() {
        // The text-only `Store`/`Embedder`/`Reasoner` variants these replace said exactly this.
        let damaged = CoreError::store_message(StoreErrorKind::Damaged, "negative rev -1 in memories");
        assert_eq!(damaged.store_kind(), Some(StoreErrorKind::Damaged));
        assert_eq!(damaged.to_string(), "store error: negative rev -1 in memories");
        assert!(matches!(damaged, CoreError::StoreFailure { kind: StoreErrorKind::Damaged, .. }));
        let source = std::error::Error::source(&damaged).expect("the message is the source");
        assert!(source.is::<FailureMessage>() && source.source().is_none(), "{source:?}");

        let vectors = CoreError::model_message(ModelRole::Embedder, ModelErrorKind::BadAnswer, "3 vectors for 2 texts");
        assert_eq!(vectors.model_kind(), Some(ModelErrorKind::BadAnswer));
        assert_eq!(vectors.to_string(), "embedder error: 3 vectors for 2 texts");
        let not_json = CoreError::model_message(ModelRole::Reasoner, ModelErrorKind::BadAnswer, "not JSON");
        assert!(matches!(
            not_json,
            CoreError::ModelFailure { role: ModelRole::Reasoner, kind: ModelErrorKind::BadAnswer, .. }
        ));
        assert_eq!(not_json.to_string(), "reasoner error: not JSON");
        assert_eq!(not_json.store_kind(), None);
    }

    /// Stands for an implementation's own error (a plugin host's, a client's).
    #[derive(Debug, Error)]
    #[error("plugin p failed the lookup: connection refused")]
    struct ImplementationError;

    #[test]
    fn a_grounder_failure_keeps_its_kind_its_message_and_its_cause() {
        let e = CoreError::grounder(GrounderErrorKind::Unavailable, ImplementationError);
        assert_eq!(e.grounder_kind(), Some(GrounderErrorKind::Unavailable));
        assert_eq!(e.assessor_kind(), None);
        assert_eq!(e.to_string(), "grounder error: plugin p failed the lookup: connection refused");
        let payload = std::error::Error::source(&e).expect("the failure is the source");
        let cause = payload.source().expect("the cause is the failure's source");
        assert!(cause.downcast_ref::<ImplementationError>().is_some(), "{cause:?}");
        // A copy (one per caller of a group commit) keeps kind, message and cause.
        let CoreError::Grounder(failure) = &e else { unreachable!() };
        let copy = CoreError::Grounder(failure.clone());
        assert_eq!((copy.grounder_kind(), copy.to_string()), (e.grounder_kind(), e.to_string()));
        let cause = std::error::Error::source(&copy).and_then(|f| f.source());
        assert!(cause.is_some_and(|c| c.is::<ImplementationError>()));
    }

    #[test]
    fn a_message_alone_is_a_failure_of_kind_other_said_as_before() {
        let e = CoreError::Grounder("connection refused".into());
        assert_eq!(e.grounder_kind(), Some(GrounderErrorKind::Other));
        assert_eq!(e.to_string(), "grounder error: connection refused");
        let payload = std::error::Error::source(&e).expect("the failure is the source");
        assert!(payload.source().is_none(), "no cause behind a message");
        let e = CoreError::Assessor(String::from("no answer").into());
        assert_eq!(e.assessor_kind(), Some(AssessorErrorKind::Other));
        assert_eq!(e.to_string(), "assessor error: no answer");
        let e = CoreError::assessor_message(AssessorErrorKind::BadAnswer, "not JSON");
        assert_eq!(
            (e.assessor_kind(), e.to_string()),
            (Some(AssessorErrorKind::BadAnswer), "assessor error: not JSON".into())
        );
        let unextracted = CoreError::Unextracted {
            turn: crate::model::TurnId(1),
            error: Box::new(CoreError::grounder_message(GrounderErrorKind::BadAnswer, "two values")),
        };
        assert_eq!(unextracted.grounder_kind(), Some(GrounderErrorKind::BadAnswer));
    }
}
