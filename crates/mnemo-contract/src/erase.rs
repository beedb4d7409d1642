//! Erasure (see docs/erasure.md): removing content for good, where forgetting only tombstones.
//!
//! The engine resolves what a request erases (an [`ErasePlan`]: memories, whole turns, and turns
//! whose text keeps everything but the erased values); the store applies it in one transaction:
//! it overwrites every content column of those rows, and keeps a content-free [`ErasureRecord`]
//! (which rows, the hash each had before and has after, the time, the reason, who asked). The
//! record is an entry of the namespace's history chain, so the chain still verifies: an erased
//! row is checked against the hashes its erasure lists (see `chain`).
use serde::{Deserialize, Serialize};

use crate::chain::{self, Content, EntryKind, Hash};
use crate::error::{CoreError, Result};
use crate::ids::{MemoryId, TurnId};
use crate::model::Namespace;
use crate::time::Timestamp;

/// What is asked to be erased.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "lowercase")]
pub enum EraseTarget {
    /// One memory (and the values it holds, out of every turn of its namespace).
    Memory {
        /// The memory.
        id: MemoryId,
    },
    /// One raw turn, whole.
    Turn {
        /// The turn.
        id: TurnId,
    },
    /// Every version of a claim `entity | attribute`, tombstoned ones included (and their
    /// values, out of every turn).
    Claim {
        /// The entity, as written.
        entity: String,
        /// The attribute, as written.
        attribute: String,
    },
    /// Every memory of a subject entity (its claims, and every memory that names it), and the
    /// subject's name and values out of every turn.
    Subject {
        /// The entity, as written.
        entity: String,
    },
}

impl EraseTarget {
    /// `memory`, `turn`, `claim` or `subject`: what an erasure record keeps of its target
    /// (never the entity's name or a value).
    pub fn kind(&self) -> &'static str {
        match self {
            EraseTarget::Memory { .. } => "memory",
            EraseTarget::Turn { .. } => "turn",
            EraseTarget::Claim { .. } => "claim",
            EraseTarget::Subject { .. } => "subject",
        }
    }

    /// In words, for the one who asked (it may name the entity).
    pub fn describe(&self) -> String {
        match self {
            EraseTarget::Memory { id } => format!("memory {id}"),
            EraseTarget::Turn { id } => format!("turn {id}"),
            EraseTarget::Claim { entity, attribute } => format!("claim {entity} | {attribute} (every version)"),
            EraseTarget::Subject { entity } => format!("subject {entity} (every memory and turn of it)"),
        }
    }
}

/// What a store is asked to erase, resolved by the engine (every id in the namespace).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErasePlan {
    /// `memory`, `turn`, `claim` or `subject` (see [`EraseTarget::kind`]).
    pub target: String,
    /// Why (required, kept).
    pub reason: String,
    /// Who asked (the principal), if known.
    pub by: Option<String>,
    /// Memories whose content is erased (every content column emptied, every event's detail
    /// emptied; the row stays as an erased tombstone).
    pub memories: Vec<MemoryId>,
    /// Turns erased whole (their text becomes [`ERASED_TEXT`]).
    pub turns: Vec<TurnId>,
    /// Turns that keep their text with the erased values cut out: the new text of each.
    pub redact: Vec<(TurnId, String)>,
}

impl ErasePlan {
    /// Whether it erases nothing.
    pub fn is_empty(&self) -> bool {
        self.memories.is_empty() && self.turns.is_empty() && self.redact.is_empty()
    }

    /// Refuse a plan without a reason (a store checks it before touching anything: the
    /// reason is what the record keeps of why).
    pub fn require_reason(&self) -> Result<()> {
        if self.reason.trim().is_empty() {
            return Err(CoreError::InvalidInput("an erasure needs a reason".into()));
        }
        Ok(())
    }
}

