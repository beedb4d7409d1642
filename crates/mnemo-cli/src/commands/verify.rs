//! `mnemo verify [--repair]`: SQLite's full `integrity_check` of the store file on demand,
//! what it found and the fix; `--repair` rebuilds damaged indexes (issue 42). Then the
//! tamper-evident history of every namespace (issue 41; SQLite and PostgreSQL), and with
//! `--export FILE` the offline check of a history export.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use mnemo_contract::chain::{self, ChainHead, ChainRecord, ChainReport, EntryKind};
use mnemo_contract::Store;
use mnemo_store::sqlite::{Check, Findings, SqliteStore, Synchronous};

use crate::cli::{Cli, VerifyArgs};

/// Which store the config names.
enum Target {
    /// The SQLite store file in the data directory.
    Sqlite(PathBuf),
    /// A PostgreSQL store (its `[store]` settings).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Postgres(toml::Table),
}

/// The store the config names.
fn target(cli: &Cli) -> Result<Target> {
    let config = mnemo_agent::Config::load(&cli.config)?;
    let (kind, settings, _) = config.plugin("store")?;
    if kind == "postgres" {
        return Ok(Target::Postgres(settings.clone()));
    }
    if kind != "sqlite" {
        bail!("mnemo verify checks the sqlite and postgres stores; [store] kind is {kind:?}");
    }
    if settings.get("in_memory").and_then(toml::Value::as_bool) == Some(true) {
        bail!("[store] in_memory = true: there is no store file to check");
    }
    let rel = settings.get("path").and_then(toml::Value::as_str).unwrap_or("mnemo.db");
    Ok(Target::Sqlite(mnemo_contract::registry::resolve_inside(&cli.data_dir, rel)?))
}

/// The full check, off the executor.
async fn check(path: &Path) -> Result<Findings> {
    let p = path.to_path_buf();
    Ok(tokio::task::spawn_blocking(move || SqliteStore::verify(&p)).await??)
}

