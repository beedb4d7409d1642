//! A slow model behind an OpenAI-compatible server (a CPU model under llama.cpp), against the
//! mock server: timeouts per tier, timed-out calls not retried by default, the local profile
//! (long timeouts, one call at a time, no key), unpooled embeddings, and JSON mode as a field
//! of the recorded request.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::time::Duration;

use mnemo_contract::*;
use mnemo_llm::cassette::Cassette;
use mnemo_llm::chat::{ChatRequest, EmbedRequest};
use mnemo_llm::mock::{Fault, MockServer};
use mnemo_llm::prompts::Task;
use mnemo_llm::seam::{resolve, LlmSettings, Mode, Seam};
use mnemo_llm::LlmError;

const KEY: &str = "sk-test-slow-secret";

/// Settings for the mock at `base`, with fast backoff and a timeout that a 1 s delay trips.
fn settings(base: &str) -> LlmSettings {
    LlmSettings {
        client: "live".into(),
        base_url: base.into(),
        api_key_env: "TEST_KEY".into(),
        backoff_base_ms: 1,
        backoff_max_ms: 20,
        request_timeout_ms: 150,
        connect_timeout_ms: 500,
        max_retries: 3,
        embedding_dims: 32,
        ..LlmSettings::default()
    }
}

/// Resolve with `TEST_KEY` set (unless `key` is false) plus `extra` variables.
fn seam_with(s: LlmSettings, key: bool, extra: &[(&str, &str)]) -> Result<Seam, LlmError> {
    let extra: Vec<(String, String)> = extra.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    resolve(s, &move |name| {
        if key && name == "TEST_KEY" {
            return Some(KEY.to_string());
        }
        extra.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    })
}

