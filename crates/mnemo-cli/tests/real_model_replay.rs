//! The real-model regression suite (eval/real-model/README.md): the clinic and buyer
//! conversations as Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, llama.cpp, one CPU thread) answered
//! them, replayed from the committed cassette into a fresh data directory — so every change is
//! checked against a real small model's answers, not only the mock's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use serde_json::Value;

mod cli_run;
use cli_run::{replaying, repo_root};

const CASSETTE: &str = "bench/cassettes/real-qwen2.5-coder-1.5b";

/// The same conversations recorded with the extract prompt's date instruction on
/// (`[llm] ask_dates = true`): what it costs a small model (docs/time.md).
const ASK_DATES: &str = "bench/cassettes/real-qwen2.5-coder-1.5b-ask-dates";

/// `bench extraction` over the suite's conversations, replayed from the cassette; the rows by
/// conversation name.
fn replay() -> Vec<Value> {
    replay_from(CASSETTE, "eval/real-model/local-qwen.toml")
}

/// [`replay`] from `cassette` under `config`.
fn replay_from(cassette: &str, config: &str) -> Vec<Value> {
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("report.json");
    let o = replaying(cassette)
        .arg("--data-dir")
        .arg(out.path().join("unused"))
        .args(["--config", config, "bench", "extraction"])
        .args(["--conversations", "eval/real-model/conversations", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    v["rows"].as_array().unwrap().clone()
}

fn row<'a>(rows: &'a [Value], name: &str) -> &'a Value {
    rows.iter().find(|r| r["conversation"] == name).unwrap_or_else(|| panic!("no row {name}"))
}

/// Memories whose content or claim mentions every one of `words` (case-insensitive).
fn memories<'a>(r: &'a Value, words: &[&str]) -> Vec<&'a Value> {
    r["all_memories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            let text =
                format!("{} {}", m["content"].as_str().unwrap_or(""), m["claim"].as_str().unwrap_or("")).to_lowercase();
            words.iter().all(|w| text.contains(&w.to_lowercase()))
        })
        .collect()
}

fn active(m: &&Value) -> bool {
    m["status"] == "active"
}

#[test]
fn the_clinic_keeps_both_allergies_and_the_new_dose_replaces_the_old() {
    let rows = replay();
    let clinic = row(&rows, "clinic");
    assert!(
        clinic["models"].as_array().unwrap().iter().any(|m| m == "replay / qwen2.5-coder-1.5b-instruct"),
        "{clinic:#}"
    );
    assert_eq!(clinic["wrong_tombstones"].as_array().unwrap().len(), 0, "collateral tombstones: {clinic:#}");
    assert!(memories(clinic, &["penicillin"]).iter().any(active), "the penicillin allergy is active: {clinic:#}");
    assert!(memories(clinic, &["latex"]).iter().any(active), "the latex allergy is active: {clinic:#}");
    assert!(memories(clinic, &["1000 mg"]).iter().any(active), "the 1000 mg dose is active: {clinic:#}");
    let old = memories(clinic, &["500 mg"]);
    assert!(!old.is_empty() && !old.iter().any(active), "the 500 mg dose is tombstoned: {clinic:#}");
    for m in old {
        let reason = m["status"]["tombstoned"].as_str().unwrap();
        assert!(reason.contains("claim rule") || reason.contains("decided by model"), "{reason}");
    }
    assert!(memories(clinic, &["555-0199"]).iter().any(active), "the new phone number is active: {clinic:#}");
}

#[test]
fn the_buyer_keeps_every_fact_of_its_first_message_and_the_new_lead_time() {
    let rows = replay();
    let buyer = row(&rows, "buyer");
    assert_eq!(buyer["wrong_tombstones"].as_array().unwrap().len(), 0, "collateral tombstones: {buyer:#}");
    assert!(memories(buyer, &["35 days"]).iter().any(active), "the lead time 35 days is active: {buyer:#}");
    for fact in ["Ben Ortiz", "Carla Diaz", "21 days"] {
        assert!(memories(buyer, &[fact]).iter().any(active), "{fact} of the first message is active: {buyer:#}");
    }
    // The 1.5B model files the update as a procedure with no claim, beside the old value's
    // fact: the engine keeps both (a stale value, reported) rather than let a procedure
    // supersede a fact. A model that gives the update its claim makes the claim rule replace it.
    assert_eq!(buyer["stale_active"], serde_json::json!(["IC-MC-44 from S-208 | lead time | 21 days"]), "{buyer:#}");
}

