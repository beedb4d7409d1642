//! `mnemo mcp`: remember, recall, forget and why as MCP tools over stdio, bound to one
//! namespace. stdout carries protocol messages only; logs go to stderr.
//!
//! A mistake a model can fix by calling again (a bad `about`, `raw` with `about`, an unknown
//! `detail`, an empty text, an id that is no number) comes back as a tool error (`isError`) whose
//! text says what to change: the model reads tool results, not JSON-RPC errors (those reach the
//! user, and are kept for protocol faults and the namespace wall below).
//!
//! Every tool takes an optional `namespace`: omitted, it is the bound one; naming another is
//! refused with an `invalid_params` protocol error (a namespace is a hard partition, and one
//! MCP server speaks for one).
use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, JsonObject, ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, ErrorData, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;

use mnemo_agent::{AgentRecall, Detail, Runtime};
use mnemo_core::engine::RecallOptions;
use mnemo_core::{ForgetCommand, MemoryId, Namespace, Task};

use crate::error::McpError;

/// The principal an MCP client speaks for: the operator who started the server.
pub const OPERATOR: &str = "user";

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
    /// The namespace; must be the one this server is bound to (default).
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `forget`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ForgetParams {
    /// What to forget: `entity | attribute`, or free text designating the memories.
    pub command: String,
    /// The namespace; must be the one this server is bound to (default).
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `why`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WhyParams {
    /// The memory id (as reported by remember or recall), as a number or a string.
    pub id: IdArg,
    /// The namespace; must be the one this server is bound to (default).
    #[serde(default)]
    pub namespace: Option<String>,
}

/// An id as a model sends it: a number, or the same digits in a string.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum IdArg {
    /// `42`.
    Number(i64),
    /// `"42"`.
    Text(String),
}

impl IdArg {
    /// The memory id, or what to send instead.
    fn memory_id(&self) -> Result<MemoryId, String> {
        match self {
            IdArg::Number(n) => Ok(MemoryId(*n)),
            IdArg::Text(t) => t
                .trim()
                .parse::<i64>()
                .map(MemoryId)
                .map_err(|_| format!("id {t:?} is not a memory id: send the number recall or remember reported")),
        }
    }
}

/// The MCP server over one runtime and one namespace.
#[derive(Clone)]
pub struct MnemoMcp {
    rt: Arc<Runtime>,
    ns: Namespace,
    with_vectors: bool,
    tool_router: ToolRouter<Self>,
}

impl MnemoMcp {
    /// A server for `ns` over `rt`.
    pub fn new(rt: Arc<Runtime>, ns: Namespace) -> Self {
        MnemoMcp { rt, ns, with_vectors: false, tool_router: Self::tool_router() }
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
        let mut json = serde_json::to_value(v)
            .map_err(|e| ErrorData::internal_error(format!("cannot encode the result: {e}"), None))?;
        mnemo_agent::json_view::tenant_view(&mut json, self.with_vectors);
        Ok(CallToolResult::structured(json))
    }

