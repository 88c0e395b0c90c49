//! External MCP servers whose tools Weaver offers under governance.

use std::time::Duration;

use elsa_workflows::TenantId;

use crate::{DangerLevel, Permission, SecretValue, ToolMutability};

/// How Weaver reaches an MCP server.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpTransport {
    /// A child process speaking MCP over stdio. It starts from an empty environment: `PATH`
    /// plus `env` and `secret_env`.
    Stdio {
        /// The program to run.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Plain variables for the child.
        env: Vec<(String, String)>,
        /// Secret variables for the child.
        secret_env: Vec<(String, SecretValue)>,
    },
    /// A streamable-HTTP MCP endpoint.
    Http {
        /// The endpoint URL.
        url: String,
        /// Plain headers sent with every request.
        headers: Vec<(String, String)>,
        /// Secret headers sent with every request (for example `Authorization`).
        secret_headers: Vec<(String, SecretValue)>,
    },
}

impl McpTransport {
    /// `stdio` or `http`, as capabilities report it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Stdio { .. } => "stdio",
            Self::Http { .. } => "http",
        }
    }

    /// Every secret the transport carries, for the redactor.
    pub fn secrets(&self) -> impl Iterator<Item = &SecretValue> {
        let secrets = match self {
            Self::Stdio { secret_env, .. } => secret_env,
            Self::Http { secret_headers, .. } => secret_headers,
        };
        secrets.iter().map(|(_, value)| value)
    }
}

/// An MCP server registered server-side. Only the tools on its allowlist exist for Weaver;
/// each goes through the same governance as built-in tools and is off until an
/// administrator enables it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AiMcpServerRegistration {
    /// Stable name; its tools are named `mcp.<name>.<tool>`.
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// The only tools of the server Weaver exposes, as the server spells them.
    pub tool_allowlist: Vec<String>,
    /// What a caller needs to use its tools, all of them.
    pub permissions: Vec<Permission>,
    /// Agents that may use its tools; `None` admits every agent.
    pub allowed_agents: Option<Vec<String>>,
    /// Tenants that see the server; `None` means every tenant.
    pub tenants: Option<Vec<TenantId>>,
    /// What its tools may do (default read-only).
    pub mutability: ToolMutability,
    /// Potential for harm (default medium).
    pub danger_level: DangerLevel,
    /// How long one call may take.
    pub timeout: Duration,
}

impl AiMcpServerRegistration {
    /// Default time one call may take.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

    /// A registration with the defaults: read-only, medium danger, every agent and tenant,
    /// a 30 s timeout.
    pub fn new(
        name: impl Into<String>,
        transport: McpTransport,
        tool_allowlist: Vec<String>,
        permissions: Vec<Permission>,
    ) -> Self {
        Self {
            name: name.into(),
            transport,
            tool_allowlist,
            permissions,
            allowed_agents: None,
            tenants: None,
            mutability: ToolMutability::ReadOnly,
            danger_level: DangerLevel::Medium,
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }

    /// The Weaver name of one of its tools: `mcp.<server>.<tool>`.
    pub fn tool_name(&self, tool: &str) -> String {
        format!("mcp.{}.{tool}", self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_a_secret() {
        let registration = AiMcpServerRegistration::new(
            "everything",
            McpTransport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: vec![("X-Team".into(), "a".into())],
                secret_headers: vec![("Authorization".into(), SecretValue::new("Bearer s3cr3t"))],
            },
            vec!["echo".into()],
            vec![Permission::READ_WORKFLOWS],
        );
        let shown = format!("{registration:?}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        assert!(shown.contains("X-Team"));
        assert_eq!(
            registration
                .transport
                .secrets()
                .map(SecretValue::expose)
                .collect::<Vec<_>>(),
            ["Bearer s3cr3t"]
        );
        assert_eq!(registration.tool_name("echo"), "mcp.everything.echo");
    }
}
