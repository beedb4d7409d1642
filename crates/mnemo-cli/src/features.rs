//! The optional parts of this binary (cargo features of mnemo-cli): what was built in and the
//! error a command gets when its part was not. The component kinds those parts provide say the
//! same from mnemo-kinds (its NOT BUILT placeholders, shared with the Python module), which
//! gets each feature from this crate's feature of the same name: the `built` column holds for
//! both.
/// The command that builds everything but the local embedder.
pub const REBUILD: &str = "cargo install --path crates/mnemo-cli --features full";

/// Each optional part: its cargo feature, whether this binary has it, and what it adds.
pub const PARTS: &[(&str, bool, &str)] = &[
    ("server", cfg!(feature = "server"), "`mnemo serve`, `mnemo bench serve` (HTTP JSON API)"),
    ("mcp", cfg!(feature = "mcp"), "`mnemo mcp` and the `mcp` grounder kind"),
    ("postgres", cfg!(feature = "postgres"), "the `postgres` store and index kinds, `mnemo migrate`"),
    ("otlp", cfg!(feature = "otlp"), "traces exported over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set"),
    ("local-embedder", cfg!(feature = "local-embedder"), "`[embedder] kind = \"local\"` (candle, MiniLM)"),
];

/// The error of `mnemo <command>` when its feature was not built.
#[cfg(any(not(feature = "server"), not(feature = "mcp"), not(feature = "postgres")))]
pub fn missing(command: &str, feature: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "`mnemo {command}` is not in this binary: it was built without the cargo feature `{feature}`; \
         rebuild with `{REBUILD}` (or `cargo run --features {feature} --bin mnemo -- {command} …`)"
    )
}

/// The end of `mnemo --help`: which optional parts are in this binary.
pub fn help_text() -> String {
    let mut s = String::from("Optional parts (cargo features of mnemo-cli):\n");
    for (feature, built, what) in PARTS {
        let state = if *built { "built" } else { "NOT BUILT" };
        s.push_str(&format!("  {feature:<15} {state:<10} {what}\n"));
    }
    s.push_str(&format!("Everything but the local embedder: `{REBUILD}`."));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(any(not(feature = "server"), not(feature = "mcp"), not(feature = "postgres")))]
    #[test]
    fn the_missing_error_names_the_feature_and_the_rebuild_command() {
        let e = missing("serve", "server").to_string();
        assert!(e.contains("`server`") && e.contains(REBUILD) && e.contains("mnemo serve"), "{e}");
    }

    #[test]
    fn help_lists_every_part_with_its_state() {
        let h = help_text();
        for (feature, built, _) in PARTS {
            let line = h.lines().find(|l| l.trim_start().starts_with(feature)).unwrap_or_default();
            assert_eq!(line.contains("NOT BUILT"), !built, "{line}");
        }
    }
}
