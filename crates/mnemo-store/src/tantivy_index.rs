//! tantivy_index