/// The new text an erasure gives one turn of its plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnRewrite {
    /// The turn.
    pub turn: TurnId,
    /// Its new text: [`ERASED_TEXT`] for a whole turn, else the text with the values cut out.
    pub text: String,
    /// Erased whole (listed in the record's `turns`) rather than redacted (`redacted`).
    pub whole: bool,
}

impl TurnRewrite {
    /// Whether it changes the turn whose chained content is `current` (a turn that already
    /// reads so is left alone, and not listed).
    pub fn changes(&self, current: &Content) -> bool {
        !matches!(current, Content::Turn(t) if t.text == self.text)
    }
}

/// The rewrites of a plan's turns (its `turns` and `redact`), whole turns first, each in the
/// plan's order; a turn named again is for [`ErasedSet::has_turn`] to skip.
pub fn turn_rewrites(turns: &[TurnId], redact: Vec<(TurnId, String)>) -> impl Iterator<Item = TurnRewrite> + '_ {
    turns
        .iter()
        .map(|t| TurnRewrite { turn: *t, text: ERASED_TEXT.to_string(), whole: true })
        .chain(redact.into_iter().map(|(turn, text)| TurnRewrite { turn, text, whole: false }))
}

/// What an erasure changed, gathered while a store rewrites the plan's rows (the same
/// bookkeeping in every store), and the record it then leaves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErasedSet {
    memories: Vec<MemoryId>,
    turns: Vec<TurnId>,
    redacted: Vec<TurnId>,
    rows: Vec<ErasedRow>,
}

impl ErasedSet {
    /// Whether memory `id` is erased by this erasure already (a plan may name one twice).
    pub fn has_memory(&self, id: MemoryId) -> bool {
        self.memories.contains(&id)
    }

    /// Memory `id` was erased: its events' chained contents before and after, in the same
    /// order (each pair is one changed row).
    pub fn add_memory(&mut self, id: MemoryId, before: &[Content], after: &[Content]) {
        for (b, a) in before.iter().zip(after) {
            self.rows.push(ErasedRow { entry: EntryKind::Event, id: b.id(), before: b.hash(), after: a.hash() });
        }
        self.memories.push(id);
    }

    /// Whether turn `id` is rewritten by this erasure already, whole or redacted.
    pub fn has_turn(&self, id: TurnId) -> bool {
        self.turns.contains(&id) || self.redacted.contains(&id)
    }

    /// A turn was rewritten as `rewrite` says: its chained content before and after.
    pub fn add_turn(&mut self, rewrite: &TurnRewrite, before: &Content, after: &Content) {
        let id = rewrite.turn;
        self.rows.push(ErasedRow { entry: EntryKind::Turn, id: id.0, before: before.hash(), after: after.hash() });
        if rewrite.whole {
            self.turns.push(id);
        } else {
            self.redacted.push(id);
        }
    }

    /// The record of erasure `id` of `ns` at `at`, its rows sorted by kind and id; an error
    /// when nothing was changed (everything named was erased already), which the store's
    /// transaction is then rolled back on.
    pub fn into_record(
        self,
        ns: &Namespace,
        id: i64,
        at: Timestamp,
        reason: String,
        by: Option<String>,
        target: String,
    ) -> Result<ErasureRecord> {
        let ErasedSet { memories, turns, redacted, mut rows } = self;
        if memories.is_empty() && turns.is_empty() && redacted.is_empty() {
            return Err(CoreError::InvalidInput(format!(
                "nothing left to erase in namespace {ns}: what was named is erased already"
            )));
        }
        rows.sort_by_key(|r| (r.entry, r.id));
        Ok(ErasureRecord {
            namespace: ns.as_str().to_string(),
            id,
            at,
            reason,
            by,
            target,
            memories,
            turns,
            redacted,
            rows,
        })
    }
}

/// What an erased turn's text becomes, and what replaces an erased value inside a turn.
pub const ERASED_TEXT: &str = "[erased]";

