//! The domain model: turns, memories, claims, tombstones and their history.
use serde::{Deserialize, Serialize};

use crate::world_time::Validity;
use std::fmt;

use crate::error::{CoreError, Result};
pub use crate::ids::{MemoryId, TurnId};
use crate::text::{norm_name, norm_value};
use crate::time::Timestamp;

/// A namespace (tenant / user / agent scope). Every query is partitioned by it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Namespace(String);

impl Namespace {
    /// A validated namespace: 1 to 128 characters of `[A-Za-z0-9_.:-]`.
    pub fn new(s: &str) -> Result<Self> {
        let ok = !s.is_empty() && s.len() <= 128 && s.chars().all(|c| c.is_ascii_alphanumeric() || "_.:-".contains(c));
        if ok {
            Ok(Namespace(s.to_string()))
        } else {
            Err(CoreError::InvalidInput(format!(
                "namespace {s:?} must be 1-128 characters of letters, digits, '_', '.', ':' or '-'"
            )))
        }
    }
    /// The namespace text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Namespace {
    fn default() -> Self {
        Namespace("default".to_string())
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The kind of a memory; kind-specific policy lives in config, not in code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryKind {
    /// Facts; a newer value for the same entity+attribute supersedes the old one.
    Semantic,
    /// How-tos, routines, standing instructions.
    Procedural,
    /// Timestamped events; these decay by default.
    Episodic,
}

impl MemoryKind {
    /// All kinds, in quota order.
    pub const ALL: [MemoryKind; 3] = [MemoryKind::Semantic, MemoryKind::Procedural, MemoryKind::Episodic];
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Semantic => "semantic",
            MemoryKind::Procedural => "procedural",
            MemoryKind::Episodic => "episodic",
        }
    }
    /// Parse a lower-case name.
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "semantic" | "sem" => Ok(MemoryKind::Semantic),
            "procedural" | "proc" => Ok(MemoryKind::Procedural),
            "episodic" | "epi" => Ok(MemoryKind::Episodic),
            other => Err(CoreError::InvalidInput(format!(
                "unknown memory kind {other:?}; known: semantic, procedural, episodic"
            ))),
        }
    }
}

impl fmt::Display for MemoryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A structured claim `(entity, attribute, value)`, as written.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Claim {
    /// The thing the claim is about.
    pub entity: String,
    /// Which property of it.
    pub attribute: String,
    /// The value, as written.
    pub value: String,
}

impl Claim {
    /// A claim from its three parts (white space trimmed and folded).
    pub fn new(entity: &str, attribute: &str, value: &str) -> Self {
        Claim {
            entity: crate::text::fold_ws(entity),
            attribute: crate::text::fold_ws(attribute),
            value: norm_value(value),
        }
    }
    /// The normalised `(entity, attribute)` key.
    pub fn key(&self) -> (String, String) {
        (norm_name(&self.entity), norm_name(&self.attribute))
    }
    /// Whether this claim is on `(entity, attribute)` (compared normalised).
    pub fn is_on(&self, entity: &str, attribute: &str) -> bool {
        self.key() == (norm_name(entity), norm_name(attribute))
    }
    /// Whether the values are the same after white-space folding (case-sensitive).
    pub fn same_value(&self, value: &str) -> bool {
        norm_value(&self.value) == norm_value(value)
    }
}

/// How many values a claim's attribute holds at once.
///
/// A one-valued attribute (a lead time, an owner, a dose) holds one current value: a new value
/// supersedes the old. A many-valued attribute (allergies, phone numbers, skills) gains a value
/// beside the others; only an identical value is a restatement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cardinality {
    /// One current value (the default).
    #[default]
    One,
    /// Many values at once.
    Many,
}

impl Cardinality {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Cardinality::One => "one",
            Cardinality::Many => "many",
        }
    }
}

/// Which client produced something: the seam is loud.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientKind {
    /// The deterministic offline fake.
    Fake,
    /// A live model endpoint.
    Live,
    /// Replayed from a cassette.
    Replay,
    /// No model: deterministic rules in code (e.g. claim reconciliation, grounding).
    Rules,
}

impl ClientKind {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ClientKind::Fake => "fake",
            ClientKind::Live => "live",
            ClientKind::Replay => "replay",
            ClientKind::Rules => "rules",
        }
    }
}

/// Who produced a memory: from which turns, by which model (as the API echoed it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The turns it came from (creation first, then reinforcements).
    pub turns: Vec<TurnId>,
    /// Which client answered the extraction.
    pub client: ClientKind,
    /// The model string as echoed by the API (for the fake: its own name).
    pub model: String,
}