    /// What the engine refused or failed at: a tool-level error the caller sees.
    fn failed(what: &str, e: impl std::fmt::Display) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(format!("{what} failed: {e}"))])
    }

    /// An argument the model can correct: a tool error saying what to send instead.
    fn fix_argument(tool: &str, message: impl std::fmt::Display) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(format!("{tool}: {message}"))])
    }

    /// A compact recall: the rendering is the text the model reads, the view its structure.
    fn compact(&self, view: &AgentRecall) -> Result<CallToolResult, ErrorData> {
        let json = serde_json::to_value(view)
            .map_err(|e| ErrorData::internal_error(format!("cannot encode the result: {e}"), None))?;
        let mut r = CallToolResult::structured(json);
        r.content = vec![ContentBlock::text(self.rt.render_recall(view))];
        Ok(r)
    }

    /// Save the index after a call; the store holds the truth already, so a failure is a
    /// warning (the next start rebuilds the index from the store).
    async fn flush(&self) {
        if let Err(e) = self.rt.engine().flush_index().await {
            tracing::warn!("the index could not be saved ({e}); the next start rebuilds it from the store");
        }
    }

    /// The source a label counts as: itself when declared in config, else the operator.
    fn source(&self, label: Option<&str>) -> (String, Option<String>) {
        let label = label.map(str::trim).unwrap_or("");
        if label.is_empty() || label == OPERATOR {
            return (OPERATOR.to_string(), None);
        }
        if self.rt.config().declared_sources().iter().any(|d| d == label) {
            return (label.to_string(), None);
        }
        let note =
            format!("source {label:?} is not declared in config ([sources] declared); it counts as \"{OPERATOR}\"");
        (OPERATOR.to_string(), Some(note))
    }
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
        let (source, note) = self.source(p.source.as_deref());
        let r = match self.rt.remember_turn(ns, &source, &p.text, None).await {
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
                       whole trace and provenance instead (large).",
        output_schema = recall_output_schema(),
        // Recall answers from memory and changes nothing the caller asked to change: what it
        // writes is the memory's own bookkeeping (when it was last recalled, a stale value a
        // system of record corrected). A client may call it without asking the user. Not
        // closed-world: it asks the configured systems of record.
        annotations(read_only_hint = true)
    )]
    async fn recall(&self, Parameters(p): Parameters<RecallParams>) -> Result<CallToolResult, ErrorData> {
        let ns = self.namespace(p.namespace.as_deref())?;
        let about = match p.about.as_deref().map(parse_about).transpose() {
            Ok(a) => a,
            Err(m) => return Ok(Self::fix_argument("recall", m)),
        };
        let detail = match p.detail.as_deref().map(str::parse::<Detail>).transpose() {
            Ok(d) => d.unwrap_or_default(),
            Err(e) => return Ok(Self::fix_argument("recall", e)),
        };
        let raw = p.raw.unwrap_or(false);
        if raw && about.is_some() {
            return Ok(Self::fix_argument(
                "recall",
                "`about` needs an assessed recall: drop `raw`, or drop `about` for plain retrieval",
            ));
        }
        // A budget too large for the machine is clamped by the engine like any budget above
        // its maximum (the pack's notes say so), as over HTTP.
        let budget = p.budget.map(|b| usize::try_from(b).unwrap_or(usize::MAX));
        let opts = RecallOptions { budget, ..RecallOptions::default() };
        let r = if raw {
            match self.rt.engine().recall(ns, &p.query, &opts).await {
                Ok(pack) if detail == Detail::Full => self.result(&pack),
                Ok(pack) => self.compact(&self.rt.raw_recall_view(&pack)),
                Err(e) => Ok(Self::failed("recall", e)),
            }
        } else {
            let task = Task { query: p.query.clone(), about };
            match self.rt.turn(ns, &task, &opts).await {
                Ok(t) if detail == Detail::Full => self.result(&t),
                Ok(t) => self.compact(&self.rt.recall_view(&t)),
                Err(e) => Ok(Self::failed("recall", e)),
            }
        };
        self.flush().await;
        r
    }

    /// Forget.
    #[tool(description = "Forget exactly what a command designates (`entity | attribute`, or free text): the \
                       memories are tombstoned with the command as the reason, never deleted.")]
    async fn forget(&self, Parameters(p): Parameters<ForgetParams>) -> Result<CallToolResult, ErrorData> {
        let ns = self.namespace(p.namespace.as_deref())?;
        let cmd = match ForgetCommand::parse_arg(&p.command) {
            Ok(c) => c,
            Err(m) => return Ok(Self::fix_argument("forget", m)),
        };
        let r = match self.rt.engine().forget(ns, OPERATOR, &cmd).await {
            Ok(r) => self.result(&r),
            Err(e) => Ok(Self::failed("forget", e)),
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
        let id = match p.id.memory_id() {
            Ok(id) => id,
            Err(m) => return Ok(Self::fix_argument("why", m)),
        };
        match self.rt.engine().why(ns, id).await {
            Ok(w) => self.result(&w),
            Err(e) => Ok(Self::failed("why", e)),
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
                 human); `forget` on request; `why` explains a memory.",
                self.ns.as_str()
            ))
    }
}

/// `recall`'s structured result: the compact view by default, the full result (an agent turn,
/// or for `raw` a pack) with `detail: "full"`. MCP clients check structuredContent against the
/// declared schema, so both shapes are declared.
fn recall_output_schema() -> std::sync::Arc<JsonObject> {
    let compact = serde_json::to_value(schemars::schema_for!(AgentRecall)).unwrap_or_default();
    let serde_json::Value::Object(mut compact) = compact else {
        return std::sync::Arc::new(JsonObject::new());
    };
    // The definitions stay at the root, where the compact schema's `$ref`s point.
    let defs = compact.remove("$defs");
    compact.remove("$schema");
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
    let mut root = JsonObject::new();
    root.insert("type".into(), "object".into());
    root.insert("anyOf".into(), serde_json::json!([compact, full_turn, full_pack]));
    if let Some(defs) = defs {
        root.insert("$defs".into(), defs);
    }
    std::sync::Arc::new(root)
}

/// `entity | attribute`.
fn parse_about(s: &str) -> Result<(String, String), String> {
    match s.split_once('|') {
        Some((e, a)) if !e.trim().is_empty() && !a.trim().is_empty() => {
            Ok((e.trim().to_string(), a.trim().to_string()))
        }
        _ => Err(format!("about must be `entity | attribute`, got {s:?}")),
    }
}

/// Serve `rt` for `ns` over stdin/stdout until the client closes the connection.
pub async fn serve_stdio(rt: Arc<Runtime>, ns: Namespace, with_vectors: bool) -> Result<(), McpError> {
    let server = MnemoMcp::new(rt.clone(), ns.clone()).with_vectors(with_vectors);
    tracing::info!(namespace = ns.as_str(), "MCP server on stdio");
    let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| McpError::Start(Box::new(e)))?;
    let reason = running.waiting().await.map_err(McpError::Join)?;
    tracing::info!(?reason, "MCP client gone");
    if let Err(e) = rt.engine().flush_index().await {
        tracing::warn!("the index could not be saved ({e}); the next start rebuilds it from the store");
    }
    Ok(())
}
