//! The one error type of mnemo-agent.
use thiserror::Error;

/// Errors of the agent runtime.
#[derive(Debug, Error)]
pub enum AgentError {
    /// A configuration file is wrong; names the file and the key.
    #[error("{file}: {message}")]
    Config {
        /// The file (or "embedded default", or a scenario's [settings]).
        file: String,
        /// What is wrong.
        message: String,
    },
    /// A file or directory could not be used.
    #[error("cannot {action} {file}: {error}")]
    Io {
        /// What was being done ("read", "create the data directory").
        action: &'static str,
        /// The path.
        file: String,
        /// Why (kept out of the error chain so it prints once).
        error: std::io::Error,
    },
    /// A plugin library could not be loaded or built.
    #[error(transparent)]
    Plugin(#[from] mnemo_plugin_host::HostError),
    /// Another process held the data directory lock for longer than the wait allows.
    #[error(
        "the data directory lock {path} is held by {holder}; gave up after {waited:?} \
         (MNEMO_LOCK_TIMEOUT_SECS sets the wait)"
    )]
    LockTimeout {
        /// The lock file.
        path: std::path::PathBuf,
        /// Who holds it, as it wrote itself into the lock file.
        holder: String,
        /// How long this process waited.
        waited: std::time::Duration,
    },
    /// The core (or a plugin) failed.
    #[error(transparent)]
    Core(#[from] mnemo_contract::CoreError),
    /// An idempotency key used before with another text: a retry sends the same turn again,
    /// so another text under the same key is a mistake, refused rather than answered with the
    /// first turn as if it were this one (HTTP 409).
    #[error(
        "idempotency key {key:?} was used by turn {turn} at {at} with another text; a retry must send the same \
         text, and a new turn needs a new key"
    )]
    IdempotencyConflict {
        /// The key as given.
        key: String,
        /// The turn first recorded under it.
        turn: mnemo_contract::TurnId,
        /// When.
        at: mnemo_contract::Timestamp,
    },
    /// An escalation already answered or dismissed, asked to be answered or dismissed again
    /// (HTTP 409): the message says who closed it and when.
    #[error("{0}")]
    EscalationClosed(String),
    /// A turn was recorded but not extracted, and the ledger that lists such turns for
    /// `mnemo reextract` could not be written either (a full disk): said, never silent.
    #[error(
        "turn {turn} was recorded but not extracted ({error}), and it could not be listed for \
         `mnemo reextract` ({ledger}); once the cause is fixed, send the turn again"
    )]
    UnlistedTurn {
        /// The recorded turn.
        turn: mnemo_contract::TurnId,
        /// Why extraction failed.
        error: String,
        /// Why the ledger could not be written.
        ledger: Box<AgentError>,
    },
}

/// What kind of failure an [`AgentError`] is, for a caller that branches on it (an embedded
/// door's exception class, a script): the same few kinds whatever the backend. Its name is
/// the snake_case form (`invalid_input`, `not_found`, …), in JSON and in `Display`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The caller's input is refused (it names what is wrong): fix it and send it again.
    InvalidInput,
    /// No such memory, turn, escalation (in this namespace).
    NotFound,
    /// The call contradicts what is recorded: an idempotency key used with another text, an
    /// escalation already closed.
    Conflict,
    /// Another writer holds the data directory, the store or the index: retrying later may work.
    Busy,
    /// The store or index cannot be written here: reads still work.
    ReadOnly,
    /// The model endpoint asked to slow down: back off and retry.
    RateLimited,
    /// A model call failed (the endpoint, its answer, the embedder).
    Model,
    /// The turn is recorded but nothing was derived from it (`reextract` retries it).
    Unextracted,
    /// A configuration file, setting, kind or plugin library is wrong.
    Config,
    /// What was asked is not something this backend or model does.
    Unsupported,
    /// Anything else: a damaged or full store, a failed grounder, an I/O error.
    Internal,
}

impl ErrorKind {
    /// The snake_case name (as serialised).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Busy => "busy",
            ErrorKind::ReadOnly => "read_only",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Model => "model",
            ErrorKind::Unextracted => "unextracted",
            ErrorKind::Config => "config",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Internal => "internal",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AgentError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            AgentError::Config { .. } | AgentError::Plugin(_) => ErrorKind::Config,
            AgentError::Io { error, .. } if error.kind() == std::io::ErrorKind::ReadOnlyFilesystem => {
                ErrorKind::ReadOnly
            }
            AgentError::Io { .. } => ErrorKind::Internal,
            AgentError::LockTimeout { .. } => ErrorKind::Busy,
            AgentError::Core(c) => core_kind(c),
            AgentError::IdempotencyConflict { .. } | AgentError::EscalationClosed(_) => ErrorKind::Conflict,
            AgentError::UnlistedTurn { .. } => ErrorKind::Unextracted,
        }
    }
}

