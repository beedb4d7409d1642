//! Running one case: the pack as written, one grounder per world source (failing as the case
//! says), the configured assessor, and its corrections applied in memory in place of the engine.
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mnemo_agent::runtime::answer_of;
use mnemo_agent::Config;
use mnemo_contract::registry::{self, AssessorContext, Section};
use mnemo_contract::text::norm_name;
use mnemo_contract::*;
use mnemo_grounders::TableGrounder;

use super::case::{Case, FaultKind};
use crate::error::{EvalError, Result};
use crate::metrics::same_value;

/// What the assessor did with one case.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CaseOutcome {
    /// The case's name.
    pub name: String,
    /// Its domain.
    pub domain: Option<String>,
    /// Decisive or ladder.
    pub decisive: bool,
    /// The ladder.
    pub ladder: Option<String>,
    /// The label.
    pub should_act: bool,
    /// Pack trust.
    pub trust: f64,
    /// The value the agent would act on (the probe's answer in the final pack).
    pub answer: Option<String>,
    /// That value was confirmed or substituted by a grounder in this assessment.
    pub answer_grounded: bool,
    /// The world's current value of the probed claim, if a source holds it.
    pub world_value: Option<String>,
    /// The assessor's own decision at the configured threshold.
    pub acted: bool,
    /// The configured threshold.
    pub threshold: f64,
    /// Why it escalated, if it did.
    pub reasons: Vec<String>,
    /// On ACT: the offline planner's plan from the assessed pack passed the agent's
    /// faithfulness check (None: not planned, the case escalated).
    pub plan_faithful: Option<bool>,
    /// Who planned (`client:model` as echoed), when planned.
    pub plan_model: Option<String>,
    /// Why the plan was refused (or the plan step failed).
    pub plan_refused: Vec<String>,
}

impl CaseOutcome {
    /// Whether the agent acts at threshold `t`: the probe is answered and pack trust ≥ t (the
    /// grounding assessor's rule; `check_sweepable` verifies it at the configured threshold).
    pub fn acts_at(&self, t: f64) -> bool {
        self.answer.is_some() && self.trust >= t
    }
}

/// A source that fails as the case says.
struct Faulty {
    source: String,
    kind: FaultKind,
}

#[async_trait]
impl Grounder for Faulty {
    fn source(&self) -> &str {
        &self.source
    }
    async fn lookup(&self, entity: &str, attribute: &str) -> mnemo_contract::Result<Option<GroundedValue>> {
        match self.kind {
            FaultKind::Down => {
                let message = format!("{}: connection refused (simulated outage)", self.source);
                Err(CoreError::grounder_message(GrounderErrorKind::Unavailable, message))
            }
            FaultKind::Slow => {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok(None)
            }
            FaultKind::Garbage => Ok(Some(GroundedValue {
                value: format!("<html><body>502 Bad Gateway\n{entity} {attribute}</body></html>"),
                source: self.source.clone(),
                as_of: None,
            })),
        }
    }
    fn timeout(&self) -> Option<Duration> {
        // a slow source is configured with a short timeout, as a real one would be
        (self.kind == FaultKind::Slow).then_some(Duration::from_millis(50))
    }
}

/// Stands in for the engine: applies an assessment's corrections to the pack's memories in
/// memory only (fresh memories numbered from 1001), as the engine would write them.
fn apply_in_memory(a: &Assessment, now: Timestamp) -> Vec<Memory> {
    let mut next = 1000;
    a.corrections
        .iter()
        .filter_map(|c| {
            let stale = a.pack.items.iter().map(|i| &*i.memory).find(|m| m.id == c.memory())?;
            let mut m = stale.clone();
            match c {
                Correction::Supersede { value, source, .. } => {
                    next += 1;
                    m.id = MemoryId(next);
                    if let Some(cl) = &stale.claim {
                        m.claim = Some(Claim::new(&cl.entity, &cl.attribute, value));
                        m.content = format!("{} | {} | {}", cl.entity, cl.attribute, value);
                    }
                    m.sources = vec![source.clone()];
                    m.reinforcements = 0;
                    m.created_at = now;
                }
                Correction::Confirm { source, .. } => {
                    if !m.sources.iter().any(|s| s == source) {
                        m.sources.push(source.clone());
                    }
                }
            }
            m.last_confirmed_at = now;
            Some(m)
        })
        .collect()
}

