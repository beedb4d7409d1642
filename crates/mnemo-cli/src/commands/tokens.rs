//! `mnemo bench tokens`: the token cost of the prose demo, measured from a cassette.
//!
//! The prose demo is a short clinic conversation in plain language (allergies that accumulate,
//! a dose that changes, a standing instruction, a forget request, then a question). Each
//! message is one agent turn: remember it (extract → embed → reconcile → apply), recall a pack
//! for it, assess the pack and, on ACT, plan from it. Every model call goes through a meter, so the report gives
//! prompt and completion tokens per call kind and per agent turn, as the cassette recorded them.
//!
//! `--record` first records the cassette against the in-process mock OpenAI-compatible server
//! (the mock's "understanding" of the prose is scripted below; its token counts are
//! characters / 4), then replays it. Without `--record` the committed cassette is replayed:
//! no network, no key.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context as _, Result};
use clap::Args;
use serde_json::json;

use mnemo_agent::assess::{AssessorSettings, GroundingAssessor};
use mnemo_contract::*;
use mnemo_core::engine::{EngineParts, RecallOptions};
use mnemo_core::Engine;
use mnemo_llm::cassette::{Cassette, Meter, UsageTally};
use mnemo_llm::mock::MockServer;
use mnemo_llm::seam::{resolve, LlmSettings, ModelEmbedder};

use crate::cli::Cli;
use crate::provenance::run_provenance;

/// `mnemo bench tokens` settings.
#[derive(Debug, Clone, Args)]
pub struct TokensArgs {
    /// The cassette directory to replay (and, with --record, to record into).
    #[arg(long, default_value = "bench/cassettes/prose-demo")]
    pub cassette: PathBuf,
    /// Record the cassette first, against the in-process mock server (replaces the file).
    #[arg(long)]
    pub record: bool,
    /// The goal for one full agent turn, in tokens.
    #[arg(long, default_value_t = 3000)]
    pub goal: u64,
}

/// The demo's namespace.
const NS: &str = "clinic";
/// Embedding dimensions of the demo (small, so the cassette stays small).
const DIMS: usize = 64;

/// The prose demo: (message, what the turn is about, for the assessor).
const DEMO: [(&str, Option<(&str, &str)>); 6] = [
    ("Hi, this is Maria Lopez. I'm allergic to penicillin.", None),
    ("Oh, and I'm also allergic to sulfa drugs. My work phone is 555-0100.", None),
    ("Dr. Chen put me on metformin, 500 mg twice a day. Please always text me reminders instead of calling.", None),
    ("Update from Dr. Chen: my metformin dose is now 1000 mg twice a day.", None),
    ("Please forget my work phone number, I left that job.", None),
    ("What metformin dose is Maria Lopez on right now?", Some(("Maria Lopez", "metformin dose"))),
];

fn memory(kind: &str, content: &str, claim: Option<(&str, &str, &str)>, many: bool) -> serde_json::Value {
    json!({"memory": {
        "kind": kind, "content": content,
        "claim": claim.map(|(e, a, v)| json!({"entity": e, "attribute": a, "value": v})),
        "entities": ["Maria Lopez"], "importance": null, "pinned": false,
        "cardinality": if many { "many" } else { "one" }
    }})
}

/// What the mock "understands" of each demo message (a live model reads the prose itself).
fn script(mock: &MockServer) {
    let m = "Maria Lopez";
    mock.script_extraction(
        "allergic to penicillin",
        json!([memory(
            "semantic",
            "Maria Lopez is allergic to penicillin.",
            Some((m, "allergies", "penicillin")),
            true
        )]),
    );
    mock.script_extraction(
        "allergic to sulfa drugs",
        json!([
            memory("semantic", "Maria Lopez is allergic to sulfa drugs.", Some((m, "allergies", "sulfa drugs")), true),
            memory("semantic", "Maria Lopez's work phone is 555-0100.", Some((m, "work phone", "555-0100")), false)
        ]),
    );
    mock.script_extraction(
        "metformin, 500 mg",
        json!([
            memory(
                "semantic",
                "Maria Lopez takes metformin 500 mg twice a day (Dr. Chen).",
                Some((m, "metformin dose", "500 mg twice a day")),
                false
            ),
            memory("procedural", "Text Maria Lopez reminders instead of calling her.", None, false)
        ]),
    );
    mock.script_extraction(
        "dose is now 1000 mg",
        json!([memory(
            "semantic",
            "Maria Lopez takes metformin 1000 mg twice a day (Dr. Chen).",
            Some((m, "metformin dose", "1000 mg twice a day")),
            false
        )]),
    );
    mock.script_extraction("forget my work phone", json!([{"forget": {"entity": m, "attribute": "work phone"}}]));
    mock.script_extraction("What metformin dose", json!([]));
}

