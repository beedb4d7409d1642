//! The model seam as layers: `Metered<M>` and `Recorder<M>` over any model, recording that
//! appends one line per call, a crash that leaves the calls before it readable, replay misses
//! that name the call, and the committed cassettes (the earlier framing) replaying every answer
//! as recorded.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use mnemo_contract::{ClientKind, ModelInfo, Namespace, Reasoner as _, Timestamp, Turn, TurnId};
use mnemo_llm::cassette::{
    key_of, normalise_chat, normalise_embed, Cassette, Entry, Meter, Metered, Recorder, Replayer, Tape, UsageTally,
    CASSETTE_FILE, FORMAT, LEGACY_FILE, LEGACY_FORMAT,
};
use mnemo_llm::usage::Counted;
use mnemo_llm::{
    ChatModel, ChatRequest, ChatResponse, EmbedModel, EmbedRequest, EmbedResponse, FakeQwen, LlmError, LlmReasoner,
};

const URL: &str = "http://stub.invalid/v1";

/// A model that answers every request (chat and embeddings), reports usage, and counts its calls.
#[derive(Debug, Default)]
struct Stub {
    calls: AtomicUsize,
}

impl Stub {
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl ChatModel for Stub {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(ChatResponse {
            content: format!("answer to {}", req.user),
            model: "stub-echoed".into(),
            client: ClientKind::Live,
            usage: Some((req.user.len() as u32, 7)),
        })
    }
    fn configured(&self) -> ModelInfo {
        ModelInfo { client: ClientKind::Live, model: "stub".into() }
    }
}

#[async_trait]
impl EmbedModel for Stub {
    async fn embed(&self, req: &EmbedRequest) -> Result<EmbedResponse, LlmError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(EmbedResponse {
            vectors: req.texts.iter().map(|t| vec![t.len() as f32, 0.25, -1.5e-3]).collect(),
            model: "stub-embed".into(),
            client: ClientKind::Live,
            prompt_tokens: Some(req.texts.len() as u32),
        })
    }
}

fn ask(user: &str) -> ChatRequest {
    ChatRequest {
        model: "stub".into(),
        system: "be brief".into(),
        user: user.into(),
        max_tokens: 64,
        temperature: 0.0,
        json: false,
        repair: None,
    }
}

fn texts(t: &[&str]) -> EmbedRequest {
    EmbedRequest { model: "stub-embed".into(), dims: 3, texts: t.iter().map(|s| s.to_string()).collect() }
}

