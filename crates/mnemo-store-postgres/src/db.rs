//! The connection pool, the per-transaction scope (schema, role, namespace) and the migrator.
//!
//! Every transaction starts with `SET LOCAL search_path` (the configured schema),
//! `mnemo.namespace` (the namespace it may see, or `*` for the store-wide change feed) and,
//! when the login role bypasses row-level security (a superuser, as on a test server),
//! `SET LOCAL ROLE mnemo_app`: a role without `BYPASSRLS`, so the namespace policies hold
//! even for a query that forgot its namespace filter.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use deadpool_postgres::{Hook, HookError, Manager, ManagerConfig, Object, Pool, RecyclingMethod, Transaction};
use mnemo_contract::{CoreError, Namespace};
use tokio::sync::OnceCell;
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Row};

use crate::error::{DbContext, PgError};
use crate::settings::{check_schema_name, PgSettings};

/// The role the queries run as when the login role would bypass row-level security.
pub const APP_ROLE: &str = "mnemo_app";

/// Which rows a transaction may see.
#[derive(Clone, Copy, Debug)]
pub enum Scope<'a> {
    /// One namespace.
    Namespace(&'a Namespace),
    /// Every namespace (the change feed, `namespaces`, index upserts across namespaces).
    All,
}

/// A pool on one schema of one database. Cheap to clone.
#[derive(Clone)]
pub struct Db {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    url: String,
    schema: String,
    throwaway: bool,
    /// `Some(APP_ROLE)` when queries must switch role; decided once.
    app_role: OnceCell<Option<String>>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("schema", &self.inner.schema).finish_non_exhaustive()
    }
}

static THROWAWAY_SEQ: AtomicU64 = AtomicU64::new(0);

