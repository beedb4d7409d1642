//! Figures on a Mnemo: what this process's doors have done since it started ([`DoorCounters`],
//! counted once here, whichever door called) and what the data directory holds
//! ([`StoreFigures`], read from the store, the index and the escalation ledger), and the model
//! calls the process made ([`model_calls`], recorded by the model seam). `/metrics`
//! exports both; `mnemo stats` prints the store figures (a CLI process has done nothing yet
//! when it prints, so its door counters would all be zero).
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use mnemo_contract::{Assessment, Decision, LookupOutcome, MemoryKind, Status};

use crate::error::AgentError;
use crate::runtime::Runtime;

/// How a grounder lookup ended, as counted (the outcome without its value or message, so the
/// set of labels stays small).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LookupLabel {
    /// The system of record holds a value.
    Held,
    /// It holds none for the claim.
    NotHeld,
    /// No answer in time.
    Timeout,
    /// It failed.
    Error,
    /// It answered something that is not a value.
    Garbage,
}

impl LookupLabel {
    /// Every label, in a fixed order (exported even at zero, so a dashboard sees the series).
    pub const ALL: [LookupLabel; 5] =
        [LookupLabel::Held, LookupLabel::NotHeld, LookupLabel::Timeout, LookupLabel::Error, LookupLabel::Garbage];

    /// The label of `outcome`.
    pub fn of(outcome: &LookupOutcome) -> Self {
        match outcome {
            LookupOutcome::Held { .. } => LookupLabel::Held,
            LookupOutcome::NotHeld => LookupLabel::NotHeld,
            LookupOutcome::Timeout => LookupLabel::Timeout,
            LookupOutcome::Error { .. } => LookupLabel::Error,
            LookupOutcome::Garbage { .. } => LookupLabel::Garbage,
        }
    }

    /// Its name in metrics and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            LookupLabel::Held => "held",
            LookupLabel::NotHeld => "not_held",
            LookupLabel::Timeout => "timeout",
            LookupLabel::Error => "error",
            LookupLabel::Garbage => "garbage",
        }
    }
}

/// What the doors of this process have done since it started. Counted in the runtime, where
/// every door's remember, recall, forget and turn passes, so HTTP, MCP and the CLI count alike.
#[derive(Debug, Default)]
pub struct DoorCounters {
    remembered: AtomicU64,
    recalled_assessed: AtomicU64,
    recalled_raw: AtomicU64,
    forgotten: AtomicU64,
    acted: AtomicU64,
    escalated: AtomicU64,
    lookups: [AtomicU64; 5],
}

/// A copy of [`DoorCounters`] at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoorCounts {
    /// Turns remembered (recorded and extracted; a replayed idempotency key, which writes
    /// nothing, and a refused or unextracted turn are not counted).
    pub remembered: u64,
    /// Recalls that were assessed (every recall that is not raw, and every agent turn).
    pub recalled_assessed: u64,
    /// Raw recalls (no grounding, no grade).
    pub recalled_raw: u64,
    /// Forget commands carried out (dry runs not counted).
    pub forgotten: u64,
    /// Assessed recalls that decided ACT.
    pub acted: u64,
    /// Assessed recalls that decided ESCALATE.
    pub escalated: u64,
    /// Grounder lookups by outcome.
    pub lookups: Vec<(LookupLabel, u64)>,
}

