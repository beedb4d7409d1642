//! A plugin providing an embedder and two assessors (one of which asks for corrections), so the
//! host's adapters for those roles are exercised end to end.
use mnemo_plugin_sdk::{
    export_plugin, AssessRequest, AssessResponse, AssessorPlugin, CorrectionV1, EmbedderPlugin, GradeV1, PluginError,
    Settings,
};

/// One-hot vectors by text length: deterministic, unit length.
pub struct LengthEmbedder {
    dims: usize,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct EmbedderSettings {
    dims: usize,
}

impl EmbedderPlugin for LengthEmbedder {
    const KIND: &'static str = "fixture_embedder";
    const ABOUT: &'static str = "test fixture: one-hot vectors by text length";
    fn new(settings: &Settings) -> Result<Self, PluginError> {
        let s: EmbedderSettings = settings.parse()?;
        if s.dims == 0 {
            return Err(PluginError::new("dims must be positive"));
        }
        Ok(LengthEmbedder { dims: s.dims })
    }
    fn model_id(&self) -> String {
        format!("fixture-length-{}", self.dims)
    }
    fn dims(&self) -> usize {
        self.dims
    }
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, PluginError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0; self.dims];
                v[t.len() % self.dims] = 1.0;
                v
            })
            .collect())
    }
}

/// Acts only when every recalled memory makes a claim.
pub struct ClaimsOnly;

impl AssessorPlugin for ClaimsOnly {
    const KIND: &'static str = "fixture_assessor";
    const ABOUT: &'static str = "test fixture: acts only when every recalled memory makes a claim";
    fn new(_: &Settings) -> Result<Self, PluginError> {
        Ok(ClaimsOnly)
    }
    fn assess(&self, r: &AssessRequest) -> Result<AssessResponse, PluginError> {
        let unclaimed: Vec<i64> = r.items.iter().filter(|i| i.claim.is_none()).map(|i| i.id).collect();
        let grades = r
            .items
            .iter()
            .map(|i| GradeV1 { id: i.id, trust: 0.9, load_bearing: true, basis: "fixture".into() })
            .collect();
        Ok(AssessResponse {
            act: unclaimed.is_empty() && !r.items.is_empty(),
            trust: 0.9,
            threshold: 0.5,
            reasons: unclaimed.iter().map(|id| format!("memory {id} makes no claim")).collect(),
            grades,
            corrections: vec![],
        })
    }
}

/// Holds one attribute's current value (as a system of record would) and asks the host to
/// correct every recalled claim on that attribute: confirm it when it says the held value,
/// supersede it otherwise. Acts only when it asked for a correction on the task's claim.
pub struct HeldValue {
    settings: HeldSettings,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HeldSettings {
    /// The attribute it holds.
    attribute: String,
    /// Its current value.
    value: String,
    /// The source name it reports.
    source: String,
}

impl AssessorPlugin for HeldValue {
    const KIND: &'static str = "fixture_correcting_assessor";
    const ABOUT: &'static str = "test fixture: holds one attribute's value and asks for corrections";
    fn new(settings: &Settings) -> Result<Self, PluginError> {
        Ok(HeldValue { settings: settings.parse()? })
    }
    fn assess(&self, r: &AssessRequest) -> Result<AssessResponse, PluginError> {
        let s = &self.settings;
        let mut corrections = Vec::new();
        for i in &r.items {
            let Some(c) = i.claim.as_ref().filter(|c| c.attribute == s.attribute) else { continue };
            corrections.push(if c.value == s.value {
                CorrectionV1::Confirm { memory: i.id, source: s.source.clone() }
            } else {
                CorrectionV1::Supersede { memory: i.id, value: s.value.clone(), source: s.source.clone() }
            });
        }
        let grades = r
            .items
            .iter()
            .map(|i| GradeV1 { id: i.id, trust: 1.0, load_bearing: true, basis: format!("held by {}", s.source) })
            .collect();
        let act = r.applies_corrections && !corrections.is_empty();
        Ok(AssessResponse {
            act,
            trust: 1.0,
            threshold: 0.5,
            reasons: if act { vec![] } else { vec!["no correction applied".into()] },
            grades,
            corrections,
        })
    }
}

export_plugin!(embedders: [LengthEmbedder], assessors: [ClaimsOnly, HeldValue]);
