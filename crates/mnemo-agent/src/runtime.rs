//! The wired runtime: config → registry → engine + assessor; and the agent turn.
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

use mnemo_core::engine::{EngineParts, RecallOptions, RememberReport, SyncReport};
use mnemo_core::registry::{self, BuildContext, Component, Role};
use mnemo_core::*;

use crate::config::Config;
use crate::error::AgentError;

/// A wired Mnemo: the engine, the assessor and the grounders, built from a config.
pub struct Runtime {
    engine: Arc<Engine>,
    assessor: Arc<dyn Assessor>,
    grounders: Vec<Arc<dyn Grounder>>,
    config: Config,
    /// Held for the runtime's life: one process writes a data directory at a time (the
    /// reconcile read-then-write and the index writer both need it).
    _lock: std::fs::File,
}

/// Take the data directory's lock, waiting for another process that holds it.
fn lock_data_dir(data_dir: &Path) -> Result<std::fs::File, AgentError> {
    let path = data_dir.join("mnemo.lock");
    let io = |action, error| AgentError::Io { action, file: path.display().to_string(), error };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| io("open the lock file", e))?;
    file.lock().map_err(|e| io("lock", e))?;
    Ok(file)
}

/// One agent turn: what was recalled, how it was assessed, what the agent does.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgentTurn {
    /// What the message itself wrote to memory, if it was remembered.
    pub remembered: Option<RememberReport>,
    /// The pack as recalled (before grounding).
    pub pack: Pack,
    /// The assessment; `assessment.pack` is the final pack.
    pub assessment: Assessment,
    /// What the agent does: the plan it acts on, or the escalation.
    pub action: String,
}

fn wrong_component(role: Role) -> AgentError {
    AgentError::Core(CoreError::Config(format!("the {role} factory built a component of another role")))
}

impl Runtime {
    /// Build from `config`, with the data directory, the clock, and extra grounders (e.g. a
    /// scenario's world tables) added to those in config. The index is brought up to the store.
    pub async fn build(
        config: &Config,
        data_dir: &Path,
        clock: Arc<dyn Clock>,
        extra_grounders: Vec<Arc<dyn Grounder>>,
    ) -> Result<Runtime, AgentError> {
        Self::build_with_progress(config, data_dir, clock, extra_grounders, &|_, _| {}).await
    }

    /// `build`, reporting index catch-up/rebuild progress as (done, total) store revisions.
    pub async fn build_with_progress(
        config: &Config,
        data_dir: &Path,
        clock: Arc<dyn Clock>,
        extra_grounders: Vec<Arc<dyn Grounder>>,
        progress: &(dyn Fn(u64, u64) + Send + Sync),
    ) -> Result<Runtime, AgentError> {
        std::fs::create_dir_all(data_dir).map_err(|e| AgentError::Io {
            action: "create the data directory",
            file: data_dir.display().to_string(),
            error: e,
        })?;
        let lock = lock_data_dir(data_dir)?;
        let mut ctx_store: Option<Arc<dyn Store>> = None;
        let mut ctx_embedder: Option<Arc<dyn Embedder>> = None;
        let mut grounders: Vec<Arc<dyn Grounder>> = Vec::new();
        let build = |role: Role,
                     kind: &str,
                     settings: &toml::Table,
                     origin: &str,
                     store: &Option<Arc<dyn Store>>,
                     embedder: &Option<Arc<dyn Embedder>>,
                     grounders: &[Arc<dyn Grounder>]| {
            let ctx = BuildContext {
                settings,
                origin,
                data_dir,
                clock: clock.clone(),
                store: store.clone(),
                embedder: embedder.clone(),
                grounders: grounders.to_vec(),
            };
            registry::build(role, kind, &ctx)
        };
        let (k, s, o) = config.plugin("store")?;
        let store = match build(Role::Store, &k, &s, &o, &None, &None, &[])? {
            Component::Store(s) => s,
            _ => return Err(wrong_component(Role::Store)),
        };
        ctx_store.replace(store.clone());
        let (k, s, o) = config.plugin("embedder")?;
        let embedder = match build(Role::Embedder, &k, &s, &o, &ctx_store, &None, &[])? {
            Component::Embedder(e) => e,
            _ => return Err(wrong_component(Role::Embedder)),
        };
        ctx_embedder.replace(embedder.clone());
        let (k, s, o) = config.plugin("index")?;
        let index = match build(Role::Index, &k, &s, &o, &ctx_store, &ctx_embedder, &[])? {
            Component::Index(i) => i,
            _ => return Err(wrong_component(Role::Index)),
        };
        let (k, s, o) = config.plugin("reasoner")?;
        let reasoner = match build(Role::Reasoner, &k, &s, &o, &ctx_store, &ctx_embedder, &[])? {
            Component::Reasoner(r) => r,
            _ => return Err(wrong_component(Role::Reasoner)),
        };
        for (k, s, o) in config.grounders()? {
            match build(Role::Grounder, &k, &s, &o, &ctx_store, &ctx_embedder, &[])? {
                Component::Grounder(g) => grounders.push(g),
                _ => return Err(wrong_component(Role::Grounder)),
            }
        }
        grounders.extend(extra_grounders);
        let (k, s, o) = config.plugin("assessor")?;
        let assessor = match build(Role::Assessor, &k, &s, &o, &ctx_store, &ctx_embedder, &grounders)? {
            Component::Assessor(a) => a,
            _ => return Err(wrong_component(Role::Assessor)),
        };
        let engine = Engine::new(EngineParts {
            store,
            index,
            embedder,
            reasoner,
            clock,
            tokens: Arc::new(CharTokenCounter),
            policy: config.policy().clone(),
        })?;
        crate::index_embedder::sync(&engine, data_dir, progress).await?;
        Ok(Runtime { engine: Arc::new(engine), assessor, grounders, config: config.clone(), _lock: lock })
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }
    /// The assessor.
    pub fn assessor(&self) -> &Arc<dyn Assessor> {
        &self.assessor
    }
    /// The grounders (config ones, then extra ones).
    pub fn grounders(&self) -> &[Arc<dyn Grounder>] {
        &self.grounders
    }
    /// The config it was built from.
    pub fn config(&self) -> &Config {
        &self.config
    }
    /// Which client answers model calls (as known at build time).
    pub fn model_info(&self) -> ModelInfo {
        self.engine.reasoner().model_info()
    }
    /// Bring the index up to the store with progress.
    pub async fn sync_index(&self, progress: &(dyn Fn(u64, u64) + Send + Sync)) -> Result<SyncReport, AgentError> {
        Ok(self.engine.sync_index(progress).await?)
    }

