//! Escalations: records with a life. An agent turn whose decision is ESCALATE records an
//! escalation (or reuses the open one on the same task) in the data directory's ledger and
//! sends it to the configured sinks; a human then answers it — the answer is recorded as a
//! turn from the principal `human:NAME`, extracted like any turn, and a claim it states has
//! the highest standing in the assessor while it is fresh (docs/assessor.md, "A human's
//! answer") — or dismisses it (nothing is recorded).
//!
//! - [`record`]: the record (`e3`, per namespace, never reused) and its states.
//! - [`ledger`]: `escalations.json`, replaced atomically under a file lock.
//! - [`sinks`]: `[[escalation.sinks]]`: a signed webhook with retries, a JSON-lines file.
//! - [`answer`]: how an answer becomes the turn recorded (a value alone works offline).
//!
//! The door-neutral API is on [`Runtime`]: [`Runtime::escalations`], [`Runtime::escalation`],
//! [`Runtime::answer_escalation`], [`Runtime::dismiss_escalation`],
//! [`Runtime::redeliver_escalation`]; `AgentTurn::escalation` says what a turn did.
pub mod answer;
pub mod ledger;
pub mod record;
pub mod sinks;

use std::path::Path;

use serde::{Deserialize, Serialize};

use mnemo_contract::{Assessment, ClientKind, CoreError, Namespace, Task, Timestamp};
use mnemo_core::engine::RememberReport;

use crate::assess::HUMAN_PRINCIPAL_PREFIX;
use crate::config::Config;
use crate::error::AgentError;
use crate::runtime::Runtime;
use crate::verdict::Verdict;

pub use answer::{compose, value_of, Composed};
pub use ledger::{Ledger, LEDGER_FILE};
pub use record::{
    AnswerForm, BadEscalationId, Delivery, Escalation, EscalationAnswer, EscalationClaim, EscalationDismissal,
    EscalationId, EscalationStatus, TurnEscalation,
};
pub use sinks::{sign, verify, EscalationSettings, Sink, SinkSettings, ESCALATION_HEADER, SIGNATURE_HEADER};

/// Most characters of the name an answer or a dismissal is given by.
pub const MAX_NAME_CHARS: usize = 64;

/// What a runtime holds for escalations: the ledger, the sinks, the settings.
#[derive(Debug)]
pub struct Escalations {
    ledger: Ledger,
    sinks: Vec<Sink>,
    record: bool,
    /// One answer or dismissal at a time in this process (a look-up and its write never split).
    closing: tokio::sync::Mutex<()>,
}

impl Escalations {
    /// From the config's `[escalation]` section, over `data_dir`.
    pub fn build(config: &Config, data_dir: &Path) -> Result<Self, AgentError> {
        let settings = config.escalation()?;
        let sinks = Sink::build_all(&settings, &config.section_dir(crate::config::ESCALATION))?;
        Ok(Escalations { ledger: Ledger::new(data_dir), sinks, record: settings.record, closing: Default::default() })
    }

    /// The ledger.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The sinks, in config order.
    pub fn sinks(&self) -> &[Sink] {
        &self.sinks
    }
}

/// An answered escalation: the record, and the turn its answer was recorded as.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AnsweredEscalation {
    /// The escalation, now answered.
    pub escalation: Escalation,
    /// What recording the answer did (None: recorded but not extracted; `notes` says so).
    pub remembered: Option<RememberReport>,
    /// What to know: an answer kept as prose, a turn not extracted, an answer found recorded.
    pub notes: Vec<String>,
}

/// The principal a human's name is recorded as: `human:NAME` (a name given as `human:NAME`
/// is taken as it is).
pub fn human_principal(by: &str) -> Result<String, AgentError> {
    let name = by.trim();
    let name = name.strip_prefix(HUMAN_PRINCIPAL_PREFIX).unwrap_or(name).trim();
    if name.is_empty() {
        return Err(invalid("the human's name (by) must not be empty: who answers or dismisses it?"));
    }
    if name.chars().count() > MAX_NAME_CHARS || name.chars().any(|c| c.is_control() || c == '|') {
        return Err(invalid(format!(
            "the human's name (by) {name:?} must be at most {MAX_NAME_CHARS} characters, with no line break or '|'"
        )));
    }
    Ok(format!("{HUMAN_PRINCIPAL_PREFIX}{name}"))
}

fn invalid(message: impl Into<String>) -> AgentError {
    AgentError::Core(CoreError::InvalidInput(message.into()))
}

