//! Erasure at the CLI (issue 41, deliverable 2; docs/erasure.md). The must-show: after `erase`
//! of a phone number, no command, export, backup made afterwards or index file holds the
//! number (every file of the data directory is searched), and `why` says "erased" with the
//! time and reason; `mnemo verify` still passes. A restore of a backup made before the erasure
//! erases it again by default, and with `--keep-erased` says what it re-introduces.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::{Path, PathBuf};

mod cli_run;
use cli_run::{json, mnemo, ok, text};

const PHONE: &str = "+1 555 0100";
const NEW_PHONE: &str = "+1 555 0199";

/// Every file at or under `path` whose bytes hold `needle`.
fn files_holding(path: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else if std::fs::read(&p).unwrap().windows(needle.len()).any(|w| w == needle.as_bytes()) {
            found.push(p);
        }
    }
    found
}

/// A data directory where Ben's phone was said, changed, and quoted in an episode; Ann's tea
/// beside it.
fn seeded() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    ok(&mnemo(d.path(), &["remember", &format!("[SEM] Ben | phone | {PHONE}\n[SEM] Ann | drink | tea")]));
    ok(&mnemo(d.path(), &["remember", &format!("Ben said his number changes to {NEW_PHONE} next week.")]));
    ok(&mnemo(d.path(), &["remember", &format!("[SEM] Ben | phone | {NEW_PHONE}")]));
    ok(&mnemo(d.path(), &["recall", "Ben phone"]));
    assert!(!files_holding(d.path(), PHONE).is_empty(), "the fixture holds the number");
    d
}

/// What a run printed, stdout and stderr together.
fn all(dir: &Path, args: &[&str]) -> String {
    let (out, err) = ok(&mnemo(dir, args));
    format!("{out}\n{err}")
}

#[test]
fn an_erased_phone_number_is_in_no_file_command_export_or_later_backup_and_why_says_erased() {
    let d = seeded();
    let outside = tempfile::tempdir().unwrap();
    let before = outside.path().join("before.db");
    ok(&mnemo(d.path(), &["backup", "create", before.to_str().unwrap()]));

    // The dry run lists what would go and writes nothing.
    let preview = all(d.path(), &["erase", "Ben | phone", "--reason", "GDPR request 7", "--dry-run"]);
    assert!(preview.contains("would erase claim Ben | phone") && preview.contains(PHONE), "{preview}");
    assert!(preview.contains("holds an erased value"), "the episode that quoted the number: {preview}");
    assert!(!files_holding(d.path(), PHONE).is_empty(), "a dry run erases nothing");

    // A reason is required; an unknown id is named.
    let o = mnemo(d.path(), &["erase", "m99", "--reason", "x"]);
    assert!(!o.status.success() && text(&o).1.contains("m99"), "{:?}", text(&o));
    let o = mnemo(d.path(), &["erase", "Ben | phone"]);
    assert!(!o.status.success() && text(&o).1.contains("--reason"), "{:?}", text(&o));

    let done = all(d.path(), &["erase", "Ben | phone", "--reason", "GDPR request 7"]);
    assert!(done.contains("erased claim Ben | phone") && done.contains("GDPR request 7"), "{done}");
    assert!(!done.contains(PHONE) && !done.contains(NEW_PHONE), "the answer repeats nothing erased: {done}");

    let after = outside.path().join("after.db");
    let mut seen = String::new();
    for args in [
        vec!["why", "m1"],
        vec!["list", "--all"],
        vec!["list", "--all", "--json"],
        vec!["export", "--all"],
        vec!["export", "--history"],
        vec!["recall", "Ben phone"],
        vec!["recall", "what is Ben's number"],
        vec!["backup", "create", after.to_str().unwrap()],
        vec!["verify"],
    ] {
        seen.push_str(&all(d.path(), &args));
    }
    for n in [PHONE, NEW_PHONE] {
        assert!(!seen.contains(n), "a command printed {n}: {seen}");
        assert_eq!(files_holding(d.path(), n), Vec::<PathBuf>::new(), "{n} in the data directory");
        assert_eq!(files_holding(&after, n), Vec::<PathBuf>::new(), "{n} in a backup made afterwards");
    }
    assert!(!files_holding(&before, PHONE).is_empty(), "a backup made before still holds it (documented)");
    // What was not named stays.
    assert!(seen.contains("Ann | drink | tea"), "{seen}");
    let why = all(d.path(), &["why", "m1"]);
    assert!(why.contains("ERASED at ") && why.contains(": GDPR request 7"), "{why}");
    let verify = all(d.path(), &["verify"]);
    assert!(verify.contains("history: verified"), "{verify}");
}