/// One row per agent turn and the tallies by call kind.
struct Run {
    turns: Vec<(usize, UsageTally, String)>,
    all: UsageTally,
}

async fn run_demo(
    settings: LlmSettings,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    policy: EnginePolicy,
) -> Result<Run> {
    let seam = resolve(settings, env)?;
    // One meter over both models of the run: its tally is taken per agent turn.
    let meter = Meter::new();
    let reasoner = seam.reasoner_over(Arc::new(meter.wrap(seam.chat()?)));
    let embedder =
        ModelEmbedder::new(Arc::new(meter.wrap(seam.embed()?)), &seam.settings.embedding_model, DIMS, &seam.mode);
    let clock = Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-01T09:00:00Z")?));
    let engine = Engine::new(EngineParts {
        store: Arc::new(mnemo_store::sqlite::SqliteStore::open_in_memory()?),
        index: Arc::new(mnemo_store::brute::BruteForceIndex::new()),
        embedder: Arc::new(embedder),
        reasoner: Arc::new(reasoner),
        clock: clock.clone(),
        tokens: Arc::new(CharTokenCounter),
        policy,
    })?;
    let assessor = GroundingAssessor::new(AssessorSettings::default(), vec![]);
    let ns = Namespace::new(NS)?;
    let mut run = Run { turns: Vec::new(), all: UsageTally::default() };
    for (i, (message, about)) in DEMO.iter().enumerate() {
        clock.advance(mnemo_contract::time::DAY_MS);
        engine.remember(&ns, "patient", message).await.with_context(|| format!("demo turn {}", i + 1))?;
        let pack = engine.recall(&ns, message, &RecallOptions::default()).await?;
        let task = Task { query: message.to_string(), about: about.map(|(e, a)| (e.to_string(), a.to_string())) };
        let a = mnemo_agent::assess::settle(&engine, &ns, assessor.assess(&task, pack, clock.now()).await?).await?;
        let decision = match a.decision {
            Decision::Act => {
                // The full agent turn plans from the assessed pack (on the reasoning tier).
                engine.plan(&task, &mnemo_agent::plan_check::lines_of(&a)).await?;
                "act".to_string()
            }
            Decision::Escalate { .. } => "escalate".to_string(),
        };
        let tally = meter.take();
        for (k, (n, p, c)) in &tally.by_kind {
            let row = run.all.by_kind.entry(k.clone()).or_default();
            row.0 += n;
            row.1 += p;
            row.2 += c;
        }
        for m in &tally.models {
            if !run.all.models.contains(m) {
                run.all.models.push(m.clone());
            }
        }
        for c in &tally.clients {
            if !run.all.clients.contains(c) {
                run.all.clients.push(c.clone());
            }
        }
        run.turns.push((i + 1, tally, decision));
    }
    Ok(run)
}

fn demo_settings(dir: &Path, client: &str, base_url: &str) -> LlmSettings {
    LlmSettings {
        client: client.into(),
        base_url: base_url.into(),
        api_key_env: "MNEMO_MOCK_KEY".into(),
        cassette_dir: dir.display().to_string(),
        cassette_mock: true,
        embedding_dims: DIMS,
        backoff_base_ms: 1,
        ..LlmSettings::default()
    }
}