fn lines(path: &Path) -> usize {
    std::fs::read(path).unwrap().iter().filter(|b| **b == b'\n').count()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[tokio::test]
async fn a_metered_fake_chat_counts_its_calls() {
    // The offline fake under the reasoner: it reports no tokens, so calls are counted at zero.
    let chat = Arc::new(Metered::new(FakeQwen::default()));
    let reasoner = LlmReasoner::new(chat.clone()).with_json_mode(true);
    let turn = Turn {
        id: TurnId(1),
        namespace: Namespace::default(),
        source: "user".into(),
        at: Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap(),
        text: "[SEM] Ben | phone | 555".into(),
        external_id: None,
    };
    reasoner.extract(&turn).await.unwrap();
    reasoner.extract(&turn).await.unwrap();
    let t = chat.take();
    assert_eq!(t.by_kind["chat:extract"], (2, 0, 0));
    assert_eq!(t.models, ["fake-qwen"]);
    assert_eq!(t.clients, ["fake"]);
    assert_eq!(chat.take(), UsageTally::default(), "take starts again from zero");
    assert_eq!(chat.configured(), FakeQwen::default().configured(), "the layer reports the model inside");
}

#[tokio::test]
async fn one_meter_over_chat_and_embeddings_counts_tokens_per_kind() {
    let meter = Meter::new();
    let stub = Arc::new(Stub::default());
    let chat = meter.wrap(stub.clone());
    let embed = meter.wrap(stub.clone());
    chat.chat(&ask("hello")).await.unwrap();
    chat.chat(&ask("hi")).await.unwrap();
    embed.embed(&texts(&["x", "y", "z"])).await.unwrap();
    let t = meter.take();
    assert_eq!(t.by_kind["chat:other"], (2, 5 + 2, 7 + 7));
    assert_eq!(t.by_kind["embed"], (1, 3, 0));
    assert_eq!(t.total(), 7 + 14 + 3);
    assert_eq!(t.models, ["stub-echoed", "stub-embed"]);
    assert_eq!(t.clients, ["live"]);
    assert_eq!(stub.calls(), 3);
}

#[tokio::test]
async fn record_then_replay_round_trips_through_stacked_layers() {
    let dir = tempfile::tempdir().unwrap();
    let cdir = dir.path().join("tape");
    let stub = Arc::new(Stub::default());
    // The seam's stack, plus a meter on top: Metered<Counted<Recorder<Stub>>>.
    let tape = Tape::open(&cdir, URL, true).unwrap();
    let chat = Metered::new(Counted(Recorder::new(stub.clone(), tape.clone())));
    let embed = Metered::new(Counted(Recorder::new(stub.clone(), tape.clone())));
    assert_eq!(chat.configured(), stub.configured(), "provenance: the recorded model, not the layers");
    let mut answers = Vec::new();
    for u in ["one", "two", "three"] {
        let r = chat.chat(&ask(u)).await.unwrap();
        assert_eq!((r.client, r.model.as_str()), (ClientKind::Live, "stub-echoed"), "passed through untouched");
        answers.push(r);
    }
    let vectors = embed.embed(&texts(&["alpha", "beta"])).await.unwrap();
    assert_eq!(chat.take().by_kind["chat:other"].0, 3);
    drop((chat, embed, tape));
    let recorded_calls = stub.calls();

    let replay = Metered::new(Replayer::open(&cdir).unwrap());
    for (u, want) in ["one", "two", "three"].into_iter().zip(&answers) {
        let got = replay.chat(&ask(u)).await.unwrap();
        assert_eq!(got, ChatResponse { client: ClientKind::Replay, ..want.clone() });
    }
    let got = replay.embed(&texts(&["alpha", "beta"])).await.unwrap();
    assert_eq!(got, EmbedResponse { client: ClientKind::Replay, ..vectors });
    assert_eq!(stub.calls(), recorded_calls, "replay never calls the model");
    let t = replay.take();
    assert_eq!(t.clients, ["replay"]);
    assert_eq!(t.by_kind["chat:other"], (3, 3 + 3 + 5, 21), "replayed usage is the recorded usage");

    let h = Replayer::open(&cdir).unwrap().header().clone();
    assert_eq!(h.format, FORMAT);
    assert_eq!((h.base_url.as_str(), h.mock), (URL, true));
    assert_eq!(h.echoed_models, ["stub-echoed", "stub-embed"]);
    // Compared as times: RFC 3339 text drops trailing zeros of the fraction ("21.94Z" is
    // before "21.943Z" in time but after it as text).
    let time = |t: &str| mnemo_contract::Timestamp::parse_rfc3339(t).unwrap_or_else(|e| panic!("{t}: {e}"));
    assert!(time(&h.updated_at) >= time(&h.recorded_at), "{h:?}");
}

#[tokio::test]
async fn recording_appends_one_line_per_new_call_and_never_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    let cdir = dir.path().join("tape");
    let chat = Recorder::open(&cdir, URL, false, Stub::default()).unwrap();
    let file = cdir.join(CASSETTE_FILE);
    assert_eq!(chat.tape().path(), file.canonicalize().unwrap());
    let mut before = std::fs::read(&file).unwrap();
    assert_eq!(lines(&file), 1, "a new cassette holds its header line");
    for i in 0..25 {
        chat.chat(&ask(&format!("question {i}"))).await.unwrap();
        let after = std::fs::read(&file).unwrap();
        assert!(after.starts_with(&before), "call {i}: the bytes already written were rewritten");
        let added = &after[before.len()..];
        assert_eq!(added.iter().filter(|b| **b == b'\n').count(), 1, "call {i}: one line added");
        assert_eq!(added.last(), Some(&b'\n'), "call {i}: a whole line");
        let e: Entry = serde_json::from_slice(added).unwrap();
        assert_eq!(e.request["user"], format!("question {i}"));
        assert!(e.at.is_some());
        // The growth is this call's entry and nothing else: N calls write O(N) bytes.
        assert_eq!(added.len(), serde_json::to_vec(&e).unwrap().len() + 1);
        before = after;
    }
    // The same request again: the first answer is kept, nothing is written.
    chat.chat(&ask("question 3")).await.unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), before);
    assert_eq!(Cassette::load(&cdir).unwrap().entries.len(), 25);
}

