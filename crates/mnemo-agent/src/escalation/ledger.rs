//! The escalation ledger: `escalations.json` in the data directory, every namespace's
//! escalations and the next id of each. Nothing is ever removed from it (an answered or a
//! dismissed escalation stays, closed), and the counter only moves forward, so an id is never
//! handed out twice in a namespace.
//!
//! Every change is a read-modify-write under `escalations.lock` (an OS file lock, so that a
//! recall reading beside a running `mnemo serve` may record an escalation too) and an
//! in-process mutex; the file is replaced atomically (a temporary file written and synced, then
//! renamed over it, then the directory synced): a crash leaves the old ledger or the new one,
//! never a torn one. Callers run it off the async executor ([`crate::blocking::blocking`]).
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use mnemo_contract::{CoreError, Namespace};

use super::record::{Escalation, EscalationId};
use crate::error::AgentError;

/// The ledger's file name in the data directory.
pub const LEDGER_FILE: &str = "escalations.json";
/// The lock file guarding its read-modify-writes.
pub const LOCK_FILE: &str = "escalations.lock";

/// What the file holds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerFile {
    /// The format (1).
    pub version: u32,
    /// The last id handed out per namespace.
    pub last: BTreeMap<String, u32>,
    /// Every escalation, in the order opened.
    pub escalations: Vec<Escalation>,
}

impl LedgerFile {
    /// Hand out the next id of `ns`.
    pub fn next_id(&mut self, ns: &Namespace) -> EscalationId {
        // The counter, or (a hand-edited file) past every id the namespace holds.
        let held = self.escalations.iter().filter(|e| &e.namespace == ns).map(|e| e.id.0).max().unwrap_or(0);
        let last = self.last.entry(ns.as_str().to_string()).or_insert(0);
        *last = (*last).max(held) + 1;
        EscalationId(*last)
    }

    /// The escalation `id` of `ns`, or an error naming what the namespace holds.
    pub fn find_mut(&mut self, ns: &Namespace, id: EscalationId) -> Result<&mut Escalation, AgentError> {
        if !self.escalations.iter().any(|e| &e.namespace == ns && e.id == id) {
            return Err(not_found(self, ns, id));
        }
        self.escalations
            .iter_mut()
            .find(|e| &e.namespace == ns && e.id == id)
            .ok_or_else(|| AgentError::Core(CoreError::NotFound(format!("escalation {id}"))))
    }
}

/// "no escalation e9 in namespace x (it holds e1 to e3)".
pub fn not_found(file: &LedgerFile, ns: &Namespace, id: EscalationId) -> AgentError {
    let ids: Vec<u32> = file.escalations.iter().filter(|e| &e.namespace == ns).map(|e| e.id.0).collect();
    let held = match (ids.iter().min(), ids.iter().max()) {
        (Some(a), Some(b)) if a == b => format!("it holds e{a} only"),
        (Some(a), Some(b)) => format!("it holds e{a} to e{b}"),
        _ => "it holds none".to_string(),
    };
    AgentError::Core(CoreError::NotFound(format!("no escalation {id} in namespace {ns} ({held})")))
}

/// The ledger of a data directory.
#[derive(Debug)]
pub struct Ledger {
    path: PathBuf,
    lock: PathBuf,
    /// Serialises this process's read-modify-writes (the file lock serialises processes).
    local: Mutex<()>,
}

impl Ledger {
    /// The ledger of `data_dir`.
    pub fn new(data_dir: &Path) -> Self {
        Ledger { path: data_dir.join(LEDGER_FILE), lock: data_dir.join(LOCK_FILE), local: Mutex::new(()) }
    }

    /// The ledger file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, action: &'static str, file: &Path, error: std::io::Error) -> AgentError {
        AgentError::Io { action, file: file.display().to_string(), error }
    }

    /// Everything in it (empty when there is no file). A read takes no lock: the file is only
    /// ever replaced whole.
    pub fn read(&self) -> Result<LedgerFile, AgentError> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => {
                let file: LedgerFile = serde_json::from_str(&text).map_err(|e| AgentError::Config {
                    file: self.path.display().to_string(),
                    message: format!("not a ledger of escalations: {e}"),
                })?;
                if file.version != 1 {
                    return Err(AgentError::Config {
                        file: self.path.display().to_string(),
                        message: format!("escalation ledger version {} is not known to this build (1)", file.version),
                    });
                }
                Ok(file)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Ok(LedgerFile { version: 1, ..LedgerFile::default() })
            }
            Err(e) => Err(self.io("read", &self.path, e)),
        }
    }

    /// Change the ledger with `f` under both locks, and write it back when `f` succeeds.
    pub fn update<T>(&self, f: impl FnOnce(&mut LedgerFile) -> Result<T, AgentError>) -> Result<T, AgentError> {
        // A poisoned mutex guards nothing of its own (the file is the state): go on.
        let _local = self.local.lock().unwrap_or_else(|p| p.into_inner());
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.lock)
            .map_err(|e| self.io("open the lock file", &self.lock, e))?;
        lock.lock().map_err(|e| self.io("lock", &self.lock, e))?;
        let mut file = self.read()?;
        let out = f(&mut file)?;
        self.write(&file)?;
        // The lock is released when `lock` is closed.
        Ok(out)
    }

    fn write(&self, file: &LedgerFile) -> Result<(), AgentError> {
        let text = serde_json::to_string_pretty(file).map_err(|e| AgentError::Config {
            file: self.path.display().to_string(),
            message: format!("cannot encode the ledger of escalations: {e}"),
        })?;
        let tmp = self.path.with_extension("json.tmp");
        let mut out = std::fs::File::create(&tmp).map_err(|e| self.io("create", &tmp, e))?;
        out.write_all(text.as_bytes())
            .and_then(|_| out.write_all(b"\n"))
            .and_then(|_| out.sync_all())
            .map_err(|e| self.io("write", &tmp, e))?;
        drop(out);
        std::fs::rename(&tmp, &self.path).map_err(|e| self.io("rename", &tmp, e))?;
        // The rename itself durable (best effort: not every platform opens directories).
        if let Some(dir) = self.path.parent() {
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ids_count_per_namespace_and_the_counter_wins_over_what_is_held() {
        let mut f = LedgerFile { version: 1, ..LedgerFile::default() };
        let (a, b) = (Namespace::new("a").unwrap(), Namespace::new("b").unwrap());
        assert_eq!(f.next_id(&a), EscalationId(1));
        assert_eq!(f.next_id(&a), EscalationId(2));
        assert_eq!(f.next_id(&b), EscalationId(1));
        // Nothing is held, but e1 and e2 of `a` were handed out: never again.
        assert_eq!(f.next_id(&a), EscalationId(3));
        let e = not_found(&f, &a, EscalationId(9)).to_string();
        assert!(e.contains("no escalation e9 in namespace a") && e.contains("holds none"), "{e}");
    }
}
