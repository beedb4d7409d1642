//! The provenance block of every report: which client answered, run id, config hash, commit.
use mnemo_contract::{Clock, SystemClock};
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
        command: std::env::args().map(|a| portable_arg(&a)).collect::<Vec<_>>().join(" "),
        started_at: now.to_rfc3339(),
        cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        token_counter: "chars/4".to_string(),
    }
}

/// An argument as a result file records it: a path outside the working directory (absolute, or
/// up through `..`, e.g. a data file beside the repository) by its file name only, so that no
/// result file names a place on the machine it ran on (`--flag=PATH` alike).
fn portable_arg(arg: &str) -> String {
    let (flag, value) = match arg.split_once('=') {
        Some((f, v)) if f.starts_with("--") => (Some(f), v),
        _ => (None, arg),
    };
    let outside = value.starts_with('/') || value.starts_with("../");
    let shown = match std::path::Path::new(value).file_name() {
        Some(name) if outside => name.to_string_lossy().into_owned(),
        _ => value.to_string(),
    };
    match flag {
        Some(f) => format!("{f}={shown}"),
        None => shown,
    }
}

#[cfg(test)]
mod tests {
    use super::portable_arg;

    #[test]
    fn paths_outside_the_working_directory_are_named_by_their_file_name() {
        assert_eq!(portable_arg("../data/locomo-dev.json"), "locomo-dev.json");
        assert_eq!(portable_arg("--data=/home/u/x.json"), "--data=x.json");
        assert_eq!(portable_arg("bench/results/a.json"), "bench/results/a.json");
        assert_eq!(portable_arg("--budgets=256,512"), "--budgets=256,512");
    }
}
