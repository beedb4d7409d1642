//! `mnemo mcp`: remember, recall, forget, why, list, the agent turn, and the escalations a human
//! answers (`escalations`, `answer`, `dismiss`) as MCP tools over stdio, bound to one namespace.
//! stdout carries protocol messages only; logs go to stderr.
//!
//! When a `turn` or an assessed `recall` escalates and the client declared the elicitation
//! capability (form mode), the human is asked in the client itself (MCP elicitation): a form
//! naming the escalation, the task, the claim and the reasons, with one field, `answer`. An
//! answer is recorded as the escalation's answer from `human:user` (as the `answer` tool does)
//! and the same turn or recall runs again on it; a decline, a cancel, no answer within the
//! timeout ([`ELICITATION_TIMEOUT`], `MNEMO_MCP_ELICITATION_TIMEOUT_SECS`) or a failed request
//! leave the escalation open and return the escalating result. A client without the capability
//! sees no difference.
//!
//! A mistake a model can fix by calling again (a bad `about`, `raw` with `about`, an unknown
//! `detail`, an empty text, an id that names no memory, a page size out of range) comes back as
//! a tool error (`isError`) whose text says what to change: the model reads tool results, not
//! JSON-RPC errors (those reach the user, and are kept for protocol faults and the namespace
//! wall below).
//!
//! Every tool takes an optional `namespace`: omitted, it is the bound one; naming another is
//! refused with an `invalid_params` protocol error (a namespace is a hard partition, and one
//! MCP server speaks for one).
use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, ElicitRequestParams, ElicitationAction, ElicitationSchema, Implementation,
    JsonObject, PrimitiveSchemaDefinition, ServerCapabilities, ServerConfig, StringSchema,
};
use rmcp::service::{ElicitationMode, RequestContext, ServiceError};
use rmcp::{tool, tool_handler, tool_router, ErrorData, Peer, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use mnemo_agent::escalation::{AnswerForm, AnsweredEscalation, Escalation, EscalationId, EscalationStatus};
use mnemo_agent::memories::{MemoryPage, MemoryRecord};
use mnemo_agent::turn_view::clip;
use mnemo_agent::{
    AgentError, AgentRecall, Detail, ForgetAnswer, ForgetInput, RecallAnswer, RecallInput, RememberInput, Runtime,
    TurnInput,
};
use mnemo_contract::{ClaimKey, CoreError, ForgetCommand, IdRef, ListPage, MemoryId, Namespace, Status, Task};
use mnemo_core::engine::RecallOptions;

use crate::error::McpError;

/// The principal an MCP client speaks for: the operator who started the server.
pub const OPERATOR: &str = mnemo_agent::door::OPERATOR;

/// How long the human is given to answer an escalation asked in the client (MCP elicitation)
/// before the turn returns with the escalation still open: 10 minutes.
pub const ELICITATION_TIMEOUT: Duration = Duration::from_secs(600);

/// The environment variable that sets [`ELICITATION_TIMEOUT`] for `mnemo mcp`, in seconds;
/// `0` never asks in the client.
pub const ELICITATION_TIMEOUT_ENV: &str = "MNEMO_MCP_ELICITATION_TIMEOUT_SECS";

/// What asking the human in the client came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AskOutcome {
    /// They answered: the answer is recorded and the escalation closed.
    Answered,
    /// They declined: the escalation stays open.
    Declined,
    /// They closed the question without a choice: the escalation stays open.
    Cancelled,
    /// They accepted with an empty answer: nothing recorded, the escalation stays open.
    Empty,
    /// No answer within the timeout: the escalation stays open.
    TimedOut,
    /// The question could not be asked, or the answer not recorded: the escalation stays open.
    Failed,
}

/// The human asked in the client about an escalation (the `elicitation` field of a `turn`'s or
/// `recall`'s structured result; absent when nobody was asked).
#[derive(Clone, Debug, Serialize)]
pub struct Asked {
    /// The escalation asked about (`e3`).
    pub escalation: EscalationId,
    /// answered | declined | cancelled | empty | timed_out | failed.
    pub outcome: AskOutcome,
    /// What the human typed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The principal the answer is recorded from (`human:user`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The turn the answer is recorded as.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<String>,
    /// What happened, in words (the line the text shows).
    pub note: String,
}

