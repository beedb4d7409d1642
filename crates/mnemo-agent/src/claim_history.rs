//! `history`: the values a claim has had, each with both clocks — the system time memory held
//! it (recorded, ended) and why it ended, and the world time it was true (the interval its
//! turn stated, closed by a supersession: `mnemo_core::engine::world_validity`) — the same
//! answer at every door.
use serde::{Deserialize, Serialize};

use mnemo_contract::*;

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
    /// World time: when it became true (absent: not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    /// World time: when it stopped being true (absent: not known, or still true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<String>,
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
        let world = mnemo_core::engine::world_validity(memories, Timestamp(i64::MAX));
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
                let valid = world.get(&m.id).copied().unwrap_or_default();
                Some(ClaimValue {
                    valid_from: valid.from.map(mnemo_contract::world_time::day_text),
                    valid_to: valid.to.map(mnemo_contract::world_time::day_text),
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
            vec!["world time is when a value was true, as the turns stated it (a replaced value ends where its \
             successor begins, a successor that states no start began when recorded); system time is when \
             memory recorded and ended it"
                .to_string()];
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
            let world = match (&v.valid_from, &v.valid_to) {
                (Some(f), Some(t)) => format!("true from {f} until {t}"),
                (Some(f), None) => format!("true from {f}"),
                (None, Some(t)) => format!("true until {t}"),
                (None, None) => "true: not stated".to_string(),
            };
            out.push_str(&format!("  {} {:?}: {world}; recorded {}, {held}\n", v.id, v.value, v.recorded_at));
        }
        for n in &self.notes {
            out.push_str(&format!("  note: {n}\n"));
        }
        out
    }
}
