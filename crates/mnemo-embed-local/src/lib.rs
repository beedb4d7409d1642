//! Mnemo's local sentence embedder: a sentence-transformers BERT model (all-MiniLM-L6-v2 first)
//! run on the CPU with candle, offline and keyless.
//!
//! - [`LocalEmbedder`]: `mnemo_contract::Embedder`: tokenise, BERT forward pass, mean pooling
//!   over the real tokens, L2 normalisation. A text longer than `max_tokens` word pieces is
//!   truncated (what sentence-transformers does; the default), or embedded in windows whose
//!   vectors are combined (`long_texts = "windows"`, [`LongTexts::Windows`]). Texts are
//!   embedded in batches of up to `batch_size` texts of the same token length (no padding), so a
//!   text gets bit-for-bit the vector it gets alone: persisted vectors stay comparable however
//!   they were batched.
//! - The model files (`config.json`, `tokenizer.json`, `model.safetensors`) are read from disk
//!   once per process and shared by every embedder built over the same directory. Nothing is
//!   downloaded here: `mnemo models fetch minilm` puts them in place (see `mnemo-models`).
//!
//! - [`StaticEmbedder`]: a static model distilled from the transformer ([`distill`]): one vector
//!   per word piece, a text's vector the normalised mean of its pieces'. No forward pass: a
//!   query embeds in microseconds instead of ~12 ms, at some cost in quality (bench/RESULTS.md).
//!
//! Registered plugins: `[embedder] kind = "static"` (settings: `model = "minilm-static"`, `dir`)
//! and `[embedder] kind = "local"` (settings: `model = "minilm"`, `dir` (a model
//! directory; default: the models directory's `<model>`), `batch_size = 32`, `max_tokens = 256`, `long_texts = "truncate"`).
//! A binary keeps the registration by linking the crate ([`link()`] or `use mnemo_embed_local as _;`).
#![deny(missing_docs)]

mod bert;
pub mod distill;
mod embedder;
mod error;
mod fit;
mod loaded;
mod model;
mod pca;
mod plugin;
mod static_embedder;
mod static_model;

pub use embedder::{LocalEmbedder, LocalSettings, LongTexts, DEFAULT_BATCH_SIZE, DEFAULT_MAX_TOKENS};
pub use error::LocalEmbedError;
pub use static_embedder::StaticEmbedder;
pub use static_model::{StaticManifest, STATIC_FILES};

/// How many distinct models (directory, max tokens) this process has loaded so far.
pub fn loaded_models() -> usize {
    model::loaded_count()
}

/// Does nothing; calling it makes a binary refer to this crate, so the linker keeps its plugin
/// registration.
pub fn link() {}
