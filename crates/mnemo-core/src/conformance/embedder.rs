//! embedder conformance suite.
