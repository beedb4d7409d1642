//! Precise forgetting at the CLI (issue 41): `forget --dry-run` previews what a command would
//! tombstone and keep, and why, writing nothing; a free-text forget takes what memories are
//! about, not a mention inside a URL; a pinned memory is never taken by free text unless
//! `--include-pinned`, while an exact `entity | attribute` forget takes it and says so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;

use serde_json::Value;

mod cli_run;
use cli_run::{json, mnemo, ok};

/// (content, why) of the preview's `forget` or `kept`.
fn rows(preview: &Value, which: &str) -> Vec<(String, String)> {
    preview[which]
        .as_array()
        .unwrap_or_else(|| panic!("no {which}: {preview}"))
        .iter()
        .map(|m| (m["content"].as_str().unwrap().to_string(), m["why"].as_str().unwrap().to_string()))
        .collect()
}

/// The contents of the active memories.
fn active(dir: &Path) -> Vec<String> {
    let v = json(dir, &["list", "--json"]);
    let list = v["memories"].as_array().or_else(|| v.as_array()).unwrap_or_else(|| panic!("{v}"));
    list.iter().map(|m| m["content"].as_str().unwrap().to_string()).collect()
}

const OWNER: &str = "Northwind Labs | owner | Ben";
const LEAD: &str = "Northwind Labs | lead time | 21 days";
const PROC: &str = "Order parts at https://northwind.example/orders every Monday";
const ROLE: &str = "Ben | role | buyer";

fn seeded() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    ok(&mnemo(d.path(), &["remember", &format!("[SEM] {OWNER}\n[SEM] {LEAD}\n[PROC] {PROC}\n[SEM pin] {ROLE}")]));
    assert_eq!(active(d.path()).len(), 4);
    d
}

#[test]
fn dry_run_lists_the_claims_on_northwind_not_the_procedure_that_only_mentions_its_url() {
    let d = seeded();
    let p = json(d.path(), &["forget", "Northwind", "--dry-run", "--json"]);
    assert_eq!(
        rows(&p, "forget"),
        [
            (OWNER.to_string(), "claim entity matches".to_string()),
            (LEAD.to_string(), "claim entity matches".to_string())
        ],
        "{p}"
    );
    assert_eq!(
        rows(&p, "kept"),
        [(PROC.to_string(), "only mentioned inside a web address: https://northwind.example/orders".to_string())],
        "{p}"
    );
    assert_eq!(p["by"], "text");
    // The text form says the same, and that nothing is written.
    let text = ok(&mnemo(d.path(), &["forget", "Northwind", "--dry-run"])).0;
    assert!(text.contains("nothing written"), "{text}");
    assert!(text.contains(&format!("would forget m1 {OWNER:?}: claim entity matches")), "{text}");
    assert!(text.contains(&format!("would forget m2 {LEAD:?}: claim entity matches")), "{text}");
    assert!(text.contains(&format!("kept m3 {PROC:?}: only mentioned inside a web address")), "{text}");
    // Nothing was written: every memory is active, and the next turn is the second one.
    assert_eq!(active(d.path()).len(), 4);
    let r = json(d.path(), &["forget", "Northwind", "--json"]);
    assert_eq!(r["turn"]["id"], "t2", "a dry run records no turn: {r}");
    let left = active(d.path());
    assert_eq!(left, [PROC, ROLE], "the real forget takes what the preview listed: {left:?}");
    let detail = r["outcomes"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("claim entity matches"), "{detail}");
    let notes = r["notes"].to_string();
    assert!(notes.contains("only mentioned inside a web address"), "{notes}");
}

#[test]
fn a_free_text_forget_keeps_the_pinned_memory_unless_asked() {
    let d = seeded();
    let p = json(d.path(), &["forget", "Ben", "--dry-run", "--json"]);
    assert_eq!(rows(&p, "forget"), [(OWNER.to_string(), "its own words match: ben".to_string())], "{p}");
    let kept = rows(&p, "kept");
    assert_eq!(kept.len(), 1, "{p}");
    assert_eq!(kept[0].0, ROLE);
    assert!(kept[0].1.starts_with("pinned (it matched: claim entity matches)"), "{p}");
    let text = ok(&mnemo(d.path(), &["forget", "Ben", "--dry-run"])).0;
    assert!(text.contains(&format!("kept m4 [pinned] {ROLE:?}: pinned")), "{text}");

    // With --include-pinned the preview would take it too.
    let p = json(d.path(), &["forget", "Ben", "--dry-run", "--include-pinned", "--json"]);
    let forget = rows(&p, "forget");
    assert_eq!(forget.len(), 2, "{p}");
    assert_eq!(forget[1].0, ROLE);
    assert!(forget[1].1.contains("pinned: taken, as pinned memories were included"), "{p}");

    // The real free-text forget does not take the pinned memory, and says so.
    let out = ok(&mnemo(d.path(), &["forget", "Ben"])).0;
    assert!(out.contains("kept m4 [pinned]"), "{out}");
    assert_eq!(active(d.path()), [LEAD, PROC, ROLE]);

    // An exact `entity | attribute` forget takes the pinned claim, and says it was pinned.
    let p = json(d.path(), &["forget", "Ben | role", "--dry-run", "--json"]);
    assert_eq!(
        rows(&p, "forget"),
        [(
            ROLE.to_string(),
            "claim entity and attribute match (pinned: taken, as the claim was named exactly)".to_string()
        )],
        "{p}"
    );
    let out = ok(&mnemo(d.path(), &["forget", "Ben | role"])).0;
    assert!(out.contains("[pinned]: claim entity and attribute match (pinned: taken"), "{out}");
    assert_eq!(active(d.path()), [LEAD, PROC]);
}
