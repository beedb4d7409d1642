//! The engine a retrieval bench runs (`bench locomo`, `bench longmemeval`): an in-memory
//! SQLite store and the index the settings ask for, built through the registry like any
//! configured one; the embedder behind the optional embedding cache and a timing wrapper; the
//! default policy with episodic decay off (no dataset turn may fade, whatever the recall time);
//! a simulated clock the bench sets to each question's time.
use std::path::Path;
use std::sync::Arc;

use mnemo_contract::registry::{self, Section, StoreContext};
use mnemo_contract::{CharTokenCounter, Embedder, EnginePolicy, SimClock, Store};
use mnemo_core::engine::EngineParts;
use mnemo_core::Engine;

use super::timing::TimingEmbedder;
use super::LocomoArgs;
use crate::embed_cache::CachedEmbedder;
use crate::error::Result;
use crate::util::NoReasoner;

/// The engine and the handles a bench needs around it.
pub struct BenchEngine {
    /// The engine (ingest, search, recall).
    pub engine: Engine,
    /// Its clock.
    pub clock: Arc<SimClock>,
    /// What the engine embeds with: the timed (and maybe cached) embedder.
    pub embedder: Arc<dyn Embedder>,
    /// The timing log of that embedder.
    pub timed: Arc<TimingEmbedder>,
    /// The embedding cache, when asked for (its hits make the speed figures the cache's).
    pub cache: Option<Arc<CachedEmbedder>>,
    /// The token counter packs are measured with.
    pub tokens: Arc<CharTokenCounter>,
    /// The index, described for the report.
    pub index_desc: String,
    /// The entity boost the index ranks with (0: off), from its typed settings.
    pub entity_boost: f32,
}

impl BenchEngine {
    /// Build it from the retrieval settings of `args` (index, fusion, stemming, entity boost,
    /// embedding cache, recall neighbour share).
    pub fn build(args: &LocomoArgs, embedder: Arc<dyn Embedder>) -> Result<Self> {
        let clock = Arc::new(SimClock::new(mnemo_contract::Timestamp::from_millis(0)));
        let (index, settings) = args.index(clock.clone(), embedder.clone())?;
        let (index_desc, entity_boost) = (settings.describe()?, settings.entity_boost()?);
        let cache = match &args.embed_cache {
            Some(p) => Some(Arc::new(CachedEmbedder::open(embedder.clone(), p)?)),
            None => None,
        };
        let base: Arc<dyn Embedder> = match &cache {
            Some(c) => c.clone(),
            None => embedder,
        };
        let timed = Arc::new(TimingEmbedder::new(base));
        let embedder: Arc<dyn Embedder> = timed.clone();
        let mut policy = EnginePolicy::default();
        // No dataset turn may fade during the benchmark, whatever the recall time.
        policy.kinds.episodic.decays = false;
        if let Some(a) = args.recall_neighbour_share {
            policy.recall.neighbour_share = a;
            policy.recall.neighbour_turns = args.neighbour_window();
        }
        policy.recall.dense_max_tokens = args.recall_dense_max_tokens;
        let tokens = Arc::new(CharTokenCounter);
        let engine = Engine::new(EngineParts {
            store: in_memory_store(clock.clone())?,
            index,
            embedder: embedder.clone(),
            reasoner: Arc::new(NoReasoner),
            clock: clock.clone(),
            tokens: tokens.clone(),
            policy,
        })?;
        Ok(BenchEngine { engine, clock, embedder, timed, cache, tokens, index_desc, entity_boost })
    }
}

/// A throw-away SQLite store, built through the registry's typed factory.
fn in_memory_store(clock: Arc<SimClock>) -> Result<Arc<dyn Store>> {
    let t: toml::Table = toml::Table::from_iter([("in_memory".to_string(), true.into())]);
    let section = Section { settings: &t, origin: "bench store", data_dir: Path::new("."), config_dir: Path::new(".") };
    Ok(registry::build_store("sqlite", &StoreContext { section, clock })?)
}
