//! `bench longmemeval`: retrieval over LongMemEval haystacks (S or oracle setting).
//!
//! Each question is its own user: its haystack goes into a namespace of its own, one EPISODIC
//! memory per turn ("role: text", the role its source, the turn's external id
//! "session_id#i", dated by its session's `haystack_dates` entry plus i seconds so a session's
//! turns keep their order), through `Engine::ingest` on the engine `bench locomo` builds
//! ([`BenchEngine`]: same index, fusion, embedding cache and policy, episodic decay off).
//! The question is then asked with the clock set to its `question_date`. Every turn of the
//! haystack stays recallable, also those of sessions dated after the question (upstream dates
//! some evidence sessions later the same day as the question; the report counts them), unless
//! `--as-of-question-date` asks for what memory held at the question's date (`recall_as_of`). For BM25, dense and hybrid: the index's ranking gives
//! session recall@k, turn recall@k and NDCG@10, and `recall` (no_touch) under each budget the
//! evidence recall within it (`metrics`). Abstention questions (`_abs`) are reported apart.
pub mod data;
pub mod metrics;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use mnemo_contract::{Embedder, SearchMode, SearchQuery};
use mnemo_core::engine::RecallOptions;
use mnemo_report::RunProvenance;
use serde_json::json;

use crate::bench_index::ConfiguredIndex;
use crate::error::{BenchError, Result};
use crate::locomo::engine::BenchEngine;
use crate::locomo::{LocomoArgs, RetrievalFlags, RECALL_ORDER};
use crate::report::{provenance_md, table, BenchReport};
use crate::util::{bar, episodic_turn, namespace_for};
use data::Question;
use metrics::{question_figures, Evidence, Metric, Table, NDCG_AT};

/// Arguments of `bench longmemeval`.
#[derive(Clone, Debug, clap::Args)]
pub struct LongMemEvalArgs {
    /// A LongMemEval JSON file (the upstream per-question list: S or oracle setting).
    #[arg(long = "data", value_name = "FILE")]
    pub file: PathBuf,
    /// Token budgets (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "256,512,1024,2048,4096")]
    pub budgets: Vec<usize>,
    /// Ranks k for session and turn recall@k (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,5,10")]
    pub ks: Vec<usize>,
    /// Candidates taken from the index per recall (and depth of the ranking).
    /// Default: the config's `[recall] candidates` when it sets one, else 200.
    #[arg(long)]
    pub candidates: Option<usize>,
    /// The index and its fusion.
    #[command(flatten)]
    pub retrieval: RetrievalFlags,
    /// Cache embeddings in FILE by (model, text) across runs (a real model embeds an S
    /// haystack set in minutes; a cached rerun takes seconds).
    #[arg(long, value_name = "FILE")]
    pub embed_cache: Option<PathBuf>,
    /// Only the first N questions.
    #[arg(long)]
    pub questions: Option<usize>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Recall as of each question's `question_date` (`Engine::recall_as_of`: what memory held
    /// then, so the turns of sessions dated after the question are absent), ranking in a scratch
    /// index of the same kind and settings; without it every turn of the haystack is recalled.
    #[arg(long)]
    pub as_of_question_date: bool,
    /// Write each relative date of a turn ("yesterday", "last Saturday", "two weeks ago") beside
    /// it, resolved against the turn's time, as the write path does for every memory
    /// (`mnemo_contract::world_time::with_dates_resolved`; docs/time.md); without it the turns
    /// are imported as written.
    #[arg(long)]
    pub resolve_dates: bool,
    /// Write each question's lexical and dense candidate lists with their scores (at the depth
    /// hybrid fusion takes), its turns' sessions and token counts and its evidence turns to FILE
    /// as JSON lines, so that fusion and re-ranking rules can be swept offline from one run (as
    /// `bench locomo --dump-candidates`). The lists come from the whole haystack's index, also
    /// with --as-of-question-date.
    #[arg(long, value_name = "FILE")]
    pub dump_candidates: Option<PathBuf>,
    /// Write every question's figures per method to FILE as JSON lines (the question's id as
    /// `conversation`, its type as `category`; abstention questions as "abstention"), for
    /// paired comparisons of two runs (`bench/paired.py`).
    #[arg(long, value_name = "FILE")]
    pub per_question: Option<PathBuf>,
    /// The configured `[index]` section the flags are laid over (taken from the config; not a
    /// flag): see `LocomoArgs::with_index_config`.
    #[arg(skip)]
    pub index_config: Option<ConfiguredIndex>,
    /// The configured `[recall] neighbour_share` and its window (not flags).
    #[arg(skip)]
    pub recall_neighbour: Option<(f64, u32)>,
    /// The engine's `[recall] dense_max_tokens` for this run (the config's, unless set here):
    /// a turn longer than this many tokens is filed in the index without its vector.
    #[arg(long, value_name = "TOKENS")]
    pub recall_dense_max_tokens: Option<usize>,
}

