//! `bench locomo`: retrieval under a token budget on LoCoMo-format data.
//!
//! Each conversation is ingested into its own namespace, one EPISODIC memory per turn
//! ("Speaker: text [image: caption]", dated by its session, the turn's external id = dia_id),
//! through `Engine::ingest`. Episodic decay is switched off for the run (`kinds.episodic.decays
//! = false`), so no turn fades, whatever the recall time. Then every question is recalled under
//! each budget with the engine's `recall` (no_touch) for BM25 (lexical), dense and hybrid, and
//! packed by RecentOnly (the newest turns that fit), all in one run.
pub mod data;
pub mod metrics;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mnemo_core::engine::{EngineParts, RecallOptions};
use mnemo_core::registry::{self, IndexContext, Section, StoreContext};
use mnemo_core::report::RunProvenance;
use mnemo_core::{
    CharTokenCounter, ClientKind, Embedder, Engine, EnginePolicy, Index, MemoryId, MemoryKind, Namespace, NewMemory,
    NewTurn, Provenance, SearchMode, SearchQuery, SimClock, Store, TokenCounter,
};
use mnemo_store::fusion::FusionSettings;
use mnemo_store::tantivy_index::TantivySettings;
use serde_json::json;

use crate::error::{BenchError, Result};
use crate::report::{provenance_md, table, BenchReport};
use crate::util::{bar, NoReasoner};
use data::Conversation;
use metrics::{question_figures, Metric, Table};

/// Arguments of `bench locomo`.
#[derive(Clone, Debug, clap::Args)]
pub struct LocomoArgs {
    /// A LoCoMo-format JSON file (e.g. the LoCoMo dev split, locomo-dev.json).
    #[arg(long = "data", alias = "file", value_name = "FILE")]
    pub file: PathBuf,
    /// Token budgets (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "256,512,1024,2048")]
    pub budgets: Vec<usize>,
    /// Ranks k for R@k (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,5,10,20")]
    pub ks: Vec<usize>,
    /// Candidates taken from the index per recall (and depth of the ranking for R@k / MRR).
    #[arg(long, default_value_t = 200)]
    pub candidates: usize,
    /// Which index: tantivy (in RAM) or brute.
    #[arg(long, default_value = "tantivy")]
    pub index: String,
    /// Override the fusion's lexical weight.
    #[arg(long)]
    pub lexical_weight: Option<f32>,
    /// Override the fusion's dense weight.
    #[arg(long)]
    pub dense_weight: Option<f32>,
    /// Override the RRF constant k.
    #[arg(long)]
    pub rrf_k: Option<f32>,
    /// Tantivy: stem words (default: the index's default).
    #[arg(long)]
    pub stemming: Option<bool>,
    /// Only the first N conversations.
    #[arg(long)]
    pub conversations: Option<usize>,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
}

impl LocomoArgs {
    /// Defaults for `file`.
    pub fn new(file: PathBuf) -> Self {
        LocomoArgs {
            file,
            budgets: vec![256, 512, 1024, 2048],
            ks: vec![1, 5, 10, 20],
            candidates: 200,
            index: "tantivy".into(),
            lexical_weight: None,
            dense_weight: None,
            rrf_k: None,
            stemming: None,
            conversations: None,
            quiet: false,
        }
    }

    fn fusion(&self) -> FusionSettings {
        let d = FusionSettings::default();
        FusionSettings {
            lexical_weight: self.lexical_weight.unwrap_or(d.lexical_weight),
            dense_weight: self.dense_weight.unwrap_or(d.dense_weight),
            rrf_k: self.rrf_k.unwrap_or(d.rrf_k),
        }
    }

    /// The index, built through the registry's typed factory like any configured one.
    fn index(&self, clock: Arc<SimClock>, embedder: Arc<dyn Embedder>) -> Result<(Arc<dyn Index>, String)> {
        let f = self.fusion();
        let mut t = toml::Table::new();
        t.insert("lexical_weight".into(), f64::from(f.lexical_weight).into());
        t.insert("dense_weight".into(), f64::from(f.dense_weight).into());
        t.insert("rrf_k".into(), f64::from(f.rrf_k).into());
        let desc = match self.index.as_str() {
            "brute" => format!("brute (lexical {} dense {} k {})", f.lexical_weight, f.dense_weight, f.rrf_k),
            "tantivy" => {
                t.insert("in_memory".into(), true.into());
                let stemming = self.stemming.unwrap_or(TantivySettings::default().stemming);
                t.insert("stemming".into(), stemming.into());
                format!(
                    "tantivy in RAM (lexical {} dense {} k {} stemming {stemming})",
                    f.lexical_weight, f.dense_weight, f.rrf_k
                )
            }
            other => return Err(BenchError::Arg(format!("--index {other:?}: expected tantivy or brute"))),
        };
        let section =
            Section { settings: &t, origin: "bench --index", data_dir: Path::new("."), config_dir: Path::new(".") };
        let index = registry::build_index(&self.index, &IndexContext { section, clock, embedder })?;
        Ok((index, desc))
    }
}

