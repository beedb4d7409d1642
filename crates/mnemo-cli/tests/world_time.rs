//! World time at the CLI (issue 38): a validity interval a turn states ("from 2019 to 2021",
//! the fake grammar's `[SEM from=2019 to=2021]`) is kept, closed by a supersession, honoured by
//! `recall --valid-at` before, inside and after it, and listed by `history` beside memory's own
//! times; relative dates ("next Friday") get the date they mean, resolved against the turn's
//! time. A world time before every stated start is said in the notes, never a silent empty pack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli_run;
use cli_run::{contents, json, mnemo, notes, ok};

const WHERE: &str = "where does Ben live, which city";

/// Ben lived in Lisbon from 2019 to 2021 (said in January 2026), then in Porto from 2022.
fn lisbon_then_porto(index: Option<&str>) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    if let Some(kind) = index {
        std::fs::write(d.path().join("mnemo.toml"), format!("[index]\nkind = \"{kind}\"\n")).unwrap();
    }
    ok(&mnemo(d.path(), &["--at", "2026-01-10", "remember", "[SEM from=2019 to=2021] Ben | city | Lisbon"]));
    ok(&mnemo(d.path(), &["--at", "2026-01-11", "remember", "[SEM from=2022] Ben | city | Porto"]));
    d
}

fn valid_at_before_inside_and_after(index: Option<&str>) {
    let d = lisbon_then_porto(index);
    let before = json(d.path(), &["--at", "2026-01-12", "recall", WHERE, "--valid-at", "2018-06-01", "--json"]);
    assert!(contents(&before).is_empty(), "{before}");
    assert!(notes(&before).contains("before every stated start (the earliest is 2019-01-01"), "{before}");
    assert_eq!(before["decision"]["decision"], "escalate", "nothing known of then: {before}");
    // Lisbon was replaced, yet it is what was true in 2020.
    let inside = json(d.path(), &["--at", "2026-01-12", "recall", WHERE, "--valid-at", "2020-06-01", "--json"]);
    assert_eq!(contents(&inside), ["Ben | city | Lisbon"], "{inside}");
    assert!(notes(&inside).contains("valid at 2020-06-01T00:00:00Z"), "{inside}");
    assert_eq!(inside["decision"]["decision"], "act", "{inside}");
    let after = json(d.path(), &["--at", "2026-01-12", "recall", WHERE, "--valid-at", "2023-06-01", "--json"]);
    assert_eq!(contents(&after), ["Ben | city | Porto"], "{after}");
    // The last day of the interval is inside it, the next is not.
    let last = json(d.path(), &["--at", "2026-01-12", "recall", WHERE, "--valid-at", "2021-12-31T23:00:00Z", "--json"]);
    assert_eq!(contents(&last), ["Ben | city | Lisbon"], "{last}");
    // Now, without it: what memory holds.
    assert_eq!(contents(&json(d.path(), &["--at", "2026-01-12", "recall", WHERE, "--json"])), ["Ben | city | Porto"]);
}

#[test]
fn a_validity_interval_is_honoured_by_valid_at_before_inside_and_after_it() {
    valid_at_before_inside_and_after(None);
}

#[test]
fn valid_at_ranks_in_the_exact_index_too() {
    valid_at_before_inside_and_after(Some("brute"));
}

#[test]
fn history_lists_both_clocks() {
    let d = lisbon_then_porto(None);
    let h = json(d.path(), &["history", "Ben | city", "--json"]);
    let values: Vec<(&str, Option<&str>, Option<&str>, &str)> = h["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["value"].as_str().unwrap(),
                v["valid_from"].as_str(),
                v["valid_to"].as_str(),
                v["recorded_at"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        values,
        [
            ("Lisbon", Some("2019-01-01"), Some("2022-01-01"), "2026-01-10T00:00:00Z"),
            ("Porto", Some("2022-01-01"), None, "2026-01-11T00:00:00Z")
        ],
        "{h}"
    );
    let text = ok(&mnemo(d.path(), &["history", "Ben | city"])).0;
    assert!(text.contains("\"Lisbon\": true from 2019-01-01 until 2022-01-01; recorded 2026-01-10T00:00:00Z, until 2026-01-11T00:00:00Z"), "{text}");
    assert!(text.contains("\"Porto\": true from 2022-01-01; recorded 2026-01-11T00:00:00Z, held now"), "{text}");
}

#[test]
fn a_replaced_value_without_a_stated_end_ends_where_its_successor_begins() {
    let d = tempfile::tempdir().unwrap();
    ok(&mnemo(d.path(), &["--at", "2026-01-10", "remember", "[SEM from=2019] Ben | city | Lisbon"]));
    ok(&mnemo(d.path(), &["--at", "2026-01-11", "remember", "[SEM from=2023-03] Ben | city | Porto"]));
    let h = json(d.path(), &["history", "Ben | city", "--json"]);
    assert_eq!(h["values"][0]["valid_to"], "2023-03-01", "{h}");
    let gap = json(d.path(), &["--at", "2026-01-12", "recall", WHERE, "--valid-at", "2023-02-15", "--json"]);
    assert_eq!(contents(&gap), ["Ben | city | Lisbon"], "{gap}");
}

#[test]
fn prose_states_its_interval_and_relative_dates_get_their_date() {
    let d = tempfile::tempdir().unwrap();
    // Friday 2026-12-04.
    ok(&mnemo(d.path(), &["--at", "2026-12-04T15:00:00Z", "remember", "Ana lived in Lisbon from 2019 to 2021."]));
    ok(&mnemo(d.path(), &["--at", "2026-12-04T15:01:00Z", "remember", "The design review moved to next Friday."]));
    let review = json(d.path(), &["recall", "design review", "--raw", "--json"]);
    assert_eq!(contents(&review), ["The design review moved to next Friday (2026-12-11)."], "{review}");
    let inside = json(d.path(), &["recall", "where did Ana live", "--valid-at", "2020-01-01", "--raw", "--json"]);
    assert_eq!(contents(&inside), ["Ana lived in Lisbon from 2019 to 2021."], "{inside}");
    let after = json(d.path(), &["recall", "where did Ana live", "--valid-at", "2024-01-01", "--raw", "--json"]);
    assert!(!contents(&after).iter().any(|c| c.contains("Lisbon")), "{after}");
}

#[test]
fn a_bad_valid_at_or_a_backwards_interval_is_refused_or_said() {
    let d = tempfile::tempdir().unwrap();
    let out = mnemo(d.path(), &["recall", "x", "--valid-at", "someday"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--valid-at") && err.contains("someday"), "{err}");
    let r =
        json(d.path(), &["--at", "2026-01-10", "remember", "[SEM from=2021 to=2019] Ben | city | Lisbon", "--json"]);
    assert!(r.to_string().contains("ends (2020-01-01T00:00:00Z) at or before it starts (2021-01-01T00:00:00Z)"), "{r}");
    let h = json(d.path(), &["history", "Ben | city", "--json"]);
    assert!(h["values"][0].get("valid_from").is_none(), "the interval is dropped: {h}");
}
