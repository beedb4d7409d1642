//! The wired runtime: config → registry → engine + assessor; and the agent turn.
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

use mnemo_contract::registry::{
    self, AssessorContext, EmbedderContext, GrounderContext, IndexContext, ReasonerContext, Section, StoreContext,
};
use mnemo_contract::registry::{
    AssessorFactory, EmbedderFactory, GrounderFactory, IndexFactory, ReasonerFactory, StoreFactory,
};
use mnemo_contract::*;
use mnemo_core::engine::{EngineParts, RecallOptions, RememberReport, SyncReport};
use mnemo_core::Engine;

use crate::config::Config;
use crate::error::AgentError;

/// A wired Mnemo: the engine, the assessor and the grounders, built from a config.
pub struct Runtime {
    engine: Arc<Engine>,
    assessor: Arc<dyn Assessor>,
    /// `[assessor] supersession_limit`: applied after the assessment (it reads the claim's
    /// history, which an assessor does not see).
    supersession: crate::assess::poison::SupersessionLimit,
    /// `[assessor] protect_authoritative_values`: applied with the supersession limit.
    authority: crate::assess::poison::AuthorityGuard,
    grounders: Vec<Arc<dyn Grounder>>,
    config: Config,
    /// What bringing the index up to the store at build time did (a rebuild says why).
    startup_sync: SyncReport,
    /// Turns recorded but not extracted (`mnemo reextract` retries them).
    ledger: crate::unextracted::Ledger,
    /// Escalations: their ledger and the sinks they are sent to.
    escalations: crate::escalation::Escalations,
    /// Held for the runtime's life: one process writes a data directory at a time (the
    /// reconcile read-then-write and the index writer both need it).
    /// None: the data directory is read-only (no writer can run there, nothing to lock).
    _lock: Option<std::fs::File>,
    /// Held from an idempotency key's look-up to its write, so that two retries racing (two
    /// HTTP requests, an MCP call) write once.
    idempotency: tokio::sync::Mutex<()>,
    /// What the doors of this process have done (`/metrics`).
    pub(crate) counters: crate::stats::DoorCounters,
    /// The data directory (its size is a figure of `mnemo stats`).
    data_dir: std::path::PathBuf,
    /// Once started ([`Runtime::start_group_commit`]): remembers go through one writer that
    /// writes every turn waiting as one batch (a server's concurrent clients); otherwise each
    /// remember writes alone (the CLI's one write).
    group_commit: std::sync::OnceLock<mnemo_core::engine::GroupCommit>,
}

/// When the runtime builds its reasoner, the one component that calls the chat model (the
/// embedder is built at once either way: the index needs it to catch up with the store).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReasonerBuild {
    /// With the runtime: a reasoner that cannot be built (a live model client without its API
    /// key) fails the build, before anything is written. For callers that write turns.
    #[default]
    AtBuild,
    /// On its first call, by the same factory from the same section (an unknown kind is still
    /// refused at build). For callers that never call the model — reading, listing, exporting,
    /// backing up, recall, forgetting `entity | attribute` — which then work where the model
    /// cannot be reached; a call made anyway fails as the eager build would have.
    OnFirstCall,
}

/// How an idempotency key is kept in its turn's external id (the same at every door).
pub const IDEMPOTENCY_PREFIX: &str = "idempotency:";

