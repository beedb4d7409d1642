//! Errors of the PostgreSQL backend, mapped into [`CoreError`] at the trait boundary.
use mnemo_contract::{CoreError, StoreErrorKind};
use thiserror::Error;

/// What can go wrong talking to PostgreSQL.
#[derive(Debug, Error)]
pub enum PgError {
    /// A statement failed.
    #[error("postgres: {context}: {}", describe(.source))]
    Db {
        /// What was being done.
        context: String,
        /// The driver's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// No connection could be had from the pool.
    #[error("postgres: cannot get a connection: {source}")]
    Pool {
        /// The pool's error.
        #[source]
        source: deadpool_postgres::PoolError,
    },
    /// The settings are wrong (names the key).
    #[error("postgres settings: {0}")]
    Settings(String),
    /// The schema was written by a newer build.
    #[error(
        "postgres schema {schema:?}: {component} schema version {found} is newer than this build knows ({known}); \
         upgrade Mnemo to use it"
    )]
    FutureSchema {
        /// The PostgreSQL schema.
        schema: String,
        /// store | index.
        component: &'static str,
        /// Found in the database.
        found: i32,
        /// The newest this build knows.
        known: i32,
    },
    /// A row that does not decode.
    #[error("postgres: table {table}, row {id}: {detail}")]
    Corrupt {
        /// The table.
        table: &'static str,
        /// The row's key.
        id: i64,
        /// What is wrong.
        detail: String,
    },
}

/// The server's message (and detail) when there is one: the driver's Display alone says
/// only "db error".
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => match d.detail() {
            Some(detail) => format!("{} ({})", d.message(), detail),
            None => d.message().to_string(),
        },
        None => e.to_string(),
    }
}

impl PgError {
    /// What kind of failure this is, for callers matching on it.
    pub fn kind(&self) -> StoreErrorKind {
        match self {
            PgError::Db { source, .. } => match source.code().map(|c| c.code()) {
                Some("40001" | "40P01" | "55P03") => StoreErrorKind::Busy,
                Some("25006") => StoreErrorKind::ReadOnly,
                Some("53100") => StoreErrorKind::Full,
                Some(c) if c.starts_with("08") || c.starts_with("57P") => StoreErrorKind::Unavailable,
                Some("XX001" | "XX002") => StoreErrorKind::Damaged,
                None if source.is_closed() => StoreErrorKind::Unavailable,
                _ => StoreErrorKind::Other,
            },
            PgError::Pool { .. } => StoreErrorKind::Unavailable,
            PgError::Settings(_) => StoreErrorKind::Other,
            PgError::FutureSchema { .. } => StoreErrorKind::Newer,
            PgError::Corrupt { .. } => StoreErrorKind::Damaged,
        }
    }
}

impl From<PgError> for CoreError {
    fn from(e: PgError) -> Self {
        CoreError::store(e.kind(), e)
    }
}

/// `.db("what")?` on a driver result.
pub(crate) trait DbContext<T> {
    fn db(self, context: &str) -> Result<T, CoreError>;
}

impl<T> DbContext<T> for Result<T, tokio_postgres::Error> {
    fn db(self, context: &str) -> Result<T, CoreError> {
        self.map_err(|source| PgError::Db { context: context.to_string(), source }.into())
    }
}
