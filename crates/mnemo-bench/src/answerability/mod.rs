//! `bench answerability`: does the trust gate know what memory does not know?
//!
//! Real long conversations (LoCoMo, LongMemEval) are ingested one haystack per namespace, one
//! episodic memory per turn; then questions are recalled and assessed exactly as the doors do
//! (the configured index, embedder, recall policy and assessor; `Task::about` empty, as agents
//! mostly recall), and each verdict is scored on two sides:
//!
//! - **over-abstention**: ESCALATE on an answerable question (LoCoMo categories 1–4,
//!   LongMemEval questions with evidence) asked in its own haystack, counted over those whose
//!   evidence is in the pack (a miss of retrieval is not the gate's to answer for);
//! - **unsafe acceptance**: ACT on an unanswerable one: an answerable question asked in
//!   another haystack's namespace (another conversation, another user; a LongMemEval haystack
//!   holding one of the question's evidence sessions is passed over), a LongMemEval `_abs`
//!   question, and, reported apart, LoCoMo category 5 (a false premise about people who are in
//!   the conversation) and the questions asked in another haystack that has a speaker of a name
//!   the question uses (LoCoMo's conversations 41 and 43 both have a John: memory cannot tell
//!   one John from the other).
//!
//! Two verdicts per question: **gate** — the configured assessor with provenance age not
//! counted (these are months-old single-source chat turns: the age rule alone would escalate
//! most of them, whatever their relevance), which is what this benchmark measures — and
//! **shipped** — the configured assessor as is, at each haystack's recall time. The gate is
//! also swept over `relevance_floor`. Rates carry n and a Wilson 95% interval.
pub mod data;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mnemo_contract::registry::{self, AssessorContext, Section, StoreContext};
use mnemo_contract::{
    Assessor, CharTokenCounter, Clock as _, Embedder, EnginePolicy, MemoryId, NewMemory, NewTurn, SimClock, Store,
    Task, TokenCounter as _,
};
use mnemo_core::engine::{EngineParts, RecallOptions};
use mnemo_core::Engine;
use mnemo_report::{wilson95, RunProvenance};
use serde_json::json;

use crate::bench_index::BenchIndex;
use crate::embed_cache::CachedEmbedder;
use crate::error::{BenchError, Result};
use crate::report::{provenance_md, table, BenchReport};
use crate::util::{bar, episodic_turn, NoReasoner};
use data::{Dataset, QKind};

/// Arguments of `bench answerability`.
#[derive(Clone, Debug, clap::Args)]
pub struct AnswerabilityArgs {
    /// A LoCoMo-format JSON file (e.g. the dev split: conversations 0–4 of locomo10.json).
    #[arg(long, value_name = "FILE")]
    pub locomo: Option<PathBuf>,
    /// A LongMemEval JSON file, the upstream per-question list (S or oracle setting;
    /// repeatable).
    #[arg(long, value_name = "FILE")]
    pub longmemeval: Vec<PathBuf>,
    /// relevance_floor values the gate is swept over (the configured one is always added).
    #[arg(long, value_delimiter = ',', default_value = "0.3,0.4,0.45,0.5,0.55,0.6,0.7")]
    pub floors: Vec<f64>,
    /// Only the first N haystacks of each dataset (a quick run).
    #[arg(long, value_name = "N")]
    pub haystacks: Option<usize>,
    /// Cache embeddings in FILE by (model, text) across runs.
    #[arg(long, value_name = "FILE")]
    pub embed_cache: Option<PathBuf>,
    /// Write every question's verdicts and evidence to FILE as JSON lines: the gate's decision
    /// at each floor swept (`floors`, `gate_act`), and each packed memory's evidence, sources
    /// and text (`packed_evidence`), for bench/gate-replay.py and bench/read-check.py.
    #[arg(long, value_name = "FILE")]
    pub per_question: Option<PathBuf>,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
}

