//! The Store and Index under test, as configured: `[store]` and `[index]` sections built
//! through the registry's typed factories (like `mnemo serve` builds them), so one loop
//! measures any registered backend. What differs per backend is only where its data lives
//! for one N (a [`Site`]): a fresh data directory, or for PostgreSQL a fresh schema that is
//! dropped afterwards; and how its size on disk and its server's memory are read.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mnemo_contract::registry::{self, IndexContext, Section, StoreContext};
use mnemo_contract::{Clock, Embedder, Index, Store};

use super::pg_site::{self, Schema};
use crate::error::{BenchError, Result};
use crate::util::dir_bytes;

/// One configured component: its kind, settings (without `kind`) and where they came from.
#[derive(Clone, Debug)]
pub struct Component {
    /// The registered kind.
    pub kind: String,
    /// The section's settings, without `kind`.
    pub settings: toml::Table,
    /// Where the section came from, for errors.
    pub origin: String,
    /// The directory of the config file that named it.
    pub config_dir: PathBuf,
}

impl Component {
    /// A component of `kind` with these settings.
    pub fn new(kind: &str, settings: toml::Table, origin: &str, config_dir: &Path) -> Component {
        Component { kind: kind.to_string(), settings, origin: origin.to_string(), config_dir: config_dir.to_path_buf() }
    }
}

/// The Store and Index a scale run measures.
#[derive(Clone, Debug)]
pub struct Backend {
    /// `[store]`.
    pub store: Component,
    /// `[index]`.
    pub index: Component,
}

impl Backend {
    /// The embedded default: a SQLite store and a tantivy index in the data directory (the
    /// settings of `config/default.toml` that matter here).
    pub fn embedded_default() -> Backend {
        let table = |pairs: &[(&str, &str)]| -> toml::Table {
            pairs.iter().map(|(k, v)| (k.to_string(), toml::Value::String(v.to_string()))).collect()
        };
        Backend {
            store: Component::new("sqlite", table(&[("path", "mnemo.db")]), "bench default [store]", Path::new(".")),
            index: Component::new("tantivy", table(&[("path", "index")]), "bench default [index]", Path::new(".")),
        }
    }

    /// One line saying what is measured.
    pub fn describe(&self) -> String {
        format!("store kind {:?} + index kind {:?}", self.store.kind, self.index.kind)
    }

    /// A fresh place for one N: a temporary directory under `base` (removed when the site is
    /// dropped) and, for PostgreSQL components, a schema of its own (dropped likewise; with
    /// `keep`, the schema of that name, kept).
    pub fn site(&self, base: &Path, keep: Option<&str>) -> Result<Site> {
        std::fs::create_dir_all(base).map_err(|e| BenchError::Io { path: base.to_path_buf(), source: e })?;
        let dir = tempfile::Builder::new()
            .prefix("mnemo-scale-")
            .tempdir_in(base)
            .map_err(|e| BenchError::Io { path: base.to_path_buf(), source: e })?;
        let mut store = self.store.settings.clone();
        let mut index = self.index.settings.clone();
        let schema = pg_site::throwaway_schema((&self.store, &mut store), (&self.index, &mut index), keep)?;
        Ok(Site { dir, store, index, schema })
    }

    /// Build the Store and the Index at `site` through the registry.
    pub fn build(
        &self,
        site: &Site,
        clock: Arc<dyn Clock>,
        embedder: Arc<dyn Embedder>,
    ) -> Result<(Arc<dyn Store>, Arc<dyn Index>)> {
        let store = self.build_store(site, clock.clone())?;
        let index = self.build_index(site, clock, embedder)?;
        Ok((store, index))
    }

    /// Build the Store at `site` through the registry.
    pub fn build_store(&self, site: &Site, clock: Arc<dyn Clock>) -> Result<Arc<dyn Store>> {
        let section = Section {
            settings: &site.store,
            origin: &self.store.origin,
            data_dir: site.dir.path(),
            config_dir: &self.store.config_dir,
        };
        Ok(registry::build_store(&self.store.kind, &StoreContext { section, clock })?)
    }

