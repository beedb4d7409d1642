//! An escalation asked in the client itself (MCP elicitation), driven in-process by rmcp's
//! client over an in-memory pipe: a client that declares elicitation gets a form naming the
//! task, the claim and the reasons; an answer ("Carla") is recorded from `human:user` and the
//! same turn (or recall) acts on it; a decline, a cancel, an empty answer or no answer within
//! the timeout leave the escalation open; a client without the capability sees the turn as
//! before.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation,
};
use rmcp::service::{RequestContext, RunningService, Service};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{json, Value};

use mnemo_agent::{Config, Runtime};
use mnemo_contract::{Namespace, SimClock, Timestamp};
use mnemo_mcp::MnemoMcp;
// The default config's kinds (store, index, fake model).
use mnemo_grounders as _;
use mnemo_llm as _;
use mnemo_store as _;

/// What the human in the client does with the next question.
#[derive(Clone, Debug)]
enum Reply {
    Answer(&'static str),
    Decline,
    Cancel,
    /// Never answers.
    Silent,
}

/// A client whose user answers each question as scripted, and which keeps the questions.
#[derive(Clone, Default)]
struct Human {
    replies: Arc<Mutex<VecDeque<Reply>>>,
    /// The message and requested schema of each question asked.
    asked: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Human {
    fn new(replies: impl IntoIterator<Item = Reply>) -> Self {
        Human { replies: Arc::new(Mutex::new(replies.into_iter().collect())), ..Default::default() }
    }

    fn questions(&self) -> Vec<(String, Value)> {
        self.asked.lock().unwrap().clone()
    }
}

impl ClientHandler for Human {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("a-human", "0"),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } = request else {
            panic!("a form, not a URL: {request:?}");
        };
        self.asked.lock().unwrap().push((message, serde_json::to_value(&requested_schema).unwrap()));
        let reply = self.replies.lock().unwrap().pop_front().expect("a question nobody scripted a reply to");
        Ok(match reply {
            Reply::Answer(a) => ElicitResult::new(ElicitationAction::Accept).with_content(json!({"answer": a})),
            Reply::Decline => ElicitResult::new(ElicitationAction::Decline),
            Reply::Cancel => ElicitResult::new(ElicitationAction::Cancel),
            Reply::Silent => std::future::pending().await,
        })
    }
}

/// A client `handler` connected to a server over `dir`, bound to namespace `alice`, asking in
/// the client with `timeout` (None: never).
async fn connect<H: Service<RoleClient>>(
    dir: &std::path::Path,
    handler: H,
    timeout: Option<Duration>,
) -> RunningService<RoleClient, H> {
    let clock = Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap()));
    let rt = Runtime::build(&Config::embedded_default().unwrap(), dir, clock, vec![]).await.unwrap();
    let server = MnemoMcp::new(Arc::new(rt), Namespace::new("alice").unwrap()).with_elicitation_timeout(timeout);
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = server.serve(server_io).await.unwrap();
        let _ = running.waiting().await;
    });
    handler.serve(client_io).await.unwrap()
}

/// A successful call: its text and its structured content.
async fn ok<H: Service<RoleClient>>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    args: Value,
) -> (String, Value) {
    let Value::Object(a) = args.clone() else { panic!("arguments must be an object") };
    let r = client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(a))
        .await
        .unwrap_or_else(|e| panic!("{tool} {args}: {e}"));
    assert_ne!(r.is_error, Some(true), "{tool} {args}: {r:?}");
    let structured = r.structured_content.clone().unwrap_or_else(|| panic!("{tool}: no structured content"));
    (text_of(&r), structured)
}

