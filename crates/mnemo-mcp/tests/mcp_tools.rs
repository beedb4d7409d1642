//! The `list`, `turn` and escalation tools of the MCP server, driven in-process by rmcp's client
//! over an in-memory pipe: they are listed with their schemas and annotations, `list` pages
//! through a namespace and refuses a bad page as a tool error, `turn` remembers and answers (with
//! the checked plan, or the escalation), and an escalation is answered or dismissed as a human
//! would, the same turn then acting on the answer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RunningService, ServiceError};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

use mnemo_agent::{Config, Runtime};
use mnemo_contract::{Namespace, SimClock, Timestamp};
use mnemo_mcp::MnemoMcp;
// The default config's kinds (store, index, fake model).
use mnemo_grounders as _;
use mnemo_llm as _;
use mnemo_store as _;

/// A client connected to a server over `dir`, bound to namespace `alice`.
async fn connect(dir: &std::path::Path) -> RunningService<RoleClient, ()> {
    connect_with(dir, Config::embedded_default().unwrap()).await
}

/// [`connect`] under `config`.
async fn connect_with(dir: &std::path::Path, config: Config) -> RunningService<RoleClient, ()> {
    let clock = Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap()));
    let rt = Runtime::build(&config, dir, clock, vec![]).await.unwrap();
    let server = MnemoMcp::new(Arc::new(rt), Namespace::new("alice").unwrap());
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = server.serve(server_io).await.unwrap();
        let _ = running.waiting().await;
    });
    ().serve(client_io).await.unwrap()
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    args: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(args) = args else { panic!("arguments must be an object") };
    client.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args)).await
}