fn memory_of(case: &Case, i: usize, cm: &super::case::CaseMemory) -> Memory {
    let at = case.now.plus_millis(-cm.confirmed_ms);
    let claim = cm.claim.as_ref().map(|(e, a, v)| Claim::new(e, a, v));
    Memory {
        validity: Default::default(),
        id: MemoryId(i as i64 + 1),
        namespace: Namespace::default(),
        kind: cm.kind,
        content: cm.text.clone(),
        entities: claim.iter().map(|c| c.entity.clone()).collect(),
        claim,
        importance: cm.importance,
        reinforcements: cm.restated,
        sources: (1..=cm.sources).map(|n| if n == 1 { "user".to_string() } else { format!("source-{n}") }).collect(),
        provenance: Provenance { turns: vec![], client: ClientKind::Rules, model: "case-file".into() },
        created_at: at,
        last_confirmed_at: at,
        last_accessed_at: None,
        pinned: cm.pinned,
        embedding: None,
        status: Status::Active,
        rev: 1,
    }
}

fn pack_of(case: &Case) -> Pack {
    let mut pack = Pack { budget: 1024, ..Pack::default() };
    for (i, cm) in case.memories.iter().enumerate() {
        let m = memory_of(case, i, cm);
        let tokens = m.content.len().div_ceil(4);
        pack.trace.push(TraceEntry {
            id: m.id,
            kind: m.kind,
            pinned: m.pinned,
            relevance: cm.relevance,
            // The case states relevance in absolute terms: the lexical evidence carries it.
            evidence: Some(mnemo_contract::RelevanceEvidence::new(cm.relevance, None, false)),
            salience: 1.0,
            score: cm.relevance,
            tokens,
            included: true,
            reason: if m.pinned { TraceReason::Pinned } else { TraceReason::WithinQuota },
            detail: "from the case file".into(),
        });
        pack.used += tokens;
        pack.items.push(PackItem { memory: std::sync::Arc::new(m), score: cm.relevance, tokens });
    }
    pack
}

/// The grounders of a case: one per source named by `world` or `faults`, in name order; a
/// failing source holds nothing.
fn grounders_of(case: &Case) -> Vec<Arc<dyn Grounder>> {
    let failing = |s: &str| case.faults.iter().any(|f| f.source == s);
    let mut tables: BTreeMap<String, TableGrounder> = BTreeMap::new();
    for w in case.world.iter().filter(|w| !failing(&w.source)) {
        tables.entry(w.source.clone()).or_insert_with(|| TableGrounder::new(&w.source)).set(
            &w.entity,
            &w.attribute,
            &w.value,
        );
    }
    let mut by_source: BTreeMap<String, Arc<dyn Grounder>> =
        tables.into_iter().map(|(s, t)| (s, Arc::new(t) as Arc<dyn Grounder>)).collect();
    for f in &case.faults {
        by_source.insert(f.source.clone(), Arc::new(Faulty { source: f.source.clone(), kind: f.kind }));
    }
    by_source.into_values().collect()
}

/// Build the configured assessor over `grounders`.
fn assessor(config: &Config, grounders: Vec<Arc<dyn Grounder>>) -> Result<Arc<dyn Assessor>> {
    let (kind, settings, origin) = config.plugin("assessor").map_err(|e| EvalError::Config(e.to_string()))?;
    let dir = std::path::Path::new(".");
    let section = Section { settings: &settings, origin: &origin, data_dir: dir, config_dir: dir };
    let ctx = AssessorContext { section, grounders };
    registry::build_assessor(&kind, &ctx).map_err(|e| EvalError::Config(e.to_string()))
}

