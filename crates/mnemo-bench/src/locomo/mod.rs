//! `bench locomo`: retrieval under a token budget on LoCoMo-format data.
//!
//! Each conversation is ingested into its own namespace, one EPISODIC memory per turn
//! ("Speaker: text [image: caption]", dated by its session, the turn's external id = dia_id),
//! through `Engine::ingest`. Episodic decay is switched off for the run (`kinds.episodic.decays
//! = false`), so no turn fades, whatever the recall time. Then every question is recalled under
//! each budget with the engine's `recall` (no_touch) for BM25 (lexical), dense and hybrid, and
//! packed by RecentOnly (the newest turns that fit), all in one run.
pub mod data;
pub mod dump;
pub mod engine;
mod index_settings;
pub mod metrics;
pub mod neighbours;
pub mod per_question;
pub mod readme;
pub mod timing;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemo_contract::fusion::FusionMethod;
use mnemo_contract::{Embedder, Index, MemoryId, Namespace, SearchMode, SearchQuery, SimClock, TokenCounter};
use mnemo_core::engine::RecallOptions;
use mnemo_report::RunProvenance;
use serde_json::json;

use crate::bench_index::{BenchIndex, ConfiguredIndex};
use crate::error::{BenchError, Result};
use crate::report::{provenance_md, table, BenchReport};
use crate::util::{bar, episodic_turn, percentile};
use data::Conversation;
use engine::BenchEngine;
use metrics::{question_figures, Metric, Table};

/// The index a retrieval bench builds and its fusion (`bench locomo`, `bench longmemeval`):
/// each flag given is laid as its key over the configured `[index]` section
/// (`with_index_config`); what no flag sets is the section's, else the factory's default.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct RetrievalFlags {
    /// Which index, kept in RAM: tantivy or brute. Default: the configured `[index] kind`
    /// with all its keys; another kind starts from its own defaults.
    #[arg(long)]
    pub index: Option<String>,
    /// Override the fusion's lexical weight.
    #[arg(long)]
    pub lexical_weight: Option<f32>,
    /// Override the fusion's dense weight.
    #[arg(long)]
    pub dense_weight: Option<f32>,
    /// Override the RRF constant k.
    #[arg(long)]
    pub rrf_k: Option<f32>,
    /// Override the fusion method: rrf (weighted reciprocal rank) or convex (min-max scores).
    #[arg(long, value_parser = parse_fusion)]
    pub fusion: Option<FusionMethod>,
    /// Tantivy: stem words (default: the index's default).
    #[arg(long)]
    pub stemming: Option<bool>,
}

