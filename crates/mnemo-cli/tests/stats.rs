//! `mnemo stats`: what the data directory holds, over every namespace, as a table and as JSON.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;

use serde_json::Value;

mod cli_run;
use cli_run::{json, mnemo, ok};

fn stats(dir: &Path) -> Value {
    json(dir, &["stats", "--json"])
}

/// (active, tombstoned) of `kind` in a `stats --json`.
fn kind(v: &Value, kind: &str) -> (u64, u64) {
    let k = v["memories"].as_array().unwrap().iter().find(|k| k["kind"] == kind).unwrap_or_else(|| panic!("{v}"));
    (k["active"].as_u64().unwrap(), k["tombstoned"].as_u64().unwrap())
}

#[test]
fn stats_count_memories_by_kind_over_every_namespace() {
    let d = tempfile::tempdir().unwrap();
    let empty = stats(d.path());
    assert_eq!((kind(&empty, "semantic"), empty["store_rev"].as_u64()), ((0, 0), Some(0)), "{empty}");

    ok(&mnemo(d.path(), &["remember", "[SEM] Northwind Labs | owner | Ben"]));
    ok(&mnemo(d.path(), &["remember", "[SEM] Northwind Labs | owner | Carla\n[PROC] Order parts every Monday"]));
    ok(&mnemo(d.path(), &["-n", "clinic", "remember", "[EPI] Maria came in on Tuesday"]));
    // Nothing is known of who approves for Contoso: the recall escalates, and the escalation is open.
    let o = mnemo(d.path(), &["recall", "who approves orders for Contoso", "--about", "Contoso | approver", "--json"]);
    let recall: Value = serde_json::from_str(&String::from_utf8_lossy(&o.stdout)).unwrap();
    let open: Value =
        serde_json::from_str(&ok(&mnemo(d.path(), &["escalations", "--open", "--json"])).0).unwrap_or(Value::Null);
    let open = open.as_array().or_else(|| open["escalations"].as_array()).map_or(0, Vec::len) as u64;

    let v = stats(d.path());
    assert_eq!(kind(&v, "semantic"), (1, 1), "Carla superseded Ben: {v}");
    assert_eq!(kind(&v, "procedural"), (1, 0));
    assert_eq!(kind(&v, "episodic"), (1, 0), "the other namespace is counted too");
    assert_eq!(v["namespaces"], 2);
    assert!(v["store_rev"].as_u64().unwrap() >= 4, "{v}");
    assert_eq!(v["index_lag"], 0, "{v}");
    assert_eq!(v["index_rev"], v["store_rev"]);
    assert_eq!((open, v["escalations_open"].as_u64()), (1, Some(1)), "as `escalations --open` lists them: {recall}");
    assert!(v["data_dir_bytes"].as_u64().unwrap() > 0);
    assert!(v["index_at_open"].is_object(), "{v}");

    let (table, _) = ok(&mnemo(d.path(), &["stats"]));
    for line in ["semantic", "procedural", "episodic", "namespaces", "store revision", "escalations open"] {
        assert!(table.contains(line), "{line}: {table}");
    }
    assert!(table.lines().any(|l| l.starts_with("semantic") && l.split_whitespace().eq(["semantic", "1", "1"])));
    assert!(table.contains("lag 0"), "{table}");
}

#[test]
fn stats_help_says_what_it_shows() {
    let d = tempfile::tempdir().unwrap();
    let (help, _) = ok(&mnemo(d.path(), &["stats", "--help"]));
    for words in ["memories by kind", "lag", "escalations", "GET /metrics", "--json"] {
        assert!(help.contains(words), "{words}: {help}");
    }
}