/// What the bench takes from the configuration: the `[index]` and `[assessor]` sections
/// (kind and settings) and the engine policy.
#[derive(Clone, Debug)]
pub struct GateConfig {
    /// `[index]` kind (tantivy or brute: the bench keeps it in RAM).
    pub index_kind: String,
    /// `[index]` settings.
    pub index_settings: toml::Table,
    /// `[assessor]` kind.
    pub assessor_kind: String,
    /// `[assessor]` settings.
    pub assessor_settings: toml::Table,
    /// The engine policy (`[recall]`, `[kinds]`, ...).
    pub policy: EnginePolicy,
}

/// The sets a verdict is scored in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Set {
    /// Answerable, asked in its own haystack, evidence packed: ESCALATE is over-abstention.
    Answerable,
    /// Answerable, but its evidence was not packed (reported, not scored).
    Unpacked,
    /// Asked in another haystack: ACT is unsafe.
    Cross,
    /// Asked in another haystack one of whose speakers has a name the question uses (LoCoMo's
    /// two Johns): ACT is unsafe, but memory cannot tell the two apart; reported apart.
    CrossSameName,
    /// LongMemEval `_abs`: ACT is unsafe.
    Abstention,
    /// LoCoMo category 5: ACT reported apart.
    FalsePremise,
}

impl Set {
    fn name(self) -> &'static str {
        match self {
            Set::Answerable => "answerable (evidence packed)",
            Set::Unpacked => "answerable (evidence not packed)",
            Set::Cross => "asked in another haystack",
            Set::CrossSameName => "asked in another haystack with a speaker of the same name",
            Set::Abstention => "abstention (_abs)",
            Set::FalsePremise => "false premise (category 5)",
        }
    }
    fn key(self) -> &'static str {
        match self {
            Set::Answerable => "answerable",
            Set::Unpacked => "answerable_unpacked",
            Set::Cross => "cross",
            Set::CrossSameName => "cross_same_name",
            Set::Abstention => "abstention",
            Set::FalsePremise => "false_premise",
        }
    }
    /// The failure counted: ESCALATE for the answerable, ACT for the rest.
    fn metric(self) -> &'static str {
        match self {
            Set::Answerable | Set::Unpacked => "over_abstention",
            _ => "unsafe_acceptance",
        }
    }
    fn failed(self, act: bool) -> bool {
        match self {
            Set::Answerable | Set::Unpacked => !act,
            _ => act,
        }
    }
}

/// One question asked in one haystack, and what came of it.
struct Verdict {
    set: Set,
    /// ACT under the shipped assessor.
    shipped: bool,
    /// ACT under the gate at each floor (in `floors` order).
    gate: Vec<bool>,
}

/// The floors swept: the asked ones and the configured one, sorted, each once.
fn floors(args: &AnswerabilityArgs, configured: f64) -> Result<Vec<f64>> {
    let mut v = args.floors.clone();
    v.push(configured);
    if let Some(bad) = v.iter().find(|f| !(0.0..=1.0).contains(*f)) {
        return Err(BenchError::Arg(format!("--floors: {bad} is not within 0..=1")));
    }
    v.sort_by(f64::total_cmp);
    v.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
    Ok(v)
}

fn build_assessor(kind: &str, settings: &toml::Table, origin: &str) -> Result<Arc<dyn Assessor>> {
    let section = Section { settings, origin, data_dir: Path::new("."), config_dir: Path::new(".") };
    Ok(registry::build_assessor(kind, &AssessorContext { section, grounders: vec![] })?)
}

