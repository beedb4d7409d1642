//! A plugin providing an embedder and an assessor, so the host's adapters for those roles are
//! exercised end to end.
use mnemo_plugin_sdk::{
    export_plugin, AssessRequest, AssessResponse, AssessorPlugin, EmbedderPlugin, GradeV1, PluginError, Settings,
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
        })
    }
}

export_plugin!(embedders: [LengthEmbedder], assessors: [ClaimsOnly]);
