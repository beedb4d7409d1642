//! The `mcp` grounder against `mnemo-records-mcp`, a small MCP server over a CSV ledger: the
//! grounder conformance suite, the read-only contract (only the configured tool is ever
//! called), faults that leave a claim unverified, and a stale memory caught end to end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mnemo_agent::{Config, Runtime};
use mnemo_contract::conformance::grounder;
use mnemo_contract::{Grounder, Namespace, SimClock, Task, Timestamp};
use mnemo_core::engine::RecallOptions;
use mnemo_mcp::{McpCommand, McpGrounder, McpMapping};
// The default config's kinds (store, index, fake model).
use mnemo_grounders as _;
use mnemo_llm as _;
use mnemo_store as _;

const SERVER: &str = env!("CARGO_BIN_EXE_mnemo-records-mcp");

fn ledger(dir: &Path, rows: &[(&str, &str, &str)]) -> PathBuf {
    let mut text = String::from("entity,attribute,value,as_of\n");
    for (e, a, v) in rows {
        text.push_str(&format!("\"{e}\",\"{a}\",\"{v}\",2026-07-03\n"));
    }
    let p = dir.join("ledger.csv");
    std::fs::write(&p, text).unwrap();
    p
}

fn grounder_for(dir: &Path, tool: &str, extra: &[&str], timeout_ms: u64) -> McpGrounder {
    let mut args = vec!["--csv".to_string(), "ledger.csv".into(), "--call-log".into(), "calls.txt".into()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let command = McpCommand { program: SERVER.into(), args, cwd: dir.to_path_buf() };
    let serde_json::Value::Object(arguments) = serde_json::json!({"entity": "{entity}", "attribute": "{attribute}"})
    else {
        unreachable!()
    };
    let mapping = McpMapping { tool: tool.into(), arguments, value: "/value".into(), as_of: Some("/as_of".into()) };
    McpGrounder::new("ledger", command, mapping, Duration::from_millis(timeout_ms)).unwrap()
}

fn calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("calls.txt")).unwrap_or_default().lines().map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conforms_and_only_ever_calls_its_one_tool() {
    let d = tempfile::tempdir().unwrap();
    let csv = ledger(d.path(), grounder::ROWS);
    let before = std::fs::read(&csv).unwrap();
    let g = Arc::new(grounder_for(d.path(), "get_record", &[], 20_000));
    grounder::run_all(g.clone()).await;
    let v = g.lookup("IC-MC-44 from S-208", "lead time").await.unwrap().unwrap();
    assert_eq!(v.source, "ledger");
    assert_eq!(v.as_of, Some(Timestamp::parse_rfc3339("2026-07-03T00:00:00Z").unwrap()));
    // The server also offers `set_record` (a write): it is never called, the ledger unchanged.
    let seen = calls(d.path());
    assert!(seen.len() >= 8, "{seen:?}");
    assert!(seen.iter().all(|c| c == "get_record"), "only the configured tool is called: {seen:?}");
    assert_eq!(std::fs::read(&csv).unwrap(), before);
    // The ledger is read on every call: an edit shows at once.
    ledger(d.path(), &[("IC-MC-44 from S-208", "lead time", "42 days")]);
    assert_eq!(g.lookup("IC-MC-44 from S-208", "lead time").await.unwrap().unwrap().value, "42 days");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destructive_or_missing_tool_is_refused_without_calling_it() {
    let d = tempfile::tempdir().unwrap();
    let csv = ledger(d.path(), grounder::ROWS);
    let before = std::fs::read(&csv).unwrap();
    let e = grounder_for(d.path(), "set_record", &[], 20_000).lookup("Northwind Labs", "owner").await.unwrap_err();
    assert!(e.to_string().contains("destructive"), "{e}");
    let e = grounder_for(d.path(), "drop_everything", &[], 20_000).lookup("Northwind Labs", "owner").await.unwrap_err();
    assert!(e.to_string().contains("offers no tool") && e.to_string().contains("get_record"), "{e}");
    assert!(calls(d.path()).is_empty(), "no tool was called at all");
    assert_eq!(std::fs::read(&csv).unwrap(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_are_errors_and_a_dead_server_is_started_again() {
    let d = tempfile::tempdir().unwrap();
    ledger(d.path(), grounder::ROWS);
    let g = grounder_for(d.path(), "get_record", &["--faults"], 3_000);
    let owner = || async { g.lookup("Northwind Labs", "owner").await.unwrap().unwrap().value };
    assert_eq!(owner().await, "Ben");
    for (entity, says) in [
        ("error", "the ledger is locked"),
        ("garbage", "not JSON"),
        ("object", "not a value"),
        ("slow", "no answer within 3000 ms"),
        ("crash", "failed"),
    ] {
        let e = g.lookup(entity, "x").await.expect_err(entity).to_string();
        assert!(e.contains("ledger") && e.contains(says), "{entity}: {e}");
    }
    // The crash took the server down: the next lookup starts a new one.
    assert_eq!(owner().await, "Ben");
    // A server that cannot start is an error too, not a panic.
    let command = McpCommand { program: d.path().join("no-such-server"), args: vec![], cwd: d.path().into() };
    let mapping = McpMapping {
        tool: "get_record".into(),
        arguments: serde_json::Map::new(),
        value: "/value".into(),
        as_of: None,
    };
    let g = McpGrounder::new("ledger", command, mapping, Duration::from_secs(5)).unwrap();
    assert!(g.lookup("a", "b").await.unwrap_err().to_string().contains("cannot start"));
}

/// Memory says 21 days; the ledger behind the MCP server says 35: the assessor substitutes the
/// fresh value and writes the correction back, as with any grounder. Configured through
/// `[[grounders]] kind = "mcp"` (the registry's factory), paths relative to the config file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_grounder_catches_a_stale_value() {
    let d = tempfile::tempdir().unwrap();
    let conf_dir = d.path().join("conf");
    std::fs::create_dir(&conf_dir).unwrap();
    ledger(&conf_dir, &[("IC-MC-44 from S-208", "lead time", "35 days")]);
    let cfg = conf_dir.join("mnemo.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[[grounders]]
kind = "mcp"
source = "ledger"
command = "{SERVER}"
args = ["--csv", "ledger.csv", "--call-log", "calls.txt"]
tool = "get_record"
arguments = {{ entity = "{{entity}}", attribute = "{{attribute}}" }}
value = "/value"
as_of = "/as_of"
timeout_ms = 20000
"#
        ),
    )
    .unwrap();
    let config = Config::load(&[cfg]).unwrap();
    let t0 = Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap();
    let clock = Arc::new(SimClock::new(t0));
    let rt = Runtime::build(&config, &d.path().join("data"), clock.clone(), vec![]).await.unwrap();
    assert_eq!(rt.grounders().iter().map(|g| g.source()).collect::<Vec<_>>(), ["ledger"]);
    let ns = Namespace::new("supply-chain").unwrap();
    rt.engine().remember(&ns, "buyer", "[SEM] IC-MC-44 from S-208 | lead time | 21 days").await.unwrap();
    clock.set(t0.plus_millis(20 * mnemo_contract::time::DAY_MS));

    let task = Task {
        query: "when will IC-MC-44 from S-208 arrive".into(),
        about: Some(("IC-MC-44 from S-208".into(), "lead time".into())),
    };
    let t = rt.turn(&ns, &task, &RecallOptions::default()).await.unwrap();
    let s = &t.assessment.substitutions;
    assert_eq!(s.len(), 1, "{:?}", t.assessment);
    assert_eq!(
        (s[0].old_value.as_str(), s[0].new_value.as_str(), s[0].source.as_str()),
        ("21 days", "35 days", "ledger")
    );
    let contents: Vec<&str> = t.assessment.pack.items.iter().map(|i| i.memory.content.as_str()).collect();
    assert!(contents.iter().any(|c| c.contains("35 days")), "{contents:?}");
    assert!(!contents.iter().any(|c| c.contains("21 days")), "the stale value is gone: {contents:?}");
    // The correction was written back: the store's active memory now says 35 days.
    let active = rt.engine().all_memories(&ns).await.unwrap();
    assert!(active.iter().any(|m| m.status.is_active() && m.content.contains("35 days")));
    assert!(calls(&conf_dir).iter().all(|c| c == "get_record"));
}
