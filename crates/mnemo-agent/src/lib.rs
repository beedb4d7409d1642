//! Mnemo agent runtime: TOML configuration, wiring of the plugins through the registry, the
//! assessors, and the agent turn (remember → recall → assess → act or escalate).
//!
//! The runtime is generic over the traits and knows no implementation: it names kinds from
//! config and the registry's typed factories (or a plugin library named in config) build them.
//! This library links no implementation crate: the binary does (`use mnemo_store as _;`), and
//! so do the tests (tests/runtime.rs checks that every expected kind is registered).
#![deny(missing_docs)]

pub mod agent_view;
mod as_of;
pub mod assess;
mod blocking;
pub mod claim_history;
pub mod config;
pub mod door;
pub mod env;
pub mod error;
pub mod escalation;
pub mod json_view;
mod lazy_reasoner;
pub mod lock;
pub mod memories;
pub mod plan_check;
pub mod plugins;
mod read_only;
pub mod runtime;
pub mod stats;
pub mod turn_view;
pub mod unextracted;
pub mod verdict;
pub mod why_view;

pub use agent_view::{AgentRecall, Detail};
pub use config::Config;
pub use door::{ForgetAnswer, ForgetInput, RecallAnswer, RecallInput, RememberInput, TurnInput};
pub use error::AgentError;
pub use escalation::{AnsweredEscalation, Escalation, EscalationId, EscalationStatus, TurnEscalation};
pub use runtime::{Access, AgentTurn, ReasonerBuild, Runtime};
pub use verdict::Verdict;
