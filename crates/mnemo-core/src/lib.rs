//! Mnemo core: the engine.
//!
//! Data flows one way: a turn is recorded durably first, candidates are
//! extracted, embedded once, and reconciled against active neighbours; forgetting and decay
//! tombstone (never delete); recall packs the best candidates under a token budget with
//! per-kind quotas and a trace of every inclusion and exclusion.
//!
//! The types and traits the engine works with are the contract (`mnemo-contract`); they are
//! re-exported here under the same paths, so a user of the engine needs this crate only.
#![deny(missing_docs)]

#[cfg(feature = "conformance")]
pub use mnemo_contract::conformance;
pub mod engine;
pub mod planner;

pub use mnemo_contract::{
    clock, correction, decay_due, error, ids, model, pack, plan, policy, registry, relevance, salience, text, time,
    tokens, traits, usage, world_time,
};
pub use mnemo_contract::{
    register_assessor, register_embedder, register_grounder, register_index, register_reasoner, register_store,
};

pub use engine::Engine;
pub use mnemo_contract::chain;
pub use mnemo_contract::clock::{Clock, SimClock, SystemClock};
pub use mnemo_contract::correction::Correction;
pub use mnemo_contract::decay_due::{DecayRule, DueMemory, DuePage};
pub use mnemo_contract::erase;
pub use mnemo_contract::error::{
    AssessorErrorKind, ClassifiedFailure, CoreError, FailureMessage, GrounderErrorKind, IndexErrorKind, ModelErrorKind,
    ModelRole, Result, StoreErrorKind,
};
pub use mnemo_contract::ids::{tenant_spelling, BadId, IdKind, IdRef};
pub use mnemo_contract::model::*;
pub use mnemo_contract::policy::EnginePolicy;
pub use mnemo_contract::relevance::RelevanceEvidence;
pub use mnemo_contract::time::Timestamp;
pub use mnemo_contract::tokens::{CharTokenCounter, TokenCounter};
pub use mnemo_contract::traits::*;
pub use mnemo_contract::world_time::Validity;
pub use planner::{Pack, PackItem, TraceEntry, TraceReason};