/// One row an erasure changed: its hash as chained before and as it is after (so the history
/// chain still checks it, and a later change of what is left is still caught).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErasedRow {
    /// Event or turn.
    pub entry: EntryKind,
    /// The event's seq or the turn's id.
    pub id: i64,
    /// Its content hash before the erasure.
    #[serde(with = "chain::hex_serde")]
    pub before: Hash,
    /// Its content hash after the erasure.
    #[serde(with = "chain::hex_serde")]
    pub after: Hash,
}

impl ErasedRow {
    /// The rows of one erasure as a SQL store lists them in one column: `kind:id:before:after`
    /// (hashes in hex), comma-separated, in any order; sorted by (entry, id). A part no write
    /// produced reads as a row that hashes differently (an unknown kind as an erasure, a bad id
    /// as `i64::MIN`, a bad hash as all `ff`), so the chain check catches it rather than
    /// skipping it.
    pub fn parse_listed(listed: &str) -> Vec<ErasedRow> {
        let mut rows: Vec<ErasedRow> = listed
            .split(',')
            .filter(|p| !p.is_empty())
            .map(|part| {
                let f: Vec<&str> = part.split(':').collect();
                let hash = |i: usize| f.get(i).and_then(|h| chain::parse_hex(h)).unwrap_or([0xff; 32]);
                ErasedRow {
                    entry: f.first().and_then(|k| EntryKind::parse(k)).unwrap_or(EntryKind::Erasure),
                    id: f.get(1).and_then(|n| n.parse().ok()).unwrap_or(i64::MIN),
                    before: hash(2),
                    after: hash(3),
                }
            })
            .collect();
        rows.sort_by_key(|r| (r.entry, r.id));
        rows
    }
}

/// The content-free record an erasure leaves (an entry of the namespace's history chain).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErasureRecord {
    /// The namespace.
    pub namespace: String,
    /// Its id (store-wide, increasing).
    pub id: i64,
    /// When.
    pub at: Timestamp,
    /// Why.
    pub reason: String,
    /// Who asked, if known.
    pub by: Option<String>,
    /// `memory`, `turn`, `claim` or `subject`.
    pub target: String,
    /// The memories erased.
    pub memories: Vec<MemoryId>,
    /// The turns erased whole.
    pub turns: Vec<TurnId>,
    /// The turns the erased values were cut out of.
    pub redacted: Vec<TurnId>,
    /// Every row changed, with its hashes before and after.
    pub rows: Vec<ErasedRow>,
}

impl ErasureRecord {
    /// Its content hash (see docs/history-chain.md): fields `"mnemo/history/v1/erasure"`,
    /// namespace, id, at, reason, by (text or NULL), target; then the count and ids of
    /// memories, of turns and of redacted turns; then the count of rows and, per row, its kind,
    /// id, before and after.
    pub fn hash(&self) -> Hash {
        let mut e = chain::Encoder::new(chain::TAG_ERASURE);
        e.text(&self.namespace).int(self.id).int(self.at.0).text(&self.reason).opt_text(self.by.as_deref());
        e.text(&self.target);
        e.int(self.memories.len() as i64);
        for m in &self.memories {
            e.int(m.0);
        }
        e.int(self.turns.len() as i64);
        for t in &self.turns {
            e.int(t.0);
        }
        e.int(self.redacted.len() as i64);
        for t in &self.redacted {
            e.int(t.0);
        }
        e.int(self.rows.len() as i64);
        for r in &self.rows {
            e.text(r.entry.as_str()).int(r.id).bytes(&r.before).bytes(&r.after);
        }
        e.finish()
    }

    /// "erased at <time>: <reason>".
    pub fn describe(&self) -> String {
        format!("erased at {}: {}", self.at.to_rfc3339(), self.reason)
    }
}