/// `remember`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RememberParams {
    /// The turn: one or more lines. Tagged lines are typed memories for the offline model:
    /// `[SEM] entity | attribute | value`, `[PROC] …`, `[EPI] …`, `[FORGET] entity | attribute`.
    pub text: String,
    /// Who said it. Only sources declared in the server's config count as distinct
    /// corroboration; any other label counts as the operator ("user").
    #[serde(default)]
    pub source: Option<String>,
    /// Makes the write idempotent: a retry with the same key answers the turn first recorded
    /// (status already_recorded); the same key with another text is refused.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// When it was said (default: now): RFC 3339 (`2026-05-01T09:00:00Z`) or a date alone
    /// (`2026-05-01`, midnight UTC). At most a day ahead of the clock, and never before the
    /// namespace's last turn: send a past conversation's turns oldest first.
    #[serde(default)]
    pub at: Option<String>,
    /// The namespace; must be the one this server is bound to (default).
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `recall`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecallParams {
    /// What to recall (free text).
    pub query: String,
    /// Token budget of the pack (default from the server's config). The text of a compact
    /// result holds at most this many tokens plus a fixed overhead (96) for its header and
    /// decision line; budgets above the engine's maximum are clamped (the notes say so).
    #[serde(default)]
    pub budget: Option<u64>,
    /// Retrieval signals: lexical (or bm25), dense (or vector) or hybrid (default from the
    /// server's config).
    #[serde(default)]
    pub mode: Option<String>,
    /// The claim the task is about, `entity | attribute`: it is load-bearing, and the decision
    /// is ESCALATE when nothing recalled asserts it.
    #[serde(default)]
    pub about: Option<String>,
    /// Plain retrieval: no grounding, no grade, no decision.
    #[serde(default)]
    pub raw: Option<bool>,
    /// `compact` (default): the packed memories as prompt-ready lines within the budget, and
    /// the decision. `full`: the pack with every candidate of its trace, full provenance, the
    /// assessment and the verdict (large: tens of thousands of tokens).
    #[serde(default)]
    pub detail: Option<String>,
    /// What memory held at this past time instead of now (RFC 3339 or a date): memories
    /// recorded later are absent, those superseded or forgotten later are present; graded as of
    /// then, without asking the systems of record, and no escalation is raised.
    #[serde(default)]
    pub as_of: Option<String>,
    /// Only episodes recorded at or after this time (RFC 3339 or a date); facts and rules are
    /// not windowed.
    #[serde(default)]
    pub since: Option<String>,
    /// Only episodes recorded before this time (RFC 3339 or a date).
    #[serde(default)]
    pub until: Option<String>,
    /// What was true in the world at this time (RFC 3339 or a date), by the validity intervals
    /// the turns stated ("from 2019 to 2021"); replaced values included where they held.
    #[serde(default)]
    pub valid_at: Option<String>,
    /// The namespace; must be the one this server is bound to (default).
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `forget`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ForgetParams {
    /// What to forget: `entity | attribute`, or free text designating the memories.
    pub command: String,
    /// Write nothing: answer what the command would forget and keep, and why each matched.
    #[serde(default)]
    pub dry_run: bool,
    /// Let a free-text command take pinned memories too (an exact `entity | attribute` takes a
    /// pinned claim without it).
    #[serde(default)]
    pub include_pinned: bool,
    /// The namespace; must be the one this server is bound to (default).
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `erase`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EraseParams {
    /// What to erase: a memory id (`"m42"`), a turn id (`"t17"`), `entity | attribute` (every
    /// version of the claim), or with `subject` an entity name.
    pub what: String,
    /// `what` is a subject entity: every memory about it or naming it.
    #[serde(default)]
    pub subject: bool,
    /// Why (required; kept in the erasure record: write no erased value into it).
    pub reason: String,
    /// Write nothing: answer what would be erased.
    #[serde(default)]
    pub dry_run: bool,
    /// The namespace; must be the one this server is bound to (default).
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `why`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WhyParams {
    /// The memory id as remember, recall or list reported it (`"m42"`), or its number.
    pub id: IdArg,
    /// The namespace; must be the one this server is bound to (default).
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `history`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct HistoryParams {
    /// The claim, `entity | attribute` (e.g. `"Northwind Labs | lead time"`).
    pub claim: String,
    /// The namespace; must be the one this server is bound to (default).
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `list`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListParams {
    /// Only memories after this one: `next_after` of the previous page (omitted: from the first
    /// memory). An id as list reports it (`"m42"`), or its number.
    #[serde(default)]
    pub after: Option<IdArg>,
    /// Page size, 1 to 100 (default 20).
    #[serde(default)]
    pub limit: Option<i64>,
    /// Tombstoned (forgotten or superseded) memories too (default false).
    #[serde(default)]
    pub include_tombstoned: Option<bool>,
    /// The namespace; must be the one this server is bound to (default).
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `turn`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TurnParams {
    /// What was said this turn: it is remembered (as `remember` would), then used as the query
    /// of an assessed recall.
    pub text: String,
    /// The claim the task is about, `entity | attribute`: it is load-bearing, and the decision
    /// is ESCALATE when nothing recalled asserts it.
    #[serde(default)]
    pub about: Option<String>,
    /// Token budget of the recall (default from the server's config), as for `recall`.
    #[serde(default)]
    pub budget: Option<u64>,
    /// Who said it. Only sources declared in the server's config count as distinct
    /// corroboration; any other label counts as the operator ("user").
    #[serde(default)]
    pub source: Option<String>,
    /// `compact` (default): what the turn remembered, then the recall as `recall` shows it.
    /// `full`: the whole agent turn (the pack with its trace, the assessment, the verdict).
    #[serde(default)]
    pub detail: Option<String>,
    /// The namespace; must be the one this server is bound to (default).
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `escalations`' arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EscalationsParams {
    /// Only the open ones (default true).
    #[serde(default)]
    pub open_only: Option<bool>,
    /// The namespace; must be the one this server is bound to (default).
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `answer`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AnswerParams {
    /// The escalation (`"e3"`).
    pub id: EscalationIdArg,
    /// The human's answer as given: the value alone ("Carla") or a sentence.
    pub text: String,
    /// Who answers: the operator who started this server ("user", the default), recorded as
    /// `human:user`; no other name is taken.
    #[serde(default)]
    pub by: Option<String>,
    /// The namespace; must be the one this server is bound to (default).
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `dismiss`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DismissParams {
    /// The escalation (`"e3"`).
    pub id: EscalationIdArg,
    /// Who dismisses it: the operator who started this server ("user", the default).
    #[serde(default)]
    pub by: Option<String>,
    /// The namespace; must be the one this server is bound to (default).
    #[serde(default)]
    pub namespace: Option<String>,
}

/// An escalation id as a model sends it: `"e3"` as a turn and `escalations` report it, or a
/// number.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum EscalationIdArg {
    // No doc comments on the variants: they would be repeated in every tools/list.
    #[allow(missing_docs)]
    Number(i64),
    #[allow(missing_docs)]
    Text(String),
}

impl EscalationIdArg {
    /// The id, or what to send instead.
    fn id(&self) -> Result<EscalationId, String> {
        let parsed = match self {
            EscalationIdArg::Number(n) => u32::try_from(*n).ok().filter(|n| *n > 0).map(EscalationId),
            EscalationIdArg::Text(t) => t.parse().ok(),
        };
        parsed.ok_or_else(|| {
            let given = match self {
                EscalationIdArg::Number(n) => n.to_string(),
                EscalationIdArg::Text(t) => format!("{t:?}"),
            };
            format!("id {given} is not an escalation id: send it as the turn or `escalations` reported it (e3)")
        })
    }
}

/// Default page size of `list` (small: a model reads every line).
pub const LIST_DEFAULT: usize = 20;
/// Largest page `list` returns.
pub const LIST_MAX: usize = 100;

/// An id as a model sends it: `"m42"` as remember, recall and list report it, or a number.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum IdArg {
    /// `42`: the 42nd memory of the namespace (or a stored id, as `detail: "full"` shows).
    Number(i64),
    /// `"m42"` (or `"42"`).
    Text(String),
}

impl IdArg {
    /// The id as written, or what to send instead.
    fn id_ref(&self) -> Result<IdRef, String> {
        let parsed = match self {
            IdArg::Number(n) => IdRef::from_number(*n),
            IdArg::Text(t) => t.parse::<IdRef>(),
        };
        parsed.map_err(|_| {
            let given = match self {
                IdArg::Number(n) => n.to_string(),
                IdArg::Text(t) => format!("{t:?}"),
            };
            format!("id {given} is not a memory id: send it as remember, recall or list reported it (m42)")
        })
    }
}

/// The MCP server over one runtime and one namespace.
#[derive(Clone)]
pub struct MnemoMcp {
    rt: Arc<Runtime>,
    ns: Namespace,
    with_vectors: bool,
    elicitation_timeout: Option<Duration>,
    tool_router: ToolRouter<Self>,
}

impl MnemoMcp {
    /// A server for `ns` over `rt`.
    pub fn new(rt: Arc<Runtime>, ns: Namespace) -> Self {
        let mut tool_router = Self::tool_router();
        // Erasure cannot be undone: offered only when the config says so (`[mcp] erase = true`).
        if !rt.config().mcp_erase() {
            tool_router.remove_route("erase");
        }
        MnemoMcp { rt, ns, with_vectors: false, elicitation_timeout: Some(ELICITATION_TIMEOUT), tool_router }
    }

    /// How long a human asked in the client has to answer (default [`ELICITATION_TIMEOUT`]);
    /// None never asks in the client (an escalation is then answered with the `answer` tool).
    pub fn with_elicitation_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.elicitation_timeout = timeout.filter(|t| !t.is_zero());
        self
    }

    /// Keep embedding vectors in tool results (left out by default: nobody reads them).
    pub fn with_vectors(mut self, yes: bool) -> Self {
        self.with_vectors = yes;
        self
    }

    /// The bound namespace, or a refusal naming both when the call asks for another.
    fn namespace(&self, asked: Option<&str>) -> Result<&Namespace, ErrorData> {
        match asked.map(str::trim) {
            None | Some("") => Ok(&self.ns),
            Some(n) if n == self.ns.as_str() => Ok(&self.ns),
            Some(n) => Err(ErrorData::invalid_params(
                format!(
                    "namespace {n:?} refused: this MCP server is bound to namespace {:?} and serves no other",
                    self.ns.as_str()
                ),
                Some(serde_json::json!({"bound_namespace": self.ns.as_str(), "requested_namespace": n})),
            )),
        }
    }

    /// A structured tool result as a tenant is shown it (vectors left out unless asked for).
    fn result<T: serde::Serialize>(&self, v: &T) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::structured(self.json(v)?))
    }

    /// `v` as a tenant is shown it: ids as short ids, vectors left out unless asked for.
    fn json<T: serde::Serialize>(&self, v: &T) -> Result<serde_json::Value, ErrorData> {
        mnemo_agent::json_view::tenant_json(v, self.with_vectors)
            .map_err(|e| ErrorData::internal_error(format!("cannot encode the result: {e}"), None))
    }

    /// The memory `id` names in `ns`, or the tool error to answer (`tool` names the call).
    async fn memory_id(&self, tool: &str, ns: &Namespace, id: &IdArg) -> Result<MemoryId, CallToolResult> {
        let r = id.id_ref().map_err(|m| Self::fix_argument(tool, m))?;
        match self.rt.engine().memory_id(ns, r).await {
            Ok(id) => Ok(id),
            Err(e @ (CoreError::InvalidInput(_) | CoreError::NotFound(_))) => Err(Self::fix_argument(tool, e)),
            Err(e) => Err(Self::failed(tool, e)),
        }
    }

    /// What the engine refused or failed at: a tool-level error the caller sees.
    fn failed(what: &str, e: impl std::fmt::Display) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(format!("{what} failed: {e}"))])
    }

    /// An argument the model can correct: a tool error saying what to send instead.
    fn fix_argument(tool: &str, message: impl std::fmt::Display) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(format!("{tool}: {message}"))])
    }

    /// What the runtime refused on an escalation tool: an unknown id, a closed escalation, an
    /// empty text or name are the model's to fix (a tool error saying what); anything else failed.
    fn escalation_error(tool: &str, e: AgentError) -> CallToolResult {
        match e {
            AgentError::Core(e @ (CoreError::InvalidInput(_) | CoreError::NotFound(_))) => Self::fix_argument(tool, e),
            e => Self::failed(tool, e),
        }
    }

    /// A structured result whose text is `text`.
    fn with_text<T: serde::Serialize>(&self, v: &T, text: String) -> Result<CallToolResult, ErrorData> {
        let mut r = CallToolResult::structured(self.json(v)?);
        r.content = vec![ContentBlock::text(text)];
        Ok(r)
    }

    /// Save the index after a call; the store holds the truth already, so a failure is a
    /// warning (the next start rebuilds the index from the store).
    async fn flush(&self) {
        if let Err(e) = self.rt.engine().flush_index().await {
            tracing::warn!("the index could not be saved ({e}); the next start rebuilds it from the store");
        }
    }

    /// The source a label counts as: itself when declared in config, else the operator (the
    /// door rule of every local door, with a note when a label is not declared).
    fn source(&self, label: Option<&str>) -> (String, Option<String>) {
        mnemo_agent::door::operator_source(label, &self.rt.config().declared_sources())
    }

    /// Ask the human in the client about the open escalation `id` (when the client declared
    /// form elicitation and asking is on; None otherwise): on an answer, it is recorded as the
    /// escalation's answer from `human:user`. Never longer than the timeout; never an error
    /// (what went wrong is the outcome, and the escalation stays open).
    async fn ask_human(&self, peer: &Peer<RoleServer>, ns: &Namespace, id: EscalationId) -> Option<Asked> {
        let timeout = self.elicitation_timeout?;
        if !peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
            return None;
        }
        let e = match self.rt.escalation(ns, id).await {
            Ok(e) if e.is_open() => e,
            Ok(_) => return None,
            Err(err) => {
                tracing::warn!("escalation {id} could not be read to ask in the client: {err}");
                return None;
            }
        };
        let stays_open = |outcome: AskOutcome, note: String| Asked {
            escalation: id,
            outcome,
            answer: None,
            by: None,
            turn: None,
            note: format!("{note}; it stays open (the tool answer records their answer later)."),
        };
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question(&e),
            requested_schema: answer_schema(&e),
        };
        tracing::info!(escalation = %id, "asking the human in the client (elicitation)");
        let reply = match peer.create_elicitation_with_timeout(params, Some(timeout)).await {
            Ok(reply) => reply,
            Err(ServiceError::Timeout { timeout }) => {
                return Some(stays_open(
                    AskOutcome::TimedOut,
                    format!("Asked in the client: no answer to escalation {id} within {} s", timeout.as_secs()),
                ))
            }
            Err(err) => {
                tracing::warn!(escalation = %id, "asking in the client failed: {err}");
                return Some(stays_open(
                    AskOutcome::Failed,
                    format!("Escalation {id} could not be asked in the client ({})", clip(&err.to_string(), 160)),
                ));
            }
        };
        let answer = match reply.action {
            ElicitationAction::Accept => match reply.content.as_ref().and_then(|c| c.get("answer")) {
                Some(serde_json::Value::String(s)) => s.trim().to_string(),
                Some(v) if !v.is_null() => v.to_string(),
                _ => String::new(),
            },
            ElicitationAction::Decline => {
                return Some(stays_open(
                    AskOutcome::Declined,
                    format!("Asked in the client: the human declined to answer escalation {id}"),
                ))
            }
            _ => {
                return Some(stays_open(
                    AskOutcome::Cancelled,
                    format!("Asked in the client: the human closed the question on escalation {id} without answering"),
                ))
            }
        };
        if answer.is_empty() {
            return Some(stays_open(
                AskOutcome::Empty,
                format!("Asked in the client: escalation {id} came back with an empty answer, so nothing was recorded"),
            ));
        }
        let done = match self.rt.answer_escalation(ns, id, &answer, OPERATOR).await {
            Ok(done) => done,
            Err(err) => {
                let mut asked = stays_open(
                    AskOutcome::Failed,
                    format!(
                        "Asked in the client: the human answered escalation {id} with {:?}, but it could not be \
                         recorded ({})",
                        clip(&answer, 80),
                        clip(&err.to_string(), 160)
                    ),
                );
                asked.answer = Some(answer);
                return Some(asked);
            }
        };
        let (by, turn) = match &done.escalation.answer {
            Some(a) => (a.by.clone(), a.turn.to_string()),
            None => (format!("human:{OPERATOR}"), "?".to_string()),
        };
        let mut note = format!(
            "Asked in the client: {by} answered escalation {id} with {:?} (recorded as turn {turn}); the same task \
             ran again on it.",
            clip(&answer, 80)
        );
        for n in done.notes.iter().take(1) {
            note.push_str(&format!(" Note: {}", clip(n, 200)));
        }
        Some(Asked {
            escalation: id,
            outcome: AskOutcome::Answered,
            answer: Some(answer),
            by: Some(by),
            turn: Some(turn),
            note,
        })
    }

    /// A result with the human's reply in the client: the view (or full result) with an
    /// `elicitation` field, and its text (None: the JSON, as for a full result) with the line
    /// saying what the human did after the first `after` lines.
    fn asked_result<T: serde::Serialize>(
        &self,
        v: &T,
        text: Option<String>,
        asked: Option<&Asked>,
        after: usize,
    ) -> Result<CallToolResult, ErrorData> {
        let mut value = self.json(v)?;
        if let (Some(a), serde_json::Value::Object(m)) = (asked, &mut value) {
            m.insert("elicitation".into(), self.json(a)?);
        }
        let text = match (text, asked) {
            (None, _) => value.to_string(),
            (Some(t), None) => t,
            (Some(t), Some(a)) => {
                let mut lines: Vec<&str> = t.split_inclusive('\n').collect();
                let line = format!("{}\n", a.note);
                lines.insert(after.min(lines.len()), &line);
                lines.concat()
            }
        };
        let mut r = CallToolResult::structured(value);
        r.content = vec![ContentBlock::text(text)];
        Ok(r)
    }
}

