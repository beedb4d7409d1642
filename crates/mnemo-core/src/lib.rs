//! Mnemo core: the engine.
//!
//! Data flows one way: a turn is recorded durably first, candidates are
//! extracted, embedded once, and reconciled against active neighbours; forgetting and decay
//! tombstone (never delete); recall packs the best candidates under a token budget with
//! per-kind quotas and a trace of every inclusion and exclusion.
//!
//! The types and traits the engine works with are the contract (`mnemo-contract`): a user of
//! the engine imports them from there, and from here only the engine and its planner.
#![deny(missing_docs)]

pub mod engine;
pub mod planner;

pub use engine::Engine;
