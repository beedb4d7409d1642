//! `[[grounders]] kind = "mcp"`: a system of record behind ONE tool of an external MCP server.
//!
//! ```toml
//! [[grounders]]
//! kind = "mcp"
//! source = "inventory"                 # the name recorded as corroboration
//! command = "bin/inventory-mcp"        # a path (relative to this config file) or a name on PATH
//! args = ["--db", "inventory.db"]      # run with this config file's directory as working directory
//! tool = "get_record"                  # the one tool ever called
//! arguments = { sku = "{entity}", field = "{attribute}", exact = true }
//! value = "/value"                     # JSON pointer into the result (structured, or text parsed as JSON)
//! as_of = "/updated"                   # optional pointer to an RFC 3339 / YYYY-MM-DD time
//! timeout_ms = 5000                    # optional; default 5000 (start-up included)
//! ```
//!
//! The server is started on the first lookup and kept; if it dies it is started again on the
//! next one. Read-only by contract: [`McpGrounder::lookup`] is the only place that calls a tool,
//! and it calls `tool` and nothing else; a tool the server itself annotates as destructive is
//! refused. `null` at the value pointer means the source does not hold the claim. Every fault
//! (the server cannot start or dies, the tool reports an error, no answer in time, a result
//! that is not JSON or has no value where the pointer says) is an error: the assessor leaves
//! the claim unverified, and a pack resting on it escalates.
use async_trait::async_trait;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};

use mnemo_contract::registry::GrounderContext;
use mnemo_contract::text::norm_value;
use mnemo_contract::{CoreError, GroundedValue, Grounder, GrounderErrorKind, Result, Timestamp};

/// Default time for one lookup, the server's start-up included.
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(5000);

/// How to start the MCP server.
#[derive(Clone, Debug)]
pub struct McpCommand {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its working directory (the config file's directory).
    pub cwd: PathBuf,
}

/// How (entity, attribute) become the tool's arguments and its result becomes a value.
#[derive(Clone, Debug)]
pub struct McpMapping {
    /// The one tool called.
    pub tool: String,
    /// The arguments; string values have `{entity}` and `{attribute}` replaced.
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// JSON pointer to the value.
    pub value: String,
    /// JSON pointer to the time the source last changed the value.
    pub as_of: Option<String>,
}

/// A read-only grounder over one tool of an MCP server started as a child process.
pub struct McpGrounder {
    source: String,
    command: McpCommand,
    mapping: McpMapping,
    timeout: Duration,
    client: Mutex<Option<RunningService<RoleClient, ()>>>,
}

impl McpGrounder {
    /// A grounder named `source` that starts `command` and calls `mapping.tool`.
    pub fn new(source: &str, command: McpCommand, mapping: McpMapping, timeout: Duration) -> Result<Self> {
        let err = |m: String| CoreError::Config(format!("{source}: {m}"));
        if mapping.tool.trim().is_empty() {
            return Err(err("tool must not be empty".into()));
        }
        for p in std::iter::once(&mapping.value).chain(mapping.as_of.iter()) {
            if !p.is_empty() && !p.starts_with('/') {
                return Err(err(format!("JSON pointer {p:?} must be empty or start with '/'")));
            }
        }
        Ok(McpGrounder { source: source.to_string(), command, mapping, timeout, client: Mutex::new(None) })
    }

    fn err(&self, kind: GrounderErrorKind, entity: &str, attribute: &str, m: impl std::fmt::Display) -> CoreError {
        CoreError::grounder_message(kind, format!("{}: {entity} | {attribute}: {m}", self.source))
    }

    /// Start the server and check it offers the tool (listing tools calls none of them).
    async fn start(&self) -> std::result::Result<RunningService<RoleClient, ()>, String> {
        let mut cmd = tokio::process::Command::new(&self.command.program);
        cmd.args(&self.command.args).current_dir(&self.command.cwd);
        let transport =
            TokioChildProcess::new(cmd).map_err(|e| format!("cannot start {}: {e}", self.command.program.display()))?;
        let client = ().serve(transport).await.map_err(|e| format!("the MCP handshake failed: {e}"))?;
        let tools = client.list_all_tools().await.map_err(|e| format!("listing the server's tools failed: {e}"))?;
        let Some(tool) = tools.iter().find(|t| t.name == self.mapping.tool) else {
            let offered: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
            return Err(format!(
                "the server offers no tool {:?} (it offers: {})",
                self.mapping.tool,
                offered.join(", ")
            ));
        };
        if tool.annotations.as_ref().and_then(|a| a.destructive_hint) == Some(true) {
            return Err(format!(
                "tool {:?} is annotated as destructive by its server; a grounder only reads",
                self.mapping.tool
            ));
        }
        Ok(client)
    }

