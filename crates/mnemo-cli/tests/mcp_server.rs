//! `mnemo mcp` driven over stdio by a real MCP client (rmcp's, with the child-process
//! transport): the handshake, the tool list with schemas, remember → recall → why → forget, and
//! the namespace wall. And stdout carries nothing but protocol messages.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, CallToolResult, ErrorCode};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

mod cli_run;
use cli_run::{command, has_key};

fn mnemo_mcp_command(dir: &Path, ns: &str) -> tokio::process::Command {
    let mut c = tokio::process::Command::from(command(dir));
    c.args(["--namespace", ns, "--at", "2026-07-01T09:00:00Z", "mcp"]).env("RUST_LOG", "debug");
    c
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    args: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(args) = args else { panic!("arguments must be an object") };
    client.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args)).await
}

async fn structured(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> Value {
    let r = call(client, tool, args.clone()).await.unwrap_or_else(|e| panic!("{tool} {args}: {e}"));
    assert_ne!(r.is_error, Some(true), "{tool} {args}: {r:?}");
    r.structured_content.unwrap_or_else(|| panic!("{tool}: no structured content"))
}

fn refused_for_namespace(r: Result<CallToolResult, ServiceError>, other: &str) {
    match r {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{e:?}");
            assert!(e.message.contains(other) && e.message.contains("alice"), "{}", e.message);
        }
        other => panic!("a call naming another namespace must be refused, got {other:?}"),
    }
}

