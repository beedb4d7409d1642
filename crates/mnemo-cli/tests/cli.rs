//! The `mnemo` binary end to end: separate processes over one data directory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;
use std::process::{Command, Output};

mod cli_run;
use cli_run::{json, mnemo, ok_stdout};

fn err(o: &Output) -> String {
    assert!(!o.status.success(), "expected failure, got: {}", String::from_utf8_lossy(&o.stdout));
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn recall_json(dir: &Path, q: &str) -> serde_json::Value {
    json(dir, &["recall", q, "--raw", "--json", "--full"])
}

#[test]
fn memory_survives_across_processes_and_corrections_supersede() {
    let d = tempfile::tempdir().unwrap();
    let t0 = ["--at", "2026-07-01T09:00:00Z"];
    ok_stdout(&mnemo(d.path(), &[&t0[..], &["remember", "[SEM] Northwind Labs | owner | Ben"]].concat()));
    ok_stdout(&mnemo(
        d.path(),
        &[&t0[..], &["remember", "[SEM] Contoso | owner | Alice\n[EPI] Lunch at the harbour."]].concat(),
    ));
    let pack = recall_json(d.path(), "who owns Northwind Labs");
    let first = &pack["items"][0]["memory"];
    assert_eq!(first["content"], "Northwind Labs | owner | Ben");
    let old_id = first["id"].as_str().unwrap().to_string();

    // correction in a third process
    ok_stdout(&mnemo(d.path(), &["--at", "2026-07-05T09:00:00Z", "remember", "[SEM] Northwind Labs | owner | Carla"]));
    let pack = recall_json(d.path(), "who owns Northwind Labs");
    let owners: Vec<String> = pack["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["memory"]["claim"]["entity"] == "Northwind Labs")
        .map(|i| i["memory"]["claim"]["value"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(owners, vec!["Carla"]);
    let new_id = pack["items"][0]["memory"]["id"].as_str().unwrap().to_string();

    let why: serde_json::Value =
        serde_json::from_str(&ok_stdout(&mnemo(d.path(), &["why", &old_id.to_string(), "--json"]))).unwrap();
    let status = &why["memory"]["status"];
    assert_eq!(status["status"], "tombstoned");
    assert_eq!(status["superseded_by"].as_str().unwrap(), new_id);
    assert_eq!(
        status["at"].as_i64().unwrap(),
        mnemo_contract::Timestamp::parse_rfc3339("2026-07-05T09:00:00Z").unwrap().0
    );
    assert!(status["reason"].as_str().unwrap().contains("Carla"));
    let text = ok_stdout(&mnemo(d.path(), &["why", &old_id.to_string()]));
    assert!(text.contains("superseded by memory") && text.contains("2026-07-05T09:00:00Z"), "{text}");
}

#[test]
fn namespaces_are_walls() {
    let d = tempfile::tempdir().unwrap();
    ok_stdout(&mnemo(d.path(), &["-n", "a", "remember", "[SEM] Northwind Labs | owner | Ben"]));
    let pack: serde_json::Value = serde_json::from_str(&ok_stdout(&mnemo(
        d.path(),
        &["-n", "b", "recall", "Northwind Labs owner", "--raw", "--json", "--full"],
    )))
    .unwrap();
    assert_eq!(pack["items"].as_array().unwrap().len(), 0);
    let e = err(&mnemo(d.path(), &["-n", "../etc", "recall", "x"]));
    assert!(e.contains("namespace"), "{e}");
}

#[cfg(unix)]
#[test]
fn invalid_utf8_turn_is_refused_and_nothing_is_written() {
    use std::os::unix::ffi::OsStrExt;
    let d = tempfile::tempdir().unwrap();
    let bad = std::ffi::OsStr::from_bytes(b"[SEM] x | y | \xff\xfe");
    let o = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("--data-dir")
        .arg(d.path())
        .arg("remember")
        .arg(bad)
        .output()
        .unwrap();
    let e = err(&o);
    assert!(e.contains("UTF-8") && e.contains("byte 14"), "{e}");
    let pack = recall_json(d.path(), "x y");
    assert_eq!(pack["items"].as_array().unwrap().len(), 0);
}

#[test]
fn budgets_negative_zero_and_huge() {
    let d = tempfile::tempdir().unwrap();
    ok_stdout(&mnemo(d.path(), &["remember", "[SEM] Northwind Labs | owner | Ben"]));
    let e = err(&mnemo(d.path(), &["recall", "owner", "--budget", "-5"]));
    assert!(e.contains("--budget") && e.contains("-5"), "{e}");
    let p: serde_json::Value = serde_json::from_str(&ok_stdout(&mnemo(
        d.path(),
        &["recall", "owner", "--raw", "--budget", "0", "--json", "--full"],
    )))
    .unwrap();
    assert_eq!(p["items"].as_array().unwrap().len(), 0);
    assert_eq!(p["trace"][0]["reason"], "budget");
    let p: serde_json::Value = serde_json::from_str(&ok_stdout(&mnemo(
        d.path(),
        &["recall", "owner", "--raw", "--budget", "999999999999", "--json", "--full"],
    )))
    .unwrap();
    assert_eq!(p["items"].as_array().unwrap().len(), 1);
    assert!(p["notes"][0].as_str().unwrap().contains("clamped"), "{p}");
}

#[test]
fn importance_out_of_range_is_clamped_and_said() {
    let d = tempfile::tempdir().unwrap();
    let out = ok_stdout(&mnemo(d.path(), &["remember", "[EPI imp=7] Big launch day."]));
    assert!(out.contains("clamped to 1"), "{out}");
    let p = recall_json(d.path(), "launch");
    assert_eq!(p["items"][0]["memory"]["importance"].as_f64().unwrap(), 1.0);
}

#[test]
fn bad_config_and_unknown_plugin_kind() {
    let d = tempfile::tempdir().unwrap();
    let cfg = d.path().join("bad.toml");
    std::fs::write(&cfg, "[recall]\nbudget = 5\n").unwrap();
    let e = err(&mnemo(d.path(), &["--config", cfg.to_str().unwrap(), "recall", "x"]));
    assert!(e.contains("bad.toml") && e.contains("budget"), "{e}");
    std::fs::write(&cfg, "[index]\nkind = \"faiss\"\n").unwrap();
    let e = err(&mnemo(d.path(), &["--config", cfg.to_str().unwrap(), "recall", "x"]));
    assert!(e.contains("faiss") && e.contains("brute") && e.contains("tantivy"), "{e}");
    std::fs::write(&cfg, "[store]\nkind = \"sqlite\"\npath = \"../escape.db\"\n").unwrap();
    let e = err(&mnemo(d.path(), &["--config", cfg.to_str().unwrap(), "recall", "x"]));
    assert!(e.contains("..") && e.contains("bad.toml"), "{e}");
}

#[test]
fn forget_is_precise_and_decay_sweeps() {
    let d = tempfile::tempdir().unwrap();
    let at = |t: &str| ["--at".to_string(), t.to_string()];
    let t0 = at("2026-07-01T09:00:00Z");
    ok_stdout(&mnemo(
        d.path(),
        &[
            &t0[0],
            &t0[1],
            "remember",
            "[SEM] Ben | phone | 555-0100\n[SEM] Ben | email | ben@example.com\n[EPI] Standup moved to Friday.",
        ],
    ));
    let out = ok_stdout(&mnemo(d.path(), &["forget", "Ben | phone"]));
    assert!(out.contains("forgotten"), "{out}");
    let p = recall_json(d.path(), "Ben phone email");
    let contents: Vec<&str> =
        p["items"].as_array().unwrap().iter().map(|i| i["memory"]["content"].as_str().unwrap()).collect();
    assert!(contents.contains(&"Ben | email | ben@example.com"));
    assert!(!contents.iter().any(|c| c.contains("555-0100")));
    // 60 days later the episode (importance 0.5) has faded below 0.08
    let t1 = at("2026-08-30T09:00:00Z");
    let out = ok_stdout(&mnemo(d.path(), &[&t1[0], &t1[1], "decay"]));
    assert!(out.contains("1 decayed"), "{out}");
}

#[test]
fn demo_runs_offline_and_decides() {
    let d = tempfile::tempdir().unwrap();
    let out =
        ok_stdout(&Command::new(env!("CARGO_BIN_EXE_mnemo")).args(["demo", "--dir"]).arg(d.path()).output().unwrap());
    assert!(out.contains("client: fake"), "{out}");
    assert!(out.contains("plan by fake-qwen (checked against the pack: faithful)"), "{out}");
    assert!(out.contains("uses: memory m9 = \"35 days\""), "the plan cites the re-grounded value: {out}");
    assert!(out.contains("ESCALATE") && out.contains("escalation e1 opened"), "{out}");
    assert!(out.contains("uses: memory m10 = \"Carla\""), "the human's answer is acted on: {out}");
    assert!(out.contains("sources [human:ops-lead]"), "why shows the human source: {out}");
    assert!(out.contains("grounding: memory"), "{out}");
}

/// The reproduction, end to end: a quoted clinic CSV with a fourth column, named by a
/// config file in another directory (path relative to that file); `recall` without `--about`
/// grounds and grades; `--exit-code` marks ESCALATE.
#[test]
fn every_recall_is_grounded_and_graded() {
    let d = tempfile::tempdir().unwrap();
    let conf = tempfile::tempdir().unwrap();
    std::fs::write(
        conf.path().join("clinic.csv"),
        "entity,attribute,value,as_of\n\"Maria Lopez\",\"metformin dose\",\"500 mg twice daily\",2026-03-08\n",
    )
    .unwrap();
    let cfg = conf.path().join("clinic.toml");
    std::fs::write(&cfg, "[[grounders]]\nkind = \"csv\"\nsource = \"clinic\"\npath = \"clinic.csv\"\n").unwrap();
    let c = cfg.to_str().unwrap();
    ok_stdout(&mnemo(
        d.path(),
        &[
            "--config",
            c,
            "--at",
            "2026-01-05T09:00:00Z",
            "remember",
            "[SEM] Maria Lopez | metformin dose | 250 mg once daily",
        ],
    ));
    let t: serde_json::Value = serde_json::from_str(&ok_stdout(&mnemo(
        d.path(),
        &["--config", c, "--at", "2026-03-10T09:00:00Z", "recall", "metformin dose of Maria Lopez", "--json", "--full"],
    )))
    .unwrap();
    assert_eq!(t["verdict"]["decision"], "act", "{t}");
    assert_eq!(t["verdict"]["act_on"][0]["value"], "500 mg twice daily", "{t}");
    assert_eq!(t["assessment"]["lookups"][0]["source"], "clinic");
    assert_eq!(t["assessment"]["lookups"][0]["outcome"], "held");
    assert_eq!(t["assessment"]["substitutions"][0]["new_value"], "500 mg twice daily");
    // the grounder's value went into memory alone, not with the as_of column glued on
    let fresh = t["assessment"]["substitutions"][0]["fresh"].as_str().unwrap().to_string();
    let why: serde_json::Value =
        serde_json::from_str(&ok_stdout(&mnemo(d.path(), &["--config", c, "why", &fresh, "--json"]))).unwrap();
    assert_eq!(why["memory"]["claim"]["value"], "500 mg twice daily", "{why}");

    let o = mnemo(
        d.path(),
        &[
            "--config",
            c,
            "--at",
            "2026-03-10T09:00:00Z",
            "recall",
            "Zeta owner",
            "--about",
            "Zeta | owner",
            "--json",
            "--exit-code",
        ],
    );
    assert_eq!(o.status.code(), Some(3), "{}", String::from_utf8_lossy(&o.stderr));
    let t: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // The default JSON is the agent view: the decision and its reasons.
    assert_eq!(t["decision"]["decision"], "escalate", "{t}");
    assert!(t["decision"]["reasons"].as_array().unwrap().iter().any(|r| r.as_str().unwrap().contains("Zeta")), "{t}");
    let raw: serde_json::Value =
        serde_json::from_str(&ok_stdout(&mnemo(d.path(), &["--config", c, "recall", "metformin", "--raw", "--json"])))
            .unwrap();
    assert!(raw["memories"].is_array() && raw["decision"].is_null(), "raw: no decision: {raw}");
}

#[test]
fn version_names_the_commit_the_binary_was_built_from_wherever_it_runs() {
    // Run from a directory outside any checkout: the commit is the build's, not the cwd's.
    let d = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mnemo")).arg("--version").current_dir(d.path()).output().unwrap();
    let version = ok_stdout(&out);
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match head {
        // Built in this checkout at its HEAD (cargo builds again when HEAD moves).
        Some(h) => assert!(version.contains(&format!("(commit {h}")), "{version} does not name {h}"),
        None => assert!(version.contains("(commit unknown)"), "{version}"),
    }
}