fn table(text: &str) -> toml::Table {
    toml::from_str(text).unwrap()
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

/// A chat request of `task` (the tier is read from its system prompt's marker).
fn request(task: Task) -> ChatRequest {
    ChatRequest {
        model: "m".into(),
        system: task.system_prompt().into(),
        user: r#"{"turn": {"source": "user", "at": "2026-07-01T09:00:00Z", "text": "[EPI] Met Ana."}}"#.into(),
        max_tokens: 64,
        temperature: 0.0,
        json: true,
        repair: None,
    }
}

const SLOW: Duration = Duration::from_millis(1_000);

#[tokio::test]
async fn a_timed_out_chat_call_is_not_retried_by_default() {
    let mock = MockServer::start().await.unwrap();
    let s = settings(&mock.base_url());
    assert!(!s.retry_timeouts, "off by default");
    mock.push_fault(Fault::Delay(SLOW));
    let r = seam_with(s, true, &[]).unwrap().reasoner().unwrap();
    let e = r.extract(&turn("[EPI] Met Ana.")).await.unwrap_err().to_string();
    assert!(e.contains("timed out after 150 ms") && e.contains("not retried"), "{e}");
    assert!(e.contains("retry_timeouts"), "the message says how to change it: {e}");
    assert!(!e.contains("attempts"), "one attempt: {e}");
    assert_eq!(mock.seen().len(), 1, "the server may still be computing it: no second request");
}

#[tokio::test]
async fn a_timed_out_chat_call_is_retried_when_retry_timeouts_is_set() {
    let mock = MockServer::start().await.unwrap();
    let mut s = settings(&mock.base_url());
    s.retry_timeouts = true;
    mock.push_fault(Fault::Delay(SLOW));
    let r = seam_with(s, true, &[]).unwrap().reasoner().unwrap();
    let x = r.extract(&turn("[EPI] Met Ana.")).await.unwrap();
    assert_eq!(x.items.len(), 1, "the retry answers");
    assert_eq!(mock.seen().len(), 2, "one timed out, one answered");
}

#[tokio::test]
async fn a_5xx_is_still_retried_with_timeouts_not_retried() {
    let mock = MockServer::start().await.unwrap();
    let s = settings(&mock.base_url());
    mock.push_fault(Fault::Status(503, None));
    let r = seam_with(s, true, &[]).unwrap().reasoner().unwrap();
    assert_eq!(r.extract(&turn("[EPI] Met Ana.")).await.unwrap().items.len(), 1);
    assert_eq!(mock.seen().len(), 2, "one 503, one answer");
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_named() {
    // A port that was free a moment ago and has no listener now.
    let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let mut s = settings(&format!("http://{addr}/v1"));
    s.max_retries = 1;
    let r = seam_with(s, true, &[]).unwrap().reasoner().unwrap();
    let e = r.extract(&turn("[EPI] Met Ana.")).await.unwrap_err().to_string();
    assert!(e.contains("could not connect") && e.contains("after 2 attempts"), "{e}");
}

#[tokio::test]
async fn the_extraction_tier_timeout_applies_to_extract_prompts() {
    let mock = MockServer::start().await.unwrap();
    let mut s = settings(&mock.base_url());
    s.request_timeout_ms = 10_000;
    s.extraction_timeout_ms = 150;
    s.reasoning_timeout_ms = 10_000;
    let chat = seam_with(s, true, &[]).unwrap().chat().unwrap();
    mock.push_fault(Fault::Delay(SLOW));
    let e = chat.chat(&request(Task::Extract)).await.unwrap_err().to_string();
    assert!(e.contains("timed out after 150 ms"), "the extraction tier's timeout: {e}");
    mock.push_fault(Fault::Delay(SLOW));
    let ok = chat.chat(&request(Task::Reconcile)).await;
    assert!(ok.is_ok(), "the reasoning tier waits its own 10 s: {ok:?}");
    assert_eq!(mock.seen().len(), 2);
}

#[tokio::test]
async fn the_reasoning_tier_timeout_applies_to_reconcile_prompts() {
    let mock = MockServer::start().await.unwrap();
    let mut s = settings(&mock.base_url());
    s.request_timeout_ms = 10_000;
    s.extraction_timeout_ms = 0; // follows request_timeout_ms
    s.reasoning_timeout_ms = 150;
    let seam = seam_with(s, true, &[]).unwrap();
    let chat = seam.chat().unwrap();
    mock.push_fault(Fault::Delay(SLOW));
    let e = chat.chat(&request(Task::Reconcile)).await.unwrap_err().to_string();
    assert!(e.contains("timed out after 150 ms"), "the reasoning tier's timeout: {e}");
    mock.push_fault(Fault::Delay(SLOW));
    let e = chat.chat(&request(Task::ResolveForget)).await.unwrap_err().to_string();
    assert!(e.contains("timed out after 150 ms"), "forget resolution is the reasoning tier too: {e}");
    mock.push_fault(Fault::Delay(SLOW));
    let ok = chat.chat(&request(Task::Extract)).await;
    assert!(ok.is_ok(), "extraction follows request_timeout_ms (10 s): {ok:?}");
    // Embeddings follow request_timeout_ms, not a chat tier's.
    mock.push_fault(Fault::Delay(SLOW));
    let v = seam.embedder().unwrap().embed(&["hello".to_string()]).await.unwrap();
    assert_eq!(v.len(), 1);
}

#[tokio::test]
async fn profile_local_parses_with_its_defaults_and_needs_no_key() {
    let mock = MockServer::start().await.unwrap();
    let t = table(&format!(
        "client = \"live\"\nbase_url = \"{}\"\nprofile = \"local\"\nextraction_model = \"qwen2.5-1.5b\"\nreasoning_model = \"qwen2.5-1.5b\"",
        mock.base_url()
    ));
    let s = LlmSettings::from_table(&t).unwrap();
    assert_eq!(s.profile, "local");
    assert_eq!(s.request_timeout_ms, 600_000);
    assert_eq!(s.tier_timeouts().extraction, Duration::from_secs(600));
    assert_eq!(s.tier_timeouts().reasoning, Duration::from_secs(600));
    assert_eq!(s.max_concurrency, 1);
    assert!(!s.retry_timeouts && s.json_mode);
    // Keys the profile does not touch keep the hosted defaults.
    assert_eq!(s.max_retries, LlmSettings::default().max_retries);

    assert_eq!(s.api_key_env, "", "no key unless one is named");
    // No key named: allowed, and no Authorization header is sent, not even the hosted
    // provider's key if it happens to be in the environment.
    let seam = seam_with(s, false, &[("DASHSCOPE_API_KEY", "sk-hosted-secret")]).unwrap();
    assert_eq!(seam.mode, Mode::Live);
    assert!(seam.describe().contains("no API key") && seam.describe().contains("profile local"), "{}", seam.describe());
    let x = seam.reasoner().unwrap().extract(&turn("[SEM] Ben | phone | 555")).await.unwrap();
    assert_eq!(x.items.len(), 1);
    let seen = mock.seen();
    assert_eq!(seen.len(), 1);
    assert!(!seen[0].had_bearer, "no key, no Authorization header");
    assert_eq!(seen[0].body["model"], "qwen2.5-1.5b");
}

#[tokio::test]
async fn profile_local_sends_a_key_when_one_is_set() {
    let mock = MockServer::start().await.unwrap();
    let s = LlmSettings { base_url: mock.base_url(), ..LlmSettings::for_profile("local").unwrap() };
    let s = LlmSettings { client: "live".into(), api_key_env: "TEST_KEY".into(), ..s };
    let r = seam_with(s, true, &[]).unwrap().reasoner().unwrap();
    r.extract(&turn("[SEM] Ben | phone | 555")).await.unwrap();
    assert!(mock.seen()[0].had_bearer, "a server started with --api-key gets it");
}

#[test]
fn explicit_keys_win_over_the_local_profile() {
    let t = table(
        "profile = \"local\"\nrequest_timeout_ms = 1234\nreasoning_timeout_ms = 99\nmax_concurrency = 3\n\
         json_mode = false\nretry_timeouts = true",
    );
    let s = LlmSettings::from_table(&t).unwrap();
    assert_eq!(s.request_timeout_ms, 1234);
    assert_eq!(s.max_concurrency, 3);
    assert!(!s.json_mode && s.retry_timeouts);
    assert_eq!(s.tier_timeouts().extraction, Duration::from_millis(1234), "0 follows request_timeout_ms");
    assert_eq!(s.tier_timeouts().reasoning, Duration::from_millis(99));
    // And a key the table does not set still takes the profile's value.
    let s = LlmSettings::from_table(&table("profile = \"local\"\nmax_concurrency = 2")).unwrap();
    assert_eq!((s.max_concurrency, s.request_timeout_ms), (2, 600_000));
}

#[test]
fn the_hosted_profile_is_the_default_and_still_needs_a_key() {
    let s = LlmSettings::from_table(&toml::Table::new()).unwrap();
    assert_eq!(s, LlmSettings::default());
    assert_eq!(LlmSettings::from_table(&table("profile = \"hosted\"")).unwrap().request_timeout_ms, 60_000);
    let s = LlmSettings { client: "live".into(), ..LlmSettings::default() };
    let e = seam_with(s, false, &[]).err().unwrap().to_string();
    assert!(e.contains("DASHSCOPE_API_KEY") && e.contains("profile = \"local\""), "{e}");
}

#[test]
fn an_unknown_profile_is_an_error_naming_the_known_ones() {
    let e = LlmSettings::from_table(&table("profile = \"gpu\"")).unwrap_err();
    assert!(matches!(e, LlmError::InvalidSetting(_)), "{e:?}");
    let e = e.to_string();
    assert!(e.contains("\"gpu\"") && e.contains("\"hosted\"") && e.contains("\"local\""), "{e}");
    let e = LlmSettings::from_table(&table("profile = 1")).unwrap_err().to_string();
    assert!(e.contains("profile must be a string"), "{e}");
    // Settings built in code are checked when resolved.
    let s = LlmSettings { profile: "gpu".into(), ..LlmSettings::default() };
    let e = seam_with(s, true, &[]).err().unwrap().to_string();
    assert!(e.contains("\"gpu\"") && e.contains("known profiles"), "{e}");
    // Unknown keys stay errors under a profile.
    let e = LlmSettings::from_table(&table("profile = \"local\"\ntemperature = 1")).unwrap_err().to_string();
    assert!(e.contains("temperature"), "{e}");
}

#[test]
fn a_zero_request_timeout_is_an_error() {
    let s = LlmSettings { request_timeout_ms: 0, ..LlmSettings::default() };
    let e = seam_with(s, true, &[]).err().unwrap().to_string();
    assert!(e.contains("request_timeout_ms = 0"), "{e}");
}

#[tokio::test]
async fn a_per_token_embedding_answer_gets_the_pooling_hint() {
    let mock = MockServer::start().await.unwrap();
    let seam = seam_with(settings(&mock.base_url()), true, &[]).unwrap();
    mock.push_fault(Fault::PerTokenEmbeddings(7));
    let req = EmbedRequest { model: "nomic".into(), dims: 32, texts: vec!["hello there".into()] };
    let e = seam.embed().unwrap().embed(&req).await.unwrap_err();
    assert_eq!(e.kind(), ModelErrorKind::BadAnswer);
    let e = e.to_string();
    assert!(e.contains("data[0].embedding is 7 vectors of 32 numbers (one per token)"), "{e}");
    assert!(e.contains("does not pool") && e.contains("--pooling mean") && e.contains("pooling_type=int:1"), "{e}");
    // Through the core Embedder too, the hint survives.
    mock.push_fault(Fault::PerTokenEmbeddings(3));
    let e = seam.embedder().unwrap().embed(&["x".to_string()]).await.unwrap_err().to_string();
    assert!(e.contains("3 vectors of 32 numbers") && e.contains("--pooling mean"), "{e}");
}

#[tokio::test]
async fn json_mode_off_is_recorded_as_sent_and_keys_the_cassette() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("cassette");
    let cdir = cassette.to_str().unwrap();
    let mock = MockServer::start().await.unwrap();
    let mut s = settings(&mock.base_url());
    s.request_timeout_ms = 5_000;
    s.json_mode = false;
    s.cassette_mock = true;
    let r = seam_with(s.clone(), true, &[("MNEMO_RECORD", cdir)]).unwrap().reasoner().unwrap();
    let recorded = r.extract(&turn("[SEM] Ben | phone | 555")).await.unwrap();
    let seen = mock.seen();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].body.get("response_format").is_none(), "json_mode = false sends no response_format");
    let c = Cassette::load(&cassette).unwrap();
    assert_eq!(c.entries.len(), 1);
    assert_eq!(c.entries[0].request["json"], false, "the recorded request says what was sent");
    mock.stop();

    // Replay with the same json_mode hits; with JSON mode on it is another request (a miss).
    let replay = |json_mode: bool| {
        let s = LlmSettings { json_mode, ..s.clone() };
        seam_with(s, false, &[("MNEMO_REPLAY", cdir)]).unwrap().reasoner().unwrap()
    };
    let got = replay(false).extract(&turn("[SEM] Ben | phone | 555")).await.unwrap();
    assert_eq!(got.items, recorded.items);
    let e = replay(true).extract(&turn("[SEM] Ben | phone | 555")).await.unwrap_err().to_string();
    assert!(e.contains("replay miss"), "JSON mode is part of the key: {e}");
}

