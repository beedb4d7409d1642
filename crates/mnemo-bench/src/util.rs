//! Shared pieces: a reasoner that is never called, progress bars, RSS and disk usage.
use std::path::Path;

use async_trait::async_trait;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mnemo_contract::{
    Candidate, ClientKind, CoreError, Extraction, Memory, MemoryId, MemoryKind, ModelErrorKind, ModelInfo, ModelRole,
    Namespace, NewMemory, NewTurn, Provenance, Reasoner, Timestamp, Turn, Verdict,
};

/// The benchmarks ingest ready-made memories and only recall: a reasoner call is a bug.
pub struct NoReasoner;

#[async_trait]
impl Reasoner for NoReasoner {
    async fn extract(&self, _: &Turn) -> mnemo_contract::Result<Extraction> {
        Err(CoreError::model_message(
            ModelRole::Reasoner,
            ModelErrorKind::Other,
            "the benchmark reasoner does not extract (memories are ingested directly)",
        ))
    }
    async fn reconcile(&self, _: &Candidate, _: &[Memory]) -> mnemo_contract::Result<Verdict> {
        Ok(Verdict::Novel)
    }
    async fn resolve_forget(&self, _: &str, _: &[Memory]) -> mnemo_contract::Result<Vec<MemoryId>> {
        Ok(vec![])
    }
    fn model_info(&self) -> ModelInfo {
        ModelInfo { client: ClientKind::Rules, model: "bench-none".into() }
    }
}

/// A progress bar on stderr (hidden when `quiet`).
pub fn bar(len: u64, what: &str, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{msg:>18} [{bar:40}] {pos}/{len} {per_sec} eta {eta}") {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(what.to_string());
    pb
}

/// Peak resident set size of this process in bytes (`VmHWM`), if the OS says.
pub fn peak_rss_bytes() -> Option<u64> {
    proc_status_kb("VmHWM:").map(|kb| kb * 1024)
}

/// The `peak_rss` row of a scale run: MiB, and whether the peak was reset before this N.
pub fn peak_rss_mib(was_reset: bool) -> (f64, &'static str) {
    let mib = peak_rss_bytes().unwrap_or(0) as f64 / (1024.0 * 1024.0);
    (mib, if was_reset { "VmHWM, reset before this N" } else { "VmHWM of the whole process (reset refused)" })
}

/// Current resident set size in bytes (`VmRSS`).
pub fn rss_bytes() -> Option<u64> {
    proc_status_kb("VmRSS:").map(|kb| kb * 1024)
}

fn proc_status_kb(key: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Reset the peak RSS counter to the current RSS (Linux `clear_refs` 5); false if refused.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Total bytes of the files under `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else { return 0 };
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// The p-th percentile (0..=100) of sorted values, nearest rank.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A chat turn as the benchmarks ingest it: the raw turn (said by `speaker` at `at`, with its
/// dataset id) and one episodic memory of it (importance 0.5, the speaker its one source and,
/// with `speaker_entity`, its entity), imported by rule (`model`).
pub fn episodic_turn(
    ns: &Namespace,
    speaker: &str,
    at: Timestamp,
    content: String,
    external_id: &str,
    speaker_entity: bool,
    model: &str,
) -> (NewTurn, NewMemory) {
    let turn = NewTurn {
        namespace: ns.clone(),
        source: speaker.to_string(),
        at,
        text: content.clone(),
        external_id: Some(external_id.to_string()),
    };
    let mem = NewMemory {
        validity: Default::default(),
        namespace: ns.clone(),
        kind: MemoryKind::Episodic,
        content,
        claim: None,
        entities: if speaker_entity { vec![speaker.to_string()] } else { vec![] },
        importance: 0.5,
        sources: vec![speaker.to_string()],
        provenance: Provenance { turns: vec![], client: ClientKind::Rules, model: model.into() },
        created_at: at,
        pinned: false,
        embedding: None,
    };
    (turn, mem)
}

/// The namespace of a dataset's item (a conversation, a question's haystack): `prefix-id`,
/// the id's characters a namespace cannot hold replaced by '_', at most 100 of them.
pub fn namespace_for(prefix: &str, id: &str) -> mnemo_contract::Result<Namespace> {
    let id: String =
        id.chars().map(|c| if c.is_ascii_alphanumeric() || "_.:-".contains(c) { c } else { '_' }).take(100).collect();
    Namespace::new(&format!("{prefix}-{id}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn percentiles_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert!(percentile(&[], 50.0).is_nan());
    }
}