/// An error unless `e` is open (`verb`: what was asked of it).
fn must_be_open(e: &Escalation, verb: &str) -> Result<(), AgentError> {
    match (&e.answer, &e.dismissal) {
        _ if e.is_open() => Ok(()),
        (Some(a), _) => Err(AgentError::EscalationClosed(format!(
            "escalation {} was already answered by {} at {} (recorded as turn {}): it cannot be {verb} again; \
             if the answer was wrong, tell memory the right value in a new turn",
            e.id, a.by, a.at, a.turn
        ))),
        (_, Some(d)) => Err(AgentError::EscalationClosed(format!(
            "escalation {} was dismissed by {} at {}: it cannot be {verb}; a new turn on the task escalates anew",
            e.id, d.by, d.at
        ))),
        _ => Err(AgentError::EscalationClosed(format!("escalation {} is {}: it cannot be {verb}", e.id, e.status))),
    }
}

/// Every string of `v` with `values` cut out ([`mnemo_contract::erase::redact`]); whether any was.
fn redact_strings(v: &mut serde_json::Value, values: &[String]) -> bool {
    match v {
        serde_json::Value::String(s) => match mnemo_contract::erase::redact(s, values) {
            Some(cut) => {
                *s = cut;
                true
            }
            None => false,
        },
        serde_json::Value::Array(a) => a.iter_mut().fold(false, |any, x| redact_strings(x, values) | any),
        serde_json::Value::Object(o) => o.values_mut().fold(false, |any, x| redact_strings(x, values) | any),
        _ => false,
    }
}

impl Runtime {
    /// Cut `values` (what an erasure took) out of every text the ledger keeps of `ns`'s
    /// escalations: their tasks, reasons and packs. Returns how many escalations changed.
    pub async fn redact_escalations(&self, ns: &Namespace, values: &[String]) -> Result<usize, AgentError> {
        if values.is_empty() {
            return Ok(0);
        }
        crate::blocking::blocking(|| {
            self.escalation_state().ledger.update(|file| {
                let mut changed = 0;
                for e in file.escalations.iter_mut().filter(|e| &e.namespace == ns) {
                    let mut v = serde_json::to_value(&*e).map_err(|err| AgentError::Config {
                        file: LEDGER_FILE.into(),
                        message: format!("escalation {} cannot be encoded: {err}", e.id),
                    })?;
                    if redact_strings(&mut v, values) {
                        *e = serde_json::from_value(v).map_err(|err| AgentError::Config {
                            file: LEDGER_FILE.into(),
                            message: format!("escalation {} cannot be read back after redaction: {err}", e.id),
                        })?;
                        changed += 1;
                    }
                }
                Ok(changed)
            })
        })
    }

    /// The escalations of `ns`, oldest first (`open_only`: those waiting for a human).
    pub async fn escalations(&self, ns: &Namespace, open_only: bool) -> Result<Vec<Escalation>, AgentError> {
        let file = crate::blocking::blocking(|| self.escalation_state().ledger.read())?;
        Ok(file.escalations.into_iter().filter(|e| &e.namespace == ns && (e.is_open() || !open_only)).collect())
    }

    /// One escalation of `ns`; not found names the ids the namespace holds.
    pub async fn escalation(&self, ns: &Namespace, id: EscalationId) -> Result<Escalation, AgentError> {
        let mut file = crate::blocking::blocking(|| self.escalation_state().ledger.read())?;
        file.find_mut(ns, id).map(|e| e.clone())
    }

