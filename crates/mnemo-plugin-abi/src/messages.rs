//! The JSON messages that cross the ABI. Every request is one [`Request`]; every answer is one
//! [`Response`] whose `ok` payload depends on the request.
use serde::{Deserialize, Serialize};

/// What a plugin implements, as named in config sections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PluginRole {
    /// A read-only lookup in a system of record.
    Grounder,
    /// Text to vectors.
    Embedder,
    /// Grades a recall pack and decides act or escalate.
    Assessor,
}

impl PluginRole {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            PluginRole::Grounder => "grounder",
            PluginRole::Embedder => "embedder",
            PluginRole::Assessor => "assessor",
        }
    }
}

/// One kind a plugin provides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KindInfo {
    /// Its role.
    pub role: PluginRole,
    /// The kind name used in config (`kind = "…"`).
    pub kind: String,
    /// One line on what it is.
    pub about: String,
}

/// What a plugin says about itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The plugin's name (its crate name).
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// The kinds it provides.
    pub kinds: Vec<KindInfo>,
}

/// A request from the host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Build an instance of a kind from its config settings; answers [`Created`].
    Create {
        /// The role.
        role: PluginRole,
        /// The kind.
        kind: String,
        /// The config section without `kind`, as JSON.
        settings: serde_json::Map<String, serde_json::Value>,
        /// Where the section came from, for error messages.
        origin: String,
        /// The data directory (relative data paths resolve inside it).
        data_dir: String,
    },
    /// Ground a claim; answers [`Grounded`] or null (not held by this source).
    Lookup {
        /// The instance.
        instance: u64,
        /// Entity.
        entity: String,
        /// Attribute.
        attribute: String,
    },
    /// Describe an embedder instance; answers [`EmbedderInfo`].
    EmbedderInfo {
        /// The instance.
        instance: u64,
    },
    /// Embed texts; answers a list of vectors, one per text, in order.
    Embed {
        /// The instance.
        instance: u64,
        /// The texts.
        texts: Vec<String>,
    },
    /// Assess a recall pack; answers [`AssessResponse`].
    Assess {
        /// The instance.
        instance: u64,
        /// The request.
        request: AssessRequest,
    },
}

/// The answer to every request: `{"ok": …}` or `{"error": "…"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response {
    /// Success, with the request's payload.
    Ok(serde_json::Value),
    /// Failure, with a message for a human.
    Error(String),
}

/// The answer to `Create`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Created {
    /// The new instance's handle.
    pub instance: u64,
}

/// A value read from a system of record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Grounded {
    /// The current value.
    pub value: String,
    /// The source's name (e.g. "inventory").
    pub source: String,
    /// When the source says it was last updated (RFC 3339), if it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
}

/// The answer to `EmbedderInfo`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmbedderInfo {
    /// The model id stored with every vector.
    pub model_id: String,
    /// Vector dimensions.
    pub dims: usize,
}

/// A claim `entity | attribute | value`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClaimV1 {
    /// Entity.
    pub entity: String,
    /// Attribute.
    pub attribute: String,
    /// Value.
    pub value: String,
}

/// One recalled memory, as an assessor plugin sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AssessItem {
    /// The memory id.
    pub id: i64,
    /// Its text.
    pub content: String,
    /// Its claim, if it makes one.
    #[serde(default)]
    pub claim: Option<ClaimV1>,
    /// Importance in 0..=1.
    pub importance: f32,
    /// How many distinct sources stated it.
    pub sources: usize,
    /// How many times it was restated.
    pub reinforcements: u32,
    /// Days since it was last confirmed.
    pub days_since_confirmed: f64,
}

/// What an assessor plugin is asked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AssessRequest {
    /// The task's query.
    pub query: String,
    /// The claim the task is about: `[entity, attribute]`.
    #[serde(default)]
    pub about: Option<(String, String)>,
    /// The recalled memories, in pack order.
    pub items: Vec<AssessItem>,
    /// The host applies the `corrections` of the response (added within ABI version 1: an
    /// older host neither sends this field nor reads corrections, so it reads as `false`).
    #[serde(default)]
    pub applies_corrections: bool,
}

