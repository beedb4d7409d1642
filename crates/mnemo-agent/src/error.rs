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
    /// A file could not be read.
    #[error("cannot read {file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// Why.
        source: std::io::Error,
    },
    /// The core (or a plugin) failed.
    #[error(transparent)]
    Core(#[from] mnemo_core::CoreError),
}
