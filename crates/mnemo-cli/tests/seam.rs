//! The model seam from the command line: loud, never a silent fallback to the fake.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;
use std::process::Output;

mod cli_run;
use cli_run::command_without_model_env;

fn mnemo(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    command_without_model_env(dir).args(args).envs(env.iter().copied()).output().unwrap()
}

#[test]
fn live_without_a_key_or_offline_is_an_error_naming_the_variable() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    let o = mnemo(&data, &[], &["--live", "remember", "Hi, this is Maria Lopez. I'm allergic to penicillin."]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("DASHSCOPE_API_KEY"), "{err}");
    assert!(!data.exists(), "nothing was written");
    let o = mnemo(&data, &[("DASHSCOPE_API_KEY", "sk-x"), ("MNEMO_OFFLINE", "1")], &["--live", "remember", "x"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("MNEMO_OFFLINE"));
}

#[test]
fn the_mode_is_said_on_stderr_and_stdout_stays_clean() {
    let d = tempfile::tempdir().unwrap();
    let o = mnemo(d.path(), &[], &["remember", "--json", "[SEM] Ben | phone | 555"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("model client: fake"));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["model"]["client"], "fake");
    let o = mnemo(d.path(), &[], &["-q", "recall", "Ben"]);
    assert!(o.status.success() && o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_replay_miss_names_the_missing_request_and_the_turn_stays_recorded() {
    let d = tempfile::tempdir().unwrap();
    let cassette = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/cassettes/prose-demo");
    let dir = cassette.to_str().unwrap();
    let o =
        mnemo(d.path(), &[("MNEMO_REPLAY", dir)], &["-n", "clinic", "remember", "Something that was never recorded."]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("model client: replay"), "{err}");
    assert!(err.contains("replay miss") && err.contains("Something that was never recorded."), "{err}");
    // Re-extracted by the fake, which keeps the untagged turn as one episode of its words.
    let o = mnemo(d.path(), &[], &["-n", "clinic", "reextract", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["extracted"][0]["status"], "extracted", "{v}");
    assert_eq!(v["extracted"][0]["outcomes"][0]["kind"], "inserted", "{v}");
    let o = mnemo(d.path(), &[], &["-n", "clinic", "reextract"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("no unextracted turns"));
}

/// A poison turn (here a replay miss that no cassette will ever hold) can be taken off the
/// unextracted turns: it stays recorded, `reextract` no longer retries it, and an id that is
/// not listed is refused with the ids that are.
#[test]
fn reextract_discard_stops_retrying_a_poison_turn_and_refuses_an_unlisted_id() {
    let d = tempfile::tempdir().unwrap();
    let cassette = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/cassettes/prose-demo");
    let replay = [("MNEMO_REPLAY", cassette.to_str().unwrap())];
    let o = mnemo(d.path(), &replay, &["-n", "clinic", "remember", "Something that was never recorded."]);
    assert!(!o.status.success());
    let o = mnemo(d.path(), &replay, &["-n", "clinic", "reextract", "--list", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let listed = v["unextracted"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{v}");
    let id = listed[0]["turn"].as_str().unwrap().to_string();
    assert_eq!(id, "t1", "the namespace's first turn");
    assert!(listed[0]["error"].as_str().unwrap().contains("replay miss"), "{v}");

    // An id that is not listed: refused, nothing discarded.
    let wrong = "t99";
    let o = mnemo(d.path(), &replay, &["-n", "clinic", "reextract", "--discard", wrong]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("t99 in namespace clinic: no turn has that id"), "{err}");
    // A memory's id is refused as a turn's.
    let o = mnemo(d.path(), &replay, &["-n", "clinic", "reextract", "--discard", "m1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("m1 is a memory id; this takes a turn id"), "{err}");
    // Another namespace does not reach this one's ledger.
    let o = mnemo(d.path(), &replay, &["-n", "other", "reextract", "--discard", &id.to_string()]);
    assert!(!o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));

    // Still failing under the replay: retried, still listed.
    let o = mnemo(d.path(), &replay, &["-n", "clinic", "reextract"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!("reextract --discard {id}")),
        "the failure says how to stop retrying"
    );

    let o = mnemo(d.path(), &replay, &["-n", "clinic", "reextract", "--discard", &id.to_string()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(&format!("discarded turn {id}")) && out.contains("replay miss"), "{out}");
    let o = mnemo(d.path(), &replay, &["-n", "clinic", "reextract", "--list"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("no unextracted turns"), "no longer listed");
    let o = mnemo(d.path(), &replay, &["-n", "clinic", "reextract"]);
    assert!(o.status.success(), "nothing left to retry: {}", String::from_utf8_lossy(&o.stderr));
    // The turn itself stays recorded: a second discard is refused, and the namespace's
    // memories are untouched (nothing was ever derived from it).
    let o = mnemo(d.path(), &replay, &["-n", "clinic", "reextract", "--discard", &id.to_string(), "--json"]);
    assert!(!o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["error"]["message"].as_str().unwrap().contains("(unextracted turns there: none)"), "{v}");
}

/// Offline, a prose turn is no longer dropped: `remember --json` says `extracted` and the
/// episode it wrote.
#[test]
fn an_offline_prose_turn_is_kept_as_an_episode_and_says_so() {
    let d = tempfile::tempdir().unwrap();
    let o = mnemo(d.path(), &[], &["remember", "--json", "The user said their favourite colour is teal."]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "extracted", "{v}");
    assert_eq!(v["outcomes"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v["outcomes"][0]["kind"], "inserted", "{v}");
    let o = mnemo(d.path(), &[], &["list", "--json"]);
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(listed.contains("episodic") && listed.contains("favourite colour is teal"), "{listed}");
}
