//! `LlmReasoner`: the `Reasoner` of mnemo-contract over any [`ChatModel`].
//!
//! It builds the prompts (`prompts`), calls the model, then parses and validates the answer
//! (`validate`): every field is checked, ids must be among the given neighbours/candidates,
//! kinds must be known. An invalid answer is a reasoner `CoreError::ModelFailure` of kind
//! `BadAnswer` naming the task, the client and the model string that answered, and what was
//! wrong. The fake model goes through exactly this path, so offline runs exercise the code a
//! live model will.
use std::sync::Arc;

use async_trait::async_trait;
use mnemo_contract::{
    Candidate, CoreError, Extraction, Memory, MemoryId, ModelErrorKind, ModelInfo, ModelRole, Reasoner, Reconciled,
    Turn, Verdict,
};
use serde::Serialize;
use serde_json::Value;
use tracing::Instrument as _;

use crate::chat::{ChatModel, ChatRequest, ChatResponse, Repair};
use crate::prompts::{ClaimView, ExtractInput, MemoryView, PlanInput, ReconcileInput, ResolveForgetInput, Task};
use crate::validate;

/// The model asked for when none is configured.
pub const DEFAULT_MODEL: &str = "qwen-plus";
/// Default cap on answer tokens.
pub const DEFAULT_MAX_TOKENS: u32 = 2048;
/// The temperature of the one repair attempt. At 0 a model sent its refused answer back with
/// the problem often answers the same bytes again (seen with Qwen2.5 0.5B and 1.5B on
/// llama.cpp); a little sampling lets the correction take.
pub const REPAIR_TEMPERATURE: f32 = 0.3;

/// A reasoner that asks a chat model.
///
/// Model information travels with each result (an `Extraction` carries the model string its
/// answer echoed); there is no shared "last model" state. `model_info` says who is configured.
pub struct LlmReasoner {
    chat: Arc<dyn ChatModel>,
    model: String,
    extraction_model: Option<String>,
    max_tokens: u32,
    extract_max_tokens: Option<u32>,
    json_mode: bool,
    ask_dates: bool,
}

