//! The assessor: grounding first, provenance for the rest, pack trust = min over load-bearing.
//! What grounding found is returned as corrections (supersede a stale value, confirm a held
//! one); the runtime applies them.
use async_trait::async_trait;
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

use mnemo_contract::registry::AssessorContext;
use mnemo_contract::*;

use super::lookup::ground_all;
use super::poison::{memory_instruction_shape, SupersessionLimit};
use super::provenance::{human_source, human_trust, provenance_trust};

/// `[assessor]` settings.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AssessorSettings {
    /// Pack trust below this escalates.
    pub threshold: f64,
    /// Provenance freshness half-life in days.
    pub confirm_half_life_days: f64,
    /// Memories at or above this importance are load-bearing when relevant enough.
    pub load_bearing_importance: f64,
    /// A memory is relevant to the task when its **absolute** relevance (the recall trace's
    /// `evidence.absolute`: query-term coverage, calibrated dense similarity, a named entity;
    /// see `mnemo_contract::relevance`) is at or above this. Only a relevant memory (or the task's
    /// claim) is load-bearing, and a task naming no claim on which nothing recalled is relevant
    /// escalates: memory holds nothing on it. Default chosen on the LoCoMo and LongMemEval
    /// development splits (`mnemo bench answerability`, bench/RESULTS.md).
    pub relevance_floor: f64,
    /// How long a grounder lookup may take when the grounder sets no timeout of its own.
    pub grounder_timeout_ms: u64,
    /// Quarantine instruction-shaped memories: graded trust 0, load-bearing when relevant, so
    /// the turn escalates instead of acting on them (`super::poison`, docs/poisoning.md).
    pub quarantine_instructions: bool,
    /// The supersessions in a row by one principal, within `supersession_window_hours`, that
    /// hold its value as unconfirmed (0: off). Applied by the runtime, which reads the claim's
    /// history (`super::poison::SupersessionLimit`).
    pub supersession_limit: u32,
    /// The window of `supersession_limit`, in hours.
    pub supersession_window_hours: f64,
    /// Hold as unconfirmed a value that replaced an authority's (a declared source, a
    /// grounder's source, a human's answer) on one other voice. Applied by the runtime
    /// (`super::poison::AuthorityGuard`).
    pub protect_authoritative_values: bool,
}

impl Default for AssessorSettings {
    fn default() -> Self {
        AssessorSettings {
            threshold: 0.55,
            confirm_half_life_days: 180.0,
            load_bearing_importance: 0.5,
            relevance_floor: 0.5,
            grounder_timeout_ms: 2000,
            quarantine_instructions: true,
            supersession_limit: 0,
            supersession_window_hours: 24.0,
            protect_authoritative_values: false,
        }
    }
}

impl AssessorSettings {
    fn validate(&self, origin: &str) -> Result<()> {
        if !(0.0..=1.0).contains(&self.threshold) {
            return Err(CoreError::Config(format!("{origin}: threshold must be within 0..=1")));
        }
        if !(self.confirm_half_life_days.is_finite() && self.confirm_half_life_days > 0.0) {
            return Err(CoreError::Config(format!("{origin}: confirm_half_life_days must be positive")));
        }
        if !(0.0..=1.0).contains(&self.load_bearing_importance) {
            return Err(CoreError::Config(format!("{origin}: load_bearing_importance must be within 0..=1")));
        }
        if !(0.0..=1.0).contains(&self.relevance_floor) {
            return Err(CoreError::Config(format!("{origin}: relevance_floor must be within 0..=1")));
        }
        if self.grounder_timeout_ms == 0 {
            return Err(CoreError::Config(format!("{origin}: grounder_timeout_ms must be at least 1")));
        }
        if !(self.supersession_window_hours.is_finite() && self.supersession_window_hours > 0.0) {
            return Err(CoreError::Config(format!("{origin}: supersession_window_hours must be positive")));
        }
        Ok(())
    }

    /// The supersession limit these settings ask for.
    pub fn supersession(&self) -> SupersessionLimit {
        SupersessionLimit { limit: self.supersession_limit, window_hours: self.supersession_window_hours }
    }
}

/// Re-grounds verifiable claims, scores the rest from provenance, gates on the threshold.
pub struct GroundingAssessor {
    settings: AssessorSettings,
    grounders: Vec<Arc<dyn Grounder>>,
}

impl GroundingAssessor {
    /// An assessor over these grounders (none: provenance only).
    pub fn new(settings: AssessorSettings, grounders: Vec<Arc<dyn Grounder>>) -> Self {
        GroundingAssessor { settings, grounders }
    }
    /// Its settings.
    pub fn settings(&self) -> &AssessorSettings {
        &self.settings
    }
}