/// The question an escalation asks the human in the client: the task, the claim, the reasons,
/// and what becomes of the answer.
fn question(e: &Escalation) -> String {
    let mut q = format!(
        "Mnemo cannot act on this without you (escalation {}, namespace {}).\nTask: {:?}\n",
        e.id,
        e.namespace.as_str(),
        clip(&e.task.query, 300)
    );
    if let Some(c) = &e.claim {
        q.push_str(&format!("About: {} | {}\n", c.entity, c.attribute));
    }
    for r in e.reasons.iter().take(3) {
        q.push_str(&format!("Why: {}\n", clip(r, 240)));
    }
    q.push_str(&format!(
        "Your answer is remembered as your word (human:{OPERATOR}) and the task runs again on it; the value alone \
         is enough. Decline to leave it open."
    ));
    q
}

/// The form of an escalation's question: one required string, `answer`.
fn answer_schema(e: &Escalation) -> ElicitationSchema {
    let description = match &e.claim {
        Some(c) => format!("The value of {} | {} (e.g. a name), or a sentence", c.entity, c.attribute),
        None => "Your answer, as you would say it".to_string(),
    };
    let answer = StringSchema::new().title("Answer").description(description).min_length(1);
    let properties =
        std::collections::BTreeMap::from([("answer".to_string(), PrimitiveSchemaDefinition::String(answer))]);
    ElicitationSchema::new(properties).with_required(vec!["answer".to_string()])
}

