//! The provenance block of every report: which client answered, run id, config hash, commit.
use mnemo_core::{Clock, SystemClock};
use mnemo_report::RunProvenance;

/// The commit the binary was built from (+ "-dirty" when the checkout had uncommitted changes
/// then), or "unknown" when it was built outside a git checkout; recorded by `build.rs`.
pub fn git_commit() -> String {
    env!("MNEMO_BUILD_COMMIT").to_string()
}

/// A provenance block for a run.
pub fn run_provenance(client: &str, model: &str, embedder: &str, config_hash: &str) -> RunProvenance {
    let now = SystemClock.now();
    RunProvenance {
        client: client.to_string(),
        model: model.to_string(),
        embedder: embedder.to_string(),
        offline: client != "live",
        // The cassette the seam replays or records (from the environment; see README).
        cassette: ["MNEMO_REPLAY", "MNEMO_RECORD"]
            .iter()
            .find_map(|v| std::env::var(v).ok().filter(|d| !d.trim().is_empty()).map(|d| format!("{v}={d}"))),
        run_id: format!("{:x}-{:x}", now.millis(), std::process::id()),
        config_hash: config_hash.to_string(),
        git_commit: git_commit(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        started_at: now.to_rfc3339(),
        cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        token_counter: "chars/4".to_string(),
    }
}
