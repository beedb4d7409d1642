//! Conformance suites, written once and run by every backend's tests (feature `conformance`).
//! Each suite is an async function taking a factory of fresh instances; it panics on a
//! contract violation, like a test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

pub mod bounded;
pub mod decay;
pub mod embedder;
pub mod grounder;
pub mod index;
pub mod store;
