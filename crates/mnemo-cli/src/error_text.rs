//! An error and its causes on one line, each said once: library errors keep their cause as a
//! `source` (so callers can match on it) and often also quote it in their own message, which
//! `{:#}` would print twice. With `--json`, the same line goes on stdout as one JSON object
//! with a kind a script can match on (`{"error": {"kind": "not_found", "message": "…"}}`).
use mnemo_agent::AgentError;
use mnemo_contract::{CoreError, IndexErrorKind, StoreErrorKind};

/// `top: cause: cause…`, leaving out a cause whose text the line already holds.
pub fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// An argument the command line refuses (a malformed `--budget`, `--at`, `--about`…): its
/// own type, so that `--json` reports it as `invalid_input` whatever its words.
#[derive(Debug)]
pub struct InvalidArgument(pub String);

impl std::fmt::Display for InvalidArgument {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidArgument {}

/// An [`InvalidArgument`] error saying `message`.
pub fn invalid(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(InvalidArgument(message.into()))
}

/// The kind of failure, for `--json`: the first cause in the chain whose type says what went
/// wrong (a `with_context` line says where, not what); `other` when none does. The kinds:
/// invalid_input, not_found, config, io, busy, read_only, full, damaged, store, index, model,
/// grounder, assessor, unextracted, plugin, other.
pub fn kind(e: &anyhow::Error) -> &'static str {
    e.chain().find_map(kind_of).unwrap_or("other")
}

fn kind_of(cause: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    if cause.is::<InvalidArgument>() || cause.is::<clap::Error>() {
        return Some("invalid_input");
    }
    if let Some(e) = cause.downcast_ref::<AgentError>() {
        return Some(match e {
            AgentError::Config { .. } => "config",
            AgentError::Io { .. } => "io",
            AgentError::Plugin(_) => "plugin",
            AgentError::LockTimeout { .. } => "busy",
            AgentError::Core(c) => core_kind(c),
            AgentError::UnlistedTurn { .. } => "unextracted",
            AgentError::IdempotencyConflict { .. } => "conflict",
            // Said as a refused input at the command line, as before it had a kind of its own.
            AgentError::EscalationClosed(_) => "invalid_input",
        });
    }
    if let Some(e) = cause.downcast_ref::<CoreError>() {
        return Some(core_kind(e));
    }
    if let Some(e) = cause.downcast_ref::<mnemo_llm::LlmError>() {
        return Some(match e {
            mnemo_llm::LlmError::InvalidSetting(_) => "config",
            _ => "model",
        });
    }
    if let Some(e) = cause.downcast_ref::<mnemo_models::ModelsError>() {
        return match e {
            mnemo_models::ModelsError::UnknownModel { .. } => Some("not_found"),
            mnemo_models::ModelsError::NoModelsDir => Some("config"),
            mnemo_models::ModelsError::Io { .. } => Some("io"),
            // A failed download or a file that is not the pinned one: say what below, if typed.
            _ => None,
        };
    }
    if cause.is::<toml::de::Error>() {
        return Some("config");
    }
    if cause.is::<std::io::Error>() {
        return Some("io");
    }
    None
}

fn core_kind(e: &CoreError) -> &'static str {
    match e {
        CoreError::InvalidInput(_) | CoreError::InvalidUtf8 { .. } => "invalid_input",
        CoreError::Config(_) | CoreError::UnknownKind { .. } => "config",
        CoreError::NotFound(_) => "not_found",
        CoreError::StoreFailure { kind, .. } => match kind {
            StoreErrorKind::Busy => "busy",
            StoreErrorKind::ReadOnly => "read_only",
            StoreErrorKind::Full => "full",
            StoreErrorKind::Damaged => "damaged",
            _ => "store",
        },
        CoreError::IndexFailure { kind, .. } => match kind {
            IndexErrorKind::Busy => "busy",
            IndexErrorKind::ReadOnly => "read_only",
            IndexErrorKind::Full => "full",
            _ => "index",
        },
        CoreError::ModelFailure { .. } => "model",
        CoreError::Grounder(_) => "grounder",
        CoreError::Assessor(_) => "assessor",
        CoreError::Unextracted { .. } => "unextracted",
    }
}

/// The `--json` form of a failure: one line, `{"error": {"kind": …, "message": …}}`, the
/// message being the line said on stderr.
pub fn json(kind: &str, message: &str) -> String {
    serde_json::json!({"error": {"kind": kind, "message": message}}).to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_quoted_cause_is_said_once_and_a_new_one_is_kept() {
        let io = std::io::Error::other("disk on fire");
        let e = anyhow::Error::new(io).context("store error: disk on fire").context("opening D");
        assert_eq!(one_line(&e), "opening D: store error: disk on fire");
        let e = anyhow::anyhow!("root cause").context("outer");
        assert_eq!(one_line(&e), "outer: root cause");
    }

    #[test]
    fn the_kind_comes_from_the_typed_cause_under_any_context() {
        let e = anyhow::Error::new(AgentError::Core(CoreError::NotFound("memory 9".into()))).context("why 9");
        assert_eq!(kind(&e), "not_found");
        let busy = CoreError::StoreFailure { kind: StoreErrorKind::Busy, source: "locked".into() };
        assert_eq!(kind(&anyhow::Error::new(busy).context("opening D")), "busy");
        assert_eq!(kind(&invalid("--budget must be 0 or more tokens, got -1")), "invalid_input");
        let key = mnemo_llm::LlmError::InvalidSetting("needs an API key".into());
        assert_eq!(kind(&anyhow::Error::new(key)), "config");
        assert_eq!(kind(&anyhow::anyhow!("something untyped")), "other");
    }

    #[test]
    fn the_json_form_is_one_line_that_parses_back() {
        let line = json("config", "the live model client needs an API key:\n \"quoted\"");
        assert!(!line.contains('\n'), "{line}");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["error"]["kind"], "config");
        assert_eq!(v["error"]["message"], "the live model client needs an API key:\n \"quoted\"");
    }
}
