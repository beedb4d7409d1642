//! index conformance suite.
