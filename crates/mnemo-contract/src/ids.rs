//! Ids: the number a store keeps, and the short id a tenant reads and writes.
//!
//! A store numbers each namespace's memories and its turns 1, 2, 3 … apart (the id's *local
//! number*), and gives each an id whose low [`LOCAL_BITS`] bits are that number. Both built-in
//! stores use `tag << 32 | n`, the tag a secret-keyed range of the namespace (see the SQLite
//! store's `ids.rs`), so that ids are unique across the store and in insertion order within a
//! namespace. A store never hands a local number out twice in a namespace, a restore included.
//!
//! The id is what the store, the index, exports and plugins hold. A tenant reads and writes
//! the short id: `m42` for a memory, `t17` for a turn — the local number with its kind. It says
//! nothing of other namespaces, a memory's never looks like a turn's, and `why m1` is the first
//! memory of the namespace.
//!
//! Which spelling JSON gets is decided where it is written: the stored number by default
//! (persistence, exports to import elsewhere, plugins), the short id inside
//! [`tenant_spelling`], which every door (CLI, HTTP, MCP) uses to write what it answers.
//! `Display` is always the short id: it is what a person reads in a message.
use std::cell::Cell;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Bits of an id that hold its local number.
pub const LOCAL_BITS: u32 = 32;
/// The local number's mask.
pub const LOCAL_MASK: i64 = (1i64 << LOCAL_BITS) - 1;

thread_local! {
    /// Set while a door writes an answer: ids serialise as short ids.
    static TENANT_SPELLING: Cell<bool> = const { Cell::new(false) };
}

/// Run `write` (a serialisation) with ids spelt as a tenant reads them (`m42`, `t17`).
/// Serialisation is synchronous, so the setting covers exactly what `write` serialises.
pub fn tenant_spelling<T>(write: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            TENANT_SPELLING.with(|t| t.set(self.0));
        }
    }
    let _restore = Restore(TENANT_SPELLING.with(|t| t.replace(true)));
    write()
}

fn tenant_spelt() -> bool {
    TENANT_SPELLING.with(Cell::get)
}

/// What an id names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IdKind {
    /// A memory (`m42`).
    Memory,
    /// A recorded turn (`t17`).
    Turn,
}

impl IdKind {
    /// The short id's letter.
    pub fn letter(self) -> char {
        match self {
            IdKind::Memory => 'm',
            IdKind::Turn => 't',
        }
    }

    /// "memory" or "turn".
    pub fn noun(self) -> &'static str {
        match self {
            IdKind::Memory => "memory",
            IdKind::Turn => "turn",
        }
    }
}

/// The local number of a stored id: its low bits (ids of stores from before per-namespace
/// numbering are small and are their own number).
pub fn local_number(id: i64) -> u32 {
    (id & LOCAL_MASK) as u32
}

macro_rules! stored_id {
    ($(#[$doc:meta])* $name:ident, $kind:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub i64);

        impl $name {
            /// Its number within its namespace.
            pub fn local(self) -> u32 {
                local_number(self.0)
            }
            /// The short id a tenant reads.
            pub fn short(self) -> String {
                self.to_string()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}{}", $kind.letter(), self.local())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                if tenant_spelt() {
                    s.collect_str(self)
                } else {
                    s.serialize_i64(self.0)
                }
            }
        }

        /// Stored JSON holds the number; a short id cannot be read back without its namespace
        /// (resolve an [`IdRef`] through the engine instead).
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                i64::deserialize(d).map($name)
            }
        }
    };
}

stored_id!(
    /// A memory's id, assigned by the Store: unique across namespaces, increasing within one;
    /// shown to a tenant as `m` + its local number.
    MemoryId,
    IdKind::Memory
);

stored_id!(
    /// A recorded turn's id, assigned by the Store; shown to a tenant as `t` + its local number.
    TurnId,
    IdKind::Turn
);

/// An id as a caller writes it, before the engine finds it in a namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IdRef {
    /// `m42` / `t17`, or bare digits (`42`: the kind the command takes).
    Short {
        /// The kind the letter named (None: bare digits).
        kind: Option<IdKind>,
        /// The local number.
        local: u32,
    },
    /// A stored id (a number above the local range, as `--json --full` and exports hold).
    Stored(i64),
}

impl IdRef {
    /// This reference as one for `kind`, or what to write instead.
    pub fn of_kind(self, kind: IdKind) -> Result<IdRef, String> {
        match self {
            IdRef::Short { kind: Some(k), local } if k != kind => Err(format!(
                "{}{local} is a {} id; this takes a {} id ({}…)",
                k.letter(),
                k.noun(),
                kind.noun(),
                kind.letter()
            )),
            other => Ok(other),
        }
    }
}

impl From<MemoryId> for IdRef {
    fn from(id: MemoryId) -> Self {
        IdRef::Stored(id.0)
    }
}

impl From<TurnId> for IdRef {
    fn from(id: TurnId) -> Self {
        IdRef::Stored(id.0)
    }
}