impl LongMemEvalArgs {
    /// Defaults for `file`.
    pub fn new(file: PathBuf) -> Self {
        LongMemEvalArgs {
            file,
            budgets: vec![256, 512, 1024, 2048, 4096],
            ks: vec![1, 5, 10],
            candidates: None,
            retrieval: RetrievalFlags::default(),
            embed_cache: None,
            questions: None,
            quiet: false,
            as_of_question_date: false,
            resolve_dates: false,
            dump_candidates: None,
            per_question: None,
            index_config: None,
            recall_neighbour: None,
            recall_dense_max_tokens: None,
        }
    }

    /// Candidates taken per recall: `--candidates`, else the config's, else 200.
    pub fn candidates(&self) -> usize {
        self.candidates.unwrap_or(crate::locomo::DEFAULT_CANDIDATES)
    }

    /// The engine's settings, in the form `bench locomo` builds its engine from.
    fn engine_settings(&self) -> LocomoArgs {
        let mut s = LocomoArgs::new(self.file.clone());
        s.candidates = self.candidates;
        s.retrieval = self.retrieval.clone();
        s.embed_cache = self.embed_cache.clone();
        s.index_config = self.index_config.clone();
        s.recall_neighbour_share = self.recall_neighbour.map(|(a, _)| a);
        s.recall_neighbour_turns = self.recall_neighbour.map(|(_, n)| n);
        s.recall_dense_max_tokens = self.recall_dense_max_tokens;
        s.quiet = self.quiet;
        s
    }

    /// Start from the configured `[index]` section (the flags are laid over it, as `bench
    /// locomo` does) and take what the command line left unset from `[recall]` (candidates,
    /// neighbour share).
    pub fn with_config(mut self, index: ConfiguredIndex, recall: &mnemo_contract::policy::RecallPolicy) -> Self {
        self.index_config = Some(index);
        let s = self.engine_settings().with_recall_policy(recall);
        self.candidates = s.candidates;
        self.recall_neighbour = s.recall_neighbour_share.map(|a| (a, s.recall_neighbour_turns.unwrap_or(2)));
        self.recall_dense_max_tokens = s.recall_dense_max_tokens;
        self
    }
}

/// The methods compared, with the engine's search mode.
const METHODS: [(&str, SearchMode); 3] =
    [("bm25", SearchMode::Lexical), ("dense", SearchMode::Dense), ("hybrid", SearchMode::Hybrid)];

/// The report's rows: the methods, then the hybrid recall's own order.
const ROWS: [&str; 4] = ["bm25", "dense", "hybrid", RECALL_ORDER];

/// The group of every answerable question, and the group of the `_abs` ones.
const ALL: &str = "all";
const ABSTENTION: &str = "abstention";

/// Counts that are not means: questions asked, left out of turn metrics, and so on, per group.
#[derive(Default)]
struct Counts {
    questions: usize,
    without_turn_evidence: usize,
    without_session_evidence: usize,
    /// Evidence session ids that name no session of the haystack.
    unknown_evidence_sessions: usize,
    /// Questions whose haystack has a session dated after the question.
    with_later_sessions: usize,
}

