//! Escalations as records with a life: recorded by the escalating turn (reused while open),
//! kept across a restart with ids never reused, sent to a signed webhook (retried when the
//! receiver fails, left open with the failure recorded when it is down) and a JSON-lines file,
//! answered by a human — recorded as memory from `human:NAME`, on which the same task then
//! acts, offline — or dismissed (nothing recorded).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use mnemo_grounders as _;
use mnemo_llm as _;
use mnemo_store as _;

use std::path::Path;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use mnemo_agent::escalation::{verify, AnswerForm, EscalationId, EscalationStatus, SIGNATURE_HEADER};
use mnemo_agent::{Config, Runtime};
use mnemo_contract::time::DAY_MS;
use mnemo_contract::*;
use mnemo_core::engine::RecallOptions;

const T0: &str = "2026-07-01T09:00:00Z";

fn config(extra: &str) -> Config {
    let c = Config::embedded_default().unwrap();
    if extra.is_empty() {
        return c;
    }
    let t: toml::Table = toml::from_str(extra).unwrap();
    c.with_overrides(&t, "test").unwrap()
}

async fn runtime(dir: &Path, clock: &Arc<SimClock>, extra: &str) -> Runtime {
    Runtime::build(&config(extra), dir, clock.clone(), vec![]).await.unwrap()
}

fn clock() -> Arc<SimClock> {
    Arc::new(SimClock::new(Timestamp::parse_rfc3339(T0).unwrap()))
}

fn approver() -> Task {
    Task {
        query: "Who signs off purchase orders at Northwind Labs?".into(),
        about: Some(("Northwind Labs".into(), "approver".into())),
    }
}

fn ns() -> Namespace {
    Namespace::new("supply").unwrap()
}

