//! What the CLI's PostgreSQL tests share: the server they run against, `MNEMO_POSTGRES_URL` when
//! set, otherwise one started with the project's `scripts/pg-test-server` in a fixed directory
//! under the temp dir (shared by every test binary). Nothing is skipped: no server is a failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The server's URL.
pub fn url() -> String {
    if let Ok(u) = std::env::var("MNEMO_POSTGRES_URL") {
        if !u.trim().is_empty() {
            return u.trim().to_string();
        }
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg-test-server");
    let dir = std::env::temp_dir().join("mnemo-pg-test-server");
    let out = Command::new(&script).arg("start").arg(&dir).stderr(Stdio::inherit()).output().unwrap();
    assert!(out.status.success(), "MNEMO_POSTGRES_URL is unset and {} failed", script.display());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Writes a config file at `path`: the PostgreSQL store at `url` in `schema` (two connections),
/// then an `[index]` section holding `index_keys`.
pub fn write_config(path: &Path, url: &str, schema: &str, index_keys: &str) {
    std::fs::write(
        path,
        format!(
            "[store]\nkind = \"postgres\"\nurl = \"{url}\"\nschema = \"{schema}\"\npool_size = 2\n\n\
             [index]\n{index_keys}"
        ),
    )
    .unwrap();
}

/// The `[index]` keys of the PostgreSQL index beside the store's tables, in its schema (two
/// connections).
pub fn postgres_index_keys(url: &str, schema: &str) -> String {
    format!("kind = \"postgres\"\nurl = \"{url}\"\nschema = \"{schema}\"\npool_size = 2\n")
}