#[tool_router]
impl MnemoMcp {
    /// Remember a turn.
    #[tool(description = "Remember a turn of conversation: typed memories are extracted, reconciled against what is \
                       known (a newer value supersedes the old one, which is tombstoned, never deleted) and \
                       stored. Returns `status` (extracted, nothing_extracted: the turn is kept but \
                       no memory was written, or already_recorded), the turn id and what happened to \
                       each memory.")]
    async fn remember(&self, Parameters(p): Parameters<RememberParams>) -> Result<CallToolResult, ErrorData> {
        let ns = self.namespace(p.namespace.as_deref())?;
        if p.text.trim().is_empty() {
            return Ok(Self::fix_argument("remember", "text must not be empty: send the turn to remember"));
        }
        let at = match p.at.as_deref().map(mnemo_agent::door::parse_time).transpose() {
            Ok(at) => at,
            Err(e) => return Ok(Self::fix_argument("remember", format!("at {e}"))),
        };
        let (source, note) = self.source(p.source.as_deref());
        let input = RememberInput { source, text: p.text, idempotency_key: p.idempotency_key, at };
        let r = match self.rt.remember_input(ns, &input).await {
            Ok(mut r) => {
                r.notes.extend(note);
                self.result(&r)
            }
            Err(e) => Ok(Self::failed("remember", e)),
        };
        self.flush().await;
        r
    }

