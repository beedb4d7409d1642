//! The engine (work in progress).
/// The engine.
pub struct Engine;
