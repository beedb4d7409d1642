//! The live client against a mock OpenAI-compatible server on loopback: retries, give-up,
//! timeouts, repair, echoed models, embeddings, and record → replay with the mock stopped.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::time::Duration;

use mnemo_contract::*;
use mnemo_llm::cassette::{Cassette, CASSETTE_FILE};
use mnemo_llm::mock::{Fault, MockServer};
use mnemo_llm::seam::{resolve, LlmSettings, Mode, Seam};
use serde_json::json;

const KEY: &str = "sk-test-0123456789-secret";

/// Settings for the mock at `base`, with fast backoff (no test sleeps for seconds).
fn settings(base: &str) -> LlmSettings {
    LlmSettings {
        client: "live".into(),
        base_url: base.into(),
        api_key_env: "TEST_KEY".into(),
        backoff_base_ms: 1,
        backoff_max_ms: 20,
        request_timeout_ms: 2_000,
        connect_timeout_ms: 500,
        max_retries: 3,
        embedding_dims: 32,
        ..LlmSettings::default()
    }
}

fn seam_with(s: LlmSettings, extra: &[(&str, &str)]) -> Result<Seam, mnemo_llm::LlmError> {
    let extra: Vec<(String, String)> = extra.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    resolve(s, &move |name| {
        if name == "TEST_KEY" {
            return Some(KEY.to_string());
        }
        extra.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    })
}

fn turn(text: &str) -> Turn {
    Turn {
        id: TurnId(1),
        namespace: Namespace::default(),
        source: "user".into(),
        at: Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap(),
        text: text.into(),
        external_id: None,
    }
}

fn allergy_items() -> serde_json::Value {
    json!([{"memory": {"kind": "semantic", "content": "Maria Lopez is allergic to penicillin.",
        "claim": {"entity": "Maria Lopez", "attribute": "allergies", "value": "penicillin"},
        "entities": ["Maria Lopez"], "importance": null, "pinned": false, "cardinality": "many"}}])
}

#[tokio::test]
async fn prose_is_extracted_through_the_live_client() {
    let mock = MockServer::start().await.unwrap();
    mock.script_extraction("allergic to penicillin", allergy_items());
    let r = seam_with(settings(&mock.base_url()), &[]).unwrap().reasoner().unwrap();
    let x = r.extract(&turn("Hi, this is Maria Lopez. I'm allergic to penicillin.")).await.unwrap();
    let c: Vec<_> = x.candidates().collect();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].cardinality, Cardinality::Many);
    assert_eq!(x.model, ModelInfo { client: ClientKind::Live, model: "qwen-flash".into() });
    let seen = mock.seen();
    assert!(seen[0].had_bearer);
    assert_eq!(seen[0].body["model"], "qwen-flash", "extraction goes to the extraction tier");
    assert_eq!(seen[0].body["response_format"]["type"], "json_object");
    assert!(seen[0].body["max_tokens"].as_u64().unwrap() <= 1024, "answers are capped");
}

#[tokio::test]
async fn a_429_then_success_is_retried_honouring_retry_after() {
    let mock = MockServer::start().await.unwrap();
    mock.push_fault(Fault::Status(429, Some(0)));
    let r = seam_with(settings(&mock.base_url()), &[]).unwrap().reasoner().unwrap();
    let x = r.extract(&turn("[SEM] Ben | phone | 555")).await.unwrap();
    assert_eq!(x.items.len(), 1);
    assert_eq!(mock.seen().len(), 2, "one 429, one success");
}

#[tokio::test]
async fn a_5xx_until_give_up_names_endpoint_status_and_model_never_the_key() {
    let mock = MockServer::start().await.unwrap();
    mock.set_always(Some(Fault::Status(500, None)));
    let r = seam_with(settings(&mock.base_url()), &[]).unwrap().reasoner().unwrap();
    let e = r.extract(&turn("[SEM] Ben | phone | 555")).await.unwrap_err().to_string();
    assert!(e.contains("HTTP status 500"), "{e}");
    assert!(e.contains("/chat/completions") && e.contains("qwen-flash"), "{e}");
    assert!(e.contains("after 4 attempts"), "{e}");
    assert!(!e.contains(KEY), "the key never appears: {e}");
    assert_eq!(mock.seen().len(), 4, "1 attempt + 3 retries, then give up");
}