/// Arguments of `bench locomo`.
#[derive(Clone, Debug, clap::Args)]
pub struct LocomoArgs {
    /// A LoCoMo-format JSON file (e.g. the dev split: conversations 0–4 of locomo10.json).
    #[arg(long = "data", alias = "file", value_name = "FILE")]
    pub file: PathBuf,
    /// Token budgets (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "256,512,1024,2048")]
    pub budgets: Vec<usize>,
    /// Ranks k for R@k (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,5,10,20")]
    pub ks: Vec<usize>,
    /// Candidates taken from the index per recall (and depth of the ranking for R@k / MRR).
    /// Default: the config's `[recall] candidates` when it sets one, else 200.
    #[arg(long)]
    pub candidates: Option<usize>,
    /// The index and its fusion.
    #[command(flatten)]
    pub retrieval: RetrievalFlags,
    /// Cache embeddings in FILE by (model, text) across runs (for tuning; the speed figures of
    /// a run with cache hits measure the cache and are marked so).
    #[arg(long, value_name = "FILE")]
    pub embed_cache: Option<PathBuf>,
    /// Variant: prefix each turn's text with its session date ("[2023-05-08] Caroline: …").
    #[arg(long)]
    pub session_dates: bool,
    /// Variant: normalise each question before search (drop the question word and auxiliary
    /// at its start and the trailing "?": "When did Caroline go…?" → "Caroline go…").
    #[arg(long)]
    pub query_norm: bool,
    /// Variant (entity matches): the index's `entity_boost` (tantivy only; 0 = off). Above 0,
    /// each turn's speaker is recorded as its memory's entity, so a question naming a speaker
    /// ranks that speaker's turns higher.
    #[arg(long)]
    pub entity_boost: Option<f32>,
    /// Variant: the index's `query_stop_words` (tantivy only): English function words left out
    /// of each question's BM25 terms. Default: the config's `[index]`, else off.
    #[arg(long, value_name = "BOOL")]
    pub query_stop_words: Option<bool>,
    /// Record each turn's speaker as its memory's entity even with no entity boost (the
    /// control for `--entity-boost`: entities are also indexed with the text).
    #[arg(long)]
    pub speaker_entities: bool,
    /// Variant (neighbouring turns): also report the hybrid ranking packed with each hit
    /// followed by its same-session neighbours within N turns (`hybrid_pack_nbN`), beside the
    /// same packing without them (`hybrid_pack`): see `locomo::neighbours`.
    #[arg(long, value_name = "N")]
    pub neighbours: Option<u32>,
    /// Variant (neighbouring turns, score sharing; needs `--neighbours N`): also report the
    /// hybrid hits re-ranked with each turn gaining A × the fused score of a hit within N turns
    /// of it in the same session (`hybrid_share<A>_nb<N>`): see `locomo::neighbours`.
    #[arg(long, value_name = "A")]
    pub neighbour_share: Option<f32>,
    /// Variant (neighbouring turns in the engine): the engine's `[recall] neighbour_share`
    /// for this run (window: `--neighbours`, else 2), so every method's ER@B comes from
    /// `recall` with it; R@k (the index's ranking) is unchanged by it.
    #[arg(long, value_name = "A")]
    pub recall_neighbour_share: Option<f64>,
    /// The window of the configured `[recall] neighbour_share` (taken with it from the
    /// config by `with_recall_policy`; not a flag).
    #[arg(skip)]
    pub recall_neighbour_turns: Option<u32>,
    /// The engine's `[recall] dense_max_tokens` for this run: a turn longer than this many
    /// tokens is filed in the index without its vector (the config's, unless set here).
    #[arg(long, value_name = "TOKENS")]
    pub recall_dense_max_tokens: Option<usize>,
    /// Write every question's figures per method to FILE as JSON lines, for paired
    /// comparisons of two runs (`bench/paired.py`).
    #[arg(long, value_name = "FILE")]
    pub per_question: Option<PathBuf>,
    /// Write each question's lexical and dense candidates with scores (at the depth hybrid
    /// fusion takes) to FILE as JSON lines, for offline fusion sweeps.
    #[arg(long, value_name = "FILE")]
    pub dump_candidates: Option<PathBuf>,
    /// Only the first N conversations.
    #[arg(long)]
    pub conversations: Option<usize>,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
    /// The configured `[index]` section the flags are laid over (`with_index_config`; not a
    /// flag); none: the default kind with its factory's defaults.
    #[arg(skip)]
    pub index_config: Option<ConfiguredIndex>,
}

impl LocomoArgs {
    /// Defaults for `file`.
    pub fn new(file: PathBuf) -> Self {
        LocomoArgs {
            file,
            budgets: vec![256, 512, 1024, 2048],
            ks: vec![1, 5, 10, 20],
            candidates: None,
            retrieval: RetrievalFlags::default(),
            embed_cache: None,
            session_dates: false,
            query_norm: false,
            entity_boost: None,
            query_stop_words: None,
            speaker_entities: false,
            neighbours: None,
            neighbour_share: None,
            recall_neighbour_share: None,
            recall_dense_max_tokens: None,
            recall_neighbour_turns: None,
            per_question: None,
            dump_candidates: None,
            conversations: None,
            quiet: false,
            index_config: None,
        }
    }

    /// Whether each turn's speaker is recorded as its memory's entity, given the entity boost
    /// the index ranks with.
    fn speakers_as_entities(&self, entity_boost: f32) -> bool {
        self.speaker_entities || entity_boost > 0.0
    }