    /// Recall, ground and grade.
    #[tool(
        description = "Recall memories for a query into a token budget, re-check verifiable claims against the \
                       configured systems of record (a stale value is corrected), grade the pack and decide \
                       ACT or ESCALATE. The result is the packed memories as prompt-ready lines (content, kind, \
                       id, trust, why it is believed), within the budget plus a small fixed overhead, and the \
                       decision with the value(s) to act on or why to escalate. `detail: \"full\"` gives the \
                       whole trace and provenance instead (large). On ESCALATE, a client that supports \
                       elicitation asks the user first.",
        output_schema = recall_output_schema(),
        // Recall answers from memory and changes nothing the caller asked to change: what it
        // writes is the memory's own bookkeeping (when it was last recalled, a stale value a
        // system of record corrected), and on ESCALATE the answer a human chose to give in the
        // client's own form (elicitation), which is theirs, not the caller's. A client may call
        // it without asking the user. Not closed-world: it asks the configured systems of record.
        annotations(read_only_hint = true)
    )]
    async fn recall(
        &self,
        Parameters(p): Parameters<RecallParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let ns = self.namespace(p.namespace.as_deref())?;
        let about = match p.about.as_deref().map(str::parse::<ClaimKey>).transpose() {
            Ok(a) => a,
            Err(e) => return Ok(Self::fix_argument("recall", e)),
        };
        let mode = match p.mode.as_deref().map(str::parse).transpose() {
            Ok(m) => m,
            Err(e) => return Ok(Self::fix_argument("recall", e)),
        };
        let detail = match p.detail.as_deref().map(str::parse::<Detail>).transpose() {
            Ok(d) => d.unwrap_or_default(),
            Err(e) => return Ok(Self::fix_argument("recall", e)),
        };
        // A budget too large for the machine is clamped by the engine like any budget above
        // its maximum (the pack's notes say so), as over HTTP.
        let budget = p.budget.map(|b| usize::try_from(b).unwrap_or(usize::MAX));
        let mut times = [None; 4];
        let named = [("as_of", &p.as_of), ("since", &p.since), ("until", &p.until), ("valid_at", &p.valid_at)];
        for (slot, (name, t)) in times.iter_mut().zip(named) {
            match t.as_deref().map(mnemo_agent::door::parse_time).transpose() {
                Ok(t) => *slot = t,
                Err(e) => return Ok(Self::fix_argument("recall", format!("{name} {e}"))),
            }
        }
        let [as_of, since, until, valid_at] = times;
        let raw = p.raw.unwrap_or(false);
        let input = RecallInput { query: p.query, budget, mode, about, raw, detail, as_of, since, until, valid_at };
        let mut answer = self.rt.recall_input(ns, &input).await;
        let escalation = match &answer {
            Ok(RecallAnswer::Compact(view)) => {
                view.escalation.as_ref().and_then(|e| e.id.as_deref()).and_then(|id| id.parse().ok())
            }
            Ok(RecallAnswer::Full(turn)) => turn.escalation.as_ref().and_then(|e| e.id),
            _ => None,
        };
        let asked = match escalation {
            Some(id) => self.ask_human(&ctx.peer, ns, id).await,
            None => None,
        };
        if asked.as_ref().is_some_and(|a| a.outcome == AskOutcome::Answered) {
            // The same recall on the human's answer.
            answer = self.rt.recall_input(ns, &input).await;
        }
        let r = match answer {
            Ok(RecallAnswer::Compact(view)) => {
                let text = self.rt.render_recall(&view);
                self.asked_result(&view, Some(text), asked.as_ref(), 0)
            }
            Ok(RecallAnswer::Full(turn)) => self.asked_result(&turn, None, asked.as_ref(), 0),
            Ok(RecallAnswer::FullRaw(pack)) => self.result(&pack),
            Err(e) => Ok(Self::failed("recall", e)),
        };
        self.flush().await;
        r
    }

    /// Forget.
    #[tool(description = "Forget exactly what a command designates (`entity | attribute`, or free text): the \
                       memories are tombstoned with the command as the reason, never deleted. Free text takes \
                       only memories about it (a claim on it, or its own words; not a mention inside a URL, an \
                       e-mail address, a path or code) and never a pinned one unless `include_pinned`. With \
                       `dry_run` nothing is written: the answer lists what would be forgotten and kept, and \
                       why; preview before forgetting by free text.")]
    async fn forget(&self, Parameters(p): Parameters<ForgetParams>) -> Result<CallToolResult, ErrorData> {
        let ns = self.namespace(p.namespace.as_deref())?;
        let command = match ForgetCommand::parse_arg(&p.command) {
            Ok(c) => c,
            Err(m) => return Ok(Self::fix_argument("forget", m)),
        };
        let input =
            ForgetInput { source: OPERATOR.to_string(), command, dry_run: p.dry_run, include_pinned: p.include_pinned };
        let r = match self.rt.forget_input(ns, &input).await {
            Ok(ForgetAnswer::Forgotten(r)) => self.result(&r),
            Ok(ForgetAnswer::Preview(p)) => {
                /// A dry run's answer, as `POST forget` gives it.
                #[derive(serde::Serialize)]
                struct Preview<'a> {
                    dry_run: bool,
                    preview: &'a mnemo_core::engine::ForgetPreview,
                    text: String,
                }
                self.result(&Preview { dry_run: true, preview: &p, text: p.render() })
            }
            Err(e) => Ok(Self::failed("forget", e)),
        };
        self.flush().await;
        r
    }

    /// Erase (offered only with `[mcp] erase = true`).
    #[tool(description = "Erase for good, only when the user asks for it (a right-to-erasure request, a secret \
                       pasted by mistake): unlike forget, the content is removed from the store, the index and \
                       the raw turns, and cannot be brought back; a content-free record (time, reason) stays. \
                       `what`: a memory id (m42), a turn id (t17), `entity | attribute` (every version), or with \
                       `subject` an entity. Always call with `dry_run` first and show the user what would go. \
                       Offered because the config enables it ([mcp] erase = true; off by default).")]
    async fn erase(&self, Parameters(p): Parameters<EraseParams>) -> Result<CallToolResult, ErrorData> {
        let ns = self.namespace(p.namespace.as_deref())?;
        let what = match mnemo_agent::door::EraseWhat::parse_arg(&p.what, p.subject) {
            Ok(w) => w,
            Err(m) => return Ok(Self::fix_argument("erase", m)),
        };
        let input =
            mnemo_agent::door::EraseInput { what, reason: p.reason, dry_run: p.dry_run, by: OPERATOR.to_string() };
        let r = match self.rt.erase_input(ns, &input).await {
            Ok(r) => {
                let text = r.render();
                self.with_text(&r, text)
            }
            Err(e) => Ok(Self::failed("erase", e)),
        };
        self.flush().await;
        r
    }

    /// Explain a memory.
    #[tool(
        description = "Explain a memory by id: the turns it came from, what reinforced or corroborated it, and \
                       if it was forgotten, why, when and what superseded it.",
        // It reads a memory's history and writes nothing.
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn why(&self, Parameters(p): Parameters<WhyParams>) -> Result<CallToolResult, ErrorData> {
        let ns = self.namespace(p.namespace.as_deref())?;
        let id = match self.memory_id("why", ns, &p.id).await {
            Ok(id) => id,
            Err(refused) => return Ok(refused),
        };
        match self.rt.engine().why(ns, id).await {
            Ok(w) => self.result(&w),
            Err(e) => Ok(Self::failed("why", e)),
        }
    }

    /// The values a claim has had.
    #[tool(
        description = "The values a claim (`entity | attribute`) has had, oldest first: when memory recorded each, \
                       when and why it stopped holding it (superseded, forgotten), and its sources. To recall what \
                       memory held at a past time, call recall with `as_of`.",
        // It reads the store and writes nothing.
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn history(&self, Parameters(p): Parameters<HistoryParams>) -> Result<CallToolResult, ErrorData> {
        let ns = self.namespace(p.namespace.as_deref())?;
        let key = match p.claim.parse::<ClaimKey>() {
            Ok(k) => k,
            Err(e) => return Ok(Self::fix_argument("history", e)),
        };
        match self.rt.history_input(ns, &key).await {
            Ok(h) => {
                let text = h.text();
                self.with_text(&h, text)
            }
            Err(e) => Ok(Self::failed("history", e)),
        }
    }

    /// One page of the namespace's memories.
    #[tool(
        description = "List the namespace's memories, one page at a time, by id: one line per memory (id, kind, \
                       content, importance, and for a forgotten one why). `limit` 1 to 100 (default 20); pass \
                       `next_after` of a page as `after` for the next. Tombstoned memories only with \
                       `include_tombstoned`.",
        output_schema = list_output_schema(),
        // It reads the store and writes nothing.
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list(&self, Parameters(p): Parameters<ListParams>) -> Result<CallToolResult, ErrorData> {
        let ns = self.namespace(p.namespace.as_deref())?;
        let limit = match p.limit {
            None => LIST_DEFAULT,
            Some(l) if (1..=LIST_MAX as i64).contains(&l) => l as usize,
            Some(l) => {
                return Ok(Self::fix_argument(
                    "list",
                    format!("limit must be 1 to {LIST_MAX}, got {l}: page through with next_after instead"),
                ))
            }
        };
        let after = match &p.after {
            None => None,
            Some(a) => match self.memory_id("list", ns, a).await {
                Ok(id) => Some(id),
                Err(refused) => return Ok(refused),
            },
        };
        let include_tombstoned = p.include_tombstoned.unwrap_or(false);
        let page = ListPage { after, limit, include_tombstoned };
        match self.rt.list(ns, &page).await {
            Ok(page) => {
                let mut r = self.result(&page)?;
                r.content = vec![ContentBlock::text(render_page(ns, &page, include_tombstoned))];
                Ok(r)
            }
            Err(e) => Ok(Self::failed("list", e)),
        }
    }

    /// The agent turn: remember what was said, then recall, assess, decide.
    #[tool(
        description = "An agent turn: remember `text` (as `remember` does), then recall for it into a token budget, \
                       re-check verifiable claims, grade the pack and decide ACT or ESCALATE (as `recall` does, \
                       with `text` as the query). The result is one line of what the text wrote to memory, then \
                       the recall's prompt-ready lines and decision. `detail: \"full\"` gives the whole turn \
                       (large). On ESCALATE, a client that supports elicitation asks the user first; their \
                       answer is recorded and the turn runs again on it.",
        output_schema = turn_output_schema()
    )]
    async fn turn(
        &self,
        Parameters(p): Parameters<TurnParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let ns = self.namespace(p.namespace.as_deref())?;
        let about = match p.about.as_deref().map(str::parse::<ClaimKey>).transpose() {
            Ok(a) => a,
            Err(e) => return Ok(Self::fix_argument("turn", e)),
        };
        let detail = match p.detail.as_deref().map(str::parse::<Detail>).transpose() {
            Ok(d) => d.unwrap_or_default(),
            Err(e) => return Ok(Self::fix_argument("turn", e)),
        };
        let (source, note) = self.source(p.source.as_deref());
        // A budget too large for the machine is clamped by the engine, as for `recall`.
        let budget = p.budget.map(|b| usize::try_from(b).unwrap_or(usize::MAX));
        // The task and options `turn_input` runs the turn with, to run it again after an answer.
        let task = Task { query: p.text.clone(), about: about.clone().map(ClaimKey::into_pair) };
        let opts = RecallOptions { budget, ..RecallOptions::default() };
        let input = TurnInput { source, text: p.text, about, budget };
        let r = match self.rt.turn_input(ns, &input).await {
            Ok(mut t) => {
                if let Some(r) = t.remembered.as_mut() {
                    r.notes.extend(note);
                }
                let asked = match t.escalation.as_ref().and_then(|e| e.id) {
                    Some(id) => self.ask_human(&ctx.peer, ns, id).await,
                    None => None,
                };
                if asked.as_ref().is_some_and(|a| a.outcome == AskOutcome::Answered) {
                    // The same turn on the human's answer, without remembering the text again.
                    match self.rt.turn(ns, &task, &opts).await {
                        Ok(mut again) => {
                            self.rt.plan_turn(ns, &task, &mut again).await;
                            again.remembered = t.remembered.take();
                            t = again;
                        }
                        Err(e) => tracing::warn!("the turn could not run again on the human's answer: {e}"),
                    }
                }
                match detail {
                    Detail::Full => self.asked_result(&t, None, asked.as_ref(), 0),
                    Detail::Compact => {
                        let view = self.rt.turn_view(&t);
                        let text = self.rt.render_turn(&view);
                        // After the remembered line.
                        self.asked_result(&view, Some(text), asked.as_ref(), 1)
                    }
                }
            }
            // What the door rules refuse (an empty text) the model can correct.
            Err(AgentError::Core(e @ CoreError::InvalidInput(_))) => Ok(Self::fix_argument("turn", e)),
            Err(e) => Ok(Self::failed("turn", e)),
        };
        self.flush().await;
        r
    }

    /// What the agent asked a human.
    #[tool(
        description = "List the escalations (ESCALATE: what an agent turn could not decide and asks a human): \
                       id (e3), task, reasons, status. Open ones only unless `open_only: false`.",
        output_schema = escalations_output_schema(),
        // It reads the ledger of escalations and writes nothing.
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn escalations(&self, Parameters(p): Parameters<EscalationsParams>) -> Result<CallToolResult, ErrorData> {
        let ns = self.namespace(p.namespace.as_deref())?;
        let open_only = p.open_only.unwrap_or(true);
        match self.rt.escalations(ns, open_only).await {
            Ok(all) => {
                let text = render_escalations(ns, &all, open_only);
                // Serialised as the tenant reads it (short ids) by `with_text`, not here.
                #[derive(serde::Serialize)]
                struct List<'a> {
                    escalations: &'a [Escalation],
                }
                self.with_text(&List { escalations: &all }, text)
            }
            Err(e) => Ok(Self::escalation_error("escalations", e)),
        }
    }

    /// A human's answer to an escalation.
    #[tool(
        description = "Record the user's answer to an open escalation (e3): only what the user said, never a \
                       guess. It becomes memory from `human:NAME` (the value alone, e.g. \"Carla\", records the \
                       claim), the escalation closes, and the same task then acts on it.",
        output_schema = answer_output_schema(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn answer(&self, Parameters(p): Parameters<AnswerParams>) -> Result<CallToolResult, ErrorData> {
        let ns = self.namespace(p.namespace.as_deref())?;
        let id = match p.id.id() {
            Ok(id) => id,
            Err(m) => return Ok(Self::fix_argument("answer", m)),
        };
        let by = match mnemo_agent::door::answerer(p.by.as_deref(), OPERATOR) {
            Ok(by) => by,
            Err(m) => return Ok(Self::fix_argument("answer", m)),
        };
        let r = match self.rt.answer_escalation(ns, id, &p.text, &by).await {
            Ok(done) => {
                let text = render_answered(&done);
                self.with_text(&done, text)
            }
            Err(e) => Ok(Self::escalation_error("answer", e)),
        };
        self.flush().await;
        r
    }

    /// A human's dismissal of an escalation.
    #[tool(
        description = "Dismiss an open escalation (e3) the user says needs no answer: it closes and nothing is \
                       recorded (a new turn on the task escalates anew).",
        output_schema = escalation_output_schema(),
        // It closes the escalation for good, recording nothing: a client should ask first.
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn dismiss(&self, Parameters(p): Parameters<DismissParams>) -> Result<CallToolResult, ErrorData> {
        let ns = self.namespace(p.namespace.as_deref())?;
        let id = match p.id.id() {
            Ok(id) => id,
            Err(m) => return Ok(Self::fix_argument("dismiss", m)),
        };
        let by = match mnemo_agent::door::answerer(p.by.as_deref(), OPERATOR) {
            Ok(by) => by,
            Err(m) => return Ok(Self::fix_argument("dismiss", m)),
        };
        match self.rt.dismiss_escalation(ns, id, &by).await {
            Ok(e) => {
                let who = e.dismissal.as_ref().map(|d| d.by.as_str()).unwrap_or("?");
                let text = format!("escalation {} dismissed by {who}: nothing was recorded in memory.", e.id);
                self.with_text(&e, text)
            }
            Err(e) => Ok(Self::escalation_error("dismiss", e)),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MnemoMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mnemo", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "Mnemo long-term memory, namespace {:?}. `remember` what should outlive this conversation; \
                 `recall` before acting on a remembered fact and follow its decision (ESCALATE means ask a \
                 human); `turn` does both for one message; `forget` on request; `why` explains a memory; \
                 `list` pages through what is remembered. An ESCALATE records an escalation (e3): ask the user, \
                 then record their answer with `answer` (or `dismiss` it); `escalations` lists the open ones. \
                 A client that supports elicitation is asked for the user's answer itself (the result says \
                 what they did).",
                self.ns.as_str()
            ))
    }
}