impl Db {
    /// A pool for `settings` (no connection is made until first use).
    pub fn connect(settings: &PgSettings) -> Result<Db, PgError> {
        settings.validate()?;
        let url = settings.resolved_url()?;
        let schema = if settings.throwaway {
            let n = THROWAWAY_SEQ.fetch_add(1, Ordering::SeqCst);
            // A random part, so a reused process id never meets a schema left by an earlier
            // process (not the wall clock: only the one real `Clock` reads it).
            let salt = std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), n) as u32;
            format!("{}_tmp_{}_{}_{}", settings.schema, std::process::id(), n, salt)
        } else {
            settings.schema.clone()
        };
        check_schema_name(&settings.schema)?;
        let config: tokio_postgres::Config =
            url.parse().map_err(|e| PgError::Settings(format!("url is not a PostgreSQL URL: {e}")))?;
        let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        // The schema is also every connection's session search path: a pipelined read
        // prepares its statement before the transaction that sets it (see `pipelined`).
        let search_path = format!("SET search_path TO \"{schema}\", public");
        let pool = Pool::builder(manager)
            .max_size(settings.pool_size)
            .post_create(Hook::async_fn(move |client, _| {
                let sql = search_path.clone();
                Box::pin(async move { client.batch_execute(&sql).await.map_err(HookError::Backend) })
            }))
            .build()
            .map_err(|e| PgError::Settings(format!("cannot build the connection pool: {e}")))?;
        Ok(Db {
            inner: Arc::new(Inner { pool, url, schema, throwaway: settings.throwaway, app_role: OnceCell::new() }),
        })
    }

    /// The schema in use (for a throw-away store, its generated name).
    pub fn schema(&self) -> &str {
        &self.inner.schema
    }

    /// A pooled connection.
    pub async fn client(&self) -> Result<Object, CoreError> {
        self.inner.pool.get().await.map_err(|source| PgError::Pool { source }.into())
    }

    /// `"schema"`, quoted (the name is checked to need no escaping).
    pub fn quoted_schema(&self) -> String {
        format!("\"{}\"", self.inner.schema)
    }

    /// Begin a transaction scoped to `scope` (see the module docs).
    pub async fn begin<'a>(&self, client: &'a mut Object, scope: Scope<'_>) -> Result<Transaction<'a>, CoreError> {
        self.begin_with(client, scope, true, false).await
    }

    /// Begin a read-only REPEATABLE READ transaction scoped to `scope`: every query of it sees
    /// the same snapshot (a check that reads a table several times, beside writers).
    pub async fn begin_snapshot<'a>(
        &self,
        client: &'a mut Object,
        scope: Scope<'_>,
    ) -> Result<Transaction<'a>, CoreError> {
        self.begin_with(client, scope, true, true).await
    }

    /// Begin a transaction that sees every namespace as the login role (schema changes such
    /// as building or dropping a vector index need the owner).
    pub async fn begin_as_owner<'a>(&self, client: &'a mut Object) -> Result<Transaction<'a>, CoreError> {
        self.begin_with(client, Scope::All, false, false).await
    }

    async fn begin_with<'a>(
        &self,
        client: &'a mut Object,
        scope: Scope<'_>,
        switch_role: bool,
        snapshot: bool,
    ) -> Result<Transaction<'a>, CoreError> {
        let role = if switch_role { self.app_role(client).await? } else { None };
        let tx = if snapshot {
            client
                .build_transaction()
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await
                .db("begin")?
        } else {
            client.transaction().await.db("begin")?
        };
        let ns = match scope {
            Scope::Namespace(ns) => ns.as_str(),
            Scope::All => "*",
        };
        // Namespaces are [A-Za-z0-9_.:-] (checked by Namespace::new): safe inside quotes.
        let mut prelude = format!(
            "SET LOCAL search_path TO {}, public; SELECT set_config('mnemo.namespace', '{ns}', true);",
            self.quoted_schema()
        );
        if let Some(r) = role {
            prelude.push_str(&format!(" SET LOCAL ROLE {r};"));
        }
        tx.batch_execute(&prelude).await.db("scope the transaction")?;
        Ok(tx)
    }

    /// The statements that open a transaction scoped to `scope` (one simple-query message):
    /// `BEGIN`, the schema, the namespace, the role when it must switch, then `settings`
    /// (more `SET LOCAL`s; may be empty).
    async fn opening(&self, client: &Object, scope: Scope<'_>, settings: &str) -> Result<String, CoreError> {
        let role = self.app_role(client).await?;
        let ns = match scope {
            Scope::Namespace(ns) => ns.as_str(),
            Scope::All => "*",
        };
        // Namespaces are [A-Za-z0-9_.:-] (checked by Namespace::new): safe inside quotes.
        let mut sql = format!(
            "BEGIN; SET LOCAL search_path TO {}, public; SELECT set_config('mnemo.namespace', '{ns}', true);",
            self.quoted_schema()
        );
        if let Some(r) = role {
            sql.push_str(&format!(" SET LOCAL ROLE {r};"));
        }
        sql.push_str(settings);
        Ok(sql)
    }

    /// The rows of one statement, run in a transaction scoped to `scope` (with
    /// `settings`, more `SET LOCAL`s), in ONE round trip: the opening, the statement and the
    /// `COMMIT` are pipelined (sent together; the server runs them in order). A failing
    /// opening aborts the transaction, so the statement fails too and `COMMIT` rolls back:
    /// the connection goes back to the pool outside any transaction either way.
    pub async fn pipelined(
        &self,
        scope: Scope<'_>,
        settings: &str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, CoreError> {
        let client = self.client().await?;
        let open = self.opening(&client, scope, settings).await?;
        let stmt = client.prepare_cached(sql).await.db("prepare")?;
        let (opened, rows, committed) =
            tokio::join!(client.batch_execute(&open), client.query(&stmt, params), client.batch_execute("COMMIT"));
        opened.db("scope the transaction")?;
        let rows = rows.db(&statement_name(sql))?;
        committed.db("commit")?;
        Ok(rows)
    }

    /// As [`Db::pipelined`], two statements in one transaction and one round trip.
    pub async fn pipelined2(
        &self,
        scope: Scope<'_>,
        settings: &str,
        first: (&str, &[&(dyn ToSql + Sync)]),
        second: (&str, &[&(dyn ToSql + Sync)]),
    ) -> Result<(Vec<Row>, Vec<Row>), CoreError> {
        let client = self.client().await?;
        let open = self.opening(&client, scope, settings).await?;
        let s1 = client.prepare_cached(first.0).await.db("prepare")?;
        let s2 = client.prepare_cached(second.0).await.db("prepare")?;
        let (opened, r1, r2, committed) = tokio::join!(
            client.batch_execute(&open),
            client.query(&s1, first.1),
            client.query(&s2, second.1),
            client.batch_execute("COMMIT")
        );
        opened.db("scope the transaction")?;
        let r1 = r1.db(&statement_name(first.0))?;
        let r2 = r2.db(&statement_name(second.0))?;
        committed.db("commit")?;
        Ok((r1, r2))
    }

    /// Whether queries must switch to `APP_ROLE` (the login role bypasses RLS), creating the
    /// role when it is missing.
    async fn app_role(&self, client: &Object) -> Result<Option<String>, CoreError> {
        let r = self
            .inner
            .app_role
            .get_or_try_init(|| async {
                let row = client
                    .query_one("SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user", &[])
                    .await
                    .db("read the login role")?;
                let bypasses: bool = row.try_get(0).db("read the login role")?;
                if !bypasses {
                    return Ok::<_, CoreError>(None);
                }
                let create = format!(
                    "DO $$ BEGIN CREATE ROLE {APP_ROLE} NOLOGIN NOBYPASSRLS; \
                     EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$"
                );
                client.batch_execute(&create).await.db("create the row-level-security role")?;
                Ok(Some(APP_ROLE.to_string()))
            })
            .await?;
        Ok(r.clone())
    }

    /// Bring `component`'s tables in the schema to the newest of `steps` (step i makes version
    /// i + 1), under an advisory lock; `grants` (with `{role}` and `{schema}`) are run after,
    /// when queries run as `APP_ROLE`. A newer version than `steps` knows is refused.
    pub async fn migrate(&self, component: &'static str, steps: &[&str], grants: &str) -> Result<(), CoreError> {
        let mut client = self.client().await?;
        let role = self.app_role(&client).await?;
        let schema = self.quoted_schema();
        let tx = client.transaction().await.db("begin migration")?;
        tx.execute("SELECT pg_advisory_xact_lock(hashtext('mnemo-migrate'), hashtext($1))", &[&self.inner.schema])
            .await
            .db("take the migration lock")?;
        tx.batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS {schema}; SET LOCAL search_path TO {schema}, public; \
             CREATE TABLE IF NOT EXISTS mnemo_schema_versions (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
        ))
        .await
        .db("create the schema")?;
        let found: i32 = tx
            .query_opt("SELECT version FROM mnemo_schema_versions WHERE component = $1", &[&component])
            .await
            .db("read the schema version")?
            .map(|r| r.try_get(0))
            .transpose()
            .db("read the schema version")?
            .unwrap_or(0);
        let known = steps.len() as i32;
        if found > known {
            return Err(PgError::FutureSchema { schema: self.inner.schema.clone(), component, found, known }.into());
        }
        for (i, sql) in steps.iter().enumerate().skip(found.max(0) as usize) {
            tx.batch_execute(sql).await.db(&format!("migrate {component} to schema version {}", i + 1))?;
        }
        tx.execute(
            "INSERT INTO mnemo_schema_versions (component, version) VALUES ($1, $2) \
             ON CONFLICT (component) DO UPDATE SET version = excluded.version",
            &[&component, &known],
        )
        .await
        .db("record the schema version")?;
        if let Some(role) = role {
            let g = grants.replace("{role}", &role).replace("{schema}", &schema);
            tx.batch_execute(&g).await.db("grant the row-level-security role")?;
        }
        tx.commit().await.db("commit migration")
    }
}

