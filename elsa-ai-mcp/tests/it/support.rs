//! Governed MCP tools for one test: the clients, and a harness whose registry holds their
//! tools (with the tenants that see them) and whose redactor knows the secrets.

use std::sync::Arc;
use std::time::{Duration, Instant};

use elsa_ai_abstractions::{AiMcpServerRegistration, AiToolResult};
use elsa_ai_host::Redactor;
use elsa_ai_host::testing::governance::GovernanceHarness;
use elsa_ai_mcp::{McpClients, McpServerState};

pub struct Governed {
    pub clients: McpClients,
    pub harness: GovernanceHarness,
}

/// Starts the servers and registers their tools in a governance harness.
pub async fn governed(registrations: Vec<AiMcpServerRegistration>) -> Governed {
    let secrets: Vec<String> = registrations
        .iter()
        .flat_map(|r| r.transport.secrets())
        .map(|s| s.expose().to_owned())
        .collect();
    let redactor = Redactor::builder()
        .secrets(secrets)
        .build()
        .expect("the secrets are usable");
    let clients = McpClients::start(
        registrations,
        Duration::from_secs(30),
        Arc::new(redactor.clone()),
    )
    .await;
    let mut builder = GovernanceHarness::builder()
        .redactor(redactor)
        .result_limit(16 * 1024);
    for registration in clients.tools() {
        builder = builder.tool_for_tenants(registration.tool, registration.tenants);
    }
    Governed {
        clients,
        harness: builder.build(),
    }
}

impl Governed {
    /// Enables a tool in the harness tenant, as an administrator would.
    pub async fn enable(&self, tool: &str) {
        self.harness.decide(tool, None, true).await;
    }

    pub async fn call(&self, tool: &str, arguments: serde_json::Value) -> AiToolResult {
        self.harness.call(tool, arguments).await
    }

    /// Waits until server `index` is ready again, returning how long that took.
    pub async fn ready_again(&self, index: usize, limit: Duration) -> Duration {
        let started = Instant::now();
        loop {
            let status = &self.clients.statuses()[index];
            if status.state == McpServerState::Ready && status.restarts > 0 {
                return started.elapsed();
            }
            assert!(
                started.elapsed() < limit,
                "not ready again after {limit:?}: {status:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The error code of a failed or denied result.
pub fn code(result: &AiToolResult) -> &str {
    result
        .error
        .as_ref()
        .map_or("<success>", |error| error.code.as_str())
}
