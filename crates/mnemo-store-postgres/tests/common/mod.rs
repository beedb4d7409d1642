//! The server the tests run against: `MNEMO_POSTGRES_URL` when set, otherwise one started
//! (once, shared by every test binary) with the project's `scripts/pg-test-server` in a
//! fixed directory under the temp dir. Nothing is skipped: no server is a failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use mnemo_store_postgres::settings::URL_ENV;
use mnemo_store_postgres::PgSettings;

/// The server's URL.
pub fn url() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(u) = std::env::var(URL_ENV) {
            if !u.trim().is_empty() {
                return u.trim().to_string();
            }
        }
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg-test-server");
        let dir = std::env::temp_dir().join("mnemo-pg-test-server");
        let out = std::process::Command::new(&script)
            .arg("start")
            .arg(&dir)
            .stderr(std::process::Stdio::inherit())
            .output()
            .unwrap_or_else(|e| panic!("{URL_ENV} is unset and {} could not run: {e}", script.display()));
        assert!(out.status.success(), "{URL_ENV} is unset and `{} start {}` failed", script.display(), dir.display());
        let u = String::from_utf8(out.stdout).unwrap().trim().to_string();
        assert!(u.starts_with("postgres://"), "pg-test-server printed {u:?}, not a URL");
        u
    })
    .clone()
}

static SEQ: AtomicUsize = AtomicUsize::new(0);

/// A schema name unique to this process and call.
pub fn unique_schema(prefix: &str) -> String {
    format!("{prefix}_{}_{}", std::process::id(), SEQ.fetch_add(1, Ordering::SeqCst))
}

/// Settings for a throw-away schema (dropped with the component).
pub fn throwaway(prefix: &str) -> PgSettings {
    PgSettings { url: url(), schema: prefix.to_string(), throwaway: true, pool_size: 4 }
}

/// A plain client on the server (for checks and clean-up).
pub async fn client() -> tokio_postgres::Client {
    let (c, conn) = tokio_postgres::connect(&url(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    c
}

/// Drop every schema whose name starts with `prefix`.
pub async fn drop_schemas(prefix: &str) {
    let c = client().await;
    let rows = c.query("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)", &[&prefix]).await.unwrap();
    for r in rows {
        let name: String = r.get(0);
        c.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE")).await.unwrap();
    }
}