/// The compact view's schema without its definitions, and the definitions (kept at the root of
/// a tool's output schema, where the view's `$ref`s point). Without the fields' descriptions:
/// an output schema is what a client checks structuredContent against (a model reads the text
/// content, and the tool's description says what it holds), and every tools/list answer
/// carries it twice (recall and turn).
fn agent_recall_schema() -> (serde_json::Value, Option<serde_json::Value>) {
    let mut compact = serde_json::to_value(schemars::schema_for!(AgentRecall)).unwrap_or_default();
    without_descriptions(&mut compact);
    let serde_json::Value::Object(mut compact) = compact else {
        return (serde_json::json!({"type": "object"}), None);
    };
    let defs = compact.remove("$defs");
    compact.remove("$schema");
    (serde_json::Value::Object(compact), defs)
}

/// `schema` without the `description` of itself or of any schema inside it (a property named
/// `description` is kept).
fn without_descriptions(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(m) => {
            m.remove("description");
            for (k, v) in m.iter_mut() {
                match (k.as_str(), v) {
                    ("properties" | "$defs", serde_json::Value::Object(props)) => {
                        props.values_mut().for_each(without_descriptions)
                    }
                    (_, v) => without_descriptions(v),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(without_descriptions),
        _ => {}
    }
}

/// An object schema of `anyOf` shapes with the compact view's definitions at its root.
fn any_of_schema(shapes: Vec<serde_json::Value>, defs: Option<serde_json::Value>) -> std::sync::Arc<JsonObject> {
    let mut root = JsonObject::new();
    root.insert("type".into(), "object".into());
    root.insert("anyOf".into(), serde_json::Value::Array(shapes));
    if let Some(defs) = defs {
        root.insert("$defs".into(), defs);
    }
    std::sync::Arc::new(root)
}

/// `turn`'s structured result: [`mnemo_agent::turn_view::AgentTurnView`] by default, the agent turn with `detail: "full"`.
fn turn_output_schema() -> std::sync::Arc<JsonObject> {
    let (recall, defs) = agent_recall_schema();
    let compact = serde_json::json!({
        "type": "object",
        "description": "detail = \"compact\" (default): what the text wrote, and the recall's compact view",
        "required": ["remembered", "recall"],
        "properties": {
            "remembered": {
                "type": "object",
                "description": "the remember report: status, turn, outcomes, notes, model",
                "required": ["status", "outcomes"]
            },
            "recall": recall,
            "elicitation": elicitation_schema()
        }
    });
    let full = serde_json::json!({
        "type": "object",
        "description": "detail = \"full\": the agent turn (remembered, pack with its trace, assessment, action, verdict)",
        "required": ["remembered", "pack", "assessment", "action", "verdict"]
    });
    any_of_schema(vec![compact, full], defs)
}

/// The `elicitation` field of `turn` and `recall`: the human asked in the client (present only
/// when they were).
fn elicitation_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "description": "the user asked in the client (elicitation) about the escalation",
        "required": ["escalation", "outcome", "note"],
        "properties": {
            "escalation": {"type": "string"},
            "outcome": {"enum": ["answered", "declined", "cancelled", "empty", "timed_out", "failed"]},
            "answer": {"type": "string"},
            "by": {"type": "string"},
            "turn": {"type": "string"},
            "note": {"type": "string"}
        }
    })
}