/// A throw-away SQLite store, built through the registry's typed factory.
fn in_memory_store(clock: Arc<SimClock>) -> Result<Arc<dyn Store>> {
    let t: toml::Table = toml::Table::from_iter([("in_memory".to_string(), true.into())]);
    let section = Section { settings: &t, origin: "bench store", data_dir: Path::new("."), config_dir: Path::new(".") };
    Ok(registry::build_store("sqlite", &StoreContext { section, clock })?)
}

/// The methods compared, with the engine's search mode (None: RecentOnly).
const METHODS: [(&str, Option<SearchMode>); 4] = [
    ("bm25", Some(SearchMode::Lexical)),
    ("dense", Some(SearchMode::Dense)),
    ("hybrid", Some(SearchMode::Hybrid)),
    ("recent_only", None),
];

/// Run the LoCoMo retrieval benchmark with `embedder` (the provenance's `embedder` and
/// `token_counter` are set from what was used).
pub async fn locomo(
    args: &LocomoArgs,
    mut provenance: RunProvenance,
    embedder: Arc<dyn Embedder>,
) -> Result<BenchReport> {
    if args.budgets.is_empty() || args.ks.is_empty() || args.candidates == 0 {
        return Err(BenchError::Arg("--budgets, --ks and --candidates must be non-empty / positive".into()));
    }
    let mut convs = data::load(&args.file)?;
    if let Some(n) = args.conversations {
        convs.truncate(n);
    }
    let clock = Arc::new(SimClock::new(mnemo_core::Timestamp::from_millis(0)));
    let (index, index_desc) = args.index(clock.clone(), embedder.clone())?;
    let mut policy = EnginePolicy::default();
    // No LoCoMo turn may fade during the benchmark, whatever the recall time.
    policy.kinds.episodic.decays = false;
    let tokens = Arc::new(CharTokenCounter);
    let engine = Engine::new(EngineParts {
        store: in_memory_store(clock.clone())?,
        index,
        embedder: embedder.clone(),
        reasoner: Arc::new(NoReasoner),
        clock: clock.clone(),
        tokens: tokens.clone(),
        policy,
    })?;
    provenance.embedder = embedder.model_id().to_string();
    provenance.token_counter = tokens.name().to_string();

    // Ingest.
    let total_turns: usize = convs.iter().map(|c| c.turns.len()).sum();
    let pb = bar(total_turns as u64, "ingest turns", args.quiet);
    let mut ids_of: Vec<HashMap<MemoryId, usize>> = Vec::with_capacity(convs.len());
    for c in &convs {
        let ns = namespace_of(c)?;
        let items = c
            .turns
            .iter()
            .map(|t| {
                let turn = NewTurn {
                    namespace: ns.clone(),
                    source: t.speaker.clone(),
                    at: t.at,
                    text: t.content.clone(),
                    external_id: Some(t.dia_id.clone()),
                };
                let mem = NewMemory {
                    namespace: ns.clone(),
                    kind: MemoryKind::Episodic,
                    content: t.content.clone(),
                    claim: None,
                    entities: vec![],
                    importance: 0.5,
                    sources: vec![t.speaker.clone()],
                    provenance: Provenance { turns: vec![], client: ClientKind::Rules, model: "locomo-import".into() },
                    created_at: t.at,
                    pinned: false,
                    embedding: None,
                };
                (turn, mem)
            })
            .collect();
        let ids = engine.ingest(&ns, items).await?;
        ids_of.push(ids.into_iter().enumerate().map(|(i, id)| (id, i)).collect());
        pb.inc(c.turns.len() as u64);
    }
    pb.finish();

    // Query.
    let total_q: usize = convs.iter().map(|c| c.questions.len()).sum();
    let pb = bar(total_q as u64, "questions", args.quiet);
    let mut tab = Table::default();
    let mut unreachable: HashMap<String, (usize, usize, usize)> = HashMap::new(); // cat → (ids, evidence ids, questions hit)
    let mut no_evidence: HashMap<String, usize> = HashMap::new();
    for (c, ids) in convs.iter().zip(&ids_of) {
        let ns = namespace_of(c)?;
        let index_of = c.turn_index();
        let last = c.turns.iter().map(|t| t.at).max().unwrap_or_default();
        clock.set(last);
        let recent = RecentOnly::new(c, tokens.as_ref());
        for q in &c.questions {
            pb.inc(1);
            let cat = q.category.to_string();
            if q.evidence.is_empty() {
                *no_evidence.entry(cat).or_default() += 1;
                continue;
            }
            let evidence: Vec<Option<usize>> = q.evidence.iter().map(|k| index_of.get(k).copied()).collect();
            let missing = evidence.iter().filter(|e| e.is_none()).count();
            for c in [cat.clone(), if q.category <= 4 { "1-4".into() } else { String::new() }] {
                if c.is_empty() {
                    continue;
                }
                let u = unreachable.entry(c).or_default();
                u.0 += missing;
                u.1 += evidence.len();
                u.2 += usize::from(missing > 0);
            }
            let qvec = embedder.embed(std::slice::from_ref(&q.question)).await?.into_iter().next();
            for (method, mode) in METHODS {
                let (packed, ranking) = match mode {
                    None => {
                        (args.budgets.iter().map(|b| (*b, recent.pack(*b))).collect(), recent.ranking(args.candidates))
                    }
                    Some(mode) => {
                        let hits = engine
                            .index()
                            .search(&SearchQuery {
                                namespace: ns.clone(),
                                text: q.question.clone(),
                                embedding: if mode == SearchMode::Lexical { None } else { qvec.clone() },
                                limit: args.candidates,
                                mode,
                            })
                            .await?;
                        let ranking: Vec<usize> = hits.iter().filter_map(|h| ids.get(&h.id).copied()).collect();
                        let mut packed = Vec::with_capacity(args.budgets.len());
                        for b in &args.budgets {
                            let opts = RecallOptions {
                                budget: Some(*b),
                                mode: Some(mode),
                                candidates: Some(args.candidates),
                                no_touch: true,
                            };
                            let pack = engine.recall(&ns, &q.question, &opts).await?;
                            packed.push((
                                *b,
                                pack.memories().filter_map(|m| ids.get(&m.id).copied()).collect::<HashSet<usize>>(),
                            ));
                        }
                        (packed, ranking)
                    }
                };
                tab.add(method, q.category, &question_figures(&evidence, &packed, &ranking, &args.ks));
            }
        }
    }
    pb.finish();

    let rows = rows(&tab, args, &unreachable, &no_evidence);
    let md =
        markdown(&tab, args, &provenance, &index_desc, &unreachable, &no_evidence, convs.len(), total_turns, total_q);
    Ok(BenchReport::new(provenance, rows, md))
}

