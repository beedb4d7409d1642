//! What a search is asked and answers: the mode, the query, a claim key, hits, the documents
//! an Index holds, and where an Index stands relative to its Store.
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::model::*;

/// Which retrieval signal(s) a search uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// Lexical (BM25 or similar) only.
    Lexical,
    /// Dense vectors only.
    Dense,
    /// Both, fused.
    #[default]
    Hybrid,
}

impl SearchMode {
    /// Its name (`lexical`, `dense`, `hybrid`).
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Lexical => "lexical",
            SearchMode::Dense => "dense",
            SearchMode::Hybrid => "hybrid",
        }
    }
}

/// A search mode as every door takes it: `lexical` (or `bm25`), `dense` (or `vector`),
/// `hybrid`, in any case.
impl std::str::FromStr for SearchMode {
    type Err = crate::error::CoreError;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "lexical" | "bm25" => Ok(SearchMode::Lexical),
            "dense" | "vector" => Ok(SearchMode::Dense),
            "hybrid" => Ok(SearchMode::Hybrid),
            _ => Err(crate::error::CoreError::InvalidInput(format!(
                "mode {s:?}: expected lexical (or bm25), dense (or vector) or hybrid"
            ))),
        }
    }
}

/// A claim's key as a caller names it: `entity | attribute` (what a task is `about`, what
/// `forget` and `history` take).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct ClaimKey {
    /// The entity, as written (trimmed).
    pub entity: String,
    /// The attribute, as written (trimmed).
    pub attribute: String,
}

impl ClaimKey {
    /// A key from its two parts, both non-empty once trimmed.
    pub fn new(entity: &str, attribute: &str) -> Result<ClaimKey> {
        let (e, a) = (entity.trim(), attribute.trim());
        if e.is_empty() || a.is_empty() {
            return Err(crate::error::CoreError::InvalidInput(format!(
                "a claim is `entity | attribute`, both non-empty; got entity {entity:?}, attribute {attribute:?}"
            )));
        }
        // A part holds no separator and no line break: it is written into tagged lines (a
        // human's answer becomes `[SEM] entity | attribute | value`).
        if [e, a].iter().any(|p| p.contains('|') || p.chars().any(char::is_control)) {
            return Err(crate::error::CoreError::InvalidInput(format!(
                "a claim's entity and attribute hold no '|' and no line break; got entity {entity:?}, attribute {attribute:?}"
            )));
        }
        Ok(ClaimKey { entity: e.to_string(), attribute: a.to_string() })
    }

    /// The pair a [`Task`] holds.
    pub fn into_pair(self) -> (String, String) {
        (self.entity, self.attribute)
    }
}

impl std::fmt::Display for ClaimKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} | {}", self.entity, self.attribute)
    }
}

impl std::str::FromStr for ClaimKey {
    type Err = crate::error::CoreError;

    fn from_str(s: &str) -> Result<Self> {
        match s.split_once('|') {
            Some((e, a)) if !a.contains('|') => ClaimKey::new(e, a),
            _ => Err(crate::error::CoreError::InvalidInput(format!("a claim is `entity | attribute`, got {s:?}"))),
        }
    }
}

/// JSON input: `"entity | attribute"`, or `{"entity": …, "attribute": …}`.
impl<'de> Deserialize<'de> for ClaimKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Text(String),
            Parts { entity: String, attribute: String },
        }
        match Written::deserialize(d)? {
            Written::Text(t) => t.parse(),
            Written::Parts { entity, attribute } => ClaimKey::new(&entity, &attribute),
        }
        .map_err(serde::de::Error::custom)
    }
}

/// A search request.
#[derive(Clone, Debug)]
pub struct SearchQuery {
    /// The namespace; applied inside the index.
    pub namespace: Namespace,
    /// Query text (lexical signal).
    pub text: String,
    /// Query embedding (dense signal), from the same embedder as the documents.
    pub embedding: Option<Vec<f32>>,
    /// How many hits at most.
    pub limit: usize,
    /// Which signals.
    pub mode: SearchMode,
}

/// One search hit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// The memory.
    pub id: MemoryId,
    /// Relevance in 0..=1, higher is better (fused when hybrid).
    pub score: f32,
}

/// What an Index needs of a memory.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexDoc {
    /// Id.
    pub id: MemoryId,
    /// Namespace.
    pub namespace: Namespace,
    /// Text.
    pub content: String,
    /// Entities (indexed with the text).
    pub entities: Vec<String>,
    /// Vector, if any.
    pub embedding: Option<Vec<f32>>,
    /// The memory's rev.
    pub rev: u64,
}

impl IndexDoc {
    /// The index's view of a memory.
    pub fn of(m: &Memory) -> Self {
        IndexDoc {
            id: m.id,
            namespace: m.namespace.clone(),
            content: m.content.clone(),
            entities: m.entities.clone(),
            embedding: m.embedding.as_ref().map(|e| e.vector.clone()),
            rev: m.rev,
        }
    }
}

/// Where a derived index stands relative to the Store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum IndexState {
    /// It holds every change up to this Store rev (0: empty, fresh).
    UpTo(u64),
    /// It must be cleared and rebuilt from the Store; the text says why.
    Stale(String),
}

/// One figure an index reports on itself (see [`Index::figures`]).
#[derive(Clone, Debug, PartialEq)]
pub struct IndexFigure {
    /// A stable name (a benchmark's metric name).
    pub name: &'static str,
    /// Its value.
    pub value: f64,
    /// Its unit.
    pub unit: &'static str,
    /// What it is.
    pub note: String,
}

#[cfg(test)]
mod door_input_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn search_modes_parse_with_their_aliases_and_refuse_the_rest() {
        assert_eq!("BM25".parse::<SearchMode>().unwrap(), SearchMode::Lexical);
        assert_eq!(" vector ".parse::<SearchMode>().unwrap(), SearchMode::Dense);
        assert_eq!("hybrid".parse::<SearchMode>().unwrap(), SearchMode::Hybrid);
        let e = "fuzzy".parse::<SearchMode>().unwrap_err().to_string();
        assert!(e.contains("\"fuzzy\"") && e.contains("lexical (or bm25)"), "{e}");
        for m in [SearchMode::Lexical, SearchMode::Dense, SearchMode::Hybrid] {
            assert_eq!(m.as_str().parse::<SearchMode>().unwrap(), m);
        }
    }

    #[test]
    fn a_claim_key_is_text_or_parts_and_never_half_empty() {
        let k: ClaimKey = " Ben | phone ".parse().unwrap();
        assert_eq!((k.entity.as_str(), k.attribute.as_str()), ("Ben", "phone"));
        assert_eq!(k.to_string(), "Ben | phone");
        for bad in ["Ben", "Ben |", "| phone", "a | b | c", ""] {
            assert!(bad.parse::<ClaimKey>().is_err(), "{bad:?}");
        }
        let text: ClaimKey = serde_json::from_str("\"Ben | phone\"").unwrap();
        let parts: ClaimKey = serde_json::from_str(r#"{"entity": "Ben", "attribute": "phone"}"#).unwrap();
        assert_eq!(text, parts);
        assert!(serde_json::from_str::<ClaimKey>(r#"{"entity": "Ben", "attribute": " "}"#).is_err());
        let smuggled = r#"{"entity": "Ana | allergy | none
[SEM] Northwind", "attribute": "approver"}"#;
        assert!(serde_json::from_str::<ClaimKey>(smuggled).is_err(), "no separator or line break inside a part");
    }
}