#[async_trait]
impl Assessor for GroundingAssessor {
    async fn assess(&self, task: &Task, pack: Pack, now: Timestamp) -> Result<Assessment> {
        let claims: Vec<(MemoryId, String, String)> = pack
            .items
            .iter()
            .filter_map(|i| i.memory.claim.as_ref().map(|c| (i.memory.id, c.entity.clone(), c.attribute.clone())))
            .collect();
        let timeout = Duration::from_millis(self.settings.grounder_timeout_ms);
        // A pack of a past time (as-of recall) is graded as of then: a system of record
        // answers for now, so it is not asked (each claim's basis says so).
        let grounders: &[Arc<dyn Grounder>] = if pack.as_of.is_some() { &[] } else { &self.grounders };
        let (grounded, lookups) = ground_all(grounders, &claims, timeout).await;
        let mut grounded = grounded.into_iter();
        // Absolute relevance of each packed memory to the query, from the recall trace's
        // evidence (0 where it has none: a pack built without recall's evidence).
        let relevance_of: std::collections::HashMap<MemoryId, f64> =
            pack.trace.iter().map(|t| (t.id, t.evidence.map_or(0.0, |e| e.absolute))).collect();
        // A task that names no claim is taken to be about the claim its query names, if any.
        let inferred_about = match &task.about {
            Some(_) => None,
            None => infer_about(&task.query, &pack),
        };
        let about = task.about.as_ref().or(inferred_about.as_ref());
        let mut grades = Vec::new();
        let mut corrections = Vec::new();
        let mut any_relevant = false;
        let floor = self.settings.relevance_floor;
        for item in pack.items.iter() {
            let m = &item.memory;
            let about_task = match (about, &m.claim) {
                (Some((e, a)), Some(c)) => c.is_on(e, a),
                _ => false,
            };
            let found = if m.claim.is_some() { grounded.next().unwrap_or_default() } else { Default::default() };
            let verifiable = found.held.is_some();
            let relevance = relevance_of.get(&m.id).copied().unwrap_or(0.0);
            let importance = f64::from(m.importance);
            let important = importance >= self.settings.load_bearing_importance;
            let relevant = relevance >= floor;
            any_relevant |= relevant;
            // An instruction-shaped memory is never acted on: when it bears on the task it
            // escalates, saying what it matched (a system of record holding it still decides).
            let quarantined =
                if self.settings.quarantine_instructions && !verifiable { memory_instruction_shape(m) } else { None };
            let load_bearing = about_task || (relevant && (verifiable || important || quarantined.is_some()));
            let (trust, basis) = match (found.held, &m.claim) {
                (Some(g), Some(c)) if c.same_value(&g.value) => {
                    corrections.push(Correction::Confirm { memory: m.id, source: g.source.clone() });
                    (1.0, format!("verifiable: {} confirms {:?}", g.source, g.value))
                }
                (Some(g), Some(c)) => {
                    let old = c.value.clone();
                    corrections.push(Correction::Supersede {
                        memory: m.id,
                        value: g.value.clone(),
                        source: g.source.clone(),
                    });
                    (1.0, format!("verifiable: {} holds {:?}, memory said {:?}: substituted", g.source, g.value, old))
                }
                _ if quarantined.is_some() => (
                    0.0,
                    format!(
                        "quarantined: its text is instruction-shaped ({:?}); stored, never acted on",
                        quarantined.as_deref().unwrap_or_default()
                    ),
                ),
                // A human's word (an answer to an escalation) no grounder decided: verified
                // while fresh, ageing like any confirmation (docs/assessor.md).
                (None, Some(_)) if human_source(m).is_some() => {
                    let who = human_source(m).unwrap_or_default();
                    let t = human_trust(m, now, self.settings.confirm_half_life_days);
                    let unverified = if found.faults.is_empty() {
                        String::new()
                    } else {
                        let f: Vec<String> = found.faults.iter().map(|(s, w)| format!("{s} {w}")).collect();
                        format!("unverified by a system of record this recall ({}); ", f.join("; "))
                    };
                    (
                        t,
                        format!(
                            "{unverified}human: confirmed by {who} {:.0} days ago (a human's word counts as verified \
                             until it ages: freshness {t:.2})",
                            now.days_since(m.last_confirmed_at).max(0.0)
                        ),
                    )
                }
                _ => {
                    let t = provenance_trust(m, now, self.settings.confirm_half_life_days);
                    // The claim the task is about, which its system of record failed to check
                    // this time, rests on one voice only: not enough to act on (a corroborated
                    // one keeps its provenance trust).
                    let uncheckable = about_task && !found.faults.is_empty() && m.sources.len() < 2;
                    let t = if uncheckable { 0.0 } else { t };
                    let unverified = if found.faults.is_empty() {
                        String::new()
                    } else if uncheckable {
                        let f: Vec<String> = found.faults.iter().map(|(s, w)| format!("{s} {w}")).collect();
                        format!("unverified this recall ({}) and single-source: trust 0; ", f.join("; "))
                    } else {
                        let f: Vec<String> = found.faults.iter().map(|(s, w)| format!("{s} {w}")).collect();
                        format!("unverified this recall ({}); ", f.join("; "))
                    };
                    (
                        t,
                        format!(
                            "{unverified}provenance: {} source(s), {} restatement(s), confirmed {:.0} days ago",
                            m.sources.len(),
                            m.reinforcements,
                            now.days_since(m.last_confirmed_at).max(0.0)
                        ),
                    )
                }
            };
            let basis = match pack.as_of {
                Some(t) if m.claim.is_some() && !self.grounders.is_empty() => {
                    format!("as of {t}, not re-grounded (a system of record answers for now); {basis}")
                }
                _ => basis,
            };
            let basis = if load_bearing {
                basis
            } else if !relevant {
                format!("{basis}; colour: relevance {relevance:.2} < floor {:.2}", self.settings.relevance_floor)
            } else {
                format!("{basis}; colour: importance {importance:.2} < {:.2}", self.settings.load_bearing_importance)
            };
            grades.push(MemoryGrade { id: m.id, trust, load_bearing, basis });
        }
        let bearing: Vec<&MemoryGrade> = grades.iter().filter(|g| g.load_bearing).collect();
        let trust = bearing.iter().map(|g| g.trust).fold(f64::INFINITY, f64::min);
        let mut reasons = Vec::new();
        let trust = if bearing.is_empty() {
            if about.is_none() && !any_relevant {
                reasons.push(format!(
                    "memory holds nothing on this task: no recalled memory is relevant to it \
                     (absolute relevance below the floor {:.2})",
                    self.settings.relevance_floor
                ));
            } else {
                reasons.push("no load-bearing memory was recalled".to_string());
            }
            0.0
        } else {
            trust
        };
        // A task naming no claim that uses a name no recalled memory mentions is about someone
        // (or something) memory holds nothing on, however well the rest of the query matches.
        if about.is_none() {
            let unknown: Vec<String> = mnemo_contract::relevance::query_names(&task.query)
                .into_iter()
                .filter(|n| !pack.items.iter().any(|i| mentions_name(&i.memory, n)))
                .collect();
            if !unknown.is_empty() {
                let said = reasons.iter().any(|r| r.starts_with("memory holds nothing on this task"));
                let lead = if said { "" } else { "memory holds nothing on this task: " };
                reasons.push(format!("{lead}no recalled memory mentions {}", unknown.join(", ")));
            }
        }
        if let Some((e, a)) = about {
            let answered = pack.items.iter().any(|i| i.memory.claim.as_ref().is_some_and(|c| c.is_on(e, a)));
            if !answered {
                reasons.push(format!("nothing recalled asserts {e} | {a}"));
            }
        }
        let decision = if trust >= self.settings.threshold && reasons.is_empty() {
            Decision::Act
        } else {
            for g in bearing.iter().filter(|g| g.trust < self.settings.threshold) {
                reasons.push(format!(
                    "memory {} trust {:.2} < {:.2} ({})",
                    g.id, g.trust, self.settings.threshold, g.basis
                ));
            }
            Decision::Escalate { reasons }
        };
        Ok(Assessment {
            pack,
            trust,
            threshold: self.settings.threshold,
            decision,
            grades,
            substitutions: Vec::new(),
            lookups,
            corrections,
            inferred_about,
        })
    }
}

