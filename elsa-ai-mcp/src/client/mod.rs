//! Weaver as an MCP client: external servers, supervised, their allowlisted tools governed.

mod connection;
mod tool;

use std::sync::Arc;
use std::time::Duration;

use elsa_ai_abstractions::{AiMcpServerRegistration, AiTextRedactor, AiTool};
use elsa_workflows::TenantId;
use rmcp::model::Tool;
use tokio_util::sync::CancellationToken;

use connection::McpConnection;
pub use connection::McpServerState;
use tool::McpTool;

/// The external MCP servers of one weaver: each supervised by a task of its own (restarted
/// with backoff when it crashes or stops answering), their allowlisted tools offered to the
/// host's registry as `mcp.<server>.<tool>`.
///
/// The tool set is fixed when the servers start: the allowlisted tools each server lists
/// then. Later `notifications/tools/list_changed` refresh which of those tools can be called
/// (a tool the server stopped listing fails with 503 `mcp_tool_unavailable`); nothing
/// outside the allowlist is ever reachable.
pub struct McpClients {
    connections: Vec<Arc<McpConnection>>,
    /// Per connection, the allowlisted tools its server listed at start-up.
    registered: Vec<Vec<Tool>>,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for McpClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClients")
            .field(
                "servers",
                &self
                    .connections
                    .iter()
                    .map(|c| c.registration().name.as_str())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// A governed MCP tool with the tenants that see it, ready for the host's registry.
#[derive(Clone)]
pub struct McpToolRegistration {
    /// The tool.
    pub tool: Arc<dyn AiTool>,
    /// The tenants that see it; `None` means every tenant.
    pub tenants: Option<Vec<TenantId>>,
}

impl std::fmt::Debug for McpToolRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpToolRegistration")
            .field("tool", &self.tool.definition().name)
            .field("tenants", &self.tenants)
            .finish()
    }
}

/// One server as capabilities show it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpServerStatus {
    /// The configured name.
    pub name: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// Where it is in its life.
    pub state: McpServerState,
    /// The Weaver names of its tools registered at start-up.
    pub tools: Vec<String>,
    /// Allowlisted tools the server did not list at start-up (not registered).
    pub missing: Vec<String>,
    /// The tenants that see the server; `None` means every tenant.
    pub tenants: Option<Vec<TenantId>>,
    /// Why the last connection failed or ended.
    pub error: Option<String>,
    /// How often the connection was re-established after being lost.
    pub restarts: u32,
    /// The child's process id, for stdio servers that are running.
    pub pid: Option<u32>,
}

impl McpClients {
    /// Starts every server and waits until each has connected or failed once, at most
    /// `startup` in all. A server that fails does not stop the others: it is reported in
    /// [`McpClients::statuses`] and retried in the background. Error texts pass `redactor`
    /// (which must know the servers' secrets) before they are kept or logged.
    pub async fn start(
        registrations: Vec<AiMcpServerRegistration>,
        startup: Duration,
        redactor: Arc<dyn AiTextRedactor>,
    ) -> Self {
        let shutdown = CancellationToken::new();
        let connections: Vec<Arc<McpConnection>> = registrations
            .into_iter()
            .map(|registration| McpConnection::new(registration, redactor.clone()))
            .collect();
        for connection in &connections {
            tokio::spawn(connection.clone().supervise(shutdown.child_token()));
        }
        futures::future::join_all(connections.iter().map(|c| c.first_outcome(startup))).await;
        let registered = connections
            .iter()
            .map(|connection| {
                let listed = connection.tools();
                connection
                    .registration()
                    .tool_allowlist
                    .iter()
                    .filter_map(|name| listed.get(name).cloned())
                    .collect()
            })
            .collect();
        Self {
            connections,
            registered,
            shutdown,
        }
    }

    /// The governed tools, one per allowlisted tool a server listed at start-up.
    pub fn tools(&self) -> Vec<McpToolRegistration> {
        self.connections
            .iter()
            .zip(&self.registered)
            .flat_map(|(connection, listed)| {
                listed.iter().map(move |tool| McpToolRegistration {
                    tool: Arc::new(McpTool::new(connection.clone(), tool)),
                    tenants: connection.registration().tenants.clone(),
                })
            })
            .collect()
    }

    /// Every server's state, in configuration order.
    pub fn statuses(&self) -> Vec<McpServerStatus> {
        self.connections
            .iter()
            .zip(&self.registered)
            .map(|(connection, registered)| {
                let registration = connection.registration();
                let live = connection.snapshot();
                let registered: Vec<&str> = registered.iter().map(|t| t.name.as_ref()).collect();
                McpServerStatus {
                    name: registration.name.clone(),
                    transport: registration.transport.kind(),
                    state: live.state,
                    tools: registered
                        .iter()
                        .map(|tool| registration.tool_name(tool))
                        .collect(),
                    missing: registration
                        .tool_allowlist
                        .iter()
                        .filter(|tool| !registered.contains(&tool.as_str()))
                        .cloned()
                        .collect(),
                    tenants: registration.tenants.clone(),
                    error: live.error,
                    restarts: live.restarts,
                    pid: live.pid,
                }
            })
            .collect()
    }

    /// Stops supervising and closes every connection (stdio children are killed).
    pub fn shutdown(&self) {
        self.shutdown.cancel();
    }
}

impl Drop for McpClients {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}
