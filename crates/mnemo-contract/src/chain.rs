//! The tamper-evident history: every memory event and every turn of a namespace is an entry of
//! that namespace's hash chain. Entry `n` (1, 2, 3 …) commits to its own content (its
//! `content_hash`) and to entry `n - 1` (its `prev_hash`, the previous entry's `entry_hash`;
//! 32 zero bytes for entry 1). Changing, removing, inserting or reordering any entry changes
//! an `entry_hash` that every later entry and the namespace's head commit to.
//!
//! The canonical byte encoding is documented in `docs/history-chain.md` and fixed here; both
//! stores and the offline check of an export (`mnemo verify --export`) use these functions.
//!
//! Encoding: a hash input is a sequence of *fields*. A field is its length as 8 bytes
//! big-endian followed by that many bytes; a NULL is the length `0xFFFF_FFFF_FFFF_FFFF` and no
//! bytes. Text is its UTF-8 bytes; an integer is 8 bytes big-endian two's complement; a 32-bit
//! float is its IEEE-754 bits, 4 bytes big-endian; a boolean is 1 byte (0 or 1); a hash is its
//! 32 bytes. The first field of every input is a domain tag (see the `TAG_*` constants).
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::model::NewMemory;

/// A SHA-256 hash.
pub type Hash = [u8; 32];

/// `prev_hash` of the first entry of a chain.
pub const GENESIS: Hash = [0u8; 32];

/// Domain tag of a turn's content hash.
pub const TAG_TURN: &str = "mnemo/history/v1/turn";
/// Domain tag of an event's content hash.
pub const TAG_EVENT: &str = "mnemo/history/v1/event";
/// Domain tag of an erasure's content hash (see `crate::erase`).
pub const TAG_ERASURE: &str = "mnemo/history/v1/erasure";
/// Domain tag of an entry hash.
pub const TAG_ENTRY: &str = "mnemo/history/v1/entry";

/// The canonical encoder (see the module docs).
#[derive(Default)]
pub struct Encoder(Sha256);

impl Encoder {
    /// An encoder whose first field is `tag`.
    pub fn new(tag: &str) -> Encoder {
        let mut e = Encoder(Sha256::new());
        e.text(tag);
        e
    }
    /// A field of raw bytes.
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.update((b.len() as u64).to_be_bytes());
        self.0.update(b);
        self
    }
    /// A text field.
    pub fn text(&mut self, s: &str) -> &mut Self {
        self.bytes(s.as_bytes())
    }
    /// An integer field.
    pub fn int(&mut self, n: i64) -> &mut Self {
        self.bytes(&n.to_be_bytes())
    }
    /// A NULL field.
    pub fn null(&mut self) -> &mut Self {
        self.0.update(u64::MAX.to_be_bytes());
        self
    }
    /// A text field or NULL.
    pub fn opt_text(&mut self, s: Option<&str>) -> &mut Self {
        match s {
            Some(s) => self.text(s),
            None => self.null(),
        }
    }
    /// An integer field or NULL.
    pub fn opt_int(&mut self, n: Option<i64>) -> &mut Self {
        match n {
            Some(n) => self.int(n),
            None => self.null(),
        }
    }
    /// The SHA-256 of the fields so far.
    pub fn finish(self) -> Hash {
        self.0.finalize().into()
    }
}

/// What kind of row an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// A memory event (`memory_events`, its id is the event's seq).
    Event,
    /// A raw turn (`turns`, its id is the turn id).
    Turn,
    /// An erasure (`erasures`, its id is the erasure id; see `crate::erase`).
    Erasure,
}

impl EntryKind {
    /// `event` or `turn`, as stored and as hashed.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::Event => "event",
            EntryKind::Turn => "turn",
            EntryKind::Erasure => "erasure",
        }
    }
    /// Parse `event` / `turn` / `erasure`.
    pub fn parse(s: &str) -> Option<EntryKind> {
        match s {
            "event" => Some(EntryKind::Event),
            "turn" => Some(EntryKind::Turn),
            "erasure" => Some(EntryKind::Erasure),
            _ => None,
        }
    }
}

impl std::fmt::Display for EntryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A turn's chained content, as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnContent {
    /// Its namespace.
    pub namespace: String,
    /// Its id.
    pub id: i64,
    /// Who said it.
    pub source: String,
    /// When (ms).
    pub at: i64,
    /// The text.
    pub text: String,
    /// The idempotency key, if any.
    pub external_id: Option<String>,
    /// Set when the turn's text was erased or had values cut out of it (see [`ErasedMark`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erased: Option<ErasedMark>,
}