    /// Recall → assess → act or escalate, for `task` (nothing is remembered).
    pub async fn turn(&self, ns: &Namespace, task: &Task, opts: &RecallOptions) -> Result<AgentTurn, AgentError> {
        let pack = self.engine.recall(ns, &task.query, opts).await?;
        let now = self.engine.clock().now();
        let assessment = self.assessor.assess(task, pack.clone(), now, self.engine.as_ref()).await?;
        let action = action_text(task, &assessment);
        Ok(AgentTurn { remembered: None, pack, assessment, action })
    }

    /// The full agent turn: remember the message (said by `source`), then `turn`.
    pub async fn handle(
        &self,
        ns: &Namespace,
        source: &str,
        message: &str,
        about: Option<(String, String)>,
        opts: &RecallOptions,
    ) -> Result<AgentTurn, AgentError> {
        let remembered = self.engine.remember(ns, source, message).await?;
        let task = Task { query: message.to_string(), about };
        let mut turn = self.turn(ns, &task, opts).await?;
        turn.remembered = Some(remembered);
        Ok(turn)
    }
}

/// The value the planner would use for `(entity, attribute)`: the highest-ranked memory in the
/// pack asserting a claim on it (rank = position; ties to the newest confirmation).
pub fn answer_of<'a>(pack: &'a Pack, entity: &str, attribute: &str) -> Option<&'a Memory> {
    // The planner already orders the pack: pinned first, then score, ties to the newest
    // confirmation — so the first claim on it is the highest-ranked.
    pack.items.iter().map(|i| &i.memory).find(|m| m.claim.as_ref().is_some_and(|c| c.is_on(entity, attribute)))
}

fn action_text(task: &Task, a: &Assessment) -> String {
    match &a.decision {
        Decision::Act => {
            let value = task
                .about
                .as_ref()
                .and_then(|(e, at)| answer_of(&a.pack, e, at))
                .and_then(|m| m.claim.as_ref())
                .map(|c| c.value.clone());
            match (value, &task.about) {
                (Some(v), Some((e, at))) => {
                    format!("ACT: proceed using {e} | {at} = {v} (pack trust {:.2} ≥ {:.2})", a.trust, a.threshold)
                }
                _ => format!("ACT: proceed with the recalled context (pack trust {:.2} ≥ {:.2})", a.trust, a.threshold),
            }
        }
        Decision::Escalate { reasons } => format!(
            "ESCALATE to a human: {} (pack trust {:.2}, threshold {:.2})",
            reasons.join("; "),
            a.trust,
            a.threshold
        ),
    }
}