impl LlmReasoner {
    /// A reasoner over `chat`, asking for [`DEFAULT_MODEL`] at temperature 0.
    pub fn new(chat: Arc<dyn ChatModel>) -> Self {
        LlmReasoner {
            chat,
            model: DEFAULT_MODEL.to_string(),
            extraction_model: None,
            max_tokens: DEFAULT_MAX_TOKENS,
            extract_max_tokens: None,
            json_mode: true,
            ask_dates: false,
        }
    }
    /// Whether requests ask for JSON mode (`response_format = json_object`); the request says
    /// so, so a cassette's key records what was sent. Default: true.
    pub fn with_json_mode(mut self, json_mode: bool) -> Self {
        self.json_mode = json_mode;
        self
    }
    /// Ask for `model` (recorded in every request; the answer says who really answered).
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }
    /// Ask for `model` for extraction (a cheaper tier); default: the same as the others.
    pub fn with_extraction_model(mut self, model: impl Into<String>) -> Self {
        self.extraction_model = Some(model.into());
        self
    }
    /// Cap the answers' tokens.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }
    /// Cap extraction answers' tokens (default: the same cap as the others).
    pub fn with_extract_max_tokens(mut self, max_tokens: u32) -> Self {
        self.extract_max_tokens = Some(max_tokens);
        self
    }
    /// Ask extraction for absolute dates and validity intervals on turns that state a date
    /// (`[llm] ask_dates`; default off: see `LlmSettings::ask_dates`).
    pub fn with_ask_dates(mut self, ask_dates: bool) -> Self {
        self.ask_dates = ask_dates;
        self
    }
    /// The model asked for (reconcile, forget resolution).
    pub fn requested_model(&self) -> &str {
        &self.model
    }

    /// Send one task's prompt with `input` as the user message and validate the answer with
    /// `check`. An invalid answer is sent back once with what was wrong (one repair attempt);
    /// a second invalid answer is an error naming the task, who answered and the problem.
    async fn ask<I: Serialize, T>(
        &self,
        task: Task,
        input: &I,
        check: impl Fn(&Value, Vec<String>) -> Result<T, String>,
    ) -> Result<(T, ModelInfo), CoreError> {
        let user = serde_json::to_string(input).map_err(|e| {
            CoreError::model_message(
                ModelRole::Reasoner,
                ModelErrorKind::Other,
                format!("{}: could not encode the prompt input: {e}", task.name()),
            )
        })?;
        let (model, max_tokens) = match task {
            Task::Extract => (
                self.extraction_model.clone().unwrap_or_else(|| self.model.clone()),
                self.extract_max_tokens.unwrap_or(self.max_tokens),
            ),
            _ => (self.model.clone(), self.max_tokens),
        };
        let req = ChatRequest {
            model,
            system: task.system_prompt().to_string(),
            user,
            max_tokens,
            temperature: 0.0,
            json: self.json_mode,
            repair: None,
        };
        // Named and described as OpenTelemetry's GenAI conventions name a chat call, for the
        // traces exported over OTLP (docs/observability.md); the response fields are recorded
        // when the answer comes.
        let span = tracing::info_span!(
            "model_call",
            otel.name = %format_args!("chat {}", req.model),
            otel.kind = "client",
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = self.chat.configured().client.as_str(),
            gen_ai.request.model = %req.model,
            gen_ai.request.max_tokens = req.max_tokens,
            gen_ai.response.model = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            mnemo.task = task.name(),
            task = task.name(),
            model = %req.model,
        );
        self.ask_repairing(task, req, check).instrument(span).await
    }

    async fn ask_repairing<T>(
        &self,
        task: Task,
        mut req: ChatRequest,
        check: impl Fn(&Value, Vec<String>) -> Result<T, String>,
    ) -> Result<(T, ModelInfo), CoreError> {
        let mut first_problem: Option<String> = None;
        loop {
            let resp: ChatResponse = self.chat.chat(&req).await.map_err(|e| {
                let c = self.chat.configured();
                // The client's own kind (rate-limited, unavailable, a bad setting …) reaches the
                // caller: a door answers 429 to a rate limit, not 502.
                CoreError::model_message(
                    ModelRole::Reasoner,
                    e.kind(),
                    format!("{} call to {} model {:?} failed: {e}", task.name(), c.client.as_str(), req.model),
                )
            })?;
            let info = ModelInfo { client: resp.client, model: resp.model.clone() };
            let span = tracing::Span::current();
            span.record("gen_ai.response.model", resp.model.as_str());
            if let Some((input, output)) = resp.usage {
                span.record("gen_ai.usage.input_tokens", input);
                span.record("gen_ai.usage.output_tokens", output);
            }
            if resp.model.trim().is_empty() {
                return Err(CoreError::model_message(
                    ModelRole::Reasoner,
                    ModelErrorKind::BadAnswer,
                    format!(
                        "{} answer from {} client carries no model string; an answer without provenance is refused",
                        task.name(),
                        resp.client.as_str()
                    ),
                ));
            }
            let checked = validate::parse_json_lenient(&resp.content).and_then(|(v, fixes)| check(&v, fixes));
            match checked {
                Ok(t) => return Ok((t, info)),
                Err(problem) => match first_problem {
                    None => {
                        tracing::warn!(task = task.name(), model = %info.model, "invalid answer, one repair attempt: {problem}");
                        req.repair = Some(Repair { previous: resp.content.clone(), problem: problem.clone() });
                        req.temperature = REPAIR_TEMPERATURE;
                        first_problem = Some(problem);
                    }
                    Some(first) => {
                        let problem = if first == problem {
                            format!("{problem} (also after one repair attempt)")
                        } else {
                            format!("{problem} (after one repair attempt; the first answer: {first})")
                        };
                        return Err(invalid(task, &info, &problem, &resp.content));
                    }
                },
            }
        }
    }
}

/// The error for an invalid answer: task, who answered, what was wrong, and the answer's start.
fn invalid(task: Task, info: &ModelInfo, problem: &str, content: &str) -> CoreError {
    let mut head: String = content.chars().take(200).collect();
    if head.len() < content.len() {
        head.push('…');
    }
    CoreError::model_message(
        ModelRole::Reasoner,
        ModelErrorKind::BadAnswer,
        format!(
            "{} answer from {} model {:?} is invalid: {problem}; answer: {head:?}",
            task.name(),
            info.client.as_str(),
            info.model
        ),
    )
}

/// "memory N" in a step, N a whole number within 1..=`count`, becomes "memory " + `id(N)`; any
/// other number (out of range, or the start of a longer one) is left as written.
fn renumber_steps(step: &str, count: usize, id: impl Fn(i64) -> String) -> String {
    const WORD: &str = "memory ";
    let mut out = String::with_capacity(step.len());
    let mut rest = step;
    while let Some(at) = rest.find(WORD) {
        let (before, after) = rest.split_at(at + WORD.len());
        out.push_str(before);
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        match digits.parse::<i64>() {
            Ok(n) if n >= 1 && usize::try_from(n).is_ok_and(|n| n <= count) => out.push_str(&id(n)),
            _ => out.push_str(&digits),
        }
        rest = &after[digits.len()..];
    }
    out.push_str(rest);
    out
}

/// The numbers a prompt gives `n` memories: 1..=n (validation checks answers against them).
fn numbers(n: usize) -> Vec<MemoryId> {
    (1..=n as i64).map(MemoryId).collect()
}

/// The store id of the memory a prompt numbered `number` (validated to be within 1..=len).
fn id_at(memories: &[Memory], number: MemoryId) -> MemoryId {
    usize::try_from(number.0 - 1).ok().and_then(|i| memories.get(i)).map_or(number, |m| m.id)
}

