//! What a Reasoner answers: candidates and forget commands extracted from a turn, and the
//! verdict that reconciles a candidate with its neighbours, each naming who answered.
use serde::{Deserialize, Serialize};

use crate::model::*;

/// A candidate memory extracted from a turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Kind.
    pub kind: MemoryKind,
    /// Content text.
    pub content: String,
    /// Structured claim.
    pub claim: Option<Claim>,
    /// Entity names (as written; the engine normalises).
    pub entities: Vec<String>,
    /// Importance if stated (may be out of range: the engine clamps and says so).
    pub importance: Option<f64>,
    /// Pinned.
    pub pinned: bool,
    /// How many values the claim's attribute holds (meaningless without a claim). Config may
    /// fix it for named attributes (`[claims]`), which then wins over what extraction said.
    #[serde(default)]
    pub cardinality: Cardinality,
    /// When its fact holds in the world, if the turn said (a model's `valid_from` /
    /// `valid_to`, the fake grammar's `from=` / `to=`); unstated, the engine reads an interval
    /// phrase of the content ("from 2019 to 2021").
    #[serde(default, skip_serializing_if = "crate::world_time::Validity::is_unstated")]
    pub validity: crate::world_time::Validity,
}

/// A forget command: from a turn (extraction) or given directly (`Engine::forget`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ForgetCommand {
    /// Forget exactly the active claim(s) on this entity+attribute.
    Claim {
        /// Entity.
        entity: String,
        /// Attribute.
        attribute: String,
    },
    /// Forget what this text designates, and only that.
    Text(String),
}

impl ForgetCommand {
    /// A command given as an argument: `entity | attribute` (two non-empty parts) forgets that
    /// claim; any other text forgets what it designates. An optional leading `[FORGET]` is
    /// accepted; any other bracketed tag, an empty command or several lines are refused.
    pub fn parse_arg(arg: &str) -> std::result::Result<ForgetCommand, String> {
        let c = arg.trim();
        let refuse = |why: &str| Err(format!("{c:?} is not a forget command: {why}"));
        if c.contains('\n') {
            return refuse("a forget command is one line");
        }
        let body = match c.strip_prefix('[') {
            Some(rest) => match rest.split_once(']') {
                Some((tag, body)) if tag.trim().eq_ignore_ascii_case("forget") => body.trim(),
                _ => return refuse("give `entity | attribute` or free text (optionally prefixed [FORGET])"),
            },
            None => c,
        };
        if body.is_empty() {
            return refuse("it is empty");
        }
        let parts: Vec<&str> = body.split('|').map(str::trim).collect();
        Ok(if parts.len() == 2 && parts.iter().all(|p| !p.is_empty()) {
            ForgetCommand::Claim { entity: crate::text::fold_ws(parts[0]), attribute: crate::text::fold_ws(parts[1]) }
        } else {
            ForgetCommand::Text(crate::text::fold_ws(body))
        })
    }

    /// How the command reads (`entity | attribute`, or the text).
    pub fn describe(&self) -> String {
        match self {
            ForgetCommand::Claim { entity, attribute } => format!("{entity} | {attribute}"),
            ForgetCommand::Text(t) => t.clone(),
        }
    }
}

/// One item extracted from a turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExtractedItem {
    /// A candidate memory.
    Memory(Candidate),
    /// A forget command.
    Forget(ForgetCommand),
}

/// Which model answered a reasoner call: the seam is loud.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// fake | live | replay | rules.
    pub client: ClientKind,
    /// The model string as echoed by the API.
    pub model: String,
}

/// The result of extraction: memories and forget commands in the order the turn gives them
/// (a forget after a statement in the same turn forgets it; one before it does not).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Extraction {
    /// Candidate memories and forget commands, in turn order.
    pub items: Vec<ExtractedItem>,
    /// Who answered (the model string as the API echoed it).
    pub model: ModelInfo,
    /// What the extractor noticed and did not turn into items (said, never silently dropped).
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Extraction {
    /// The candidate memories, in order.
    pub fn candidates(&self) -> impl Iterator<Item = &Candidate> {
        self.items.iter().filter_map(|l| match l {
            ExtractedItem::Memory(c) => Some(c),
            ExtractedItem::Forget(_) => None,
        })
    }
    /// The forget commands, in order.
    pub fn forgets(&self) -> impl Iterator<Item = &ForgetCommand> {
        self.items.iter().filter_map(|l| match l {
            ExtractedItem::Forget(f) => Some(f),
            ExtractedItem::Memory(_) => None,
        })
    }
}

/// How a candidate relates to its active neighbours.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Verdict {
    /// The same fact as this memory: reinforce it.
    Duplicate(MemoryId),
    /// Contradicts these memories: tombstone them, insert the candidate.
    Contradicts(Vec<MemoryId>),
    /// New: insert.
    Novel,
}

/// A reconcile verdict with who gave it and why: the engine applies a model's verdict only
/// where its own rules allow, and writes the reason and the model into the history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reconciled {
    /// The verdict.
    pub verdict: Verdict,
    /// The model's reason, when it gave one.
    pub reason: Option<String>,
    /// Who answered (client and the model string as echoed).
    pub model: ModelInfo,
}
