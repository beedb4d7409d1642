//! The CLI as a script sees it: every command's `--json` is one JSON document on stdout,
//! vectors only when asked, `--at` takes a date alone, completions, outcome lines that read
//! in the right direction.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;
use std::process::Output;

use serde_json::Value;

mod cli_run;
use cli_run::{command, has_key, ok_stdout, stdout_json};

/// With the local models looked for inside the test's directory (never the user's).
fn mnemo(dir: &Path, args: &[&str]) -> Output {
    command(dir).args(args).env("MNEMO_MODELS", dir.join("models")).output().unwrap()
}

fn json(dir: &Path, args: &[&str]) -> Value {
    stdout_json(&mnemo(dir, args), args)
}

const T0: &[&str] = &["--at", "2026-07-01T09:00:00Z"];

#[test]
fn every_command_has_a_json_that_parses() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    fn at<'a>(args: &[&'a str]) -> Vec<&'a str> {
        [T0, args].concat()
    }
    let r = json(dir, &at(&["remember", "--json", "[SEM] Northwind Labs | owner | Ben"]));
    assert_eq!(r["turn"]["id"], "t1", "{r}");
    json(dir, &at(&["remember", "--json", "[SEM] Contoso | owner | Alice\n[EPI] Lunch at the harbour."]));
    let t = json(dir, &at(&["recall", "--json", "who owns Northwind Labs", "--about", "Northwind Labs | owner"]));
    assert!(t["decision"]["decision"].is_string(), "{t}");
    let p = json(dir, &at(&["recall", "--raw", "--json", "Northwind"]));
    let id = p["memories"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(id, "m1", "{p}");
    let full = json(dir, &at(&["recall", "--raw", "--json", "--detail", "full", "Northwind"]));
    assert_eq!(full["items"][0]["memory"]["id"].as_str().unwrap(), id, "{full}");
    assert_eq!(json(dir, &at(&["why", "--json", &id]))["memory"]["id"], "m1");
    assert!(json(dir, &at(&["forget", "--json", "Contoso | owner"]))["outcomes"].is_array());
    assert!(json(dir, &["--at", "2026-09-01", "decay", "--json"])["examined"].is_u64());
    assert!(json(dir, &["reindex", "--json"])["upserted"].is_u64());
    assert!(json(dir, &["--at", "2026-09-01", "reextract", "--json"])["failed"].is_array());
    assert!(json(dir, &["plugins", "--json"]).as_array().unwrap().iter().any(|k| k["kind"] == "mcp"));
    assert!(json(dir, &["models", "list", "--json"]).as_array().is_some());
    let demo = json(dir, &["demo", "--json"]);
    assert_eq!(demo["turns"].as_array().unwrap().len(), 3, "lead time, approver, approver after the answer");
    assert_eq!(demo["turns"][0]["turn"]["plan"]["plan"]["uses"][0]["value"], "35 days", "{}", demo["turns"][0]);
    assert_eq!(demo["turns"][1]["turn"]["verdict"]["decision"], "escalate");
    assert_eq!(demo["turns"][2]["turn"]["verdict"]["decision"], "act");
    assert_eq!(demo["why_answer"]["memory"]["sources"][0], "human:ops-lead");
    assert_eq!(demo["history"].as_array().unwrap().len(), 6);
    assert!(demo["why"]["memory"].is_object());
    assert!(!has_key(&demo, "vector"), "the demo's JSON carries no vectors");
}

#[test]
fn json_leaves_vectors_out_unless_asked() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    ok_stdout(&mnemo(dir, &[T0, &["remember", "[SEM] Northwind Labs | owner | Ben\n[PROC] Always add a 5-day buffer for S-208 orders.\n[EPI] Call with S-208 about port congestion."]].concat()));
    let q = [T0, &["recall", "--json", "--full", "Northwind Labs S-208 orders port"]].concat();
    let lean = ok_stdout(&mnemo(dir, &q));
    let full = ok_stdout(&mnemo(dir, &[&q[..], &["--with-vectors"]].concat()));
    let (lean_v, full_v): (Value, Value) = (serde_json::from_str(&lean).unwrap(), serde_json::from_str(&full).unwrap());
    let items = lean_v["assessment"]["pack"]["items"].as_array().unwrap();
    assert_eq!(items.len(), 3, "{lean}");
    assert!(!has_key(&lean_v, "vector"));
    assert!(items[0]["memory"]["embedding"]["dims"].as_u64().unwrap() > 0);
    assert!(has_key(&full_v, "vector"));
    eprintln!("recall --json, three memories: {} bytes without vectors, {} with", lean.len(), full.len());
    assert!(lean.len() * 3 < full.len(), "{} vs {}", lean.len(), full.len());
    // --with-vectors needs --json
    assert!(!mnemo(dir, &["recall", "x", "--with-vectors"]).status.success());
}

#[test]
fn at_takes_a_date_alone_and_names_a_bad_one() {
    let d = tempfile::tempdir().unwrap();
    let r = json(d.path(), &["--at", "2026-05-01", "remember", "--json", "[SEM] A | b | c"]);
    let midnight = mnemo_contract::Timestamp::parse_rfc3339("2026-05-01T00:00:00Z").unwrap();
    assert_eq!(r["turn"]["at"], midnight.millis());
    let o = mnemo(d.path(), &["--at", "2026-02-30", "remember", "[SEM] A | b | d"]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("2026-02-30") && e.contains("YYYY-MM-DD"), "{e}");
}

#[test]
fn outcome_lines_read_in_the_right_direction() {
    let d = tempfile::tempdir().unwrap();
    let first = ok_stdout(&mnemo(d.path(), &[T0, &["remember", "[SEM] Northwind Labs | owner | Ben"]].concat()));
    // Ids are per namespace and opaque (they reveal nothing of other tenants): read them.
    let old = first.split_whitespace().skip_while(|w| *w != "memory").nth(1).unwrap_or_else(|| panic!("{first}"));
    let out = ok_stdout(&mnemo(d.path(), &["--at", "2026-07-02", "remember", "[SEM] Northwind Labs | owner | Carla"]));
    let line = out.lines().find(|l| l.contains("supersedes")).unwrap_or_else(|| panic!("{out}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(&words[..2], ["inserted", "memory"], "{line}");
    assert_eq!(&words[3..5], ["supersedes", old], "the new memory supersedes the old one: {line}");
    assert_ne!(words[2], old, "{line}");
}

#[test]
fn completions_for_bash_zsh_and_fish() {
    let d = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let s = ok_stdout(&mnemo(d.path(), &["completions", shell]));
        assert!(s.contains("mnemo") && s.contains("recall") && s.contains("remember"), "{shell}");
    }
    assert!(!mnemo(d.path(), &["completions", "cmd.exe"]).status.success());
}
