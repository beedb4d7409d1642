//! The eval harness's errors. A scenario error always names the file, the line and the field.
use std::path::Path;

/// Everything that can go wrong while loading or running an evaluation.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A scenario file is malformed.
    #[error("{file}:{line}: field `{field}`: {message}")]
    Scenario {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// The field (a dotted path such as `probes[2].at`).
        field: String,
        /// What is wrong.
        message: String,
    },
    /// Reading or writing a file or directory failed.
    #[error("{path}: {message}")]
    Io {
        /// The path.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A run failed (engine, agent or store error), with where it happened.
    #[error("scenario {scenario:?} with config {config:?}: {message}")]
    Run {
        /// Scenario name.
        scenario: String,
        /// Config name.
        config: String,
        /// What went wrong.
        message: String,
    },
    /// A configuration file could not be loaded.
    #[error("config: {0}")]
    Config(String),
}

impl EvalError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, e: impl std::fmt::Display) -> Self {
        EvalError::Io { path: path.display().to_string(), message: e.to_string() }
    }
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, EvalError>;
