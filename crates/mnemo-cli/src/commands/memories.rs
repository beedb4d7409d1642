//! `mnemo list`, `mnemo export`, `mnemo restore ID`: a namespace's memories as a whole.
use anyhow::Result;

use mnemo_agent::Runtime;
use mnemo_contract::Namespace;

use crate::cli::{ExportArgs, ListArgs, RestoreArgs};

/// One page of memories.
pub async fn list(rt: &Runtime, ns: &Namespace, a: &ListArgs) -> Result<()> {
    let p = rt.list_after(ns, a.after, a.limit, a.all).await?;
    if a.out.json {
        return super::emit_json(&p);
    }
    if p.memories.is_empty() {
        out!("no {}memories in namespace {ns}", if a.all { "" } else { "active " });
    }
    for m in &p.memories {
        let status = match &m.status {
            mnemo_contract::Status::Active => "active".to_string(),
            mnemo_contract::Status::Tombstoned { reason, .. } => format!("tombstoned ({reason})"),
        };
        out!("{:>6}  {:<10} {:?}  [{status}]", m.id.to_string(), m.kind.as_str(), m.content);
    }
    if let Some(next) = p.next_after {
        out!("… more: --after {next}");
    }
    Ok(())
}

/// Every memory as JSON lines on stdout (the format with or without --json); with `--history`
/// the namespace's history chain instead.
pub async fn export(rt: &Runtime, ns: &Namespace, a: &ExportArgs) -> Result<()> {
    use std::io::Write as _;
    if a.history {
        return export_history(rt, ns).await;
    }
    let stdout = std::io::stdout();
    let n = rt
        .export(ns, a.all, &mut |line: &str| {
            let mut out = stdout.lock();
            match writeln!(out, "{line}") {
                // A closed pipe (`| head`) ends the export quietly.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other,
            }
        })
        .await?;
    let head = rt.engine().chain_heads().await?.into_iter().find(|h| h.namespace == ns.as_str());
    match head {
        Some(h) => eprintln!(
            "mnemo: exported {n} memories of namespace {ns} (history chain head: entry {} {})",
            h.seq,
            mnemo_contract::chain::hex(&h.hash)
        ),
        None => eprintln!("mnemo: exported {n} memories of namespace {ns}"),
    }
    Ok(())
}

/// Entries read per page by `export --history`.
const HISTORY_PAGE: usize = 1_000;

/// `export --history`: the head the store records is read first; then each chain entry up to
/// it as a JSON line (`ChainRecord`: the row as stored and its hashes), a page at a time; then
/// `{"chain_head": …}`. Entries appended meanwhile are after the head and left out. A chain
/// already broken in the store is exported as it is (the offline check names the same entry)
/// and said on stderr.
async fn export_history(rt: &Runtime, ns: &Namespace) -> Result<()> {
    use mnemo_contract::chain::{self, ChainHead};
    use std::io::Write as _;
    let engine = rt.engine();
    let recorded = engine.chain_heads().await?.into_iter().find(|h| h.namespace == ns.as_str());
    let head = recorded.unwrap_or(ChainHead { namespace: ns.as_str().to_string(), seq: 0, hash: chain::GENESIS });
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut write = |line: String| -> Result<bool> {
        match writeln!(out, "{line}") {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
            Err(e) => Err(e.into()),
            Ok(()) => Ok(true),
        }
    };
    let mut check = chain::Verifier::new(ns.as_str());
    let (mut after, mut n) = (0i64, 0usize);
    loop {
        let Some(page) = engine.history_chain(ns, after, HISTORY_PAGE).await? else {
            anyhow::bail!("this store keeps no history chain: nothing to export with --history");
        };
        let full = page.len() == HISTORY_PAGE;
        for r in page.iter().filter(|r| r.seq <= head.seq) {
            check.push(r);
            if !write(serde_json::to_string(r)?)? {
                return Ok(());
            }
            n += 1;
        }
        match page.last() {
            Some(last) if full && last.seq < head.seq => after = last.seq,
            _ => break,
        }
    }
    if !write(serde_json::json!({ "chain_head": head }).to_string())? {
        return Ok(());
    }
    match out.flush() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
        other => other?,
    }
    eprintln!(
        "mnemo: exported {n} history entries of namespace {ns} (chain head: entry {} {})",
        head.seq,
        chain::hex(&head.hash)
    );
    if let Some(b) = &check.finish(Some(&head), &[]).first_bad {
        eprintln!("mnemo: warning: the store's history of namespace {ns} does not verify: {b}");
    }
    Ok(())
}

/// Restore a tombstoned memory as a new active one.
pub async fn restore(rt: &Runtime, ns: &Namespace, a: &RestoreArgs) -> Result<()> {
    let r = rt.restore(ns, a.id).await?;
    if a.out.json {
        let record = mnemo_agent::memories::MemoryRecord::from(r.restored);
        let doc = mnemo_contract::tenant_spelling(
            || serde_json::json!({"from": r.from, "restored": record, "superseded": r.superseded}),
        );
        return super::emit_json(&doc);
    }
    out!("memory {} restored from tombstoned memory {}: {:?}", r.restored.id, r.from, r.restored.content);
    for s in &r.superseded {
        out!("  memory {s} superseded by memory {} (one current value)", r.restored.id);
    }
    Ok(())
}
