//! Errors of the MCP server and the MCP grounder's set-up.
use thiserror::Error;

/// What can go wrong serving MCP.
#[derive(Debug, Error)]
pub enum McpError {
    /// The client never completed the MCP handshake.
    #[error("the MCP session did not start")]
    Start(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The service task ended abnormally.
    #[error("the MCP service task failed")]
    Join(#[source] tokio::task::JoinError),
    /// A setting (an environment variable) is wrong; says which, the value and what is accepted.
    #[error(transparent)]
    Setting(mnemo_agent::error::AgentError),
}
