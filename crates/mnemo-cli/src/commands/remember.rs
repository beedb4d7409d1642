//! `mnemo remember`: authenticated sources and idempotency keys around the engine's write.
use anyhow::Result;

use mnemo_agent::Runtime;
use mnemo_core::engine::RememberReport;
use mnemo_core::Namespace;

use crate::cli::RememberArgs;

/// The principal the command line speaks for.
pub const OPERATOR: &str = "user";

/// The source a `--source` label counts as: itself when declared in config (or the operator's
/// own name), else the operator — with a note saying so.
pub fn authenticated_source(label: &str, declared: &[String]) -> (String, Option<String>) {
    let label = label.trim();
    if label.is_empty() || label == OPERATOR || declared.iter().any(|d| d == label) {
        let s = if label.is_empty() { OPERATOR } else { label };
        return (s.to_string(), None);
    }
    (
        OPERATOR.to_string(),
        Some(format!(
            "source \"{label}\" is not declared in config ([sources] declared); it is the operator's word and \
             counts as \"{OPERATOR}\" (one source, however many labels)"
        )),
    )
}

/// Remember the turn, under its idempotency key if given (the rule is mnemo-agent's, the same
/// at every door: `Runtime::remember_idempotent`).
pub async fn run(rt: &Runtime, ns: &Namespace, a: &RememberArgs, bytes: &[u8]) -> Result<RememberReport> {
    let (source, note) = authenticated_source(&a.source, &rt.config().declared_sources());
    if a.idempotency_key.as_deref().is_some_and(|k| k.trim().is_empty()) {
        return Err(crate::error_text::invalid("--idempotency-key must not be empty"));
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|e| mnemo_core::CoreError::InvalidUtf8 { valid_up_to: e.valid_up_to(), detail: e.to_string() })?;
    // The data directory lock is held: no other process can record the key meanwhile.
    let mut r = rt.remember_idempotent(ns, &source, text, a.idempotency_key.as_deref()).await?;
    r.notes.extend(note);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undeclared_labels_count_as_the_operator() {
        let declared = vec!["erp".to_string()];
        assert_eq!(authenticated_source("erp", &declared).0, "erp");
        assert_eq!(authenticated_source("user", &declared), ("user".to_string(), None));
        let (s, note) = authenticated_source("s2", &declared);
        assert_eq!(s, "user");
        assert!(note.is_some_and(|n| n.contains("not declared")));
    }
}
