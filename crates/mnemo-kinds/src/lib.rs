//! The component kinds every Mnemo binary links: the one list the `mnemo` command line and the
//! Python module share, so both offer the same kinds and the same errors for missing ones.
//!
//! Each kind registers itself (`inventory`, through `mnemo_contract::register_*!`) in its own
//! crate; the linker keeps a crate's registrations only when the binary refers to the crate.
//! A binary refers to this one (`use mnemo_kinds as _;`) and this one to every kind crate below.
//! Adding a backend linked by default is a dependency line in `Cargo.toml` and a `use` line
//! here; an optional one also takes a feature here and in each binary that offers it, and a
//! placeholder in `not_built.rs`.
//!
//! The libraries (`mnemo-agent`, the doors) link none of these: they pick kinds by name from
//! the config.

// Always linked: SQLite store; brute and tantivy indexes.
use mnemo_store as _;
// Always linked: the fake, live, record and replay models; the `llm` reasoner.
use mnemo_llm as _;
// Always linked: the `table`, `csv`, `sqlite` and `http` grounders.
use mnemo_grounders as _;

// Feature `postgres`: the `postgres` store and index.
#[cfg(feature = "postgres")]
use mnemo_store_postgres as _;
// Feature `mcp`: the `mcp` grounder (the crate also carries the `mnemo mcp` server, which only
// the command line uses).
#[cfg(feature = "mcp")]
use mnemo_mcp as _;
// Feature `local-embedder`: the `local` and `static` embedders.
#[cfg(feature = "local-embedder")]
use mnemo_embed_local as _;

// Every optional kind is registered even when its feature is off, as a placeholder that says so.
#[cfg(any(not(feature = "postgres"), not(feature = "mcp"), not(feature = "local-embedder")))]
mod not_built;
