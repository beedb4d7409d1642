//! The escalation record: what was asked, why, of which memories, and what became of it.
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use mnemo_contract::{MemoryId, Namespace, Task, Timestamp, TurnId};

use crate::verdict::Weak;

/// An escalation's id within its namespace: `e1`, `e2`, … counted per namespace and never
/// handed out twice there (the ledger keeps the counter; nothing is ever removed from it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EscalationId(pub u32);

impl fmt::Display for EscalationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "e{}", self.0)
    }
}

/// Why a text is not an escalation id.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an escalation id: write e3, as the escalations are listed")]
pub struct BadEscalationId(pub String);

impl FromStr for EscalationId {
    type Err = BadEscalationId;

    /// `e3` (or `E3`, or bare `3`).
    fn from_str(s: &str) -> Result<Self, BadEscalationId> {
        let t = s.trim();
        let digits = t.strip_prefix(['e', 'E']).unwrap_or(t);
        match digits.parse::<u32>() {
            Ok(n) if n > 0 && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => Ok(EscalationId(n)),
            _ => Err(BadEscalationId(s.to_string())),
        }
    }
}

/// Always written as its short id (`"e3"`): it means nothing outside its namespace anyway.
impl Serialize for EscalationId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// `"e3"`, `"3"` or `3`.
impl<'de> Deserialize<'de> for EscalationId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Number(u32),
            Text(String),
        }
        match Written::deserialize(d)? {
            Written::Number(n) if n > 0 => Ok(EscalationId(n)),
            Written::Number(n) => Err(serde::de::Error::custom(BadEscalationId(n.to_string()))),
            Written::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// Where an escalation stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EscalationStatus {
    /// Waiting for a human.
    Open,
    /// A human answered; the answer was recorded as a turn.
    Answered,
    /// A human dismissed it; nothing was recorded.
    Dismissed,
}

impl fmt::Display for EscalationStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EscalationStatus::Open => "open",
            EscalationStatus::Answered => "answered",
            EscalationStatus::Dismissed => "dismissed",
        })
    }
}

/// The claim an escalation is about: the task's `about`, or the claim the assessor took its
/// query to name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EscalationClaim {
    /// Entity.
    pub entity: String,
    /// Attribute.
    pub attribute: String,
}

/// How a human's answer was turned into the turn recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerForm {
    /// The value of the escalation's claim, alone or in a sentence it was read from ("Carla",
    /// "it is Carla"): recorded as the tagged line `[SEM] entity | attribute | value`.
    Value,
    /// Tagged lines written by the human: recorded as written.
    Tagged,
    /// Prose (or an escalation about no claim): recorded as written, after a line saying what
    /// it answers. A live model extracts it like any turn; the offline model keeps it as one
    /// episode with no claim.
    Prose,
}

/// A human's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EscalationAnswer {
    /// The answer as the human wrote it.
    pub text: String,
    /// Who answered: the principal the turn was recorded from (`human:NAME`).
    pub by: String,
    /// When (the engine's clock).
    pub at: Timestamp,
    /// The turn it was recorded as.
    pub turn: TurnId,
    /// How it was read.
    pub form: AnswerForm,
    /// The value recorded for the claim (form `value`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The text of the turn recorded.
    pub recorded: String,
}

/// A dismissal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EscalationDismissal {
    /// Who dismissed it (`human:NAME`).
    pub by: String,
    /// When (the engine's clock).
    pub at: Timestamp,
}

/// The last delivery of an escalation to one sink.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    /// The sink (`webhook https://host/path`, `jsonl /path/file.jsonl`, or its `name`).
    pub sink: String,
    /// Whether the sink has it.
    pub delivered: bool,
    /// Attempts made in all (every delivery round adds its own).
    pub attempts: u32,
    /// When the last round ended (the engine's clock).
    pub at: Timestamp,
    /// The last HTTP status a webhook answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Why it was not delivered (the last attempt's failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An escalation: stored in the data directory's ledger, sent to the configured sinks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Escalation {
    /// Its id in its namespace (`e3`).
    pub id: EscalationId,
    /// Its namespace.
    pub namespace: Namespace,
    /// The task that escalated (query and `about`).
    pub task: Task,
    /// The claim it is about, when known (the task's `about`, else the one its query names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<EscalationClaim>,
    /// Why the agent escalated.
    pub reasons: Vec<String>,
    /// Pack trust and the threshold it missed.
    pub trust: f64,
    /// The threshold.
    pub threshold: f64,
    /// The memories of the assessed pack (short ids at every door).
    pub pack: Vec<MemoryId>,
    /// The load-bearing memories below the threshold, and why.
    #[serde(default)]
    pub weak: Vec<Weak>,
    /// When it was opened (the engine's clock).
    pub created_at: Timestamp,
    /// How many agent turns raised it (the first, and each that reused it while open).
    pub raised: u32,
    /// When a turn last raised it.
    pub last_raised_at: Timestamp,
    /// open | answered | dismissed.
    pub status: EscalationStatus,
    /// The answer, once answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<EscalationAnswer>,
    /// The dismissal, once dismissed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dismissal: Option<EscalationDismissal>,
    /// The last delivery to each configured sink.
    #[serde(default)]
    pub deliveries: Vec<Delivery>,
}

impl Escalation {
    /// Whether it is still waiting for a human.
    pub fn is_open(&self) -> bool {
        self.status == EscalationStatus::Open
    }

    /// The external id its answer's turn is recorded under: unique to this escalation (its id
    /// and creation time), so that an answer whose ledger write was lost is found again, not
    /// recorded twice.
    pub fn answer_external_id(&self) -> String {
        format!("escalation:{}@{}", self.id, self.created_at.millis())
    }

    /// Whether a task is this escalation's (same query, same `about`).
    pub fn is_for(&self, ns: &Namespace, task: &Task) -> bool {
        &self.namespace == ns && self.task.query.trim() == task.query.trim() && self.task.about == task.about
    }
}

/// What an escalating turn did about its escalation (`AgentTurn::escalation`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnEscalation {
    /// The escalation (None: it could not be recorded; `note` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<EscalationId>,
    /// True when an open escalation on the same task was reused instead of opening another.
    pub reused: bool,
    /// The deliveries this turn made (to sinks that did not have it yet).
    #[serde(default)]
    pub deliveries: Vec<Delivery>,
    /// What happened, in words.
    pub note: String,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ids_read_and_write_as_short_ids() {
        assert_eq!("e3".parse(), Ok(EscalationId(3)));
        assert_eq!(" E12 ".parse(), Ok(EscalationId(12)));
        assert_eq!("7".parse(), Ok(EscalationId(7)));
        for bad in ["", "e", "e0", "m3", "e-1", "e3x", "e 3", "e+3"] {
            assert!(bad.parse::<EscalationId>().is_err(), "{bad:?}");
        }
        assert_eq!(serde_json::to_value(EscalationId(4)).unwrap(), serde_json::json!("e4"));
        let back: EscalationId = serde_json::from_str("\"e4\"").unwrap();
        assert_eq!(back, EscalationId(4));
        let back: EscalationId = serde_json::from_str("4").unwrap();
        assert_eq!(back, EscalationId(4));
        let e = "x".parse::<EscalationId>().unwrap_err().to_string();
        assert!(e.contains("e3"), "{e}");
    }
}
