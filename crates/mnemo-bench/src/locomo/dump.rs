//! `--dump-candidates FILE`: each question's lexical and dense candidate lists with their
//! scores, at the depth hybrid fusion takes, as JSON lines, so that fusion weightings can be
//! swept offline from one run instead of one full benchmark run per setting. The figures a
//! report quotes still come from `bench locomo` runs of the chosen settings.
//!
//! Lines: `{"conversation", "turn_tokens": [..]}` once per conversation (token count of each
//! turn, in turn order), then `{"conversation", "category", "evidence": [turn index | null],
//! "lexical": [[turn index, score], ..], "dense": [[turn index, score], ..]}` per question.
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use mnemo_contract::Hit;
use mnemo_contract::MemoryId;
use serde_json::json;
use std::collections::HashMap;

use crate::error::{BenchError, Result};

/// The open dump file.
pub struct CandidateDump {
    path: PathBuf,
    out: BufWriter<File>,
}

impl CandidateDump {
    /// Create (truncate) `path`.
    pub fn create(path: &Path) -> Result<Self> {
        let f = File::create(path).map_err(|e| BenchError::Io { path: path.to_path_buf(), source: e })?;
        Ok(CandidateDump { path: path.to_path_buf(), out: BufWriter::new(f) })
    }

    /// One line of JSON.
    pub fn line(&mut self, v: &serde_json::Value) -> Result<()> {
        writeln!(self.out, "{v}").map_err(|e| BenchError::Io { path: self.path.clone(), source: e })
    }

    /// A conversation's turn token counts.
    pub fn conversation(&mut self, id: &str, turn_tokens: &[usize]) -> Result<()> {
        self.line(&json!({"conversation": id, "turn_tokens": turn_tokens}))
    }

    /// One question's candidates (hits mapped to turn indices; hits of no turn are dropped).
    pub fn question(
        &mut self,
        conversation: &str,
        category: u8,
        evidence: &[Option<usize>],
        lexical: &[Hit],
        dense: &[Hit],
        turn_of: &HashMap<MemoryId, usize>,
    ) -> Result<()> {
        let pairs = |hits: &[Hit]| -> Vec<(usize, f32)> {
            hits.iter().filter_map(|h| turn_of.get(&h.id).map(|t| (*t, h.score))).collect()
        };
        self.line(&json!({
            "conversation": conversation,
            "category": category,
            "evidence": evidence,
            "lexical": pairs(lexical),
            "dense": pairs(dense),
        }))
    }

    /// Flush to disk.
    pub fn finish(mut self) -> Result<()> {
        self.out.flush().map_err(|e| BenchError::Io { path: self.path.clone(), source: e })
    }
}
