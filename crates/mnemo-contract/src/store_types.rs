//! What a Store answers beside memories: a page of changes, a listing page, its identity (and
//! the stamp an Index keeps of it), a backup's description, and the guard that holds a
//! namespace while it is written.
use serde::{Deserialize, Serialize};

use crate::model::*;

/// What `Store::changes_since` read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Changes {
    /// The store's newest rev (at least the last changed memory's; never the rev asked when the
    /// store holds less).
    pub newest: u64,
    /// The memories changed above the rev asked, by rev, at most the limit asked.
    pub memories: Vec<Memory>,
    /// The store's identity (`Store::identity`).
    pub identity: Option<StoreIdentity>,
    /// `Store::rev_fingerprint` of the last memory's rev (of the rev asked when none changed).
    pub fingerprint: Option<String>,
}

impl Changes {
    /// The changes read above a rev: `newest` is the store's newest rev as read before the
    /// memories (rows written after it may lie above it; the rev asked never counts).
    pub fn new(
        newest: u64,
        memories: Vec<Memory>,
        identity: Option<StoreIdentity>,
        fingerprint: Option<String>,
    ) -> Self {
        let newest = newest.max(memories.last().map_or(0, |m| m.rev));
        Changes { newest, memories, identity, fingerprint }
    }

    /// The rev whose fingerprint goes with `memories` read above `rev`: the last one's, or
    /// `rev` itself when none changed (None at 0: no change has that rev).
    pub fn fingerprinted_rev(rev: u64, memories: &[Memory]) -> Option<u64> {
        Some(memories.last().map_or(rev, |m| m.rev)).filter(|&at| at != 0)
    }

    /// The stamp an index records once these changes are applied, for vectors of `embedder`
    /// (the engine's).
    pub fn stamp(&self, embedder: EmbedderIdentity) -> IndexStamp {
        IndexStamp { store: self.identity.clone(), fingerprint: self.fingerprint.clone(), embedder: Some(embedder) }
    }
}

/// Which page of a namespace's memories `Store::list_memories` returns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListPage {
    /// Only ids above this one (the last id of the previous page); None: from the start.
    pub after: Option<MemoryId>,
    /// At most this many.
    pub limit: usize,
    /// Tombstoned memories too (else active ones only).
    pub include_tombstoned: bool,
}

/// Who a Store is: an identity drawn when it was created (a new or emptied store gets a new
/// one) and a generation bumped whenever its content is replaced in place (a restore).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreIdentity {
    /// Opaque, stable for the store's life.
    pub id: String,
    /// Starts at 1; bumped when the content is replaced.
    pub generation: u64,
}

/// What a backup holds (written by `Store::backup_to`, or restored by `replace_from_backup`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupInfo {
    /// The file.
    pub path: std::path::PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// The store's identity and generation in it (after a restore: the store's new ones).
    pub identity: Option<StoreIdentity>,
    /// Memories in it (every namespace, tombstoned ones included).
    pub memories: u64,
    /// Turns in it.
    pub turns: u64,
    /// The history chain head of each namespace in it (see [`crate::chain`]), by namespace: a
    /// store restored from it verifies against these (`mnemo verify`).
    #[serde(default)]
    pub chain_heads: Vec<crate::chain::ChainHead>,
}

/// Held while a namespace is planned and written; dropping it releases the lock.
pub type NamespaceGuard = Box<dyn std::any::Any + Send + Sync>;

/// What an Index records beside its watermark about what it was built from: the store, and
/// the embedder whose vectors it holds. The index is derived, so it is the one place that can
/// say which embedder its vectors came from, however many processes share it (a PostgreSQL
/// index serves many servers, each with a data directory of its own).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexStamp {
    /// The store's identity, if it has one.
    pub store: Option<StoreIdentity>,
    /// `Store::rev_fingerprint` of the watermark's rev when it was recorded.
    pub fingerprint: Option<String>,
    /// The embedder whose vectors the index holds. None in a stamp written before it was
    /// recorded (absent from older stamps, hence the default): the engine then cannot tell,
    /// and rebuilds an index that holds anything.
    #[serde(default)]
    pub embedder: Option<EmbedderIdentity>,
}

/// Which embedder made an index's vectors: its model id and dimensions (two embedders of one
/// model id at other dimensions make vectors that cannot be compared either).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedderIdentity {
    /// `Embedder::model_id`.
    pub model: String,
    /// `Embedder::dims`.
    pub dims: usize,
}

impl std::fmt::Display for EmbedderIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({} dimensions)", self.model, self.dims)
    }
}