/// Run the benchmark over every dataset given.
pub async fn answerability(
    args: &AnswerabilityArgs,
    mut provenance: RunProvenance,
    embedder: Arc<dyn Embedder>,
    gate: &GateConfig,
) -> Result<BenchReport> {
    let mut datasets = Vec::new();
    if let Some(p) = &args.locomo {
        datasets.push(data::load_locomo(p)?);
    }
    for p in &args.longmemeval {
        let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("longmemeval").to_string();
        datasets.push(data::load_longmemeval(p, &stem)?);
    }
    if datasets.is_empty() {
        return Err(BenchError::Arg("give at least one of --locomo FILE, --longmemeval FILE".into()));
    }
    if args.haystacks == Some(0) {
        return Err(BenchError::Arg("--haystacks must be at least 1".into()));
    }
    let configured = match gate.assessor_settings.get("relevance_floor") {
        None => 0.5,
        Some(v) => v.as_float().ok_or_else(|| BenchError::Arg("[assessor] relevance_floor must be a number".into()))?,
    };
    let floors = floors(args, configured)?;
    let shipped = build_assessor(&gate.assessor_kind, &gate.assessor_settings, "[assessor]")?;
    let mut gates = Vec::new();
    for f in &floors {
        let mut s = gate.assessor_settings.clone();
        s.insert("relevance_floor".into(), (*f).into());
        s.insert("confirm_half_life_days".into(), 1e12.into());
        gates.push((*f, build_assessor(&gate.assessor_kind, &s, "[assessor] (bench gate)")?));
    }
    let cache = match &args.embed_cache {
        Some(p) => Some(Arc::new(CachedEmbedder::open(embedder.clone(), p)?)),
        None => None,
    };
    let embedder: Arc<dyn Embedder> = match &cache {
        Some(c) => c.clone(),
        None => embedder,
    };
    provenance.embedder = embedder.model_id().to_string();
    provenance.token_counter = CharTokenCounter.name().to_string();
    let mut per_q = match &args.per_question {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).map_err(|e| BenchError::Io { path: p.clone(), source: e })?,
        )),
        None => None,
    };
    let mut all: Vec<(String, Vec<Verdict>)> = Vec::new();
    for mut ds in datasets {
        if let Some(n) = args.haystacks {
            ds.haystacks.truncate(n);
            ds.questions.retain(|q| q.haystack < n);
        }
        let verdicts = run_dataset(args, &ds, embedder.clone(), gate, &shipped, &gates, per_q.as_mut()).await?;
        all.push((ds.name.clone(), verdicts));
    }
    if let (Some(w), Some(p)) = (per_q.as_mut(), &args.per_question) {
        use std::io::Write as _;
        w.flush().map_err(|e| BenchError::Io { path: p.clone(), source: e })?;
    }
    Ok(report(provenance, &all, &floors, configured))
}

