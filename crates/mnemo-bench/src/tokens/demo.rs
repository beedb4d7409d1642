//! The prose demo: a short clinic conversation in plain language (allergies that accumulate, a
//! dose that changes, a standing instruction, a forget request, then a question), what the mock
//! server "understands" of it, and one run of it through a metered engine.
use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use mnemo_agent::assess::{AssessorSettings, GroundingAssessor};
use mnemo_contract::{Assessor, CharTokenCounter, Clock, Decision, EnginePolicy, Namespace, SimClock, Task, Timestamp};
use mnemo_core::engine::{EngineParts, RecallOptions};
use mnemo_core::Engine;
use mnemo_llm::cassette::{Meter, UsageTally};
use mnemo_llm::mock::MockServer;
use mnemo_llm::seam::{resolve, LlmSettings, ModelEmbedder};

use crate::error::{BenchError, Result};

/// The demo's namespace.
const NS: &str = "clinic";
/// Embedding dimensions of the demo (small, so the cassette stays small).
pub const DIMS: usize = 64;

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

/// Script what the mock "understands" of each demo message (a live model reads the prose itself).
pub fn script(mock: &MockServer) {
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
pub struct Run {
    /// Per agent turn: its number (from 1), its calls' tally and the gate's decision.
    pub turns: Vec<(usize, UsageTally, String)>,
    /// Every call of the demo, by kind, with the models and clients seen.
    pub all: UsageTally,
}

/// The demo through an engine whose models (resolved from `settings`, `env` giving the
/// variables) are metered; the tally is taken per agent turn.
pub async fn run(
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
        engine
            .remember(&ns, "patient", message)
            .await
            .map_err(|source| BenchError::DemoTurn { turn: i + 1, source })?;
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

/// The model seam of the demo: `client` (record or replay) over the cassette `dir`.
pub fn settings(dir: &Path, client: &str, base_url: &str) -> LlmSettings {
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
