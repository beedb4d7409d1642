//! Commands that call no model need no key: with `[llm] client = "live"` and no API key in the
//! environment, reading, listing, exporting, backing up and recall (on the default fake
//! embedder) work; the commands that do call the model still fail naming the variable. And
//! every `--json` failure is one JSON object on stdout, beside the same line on stderr.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::{Path, PathBuf};
use std::process::Output;

mod cli_run;
use cli_run::command_without_model_env;

/// `mnemo --data-dir DIR args…` with no key, no model override and no inherited data dir.
fn mnemo(dir: &Path, args: &[&str]) -> Output {
    command_without_model_env(dir).args(args).output().unwrap()
}

fn ok(o: &Output, what: &str) -> String {
    assert!(o.status.success(), "{what} failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// A data directory written with the fake model (Ben's phone changed once: one memory is
/// tombstoned), and a config asking for the live client at an address nothing answers.
struct Fixture {
    _tmp: tempfile::TempDir,
    data: PathBuf,
    live: PathBuf,
    current: String,
    superseded: String,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    for turn in ["[SEM] Ben | phone | 555", "[SEM] Ben | phone | 556", "[SEM] Northwind Labs | owner | Ben"] {
        ok(&mnemo(&data, &["remember", turn]), turn);
    }
    let live = tmp.path().join("live.toml");
    // Port 9 (discard) on loopback: were any call made, nothing could answer it.
    std::fs::write(&live, "[llm]\nclient = \"live\"\nbase_url = \"http://127.0.0.1:9/v1\"\n").unwrap();
    let all: serde_json::Value =
        serde_json::from_str(&ok(&mnemo(&data, &["list", "--all", "--json"]), "list")).unwrap();
    let id_of = |content: &str, active: bool| {
        all["memories"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["content"] == content && (m["status"] == "active") == active)
            .unwrap_or_else(|| panic!("no memory {content:?} (active: {active}) in {all}"))["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let current = id_of("Ben | phone | 556", true);
    let superseded = id_of("Ben | phone | 555", false);
    Fixture { _tmp: tmp, data, live, current, superseded }
}

impl Fixture {
    /// `mnemo --config live.toml args…`.
    fn live(&self, args: &[&str]) -> Output {
        let mut all = vec!["--config", self.live.to_str().unwrap()];
        all.extend_from_slice(args);
        mnemo(&self.data, &all)
    }
    fn active_count(&self) -> usize {
        let v: serde_json::Value = serde_json::from_str(&ok(&mnemo(&self.data, &["list", "--json"]), "list")).unwrap();
        v["memories"].as_array().unwrap().len()
    }
}

#[test]
fn reading_commands_work_with_a_live_client_and_no_key() {
    let f = fixture();
    let why: serde_json::Value =
        serde_json::from_str(&ok(&f.live(&["why", &f.superseded.to_string(), "--json"]), "why")).unwrap();
    assert_eq!(why["memory"]["content"], "Ben | phone | 555", "{why}");
    assert_eq!(why["superseded_by"]["id"], f.current, "{why}");

    let list = ok(&f.live(&["list"]), "list");
    assert!(list.contains("Ben | phone | 556") && !list.contains("Ben | phone | 555"), "{list}");

    let export = ok(&f.live(&["export", "--all"]), "export");
    let lines: Vec<serde_json::Value> = export.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3, "{export}");

    // `--live` asks for the same client as the config file does.
    let recall: serde_json::Value =
        serde_json::from_str(&ok(&mnemo(&f.data, &["--live", "recall", "Ben phone", "--json"]), "recall")).unwrap();
    let packed: Vec<&str> =
        recall["memories"].as_array().unwrap().iter().filter_map(|m| m["content"].as_str()).collect();
    assert!(packed.contains(&"Ben | phone | 556"), "{recall}");

    let plugins = ok(&f.live(&["plugins"]), "plugins");
    assert!(plugins.contains("reasoner"), "{plugins}");

    // The command says the model is out of reach, and goes on.
    let o = f.live(&["list"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("DASHSCOPE_API_KEY") && err.contains("does not call the model"), "{err}");
}

#[test]
fn backups_need_no_key() {
    let f = fixture();
    let file = f.data.parent().unwrap().join("ben.backup");
    let info: serde_json::Value =
        serde_json::from_str(&ok(&f.live(&["backup", "create", file.to_str().unwrap(), "--json"]), "backup create"))
            .unwrap();
    assert_eq!(info["memories"], 3, "{info}");
    assert!(file.is_file());
    // Forgetting by `entity | attribute` is by rule, no model: it works too, then the backup
    // brings the memory back.
    ok(&f.live(&["forget", "Ben | phone"]), "forget Ben | phone");
    assert_eq!(f.active_count(), 1);
    ok(&f.live(&["backup", "restore", file.to_str().unwrap()]), "backup restore");
    assert_eq!(f.active_count(), 2);
}

#[test]
fn commands_that_call_the_model_still_need_the_key() {
    let f = fixture();
    for args in [
        &["remember", "[SEM] Ben | phone | 557"][..],
        &["--live", "remember", "[SEM] Ben | phone | 557"][..],
        &["forget", "whatever Ben said about his phone"][..],
        &["reextract"][..],
    ] {
        let o = if args[0] == "--live" { mnemo(&f.data, args) } else { f.live(args) };
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("needs an API key") && err.contains("DASHSCOPE_API_KEY"), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}: without --json, stdout stays clean");
    }
    assert_eq!(f.active_count(), 2, "nothing was written or forgotten");
}

#[test]
fn a_json_failure_is_one_json_object_on_stdout() {
    let f = fixture();
    let o = f.live(&["remember", "--json", "[SEM] Ben | phone | 557"]);
    assert_eq!(o.status.code(), Some(1));
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "one line: {stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["error"]["kind"], "config", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("DASHSCOPE_API_KEY"), "{message}");
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(stderr.lines().any(|l| l == format!("error: {message}")), "the same line on stderr: {stderr}");

    // Kinds from the error's type, the exit status as without --json.
    let cases: [(&[&str], &str, i32); 3] = [
        (&["why", "999", "--json"], "not_found", 1),
        (&["recall", "Ben", "--budget", "-3", "--json"], "invalid_input", 1),
        // A line that does not parse: clap's usage error, exit status 2.
        (&["recall", "--json", "--no-such-flag", "Ben"], "invalid_input", 2),
    ];
    for (args, kind, code) in cases {
        let o = f.live(args);
        assert_eq!(o.status.code(), Some(code), "{args:?}");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&o.stdout)));
        assert_eq!(v["error"]["kind"], kind, "{args:?}: {v}");
        assert!(!v["error"]["message"].as_str().unwrap().is_empty(), "{args:?}: {v}");
    }
}
