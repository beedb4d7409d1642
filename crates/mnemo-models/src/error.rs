//! Errors of model lookup and fetching.
use std::path::PathBuf;

/// What went wrong, naming the file, URL or model.
#[derive(Debug, thiserror::Error)]
pub enum ModelsError {
    /// A name that is not in the catalogue.
    #[error("unknown model {name:?}; known models: {known}")]
    UnknownModel {
        /// The name asked for.
        name: String,
        /// The catalogue's names.
        known: String,
    },
    /// Neither `$MNEMO_MODELS` nor a platform cache directory is available.
    #[error("no models directory: set MNEMO_MODELS (this platform has no cache directory)")]
    NoModelsDir,
    /// A file operation failed.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The download failed.
    #[error("downloading {url} failed")]
    Http {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The download is not the pinned file.
    #[error("{what} of {url}: expected {expected}, got {got}; refusing to install it")]
    Mismatch {
        /// "sha256" or "size".
        what: &'static str,
        /// The URL.
        url: String,
        /// Pinned value.
        expected: String,
        /// Observed value.
        got: String,
    },
    /// The wheel is not a readable zip or lacks a needed file.
    #[error("wheel {}: {detail}", path.display())]
    Wheel {
        /// The wheel file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
}

/// Result alias.
pub type Result<T, E = ModelsError> = std::result::Result<T, E>;

impl ModelsError {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| ModelsError::Io { action, path, source }
    }
}