    /// What a turn's memory holds: its content, dated with `--session-dates`.
    fn turn_content(&self, t: &data::LTurn) -> String {
        if self.session_dates {
            let date: String = t.at.to_rfc3339().chars().take(10).collect();
            format!("[{date}] {}", t.content)
        } else {
            t.content.clone()
        }
    }

    /// Candidates taken per recall: `--candidates`, else the config's, else 200.
    pub fn candidates(&self) -> usize {
        self.candidates.unwrap_or(DEFAULT_CANDIDATES)
    }

    /// The window of the engine's neighbour sharing: the config's, else `--neighbours`, else 2.
    pub(crate) fn neighbour_window(&self) -> usize {
        self.recall_neighbour_turns.or(self.neighbours).map_or(2, |n| n as usize)
    }

    /// The rows of the report: the methods, the hybrid recall's own order, then the
    /// neighbour rows when asked for.
    fn method_names(&self) -> Vec<String> {
        let mut v: Vec<String> = METHODS.iter().map(|(m, _)| m.to_string()).collect();
        v.push(RECALL_ORDER.into());
        if let Some(n) = self.neighbours {
            v.push(PACK_CONTROL.into());
            v.push(format!("{PACK_CONTROL}_nb{n}"));
            if let Some(a) = self.neighbour_share {
                v.push(share_row(a, n));
            }
        }
        v
    }

    /// The index, built through the registry's typed factory from the configured section with
    /// the flags over it (`bench_index`), and its description for the report.
    pub(crate) fn index(
        &self,
        clock: Arc<SimClock>,
        embedder: Arc<dyn Embedder>,
    ) -> Result<(Arc<dyn Index>, BenchIndex)> {
        let b = self.bench_index()?;
        Ok((b.build(clock, embedder)?, b))
    }
}

pub(crate) fn parse_fusion(s: &str) -> std::result::Result<FusionMethod, String> {
    match s {
        "rrf" => Ok(FusionMethod::Rrf),
        "convex" => Ok(FusionMethod::Convex),
        other => Err(format!("{other:?}: expected rrf or convex")),
    }
}

/// The methods compared, with the engine's search mode (None: RecentOnly).
const METHODS: [(&str, Option<SearchMode>); 4] = [
    ("bm25", Some(SearchMode::Lexical)),
    ("dense", Some(SearchMode::Dense)),
    ("hybrid", Some(SearchMode::Hybrid)),
    ("recent_only", None),
];

/// The row of `--neighbour-share A --neighbours N`.
fn share_row(alpha: f32, n: u32) -> String {
    format!("hybrid_share{alpha}_nb{n}")
}

/// The row of the hybrid recall's own order: R@k and MRR over the order `recall` ranks its
/// candidates in (its trace: relevance after neighbour sharing, times salience), not the
/// index's; ER@B as the `hybrid` row (the same packs). What an agent reading the pack sees.
/// (`bench longmemeval` reports the same row.)
pub(crate) const RECALL_ORDER: &str = "hybrid_recall";

/// Candidates per recall when neither the command line nor the config says.
pub const DEFAULT_CANDIDATES: usize = 200;

/// The control row of `--neighbours`: the hybrid ranking packed greedily by the bench.
const PACK_CONTROL: &str = "hybrid_pack";