/// Whether a command writes the data directory or only reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Access {
    /// Takes the data directory's lock, waiting for another writer (`MNEMO_LOCK_TIMEOUT_SECS`).
    #[default]
    Write,
    /// Reads (recall, why, list, export, a backup): when another process holds the lock (a
    /// running `mnemo serve` or `reindex`), reads beside it at once instead of waiting — the
    /// store opened read-only (SQLite's WAL lets a reader see every committed write), the index
    /// on disk searched and caught up with the store in memory (one is built in memory from
    /// the store only when the one on disk cannot be used: another store's, damaged).
    Read,
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
    /// The decision, the value(s) to act on, and for ESCALATE the weak memories and why.
    pub verdict: crate::verdict::Verdict,
    /// ESCALATE: the escalation recorded (or the open one on the same task, reused), where it
    /// was sent, and what a human does with it. Absent on ACT, and when recording is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<crate::escalation::TurnEscalation>,
    /// The full agent turn (remember → recall → assess → plan) on ACT: the model's plan from
    /// the assessed pack and the faithfulness check it passed (a refused plan escalates).
    /// Absent on a plain recall and on ESCALATE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::plan_check::CheckedPlan>,
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
        Self::build_for(config, data_dir, clock, extra_grounders, progress, ReasonerBuild::AtBuild, Access::Write).await
    }

    /// `build_with_progress`, with the reasoner built when `reasoner` says.
    pub async fn build_for(
        config: &Config,
        data_dir: &Path,
        clock: Arc<dyn Clock>,
        extra_grounders: Vec<Arc<dyn Grounder>>,
        progress: &(dyn Fn(u64, u64) + Send + Sync),
        reasoner: ReasonerBuild,
        access: Access,
    ) -> Result<Runtime, AgentError> {
        std::fs::create_dir_all(data_dir).map_err(|e| AgentError::Io {
            action: "create the data directory",
            file: data_dir.display().to_string(),
            error: e,
        })?;
        let lock = crate::read_only::lock_or_read_only(data_dir, access == Access::Read).await?;
        // Libraries named in [[plugins]] beside the kinds linked into the binary: every
        // component below is built through them (`Kinds::build`), whichever provides its kind.
        let kinds = crate::plugins::load(config)?;
        // Where escalations go: a mistake in [escalation] fails the build before anything else.
        let escalations = crate::escalation::Escalations::build(config, data_dir)?;
        // The model seam, shared by the components that call a model.
        let llm = config.llm();
        let (k, s, o) = config.plugin("store")?;
        // Without the lock another process may be writing: the store is only read.
        let s = if lock.is_none() { crate::read_only::store_read_only(&k, &s) } else { s };
        let store = kinds
            .build::<StoreFactory>(
                &k,
                &StoreContext {
                    section: Section { settings: &s, origin: &o, data_dir, config_dir: &config.section_dir("store") },
                    clock: clock.clone(),
                },
            )
            .await?;
        let (k, s, o) = config.plugin("embedder")?;
        let embedder = kinds
            .build::<EmbedderFactory>(
                &k,
                &EmbedderContext {
                    section: Section {
                        settings: &s,
                        origin: &o,
                        data_dir,
                        config_dir: &config.section_dir("embedder"),
                    },
                    llm: Some(&llm),
                },
            )
            .await?;
        let (index_kind, index_settings, index_origin) = config.plugin("index")?;
        let index_dir = config.section_dir("index");
        // References, so that each build below borrows them rather than taking them.
        let (kinds, index_kind, index_origin, index_dir, clock_ref, embedder_ref) =
            (&kinds, &index_kind, &index_origin, &index_dir, &clock, &embedder);
        let build_index = |settings: toml::Table| async move {
            kinds
                .build::<IndexFactory>(
                    index_kind,
                    &IndexContext {
                        section: Section { settings: &settings, origin: index_origin, data_dir, config_dir: index_dir },
                        clock: clock_ref.clone(),
                        embedder: embedder_ref.clone(),
                    },
                )
                .await
        };
        let in_memory = || build_index(crate::read_only::index_in_memory(index_kind, &index_settings));
        // Without the lock (a directory that cannot be written, a writer beside): the index on
        // disk is opened read-only and caught up with the store in memory; when it cannot be
        // used (or for kinds without a read-only form) one is built in memory. So is one whose
        // files cannot be written (a full disk).
        let read_only = lock.is_none();
        let on_disk = if read_only {
            crate::read_only::index_on_disk(index_kind, &index_settings)
        } else {
            Some(index_settings.clone())
        };
        let index = match on_disk {
            Some(settings) => match build_index(settings).await {
                Ok(i) => i,
                Err(AgentError::Core(e)) if read_only || crate::read_only::cannot_save(&e) => {
                    tracing::warn!(error = %e, "the index on disk cannot be opened for this command: the index is built in memory");
                    in_memory().await?
                }
                Err(e) => return Err(e),
            },
            None => in_memory().await?,
        };
        let (k, s, o) = config.plugin("reasoner")?;
        // An unknown kind is refused now either way: deferring a typo helps no one.
        let known = registry::kinds(registry::Role::Reasoner).contains(&k.as_str());
        let reasoner: Arc<dyn Reasoner> = if reasoner == ReasonerBuild::OnFirstCall && known {
            Arc::new(crate::lazy_reasoner::LazyReasoner::new(
                k,
                s,
                llm.clone(),
                o,
                data_dir.to_path_buf(),
                config.section_dir("reasoner"),
            ))
        } else {
            kinds
                .build::<ReasonerFactory>(
                    &k,
                    &ReasonerContext {
                        section: Section {
                            settings: &s,
                            origin: &o,
                            data_dir,
                            config_dir: &config.section_dir("reasoner"),
                        },
                        llm: Some(&llm),
                    },
                )
                .await?
        };
        let mut grounders: Vec<Arc<dyn Grounder>> = Vec::new();
        for (k, s, o) in config.grounders()? {
            let g = kinds
                .build::<GrounderFactory>(
                    &k,
                    &GrounderContext {
                        section: Section {
                            settings: &s,
                            origin: &o,
                            data_dir,
                            config_dir: &config.section_dir("grounders"),
                        },
                        clock: clock.clone(),
                    },
                )
                .await?;
            grounders.push(g);
        }
        grounders.extend(extra_grounders);
        let (k, s, o) = config.plugin("assessor")?;
        let supersession = crate::assess::poison::SupersessionLimit::from_settings(&s, &o)
            .map_err(|message| AgentError::Config { file: o.clone(), message })?;
        let authorities: Vec<String> =
            config.declared_sources().into_iter().chain(grounders.iter().map(|g| g.source().to_string())).collect();
        let authority = crate::assess::poison::AuthorityGuard::from_settings(&s, &o, authorities)
            .map_err(|message| AgentError::Config { file: o.clone(), message })?;
        let assessor = kinds
            .build::<AssessorFactory>(
                &k,
                &AssessorContext {
                    section: Section {
                        settings: &s,
                        origin: &o,
                        data_dir,
                        config_dir: &config.section_dir("assessor"),
                    },
                    grounders: grounders.clone(),
                },
            )
            .await?;
        let parts = |index| EngineParts {
            store: store.clone(),
            index,
            embedder: embedder.clone(),
            reasoner: reasoner.clone(),
            clock: clock.clone(),
            tokens: Arc::new(CharTokenCounter),
            policy: config.policy().clone(),
        };
        let mut engine = Engine::new(parts(index))?;
        // The engine's sync rebuilds the index from the store when its stamp names another
        // embedder (or none, for an index that holds anything): which embedder made the
        // vectors is kept in the index itself, where every process sharing it can read it.
        let mut startup_sync: Result<SyncReport, AgentError> = engine.sync_index(progress).await.map_err(Into::into);
        // An index that had to be written to catch up (behind the store, stale, of another store
        // or embedder) but cannot be: a read-only one refuses every write with `ReadOnly`.
        if crate::read_only::index_cannot_be_saved(&startup_sync) {
            tracing::warn!("the index on disk is not current and cannot be written: the index is built in memory");
            engine = Engine::new(parts(in_memory().await?))?;
            startup_sync = engine.sync_index(progress).await.map_err(Into::into);
        }
        let startup_sync = startup_sync?;
        if lock.is_some() {
            crate::blocking::blocking(|| forget_legacy_embedder_record(data_dir));
        }
        let ledger = crate::unextracted::Ledger::new(data_dir);
        Ok(Runtime {
            engine: Arc::new(engine),
            assessor,
            supersession,
            authority,
            grounders,
            config: config.clone(),
            startup_sync,
            ledger,
            escalations,
            _lock: lock,
            idempotency: tokio::sync::Mutex::new(()),
            counters: crate::stats::DoorCounters::default(),
            data_dir: data_dir.to_path_buf(),
            group_commit: std::sync::OnceLock::new(),
        })
    }

    /// What bringing the index up to the store did when the runtime was built.
    pub fn startup_sync(&self) -> &SyncReport {
        &self.startup_sync
    }
    /// The data directory it was built over.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
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
    /// Escalations: their ledger and sinks (the API is [`Runtime::escalations`] and after).
    pub fn escalation_state(&self) -> &crate::escalation::Escalations {
        &self.escalations
    }
    /// Which client answers model calls (as known at build time).
    pub fn model_info(&self) -> ModelInfo {
        self.engine.reasoner_model()
    }
    /// From now on, write concurrent remembers as group commits: one writer task (on the
    /// current tokio runtime) takes every turn waiting and writes them as one batch, each
    /// caller answered once its turn is committed and in the index, with its own result (see
    /// `mnemo_core::engine::GroupCommit`). For a server; starting it twice starts one writer.
    pub fn start_group_commit(&self) -> Result<(), AgentError> {
        if self.group_commit.get().is_none() {
            let writer = mnemo_core::engine::GroupCommit::start(&self.engine)?;
            // A writer started meanwhile by another caller wins; this one's ends with its handle.
            let _ = self.group_commit.set(writer);
        }
        Ok(())
    }

    /// Whether remembers are written as group commits.
    pub fn group_commit_started(&self) -> bool {
        self.group_commit.get().is_some()
    }

    /// Bring the index up to the store with progress.
    pub async fn sync_index(&self, progress: &(dyn Fn(u64, u64) + Send + Sync)) -> Result<SyncReport, AgentError> {
        Ok(self.engine.sync_index(progress).await?)
    }

    /// Remember a turn (bytes must be UTF-8). A turn recorded but not extracted goes on the
    /// ledger of unextracted turns, and the error says so.
    pub async fn remember(&self, ns: &Namespace, source: &str, bytes: &[u8]) -> Result<RememberReport, AgentError> {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| CoreError::InvalidUtf8 { valid_up_to: e.valid_up_to(), detail: e.to_string() })?;
        self.remember_turn(ns, source, text, None).await
    }

    /// `remember` with an external id kept on the turn (an idempotency key, a dialogue id); a
    /// turn whose extraction fails goes into the unextracted ledger.
    pub async fn remember_turn(
        &self,
        ns: &Namespace,
        source: &str,
        text: &str,
        external_id: Option<String>,
    ) -> Result<RememberReport, AgentError> {
        self.remember_turn_at(ns, source, text, external_id, None).await
    }

    /// [`Runtime::remember_turn`] said at `at` (None: the clock's time; see
    /// [`Engine::remember_turn_at`]). A door checks a stated time first (`door`).
    pub async fn remember_turn_at(
        &self,
        ns: &Namespace,
        source: &str,
        text: &str,
        external_id: Option<String>,
        at: Option<Timestamp>,
    ) -> Result<RememberReport, AgentError> {
        let written = match self.group_commit.get() {
            Some(writer) => {
                let request = mnemo_core::engine::TurnRequest {
                    namespace: ns.clone(),
                    source: source.to_string(),
                    text: text.to_string(),
                    external_id,
                    at,
                };
                writer.remember(request).await
            }
            None => self.engine.remember_turn_at(ns, source, text, external_id, at).await,
        };
        match written {
            Ok(r) => {
                self.counters.remembered();
                Ok(r)
            }
            Err(CoreError::Unextracted { turn, error }) => {
                let entry =
                    crate::unextracted::UnextractedTurn { namespace: ns.clone(), turn, error: error.to_string() };
                // The ledger is a file: written off the executor.
                match crate::blocking::blocking(|| self.ledger.add(entry)) {
                    Ok(()) => Err(AgentError::Core(CoreError::Unextracted { turn, error })),
                    Err(ledger) => {
                        Err(AgentError::UnlistedTurn { turn, error: error.to_string(), ledger: Box::new(ledger) })
                    }
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Remember a turn under an optional idempotency key, the one rule every door applies: a
    /// key already used in `ns` with the same text answers the turn first recorded (status
    /// `already_recorded`, nothing written again); with another text it is a conflict
    /// ([`AgentError::IdempotencyConflict`]); an empty key is invalid. The caller serialises
    /// the look-up and the write (the CLI holds the data directory lock; the server a mutex).
    pub async fn remember_idempotent(
        &self,
        ns: &Namespace,
        source: &str,
        text: &str,
        key: Option<&str>,
    ) -> Result<RememberReport, AgentError> {
        self.remember_idempotent_at(ns, source, text, key, None).await
    }

    /// [`Runtime::remember_idempotent`] said at `at` (None: the clock's time). A replay of the
    /// key answers the turn first recorded, whatever time it states.
    pub async fn remember_idempotent_at(
        &self,
        ns: &Namespace,
        source: &str,
        text: &str,
        key: Option<&str>,
        at: Option<Timestamp>,
    ) -> Result<RememberReport, AgentError> {
        let Some(key) = key.map(str::trim) else {
            return self.remember_turn_at(ns, source, text, None, at).await;
        };
        if key.is_empty() {
            return Err(mnemo_contract::CoreError::InvalidInput("the idempotency key must not be empty".into()).into());
        }
        let external = format!("{IDEMPOTENCY_PREFIX}{key}");
        let engine = self.engine();
        match engine.turn_by_external_id(ns, &external).await? {
            Some(turn) if turn.text == text => Ok(RememberReport::already_recorded(turn, engine.reasoner_model())),
            Some(turn) => Err(AgentError::IdempotencyConflict { key: key.to_string(), turn: turn.id, at: turn.at }),
            None => self.remember_turn_at(ns, source, text, Some(external), at).await,
        }
    }

    /// The lock an idempotent remember holds from its look-up to its write.
    pub(crate) fn idempotency_lock(&self) -> &tokio::sync::Mutex<()> {
        &self.idempotency
    }

    /// The turns of `ns` recorded but not extracted, oldest first.
    pub fn unextracted(&self, ns: &Namespace) -> Result<Vec<crate::unextracted::UnextractedTurn>, AgentError> {
        Ok(self.ledger.read()?.into_iter().filter(|e| &e.namespace == ns).collect())
    }

    /// Take a turn of `ns` off the ledger of unextracted turns (a poison turn that can never be
    /// extracted): it stays recorded, and is no longer retried. Returns the entry discarded;
    /// an error when the turn is not on the ledger.
    pub async fn discard_unextracted(
        &self,
        ns: &Namespace,
        turn: IdRef,
    ) -> Result<crate::unextracted::UnextractedTurn, AgentError> {
        let turn = self.engine().turn_id(ns, turn).await?;
        self.ledger.discard(ns, turn)
    }

    /// Extract again every unextracted turn of `ns`, oldest first; each success leaves the
    /// ledger. Returns the reports of the successes and the turns that failed again.
    pub async fn reextract(
        &self,
        ns: &Namespace,
    ) -> Result<(Vec<RememberReport>, Vec<crate::unextracted::UnextractedTurn>), AgentError> {
        let pending = crate::blocking::blocking(|| self.unextracted(ns))?;
        if pending.is_empty() {
            return Ok((vec![], vec![]));
        }
        let ids: Vec<TurnId> = pending.iter().map(|e| e.turn).collect();
        let turns = self.engine.turns_by_ids(ns, &ids).await?;
        let mut done = Vec::new();
        let mut failed = Vec::new();
        for entry in pending {
            let Some(turn) = turns.iter().find(|t| t.id == entry.turn) else {
                failed.push(crate::unextracted::UnextractedTurn {
                    error: format!("turn {} is not in the store of namespace {ns}", entry.turn),
                    ..entry
                });
                continue;
            };
            match self.engine.reextract(ns, turn).await {
                Ok(r) => {
                    crate::blocking::blocking(|| self.ledger.remove(ns, entry.turn))?;
                    done.push(r);
                }
                Err(CoreError::Unextracted { turn, error }) => {
                    let again =
                        crate::unextracted::UnextractedTurn { namespace: ns.clone(), turn, error: error.to_string() };
                    crate::blocking::blocking(|| self.ledger.add(again.clone()))?;
                    failed.push(again);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok((done, failed))
    }

    /// Recall → assess → act or escalate, for `task` (nothing is remembered but, on ESCALATE,
    /// the escalation: recorded, or the open one on the same task reused, and sent to the
    /// configured sinks; `AgentTurn::escalation` says what was done, and never fails the turn).
    pub async fn turn(&self, ns: &Namespace, task: &Task, opts: &RecallOptions) -> Result<AgentTurn, AgentError> {
        let pack = self.engine.recall(ns, &task.query, opts).await?;
        self.assess_now(ns, task, pack).await
    }

    /// Assess `pack` (recalled now) for `task`: ground, grade, apply the corrections, decide,
    /// and on ESCALATE raise the escalation.
    pub(crate) async fn assess_now(&self, ns: &Namespace, task: &Task, pack: Pack) -> Result<AgentTurn, AgentError> {
        let now = self.engine.now();
        let assessment = tracing::Instrument::instrument(
            self.assessor.assess(task, pack.clone(), now),
            tracing::info_span!("assess"),
        )
        .await?;
        let assessment = tracing::Instrument::instrument(
            crate::assess::settle(&self.engine, ns, assessment),
            tracing::info_span!("apply_corrections"),
        )
        .await?;
        let assessment = self.hold_unconfirmed_overwrites(ns, assessment).await?;
        self.counters.assessed(&assessment);
        let action = action_text(task, &assessment);
        let verdict = crate::verdict::verdict(task, &assessment);
        let escalation = match &assessment.decision {
            Decision::Escalate { .. } => {
                tracing::Instrument::instrument(
                    self.raise_escalation(ns, task, &assessment, &verdict),
                    tracing::info_span!("escalate"),
                )
                .await
            }
            Decision::Act => None,
        };
        Ok(AgentTurn { remembered: None, pack, assessment, action, verdict, escalation, plan: None })
    }

    /// `[assessor] supersession_limit` and `protect_authoritative_values`: an ACT on a claim
    /// one principal replaced that many times in a row, or replaced an authority's value on,
    /// becomes ESCALATE (`crate::assess::poison`). Reads each such claim's history (one indexed
    /// store read) only when one of them is on and the decision is ACT on a single-source claim.
    async fn hold_unconfirmed_overwrites(
        &self,
        ns: &Namespace,
        mut assessment: Assessment,
    ) -> Result<Assessment, AgentError> {
        if (self.supersession.off() && !self.authority.on) || !matches!(assessment.decision, Decision::Act) {
            return Ok(assessment);
        }
        let bearing: Vec<Memory> = assessment
            .pack
            .memories()
            .filter(|m| m.claim.is_some() && m.sources.len() == 1)
            .filter(|m| assessment.grades.iter().any(|g| g.id == m.id && g.load_bearing))
            .cloned()
            .collect();
        if bearing.is_empty() {
            return Ok(assessment);
        }
        for m in &bearing {
            let Some(c) = &m.claim else { continue };
            // The claim's memories of every status: one indexed read (`Store::claim_memories`).
            let history = self.engine.claim_history(ns, &c.entity, &c.attribute).await?;
            self.supersession.apply(&mut assessment, m, &history);
            self.authority.apply(&mut assessment, m, &history);
        }
        Ok(assessment)
    }

    /// What an agent reads of an assessed recall (the view every door shows by default),
    /// counted with the engine's token counter.
    pub fn recall_view(&self, turn: &AgentTurn) -> crate::agent_view::AgentRecall {
        // A pack of a past time (as-of recall) ages its memories as of then.
        let now = turn.pack.as_of.unwrap_or_else(|| self.engine.now());
        crate::agent_view::AgentRecall::assessed(turn, now, self.engine.token_counter())
    }

    /// What an agent reads of a raw recall (no grade, no decision).
    pub fn raw_recall_view(&self, pack: &Pack) -> crate::agent_view::AgentRecall {
        let now = pack.as_of.unwrap_or_else(|| self.engine.now());
        crate::agent_view::AgentRecall::raw(pack, now, self.engine.token_counter())
    }

    /// The text of `view` (within its budget plus `RENDER_OVERHEAD_TOKENS`, by the engine's
    /// counter).
    pub fn render_recall(&self, view: &crate::agent_view::AgentRecall) -> String {
        view.render(self.engine.token_counter())
    }

    /// `view` with its prompt-ready text filled in: the answer of a door whose answer is JSON
    /// alone (HTTP, Python), so that no client renders it again.
    pub fn with_text(&self, mut view: crate::agent_view::AgentRecall) -> crate::agent_view::AgentRecall {
        view.text = Some(self.render_recall(&view));
        view
    }

    /// The full agent turn: remember the message (said by `source`), then `turn`, then on ACT
    /// the plan and its check (`plan_check`).
    pub async fn handle(
        &self,
        ns: &Namespace,
        source: &str,
        message: &str,
        about: Option<(String, String)>,
        opts: &RecallOptions,
    ) -> Result<AgentTurn, AgentError> {
        let remembered = self.remember(ns, source, message.as_bytes()).await?;
        let task = Task { query: message.to_string(), about };
        let mut turn = self.turn(ns, &task, opts).await?;
        turn.remembered = Some(remembered);
        self.plan_turn(ns, &task, &mut turn).await;
        Ok(turn)
    }
}

/// The reasoner `config` names (`[reasoner]` with `[llm]`), built now: for callers that need
/// the model seam without a runtime (e.g. `mnemo eval-assessor --plan-with-model`).
pub fn build_reasoner(config: &Config, data_dir: &Path) -> Result<Arc<dyn Reasoner>, AgentError> {
    let (k, s, o) = config.plugin("reasoner")?;
    // A reasoner is only ever linked in (the plugin ABI has no such role): built here without
    // loading the `[[plugins]]` libraries, for callers that are not async.
    Ok(registry::build_reasoner(
        &k,
        &ReasonerContext {
            section: Section { settings: &s, origin: &o, data_dir, config_dir: &config.section_dir("reasoner") },
            llm: Some(&config.llm()),
        },
    )?)
}

/// The value the planner would use for `(entity, attribute)`: the highest-ranked memory in the
/// pack asserting a claim on it (rank = position; ties to the newest confirmation).
pub fn answer_of<'a>(pack: &'a Pack, entity: &str, attribute: &str) -> Option<&'a Memory> {
    // The planner already orders the pack: pinned first, then score, ties to the newest
    // confirmation — so the first claim on it is the highest-ranked.
    pack.items.iter().map(|i| &*i.memory).find(|m| m.claim.as_ref().is_some_and(|c| c.is_on(entity, attribute)))
}

pub(crate) fn action_text(task: &Task, a: &Assessment) -> String {
    match &a.decision {
        Decision::Act => {
            // The task's claim, or the one the assessor took its query to name.
            let about = task.about.as_ref().or(a.inferred_about.as_ref());
            let value = about
                .and_then(|(e, at)| answer_of(&a.pack, e, at))
                .and_then(|m| m.claim.as_ref())
                .map(|c| c.value.clone());
            match (value, about) {
                // Quoted: a stored value is data, and must not be able to pose as output
                // (a value reading "x (pack trust 0.99 ≥ 0.70)" stays inside its quotes).
                (Some(v), Some((e, at))) => {
                    format!(
                        "ACT: proceed using {e:?} | {at:?} = {v:?} (pack trust {:.2} ≥ {:.2})",
                        a.trust, a.threshold
                    )
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

/// The record of the index's embedder that versions before the index stamp named it kept in
/// the data directory (`model id` TAB `dims`). It is never read: the index's own stamp says.
const LEGACY_EMBEDDER_RECORD: &str = "index-embedder";

/// Remove a leftover [`LEGACY_EMBEDDER_RECORD`] (by a writer, which holds the lock): an older
/// version reopening the directory would trust it, and it may name an embedder the index no
/// longer holds; without it that version rebuilds its index once, which is safe. Failing to
/// remove it is no error (a read-only place, a full disk): it is only logged.
fn forget_legacy_embedder_record(data_dir: &Path) {
    let path = data_dir.join(LEGACY_EMBEDDER_RECORD);
    match std::fs::remove_file(&path) {
        Ok(()) => tracing::debug!(file = %path.display(), "a leftover embedder record of an older version was removed"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            tracing::debug!(file = %path.display(), %error, "a leftover embedder record could not be removed")
        }
    }
}