/// `list`'s structured result: the page (memories without their vectors, and `next_after`).
fn list_output_schema() -> std::sync::Arc<JsonObject> {
    let serde_json::Value::Object(schema) = serde_json::json!({
        "type": "object",
        "required": ["memories", "next_after"],
        "properties": {
            "memories": {
                "type": "array",
                "description": "the memories of the page, by id (as `why` shows them, without history)",
                "items": {
                    "type": "object",
                    "required": ["id", "kind", "content", "status"],
                    "properties": {
                        "id": {"type": ["integer", "string"], "description": "the memory id"},
                        "kind": {"type": "string", "description": "semantic | procedural | episodic"},
                        "content": {"type": "string"},
                        "importance": {"type": "number"},
                        "status": {"type": "string", "description": "active | tombstoned"}
                    }
                }
            },
            "next_after": {
                "type": ["integer", "string", "null"],
                "description": "pass as `after` for the next page; null on the last page"
            }
        }
    }) else {
        return std::sync::Arc::new(JsonObject::new());
    };
    std::sync::Arc::new(schema)
}

/// The escalation record as `escalations`, `answer` and `dismiss` return it, in brief (every
/// tools/list carries it three times): the fields a model acts on.
fn escalation_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "required": ["id", "task", "reasons", "status"],
        "properties": {"id": {"type": "string"}, "status": {"enum": ["open", "answered", "dismissed"]}}
    })
}

/// `escalations`' structured result.
fn escalations_output_schema() -> std::sync::Arc<JsonObject> {
    object_schema(serde_json::json!({
        "type": "object",
        "required": ["escalations"],
        "properties": {"escalations": {"type": "array", "items": escalation_schema()}}
    }))
}

/// `answer`'s structured result: the escalation, what recording the answer did (null when it
/// was not extracted), notes.
fn answer_output_schema() -> std::sync::Arc<JsonObject> {
    object_schema(serde_json::json!({
        "type": "object",
        "required": ["escalation", "remembered", "notes"],
        "properties": {"escalation": escalation_schema(), "remembered": {"type": ["object", "null"]}}
    }))
}

