//! `mnemo escalations`, `mnemo answer`, `mnemo dismiss`, offline: a recall that escalates
//! records an escalation; a human answers it with the value alone; the same recall then acts
//! on the human's value and `why` shows the human source. Every mistake is a clear error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;
use std::process::Output;

use serde_json::Value;

mod cli_run;
use cli_run::{command, ok_stdout, stdout_json};

/// Every command here works in namespace `supply`, quietly, with the local models looked for
/// inside the test's directory (never the user's).
fn mnemo(dir: &Path, args: &[&str]) -> Output {
    command(dir).args(["-n", "supply", "-q"]).args(args).env("MNEMO_MODELS", dir.join("models")).output().unwrap()
}

fn json(dir: &Path, args: &[&str]) -> Value {
    stdout_json(&mnemo(dir, args), args)
}

/// A failing command with `--json`: its error kind and message.
fn fails(dir: &Path, args: &[&str]) -> (String, String) {
    let o = mnemo(dir, args);
    assert!(!o.status.success(), "`mnemo {}` should fail", args.join(" "));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("`mnemo {}`: no JSON error ({e}): {}", args.join(" "), String::from_utf8_lossy(&o.stdout))
    });
    (v["error"]["kind"].as_str().unwrap().to_string(), v["error"]["message"].as_str().unwrap().to_string())
}

const Q: &str = "Who signs off purchase orders at Northwind Labs?";
const ABOUT: &str = "Northwind Labs | approver";

#[test]
fn an_escalation_is_answered_by_a_human_and_the_same_recall_then_acts_on_the_answer() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    ok_stdout(&mnemo(
        dir,
        &["--at", "2026-07-01", "remember", "--source", "buyer", "[SEM] Northwind Labs | owner | Ben"],
    ));
    assert_eq!(json(dir, &["escalations", "--json"])["escalations"], serde_json::json!([]));

    // The recall escalates: e1 is recorded, and the text output says how to answer it.
    let out = ok_stdout(&mnemo(dir, &["--at", "2026-07-02", "recall", Q, "--about", ABOUT]));
    assert!(out.contains("escalation e1 opened"), "{out}");
    assert!(out.contains("mnemo -n supply answer e1 \"…\" --by NAME"), "{out}");
    // The same recall again reuses it (the full JSON says so).
    let t = json(dir, &["--at", "2026-07-02", "recall", "--json", "--full", Q, "--about", ABOUT]);
    assert_eq!(t["verdict"]["decision"], "escalate");
    assert_eq!((t["escalation"]["id"].as_str(), t["escalation"]["reused"].as_bool()), (Some("e1"), Some(true)), "{t}");

    let open = json(dir, &["escalations", "--open", "--json"]);
    let list = open["escalations"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{open}");
    assert_eq!((list[0]["id"].as_str(), list[0]["status"].as_str()), (Some("e1"), Some("open")));
    assert_eq!(list[0]["raised"], 2);
    assert_eq!(list[0]["pack"], serde_json::json!(["m1"]));
    let text = ok_stdout(&mnemo(dir, &["escalations"]));
    assert!(text.contains("e1") && text.contains("open") && text.contains("nothing recalled asserts"), "{text}");

    // Mistakes: clear errors, nothing recorded.
    let (kind, m) = fails(dir, &["answer", "e9", "Carla", "--by", "carla", "--json"]);
    assert_eq!(kind, "not_found");
    assert!(m.contains("no escalation e9 in namespace supply (it holds e1 only)"), "{m}");
    let (kind, m) = fails(dir, &["answer", "e1", "  ", "--by", "carla", "--json"]);
    assert_eq!(kind, "invalid_input");
    assert!(m.contains("answer text must not be empty"), "{m}");
    let (kind, m) = fails(dir, &["answer", "e1", "Carla", "--json"]);
    assert_eq!(kind, "invalid_input");
    assert!(m.contains("--by <NAME>"), "{m}");
    let (kind, m) = fails(dir, &["answer", "e1", "Carla", "--by", "", "--json"]);
    assert_eq!(kind, "invalid_input");
    assert!(m.contains("name (by) must not be empty"), "{m}");
    let (kind, m) = fails(dir, &["dismiss", "m1", "--by", "carla", "--json"]);
    assert_eq!(kind, "invalid_input");
    assert!(m.contains("not an escalation id"), "{m}");
    let (_, m) = fails(dir, &["escalations", "e4", "--json"]);
    assert!(m.contains("no escalation e4"), "{m}");

    // The answer: the value alone, recorded from human:carla.
    let a = json(dir, &["--at", "2026-07-03", "answer", "e1", "Carla", "--by", "carla", "--json"]);
    assert_eq!(a["escalation"]["status"], "answered", "{a}");
    assert_eq!(a["escalation"]["answer"]["recorded"], "[SEM] Northwind Labs | approver | Carla");
    assert_eq!(a["remembered"]["turn"]["source"], "human:carla");
    let turn = a["escalation"]["answer"]["turn"].as_str().unwrap().to_string();
    assert_eq!(turn, "t2");
    let (kind, m) = fails(dir, &["--at", "2026-07-03", "answer", "e1", "Dana", "--by", "dana", "--json"]);
    assert_eq!(kind, "invalid_input");
    assert!(m.contains("already answered by human:carla"), "{m}");
    let (_, m) = fails(dir, &["dismiss", "e1", "--by", "dana", "--json"]);
    assert!(m.contains("already answered"), "{m}");
    assert_eq!(json(dir, &["escalations", "--open", "--json"])["escalations"], serde_json::json!([]));

    // The same recall acts on the human's value; why shows the human source.
    let r = json(dir, &["--at", "2026-07-04", "recall", "--json", Q, "--about", ABOUT]);
    assert_eq!(r["decision"]["decision"], "act", "{r}");
    let on = &r["decision"]["act_on"][0];
    assert_eq!(on["value"], "Carla", "{r}");
    let id = on["memory"].as_str().unwrap().to_string();
    let line = r["memories"].as_array().unwrap().iter().find(|l| l["id"] == id.as_str()).unwrap().clone();
    assert!(line["trust"].as_f64().unwrap() > 0.99, "{line}");
    let why = ok_stdout(&mnemo(dir, &["why", &id]));
    assert!(why.contains("sources [human:carla]"), "{why}");
    assert!(why.contains("by human:carla: [SEM] Northwind Labs | approver | Carla"), "{why}");

    // Dismiss: a new escalation on another task, closed, nothing recorded.
    let out = ok_stdout(&mnemo(
        dir,
        &["--at", "2026-07-05", "recall", "Who buys for Contoso?", "--about", "Contoso | buyer"],
    ));
    assert!(out.contains("escalation e2 opened"), "{out}");
    let turns_before = ok_stdout(&mnemo(dir, &["export", "--all"]));
    let out = ok_stdout(&mnemo(dir, &["--at", "2026-07-05", "dismiss", "e2", "--by", "ben"]));
    assert!(out.contains("escalation e2 dismissed by human:ben: nothing was recorded"), "{out}");
    assert_eq!(ok_stdout(&mnemo(dir, &["export", "--all"])), turns_before, "a dismissal records nothing");
    let e2 = json(dir, &["escalations", "e2", "--json"]);
    assert_eq!((e2["status"].as_str(), e2["dismissal"]["by"].as_str()), (Some("dismissed"), Some("human:ben")));
    let (_, m) = fails(dir, &["--at", "2026-07-05", "answer", "e2", "x", "--by", "a", "--json"]);
    assert!(m.contains("e2 was dismissed by human:ben"), "{m}");
}
