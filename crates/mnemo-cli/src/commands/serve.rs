//! `mnemo serve`: the HTTP API over the data directory (this process is its one writer).
//! `mnemo bench serve`: the load benchmark against `mnemo serve` on loopback.
use anyhow::{Context as _, Result};
use std::io::BufRead as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mnemo_server::load::{LoadOptions, LoadReport};
use mnemo_server::ServeSettings;

use crate::cli::{Cli, ServeArgs, ServeBenchArgs};
use crate::context;

/// The line `mnemo serve` prints on stderr once it listens (the bench reads it).
const LISTENING: &str = "mnemo: listening on http://";

pub async fn run(cli: &Cli, a: &ServeArgs) -> Result<ExitCode> {
    let config = context::config(cli)?;
    let (table, origin) = config.serve();
    let settings = ServeSettings::from_table(&table, &origin, &|v| std::env::var(v).ok())?;
    let clock = context::clock(cli, &config)?;
    let rt = context::runtime(
        &config,
        &cli.data_dir,
        clock,
        mnemo_agent::ReasonerBuild::AtBuild,
        mnemo_agent::Access::Write,
    )
    .await?;
    // Concurrent clients' remembers are written together, one batch per commit.
    rt.start_group_commit()?;
    let listener =
        tokio::net::TcpListener::bind(&a.addr).await.with_context(|| format!("cannot listen on {}", a.addr))?;
    let addr = listener.local_addr()?;
    // Always said (even with -q): a caller of `--addr 127.0.0.1:0` needs the port.
    eprintln!("{LISTENING}{addr} (data directory {}; ctrl-c or SIGTERM stops)", cli.data_dir.display());
    mnemo_server::serve(Arc::new(rt), settings, listener, mnemo_server::shutdown_signal()).await?;
    eprintln!("mnemo: stopped; every acknowledged write is in the store");
    Ok(ExitCode::SUCCESS)
}

/// "60s", "2m", "500ms" or a number of seconds.
fn parse_duration(s: &str) -> Result<Duration> {
    let t = s.trim();
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(t.len()));
    let n: f64 = num.parse().with_context(|| format!("--duration {s:?}: expected e.g. 60s, 2m, 500ms"))?;
    let secs = match unit {
        "" | "s" => n,
        "ms" => n / 1e3,
        "m" => n * 60.0,
        _ => anyhow::bail!("--duration {s:?}: unit must be ms, s or m"),
    };
    anyhow::ensure!(secs > 0.0 && secs.is_finite(), "--duration {s:?} must be positive");
    Ok(Duration::from_secs_f64(secs))
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
    let ns = mnemo_core::Namespace::new(BENCH_NAMESPACE)?;
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
    use mnemo_core::Clock as _;
    let token = format!("bench-{:x}-{:x}", std::process::id(), mnemo_core::SystemClock.now().millis());
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

pub async fn bench(cli: &Cli, a: &ServeBenchArgs) -> Result<ExitCode> {
    let duration = parse_duration(&a.duration)?;
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
        full_recall: a.recall_detail == "full",
    };
    let report = mnemo_server::load::run(&opts).await;
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
        recall_detail: &a.recall_detail,
        machine: &machine,
        server_exit: &server_exit,
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
    let clean =
        errors == 0 && report.lost.is_empty() && report.check_failures.is_empty() && report.retrieval_misses.is_empty();
    Ok(if clean { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// What a run was, beside what it measured.
struct Run<'a> {
    clients: usize,
    duration: Duration,
    prefill: usize,
    remember_every: u32,
    recall_detail: &'a str,
    machine: &'a str,
    server_exit: &'a str,
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
    let mut rows: Vec<serde_json::Value> = r
        .ops
        .iter()
        .map(|o| {
            serde_json::json!({
                "bench": "serve-load", "op": o.op, "clients": clients, "duration_s": d,
                "prefilled_memories": run.prefill, "remember_every": run.remember_every,
                "recall_detail": run.recall_detail,
                "ok": o.ok, "errors": o.errors, "throughput_per_s": o.throughput_per_s,
                "p50_ms": o.p50_ms, "p99_ms": o.p99_ms, "max_ms": o.max_ms, "machine": machine,
            })
        })
        .collect();
    rows.push(serde_json::json!({
        "bench": "serve-load", "op": "check", "clients": clients, "duration_s": d,
        "prefilled_memories": run.prefill, "remember_every": run.remember_every,
        "recall_detail": run.recall_detail,
        "elapsed_s": r.elapsed_s, "acknowledged_writes": r.acknowledged, "stored": r.stored,
        "recall_checked": r.recall_checked, "recallable": r.recallable,
        "lost_writes": r.lost.len(), "lost_sample": r.lost.iter().take(10).collect::<Vec<_>>(),
        "retrieval_misses": r.retrieval_misses.len(),
        "retrieval_miss_sample": r.retrieval_misses.iter().take(10).collect::<Vec<_>>(),
        "failed_check_requests": r.check_failures.len(),
        "failed_check_sample": r.check_failures.iter().take(10).collect::<Vec<_>>(),
        "recall_misses_during_load": r.recall_misses, "recall_miss_sample_during_load": r.recall_miss_samples,
        "error_samples": r.error_samples, "server_exit": run.server_exit, "machine": machine,
    }));
    rows
}

fn markdown(r: &LoadReport, run: &Run) -> String {
    let table = mnemo_bench::report::table(
        &["op", "ok", "errors", "ops/s", "p50 ms", "p99 ms", "max ms"],
        &r.ops
            .iter()
            .map(|o| {
                vec![
                    o.op.clone(),
                    o.ok.to_string(),
                    o.errors.to_string(),
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
    format!(
        "## serve load: {} clients, {:.0} s, {} memories prefilled, every {} operation(s) a remember, \
         recall detail {}\n\n\
         machine: {}\n\n{table}\n\
         acknowledged writes {}: in the store (read back by id) {}, lost {}; recalled by their entity {} (every one up to {}, an even sample beyond): first {}, \
         retrieval misses {}{misses}\nfailed check requests {}; recalls not leading with their value during \
         the load: {}; server stop: {}\n",
        run.clients,
        run.duration.as_secs_f64(),
        run.prefill,
        run.remember_every,
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
        r.recall_misses,
        run.server_exit,
    )
}
