//! sqlite