/// The kind of a core error (see [`AgentError::kind`]).
pub fn core_kind(e: &mnemo_contract::CoreError) -> ErrorKind {
    use mnemo_contract::{CoreError, IndexErrorKind, ModelErrorKind, StoreErrorKind};
    match e {
        CoreError::InvalidInput(_) | CoreError::InvalidUtf8 { .. } => ErrorKind::InvalidInput,
        CoreError::Config(_) | CoreError::UnknownKind { .. } => ErrorKind::Config,
        CoreError::NotFound(_) => ErrorKind::NotFound,
        CoreError::StoreFailure { kind: StoreErrorKind::Busy, .. }
        | CoreError::IndexFailure { kind: IndexErrorKind::Busy, .. } => ErrorKind::Busy,
        CoreError::StoreFailure { kind: StoreErrorKind::ReadOnly, .. }
        | CoreError::IndexFailure { kind: IndexErrorKind::ReadOnly, .. } => ErrorKind::ReadOnly,
        CoreError::ModelFailure { kind, .. } => match *kind {
            ModelErrorKind::RateLimited => ErrorKind::RateLimited,
            ModelErrorKind::Config => ErrorKind::Config,
            ModelErrorKind::Unsupported => ErrorKind::Unsupported,
            _ => ErrorKind::Model,
        },
        CoreError::Unextracted { .. } => ErrorKind::Unextracted,
        CoreError::StoreFailure { .. }
        | CoreError::IndexFailure { .. }
        | CoreError::Grounder(_)
        | CoreError::Assessor(_) => ErrorKind::Internal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_contract::{CoreError, FailureMessage, ModelErrorKind, ModelRole, StoreErrorKind, TurnId};

    #[test]
    fn every_main_variant_has_its_kind() {
        let core = |c: CoreError| AgentError::Core(c).kind();
        assert_eq!(core(CoreError::InvalidInput("x".into())), ErrorKind::InvalidInput);
        assert_eq!(core(CoreError::NotFound("m9".into())), ErrorKind::NotFound);
        assert_eq!(core(CoreError::Config("x".into())), ErrorKind::Config);
        assert_eq!(core(CoreError::store(StoreErrorKind::Busy, FailureMessage("locked".into()))), ErrorKind::Busy);
        assert_eq!(core(CoreError::store(StoreErrorKind::ReadOnly, FailureMessage("ro".into()))), ErrorKind::ReadOnly);
        assert_eq!(core(CoreError::store(StoreErrorKind::Damaged, FailureMessage("bad".into()))), ErrorKind::Internal);
        let model = |k| core(CoreError::model(ModelRole::Reasoner, k, FailureMessage("429".into())));
        assert_eq!(model(ModelErrorKind::RateLimited), ErrorKind::RateLimited);
        assert_eq!(model(ModelErrorKind::Unavailable), ErrorKind::Model);
        assert_eq!(model(ModelErrorKind::Config), ErrorKind::Config);
        // A message-only failure (what the text-only `Store`/`Reasoner` variants were) keeps its kind.
        let bad_json = CoreError::model_message(ModelRole::Reasoner, ModelErrorKind::BadAnswer, "bad JSON");
        assert_eq!(core(bad_json), ErrorKind::Model);
        let other = CoreError::model_message(ModelRole::Reasoner, ModelErrorKind::Other, "call failed");
        assert_eq!(core(other), ErrorKind::Model);
        assert_eq!(core(CoreError::store_message(StoreErrorKind::Other, "no id")), ErrorKind::Internal);
        let x = CoreError::model_message(ModelRole::Reasoner, ModelErrorKind::BadAnswer, "x");
        let unextracted = CoreError::Unextracted { turn: TurnId(3), error: Box::new(x) };
        assert_eq!(core(unextracted), ErrorKind::Unextracted);
        let at = mnemo_contract::Timestamp(0);
        let conflict = AgentError::IdempotencyConflict { key: "k".into(), turn: TurnId(1), at };
        assert_eq!(conflict.kind(), ErrorKind::Conflict);
        assert_eq!(AgentError::EscalationClosed("answered".into()).kind(), ErrorKind::Conflict);
        let lock = AgentError::LockTimeout {
            path: "d/lock".into(),
            holder: "pid 1".into(),
            waited: std::time::Duration::from_secs(0),
        };
        assert_eq!(lock.kind(), ErrorKind::Busy);
        assert_eq!(AgentError::Config { file: "f".into(), message: "m".into() }.kind(), ErrorKind::Config);
    }

    #[test]
    fn grounder_and_assessor_kinds_stay_internal_and_a_bad_embedding_is_a_model_failure() {
        use mnemo_contract::{AssessorErrorKind, GrounderErrorKind};
        let core = |c: CoreError| AgentError::Core(c).kind();
        for kind in [GrounderErrorKind::Unavailable, GrounderErrorKind::BadAnswer, GrounderErrorKind::Other] {
            assert_eq!(core(CoreError::grounder_message(kind, "down")), ErrorKind::Internal, "{kind}");
        }
        for kind in [AssessorErrorKind::BadAnswer, AssessorErrorKind::Other] {
            assert_eq!(core(CoreError::assessor_message(kind, "refused")), ErrorKind::Internal, "{kind}");
        }
        // A plugin embedder's wrong answer is a model failure.
        let wrong = CoreError::model(ModelRole::Embedder, ModelErrorKind::BadAnswer, FailureMessage("2 dims".into()));
        assert_eq!(core(wrong), ErrorKind::Model);
        let other = CoreError::model_message(ModelRole::Embedder, ModelErrorKind::Other, "cache lost a vector");
        assert_eq!(core(other), ErrorKind::Model);
    }

    #[test]
    fn kinds_are_named_in_snake_case() {
        assert_eq!(ErrorKind::InvalidInput.to_string(), "invalid_input");
        assert_eq!(serde_json::to_string(&ErrorKind::RateLimited).unwrap(), "\"rate_limited\"");
        assert_eq!(serde_json::to_string(&ErrorKind::ReadOnly).unwrap(), "\"read_only\"");
    }
}
