//! Drive the benchmarks until the CLI wires them:
//! `cargo run --release -p mnemo-bench --example run -- locomo --file ../shared/data/locomo/locomo-dev.json --out locomo.json`
//! `cargo run --release -p mnemo-bench --example run -- scale --n 10000,100000 --out scale.json`
//! The markdown table goes to stdout, the JSON report to `--out`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use mnemo_bench::{locomo, scale, LocomoArgs, ScaleArgs};
use mnemo_core::report::RunProvenance;

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// LoCoMo retrieval under a budget.
    Locomo {
        #[command(flatten)]
        args: LocomoArgs,
        /// Embedding dimensions of the fake embedder.
        #[arg(long, default_value_t = 256)]
        dims: usize,
        /// Write the JSON report here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Ingest / recall / RSS at scale.
    Scale {
        #[command(flatten)]
        args: ScaleArgs,
        /// Write the JSON report here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

fn provenance() -> RunProvenance {
    let git = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into());
    let dirty = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .output()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    let started = mnemo_core::Clock::now(&mnemo_core::SystemClock);
    RunProvenance {
        client: "fake".into(),
        model: "fake-qwen".into(),
        embedder: String::new(),
        offline: true,
        cassette: None,
        run_id: format!("bench-{}", started.millis()),
        config_hash: "none (bench example, defaults)".into(),
        git_commit: if dirty { format!("{git}-dirty") } else { git },
        command: std::env::args().collect::<Vec<_>>().join(" "),
        started_at: started.to_rfc3339(),
        cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        token_counter: String::new(),
    }
}

fn main() {
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (report, out) = rt.block_on(async {
        match cli.cmd {
            Cmd::Locomo { args, dims, out } => {
                let emb = Arc::new(mnemo_llm::FakeQwen::new(dims).unwrap());
                (locomo(&args, provenance(), emb).await, out)
            }
            Cmd::Scale { args, out } => (scale(&args, provenance()).await, out),
        }
    });
    match report {
        Ok(r) => {
            println!("{}", r.markdown);
            if let Some(p) = out {
                std::fs::write(&p, r.to_json()).unwrap();
                eprintln!("wrote {}", p.display());
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
