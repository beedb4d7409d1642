//! Time at the CLI (issue 38): `recall --as-of` answers what memory held at a past system time
//! (a value superseded later is held then; one recorded later is not), and `history` lists the
//! values a claim has had with when each was recorded and when and why it ended. A time before
//! the namespace's first memory, or after now, is said in the notes, never a silent empty pack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli_run;
use cli_run::{contents, json, mnemo, notes, ok, text};

const QUESTION: &str = "what is the lead time of Northwind Labs";

/// A lead time of 21 days on day 0 (2026-01-01), 35 days on day 20.
fn two_values() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    ok(&mnemo(d.path(), &["--at", "2026-01-01", "remember", "[SEM] Northwind Labs | lead time | 21 days"]));
    ok(&mnemo(d.path(), &["--at", "2026-01-21", "remember", "[SEM] Northwind Labs | lead time | 35 days"]));
    d
}

#[test]
fn recall_as_of_day_10_answers_21_days_and_as_of_day_30_answers_35() {
    let d = two_values();
    let then = json(d.path(), &["recall", QUESTION, "--as-of", "2026-01-11", "--json"]);
    assert_eq!(contents(&then), ["Northwind Labs | lead time | 21 days"], "{then}");
    assert_eq!(then["decision"]["decision"], "act", "{then}");
    assert!(notes(&then).contains("superseded by m2 at 2026-01-21"), "{then}");
    let later = json(d.path(), &["recall", QUESTION, "--as-of", "2026-01-31", "--json"]);
    assert_eq!(contents(&later), ["Northwind Labs | lead time | 35 days"], "{later}");
    // Now, without --as-of, as before.
    let now = json(d.path(), &["recall", QUESTION, "--json"]);
    assert_eq!(contents(&now), ["Northwind Labs | lead time | 35 days"], "{now}");
    // The full answer carries the time the pack is of.
    let full = json(d.path(), &["recall", QUESTION, "--as-of", "2026-01-11", "--json", "--full"]);
    assert_eq!(full["pack"]["as_of"], 1_768_089_600_000i64, "{full}"); // 2026-01-11, in ms as every time of the pack
    assert!(full["action"].as_str().unwrap().starts_with("as of 2026-01-11"), "{full}");
}

#[test]
fn a_memory_forgotten_later_is_held_before_its_forget() {
    let d = tempfile::tempdir().unwrap();
    ok(&mnemo(d.path(), &["--at", "2026-01-01", "remember", "[SEM] Ben | phone | +1 555 0100"]));
    ok(&mnemo(d.path(), &["--at", "2026-01-05", "forget", "Ben | phone"]));
    let before = json(d.path(), &["recall", "Ben phone", "--as-of", "2026-01-03", "--raw", "--json"]);
    assert_eq!(contents(&before), ["Ben | phone | +1 555 0100"], "{before}");
    let after = json(d.path(), &["recall", "Ben phone", "--as-of", "2026-01-06", "--raw", "--json"]);
    assert!(contents(&after).is_empty(), "{after}");
    assert!(notes(&after).contains("already been forgotten"), "{after}");
}

#[test]
fn before_the_first_memory_and_after_now_are_said_never_silent() {
    let d = two_values();
    let early = json(d.path(), &["recall", QUESTION, "--as-of", "2025-06-01", "--json"]);
    assert!(contents(&early).is_empty(), "{early}");
    assert!(notes(&early).contains("before the namespace's first memory"), "{early}");
    assert_eq!(early["decision"]["decision"], "escalate", "{early}");
    let late = json(d.path(), &["recall", QUESTION, "--as-of", "2999-01-01", "--json"]);
    assert!(notes(&late).contains("after now"), "{late}");
    assert_eq!(contents(&late), ["Northwind Labs | lead time | 35 days"], "{late}");
    // A time that does not parse names the option.
    let bad = mnemo(d.path(), &["recall", QUESTION, "--as-of", "last tuesday"]);
    assert!(!bad.status.success());
    assert!(text(&bad).1.contains("--as-of"), "{}", text(&bad).1);
}

#[test]
fn history_lists_both_values_with_when_each_was_recorded_and_ended() {
    let d = two_values();
    let h = json(d.path(), &["history", "Northwind Labs | lead time", "--json"]);
    let values = h["values"].as_array().unwrap();
    assert_eq!(values.len(), 2, "{h}");
    assert_eq!(values[0]["value"], "21 days");
    assert_eq!(values[0]["recorded_at"], "2026-01-01T00:00:00Z");
    assert_eq!(values[0]["ended_at"], "2026-01-21T00:00:00Z");
    assert_eq!(values[0]["superseded_by"], "m2");
    assert!(values[0]["ended_because"].as_str().unwrap().contains("changed from \"21 days\" to \"35 days\""), "{h}");
    assert_eq!(values[1]["value"], "35 days");
    assert_eq!(values[1]["recorded_at"], "2026-01-21T00:00:00Z");
    assert!(values[1].get("ended_at").is_none(), "{h}");
    let printed = ok(&mnemo(d.path(), &["history", "Northwind Labs | lead time"])).0;
    // World time was not stated: the replaced value ended, and its successor began, when the
    // successor was recorded.
    assert!(
        printed.contains(
            "m1 \"21 days\": true until 2026-01-21; recorded 2026-01-01T00:00:00Z, until 2026-01-21T00:00:00Z"
        ),
        "{printed}"
    );
    assert!(
        printed.contains("m2 \"35 days\": true from 2026-01-21; recorded 2026-01-21T00:00:00Z, held now"),
        "{printed}"
    );
    let none = json(d.path(), &["history", "Northwind Labs | owner", "--json"]);
    assert!(none["values"].as_array().unwrap().is_empty());
    assert!(notes(&none).contains("never held a value"), "{none}");
    let bad = mnemo(d.path(), &["history", "Northwind Labs"]);
    assert!(!bad.status.success(), "a claim without its attribute is refused");
}

