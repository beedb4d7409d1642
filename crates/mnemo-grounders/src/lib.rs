//! Mnemo grounders: READ-ONLY Grounders — the systems of record that verifiable claims are
//! re-checked against on every recall. A grounder never writes to its source.
//!
//! Built in: `table` (rows in memory or inline in config), `csv` (a CSV file with a header),
//! `sqlite` (a table opened read-only with `query_only`), `http` (GET a JSON API). Paths are
//! relative to the config file that names them; absolute paths are allowed.
#![deny(missing_docs)]

mod common;
mod csv_file;
mod http;
mod sqlite;
mod table;

pub use csv_file::{CsvColumns, CsvGrounder};
pub use http::HttpGrounder;
pub use sqlite::{SqliteGrounder, SqliteMapping};
pub use table::TableGrounder;
