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
    /// The model seam failed (resolving it, a cassette to load or remove).
    #[error(transparent)]
    Model(#[from] mnemo_llm::LlmError),
    /// An I/O step failed: what was being done, to which file or program.
    #[error("{action} {}: {source}", path.display())]
    IoAt {
        /// What was being done ("reading", "running", "copying into"…).
        action: &'static str,
        /// The file, directory or program.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A command of the binary under test failed where the harness needed it to succeed.
    #[error("{what} failed: {stderr}")]
    Child {
        /// What the command was for ("seeding the kill template").
        what: String,
        /// What it said on stderr (trimmed).
        stderr: String,
    },
    /// A check of the harness itself failed (not a trial's finding, which is a row).
    #[error("{0}")]
    Check(String),
    /// A store file read through a plain SQLite connection.
    #[error("{action} {}: {source}", path.display())]
    Sqlite {
        /// What was being read.
        action: &'static str,
        /// The store file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// JSON that did not parse: whose output or which file.
    #[error("{what}: {source}")]
    Json {
        /// The output or file.
        what: String,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// The cassette to replay could not be loaded.
    #[error("no cassette at {} (record one with --record): {source}", path.display())]
    NoCassette {
        /// The cassette directory.
        path: PathBuf,
        /// Why it did not load.
        source: mnemo_llm::LlmError,
    },
    /// The in-process mock model server did not start.
    #[error("starting the in-process mock server: {0}")]
    Mock(#[source] std::io::Error),
    /// A turn of a scripted demo failed.
    #[error("demo turn {turn}: {source}")]
    DemoTurn {
        /// The turn, from 1.
        turn: usize,
        /// The engine's error.
        source: mnemo_contract::CoreError,
    },
}

impl BenchError {
    /// A [`BenchError::IoAt`] for `map_err`, made only on failure: `.map_err(BenchError::io_at("reading", &path))`.
    pub fn io_at<'a>(
        action: &'static str,
        path: &'a std::path::Path,
    ) -> impl FnOnce(std::io::Error) -> BenchError + 'a {
        move |source| BenchError::IoAt { action, path: path.to_path_buf(), source }
    }
}
