//! Filtered recall at the runtime — as of a past system time, and/or the episodes of a time
//! window (`Engine::recall_filtered`) — ranked in a scratch index of the configured kind kept
//! in memory (tantivy in RAM: the same analysis, fusion and
//! entity boost as recall's; any other kind: the exact in-memory index with the configured
//! fusion weights), graded as of that time. A grade of the past asks no system of record (it
//! answers for now), applies no correction and raises no escalation: nobody acts on the past,
//! the answer says what memory held.
use std::sync::Arc;

use mnemo_contract::registry::{self, IndexContext, Section};
use mnemo_contract::*;
use mnemo_core::engine::{RecallFilter, RecallOptions};

use crate::error::AgentError;
use crate::runtime::{AgentTurn, Runtime};

/// The `[index]` keys the exact in-memory index shares with other kinds (how rankings fuse).
const FUSION_KEYS: [&str; 4] = ["fusion", "lexical_weight", "dense_weight", "rrf_k"];

/// The smallest tantivy writer arena: a scratch index holds one namespace's memories, once.
const SCRATCH_WRITER_MB: i64 = 15;

impl Runtime {
    /// An empty index, in memory, ranking as the configured one does (see the module).
    fn scratch_index(&self) -> Result<Arc<dyn Index>, AgentError> {
        let (kind, settings, origin) = self.config().plugin("index")?;
        let (kind, settings) = if kind == "tantivy" {
            let mut s = crate::read_only::index_in_memory(&kind, &settings);
            s.remove("read_only");
            s.insert("writer_memory_mb".into(), toml::Value::Integer(SCRATCH_WRITER_MB));
            (kind, s)
        } else {
            let s: toml::Table = settings.into_iter().filter(|(k, _)| FUSION_KEYS.contains(&k.as_str())).collect();
            ("brute".to_string(), s)
        };
        let config_dir = self.config().section_dir("index");
        let engine = self.engine();
        Ok(crate::blocking::blocking(|| {
            registry::build_index(
                &kind,
                &IndexContext {
                    section: Section {
                        settings: &settings,
                        origin: &origin,
                        data_dir: self.data_dir(),
                        config_dir: &config_dir,
                    },
                    clock: engine.clock().clone(),
                    embedder: engine.embedder().clone(),
                },
            )
        })?)
    }

    /// The pack of what `filter` keeps of `ns` for `query` (`Engine::recall_filtered`).
    pub async fn recall_pack_filtered(
        &self,
        ns: &Namespace,
        query: &str,
        opts: &RecallOptions,
        filter: RecallFilter,
    ) -> Result<Pack, AgentError> {
        let scratch = self.scratch_index()?;
        Ok(self.engine().recall_filtered(ns, query, opts, filter, &*scratch).await?)
    }

    /// The assessed recall of what `filter` keeps: as of a past time, graded as of then (see
    /// the module); an episode window alone is a recall of now, assessed as any.
    pub async fn turn_filtered(
        &self,
        ns: &Namespace,
        task: &Task,
        opts: &RecallOptions,
        filter: RecallFilter,
    ) -> Result<AgentTurn, AgentError> {
        let pack = self.recall_pack_filtered(ns, &task.query, opts, filter).await?;
        // A pack of the past (as of a time, or what was true at a world time) carries the time
        // it is graded at; an episode window alone is of now.
        let Some(at) = pack.as_of else {
            return self.assess_now(ns, task, pack).await;
        };
        let assessment = self.assessor().assess(task, pack.clone(), at).await?;
        self.counters.assessed(&assessment);
        // Said of the past: what memory held then is not an instruction to act now.
        let when = match (filter.as_of, filter.valid_at) {
            (Some(a), Some(v)) => format!("as of {a}, valid at {v}"),
            (None, Some(v)) => format!("valid at {v}"),
            _ => format!("as of {at}"),
        };
        let action = format!("{when}: {}", crate::runtime::action_text(task, &assessment));
        let verdict = crate::verdict::verdict(task, &assessment);
        Ok(AgentTurn { remembered: None, pack, assessment, action, verdict, escalation: None, plan: None })
    }
}