impl TurnContent {
    /// What a new turn chains as, once the store has given it `id`.
    pub fn of(t: &crate::model::NewTurn, id: i64) -> TurnContent {
        TurnContent {
            namespace: t.namespace.as_str().to_string(),
            id,
            source: t.source.clone(),
            at: t.at.0,
            text: t.text.clone(),
            external_id: t.external_id.clone(),
            erased: None,
        }
    }
}

/// What the erasure(s) of a row list for it: the row's content hash before the first and after
/// the last (an erased row no longer hashes to what was chained; it is checked against these,
/// which its erasure entries commit to).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErasedMark {
    /// The last erasure that changed the row.
    pub erasure: i64,
    /// The row's content hash before the first erasure (the chained one).
    #[serde(with = "hex_serde")]
    pub before: Hash,
    /// The row's content hash after the last erasure (what it hashes to now).
    #[serde(with = "hex_serde")]
    pub after: Hash,
}

/// The immutable part of a memory, chained with its `created` event (so a changed byte of a
/// memory's content is caught too). The mutable state (reinforcements, sources, status …) is
/// not: each change of it is an event of its own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CreatedMemory {
    /// Its kind (`fact`, `preference` …).
    pub kind: String,
    /// Its content.
    pub content: String,
    /// The claim's entity, as written.
    pub claim_entity: Option<String>,
    /// The claim's attribute, as written.
    pub claim_attribute: Option<String>,
    /// The claim's value, as written.
    pub claim_value: Option<String>,
    /// The entities, as the stored JSON text.
    pub entities: String,
    /// Its importance (a 32-bit float).
    pub importance: f32,
    /// When it was created (ms).
    pub created_at: i64,
    /// Whether it is pinned.
    pub pinned: bool,
    /// When its fact starts holding in the world (ms), if stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<i64>,
    /// When it stops holding in the world (ms), if stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<i64>,
}

impl CreatedMemory {
    /// What a `created` event commits to of the memory `m` as inserted; `entities` is the JSON
    /// text the store keeps of its entities (the same bytes, or the chain would not verify).
    pub fn of(m: &NewMemory, entities: String) -> Self {
        CreatedMemory {
            kind: m.kind.as_str().to_string(),
            content: m.content.clone(),
            claim_entity: m.claim.as_ref().map(|c| c.entity.clone()),
            claim_attribute: m.claim.as_ref().map(|c| c.attribute.clone()),
            claim_value: m.claim.as_ref().map(|c| c.value.clone()),
            entities,
            importance: m.importance,
            created_at: m.created_at.0,
            pinned: m.pinned,
            valid_from: m.validity.from.map(|t| t.0),
            valid_to: m.validity.to.map(|t| t.0),
        }
    }
}

/// A memory event's chained content, as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventContent {
    /// The namespace of the memory the event belongs to (None: that memory row is missing).
    pub namespace: Option<String>,
    /// The event's seq.
    pub seq: i64,
    /// Its memory.
    pub memory_id: i64,
    /// When (ms).
    pub at: i64,
    /// `created`, `reinforced`, `confirmed`, `tombstoned`.
    pub event: String,
    /// The turn that caused it, if any.
    pub turn_id: Option<i64>,
    /// The event's detail, the stored JSON text.
    pub detail: String,
    /// For a `created` event: the memory's immutable part (None: the memory row is missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<CreatedMemory>,
    /// Set when the event (or its memory's content) was erased (see [`ErasedMark`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erased: Option<ErasedMark>,
}

/// An entry's content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Content {
    /// A memory event.
    Event(EventContent),
    /// A turn.
    Turn(TurnContent),
    /// An erasure record.
    Erasure(crate::erase::ErasureRecord),
}

impl Content {
    /// Which kind of entry.
    pub fn kind(&self) -> EntryKind {
        match self {
            Content::Event(_) => EntryKind::Event,
            Content::Turn(_) => EntryKind::Turn,
            Content::Erasure(_) => EntryKind::Erasure,
        }
    }

    /// The row's id (event seq, turn id or erasure id).
    pub fn id(&self) -> i64 {
        match self {
            Content::Event(e) => e.seq,
            Content::Turn(t) => t.id,
            Content::Erasure(r) => r.id,
        }
    }

