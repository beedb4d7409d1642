//! Applying an assessment's corrections: checked against the pack, written by the engine in one
//! batch, then shown in the pack.
use mnemo_contract::{Assessment, Namespace, Result};
use mnemo_core::Engine;

/// Apply the corrections `assessment` asks for to namespace `ns` (the one its pack was
/// recalled from) and return the settled assessment: corrected memories in the pack, grades
/// following them, supersedes recorded as substitutions. Corrections that do not fit the pack
/// are refused before anything is written.
pub async fn settle(engine: &Engine, ns: &Namespace, assessment: Assessment) -> Result<Assessment> {
    assessment.check_corrections()?;
    let applied = engine.apply_corrections(ns, &assessment.corrections).await?;
    assessment.settle(applied)
}
