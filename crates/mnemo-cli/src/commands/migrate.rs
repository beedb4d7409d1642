//! `mnemo migrate --from DATA_DIR --to postgres://…`: copy a data directory's SQLite store
//! (turns, memories, tombstones, history — ids and revisions kept) into an empty PostgreSQL
//! schema, then prove it: per namespace, the counts and a checksum of everything the Store
//! trait returns, read back from both sides. The PostgreSQL index is derived: the first
//! runtime on the new store rebuilds it from the store.
use anyhow::{bail, ensure, Context as _, Result};
use std::process::ExitCode;

use mnemo_contract::{Memory, MemoryEvent, Namespace, Store, Turn};
use mnemo_store::sqlite::SqliteStore;
use mnemo_store_postgres::{PgSettings, PostgresStore};
use serde::Serialize;

use crate::cli::{Cli, MigrateArgs};
use crate::context;

/// What one namespace holds, and its checksum.
#[derive(Debug, PartialEq, Eq, Serialize)]
struct Tally {
    turns: usize,
    memories: usize,
    tombstones: usize,
    events: usize,
    /// FNV-1a 64 of the canonical JSON of the turns, the memories and their histories.
    checksum: String,
    /// The namespace's history chain head (hex; None: no chain): the same rows chained in the
    /// same order give the same head.
    chain_head: Option<String>,
}

#[derive(Serialize)]
struct Row {
    namespace: String,
    source: Tally,
    target: Tally,
    same: bool,
}

struct Contents {
    turns: Vec<Turn>,
    memories: Vec<Memory>,
    events: Vec<MemoryEvent>,
    chain_head: Option<String>,
}

async fn contents(store: &dyn Store, ns: &Namespace) -> Result<Contents> {
    let turns = store.turns(ns).await?;
    let memories = store.all_memories(ns).await?;
    let mut events = Vec::new();
    for m in &memories {
        events.extend(store.history(ns, m.id).await?);
    }
    let chain_head = store
        .chain_heads()
        .await?
        .into_iter()
        .find(|h| h.namespace == ns.as_str())
        .map(|h| mnemo_contract::chain::hex(&h.hash));
    Ok(Contents { turns, memories, events, chain_head })
}

fn fnv1a(bytes: &[u8], mut h: u64) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn tally(c: &Contents) -> Result<Tally> {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    h = fnv1a(serde_json::to_string(&c.turns)?.as_bytes(), h);
    h = fnv1a(serde_json::to_string(&c.memories)?.as_bytes(), h);
    h = fnv1a(serde_json::to_string(&c.events)?.as_bytes(), h);
    Ok(Tally {
        turns: c.turns.len(),
        memories: c.memories.len(),
        tombstones: c.memories.iter().filter(|m| !m.status.is_active()).count(),
        events: c.events.len(),
        checksum: format!("{h:016x}"),
        chain_head: c.chain_head.clone(),
    })
}

pub async fn run(cli: &Cli, args: &MigrateArgs) -> Result<ExitCode> {
    // Copying a store calls no model.
    let config = context::config_for(cli, super::reasoner_build(&cli.command))?;
    let (kind, settings, origin) = config.plugin("store")?;
    if kind != "sqlite" {
        bail!("{origin}: migrate reads a data directory's sqlite store, but [store] kind is {kind:?}");
    }
    let rel = settings.get("path").and_then(|p| p.as_str()).unwrap_or("mnemo.db");
    let path = mnemo_contract::registry::resolve_inside(&args.from, rel)?;
    ensure!(path.is_file(), "{} holds no store ({} is missing)", args.from.display(), path.display());
    let source = SqliteStore::open(&path).with_context(|| format!("opening {}", path.display()))?;
    let target = PostgresStore::new(&PgSettings {
        url: args.to.clone(),
        schema: args.schema.clone(),
        throwaway: false,
        pool_size: 4,
    })?;
    ensure!(
        target.is_empty().await?,
        "schema {:?} of the target already holds data: migrate into an empty schema (--schema NAME)",
        args.schema
    );
    let mut rows = Vec::new();
    for ns in source.namespaces().await? {
        let c = contents(&source, &ns).await?;
        // The source's chain order, so that the copy's history chain has the same head.
        let (mut order, mut after) = (Vec::new(), 0);
        while let Some(page) = source.history_chain(&ns, after, 10_000).await? {
            order.extend(page.iter().map(|r| (r.entry, r.id)));
            match page.last() {
                Some(last) if page.len() == 10_000 => after = last.seq,
                _ => break,
            }
        }
        target
            .import_namespace(&ns, &c.turns, &c.memories, &c.events, &order)
            .await
            .with_context(|| format!("importing namespace {ns}"))?;
        eprintln!("copied {ns}: {} turns, {} memories, {} events", c.turns.len(), c.memories.len(), c.events.len());
    }
    target.finish_import().await?;
    let mut all_same = true;
    for ns in source.namespaces().await? {
        let s = tally(&contents(&source, &ns).await?)?;
        let t = tally(&contents(&target, &ns).await?)?;
        let same = s == t;
        all_same &= same;
        rows.push(Row { namespace: ns.to_string(), source: s, target: t, same });
    }
    let target_namespaces = target.namespaces().await?;
    let namespaces_same = target_namespaces.len() == rows.len();
    all_same &= namespaces_same;
    if args.json {
        out!("{}", serde_json::to_string_pretty(&serde_json::json!({"namespaces": rows, "ok": all_same}))?);
    } else {
        out!("| namespace | turns | memories | tombstones | events | checksum (source) | checksum (target) | same |");
        out!("|---|---|---|---|---|---|---|---|");
        for r in &rows {
            out!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                r.namespace,
                r.target.turns,
                r.target.memories,
                r.target.tombstones,
                r.target.events,
                r.source.checksum,
                r.target.checksum,
                if r.same { "yes" } else { "NO" }
            );
        }
    }
    if !all_same {
        eprintln!("error: the copy differs from the source (see the table)");
        return Ok(ExitCode::FAILURE);
    }
    eprintln!("migrated {} namespace(s) into schema {:?}; counts and checksums match", rows.len(), args.schema);
    Ok(ExitCode::SUCCESS)
}
