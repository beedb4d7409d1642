//! A memory's history as people and agents read it, the same at every door (CLI `why`, the
//! `text` of HTTP `GET memories/{id}`, the Python `str(m.why(id))`).
use std::fmt::Write as _;

use mnemo_contract::Status;
use mnemo_core::engine::WhyReport;

/// `s` on one line (a line break shown as ` ⏎ `), at most `n` characters (ending in "…").
fn one_line(s: &str, n: usize) -> String {
    let one_line = s.replace('\n', " ⏎ ");
    if one_line.chars().count() <= n {
        one_line
    } else {
        format!("{}…", one_line.chars().take(n.saturating_sub(1)).collect::<String>())
    }
}

/// The text of `w`: the memory, its status (and on a tombstone the reason, when and what
/// superseded it), its bookkeeping, its events and the turns it came from. Ends in a newline.
pub fn render_why(w: &WhyReport) -> String {
    let mut s = String::new();
    // Writing to a String cannot fail.
    let _ = write_why(&mut s, w);
    s
}

fn write_why(s: &mut String, w: &WhyReport) -> std::fmt::Result {
    let m = &w.memory;
    writeln!(s, "memory {} [{}] in {}: {}", m.id, m.kind, m.namespace, m.content)?;
    match (&m.status, &w.erased) {
        (Status::Tombstoned { .. }, Some(e)) => {
            writeln!(s, "  status: ERASED at {}: {}", e.at, e.reason)?;
            writeln!(
                s,
                "  its content, claim, entities and embedding are gone (erasure {}, {} row(s) emptied{})",
                e.id,
                e.rows.len(),
                e.by.as_deref().map(|b| format!(", asked by {b}")).unwrap_or_default()
            )?;
        }
        (Status::Active, _) => writeln!(s, "  status: active")?,
        (Status::Tombstoned { reason, at, superseded_by }, None) => {
            writeln!(s, "  status: TOMBSTONED at {at}")?;
            writeln!(s, "  reason: {reason}")?;
            if let Some(by_id) = superseded_by {
                let by = w.superseded_by.as_ref().map(|m| m.content.as_str()).unwrap_or("?");
                writeln!(s, "  superseded by memory {by_id}: {by}")?;
            }
        }
    }
    writeln!(
        s,
        "  importance {:.2}, reinforcements {}, sources [{}], created {}, last confirmed {}",
        m.importance,
        m.reinforcements,
        m.sources.join(", "),
        m.created_at,
        m.last_confirmed_at
    )?;
    writeln!(s, "  extracted by {} / {}", m.provenance.client.as_str(), m.provenance.model)?;
    writeln!(s, "  history:")?;
    for e in &w.events {
        let turn = e.turn.map(|t| format!(" (turn {t})")).unwrap_or_default();
        writeln!(s, "    {}  {:<11}{} {}", e.at, e.event, turn, e.detail)?;
    }
    for t in &w.turns {
        writeln!(s, "  turn {} at {} by {}: {}", t.id, t.at, t.source, one_line(&t.text, 80))?;
    }
    Ok(())
}