async fn turn(rt: &Runtime, task: &Task) -> mnemo_agent::AgentTurn {
    rt.turn(&ns(), task, &RecallOptions::default()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_escalating_turn_records_once_and_the_ledger_survives_a_restart_with_ids_never_reused() {
    let d = tempfile::tempdir().unwrap();
    let clock = clock();
    let ns = ns();
    {
        let rt = runtime(d.path(), &clock, "").await;
        rt.engine().remember(&ns, "buyer", "[SEM] Northwind Labs | owner | Ben").await.unwrap();
        clock.advance(DAY_MS);
        let t = turn(&rt, &approver()).await;
        assert_eq!(t.verdict.decision, "escalate");
        let e = t.escalation.expect("an escalating turn records its escalation");
        assert_eq!((e.id, e.reused), (Some(EscalationId(1)), false));
        assert!(e.note.contains("escalation e1 opened"), "{}", e.note);
        // The same task while e1 is open: reused, said so, not duplicated.
        clock.advance(DAY_MS);
        let again = turn(&rt, &approver()).await.escalation.unwrap();
        assert_eq!((again.id, again.reused), (Some(EscalationId(1)), true));
        assert!(again.note.contains("reused"), "{}", again.note);
        // Another task: another escalation.
        let other =
            Task { query: "Who is the buyer at Contoso?".into(), about: Some(("Contoso".into(), "buyer".into())) };
        assert_eq!(turn(&rt, &other).await.escalation.unwrap().id, Some(EscalationId(2)));
        // An ACT records nothing.
        let owner =
            Task { query: "Who owns Northwind Labs?".into(), about: Some(("Northwind Labs".into(), "owner".into())) };
        let t = turn(&rt, &owner).await;
        assert_eq!(t.verdict.decision, "act");
        assert!(t.escalation.is_none());
    }
    // A new process over the same data directory.
    let rt = runtime(d.path(), &clock, "").await;
    let all = rt.escalations(&ns, false).await.unwrap();
    assert_eq!(all.iter().map(|e| e.id.0).collect::<Vec<_>>(), vec![1, 2]);
    let e1 = &all[0];
    assert_eq!(e1.status, EscalationStatus::Open);
    assert_eq!(e1.raised, 2);
    assert_eq!(e1.created_at, Timestamp::parse_rfc3339(T0).unwrap().plus_millis(DAY_MS), "the engine's clock");
    assert_eq!(e1.claim.as_ref().map(|c| c.attribute.as_str()), Some("approver"));
    assert!(e1.reasons.iter().any(|r| r.contains("nothing recalled asserts Northwind Labs | approver")));
    assert_eq!(e1.pack.len(), 1, "the pack's memory ids");
    // Ids as a tenant reads them.
    let v = mnemo_agent::json_view::tenant_json(e1, false).unwrap();
    assert_eq!((v["id"].as_str(), v["pack"][0].as_str()), (Some("e1"), Some("m1")), "{v}");
    // Another namespace counts on its own.
    let other_ns = Namespace::new("clinic").unwrap();
    assert!(rt.escalations(&other_ns, false).await.unwrap().is_empty());
    let e = rt.escalation(&other_ns, EscalationId(1)).await.unwrap_err().to_string();
    assert!(e.contains("no escalation e1 in namespace clinic"), "{e}");
    // Dismissed: closed, nothing recorded; the same task then opens a NEW escalation, e3.
    let turns_before = rt.engine().turns(&ns).await.unwrap().len();
    let gone = rt.dismiss_escalation(&ns, EscalationId(1), "ben").await.unwrap();
    assert_eq!(gone.status, EscalationStatus::Dismissed);
    assert_eq!(gone.dismissal.as_ref().map(|d| d.by.as_str()), Some("human:ben"));
    assert_eq!(rt.engine().turns(&ns).await.unwrap().len(), turns_before, "a dismissal records nothing");
    let e = rt.answer_escalation(&ns, EscalationId(1), "Carla", "carla").await.unwrap_err().to_string();
    assert!(e.contains("e1 was dismissed by human:ben"), "{e}");
    let e = rt.dismiss_escalation(&ns, EscalationId(1), "ben").await.unwrap_err().to_string();
    assert!(e.contains("dismissed"), "{e}");
    let t = turn(&rt, &approver()).await.escalation.unwrap();
    assert_eq!((t.id, t.reused), (Some(EscalationId(3)), false), "never e1 again");
    assert_eq!(rt.escalations(&ns, true).await.unwrap().iter().map(|e| e.id.0).collect::<Vec<_>>(), vec![2, 3]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_is_memory_from_the_human_and_the_same_task_then_acts_on_it_offline() {
    let d = tempfile::tempdir().unwrap();
    let clock = clock();
    let rt = runtime(d.path(), &clock, "").await;
    let ns = ns();
    // Memory holds nothing on the approver: escalate.
    rt.engine().remember(&ns, "buyer", "[SEM] Northwind Labs | owner | Ben").await.unwrap();
    let id = turn(&rt, &approver()).await.escalation.unwrap().id.unwrap();
    // Mistakes are refused, nothing recorded.
    for (text, by, want) in [
        ("  ", "carla", "answer text must not be empty"),
        ("Carla", " ", "name (by) must not be empty"),
        ("Carla", "a|b", "no line break or '|'"),
    ] {
        let e = rt.answer_escalation(&ns, id, text, by).await.unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
    let e = rt.answer_escalation(&ns, EscalationId(9), "Carla", "carla").await.unwrap_err().to_string();
    assert!(e.contains("no escalation e9") && e.contains("holds e1 only"), "{e}");
    assert_eq!(rt.engine().turns(&ns).await.unwrap().len(), 1);

    clock.advance(DAY_MS);
    let done = rt.answer_escalation(&ns, id, "Carla", "carla").await.unwrap();
    let a = done.escalation.answer.clone().unwrap();
    assert_eq!(done.escalation.status, EscalationStatus::Answered);
    assert_eq!((a.form, a.value.as_deref(), a.by.as_str()), (AnswerForm::Value, Some("Carla"), "human:carla"));
    assert_eq!(a.recorded, "[SEM] Northwind Labs | approver | Carla");
    let r = done.remembered.unwrap();
    assert_eq!((r.turn.id, r.turn.source.as_str()), (a.turn, "human:carla"), "a turn from the human");
    let e = rt.answer_escalation(&ns, id, "Dana", "dana").await.unwrap_err().to_string();
    assert!(e.contains("already answered by human:carla"), "{e}");

    // The same task acts on the human's value, and why shows the human source.
    clock.advance(DAY_MS);
    let t = turn(&rt, &approver()).await;
    assert_eq!(t.verdict.decision, "act", "{:?}", t.assessment);
    assert!(t.escalation.is_none());
    let on = &t.verdict.act_on[0];
    assert_eq!(on.value, "Carla");
    assert!(on.basis.starts_with("human: confirmed by human:carla"), "{}", on.basis);
    let g = t.assessment.grades.iter().find(|g| g.id == on.memory).unwrap();
    assert!(g.trust > 0.99, "verified while fresh: {}", g.trust);
    let why = rt.why(&ns, on.memory).await.unwrap();
    assert!(why.memory.sources.contains(&"human:carla".to_string()), "{:?}", why.memory.sources);
    assert!(why.turns.iter().any(|t| t.source == "human:carla"), "{:?}", why.turns);

    // Until it ages: past the half-life the human's word alone no longer carries the task.
    let alone =
        Task { query: "Northwind Labs approver".into(), about: Some(("Northwind Labs".into(), "approver".into())) };
    assert_eq!(turn(&rt, &alone).await.verdict.decision, "act");
    clock.advance(200 * DAY_MS);
    let t = turn(&rt, &alone).await;
    assert_eq!(t.verdict.decision, "escalate", "{:?}", t.assessment.grades);
    let human = t.assessment.grades.iter().find(|g| g.id == on.memory).unwrap();
    assert!(human.trust < 0.55 && human.basis.contains("human:carla"), "{human:?}");
    assert_eq!(t.escalation.unwrap().id, Some(EscalationId(2)));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sentence_states_the_value_and_prose_is_kept_as_prose_offline() {
    let d = tempfile::tempdir().unwrap();
    let clock = clock();
    let rt = runtime(d.path(), &clock, "").await;
    let ns = ns();
    let limit = Task {
        query: "What is the approval limit at Acme?".into(),
        about: Some(("Acme".into(), "approval limit".into())),
    };
    let id = turn(&rt, &limit).await.escalation.unwrap().id.unwrap();
    let done = rt.answer_escalation(&ns, id, "The approval limit is 50,000 USD per order.", "dana").await.unwrap();
    assert_eq!(done.escalation.answer.as_ref().unwrap().value.as_deref(), Some("50,000 USD per order"));
    let t = turn(&rt, &limit).await;
    assert_eq!(t.verdict.decision, "act");
    assert_eq!(t.verdict.act_on[0].value, "50,000 USD per order");

    // Prose the offline model cannot read a value from: recorded as written (one episode),
    // answered, and said so: the task may escalate again.
    let channel = Task {
        query: "How does S-208 want to be contacted?".into(),
        about: Some(("S-208".into(), "preferred channel".into())),
    };
    let id = turn(&rt, &channel).await.escalation.unwrap().id.unwrap();
    let done = rt
        .answer_escalation(&ns, id, "I think they prefer email, but ask Ben before the next order", "dana")
        .await
        .unwrap();
    let a = done.escalation.answer.as_ref().unwrap();
    assert_eq!(a.form, AnswerForm::Prose);
    assert!(a.recorded.starts_with("In answer to \"How does S-208 want to be contacted?\""), "{}", a.recorded);
    assert!(done.notes.iter().any(|n| n.contains("may escalate again")), "{:?}", done.notes);
    let t = turn(&rt, &channel).await;
    assert_eq!(t.verdict.decision, "escalate");
    assert_eq!(t.escalation.unwrap().id.map(|i| i.0), Some(3), "a new escalation: the answered one stays closed");
}

/// One HTTP request as a test receiver saw it.
#[derive(Clone, Debug)]
struct Seen {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A receiver on loopback answering every request with `status`; what it saw, and its URL.
async fn receiver(status: u16) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks/mnemo", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let headers: Vec<(String, String)> = head
                    .lines()
                    .skip(1)
                    .filter_map(|l| l.split_once(':').map(|(k, v)| (k.trim().to_string(), v.trim().to_string())))
                    .collect();
                let len: usize = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0);
                while buf.len() < head_end + len {
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let body = buf[head_end..].to_vec();
                kept.lock().unwrap().push(Seen { headers, body });
                let reply = format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                let _ = sock.write_all(reply.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    (url, seen)
}

fn webhook(url: &str, secret_env: &str, more: &str) -> String {
    format!("[[escalation.sinks]]\nkind = \"webhook\"\nurl = \"{url}\"\nsecret_env = \"{secret_env}\"\n{more}\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_webhook_gets_the_signed_escalation_and_the_jsonl_file_a_line() {
    let d = tempfile::tempdir().unwrap();
    let conf = tempfile::tempdir().unwrap();
    let secret = "s3cr3t-for-the-webhook-test";
    // Each test sets a variable of its own (tests run in parallel).
    std::env::set_var("MNEMO_TEST_HOOK_SECRET_OK", secret);
    let (url, seen) = receiver(200).await;
    let jsonl = conf.path().join("out/escalations.jsonl");
    let extra = format!(
        "{}[[escalation.sinks]]\nkind = \"jsonl\"\npath = \"{}\"\n",
        webhook(&url, "MNEMO_TEST_HOOK_SECRET_OK", ""),
        jsonl.display()
    );
    let clock = clock();
    let rt = runtime(d.path(), &clock, &extra).await;
    let ns = ns();
    rt.engine().remember(&ns, "buyer", "[SEM] Northwind Labs | owner | Ben").await.unwrap();
    let t = turn(&rt, &approver()).await.escalation.unwrap();
    assert_eq!(t.deliveries.len(), 2);
    assert!(t.deliveries.iter().all(|d| d.delivered && d.attempts == 1), "{:?}", t.deliveries);
    assert!(t.note.contains("sent to webhook http://127.0.0.1"), "{}", t.note);

    let got = seen.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "one POST");
    let req = &got[0];
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.header("x-mnemo-escalation"), Some("supply/e1"));
    let sig = req.header(SIGNATURE_HEADER).expect("signed");
    assert!(verify(secret.as_bytes(), &req.body, sig), "the signature verifies with the secret");
    assert!(!verify(b"another secret", &req.body, sig), "and not with another");
    let mut tampered = req.body.clone();
    tampered[0] = b' ';
    assert!(!verify(secret.as_bytes(), &tampered, sig), "nor on another body");
    // Computed independently: HMAC-SHA256(secret, body), hex.
    {
        use hmac::{Hmac, KeyInit, Mac};
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(&req.body);
        let hex: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(sig, format!("sha256={hex}"));
    }
    let v: serde_json::Value = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(
        (v["id"].as_str(), v["namespace"].as_str(), v["status"].as_str()),
        (Some("e1"), Some("supply"), Some("open"))
    );
    assert_eq!(v["pack"][0], "m1", "short ids, as a tenant reads them");
    assert_eq!(v["claim"]["attribute"], "approver");

    let lines = std::fs::read_to_string(&jsonl).unwrap();
    assert_eq!(lines.lines().count(), 1);
    let line: serde_json::Value = serde_json::from_str(lines.trim()).unwrap();
    assert_eq!(line, v, "the same JSON, one line");

    // Recorded on the escalation; a reuse sends nothing again.
    let e = rt.escalation(&ns, EscalationId(1)).await.unwrap();
    assert!(e.deliveries.iter().all(|d| d.delivered), "{:?}", e.deliveries);
    assert!(turn(&rt, &approver()).await.escalation.unwrap().deliveries.is_empty());
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_receiver_gets_retries_and_a_down_one_leaves_the_escalation_open_with_the_failure() {
    std::env::set_var("MNEMO_TEST_HOOK_SECRET_DOWN", "x");
    // A receiver answering 503: retried with backoff, 1 + retries attempts.
    let (url, seen) = receiver(503).await;
    let d = tempfile::tempdir().unwrap();
    let clock = clock();
    let rt =
        runtime(d.path(), &clock, &webhook(&url, "MNEMO_TEST_HOOK_SECRET_DOWN", "retries = 2\nbackoff_ms = 20")).await;
    let ns = ns();
    let t = turn(&rt, &approver()).await;
    assert_eq!(t.verdict.decision, "escalate", "a failing sink never fails the turn");
    let te = t.escalation.unwrap();
    let dlv = &te.deliveries[0];
    assert_eq!((dlv.delivered, dlv.attempts, dlv.status), (false, 3, Some(503)), "{dlv:?}");
    assert!(dlv.error.as_deref().unwrap().contains("HTTP 503"), "{dlv:?}");
    assert!(te.note.contains("NOT delivered"), "{}", te.note);
    assert_eq!(seen.lock().unwrap().len(), 3, "the receiver saw every retry");
    drop(rt);

    // A receiver that is down (nothing listens on the port).
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let down = format!("http://127.0.0.1:{port}/hook");
    let d = tempfile::tempdir().unwrap();
    let rt = runtime(
        d.path(),
        &clock,
        &webhook(&down, "MNEMO_TEST_HOOK_SECRET_DOWN", "retries = 3\nbackoff_ms = 10\ntimeout_ms = 3000"),
    )
    .await;
    let te = turn(&rt, &approver()).await.escalation.unwrap();
    let dlv = &te.deliveries[0];
    assert_eq!((dlv.delivered, dlv.attempts), (false, 4), "{dlv:?}");
    let e = rt.escalation(&ns, EscalationId(1)).await.unwrap();
    assert_eq!(e.status, EscalationStatus::Open);
    assert_eq!(e.deliveries.len(), 1);
    assert!(!e.deliveries[0].delivered && e.deliveries[0].error.is_some(), "{:?}", e.deliveries);
    // The next turn on the task sends it again; attempts add up.
    let again = turn(&rt, &approver()).await.escalation.unwrap();
    assert!(again.reused && again.deliveries.len() == 1);
    assert_eq!(rt.escalation(&ns, EscalationId(1)).await.unwrap().deliveries[0].attempts, 8);

    // The timeout bounds the whole delivery, retries included.
    let d = tempfile::tempdir().unwrap();
    let rt = runtime(
        d.path(),
        &clock,
        &webhook(&down, "MNEMO_TEST_HOOK_SECRET_DOWN", "retries = 20\nbackoff_ms = 200\ntimeout_ms = 500"),
    )
    .await;
    let started = std::time::Instant::now();
    let te = turn(&rt, &approver()).await.escalation.unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(3), "{:?}", started.elapsed());
    let dlv = &te.deliveries[0];
    assert!(!dlv.delivered && dlv.attempts < 21, "{dlv:?}");
    assert!(dlv.error.as_deref().unwrap().contains("timeout_ms"), "{dlv:?}");

    // Without its secret a webhook sends nothing unsigned: the failure says why.
    let d = tempfile::tempdir().unwrap();
    let rt = runtime(d.path(), &clock, &webhook(&down, "MNEMO_TEST_HOOK_SECRET_UNSET_NEVER", "")).await;
    let dlv = turn(&rt, &approver()).await.escalation.unwrap().deliveries.remove(0);
    assert_eq!((dlv.delivered, dlv.attempts), (false, 0));
    assert!(dlv.error.unwrap().contains("MNEMO_TEST_HOOK_SECRET_UNSET_NEVER is not set"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refusing_receiver_is_not_retried_and_recording_can_be_turned_off() {
    std::env::set_var("MNEMO_TEST_HOOK_SECRET_4XX", "x");
    let (url, seen) = receiver(403).await;
    let d = tempfile::tempdir().unwrap();
    let clock = clock();
    let rt =
        runtime(d.path(), &clock, &webhook(&url, "MNEMO_TEST_HOOK_SECRET_4XX", "retries = 3\nbackoff_ms = 10")).await;
    let dlv = turn(&rt, &approver()).await.escalation.unwrap().deliveries.remove(0);
    assert_eq!((dlv.delivered, dlv.attempts, dlv.status), (false, 1, Some(403)));
    assert!(dlv.error.unwrap().contains("refused"));
    assert_eq!(seen.lock().unwrap().len(), 1);

    let d = tempfile::tempdir().unwrap();
    let rt = runtime(d.path(), &clock, "[escalation]\nrecord = false\n").await;
    let t = turn(&rt, &approver()).await;
    assert_eq!(t.verdict.decision, "escalate");
    assert!(t.escalation.is_none());
    assert!(rt.escalations(&ns(), false).await.unwrap().is_empty());
    assert!(!d.path().join(mnemo_agent::escalation::LEDGER_FILE).exists());
}

/// A human's answer answers its escalation and nothing else: a tagged line about another claim
/// (or a forget) is refused, naming the line; a tagged line on the escalation's own claim is taken.
#[tokio::test]
async fn an_answer_records_its_own_claim_and_nothing_else() {
    let d = tempfile::tempdir().unwrap();
    let config = mnemo_agent::Config::embedded_default().unwrap();
    let clock = std::sync::Arc::new(mnemo_contract::SimClock::new(
        mnemo_contract::Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap(),
    ));
    let rt = mnemo_agent::Runtime::build(&config, d.path(), clock, vec![]).await.unwrap();
    let ns = mnemo_contract::Namespace::default();
    let task = mnemo_contract::Task {
        query: "Who approves orders for Contoso?".into(),
        about: Some(("Contoso".into(), "approver".into())),
    };
    let t = rt.turn(&ns, &task, &mnemo_core::engine::RecallOptions::default()).await.unwrap();
    let id = t.escalation.and_then(|e| e.id).expect("escalated and recorded");
    for smuggled in ["[SEM] Ana | allergy | none", "Carla\n[FORGET] Ben | phone", "[SEM] Contoso | owner | Dana"] {
        let e = rt.answer_escalation(&ns, id, smuggled, "ops").await.unwrap_err().to_string();
        assert!(e.contains("nothing else") && e.contains("is not taken from an answer"), "{smuggled:?}: {e}");
    }
    let ok = rt.answer_escalation(&ns, id, "[SEM] contoso | Approver | Carla", "ops").await.unwrap();
    assert_eq!(ok.escalation.status.to_string(), "answered");
    let all = rt.engine().all_memories(&ns).await.unwrap();
    assert!(
        all.iter().all(|m| !m.content.contains("Ana") && !m.content.contains("Dana")),
        "nothing smuggled was written"
    );
}
