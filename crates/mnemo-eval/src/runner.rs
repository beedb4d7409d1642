//! The runner: one scenario under one config, Mnemo and both baselines side by side on the same
//! timeline, in a fresh temporary data directory.
//!
//! Time (docs/metrics.md): steps are applied in time order; at each distinct time the decay sweep
//! runs first (in every namespace the scenario uses), then the events at that time in file
//! order, then the probes in file order. "The end" is after the last step.
use std::collections::BTreeMap;
use std::sync::Arc;

use mnemo_agent::runtime::answer_of;
use mnemo_agent::{Config, Runtime};
use mnemo_contract::{Clock, Grounder, Memory, SimClock, Status, Task, Timestamp};
use mnemo_core::engine::RecallOptions;
use mnemo_core::Engine;
use mnemo_grounders::TableGrounder;
use mnemo_llm::fake::grammar;

use crate::answer::ranked_turns_answer;
use crate::baselines::{retrieve, Baseline, ChatTurn};
use crate::error::{EvalError, Result};
use crate::metrics::{score_decision, score_probe};
use crate::outcome::*;
use crate::scenario::{Action, Matcher, Probe, Scenario};

/// A step of the timeline: (time, phase 0 = event / 1 = probe, index in file order).
type Step = (Timestamp, u8, usize);

fn timeline(s: &Scenario) -> Vec<Step> {
    let mut steps: Vec<Step> =
        s.events.iter().map(|e| (e.at, 0, e.index)).chain(s.probes.iter().map(|p| (p.at, 1, p.index))).collect();
    steps.sort();
    steps
}

/// The config a scenario runs under: `config` with the scenario's `[settings]` merged.
pub fn scenario_config(s: &Scenario, config: &Config) -> Result<Config> {
    if s.settings.is_empty() {
        return Ok(config.clone());
    }
    let origin = format!("{}:{} [settings]", s.file.display(), s.settings_line);
    config.with_overrides(&s.settings, &origin).map_err(|e| EvalError::Scenario {
        file: s.file.display().to_string(),
        line: s.settings_line,
        field: "settings".into(),
        message: e.to_string(),
    })
}

struct Ctx<'a> {
    s: &'a Scenario,
    config: String,
}

impl Ctx<'_> {
    fn fail(&self, what: String, e: impl std::fmt::Display) -> EvalError {
        EvalError::Run { scenario: self.s.name.clone(), config: self.config.clone(), message: format!("{what}: {e}") }
    }
}

/// Run `s` under `config` (named `config_name` in the report), with both baselines.
pub async fn run_scenario(s: &Scenario, config: &Config, config_name: &str) -> Result<ScenarioRun> {
    run_scenario_with(s, config, config_name, true).await
}

