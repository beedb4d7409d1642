//! Numeric environment variables, read one way: unset (or empty) is the default; anything else
//! must be a whole number in range, else an error naming the variable, the value and what is
//! accepted. A mistyped value (`abc`, `-1`, `1e9`) is never silently read as the default.
use std::time::Duration;

use crate::error::AgentError;

/// The largest number of seconds a timeout variable accepts (one day).
pub const MAX_TIMEOUT_SECS: u64 = 86_400;

/// `name` as a whole number of seconds from 0 to `max_secs`, or `default` when unset or empty.
pub fn secs(name: &str, default: Duration, max_secs: u64) -> Result<Duration, AgentError> {
    match std::env::var(name) {
        Err(std::env::VarError::NotPresent) => Ok(default),
        Err(std::env::VarError::NotUnicode(v)) => Err(bad(name, &v.to_string_lossy(), max_secs)),
        Ok(v) => parse_secs(name, &v, max_secs).map(|s| s.unwrap_or(default)),
    }
}

/// The rule of [`secs`] on a value: `None` for an empty value (the default applies).
pub fn parse_secs(name: &str, value: &str, max_secs: u64) -> Result<Option<Duration>, AgentError> {
    let v = value.trim();
    if v.is_empty() {
        return Ok(None);
    }
    match v.parse::<u64>() {
        Ok(n) if v.bytes().all(|b| b.is_ascii_digit()) && n <= max_secs => Ok(Some(Duration::from_secs(n))),
        _ => Err(bad(name, value, max_secs)),
    }
}

fn bad(name: &str, value: &str, max_secs: u64) -> AgentError {
    let shown: String = value.chars().take(40).collect();
    AgentError::Config {
        file: "environment".to_string(),
        message: format!(
            "{name}={shown:?} is not accepted: a whole number of seconds from 0 to {max_secs} (unset for the default)"
        ),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn bad_values_are_errors_naming_the_variable_the_value_and_the_range() {
        for v in ["abc", "-1", "1e9", "1.5", "+3", "86401", "99999999999999999999999"] {
            let e = parse_secs("MNEMO_LOCK_TIMEOUT_SECS", v, MAX_TIMEOUT_SECS).unwrap_err().to_string();
            assert!(
                e.contains("MNEMO_LOCK_TIMEOUT_SECS") && e.contains(&v[..v.len().min(40)]) && e.contains("0 to 86400"),
                "{e}"
            );
        }
        assert_eq!(parse_secs("X", " 0 ", 10).unwrap(), Some(Duration::ZERO));
        assert_eq!(parse_secs("X", "10", 10).unwrap(), Some(Duration::from_secs(10)));
        assert_eq!(parse_secs("X", "  ", 10).unwrap(), None);
    }
}
