//! Model calls and the tokens they used, per kind of call (`chat:extract`, `chat:reconcile`,
//! …, `embed`), over the whole process. A model client records each answered call
//! ([`record_model_call`]: mnemo-llm's seam does, around every client it hands out); whoever
//! reports on the process reads them ([`model_calls`]: a server's `GET /metrics`). Process-wide
//! because what it measures is: the calls of every component of the process, whoever built it.
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

/// What the calls of one kind used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallUsage {
    /// Calls answered.
    pub calls: u64,
    /// Prompt tokens, as the model reported them (none from a model that reports none).
    pub prompt_tokens: u64,
    /// Completion tokens, likewise.
    pub completion_tokens: u64,
}

static TALLY: Mutex<BTreeMap<String, CallUsage>> = Mutex::new(BTreeMap::new());

/// One answered call of `kind`, with the (prompt, completion) tokens the model reported.
pub fn record_model_call(kind: &str, tokens: Option<(u32, u32)>) {
    let mut tally = TALLY.lock().unwrap_or_else(PoisonError::into_inner);
    let row = tally.entry(kind.to_string()).or_default();
    row.calls += 1;
    if let Some((prompt, completion)) = tokens {
        row.prompt_tokens += u64::from(prompt);
        row.completion_tokens += u64::from(completion);
    }
}

/// Every kind of call made so far, with what it used.
pub fn model_calls() -> BTreeMap<String, CallUsage> {
    TALLY.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// The model tier a kind of call runs on: `extraction` (`chat:extract…`, the cheap model),
/// `embedding` (`embed`), or `reasoning` (every other chat: reconcile, forget resolution, plan).
pub fn tier_of(kind: &str) -> &'static str {
    if kind == "embed" {
        "embedding"
    } else if kind.starts_with("chat:extract") {
        "extraction"
    } else {
        "reasoning"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_add_up_per_kind_and_fall_in_their_tier() {
        let before = model_calls().get("test:usage").copied().unwrap_or_default();
        record_model_call("test:usage", Some((10, 2)));
        record_model_call("test:usage", None);
        let after = model_calls()["test:usage"];
        assert_eq!(after.calls - before.calls, 2);
        assert_eq!(
            (after.prompt_tokens - before.prompt_tokens, after.completion_tokens - before.completion_tokens),
            (10, 2)
        );
        assert_eq!(tier_of("chat:extract"), "extraction");
        assert_eq!(tier_of("chat:extract:repair"), "extraction");
        assert_eq!(tier_of("chat:reconcile"), "reasoning");
        assert_eq!(tier_of("chat:plan"), "reasoning");
        assert_eq!(tier_of("embed"), "embedding");
    }
}
