//! Reading a LongMemEval file (Wu et al., ICLR 2025; the S, M and oracle settings share the
//! format): a JSON list of questions, each with its own haystack of dated chat sessions.
//! Every malformation is an error naming the file, the question and the field.
use std::collections::HashSet;
use std::path::Path;

use mnemo_contract::Timestamp;
use serde::Deserialize;
use serde_json::Value;

use crate::error::{BenchError, Result};

/// A turn of a haystack session.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    /// "user" or "assistant".
    pub role: String,
    /// What was said.
    pub content: String,
    /// Upstream's turn-level evidence mark.
    pub has_answer: bool,
}

/// A dated session of a haystack.
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    /// `haystack_session_ids[i]`.
    pub id: String,
    /// Unique within the haystack: the id, or "id (n)" for its n-th occurrence (upstream's S
    /// haystacks repeat a few filler sessions, same turns, another date).
    pub key: String,
    /// `haystack_dates[i]`.
    pub at: Timestamp,
    /// Its turns, in order.
    pub turns: Vec<Turn>,
}

/// A question and its haystack (each question is its own user).
#[derive(Clone, Debug, PartialEq)]
pub struct Question {
    /// `question_id`.
    pub id: String,
    /// `question_type` ("multi-session", "temporal-reasoning", ...).
    pub question_type: String,
    /// The question text.
    pub question: String,
    /// `question_date`: when it is asked.
    pub asked_at: Timestamp,
    /// The haystack, in file order (not necessarily date order).
    pub sessions: Vec<Session>,
    /// `answer_session_ids`: the session-level evidence.
    pub answer_sessions: HashSet<String>,
}

impl Question {
    /// An abstention question: its haystack does not hold the answer (id ending in `_abs`).
    pub fn is_abstention(&self) -> bool {
        self.id.ends_with("_abs")
    }

    /// Every turn with its session, in haystack order.
    pub fn turns(&self) -> impl Iterator<Item = (&Session, usize, &Turn)> {
        self.sessions.iter().flat_map(|s| s.turns.iter().enumerate().map(move |(i, t)| (s, i, t)))
    }

    /// The key of a session's i-th turn ("session_key#i"), the memory's external id.
    pub fn turn_key(session: &Session, i: usize) -> String {
        format!("{}#{i}", session.key)
    }
}

#[derive(Deserialize)]
struct RawQuestion {
    question_id: String,
    question_type: String,
    question: String,
    question_date: String,
    haystack_dates: Vec<String>,
    haystack_session_ids: Vec<String>,
    haystack_sessions: Vec<Vec<RawTurn>>,
    answer_session_ids: Vec<String>,
}

#[derive(Deserialize)]
struct RawTurn {
    role: String,
    content: String,
    /// Absent on most turns of the S setting: no evidence.
    #[serde(default)]
    has_answer: bool,
}

/// Read and check a LongMemEval file.
pub fn load(path: &Path) -> Result<Vec<Question>> {
    let text = std::fs::read_to_string(path).map_err(|e| BenchError::Io { path: path.to_path_buf(), source: e })?;
    parse(&text, path)
}

/// Parse the text of a LongMemEval file (`file` names it in errors).
pub fn parse(text: &str, file: &Path) -> Result<Vec<Question>> {
    let bad = |what: String| BenchError::Data { file: file.to_path_buf(), what };
    let v: Value = serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let list = v.as_array().ok_or_else(|| bad("expected a JSON list of questions at the top level".into()))?;
    if list.is_empty() {
        return Err(bad("the list of questions is empty".into()));
    }
    list.iter()
        .enumerate()
        .map(|(i, q)| {
            // Name the question by its id when it has one, else by its place.
            let name =
                q.get("question_id").and_then(Value::as_str).map_or(format!("#{i}"), |id| format!("#{i} ({id})"));
            question(q).map_err(|what| bad(format!("question {name}: {what}")))
        })
        .collect()
}

fn question(v: &Value) -> std::result::Result<Question, String> {
    // serde names the missing or mistyped field ("missing field `question_date`").
    let q = RawQuestion::deserialize(v).map_err(|e| e.to_string())?;
    let n = q.haystack_sessions.len();
    if q.haystack_dates.len() != n || q.haystack_session_ids.len() != n {
        return Err(format!(
            "haystack_sessions has {n} sessions but haystack_dates {} and haystack_session_ids {}",
            q.haystack_dates.len(),
            q.haystack_session_ids.len()
        ));
    }
    let asked_at = parse_date(&q.question_date).map_err(|e| format!("question_date: {e}"))?;
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut sessions = Vec::with_capacity(n);
    for (i, ((turns, date), id)) in
        q.haystack_sessions.into_iter().zip(&q.haystack_dates).zip(q.haystack_session_ids).enumerate()
    {
        let at = parse_date(date).map_err(|e| format!("haystack_dates[{i}]: {e}"))?;
        let occurrence = seen.entry(id.clone()).or_default();
        *occurrence += 1;
        let key = if *occurrence == 1 { id.clone() } else { format!("{id} ({occurrence})") };
        let turns =
            turns.into_iter().map(|t| Turn { role: t.role, content: t.content, has_answer: t.has_answer }).collect();
        sessions.push(Session { id, key, at, turns });
    }
    Ok(Question {
        id: q.question_id,
        question_type: q.question_type,
        question: q.question,
        asked_at,
        sessions,
        answer_sessions: q.answer_session_ids.into_iter().collect(),
    })
}