/// The grade of one memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradeV1 {
    /// The memory id.
    pub id: i64,
    /// Trust in 0..=1.
    pub trust: f64,
    /// Whether it bears on the decision.
    pub load_bearing: bool,
    /// How the trust was reached.
    pub basis: String,
}

/// An assessor plugin's verdict. The host acts only when `act` is true AND `trust >= threshold`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AssessResponse {
    /// Act (true) or escalate (false).
    pub act: bool,
    /// Pack trust in 0..=1.
    pub trust: f64,
    /// The threshold used.
    pub threshold: f64,
    /// Why it escalates (empty when it acts).
    #[serde(default)]
    pub reasons: Vec<String>,
    /// Per-memory grades.
    #[serde(default)]
    pub grades: Vec<GradeV1>,
    /// Write-backs the plugin asks the host to apply after assessment (added within ABI
    /// version 1; absent means none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub corrections: Vec<CorrectionV1>,
}

/// A write-back an assessor plugin asks for, about a memory of the request's items.
/// JSON: `{"op": "supersede", "memory": 12, "value": "35 days", "source": "wms"}` or
/// `{"op": "confirm", "memory": 12, "source": "wms"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum CorrectionV1 {
    /// The system of record `source` holds `value` for the memory's claim: the host tombstones
    /// the memory (superseded) and inserts the claim with the fresh value.
    Supersede {
        /// The memory id (one of the request's items, with a claim).
        memory: i64,
        /// The value the system of record holds.
        value: String,
        /// The system of record.
        source: String,
    },
    /// The system of record `source` holds the memory's value: the host adds the source and
    /// refreshes the memory's confirmation time.
    Confirm {
        /// The memory id (one of the request's items).
        memory: i64,
        /// The system of record.
        source: String,
    },
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn requests_and_responses_have_a_stable_json_shape() {
        let r = Request::Lookup { instance: 3, entity: "SKU-1".into(), attribute: "stock on hand".into() };
        let j = serde_json::to_string(&r).unwrap();
        assert_eq!(j, r#"{"op":"lookup","instance":3,"entity":"SKU-1","attribute":"stock on hand"}"#);
        let ok: Response = serde_json::from_str(r#"{"ok":{"instance":7}}"#).unwrap();
        assert_eq!(ok, Response::Ok(serde_json::json!({"instance": 7})));
        let err: Response = serde_json::from_str(r#"{"error":"no such kind"}"#).unwrap();
        assert_eq!(err, Response::Error("no such kind".into()));
    }

    #[test]
    fn corrections_are_an_additive_field_of_the_assess_messages() {
        // a response from a plugin built before corrections existed still reads: none
        let old: AssessResponse = serde_json::from_str(r#"{"act":true,"trust":0.9,"threshold":0.5}"#).unwrap();
        assert!(old.corrections.is_empty());
        // a request from a host built before corrections existed reads as "not applied"
        let old: AssessRequest = serde_json::from_str(r#"{"query":"q","items":[]}"#).unwrap();
        assert!(!old.applies_corrections);
        let r: AssessResponse = serde_json::from_str(
            r#"{"act":true,"trust":1,"threshold":0.5,"corrections":[
                {"op":"supersede","memory":3,"value":"35 days","source":"wms"},
                {"op":"confirm","memory":4,"source":"erp"}]}"#,
        )
        .unwrap();
        assert_eq!(
            r.corrections,
            vec![
                CorrectionV1::Supersede { memory: 3, value: "35 days".into(), source: "wms".into() },
                CorrectionV1::Confirm { memory: 4, source: "erp".into() }
            ]
        );
        let bad = serde_json::from_str::<AssessResponse>(
            r#"{"act":true,"trust":1,"threshold":0.5,"corrections":[{"op":"delete","memory":3}]}"#,
        );
        assert!(bad.unwrap_err().to_string().contains("unknown variant `delete`"));
    }
}