/// The text content of a tool result (what a model reads).
fn text_of(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_lists_the_tools_remembers_recalls_and_meets_the_namespace_wall() {
    let d = tempfile::tempdir().unwrap();
    let (transport, stderr) =
        TokioChildProcess::builder(mnemo_mcp_command(d.path(), "alice")).stderr(Stdio::piped()).spawn().unwrap();
    // Read the server's stderr as it comes: a full pipe would block the server.
    let log_task = tokio::spawn(async move {
        let mut log = String::new();
        if let Some(mut e) = stderr {
            let _ = tokio::io::AsyncReadExt::read_to_string(&mut e, &mut log).await;
        }
        log
    });
    let client = ().serve(transport).await.unwrap();
    assert_eq!(client.peer_info().unwrap().server_info.as_ref().unwrap().name, "mnemo");

    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    assert_eq!(
        names,
        ["answer", "dismiss", "escalations", "forget", "history", "list", "recall", "remember", "turn", "why"]
    );
    for (tool, required) in
        [("remember", "text"), ("recall", "query"), ("forget", "command"), ("why", "id"), ("turn", "text")]
    {
        let t = tools.iter().find(|t| t.name == tool).unwrap();
        assert!(t.description.as_deref().is_some_and(|d| d.len() > 20), "{tool} is described");
        let schema = Value::Object((*t.input_schema).clone());
        assert_eq!(schema["type"], "object", "{tool}: {schema}");
        assert!(schema["properties"][required].is_object(), "{tool}: {schema}");
        assert!(schema["properties"]["namespace"].is_object(), "{tool}: {schema}");
        assert!(schema["required"].as_array().unwrap().iter().any(|r| r == required), "{tool}: {schema}");
    }

    let r = structured(&client, "remember", json!({"text": "[SEM] Northwind Labs | owner | Ben"})).await;
    assert!(!r["outcomes"].as_array().unwrap().is_empty(), "{r}");
    assert!(!has_key(&r, "vector"), "no embedding vectors unless asked: {r}");

    let t =
        structured(&client, "recall", json!({"query": "who owns Northwind Labs", "about": "Northwind Labs | owner"}))
            .await;
    let lines = t["memories"].as_array().unwrap();
    let ben = lines.iter().find(|m| m["content"] == "Northwind Labs | owner | Ben").unwrap_or_else(|| panic!("{t}"));
    assert!(t["decision"]["decision"].is_string(), "{t}");
    assert!(!has_key(&t, "vector"), "no embedding vectors unless asked");
    let id = ben["id"].as_str().unwrap().to_string();
    assert_eq!(id, "m1", "{t}");

    let w = structured(&client, "why", json!({"id": id})).await;
    assert_eq!(w["memory"]["id"], id);
    let w = structured(&client, "why", json!({"id": 1})).await;
    assert_eq!(w["memory"]["id"], "m1", "a bare number is the memory's number: {w}");
    assert!(!w["turns"].as_array().unwrap().is_empty(), "{w}");

    // The namespace wall: naming another namespace is refused, on every tool.
    refused_for_namespace(
        call(&client, "remember", json!({"text": "[SEM] X | y | z", "namespace": "bob"})).await,
        "bob",
    );
    refused_for_namespace(call(&client, "recall", json!({"query": "Northwind", "namespace": "bob"})).await, "bob");
    refused_for_namespace(
        call(&client, "forget", json!({"command": "Northwind Labs | owner", "namespace": "bob"})).await,
        "bob",
    );
    refused_for_namespace(call(&client, "why", json!({"id": id, "namespace": "bob"})).await, "bob");
    // Naming its own namespace is fine.
    structured(&client, "why", json!({"id": id, "namespace": "alice"})).await;
    // Arguments a model can correct are tool errors it reads (not protocol errors), saying
    // what to send instead.
    for (tool, args, says) in [
        ("recall", json!({"query": "x", "about": "no bar here"}), "entity | attribute"),
        ("recall", json!({"query": "x", "about": "A | b", "raw": true}), "drop `raw`"),
        ("recall", json!({"query": "x", "detail": "verbose"}), "compact"),
        ("remember", json!({"text": "  "}), "must not be empty"),
        ("why", json!({"id": "m-one"}), "not a memory id"),
    ] {
        let r = call(&client, tool, args.clone()).await.unwrap_or_else(|e| panic!("{tool} {args}: {e}"));
        assert_eq!(r.is_error, Some(true), "{tool} {args}: {r:?}");
        assert!(text_of(&r).contains(says), "{tool} {args}: {r:?}");
    }
    // An id given as a string is the same id.
    let w = structured(&client, "why", json!({"id": id.to_string()})).await;
    assert_eq!(w["memory"]["id"], id, "{w}");

    let f = structured(&client, "forget", json!({"command": "Northwind Labs | owner"})).await;
    assert!(f.to_string().contains("tombstone") || f.to_string().contains("forgot"), "{f}");
    let p = structured(&client, "recall", json!({"query": "who owns Northwind Labs", "raw": true})).await;
    assert!(!p.to_string().contains("owner | Ben"), "forgotten: {p}");
    let w = structured(&client, "why", json!({"id": id})).await;
    assert_eq!(w["memory"]["status"]["status"], "tombstoned", "{w}");

    client.cancel().await.unwrap();
    let log = log_task.await.unwrap();
    assert!(log.contains("MCP server on stdio"), "logs go to stderr: {log}");
}

/// Plain JSON-RPC lines in, and every line out must be a JSON-RPC message: no banner, no log.
#[test]
fn stdout_carries_only_protocol_messages() {
    let d = tempfile::tempdir().unwrap();
    let mut child = command(d.path())
        .args(["--namespace", "alice", "-vvv", "mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "remember", "arguments": {"text": "[SEM] Contoso | owner | Alice"}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "recall", "arguments": {"query": "Contoso owner"}}}),
    ];
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    // Read the server's stderr as it comes (-vvv logs a lot): a full pipe would block it.
    let mut stderr = child.stderr.take().unwrap();
    let log_thread = std::thread::spawn(move || {
        let mut err = String::new();
        let _ = stderr.read_to_string(&mut err);
        err
    });
    // Send one request at a time and wait for its answer, so the server is never cut short.
    let mut out = Vec::new();
    let mut seen = String::new();
    for r in &requests {
        writeln!(stdin, "{r}").unwrap();
        stdin.flush().unwrap();
        let Some(id) = r.get("id") else { continue };
        while !seen.lines().any(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| v.get("id") == Some(id))) {
            let mut buf = [0u8; 4096];
            let n = stdout.read(&mut buf).unwrap();
            assert!(n > 0, "the server closed stdout early; so far: {seen}");
            out.extend_from_slice(&buf[..n]);
            seen = String::from_utf8(out.clone()).unwrap();
        }
    }
    drop(stdin);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    let err = log_thread.join().unwrap();
    assert!(status.success(), "{err}");
    let all = seen + &rest;
    let mut ids = Vec::new();
    for line in all.lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
        ids.extend(v.get("id").cloned());
    }
    assert_eq!(ids, [json!(1), json!(2), json!(3), json!(4)]);
    assert!(all.contains("Contoso | owner | Alice"));
    assert!(!err.is_empty(), "-vvv logs went to stderr");
}

