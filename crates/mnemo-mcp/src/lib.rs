//! Mnemo over the Model Context Protocol (the official Rust SDK, `rmcp`):
//!
//! - [`server`]: `mnemo mcp`, remember / recall / forget / why / list / turn and the escalation
//!   tools (escalations / answer / dismiss) over stdio, bound to one namespace;
//! - [`grounder`]: `[[grounders]] kind = "mcp"`, a system of record behind one tool of an
//!   external MCP server, called read-only to re-check verifiable claims.
#![deny(missing_docs)]

pub mod error;
pub mod grounder;
pub mod server;

pub use error::McpError;
pub use grounder::{McpCommand, McpGrounder, McpMapping};
pub use server::{serve_stdio, MnemoMcp};