/// Run the LongMemEval retrieval benchmark with `embedder` (the provenance's `embedder` and
/// `token_counter` are set from what was used).
pub async fn longmemeval(
    args: &LongMemEvalArgs,
    mut provenance: RunProvenance,
    embedder: Arc<dyn Embedder>,
) -> Result<BenchReport> {
    if args.budgets.is_empty() || args.ks.is_empty() || args.candidates() == 0 {
        return Err(BenchError::Arg("--budgets, --ks and --candidates must be non-empty / positive".into()));
    }
    if args.questions == Some(0) {
        return Err(BenchError::Arg("--questions must be at least 1".into()));
    }
    let mut questions = data::load(&args.file)?;
    if let Some(n) = args.questions {
        questions.truncate(n);
    }
    let settings = args.engine_settings();
    let BenchEngine { engine, clock, embedder, cache, tokens, index_desc, .. } =
        BenchEngine::build(&settings, embedder)?;
    provenance.embedder = embedder.model_id().to_string();
    provenance.token_counter = mnemo_contract::TokenCounter::name(tokens.as_ref()).to_string();

    let mut tab = Table::default();
    let mut counts: HashMap<String, Counts> = HashMap::new();
    let total_turns: usize = questions.iter().map(|q| q.turns().count()).sum();
    let mut dump = args.dump_candidates.as_deref().map(crate::locomo::dump::CandidateDump::create).transpose()?;
    let mut per_q = args.per_question.as_deref().map(crate::locomo::per_question::PerQuestion::create).transpose()?;
    let pb = bar(questions.len() as u64, "questions", args.quiet);
    for q in &questions {
        let ns = namespace_for("lme", &q.id)?;
        // The stored texts' token counts, as the engine counts them (for --dump-candidates).
        let mut stored_tokens = Vec::new();
        let items = q
            .turns()
            .map(|(s, i, t)| {
                // A session's turns a second apart, in order.
                let at = s.at.plus_millis(1000 * i as i64);
                let content = format!("{}: {}", t.role, t.content);
                let content = if args.resolve_dates {
                    mnemo_contract::world_time::with_dates_resolved(&content, at)
                } else {
                    content
                };
                if args.dump_candidates.is_some() {
                    stored_tokens.push(mnemo_contract::TokenCounter::count(tokens.as_ref(), &content));
                }
                episodic_turn(&ns, &t.role, at, content, &Question::turn_key(s, i), false, "longmemeval-import")
            })
            .collect();
        let ids = engine.ingest(&ns, items).await?;
        let turn_of: HashMap<_, usize> = ids.into_iter().enumerate().map(|(i, id)| (id, i)).collect();

        // What the figures are measured against.
        // Sessions are counted by id: a repeated session is one session.
        let mut session_index: HashMap<&str, usize> = HashMap::new();
        for s in &q.sessions {
            let next = session_index.len();
            session_index.entry(s.id.as_str()).or_insert(next);
        }
        let session_of: Vec<usize> =
            q.turns().map(|(s, _, _)| session_index.get(s.id.as_str()).copied().unwrap_or(usize::MAX)).collect();
        let evidence_turns: HashSet<usize> =
            q.turns().enumerate().filter(|(_, (_, _, t))| t.has_answer).map(|(i, _)| i).collect();
        let evidence_sessions: HashSet<usize> =
            q.answer_sessions.iter().filter_map(|id| session_index.get(id.as_str()).copied()).collect();
        let unknown_sessions = q.answer_sessions.len() - evidence_sessions.len();
        let ev = Evidence {
            session_of: &session_of,
            turns: &evidence_turns,
            sessions: &evidence_sessions,
            unknown_sessions,
        };
        let groups: Vec<String> =
            if q.is_abstention() { vec![ABSTENTION.into()] } else { vec![ALL.into(), q.question_type.clone()] };
        for g in &groups {
            let c = counts.entry(g.clone()).or_default();
            c.questions += 1;
            c.without_turn_evidence += usize::from(evidence_turns.is_empty());
            c.without_session_evidence += usize::from(q.answer_sessions.is_empty());
            c.unknown_evidence_sessions += unknown_sessions;
            c.with_later_sessions += usize::from(q.sessions.iter().any(|s| s.at > q.asked_at));
        }

        // Asked as of its date.
        clock.set(q.asked_at);
        let qvec = embedder.embed(std::slice::from_ref(&q.question)).await?.into_iter().next();
        if let Some(d) = dump.as_mut() {
            let depth = mnemo_contract::fusion::fusion_depth(args.candidates());
            let mut lists = Vec::with_capacity(2);
            for mode in [SearchMode::Lexical, SearchMode::Dense] {
                let hits = engine
                    .search(&SearchQuery {
                        namespace: ns.clone(),
                        text: q.question.clone(),
                        embedding: if mode == SearchMode::Lexical { None } else { qvec.clone() },
                        limit: depth,
                        mode,
                    })
                    .await?;
                lists.push(hits.iter().filter_map(|h| turn_of.get(&h.id).map(|t| (*t, h.score))).collect::<Vec<_>>());
            }
            d.line(&json!({
                "question": q.id, "type": q.question_type, "abstention": q.is_abstention(),
                "sessions": session_of, "evidence": evidence_turns.iter().collect::<BTreeSet<_>>(),
                "turn_tokens": stored_tokens, "lexical": lists[0], "dense": lists[1],
            }))?;
        }
        for (method, mode) in METHODS {
            let search = SearchQuery {
                namespace: ns.clone(),
                text: q.question.clone(),
                embedding: if mode == SearchMode::Lexical { None } else { qvec.clone() },
                limit: args.candidates(),
                mode,
            };
            let mut packed = Vec::with_capacity(args.budgets.len());
            // As of the question's date: each recall ranks in a scratch index it fills with
            // what memory held then; the ranking is that index's too.
            let mut held_then = None;
            // The hybrid recall's own order (its trace ranks every candidate, whatever the budget).
            let mut trace_order = Vec::new();
            for b in &args.budgets {
                let opts = RecallOptions {
                    budget: Some(*b),
                    mode: Some(mode),
                    candidates: Some(args.candidates()),
                    no_touch: true,
                };
                let pack = if args.as_of_question_date {
                    let (scratch, _) = settings.index(clock.clone(), embedder.clone())?;
                    let pack = engine.recall_as_of(&ns, &q.question, &opts, q.asked_at, &*scratch).await?;
                    held_then = Some(scratch);
                    pack
                } else {
                    engine.recall(&ns, &q.question, &opts).await?
                };
                packed.push((*b, pack.memories().filter_map(|m| turn_of.get(&m.id).copied()).collect::<HashSet<_>>()));
                if mode == SearchMode::Hybrid && trace_order.is_empty() {
                    trace_order = pack.trace.iter().filter_map(|t| turn_of.get(&t.id).copied()).collect();
                }
            }
            let hits = match &held_then {
                Some(scratch) => scratch.search(&search).await?,
                None => engine.search(&search).await?,
            };
            let ranking: Vec<usize> = hits.iter().filter_map(|h| turn_of.get(&h.id).copied()).collect();
            let mut rows = vec![(method, question_figures(&ev, &ranking, &packed, &args.ks))];
            if mode == SearchMode::Hybrid {
                rows.push((RECALL_ORDER, question_figures(&ev, &trace_order, &packed, &args.ks)));
            }
            for (row, figures) in rows {
                if let Some(w) = per_q.as_mut() {
                    let named: Vec<(String, f64)> = figures.iter().map(|(m, x)| (m.name(), *x)).collect();
                    let category = if q.is_abstention() { ABSTENTION } else { q.question_type.as_str() };
                    w.write_named(&q.id, 0, json!(category), row, &named)?;
                }
                tab.add(row, &groups, &figures);
            }
        }
        pb.inc(1);
    }
    pb.finish();
    if let Some(d) = dump {
        d.finish()?;
    }
    if let Some(w) = per_q {
        w.finish()?;
    }

    let group_order = group_order(&questions);
    let rows = rows(&tab, args, &counts, &group_order);
    let index_desc = match args.recall_dense_max_tokens {
        Some(t) => format!("{index_desc}; no vector filed for a turn over {t} tokens"),
        None => index_desc,
    };
    let mut md = markdown(&tab, args, &provenance, &index_desc, &counts, &group_order, total_turns);
    if let Some(h) = cache.as_ref().map(|c| c.hits()).filter(|h| *h > 0) {
        md.push_str(&format!("\n{h} texts came from the embedding cache.\n"));
    }
    Ok(BenchReport::new(provenance, rows, md))
}