#[tokio::test]
async fn the_chat_and_embeddings_recorders_of_a_directory_share_one_tape() {
    let dir = tempfile::tempdir().unwrap();
    let cdir = dir.path().join("tape");
    let chat = Recorder::open(&cdir, URL, true, Stub::default()).unwrap();
    let embed = Recorder::open(&cdir, URL, true, Stub::default()).unwrap();
    assert!(Arc::ptr_eq(chat.tape(), embed.tape()));
    chat.chat(&ask("q")).await.unwrap();
    embed.embed(&texts(&["t"])).await.unwrap();
    assert_eq!(lines(&cdir.join(CASSETTE_FILE)), 3, "one header, two entries");
    let e = Recorder::open(&cdir, "http://elsewhere.invalid/v1", true, Stub::default()).unwrap_err().to_string();
    assert!(e.contains("would mix sources") && e.contains("elsewhere"), "{e}");
    drop((chat, embed));
    // Reopened later (by a new session): appends after what is there, same source only.
    let e = Recorder::open(&cdir, URL, false, Stub::default()).unwrap_err().to_string();
    assert!(e.contains("mock: true") && e.contains("would mix sources"), "{e}");
    let again = Recorder::open(&cdir, URL, true, Stub::default()).unwrap();
    again.chat(&ask("q")).await.unwrap();
    again.chat(&ask("r")).await.unwrap();
    assert_eq!(lines(&cdir.join(CASSETTE_FILE)), 4, "a known call is not added twice across sessions");
}

#[tokio::test]
async fn a_crash_mid_session_leaves_the_calls_before_it_readable() {
    let dir = tempfile::tempdir().unwrap();
    let cdir = dir.path().join("tape");
    let chat = Recorder::open(&cdir, URL, true, Stub::default()).unwrap();
    for u in ["one", "two", "three"] {
        chat.chat(&ask(u)).await.unwrap();
    }
    // The process dies: no drop, no final sync ...
    std::mem::forget(chat);
    // ... in the middle of writing a fourth entry.
    let file = cdir.join(CASSETTE_FILE);
    let torn = br#"{"key":"4e07408562bedb8b60ce05c1decfe3ad16b72230967de01f640b7e4729b49fce","kind":"chat:oth"#;
    std::fs::OpenOptions::new().append(true).open(&file).unwrap().write_all(torn).unwrap();

    let c = Cassette::load(&cdir).unwrap();
    assert_eq!(
        c.entries.iter().map(|e| e.request["user"].as_str().unwrap()).collect::<Vec<_>>(),
        ["one", "two", "three"]
    );
    let replay = Replayer::open(&cdir).unwrap();
    for u in ["one", "two", "three"] {
        assert_eq!(replay.chat(&ask(u)).await.unwrap().content, format!("answer to {u}"));
    }

    // The next session (here: the same bytes in another directory, as a new process would find
    // them) cuts the torn write off and appends after the last whole line.
    let next = dir.path().join("next");
    std::fs::create_dir_all(&next).unwrap();
    std::fs::copy(&file, next.join(CASSETTE_FILE)).unwrap();
    let chat = Recorder::open(&next, URL, true, Stub::default()).unwrap();
    chat.chat(&ask("four")).await.unwrap();
    drop(chat);
    let text = std::fs::read_to_string(next.join(CASSETTE_FILE)).unwrap();
    assert!(!text.contains("4e07408562bedb8b"), "the torn write is gone");
    assert!(text.ends_with('\n'));
    let c = Cassette::load(&next).unwrap();
    assert_eq!(c.entries.len(), 4);
    assert_eq!(c.entries[3].request["user"], "four");

    // A damaged line that is whole (not a torn tail) is an error naming the line.
    let bad = dir.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join(CASSETTE_FILE), format!("{}not json\n", &text[..text.find('\n').unwrap() + 1])).unwrap();
    let e = Cassette::load(&bad).unwrap_err().to_string();
    assert!(e.contains("line 2") && e.contains(CASSETTE_FILE), "{e}");
}

#[tokio::test]
async fn a_replay_miss_is_an_error_naming_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let cdir = dir.path().join("tape");
    let stub = Arc::new(Stub::default());
    let chat = Recorder::open(&cdir, URL, true, stub.clone()).unwrap();
    chat.chat(&ask("recorded")).await.unwrap();
    drop(chat);
    let replay = Replayer::open(&cdir).unwrap();
    let e = replay.chat(&ask("never recorded")).await.unwrap_err();
    assert!(matches!(e, LlmError::Cassette(_)));
    let e = e.to_string();
    assert!(
        e.contains("replay miss")
            && e.contains("chat:other")
            && e.contains("never recorded")
            && e.contains("\"stub\"")
            && e.contains(CASSETTE_FILE),
        "{e}"
    );
    let e = replay.embed(&texts(&["a", "b"])).await.unwrap_err().to_string();
    assert!(e.contains("replay miss") && e.contains("embed") && e.contains("2 texts"), "{e}");
    let e = Replayer::open(&dir.path().join("nothing-here")).unwrap_err().to_string();
    assert!(e.contains("nothing-here") && e.contains(CASSETTE_FILE) && e.contains(LEGACY_FILE), "{e}");
}