#[tokio::test]
async fn a_timeout_is_retried_then_named() {
    let mock = MockServer::start().await.unwrap();
    let mut s = settings(&mock.base_url());
    s.request_timeout_ms = 150;
    // Timeouts are retried only when asked (tests/slow_models.rs covers the default).
    s.retry_timeouts = true;
    mock.push_fault(Fault::Delay(Duration::from_millis(1_000)));
    let r = seam_with(s.clone(), &[]).unwrap().reasoner().unwrap();
    assert_eq!(r.extract(&turn("[EPI] Met Ana.")).await.unwrap().items.len(), 1, "the retry succeeds");
    s.max_retries = 0;
    mock.push_fault(Fault::Delay(Duration::from_millis(1_000)));
    let r = seam_with(s, &[]).unwrap().reasoner().unwrap();
    let e = r.extract(&turn("[EPI] Met Ana.")).await.unwrap_err().to_string();
    assert!(e.contains("timed out"), "{e}");
}

#[tokio::test]
async fn malformed_json_is_repaired_once() {
    let mock = MockServer::start().await.unwrap();
    mock.push_fault(Fault::Malformed);
    let r = seam_with(settings(&mock.base_url()), &[]).unwrap().reasoner().unwrap();
    let x = r.extract(&turn("[SEM] Ben | phone | 555")).await.unwrap();
    assert_eq!(x.items.len(), 1);
    let seen = mock.seen();
    assert_eq!(seen.len(), 2);
    let msgs = seen[1].body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 4, "system, user, the refused answer, the correction request");
    assert!(msgs[3]["content"].as_str().unwrap().contains("not valid JSON"));
    // Twice malformed: a clear error after the one repair.
    mock.push_fault(Fault::Malformed);
    mock.push_fault(Fault::Malformed);
    let e = r.extract(&turn("[SEM] Ben | phone | 555")).await.unwrap_err().to_string();
    assert!(e.contains("not valid JSON") && e.contains("repair"), "{e}");
}

#[tokio::test]
async fn the_echoed_model_is_the_one_recorded() {
    let mock = MockServer::start().await.unwrap();
    mock.echo_model("qwen-flash-2025-07-28");
    let r = seam_with(settings(&mock.base_url()), &[]).unwrap().reasoner().unwrap();
    let x = r.extract(&turn("[SEM] Ben | phone | 555")).await.unwrap();
    assert_eq!(x.model.model, "qwen-flash-2025-07-28", "the answer's model, not the one asked for");
}

#[tokio::test]
async fn embeddings_endpoint() {
    let mock = MockServer::start().await.unwrap();
    mock.echo_model("text-embedding-v4-echo");
    let seam = seam_with(settings(&mock.base_url()), &[]).unwrap();
    let e = seam.embedder().unwrap();
    assert_eq!(e.model_id(), "text-embedding-v4@32");
    let texts: Vec<String> = (0..23).map(|i| format!("text number {i}")).collect();
    let v = e.embed(&texts).await.unwrap();
    assert_eq!(v.len(), 23);
    assert!(v.iter().all(|x| x.len() == 32));
    let n: f32 = v[0].iter().map(|x| x * x).sum();
    assert!((n - 1.0).abs() < 1e-4, "unit vectors");
    let seen = mock.seen();
    assert_eq!(seen.len(), 3, "batches of at most 10");
    assert_eq!(seen[0].path, "/v1/embeddings");
    assert_eq!(seen[0].body["dimensions"], 32);
}