/// Run the benchmark.
pub async fn run(cli: &Cli, args: &TokensArgs) -> Result<mnemo_bench::BenchReport> {
    // This benchmark picks its own client (record against the mock, then replay): the
    // configured [llm] client is not used, so it is not announced.
    let config = mnemo_agent::Config::load(&cli.config)?;
    if !cli.quiet {
        eprintln!("mnemo: model client: replay (from {}; no network)", args.cassette.display());
    }
    let policy = config.policy().clone();
    if args.record {
        Cassette::remove(&args.cassette)?;
        let mock = MockServer::start().await?;
        script(&mock);
        // The mock takes any key; this one is a placeholder, and no key is ever written.
        let env = |name: &str| (name == "MNEMO_MOCK_KEY").then(|| "mock-key".to_string());
        run_demo(demo_settings(&args.cassette, "record", &mock.base_url()), &env, policy.clone()).await?;
        mock.stop();
        eprintln!("recorded {} against the in-process mock", args.cassette.display());
    }
    let cassette = Cassette::load(&args.cassette)
        .with_context(|| format!("no cassette at {} (record one with --record)", args.cassette.display()))?;
    let offline = |_: &str| None;
    let run = run_demo(demo_settings(&args.cassette, "replay", ""), &offline, policy).await?;
    if run.all.clients != ["replay"] {
        bail!("expected every call to be a replay, got clients {:?}", run.all.clients);
    }
    let h = &cassette.header;
    let mut provenance = run_provenance(
        "replay",
        &run.all.models.join(","),
        &format!("text-embedding-v4@{DIMS} (replayed)"),
        &config.hash(),
    );
    provenance.cassette = Some(format!(
        "{} (recorded {} against {}{}; models echoed: {})",
        args.cassette.display(),
        h.recorded_at,
        h.base_url,
        if h.mock { ", a mock server: token counts are characters / 4, not a provider's tokenizer" } else { "" },
        h.echoed_models.join(", ")
    ));
    let mut rows = Vec::new();
    let mut md = format!(
        "# Token cost of the prose demo\n\nclient: replay; cassette: {}\n\n## Per call kind\n\n",
        provenance.cassette.clone().unwrap_or_default()
    );
    let mut kind_rows = Vec::new();
    for (k, (n, p, c)) in &run.all.by_kind {
        rows.push(json!({"table": "by_kind", "kind": k, "calls": n, "prompt_tokens": p, "completion_tokens": c}));
        kind_rows.push(vec![k.clone(), n.to_string(), p.to_string(), c.to_string(), (p + c).to_string()]);
    }
    md.push_str(&mnemo_bench::report::table(&["call kind", "calls", "prompt", "completion", "total"], &kind_rows));
    md.push_str("\n## Per agent turn (remember + recall + assess + plan on ACT)\n\n");
    let mut turn_rows = Vec::new();
    let mut worst = 0;
    for (i, t, decision) in &run.turns {
        let (p, c): (u64, u64) = t.by_kind.values().fold((0, 0), |(a, b), (_, p, c)| (a + p, b + c));
        let calls: u32 = t.by_kind.values().map(|(n, _, _)| n).sum();
        worst = worst.max(p + c);
        rows.push(json!({"table": "by_turn", "turn": i, "calls": calls, "prompt_tokens": p, "completion_tokens": c,
            "total_tokens": p + c, "within_goal": p + c <= args.goal, "decision": decision}));
        turn_rows.push(vec![
            i.to_string(),
            calls.to_string(),
            p.to_string(),
            c.to_string(),
            (p + c).to_string(),
            decision.clone(),
        ]);
    }
    md.push_str(&mnemo_bench::report::table(
        &["turn", "calls", "prompt", "completion", "total", "decision"],
        &turn_rows,
    ));
    md.push_str(&format!(
        "\nLargest agent turn: {worst} tokens (goal ≤ {}: {}). Total over the demo: {} tokens.\n",
        args.goal,
        if worst <= args.goal { "met" } else { "NOT met" },
        run.all.total()
    ));
    Ok(mnemo_bench::BenchReport::new(provenance, rows, md))
}
