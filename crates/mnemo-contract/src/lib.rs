//! Mnemo's contract: what the engine and its collaborators agree on.
//!
//! The domain model (memories, turns, events), the swappable traits (Store, Index, Embedder,
//! Reasoner, Grounder, Assessor), errors, the clock, time, token counting, the policy (and the
//! salience and decay-due arithmetic a store derives from it), what each write op makes of a
//! memory (the transitions every store applies alike), the pack recall returns and the
//! corrections an assessor proposes, the fusion arithmetic every hybrid index ranks by, and the
//! registry backends and plugins register into.
//! A backend or plugin depends on this crate only; the engine (`mnemo-core`) builds on it.
#![deny(missing_docs)]

pub mod assessment;
pub mod chain;
pub mod clock;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod decay_due;
pub mod erase;
pub mod error;
pub mod fusion;
pub mod ids;
pub mod model;
pub mod pack;
pub mod plan;
pub mod policy;
pub mod reasoning;
pub mod registry;
pub mod relevance;
pub mod salience;
pub mod search;
pub mod store_types;
#[cfg(feature = "conformance")]
pub mod test_support;
pub mod text;
pub mod time;
pub mod tokens;
pub mod traits;
pub mod transition;
pub mod usage;
pub mod world_time;

pub use assessment::correction;
pub use assessment::*;
pub use clock::{Clock, SimClock, SystemClock};
pub use correction::Correction;
pub use decay_due::{DecayRule, DueMemory, DuePage};
pub use error::{
    AssessorErrorKind, ClassifiedFailure, CoreError, FailureMessage, GrounderErrorKind, IndexErrorKind, ModelErrorKind,
    ModelRole, Result, StoreErrorKind,
};
pub use ids::{local_number, tenant_spelling, BadId, IdKind, IdRef, MemoryId, TurnId};
pub use model::*;
pub use pack::{Pack, PackItem, TraceEntry, TraceReason};
pub use plan::{Plan, PlanLine, PlanUse};
pub use policy::EnginePolicy;
pub use reasoning::*;
pub use relevance::RelevanceEvidence;
pub use search::*;
pub use store_types::*;
pub use time::Timestamp;
pub use tokens::{CharTokenCounter, TokenCounter};
pub use traits::*;
pub use world_time::Validity;