    /// The tool's arguments for this claim.
    fn arguments(&self, entity: &str, attribute: &str) -> serde_json::Map<String, serde_json::Value> {
        let mut args = self.mapping.arguments.clone();
        for v in args.values_mut() {
            fill(v, entity, attribute);
        }
        args
    }

    /// Call the tool (starting the server if it is not running).
    async fn call(&self, entity: &str, attribute: &str) -> std::result::Result<CallToolResult, String> {
        let peer = {
            let mut guard = self.client.lock().await;
            let running = match guard.take() {
                Some(c) if !c.is_transport_closed() => c,
                _ => self.start().await?,
            };
            let peer = running.peer().clone();
            *guard = Some(running);
            peer
        };
        let params =
            CallToolRequestParams::new(self.mapping.tool.clone()).with_arguments(self.arguments(entity, attribute));
        match peer.call_tool(params).await {
            Ok(r) => Ok(r),
            Err(e) => {
                // The server may be gone: start a fresh one on the next lookup.
                *self.client.lock().await = None;
                Err(format!("calling tool {:?} failed: {e}", self.mapping.tool))
            }
        }
    }

    /// The value (or not held) in a tool result.
    fn read(&self, r: &CallToolResult) -> std::result::Result<Option<GroundedValue>, String> {
        let text =
            || r.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.as_str()).collect::<Vec<_>>().join("\n");
        if r.is_error == Some(true) {
            return Err(format!("the tool reported an error: {}", clip(&text())));
        }
        let json = match &r.structured_content {
            Some(v) => v.clone(),
            None => {
                serde_json::from_str(&text()).map_err(|e| format!("the result is not JSON ({e}): {}", clip(&text())))?
            }
        };
        let value = match json.pointer(&self.mapping.value) {
            None => return Err(format!("no {:?} in the result: {}", self.mapping.value, clip(&json.to_string()))),
            Some(serde_json::Value::Null) => return Ok(None),
            Some(serde_json::Value::String(s)) => norm_value(s),
            Some(v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => v.to_string(),
            Some(other) => {
                return Err(format!("{:?} holds {}, not a value", self.mapping.value, clip(&other.to_string())))
            }
        };
        let as_of = match self.mapping.as_of.as_deref().and_then(|p| json.pointer(p)) {
            Some(serde_json::Value::String(t)) => Some(parse_as_of(t)?),
            _ => None,
        };
        Ok(Some(GroundedValue { value, source: self.source.clone(), as_of }))
    }
}

#[async_trait]
impl Grounder for McpGrounder {
    fn source(&self) -> &str {
        &self.source
    }
    async fn lookup(&self, entity: &str, attribute: &str) -> Result<Option<GroundedValue>> {
        let (e, a) = (entity.trim(), attribute.trim());
        // No system of record holds a nameless thing: nothing to ask.
        if e.is_empty() || a.is_empty() {
            return Ok(None);
        }
        let r = tokio::time::timeout(self.timeout, self.call(e, a))
            .await
            .map_err(|_| {
                let m = format!("no answer within {} ms", self.timeout.as_millis());
                self.err(GrounderErrorKind::Unavailable, e, a, m)
            })?
            .map_err(|m| self.err(GrounderErrorKind::Unavailable, e, a, m))?;
        // A tool that reports an error answered; its error says what went wrong, not us.
        let kind = if r.is_error == Some(true) { GrounderErrorKind::Other } else { GrounderErrorKind::BadAnswer };
        self.read(&r).map_err(|m| self.err(kind, e, a, m))
    }
    fn timeout(&self) -> Option<Duration> {
        Some(self.timeout)
    }
}

/// Replace `{entity}` / `{attribute}` in every string inside `v`.
fn fill(v: &mut serde_json::Value, entity: &str, attribute: &str) {
    match v {
        serde_json::Value::String(s) => *s = s.replace("{entity}", entity).replace("{attribute}", attribute),
        serde_json::Value::Array(items) => items.iter_mut().for_each(|i| fill(i, entity, attribute)),
        serde_json::Value::Object(map) => map.values_mut().for_each(|i| fill(i, entity, attribute)),
        _ => {}
    }
}

/// At most 200 characters of a server's answer in an error.
fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(200).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// `as_of` as a source writes it: RFC 3339, or a bare date (midnight UTC).
fn parse_as_of(text: &str) -> std::result::Result<Timestamp, String> {
    let t = text.trim();
    let full =
        if t.len() == 10 && t.as_bytes().get(4) == Some(&b'-') { format!("{t}T00:00:00Z") } else { t.to_string() };
    Timestamp::parse_rfc3339(&full).map_err(|_| "as_of is neither RFC 3339 nor YYYY-MM-DD".to_string())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    source: String,
    command: String,
    #[serde(default)]
    args: Vec<String>,
    tool: String,
    #[serde(default)]
    arguments: toml::Table,
    value: String,
    #[serde(default)]
    as_of: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

/// A command with a path separator is a path (relative to the config file's directory); a
/// bare name is looked up on PATH.
fn resolve_program(command: &str, config_dir: &Path) -> PathBuf {
    let p = Path::new(command);
    if p.is_relative() && p.components().count() > 1 {
        config_dir.join(p)
    } else {
        p.to_path_buf()
    }
}

fn build(ctx: &GrounderContext<'_>) -> Result<Arc<dyn Grounder>> {
    let s: Settings = ctx.settings()?;
    let origin = ctx.origin;
    let err = |m: String| CoreError::Config(format!("{origin}: {m}"));
    if s.source.trim().is_empty() {
        return Err(err("source must not be empty".into()));
    }
    if s.command.trim().is_empty() {
        return Err(err("command must not be empty".into()));
    }
    let timeout = match s.timeout_ms {
        Some(0) => return Err(err("timeout_ms must be at least 1".into())),
        Some(ms) => Duration::from_millis(ms),
        None => DEFAULT_TIMEOUT,
    };
    let arguments = match serde_json::to_value(&s.arguments) {
        Ok(serde_json::Value::Object(m)) => m,
        Ok(_) | Err(_) => return Err(err("arguments must be a table of JSON-compatible values".into())),
    };
    if !arguments.values().any(|v| mentions(v, "{entity}")) {
        return Err(err("arguments must pass {entity} to the tool somewhere (e.g. entity = \"{entity}\")".into()));
    }
    let config_dir = ctx.section.config_dir;
    let command = McpCommand {
        program: resolve_program(s.command.trim(), config_dir),
        args: s.args,
        cwd: config_dir.to_path_buf(),
    };
    let mapping = McpMapping { tool: s.tool, arguments, value: s.value, as_of: s.as_of };
    let g = McpGrounder::new(s.source.trim(), command, mapping, timeout).map_err(|e| err(e.to_string()))?;
    Ok(Arc::new(g))
}

/// Whether `needle` occurs in a string inside `v`.
fn mentions(v: &serde_json::Value, needle: &str) -> bool {
    match v {
        serde_json::Value::String(s) => s.contains(needle),
        serde_json::Value::Array(items) => items.iter().any(|i| mentions(i, needle)),
        serde_json::Value::Object(map) => map.values().any(|i| mentions(i, needle)),
        _ => false,
    }
}

mnemo_contract::register_grounder!(
    "mcp",
    "read-only MCP tool: start a server, call ONE configured tool with (entity, attribute), JSON pointers for value and as_of",
    build
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_fill_nested_strings_only() {
        let mut v =
            serde_json::json!({"sku": "{entity}", "q": {"field": "{attribute} now"}, "n": 3, "l": ["{entity}"]});
        fill(&mut v, "IC-MC-44", "lead time");
        assert_eq!(
            v,
            serde_json::json!({"sku": "IC-MC-44", "q": {"field": "lead time now"}, "n": 3, "l": ["IC-MC-44"]})
        );
    }

    #[test]
    fn commands_with_a_separator_are_relative_to_the_config() {
        let dir = Path::new("/etc/mnemo");
        assert_eq!(resolve_program("bin/records", dir), PathBuf::from("/etc/mnemo/bin/records"));
        assert_eq!(resolve_program("records-mcp", dir), PathBuf::from("records-mcp"));
        assert_eq!(resolve_program("/usr/bin/x", dir), PathBuf::from("/usr/bin/x"));
    }
}