    /// What the erasures of the row list for it, if it was erased.
    pub fn erased(&self) -> Option<&ErasedMark> {
        match self {
            Content::Event(e) => e.erased.as_ref(),
            Content::Turn(t) => t.erased.as_ref(),
            Content::Erasure(_) => None,
        }
    }

    /// The content hash of the row as it is now (see the module docs and
    /// `docs/history-chain.md`; an erased row's mark is not part of it).
    pub fn hash(&self) -> Hash {
        match self {
            Content::Erasure(r) => r.hash(),
            Content::Turn(t) => {
                let mut e = Encoder::new(TAG_TURN);
                e.text(&t.namespace)
                    .int(t.id)
                    .text(&t.source)
                    .int(t.at)
                    .text(&t.text)
                    .opt_text(t.external_id.as_deref());
                e.finish()
            }
            Content::Event(v) => {
                let mut e = Encoder::new(TAG_EVENT);
                e.opt_text(v.namespace.as_deref())
                    .int(v.seq)
                    .int(v.memory_id)
                    .int(v.at)
                    .text(&v.event)
                    .opt_int(v.turn_id)
                    .text(&v.detail);
                if v.event == "created" {
                    match &v.memory {
                        None => {
                            e.null();
                        }
                        Some(m) => {
                            e.text(&m.kind)
                                .text(&m.content)
                                .opt_text(m.claim_entity.as_deref())
                                .opt_text(m.claim_attribute.as_deref())
                                .opt_text(m.claim_value.as_deref())
                                .text(&m.entities)
                                .bytes(&m.importance.to_bits().to_be_bytes())
                                .int(m.created_at)
                                .bytes(&[u8::from(m.pinned)]);
                            // World time joined the row later: an unstated interval adds
                            // nothing, so every hash chained before it still verifies.
                            if m.valid_from.is_some() || m.valid_to.is_some() {
                                e.opt_int(m.valid_from).opt_int(m.valid_to);
                            }
                        }
                    }
                }
                e.finish()
            }
        }
    }
}

/// The entry hash: `SHA-256(field(TAG_ENTRY) field(namespace) field(seq) field(kind) field(id)
/// field(prev_hash) field(content_hash))`.
pub fn entry_hash(namespace: &str, seq: i64, kind: EntryKind, id: i64, prev: &Hash, content: &Hash) -> Hash {
    let mut e = Encoder::new(TAG_ENTRY);
    e.text(namespace).int(seq).text(kind.as_str()).int(id).bytes(prev).bytes(content);
    e.finish()
}

/// Lower-case hex of a hash.
pub fn hex(h: &Hash) -> String {
    let mut s = String::with_capacity(64);
    for b in h {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// A hash from hex (64 hex digits), or None.
pub fn parse_hex(s: &str) -> Option<Hash> {
    let s = s.trim();
    if s.len() != 64 || !s.is_ascii() {
        return None;
    }
    let mut h = [0u8; 32];
    for (i, b) in h.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(h)
}

/// A hash from bytes read back from a store (None: not 32 bytes).
pub fn hash_from(b: &[u8]) -> Option<Hash> {
    b.try_into().ok()
}

/// Serialise a hash as hex.
pub mod hex_serde {
    use super::*;
    /// Serialise.
    pub fn serialize<S: serde::Serializer>(h: &Hash, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex(h))
    }
    /// Deserialise.
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Hash, D::Error> {
        let s = String::deserialize(d)?;
        parse_hex(&s).ok_or_else(|| serde::de::Error::custom(format!("not a 64-digit hex hash: {s:?}")))
    }
}

/// One entry of a chain as a store holds it, with the row it points at (None: missing).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChainRecord {
    /// Its namespace.
    pub namespace: String,
    /// Its position in the namespace's chain (1, 2, 3 …).
    pub seq: i64,
    /// Event or turn.
    pub entry: EntryKind,
    /// The row's id (event seq or turn id).
    pub id: i64,
    /// The content hash recorded when the entry was written.
    #[serde(with = "hex_serde")]
    pub content_hash: Hash,
    /// The previous entry's hash recorded when the entry was written.
    #[serde(with = "hex_serde")]
    pub prev_hash: Hash,
    /// The entry hash recorded when the entry was written.
    #[serde(with = "hex_serde")]
    pub entry_hash: Hash,
    /// The row as stored now (None: the row is gone).
    pub content: Option<Content>,
}

