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
    Core(#[from] mnemo_core::CoreError),
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
        turn: mnemo_core::TurnId,
        /// When.
        at: mnemo_core::Timestamp,
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
        turn: mnemo_core::TurnId,
        /// Why extraction failed.
        error: String,
        /// Why the ledger could not be written.
        ledger: Box<AgentError>,
    },
}
