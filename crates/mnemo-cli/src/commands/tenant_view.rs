//! The JSON a tenant is shown (`mnemo_agent::json_view::tenant_json`): short ids,: no store-wide counters,
//! no embedding vectors.
use anyhow::Result;

/// Print `v` as pretty JSON as a tenant is shown it.
pub fn emit<T: serde::Serialize>(v: &T) -> Result<()> {
    let v = mnemo_agent::json_view::tenant_json(v, false)?;
    out!("{}", serde_json::to_string_pretty(&v)?);
    Ok(())
}
