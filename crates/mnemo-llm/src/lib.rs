//! Mnemo's model seam.
//!
//! - [`ChatModel`]: one async chat call; the answer carries the model string *as echoed by the
//!   API* and the client kind that answered (the seam is loud). Live clients and cassette
//!   decorators fit behind it later without changing it (see [`chat`]).
//! - [`FakeQwen`]: the deterministic offline model, both a `ChatModel` (pattern-matches the
//!   reasoner's structured prompts, answers JSON, refuses anything else) and an
//!   `mnemo_contract::Embedder` (hashed bag of words, unit vectors).
//! - [`LlmReasoner`]: `mnemo_contract::Reasoner` over any `ChatModel`: builds the prompts, parses
//!   and validates every answer.
//!
//! Registered plugins (see `plugins`): embedder `fake`, reasoner `llm`. A binary keeps these
//! registrations by linking the crate: call [`link()`] once (or write `use mnemo_llm as _;`),
//! otherwise the linker may drop a crate nothing refers to, and with it its registrations.
#![deny(missing_docs)]

pub mod cassette;
pub mod chat;
pub mod error;
pub mod fake;
pub mod live;
pub mod mock;
mod plugins;
pub mod prompts;
pub mod reasoner;
pub mod seam;
pub mod usage;
pub mod validate;

pub use chat::{ChatModel, ChatRequest, ChatResponse, EmbedModel, EmbedRequest, EmbedResponse, Repair};
pub use error::LlmError;
pub use fake::{FakeQwen, FAKE_CHAT_MODEL};
pub use plugins::KNOWN_CLIENTS;
pub use reasoner::LlmReasoner;

/// Does nothing; calling it makes a binary refer to this crate, so the linker keeps its plugin
/// registrations (`mnemo_llm::link();` at the start of `main`).
pub fn link() {}
