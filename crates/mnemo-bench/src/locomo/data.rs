//! Reading a LoCoMo-format file: conversations of dated sessions of turns, and questions with
//! evidence turn ids. Every malformation is an error naming the file and the place.
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use mnemo_contract::Timestamp;
use serde_json::Value;

use crate::error::{BenchError, Result};

/// A turn, in conversation order.
#[derive(Clone, Debug, PartialEq)]
pub struct LTurn {
    /// `(session, turn)` parsed from the dia_id.
    pub key: (u32, u32),
    /// The dia_id as written.
    pub dia_id: String,
    /// Speaker name.
    pub speaker: String,
    /// What is recalled: "Speaker: text" plus " [image: caption]" when an image was shared.
    pub content: String,
    /// The session's date.
    pub at: Timestamp,
}

/// A question.
#[derive(Clone, Debug, PartialEq)]
pub struct LQuestion {
    /// The question text.
    pub question: String,
    /// Category 1..=5.
    pub category: u8,
    /// Evidence turn keys (deduplicated, in order of appearance).
    pub evidence: Vec<(u32, u32)>,
}

/// One conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct Conversation {
    /// `sample_id`.
    pub id: String,
    /// Turns in order (session, then turn).
    pub turns: Vec<LTurn>,
    /// Questions.
    pub questions: Vec<LQuestion>,
}

impl Conversation {
    /// The index of each turn key.
    pub fn turn_index(&self) -> HashMap<(u32, u32), usize> {
        self.turns.iter().enumerate().map(|(i, t)| (t.key, i)).collect()
    }
}

/// Read and check a LoCoMo-format file.
pub fn load(path: &Path) -> Result<Vec<Conversation>> {
    let text = std::fs::read_to_string(path).map_err(|e| BenchError::Io { path: path.to_path_buf(), source: e })?;
    parse(&text, path)
}

fn err(file: &Path, what: String) -> BenchError {
    BenchError::Data { file: PathBuf::from(file), what }
}

/// Parse the text of a LoCoMo-format file (`file` names it in errors).
pub fn parse(text: &str, file: &Path) -> Result<Vec<Conversation>> {
    let v: Value = serde_json::from_str(text).map_err(|e| err(file, format!("not JSON: {e}")))?;
    let list =
        v.as_array().ok_or_else(|| err(file, "expected a JSON list of conversations at the top level".into()))?;
    if list.is_empty() {
        return Err(err(file, "the list of conversations is empty".into()));
    }
    list.iter().enumerate().map(|(i, c)| conversation(c, i, file)).collect()
}

