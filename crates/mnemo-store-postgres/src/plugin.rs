//! Registration as the `postgres` Store and Index plugins.
//!
//! ```toml
//! [store]
//! kind = "postgres"
//! url = ""                 # empty: the environment's MNEMO_POSTGRES_URL
//! schema = "mnemo"         # the PostgreSQL schema (created and migrated at first use)
//! throwaway = false        # true: a fresh schema per run, dropped afterwards (eval, tests)
//! pool_size = 16
//!
//! [index]
//! kind = "postgres"
//! url = ""                 # as [store]
//! schema = "mnemo"
//! throwaway = false
//! pool_size = 16
//! lexical_weight = 1.0     # fusion, as the tantivy index
//! dense_weight = 0.1
//! rrf_k = 30.0
//! ef_search = 200          # HNSW candidate list (pgvector hnsw.ef_search, 1..=1000): a search of
//!                          # `limit` rows keeps max(ef_search, limit), at most 1000
//! ```
use std::sync::Arc;

use mnemo_contract::registry::{IndexContext, StoreContext};
use mnemo_contract::{Index, Result, Store};

use crate::index::{IndexSettings, PostgresIndex};
use crate::settings::PgSettings;
use crate::store::PostgresStore;

fn build_store(ctx: &StoreContext<'_>) -> Result<Arc<dyn Store>> {
    let s: PgSettings = ctx.section.settings()?;
    let store = PostgresStore::new(&s)
        .map_err(|e| mnemo_contract::CoreError::Config(format!("{}: {e}", ctx.section.origin)))?;
    Ok(Arc::new(store))
}

fn build_index(ctx: &IndexContext<'_>) -> Result<Arc<dyn Index>> {
    let s: IndexSettings = ctx.section.settings()?;
    let index = PostgresIndex::new(&s)
        .map_err(|e| mnemo_contract::CoreError::Config(format!("{}: {e}", ctx.section.origin)))?;
    Ok(Arc::new(index))
}

mnemo_contract::register_store!("postgres", "PostgreSQL store (shared by many processes)", build_store);
mnemo_contract::register_index!(
    "postgres",
    "PostgreSQL full text + pgvector HNSW, weighted reciprocal-rank fusion",
    build_index
);
