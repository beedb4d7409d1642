//! The one error type of mnemo-llm, mapped into `mnemo_core::CoreError` at the trait boundary
//! (`Reasoner` errors become `CoreError::Reasoner`, `Embedder` errors `CoreError::Embedder`).
use thiserror::Error;

/// What can go wrong between Mnemo and a model.
#[derive(Debug, Error)]
pub enum LlmError {
    /// The fake was sent a prompt it does not recognise. It refuses rather than guesses: a
    /// guess from the fake would look like model behaviour, and the fake proves plumbing only.
    #[error("fake-qwen does not recognise this prompt: {0}")]
    UnrecognisedPrompt(String),
    /// The request itself is wrong (e.g. JSON mode off where JSON is required).
    #[error("bad chat request: {0}")]
    BadRequest(String),
    /// A setting is out of range (names the setting).
    #[error("invalid setting: {0}")]
    InvalidSetting(String),
    /// The model could not be reached or answered with an error. Reserved for the live client
    /// and the cassette decorator (a cassette miss is this error, never a silent fallback).
    #[error("model unavailable: {0}")]
    Unavailable(String),
    /// A live call failed: the endpoint, the model asked for, the HTTP status if one came back,
    /// and how many attempts were made. Never the key.
    #[error("{endpoint} (model {model:?}) failed{}{}: {detail}",
        status.map(|s| format!(" with HTTP status {s}")).unwrap_or_default(),
        if *attempts > 1 { format!(" after {attempts} attempts") } else { String::new() })]
    Api {
        /// The URL called.
        endpoint: String,
        /// The model asked for.
        model: String,
        /// The HTTP status, if the server answered.
        status: Option<u16>,
        /// Attempts made.
        attempts: u32,
        /// What went wrong.
        detail: String,
    },
    /// The answer does not have the API's shape (no choices, no content, wrong vector count).
    #[error("{endpoint} (model {model:?}) answered in an unexpected shape: {detail}")]
    Shape {
        /// The URL called.
        endpoint: String,
        /// The model asked for.
        model: String,
        /// What was wrong.
        detail: String,
    },
    /// A cassette problem: a replay miss (names the request), an unreadable file, a write error.
    #[error("cassette: {0}")]
    Cassette(String),
}

impl LlmError {
    /// As a reasoner error of mnemo-core.
    pub fn into_reasoner(self) -> mnemo_core::CoreError {
        mnemo_core::CoreError::Reasoner(self.to_string())
    }
    /// As an embedder error of mnemo-core.
    pub fn into_embedder(self) -> mnemo_core::CoreError {
        mnemo_core::CoreError::Embedder(self.to_string())
    }
}
