//! `mnemo verify [--repair]`: SQLite's full `integrity_check` of the store file on demand,
//! what it found and the fix; `--repair` rebuilds damaged indexes (issue 42).
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Result};
use mnemo_store::sqlite::{Check, Findings, SqliteStore, Synchronous};

use crate::cli::{Cli, VerifyArgs};

/// The SQLite store file the config names in the data directory.
fn store_path(cli: &Cli) -> Result<PathBuf> {
    let config = mnemo_agent::Config::load(&cli.config)?;
    let (kind, settings, _) = config.plugin("store")?;
    if kind != "sqlite" {
        bail!(
            "mnemo verify checks the SQLite store; [store] kind is {kind:?} (check a PostgreSQL store with \
             its own tools, e.g. the amcheck extension)"
        );
    }
    if settings.get("in_memory").and_then(toml::Value::as_bool) == Some(true) {
        bail!("[store] in_memory = true: there is no store file to check");
    }
    let rel = settings.get("path").and_then(toml::Value::as_str).unwrap_or("mnemo.db");
    Ok(mnemo_core::registry::resolve_inside(&cli.data_dir, rel)?)
}

/// The full check, off the executor.
async fn check(path: &Path) -> Result<Findings> {
    let p = path.to_path_buf();
    Ok(tokio::task::spawn_blocking(move || SqliteStore::verify(&p)).await??)
}

/// Run `mnemo verify`.
pub async fn run(cli: &Cli, args: &VerifyArgs) -> Result<ExitCode> {
    let path = store_path(cli)?;
    if !path.exists() {
        bail!("{}: no store file here, nothing to check (is --data-dir right?)", path.display());
    }
    let started = Instant::now();
    let mut found = check(&path).await?;
    let mut repaired = None;
    if args.repair && found.only_indexes() {
        // Writing: under the data directory's lock, as every writer.
        let _lock = mnemo_agent::lock::lock_data_dir(&cli.data_dir, mnemo_agent::lock::lock_timeout()?).await?;
        let p = path.clone();
        let store =
            tokio::task::spawn_blocking(move || SqliteStore::open_with_check(&p, Synchronous::Normal, Check::Full))
                .await??;
        repaired = store.repaired().map(str::to_string);
        drop(store);
        found = check(&path).await?;
    }
    let elapsed_ms = started.elapsed().as_millis();
    let dir = cli.data_dir.display();
    let fix = if found.is_sound() {
        None
    } else if found.only_indexes() {
        Some(format!(
            "mnemo --data-dir {dir} verify --repair (rebuilds the damaged indexes from their tables, which are \
             intact: nothing is lost)"
        ))
    } else {
        Some(format!(
            "restore the store from a backup: mnemo --data-dir {dir} backup restore BACKUP (or stop Mnemo, copy a \
             backup over {} and run mnemo --data-dir {dir} reindex)",
            path.display()
        ))
    };
    if args.json {
        super::emit_json(&serde_json::json!({
            "path": path,
            "sound": found.is_sound(),
            "problems": found.problems,
            "damaged_indexes": found.indexes,
            "other_damage": found.other,
            "repaired": repaired,
            "fix": fix,
            "elapsed_ms": elapsed_ms,
        }))?;
    } else {
        if let Some(note) = &repaired {
            out!("repaired: {note}");
        }
        if found.is_sound() {
            out!("{}: sound (SQLite integrity_check: ok, {elapsed_ms} ms)", path.display());
        } else {
            out!(
                "{}: damaged (SQLite integrity_check, {elapsed_ms} ms): {} problem(s)",
                path.display(),
                found.problems.len()
            );
            for p in &found.problems {
                out!("  {p}");
            }
            if found.only_indexes() {
                out!("only indexes are damaged ({}); the tables are intact", found.indexes.join(", "));
            } else {
                out!("a table (not only an index) is damaged: the store is refused until it is restored");
            }
            if let Some(fix) = &fix {
                out!("fix: {fix}");
            }
        }
    }
    Ok(if found.is_sound() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