    /// Answer the open escalation `id` of `ns` as the human `by` (a name; recorded as the
    /// principal `human:NAME`): the answer is recorded as a turn from that principal through
    /// the normal remember path (how it is read: [`answer`]), and the escalation is closed
    /// with the answer. An escalation already answered or dismissed, an empty text or name,
    /// an unknown id: an error, nothing recorded. An answer recorded but not extracted (the
    /// model failed) still closes it; the notes say so and `reextract` retries the turn.
    pub async fn answer_escalation(
        &self,
        ns: &Namespace,
        id: EscalationId,
        text: &str,
        by: &str,
    ) -> Result<AnsweredEscalation, AgentError> {
        let by = human_principal(by)?;
        if text.trim().is_empty() {
            return Err(invalid("the answer text must not be empty"));
        }
        let state = self.escalation_state();
        let _one = state.closing.lock().await;
        let e = self.escalation(ns, id).await?;
        must_be_open(&e, "answered")?;
        let composed = compose(&e, text).map_err(invalid)?;
        let external = e.answer_external_id();
        let mut notes = Vec::new();
        let engine = self.engine();
        let (turn, remembered) = match engine.turn_by_external_id(ns, &external).await? {
            // Recorded before, and the ledger's write after it lost (a crash): not twice.
            Some(t) if t.text == composed.text && t.source == by => {
                notes.push(format!(
                    "this answer was recorded as turn {} before (the escalation was not closed then): not recorded again",
                    t.id
                ));
                (t.id, Some(RememberReport::already_recorded(t, engine.reasoner_model())))
            }
            _ => match self.remember_turn(ns, &by, &composed.text, Some(external)).await {
                Ok(r) => (r.turn.id, Some(r)),
                Err(AgentError::Core(CoreError::Unextracted { turn, error })) => {
                    notes.push(format!(
                        "the answer was recorded as turn {turn} but not extracted ({error}); `reextract` retries it, \
                         and until then memory does not hold it"
                    ));
                    (turn, None)
                }
                Err(err) => return Err(err),
            },
        };
        if composed.form == AnswerForm::Prose {
            notes.push(prose_note(&e, engine.reasoner_model().client));
        }
        let answer = EscalationAnswer {
            text: text.trim().to_string(),
            by,
            at: engine.now(),
            turn,
            form: composed.form,
            value: composed.value,
            recorded: composed.text,
        };
        let escalation = crate::blocking::blocking(|| {
            state.ledger.update(|f| {
                let e = f.find_mut(ns, id)?;
                must_be_open(e, "answered")?;
                e.status = EscalationStatus::Answered;
                e.answer = Some(answer);
                Ok(e.clone())
            })
        })?;
        Ok(AnsweredEscalation { escalation, remembered, notes })
    }

    /// Dismiss the open escalation `id` of `ns` as the human `by`: it is closed and nothing is
    /// recorded in memory. Errors as for [`Runtime::answer_escalation`].
    pub async fn dismiss_escalation(
        &self,
        ns: &Namespace,
        id: EscalationId,
        by: &str,
    ) -> Result<Escalation, AgentError> {
        let by = human_principal(by)?;
        let state = self.escalation_state();
        let _one = state.closing.lock().await;
        let at = self.engine().now();
        crate::blocking::blocking(|| {
            state.ledger.update(|f| {
                let e = f.find_mut(ns, id)?;
                must_be_open(e, "dismissed")?;
                e.status = EscalationStatus::Dismissed;
                e.dismissal = Some(EscalationDismissal { by, at });
                Ok(e.clone())
            })
        })
    }

    /// Send the open escalation `id` of `ns` again to every sink that does not have it yet
    /// (a receiver that was down); returns it with its deliveries.
    pub async fn redeliver_escalation(&self, ns: &Namespace, id: EscalationId) -> Result<Escalation, AgentError> {
        let e = self.escalation(ns, id).await?;
        must_be_open(&e, "sent again")?;
        let sent = self.deliver(&e).await;
        self.keep_deliveries(ns, id, sent)
    }

