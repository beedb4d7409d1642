//! An error and its causes on one line, each said once: library errors keep their cause as a
//! `source` (so callers can match on it) and often also quote it in their own message, which
//! `{:#}` would print twice.

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
}
