//! What the built-in grounders share: the `(entity, attribute)` key, `as_of` parsing, the
//! optional per-grounder timeout, and running blocking reads off the async executor.
use std::time::Duration;

use mnemo_contract::text::norm_name;
use mnemo_contract::{CoreError, GrounderErrorKind, Result, Timestamp};

/// The normalised lookup key.
pub(crate) fn key(entity: &str, attribute: &str) -> (String, String) {
    (norm_name(entity), norm_name(attribute))
}

/// `as_of` as a source writes it: RFC 3339, or a bare date `YYYY-MM-DD` (midnight UTC). The
/// error says what was expected, not the text found (the source may be any file).
pub(crate) fn parse_as_of(text: &str) -> std::result::Result<Timestamp, String> {
    let t = text.trim();
    let full =
        if t.len() == 10 && t.as_bytes().get(4) == Some(&b'-') { format!("{t}T00:00:00Z") } else { t.to_string() };
    Timestamp::parse_rfc3339(&full).map_err(|_| "as_of is neither RFC 3339 nor YYYY-MM-DD".to_string())
}

/// A `timeout_ms` setting: positive when given.
pub(crate) fn timeout(ms: Option<u64>, origin: &str) -> Result<Option<Duration>> {
    match ms {
        Some(0) => Err(CoreError::Config(format!("{origin}: timeout_ms must be at least 1"))),
        Some(ms) => Ok(Some(Duration::from_millis(ms))),
        None => Ok(None),
    }
}

/// Run a blocking read (file, SQLite) on the blocking pool, so a slow source never stalls the
/// executor and the assessor's timeout can fire.
pub(crate) async fn blocking<T: Send + 'static>(
    source: &str,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        CoreError::grounder_message(GrounderErrorKind::Other, format!("{source}: the lookup task failed: {e}"))
    })?
}