#[tokio::test]
async fn json_mode_on_sends_response_format_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("cassette");
    let mock = MockServer::start().await.unwrap();
    let mut s = settings(&mock.base_url());
    s.request_timeout_ms = 5_000;
    s.cassette_mock = true;
    assert!(s.json_mode, "on by default");
    let r = seam_with(s, true, &[("MNEMO_RECORD", cassette.to_str().unwrap())]).unwrap().reasoner().unwrap();
    r.extract(&turn("[SEM] Ben | phone | 555")).await.unwrap();
    assert_eq!(mock.seen()[0].body["response_format"]["type"], "json_object");
    assert_eq!(Cassette::load(&cassette).unwrap().entries[0].request["json"], true);
}

#[tokio::test]
async fn the_fake_answers_whatever_json_mode_says() {
    // json_mode describes a server; the fake is none, and refuses structured prompts without it.
    let s = LlmSettings { json_mode: false, ..LlmSettings::default() };
    let r = seam_with(s, false, &[]).unwrap().reasoner().unwrap();
    assert_eq!(r.extract(&turn("[SEM] Ben | phone | 555")).await.unwrap().items.len(), 1);
}

#[test]
fn the_shipped_default_config_leaves_the_local_profile_its_defaults() {
    // The config loader merges a user's [llm] keys over config/default.toml's, so every key
    // that file sets counts as explicit and would beat the profile: it must set none of them.
    let shipped: toml::Table = toml::from_str(include_str!("../../../config/default.toml")).unwrap();
    let mut llm = shipped["llm"].as_table().unwrap().clone();
    let hosted = LlmSettings::from_table(&llm).unwrap();
    assert_eq!(hosted.api_key_env, "DASHSCOPE_API_KEY", "hosted still needs DashScope's key");
    llm.insert("profile".into(), toml::Value::String("local".into()));
    let local = LlmSettings::from_table(&llm).unwrap();
    assert_eq!(local.request_timeout_ms, 600_000);
    assert_eq!(local.max_concurrency, 1);
    assert_eq!(local.api_key_env, "", "no hosted key sent to a local server");
    assert!(local.json_mode && !local.retry_timeouts);
}
