//! The one error type of mnemo-llm, mapped into `mnemo_contract::CoreError` at the trait boundary
//! (`CoreError::ModelFailure` with the role, a kind, and this error kept as the source).
use mnemo_contract::{ModelErrorKind, ModelRole};
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
    /// The model could not be reached or answered with an error, outside an HTTP call (a live
    /// call's failure is [`LlmError::Api`], a cassette miss [`LlmError::Cassette`]).
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
    /// What kind of failure this is, for callers matching on it.
    pub fn kind(&self) -> ModelErrorKind {
        match self {
            LlmError::UnrecognisedPrompt(_) => ModelErrorKind::Unsupported,
            LlmError::BadRequest(_) | LlmError::InvalidSetting(_) => ModelErrorKind::Config,
            LlmError::Unavailable(_) => ModelErrorKind::Unavailable,
            LlmError::Api { status, .. } => match status {
                Some(401 | 403) => ModelErrorKind::Unauthorized,
                Some(429) => ModelErrorKind::RateLimited,
                Some(400..=499) => ModelErrorKind::Rejected,
                _ => ModelErrorKind::Unavailable,
            },
            LlmError::Shape { .. } => ModelErrorKind::BadAnswer,
            LlmError::Cassette(_) => ModelErrorKind::Cassette,
        }
    }

    /// As a reasoner error of mnemo-contract (this error kept as its source).
    pub fn into_reasoner(self) -> mnemo_contract::CoreError {
        mnemo_contract::CoreError::model(ModelRole::Reasoner, self.kind(), self)
    }
    /// As an embedder error of mnemo-contract (this error kept as its source).
    pub fn into_embedder(self) -> mnemo_contract::CoreError {
        mnemo_contract::CoreError::model(ModelRole::Embedder, self.kind(), self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_key_a_rate_limit_and_a_cassette_miss_are_told_apart() {
        let api = |status| LlmError::Api {
            endpoint: "https://x/v1/chat/completions".into(),
            model: "m".into(),
            status,
            attempts: 1,
            detail: "d".into(),
        };
        assert_eq!(api(Some(401)).into_reasoner().model_kind(), Some(ModelErrorKind::Unauthorized));
        assert_eq!(api(Some(429)).into_reasoner().model_kind(), Some(ModelErrorKind::RateLimited));
        assert_eq!(api(Some(503)).into_embedder().model_kind(), Some(ModelErrorKind::Unavailable));
        assert_eq!(api(None).into_reasoner().model_kind(), Some(ModelErrorKind::Unavailable));
        let miss = LlmError::Cassette("no recording of request abc".into()).into_reasoner();
        assert_eq!(miss.model_kind(), Some(ModelErrorKind::Cassette));
        // The message reads as before, and the client's error is the source.
        assert!(miss.to_string().starts_with("reasoner error: cassette: no recording"), "{miss}");
        let source = std::error::Error::source(&miss).and_then(|s| s.downcast_ref::<LlmError>());
        assert!(matches!(source, Some(LlmError::Cassette(_))));
    }
}