#[test]
fn an_index_kind_without_an_in_memory_form_ranks_in_the_exact_index_with_its_fusion_weights() {
    let d = tempfile::tempdir().unwrap();
    let config = d.path().join("brute.toml");
    std::fs::write(&config, "[index]\nkind = \"brute\"\nlexical_weight = 1.0\ndense_weight = 0.5\nrrf_k = 20.0\n")
        .unwrap();
    let c = config.to_str().unwrap();
    ok(&mnemo(
        d.path(),
        &["--config", c, "--at", "2026-01-01", "remember", "[SEM] Northwind Labs | lead time | 21 days"],
    ));
    ok(&mnemo(
        d.path(),
        &["--config", c, "--at", "2026-01-21", "remember", "[SEM] Northwind Labs | lead time | 35 days"],
    ));
    let then = json(d.path(), &["--config", c, "recall", QUESTION, "--as-of", "2026-01-11", "--json"]);
    assert_eq!(contents(&then), ["Northwind Labs | lead time | 21 days"], "{then}");
}

#[test]
fn a_question_about_change_is_told_the_earlier_value_in_the_notes_and_the_trace() {
    let d = two_values();
    // Asked a few days after the change (a year later the value would be too old to act on).
    let v =
        json(d.path(), &["--at", "2026-01-25", "recall", "what was the lead time of Northwind Labs before", "--json"]);
    assert_eq!(contents(&v), ["Northwind Labs | lead time | 35 days"], "only what memory holds is packed: {v}");
    let n = notes(&v);
    assert!(
        n.contains("earlier value of Northwind Labs | lead time (before m2): \"21 days\" as m1, held from 2026-01-01T00:00:00Z until 2026-01-21T00:00:00Z"),
        "{v}"
    );
    assert_eq!(v["decision"]["act_on"][0]["value"], "35 days", "the agent acts on the current value: {v}");
    let full = json(
        d.path(),
        &["--at", "2026-01-25", "recall", "what was the lead time of Northwind Labs before", "--json", "--full"],
    );
    let trace = full["pack"]["trace"].as_array().unwrap();
    let m1 = trace.iter().find(|t| t["id"] == "m1").unwrap_or_else(|| panic!("m1 not in the trace: {full}"));
    assert_eq!((m1["included"].as_bool(), m1["reason"].as_str()), (Some(false), Some("tombstoned")), "{m1}");
    assert!(m1["detail"].as_str().unwrap().contains("query asks about change"), "{m1}");
    // Not asked about change: no earlier value.
    let now = json(d.path(), &["recall", QUESTION, "--json"]);
    assert!(!notes(&now).contains("earlier value"), "{now}");
}

#[test]
fn since_and_until_window_the_episodes_and_not_the_facts() {
    let d = tempfile::tempdir().unwrap();
    for (at, text) in [
        ("2026-01-05", "[EPI] Ordered 40 valves from Northwind Labs"),
        ("2026-01-20", "[EPI] Ordered 12 pumps from Northwind Labs"),
        ("2026-02-03", "[EPI] Ordered 7 filters from Northwind Labs"),
        ("2026-02-04", "[SEM] Northwind Labs | owner | Ben"),
    ] {
        ok(&mnemo(d.path(), &["--at", at, "remember", text]));
    }
    let q = "what did we order from Northwind Labs";
    let january = json(d.path(), &["recall", q, "--since", "2026-01-01", "--until", "2026-02-01", "--raw", "--json"]);
    let got = contents(&january);
    assert!(got.iter().any(|c| c.contains("40 valves")) && got.iter().any(|c| c.contains("12 pumps")), "{january}");
    assert!(!got.iter().any(|c| c.contains("7 filters")), "February's order is outside the window: {january}");
    assert!(got.iter().any(|c| c.contains("owner | Ben")), "a fact is not windowed: {january}");
    assert!(
        notes(&january).contains("episodes recorded from 2026-01-01T00:00:00Z until 2026-02-01T00:00:00Z only"),
        "{january}"
    );
    let late = json(d.path(), &["recall", q, "--since", "2026-01-15", "--raw", "--json"]);
    let got = contents(&late);
    assert!(!got.iter().any(|c| c.contains("40 valves")) && got.iter().any(|c| c.contains("7 filters")), "{late}");
    let empty = json(d.path(), &["recall", q, "--since", "2025-01-01", "--until", "2025-02-01", "--raw", "--json"]);
    assert!(notes(&empty).contains("no episode was recorded in that window"), "{empty}");
    let backwards = mnemo(d.path(), &["recall", q, "--since", "2026-02-01", "--until", "2026-01-01"]);
    assert!(!backwards.status.success());
    assert!(text(&backwards).1.contains("until must be after since"), "{}", text(&backwards).1);
}

#[test]
fn an_erased_memory_is_not_what_memory_held_then() {
    let d = tempfile::tempdir().unwrap();
    ok(&mnemo(d.path(), &["--at", "2026-01-01", "remember", "[SEM] Ben | phone | +1 555 0100"]));
    ok(&mnemo(d.path(), &["--at", "2026-01-03", "erase", "Ben | phone", "--reason", "asked"]));
    let then = json(d.path(), &["recall", "Ben phone", "--as-of", "2026-01-02", "--raw", "--json"]);
    assert!(contents(&then).is_empty(), "{then}");
    assert!(!then.to_string().contains("555 0100"), "{then}");
}