/// Run the LoCoMo retrieval benchmark with `embedder` (the provenance's `embedder` and
/// `token_counter` are set from what was used).
pub async fn locomo(
    args: &LocomoArgs,
    mut provenance: RunProvenance,
    embedder: Arc<dyn Embedder>,
) -> Result<BenchReport> {
    if args.budgets.is_empty() || args.ks.is_empty() || args.candidates() == 0 {
        return Err(BenchError::Arg("--budgets, --ks and --candidates must be non-empty / positive".into()));
    }
    if let Some(a) = args.neighbour_share {
        if args.neighbours.is_none() {
            return Err(BenchError::Arg("--neighbour-share needs --neighbours N (the window)".into()));
        }
        if !(a.is_finite() && a >= 0.0) {
            return Err(BenchError::Arg(format!("--neighbour-share {a}: expected a finite number >= 0")));
        }
    }
    let mut convs = data::load(&args.file)?;
    if let Some(n) = args.conversations {
        convs.truncate(n);
    }
    let BenchEngine { engine, clock, embedder, timed, cache, tokens, index_desc, entity_boost } =
        BenchEngine::build(args, embedder)?;
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
                let speakers = args.speakers_as_entities(entity_boost);
                episodic_turn(&ns, &t.speaker, t.at, args.turn_content(t), &t.dia_id, speakers, "locomo-import")
            })
            .collect();
        let ids = engine.ingest(&ns, items).await?;
        ids_of.push(ids.into_iter().enumerate().map(|(i, id)| (id, i)).collect());
        pb.inc(c.turns.len() as u64);
    }
    pb.finish();
    let ingest_calls = timed.take();

    // Query.
    let total_q: usize = convs.iter().map(|c| c.questions.len()).sum();
    let pb = bar(total_q as u64, "questions", args.quiet);
    let mut tab = Table::default();
    let mut unreachable: HashMap<String, (usize, usize, usize)> = HashMap::new(); // cat → (ids, evidence ids, questions hit)
    let mut no_evidence: HashMap<String, usize> = HashMap::new();
    let (mut query_embed, mut recall_total, mut recall_embed) = (Vec::new(), Vec::new(), Vec::new());
    let largest_budget = args.budgets.iter().copied().max().unwrap_or(0);
    let mut dump = args.dump_candidates.as_deref().map(dump::CandidateDump::create).transpose()?;
    let mut per_q = args.per_question.as_deref().map(per_question::PerQuestion::create).transpose()?;
    for (c, ids) in convs.iter().zip(&ids_of) {
        let ns = namespace_of(c)?;
        let turn_tokens: Vec<usize> = c.turns.iter().map(|t| tokens.count(&args.turn_content(t))).collect();
        let session_of: Vec<u32> = c.turns.iter().map(|t| t.key.0).collect();
        if let Some(d) = dump.as_mut() {
            d.conversation(&c.id, &turn_tokens)?;
        }
        let index_of = c.turn_index();
        let last = c.turns.iter().map(|t| t.at).max().unwrap_or_default();
        clock.set(last);
        let recent = RecentOnly::new(c, tokens.as_ref());
        for (qi, q) in c.questions.iter().enumerate() {
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
            let query = if args.query_norm { normalise_query(&q.question) } else { q.question.clone() };
            let qvec = embedder.embed(std::slice::from_ref(&query)).await?.into_iter().next();
            query_embed.extend(timed.take().into_iter().map(|(_, d)| d));
            if let Some(d) = dump.as_mut() {
                let depth = mnemo_contract::fusion::fusion_depth(args.candidates());
                let search = |mode: SearchMode| SearchQuery {
                    namespace: ns.clone(),
                    text: query.clone(),
                    embedding: if mode == SearchMode::Lexical { None } else { qvec.clone() },
                    limit: depth,
                    mode,
                };
                let lexical = engine.search(&search(SearchMode::Lexical)).await?;
                let dense = engine.search(&search(SearchMode::Dense)).await?;
                d.question(&c.id, q.category, &evidence, &lexical, &dense, ids)?;
            }
            let mut hybrid_ranking = Vec::new();
            let mut hybrid_hits: Vec<(usize, f32)> = Vec::new();
            // The hybrid recall's own order (its trace ranks every candidate, whatever the budget).
            let mut hybrid_trace: Vec<usize> = Vec::new();
            for (method, mode) in METHODS {
                let (packed, ranking) = match mode {
                    None => (
                        args.budgets.iter().map(|b| (*b, recent.pack(*b))).collect(),
                        recent.ranking(args.candidates()),
                    ),
                    Some(mode) => {
                        let hits = engine
                            .search(&SearchQuery {
                                namespace: ns.clone(),
                                text: query.clone(),
                                embedding: if mode == SearchMode::Lexical { None } else { qvec.clone() },
                                limit: args.candidates(),
                                mode,
                            })
                            .await?;
                        let ranking: Vec<usize> = hits.iter().filter_map(|h| ids.get(&h.id).copied()).collect();
                        if mode == SearchMode::Hybrid {
                            hybrid_hits = hits.iter().filter_map(|h| ids.get(&h.id).map(|t| (*t, h.score))).collect();
                        }
                        let mut packed = Vec::with_capacity(args.budgets.len());
                        for b in &args.budgets {
                            let opts = RecallOptions {
                                budget: Some(*b),
                                mode: Some(mode),
                                candidates: Some(args.candidates()),
                                no_touch: true,
                            };
                            let _ = timed.take();
                            let t0 = Instant::now();
                            let pack = engine.recall(&ns, &query, &opts).await?;
                            let took = t0.elapsed();
                            let embed_took: Duration = timed.take().into_iter().map(|(_, d)| d).sum();
                            if mode == SearchMode::Hybrid && *b == largest_budget {
                                recall_total.push(took);
                                recall_embed.push(embed_took);
                                hybrid_trace = pack.trace.iter().filter_map(|t| ids.get(&t.id).copied()).collect();
                            }
                            packed.push((
                                *b,
                                pack.memories().filter_map(|m| ids.get(&m.id).copied()).collect::<HashSet<usize>>(),
                            ));
                        }
                        (packed, ranking)
                    }
                };
                let mut rows = vec![(method, &ranking)];
                if mode == Some(SearchMode::Hybrid) {
                    hybrid_ranking = ranking.clone();
                    rows.push((RECALL_ORDER, &hybrid_trace));
                }
                for (row, order) in rows {
                    let figures = question_figures(&evidence, &packed, order, &args.ks);
                    if let Some(w) = per_q.as_mut() {
                        w.write(&c.id, qi, q.category, row, &figures)?;
                    }
                    tab.add(row, q.category, &figures);
                }
            }
            if let Some(n) = args.neighbours {
                let window = n as usize;
                let expanded = neighbours::expand(&hybrid_ranking, &session_of, window);
                let mut variants = vec![
                    (PACK_CONTROL.to_string(), hybrid_ranking.clone()),
                    (format!("{PACK_CONTROL}_nb{n}"), expanded),
                ];
                if let Some(a) = args.neighbour_share {
                    variants.push((
                        share_row(a, n),
                        neighbours::share(&hybrid_hits, &session_of, window, a, args.candidates()),
                    ));
                }
                for (name, order) in &variants {
                    let packed: Vec<(usize, HashSet<usize>)> =
                        args.budgets.iter().map(|b| (*b, neighbours::pack_greedy(order, &turn_tokens, *b))).collect();
                    let figures = question_figures(&evidence, &packed, order, &args.ks);
                    if let Some(w) = per_q.as_mut() {
                        w.write(&c.id, qi, q.category, name, &figures)?;
                    }
                    tab.add(name, q.category, &figures);
                }
            }
        }
    }
    pb.finish();
    if let Some(d) = dump {
        d.finish()?;
    }
    if let Some(w) = per_q {
        w.finish()?;
    }

    let speed = Speed::of(&ingest_calls, &query_embed, &recall_total, &recall_embed, cache.as_ref().map(|c| c.hits()));
    let mut rows = rows(&tab, args, &unreachable, &no_evidence);
    rows.extend(speed.rows(largest_budget));
    let mut md = markdown(
        &tab,
        args,
        &provenance,
        &index_desc,
        entity_boost,
        &unreachable,
        &no_evidence,
        convs.len(),
        total_turns,
        total_q,
    );
    md.push_str(&speed.markdown(largest_budget));
    Ok(BenchReport::new(provenance, rows, md))
}

