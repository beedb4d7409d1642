//! `history`: the values a claim has had, each with the system time memory held it (recorded,
//! ended) and why it ended — the same answer at every door. World time (when a value was true)
//! is not recorded yet: each value says so rather than guessing it from the system time.
use serde::{Deserialize, Serialize};

use mnemo_core::*;

/// One value a claim has had (ids short, `m42`; times RFC 3339).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClaimValue {
    /// The memory that held it.
    pub id: String,
    /// The value.
    pub value: String,
    /// System time: when memory recorded it.
    pub recorded_at: String,
    /// System time: when memory stopped holding it (absent: it holds it now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// Why it ended (a supersession names its successor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_because: Option<String>,
    /// The memory that took its place, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// Where it came from: the turn sources and grounders that stated or confirmed it.
    pub sources: Vec<String>,
}

/// Every value memory has held for one claim, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClaimHistory {
    /// The claim, `entity | attribute`.
    pub claim: String,
    /// Its values, oldest recording first.
    pub values: Vec<ClaimValue>,
    /// What the answer cannot say (world time is not recorded).
    pub notes: Vec<String>,
}

impl ClaimHistory {
    /// The history of `key` from its memories (`Engine::claim_history`).
    pub fn of(key: &ClaimKey, memories: &[Memory]) -> Self {
        let values = memories
            .iter()
            .filter_map(|m| {
                let value = m.claim.as_ref()?.value.clone();
                let (ended_at, ended_because, superseded_by) = match &m.status {
                    Status::Active => (None, None, None),
                    Status::Tombstoned { reason, at, superseded_by } => {
                        (Some(at.to_string()), Some(reason.clone()), superseded_by.map(|b| b.short()))
                    }
                };
                Some(ClaimValue {
                    id: m.id.short(),
                    value,
                    recorded_at: m.created_at.to_string(),
                    ended_at,
                    ended_because,
                    superseded_by,
                    sources: m.sources.clone(),
                })
            })
            .collect::<Vec<_>>();
        let mut notes =
            vec!["world time (when each value was true) is not recorded: the times are memory's own".into()];
        if values.is_empty() {
            notes.insert(0, format!("memory has never held a value for {key}"));
        }
        ClaimHistory { claim: key.to_string(), values, notes }
    }

    /// As people read it: one line per value.
    pub fn text(&self) -> String {
        let mut out = format!("history of {}:\n", self.claim);
        for v in &self.values {
            let held = match (&v.ended_at, &v.ended_because) {
                (Some(at), Some(why)) => format!("until {at} ({why})"),
                (Some(at), None) => format!("until {at}"),
                _ => "held now".to_string(),
            };
            out.push_str(&format!("  {} {:?}: recorded {}, {held}\n", v.id, v.value, v.recorded_at));
        }
        for n in &self.notes {
            out.push_str(&format!("  note: {n}\n"));
        }
        out
    }
}
