//! The door rules, once: what `remember`, `recall` and the agent `turn` take, checked here. The
//! CLI, HTTP and MCP translate their transport into these inputs (field names are the same at
//! every door: `text`, `source`, `idempotency_key`; `query`, `budget`, `mode`, `about`, `raw`,
//! `detail`) and the answers back; none of them holds a rule of its own.
use serde::{Deserialize, Serialize};

use mnemo_core::engine::{RecallOptions, RememberReport};
use mnemo_core::{ClaimKey, CoreError, Namespace, Pack, SearchMode, Task};

use crate::agent_view::{AgentRecall, Detail};
use crate::error::AgentError;
use crate::runtime::{AgentTurn, Runtime};

/// Remember a turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RememberInput {
    /// Who said it, as the door established it (the operator, a declared source, a token's
    /// principal).
    pub source: String,
    /// The turn's text: tagged lines for the offline model, or prose.
    pub text: String,
    /// Makes the write idempotent in its namespace (see [`Runtime::remember_idempotent`]).
    pub idempotency_key: Option<String>,
}

/// Recall (and, unless `raw`, ground, grade and decide).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecallInput {
    /// What to recall.
    pub query: String,
    /// Token budget of the pack (None: the config's; above the engine's maximum: clamped, with
    /// a note).
    pub budget: Option<usize>,
    /// Retrieval signal(s) (None: the config's).
    pub mode: Option<SearchMode>,
    /// The claim the task is about.
    pub about: Option<ClaimKey>,
    /// Plain retrieval: no grounding, no grade, no decision.
    pub raw: bool,
    /// What the answer holds.
    pub detail: Detail,
}

/// The agent turn: remember a message, then recall, assess and decide with it as the query.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnInput {
    /// Who said it.
    pub source: String,
    /// The message.
    pub text: String,
    /// The claim the task is about.
    pub about: Option<ClaimKey>,
    /// Token budget of the pack.
    pub budget: Option<usize>,
}

/// A recall as answered.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RecallAnswer {
    /// `detail = compact` (the default): what an agent reads.
    Compact(Box<AgentRecall>),
    /// `detail = full`, assessed: the agent turn (pack with its trace, assessment, verdict).
    Full(Box<AgentTurn>),
    /// `detail = full` with `raw`: the pack with its trace.
    FullRaw(Box<Pack>),
}

/// The principal a local door (the CLI, an MCP server on stdio) speaks for: the operator who
/// started it.
pub const OPERATOR: &str = "user";

/// The source a label given at a local door counts as: itself when declared in config
/// (`[sources] declared`) or the operator's own name, else the operator — with a note saying so
/// (one person's word is one source, however many labels it comes under). HTTP needs no such
/// rule: a token's principal is the source.
pub fn operator_source(label: Option<&str>, declared: &[String]) -> (String, Option<String>) {
    let label = label.map(str::trim).unwrap_or("");
    if label.is_empty() || label == OPERATOR || declared.iter().any(|d| d == label) {
        let s = if label.is_empty() { OPERATOR } else { label };
        return (s.to_string(), None);
    }
    (
        OPERATOR.to_string(),
        Some(format!(
            "source \"{label}\" is not declared in config ([sources] declared); it is the operator's word and \
             counts as \"{OPERATOR}\" (one source, however many labels)"
        )),
    )
}

/// Who answers or dismisses an escalation at a door: the door's own principal (a token's over
/// HTTP, the operator over MCP and the CLI's `--by` aside), never a name a caller picks — a
/// human's answer is memory with the highest standing. `by` may be left out or name that
/// principal (with or without `human:`); any other name is refused with what to send instead.
pub fn answerer(by: Option<&str>, principal: &str) -> Result<String, String> {
    match by.map(str::trim) {
        None | Some("") => Ok(principal.to_string()),
        Some(b) if b == principal || b.strip_prefix("human:") == Some(principal) => Ok(principal.to_string()),
        Some(b) => Err(format!(
            "an answer here is the word of \"{principal}\"; `by` = {b:?} names someone else (leave it out, or name \"{principal}\")"
        )),
    }
}

fn invalid(message: impl Into<String>) -> AgentError {
    AgentError::Core(CoreError::InvalidInput(message.into()))
}

fn non_empty(field: &str, text: &str) -> Result<(), AgentError> {
    if text.trim().is_empty() {
        return Err(invalid(format!("{field} must not be empty")));
    }
    Ok(())
}

impl Runtime {
    /// Remember `input` in `ns`: the text must not be empty; an idempotency key is applied
    /// under one lock per runtime (a look-up and its write are never split by another door's
    /// write of the same key).
    pub async fn remember_input(&self, ns: &Namespace, input: &RememberInput) -> Result<RememberReport, AgentError> {
        non_empty("text", &input.text)?;
        match input.idempotency_key.as_deref() {
            None => self.remember_turn(ns, &input.source, &input.text, None).await,
            Some(key) => {
                let _once = self.idempotency_lock().lock().await;
                self.remember_idempotent(ns, &input.source, &input.text, Some(key)).await
            }
        }
    }

    /// Recall `input` in `ns`.
    pub async fn recall_input(&self, ns: &Namespace, input: &RecallInput) -> Result<RecallAnswer, AgentError> {
        if input.raw && input.about.is_some() {
            return Err(invalid("`about` needs an assessed recall: drop `raw`, or drop `about` for plain retrieval"));
        }
        let opts = RecallOptions { budget: input.budget, mode: input.mode, ..RecallOptions::default() };
        if input.raw {
            let pack = self.engine().recall(ns, &input.query, &opts).await?;
            return Ok(match input.detail {
                Detail::Compact => RecallAnswer::Compact(Box::new(self.raw_recall_view(&pack))),
                Detail::Full => RecallAnswer::FullRaw(Box::new(pack)),
            });
        }
        let task = Task { query: input.query.clone(), about: input.about.clone().map(ClaimKey::into_pair) };
        let turn = self.turn(ns, &task, &opts).await?;
        Ok(match input.detail {
            Detail::Compact => RecallAnswer::Compact(Box::new(self.recall_view(&turn))),
            Detail::Full => RecallAnswer::Full(Box::new(turn)),
        })
    }

    /// The agent turn for `input` in `ns`.
    pub async fn turn_input(&self, ns: &Namespace, input: &TurnInput) -> Result<AgentTurn, AgentError> {
        non_empty("text", &input.text)?;
        let opts = RecallOptions { budget: input.budget, ..RecallOptions::default() };
        self.handle(ns, &input.source, &input.text, input.about.clone().map(ClaimKey::into_pair), &opts).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undeclared_labels_count_as_the_operator() {
        let declared = vec!["erp".to_string()];
        assert_eq!(operator_source(Some("erp"), &declared).0, "erp");
        assert_eq!(operator_source(Some("user"), &declared), ("user".to_string(), None));
        assert_eq!(operator_source(None, &declared), ("user".to_string(), None));
        let (s, note) = operator_source(Some("s2"), &declared);
        assert_eq!(s, "user");
        assert!(note.is_some_and(|n| n.contains("not declared")));
    }

    #[test]
    fn an_empty_text_is_refused_naming_the_field() {
        let e = non_empty("text", " \n").unwrap_err().to_string();
        assert!(e.contains("text must not be empty"), "{e}");
        assert!(non_empty("text", "hi").is_ok());
    }
}
