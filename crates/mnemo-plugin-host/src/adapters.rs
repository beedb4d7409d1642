//! A plugin's instances behind the engine's traits. Every call runs on a blocking thread.
//!
//! A failed call reaches the engine as a classified `CoreError` whose source chain holds the
//! [`HostError`] (a grounder's or an assessor's failure, an embedder's model failure), so a
//! caller can downcast to it and tell a plugin that answered malformed JSON from one that
//! reported its own error.
use async_trait::async_trait;
use std::path::Path;
use std::sync::Arc;

use mnemo_contract::{
    Assessment, Assessor, AssessorErrorKind, CoreError, Correction, Decision, Embedder, FailureMessage, GroundedValue,
    Grounder, GrounderErrorKind, MemoryGrade, MemoryId, ModelErrorKind, ModelRole, Pack, Task, Timestamp,
};
use mnemo_plugin_abi::{
    AssessItem, AssessRequest, AssessResponse, ClaimV1, CorrectionV1, Created, EmbedderInfo, Grounded, PluginRole,
    Request,
};

use crate::error::HostError;
use crate::library::LoadedPlugin;

/// Run `f` on a blocking thread when inside a tokio runtime (a plugin may block on files or
/// SQLite), inline otherwise.
async fn blocking<T, F>(plugin: &Arc<LoadedPlugin>, f: F) -> Result<T, HostError>
where
    T: Send + 'static,
    F: FnOnce(&LoadedPlugin) -> Result<T, HostError> + Send + 'static,
{
    let p = plugin.clone();
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle
            .spawn_blocking(move || f(&p))
            .await
            .map_err(|e| HostError::Join { plugin: plugin.manifest().name.clone(), message: e.to_string() })?,
        Err(_) => f(&p),
    }
}

/// Create an instance of `kind` from its settings.
pub(crate) async fn create(
    plugin: &Arc<LoadedPlugin>,
    role: PluginRole,
    kind: &str,
    settings: &toml::Table,
    origin: &str,
    data_dir: &Path,
) -> Result<u64, HostError> {
    let settings = match serde_json::to_value(settings) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let request = Request::Create {
        role,
        kind: kind.to_string(),
        settings,
        origin: origin.to_string(),
        data_dir: data_dir.display().to_string(),
    };
    let what = format!("to create {} `{kind}` ({origin})", role.as_str());
    let created: Created = blocking(plugin, move |p| p.call(&request, &what)).await?;
    Ok(created.instance)
}

/// A grounder living in a plugin library.
pub struct PluginGrounder {
    plugin: Arc<LoadedPlugin>,
    instance: u64,
    source: String,
}

impl PluginGrounder {
    pub(crate) fn new(plugin: Arc<LoadedPlugin>, instance: u64, source: String) -> Self {
        PluginGrounder { plugin, instance, source }
    }
}

#[async_trait]
impl Grounder for PluginGrounder {
    fn source(&self) -> &str {
        &self.source
    }
    async fn lookup(&self, entity: &str, attribute: &str) -> mnemo_contract::Result<Option<GroundedValue>> {
        let request =
            Request::Lookup { instance: self.instance, entity: entity.to_string(), attribute: attribute.to_string() };
        let what = format!("the lookup of {entity} | {attribute}");
        let found: Option<Grounded> = blocking(&self.plugin, move |p| p.call(&request, &what)).await.map_err(|e| {
            let kind = if e.is_bad_answer() { GrounderErrorKind::BadAnswer } else { GrounderErrorKind::Other };
            CoreError::grounder(kind, e)
        })?;
        found
            .map(|g| {
                let as_of = g.as_of.as_deref().map(Timestamp::parse_rfc3339).transpose().map_err(|e| {
                    let message = format!("plugin {}: as_of: {e}", self.plugin.manifest().name);
                    CoreError::grounder_message(GrounderErrorKind::BadAnswer, message)
                })?;
                Ok(GroundedValue { value: g.value, source: g.source, as_of })
            })
            .transpose()
    }
}

/// An embedder living in a plugin library.
pub struct PluginEmbedder {
    plugin: Arc<LoadedPlugin>,
    instance: u64,
    info: EmbedderInfo,
}

impl PluginEmbedder {
    pub(crate) async fn new(plugin: Arc<LoadedPlugin>, instance: u64) -> Result<Self, HostError> {
        let request = Request::EmbedderInfo { instance };
        let info: EmbedderInfo = blocking(&plugin, move |p| p.call(&request, "the embedder info request")).await?;
        Ok(PluginEmbedder { plugin, instance, info })
    }
}

