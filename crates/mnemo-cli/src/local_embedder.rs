//! `[embedder] kind = "local"` in this binary: the real one with the `local-embedder` feature,
//! else a registration that says how to get it (never a silent fallback to another embedder).
#[cfg(feature = "local-embedder")]
pub fn link() {
    mnemo_embed_local::link();
}

#[cfg(not(feature = "local-embedder"))]
pub fn link() {}

#[cfg(not(feature = "local-embedder"))]
fn not_built(
    ctx: &mnemo_core::registry::EmbedderContext<'_>,
) -> mnemo_core::Result<std::sync::Arc<dyn mnemo_core::Embedder>> {
    Err(mnemo_core::CoreError::Config(format!(
        "{}: kind = \"local\": this mnemo binary was built without the local embedder; rebuild it with \
         `cargo build --release -p mnemo-cli --features local-embedder` (or `cargo run --features local-embedder --bin mnemo -- …`)",
        ctx.origin
    )))
}

#[cfg(not(feature = "local-embedder"))]
mnemo_core::register_embedder!(
    "local",
    "NOT BUILT in this binary: sentence-transformers on the CPU; rebuild with --features local-embedder",
    not_built
);