/// A namespace's chain head: its last entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainHead {
    /// The namespace.
    pub namespace: String,
    /// The last entry's seq (its number of entries).
    pub seq: i64,
    /// The last entry's hash.
    #[serde(with = "hex_serde")]
    pub hash: Hash,
}

/// What is wrong with an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakKind {
    /// The entry's seq is not the one after the previous entry's (entries removed or moved).
    SequenceGap,
    /// The row the entry points at is gone (removed).
    RowMissing,
    /// The row's content no longer hashes to the recorded content hash (changed).
    ContentHashMismatch,
    /// The entry's recorded previous hash is not the previous entry's hash (an entry before
    /// it was removed, changed or reordered).
    PrevHashMismatch,
    /// The entry's recorded hash is not the hash of its fields (the entry itself changed).
    EntryHashMismatch,
    /// The recorded head is not the chain's last entry (entries removed from the end, or a
    /// head from elsewhere).
    HeadMismatch,
    /// A row (event or turn) of the namespace that no entry points at (inserted outside the
    /// chain).
    Unchained,
}

impl BreakKind {
    /// In words.
    pub fn describe(self) -> &'static str {
        match self {
            BreakKind::SequenceGap => "sequence gap (an entry before it was removed or reordered)",
            BreakKind::RowMissing => "its row is missing (removed)",
            BreakKind::ContentHashMismatch => "content hash mismatch (the row was changed)",
            BreakKind::PrevHashMismatch => {
                "previous-hash mismatch (an entry before it was removed, changed or reordered)"
            }
            BreakKind::EntryHashMismatch => "entry hash mismatch (the chain entry itself was changed)",
            BreakKind::HeadMismatch => "head mismatch (entries removed from the end, or another head)",
            BreakKind::Unchained => "a row no chain entry covers (inserted outside the history)",
        }
    }
}

/// The first bad entry of a chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainBreak {
    /// The entry's seq in the chain (for `Unchained`: 0).
    pub seq: i64,
    /// Event or turn.
    pub entry: EntryKind,
    /// The row's id (event seq or turn id).
    pub id: i64,
    /// What is wrong.
    pub problem: BreakKind,
    /// In words, with the values that disagree.
    pub detail: String,
}

impl std::fmt::Display for ChainBreak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.problem == BreakKind::Unchained {
            write!(f, "{} {}: {}", self.entry, self.id, self.detail)
        } else {
            write!(f, "entry {} ({} {}): {}", self.seq, self.entry, self.id, self.detail)
        }
    }
}

/// The check of one namespace's chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainReport {
    /// The namespace.
    pub namespace: String,
    /// Entries checked.
    pub entries: u64,
    /// The last entry's seq and hash (None: no entries).
    pub head: Option<ChainHead>,
    /// The first bad entry (None: the chain verifies).
    pub first_bad: Option<ChainBreak>,
}

impl ChainReport {
    /// Whether the chain verifies.
    pub fn ok(&self) -> bool {
        self.first_bad.is_none()
    }
}

/// Check a namespace's chain: `records` in seq order; `recorded_head` the head the store (or
/// an export) records, if any; `unchained` the rows of the namespace no entry points at.
/// Stops at the first bad entry (every later one commits to it, so it would fail too).
pub fn verify(
    namespace: &str,
    records: impl IntoIterator<Item = ChainRecord>,
    recorded_head: Option<&ChainHead>,
    unchained: &[(EntryKind, i64)],
) -> ChainReport {
    let mut v = Verifier::new(namespace);
    for r in records {
        if !v.push(&r) {
            break;
        }
    }
    v.finish(recorded_head, unchained)
}

/// [`verify`] one entry at a time, so a store streams its chain instead of holding it.
#[derive(Clone, Debug)]
pub struct Verifier {
    namespace: String,
    prev: Hash,
    expect: i64,
    entries: u64,
    head: Option<ChainHead>,
    first_bad: Option<ChainBreak>,
}

impl Verifier {
    /// A check of `namespace`'s chain from its first entry.
    pub fn new(namespace: &str) -> Verifier {
        Verifier { namespace: namespace.to_string(), prev: GENESIS, expect: 1, entries: 0, head: None, first_bad: None }
    }

    /// Whether a bad entry was found (later entries are then not looked at).
    pub fn broken(&self) -> bool {
        self.first_bad.is_some()
    }

