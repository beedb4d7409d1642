//! `mnemo bench tokens`: the token cost of the prose demo ([`demo`]), measured from a cassette.
//!
//! Each message of the demo is one agent turn: remember it (extract → embed → reconcile →
//! apply), recall a pack for it, assess the pack and, on ACT, plan from it. Every model call
//! goes through a meter, so the report gives prompt and completion tokens per call kind and per
//! agent turn, as the cassette recorded them.
//!
//! [`record`] records the cassette against the in-process mock OpenAI-compatible server (the
//! mock's "understanding" of the prose is scripted in [`demo`]; its token counts are
//! characters / 4); [`replay`] replays it: no network, no key.
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::json;

use mnemo_contract::EnginePolicy;
use mnemo_llm::cassette::Cassette;
use mnemo_llm::mock::MockServer;
use mnemo_report::RunProvenance;

use crate::error::{BenchError, Result};
use crate::report::{table, BenchReport};

pub mod demo;

use demo::DIMS;

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

/// Record the demo's cassette into `cassette` (replacing it) against the in-process mock.
pub async fn record(cassette: &Path, policy: EnginePolicy) -> Result<()> {
    Cassette::remove(cassette)?;
    let mock = MockServer::start().await.map_err(BenchError::Mock)?;
    demo::script(&mock);
    // The mock takes any key; this one is a placeholder, and no key is ever written.
    let env = |name: &str| (name == "MNEMO_MOCK_KEY").then(|| "mock-key".to_string());
    let recorded = demo::run(demo::settings(cassette, "record", &mock.base_url()), &env, policy).await;
    mock.stop();
    recorded.map(|_| ())
}

/// Replay the cassette `args.cassette` (no network) and report the tokens per call kind and
/// per agent turn. `provenance` makes the run's provenance block from the client, the models
/// the calls echoed and the embedder; the cassette's own provenance is added to it.
pub async fn replay(
    args: &TokensArgs,
    policy: EnginePolicy,
    provenance: impl FnOnce(&str, &str, &str) -> RunProvenance,
) -> Result<BenchReport> {
    let cassette = Cassette::load(&args.cassette)
        .map_err(|source| BenchError::NoCassette { path: args.cassette.clone(), source })?;
    let offline = |_: &str| None;
    let run = demo::run(demo::settings(&args.cassette, "replay", ""), &offline, policy).await?;
    if run.all.clients != ["replay"] {
        return Err(BenchError::Check(format!(
            "expected every call to be a replay, got clients {:?}",
            run.all.clients
        )));
    }
    let h = &cassette.header;
    let mut provenance =
        provenance("replay", &run.all.models.join(","), &format!("text-embedding-v4@{DIMS} (replayed)"));
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
    md.push_str(&table(&["call kind", "calls", "prompt", "completion", "total"], &kind_rows));
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
    md.push_str(&table(&["turn", "calls", "prompt", "completion", "total", "decision"], &turn_rows));
    md.push_str(&format!(
        "\nLargest agent turn: {worst} tokens (goal ≤ {}: {}). Total over the demo: {} tokens.\n",
        args.goal,
        if worst <= args.goal { "met" } else { "NOT met" },
        run.all.total()
    ));
    Ok(BenchReport::new(provenance, rows, md))
}
