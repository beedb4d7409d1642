//! `mnemo bench serve`: the load benchmark against `mnemo serve` on loopback (or a server
//! given by --url): the clients and their check are `mnemo_server::load`; this file starts
//! and stops the server, samples its resident memory for a soak, and writes the report.
use anyhow::{Context as _, Result};
use std::io::BufRead as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use mnemo_server::load::{LoadOptions, LoadReport};

use crate::cli::{Cli, ServeBenchArgs};
use crate::commands::serve::LISTENING;
use crate::context;

/// `flag`'s value: "60s", "2m", "500ms" or a number of seconds.
fn parse_duration(flag: &str, s: &str) -> Result<Duration> {
    let t = s.trim();
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(t.len()));
    let n: f64 = num.parse().with_context(|| format!("{flag} {s:?}: expected e.g. 60s, 2m, 500ms"))?;
    let secs = match unit {
        "" | "s" => n,
        "ms" => n / 1e3,
        "m" => n * 60.0,
        _ => anyhow::bail!("{flag} {s:?}: unit must be ms, s or m"),
    };
    anyhow::ensure!(secs > 0.0 && secs.is_finite(), "{flag} {s:?} must be positive");
    Ok(Duration::from_secs_f64(secs))
}

/// The resident set of process `pid` in bytes (Linux: VmRSS of /proc/PID/status); None
/// elsewhere or once it has ended.
fn resident_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.trim().trim_end_matches("kB").trim();
    kb.parse::<u64>().ok().map(|k| k * 1024)
}

/// One sample of the server's resident memory during the load.
#[derive(Clone, Debug, serde::Serialize)]
struct RssSample {
    /// Seconds since the load began.
    t_s: f64,
    /// Resident set, MiB.
    rss_mib: f64,
}

/// Sample `pid`'s resident memory every `every` until `stop` is set (the first sample at once).
fn sample_rss(
    pid: u32,
    every: Duration,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<Vec<RssSample>> {
    tokio::spawn(async move {
        let started = std::time::Instant::now();
        let mut samples = Vec::new();
        let mut tick = tokio::time::interval(every);
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            tick.tick().await;
            let Some(b) = tokio::task::spawn_blocking(move || resident_bytes(pid)).await.ok().flatten() else {
                break;
            };
            samples.push(RssSample { t_s: started.elapsed().as_secs_f64(), rss_mib: b as f64 / 1048576.0 });
        }
        samples
    })
}

/// What the soak's samples say: resident memory at the end of the warm-up (the first sample at
/// or after `warm_up`; the first sample of all when the run was shorter), its peak and its
/// last value, and the growth from the first to the last.
#[derive(Clone, Debug, serde::Serialize)]
struct RssSummary {
    samples: usize,
    warm_up_s: f64,
    after_warm_up_mib: f64,
    peak_mib: f64,
    last_mib: f64,
    growth_mib: f64,
}

fn summarise_rss(samples: &[RssSample], warm_up: Duration) -> Option<RssSummary> {
    let w = warm_up.as_secs_f64();
    let first = samples.iter().find(|s| s.t_s >= w).or(samples.first())?;
    let last = samples.last()?;
    Some(RssSummary {
        samples: samples.len(),
        warm_up_s: first.t_s,
        after_warm_up_mib: first.rss_mib,
        peak_mib: samples.iter().map(|s| s.rss_mib).fold(0.0, f64::max),
        last_mib: last.rss_mib,
        growth_mib: last.rss_mib - first.rss_mib,
    })
}

/// A `mnemo serve` child on loopback over a fresh data directory.
struct Child {
    process: std::process::Child,
    base: String,
    token: String,
    _dir: tempfile::TempDir,
}

/// The namespace the bench writes and reads when it starts the server itself.
const BENCH_NAMESPACE: &str = "load";

