//! `[embedder] kind = "local"` and `kind = "static"` in this binary: the real ones with the
//! `local-embedder` feature, else registrations that say how to get them (never a silent
//! fallback to another embedder).
#[cfg(feature = "local-embedder")]
pub fn link() {
    mnemo_embed_local::link();
}

#[cfg(not(feature = "local-embedder"))]
pub fn link() {}

#[cfg(not(feature = "local-embedder"))]
fn not_built_error(origin: &str, kind: &str) -> mnemo_contract::CoreError {
    mnemo_contract::CoreError::Config(format!(
        "{origin}: kind = \"{kind}\": this mnemo binary was built without the local embedder; rebuild it with \
         `cargo build --release -p mnemo-cli --features local-embedder` (or `cargo run --features local-embedder --bin mnemo -- …`)",
    ))
}

#[cfg(not(feature = "local-embedder"))]
fn not_built(
    ctx: &mnemo_contract::registry::EmbedderContext<'_>,
) -> mnemo_contract::Result<std::sync::Arc<dyn mnemo_contract::Embedder>> {
    Err(not_built_error(ctx.origin, "local"))
}

#[cfg(not(feature = "local-embedder"))]
fn static_not_built(
    ctx: &mnemo_contract::registry::EmbedderContext<'_>,
) -> mnemo_contract::Result<std::sync::Arc<dyn mnemo_contract::Embedder>> {
    Err(not_built_error(ctx.origin, "static"))
}

#[cfg(not(feature = "local-embedder"))]
mnemo_contract::register_embedder!(
    "static",
    "NOT BUILT in this binary: static vectors distilled from all-MiniLM-L6-v2; rebuild with --features local-embedder",
    static_not_built
);

#[cfg(not(feature = "local-embedder"))]
mnemo_contract::register_embedder!(
    "local",
    "NOT BUILT in this binary: sentence-transformers on the CPU; rebuild with --features local-embedder",
    not_built
);