fn conversation(c: &Value, i: usize, file: &Path) -> Result<Conversation> {
    let id = c.get("sample_id").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| format!("#{i}"));
    let here = |what: String| err(file, format!("conversation {i} ({id}): {what}"));
    let conv = c
        .get("conversation")
        .and_then(Value::as_object)
        .ok_or_else(|| here("missing the 'conversation' object".into()))?;
    let mut sessions: Vec<u32> =
        conv.keys().filter_map(|k| k.strip_prefix("session_").and_then(|n| n.parse::<u32>().ok())).collect();
    sessions.sort_unstable();
    if sessions.is_empty() {
        return Err(here("no session_N lists in 'conversation'".into()));
    }
    let mut turns = Vec::new();
    for s in sessions {
        let list = conv[&format!("session_{s}")]
            .as_array()
            .ok_or_else(|| here(format!("session_{s} is not a list of turns")))?;
        if list.is_empty() {
            continue;
        }
        let date_key = format!("session_{s}_date_time");
        let date = conv
            .get(&date_key)
            .and_then(Value::as_str)
            .ok_or_else(|| here(format!("session_{s} has turns but no {date_key}")))?;
        let at = parse_date(date).map_err(|e| here(format!("{date_key}: {e}")))?;
        for (j, t) in list.iter().enumerate() {
            let at_turn = |what: &str| here(format!("session_{s} turn {j}: {what}"));
            let speaker = t.get("speaker").and_then(Value::as_str).ok_or_else(|| at_turn("missing 'speaker'"))?;
            let dia_id = t.get("dia_id").and_then(Value::as_str).ok_or_else(|| at_turn("missing 'dia_id'"))?;
            let said = t.get("text").and_then(Value::as_str).ok_or_else(|| at_turn("missing 'text'"))?;
            let key = match evidence_keys(dia_id).as_slice() {
                [k] => *k,
                _ => return Err(at_turn(&format!("dia_id {dia_id:?} is not of the form D<session>:<turn>"))),
            };
            let mut content = format!("{speaker}: {said}");
            if let Some(cap) = t.get("blip_caption").and_then(Value::as_str) {
                if !cap.trim().is_empty() {
                    content.push_str(&format!(" [image: {}]", cap.trim()));
                }
            }
            turns.push(LTurn { key, dia_id: dia_id.to_string(), speaker: speaker.to_string(), content, at });
        }
    }
    let qa = c.get("qa").and_then(Value::as_array).ok_or_else(|| here("missing the 'qa' list".into()))?;
    let mut questions = Vec::with_capacity(qa.len());
    for (j, q) in qa.iter().enumerate() {
        let at_q = |what: &str| here(format!("qa[{j}]: {what}"));
        let question = q.get("question").and_then(Value::as_str).ok_or_else(|| at_q("missing 'question'"))?;
        let category =
            q.get("category").and_then(Value::as_u64).ok_or_else(|| at_q("missing or non-integer 'category'"))?;
        if !(1..=5).contains(&category) {
            return Err(at_q(&format!("category {category} is not within 1..=5")));
        }
        let ev = q.get("evidence").and_then(Value::as_array).ok_or_else(|| at_q("missing the 'evidence' list"))?;
        let mut evidence = Vec::new();
        for e in ev {
            let s = e.as_str().ok_or_else(|| at_q("an evidence entry is not a string"))?;
            for k in evidence_keys(s) {
                if !evidence.contains(&k) {
                    evidence.push(k);
                }
            }
        }
        questions.push(LQuestion { question: question.to_string(), category: category as u8, evidence });
    }
    Ok(Conversation { id, turns, questions })
}