/// Speed figures of one run.
struct Speed {
    /// Texts embedded at ingest, and the time the embedder took for them.
    ingest_texts: usize,
    ingest_secs: f64,
    /// Query-embedding latency (ms): p50, p99, n.
    query_ms: (f64, f64, usize),
    /// Hybrid recall latency at the largest budget (ms), with the query embedding: p50, p99.
    recall_ms: (f64, f64, usize),
    /// The same, without the time spent embedding the query.
    recall_no_embed_ms: (f64, f64),
    /// Texts answered from the embedding cache (then the embedding figures are not the model's).
    cache_hits: Option<usize>,
}

impl Speed {
    fn of(
        ingest: &[(usize, Duration)],
        query: &[Duration],
        recall: &[Duration],
        recall_embed: &[Duration],
        cache_hits: Option<usize>,
    ) -> Self {
        let ms = |v: Vec<f64>| {
            let mut v = v;
            v.sort_by(f64::total_cmp);
            (percentile(&v, 50.0), percentile(&v, 99.0), v.len())
        };
        let q = ms(query.iter().map(|d| d.as_secs_f64() * 1e3).collect());
        let r = ms(recall.iter().map(|d| d.as_secs_f64() * 1e3).collect());
        let rn = ms(recall.iter().zip(recall_embed).map(|(t, e)| t.saturating_sub(*e).as_secs_f64() * 1e3).collect());
        Speed {
            ingest_texts: ingest.iter().map(|(n, _)| n).sum(),
            ingest_secs: ingest.iter().map(|(_, d)| d.as_secs_f64()).sum(),
            query_ms: q,
            recall_ms: r,
            recall_no_embed_ms: (rn.0, rn.1),
            cache_hits,
        }
    }