#[test]
fn a_restore_of_an_older_backup_erases_again_or_says_what_it_re_introduces() {
    let d = seeded();
    let outside = tempfile::tempdir().unwrap();
    let before = outside.path().join("before.db");
    ok(&mnemo(d.path(), &["backup", "create", before.to_str().unwrap()]));
    ok(&mnemo(d.path(), &["erase", "Ben | phone", "--reason", "GDPR request 7"]));
    let copy = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(d.path()).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() && p.file_name().unwrap() == "mnemo.db" {
            std::fs::copy(&p, copy.path().join("mnemo.db")).unwrap();
        }
    }

    let restored = all(d.path(), &["backup", "restore", before.to_str().unwrap()]);
    assert!(restored.contains("re-applied erasure 1") && restored.contains("GDPR request 7"), "{restored}");
    assert_eq!(files_holding(d.path(), PHONE), Vec::<PathBuf>::new(), "{restored}");
    assert!(all(d.path(), &["verify"]).contains("history: verified"));

    let kept = all(copy.path(), &["backup", "restore", before.to_str().unwrap(), "--keep-erased"]);
    assert!(kept.contains("RE-INTRODUCED (--keep-erased) what erasure 1"), "{kept}");
    assert!(kept.contains("memory m1") && kept.contains("turn t1"), "{kept}");
    assert!(!files_holding(copy.path(), PHONE).is_empty(), "--keep-erased leaves it: {kept}");
}

#[test]
fn a_subject_erasure_takes_its_memories_and_name_and_a_turn_erasure_lists_what_came_from_it() {
    let d = tempfile::tempdir().unwrap();
    ok(&mnemo(
        d.path(),
        &["remember", "[SEM] Ben | phone | +1 555 0100\n[SEM] Ben | role | buyer\n[SEM] Ann | drink | tea"],
    ));
    ok(&mnemo(d.path(), &["remember", "Benefits review with Ann on Friday"]));
    let v = json(d.path(), &["erase", "--subject", "ben", "--reason", "GDPR request 9", "--dry-run", "--json"]);
    let whys: Vec<&str> = v["memories"].as_array().unwrap().iter().map(|m| m["why"].as_str().unwrap()).collect();
    assert_eq!(whys, ["about the subject", "about the subject"], "{v}");
    assert_eq!(v["redacted"], serde_json::json!(["t1"]), "only the turn that names Ben: {v}");
    ok(&mnemo(d.path(), &["erase", "--subject", "ben", "--reason", "GDPR request 9"]));
    let list = all(d.path(), &["list", "--all"]);
    assert!(!list.contains("Ben |") && !list.contains(PHONE), "{list}");
    assert!(list.contains("Ann | drink | tea") && list.contains("Benefits review"), "a longer word stays: {list}");
    assert_eq!(files_holding(d.path(), "Ben |"), Vec::<PathBuf>::new());

    // A turn, whole: the memory extracted from it is listed, not erased.
    let v = json(d.path(), &["erase", "t2", "--reason", "pasted by mistake", "--json"]);
    assert_eq!(
        (v["turns"].clone(), v["derived"].clone()),
        (serde_json::json!(["t2"]), serde_json::json!(["m4"])),
        "{v}"
    );
    assert_eq!(files_holding(d.path(), "Benefits review with Ann on Friday").len(), 1, "the episode m4 stays: {v}");
    let o = mnemo(d.path(), &["erase", "t2", "--reason", "again"]);
    assert!(!o.status.success() && text(&o).1.contains("erased already"), "{:?}", text(&o));
    assert!(all(d.path(), &["verify"]).contains("history: verified"));
}

#[test]
fn an_escalation_that_held_the_number_loses_it_with_the_erasure() {
    let d = seeded();
    // A task about Ben's phone that escalates (it names someone memory holds nothing on), its
    // pack and task kept in the escalation ledger.
    let (out, _) =
        text(&mnemo(d.path(), &["recall", &format!("is {NEW_PHONE} the phone of Dana Whitfield"), "--json"]));
    assert!(out.contains("\"escalate\""), "the task escalates: {out}");
    let ledger = d.path().join("escalations.json");
    assert!(!files_holding(&ledger, NEW_PHONE).is_empty(), "the ledger holds the number before the erasure");
    ok(&mnemo(d.path(), &["erase", "Ben | phone", "--reason", "GDPR request 7"]));
    assert_eq!(files_holding(d.path(), NEW_PHONE), Vec::<PathBuf>::new());
    let e = all(d.path(), &["escalations", "--json"]);
    assert!(e.contains("[erased]") && !e.contains("555 0199"), "{e}");
}