fn text_of(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

/// The question of the approver turn.
fn approver() -> Value {
    json!({"text": "Who signs off purchase orders at Northwind Labs?", "about": "Northwind Labs | approver"})
}

/// The open escalations' ids.
async fn open<H: Service<RoleClient>>(client: &RunningService<RoleClient, H>) -> Vec<String> {
    let (_, v) = ok(client, "escalations", json!({})).await;
    v["escalations"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_human_answers_in_the_client_and_the_same_turn_acts_on_it() {
    let d = tempfile::tempdir().unwrap();
    let human = Human::new([Reply::Answer("Carla"), Reply::Answer("  Dana ")]);
    let client = connect(d.path(), human.clone(), Some(Duration::from_secs(60))).await;
    ok(&client, "remember", json!({"text": "[SEM] Northwind Labs | owner | Ben", "source": "crm"})).await;

    let (text, t) = ok(&client, "turn", approver()).await;
    // The question named the escalation, the task, the claim and the reason; one string field.
    let questions = human.questions();
    assert_eq!(questions.len(), 1, "{questions:?}");
    let (message, schema) = &questions[0];
    for says in
        ["escalation e1", "Who signs off purchase orders at Northwind Labs?", "About: Northwind Labs | approver"]
    {
        assert!(message.contains(says), "the question does not say {says:?}: {message}");
    }
    assert!(message.contains("Why: nothing recalled asserts Northwind Labs | approver"), "{message}");
    assert_eq!(schema["required"], json!(["answer"]), "{schema}");
    assert_eq!(schema["properties"]["answer"]["type"], "string", "{schema}");
    assert_eq!(schema["properties"].as_object().unwrap().len(), 1, "one field: {schema}");

    // The turn ran again on the answer: ACT on Carla, planned and checked; the text says so.
    let recall = &t["recall"];
    assert_eq!(recall["decision"]["decision"], "act", "{t}");
    assert_eq!(recall["decision"]["act_on"][0]["value"], "Carla", "{t}");
    assert_eq!(recall["plan"]["faithful"], true, "{t}");
    assert!(recall.get("escalation").is_none(), "{t}");
    let asked = &t["elicitation"];
    assert_eq!(
        (asked["escalation"].as_str(), asked["outcome"].as_str(), asked["answer"].as_str(), asked["by"].as_str()),
        (Some("e1"), Some("answered"), Some("Carla"), Some("human:user")),
        "{t}"
    );
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("Remembered: turn "), "{text}");
    assert!(lines[1].contains("human:user answered escalation e1 with \"Carla\""), "{text}");
    assert!(text.contains("Decision: ACT"), "{text}");
    // The text was remembered once, by the first run.
    assert_eq!(t["remembered"]["status"], "extracted", "{t}");
    let (_, page) = ok(&client, "list", json!({"limit": 100})).await;
    let question = page["memories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["content"].as_str().is_some_and(|c| c.contains("Who signs off purchase orders")));
    assert_eq!(question.count(), 1, "{page}");

    // The acted memory is the human's word; the escalation is closed, answered in the client.
    let (_, w) = ok(&client, "why", json!({"id": recall["decision"]["act_on"][0]["memory"]})).await;
    assert_eq!(w["memory"]["sources"], json!(["human:user"]), "{w}");
    assert!(open(&client).await.is_empty());
    let (_, all) = ok(&client, "escalations", json!({"open_only": false})).await;
    assert_eq!(all["escalations"][0]["answer"]["by"], "human:user", "{all}");
    assert_eq!(all["escalations"][0]["answer"]["text"], "Carla", "{all}");

    // A recall that escalates asks too, and runs again on the answer (trimmed).
    let (text, r) =
        ok(&client, "recall", json!({"query": "Who buys for Northwind Labs?", "about": "Northwind Labs | buyer"}))
            .await;
    assert_eq!(human.questions().len(), 2);
    assert_eq!(r["elicitation"]["outcome"], "answered", "{r}");
    assert_eq!(r["elicitation"]["escalation"], "e2", "{r}");
    assert_eq!(r["decision"]["decision"], "act", "{r}");
    assert_eq!(r["decision"]["act_on"][0]["value"], "Dana", "{r}");
    assert!(text.lines().next().unwrap().contains("answered escalation e2 with \"Dana\""), "{text}");
    // An ACT asks nothing.
    let (_, t) = ok(&client, "turn", approver()).await;
    assert_eq!(t["recall"]["decision"]["decision"], "act", "{t}");
    assert!(t.get("elicitation").is_none(), "{t}");
    assert_eq!(human.questions().len(), 2);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decline_a_cancel_an_empty_answer_or_silence_leave_the_escalation_open() {
    let d = tempfile::tempdir().unwrap();
    let human = Human::new([Reply::Decline, Reply::Cancel, Reply::Answer("   "), Reply::Silent]);
    let client = connect(d.path(), human.clone(), Some(Duration::from_secs(1))).await;
    ok(&client, "remember", json!({"text": "[SEM] Northwind Labs | owner | Ben"})).await;

    for (outcome, says) in [
        ("declined", "the human declined to answer escalation e1"),
        ("cancelled", "closed the question on escalation e1 without answering"),
        ("empty", "empty answer, so nothing was recorded"),
        ("timed_out", "no answer to escalation e1 within 1 s"),
    ] {
        let started = Instant::now();
        let (text, t) = ok(&client, "turn", approver()).await;
        assert!(started.elapsed() < Duration::from_secs(20), "{outcome}: {:?}", started.elapsed());
        assert_eq!(t["recall"]["decision"]["decision"], "escalate", "{outcome}: {t}");
        assert_eq!(t["recall"]["escalation"]["id"], "e1", "{outcome}: the same open escalation: {t}");
        assert_eq!(t["elicitation"]["outcome"], outcome, "{t}");
        assert!(t["elicitation"].get("answer").is_none(), "{t}");
        let line = text.lines().nth(1).unwrap();
        assert!(line.contains(says) && line.contains("it stays open"), "{outcome}: {text}");
        assert!(text.contains("Escalation e1"), "the escalating result as before: {text}");
        assert_eq!(open(&client).await, ["e1"], "{outcome}");
    }
    assert_eq!(human.questions().len(), 4);
    // Nothing the human did was recorded: memory holds no approver.
    let (_, page) = ok(&client, "list", json!({"limit": 100})).await;
    assert!(!page.to_string().contains("| approver |"), "{page}");
    // The server still serves after a client that never answered.
    let (_, v) = ok(&client, "escalations", json!({"open_only": false})).await;
    assert_eq!(v["escalations"][0]["status"], "open", "{v}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_elicitation_or_a_server_that_never_asks_gets_the_escalation_as_before() {
    for asks in [true, false] {
        let d = tempfile::tempdir().unwrap();
        let human = Human::new([]);
        // A client that declares no capability, or one that does to a server that never asks.
        let (text, t) = if asks {
            let client = connect(d.path(), (), Some(Duration::from_secs(60))).await;
            ok(&client, "remember", json!({"text": "[SEM] Northwind Labs | owner | Ben"})).await;
            let r = ok(&client, "turn", approver()).await;
            client.cancel().await.unwrap();
            r
        } else {
            let client = connect(d.path(), human.clone(), None).await;
            ok(&client, "remember", json!({"text": "[SEM] Northwind Labs | owner | Ben"})).await;
            let r = ok(&client, "turn", approver()).await;
            let (_, rec) =
                ok(&client, "recall", json!({"query": "approver?", "about": "Northwind Labs | approver"})).await;
            assert!(rec.get("elicitation").is_none(), "{rec}");
            client.cancel().await.unwrap();
            r
        };
        assert!(human.questions().is_empty());
        assert_eq!(t["recall"]["decision"]["decision"], "escalate", "{t}");
        assert_eq!(t["recall"]["escalation"]["id"], "e1", "{t}");
        assert!(t.get("elicitation").is_none(), "{t}");
        assert!(!text.contains("in the client"), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("Remembered: ") && lines[1].starts_with("Mnemo recall: "), "{text}");
    }
}