#[tokio::test]
async fn record_then_replay_with_the_mock_stopped_is_identical() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("cassette");
    let cdir = cassette.to_str().unwrap();
    let mock = MockServer::start().await.unwrap();
    mock.script_extraction("allergic to penicillin", allergy_items());
    mock.echo_model("qwen-flash-echoed");
    let mut s = settings(&mock.base_url());
    s.cassette_mock = true;
    let turns =
        ["Hi, this is Maria Lopez. I'm allergic to penicillin.", "[SEM] Ben | phone | 555\n[FORGET] Ana | email"];
    let rec = seam_with(s.clone(), &[("MNEMO_RECORD", cdir)]).unwrap();
    assert!(matches!(rec.mode, Mode::Record(_)));
    let r = rec.reasoner().unwrap();
    let mut recorded = Vec::new();
    for t in turns {
        recorded.push(r.extract(&turn(t)).await.unwrap());
    }
    let emb = rec.embedder().unwrap().embed(&["hello".to_string()]).await.unwrap();
    mock.stop();

    let text = std::fs::read_to_string(cassette.join(CASSETTE_FILE)).unwrap();
    assert!(!text.contains(KEY), "the key is never written");
    let c = Cassette::load(&cassette).unwrap();
    assert!(c.header.mock && c.header.base_url.starts_with("http://127.0.0.1:"));
    assert!(c.header.echoed_models.contains(&"qwen-flash-echoed".to_string()));
    assert!(c.entries.iter().all(|e| e.usage.is_some()), "usage stored per call");

    // Replay: no key, no network (the mock is gone), MNEMO_OFFLINE=1 is fine.
    let mut rs = settings("http://127.0.0.1:9/v1");
    rs.api_key_env = "NOT_SET_ANYWHERE".into();
    let rep = seam_with(rs, &[("MNEMO_REPLAY", cdir), ("MNEMO_OFFLINE", "1")]).unwrap();
    let r = rep.reasoner().unwrap();
    for (t, want) in turns.iter().zip(&recorded) {
        let got = r.extract(&turn(t)).await.unwrap();
        assert_eq!(got.items, want.items);
        assert_eq!(got.model, ModelInfo { client: ClientKind::Replay, model: "qwen-flash-echoed".into() });
        assert_eq!(serde_json::to_string(&got.items).unwrap(), serde_json::to_string(&want.items).unwrap());
    }
    assert_eq!(rep.embedder().unwrap().embed(&["hello".to_string()]).await.unwrap(), emb);
    assert_eq!(std::fs::read_to_string(cassette.join(CASSETTE_FILE)).unwrap(), text, "replay writes nothing");

    // A miss names the request.
    let e = r.extract(&turn("something never recorded")).await.unwrap_err().to_string();
    assert!(e.contains("replay miss") && e.contains("chat:extract") && e.contains("something never recorded"), "{e}");
}

#[tokio::test]
async fn the_seam_is_loud() {
    let s = settings("http://127.0.0.1:9/v1");
    let e = resolve(s.clone(), &|_| None).err().unwrap().to_string();
    assert!(e.contains("TEST_KEY") && e.contains("API key"), "{e}");
    let e = seam_with(s.clone(), &[("MNEMO_OFFLINE", "1")]).err().unwrap().to_string();
    assert!(e.contains("MNEMO_OFFLINE"), "{e}");
    let e = seam_with(s.clone(), &[("MNEMO_RECORD", "/tmp/a"), ("MNEMO_REPLAY", "/tmp/b")]).err().unwrap().to_string();
    assert!(e.contains("MNEMO_REPLAY") && e.contains("MNEMO_RECORD"), "{e}");
    let seam = seam_with(s.clone(), &[("MNEMO_LLM_BASE_URL", "http://10.0.0.1:1/v1")]).unwrap();
    assert_eq!(seam.settings.base_url, "http://10.0.0.1:1/v1");
    assert!(seam.describe().contains("live") && !seam.describe().contains(KEY));
    let fake = LlmSettings::default();
    assert_eq!(resolve(fake, &|_| None).unwrap().mode, Mode::Fake);
    let e =
        seam_with(s, &[("MNEMO_REPLAY", "/nonexistent/cassette-dir")]).unwrap().reasoner().err().unwrap().to_string();
    assert!(e.contains("/nonexistent/cassette-dir"), "{e}");
}
