//! The answerability benchmark's input: haystacks (one namespace each) of dated turns, and
//! questions with their evidence, from LoCoMo or LongMemEval files. Every malformation is an
//! error naming the file and the place.
use std::collections::HashSet;
use std::path::Path;

use mnemo_contract::Timestamp;

use crate::error::Result;
use crate::locomo::data as locomo;
use crate::longmemeval::data as lme;

/// A turn of a haystack.
#[derive(Clone, Debug)]
pub struct HTurn {
    /// Its key within the dataset (LoCoMo: the dia_id; LongMemEval: "session_id#turn").
    pub key: String,
    /// Its session's id.
    pub session: String,
    /// Who spoke (LoCoMo: the speaker's name; LongMemEval: "user" or "assistant").
    pub speaker: String,
    /// What is recalled: "Speaker: text".
    pub content: String,
    /// When.
    pub at: Timestamp,
}

/// One haystack: what one namespace holds.
#[derive(Clone, Debug)]
pub struct Haystack {
    /// A name for the namespace.
    pub id: String,
    /// Its turns, in order.
    pub turns: Vec<HTurn>,
    /// Recall time for questions asked in it (LoCoMo: its last turn; LongMemEval: the
    /// question's date).
    pub now: Timestamp,
    /// Its session ids.
    pub sessions: HashSet<String>,
    /// Its speakers' names, lower-cased.
    pub speakers: HashSet<String>,
}

/// What kind of question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QKind {
    /// Its haystack holds the answer.
    Answerable,
    /// Its haystack does not hold the answer (LongMemEval `_abs`).
    Abstention,
    /// A false premise about people who are in the conversation (LoCoMo category 5).
    FalsePremise,
}

/// A question.
#[derive(Clone, Debug)]
pub struct Question {
    /// Its haystack.
    pub haystack: usize,
    /// The text.
    pub text: String,
    /// Its kind.
    pub kind: QKind,
    /// LoCoMo category or LongMemEval question type.
    pub group: String,
    /// Evidence turns (keys).
    pub evidence_turns: HashSet<String>,
    /// Evidence sessions.
    pub evidence_sessions: HashSet<String>,
}

/// A dataset, read.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// Its name in the report ("locomo", "longmemeval-s", ...).
    pub name: String,
    /// Haystacks.
    pub haystacks: Vec<Haystack>,
    /// Questions.
    pub questions: Vec<Question>,
}

/// A LoCoMo-format file: each conversation a haystack, categories 1–4 answerable, 5 a false
/// premise. A question whose evidence names no turn of its conversation is answerable only in
/// name: it is kept, and the report counts whether its evidence was packed.
pub fn load_locomo(path: &Path) -> Result<Dataset> {
    let convs = locomo::load(path)?;
    let mut haystacks = Vec::new();
    let mut questions = Vec::new();
    for (h, c) in convs.iter().enumerate() {
        let session = |key: (u32, u32)| format!("{}:S{}", c.id, key.0);
        let turns: Vec<HTurn> = c
            .turns
            .iter()
            .map(|t| HTurn {
                key: format!("{}:{}", c.id, t.dia_id),
                session: session(t.key),
                speaker: t.speaker.clone(),
                content: t.content.clone(),
                at: t.at,
            })
            .collect();
        let by_key: std::collections::HashMap<(u32, u32), &locomo::LTurn> =
            c.turns.iter().map(|t| (t.key, t)).collect();
        for q in &c.questions {
            let kind = if q.category == 5 { QKind::FalsePremise } else { QKind::Answerable };
            let evidence_turns =
                q.evidence.iter().filter_map(|k| by_key.get(k)).map(|t| format!("{}:{}", c.id, t.dia_id)).collect();
            questions.push(Question {
                haystack: h,
                text: q.question.clone(),
                kind,
                group: format!("category {}", q.category),
                evidence_turns,
                evidence_sessions: q.evidence.iter().map(|k| session(*k)).collect(),
            });
        }
        haystacks.push(Haystack {
            id: c.id.clone(),
            now: c.turns.iter().map(|t| t.at).max().unwrap_or_default(),
            sessions: turns.iter().map(|t| t.session.clone()).collect(),
            speakers: turns.iter().map(|t| t.speaker.to_lowercase()).collect(),
            turns,
        });
    }
    Ok(Dataset { name: "locomo".into(), haystacks, questions })
}

/// A LongMemEval file (S or oracle): each question its own haystack (its own user), recalled as
/// of its `question_date`; `_abs` questions are abstentions.
pub fn load_longmemeval(path: &Path, name: &str) -> Result<Dataset> {
    let mut haystacks = Vec::new();
    let mut questions = Vec::new();
    for (h, q) in lme::load(path)?.into_iter().enumerate() {
        let mut turns = Vec::new();
        let mut evidence_turns = HashSet::new();
        for (session, i, t) in q.turns() {
            let key = lme::Question::turn_key(session, i);
            if t.has_answer {
                evidence_turns.insert(key.clone());
            }
            turns.push(HTurn {
                key,
                session: session.id.clone(),
                speaker: t.role.clone(),
                content: format!("{}: {}", t.role, t.content),
                // Turns of a session a second apart, in order.
                at: session.at.plus_millis(1000 * i as i64),
            });
        }
        let kind = if q.is_abstention() { QKind::Abstention } else { QKind::Answerable };
        questions.push(Question {
            haystack: h,
            text: q.question,
            kind,
            group: q.question_type,
            evidence_turns,
            evidence_sessions: q.answer_sessions,
        });
        haystacks.push(Haystack {
            id: q.id,
            now: q.asked_at,
            sessions: q.sessions.into_iter().map(|s| s.id).collect(),
            speakers: turns.iter().map(|t| t.speaker.to_lowercase()).collect(),
            turns,
        });
    }
    Ok(Dataset { name: name.to_string(), haystacks, questions })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_longmemeval_file_becomes_one_haystack_per_question() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("q.json");
        let q = |id: &str| {
            serde_json::json!({
                "question_id": id, "question_type": "single-session-user", "question": "Where do I work?",
                "answer": "x", "question_date": "2023/06/01 (Thu) 10:00",
                "haystack_dates": ["2023/05/20 (Sat) 02:21"], "haystack_session_ids": ["s1"],
                "haystack_sessions": [[{"role": "user", "content": "I work at Acme.", "has_answer": true},
                                       {"role": "assistant", "content": "Nice."}]],
                "answer_session_ids": ["s1"]
            })
        };
        std::fs::write(&p, serde_json::to_string(&vec![q("a"), q("b_abs")]).unwrap()).unwrap();
        let ds = load_longmemeval(&p, "lme").unwrap();
        assert_eq!(ds.haystacks.len(), 2);
        assert_eq!(ds.haystacks[0].turns[0].content, "user: I work at Acme.");
        assert!(ds.questions[0].evidence_turns.contains("s1#0"));
        assert_eq!(ds.questions[0].kind, QKind::Answerable);
        assert_eq!(ds.questions[1].kind, QKind::Abstention);
        std::fs::write(&p, "{}").unwrap();
        assert!(load_longmemeval(&p, "lme").unwrap_err().to_string().contains("list of questions"));
    }
}