    fn throughput(&self) -> f64 {
        if self.ingest_secs > 0.0 {
            self.ingest_texts as f64 / self.ingest_secs
        } else {
            f64::NAN
        }
    }

    fn rows(&self, budget: usize) -> Vec<serde_json::Value> {
        let cached = self.cache_hits.unwrap_or(0);
        vec![
            json!({"method": "embedder", "category": "all", "metric": "embed_throughput_texts_per_s", "value": self.throughput(), "n": self.ingest_texts, "cache_hits": cached}),
            json!({"method": "embedder", "category": "all", "metric": "query_embed_ms_p50", "value": self.query_ms.0, "n": self.query_ms.2, "cache_hits": cached}),
            json!({"method": "embedder", "category": "all", "metric": "query_embed_ms_p99", "value": self.query_ms.1, "n": self.query_ms.2, "cache_hits": cached}),
            json!({"method": "hybrid", "category": "all", "metric": "recall_ms_p50", "budget": budget, "value": self.recall_ms.0, "n": self.recall_ms.2, "with_query_embedding": true}),
            json!({"method": "hybrid", "category": "all", "metric": "recall_ms_p99", "budget": budget, "value": self.recall_ms.1, "n": self.recall_ms.2, "with_query_embedding": true}),
            json!({"method": "hybrid", "category": "all", "metric": "recall_ms_p50", "budget": budget, "value": self.recall_no_embed_ms.0, "n": self.recall_ms.2, "with_query_embedding": false}),
            json!({"method": "hybrid", "category": "all", "metric": "recall_ms_p99", "budget": budget, "value": self.recall_no_embed_ms.1, "n": self.recall_ms.2, "with_query_embedding": false}),
        ]
    }

    fn markdown(&self, budget: usize) -> String {
        let note = match self.cache_hits {
            Some(h) if h > 0 => format!(
                " **{h} texts came from the embedding cache: the embedding figures measure the cache, not the model.**"
            ),
            _ => String::new(),
        };
        format!(
            "\n## Speed\n\nEmbedding at ingest: {} texts in {:.1} s of embedder time = **{:.1} texts/s** (batched per conversation).\n\
             Query embedding (one text): p50 {:.1} ms, p99 {:.1} ms (n = {}).\n\
             Hybrid recall at budget {budget} (engine.recall, n = {}): p50 {:.1} ms, p99 {:.1} ms with the query embedding; \
             p50 {:.1} ms, p99 {:.1} ms without it.{note}\n",
            self.ingest_texts,
            self.ingest_secs,
            self.throughput(),
            self.query_ms.0,
            self.query_ms.1,
            self.query_ms.2,
            self.recall_ms.2,
            self.recall_ms.0,
            self.recall_ms.1,
            self.recall_no_embed_ms.0,
            self.recall_no_embed_ms.1,
        )
    }
}

