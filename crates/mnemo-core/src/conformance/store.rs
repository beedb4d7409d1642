//! store conformance suite.