impl Db {
    /// Bytes on disk of the schema's tables, their indexes and TOAST.
    pub async fn schema_bytes(&self) -> Result<u64, CoreError> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN ('r', 'm')",
                &[&self.inner.schema],
            )
            .await
            .db("measure the schema")?;
        let b: i64 = row.try_get(0).db("measure the schema")?;
        Ok(b.max(0) as u64)
    }

    /// `VACUUM (ANALYZE)` of each table of the schema (as the login role, outside any
    /// transaction): what PostgreSQL wants after a bulk load. Without it the server's
    /// autovacuum does the same work on its own schedule, for several seconds at 100k rows
    /// (the HNSW index included), on whatever cores the reads that follow would use.
    pub async fn vacuum_analyze(&self) -> Result<(), CoreError> {
        let client = self.client().await?;
        let tables = client
            .query(
                "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY 1",
                &[&self.inner.schema],
            )
            .await
            .db("list the schema's tables")?;
        let mut names = Vec::with_capacity(tables.len());
        for t in tables {
            let name: String = t.try_get(0).db("list the schema's tables")?;
            names.push(format!("{}.\"{}\"", self.quoted_schema(), name.replace('"', "\"\"")));
        }
        if names.is_empty() {
            return Ok(());
        }
        // One statement for them all (VACUUM takes a list; each table is its own transaction).
        let sql = format!("VACUUM (ANALYZE) {}", names.join(", "));
        client.batch_execute(&sql).await.db("vacuum the schema's tables")
    }

    /// `VACUUM FULL` of these tables of the schema (as the login role, their owner, outside any
    /// transaction): each is rewritten into new files, so neither the dead row versions an
    /// erasure left nor the bytes a plain `VACUUM` would only mark free (it does not zero them)
    /// stay in the table's files. It holds each table's exclusive lock while it is rewritten.
    pub async fn vacuum(&self, tables: &[&str]) -> Result<(), CoreError> {
        if tables.is_empty() {
            return Ok(());
        }
        let client = self.client().await?;
        let names: Vec<String> =
            tables.iter().map(|t| format!("{}.\"{}\"", self.quoted_schema(), t.replace('"', "\"\""))).collect();
        client.batch_execute(&format!("VACUUM FULL {}", names.join(", "))).await.db("vacuum the erased rows away")
    }

    /// CPU time (nanoseconds) the server's processes have run so far: the postmaster and its
    /// children, from the kernel's scheduler statistics, when the server runs on this machine
    /// and they are readable; None otherwise. The difference over a stretch of work is the
    /// server's CPU for it, unlike a latency undisturbed by other processes waiting for a core
    /// (a backend that exits in between takes its share with it).
    pub async fn server_cpu_ns(&self) -> Result<Option<u64>, CoreError> {
        let Some(pid) = self.postmaster_pid().await? else { return Ok(None) };
        Ok(process_tree(pid).map(|pids| pids.into_iter().filter_map(cpu_ns).sum()))
    }

    /// The postmaster's process id, when its data directory is readable from here.
    async fn postmaster_pid(&self) -> Result<Option<u32>, CoreError> {
        let client = self.client().await?;
        let Ok(row) = client.query_one("SELECT setting FROM pg_settings WHERE name = 'data_directory'", &[]).await
        else {
            return Ok(None);
        };
        let dir: String = row.try_get(0).db("read data_directory")?;
        let Ok(pidfile) = std::fs::read_to_string(std::path::Path::new(&dir).join("postmaster.pid")) else {
            return Ok(None);
        };
        Ok(pidfile.lines().next().and_then(|l| l.trim().parse::<u32>().ok()))
    }

    /// The server's memory: the proportional set size (shared pages divided among their
    /// users) of the postmaster and its children, when the server runs on this machine and its
    /// data directory and processes are readable; None otherwise.
    pub async fn server_memory_bytes(&self) -> Result<Option<u64>, CoreError> {
        let Some(pid) = self.postmaster_pid().await? else { return Ok(None) };
        Ok(process_tree_pss(pid))
    }
}