/// Run `mnemo verify`.
pub async fn run(cli: &Cli, args: &VerifyArgs) -> Result<ExitCode> {
    if let Some(file) = &args.export {
        return verify_export(file, args.json);
    }
    let path = match target(cli)? {
        Target::Sqlite(path) => path,
        Target::Postgres(settings) => return verify_postgres(settings, args.json).await,
    };
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
    // The history: only of a sound file (a damaged one is refused until restored or repaired).
    let history = if found.is_sound() { Some(sqlite_history(&path).await) } else { None };
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
            // The exit code's answer: the file is sound and its history verifies.
            "sound": found.is_sound() && history.as_ref().is_none_or(History::ok),
            "integrity_ok": found.is_sound(),
            "problems": found.problems,
            "damaged_indexes": found.indexes,
            "other_damage": found.other,
            "repaired": repaired,
            "fix": fix,
            "elapsed_ms": elapsed_ms,
            "history": history.as_ref().map(History::json),
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
        if let Some(h) = &history {
            h.print();
        }
    }
    let history_ok = history.as_ref().is_none_or(History::ok);
    Ok(if found.is_sound() && history_ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// What the history check found.
enum History {
    /// One report per namespace.
    Checked(Vec<ChainReport>),
    /// Not checked, and why (not a failure: e.g. a store of a schema older than the chain,
    /// which is chained when next opened for writing).
    NotChecked(String),
}

impl History {
    fn ok(&self) -> bool {
        match self {
            History::Checked(r) => r.iter().all(ChainReport::ok),
            History::NotChecked(_) => true,
        }
    }

    fn json(&self) -> serde_json::Value {
        match self {
            History::Checked(r) => serde_json::json!({
                "verified": r.iter().all(ChainReport::ok),
                "namespaces": r.iter().map(report_json).collect::<Vec<_>>(),
            }),
            History::NotChecked(why) => serde_json::json!({ "verified": null, "not_checked": why }),
        }
    }

    fn print(&self) {
        match self {
            History::NotChecked(why) => out!("history: not checked: {why}"),
            History::Checked(r) if r.is_empty() => out!("history: no namespaces, nothing to check"),
            History::Checked(r) => {
                for r in r {
                    print_report(r);
                }
                let bad = r.iter().filter(|r| !r.ok()).count();
                if bad == 0 {
                    out!("history: verified ({} namespace(s))", r.len());
                } else {
                    out!(
                        "history: {bad} of {} namespace(s) do NOT verify: the first bad entry of each is named above \
                         (compare with a backup's or an export's chain head; restore from a backup made before it)",
                        r.len()
                    );
                }
            }
        }
    }
}

/// The id of an entry as a tenant reads it: an event by its seq, a turn by its short id.
fn entry_name(kind: EntryKind, id: i64) -> String {
    match kind {
        EntryKind::Event => format!("event {id}"),
        EntryKind::Turn => format!("turn {} (id {id})", mnemo_contract::TurnId(id)),
        EntryKind::Erasure => format!("erasure {id}"),
    }
}

fn report_json(r: &ChainReport) -> serde_json::Value {
    serde_json::json!({
        "namespace": r.namespace,
        "entries": r.entries,
        "head": r.head,
        "verified": r.ok(),
        "first_bad": r.first_bad,
    })
}

fn print_report(r: &ChainReport) {
    let head = match &r.head {
        Some(h) => format!("head entry {} {}", h.seq, chain::hex(&h.hash)),
        None => "no entries".to_string(),
    };
    match &r.first_bad {
        None => out!("history: namespace {}: {} entries verified, {head}", r.namespace, r.entries),
        Some(b) if b.problem == chain::BreakKind::Unchained || b.problem == chain::BreakKind::HeadMismatch => out!(
            "history: namespace {}: BROKEN after {} entries: {}: {}",
            r.namespace,
            r.entries,
            entry_name(b.entry, b.id),
            b.detail
        ),
        Some(b) => out!(
            "history: namespace {}: BROKEN at entry {} ({}): {}",
            r.namespace,
            b.seq,
            entry_name(b.entry, b.id),
            b.detail
        ),
    }
}

/// The history of the SQLite store at `path`, opened read-only.
async fn sqlite_history(path: &Path) -> History {
    let p = path.to_path_buf();
    let store = match tokio::task::spawn_blocking(move || SqliteStore::open_read_only(&p)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return History::NotChecked(format!("the store cannot be opened read-only: {e}")),
        Err(e) => return History::NotChecked(e.to_string()),
    };
    match store.verify_history().await {
        Ok(Some(r)) => History::Checked(r),
        Ok(None) => History::NotChecked("this store keeps no history chain".into()),
        Err(e) => History::NotChecked(format!("reading the history failed: {e}")),
    }
}

/// `verify` of a PostgreSQL store: its history (the integrity of its files is PostgreSQL's:
/// e.g. the amcheck extension).
#[cfg(feature = "postgres")]
async fn verify_postgres(settings: toml::Table, json: bool) -> Result<ExitCode> {
    let s: mnemo_store_postgres::PgSettings =
        toml::Value::Table(settings).try_into().context("reading the [store] settings")?;
    let store = mnemo_store_postgres::PostgresStore::new(&s)?;
    let started = Instant::now();
    let history = match store.verify_history().await? {
        Some(r) => History::Checked(r),
        None => History::NotChecked("this store keeps no history chain".into()),
    };
    let elapsed_ms = started.elapsed().as_millis();
    if json {
        super::emit_json(&serde_json::json!({
            "store": "postgres",
            "schema": s.schema,
            "sound": history.ok(),
            "history": history.json(),
            "elapsed_ms": elapsed_ms,
        }))?;
    } else {
        out!(
            "PostgreSQL schema {:?}: the integrity of its files is PostgreSQL's to check (e.g. the amcheck \
             extension); its history ({elapsed_ms} ms):",
            s.schema
        );
        history.print();
    }
    Ok(if history.ok() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

#[cfg(not(feature = "postgres"))]
async fn verify_postgres(_settings: toml::Table, _json: bool) -> Result<ExitCode> {
    bail!("[store] kind is \"postgres\", but this mnemo was built without the postgres feature")
}

/// One line of a history export: an entry, or the chain head that ends it.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum ExportLine {
    Head { chain_head: ChainHead },
    Entry(Box<ChainRecord>),
}

/// `verify --export FILE`: the offline check of `mnemo export --history` output (one or more
/// namespaces); nothing else is read.
fn verify_export(file: &Path, json: bool) -> Result<ExitCode> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let mut records: BTreeMap<String, Vec<ChainRecord>> = BTreeMap::new();
    let mut heads: BTreeMap<String, ChainHead> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed: ExportLine = serde_json::from_str(line)
            .with_context(|| format!("{}: line {} is not a history export line", file.display(), i + 1))?;
        match parsed {
            ExportLine::Head { chain_head } => {
                heads.insert(chain_head.namespace.clone(), chain_head);
            }
            ExportLine::Entry(r) => records.entry(r.namespace.clone()).or_default().push(*r),
        }
    }
    let mut namespaces: Vec<String> = records.keys().chain(heads.keys()).cloned().collect();
    namespaces.sort();
    namespaces.dedup();
    if namespaces.is_empty() {
        bail!(
            "{}: no history entries and no chain head: not a history export (mnemo export --history)",
            file.display()
        );
    }
    let reports: Vec<ChainReport> = namespaces
        .iter()
        .map(|ns| {
            // An export without its head line (cut off) is checked against an empty head, so
            // that the missing end is said.
            let head =
                heads.get(ns).cloned().unwrap_or(ChainHead { namespace: ns.clone(), seq: 0, hash: chain::GENESIS });
            chain::verify(ns, records.remove(ns).unwrap_or_default(), Some(&head), &[])
        })
        .collect();
    let history = History::Checked(reports);
    if json {
        super::emit_json(&serde_json::json!({ "export": file, "sound": history.ok(), "history": history.json() }))?;
    } else {
        out!("{}: history export", file.display());
        history.print();
    }
    Ok(if history.ok() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
