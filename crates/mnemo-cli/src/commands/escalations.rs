//! `mnemo escalations`, `mnemo answer`, `mnemo dismiss`: what the agent asked a human, and the
//! human's answer (recorded as memory from `human:NAME`) or dismissal (nothing recorded).
use anyhow::Result;

use mnemo_agent::escalation::{AnswerForm, Escalation, EscalationStatus, TurnEscalation};
use mnemo_agent::Runtime;
use mnemo_contract::Namespace;

use crate::cli::{AnswerArgs, DismissArgs, EscalationsArgs};
use crate::commands::tenant_view;
use crate::print;

/// `mnemo escalations [ID] [--open]`.
pub async fn list(rt: &Runtime, ns: &Namespace, a: &EscalationsArgs) -> Result<()> {
    if let Some(id) = a.id {
        let e = rt.escalation(ns, id).await?;
        if a.out.json {
            tenant_view::emit(&e)?
        } else {
            show(ns, &e);
        }
        return Ok(());
    }
    let all = rt.escalations(ns, a.open).await?;
    if a.out.json {
        return tenant_view::emit(&mnemo_contract::tenant_spelling(|| serde_json::json!({ "escalations": all })));
    }
    if all.is_empty() {
        let which = if a.open { "open escalations" } else { "escalations" };
        out!("no {which} in namespace {ns}");
    }
    for e in &all {
        show(ns, e);
    }
    Ok(())
}

/// `mnemo answer ID "text" --by NAME`.
pub async fn answer(rt: &Runtime, ns: &Namespace, a: &AnswerArgs) -> Result<()> {
    let done = rt.answer_escalation(ns, a.id, &a.text, &a.by).await?;
    if a.out.json {
        return tenant_view::emit(&done);
    }
    let e = &done.escalation;
    if let Some(ans) = &e.answer {
        let how = match ans.form {
            AnswerForm::Value => format!("the value {:?} of {}", ans.value.as_deref().unwrap_or(""), claim_of(e)),
            AnswerForm::Tagged => "tagged lines, as written".to_string(),
            AnswerForm::Prose => "prose".to_string(),
        };
        out!("escalation {} answered by {}: recorded as turn {} ({how})", e.id, ans.by, ans.turn);
    }
    if let Some(r) = &done.remembered {
        print::remember(r);
    }
    for n in &done.notes {
        out!("note: {n}");
    }
    Ok(())
}

/// `mnemo dismiss ID --by NAME`.
pub async fn dismiss(rt: &Runtime, ns: &Namespace, a: &DismissArgs) -> Result<()> {
    let e = rt.dismiss_escalation(ns, a.id, &a.by).await?;
    if a.out.json {
        return tenant_view::emit(&e);
    }
    let by = e.dismissal.as_ref().map(|d| d.by.as_str()).unwrap_or("?");
    out!("escalation {} dismissed by {by}: nothing was recorded in memory", e.id);
    Ok(())
}

/// What an escalating recall did about its escalation, under the printed turn.
pub fn print_turn(ns: &Namespace, t: Option<&TurnEscalation>) {
    let Some(t) = t else { return };
    out!("  escalation: {}", t.note);
    if let Some(id) = t.id {
        let n = namespace_flag(ns);
        out!("  a human answers it: mnemo{n} answer {id} \"…\" --by NAME   (or: mnemo{n} dismiss {id} --by NAME)");
    }
}

/// ` -n NS` when the namespace is not the default one.
fn namespace_flag(ns: &Namespace) -> String {
    if ns.as_str() == "default" {
        String::new()
    } else {
        format!(" -n {ns}")
    }
}

fn claim_of(e: &Escalation) -> String {
    e.claim.as_ref().map(|c| format!("{} | {}", c.entity, c.attribute)).unwrap_or_else(|| "its task".to_string())
}

fn show(ns: &Namespace, e: &Escalation) {
    let about = e.claim.as_ref().map(|c| format!(" (about {} | {})", c.entity, c.attribute)).unwrap_or_default();
    out!(
        "{:<4} {:<9} opened {}, raised {}x: {:?}{about}",
        e.id.to_string(),
        e.status.to_string(),
        e.created_at,
        e.raised,
        e.task.query
    );
    for r in &e.reasons {
        out!("     why: {r}");
    }
    let pack: Vec<String> = e.pack.iter().map(ToString::to_string).collect();
    if !pack.is_empty() {
        out!("     pack: {} (pack trust {:.2}, threshold {:.2})", pack.join(", "), e.trust, e.threshold);
    }
    for d in &e.deliveries {
        let what = if d.delivered {
            format!("delivered ({} attempt(s))", d.attempts)
        } else {
            format!("NOT delivered after {} attempt(s): {}", d.attempts, d.error.as_deref().unwrap_or("failed"))
        };
        out!("     sink {}: {what}", d.sink);
    }
    match e.status {
        EscalationStatus::Open => {
            let n = namespace_flag(ns);
            out!(
                "     answer: mnemo{n} answer {} \"…\" --by NAME   dismiss: mnemo{n} dismiss {} --by NAME",
                e.id,
                e.id
            );
        }
        EscalationStatus::Answered => {
            if let Some(a) = &e.answer {
                out!("     answered by {} at {}: {:?} (recorded as turn {})", a.by, a.at, a.text, a.turn);
            }
        }
        EscalationStatus::Dismissed => {
            if let Some(d) = &e.dismissal {
                out!("     dismissed by {} at {}", d.by, d.at);
            }
        }
    }
}