/// "all", the question types in name order, then "abstention" when there are such questions.
fn group_order(questions: &[Question]) -> Vec<String> {
    let types: BTreeSet<&str> =
        questions.iter().filter(|q| !q.is_abstention()).map(|q| q.question_type.as_str()).collect();
    let mut v = vec![ALL.to_string()];
    v.extend(types.into_iter().map(str::to_string));
    if questions.iter().any(Question::is_abstention) {
        v.push(ABSTENTION.into());
    }
    v
}

/// The ranking metrics, then the budget metrics, in column order.
fn metric_list(args: &LongMemEvalArgs) -> (Vec<Metric>, Vec<Metric>) {
    let mut ranking: Vec<Metric> = args.ks.iter().map(|k| Metric::SessionAny(*k)).collect();
    ranking.extend(args.ks.iter().map(|k| Metric::SessionAll(*k)));
    ranking.extend(args.ks.iter().map(|k| Metric::TurnRecall(*k)));
    ranking.push(Metric::Ndcg(NDCG_AT));
    let mut budget: Vec<Metric> = args.budgets.iter().map(|b| Metric::EvidenceRecall(*b)).collect();
    budget.extend(args.budgets.iter().map(|b| Metric::SessionEvidenceRecall(*b)));
    (ranking, budget)
}