impl DoorCounters {
    pub(crate) fn remembered(&self) {
        self.remembered.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn recalled_raw(&self) {
        self.recalled_raw.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn forgotten(&self) {
        self.forgotten.fetch_add(1, Ordering::Relaxed);
    }
    /// One assessed recall: its decision and its lookups.
    pub(crate) fn assessed(&self, a: &Assessment) {
        self.recalled_assessed.fetch_add(1, Ordering::Relaxed);
        match a.decision {
            Decision::Act => self.acted.fetch_add(1, Ordering::Relaxed),
            Decision::Escalate { .. } => self.escalated.fetch_add(1, Ordering::Relaxed),
        };
        for l in &a.lookups {
            let i = LookupLabel::ALL.iter().position(|x| *x == LookupLabel::of(&l.outcome)).unwrap_or(0);
            self.lookups[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counts now.
    pub fn snapshot(&self) -> DoorCounts {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        DoorCounts {
            remembered: get(&self.remembered),
            recalled_assessed: get(&self.recalled_assessed),
            recalled_raw: get(&self.recalled_raw),
            forgotten: get(&self.forgotten),
            acted: get(&self.acted),
            escalated: get(&self.escalated),
            lookups: LookupLabel::ALL.iter().zip(&self.lookups).map(|(l, c)| (*l, get(c))).collect(),
        }
    }
}

/// Calls and tokens of every model call this process made, per kind of call (`chat:extract`,
/// `embed`, …), with the tier each runs on: recorded by the model seam around every client it
/// hands out. Tokens are those the model reported (the fake reports none).
pub fn model_calls() -> Vec<(String, &'static str, mnemo_contract::usage::CallUsage)> {
    mnemo_contract::usage::model_calls()
        .into_iter()
        .map(|(kind, usage)| {
            let tier = mnemo_contract::usage::tier_of(&kind);
            (kind, tier, usage)
        })
        .collect()
}

/// Memories of one kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindCount {
    /// The kind (semantic, procedural, episodic).
    pub kind: MemoryKind,
    /// Active (recallable).
    pub active: u64,
    /// Tombstoned (forgotten, superseded, decayed; kept with the reason).
    pub tombstoned: u64,
}

/// What a data directory holds, read now (the same figures whichever process reads them).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreFigures {
    /// Namespaces with at least one memory or turn.
    pub namespaces: u64,
    /// Memories per kind, over every namespace.
    pub memories: Vec<KindCount>,
    /// The store's newest revision (every write moves it).
    pub store_rev: u64,
    /// The revision the index holds every change up to (None: stale, to be rebuilt).
    pub index_rev: Option<u64>,
    /// `store_rev - index_rev`: changes the index has not applied yet (the store's revision
    /// when the index is stale).
    pub index_lag: u64,
    /// Escalations waiting for a human, over every namespace.
    pub escalations_open: u64,
    /// Bytes of the files in the data directory (store, index, ledgers; a PostgreSQL store's
    /// tables are not in it).
    pub data_dir_bytes: u64,
}

impl StoreFigures {
    /// Active memories over every kind.
    pub fn active(&self) -> u64 {
        self.memories.iter().map(|k| k.active).sum()
    }
}

impl Runtime {
    /// What this process's doors have done since it started.
    pub fn door_counters(&self) -> &DoorCounters {
        &self.counters
    }

    /// What the data directory holds now. Reads every memory of every namespace (counts by
    /// kind and status): a cost that grows with the store, so a server caches it (`/metrics`).
    pub async fn store_figures(&self) -> Result<StoreFigures, AgentError> {
        let engine = self.engine();
        let namespaces = engine.namespaces().await?;
        let mut memories: Vec<KindCount> =
            MemoryKind::ALL.iter().map(|k| KindCount { kind: *k, active: 0, tombstoned: 0 }).collect();
        for ns in &namespaces {
            for m in engine.all_memories(ns).await? {
                if let Some(k) = memories.iter_mut().find(|k| k.kind == m.kind) {
                    match m.status {
                        Status::Active => k.active += 1,
                        Status::Tombstoned { .. } => k.tombstoned += 1,
                    }
                }
            }
        }
        let store_rev = engine.store_rev().await?;
        let index_rev = engine.index_rev().await?;
        let ledger = crate::blocking::blocking(|| self.escalation_state().ledger().read())?;
        let data_dir = self.data_dir().to_path_buf();
        let data_dir_bytes = crate::blocking::blocking(|| Ok::<_, AgentError>(dir_bytes(&data_dir)))?;
        Ok(StoreFigures {
            namespaces: namespaces.len() as u64,
            memories,
            store_rev,
            index_rev,
            index_lag: store_rev.saturating_sub(index_rev.unwrap_or(0)),
            escalations_open: ledger.escalations.iter().filter(|e| e.is_open()).count() as u64,
            data_dir_bytes,
        })
    }
}

/// Bytes of the regular files under `dir` (a file that vanishes while counted, a tantivy
/// segment merged away, is skipped: the figure is a gauge, not an audit).
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lookup_outcome_has_its_own_label() {
        let outcomes = [
            LookupOutcome::Held { value: "35".into() },
            LookupOutcome::NotHeld,
            LookupOutcome::Timeout,
            LookupOutcome::Error { message: "down".into() },
            LookupOutcome::Garbage { message: "not a value".into() },
        ];
        let labels: Vec<LookupLabel> = outcomes.iter().map(LookupLabel::of).collect();
        assert_eq!(labels, LookupLabel::ALL.to_vec());
    }

    #[test]
    fn a_directory_counts_its_files_bytes_recursively() -> std::io::Result<()> {
        let d = tempfile::tempdir()?;
        std::fs::write(d.path().join("a"), [0u8; 10])?;
        std::fs::create_dir(d.path().join("sub"))?;
        std::fs::write(d.path().join("sub").join("b"), [0u8; 5])?;
        assert_eq!(dir_bytes(d.path()), 15);
        assert_eq!(dir_bytes(&d.path().join("missing")), 0);
        Ok(())
    }
}
