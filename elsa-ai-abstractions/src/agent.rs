use serde::{Deserialize, Serialize};

use crate::{AttachmentKind, Permission};

/// An agent: instructions plus the least-privilege scope of tools and context it may use.
///
/// An agent's instructions never grant permissions: its `permissions` only narrow what the
/// caller holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiAgentDefinition {
    /// Stable name such as `workflow-author`.
    pub name: String,
    /// Name for people.
    pub display_name: String,
    /// What the agent is for.
    pub description: String,
    /// System instructions handed to the provider.
    pub instructions: String,
    /// Tool names the agent may use.
    pub allowed_tools: Vec<String>,
    /// Attachment kinds the agent may resolve.
    pub allowed_context_providers: Vec<AttachmentKind>,
    /// MCP server names whose tools the agent may use.
    pub allowed_mcp_servers: Vec<String>,
    /// The most the agent may do; effective permissions are these intersected with the caller's.
    pub permissions: Vec<Permission>,
    /// Whether the agent can be used at all.
    pub enabled: bool,
}

impl AiAgentDefinition {
    /// An enabled agent named `name` following `instructions` (also its description), with
    /// no tools, attachment kinds, MCP servers or permissions yet: set those with struct
    /// update syntax.
    pub fn new(name: impl Into<String>, instructions: impl Into<String>) -> Self {
        let name = name.into();
        let instructions = instructions.into();
        Self {
            display_name: name.clone(),
            name,
            description: instructions.clone(),
            instructions,
            allowed_tools: Vec::new(),
            allowed_context_providers: Vec::new(),
            allowed_mcp_servers: Vec::new(),
            permissions: Vec::new(),
            enabled: true,
        }
    }

    /// Whether the agent's scope names the tool.
    pub fn allows_tool(&self, tool_name: &str) -> bool {
        self.allowed_tools.iter().any(|t| t == tool_name)
    }

    /// Whether the agent may resolve attachments of `kind`.
    pub fn allows_context(&self, kind: &AttachmentKind) -> bool {
        self.allowed_context_providers.contains(kind)
    }
}