async fn run_dataset(
    args: &AnswerabilityArgs,
    ds: &Dataset,
    embedder: Arc<dyn Embedder>,
    gate: &GateConfig,
    shipped: &Arc<dyn Assessor>,
    gates: &[(f64, Arc<dyn Assessor>)],
    mut per_q: Option<&mut std::io::BufWriter<std::fs::File>>,
) -> Result<Vec<Verdict>> {
    let clock = Arc::new(SimClock::new(mnemo_contract::Timestamp::from_millis(0)));
    // The configured [index] as the runtime builds it, kept in RAM (the path the other
    // retrieval benches take too).
    let bench_index = BenchIndex::in_ram(&gate.index_kind, gate.index_settings.clone(), "[index] (bench, in RAM)")?;
    let index = bench_index.build(clock.clone(), embedder.clone())?;
    let store_settings: toml::Table = toml::Table::from_iter([("in_memory".to_string(), true.into())]);
    let section = Section {
        settings: &store_settings,
        origin: "bench store",
        data_dir: Path::new("."),
        config_dir: Path::new("."),
    };
    let store: Arc<dyn Store> = registry::build_store("sqlite", &StoreContext { section, clock: clock.clone() })?;
    let mut policy = gate.policy.clone();
    // No turn may fade during the benchmark, whatever the recall time.
    policy.kinds.episodic.decays = false;
    let engine = Engine::new(EngineParts {
        store,
        index,
        embedder,
        reasoner: Arc::new(NoReasoner),
        clock: clock.clone(),
        tokens: Arc::new(CharTokenCounter),
        policy,
    })?;
    // Read as the factory read it (an integer boost counts too).
    let speaker_entities = bench_index.entity_boost()? > 0.0;

    // Ingest: one namespace per haystack.
    let total: usize = ds.haystacks.iter().map(|h| h.turns.len()).sum();
    let pb = bar(total as u64, &format!("{} ingest", ds.name), args.quiet);
    let mut key_of: HashMap<MemoryId, (String, String)> = HashMap::new();
    let mut namespaces = Vec::with_capacity(ds.haystacks.len());
    for h in &ds.haystacks {
        let ns = crate::util::namespace_for(&ds.name, &h.id)?;
        let items: Vec<(NewTurn, NewMemory)> = h
            .turns
            .iter()
            // As `bench locomo` does with an entity boost: the speaker is the entity.
            .map(|t| episodic_turn(&ns, &t.speaker, t.at, t.content.clone(), &t.key, speaker_entities, "bench-import"))
            .collect();
        let ids = engine.ingest(&ns, items).await?;
        for (id, t) in ids.into_iter().zip(&h.turns) {
            key_of.insert(id, (t.key.clone(), t.session.clone()));
        }
        namespaces.push(ns);
        pb.inc(h.turns.len() as u64);
    }
    pb.finish_and_clear();

    // What is asked where.
    let mut asks: Vec<(usize, usize, Set)> = Vec::new();
    let n = ds.haystacks.len();
    for (qi, q) in ds.questions.iter().enumerate() {
        match q.kind {
            QKind::Answerable => {
                asks.push((qi, q.haystack, Set::Answerable));
                // Up to CROSS_ASKS other haystacks spread evenly round the list (every other
                // one with five or fewer), never a variant of the question's own (LongMemEval's
                // `q` and `q_abs` share near-identical haystacks) nor one holding any of its
                // evidence sessions.
                let own = base_id(&ds.haystacks[q.haystack].id);
                let names = mnemo_contract::relevance::query_names(&q.text);
                let mut targets: Vec<usize> = (1..=CROSS_ASKS.min(n.saturating_sub(1)))
                    .map(|j| (q.haystack + (j * n).div_ceil(CROSS_ASKS + 1).max(j)) % n)
                    .collect();
                targets.sort_unstable();
                targets.dedup();
                for h in targets {
                    let hay = &ds.haystacks[h];
                    if h != q.haystack && base_id(&hay.id) != own && hay.sessions.is_disjoint(&q.evidence_sessions) {
                        let same_name = names.iter().any(|n| hay.speakers.contains(n));
                        asks.push((qi, h, if same_name { Set::CrossSameName } else { Set::Cross }));
                    }
                }
            }
            QKind::Abstention => asks.push((qi, q.haystack, Set::Abstention)),
            QKind::FalsePremise => asks.push((qi, q.haystack, Set::FalsePremise)),
        }
    }
    let pb = bar(asks.len() as u64, &format!("{} questions", ds.name), args.quiet);
    let mut out = Vec::with_capacity(asks.len());
    for (qi, h, set) in asks {
        pb.inc(1);
        let q = &ds.questions[qi];
        let hay = &ds.haystacks[h];
        clock.set(hay.now);
        let opts = RecallOptions { no_touch: true, ..RecallOptions::default() };
        let pack = engine.recall(&namespaces[h], &q.text, &opts).await?;
        // An answerable question is scored only with its evidence (a labelled turn, else a
        // turn of an answer session) in the pack.
        let evidence_packed = || {
            pack.items.iter().any(|i| {
                key_of.get(&i.memory.id).is_some_and(|(key, session)| {
                    if q.evidence_turns.is_empty() {
                        q.evidence_sessions.contains(session)
                    } else {
                        q.evidence_turns.contains(key)
                    }
                })
            })
        };
        let set = match set {
            Set::Answerable if !evidence_packed() => Set::Unpacked,
            s => s,
        };
        let task = Task { query: q.text.clone(), about: None };
        let now = clock.now();
        let act = |a: mnemo_contract::Assessment| matches!(a.decision, mnemo_contract::Decision::Act);
        let shipped_assessment = shipped.assess(&task, pack.clone(), now).await?;
        let names_missing = match &shipped_assessment.decision {
            mnemo_contract::Decision::Escalate { reasons } => {
                reasons.iter().any(|r| r.contains("no recalled memory mentions"))
            }
            mnemo_contract::Decision::Act => false,
        };
        let inferred = shipped_assessment.inferred_about.is_some();
        let shipped_act = act(shipped_assessment);
        let mut gate_acts = Vec::with_capacity(gates.len());
        // Why each gate escalated (empty where it acted), for the per-question file.
        let mut gate_reasons: Vec<Vec<String>> = Vec::with_capacity(gates.len());
        for (_, g) in gates {
            let a = g.assess(&task, pack.clone(), now).await?;
            gate_reasons.push(match &a.decision {
                mnemo_contract::Decision::Escalate { reasons } => reasons.clone(),
                mnemo_contract::Decision::Act => vec![],
            });
            gate_acts.push(act(a));
        }
        if let Some(w) = per_q.as_deref_mut() {
            use std::io::Write as _;
            // Each packed memory's evidence, with the memory (looked up once).
            let packed: Vec<(mnemo_contract::RelevanceEvidence, Option<&mnemo_contract::PackItem>)> = pack
                .trace
                .iter()
                .filter(|t| t.included)
                .filter_map(|t| t.evidence.map(|e| (e, pack.items.iter().find(|i| i.memory.id == t.id))))
                .collect();
            let best = |f: &dyn Fn(&mnemo_contract::RelevanceEvidence) -> Option<f64>| {
                packed.iter().filter_map(|(e, _)| f(e)).reduce(f64::max)
            };
            let line = json!({
                "dataset": ds.name, "set": set.key(), "group": q.group, "question": q.text,
                "asked_in": hay.id, "packed": pack.items.len(),
                "best_absolute": best(&|e| Some(e.absolute)), "best_lexical": best(&|e| Some(e.lexical)),
                "best_dense_z": best(&|e| e.dense_z),
                "shipped_act": shipped_act, "gate_act": gate_acts, "gate_reasons": gate_reasons,
                "floors": gates.iter().map(|(f, _)| *f).collect::<Vec<_>>(),
                "names_missing": names_missing, "inferred_about": inferred,
                // The packed memory with the highest absolute relevance: its sources and opening.
                "best_memory": packed.iter()
                    .max_by(|a, b| a.0.absolute.total_cmp(&b.0.absolute))
                    .and_then(|(_, item)| *item)
                    .map(|i| json!({"sources": i.memory.sources, "text": i.memory.content.chars().take(200).collect::<String>()})),
                // Each packed memory's evidence, sources and text:
                // [lexical, dense_z, entity, sources, text] (the text for replaying a reader).
                "packed_evidence": packed.iter().map(|(e, item)| {
                    let sources = item.map(|i| i.memory.sources.clone()).unwrap_or_default();
                    let text = item.map(|i| i.memory.content.as_str()).unwrap_or_default();
                    json!([e.lexical, e.dense_z, e.entity, sources, text])
                }).collect::<Vec<_>>(),
            });
            writeln!(w, "{line}").map_err(|e| BenchError::Io { path: PathBuf::from("--per-question"), source: e })?;
        }
        out.push(Verdict { set, shipped: shipped_act, gate: gate_acts });
    }
    pb.finish_and_clear();
    Ok(out)
}