    /// Check the next entry; false once the chain is broken (stop feeding it).
    pub fn push(&mut self, r: &ChainRecord) -> bool {
        if self.first_bad.is_some() {
            return false;
        }
        self.entries += 1;
        let bad =
            |problem: BreakKind, detail: String| ChainBreak { seq: r.seq, entry: r.entry, id: r.id, problem, detail };
        let (prev, expect) = (self.prev, self.expect);
        let found = if r.seq != expect {
            Some(bad(
                BreakKind::SequenceGap,
                format!(
                    "{}: expected entry {expect} after entry {}, found entry {}",
                    BreakKind::SequenceGap.describe(),
                    expect - 1,
                    r.seq
                ),
            ))
        } else {
            match &r.content {
                None => Some(bad(BreakKind::RowMissing, BreakKind::RowMissing.describe().to_string())),
                Some(c) if c.kind() != r.entry || c.id() != r.id => Some(bad(
                    BreakKind::ContentHashMismatch,
                    format!("the entry points at {} {} but the row is {} {}", r.entry, r.id, c.kind(), c.id()),
                )),
                Some(c) if c.erased().is_some_and(|m| m.before != r.content_hash) => Some(bad(
                    BreakKind::ContentHashMismatch,
                    format!(
                        "{}: recorded {}, but its erasure says it hashed to {} before",
                        BreakKind::ContentHashMismatch.describe(),
                        hex(&r.content_hash),
                        c.erased().map(|m| hex(&m.before)).unwrap_or_default()
                    ),
                )),
                Some(c) => {
                    let now = c.hash();
                    // An erased row is checked against what its erasure says it hashes to now.
                    let expected = c.erased().map_or(r.content_hash, |m| m.after);
                    if now != expected {
                        Some(bad(
                            BreakKind::ContentHashMismatch,
                            format!(
                                "{}: recorded {}, the row hashes to {}",
                                BreakKind::ContentHashMismatch.describe(),
                                hex(&expected),
                                hex(&now)
                            ),
                        ))
                    } else if r.prev_hash != prev {
                        Some(bad(
                            BreakKind::PrevHashMismatch,
                            format!(
                                "{}: recorded {}, entry {} hashes to {}",
                                BreakKind::PrevHashMismatch.describe(),
                                hex(&r.prev_hash),
                                expect - 1,
                                hex(&prev)
                            ),
                        ))
                    } else {
                        let h = entry_hash(&self.namespace, r.seq, r.entry, r.id, &r.prev_hash, &r.content_hash);
                        (h != r.entry_hash).then(|| {
                            bad(
                                BreakKind::EntryHashMismatch,
                                format!(
                                    "{}: recorded {}, its fields hash to {}",
                                    BreakKind::EntryHashMismatch.describe(),
                                    hex(&r.entry_hash),
                                    hex(&h)
                                ),
                            )
                        })
                    }
                }
            }
        };
        if found.is_some() {
            self.first_bad = found;
            return false;
        }
        self.prev = r.entry_hash;
        self.expect = r.seq + 1;
        self.head = Some(ChainHead { namespace: self.namespace.clone(), seq: r.seq, hash: r.entry_hash });
        true
    }

    /// The report, after the last entry: the chain must end at `recorded_head` (if given), and
    /// no row may be `unchained`.
    pub fn finish(self, recorded_head: Option<&ChainHead>, unchained: &[(EntryKind, i64)]) -> ChainReport {
        let mut first_bad = self.first_bad;
        if first_bad.is_none() {
            if let Some(rh) = recorded_head {
                let (seq, hash) = self.head.as_ref().map(|h| (h.seq, h.hash)).unwrap_or((0, GENESIS));
                if rh.seq != seq || rh.hash != hash {
                    first_bad = Some(ChainBreak {
                        seq: rh.seq,
                        entry: EntryKind::Event,
                        id: 0,
                        problem: BreakKind::HeadMismatch,
                        detail: format!(
                            "{}: the recorded head is entry {} {}, the chain ends at entry {seq} {}",
                            BreakKind::HeadMismatch.describe(),
                            rh.seq,
                            hex(&rh.hash),
                            hex(&hash)
                        ),
                    });
                }
            }
        }
        if first_bad.is_none() {
            if let Some((kind, id)) = unchained.iter().min() {
                first_bad = Some(ChainBreak {
                    seq: 0,
                    entry: *kind,
                    id: *id,
                    problem: BreakKind::Unchained,
                    detail: format!("{} ({} such row(s))", BreakKind::Unchained.describe(), unchained.len()),
                });
            }
        }
        ChainReport { namespace: self.namespace, entries: self.entries, head: self.head, first_bad }
    }
}

