//! Mnemo core: the domain model, the swappable traits and the engine.
//!
//! Data flows one way: a turn is recorded durably first, candidates are
//! extracted, embedded once, and reconciled against active neighbours; forgetting and decay
//! tombstone (never delete); recall packs the best candidates under a token budget with
//! per-kind quotas and a trace of every inclusion and exclusion.
#![deny(missing_docs)]

pub mod clock;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod correction;
pub mod decay_due;
pub mod engine;
pub mod error;
pub mod json_view;
pub mod model;
pub mod planner;
pub mod policy;
pub mod registry;
pub mod report;
pub mod salience;
pub mod text;
pub mod time;
pub mod tokens;
pub mod traits;

pub use clock::{Clock, SimClock, SystemClock};
pub use correction::Correction;
pub use decay_due::{DecayRule, DueMemory, DuePage};
pub use engine::Engine;
pub use error::{CoreError, FailureMessage, IndexErrorKind, ModelErrorKind, ModelRole, Result, StoreErrorKind};
pub use model::*;
pub use planner::{Pack, PackItem, TraceEntry, TraceReason};
pub use policy::EnginePolicy;
pub use time::Timestamp;
pub use tokens::{CharTokenCounter, TokenCounter};
pub use traits::*;
