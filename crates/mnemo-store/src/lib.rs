//! mnemo-store