/// Assess one case under `config`.
pub async fn run_case(
    case: &Case,
    config: &Config,
    planner: Option<&dyn mnemo_contract::Reasoner>,
) -> Result<CaseOutcome> {
    let fail = |e: String| EvalError::Run { scenario: case.name.clone(), config: config.name(), message: e };
    let a = assessor(config, grounders_of(case))?;
    let (e, at) = &case.probe;
    let task = Task { query: case.query.clone(), about: Some((e.clone(), at.clone())) };
    let assessment = a.assess(&task, pack_of(case), case.now).await.map_err(|e| fail(e.to_string()))?;
    assessment.check_corrections().map_err(|e| fail(e.to_string()))?;
    let applied = apply_in_memory(&assessment, case.now);
    let assessment = assessment.settle(applied).map_err(|e| fail(e.to_string()))?;
    let answer = answer_of(&assessment.pack, e, at).and_then(|m| m.claim.as_ref()).map(|c| c.value.clone());
    let key = (norm_name(e), norm_name(at));
    let answer_grounded = answer.as_ref().is_some_and(|v| {
        assessment.lookups.iter().any(|l| {
            (norm_name(&l.entity), norm_name(&l.attribute)) == key
                && matches!(&l.outcome, LookupOutcome::Held { value } if same_value(value, v))
        })
    });
    let world_value =
        case.world.iter().find(|w| (norm_name(&w.entity), norm_name(&w.attribute)) == key).map(|w| w.value.clone());
    let (acted, reasons) = match &assessment.decision {
        Decision::Act => (true, vec![]),
        Decision::Escalate { reasons } => (false, reasons.clone()),
    };
    // The full agent turn plans on ACT: the offline planner (what the fake model answers) from
    // the assessed pack, then the check the agent runs before acting.
    let (mut plan_faithful, mut plan_model, mut plan_refused) = (None, None, Vec::new());
    if acted {
        let lines = mnemo_agent::plan_check::lines_of(&assessment);
        let verdict = mnemo_agent::verdict::verdict(&task, &assessment);
        let plan = match planner {
            Some(r) => r.plan(&task, &lines).await,
            None => Ok(mnemo_contract::plan::deterministic(&task, &lines).by(mnemo_contract::ModelInfo {
                client: mnemo_contract::ClientKind::Fake,
                model: "offline planner".into(),
            })),
        };
        match plan {
            Ok(plan) => {
                plan_model = Some(format!("{}:{}", plan.model.client.as_str(), plan.model.model));
                let checked = mnemo_agent::plan_check::check(plan, &task, &lines, &assessment, &verdict);
                plan_faithful = Some(checked.faithful);
                plan_refused = checked.refused;
            }
            Err(e) => {
                plan_faithful = Some(false);
                plan_refused = vec![format!("the plan step failed: {e}")];
            }
        }
    }
    Ok(CaseOutcome {
        name: case.name.clone(),
        domain: case.domain.clone(),
        decisive: case.decisive,
        ladder: case.ladder.clone(),
        should_act: case.should_act,
        trust: assessment.trust,
        answer,
        answer_grounded,
        world_value,
        acted,
        threshold: assessment.threshold,
        reasons,
        plan_faithful,
        plan_model,
        plan_refused,
    })
}

/// The sweep recomputes decisions from pack trust; check that this rule reproduces the
/// assessor's own decision at its threshold for every case (it does for `grounding` and
/// `provenance`; another assessor may decide otherwise, and then no sweep is reported).
pub fn check_sweepable(outcomes: &[CaseOutcome]) -> Result<()> {
    for o in outcomes {
        if o.acts_at(o.threshold) != o.acted {
            return Err(EvalError::Config(format!(
                "case {:?}: the assessor's decision does not follow `answered and trust ≥ threshold`; the threshold sweep cannot be computed for it",
                o.name
            )));
        }
    }
    Ok(())
}
