//! brute
