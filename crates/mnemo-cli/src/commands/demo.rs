//! `mnemo demo`: an offline supply-chain agent turn on the embedded default, on simulated time.
use anyhow::Result;
use std::process::ExitCode;
use std::sync::Arc;

use mnemo_agent::Runtime;
use mnemo_contract::time::DAY_MS;
use mnemo_contract::{Namespace, SimClock, Task, Timestamp};
use mnemo_core::engine::RecallOptions;
use mnemo_grounders::TableGrounder;

use crate::cli::{Cli, DemoArgs};
use crate::{context, print};

/// The conversation the demo agent has had, day by day.
const HISTORY: &[(i64, &str, &str)] = &[
    (0, "buyer", "[SEM] IC-MC-44 from S-208 | lead time | 21 days\n[PROC] Always add a 5-day buffer for S-208 orders.\n[SEM] Northwind Labs | owner | Ben"),
    (2, "buyer", "[EPI] Call with S-208: they mentioned congestion at the port of Busan."),
    (4, "planner", "[SEM] IC-MC-44 from S-208 | lead time | 21 days"),
    (6, "buyer", "[SEM pin] Acme | approval limit | 50,000 USD per order"),
    (8, "buyer", "[EPI imp=0.2] Lunch with the S-208 account manager; nothing decided."),
    (9, "buyer", "[SEM] S-208 | preferred channel | email\n[SEM] S-208 | preferred channel | phone"),
];

pub async fn run(cli: &Cli, args: &DemoArgs) -> Result<ExitCode> {
    let tmp;
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    let config = context::config(cli)?;
    let start = Timestamp::parse_rfc3339("2026-07-01T09:00:00Z")?;
    let clock = Arc::new(SimClock::new(start));
    // The ERP is the system of record; the world moved on since the buyer last spoke.
    let erp = TableGrounder::new("erp");
    let rt = Runtime::build(&config, &dir, clock.clone(), vec![Arc::new(erp.clone())]).await?;
    let ns = Namespace::new("supply-chain")?;
    let model = rt.model_info();
    let json = args.json;
    // With --json, one document gathers what the text mode prints as it goes.
    let mut doc = serde_json::json!({
        "model": model, "store": dir.display().to_string(), "history": [], "turns": [], "answer": null,
        "why_answer": null, "why": null,
    });
    if !json {
        out!("Mnemo demo — client: {}, model: {}, store in {}", model.client.as_str(), model.model, dir.display());
        out!("\n== The conversation so far ==");
    }
    for (day, who, text) in HISTORY {
        clock.set(start.plus_millis(day * DAY_MS));
        let r = rt.engine().remember(&ns, who, text).await?;
        if json {
            push(
                &mut doc["history"],
                mnemo_contract::tenant_spelling(
                    || serde_json::json!({"day": day, "who": who, "text": text, "report": r}),
                ),
            );
        } else {
            out!("\nday {day}, {who} says:\n  {}", text.replace('\n', "\n  "));
            print::remember(&r);
        }
    }
    clock.set(start.plus_millis(20 * DAY_MS));
    erp.set("IC-MC-44 from S-208", "lead time", "35 days");
    if !json {
        out!("\nday 20: the ERP now says the lead time of IC-MC-44 from S-208 is 35 days (nobody told the agent)");
    }

    // Day 20: the agent acts on the re-grounded lead time (planned, and the plan checked
    // against the pack); asks who signs off at Northwind Labs, which memory does not hold, and
    // escalates; a human answers; the same question then acts on the answer.
    let lead_time = ("Reorder IC-MC-44 from S-208: when will it arrive?", ("IC-MC-44 from S-208", "lead time"));
    let approver = ("Who signs off purchase orders at Northwind Labs?", ("Northwind Labs", "approver"));
    let mut escalated = None;
    for (query, (e, a)) in [lead_time, approver] {
        let t = demo_turn(&rt, &ns, query, (e, a)).await?;
        escalated = escalated.or(t.escalation.as_ref().and_then(|x| x.id));
        show_turn(json, &mut doc, 20, query, (e, a), &t);
    }
    if let Some(id) = escalated {
        clock.set(start.plus_millis(20 * DAY_MS + 3_600_000));
        let answered = rt.answer_escalation(&ns, id, "Carla", "ops-lead").await?;
        if json {
            doc["answer"] = mnemo_agent::json_view::tenant_json(&answered, false)?;
        } else {
            out!("\n== Day 20, an hour later: a human answers escalation {id} ==");
            out!("  mnemo -n supply-chain answer {id} \"Carla\" --by ops-lead");
            for n in &answered.notes {
                out!("  note: {n}");
            }
            if let Some(r) = &answered.remembered {
                print::remember(r);
            }
        }
        let (query, (e, a)) = approver;
        let t = demo_turn(&rt, &ns, query, (e, a)).await?;
        show_turn(json, &mut doc, 20, query, (e, a), &t);
        if let Some(m) = t.plan.as_ref().and_then(|p| p.plan.uses.first()) {
            let why = rt.why(&ns, m.memory).await?;
            if json {
                doc["why_answer"] = mnemo_agent::json_view::tenant_json(&why, false)?;
            } else {
                out!("\n== Why does the agent believe Carla signs off? ==");
                print::why(&why);
            }
        }
    }
    let all = rt.engine().all_memories(&ns).await?;
    if let Some(old) = all.iter().find(|m| m.claim.as_ref().is_some_and(|c| c.value == "21 days")) {
        let why = rt.why(&ns, old.id).await?;
        if json {
            doc["why"] = mnemo_agent::json_view::tenant_json(&why, false)?;
        } else {
            out!("\n== Why is the 21-day lead time gone? ==");
            print::why(&why);
        }
    }
    rt.engine().flush_index().await?;
    if json {
        mnemo_agent::json_view::strip_vectors(&mut doc);
        out!("{}", serde_json::to_string_pretty(&doc)?);
    }
    Ok(ExitCode::SUCCESS)
}

/// One planned agent turn on the day's clock: recall, assess, plan and check (the demo's
/// questions are not remembered: they are the agent's, not the buyer's).
async fn demo_turn(rt: &Runtime, ns: &Namespace, query: &str, (e, a): (&str, &str)) -> Result<mnemo_agent::AgentTurn> {
    let task = Task { query: query.to_string(), about: Some((e.to_string(), a.to_string())) };
    let mut t = rt.turn(ns, &task, &RecallOptions { budget: Some(64), ..RecallOptions::default() }).await?;
    rt.plan_turn(ns, &task, &mut t).await;
    Ok(t)
}

fn show_turn(
    json: bool,
    doc: &mut serde_json::Value,
    day: i64,
    query: &str,
    (e, a): (&str, &str),
    t: &mnemo_agent::AgentTurn,
) {
    if json {
        push(
            &mut doc["turns"],
            mnemo_contract::tenant_spelling(
                || serde_json::json!({"day": day, "query": query, "about": [e, a], "turn": t}),
            ),
        );
    } else {
        out!("\n== Agent turn (day {day}): {query:?} — about {e} | {a} ==");
        print::agent_turn(t);
        if let Some(x) = &t.escalation {
            out!("  {}", x.note);
        }
    }
}

fn push(list: &mut serde_json::Value, item: serde_json::Value) {
    if let Some(a) = list.as_array_mut() {
        a.push(item);
    }
}