/// Entries to append to one namespace's chain, as a write builds them: the head is read once
/// (inside the write's transaction, under its lock) and advanced by each entry.
#[derive(Clone, Debug)]
pub struct Appender {
    /// The namespace.
    pub namespace: String,
    /// The seq of the last entry (0: none yet).
    pub seq: i64,
    /// The last entry's hash ([`GENESIS`]: none yet).
    pub hash: Hash,
}

/// An entry to store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewEntry {
    /// Its seq.
    pub seq: i64,
    /// Event or turn.
    pub entry: EntryKind,
    /// The row's id.
    pub id: i64,
    /// The content hash.
    pub content_hash: Hash,
    /// The previous entry's hash.
    pub prev_hash: Hash,
    /// The entry hash.
    pub entry_hash: Hash,
}

impl NewEntry {
    /// The entry as a chain page lists it: in `namespace`, with the row as stored now.
    pub fn record(&self, namespace: &str, content: Option<Content>) -> ChainRecord {
        ChainRecord {
            namespace: namespace.to_string(),
            seq: self.seq,
            entry: self.entry,
            id: self.id,
            content_hash: self.content_hash,
            prev_hash: self.prev_hash,
            entry_hash: self.entry_hash,
            content,
        }
    }
}

impl Appender {
    /// Continue the chain of `namespace` after the head `(seq, hash)` (None: an empty chain).
    pub fn after(namespace: &str, head: Option<(i64, Hash)>) -> Appender {
        let (seq, hash) = head.unwrap_or((0, GENESIS));
        Appender { namespace: namespace.to_string(), seq, hash }
    }

    /// The next entry for `content`; advances the head.
    pub fn append(&mut self, content: &Content) -> NewEntry {
        let content_hash = content.hash();
        self.append_hashed(content.kind(), content.id(), content_hash)
    }

    /// The next entry for a row whose content hash is known.
    pub fn append_hashed(&mut self, entry: EntryKind, id: i64, content_hash: Hash) -> NewEntry {
        let seq = self.seq + 1;
        let prev_hash = self.hash;
        let entry_hash = entry_hash(&self.namespace, seq, entry, id, &prev_hash, &content_hash);
        self.seq = seq;
        self.hash = entry_hash;
        NewEntry { seq, entry, id, content_hash, prev_hash, entry_hash }
    }
}