/// A persisted embedding, with the model id of the embedder that produced it.
///
/// A Store keeps the model id exactly and the vector either exactly or within
/// [`EMBEDDING_STORE_TOLERANCE`] (see [`Embedding::within_store_tolerance`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Embedding {
    /// The embedder's model id.
    pub model: String,
    /// A unit vector.
    pub vector: Vec<f32>,
}

/// How far a Store may move an embedding's components, as a fraction of the vector's largest
/// |component|: a store may keep one signed byte per component and one scale per vector, whose
/// rounding moves a component by at most half a step (a step is 1/127 of the largest). For a
/// 256-dimension unit vector that changes a cosine similarity by well under 0.01, far less than
/// what separates a relevant memory from an unrelated one.
pub const EMBEDDING_STORE_TOLERANCE: f32 = 1.0 / 254.0;

impl Embedding {
    /// Whether `stored` is what a Store may return for `self`: the same model id and length,
    /// each component within [`EMBEDDING_STORE_TOLERANCE`] of the largest |component| (plus a
    /// relative 1e-5 for the scale's own rounding).
    pub fn within_store_tolerance(&self, stored: &Embedding) -> bool {
        if self.model != stored.model || self.vector.len() != stored.vector.len() {
            return false;
        }
        let largest = self.vector.iter().fold(0f32, |m, x| m.max(x.abs()));
        let allowed = largest * EMBEDDING_STORE_TOLERANCE * (1.0 + 1e-5);
        self.vector.iter().zip(&stored.vector).all(|(a, b)| (a - b).abs() <= allowed)
    }
}

/// Whether a memory is active or tombstoned (never hard-deleted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Status {
    /// Recallable.
    Active,
    /// Forgotten, with why, when and by what.
    Tombstoned {
        /// Why it was forgotten.
        reason: String,
        /// When.
        at: Timestamp,
        /// The memory that superseded it, if any.
        superseded_by: Option<MemoryId>,
    },
}

impl Status {
    /// Whether active.
    pub fn is_active(&self) -> bool {
        matches!(self, Status::Active)
    }
}

/// A memory as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// Store-assigned id.
    pub id: MemoryId,
    /// Its namespace.
    pub namespace: Namespace,
    /// Its kind.
    pub kind: MemoryKind,
    /// The text recalled into a pack.
    pub content: String,
    /// The structured claim, if it has one.
    pub claim: Option<Claim>,
    /// Normalised entity names it mentions (used to find reconcile neighbours).
    pub entities: Vec<String>,
    /// Importance in 0..=1.
    pub importance: f32,
    /// How often it was restated (duplicates reinforce).
    pub reinforcements: u32,
    /// Distinct sources that corroborate it (turn sources, grounders).
    pub sources: Vec<String>,
    /// Where it came from.
    pub provenance: Provenance,
    /// When inserted.
    pub created_at: Timestamp,
    /// Last creation, reinforcement or grounding confirmation.
    pub last_confirmed_at: Timestamp,
    /// Last time it was recalled into a pack.
    pub last_accessed_at: Option<Timestamp>,
    /// Pinned memories are packed first.
    pub pinned: bool,
    /// Its embedding, computed once at write time.
    pub embedding: Option<Embedding>,
    /// Active or tombstoned.
    pub status: Status,
    /// Store-wide change sequence of its last change (the Index's watermark unit).
    pub rev: u64,
    /// When its fact holds in the world, if the turn said (world time; `created_at` and the
    /// tombstone's time are memory's own).
    #[serde(default, skip_serializing_if = "Validity::is_unstated")]
    pub validity: Validity,
}

/// A memory to insert (the store assigns id and rev).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NewMemory {
    /// Its namespace.
    pub namespace: Namespace,
    /// Its kind.
    pub kind: MemoryKind,
    /// Content text.
    pub content: String,
    /// Structured claim.
    pub claim: Option<Claim>,
    /// Normalised entities.
    pub entities: Vec<String>,
    /// Importance in 0..=1.
    pub importance: f32,
    /// Initial sources.
    pub sources: Vec<String>,
    /// Provenance.
    pub provenance: Provenance,
    /// Creation time (also the first confirmation).
    pub created_at: Timestamp,
    /// Pinned.
    pub pinned: bool,
    /// Embedding.
    pub embedding: Option<Embedding>,
    /// When its fact holds in the world, if stated.
    #[serde(default, skip_serializing_if = "Validity::is_unstated")]
    pub validity: Validity,
}

/// A turn to record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NewTurn {
    /// Its namespace.
    pub namespace: Namespace,
    /// Who said it ("user", a speaker's name, a tool).
    pub source: String,
    /// When.
    pub at: Timestamp,
    /// The raw text.
    pub text: String,
    /// Optional external id (e.g. a LoCoMo dia_id).
    pub external_id: Option<String>,
}

