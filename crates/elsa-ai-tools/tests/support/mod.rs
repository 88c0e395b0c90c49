//! What this crate's integration tests share: the governed world they run in (the linked
//! tools behind the host's `ToolGovernor`, over an in-memory backend seeded with the fixture
//! folders for [`TEST_TENANT`] and a few objects of its own for [`GLOBEX`]) and the checks
//! every tool must pass.

#![allow(dead_code)] // each test binary uses a different part

use std::sync::Arc;

use elsa_ai_abstractions::{
    AiCaller, AiContextAttachment, AiProposalIntake, AiToolOutcome, AiToolResult, Permission,
};
use elsa_ai_host::testing::governance::{
    GovernanceHarness, RefusingProposalIntake, TEST_TENANT, all_permissions, backend_services,
};
use elsa_ai_tools as _;
use elsa_workflows::{InMemoryWorkflowBackend, TenantId, WorkflowDefinition, WorkflowInstance};
use serde_json::{Value, json};
use weaver_testkit::fixture_backend;

/// The other tenant.
pub const GLOBEX: &str = "globex";
/// A definition only [`GLOBEX`] has.
pub const GLOBEX_DEFINITION: &str = "globex-payroll";
/// A faulted instance only [`GLOBEX`] has.
pub const GLOBEX_INSTANCE: &str = "globex-run-1";

/// The governed tools over the seeded backend.
pub struct World {
    /// Registry (every linked tool) and governor.
    pub harness: GovernanceHarness,
    /// The data both tenants' tools read.
    pub backend: Arc<InMemoryWorkflowBackend>,
}

/// A world whose proposal tools reach no proposal service.
pub fn world() -> World {
    world_with(Arc::new(RefusingProposalIntake))
}

/// A world whose proposal tools submit to `proposals`.
pub fn world_with(proposals: Arc<dyn AiProposalIntake>) -> World {
    let backend = Arc::new(fixture_backend(&[TEST_TENANT]));
    seed_globex(&backend);
    let harness = GovernanceHarness::builder()
        .linked_tools()
        .services(backend_services(backend.clone(), proposals))
        .build();
    World { harness, backend }
}

/// Gives [`GLOBEX`] a definition and a faulted instance of its own.
fn seed_globex(backend: &InMemoryWorkflowBackend) {
    let globex = TenantId::new(GLOBEX);
    let mut definition = WorkflowDefinition::new_flowchart(GLOBEX_DEFINITION, "Globex payroll");
    definition.set_published(true);
    backend
        .insert_definition(&globex, definition)
        .expect("globex definition");
    let instance = WorkflowInstance::from_value(json!({
        "id": GLOBEX_INSTANCE,
        "definitionId": GLOBEX_DEFINITION,
        "definitionVersion": 1,
        "status": "Finished",
        "subStatus": "Faulted",
        "createdAt": "2024-04-18T12:00:00Z",
        "incidents": [{
            "activityId": "Pay1", "activityType": "Globex.Pay", "message": "globex secret failure",
            "exception": {"type": "System.InvalidOperationException", "message": "globex secret failure"},
            "timestamp": "2024-04-18T12:00:01Z"
        }]
    }))
    .expect("globex instance");
    backend.insert_instance(&globex, instance);
}

impl World {
    /// Calls `tool` as `alice` of [`TEST_TENANT`] with every permission.
    pub async fn call(&self, tool: &str, arguments: Value) -> AiToolResult {
        self.harness.call_as(self.alice(), Vec::new(), tool, arguments).await
    }

    /// Calls `tool` as `alice` in a turn with `attachments`.
    pub async fn call_with(
        &self,
        attachments: Vec<AiContextAttachment>,
        tool: &str,
        arguments: Value,
    ) -> AiToolResult {
        self.harness.call_as(self.alice(), attachments, tool, arguments).await
    }

    /// Calls `tool` as `caller`.
    pub async fn call_as(&self, caller: AiCaller, tool: &str, arguments: Value) -> AiToolResult {
        self.harness.call_as(caller, Vec::new(), tool, arguments).await
    }

    /// `alice` of [`TEST_TENANT`] with every permission.
    pub fn alice(&self) -> AiCaller {
        AiCaller::new("alice", TEST_TENANT, all_permissions())
    }

    /// `bob` of [`TEST_TENANT`] with every permission but `missing`.
    pub fn without(&self, missing: &Permission) -> AiCaller {
        AiCaller::new(
            "bob",
            TEST_TENANT,
            all_permissions().into_iter().filter(|p| p != missing),
        )
    }

    /// Checks what every tool that reads one object must do: an unknown id and another
    /// tenant's id are the same 404 (only the id in the message differs), and a caller
    /// without `permission` is denied before anything is read.
    pub async fn assert_standard_refusals(
        &self,
        tool: &str,
        permission: &Permission,
        arguments: impl Fn(&str) -> Value,
        known_id: &str,
        globex_id: &str,
    ) {
        let unknown = refusal(&self.call(tool, arguments("no-such-id")).await);
        assert_eq!((unknown.0, unknown.1.as_str()), (404, "not_found"), "{tool}: {unknown:?}");
        let foreign = refusal(&self.call(tool, arguments(globex_id)).await);
        assert_eq!(
            (foreign.0, foreign.1.as_str()),
            (404, "not_found"),
            "{tool}: another tenant's id"
        );
        assert_eq!(
            foreign.2.replace(globex_id, "ID"),
            unknown.2.replace("no-such-id", "ID"),
            "{tool}: another tenant's id reads exactly like an unknown one"
        );
        let denied = self
            .call_as(self.without(permission), tool, arguments(known_id))
            .await;
        assert_eq!(denied.outcome, AiToolOutcome::Denied, "{tool}");
        let (status, code, message) = refusal(&denied);
        assert_eq!((status, code.as_str()), (403, "permission_denied"), "{tool}");
        assert!(message.contains(permission.as_str()), "{tool}: {message}");
    }

    /// Checks that each of `bad` arguments is refused as `invalid_arguments` before the tool
    /// runs.
    pub async fn assert_invalid_arguments(&self, tool: &str, bad: &[Value]) {
        for arguments in bad {
            let (status, code, message) = refusal(&self.call(tool, arguments.clone()).await);
            assert_eq!(
                (status, code.as_str()),
                (400, "invalid_arguments"),
                "{tool} {arguments}: {message}"
            );
        }
    }
}

/// The content of a successful result.
///
/// # Panics
///
/// When the call did not succeed.
pub fn content(result: &AiToolResult) -> &Value {
    assert!(
        result.is_success(),
        "expected success, got {}",
        result.to_model_text()
    );
    &result.content
}

/// Status, code and message of a failed or denied result.
///
/// # Panics
///
/// When the call succeeded.
pub fn refusal(result: &AiToolResult) -> (u16, String, String) {
    let error = result
        .error
        .as_ref()
        .unwrap_or_else(|| panic!("expected a refusal, got {}", result.content));
    (error.status, error.code.clone(), error.message.clone())
}
