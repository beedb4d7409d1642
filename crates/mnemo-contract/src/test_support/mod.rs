//! Reference implementations for tests (feature `conformance`): an in-memory [`Store`] and an
//! in-memory [`Index`] that follow the contract as plainly as possible, so that the engine is
//! tested without a backend and each conformance suite has a reference to run against; and the
//! test doubles engine tests share (an embedder and a reasoner that stay out of the way).
//!
//! Clarity over speed: a `Mutex` around maps, a write applied to a copy of the state and swapped
//! in whole. Nothing persists; a new instance is empty.
//!
//! [`Store`]: crate::Store
//! [`Index`]: crate::Index

mod doubles;
mod memory_index;
mod memory_store;

pub use doubles::{semantic_insert, FlatEmbedder, NoReasoner};
pub use memory_index::MemoryIndex;
pub use memory_store::MemoryStore;
