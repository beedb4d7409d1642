//! The ledger of turns that were recorded but not extracted (the model failed, its answer was
//! invalid even after the repair attempt, the cassette missed): `unextracted.json` in the data
//! directory, written under the data directory's lock. `mnemo reextract` retries them in turn
//! order and removes each one that succeeds.
use std::path::{Path, PathBuf};

use mnemo_core::{Namespace, TurnId};
use serde::{Deserialize, Serialize};

use crate::error::AgentError;

/// The ledger's file name in the data directory.
pub const LEDGER_FILE: &str = "unextracted.json";

/// One unextracted turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnextractedTurn {
    /// Its namespace.
    pub namespace: Namespace,
    /// Its id.
    pub turn: TurnId,
    /// Why the last extraction failed.
    pub error: String,
}

/// The ledger file.
#[derive(Clone, Debug)]
pub struct Ledger {
    path: PathBuf,
}

impl Ledger {
    /// The ledger of `data_dir`.
    pub fn new(data_dir: &Path) -> Self {
        Ledger { path: data_dir.join(LEDGER_FILE) }
    }

    fn io(&self, action: &'static str, error: std::io::Error) -> AgentError {
        AgentError::Io { action, file: self.path.display().to_string(), error }
    }

    /// Every entry, oldest first (empty when there is no file).
    pub fn read(&self) -> Result<Vec<UnextractedTurn>, AgentError> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| AgentError::Config {
                file: self.path.display().to_string(),
                message: format!("not a ledger of unextracted turns: {e}"),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(self.io("read", e)),
        }
    }

    fn write(&self, entries: &[UnextractedTurn]) -> Result<(), AgentError> {
        if entries.is_empty() {
            return match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(self.io("remove", e)),
                _ => Ok(()),
            };
        }
        let tmp = self.path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(entries).map_err(|e| AgentError::Config {
            file: self.path.display().to_string(),
            message: format!("cannot encode the ledger: {e}"),
        })?;
        std::fs::write(&tmp, text + "\n").map_err(|e| self.io("write", e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| self.io("rename", e))
    }

    /// Add (or update) an entry.
    pub fn add(&self, entry: UnextractedTurn) -> Result<(), AgentError> {
        let mut all = self.read()?;
        all.retain(|e| !(e.namespace == entry.namespace && e.turn == entry.turn));
        all.push(entry);
        all.sort_by_key(|e| e.turn);
        self.write(&all)
    }

    /// Remove an entry.
    pub fn remove(&self, namespace: &Namespace, turn: TurnId) -> Result<(), AgentError> {
        let mut all = self.read()?;
        all.retain(|e| !(&e.namespace == namespace && e.turn == turn));
        self.write(&all)
    }
}