    /// Record the escalation of an escalating turn (or reuse the open one on the same task),
    /// and send it to the sinks that do not have it. Never fails the turn: what could not be
    /// done is said in the note. None when recording is off (`[escalation] record = false`).
    pub(crate) async fn raise_escalation(
        &self,
        ns: &Namespace,
        task: &Task,
        assessment: &Assessment,
        verdict: &Verdict,
    ) -> Option<TurnEscalation> {
        let state = self.escalation_state();
        if !state.record {
            return None;
        }
        let now = self.engine().now();
        let claim = task
            .about
            .as_ref()
            .or(assessment.inferred_about.as_ref())
            .map(|(entity, attribute)| EscalationClaim { entity: entity.clone(), attribute: attribute.clone() });
        let opened = crate::blocking::blocking(|| {
            state.ledger.update(|f| {
                let fresh = |id| Escalation {
                    id,
                    namespace: ns.clone(),
                    task: Task { query: task.query.trim().to_string(), about: task.about.clone() },
                    claim: claim.clone(),
                    reasons: verdict.reasons.clone(),
                    trust: assessment.trust,
                    threshold: assessment.threshold,
                    pack: assessment.pack.memories().map(|m| m.id).collect(),
                    weak: verdict.weak.clone(),
                    created_at: now,
                    raised: 1,
                    last_raised_at: now,
                    status: EscalationStatus::Open,
                    answer: None,
                    dismissal: None,
                    deliveries: Vec::new(),
                };
                if let Some(e) = f.escalations.iter_mut().find(|e| e.is_open() && e.is_for(ns, task)) {
                    // What the human reads is the latest turn's: its reasons and its pack.
                    let latest = fresh(e.id);
                    e.raised += 1;
                    e.last_raised_at = now;
                    e.reasons = latest.reasons;
                    e.trust = latest.trust;
                    e.threshold = latest.threshold;
                    e.pack = latest.pack;
                    e.weak = latest.weak;
                    e.claim = latest.claim;
                    return Ok((e.clone(), true));
                }
                let id = f.next_id(ns);
                let e = fresh(id);
                f.escalations.push(e.clone());
                Ok((e, false))
            })
        });
        let (e, reused) = match opened {
            Ok(x) => x,
            Err(err) => {
                tracing::warn!(error = %err, "the escalation could not be recorded");
                return Some(TurnEscalation {
                    id: None,
                    reused: false,
                    deliveries: Vec::new(),
                    note: format!("the escalation could not be recorded ({err}); the decision stands"),
                });
            }
        };
        let mut note = if reused {
            format!(
                "the open escalation {} on the same task was reused (opened at {}, raised {} times)",
                e.id, e.created_at, e.raised
            )
        } else {
            format!("escalation {} opened: a human answers it (the answer is recorded as memory) or dismisses it", e.id)
        };
        let deliveries = self.deliver(&e).await;
        for d in &deliveries {
            if d.delivered {
                note.push_str(&format!("; sent to {}", d.sink));
            } else {
                let why = d.error.as_deref().unwrap_or("failed");
                note.push_str(&format!(
                    "; NOT delivered to {} ({why}): it stays open, and a later turn on the task sends it again",
                    d.sink
                ));
            }
        }
        if !deliveries.is_empty() {
            if let Err(err) = self.keep_deliveries(ns, e.id, deliveries.clone()) {
                note.push_str(&format!("; the deliveries could not be recorded ({err})"));
            }
        }
        Some(TurnEscalation { id: Some(e.id), reused, deliveries, note })
    }

    /// Send `e` to every sink that does not have it yet, all at once.
    async fn deliver(&self, e: &Escalation) -> Vec<Delivery> {
        let sinks: Vec<&Sink> = self
            .escalation_state()
            .sinks
            .iter()
            .filter(|s| !e.deliveries.iter().any(|d| d.delivered && d.sink == s.label()))
            .collect();
        if sinks.is_empty() {
            return Vec::new();
        }
        let body = match crate::json_view::tenant_json(e, false).and_then(|v| serde_json::to_vec(&v)) {
            Ok(b) => b,
            Err(err) => {
                tracing::warn!(error = %err, "the escalation could not be encoded");
                return Vec::new();
            }
        };
        let at: Timestamp = self.engine().now();
        futures_util::future::join_all(sinks.into_iter().map(|s| s.send(e, &body, at))).await
    }

    /// Keep `sent` as the latest delivery to each sink (attempts add up).
    fn keep_deliveries(&self, ns: &Namespace, id: EscalationId, sent: Vec<Delivery>) -> Result<Escalation, AgentError> {
        crate::blocking::blocking(|| {
            self.escalation_state().ledger.update(|f| {
                let e = f.find_mut(ns, id)?;
                for mut d in sent {
                    if let Some(old) = e.deliveries.iter_mut().find(|o| o.sink == d.sink) {
                        d.attempts += old.attempts;
                        *old = d;
                    } else {
                        e.deliveries.push(d);
                    }
                }
                Ok(e.clone())
            })
        })
    }
}

/// What an answer kept as prose means for the next turn.
fn prose_note(e: &Escalation, client: ClientKind) -> String {
    let Some(c) = &e.claim else {
        return "the escalation names no claim: the answer was recorded as prose, extracted like any turn".to_string();
    };
    let claim = format!("{} | {}", c.entity, c.attribute);
    if client == ClientKind::Fake {
        format!(
            "the answer was not read as a value for {claim}: it was recorded as prose, which the offline model keeps \
             as one episode with no claim, so a turn about {claim} may escalate again; answer with the value alone \
             (or a tagged line) to record the claim"
        )
    } else {
        format!(
            "the answer was not read as a value for {claim}: it was recorded as prose, and the model extracts what \
             it says (a turn about {claim} escalates again if it does not state it)"
        )
    }
}
