//! A data directory driven through the `mnemo` binary, and the checks the trials share.
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use mnemo_contract::{Namespace, Store};
use mnemo_store::sqlite::SqliteStore;

use crate::error::{BenchError, Result};

/// The time of every write before the sweep (simulated, so runs repeat).
pub const T0: &str = "2026-01-01T09:00:00Z";
/// Five months later (still before the real clock): the decay sweep and everything after it.
pub const T1: &str = "2026-06-01T09:00:00Z";
/// The namespace the trials write.
pub const NS: &str = "reliability";

/// One data directory and the binary that drives it.
pub struct World {
    /// The binary under test.
    pub exe: PathBuf,
    /// The data directory.
    pub dir: PathBuf,
    /// `--config FILE` arguments for every command.
    pub config: Vec<String>,
}

/// What a finished command said.
pub struct Ran {
    /// It exited 0.
    pub ok: bool,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
}

impl Ran {
    /// Ok when the command succeeded, else the harness error naming `what` it was for.
    pub fn expect_ok(self, what: &str) -> Result<Ran> {
        if self.ok {
            Ok(self)
        } else {
            let stderr = match self.stderr.trim() {
                "" => "(nothing on stderr)",
                said => said,
            };
            Err(BenchError::Child { what: what.to_string(), stderr: stderr.to_string() })
        }
    }
}

impl World {
    fn command(&self, at: &str, args: &[&str]) -> Command {
        let mut c = Command::new(&self.exe);
        c.arg("--data-dir")
            .arg(&self.dir)
            .args(["--namespace", NS, "--at", at])
            .args(&self.config)
            .args(args)
            .env_remove("MNEMO_DATA_DIR")
            .env_remove("MNEMO_NAMESPACE")
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::null());
        c
    }

    /// Run a command to completion.
    pub fn run(&self, at: &str, args: &[&str]) -> Result<Ran> {
        let o: Output = self.command(at, args).output().map_err(BenchError::io_at("running", &self.exe))?;
        Ok(Ran {
            ok: o.status.success(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        })
    }

    /// `run` with warnings logged on stderr whatever `RUST_LOG` says (what a trial checks for).
    pub fn run_logged(&self, at: &str, args: &[&str]) -> Result<Ran> {
        let o: Output =
            self.command(at, args).env("RUST_LOG", "warn").output().map_err(BenchError::io_at("running", &self.exe))?;
        Ok(Ran {
            ok: o.status.success(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        })
    }

    /// Start a command (output discarded).
    pub fn spawn(&self, at: &str, args: &[&str]) -> Result<Child> {
        self.command(at, args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(BenchError::io_at("starting", &self.exe))
    }

    /// Contents of the lexical recall of `query` (None when the command failed).
    pub fn recall(&self, at: &str, query: &str) -> Result<Option<Vec<String>>> {
        let r =
            self.run(at, &["recall", query, "--mode", "lexical", "--budget", "1000000", "--raw", "--json", "--full"])?;
        if !r.ok {
            return Ok(None);
        }
        let v: serde_json::Value = serde_json::from_str(&r.stdout)
            .map_err(|source| BenchError::Json { what: "recall --json output".into(), source })?;
        Ok(Some(
            v["items"]
                .as_array()
                .map(|a| a.iter().filter_map(|i| i["memory"]["content"].as_str().map(str::to_string)).collect())
                .unwrap_or_default(),
        ))
    }

    /// Open the store directly: its integrity problems and active contents, or why it would
    /// not open.
    pub async fn store_state(&self) -> std::result::Result<(Vec<String>, Vec<String>), String> {
        let store = SqliteStore::open(&self.dir.join("mnemo.db")).map_err(|e| e.to_string())?;
        let problems = store.integrity_check().map_err(|e| e.to_string())?;
        let ns = Namespace::new(NS).map_err(|e| e.to_string())?;
        let active = store.active(&ns).await.map_err(|e| e.to_string())?;
        Ok((problems, active.into_iter().map(|m| m.content).collect()))
    }
}

/// Copy a directory tree.
pub fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).map_err(BenchError::io_at("creating", to))?;
    for e in std::fs::read_dir(from).map_err(BenchError::io_at("listing", from))? {
        let e = e.map_err(BenchError::io_at("listing", from))?;
        let (source, target) = (e.path(), to.join(e.file_name()));
        if e.file_type().map_err(BenchError::io_at("reading the type of", &source))?.is_dir() {
            copy_dir(&source, &target)?;
        } else {
            std::fs::copy(&source, &target).map_err(BenchError::io_at("copying", &source))?;
        }
    }
    Ok(())
}

/// Every file under `dir`.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The seed turn: `n` semantic memories with unique tokens, and as many episodic ones (which
/// a sweep a year later may decay).
pub fn seed_turn(n: usize) -> (String, Vec<String>) {
    let mut lines = Vec::new();
    let mut tokens = Vec::new();
    for j in 0..n {
        lines.push(format!("[SEM] Seedtok{j} | colour | shade{j}"));
        lines.push(format!("[EPI] Passing remark number {j} about the weather."));
        tokens.push(format!("Seedtok{j}"));
    }
    (lines.join("\n"), tokens)
}

/// Whether every token's memory is among `contents`.
pub fn missing<'a>(tokens: &'a [String], contents: &[String]) -> Vec<&'a String> {
    tokens.iter().filter(|t| !contents.iter().any(|c| c.starts_with(&format!("{t} ")))).collect()
}
