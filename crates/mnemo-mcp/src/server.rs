//! `mnemo mcp`: remember, recall, forget and why as MCP tools over stdio, bound to one
//! namespace. stdout carries protocol messages only; logs go to stderr.
//!
//! Every tool takes an optional `namespace`: omitted, it is the bound one; naming another is
//! refused with an `invalid_params` protocol error (a namespace is a hard partition, and one
//! MCP server speaks for one).
use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, ErrorData, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;

use mnemo_agent::Runtime;
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
    /// Token budget of the pack (default from the server's config).
    #[serde(default)]
    pub budget: Option<u32>,
    /// The claim the task is about, `entity | attribute`: it is load-bearing, and the decision
    /// is ESCALATE when nothing recalled asserts it.
    #[serde(default)]
    pub about: Option<String>,
    /// Plain retrieval (the pack and its trace): no grounding, no grade, no decision.
    #[serde(default)]
    pub raw: Option<bool>,
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
    /// The memory id (as reported by remember or recall).
    pub id: i64,
    /// The namespace; must be the one this server is bound to (default).
    #[serde(default)]
    pub namespace: Option<String>,
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
                       stored. Returns the turn id and what happened to each memory.")]
    async fn remember(&self, Parameters(p): Parameters<RememberParams>) -> Result<CallToolResult, ErrorData> {
        let ns = self.namespace(p.namespace.as_deref())?;
        if p.text.trim().is_empty() {
            return Err(ErrorData::invalid_params("text must not be empty", None));
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
    #[tool(description = "Recall memories for a query into a token budget, re-check verifiable claims against the \
                       configured systems of record (a stale value is corrected), grade the pack and decide \
                       ACT or ESCALATE. `verdict` gives the value(s) to act on, or why to escalate.")]
    async fn recall(&self, Parameters(p): Parameters<RecallParams>) -> Result<CallToolResult, ErrorData> {
        let ns = self.namespace(p.namespace.as_deref())?;
        let about = match p.about.as_deref().map(parse_about).transpose() {
            Ok(a) => a,
            Err(m) => return Err(ErrorData::invalid_params(m, None)),
        };
        let opts = RecallOptions { budget: p.budget.map(|b| b as usize), ..RecallOptions::default() };
        let r = if p.raw.unwrap_or(false) {
            if about.is_some() {
                return Err(ErrorData::invalid_params("`about` needs an assessed recall; drop `raw`", None));
            }
            match self.rt.engine().recall(ns, &p.query, &opts).await {
                Ok(pack) => self.result(&pack),
                Err(e) => Ok(Self::failed("recall", e)),
            }
        } else {
            let task = Task { query: p.query.clone(), about };
            match self.rt.turn(ns, &task, &opts).await {
                Ok(t) => self.result(&t),
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
        let cmd = ForgetCommand::parse_arg(&p.command).map_err(|m| ErrorData::invalid_params(m.to_string(), None))?;
        let r = match self.rt.engine().forget(ns, OPERATOR, &cmd).await {
            Ok(r) => self.result(&r),
            Err(e) => Ok(Self::failed("forget", e)),
        };
        self.flush().await;
        r
    }

    /// Explain a memory.
    #[tool(description = "Explain a memory by id: the turns it came from, what reinforced or corroborated it, and \
                       if it was forgotten, why, when and what superseded it.")]
    async fn why(&self, Parameters(p): Parameters<WhyParams>) -> Result<CallToolResult, ErrorData> {
        let ns = self.namespace(p.namespace.as_deref())?;
        match self.rt.engine().why(ns, MemoryId(p.id)).await {
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