    /// Build (or reopen) the Index at `site` through the registry.
    pub fn build_index(
        &self,
        site: &Site,
        clock: Arc<dyn Clock>,
        embedder: Arc<dyn Embedder>,
    ) -> Result<Arc<dyn Index>> {
        let section = Section {
            settings: &site.index,
            origin: &self.index.origin,
            data_dir: site.dir.path(),
            config_dir: &self.index.config_dir,
        };
        Ok(registry::build_index(&self.index.kind, &IndexContext { section, clock, embedder })?)
    }
}

/// Where one N's data lives; dropping it removes the directory and any schema.
pub struct Site {
    dir: tempfile::TempDir,
    store: toml::Table,
    index: toml::Table,
    /// A handle on the PostgreSQL schema (throw-away: dropped with the last handle).
    schema: Option<Schema>,
}

impl Site {
    /// Whether the data live in a PostgreSQL schema.
    pub fn on_postgres(&self) -> bool {
        self.schema.is_some()
    }

    /// Bytes the data take: the data directory's files plus the PostgreSQL schema's tables,
    /// indexes and TOAST; with a note of the parts.
    pub async fn bytes(&self) -> Result<(u64, String)> {
        let files = dir_bytes(self.dir.path());
        let mut note = format!("files {files}");
        let mut total = files;
        if let Some(db) = &self.schema {
            let b = db.schema_bytes().await?;
            note.push_str(&format!(" + PostgreSQL tables and indexes {b}"));
            total += b;
        }
        Ok((total, note + " bytes"))
    }

    /// After a load, the PostgreSQL schema's tables vacuumed and analysed (`Db::vacuum_analyze`),
    /// so that the server's autovacuum does not do it during the timed reads; the seconds it
    /// took, or None without PostgreSQL.
    pub async fn settle_server(&self) -> Result<Option<f64>> {
        let Some(db) = &self.schema else { return Ok(None) };
        let t0 = std::time::Instant::now();
        db.vacuum_analyze().await?;
        Ok(Some(t0.elapsed().as_secs_f64()))
    }

    /// CPU time (ns) the database server has run so far, when there is a server and it is
    /// readable from here (see `Db::server_cpu_ns`).
    pub async fn server_cpu_ns(&self) -> Result<Option<u64>> {
        match &self.schema {
            Some(db) => Ok(db.server_cpu_ns().await?),
            None => Ok(None),
        }
    }

    /// The data directory's bytes by part: the vector logs (`vectors-*.log`), tantivy's own
    /// files (under a `tantivy` directory) and the rest (the SQLite store, WAL included).
    pub fn bytes_by_part(&self) -> [(&'static str, u64); 3] {
        let mut parts = [("vectors", 0u64), ("tantivy", 0), ("store", 0)];
        fn walk(dir: &std::path::Path, in_tantivy: bool, parts: &mut [(&'static str, u64); 3]) {
            let Ok(rd) = std::fs::read_dir(dir) else { return };
            for e in rd.flatten() {
                let Ok(m) = e.metadata() else { continue };
                let name = e.file_name().to_string_lossy().into_owned();
                if m.is_dir() {
                    walk(&e.path(), in_tantivy || name == "tantivy", parts);
                } else if name.starts_with("vectors-") && name.ends_with(".log") {
                    parts[0].1 += m.len();
                } else if in_tantivy {
                    parts[1].1 += m.len();
                } else {
                    parts[2].1 += m.len();
                }
            }
        }
        walk(self.dir.path(), false, &mut parts);
        parts
    }

    /// The database server's memory (MiB) with a note, when there is a server and it is
    /// readable from here.
    pub async fn server_memory_mib(&self) -> Result<Option<(f64, String)>> {
        let Some(db) = &self.schema else { return Ok(None) };
        Ok(Some(match db.server_memory_bytes().await? {
            Some(b) => (
                b as f64 / (1024.0 * 1024.0),
                "PSS of the postmaster and its children (shared buffers counted once)".to_string(),
            ),
            None => {
                (f64::NAN, "unknown: the server is not on this machine or its data directory is unreadable".to_string())
            }
        }))
    }
}
