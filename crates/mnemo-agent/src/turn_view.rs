//! What an agent reads of a full agent turn, the same at every door (CLI `mnemo turn`, HTTP
//! `POST turn`, MCP `turn`): one line of what the text wrote, then the recall's compact view
//! (the decision, the checked plan or the escalation and how a human answers it, the memory
//! lines within the budget).
use serde::{Deserialize, Serialize};

use mnemo_core::engine::{OutcomeKind, RememberReport};

use crate::agent_view::AgentRecall;
use crate::runtime::{AgentTurn, Runtime};

/// A full agent turn as an agent reads it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgentTurnView {
    /// What remembering the text did: `status`, `turn`, `outcomes`, `notes`, `model`.
    pub remembered: Option<RememberReport>,
    /// The recall, as `recall`'s compact result (with the plan, or the escalation).
    pub recall: AgentRecall,
}

impl Runtime {
    /// The view of `turn`.
    pub fn turn_view(&self, turn: &AgentTurn) -> AgentTurnView {
        AgentTurnView { remembered: turn.remembered.clone(), recall: self.recall_view(turn) }
    }

    /// The text of `view`: the remembered line, then the recall's rendering.
    pub fn render_turn(&self, view: &AgentTurnView) -> String {
        let line = view.remembered.as_ref().map(remembered_line).unwrap_or_default();
        format!("{line}\n{}", self.render_recall(&view.recall))
    }
}

/// One line of what a turn's text wrote: its status and what became of each memory.
pub fn remembered_line(r: &RememberReport) -> String {
    let status = serde_json::to_value(r.status()).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    let mut counts: Vec<(OutcomeKind, usize)> = Vec::new();
    for o in &r.outcomes {
        match counts.iter_mut().find(|(k, _)| *k == o.kind) {
            Some((_, n)) => *n += 1,
            None => counts.push((o.kind, 1)),
        }
    }
    let what = counts
        .iter()
        .map(|(k, n)| {
            let k = serde_json::to_value(k).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
            format!("{n} {k}")
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut line = format!("Remembered: turn {} {status}, {}", r.turn.id, outcomes(r.outcomes.len()));
    if !what.is_empty() {
        line.push_str(&format!(" ({what})"));
    }
    line.push('.');
    if r.outcomes.is_empty() {
        if let Some(n) = r.notes.first() {
            line.push_str(&format!(" Note: {}", clip(n, 160)));
        }
    }
    line
}

fn outcomes(n: usize) -> String {
    if n == 1 {
        "1 outcome".into()
    } else {
        format!("{n} outcomes")
    }
}

/// `s` on one line, at most `max` characters (ending in "…" when cut).
pub fn clip(s: &str, max: usize) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= max {
        return one;
    }
    let mut cut: String = one.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}