/// Every committed cassette (the earlier framing, `cassette.json`) loads, and every entry
/// replays exactly the answer it recorded.
#[tokio::test]
async fn the_committed_cassettes_replay_every_answer_as_recorded() {
    let mut seen = 0;
    for d in std::fs::read_dir(repo().join("bench/cassettes")).unwrap() {
        let dir = d.unwrap().path();
        // Either framing: the earlier `cassette.json`, or `cassette.jsonl` as recorded now.
        let format = if dir.join(CASSETTE_FILE).exists() {
            FORMAT
        } else if dir.join(LEGACY_FILE).exists() {
            LEGACY_FORMAT
        } else {
            continue;
        };
        let c = Cassette::load(&dir).unwrap();
        assert_eq!(c.header.format, format, "{}", dir.display());
        let replay = Replayer::open(&dir).unwrap();
        assert_eq!(replay.header(), &c.header);
        assert!(!c.entries.is_empty());
        for e in &c.entries {
            if e.kind == "embed" {
                let req: EmbedRequest = serde_json::from_value(e.request.clone()).unwrap();
                assert_eq!(key_of(&normalise_embed(&req)), e.key);
                let got = replay.embed(&req).await.unwrap();
                let want: Vec<Vec<f32>> = serde_json::from_value(e.response["vectors"].clone()).unwrap();
                assert_eq!(got.vectors, want);
                assert_eq!(got.model, e.response["model"].as_str().unwrap());
            } else {
                let req: ChatRequest = serde_json::from_value(e.request.clone()).unwrap();
                assert_eq!(key_of(&normalise_chat(&req)), e.key, "{}: {}", dir.display(), e.kind);
                let got = replay.chat(&req).await.unwrap();
                assert_eq!(got.content, e.response["content"].as_str().unwrap());
                assert_eq!(got.model, e.response["model"].as_str().unwrap());
                assert_eq!(got.client, ClientKind::Replay);
                assert_eq!(got.usage, e.usage.map(|u| (u.prompt_tokens, u.completion_tokens)));
            }
            seen += 1;
        }
    }
    assert!(seen >= 90, "only {seen} committed entries found");
}

/// Recording into a directory of the earlier framing converts it once (same header, same
/// entries, the old file removed), then appends; a different source is refused before anything
/// is touched.
#[tokio::test]
async fn recording_into_a_legacy_cassette_converts_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let cdir = dir.path().join("prose-demo");
    std::fs::create_dir_all(&cdir).unwrap();
    let committed = repo().join("bench/cassettes/prose-demo").join(LEGACY_FILE);
    std::fs::copy(&committed, cdir.join(LEGACY_FILE)).unwrap();
    let old = Cassette::load(&cdir).unwrap();

    let e = Recorder::open(&cdir, URL, true, Stub::default()).unwrap_err().to_string();
    assert!(e.contains("would mix sources"), "{e}");
    assert!(cdir.join(LEGACY_FILE).exists() && !cdir.join(CASSETTE_FILE).exists(), "untouched");

    let chat = Recorder::open(&cdir, &old.header.base_url, old.header.mock, Stub::default()).unwrap();
    assert!(!cdir.join(LEGACY_FILE).exists() && cdir.join(CASSETTE_FILE).exists());
    let converted = Cassette::load(&cdir).unwrap();
    assert_eq!(converted.entries, old.entries);
    assert_eq!(converted.header.format, FORMAT);
    assert_eq!(converted.header, mnemo_llm::cassette::Header { format: FORMAT.into(), ..old.header.clone() });
    assert_eq!(lines(&cdir.join(CASSETTE_FILE)), 1 + old.entries.len());

    chat.chat(&ask("a new call")).await.unwrap();
    drop(chat);
    let after = Cassette::load(&cdir).unwrap();
    assert_eq!(after.entries[..old.entries.len()], old.entries[..]);
    assert_eq!(after.entries.len(), old.entries.len() + 1);
    assert!(after.header.echoed_models.contains(&"stub-echoed".to_string()));
    assert!(after.header.updated_at > old.header.updated_at);
    // The old answers replay as before.
    let replay = Replayer::open(&cdir).unwrap();
    let e = old.entries.iter().find(|e| e.kind.starts_with("chat:")).unwrap();
    let req: ChatRequest = serde_json::from_value(e.request.clone()).unwrap();
    assert_eq!(replay.chat(&req).await.unwrap().content, e.response["content"].as_str().unwrap());
}
