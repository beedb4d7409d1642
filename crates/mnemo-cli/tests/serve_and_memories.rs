//! `mnemo list | export | restore` and `mnemo serve` as separate processes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::io::{BufRead as _, Read as _, Write as _};
use std::path::Path;
use std::process::{Command, Output, Stdio};

mod cli_run;
use cli_run::{command, ok_stdout};

/// `mnemo --data-dir DIR -q`, to be given its arguments.
fn mnemo(dir: &Path) -> Command {
    let mut c = command(dir);
    c.arg("-q");
    c
}

fn run(dir: &Path, args: &[&str]) -> Output {
    mnemo(dir).args(args).output().unwrap()
}

#[test]
fn list_export_and_restore_on_the_command_line() {
    let d = tempfile::tempdir().unwrap();
    ok_stdout(&run(d.path(), &["remember", "[SEM] Acme | owner | Ben"]));
    ok_stdout(&run(d.path(), &["remember", "[SEM] Acme | site | Lyon"]));
    ok_stdout(&run(d.path(), &["forget", "Acme | owner"]));
    let page: serde_json::Value = serde_json::from_str(&ok_stdout(&run(d.path(), &["list", "--json"]))).unwrap();
    assert_eq!(page["memories"].as_array().unwrap().len(), 1, "active only: {page}");
    let all: serde_json::Value =
        serde_json::from_str(&ok_stdout(&run(d.path(), &["list", "--all", "--json"]))).unwrap();
    assert_eq!(all["memories"].as_array().unwrap().len(), 2);
    let lines = ok_stdout(&run(d.path(), &["export", "--all"]));
    assert_eq!(lines.lines().count(), 2);
    assert!(lines.lines().all(|l| serde_json::from_str::<serde_json::Value>(l).unwrap().get("embedding").is_none()));

    // Ids are per namespace and opaque: take them from the listing (oldest first).
    let ids: Vec<String> =
        all["memories"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_string()).collect();
    let (owner, site) = (ids[0].as_str(), ids[1].as_str());
    assert_ne!(page["memories"][0]["id"], owner, "the owner fact is the forgotten one");
    assert_eq!(ids, ["m1", "m2"], "a namespace's memories are m1, m2, …");
    let r: serde_json::Value = serde_json::from_str(&ok_stdout(&run(d.path(), &["restore", owner, "--json"]))).unwrap();
    assert_eq!(r["from"], owner);
    assert_eq!(r["restored"]["provenance"]["model"], format!("restored from memory {owner}"));
    let again = run(d.path(), &["restore", owner]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds"));
    let active = run(d.path(), &["restore", site]);
    assert!(String::from_utf8_lossy(&active.stderr).contains("is active"), "{active:?}");
}

/// One HTTP/1.1 request over a plain socket; (status, body).
fn http(addr: &str, method: &str, path: &str, token: Option<&str>, body: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default())
}

#[test]
fn serve_answers_on_loopback_and_stops_gracefully_on_sigterm() {
    let d = tempfile::tempdir().unwrap();
    let config = d.path().join("serve.toml");
    std::fs::write(
        &config,
        "[[serve.tokens]]\nprincipal = \"ops\"\ntoken_env = \"TEST_SERVE_TOKEN\"\nnamespaces = [\"default\"]\n",
    )
    .unwrap();
    // No token configured: refused before anything listens.
    let none = run(d.path(), &["serve", "--addr", "127.0.0.1:0"]);
    assert!(String::from_utf8_lossy(&none.stderr).contains("no [[serve.tokens]]"), "{none:?}");

    let data = d.path().join("data");
    let mut child = mnemo(&data)
        .arg("--config")
        .arg(&config)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env("TEST_SERVE_TOKEN", "a-test-token-0123456789")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let l = lines.next().unwrap().unwrap();
        if let Some(rest) = l.strip_prefix("mnemo: listening on http://") {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    assert_eq!(http(&addr, "GET", "/health", None, "").0, 200);
    let (st, body) = http(&addr, "POST", "/v1/namespaces/default/remember", None, r#"{"text": "[SEM] X | y | z"}"#);
    assert_eq!(st, 401, "{body}");
    let (st, body) = http(
        &addr,
        "POST",
        "/v1/namespaces/default/remember",
        Some("a-test-token-0123456789"),
        r#"{"text": "[SEM] Acme | owner | Ben"}"#,
    );
    assert_eq!(st, 200, "{body}");
    // The response says what became of each turn (structured, not only in notes): prose kept
    // offline as an episode, a replayed idempotency key, a turn nothing was extracted from.
    let token = Some("a-test-token-0123456789");
    let path = "/v1/namespaces/default/remember";
    let status_of = |body: &str| -> serde_json::Value {
        let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
        v["report"]["status"].clone()
    };
    let prose = r#"{"text": "The user said their favourite colour is teal.", "idempotency_key": "k1"}"#;
    let (st, body) = http(&addr, "POST", path, token, prose);
    assert_eq!((st, status_of(&body)), (200, serde_json::json!("extracted")), "{body}");
    let (st, body) = http(&addr, "POST", path, token, prose);
    assert_eq!((st, status_of(&body)), (200, serde_json::json!("already_recorded")), "{body}");
    let other = r#"{"text": "The user said their favourite colour is red.", "idempotency_key": "k1"}"#;
    let (st, body) = http(&addr, "POST", path, token, other);
    assert_eq!(st, 409, "the same key with another text: {body}");
    assert!(body.contains("\"conflict\"") && body.contains("another text"), "{body}");
    let (st, body) = http(&addr, "POST", path, token, r#"{"text": "[NOPE] nothing the fake can read"}"#);
    assert_eq!((st, status_of(&body)), (200, serde_json::json!("nothing_extracted")), "{body}");
    // Another process cannot write the directory meanwhile: the server is its one writer.
    let busy = mnemo(&data)
        .args(["remember", "[SEM] Acme | site | Lyon"])
        .env("MNEMO_LOCK_TIMEOUT_SECS", "0")
        .output()
        .unwrap();
    assert!(!busy.status.success(), "the lock is held by the server");
    assert!(String::from_utf8_lossy(&busy.stderr).contains("lock"), "{busy:?}");
    // But reads do not wait for it: they read beside the server (the store read-only) and see
    // what it acknowledged, even with the default 30 s wait for the lock.
    for args in [&["recall", "who owns Acme", "--json"][..], &["list"], &["export"], &["why", "1"]] {
        let o = mnemo(&data).args(args).env_remove("MNEMO_LOCK_TIMEOUT_SECS").output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("waiting for the data directory lock"), "{args:?} waited: {err}");
        // The server's index on disk is searched, caught up with the store in memory: no
        // reader builds a whole index of its own.
        assert!(!err.contains("built in memory"), "{args:?}: {err}");
        if args[0] != "why" {
            assert!(o.status.success(), "{args:?}: {err}");
            assert!(String::from_utf8_lossy(&o.stdout).contains("Acme"), "{args:?} sees the server's write: {o:?}");
        }
    }
    let backup = d.path().join("beside.bak");
    ok_stdout(&mnemo(&data).args(["backup", "create"]).arg(&backup).output().unwrap());
    assert!(backup.exists());

    let term = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(term.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "graceful stop exits 0, got {status}");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(rest.iter().any(|l| l.contains("stopped")), "{rest:?}");
    let listed = ok_stdout(&run(&data, &["list"]));
    assert!(listed.contains("Acme | owner | Ben"), "the acknowledged write is there: {listed}");
}