fn candidate_view(c: &Candidate) -> MemoryView {
    MemoryView {
        id: None,
        kind: c.kind,
        content: c.content.clone(),
        claim: c.claim.as_ref().map(ClaimView::from),
        confirmed_at: None,
    }
}

#[async_trait]
impl Reasoner for LlmReasoner {
    async fn extract(&self, turn: &Turn) -> mnemo_contract::Result<Extraction> {
        let task = Task::Extract;
        let span = tracing::info_span!("extract", turn = turn.id.0);
        let ((items, notes), model) = self
            .ask(task, &ExtractInput::of(turn, self.ask_dates), |v, mut fixes| {
                // A small model's slips that have one meaning are mended, each said in the
                // turn's notes; what is still wrong goes back to the model once.
                let (v, mended) = validate::normalise_extraction(v);
                fixes.extend(mended);
                let items = validate::extraction(&v, turn.at)?;
                fixes.extend(validate::extraction_notes(&v)?);
                Ok((items, fixes))
            })
            .instrument(span)
            .await?;
        Ok(Extraction { items, model, notes })
    }

    async fn reconcile(&self, candidate: &Candidate, neighbours: &[Memory]) -> mnemo_contract::Result<Verdict> {
        Ok(self.reconcile_explained(candidate, neighbours).await?.verdict)
    }

    async fn reconcile_explained(
        &self,
        candidate: &Candidate,
        neighbours: &[Memory],
    ) -> mnemo_contract::Result<Reconciled> {
        let task = Task::Reconcile;
        if neighbours.is_empty() {
            // Nothing to relate to: novel without a call (no spend).
            return Ok(Reconciled { verdict: Verdict::Novel, reason: None, model: self.model_info() });
        }
        let input = ReconcileInput {
            candidate: candidate_view(candidate),
            neighbours: neighbours.iter().enumerate().map(|(i, m)| MemoryView::numbered(i + 1, m)).collect(),
        };
        let numbers = numbers(neighbours.len());
        let ((verdict, reason), model) =
            self.ask(task, &input, |v, _| Ok((validate::verdict(v, &numbers)?, validate::reason(v)))).await?;
        let verdict = match verdict {
            Verdict::Duplicate(n) => Verdict::Duplicate(id_at(neighbours, n)),
            Verdict::Contradicts(ns) => Verdict::Contradicts(ns.into_iter().map(|n| id_at(neighbours, n)).collect()),
            Verdict::Novel => Verdict::Novel,
        };
        Ok(Reconciled { verdict, reason, model })
    }

    async fn resolve_forget(&self, command: &str, candidates: &[Memory]) -> mnemo_contract::Result<Vec<MemoryId>> {
        let task = Task::ResolveForget;
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let input = ResolveForgetInput {
            command: command.to_string(),
            candidates: candidates.iter().enumerate().map(|(i, m)| MemoryView::numbered(i + 1, m)).collect(),
        };
        let numbers = numbers(candidates.len());
        let picked = self.ask(task, &input, |v, _| validate::forget_ids(v, &numbers)).await?.0;
        Ok(picked.into_iter().map(|n| id_at(candidates, n)).collect())
    }

    async fn plan(
        &self,
        task: &mnemo_contract::Task,
        lines: &[mnemo_contract::PlanLine],
    ) -> mnemo_contract::Result<mnemo_contract::Plan> {
        if lines.is_empty() {
            // Nothing to plan with: no model call (the plan says memory holds nothing).
            return Ok(mnemo_contract::plan::deterministic(task, lines).by(self.model_info()));
        }
        let input = PlanInput::of(task, lines);
        let numbers = numbers(lines.len());
        let (draft, model) = self.ask(Task::Plan, &input, |v, _| validate::plan(v, &numbers)).await?;
        let line_id = |n: MemoryId| usize::try_from(n.0 - 1).ok().and_then(|i| lines.get(i)).map_or(n, |l| l.id);
        // A step names memories by their number in the prompt; the plan names them by id.
        let steps =
            draft.steps.iter().map(|s| renumber_steps(s, lines.len(), |n| line_id(MemoryId(n)).to_string())).collect();
        let uses = draft
            .uses
            .into_iter()
            .map(|u| mnemo_contract::PlanUse { memory: line_id(u.memory), value: u.value })
            .collect();
        Ok(mnemo_contract::Plan { answer: draft.answer, steps, uses, model })
    }

    /// Who is configured to answer (the client and the model it was built with). What really
    /// answered travels with each result.
    fn model_info(&self) -> ModelInfo {
        self.chat.configured()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_renumbered_by_whole_numbers_in_range() {
        let id = |n: i64| format!("m{}", n + 40);
        assert_eq!(renumber_steps("use memory 1 and memory 12", 5, id), "use memory m41 and memory 12");
        assert_eq!(renumber_steps("memory 2, memory 5.", 5, id), "memory m42, memory m45.");
        assert_eq!(renumber_steps("no memory here", 5, id), "no memory here");
    }
}
