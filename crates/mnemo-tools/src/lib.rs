//! Mnemo tools: READ-ONLY Grounders — the systems of record that verifiable claims are
//! re-checked against on every recall. A grounder never writes to its source.
#![deny(missing_docs)]

mod table;

pub use table::TableGrounder;
