//! Registration as the `sqlite` Store plugin.
//!
//! ```toml
//! [store]
//! kind = "sqlite"
//! path = "mnemo.db"        # relative to the data directory
//! in_memory = false        # true: a throw-away store (tests, demos)
//! synchronous = "normal"   # or "full": also survive power loss (one fsync per write)
//! quick_check = true       # integrity check at open for writing (sqlite/check.rs): a damaged index
//!                          # is rebuilt, other damage refused; false: no check at all
//! read_only = false        # true: open read-only (set by Mnemo for reads beside a running writer)
//! ```
//!
//! A store file or directory that cannot be written opens read-only: reads work, writes fail
//! saying so.
use std::sync::Arc;

use mnemo_contract::registry::StoreContext;
use mnemo_contract::{Result, Store};
use serde::Deserialize;

use crate::sqlite::{SqliteStore, Synchronous};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    #[serde(default = "default_path")]
    path: String,
    #[serde(default)]
    in_memory: bool,
    #[serde(default)]
    synchronous: Synchronous,
    #[serde(default = "yes")]
    quick_check: bool,
    #[serde(default)]
    read_only: bool,
}

fn yes() -> bool {
    true
}

fn default_path() -> String {
    "mnemo.db".to_string()
}

fn build(ctx: &StoreContext<'_>) -> Result<Arc<dyn Store>> {
    let s: Settings = ctx.settings()?;
    let store = if s.in_memory {
        SqliteStore::open_in_memory()?
    } else if s.read_only {
        SqliteStore::open_read_only(&ctx.data_path(&s.path)?)?
    } else {
        SqliteStore::open_checked(&ctx.data_path(&s.path)?, s.synchronous, s.quick_check)?
    };
    Ok(Arc::new(store))
}

mnemo_contract::register_store!("sqlite", "SQLite file store (WAL, one write connection)", build);