/// A successful call: its text (what a model reads) and its structured content.
async fn ok(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> (String, Value) {
    let r = call(client, tool, args.clone()).await.unwrap_or_else(|e| panic!("{tool} {args}: {e}"));
    assert_ne!(r.is_error, Some(true), "{tool} {args}: {r:?}");
    let structured = r.structured_content.clone().unwrap_or_else(|| panic!("{tool}: no structured content"));
    (text_of(&r), structured)
}

/// A call refused as a tool error (not a JSON-RPC error) whose text says `says`.
async fn tool_error(client: &RunningService<RoleClient, ()>, tool: &str, args: Value, says: &str) {
    let r = call(client, tool, args.clone()).await.unwrap_or_else(|e| panic!("{tool} {args}: a protocol error: {e}"));
    assert_eq!(r.is_error, Some(true), "{tool} {args}: {r:?}");
    assert!(text_of(&r).contains(says), "{tool} {args}: {:?} does not say {says:?}", text_of(&r));
}

fn text_of(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

fn has_key(v: &Value, key: &str) -> bool {
    match v {
        Value::Object(m) => m.contains_key(key) || m.values().any(|x| has_key(x, key)),
        Value::Array(a) => a.iter().any(|x| has_key(x, key)),
        _ => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_and_turn_are_listed_with_their_schemas_and_annotations() {
    let d = tempfile::tempdir().unwrap();
    let client = connect(d.path()).await;
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    // No `erase`: it is offered only with `[mcp] erase = true`.
    assert_eq!(
        names,
        ["answer", "dismiss", "escalations", "forget", "history", "list", "recall", "remember", "turn", "why"]
    );
    let tool = |name: &str| tools.iter().find(|t| t.name == name).unwrap();

    let list = tool("list");
    let input = Value::Object((*list.input_schema).clone());
    for arg in ["after", "limit", "include_tombstoned", "namespace"] {
        assert!(input["properties"][arg].is_object(), "list takes {arg}: {input}");
    }
    assert!(input.get("required").is_none_or(|r| r.as_array().unwrap().is_empty()), "all optional: {input}");
    let a = list.annotations.as_ref().expect("list is annotated");
    assert_eq!((a.read_only_hint, a.open_world_hint), (Some(true), Some(false)));
    assert!(list.output_schema.is_some(), "list declares its output");

    let turn = tool("turn");
    let input = Value::Object((*turn.input_schema).clone());
    for arg in ["text", "about", "budget", "source", "detail", "namespace"] {
        assert!(input["properties"][arg].is_object(), "turn takes {arg}: {input}");
    }
    assert!(input["properties"].get("message").is_none(), "`text`, as remember names it: {input}");
    assert_eq!(input["required"], json!(["text"]), "{input}");
    assert_ne!(turn.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true), "turn writes");
    let output = Value::Object((*turn.output_schema.clone().expect("turn declares its output")).clone());
    assert!(output["anyOf"][0]["properties"]["recall"]["properties"]["memories"].is_object(), "{output}");
    assert!(output["anyOf"][0]["properties"]["recall"]["properties"]["plan"].is_object(), "{output}");
    assert!(output["anyOf"][0]["properties"]["recall"]["properties"]["escalation"].is_object(), "{output}");

    let escalations = tool("escalations");
    let input = Value::Object((*escalations.input_schema).clone());
    assert!(input["properties"]["open_only"].is_object(), "{input}");
    let a = escalations.annotations.as_ref().expect("escalations is annotated");
    assert_eq!((a.read_only_hint, a.open_world_hint), (Some(true), Some(false)));
    for (name, required) in [("answer", json!(["id", "text"])), ("dismiss", json!(["id"]))] {
        let t = tool(name);
        let input = Value::Object((*t.input_schema).clone());
        assert_eq!(input["required"], required, "{name}: {input}");
        assert!(input["properties"]["by"].is_object() && input["properties"]["namespace"].is_object(), "{input}");
        let a = t.annotations.as_ref().unwrap_or_else(|| panic!("{name} is annotated"));
        assert_eq!(a.read_only_hint, Some(false), "{name} writes");
        assert!(t.output_schema.is_some(), "{name} declares its output");
    }
    assert_eq!(tool("dismiss").annotations.as_ref().unwrap().destructive_hint, Some(true));
    client.cancel().await.unwrap();
}

/// A turn escalates (memory holds no approver); the model reads the escalation's id, lists it,
/// records the user's answer (the value alone) with `answer`; the same turn then acts on the
/// human's value, planned and checked. Mistakes are tool errors; a dismissal records nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escalation_is_answered_through_the_tools_and_the_same_turn_then_acts() {
    let d = tempfile::tempdir().unwrap();
    let client = connect(d.path()).await;
    ok(&client, "remember", json!({"text": "[SEM] Northwind Labs | owner | Ben", "source": "crm"})).await;
    let ask = json!({"text": "Who signs off purchase orders at Northwind Labs?", "about": "Northwind Labs | approver"});

    let (text, t) = ok(&client, "turn", ask.clone()).await;
    assert_eq!(t["recall"]["decision"]["decision"], "escalate", "{t}");
    assert_eq!(t["recall"]["escalation"]["id"], "e1", "{t}");
    assert!(t["recall"]["plan"].is_null(), "{t}");
    assert!(text.contains("e1"), "the text names the escalation: {text}");

    let (text, v) = ok(&client, "escalations", json!({})).await;
    let open = v["escalations"].as_array().unwrap();
    assert_eq!(open.len(), 1, "{v}");
    assert_eq!((open[0]["id"].as_str(), open[0]["status"].as_str()), (Some("e1"), Some("open")));
    let pack = open[0]["pack"].as_array().unwrap();
    assert!(!pack.is_empty() && pack.iter().all(|m| m.as_str().is_some_and(|m| m.starts_with('m'))), "short ids: {v}");
    assert!(text.contains("e1 open") && text.contains("answer {id: \"e1\""), "{text}");

    for (tool, args, says) in [
        ("answer", json!({"id": "m1", "text": "Carla"}), "not an escalation id"),
        ("answer", json!({"id": 0, "text": "Carla"}), "not an escalation id"),
        ("answer", json!({"id": "e9", "text": "Carla"}), "no escalation e9"),
        ("answer", json!({"id": "e1", "text": "  "}), "answer text must not be empty"),
        ("answer", json!({"id": "e1", "text": "Carla", "by": "ceo"}), "names someone else"),
        ("dismiss", json!({"id": "x"}), "not an escalation id"),
    ] {
        tool_error(&client, tool, args, says).await;
    }

    // The user's answer, the value alone, as the operator (by defaults to "user"); the id as a number.
    let (text, a) = ok(&client, "answer", json!({"id": 1, "text": "Carla"})).await;
    assert_eq!(a["escalation"]["status"], "answered", "{a}");
    assert_eq!(a["escalation"]["answer"]["by"], "human:user", "{a}");
    assert_eq!(a["escalation"]["answer"]["recorded"], "[SEM] Northwind Labs | approver | Carla", "{a}");
    assert_eq!(a["remembered"]["turn"]["source"], "human:user", "{a}");
    assert!(text.contains("answered by human:user") && text.contains("acts on it"), "{text}");
    tool_error(&client, "answer", json!({"id": "e1", "text": "Dana"}), "already answered by human:user").await;
    let (_, v) = ok(&client, "escalations", json!({})).await;
    assert_eq!(v["escalations"], json!([]), "{v}");

    // The same turn acts on the human's value.
    let (_, t) = ok(&client, "turn", ask).await;
    let recall = &t["recall"];
    assert_eq!(recall["decision"]["decision"], "act", "{t}");
    assert_eq!(recall["decision"]["act_on"][0]["value"], "Carla", "{t}");
    assert_eq!(recall["plan"]["faithful"], true, "{t}");
    let id = recall["decision"]["act_on"][0]["memory"].clone();
    let (_, w) = ok(&client, "why", json!({"id": id})).await;
    assert_eq!(w["memory"]["sources"], json!(["human:user"]), "{w}");

    // Dismissed: nothing recorded; listed with `open_only: false`.
    let (_, t) = ok(&client, "turn", json!({"text": "Who buys for Contoso?", "about": "Contoso | buyer"})).await;
    assert_eq!(t["recall"]["escalation"]["id"], "e2", "{t}");
    let (_, before) = ok(&client, "list", json!({"include_tombstoned": true, "limit": 100})).await;
    let (text, e) = ok(&client, "dismiss", json!({"id": "e2", "by": "user"})).await;
    assert_eq!((e["status"].as_str(), e["dismissal"]["by"].as_str()), (Some("dismissed"), Some("human:user")), "{e}");
    assert!(text.contains("nothing was recorded"), "{text}");
    let (_, after) = ok(&client, "list", json!({"include_tombstoned": true, "limit": 100})).await;
    assert_eq!(before, after, "a dismissal records nothing");
    tool_error(&client, "dismiss", json!({"id": "e2"}), "dismissed by human:user").await;
    let (_, v) = ok(&client, "escalations", json!({"open_only": false})).await;
    let statuses: Vec<&str> =
        v["escalations"].as_array().unwrap().iter().map(|e| e["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["answered", "dismissed"], "{v}");
    // Another namespace is refused, as on every tool.
    assert!(call(&client, "escalations", json!({"namespace": "bob"})).await.is_err());
    assert!(call(&client, "answer", json!({"id": "e1", "text": "x", "namespace": "bob"})).await.is_err());
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_pages_through_the_namespace_and_refuses_a_bad_page_as_a_tool_error() {
    let d = tempfile::tempdir().unwrap();
    let client = connect(d.path()).await;
    let turn: Vec<String> = (0..5).map(|i| format!("[SEM] Item {i} | colour | blue")).collect();
    ok(&client, "remember", json!({"text": turn.join("\n")})).await;
    ok(&client, "remember", json!({"text": "[SEM] Item 0 | colour | red"})).await;

    // Default: active memories only, a page of 20.
    let (text, page) = ok(&client, "list", json!({})).await;
    let all = page["memories"].as_array().unwrap();
    assert_eq!(all.len(), 5, "{page}");
    assert_eq!(page["next_after"], Value::Null, "{page}");
    assert!(!has_key(&page, "vector"), "no embedding vectors: {page}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + 5, "a header and one line per memory: {text}");
    assert!(lines[0].contains("5 memories") && lines[0].contains("last page"), "{text}");
    assert!(text.contains("[semantic] Item 0 | colour | red") && !text.contains("Item 0 | colour | blue"), "{text}");

    // Pages of 2, `after` as the number or as a string, until the last page.
    let mut seen = Vec::new();
    let mut after = Value::Null;
    let mut pages = 0;
    loop {
        let mut args = json!({"limit": 2, "include_tombstoned": true});
        if let Some(short) = after.as_str() {
            // As list shows it (`m42`), or its number.
            args["after"] = if pages % 2 == 0 { json!(short) } else { json!(short[1..].parse::<i64>().unwrap()) };
        }
        let (text, page) = ok(&client, "list", args).await;
        pages += 1;
        let memories = page["memories"].as_array().unwrap();
        assert!(memories.len() <= 2, "{page}");
        seen.extend(memories.iter().map(|m| m["id"].clone()));
        after = page["next_after"].clone();
        if after.is_null() {
            assert!(text.contains("last page"), "{text}");
            break;
        }
        let short = after.as_str().unwrap_or_else(|| panic!("a short id: {page}"));
        assert!(short.starts_with('m'), "{page}");
        assert!(text.contains(&format!("after = {short}")), "the text says how to go on: {text}");
    }
    assert_eq!(seen.len(), 6, "five active and the superseded one: {seen:?}");
    let (text, _) = ok(&client, "list", json!({"include_tombstoned": true})).await;
    let old = text.lines().find(|l| l.contains("Item 0 | colour | blue")).unwrap_or_else(|| panic!("{text}"));
    assert!(old.contains("TOMBSTONED") && old.contains("superseded by"), "{old}");

    for (args, says) in [
        (json!({"limit": 0}), "limit must be 1 to 100, got 0"),
        (json!({"limit": 101}), "limit must be 1 to 100, got 101"),
        (json!({"limit": -3}), "limit must be 1 to 100"),
        (json!({"after": "the first one"}), "not a memory id"),
        (json!({"after": "t1"}), "turn id"),
    ] {
        tool_error(&client, "list", args, says).await;
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turn_remembers_what_was_said_and_answers_from_memory() {
    let d = tempfile::tempdir().unwrap();
    let client = connect(d.path()).await;
    ok(&client, "remember", json!({"text": "[SEM] Acme | site | Lyon"})).await;

    let (text, t) = ok(
        &client,
        "turn",
        json!({"text": "[SEM] Acme | owner | Ben", "about": "Acme | owner", "budget": 256, "source": "crm"}),
    )
    .await;
    assert_eq!(t["remembered"]["status"], "extracted", "{t}");
    assert_eq!(t["remembered"]["outcomes"].as_array().unwrap().len(), 1, "{t}");
    assert!(t["remembered"]["notes"].to_string().contains("not declared"), "the source rule of remember: {t}");
    let recall = &t["recall"];
    assert_eq!(recall["budget"], 256, "{t}");
    assert_eq!(recall["decision"]["decision"], "act", "{t}");
    assert_eq!(recall["decision"]["act_on"][0]["value"], "Ben", "{t}");
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("Remembered: turn ") && first.contains("extracted, 1 outcome (1 inserted)"), "{text}");
    assert!(text.contains("Decision: ") && text.contains("Acme | owner | Ben"), "{text}");
    assert!(!has_key(&t, "vector") && !has_key(&t, "trace"), "compact: {t}");

    // What the turn remembered is there for the next one.
    let (_, page) = ok(&client, "list", json!({})).await;
    assert!(page.to_string().contains("Acme | owner | Ben"), "{page}");

    // The whole turn on request.
    let (_, full) = ok(&client, "turn", json!({"text": "who owns Acme?", "detail": "full"})).await;
    assert!(full["pack"]["trace"].is_array() && full["verdict"]["decision"].is_string(), "{full}");
    assert!(full["remembered"]["turn"].is_object(), "{full}");

    for (args, says) in [
        (json!({"text": "  "}), "text must not be empty"),
        (json!({"text": "who owns Acme", "about": "Acme"}), "entity | attribute"),
        (json!({"text": "who owns Acme", "detail": "huge"}), "compact"),
    ] {
        tool_error(&client, "turn", args, says).await;
    }
    // Another namespace is refused, as on every tool.
    assert!(call(&client, "turn", json!({"text": "x", "namespace": "bob"})).await.is_err());
    assert!(call(&client, "list", json!({"namespace": "bob"})).await.is_err());
    client.cancel().await.unwrap();
}

/// `forget` with `dry_run` previews what it would take and keep, and why, writing nothing; a
/// free-text forget keeps the pinned memory and the one that only mentions the word in a URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_previews_with_dry_run_and_keeps_pinned_and_mentions() {
    let d = tempfile::tempdir().unwrap();
    let client = connect(d.path()).await;
    let text = "[SEM] Northwind Labs | owner | Ben\n[PROC] Order parts at https://northwind.example/orders\n\
                [SEM pin] Ben | role | buyer";
    ok(&client, "remember", json!({"text": text})).await;
    let (text, p) = ok(&client, "forget", json!({"command": "Northwind", "dry_run": true})).await;
    assert_eq!(p["dry_run"], true, "{p}");
    assert_eq!(p["preview"]["forget"][0]["id"], "m1", "{p}");
    assert_eq!(p["preview"]["forget"].as_array().unwrap().len(), 1, "{p}");
    assert_eq!(p["preview"]["kept"][0]["id"], "m2", "{p}");
    assert!(text.contains("only mentioned inside a web address"), "{text}");
    let (_, p) = ok(&client, "forget", json!({"command": "Ben", "dry_run": true})).await;
    assert!(p["preview"]["kept"][0]["why"].as_str().unwrap().starts_with("pinned"), "{p}");
    let (_, page) = ok(&client, "list", json!({})).await;
    assert_eq!(page["memories"].as_array().unwrap().len(), 3, "a dry run writes nothing: {page}");

    let (_, r) = ok(&client, "forget", json!({"command": "Ben"})).await;
    assert_eq!(r["turn"]["id"], "t2", "{r}");
    assert_eq!(r["outcomes"][0]["tombstoned"], json!(["m1"]), "{r}");
    let (_, page) = ok(&client, "list", json!({})).await;
    assert!(page.to_string().contains("Ben | role | buyer"), "the pinned memory stays: {page}");
    client.cancel().await.unwrap();
}

/// `recall` with `as_of` answers what memory held then; `history` lists a claim's values with
/// their times; a bad time or claim is a tool error the model can fix (issue 38).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recall_as_of_and_history() {
    let d = tempfile::tempdir().unwrap();
    let client = connect(d.path()).await;
    ok(&client, "remember", json!({"text": "[SEM] Acme | lead time | 21 days", "at": "2026-05-01"})).await;
    ok(&client, "remember", json!({"text": "[SEM] Acme | lead time | 35 days", "at": "2026-05-21"})).await;
    let (text, v) = ok(&client, "recall", json!({"query": "Acme lead time", "as_of": "2026-05-10"})).await;
    assert_eq!(v["memories"][0]["content"], "Acme | lead time | 21 days", "{v}");
    assert!(text.contains("as of 2026-05-10"), "{text}");
    let (_, v) = ok(&client, "recall", json!({"query": "Acme lead time"})).await;
    assert_eq!(v["memories"][0]["content"], "Acme | lead time | 35 days", "{v}");
    tool_error(&client, "recall", json!({"query": "Acme", "as_of": "soon"}), "as_of").await;
    tool_error(&client, "recall", json!({"query": "Acme", "since": "soon"}), "since").await;
    ok(&client, "remember", json!({"text": "[EPI] Shipped 5 crates to Acme", "at": "2026-05-22"})).await;
    let in_window = json!({"query": "Acme crates shipped", "raw": true, "since": "2026-05-22", "until": "2026-05-23"});
    let (_, v) = ok(&client, "recall", in_window).await;
    assert!(v["memories"].as_array().unwrap().iter().any(|m| m["content"] == "Shipped 5 crates to Acme"), "{v}");
    let (_, v) =
        ok(&client, "recall", json!({"query": "Acme crates shipped", "raw": true, "until": "2026-05-22"})).await;
    assert!(!v["memories"].as_array().unwrap().iter().any(|m| m["content"] == "Shipped 5 crates to Acme"), "{v}");
    let (text, h) = ok(&client, "history", json!({"claim": "Acme | lead time"})).await;
    assert_eq!(h["values"].as_array().unwrap().len(), 2, "{h}");
    assert_eq!(h["values"][0]["ended_at"], "2026-05-21T00:00:00Z", "{h}");
    assert!(text.contains("m1 \"21 days\": true until 2026-05-21; recorded 2026-05-01T00:00:00Z"), "{text}");
    tool_error(&client, "history", json!({"claim": "Acme"}), "history").await;
    // World time: what was true in 2020 is the Lisbon of 2019 to 2021, replaced since.
    ok(&client, "remember", json!({"text": "[SEM from=2019 to=2021] Ben | city | Lisbon", "at": "2026-05-23"})).await;
    ok(&client, "remember", json!({"text": "[SEM from=2022] Ben | city | Porto", "at": "2026-05-24"})).await;
    let (text, v) = ok(&client, "recall", json!({"query": "Ben city", "valid_at": "2020-06-01"})).await;
    assert_eq!(v["memories"][0]["content"], "Ben | city | Lisbon", "{v}");
    assert!(text.contains("valid at 2020-06-01"), "{text}");
    let (_, v) = ok(&client, "recall", json!({"query": "Ben city", "valid_at": "2023-06-01"})).await;
    assert_eq!(v["memories"][0]["content"], "Ben | city | Porto", "{v}");
    tool_error(&client, "recall", json!({"query": "Ben", "valid_at": "later"}), "valid_at").await;
}

/// `erase` is offered only when the config enables it; then a dry run shows what would go, and
/// the erasure leaves the value in nothing a tool answers, `why` saying "erased" (issue 41).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn erase_is_a_tool_only_when_enabled_in_config() {
    let d = tempfile::tempdir().unwrap();
    let on: toml::Table = toml::from_str("[mcp]\nerase = true").unwrap();
    let config = Config::embedded_default().unwrap().with_overrides(&on, "test").unwrap();
    let client = connect_with(d.path(), config).await;
    let tools = client.list_all_tools().await.unwrap();
    let erase = tools.iter().find(|t| t.name == "erase").expect("offered when enabled");
    assert!(erase.description.as_deref().unwrap_or_default().contains("dry_run"), "{erase:?}");
    ok(&client, "remember", json!({"text": "[SEM] Ben | phone | +1 555 0100"})).await;
    let (text, r) = ok(&client, "erase", json!({"what": "Ben | phone", "reason": "asked", "dry_run": true})).await;
    assert!(text.contains("would erase") && text.contains("+1 555 0100"), "{text}");
    assert_eq!(r["dry_run"], true, "{r}");
    tool_error(&client, "erase", json!({"what": "m9", "reason": "asked"}), "m9").await;
    let (text, _) = ok(&client, "erase", json!({"what": "Ben | phone", "reason": "asked"})).await;
    assert!(!text.contains("555 0100") && text.contains("erased at"), "{text}");
    let (why, w) = ok(&client, "why", json!({"id": "m1"})).await;
    assert_eq!((&w["erased"]["reason"], &w["memory"]["content"]), (&json!("asked"), &json!("")), "{w}");
    assert!(!why.contains("555 0100"), "{why}");
}