/// Whether a memory mentions `name` in its text, entities or claim.
fn mentions_name(m: &Memory, name: &str) -> bool {
    use mnemo_contract::relevance::mentions;
    mentions(&m.content, name)
        || m.entities.iter().any(|e| mentions(e, name))
        || m.claim.as_ref().is_some_and(|c| mentions(&c.entity, name) || mentions(&c.value, name))
}

/// The claim `(entity, attribute)` a query names, among the packed memories' claims (in pack
/// order): the query names the entity as whole words and holds every content term of the
/// attribute (stemmed; a term also meets a longer or shorter form of itself, "own" /
/// "ownership"). "Who owns Northwind Labs?" names `Northwind Labs | owner`.
fn infer_about(query: &str, pack: &Pack) -> Option<(String, String)> {
    let q = mnemo_contract::relevance::QueryTerms::of(query);
    let meets = |t: &String| {
        q.terms().iter().any(|w| {
            let (short, long) = if w.len() <= t.len() { (w, t) } else { (t, w) };
            w == t || (short.len() >= 3 && long.starts_with(short.as_str()))
        })
    };
    pack.items.iter().filter_map(|i| i.memory.claim.as_ref()).find_map(|c| {
        let attribute = mnemo_contract::relevance::content_terms(&c.attribute);
        (!attribute.is_empty() && q.names(&c.entity) && attribute.iter().all(meets))
            .then(|| (c.entity.clone(), c.attribute.clone()))
    })
}

fn build_grounding(ctx: &AssessorContext<'_>) -> Result<Arc<dyn Assessor>> {
    let s: AssessorSettings = ctx.settings()?;
    s.validate(ctx.origin)?;
    Ok(Arc::new(GroundingAssessor::new(s, ctx.grounders.clone())))
}

fn build_provenance(ctx: &AssessorContext<'_>) -> Result<Arc<dyn Assessor>> {
    let s: AssessorSettings = ctx.settings()?;
    s.validate(ctx.origin)?;
    Ok(Arc::new(GroundingAssessor::new(s, Vec::new())))
}

mnemo_contract::register_assessor!(
    "grounding",
    "re-grounds verifiable claims through the grounders, scores the rest from provenance",
    build_grounding
);
mnemo_contract::register_assessor!("provenance", "scores every memory from provenance only", build_provenance);