/// A recorded turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// Store-assigned id.
    pub id: TurnId,
    /// Its namespace.
    pub namespace: Namespace,
    /// Who said it.
    pub source: String,
    /// When.
    pub at: Timestamp,
    /// Raw text.
    pub text: String,
    /// Optional external id.
    pub external_id: Option<String>,
}

/// A reference to a memory inside a write batch: an existing one, or one inserted earlier in
/// the same batch (by its position among the batch's inserts).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum MemoryRef {
    /// An existing memory.
    Existing(MemoryId),
    /// The n-th `Insert` of this batch (0-based).
    New(usize),
}

#[allow(clippy::large_enum_variant)] // inserts dominate; boxing buys nothing here
/// One change applied by the Store; a batch is applied atomically in one transaction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WriteOp {
    /// Insert a new memory (history event `created`, linked to `turn`).
    Insert {
        /// The memory.
        memory: NewMemory,
        /// The turn it came from, if any.
        turn: Option<TurnId>,
    },
    /// Restated: reinforcements + 1, `source` added to sources if new, confirmation time = at.
    Reinforce {
        /// Which memory.
        id: MemoryId,
        /// Who restated it.
        source: String,
        /// The turn that restated it.
        turn: Option<TurnId>,
    },
    /// Confirmed by a system of record: `source` added, confirmation time = at.
    Confirm {
        /// Which memory.
        id: MemoryId,
        /// The grounder's source name.
        source: String,
    },
    /// Tombstone the n-th `Insert` of this same batch (a turn that states a value and, later in
    /// the same turn, contradicts or forgets it).
    TombstoneNew {
        /// The insert's position among the batch's inserts (0-based).
        index: usize,
        /// Why.
        reason: String,
        /// What superseded it.
        superseded_by: Option<MemoryRef>,
        /// The turn that caused it, if any.
        turn: Option<TurnId>,
    },
    /// Tombstone a memory (only if active; a tombstone is never reactivated).
    Tombstone {
        /// Which memory.
        id: MemoryId,
        /// Why.
        reason: String,
        /// What superseded it.
        superseded_by: Option<MemoryRef>,
        /// The turn that caused it, if any.
        turn: Option<TurnId>,
    },
}

/// What happened to a memory, for `why`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryEvent {
    /// Store-wide sequence.
    pub seq: u64,
    /// The memory.
    pub memory: MemoryId,
    /// When.
    pub at: Timestamp,
    /// What: created | reinforced | confirmed | tombstoned.
    pub event: String,
    /// The turn involved, if any.
    pub turn: Option<TurnId>,
    /// Details: source, reason, superseded_by, score...
    pub detail: String,
}

/// What the contract's unit tests start from.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    /// An active semantic memory `id` of the default namespace, from turn 1 said by `user`,
    /// created and last confirmed at `at`, never reinforced, rev 1.
    pub(crate) fn memory(id: i64, at: Timestamp) -> Memory {
        Memory { rev: 1, ..crate::transition::inserted(MemoryId(id), new_memory(at)) }
    }

    /// A semantic memory to insert into the default namespace, from turn 1 said by `user` at
    /// `at`: importance 0.5, no claim, entity or embedding, not pinned.
    pub(crate) fn new_memory(at: Timestamp) -> NewMemory {
        NewMemory {
            namespace: Namespace::default(),
            kind: MemoryKind::Semantic,
            content: "x".into(),
            claim: None,
            entities: vec![],
            importance: 0.5,
            sources: vec!["user".into()],
            provenance: Provenance { turns: vec![TurnId(1)], client: ClientKind::Rules, model: "t".into() },
            created_at: at,
            pinned: false,
            embedding: None,
            validity: Validity::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_tolerance_is_half_an_int8_step_of_the_largest_component() {
        let e = |v: &[f32]| Embedding { model: "m".into(), vector: v.to_vec() };
        let original = e(&[0.5, -0.25, 0.0]);
        let step = 0.5 / 127.0;
        assert!(original.within_store_tolerance(&original));
        assert!(original.within_store_tolerance(&e(&[0.5, -0.25 + step / 2.0, 0.0])));
        assert!(!original.within_store_tolerance(&e(&[0.5, -0.25 + step, 0.0])), "a whole step is too far");
        assert!(!original.within_store_tolerance(&e(&[0.5, -0.25])), "the length must be kept");
        let other_model = Embedding { model: "n".into(), ..original.clone() };
        assert!(!original.within_store_tolerance(&other_model), "the model id must be kept");
    }
}
