//! The errors of the benchmarks.
use std::path::PathBuf;

use thiserror::Error;

/// Result alias.
pub type Result<T, E = BenchError> = std::result::Result<T, E>;

/// What can go wrong in a benchmark.
#[derive(Debug, Error)]
pub enum BenchError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A data file is malformed: names the file and what is wrong.
    #[error("{file}: {what}")]
    Data {
        /// The file.
        file: PathBuf,
        /// What is wrong, and where.
        what: String,
    },
    /// A bad argument.
    #[error("invalid argument: {0}")]
    Arg(String),
    /// The engine or a backend failed.
    #[error(transparent)]
    Core(#[from] mnemo_contract::CoreError),
    /// The agent runtime failed (building it from config, a door's rule, a turn).
    #[error(transparent)]
    Agent(#[from] mnemo_agent::AgentError),
}
