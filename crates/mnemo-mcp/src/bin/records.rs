//! `mnemo-records-mcp`: a read-only system of record served over MCP on stdio — a CSV file
//! (`entity,attribute,value[,as_of]`, header first) behind a `get_record` tool. The file is read
//! again on every call, so edits show at once. Names compare case-insensitively with white
//! space folded.
//!
//! It also offers `set_record`, a tool that WRITES the file, so that a test can prove the `mcp`
//! grounder never calls anything but its configured tool; `--call-log FILE` appends the name of
//! every tool called. `--faults` makes a few entities misbehave (for fault tests): `crash` ends
//! the process, `slow` never answers in time, `error` is a tool error, `garbage` answers text
//! that is not JSON, `object` answers an object where a value should be.
//!
//! ```text
//! mnemo-records-mcp --csv inventory.csv [--call-log calls.txt] [--faults]
//! ```
use std::path::PathBuf;
use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, ErrorData, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;

use mnemo_contract::text::norm_name;

/// `get_record`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct GetRecord {
    /// The entity (e.g. a SKU).
    entity: String,
    /// The attribute (e.g. "lead time").
    attribute: String,
}

/// `set_record`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct SetRecord {
    /// The entity.
    entity: String,
    /// The attribute.
    attribute: String,
    /// The new value.
    value: String,
}

#[derive(Clone)]
struct Records {
    csv: Arc<PathBuf>,
    call_log: Option<Arc<PathBuf>>,
    faults: bool,
    tool_router: ToolRouter<Self>,
}

/// One row of the file.
struct Row {
    entity: String,
    attribute: String,
    value: String,
    as_of: Option<String>,
}

impl Records {
    async fn log_call(&self, tool: &str) -> Result<(), ErrorData> {
        let Some(path) = self.call_log.clone() else { return Ok(()) };
        let line = format!("{tool}\n");
        blocking(move || {
            use std::io::Write as _;
            std::fs::OpenOptions::new().create(true).append(true).open(path.as_ref())?.write_all(line.as_bytes())
        })
        .await
        .map_err(|e| ErrorData::internal_error(format!("call log: {e}"), None))
    }

    async fn rows(&self) -> Result<Vec<Row>, ErrorData> {
        let path = self.csv.clone();
        let text = blocking(move || std::fs::read_to_string(path.as_ref()))
            .await
            .map_err(|e| ErrorData::internal_error(format!("reading {}: {e}", self.csv.display()), None))?;
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let mut rows = Vec::new();
        for rec in reader.records() {
            let rec = rec.map_err(|e| ErrorData::internal_error(format!("{}: {e}", self.csv.display()), None))?;
            let field = |i: usize| rec.get(i).unwrap_or("").to_string();
            rows.push(Row {
                entity: field(0),
                attribute: field(1),
                value: field(2),
                as_of: rec.get(3).filter(|s| !s.trim().is_empty()).map(str::to_string),
            });
        }
        Ok(rows)
    }
}

#[tool_router]
impl Records {
    /// Read one record.
    #[tool(
        description = "Read the current value of (entity, attribute); value is null when there is no such record.",
        annotations(read_only_hint = true)
    )]
    async fn get_record(&self, Parameters(p): Parameters<GetRecord>) -> Result<CallToolResult, ErrorData> {
        self.log_call("get_record").await?;
        if self.faults {
            match p.entity.as_str() {
                "crash" => std::process::exit(3),
                "slow" => tokio::time::sleep(std::time::Duration::from_secs(3600)).await,
                "error" => return Ok(CallToolResult::error(vec![ContentBlock::text("the ledger is locked")])),
                "garbage" => return Ok(CallToolResult::success(vec![ContentBlock::text("<html>oops</html>")])),
                "object" => return Ok(CallToolResult::structured(serde_json::json!({"value": {"nested": 1}}))),
                _ => {}
            }
        }
        let (e, a) = (norm_name(&p.entity), norm_name(&p.attribute));
        let rows = self.rows().await?;
        let hit = rows.iter().find(|r| norm_name(&r.entity) == e && norm_name(&r.attribute) == a);
        let answer = match hit {
            Some(r) => {
                serde_json::json!({"entity": r.entity, "attribute": r.attribute, "value": r.value, "as_of": r.as_of})
            }
            None => serde_json::json!({"entity": p.entity, "attribute": p.attribute, "value": null}),
        };
        Ok(CallToolResult::structured(answer))
    }

    /// Write one record (never called by a grounder).
    #[tool(
        description = "Set the value of (entity, attribute), adding the record if there is none.",
        annotations(destructive_hint = true)
    )]
    async fn set_record(&self, Parameters(p): Parameters<SetRecord>) -> Result<CallToolResult, ErrorData> {
        self.log_call("set_record").await?;
        let (e, a) = (norm_name(&p.entity), norm_name(&p.attribute));
        let mut rows = self.rows().await?;
        match rows.iter_mut().find(|r| norm_name(&r.entity) == e && norm_name(&r.attribute) == a) {
            Some(r) => r.value = p.value.clone(),
            None => rows.push(Row { entity: p.entity, attribute: p.attribute, value: p.value, as_of: None }),
        }
        let mut w = csv::Writer::from_writer(Vec::new());
        let bad = |e: csv::Error| ErrorData::internal_error(format!("writing the CSV: {e}"), None);
        w.write_record(["entity", "attribute", "value", "as_of"]).map_err(bad)?;
        for r in &rows {
            w.write_record([&r.entity, &r.attribute, &r.value, r.as_of.as_deref().unwrap_or("")]).map_err(bad)?;
        }
        let bytes = w.into_inner().map_err(|e| ErrorData::internal_error(format!("writing the CSV: {e}"), None))?;
        let path = self.csv.clone();
        blocking(move || std::fs::write(path.as_ref(), bytes))
            .await
            .map_err(|e| ErrorData::internal_error(format!("writing {}: {e}", self.csv.display()), None))?;
        Ok(CallToolResult::structured(serde_json::json!({"written": true})))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Records {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mnemo-records-mcp", env!("CARGO_PKG_VERSION")))
            .with_instructions("A system of record: get_record reads (entity, attribute); set_record writes.")
    }
}

/// File I/O on the blocking pool, never on the executor.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> std::io::Result<T> + Send + 'static) -> std::io::Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(std::io::Error::other)?
}

fn usage() -> std::process::ExitCode {
    eprintln!("usage: mnemo-records-mcp --csv FILE [--call-log FILE] [--faults]");
    std::process::ExitCode::from(2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    // Logs on stderr: stdout is the protocol.
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(false).try_init();
    let (mut csv, mut call_log, mut faults) = (None, None, false);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--csv" => csv = args.next().map(PathBuf::from),
            "--call-log" => call_log = args.next().map(|p| Arc::new(PathBuf::from(p))),
            "--faults" => faults = true,
            _ => return usage(),
        }
    }
    let Some(csv) = csv else { return usage() };
    let server = Records { csv: Arc::new(csv), call_log, faults, tool_router: Records::tool_router() };
    let running = match server.serve(rmcp::transport::stdio()).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mnemo-records-mcp: the MCP session did not start: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match running.waiting().await {
        Ok(_) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mnemo-records-mcp: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
