//! Human-readable rendering of packs, traces, assessments and histories.
use mnemo_agent::AgentTurn;
use mnemo_contract::*;
use mnemo_core::engine::{RememberReport, WhyReport};

fn clip(s: &str, n: usize) -> String {
    let one_line = s.replace('\n', " ⏎ ");
    if one_line.chars().count() <= n {
        one_line
    } else {
        format!("{}…", one_line.chars().take(n.saturating_sub(1)).collect::<String>())
    }
}

/// The write report.
pub fn remember(r: &RememberReport) {
    // A turn with nothing extracted, or a replayed idempotency key, is said by a note below.
    out!(
        "recorded turn {} at {} (extraction by {} / {})",
        r.turn.id,
        r.turn.at,
        r.model.client.as_str(),
        r.model.model
    );
    for o in &r.outcomes {
        let id = o.memory.map(|i| i.to_string()).unwrap_or_else(|| "-".into());
        // The line reads left to right: "inserted memory 9 supersedes 2 (…)".
        let label = match o.kind {
            mnemo_core::engine::OutcomeKind::Superseded => "inserted".to_string(),
            k => format!("{k:?}").to_lowercase(),
        };
        out!("  {:<18} memory {:<6} {}", label, id, o.detail);
    }
    for n in &r.notes {
        out!("  note: {n}");
    }
}

fn reason_name(r: TraceReason) -> String {
    serde_json::to_value(r).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// The pack and its full trace.
pub fn pack(p: &Pack) {
    out!("pack: {} memories, {}/{} tokens", p.items.len(), p.used, p.budget);
    for n in &p.notes {
        out!("  note: {n}");
    }
    out!(
        "  {:<3} {:<6} {:<10} {:>6} {:>6} {:>6} {:>6} {:>5}  {:<15} content / why excluded",
        "",
        "id",
        "kind",
        "rank",
        "rel",
        "sal",
        "score",
        "tok",
        "decision"
    );
    for t in &p.trace {
        let content = p.items.iter().find(|i| i.memory.id == t.id).map(|i| i.memory.content.as_str()).unwrap_or("");
        out!(
            "  {:<3} {:<6} {:<10} {:>6.3} {:>6} {:>6.3} {:>6.3} {:>5}  {:<15} {}",
            if t.included { "IN" } else { "out" },
            t.id,
            format!("{}{}", t.kind, if t.pinned { "*" } else { "" }),
            t.relevance,
            // Absolute relevance (what the assessor reads); "-" where recall held no row.
            t.evidence.map_or("-".to_string(), |e| format!("{:.3}", e.absolute)),
            t.salience,
            t.score,
            t.tokens,
            reason_name(t.reason),
            if t.included { clip(content, 60) } else { clip(&t.detail, 60) }
        );
    }
}

/// An agent turn: trace, grades, substitutions, trust, decision.
pub fn agent_turn(t: &AgentTurn) {
    pack(&t.pack);
    let a = &t.assessment;
    for s in &a.substitutions {
        out!(
            "  grounding: memory {} said {:?}; {} holds {:?} → substituted by memory {}",
            s.stale,
            s.old_value,
            s.source,
            s.new_value,
            s.fresh
        );
    }
    for l in &a.lookups {
        let outcome = match &l.outcome {
            LookupOutcome::Held { value } => format!("holds {value:?}"),
            LookupOutcome::NotHeld => "does not hold it".to_string(),
            LookupOutcome::Timeout => "TIMED OUT: unverified this recall".to_string(),
            LookupOutcome::Error { message } => format!("FAILED: unverified this recall ({})", clip(message, 60)),
            LookupOutcome::Garbage { message } => format!("GARBAGE: unverified this recall ({})", clip(message, 60)),
        };
        out!(
            "  lookup: {:<10} {} | {} (memory {}) {:.1} ms: {}",
            l.source,
            l.entity,
            l.attribute,
            l.memory,
            l.took_ms,
            outcome
        );
    }
    out!("  grades:");
    for g in &a.grades {
        let content =
            a.pack.items.iter().find(|i| i.memory.id == g.id).map(|i| i.memory.content.as_str()).unwrap_or("");
        out!(
            "    memory {:<5} trust {:.2} {:<13} {} — {}",
            g.id,
            g.trust,
            if g.load_bearing { "load-bearing" } else { "colour" },
            g.basis,
            clip(content, 50)
        );
    }
    if let Some((e, at)) = &a.inferred_about {
        out!("  task: about {e} | {at} (named by the query)");
    }
    out!("  pack trust {:.2} (threshold {:.2})", a.trust, a.threshold);
    if let Some(p) = &t.plan {
        let uses: Vec<String> = p
            .plan
            .uses
            .iter()
            .map(|u| match &u.value {
                Some(v) => format!("memory {} = {v:?}", u.memory),
                None => format!("memory {}", u.memory),
            })
            .collect();
        let check = if p.faithful {
            "checked against the pack: faithful".to_string()
        } else {
            format!("REFUSED: {}", p.refused.join("; "))
        };
        out!("  plan by {} ({check}): {}", p.plan.model.model, p.plan.answer);
        for s in &p.plan.steps {
            out!("    step: {s}");
        }
        out!("    uses: {}", if uses.is_empty() { "nothing".to_string() } else { uses.join(", ") });
    }
    out!("  {}", t.action);
}

/// A memory's history (the one rendering every door shows).
pub fn why(w: &WhyReport) {
    out!("{}", mnemo_agent::why_view::render_why(w).trim_end_matches('\n'));
}