/// The order in which the rows written before a store kept a chain are chained by its
/// migration: by time, then turns before events, then id.
pub fn backfill_order(a: &Content, b: &Content) -> std::cmp::Ordering {
    let at = |c: &Content| match c {
        Content::Turn(t) => t.at,
        Content::Event(e) => e.at,
        Content::Erasure(r) => r.at.0,
    };
    let rank = |c: &Content| match c {
        Content::Turn(_) => 0,
        Content::Event(_) => 1,
        Content::Erasure(_) => 2,
    };
    (at(a), rank(a), a.id()).cmp(&(at(b), rank(b), b.id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_created_event_commits_to_the_inserted_memorys_immutable_part() {
        use crate::model::{fixtures, Claim};
        use crate::time::Timestamp;
        use crate::world_time::Validity;
        let m = NewMemory {
            content: "Ben's phone is 555".into(),
            claim: Some(Claim::new("Ben", "phone", "555")),
            entities: vec!["ben".into()],
            importance: 0.75,
            pinned: true,
            validity: Validity { from: Some(Timestamp(3)), to: None },
            ..fixtures::new_memory(Timestamp(7))
        };
        let c = CreatedMemory::of(&m, "[\"ben\"]".into());
        assert_eq!(
            c,
            CreatedMemory {
                kind: "semantic".into(),
                content: "Ben's phone is 555".into(),
                claim_entity: Some("Ben".into()),
                claim_attribute: Some("phone".into()),
                claim_value: Some("555".into()),
                entities: "[\"ben\"]".into(),
                importance: 0.75,
                created_at: 7,
                pinned: true,
                valid_from: Some(3),
                valid_to: None,
            }
        );
    }

    fn turn(id: i64, text: &str) -> Content {
        Content::Turn(TurnContent {
            namespace: "ns".into(),
            id,
            source: "user".into(),
            at: 1000 + id,
            text: text.into(),
            external_id: None,
            erased: None,
        })
    }

    fn chain(contents: &[Content]) -> Vec<ChainRecord> {
        let mut a = Appender::after("ns", None);
        contents.iter().map(|c| a.append(c).record("ns", Some(c.clone()))).collect()
    }

    #[test]
    fn the_encoding_is_length_prefixed_and_null_is_not_empty() {
        let mut a = Encoder::new("t");
        a.opt_text(None);
        let mut b = Encoder::new("t");
        b.text("");
        assert_ne!(a.finish(), b.finish());
        // "ab" + "c" differs from "a" + "bc".
        let mut a = Encoder::new("t");
        a.text("ab").text("c");
        let mut b = Encoder::new("t");
        b.text("a").text("bc");
        assert_ne!(a.finish(), b.finish());
    }

    const DOC_CONTENT_HASH: &str = "cefac602e9273fa3193e0e781501b54e5787ce549bd5f80de94fe7fd1dafa233";
    const DOC_ENTRY_HASH: &str = "a85d1914394e196142db4675c08a3ee180f88e008ccafc51b5c6f83ee4b5d974";

    #[test]
    fn the_documented_example_hashes_as_documented() {
        // docs/history-chain.md works this example through; keep both in step.
        let t = Content::Turn(TurnContent {
            namespace: "default".into(),
            id: 1,
            source: "user".into(),
            at: 0,
            text: "hi".into(),
            external_id: None,
            erased: None,
        });
        let mut a = Appender::after("default", None);
        let e = a.append(&t);
        assert_eq!(hex(&e.content_hash), DOC_CONTENT_HASH);
        assert_eq!(e.prev_hash, GENESIS);
        assert_eq!(hex(&e.entry_hash), DOC_ENTRY_HASH);
    }

    #[test]
    fn an_untouched_chain_verifies_and_reports_its_head() {
        let recs = chain(&[turn(1, "a"), turn(2, "b"), turn(3, "c")]);
        let head = ChainHead { namespace: "ns".into(), seq: 3, hash: recs[2].entry_hash };
        let r = verify("ns", recs, Some(&head), &[]);
        assert!(r.ok(), "{r:?}");
        assert_eq!(r.entries, 3);
        assert_eq!(r.head, Some(head));
    }

    #[test]
    fn a_changed_removed_or_reordered_entry_is_named() {
        let recs = chain(&[turn(1, "a"), turn(2, "b"), turn(3, "c")]);
        // Changed content.
        let mut changed = recs.clone();
        if let Some(Content::Turn(t)) = &mut changed[1].content {
            t.text = "B".into();
        }
        let b = verify("ns", changed, None, &[]).first_bad.unwrap();
        assert_eq!((b.seq, b.id, b.problem), (2, 2, BreakKind::ContentHashMismatch));
        // Row gone.
        let mut gone = recs.clone();
        gone[0].content = None;
        let b = verify("ns", gone, None, &[]).first_bad.unwrap();
        assert_eq!((b.seq, b.problem), (1, BreakKind::RowMissing));
        // Entry removed.
        let mut removed = recs.clone();
        removed.remove(1);
        let b = verify("ns", removed, None, &[]).first_bad.unwrap();
        assert_eq!((b.seq, b.id, b.problem), (3, 3, BreakKind::SequenceGap));
        // Two entries' seqs swapped (reordered).
        let mut swapped = recs.clone();
        swapped.swap(0, 1);
        swapped[0].seq = 1;
        swapped[1].seq = 2;
        let b = verify("ns", swapped, None, &[]).first_bad.unwrap();
        assert_eq!(b.seq, 1);
        assert_eq!(b.id, 2);
        assert!(matches!(b.problem, BreakKind::PrevHashMismatch | BreakKind::EntryHashMismatch), "{b:?}");
        // Tail removed: caught by the recorded head.
        let head = ChainHead { namespace: "ns".into(), seq: 3, hash: recs[2].entry_hash };
        let b = verify("ns", recs[..2].to_vec(), Some(&head), &[]).first_bad.unwrap();
        assert_eq!(b.problem, BreakKind::HeadMismatch);
        // A row outside the chain.
        let b = verify("ns", recs.clone(), None, &[(EntryKind::Event, 9)]).first_bad.unwrap();
        assert_eq!((b.id, b.problem), (9, BreakKind::Unchained));
    }
}