/// The first words of a statement, to say which one failed.
pub(crate) fn statement_name(sql: &str) -> String {
    sql.split_whitespace().take(6).collect::<Vec<_>>().join(" ")
}

/// Σ Pss (bytes) over `pid` and its direct children, from /proc.
fn process_tree_pss(pid: u32) -> Option<u64> {
    let pss = |p: u32| -> Option<u64> {
        let text = std::fs::read_to_string(format!("/proc/{p}/smaps_rollup")).ok()?;
        let line = text.lines().find(|l| l.starts_with("Pss:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    };
    let pids = process_tree(pid)?;
    let total = pss(pid)?;
    Some(total + pids.into_iter().filter(|p| *p != pid).map(|p| pss(p).unwrap_or(0)).sum::<u64>())
}

/// `pid` and its direct children, from /proc; None when `pid` is not readable.
fn process_tree(pid: u32) -> Option<Vec<u32>> {
    std::fs::metadata(format!("/proc/{pid}/stat")).ok()?;
    let mut pids = vec![pid];
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(child) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else { continue };
        // Fields after the parenthesised command: state, ppid, ...
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if ppid == Some(pid) {
            pids.push(child);
        }
    }
    Some(pids)
}

/// Nanoseconds `pid` has run on a CPU (the first field of /proc/PID/schedstat).
fn cpu_ns(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?.split_whitespace().next()?.parse().ok()
}

impl Drop for Inner {
    /// A throw-away schema is dropped with its last handle (on a thread of its own: Drop
    /// cannot await, and the caller may be inside an async runtime).
    fn drop(&mut self) {
        if !self.throwaway {
            return;
        }
        let url = self.url.clone();
        let schema = self.schema.clone();
        let job = std::thread::spawn(move || -> Result<(), String> {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
            rt.block_on(async {
                let (client, conn) = tokio_postgres::connect(&url, NoTls).await.map_err(|e| e.to_string())?;
                let driver = tokio::spawn(conn);
                let r = client
                    .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                    .await
                    .map_err(|e| format!("{e:?}"));
                drop(client);
                let _ = driver.await;
                r
            })
        });
        match job.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("mnemo-store-postgres: could not drop throw-away schema {}: {e}", self.schema),
            Err(_) => eprintln!("mnemo-store-postgres: dropping throw-away schema {} failed", self.schema),
        }
    }
}
