//! Timestamps: milliseconds since the Unix epoch, UTC. Parsing and formatting are RFC 3339.
use serde::{Deserialize, Serialize};
use std::fmt;

use crate::error::{CoreError, Result};

/// A point in time, in milliseconds since 1970-01-01T00:00:00Z.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

/// One day in milliseconds.
pub const DAY_MS: i64 = 86_400_000;

impl Timestamp {
    /// From milliseconds since the epoch.
    pub fn from_millis(ms: i64) -> Self {
        Timestamp(ms)
    }
    /// Milliseconds since the epoch.
    pub fn millis(self) -> i64 {
        self.0
    }
    /// Parse RFC 3339 (`2026-07-01T09:00:00Z`).
    pub fn parse_rfc3339(s: &str) -> Result<Self> {
        let t = ::time::OffsetDateTime::parse(s.trim(), &::time::format_description::well_known::Rfc3339)
            .map_err(|e| CoreError::InvalidInput(format!("not an RFC 3339 time {s:?}: {e}")))?;
        let ms = t.unix_timestamp_nanos() / 1_000_000;
        i64::try_from(ms).map(Timestamp).map_err(|_| CoreError::InvalidInput(format!("time out of range: {s:?}")))
    }
    /// Add a (possibly negative) number of milliseconds, saturating.
    pub fn plus_millis(self, ms: i64) -> Self {
        Timestamp(self.0.saturating_add(ms))
    }
    /// Days elapsed from `earlier` to `self` (negative if `earlier` is later).
    pub fn days_since(self, earlier: Timestamp) -> f64 {
        (self.0.saturating_sub(earlier.0)) as f64 / DAY_MS as f64
    }
    /// RFC 3339 text, UTC, second precision when whole seconds.
    pub fn to_rfc3339(self) -> String {
        let nanos = i128::from(self.0) * 1_000_000;
        match ::time::OffsetDateTime::from_unix_timestamp_nanos(nanos) {
            Ok(t) => {
                t.format(&::time::format_description::well_known::Rfc3339).unwrap_or_else(|_| format!("@{}ms", self.0))
            }
            Err(_) => format!("@{}ms", self.0),
        }
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

/// Parse an offset like `90s`, `15m`, `2h`, `3d`, `1w` (a number and one unit; decimals allowed)
/// into milliseconds. Negative offsets are rejected: time only moves forward.
pub fn parse_offset(s: &str) -> Result<i64> {
    let s = s.trim();
    let unit_at = s.char_indices().last().map(|(i, _)| i).unwrap_or(0);
    let (num, unit) = s.split_at(unit_at);
    let mult: f64 = match unit {
        "s" => 1_000.0,
        "m" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => DAY_MS as f64,
        "w" => 7.0 * DAY_MS as f64,
        _ => {
            return Err(CoreError::InvalidInput(format!(
                "offset {s:?} must be a number and one unit of s, m, h, d, w (e.g. 90s, 3d)"
            )))
        }
    };
    let n: f64 =
        num.trim().parse().map_err(|_| CoreError::InvalidInput(format!("offset {s:?}: {num:?} is not a number")))?;
    if !n.is_finite() || n < 0.0 {
        return Err(CoreError::InvalidInput(format!("offset {s:?} must be a non-negative number")));
    }
    let ms = n * mult;
    if ms > 1.0e15 {
        return Err(CoreError::InvalidInput(format!("offset {s:?} is too large")));
    }
    Ok(ms.round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trip() {
        let t = Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-07-01T09:00:00Z");
    }

    #[test]
    fn offsets() {
        assert_eq!(parse_offset("90s").unwrap(), 90_000);
        assert_eq!(parse_offset("1w").unwrap(), 7 * DAY_MS);
        assert_eq!(parse_offset("1.5d").unwrap(), DAY_MS * 3 / 2);
        assert!(parse_offset("-3d").is_err());
        assert!(parse_offset("3y").is_err());
        assert!(parse_offset("d").is_err());
        assert!(parse_offset("").is_err());
        assert!(parse_offset("3é").is_err());
        assert!(parse_offset("é").is_err());
    }
}