/// `text` with every occurrence of each of `values` (compared without regard to ASCII case,
/// and only as a whole word: a value that starts or ends with a letter or digit is not cut out
/// of a longer word, so `Ben` leaves `Benefit` alone) replaced by [`ERASED_TEXT`]; None when
/// none occurs. Empty values are ignored; longer values are cut first (so a value inside
/// another goes with it).
pub fn redact(text: &str, values: &[String]) -> Option<String> {
    let mut values: Vec<&str> = values.iter().map(|v| v.trim()).filter(|v| !v.is_empty()).collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    let mut out = text.to_string();
    let mut changed = false;
    for v in values {
        let mut from = 0;
        while let Some(at) = find_word(&out, v, from) {
            out.replace_range(at..at + v.len(), ERASED_TEXT);
            from = at + ERASED_TEXT.len();
            changed = true;
        }
    }
    changed.then_some(out)
}

/// The byte offset of the first occurrence of `needle` in `hay` at or after `from`, with ASCII
/// case ignored (any other character compared exactly), as a whole word (see [`redact`]).
fn find_word(hay: &str, needle: &str, from: usize) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.is_empty() || from + n.len() > h.len() {
        return None;
    }
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let starts_word = word(needle.chars().next());
    let ends_word = word(needle.chars().next_back());
    (from..=h.len() - n.len())
        .filter(|&i| hay.is_char_boundary(i) && hay.is_char_boundary(i + n.len()))
        .filter(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
        .find(|&i| {
            let glued_before = starts_word && word(hay[..i].chars().next_back());
            let glued_after = ends_word && word(hay[i + n.len()..].chars().next());
            !glued_before && !glued_after
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_rows_are_parsed_sorted_and_a_garbled_part_never_vanishes() {
        let a = "11".repeat(32);
        let b = "22".repeat(32);
        let rows = ErasedRow::parse_listed(&format!("turn:3:{a}:{b},event:7:{a}:{b},,bogus:x:zz"));
        assert_eq!(rows.len(), 3, "the empty part is skipped, the garbled one kept");
        assert_eq!((rows[0].entry, rows[0].id), (EntryKind::Event, 7));
        assert_eq!(
            (rows[1].entry, rows[1].id, rows[1].before, rows[1].after),
            (EntryKind::Turn, 3, [0x11; 32], [0x22; 32])
        );
        assert_eq!((rows[2].entry, rows[2].id, rows[2].before), (EntryKind::Erasure, i64::MIN, [0xff; 32]));
        assert!(ErasedRow::parse_listed("").is_empty());
    }

    #[test]
    fn redaction_cuts_every_occurrence_whatever_its_case_and_leaves_the_rest() {
        let values = vec!["+1 555 0100".to_string(), "ben".to_string(), " ".to_string()];
        let out = redact("Ben's phone is +1 555 0100; call BEN at +1 555 0100.", &values).unwrap();
        assert_eq!(out, "[erased]'s phone is [erased]; call [erased] at [erased].");
        assert_eq!(redact("nothing here", &values), None);
        // Only whole words: a name inside another word stays.
        assert_eq!(redact("Benefits for Ben", &values).unwrap(), "Benefits for [erased]");
        // Multi-byte text around a value is kept whole.
        assert_eq!(redact("«+1 555 0100»", &values).unwrap(), "«[erased]»");
    }

    fn turn(id: i64, text: &str) -> Content {
        Content::Turn(crate::chain::TurnContent {
            namespace: "default".into(),
            id,
            source: "user".into(),
            at: 1,
            text: text.into(),
            external_id: None,
            erased: None,
        })
    }

    fn event(seq: i64, detail: &str) -> Content {
        Content::Event(crate::chain::EventContent {
            namespace: Some("default".into()),
            seq,
            memory_id: 3,
            at: 1,
            event: "created".into(),
            turn_id: None,
            detail: detail.into(),
            memory: None,
            erased: None,
        })
    }

    #[test]
    fn an_erasure_lists_what_it_changed_with_its_rows_sorted_by_kind_and_id() {
        let ns = Namespace::default();
        let plan_turns = [TurnId(7), TurnId(2)];
        let rewrites: Vec<TurnRewrite> =
            turn_rewrites(&plan_turns, vec![(TurnId(5), "call [erased]".into()), (TurnId(7), "x".into())]).collect();
        assert_eq!(
            rewrites.iter().map(|r| (r.turn, r.text.as_str(), r.whole)).collect::<Vec<_>>(),
            [
                (TurnId(7), ERASED_TEXT, true),
                (TurnId(2), ERASED_TEXT, true),
                (TurnId(5), "call [erased]", false),
                (TurnId(7), "x", false)
            ]
        );
        assert!(!rewrites[0].changes(&turn(7, ERASED_TEXT)), "an erased turn is not erased again");
        assert!(rewrites[0].changes(&turn(7, "Ben's phone")));

        let mut erased = ErasedSet::default();
        let before = [event(9, "{\"source\":\"user\"}"), event(4, "{\"sources\":[\"user\"]}")];
        let after = [event(9, "{}"), event(4, "{}")];
        erased.add_memory(MemoryId(3), &before, &after);
        assert!(erased.has_memory(MemoryId(3)) && !erased.has_memory(MemoryId(4)));
        erased.add_turn(&rewrites[0], &turn(7, "a"), &turn(7, ERASED_TEXT));
        erased.add_turn(&rewrites[2], &turn(5, "call Ben"), &turn(5, "call [erased]"));
        assert!(erased.has_turn(TurnId(7)) && erased.has_turn(TurnId(5)) && !erased.has_turn(TurnId(2)));

        let r =
            erased.into_record(&ns, 11, Timestamp(5), "asked".into(), Some("ops".into()), "subject".into()).unwrap();
        assert_eq!((r.namespace.as_str(), r.id, r.at, r.reason.as_str()), ("default", 11, Timestamp(5), "asked"));
        assert_eq!((r.by.as_deref(), r.target.as_str()), (Some("ops"), "subject"));
        assert_eq!((r.memories, r.turns, r.redacted), (vec![MemoryId(3)], vec![TurnId(7)], vec![TurnId(5)]));
        let order: Vec<(EntryKind, i64)> = r.rows.iter().map(|row| (row.entry, row.id)).collect();
        assert_eq!(order, [(EntryKind::Event, 4), (EntryKind::Event, 9), (EntryKind::Turn, 5), (EntryKind::Turn, 7)]);
        assert_eq!(r.rows[0].before, before[1].hash());
        assert_eq!(r.rows[0].after, after[1].hash());
        assert_ne!(r.rows[0].before, r.rows[0].after);
    }

    #[test]
    fn an_erasure_that_changed_nothing_or_has_no_reason_is_refused() {
        let ns = Namespace::new("team").unwrap();
        let e = ErasedSet::default().into_record(&ns, 1, Timestamp(5), "asked".into(), None, "memory".into());
        assert_eq!(
            e.unwrap_err().to_string(),
            "invalid input: nothing left to erase in namespace team: what was named is erased already"
        );
        let plan = ErasePlan { reason: "  ".into(), ..ErasePlan::default() };
        assert_eq!(plan.require_reason().unwrap_err().to_string(), "invalid input: an erasure needs a reason");
        assert!(ErasePlan { reason: "asked".into(), ..plan }.require_reason().is_ok());
    }

    #[test]
    fn an_erasure_record_hashes_every_field() {
        let r = ErasureRecord {
            namespace: "default".into(),
            id: 1,
            at: Timestamp(5),
            reason: "asked".into(),
            by: None,
            target: "memory".into(),
            memories: vec![MemoryId(3)],
            turns: vec![],
            redacted: vec![TurnId(2)],
            rows: vec![ErasedRow { entry: EntryKind::Turn, id: 2, before: [1; 32], after: [2; 32] }],
        };
        let h = r.hash();
        let mut other = r.clone();
        other.rows[0].after = [3; 32];
        assert_ne!(other.hash(), h);
        let mut other = r.clone();
        other.redacted.clear();
        other.turns.push(TurnId(2));
        assert_ne!(other.hash(), h);
        assert_eq!(r.describe(), format!("erased at {}: asked", Timestamp(5).to_rfc3339()));
    }
}
