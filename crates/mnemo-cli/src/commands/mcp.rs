//! `mnemo mcp`: the MCP server over stdio, bound to the --namespace given.
use anyhow::Result;
use std::process::ExitCode;
use std::sync::Arc;

use crate::cli::{Cli, McpArgs};
use crate::context;

pub async fn run(cli: &Cli, args: &McpArgs) -> Result<ExitCode> {
    // Everything below writes to stderr only: stdout belongs to the protocol.
    let config = context::config(cli)?;
    let ns = context::namespace(cli)?;
    let clock = context::clock(cli, &config)?;
    let rt = context::runtime(
        &config,
        &cli.data_dir,
        clock,
        mnemo_agent::ReasonerBuild::AtBuild,
        mnemo_agent::Access::Write,
    )
    .await?;
    mnemo_mcp::serve_stdio(Arc::new(rt), ns, args.with_vectors).await?;
    Ok(ExitCode::SUCCESS)
}
