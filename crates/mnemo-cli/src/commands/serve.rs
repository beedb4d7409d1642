//! `mnemo serve`: the HTTP API over the data directory (this process is its one writer).
use anyhow::{Context as _, Result};
use std::process::ExitCode;
use std::sync::Arc;

use mnemo_server::ServeSettings;

use crate::cli::{Cli, ServeArgs};
use crate::context;

/// The line `mnemo serve` prints on stderr once it listens (the bench reads it).
pub const LISTENING: &str = "mnemo: listening on http://";

pub async fn run(cli: &Cli, a: &ServeArgs) -> Result<ExitCode> {
    let config = context::config(cli)?;
    let (table, origin) = config.serve();
    let settings = ServeSettings::from_table(&table, &origin, &|v| std::env::var(v).ok())?;
    let clock = context::clock(cli, &config)?;
    let rt = context::runtime(
        &config,
        &cli.data_dir,
        clock,
        mnemo_agent::ReasonerBuild::AtBuild,
        mnemo_agent::Access::Write,
    )
    .await?;
    // Concurrent clients' remembers are written together, one batch per commit.
    rt.start_group_commit()?;
    let listener =
        tokio::net::TcpListener::bind(&a.addr).await.with_context(|| format!("cannot listen on {}", a.addr))?;
    let addr = listener.local_addr()?;
    // Always said (even with -q): a caller of `--addr 127.0.0.1:0` needs the port.
    eprintln!("{LISTENING}{addr} (data directory {}; ctrl-c or SIGTERM stops)", cli.data_dir.display());
    mnemo_server::serve(Arc::new(rt), settings, listener, mnemo_server::shutdown_signal()).await?;
    eprintln!("mnemo: stopped; every acknowledged write is in the store");
    Ok(ExitCode::SUCCESS)
}