/// `dismiss`'s structured result: the escalation.
fn escalation_output_schema() -> std::sync::Arc<JsonObject> {
    object_schema(escalation_schema())
}

fn object_schema(v: serde_json::Value) -> std::sync::Arc<JsonObject> {
    match v {
        serde_json::Value::Object(m) => std::sync::Arc::new(m),
        _ => std::sync::Arc::new(JsonObject::new()),
    }
}

/// The text of `escalations`: a header, then a few lines per escalation.
fn render_escalations(ns: &Namespace, all: &[Escalation], open_only: bool) -> String {
    let which = if open_only { "open" } else { "open, answered and dismissed" };
    let mut text =
        format!("Mnemo escalations, namespace {}: {} ({which}).\n", ns.as_str(), plural(all.len(), "escalation"));
    for e in all {
        let about = e.claim.as_ref().map(|c| format!(" (about {} | {})", c.entity, c.attribute)).unwrap_or_default();
        text.push_str(&format!(
            "{} {}, raised {}x: {:?}{about}; pack trust {:.2} < {:.2}\n",
            e.id,
            e.status,
            e.raised,
            clip(&e.task.query, 160),
            e.trust,
            e.threshold
        ));
        for r in e.reasons.iter().take(3) {
            text.push_str(&format!("  why: {}\n", clip(r, 200)));
        }
        match (e.status, &e.answer, &e.dismissal) {
            (EscalationStatus::Open, _, _) => text.push_str(&format!(
                "  ask the user, then: answer {{id: \"{}\", text: <their answer>}} or dismiss {{id: \"{}\"}}\n",
                e.id, e.id
            )),
            (_, Some(a), _) => {
                text.push_str(&format!("  answered by {}: {:?} (turn {})\n", a.by, clip(&a.text, 160), a.turn))
            }
            (_, _, Some(d)) => text.push_str(&format!("  dismissed by {}\n", d.by)),
            _ => {}
        }
    }
    text
}

/// The text of `answer`: what was recorded, and the notes.
fn render_answered(done: &AnsweredEscalation) -> String {
    let e = &done.escalation;
    let mut text = match &e.answer {
        Some(a) => {
            let how = match (a.form, &e.claim) {
                (AnswerForm::Value, Some(c)) => {
                    format!("the value {:?} of {} | {}", a.value.as_deref().unwrap_or(""), c.entity, c.attribute)
                }
                (AnswerForm::Tagged, _) => "tagged lines, as written".to_string(),
                _ => "prose".to_string(),
            };
            let then = if a.form == AnswerForm::Prose { "" } else { "; the same task now acts on it" };
            format!("escalation {} answered by {}: recorded as turn {} ({how}){then}.", e.id, a.by, a.turn)
        }
        None => format!("escalation {} is {}.", e.id, e.status),
    };
    for n in &done.notes {
        text.push_str(&format!("\nNote: {}", clip(n, 300)));
    }
    text
}

/// The text of a `list` page: a header, then one line per memory.
fn render_page(ns: &Namespace, page: &MemoryPage, include_tombstoned: bool) -> String {
    let which = if include_tombstoned { "tombstoned included" } else { "active only" };
    let next = match page.next_after {
        Some(id) => format!("more: call list with after = {id}"),
        None => "last page".to_string(),
    };
    let mut text = format!(
        "Mnemo list, namespace {}: {} ({which}); {next}.\n",
        ns.as_str(),
        plural(page.memories.len(), "memory")
    );
    for m in &page.memories {
        text.push_str(&memory_line(m));
        text.push('\n');
    }
    text
}

/// One memory as a `list` line: id, kind, content, importance, pinned, and a tombstone's why.
fn memory_line(m: &MemoryRecord) -> String {
    let mut line = format!("{} [{}] {} (importance {:.2}", m.id, m.kind.as_str(), clip(&m.content, 240), m.importance);
    if m.pinned {
        line.push_str(", pinned");
    }
    line.push(')');
    if let Status::Tombstoned { reason, superseded_by, .. } = &m.status {
        line.push_str(&format!(" TOMBSTONED: {}", clip(reason, 120)));
        if let Some(by) = superseded_by {
            line.push_str(&format!(" (superseded by {by})"));
        }
    }
    line
}

/// `n` and the noun, plural unless one ("memory" → "memories").
fn plural(n: usize, noun: &str) -> String {
    match (n, noun.strip_suffix('y')) {
        (1, _) => format!("1 {noun}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        (_, None) => format!("{n} {noun}s"),
    }
}

/// `recall`'s structured result: the compact view by default, the full result (an agent turn,
/// or for `raw` a pack) with `detail: "full"`. MCP clients check structuredContent against the
/// declared schema, so both shapes are declared.
fn recall_output_schema() -> std::sync::Arc<JsonObject> {
    let (mut compact, defs) = agent_recall_schema();
    if let Some(serde_json::Value::Object(props)) = compact.get_mut("properties") {
        props.insert("elicitation".into(), elicitation_schema());
    }
    let full_turn = serde_json::json!({
        "type": "object",
        "description": "detail = \"full\": the agent turn (pack with its trace, assessment, action, verdict)",
        "required": ["pack", "assessment", "action", "verdict"]
    });
    let full_pack = serde_json::json!({
        "type": "object",
        "description": "detail = \"full\" with raw: the pack (items, trace, budget, used, notes)",
        "required": ["items", "trace", "budget", "used"]
    });
    any_of_schema(vec![compact, full_turn, full_pack], defs)
}

/// Serve `rt` for `ns` over stdin/stdout until the client closes the connection.
pub async fn serve_stdio(rt: Arc<Runtime>, ns: Namespace, with_vectors: bool) -> Result<(), McpError> {
    let server = MnemoMcp::new(rt.clone(), ns.clone())
        .with_vectors(with_vectors)
        .with_elicitation_timeout(Some(elicitation_timeout_from_env()?));
    tracing::info!(namespace = ns.as_str(), "MCP server on stdio");
    let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| McpError::Start(Box::new(e)))?;
    let reason = running.waiting().await.map_err(McpError::Join)?;
    tracing::info!(?reason, "MCP client gone");
    if let Err(e) = rt.engine().flush_index().await {
        tracing::warn!("the index could not be saved ({e}); the next start rebuilds it from the store");
    }
    Ok(())
}

/// The elicitation timeout `mnemo mcp` uses: [`ELICITATION_TIMEOUT_ENV`] in whole seconds (0:
/// never ask in the client; at most a day), else [`ELICITATION_TIMEOUT`]; any other value is an
/// error naming it, before the server starts.
fn elicitation_timeout_from_env() -> Result<Duration, McpError> {
    mnemo_agent::env::secs(ELICITATION_TIMEOUT_ENV, ELICITATION_TIMEOUT, mnemo_agent::env::MAX_TIMEOUT_SECS)
        .map_err(McpError::Setting)
}