/// A LongMemEval date: "2023/05/20 (Sat) 02:21" (UTC; the weekday is not checked).
pub fn parse_date(s: &str) -> std::result::Result<Timestamp, String> {
    let expected = || format!("{s:?}: expected \"YYYY/MM/DD (Day) HH:MM\"");
    let mut parts = s.split_whitespace();
    let date = parts.next().ok_or_else(expected)?;
    let time = parts.last().ok_or_else(expected)?;
    let d: Vec<&str> = date.split('/').collect();
    let t: Vec<&str> = time.split(':').collect();
    if d.len() != 3 || t.len() != 2 {
        return Err(expected());
    }
    Timestamp::parse_rfc3339(&format!("{}-{}-{}T{}:{}:00Z", d[0], d[1], d[2], t[0], t[1]))
        .map_err(|e| format!("{s:?}: {e}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn dates_parse_and_bad_ones_say_why() {
        let t = parse_date("2023/05/20 (Sat) 02:21").unwrap();
        assert_eq!(t, Timestamp::parse_rfc3339("2023-05-20T02:21:00Z").unwrap());
        assert!(parse_date("yesterday").unwrap_err().contains("yesterday"));
        assert!(parse_date("2023/02/30 (Thu) 10:00").is_err());
    }

    #[test]
    fn malformed_files_name_the_file_question_and_field() {
        let f = Path::new("lme.json");
        let e = parse("{}", f).unwrap_err().to_string();
        assert!(e.contains("lme.json") && e.contains("list"), "{e}");
        let no_date = r#"[{"question_id":"q1","question_type":"t","question":"?","haystack_dates":[],
            "haystack_session_ids":[],"haystack_sessions":[],"answer_session_ids":[]}]"#;
        let e = parse(no_date, f).unwrap_err().to_string();
        assert!(e.contains("lme.json") && e.contains("q1") && e.contains("question_date"), "{e}");
        let short = r#"[{"question_id":"q2","question_type":"t","question":"?","question_date":"2023/05/20 (Sat) 02:21",
            "haystack_dates":[],"haystack_session_ids":["s"],"haystack_sessions":[[]],"answer_session_ids":[]}]"#;
        let e = parse(short, f).unwrap_err().to_string();
        assert!(e.contains("q2") && e.contains("haystack_dates 0"), "{e}");
        let bad_date = short.replace(r#""haystack_dates":[]"#, r#""haystack_dates":["soon"]"#);
        let e = parse(&bad_date, f).unwrap_err().to_string();
        assert!(e.contains("haystack_dates[0]") && e.contains("\"soon\""), "{e}");
    }

    #[test]
    fn a_fixture_keeps_dates_sessions_evidence_and_abstention() {
        let q = r#"[{"question_id":"q1_abs","question_type":"multi-session","question":"Where?","answer":"x",
            "question_date":"2023/06/01 (Thu) 10:00",
            "haystack_dates":["2023/05/20 (Sat) 02:21","2023/05/21 (Sun) 09:05","2023/05/22 (Mon) 09:05"],
            "haystack_session_ids":["s1","s2","s1"],
            "haystack_sessions":[[{"role":"user","content":"I work at Acme.","has_answer":true},
                                  {"role":"assistant","content":"Nice."}],
                                 [{"role":"user","content":"Hello."}],
                                 [{"role":"user","content":"I work at Acme.","has_answer":true}]],
            "answer_session_ids":["s1"]}]"#;
        let qs = parse(q, Path::new("f.json")).unwrap();
        let q = &qs[0];
        assert!(q.is_abstention());
        assert_eq!(q.asked_at.to_rfc3339(), "2023-06-01T10:00:00Z");
        assert_eq!(q.sessions[1].at.to_rfc3339(), "2023-05-21T09:05:00Z");
        assert_eq!(q.answer_sessions, HashSet::from(["s1".to_string()]));
        let keys: Vec<String> = q.turns().map(|(s, i, _)| Question::turn_key(s, i)).collect();
        assert_eq!(keys, ["s1#0", "s1#1", "s2#0", "s1 (2)#0"]);
        let marked: Vec<bool> = q.turns().map(|(_, _, t)| t.has_answer).collect();
        assert_eq!(marked, [true, false, false, true]);
        assert_eq!(q.turns().next().map(|(_, _, t)| t.role.as_str()), Some("user"));
    }
}