/// The must-show of issue 34: with 60 memories, `recall` under budget 256 hands the model at most
/// 256 tokens plus the stated overhead (chars/4, the default counter), its structuredContent is
/// the compact view, and `detail: "full"` still gives the whole trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recall_through_mcp_fits_its_budget_plus_the_stated_overhead() {
    use mnemo_agent::agent_view::RENDER_OVERHEAD_TOKENS;
    use mnemo_contract::TokenCounter as _;
    let d = tempfile::tempdir().unwrap();
    let (transport, _) =
        TokioChildProcess::builder(mnemo_mcp_command(d.path(), "alice")).stderr(Stdio::null()).spawn().unwrap();
    let client = ().serve(transport).await.unwrap();
    let colours = ["blue", "red", "green", "teal", "amber", "grey"];
    let turn: Vec<String> =
        (0..60).map(|i| format!("[SEM] Item {i} | colour | {}", colours[i % colours.len()])).collect();
    let r = structured(&client, "remember", json!({"text": turn.join("\n")})).await;
    assert_eq!(r["outcomes"].as_array().unwrap().len(), 60, "{r}");

    let tools = client.list_all_tools().await.unwrap();
    let recall_tool = tools.iter().find(|t| t.name == "recall").unwrap();
    let schema = Value::Object((*recall_tool.output_schema.clone().expect("recall declares its output")).clone());
    assert_eq!(schema["type"], "object", "{schema}");
    assert!(schema["anyOf"][0]["properties"]["memories"].is_object(), "{schema}");
    for name in ["recall", "why"] {
        let t = tools.iter().find(|t| t.name == name).unwrap();
        assert_eq!(t.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true), "{name}");
    }

    let ask = json!({"query": "what colour is Item 17", "budget": 256});
    let r = call(&client, "recall", ask.clone()).await.unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let text = text_of(&r);
    let tokens = mnemo_contract::CharTokenCounter.count(&text);
    eprintln!("recall budget 256 over 60 memories: text {} chars ({tokens} tokens)", text.chars().count());
    assert!(tokens <= 256 + RENDER_OVERHEAD_TOKENS, "{tokens} tokens: {text}");
    assert!(text.contains("Item 17 | colour | grey") && text.contains("Decision: "), "{text}");
    let view: mnemo_agent::AgentRecall = serde_json::from_value(r.structured_content.clone().unwrap()).unwrap();
    assert_eq!((view.budget, view.token_counter.as_str()), (256, "chars/4"));
    assert!(view.tokens <= 256 && !view.memories.is_empty(), "{view:?}");
    // Packed memories whose lines did not fit are named, not silently dropped.
    assert_eq!(text.contains("packed memories shown"), !view.left_out.is_empty(), "{text}");
    assert_eq!(view.render(&mnemo_contract::CharTokenCounter), text, "the text is the view's rendering");
    let act = view.decision.as_ref().expect("an assessed recall decides");
    assert_eq!(act.decision, "act", "{view:?}");
    assert_eq!(act.act_on[0].value, "grey", "{view:?}");

    let mut full = ask.clone();
    full["detail"] = json!("full");
    let f = structured(&client, "recall", full).await;
    let trace = f["pack"]["trace"].as_array().unwrap();
    assert!(trace.len() > view.memories.len(), "the full result keeps the trace: {} candidates", trace.len());
    assert!(f["assessment"]["grades"].is_array() && f["verdict"]["decision"] == "act", "{f}");
    let full_size = f.to_string().len();
    eprintln!(
        "detail full: structuredContent {full_size} bytes; compact {}",
        r.structured_content.unwrap().to_string().len()
    );
    client.cancel().await.unwrap();
}

/// The must-show of issue 34 (nothing silently dropped): offline, a prose sentence remembered
/// through MCP is kept as an episode of what was said, its result says so, and a paraphrased
/// question recalls it afterwards. A turn the model extracts nothing from says that instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offline_prose_turn_through_mcp_is_kept_and_recalled_by_a_paraphrase() {
    let d = tempfile::tempdir().unwrap();
    let (transport, _) =
        TokioChildProcess::builder(mnemo_mcp_command(d.path(), "alice")).stderr(Stdio::null()).spawn().unwrap();
    let client = ().serve(transport).await.unwrap();

    let r = structured(&client, "remember", json!({"text": "The user said their favourite colour is teal."})).await;
    assert_eq!(r["status"], "extracted", "{r}");
    let outcomes = r["outcomes"].as_array().unwrap();
    assert_eq!(outcomes.len(), 1, "{r}");
    assert_eq!(outcomes[0]["kind"], "inserted", "{r}");

    let ask = call(&client, "recall", json!({"query": "what colour does the user like"})).await.unwrap();
    assert_ne!(ask.is_error, Some(true), "{ask:?}");
    let text = text_of(&ask);
    assert!(text.contains("teal"), "the paraphrased question finds the sentence: {text}");
    let memories = ask.structured_content.as_ref().map(|v| v["memories"].clone()).unwrap_or_default();
    assert!(
        memories.as_array().is_some_and(|m| m
            .iter()
            .any(|x| x["kind"] == "episodic" && x["content"].as_str().is_some_and(|c| c.contains("teal")))),
        "kept as an episode: {memories}"
    );

    // A malformed tag is a grammar mistake, not prose: nothing is extracted, and the
    // structured result says so (with the note naming the tag).
    let r = structured(&client, "remember", json!({"text": "[NOPE] the standup moved to ten"})).await;
    assert_eq!(r["status"], "nothing_extracted", "{r}");
    assert!(r["outcomes"].as_array().unwrap().is_empty(), "{r}");
    let notes = r["notes"].to_string();
    assert!(notes.contains("unknown tag [NOPE]") && notes.contains("extracted nothing"), "{notes}");
    client.cancel().await.unwrap();
}
