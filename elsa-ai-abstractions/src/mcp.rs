use serde::{Deserialize, Serialize};

/// How Weaver reaches an MCP server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum McpTransport {
    /// A child process speaking MCP over stdio.
    Stdio {
        /// The program to run.
        command: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// A streamable-HTTP MCP endpoint.
    Http {
        /// The endpoint URL.
        url: String,
    },
}

/// An MCP server registered server-side. Its tools go through the same governance as
/// built-in tools and need explicit administrator enablement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiMcpServerRegistration {
    /// Stable name; its tools are namespaced `mcp.<name>.<tool>`.
    pub name: String,
    /// Name for people.
    pub display_name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// The only tools of the server Weaver exposes.
    pub tool_allowlist: Vec<String>,
    /// Agents that may use its tools.
    pub allowed_agents: Vec<String>,
    /// Whether an administrator enabled it.
    pub enabled: bool,
}
