//! The one error type of mnemo-core.
use thiserror::Error;

/// Result alias for mnemo-core.
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
    /// The store failed.
    #[error("store error: {0}")]
    Store(String),
    /// The index failed.
    #[error("index error: {0}")]
    Index(String),
    /// The embedder failed.
    #[error("embedder error: {0}")]
    Embedder(String),
    /// The reasoner (LLM or rules) failed or answered something invalid.
    #[error("reasoner error: {0}")]
    Reasoner(String),
    /// A grounder failed.
    #[error("grounder error: {0}")]
    Grounder(String),
    /// The assessor failed.
    #[error("assessor error: {0}")]
    Assessor(String),
    /// A turn was recorded durably, but deriving memories from it failed: it stays recorded and
    /// unextracted (no derived change was applied) and can be extracted again later.
    // The cause is part of the message (not a `#[source]`), so a chain printer says it once.
    #[error("turn {turn} was recorded but not extracted (`mnemo reextract` retries it): {error}")]
    Unextracted {
        /// The recorded turn.
        turn: crate::model::TurnId,
        /// Why extraction (or planning what it said) failed.
        error: Box<CoreError>,
    },
}