/// Run `s` under `config`; the baselines too when `baselines`.
pub async fn run_scenario_with(
    s: &Scenario,
    config: &Config,
    config_name: &str,
    baselines: bool,
) -> Result<ScenarioRun> {
    let cx = Ctx { s, config: config_name.to_string() };
    let cfg = scenario_config(s, config)?;
    let dir = tempfile::tempdir().map_err(|e| cx.fail("creating a temporary data directory".into(), e))?;
    let clock = Arc::new(SimClock::new(s.start));
    let tables: BTreeMap<String, Arc<TableGrounder>> =
        s.world_sources().into_iter().map(|src| (src.clone(), Arc::new(TableGrounder::new(&src)))).collect();
    let extra: Vec<Arc<dyn Grounder>> = tables.values().map(|t| t.clone() as Arc<dyn Grounder>).collect();
    let runtime = Runtime::build(&cfg, dir.path(), clock.clone(), extra)
        .await
        .map_err(|e| cx.fail("building the runtime".into(), e))?;
    let engine = runtime.engine().clone();
    let namespaces = s.namespaces();
    let budget = engine.policy().recall.budget_tokens;

    let mut transcript: Vec<ChatTurn> = Vec::new();
    let mut mnemo: Vec<ProbeOutcome> = Vec::new();
    let mut base: BTreeMap<Baseline, Vec<ProbeOutcome>> = BTreeMap::new();
    let mut last_swept: Option<Timestamp> = None;
    let mut echoed: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for (at, phase, i) in timeline(s) {
        clock.set(at);
        if last_swept != Some(at) {
            for ns in &namespaces {
                engine.decay_sweep(ns).await.map_err(|e| cx.fail(format!("decay sweep in {ns} at {at}"), e))?;
            }
            last_swept = Some(at);
        }
        if phase == 0 {
            let Some(ev) = s.events.get(i) else { continue };
            let what = format!("{}:{}: events[{i}]", s.file.display(), ev.line);
            match &ev.action {
                Action::Say { source, text } => {
                    let report =
                        engine.remember(&ev.namespace, source, text).await.map_err(|e| cx.fail(what.clone(), e))?;
                    echoed.insert(format!("{}:{}", report.model.client.as_str(), report.model.model));
                    let vector = embed(&engine, text).await.map_err(|e| cx.fail(what, e))?;
                    transcript.push(ChatTurn {
                        seq: transcript.len(),
                        namespace: ev.namespace.clone(),
                        at,
                        source: source.clone(),
                        text: text.clone(),
                        tokens: engine.count_tokens(text),
                        vector,
                    });
                }
                Action::Answer { text, by, escalation } => {
                    let id = match escalation {
                        Some(e) => e.parse::<mnemo_agent::EscalationId>().map_err(|e| cx.fail(what.clone(), e))?,
                        None => {
                            let open =
                                runtime.escalations(&ev.namespace, true).await.map_err(|e| cx.fail(what.clone(), e))?;
                            match open.last() {
                                Some(e) => e.id,
                                None => {
                                    return Err(cx.fail(
                                        what,
                                        format!("no open escalation in namespace {} to answer", ev.namespace),
                                    ))
                                }
                            }
                        }
                    };
                    let answered = runtime
                        .answer_escalation(&ev.namespace, id, text, by)
                        .await
                        .map_err(|e| cx.fail(what.clone(), e))?;
                    if let Some(r) = &answered.remembered {
                        echoed.insert(format!("{}:{}", r.model.client.as_str(), r.model.model));
                    }
                }
                Action::World { source, entity, attribute, value } => {
                    if let Some(t) = tables.get(source) {
                        t.set_at(entity, attribute, value, Some(clock.now()));
                    }
                }
            }
        } else {
            let Some(p) = s.probes.get(i) else { continue };
            let what = format!("{}:{}: probes[{i}]", s.file.display(), p.line);
            mnemo.push(probe_mnemo(&runtime, p).await.map_err(|e| cx.fail(what.clone(), e))?);
            let query = embed(&engine, &p.query).await.map_err(|e| cx.fail(what, e))?;
            let turns: Vec<&ChatTurn> = transcript.iter().filter(|t| t.namespace == p.namespace).collect();
            for b in Baseline::ALL.into_iter().filter(|_| baselines) {
                let got = retrieve(b, &turns, &query, budget);
                base.entry(b).or_default().push(probe_baseline(p, &got));
            }
        }
    }

    let mut memories: Vec<Memory> = Vec::new();
    for ns in &namespaces {
        memories.extend(engine.all_memories(ns).await.map_err(|e| cx.fail(format!("listing memories of {ns}"), e))?);
    }
    let mut systems = vec![mnemo_outcome(s, mnemo, &memories)];
    for b in Baseline::ALL.into_iter().filter(|_| baselines) {
        systems.push(baseline_outcome(s, b, base.remove(&b).unwrap_or_default(), &transcript));
    }
    Ok(ScenarioRun {
        scenario: s.name.clone(),
        file: s.file.display().to_string(),
        config: config_name.to_string(),
        config_hash: cfg.hash(),
        systems,
        echoed_models: echoed.into_iter().collect(),
    })
}

async fn embed(engine: &Engine, text: &str) -> mnemo_contract::Result<Vec<f32>> {
    Ok(engine.embed(&[text.to_string()]).await?.into_iter().next().unwrap_or_default())
}

async fn probe_mnemo(runtime: &Runtime, p: &Probe) -> std::result::Result<ProbeOutcome, String> {
    let task = Task { query: p.query.clone(), about: p.about.clone() };
    let mut turn = runtime.turn(&p.namespace, &task, &RecallOptions::default()).await.map_err(|e| e.to_string())?;
    // The full agent turn: on ACT, plan from the assessed pack and check the plan (a refused
    // plan escalates, and the decision is scored as made).
    runtime.plan_turn(&p.namespace, &task, &mut turn).await;
    let pack = &turn.assessment.pack;
    let source = p.about.as_ref().and_then(|(e, a)| answer_of(pack, e, a));
    let answer = source.and_then(|m| m.claim.as_ref()).map(|c| c.value.clone());
    let texts: Vec<&str> = pack.memories().map(|m| m.content.as_str()).collect();
    let mut score = score_probe(p, answer.as_deref(), &texts);
    score_decision(p, &mut score, turn.assessment.decision == mnemo_contract::Decision::Act);
    score.plan_faithful = turn.plan.as_ref().map(|c| c.faithful);
    if let Some(want) = &p.plan_uses {
        let used = turn.plan.as_ref().filter(|c| c.faithful).is_some_and(|c| {
            c.plan.uses.iter().any(|u| u.value.as_deref().is_some_and(|v| crate::metrics::same_value(v, want)))
        });
        if !used {
            score.wrong_decision = true;
            score.correct = false;
        }
    }
    let (evidence, pack_list) = if score.correct {
        (Evidence::None, vec![])
    } else {
        let evidence = match source {
            Some(m) => {
                let why = runtime.engine().why(&p.namespace, m.id).await.map_err(|e| e.to_string())?;
                let history = why.events.iter().map(|e| format!("{} {} {}", e.at, e.event, e.detail)).collect();
                Evidence::Memory { id: m.id.0, content: m.content.clone(), history }
            }
            None => Evidence::None,
        };
        let list = pack.memories().map(|m| format!("memory {} [{}] {:?}", m.id, m.kind, m.content)).collect();
        (evidence, list)
    };
    Ok(ProbeOutcome { probe: p.clone(), score, evidence, pack: pack_list })
}