impl fmt::Display for IdRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdRef::Short { kind: Some(k), local } => write!(f, "{}{local}", k.letter()),
            IdRef::Short { kind: None, local } => write!(f, "{local}"),
            IdRef::Stored(n) => write!(f, "{n}"),
        }
    }
}

/// Why a text is not an id.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an id: write m42 for a memory or t17 for a turn, as remember, recall and list report them")]
pub struct BadId(pub String);

impl IdRef {
    /// From a number as JSON carries it.
    pub fn from_number(n: i64) -> Result<IdRef, BadId> {
        match n {
            n if n <= 0 => Err(BadId(n.to_string())),
            n if n > LOCAL_MASK => Ok(IdRef::Stored(n)),
            n => Ok(IdRef::Short { kind: None, local: n as u32 }),
        }
    }
}

impl FromStr for IdRef {
    type Err = BadId;

    fn from_str(s: &str) -> Result<Self, BadId> {
        let t = s.trim();
        let bad = || BadId(s.to_string());
        let (kind, digits) = match t.chars().next() {
            Some('m' | 'M') => (Some(IdKind::Memory), &t[1..]),
            Some('t' | 'T') => (Some(IdKind::Turn), &t[1..]),
            _ => (None, t),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let n: i64 = digits.parse().map_err(|_| bad())?;
        match (kind, IdRef::from_number(n).map_err(|_| bad())?) {
            // A letter names a local number; a stored id is written bare.
            (Some(_), IdRef::Stored(_)) => Err(bad()),
            (Some(k), IdRef::Short { local, .. }) => Ok(IdRef::Short { kind: Some(k), local }),
            (None, r) => Ok(r),
        }
    }
}

/// JSON input: `"m42"`, `"t17"`, `"42"` or `42`.
impl<'de> Deserialize<'de> for IdRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Number(i64),
            Text(String),
        }
        match Written::deserialize(d)? {
            Written::Number(n) => IdRef::from_number(n),
            Written::Text(t) => t.parse(),
        }
        .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const TAG: i64 = 917;

    #[test]
    fn display_is_the_short_id_and_json_the_number_unless_a_door_writes_it() {
        let m = MemoryId(TAG << 32 | 42);
        let t = TurnId(TAG << 32 | 17);
        assert_eq!(m.to_string(), "m42");
        assert_eq!(t.to_string(), "t17");
        assert_eq!(serde_json::to_value(m).unwrap(), serde_json::json!(TAG << 32 | 42));
        let door = tenant_spelling(|| serde_json::to_value((m, t)).unwrap());
        assert_eq!(door, serde_json::json!(["m42", "t17"]));
        // The setting ends with the writing, even past a nested one.
        tenant_spelling(|| tenant_spelling(|| ()));
        assert_eq!(serde_json::to_value(m).unwrap(), serde_json::json!(TAG << 32 | 42));
        // Stored JSON reads back.
        let back: MemoryId = serde_json::from_value(serde_json::json!(TAG << 32 | 42)).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn a_legacy_small_id_is_its_own_number() {
        assert_eq!(MemoryId(7).to_string(), "m7");
    }

    #[test]
    fn references_parse_with_their_kind() {
        assert_eq!("m42".parse(), Ok(IdRef::Short { kind: Some(IdKind::Memory), local: 42 }));
        assert_eq!(" T17 ".parse(), Ok(IdRef::Short { kind: Some(IdKind::Turn), local: 17 }));
        assert_eq!("42".parse(), Ok(IdRef::Short { kind: None, local: 42 }));
        let stored = (TAG << 32 | 3).to_string();
        assert_eq!(stored.parse(), Ok(IdRef::Stored(TAG << 32 | 3)));
        for bad in ["", "m", "x42", "m-1", "0", "m4.2", "m99999999999", "42abc"] {
            assert!(bad.parse::<IdRef>().is_err(), "{bad:?} must be refused");
        }
        let e = "m 4".parse::<IdRef>().unwrap_err().to_string();
        assert!(e.contains("m42 for a memory"), "{e}");
    }

    #[test]
    fn a_turn_id_where_a_memory_is_asked_for_says_so() {
        let r: IdRef = "t17".parse().unwrap();
        let e = r.of_kind(IdKind::Memory).unwrap_err();
        assert_eq!(e, "t17 is a turn id; this takes a memory id (m…)");
        assert!("17".parse::<IdRef>().unwrap().of_kind(IdKind::Memory).is_ok());
    }

    #[test]
    fn json_input_takes_numbers_and_text() {
        let a: IdRef = serde_json::from_str("\"m5\"").unwrap();
        let b: IdRef = serde_json::from_str("5").unwrap();
        assert_eq!(a, IdRef::Short { kind: Some(IdKind::Memory), local: 5 });
        assert_eq!(b, IdRef::Short { kind: None, local: 5 });
        assert!(serde_json::from_str::<IdRef>("\"five\"").is_err());
        assert!(serde_json::from_str::<IdRef>("-3").is_err());
    }
}
