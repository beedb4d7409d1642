//! The ledger of turns that were recorded but not extracted (the model failed, its answer was
//! invalid even after the repair attempt, the cassette missed): `unextracted.json` in the data
//! directory, written under the data directory's lock. `mnemo reextract` retries them in turn
//! order and removes each one that succeeds. `mnemo reextract --discard ID` removes one that
//! can never succeed (a poison turn): the turn stays recorded, it is only no longer retried.
use std::path::{Path, PathBuf};

use mnemo_contract::{Namespace, TurnId};
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

    /// Take `turn` of `namespace` off the ledger and return its entry; an error naming the
    /// turn and the namespace when it is not on the ledger (a mistyped id must not look like
    /// a discard that happened).
    pub fn discard(&self, namespace: &Namespace, turn: TurnId) -> Result<UnextractedTurn, AgentError> {
        let mut all = self.read()?;
        let Some(at) = all.iter().position(|e| &e.namespace == namespace && e.turn == turn) else {
            let listed: Vec<String> =
                all.iter().filter(|e| &e.namespace == namespace).map(|e| e.turn.to_string()).collect();
            let listed = if listed.is_empty() { "none".to_string() } else { listed.join(", ") };
            return Err(AgentError::Core(mnemo_contract::CoreError::NotFound(format!(
                "turn {turn} is not on the ledger of unextracted turns of namespace {namespace} \
                 (unextracted turns there: {listed}); nothing discarded"
            ))));
        };
        let entry = all.remove(at);
        self.write(&all)?;
        Ok(entry)
    }

    /// Remove an entry.
    pub fn remove(&self, namespace: &Namespace, turn: TurnId) -> Result<(), AgentError> {
        let mut all = self.read()?;
        all.retain(|e| !(&e.namespace == namespace && e.turn == turn));
        self.write(&all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(ns: &Namespace, turn: i64) -> UnextractedTurn {
        UnextractedTurn { namespace: ns.clone(), turn: TurnId(turn), error: "replay miss".into() }
    }

    #[test]
    fn discard_takes_one_entry_off_and_refuses_an_unlisted_turn() -> Result<(), Box<dyn std::error::Error>> {
        let d = tempfile::tempdir()?;
        let ledger = Ledger::new(d.path());
        let (a, b) = (Namespace::new("a")?, Namespace::new("b")?);
        ledger.add(entry(&a, 1))?;
        ledger.add(entry(&a, 2))?;
        ledger.add(entry(&b, 1))?;
        assert_eq!(ledger.discard(&a, TurnId(1))?, entry(&a, 1));
        assert_eq!(ledger.read()?, vec![entry(&b, 1), entry(&a, 2)]);
        // Another namespace's turn of the same id is not this namespace's to discard.
        let e = ledger.discard(&b, TurnId(2)).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("turn t2 is not on the ledger") && e.contains("namespace b") && e.contains("1"), "{e}");
        assert_eq!(ledger.read()?.len(), 2, "a refused discard changes nothing");
        ledger.discard(&a, TurnId(2))?;
        ledger.discard(&b, TurnId(1))?;
        assert!(!d.path().join(LEDGER_FILE).exists(), "an empty ledger is no file");
        Ok(())
    }
}