#[async_trait]
impl Embedder for PluginEmbedder {
    fn model_id(&self) -> &str {
        &self.info.model_id
    }
    fn dims(&self) -> usize {
        self.info.dims
    }
    async fn embed(&self, texts: &[String]) -> mnemo_contract::Result<Vec<Vec<f32>>> {
        let n = texts.len();
        let request = Request::Embed { instance: self.instance, texts: texts.to_vec() };
        let vectors: Vec<Vec<f32>> =
            blocking(&self.plugin, move |p| p.call(&request, "an embed request")).await.map_err(|e| {
                let kind = if e.is_bad_answer() { ModelErrorKind::BadAnswer } else { ModelErrorKind::Other };
                CoreError::model(ModelRole::Embedder, kind, e)
            })?;
        let name = &self.plugin.manifest().name;
        let bad_answer =
            |m: String| CoreError::model(ModelRole::Embedder, ModelErrorKind::BadAnswer, FailureMessage(m));
        if vectors.len() != n {
            return Err(bad_answer(format!("plugin {name}: {} vectors for {n} texts", vectors.len())));
        }
        if let Some(v) = vectors.iter().find(|v| v.len() != self.info.dims) {
            return Err(bad_answer(format!(
                "plugin {name}: a vector of {} dims, declared {}",
                v.len(),
                self.info.dims
            )));
        }
        Ok(vectors)
    }
}

/// An assessor living in a plugin library. It grades, decides and returns the corrections it
/// wants (applied by the runtime, like a linked assessor's); the host escalates unless the
/// plugin says act AND its trust is at or above its threshold.
pub struct PluginAssessor {
    plugin: Arc<LoadedPlugin>,
    instance: u64,
}

impl PluginAssessor {
    pub(crate) fn new(plugin: Arc<LoadedPlugin>, instance: u64) -> Self {
        PluginAssessor { plugin, instance }
    }
}

#[async_trait]
impl Assessor for PluginAssessor {
    async fn assess(&self, task: &Task, pack: Pack, now: Timestamp) -> mnemo_contract::Result<Assessment> {
        let items = pack
            .items
            .iter()
            .map(|i| AssessItem {
                id: i.memory.id.0,
                content: i.memory.content.clone(),
                claim: i.memory.claim.as_ref().map(|c| ClaimV1 {
                    entity: c.entity.clone(),
                    attribute: c.attribute.clone(),
                    value: c.value.clone(),
                }),
                importance: i.memory.importance,
                sources: i.memory.sources.len(),
                reinforcements: i.memory.reinforcements,
                days_since_confirmed: now.days_since(i.memory.last_confirmed_at).max(0.0),
            })
            .collect();
        let request = Request::Assess {
            instance: self.instance,
            request: AssessRequest {
                query: task.query.clone(),
                about: task.about.clone(),
                items,
                applies_corrections: true,
            },
        };
        let r: AssessResponse =
            blocking(&self.plugin, move |p| p.call(&request, "an assess request")).await.map_err(|e| {
                let kind = if e.is_bad_answer() { AssessorErrorKind::BadAnswer } else { AssessorErrorKind::Other };
                CoreError::assessor(kind, e)
            })?;
        let decision = if r.act && r.trust >= r.threshold {
            Decision::Act
        } else {
            let mut reasons = r.reasons.clone();
            if reasons.is_empty() {
                reasons.push(format!("assessor plugin {} did not act", self.plugin.manifest().name));
            }
            Decision::Escalate { reasons }
        };
        let grades = r
            .grades
            .into_iter()
            .map(|g| MemoryGrade { id: MemoryId(g.id), trust: g.trust, load_bearing: g.load_bearing, basis: g.basis })
            .collect();
        // Checked against the pack by the runtime before anything is written.
        let corrections = r
            .corrections
            .into_iter()
            .map(|c| match c {
                CorrectionV1::Supersede { memory, value, source } => {
                    Correction::Supersede { memory: MemoryId(memory), value, source }
                }
                CorrectionV1::Confirm { memory, source } => Correction::Confirm { memory: MemoryId(memory), source },
            })
            .collect();
        Ok(Assessment {
            pack,
            trust: r.trust,
            threshold: r.threshold,
            decision,
            grades,
            substitutions: Vec::new(),
            lookups: Vec::new(),
            corrections,
            inferred_about: None,
        })
    }
}