fn rows(
    tab: &Table,
    args: &LongMemEvalArgs,
    counts: &HashMap<String, Counts>,
    groups: &[String],
) -> Vec<serde_json::Value> {
    let (ranking, budget) = metric_list(args);
    let mut out = Vec::new();
    for method in ROWS {
        for g in groups {
            for m in ranking.iter().chain(&budget) {
                let Some(mean) = tab.get(method, g, *m) else { continue };
                let (lo, hi) = mean.ci95();
                let (metric, key, at) = m.row_keys();
                let mut row = json!({"method": method, "question_type": g, "metric": metric, "value": mean.value(), "n": mean.n, "ci95_mean": [lo, hi]});
                row[key] = json!(at);
                out.push(row);
            }
        }
    }
    for g in groups {
        let Some(c) = counts.get(g) else { continue };
        for (metric, value) in [
            ("questions", c.questions),
            ("questions_without_turn_evidence", c.without_turn_evidence),
            ("questions_without_session_evidence", c.without_session_evidence),
            ("unknown_evidence_sessions", c.unknown_evidence_sessions),
            ("questions_with_sessions_after_question_date", c.with_later_sessions),
        ] {
            out.push(json!({"method": "all", "question_type": g, "metric": metric, "value": value, "n": c.questions}));
        }
    }
    out
}