/// The namespace of a conversation: `locomo-<sample_id>` (sanitised).
fn namespace_of(c: &Conversation) -> Result<Namespace> {
    let id: String =
        c.id.chars()
            .map(|ch| if ch.is_ascii_alphanumeric() || "_.:-".contains(ch) { ch } else { '_' })
            .take(100)
            .collect();
    Ok(Namespace::new(&format!("locomo-{id}"))?)
}

/// The RecentOnly baseline over one conversation: turns newest first.
struct RecentOnly {
    /// (turn index, tokens), newest first.
    order: Vec<(usize, usize)>,
}

impl RecentOnly {
    fn new(c: &Conversation, tokens: &dyn TokenCounter) -> Self {
        // Turns are in session then turn order; the newest is the last.
        RecentOnly { order: (0..c.turns.len()).rev().map(|i| (i, tokens.count(&c.turns[i].content))).collect() }
    }
    /// The newest turns that fit `budget`, stopping at the first that does not.
    fn pack(&self, budget: usize) -> HashSet<usize> {
        let mut used = 0;
        let mut out = HashSet::new();
        for (i, t) in &self.order {
            if used + t > budget {
                break;
            }
            used += t;
            out.insert(*i);
        }
        out
    }
    fn ranking(&self, depth: usize) -> Vec<usize> {
        self.order.iter().take(depth).map(|(i, _)| *i).collect()
    }
}