/// Every `D:?(\d+):(\d+)` match in `s`, as (session, turn) numbers ("D30:05" is (30, 5)).
pub fn evidence_keys(s: &str) -> Vec<(u32, u32)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let digits = |mut i: usize| -> (Option<u32>, usize) {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        (s[start..i].parse::<u32>().ok(), i)
    };
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'D' {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        if j < b.len() && b[j] == b':' {
            j += 1;
        }
        let (sess, k) = digits(j);
        if let (Some(sess), true) = (sess, k < b.len() && b[k] == b':') {
            let (turn, m) = digits(k + 1);
            if let Some(turn) = turn {
                out.push((sess, turn));
                i = m;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// Parse a LoCoMo session date like "1:56 pm on 8 May, 2023" (UTC).
pub fn parse_date(s: &str) -> std::result::Result<Timestamp, String> {
    let bad = |why: &str| format!("date {s:?} {why} (expected like \"1:56 pm on 8 May, 2023\")");
    let (clock, date) = s.trim().split_once(" on ").ok_or_else(|| bad("has no \" on \""))?;
    let mut cp = clock.split_whitespace();
    let hm = cp.next().ok_or_else(|| bad("has no time"))?;
    let ampm = cp.next().ok_or_else(|| bad("has no am/pm"))?.to_ascii_lowercase();
    let (h, m) = hm.split_once(':').ok_or_else(|| bad("has no hour:minute"))?;
    let h: u8 = h.parse().map_err(|_| bad("has a bad hour"))?;
    let m: u8 = m.parse().map_err(|_| bad("has a bad minute"))?;
    if !(1..=12).contains(&h) || m > 59 {
        return Err(bad("has an hour or minute out of range"));
    }
    let h24 = match ampm.as_str() {
        "am" => h % 12,
        "pm" => h % 12 + 12,
        _ => return Err(bad("has neither am nor pm")),
    };
    let date = date.replace(',', " ");
    let mut dp = date.split_whitespace();
    let day: u8 = dp.next().and_then(|d| d.parse().ok()).ok_or_else(|| bad("has a bad day"))?;
    let month = dp.next().ok_or_else(|| bad("has no month"))?;
    let month = MONTHS
        .iter()
        .position(|x| x.eq_ignore_ascii_case(month) || x[..3].eq_ignore_ascii_case(month))
        .ok_or_else(|| bad("has an unknown month"))?;
    let year: i32 = dp.next().and_then(|y| y.parse().ok()).ok_or_else(|| bad("has a bad year"))?;
    let month = time::Month::try_from(month as u8 + 1).map_err(|_| bad("has an unknown month"))?;
    let d =
        time::Date::from_calendar_date(year, month, day).map_err(|e| bad(&format!("is not a calendar date ({e})")))?;
    let t = time::Time::from_hms(h24, m, 0).map_err(|e| bad(&format!("has a bad time ({e})")))?;
    let ms = time::PrimitiveDateTime::new(d, t).assume_utc().unix_timestamp() * 1000;
    Ok(Timestamp::from_millis(ms))
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn evidence_ids_are_normalised() {
        assert_eq!(evidence_keys("D1:3"), vec![(1, 3)]);
        assert_eq!(evidence_keys("D8:6; D9:17"), vec![(8, 6), (9, 17)]);
        assert_eq!(evidence_keys("D:11:26"), vec![(11, 26)]);
        assert_eq!(evidence_keys("D30:05"), vec![(30, 5)]);
        assert_eq!(evidence_keys("D12"), vec![]);
        assert_eq!(evidence_keys("xD2:4yD3:"), vec![(2, 4)]);
    }

    #[test]
    fn dates_parse_and_bad_ones_are_named() {
        let t = parse_date("1:56 pm on 8 May, 2023").unwrap();
        assert_eq!(t.to_rfc3339(), "2023-05-08T13:56:00Z");
        assert_eq!(parse_date("12:10 am on 11 August, 2023").unwrap().to_rfc3339(), "2023-08-11T00:10:00Z");
        assert_eq!(parse_date("12:05 pm on 1 Jan, 2024").unwrap().to_rfc3339(), "2024-01-01T12:05:00Z");
        let e = parse_date("1:56 pm on 31 February, 2023").unwrap_err();
        assert!(e.contains("31 February"), "{e}");
        assert!(parse_date("yesterday").is_err());
        assert!(parse_date("13:00 pm on 8 May, 2023").is_err());
    }

    #[test]
    fn malformed_files_name_the_problem() {
        let f = Path::new("x.json");
        let e = parse("{}", f).unwrap_err().to_string();
        assert!(e.contains("x.json") && e.contains("list"), "{e}");
        let no_date = r#"[{"sample_id":"c1","conversation":{"session_1":[{"speaker":"A","dia_id":"D1:1","text":"hi"}]},"qa":[]}]"#;
        let e = parse(no_date, f).unwrap_err().to_string();
        assert!(e.contains("c1") && e.contains("session_1_date_time"), "{e}");
        let bad_date = r#"[{"sample_id":"c1","conversation":{"session_1_date_time":"soon","session_1":[{"speaker":"A","dia_id":"D1:1","text":"hi"}]},"qa":[]}]"#;
        let e = parse(bad_date, f).unwrap_err().to_string();
        assert!(e.contains("\"soon\""), "{e}");
        let bad_cat = r#"[{"sample_id":"c1","conversation":{"session_1_date_time":"1:56 pm on 8 May, 2023","session_1":[{"speaker":"A","dia_id":"D1:1","text":"hi","blip_caption":"a dog"}]},"qa":[{"question":"q","category":9,"evidence":["D1:1"]}]}]"#;
        let e = parse(bad_cat, f).unwrap_err().to_string();
        assert!(e.contains("qa[0]") && e.contains("category 9"), "{e}");
        let ok = bad_cat.replace("\"category\":9", "\"category\":2");
        let c = parse(&ok, f).unwrap();
        assert_eq!(c[0].turns[0].content, "A: hi [image: a dog]");
        assert_eq!(c[0].questions[0].evidence, vec![(1, 1)]);
    }
}