fn markdown(
    tab: &Table,
    args: &LongMemEvalArgs,
    p: &RunProvenance,
    index_desc: &str,
    counts: &HashMap<String, Counts>,
    groups: &[String],
    turns: usize,
) -> String {
    let n = |g: &str| counts.get(g).map_or(0, |c| c.questions);
    let mut s = format!("# LongMemEval retrieval\n\n{}\n", provenance_md(p));
    s.push_str(&format!(
        "{} questions ({} answerable, {} abstention), {turns} turns, one namespace per question; index: {index_desc}; \
         candidates {}; episodic decay off; asked with the clock at question_date ({}){}.\n\
         S-any@k / S-all@k = any / every evidence session has a turn in the top k turns; R@k = share of has_answer turns \
         in the top k; NDCG@{NDCG_AT} over turns; ER@B / S-ER@B = has_answer turns / evidence sessions within B tokens ({}).\n\n",
        n(ALL) + n(ABSTENTION),
        n(ALL),
        n(ABSTENTION),
        args.candidates(),
        if args.as_of_question_date {
            "recalled as of question_date: turns of later sessions are absent"
        } else {
            "no as-of recall: later turns stay recallable"
        },
        if args.resolve_dates { "; relative dates written beside them, resolved against each turn's time" } else { "" },
        p.token_counter,
    ));
    let (ranking, budget) = metric_list(args);
    for g in groups {
        s.push_str(&format!("## {g} (n = {})\n\n", n(g)));
        for (what, metrics) in [("ranking", &ranking), ("within a budget", &budget)] {
            let mut header: Vec<String> = vec!["method".into(), "n (session / turn)".into()];
            header.extend(metrics.iter().map(|m| m.name()));
            let hdr: Vec<&str> = header.iter().map(String::as_str).collect();
            let mut body = Vec::new();
            for method in ROWS {
                let n_of = |m: Metric| tab.get(method, g, m).map_or(0, |x| x.n);
                let mut r = vec![
                    method.to_string(),
                    format!("{} / {}", n_of(Metric::SessionAny(args.ks[0])), n_of(Metric::Ndcg(NDCG_AT))),
                ];
                r.extend(
                    metrics.iter().map(|m| tab.get(method, g, *m).map_or("-".into(), |x| format!("{:.3}", x.value()))),
                );
                body.push(r);
            }
            s.push_str(&format!("{what}:\n\n{}\n", table(&hdr, &body)));
        }
    }
    s.push_str("Intervals (95%, normal approximation of the mean), answerable questions:\n\n");
    let key = [
        Metric::SessionAny(*args.ks.iter().max().unwrap_or(&10)),
        Metric::TurnRecall(*args.ks.iter().max().unwrap_or(&10)),
        Metric::Ndcg(NDCG_AT),
        Metric::EvidenceRecall(*args.budgets.iter().max().unwrap_or(&4096)),
    ];
    let mut header: Vec<String> = vec!["method".into()];
    header.extend(key.iter().map(|m| m.name()));
    let hdr: Vec<&str> = header.iter().map(String::as_str).collect();
    let body: Vec<Vec<String>> = ROWS
        .iter()
        .map(|method| {
            let mut r = vec![method.to_string()];
            r.extend(key.iter().map(|m| {
                tab.get(method, ALL, *m).map_or("-".into(), |x| {
                    let (lo, hi) = x.ci95();
                    format!("{:.3} [{lo:.3}, {hi:.3}]", x.value())
                })
            }));
            r
        })
        .collect();
    s.push_str(&format!("{}\n", table(&hdr, &body)));
    let mut notes = Vec::new();
    for g in groups {
        let Some(c) = counts.get(g) else { continue };
        if c.without_turn_evidence > 0 {
            notes.push(format!(
                "{g}: {} questions have no has_answer turn (left out of R@k, NDCG, ER)",
                c.without_turn_evidence
            ));
        }
        if c.without_session_evidence > 0 {
            notes.push(format!(
                "{g}: {} questions have no answer_session_ids (left out of session metrics)",
                c.without_session_evidence
            ));
        }
        if c.unknown_evidence_sessions > 0 {
            notes.push(format!(
                "{g}: {} evidence session ids name no haystack session (counted as misses)",
                c.unknown_evidence_sessions
            ));
        }
        if c.with_later_sessions > 0 {
            notes.push(format!(
                "{g}: {} questions have haystack sessions dated after question_date ({})",
                c.with_later_sessions,
                if args.as_of_question_date { "absent from their recall" } else { "recalled all the same" }
            ));
        }
    }
    if !notes.is_empty() {
        s.push_str(&format!("Notes:\n\n- {}\n", notes.join("\n- ")));
    }
    s
}
