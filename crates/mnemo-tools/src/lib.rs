//! mnemo-tools
