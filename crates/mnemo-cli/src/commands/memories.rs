//! `mnemo list`, `mnemo export`, `mnemo restore ID`: a namespace's memories as a whole.
use anyhow::Result;

use mnemo_agent::Runtime;
use mnemo_core::Namespace;

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
            mnemo_core::Status::Active => "active".to_string(),
            mnemo_core::Status::Tombstoned { reason, .. } => format!("tombstoned ({reason})"),
        };
        out!("{:>6}  {:<10} {:?}  [{status}]", m.id.to_string(), m.kind.as_str(), m.content);
    }
    if let Some(next) = p.next_after {
        out!("… more: --after {next}");
    }
    Ok(())
}

/// Every memory as JSON lines on stdout (the format with or without --json).
pub async fn export(rt: &Runtime, ns: &Namespace, a: &ExportArgs) -> Result<()> {
    use std::io::Write as _;
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
    eprintln!("mnemo: exported {n} memories of namespace {ns}");
    Ok(())
}

/// Restore a tombstoned memory as a new active one.
pub async fn restore(rt: &Runtime, ns: &Namespace, a: &RestoreArgs) -> Result<()> {
    let r = rt.restore(ns, a.id).await?;
    if a.out.json {
        let record = mnemo_agent::memories::MemoryRecord::from(r.restored);
        let doc = mnemo_core::tenant_spelling(
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
