//! Mnemo agent runtime: TOML configuration, wiring of the plugins through the registry, the
//! assessors, and the agent turn (remember → recall → assess → act or escalate).
//!
//! The runtime is generic over the traits and knows no implementation: it names kinds from
//! config and the registry builds them. This crate links every built-in plugin crate so their
//! registrations are kept (the registry test in tests/runtime.rs checks every expected kind).
#![deny(missing_docs)]

pub mod assess;
pub mod config;
pub mod error;
mod index_embedder;
pub mod runtime;

pub use config::Config;
pub use error::AgentError;
pub use runtime::{AgentTurn, Runtime};

// The linker drops a crate nobody references, and its `inventory` registrations with it.
use mnemo_llm as _;
use mnemo_plugin_erp as _;
use mnemo_store as _;
use mnemo_tools as _;