/// How many other haystacks each answerable question is asked in.
const CROSS_ASKS: usize = 4;

/// A LongMemEval question id without its `_abs` mark (its variants share it).
fn base_id(id: &str) -> &str {
    id.strip_suffix("_abs").unwrap_or(id)
}

/// k failures of n, as a rate with its interval.
fn rate(k: usize, n: usize) -> (f64, f64, f64) {
    let (lo, hi) = wilson95(k, n);
    (if n == 0 { 0.0 } else { k as f64 / n as f64 }, lo, hi)
}

fn cell(k: usize, n: usize) -> String {
    let (r, lo, hi) = rate(k, n);
    if n == 0 {
        "n = 0".into()
    } else {
        format!("{r:.3} ({k}/{n}, {lo:.3}–{hi:.3})")
    }
}

const SETS: [Set; 6] =
    [Set::Answerable, Set::Cross, Set::Abstention, Set::FalsePremise, Set::CrossSameName, Set::Unpacked];

fn report(provenance: RunProvenance, all: &[(String, Vec<Verdict>)], floors: &[f64], configured: f64) -> BenchReport {
    let fi = floors.iter().position(|f| (*f - configured).abs() < 1e-9).unwrap_or(0);
    let mut rows = Vec::new();
    let mut md = String::from("# Answerability: does the gate know what memory does not know?\n\n");
    md.push_str(&provenance_md(&provenance));
    md.push_str(&format!(
        "\nFailure rate per set (rate (k/n, Wilson 95%)): over-abstention = ESCALATE on an answerable \
         question whose evidence is packed; unsafe acceptance = ACT on an unanswerable one. \
         gate = configured assessor at relevance_floor {configured}, provenance age not counted; \
         shipped = the configured assessor as is.\n\n"
    ));
    let mut lines = Vec::new();
    for (name, vs) in all {
        for set in SETS {
            let of: Vec<&Verdict> = vs.iter().filter(|v| v.set == set).collect();
            if of.is_empty() {
                continue;
            }
            let n = of.len();
            let kg = of.iter().filter(|v| set.failed(v.gate[fi])).count();
            let ks = of.iter().filter(|v| set.failed(v.shipped)).count();
            for (decision, k) in [("gate", kg), ("shipped", ks)] {
                let (r, lo, hi) = rate(k, n);
                rows.push(json!({
                    "dataset": name, "set": set.key(), "metric": set.metric(), "decision": decision,
                    "relevance_floor": configured, "n": n, "k": k, "rate": r, "lo": lo, "hi": hi,
                }));
            }
            lines.push(vec![name.clone(), set.name().into(), set.metric().into(), cell(kg, n), cell(ks, n)]);
        }
    }
    md.push_str(&table(&["dataset", "set", "failure", "gate", "shipped"], &lines));
    md.push_str("\n## The gate swept over relevance_floor\n\n");
    let mut sweep = Vec::new();
    let mut band = Vec::new();
    for (i, f) in floors.iter().enumerate() {
        let mut ok = true;
        for (name, vs) in all {
            let count = |set: Set| {
                let of: Vec<&Verdict> = vs.iter().filter(|v| v.set == set).collect();
                (of.iter().filter(|v| set.failed(v.gate[i])).count(), of.len())
            };
            let (ka, na) = count(Set::Answerable);
            let (kc, nc) = count(Set::Cross);
            let (kb, nb) = count(Set::Abstention);
            let (kf, nf) = count(Set::FalsePremise);
            let (kn, nn) = count(Set::CrossSameName);
            let r = |k: usize, n: usize| rate(k, n).0;
            ok &= r(ka, na) <= 0.15 && r(kc, nc) <= 0.05 && r(kb, nb) <= 0.05;
            rows.push(json!({
                "dataset": name, "sweep": true, "relevance_floor": f,
                "over_abstention": r(ka, na), "n_answerable": na,
                "unsafe_cross": r(kc, nc), "n_cross": nc,
                "unsafe_abstention": r(kb, nb), "n_abstention": nb,
                "false_premise_act": r(kf, nf), "n_false_premise": nf,
                "same_name_act": r(kn, nn), "n_same_name": nn,
            }));
            sweep.push(vec![
                format!("{f:.2}"),
                name.clone(),
                cell(ka, na),
                cell(kc, nc),
                if nb == 0 { "–".into() } else { cell(kb, nb) },
                if nf == 0 { "–".into() } else { cell(kf, nf) },
                if nn == 0 { "–".into() } else { cell(kn, nn) },
            ]);
        }
        if ok {
            band.push(*f);
        }
    }
    md.push_str(&table(
        &[
            "floor",
            "dataset",
            "over-abstention",
            "unsafe: other haystack",
            "unsafe: _abs",
            "ACT: category 5",
            "ACT: other haystack, same name",
        ],
        &sweep,
    ));
    let band_text = if band.is_empty() {
        "no floor meets over-abstention ≤ 0.15 and unsafe acceptance ≤ 0.05 on every dataset".to_string()
    } else {
        format!(
            "floors meeting over-abstention ≤ 0.15 and unsafe acceptance ≤ 0.05 (other haystack, _abs) on every dataset: {}",
            band.iter().map(|f| format!("{f:.2}")).collect::<Vec<_>>().join(", ")
        )
    };
    md.push_str(&format!("\nBand: {band_text}.\n"));
    rows.push(json!({ "band": band, "configured_floor": configured }));
    BenchReport::new(provenance, rows, md)
}
