//! Reports are data: `{"provenance": {...}, "rows": [...]}` with flat rows, one figure each.
//! Anything that could be taken as evidence carries the provenance block.
#![deny(missing_docs)]
use serde::{Deserialize, Serialize};

/// Who and what produced a report: the seam is loud.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunProvenance {
    /// fake | live | replay | rules: which client answered the model calls.
    pub client: String,
    /// The model string as echoed by the API (the fake's own name offline).
    pub model: String,
    /// The embedder's model id.
    pub embedder: String,
    /// True when no network model was used.
    pub offline: bool,
    /// The cassette replayed or recorded, if any.
    pub cassette: Option<String>,
    /// A unique id of this run.
    pub run_id: String,
    /// FNV-1a 64 of the resolved configuration(s), hex.
    pub config_hash: String,
    /// `git rev-parse HEAD` of the checkout, or "unknown" (with "-dirty" when modified).
    pub git_commit: String,
    /// The command line that produced it.
    pub command: String,
    /// When the run started (RFC 3339, from the real clock).
    pub started_at: String,
    /// Machine facts: cores.
    pub cores: usize,
    /// The token counter used for budgets.
    pub token_counter: String,
}

/// A report file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Provenance.
    pub provenance: RunProvenance,
    /// Flat rows.
    pub rows: Vec<serde_json::Value>,
}

/// FNV-1a 64-bit hash, hex: a stable fingerprint of config text (not a security hash).
pub fn fnv1a_hex(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// A Wilson score interval at 95% for `k` successes out of `n` (0..=1 bounds; (0,1) for n=0).
pub fn wilson95(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let n_f = n as f64;
    let p = k as f64 / n_f;
    let denom = 1.0 + z * z / n_f;
    let centre = p + z * z / (2.0 * n_f);
    let margin = z * ((p * (1.0 - p) / n_f) + z * z / (4.0 * n_f * n_f)).sqrt();
    (((centre - margin) / denom).max(0.0), ((centre + margin) / denom).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn wilson_known_values() {
        let (lo, hi) = wilson95(5, 10);
        assert!((lo - 0.2366).abs() < 1e-3 && (hi - 0.7634).abs() < 1e-3, "{lo} {hi}");
        let (lo, hi) = wilson95(0, 10);
        assert!(lo == 0.0 && (hi - 0.2775).abs() < 1e-3);
        assert_eq!(wilson95(0, 0), (0.0, 1.0));
    }
    #[test]
    fn fnv_is_stable() {
        assert_eq!(fnv1a_hex(b""), "cbf29ce484222325");
        assert_ne!(fnv1a_hex(b"a"), fnv1a_hex(b"b"));
    }
}
