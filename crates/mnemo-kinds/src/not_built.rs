//! Placeholders for the optional kinds this build lacks. Selecting one fails when the config is
//! read, with an error naming the cargo feature and how to rebuild each binary with it: never
//! "unknown kind", never a silent fallback to another kind. `mnemo plugins` lists them as
//! NOT BUILT.
use mnemo_contract::CoreError;

/// The features of `cargo install --path crates/mnemo-cli` that bring `feature` back: `full` is
/// every optional part but the local embedder (crates/mnemo-cli/Cargo.toml).
fn cli_features(feature: &str) -> &'static str {
    if feature == "local-embedder" {
        "full,local-embedder"
    } else {
        "full"
    }
}

/// The config error of a kind whose feature was not built. The text is shared by both binaries,
/// so it names the rebuild of each.
fn error(origin: &str, kind: &str, feature: &str) -> CoreError {
    let cli = cli_features(feature);
    CoreError::Config(format!(
        "{origin}: kind = \"{kind}\": this binary (the `mnemo` command or the Python module) was built without the \
         cargo feature `{feature}`; rebuild the command with `cargo install --path crates/mnemo-cli --features {cli}` \
         (or `cargo run --features {feature} --bin mnemo -- …`), the Python module with \
         `MATURIN_PEP517_ARGS=\"--features {feature}\" pip install ./crates/mnemo-python`"
    ))
}

#[cfg(not(feature = "postgres"))]
mod postgres {
    use std::sync::Arc;

    use mnemo_contract::registry::{IndexContext, StoreContext};
    use mnemo_contract::{Index, Result, Store};

    fn store(ctx: &StoreContext<'_>) -> Result<Arc<dyn Store>> {
        Err(super::error(ctx.origin, "postgres", "postgres"))
    }
    fn index(ctx: &IndexContext<'_>) -> Result<Arc<dyn Index>> {
        Err(super::error(ctx.origin, "postgres", "postgres"))
    }
    mnemo_contract::register_store!(
        "postgres",
        "NOT BUILT in this binary: PostgreSQL store; rebuild with --features postgres",
        store
    );
    mnemo_contract::register_index!(
        "postgres",
        "NOT BUILT in this binary: PostgreSQL index; rebuild with --features postgres",
        index
    );
}

#[cfg(not(feature = "mcp"))]
mod mcp {
    use std::sync::Arc;

    use mnemo_contract::registry::GrounderContext;
    use mnemo_contract::{Grounder, Result};

    fn grounder(ctx: &GrounderContext<'_>) -> Result<Arc<dyn Grounder>> {
        Err(super::error(ctx.origin, "mcp", "mcp"))
    }
    mnemo_contract::register_grounder!(
        "mcp",
        "NOT BUILT in this binary: read-only MCP tool; rebuild with --features mcp",
        grounder
    );
}

#[cfg(not(feature = "local-embedder"))]
mod local_embedder {
    use std::sync::Arc;

    use mnemo_contract::registry::EmbedderContext;
    use mnemo_contract::{Embedder, Result};

    fn local(ctx: &EmbedderContext<'_>) -> Result<Arc<dyn Embedder>> {
        Err(super::error(ctx.origin, "local", "local-embedder"))
    }
    fn static_vectors(ctx: &EmbedderContext<'_>) -> Result<Arc<dyn Embedder>> {
        Err(super::error(ctx.origin, "static", "local-embedder"))
    }
    mnemo_contract::register_embedder!(
        "local",
        "NOT BUILT in this binary: sentence-transformers on the CPU; rebuild with --features local-embedder",
        local
    );
    mnemo_contract::register_embedder!(
        "static",
        "NOT BUILT in this binary: static vectors distilled from all-MiniLM-L6-v2; rebuild with --features local-embedder",
        static_vectors
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_names_the_feature_and_both_rebuilds() {
        let e = error("[store]", "postgres", "postgres").to_string();
        for part in [
            "`postgres`",
            "cargo install --path crates/mnemo-cli --features full`",
            "--features postgres\" pip install ./crates/mnemo-python",
        ] {
            assert!(e.contains(part), "{part} not in {e}");
        }
        let e = error("[embedder]", "local", "local-embedder").to_string();
        assert!(e.contains("--features full,local-embedder`"), "{e}");
    }
}