#[test]
fn a_recording_replays_into_a_fresh_data_directory_as_it_was_recorded() {
    // Recorded into one temporary data directory, replayed into another: the same memories.
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(repo_root().join(CASSETTE).join("report.json")).unwrap())
            .unwrap();
    let strip = |rows: &[Value]| -> Vec<(String, Vec<Value>)> {
        rows.iter()
            .map(|r| {
                let ms = r["all_memories"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| {
                        let mut m = m.clone();
                        m.as_object_mut().unwrap().remove("id");
                        // A tombstone's reason names the turn and memory ids of its store.
                        if let Some(t) = m["status"]["tombstoned"].as_str() {
                            m["status"]["tombstoned"] = Value::String(t.split(" (turn").next().unwrap().to_string());
                        }
                        m
                    })
                    .collect();
                (r["conversation"].as_str().unwrap().to_string(), ms)
            })
            .collect()
    };
    assert_eq!(strip(&replay()), strip(recorded["rows"].as_array().unwrap()));
}

#[test]
fn asked_for_dates_the_small_model_loses_facts_on_dated_turns_as_recorded() {
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(repo_root().join(ASK_DATES).join("report.json")).unwrap())
            .unwrap();
    let kept = |rows: &[Value]| -> Vec<(String, u64, Vec<Value>)> {
        rows.iter()
            .map(|r| {
                let lost = r["facts_lost"].as_array().unwrap().clone();
                (r["conversation"].as_str().unwrap().to_string(), r["facts_kept"].as_u64().unwrap(), lost)
            })
            .collect()
    };
    let replayed = replay_from(ASK_DATES, "eval/real-model/local-qwen-ask-dates.toml");
    assert_eq!(kept(&replayed), kept(recorded["rows"].as_array().unwrap()));
    // The two facts lost are the ones stated on a dated turn.
    let lost: Vec<String> = replayed
        .iter()
        .flat_map(|r| r["facts_lost"].as_array().unwrap().clone())
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    assert!(lost.contains(&"Northwind Labs | order | 400 units of IC-MC-44".to_string()), "{lost:?}");
    assert!(lost.contains(&"Maria Lopez | next appointment | 12 December at 10:30".to_string()), "{lost:?}");
}

const PLANS: &str = "bench/cassettes/real-qwen-plans";

/// The plan step as the real model answered it: every assessor case the agent acts on, planned
/// by Qwen2.5-Coder-1.5B from the assessed pack, replayed from the committed cassette and checked
/// as the agent checks before acting. The figure must be the one recorded (report.json), every
/// plan must come from the cassette, and a refused plan must name why.
#[test]
fn the_real_models_plans_replay_and_are_checked() {
    let o = replaying(PLANS)
        .args(["--config", "eval/real-model/local-qwen.toml", "eval-assessor", "--plan-with-model", "--json", "-"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let now: Value = serde_json::from_slice(&o.stdout).unwrap();
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(repo_root().join(PLANS).join("report.json")).unwrap()).unwrap();
    let plans =
        |v: &Value| v["rows"].as_array().unwrap().iter().find(|r| r["metric"] == "plan_faithfulness").cloned().unwrap();
    let (now, recorded) = (plans(&now), plans(&recorded));
    assert_eq!(now["planned_by"], serde_json::json!(["replay:qwen2.5-coder-1.5b-instruct"]), "{now}");
    assert!(now["n"].as_u64().unwrap() > 30, "the acted cases are planned: {now}");
    assert_eq!((&now["k"], &now["n"]), (&recorded["k"], &recorded["n"]), "replayed {now} vs recorded {recorded}");
    for r in now["refused"].as_array().unwrap() {
        assert!(!r["why"].as_array().unwrap().is_empty(), "a refusal says why: {r}");
    }
}
