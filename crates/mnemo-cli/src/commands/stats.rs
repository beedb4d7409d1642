//! `mnemo stats`: what the data directory holds (the figures that outlive a process; a
//! server's counters of what it did are on its GET /metrics).
use anyhow::Result;
use serde::Serialize;

use mnemo_agent::stats::StoreFigures;
use mnemo_agent::Runtime;
use mnemo_core::engine::SyncReport;

/// What `mnemo stats --json` prints.
#[derive(Serialize)]
struct Stats<'a> {
    /// What the data directory holds now.
    #[serde(flatten)]
    figures: &'a StoreFigures,
    /// What bringing the index up to the store did when this command opened it: a lag the
    /// index had on disk shows here, since the figures above are read after catching up.
    index_at_open: &'a SyncReport,
}

pub async fn run(rt: &Runtime, json: bool) -> Result<()> {
    let figures = rt.store_figures().await?;
    let at_open = rt.startup_sync();
    if json {
        super::emit_json(&Stats { figures: &figures, index_at_open: at_open })?;
        return Ok(());
    }
    out!("{:<18} {:>10} {:>10}", "memories", "active", "tombstoned");
    for k in &figures.memories {
        out!("{:<18} {:>10} {:>10}", k.kind.as_str(), k.active, k.tombstoned);
    }
    let tombstoned: u64 = figures.memories.iter().map(|k| k.tombstoned).sum();
    out!("{:<18} {:>10} {:>10}", "total", figures.active(), tombstoned);
    out!("{:<18} {:>10}", "namespaces", figures.namespaces);
    out!("{:<18} {:>10}", "store revision", figures.store_rev);
    let index = match figures.index_rev {
        Some(rev) => format!("up to revision {rev}, lag {}", figures.index_lag),
        None => "stale: the next command that writes rebuilds it from the store".to_string(),
    };
    out!("{:<18} {index}", "index");
    let applied = at_open.upserted + at_open.removed;
    let opened = match (&at_open.rebuilt_because, applied) {
        (Some(why), _) => format!("rebuilt from the store ({why})"),
        (None, 0) => "current".to_string(),
        (None, n) => format!("caught up {n} change(s) the index on disk lacked"),
    };
    out!("{:<18} {opened}", "index when opened");
    out!("{:<18} {:>10}", "escalations open", figures.escalations_open);
    out!("{:<18} {:>10} ({})", "data directory", figures.data_dir_bytes, human_bytes(figures.data_dir_bytes));
    Ok(())
}

/// Bytes in KiB/MiB/GiB, one decimal.
fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_read_in_binary_units() {
        assert_eq!(super::human_bytes(512), "512 B");
        assert_eq!(super::human_bytes(1536), "1.5 KiB");
        assert_eq!(super::human_bytes(3 << 20), "3.0 MiB");
    }
}