/// Fill `data_dir`'s bench namespace with `n` memories before the server starts (through the
/// engine's own write path, a batch of turns at a time), so that the load runs against a
/// store of that size.
async fn prefill(cli: &Cli, data_dir: &std::path::Path, n: usize) -> Result<()> {
    use mnemo_core::engine::{TurnRequest, MAX_BATCH_TURNS};
    let config = context::config(cli)?;
    let clock = context::clock(cli, &config)?;
    let rt =
        context::runtime(&config, data_dir, clock, mnemo_agent::ReasonerBuild::AtBuild, mnemo_agent::Access::Write)
            .await?;
    let ns = mnemo_contract::Namespace::new(BENCH_NAMESPACE)?;
    let started = std::time::Instant::now();
    let mut written = 0;
    while written < n {
        let batch: Vec<TurnRequest> = (written..n.min(written + MAX_BATCH_TURNS))
            .map(|i| TurnRequest {
                namespace: ns.clone(),
                source: "prefill".into(),
                text: format!("[SEM] Prefill{i} | slot | P{i}"),
                external_id: None,
                at: None,
            })
            .collect();
        written += batch.len();
        for r in rt.engine().remember_batch(batch).await {
            r?;
        }
    }
    rt.engine().flush_index().await?;
    eprintln!("mnemo: prefilled {n} memories in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

fn start_child(configs: &[PathBuf], dir: tempfile::TempDir) -> Result<Child> {
    use mnemo_contract::Clock as _;
    let token = format!("bench-{:x}-{:x}", std::process::id(), mnemo_contract::SystemClock.now().millis());
    let config = dir.path().join("serve-bench.toml");
    std::fs::write(
        &config,
        format!(
            "[[serve.tokens]]\nprincipal = \"load\"\ntoken_env = \"MNEMO_BENCH_TOKEN\"\nnamespaces = [\"{BENCH_NAMESPACE}\"]\n"
        ),
    )?;
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.arg("--data-dir").arg(dir.path().join("data"));
    for c in configs {
        cmd.arg("--config").arg(c);
    }
    cmd.arg("--config").arg(&config).args(["serve", "--addr", "127.0.0.1:0"]);
    cmd.env("MNEMO_BENCH_TOKEN", &token).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
    let mut process = cmd.spawn().context("cannot start `mnemo serve`")?;
    let stderr = process.stderr.take().context("no stderr of `mnemo serve`")?;
    let mut lines = std::io::BufReader::new(stderr).lines();
    let base = loop {
        match lines.next() {
            Some(Ok(l)) => {
                if let Some(rest) = l.strip_prefix(LISTENING) {
                    break format!("http://{}", rest.split_whitespace().next().unwrap_or_default());
                }
            }
            _ => {
                let _ = process.kill();
                anyhow::bail!("`mnemo serve` ended before listening");
            }
        }
    };
    // Keep draining its stderr so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
    Ok(Child { process, base, token, _dir: dir })
}

/// SIGTERM (a graceful stop), then its exit status.
fn stop_child(mut c: Child) -> Result<String> {
    let pid = c.process.id().to_string();
    let sent = std::process::Command::new("kill").args(["-TERM", &pid]).status();
    if !sent.is_ok_and(|s| s.success()) {
        let _ = c.process.kill();
    }
    let status = c.process.wait()?;
    Ok(if status.success() { "graceful (exit 0)".to_string() } else { format!("{status}") })
}

pub async fn run(cli: &Cli, a: &ServeBenchArgs) -> Result<ExitCode> {
    let duration = parse_duration("--duration", &a.duration)?;
    let pace = a.pace.as_deref().map(|p| parse_duration("--pace", p)).transpose()?;
    let sample_every = parse_duration("--sample-every", &a.sample_every)?;
    let warm_up = parse_duration("--warm-up", &a.warm_up)?;
    if a.max_rss_growth_mib.is_some() && a.url.is_some() {
        anyhow::bail!("--max-rss-growth-mib samples the server the bench starts: not with --url");
    }
    let config = context::config(cli)?;
    let (child, base, token, namespace) = match &a.url {
        Some(_) if a.prefill > 0 => {
            anyhow::bail!("--prefill fills the data directory of the server the bench starts: not with --url")
        }
        Some(url) => {
            let token = std::env::var("MNEMO_TOKEN").context("--url needs the bearer token in MNEMO_TOKEN")?;
            (None, url.trim_end_matches('/').to_string(), token, a.namespace.clone())
        }
        None => {
            let dir = tempfile::tempdir()?;
            if a.prefill > 0 {
                prefill(cli, &dir.path().join("data"), a.prefill).await?;
            }
            let configs = cli.config.clone();
            let c = tokio::task::spawn_blocking(move || start_child(&configs, dir)).await??;
            let (b, t) = (c.base.clone(), c.token.clone());
            (Some(c), b, t, BENCH_NAMESPACE.to_string())
        }
    };
    eprintln!("mnemo: {} clients for {:?} against {base}", a.clients, duration);
    let opts = LoadOptions {
        base: base.clone(),
        token,
        namespace,
        clients: a.clients,
        duration,
        remember_every: a.remember_every as usize,
        turn_every: a.turn_every as usize,
        pace,
        full_recall: a.recall_detail == "full",
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = child.as_ref().map(|c| sample_rss(c.process.id(), sample_every, stop.clone()));
    let report = mnemo_server::load::run(&opts).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let rss_samples = match sampler {
        Some(s) => s.await.unwrap_or_default(),
        None => Vec::new(),
    };
    let rss = summarise_rss(&rss_samples, warm_up);
    let server_exit = match child {
        Some(c) => tokio::task::spawn_blocking(move || stop_child(c)).await??,
        None => "not started here (--url)".to_string(),
    };
    let report = report?;
    let seam = context::seam(&config)?.describe();
    let (embedder, _, _) = config.plugin("embedder")?;
    // The model as the server echoed it in its answers (none answered: said so).
    let model = report.model_echoed.clone().unwrap_or_else(|| "unknown: no remember was answered".into());
    let provenance = crate::provenance::run_provenance(&seam, &model, &embedder, &config.hash());
    let machine = tokio::task::spawn_blocking(machine).await?;
    let run = Run {
        clients: a.clients,
        duration,
        prefill: a.prefill,
        remember_every: a.remember_every,
        turn_every: a.turn_every,
        pace,
        recall_detail: &a.recall_detail,
        machine: &machine,
        server_exit: &server_exit,
        rss: rss.as_ref(),
        rss_samples: &rss_samples,
    };
    let rows = rows(&report, &run);
    let markdown = markdown(&report, &run);
    let out = mnemo_bench::BenchReport::new(provenance, rows, markdown);
    match a.json.as_deref() {
        Some(p) if p == std::path::Path::new("-") => out!("{}", out.to_json()),
        Some(p) => {
            out!("{}", out.markdown);
            std::fs::write(p, out.to_json())?;
            eprintln!("wrote {}", p.display());
        }
        None => out!("{}", out.markdown),
    }
    let errors: usize = report.ops.iter().map(|o| o.errors).sum();
    let rss_within = match (a.max_rss_growth_mib, &rss) {
        (Some(bound), Some(r)) if r.growth_mib > bound => {
            eprintln!(
                "mnemo: resident memory grew {:.1} MiB after the warm-up, above --max-rss-growth-mib {bound}",
                r.growth_mib
            );
            false
        }
        (Some(_), None) => {
            eprintln!("mnemo: --max-rss-growth-mib: the server's resident memory could not be sampled");
            false
        }
        _ => true,
    };
    let clean = errors == 0
        && report.lost.is_empty()
        && report.check_failures.is_empty()
        && report.retrieval_misses.is_empty()
        && rss_within;
    Ok(if clean { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// What a run was, beside what it measured.
struct Run<'a> {
    clients: usize,
    duration: Duration,
    prefill: usize,
    remember_every: u32,
    turn_every: u32,
    pace: Option<Duration>,
    recall_detail: &'a str,
    machine: &'a str,
    server_exit: &'a str,
    rss: Option<&'a RssSummary>,
    rss_samples: &'a [RssSample],
}

/// OS, architecture, cores and CPU model.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown cpu".into());
    format!(
        "{}/{}, {} cores, {cpu}",
        std::env::consts::OS,
        std::env::consts::ARCH,
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    )
}

fn rows(r: &LoadReport, run: &Run) -> Vec<serde_json::Value> {
    let (clients, d, machine) = (run.clients, run.duration.as_secs_f64(), run.machine);
    let pace_ms = run.pace.map(|p| p.as_secs_f64() * 1e3);
    let mut rows: Vec<serde_json::Value> = r
        .ops
        .iter()
        .map(|o| {
            serde_json::json!({
                "bench": "serve-load", "op": o.op, "clients": clients, "duration_s": d,
                "prefilled_memories": run.prefill, "remember_every": run.remember_every,
                "turn_every": run.turn_every, "pace_ms": pace_ms,
                "recall_detail": run.recall_detail,
                "ok": o.ok, "errors": o.errors, "shed": o.shed, "throughput_per_s": o.throughput_per_s,
                "p50_ms": o.p50_ms, "p99_ms": o.p99_ms, "max_ms": o.max_ms, "machine": machine,
            })
        })
        .collect();
    rows.push(serde_json::json!({
        "bench": "serve-load", "op": "check", "clients": clients, "duration_s": d,
        "prefilled_memories": run.prefill, "remember_every": run.remember_every,
        "turn_every": run.turn_every, "pace_ms": pace_ms,
        "recall_detail": run.recall_detail,
        "elapsed_s": r.elapsed_s, "acknowledged_writes": r.acknowledged, "stored": r.stored,
        "recall_checked": r.recall_checked, "recallable": r.recallable,
        "lost_writes": r.lost.len(), "lost_sample": r.lost.iter().take(10).collect::<Vec<_>>(),
        "retrieval_misses": r.retrieval_misses.len(),
        "retrieval_miss_sample": r.retrieval_misses.iter().take(10).collect::<Vec<_>>(),
        "failed_check_requests": r.check_failures.len(), "check_requests_shed_and_retried": r.check_retries,
        "failed_check_sample": r.check_failures.iter().take(10).collect::<Vec<_>>(),
        "recall_misses_during_load": r.recall_misses, "recall_miss_sample_during_load": r.recall_miss_samples,
        "error_samples": r.error_samples, "server_exit": run.server_exit, "machine": machine,
    }));
    if let Some(rss) = run.rss {
        rows.push(serde_json::json!({
            "bench": "serve-load", "op": "server-rss", "clients": clients, "duration_s": d,
            "prefilled_memories": run.prefill, "remember_every": run.remember_every,
            "turn_every": run.turn_every, "pace_ms": pace_ms,
            "acknowledged_writes": r.acknowledged, "summary": rss, "samples": run.rss_samples, "machine": machine,
        }));
    }
    rows
}

fn markdown(r: &LoadReport, run: &Run) -> String {
    let table = mnemo_bench::report::table(
        &["op", "ok", "errors", "shed (503/429)", "ops/s", "p50 ms", "p99 ms", "max ms"],
        &r.ops
            .iter()
            .map(|o| {
                vec![
                    o.op.clone(),
                    o.ok.to_string(),
                    o.errors.to_string(),
                    o.shed.to_string(),
                    format!("{:.1}", o.throughput_per_s),
                    format!("{:.2}", o.p50_ms),
                    format!("{:.2}", o.p99_ms),
                    format!("{:.2}", o.max_ms),
                ]
            })
            .collect::<Vec<_>>(),
    );
    let misses: String = r
        .retrieval_misses
        .iter()
        .take(5)
        .map(|m| format!("\n- query {:?}: expected {:?}, led by {:?}", m.query, m.expected, m.led))
        .collect();
    let mix = match run.turn_every {
        0 => format!("every {} operation(s) a remember", run.remember_every),
        t => format!("every {t}th operation an agent turn, of the rest every {} a remember", run.remember_every),
    };
    let pace = run.pace.map(|p| format!(", {:.0} ms pause between a client's operations", p.as_secs_f64() * 1e3));
    let rss = match run.rss {
        Some(m) => format!(
            "\nserver resident memory ({} samples): {:.1} MiB at {:.0} s (after the warm-up), peak {:.1} MiB, last {:.1} MiB: \
             growth {:+.1} MiB over {} acknowledged writes\n",
            m.samples, m.after_warm_up_mib, m.warm_up_s, m.peak_mib, m.last_mib, m.growth_mib, r.acknowledged
        ),
        None => String::new(),
    };
    format!(
        "## serve load: {} clients, {:.0} s, {} memories prefilled, {mix}{}, recall detail {}\n\n\
         machine: {}\n\n{table}\n\
         acknowledged writes {}: in the store (read back by id) {}, lost {}; recalled by their entity {} (every one up to {}, an even sample beyond): first {}, \
         retrieval misses {}{misses}\nfailed check requests {} (check requests shed and retried after Retry-After: {}); \
         recalls not leading with their value during the load: {}; server stop: {}\n{rss}",
        run.clients,
        run.duration.as_secs_f64(),
        run.prefill,
        pace.unwrap_or_default(),
        run.recall_detail,
        run.machine,
        r.acknowledged,
        r.stored,
        r.lost.len(),
        r.recall_checked,
        mnemo_server::load::MAX_RECALL_CHECKS,
        r.recallable,
        r.retrieval_misses.len(),
        r.check_failures.len(),
        r.check_retries,
        r.recall_misses,
        run.server_exit,
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn durations_name_their_flag() {
        assert_eq!(parse_duration("--pace", "50ms").unwrap(), Duration::from_millis(50));
        assert_eq!(parse_duration("--duration", "2m").unwrap(), Duration::from_secs(120));
        let e = parse_duration("--pace", "fast").unwrap_err().to_string();
        assert!(e.contains("--pace") && e.contains("fast"), "{e}");
        assert!(parse_duration("--sample-every", "0s").unwrap_err().to_string().contains("--sample-every"));
    }

    #[test]
    fn the_soak_summary_starts_after_the_warm_up() {
        let s = |t_s: f64, rss_mib: f64| RssSample { t_s, rss_mib };
        let samples = [s(0.0, 10.0), s(30.0, 50.0), s(60.0, 60.0), s(90.0, 70.0), s(120.0, 65.0)];
        let m = summarise_rss(&samples, Duration::from_secs(60)).unwrap();
        assert_eq!((m.after_warm_up_mib, m.peak_mib, m.last_mib, m.growth_mib), (60.0, 70.0, 65.0, 5.0));
        assert_eq!(m.warm_up_s, 60.0);
        // A warm-up longer than the run: measured from the first sample, and said so.
        let whole = summarise_rss(&samples, Duration::from_secs(600)).unwrap();
        assert_eq!((whole.warm_up_s, whole.growth_mib), (0.0, 55.0));
        assert!(summarise_rss(&[], Duration::ZERO).is_none());
    }

    #[test]
    fn resident_memory_of_this_process_is_read() {
        if cfg!(target_os = "linux") {
            assert!(resident_bytes(std::process::id()).unwrap() > 1024 * 1024);
        }
        assert!(resident_bytes(u32::MAX).is_none());
    }
}