fn metric_list(args: &LocomoArgs) -> Vec<Metric> {
    let mut v: Vec<Metric> = args.budgets.iter().map(|b| Metric::EvidenceRecall(*b)).collect();
    v.extend(args.ks.iter().map(|k| Metric::RecallAt(*k)));
    v.push(Metric::Mrr);
    v
}

const CATEGORIES: [&str; 6] = ["1-4", "1", "2", "3", "4", "5"];

fn rows(
    tab: &Table,
    args: &LocomoArgs,
    unreachable: &HashMap<String, (usize, usize, usize)>,
    no_evidence: &HashMap<String, usize>,
) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for (method, _) in METHODS {
        for cat in CATEGORIES {
            for m in metric_list(args) {
                let Some(mean) = tab.get(method, cat, m) else { continue };
                let (lo, hi) = mean.ci95();
                let mut row = json!({"method": method, "category": cat, "value": mean.value(), "n": mean.n, "ci95_mean": [lo, hi]});
                match m {
                    Metric::EvidenceRecall(b) => {
                        row["metric"] = json!("evidence_recall");
                        row["budget"] = json!(b);
                    }
                    Metric::RecallAt(k) => {
                        row["metric"] = json!("recall_at_k");
                        row["k"] = json!(k);
                    }
                    Metric::Mrr => row["metric"] = json!("mrr"),
                }
                out.push(row);
            }
        }
    }
    for cat in CATEGORIES {
        if let Some((ids, total, qs)) = unreachable.get(cat) {
            out.push(json!({"method": "all", "category": cat, "metric": "unreachable_evidence", "value": ids, "n": total, "questions_affected": qs}));
        }
        if let Some(n) = no_evidence.get(cat) {
            out.push(
                json!({"method": "all", "category": cat, "metric": "questions_without_evidence", "value": n, "n": n}),
            );
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn markdown(
    tab: &Table,
    args: &LocomoArgs,
    p: &RunProvenance,
    index_desc: &str,
    unreachable: &HashMap<String, (usize, usize, usize)>,
    no_evidence: &HashMap<String, usize>,
    convs: usize,
    turns: usize,
    questions: usize,
) -> String {
    let mut s = format!("# LoCoMo retrieval under a budget\n\n{}\n", provenance_md(p));
    s.push_str(&format!(
        "{convs} conversations, {turns} turns, {questions} questions; index: {index_desc}; candidates {}; episodic decay off.\n\
         ER@B = evidence recall within B tokens ({}); R@k = share of evidence turns in the top k of the ranking; MRR over the top {}.\n\n",
        args.candidates, p.token_counter, args.candidates
    ));
    let metrics = metric_list(args);
    let mut header: Vec<String> = vec!["method".into(), "n".into()];
    header.extend(metrics.iter().map(|m| match m {
        Metric::EvidenceRecall(b) => format!("ER@{b}"),
        Metric::RecallAt(k) => format!("R@{k}"),
        Metric::Mrr => "MRR".into(),
    }));
    let hdr: Vec<&str> = header.iter().map(String::as_str).collect();
    for cat in CATEGORIES {
        let mut body = Vec::new();
        for (method, _) in METHODS {
            let n = tab.get(method, cat, Metric::Mrr).map_or(0, |m| m.n);
            if n == 0 {
                continue;
            }
            let mut r = vec![method.to_string(), n.to_string()];
            r.extend(
                metrics.iter().map(|m| tab.get(method, cat, *m).map_or("-".into(), |x| format!("{:.3}", x.value()))),
            );
            body.push(r);
        }
        if body.is_empty() {
            continue;
        }
        let title = if cat == "1-4" { "categories 1-4 (headline)".to_string() } else { format!("category {cat}") };
        s.push_str(&format!("## {title}\n\n{}\n", table(&hdr, &body)));
    }
    let mut notes = Vec::new();
    for cat in CATEGORIES {
        if let Some((ids, total, qs)) = unreachable.get(cat) {
            if *ids > 0 {
                notes.push(format!("category {cat}: {ids} of {total} evidence ids name no turn (unreachable; counted as misses) in {qs} questions"));
            }
        }
        if let Some(n) = no_evidence.get(cat) {
            notes.push(format!("category {cat}: {n} questions have no evidence id and are left out"));
        }
    }
    if !notes.is_empty() {
        s.push_str(&format!("Notes:\n\n- {}\n", notes.join("\n- ")));
    }
    s
}