/// Drop a leading question word (and the auxiliary after it) and trailing punctuation.
pub fn normalise_query(q: &str) -> String {
    const WH: [&str; 9] = ["what", "when", "where", "who", "whom", "which", "why", "how", "whose"];
    const AUX: [&str; 14] =
        ["did", "does", "do", "is", "was", "are", "were", "has", "have", "had", "would", "will", "can", "could"];
    let words: Vec<&str> = q.trim().trim_end_matches(['?', '.', '!', ' ']).split_whitespace().collect();
    let mut i = 0;
    if words.first().is_some_and(|w| WH.contains(&w.to_lowercase().as_str())) {
        i = 1;
        // "how many", "what kind of": keep the noun phrase, drop only the wh-word.
        if words.get(i).is_some_and(|w| AUX.contains(&w.to_lowercase().as_str())) {
            i += 1;
        }
    } else if words.first().is_some_and(|w| AUX.contains(&w.to_lowercase().as_str())) {
        i = 1;
    }
    let rest = words[i.min(words.len())..].join(" ");
    if rest.is_empty() {
        q.to_string()
    } else {
        rest
    }
}

/// The namespace of a conversation: `locomo-<sample_id>` (sanitised).
fn namespace_of(c: &Conversation) -> Result<Namespace> {
    Ok(crate::util::namespace_for("locomo", &c.id)?)
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

/// The variant flags of a run, for its report ("none" for the plain run); `entity_boost`: the
/// index's.
fn variants(args: &LocomoArgs, entity_boost: f32) -> String {
    let mut v = Vec::new();
    if args.session_dates {
        v.push("session dates".to_string());
    }
    if args.query_norm {
        v.push("query normalisation".into());
    }
    if args.speakers_as_entities(entity_boost) {
        v.push(format!("speakers as entities, entity boost {entity_boost}"));
    }
    if let Some(a) = args.recall_neighbour_share {
        v.push(format!("recall neighbour share {a} within {} turns", args.neighbour_window()));
    }
    if let Some(t) = args.recall_dense_max_tokens {
        v.push(format!("no vector filed for a turn over {t} tokens"));
    }
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
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
    for method in args.method_names() {
        for cat in CATEGORIES {
            for m in metric_list(args) {
                let Some(mean) = tab.get(&method, cat, m) else { continue };
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
    entity_boost: f32,
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
        args.candidates(), p.token_counter, args.candidates()
    ));
    s.push_str(&format!("Variants: {}.\n\n", variants(args, entity_boost)));
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
        for method in args.method_names() {
            let n = tab.get(&method, cat, Metric::Mrr).map_or(0, |m| m.n);
            if n == 0 {
                continue;
            }
            let mut r = vec![method.clone(), n.to_string()];
            r.extend(
                metrics.iter().map(|m| tab.get(&method, cat, *m).map_or("-".into(), |x| format!("{:.3}", x.value()))),
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

#[cfg(test)]
mod tests {
    use super::normalise_query;

    #[test]
    fn question_words_are_dropped_and_the_rest_kept() {
        assert_eq!(
            normalise_query("When did Caroline go to the LGBTQ support group?"),
            "Caroline go to the LGBTQ support group"
        );
        assert_eq!(normalise_query("What is Melanie's hobby?"), "Melanie's hobby");
        assert_eq!(normalise_query("How many kids does Mel have?"), "many kids does Mel have");
        assert_eq!(normalise_query("Did Jon open a studio?"), "Jon open a studio");
        assert_eq!(normalise_query("Why?"), "Why?");
    }
}
