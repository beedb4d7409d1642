//! System-of-record lookups for the assessor: every distinct claim against every grounder,
//! all at once, each under its timeout, each traced. A fault (timeout, error, panic, an answer
//! that cannot be a value) leaves the claim unverified for this recall: it is never a
//! confirmation and never written to memory.
use futures_util::future::join_all;
use futures_util::FutureExt as _;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemo_contract::text::norm_name;
use mnemo_contract::{GroundedValue, Grounder, GroundingLookup, LookupOutcome, MemoryId};

/// Longest value accepted from a source; longer is garbage.
pub const MAX_VALUE_CHARS: usize = 500;

/// What the sources say about one claim.
#[derive(Clone, Debug, Default)]
pub struct ClaimGrounding {
    /// The first source (in config order) that holds the claim, with its value.
    pub held: Option<GroundedValue>,
    /// Sources that faulted before an answer was found (source, what happened).
    pub faults: Vec<(String, String)>,
}

/// Why a value from a source cannot be used, if it cannot.
pub fn garbage(value: &str) -> Option<String> {
    if value.trim().is_empty() {
        return Some("an empty value".into());
    }
    if value.chars().count() > MAX_VALUE_CHARS {
        return Some(format!("a value longer than {MAX_VALUE_CHARS} characters"));
    }
    if value.chars().any(|c| c.is_control()) {
        return Some("a value with control characters or line breaks".into());
    }
    None
}

async fn one(
    g: Arc<dyn Grounder>,
    entity: String,
    attribute: String,
    default: Duration,
) -> (LookupOutcome, Option<GroundedValue>, f64) {
    let limit = g.timeout().unwrap_or(default);
    // Elapsed time of real I/O (not simulated time): what the trace reports as `took`.
    let started = Instant::now();
    let call = AssertUnwindSafe(g.lookup(&entity, &attribute)).catch_unwind();
    let result = tokio::time::timeout(limit, call).await;
    let took = started.elapsed().as_secs_f64() * 1000.0;
    let (outcome, value) = match result {
        Err(_) => (LookupOutcome::Timeout, None),
        Ok(Err(_)) => (LookupOutcome::Error { message: "the grounder panicked".into() }, None),
        Ok(Ok(Err(e))) => (LookupOutcome::Error { message: e.to_string() }, None),
        Ok(Ok(Ok(None))) => (LookupOutcome::NotHeld, None),
        Ok(Ok(Ok(Some(v)))) => match garbage(&v.value) {
            Some(why) => (LookupOutcome::Garbage { message: format!("{} answered {why}", g.source()) }, None),
            None => (LookupOutcome::Held { value: v.value.clone() }, Some(v)),
        },
    };
    (outcome, value, took)
}

/// Look up every claim `(memory, entity, attribute)` in every grounder concurrently. Returns,
/// per claim in input order, what the sources say; and the trace of every lookup.
pub async fn ground_all(
    grounders: &[Arc<dyn Grounder>],
    claims: &[(MemoryId, String, String)],
    default_timeout: Duration,
) -> (Vec<ClaimGrounding>, Vec<GroundingLookup>) {
    // One lookup per distinct normalised claim and grounder.
    let mut keys: Vec<(String, String)> = Vec::new();
    let mut first: Vec<(MemoryId, String, String)> = Vec::new();
    for (id, e, a) in claims {
        let k = (norm_name(e), norm_name(a));
        if !keys.contains(&k) {
            keys.push(k);
            first.push((*id, e.clone(), a.clone()));
        }
    }
    let calls = first
        .iter()
        .flat_map(|(_, e, a)| grounders.iter().map(move |g| one(g.clone(), e.clone(), a.clone(), default_timeout)));
    let results = join_all(calls).await;
    let mut per_key: Vec<ClaimGrounding> = vec![ClaimGrounding::default(); keys.len()];
    let mut trace = Vec::new();
    let n = grounders.len().max(1);
    for (i, (outcome, value, took)) in results.into_iter().enumerate() {
        let (ki, gi) = (i / n, i % n);
        let (Some((id, e, a)), Some(g), Some(slot)) = (first.get(ki), grounders.get(gi), per_key.get_mut(ki)) else {
            continue;
        };
        if slot.held.is_none() {
            match (&outcome, value) {
                (_, Some(v)) => slot.held = Some(v),
                (o, None) if o.is_fault() => slot.faults.push((g.source().to_string(), describe(o))),
                _ => {}
            }
        }
        trace.push(GroundingLookup {
            memory: *id,
            entity: e.clone(),
            attribute: a.clone(),
            source: g.source().to_string(),
            took_ms: took,
            outcome,
        });
    }
    let out = claims
        .iter()
        .map(|(_, e, a)| {
            let k = (norm_name(e), norm_name(a));
            keys.iter().position(|x| *x == k).and_then(|i| per_key.get(i).cloned()).unwrap_or_default()
        })
        .collect();
    (out, trace)
}

/// A fault, in words.
pub fn describe(o: &LookupOutcome) -> String {
    match o {
        LookupOutcome::Timeout => "timed out".into(),
        LookupOutcome::Error { message } => format!("failed: {message}"),
        LookupOutcome::Garbage { message } => format!("garbage: {message}"),
        LookupOutcome::Held { value } => format!("holds {value:?}"),
        LookupOutcome::NotHeld => "does not hold it".into(),
    }
}
