//! Mnemo storage backends: the SQLite [`Store`](mnemo_contract::Store) (embedded default) and the
//! [`Index`](mnemo_contract::Index) implementations (brute force in memory; tantivy hybrid).
#![deny(missing_docs)]

pub mod blocking;
pub mod brute;
pub mod entity_match;
pub mod error;
pub mod fusion;
pub mod index_error;
pub mod sqlite;
pub mod tantivy_index;
pub mod vector;
