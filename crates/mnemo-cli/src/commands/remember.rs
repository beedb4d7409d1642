//! `mnemo remember`: the operator's turn, under an optional idempotency key (the rules are
//! mnemo-agent's, the same at every door: `Runtime::remember_input`).
use anyhow::Result;

use mnemo_agent::door::{operator_source, RememberInput};
use mnemo_agent::Runtime;
use mnemo_contract::Namespace;
use mnemo_core::engine::RememberReport;

use crate::cli::RememberArgs;

/// Remember the turn. The data directory lock is held: no other process records the key
/// meanwhile.
pub async fn run(rt: &Runtime, ns: &Namespace, a: &RememberArgs, bytes: &[u8]) -> Result<RememberReport> {
    let (source, note) = operator_source(Some(&a.source), &rt.config().declared_sources());
    let text = std::str::from_utf8(bytes)
        .map_err(|e| mnemo_contract::CoreError::InvalidUtf8 { valid_up_to: e.valid_up_to(), detail: e.to_string() })?;
    // `--at` is the clock itself here (a simulated one): the turn is said now by that clock.
    let input = RememberInput { source, text: text.to_string(), idempotency_key: a.idempotency_key.clone(), at: None };
    let mut r = rt.remember_input(ns, &input).await?;
    r.notes.extend(note);
    Ok(r)
}
