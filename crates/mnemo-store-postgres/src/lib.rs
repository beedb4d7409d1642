//! Mnemo on PostgreSQL + pgvector: a [`Store`](mnemo_contract::Store) and an
//! [`Index`](mnemo_contract::Index) that many Mnemo processes can share.
//!
//! - Every query names its namespace; as defence in depth the tables carry row-level
//!   security keyed on the namespace (`mnemo.namespace`, set per transaction), enforced
//!   through a role without `BYPASSRLS` (see [`db`]).
//! - Schema migrations are versioned in the database (`mnemo_schema_versions`), applied under
//!   an advisory lock so two processes opening one new schema do not both migrate.
//! - Every write batch is one transaction, serialised per namespace by an advisory lock; the
//!   change feed (`changed_since`) is a revision sequence assigned at commit under a lock so
//!   that revisions become visible in order (an index never skips one).
//! - Dense search is pgvector HNSW with iterative scans and an exact fallback, so the
//!   namespace filter never loses candidates; lexical search is PostgreSQL full text
//!   (any-term, ranked); both are fused by weighted reciprocal rank as in `mnemo-store`
//!   (the contract's [`fusion`](mnemo_contract::fusion) arithmetic).
pub mod db;
pub mod error;
pub mod index;
mod plugin;
pub mod settings;
pub mod store;

pub use db::Db;
pub use error::PgError;
pub use index::PostgresIndex;
pub use settings::PgSettings;
pub use store::PostgresStore;
