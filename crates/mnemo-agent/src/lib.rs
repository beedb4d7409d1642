//! mnemo-agent
