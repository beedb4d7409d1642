//! The poisoning table, rendered from a report's rows — by the bench, and by the check that
//! RELIABILITY.md shows what the result file holds (never a figure typed by hand).
use serde_json::Value;

use super::{cases::Family, ARMS};

/// The markdown table of `rows` (a `bench poisoning` report's rows): one line per family and
/// side, one column per defence arm, each cell `rate (k/n, lo–hi)`.
pub fn render(rows: &[Value]) -> String {
    let mut lines = Vec::new();
    for family in Family::ALL {
        for (side, metric) in [("attack", "attack success"), ("benign", "benign false rejection")] {
            let mut line = vec![family.name().to_string(), metric.to_string()];
            for arm in ARMS {
                let row = rows.iter().find(|r| r["arm"] == arm.key && r["family"] == family.key() && r["side"] == side);
                line.push(match row {
                    Some(r) => cell(r),
                    None => "–".into(),
                });
            }
            lines.push(line);
        }
    }
    let mut header = vec!["family", "rate"];
    header.extend(ARMS.iter().map(|a| a.name));
    crate::report::table(&header, &lines)
}

fn cell(r: &Value) -> String {
    let n = r["n"].as_u64().unwrap_or(0);
    let k = r["k"].as_u64().unwrap_or(0);
    if n == 0 {
        return "n = 0".into();
    }
    let f = |key: &str| r[key].as_f64().unwrap_or(f64::NAN);
    format!("{:.2} ({k}/{n}, {:.2}–{:.2})", f("rate"), f("lo"), f("hi"))
}

/// The table of a report file's JSON (`{"provenance", "rows"}`).
pub fn render_report(report: &Value) -> Option<String> {
    report["rows"].as_array().map(|rows| render(rows))
}

/// The text between `<!-- poisoning:begin FILE -->` and `<!-- poisoning:end -->` in `doc`, for
/// each such block: (FILE, the text).
pub fn blocks(doc: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = doc;
    while let Some(b) = rest.find("<!-- poisoning:begin ") {
        let after = &rest[b + "<!-- poisoning:begin ".len()..];
        let Some(close) = after.find("-->") else { break };
        let file = after[..close].trim().to_string();
        let body_start = &after[close + 3..];
        let Some(end) = body_start.find("<!-- poisoning:end -->") else { break };
        out.push((file, body_start[..end].trim().to_string()));
        rest = &body_start[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cells_show_rate_counts_and_interval() {
        let rows = vec![json!({"arm": "none", "family": "belief_drift", "side": "attack", "n": 10, "k": 5,
                               "rate": 0.5, "lo": 0.237, "hi": 0.763})];
        let t = render(&rows);
        assert!(
            t.contains("| belief drift over many turns | attack success | 0.50 (5/10, 0.24–0.76) | – | – | – | – |"),
            "{t}"
        );
    }

    #[test]
    fn blocks_are_found_with_their_file() {
        let doc = "a\n<!-- poisoning:begin bench/results/x.json -->\n| t |\n<!-- poisoning:end -->\nb";
        assert_eq!(blocks(doc), vec![("bench/results/x.json".to_string(), "| t |".to_string())]);
    }
}
