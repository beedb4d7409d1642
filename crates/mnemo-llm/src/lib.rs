//! mnemo-llm
