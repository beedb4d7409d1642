//! Errors of the local embedder.
use std::path::PathBuf;

/// What went wrong loading or running the model.
#[derive(Debug, thiserror::Error)]
pub enum LocalEmbedError {
    /// The model's files are not on disk.
    #[error(
        "model {name:?} is not installed: {} is missing in {}; run `mnemo models fetch {name}` \
         (it downloads into $MNEMO_MODELS or the platform cache dir), or point [embedder] dir at a \
         directory holding config.json, tokenizer.json and model.safetensors",
        missing,
        dir.display()
    )]
    ModelMissing {
        /// Catalogue name.
        name: String,
        /// Where it was looked for.
        dir: PathBuf,
        /// The first missing file.
        missing: String,
    },
    /// A static model's files are not on disk.
    #[error(
        "static model {name:?} is not installed: {} is missing in {}; run `mnemo models fetch {name}` \
         (it distils the model from its teacher, fetching the teacher first if need be), or point \
         [embedder] dir at a directory holding static.json, tokenizer.json and vectors.f32",
        missing,
        dir.display()
    )]
    StaticMissing {
        /// Catalogue name.
        name: String,
        /// Where it was looked for.
        dir: PathBuf,
        /// The first missing file.
        missing: String,
    },
    /// A model file could not be read or parsed.
    #[error("cannot load {}", file.display())]
    Load {
        /// The file.
        file: PathBuf,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Tokenisation failed.
    #[error("tokenising failed")]
    Tokenize(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The forward pass failed.
    #[error("the model's forward pass failed")]
    Forward(#[from] candle_core::Error),
    /// A setting is out of range.
    #[error("{0}")]
    Setting(String),
}

impl LocalEmbedError {
    /// The message with its whole source chain, for a config error's one line of text.
    pub fn chain(&self) -> String {
        let mut msg = self.to_string();
        let mut src = std::error::Error::source(self);
        while let Some(s) = src {
            msg.push_str(&format!(": {s}"));
            src = s.source();
        }
        msg
    }
}

impl From<LocalEmbedError> for mnemo_contract::CoreError {
    fn from(e: LocalEmbedError) -> Self {
        mnemo_contract::CoreError::model_message(
            mnemo_contract::ModelRole::Embedder,
            mnemo_contract::ModelErrorKind::Other,
            e.chain(),
        )
    }
}