fn probe_baseline(p: &Probe, got: &[&ChatTurn]) -> ProbeOutcome {
    let texts: Vec<&str> = got.iter().map(|t| t.text.as_str()).collect();
    let found = p.about.as_ref().and_then(|(e, a)| ranked_turns_answer(&texts, e, a));
    let mut score = score_probe(p, found.as_ref().map(|f| f.1.as_str()), &texts);
    // A baseline has no gate: it answers from whatever it retrieved, which is acting on it.
    score_decision(p, &mut score, true);
    let evidence = match (&found, score.correct) {
        (Some((rank, _)), false) => match got.get(*rank) {
            Some(t) => Evidence::Turn { rank: *rank, at: t.at.to_rfc3339(), text: t.text.clone() },
            None => Evidence::None,
        },
        _ => Evidence::None,
    };
    ProbeOutcome { probe: p.clone(), score, evidence, pack: vec![] }
}

fn status_text(m: &Memory) -> String {
    match &m.status {
        Status::Active => "active".to_string(),
        Status::Tombstoned { reason, .. } => format!("tombstoned: {reason}"),
    }
}

fn mnemo_outcome(s: &Scenario, probes: Vec<ProbeOutcome>, memories: &[Memory]) -> SystemOutcome {
    let describe = |m: &Memory| format!("memory {} {:?} ({})", m.id, m.content, status_text(m));
    let mut matchers = Vec::new();
    for (list, ms, want_active) in [("forgotten", &s.expect.forgotten, false), ("kept", &s.expect.kept, true)] {
        for matcher in ms {
            let hits: Vec<&Memory> = memories.iter().filter(|m| matcher.matches(m)).collect();
            let met = hits.iter().any(|m| m.status.is_active() == want_active)
                && !matches!(matcher.count, Some(n) if n != hits.len());
            matchers.push(MatcherOutcome {
                list,
                matcher: matcher.describe(),
                met,
                matched: hits.iter().map(|m| describe(m)).collect(),
            });
        }
    }
    let tombstoned: Vec<&Memory> = memories.iter().filter(|m| !m.status.is_active()).collect();
    let collateral =
        tombstoned.iter().filter(|m| !s.expect.forgotten.iter().any(|f| f.matches(m))).map(|m| describe(m)).collect();
    SystemOutcome::new(MNEMO, probes, matchers, tombstoned.len(), collateral)
}

/// Baselines tombstone nothing: every `forgotten` matcher is unmet (precision is 1.0 by
/// definition); a `kept` matcher is met by any tagged line of a turn in the history, all of
/// which stay "active".
fn baseline_outcome(s: &Scenario, b: Baseline, probes: Vec<ProbeOutcome>, transcript: &[ChatTurn]) -> SystemOutcome {
    let kept_hits = |m: &Matcher| -> Vec<String> {
        let mut out = Vec::new();
        for t in transcript {
            for c in grammar::parse(&t.text).candidates() {
                if m.matches_parts(&t.namespace, c.claim.as_ref(), &c.content, None) {
                    out.push(format!("turn at {} {:?} (never forgotten)", t.at, c.content));
                }
            }
        }
        out
    };
    let mut matchers = Vec::new();
    for m in &s.expect.forgotten {
        matchers.push(MatcherOutcome {
            list: "forgotten",
            matcher: m.describe(),
            met: false,
            matched: vec!["baselines tombstone nothing".into()],
        });
    }
    for m in &s.expect.kept {
        let hits = kept_hits(m);
        let met = !hits.is_empty() && !matches!(m.count, Some(n) if n != hits.len());
        matchers.push(MatcherOutcome { list: "kept", matcher: m.describe(), met, matched: hits });
    }
    SystemOutcome::new(b.as_str(), probes, matchers, 0, vec![])
}
