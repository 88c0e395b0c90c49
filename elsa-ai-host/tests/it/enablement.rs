//! The enablement service: administrator-only, audited before effect, Administrative tools
//! refused, agent decisions overriding tenant-wide ones.

use std::sync::Arc;

use elsa_ai_abstractions::{
    AiAuditSink, AiCaller, AiToolEnablementStore, AiToolQuery, AiToolRegistry, AuditAction,
    AuditOutcome, Permission, ToolMutability,
};
use elsa_ai_host::testing::governance::{
    FailingAuditSink, GovernanceHarness, TEST_AGENT, TEST_TENANT, all_permissions, proposal_tool,
    read_tool,
};
use elsa_ai_host::{EnablementChange, HostCore, InMemoryAuditLog, Redactor, ToolEnablementService};

fn harness() -> GovernanceHarness {
    let mut admin = read_tool("admin.purge");
    admin.mutability = ToolMutability::Administrative;
    admin.enabled_by_default = false;
    GovernanceHarness::builder()
        .definition(read_tool("demo.read"))
        .definition(proposal_tool("demo.propose"))
        .definition(admin)
        .build()
}

fn service(harness: &GovernanceHarness, audit: Arc<dyn AiAuditSink>) -> ToolEnablementService {
    HostCore::builder(Arc::new(Redactor::default()), audit)
        .build()
        .enablement(harness.registry.clone())
}

fn change(tool: &str, agent: Option<&str>, enabled: bool) -> EnablementChange {
    EnablementChange {
        tool_name: tool.into(),
        agent: agent.map(Into::into),
        enabled,
    }
}

fn admin() -> AiCaller {
    AiCaller::new("root", TEST_TENANT, [Permission::ADMIN_AI])
}

#[tokio::test]
async fn an_administrator_enables_a_proposal_tool_and_the_change_is_audited_with_before_and_after()
{
    let harness = harness();
    let log = Arc::new(InMemoryAuditLog::new());
    let service = service(&harness, log.clone());

    let stored = service
        .set(&admin(), change("demo.propose", None, true))
        .await
        .unwrap();
    assert_eq!((stored.changed_by.as_str(), stored.enabled), ("root", true));

    let records = log.events(&TEST_TENANT.into());
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!(
        (record.action.clone(), record.outcome),
        (AuditAction::TOOL_ENABLEMENT_CHANGED, AuditOutcome::Success)
    );
    assert_eq!(record.actor_id, "root");
    assert_eq!(record.tenant_id.as_str(), TEST_TENANT);
    assert_eq!(record.tool_name.as_deref(), Some("demo.propose"));
    assert_eq!(record.details["before"]["enabled"], false);
    assert_eq!(record.details["after"]["enabled"], true);
    assert_eq!(record.details["agent"], serde_json::Value::Null);

    let listed = harness
        .registry
        .list(&AiToolQuery {
            agent: Some(TEST_AGENT.into()),
            ..AiToolQuery::for_caller(harness.caller())
        })
        .await
        .unwrap();
    assert!(
        listed.iter().any(|d| d.name == "demo.propose"),
        "now shown to models"
    );
    assert_eq!(service.decisions(&admin()).await.unwrap(), vec![stored]);
}

#[tokio::test]
async fn an_agent_decision_overrides_the_tenant_wide_one() {
    let harness = harness();
    let service = service(&harness, harness.audit.clone());
    service
        .set(&admin(), change("demo.propose", None, true))
        .await
        .unwrap();
    service
        .set(&admin(), change("demo.propose", Some(TEST_AGENT), false))
        .await
        .unwrap();
    let records = harness.audit.events(&TEST_TENANT.into());
    assert_eq!(records[1].details["before"]["enabled"], true);
    assert_eq!(records[1].details["after"]["enabled"], false);
    assert_eq!(
        harness
            .call("demo.propose", serde_json::json!({}))
            .await
            .error
            .unwrap()
            .code,
        "tool_disabled"
    );
}

#[tokio::test]
async fn changing_enablement_requires_admin_ai_and_the_refusal_is_audited() {
    let harness = harness();
    let service = service(&harness, harness.audit.clone());
    let author = AiCaller::new(
        "alice",
        TEST_TENANT,
        [Permission::PROPOSE_WORKFLOWS, Permission::APPLY_WORKFLOWS],
    );
    let error = service
        .set(&author, change("demo.propose", None, true))
        .await
        .unwrap_err();
    assert_eq!((error.status(), error.code()), (403, "permission_denied"));
    assert!(
        harness
            .enablement
            .list(&TEST_TENANT.into())
            .await
            .unwrap()
            .is_empty(),
        "nothing changed"
    );
    let records = harness.audit.events(&TEST_TENANT.into());
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome, AuditOutcome::Denied);
    assert_eq!(service.decisions(&author).await.unwrap_err().status(), 403);
}

#[tokio::test]
async fn administrative_tools_cannot_be_enabled() {
    let harness = harness();
    let service = service(&harness, harness.audit.clone());
    let root = AiCaller::new("root", TEST_TENANT, all_permissions());
    let error = service
        .set(&root, change("admin.purge", None, true))
        .await
        .unwrap_err();
    assert_eq!(
        (error.status(), error.code()),
        (403, "administrative_tool_disabled")
    );
    assert!(
        harness
            .enablement
            .list(&TEST_TENANT.into())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        harness.audit.events(&TEST_TENANT.into())[0].outcome,
        AuditOutcome::Denied
    );
    // Turning one off is harmless and allowed.
    service
        .set(&root, change("admin.purge", None, false))
        .await
        .unwrap();
}

#[tokio::test]
async fn unknown_tools_and_agents_are_404() {
    let harness = harness();
    let service = service(&harness, harness.audit.clone());
    assert_eq!(
        service
            .set(&admin(), change("demo.ghost", None, true))
            .await
            .unwrap_err()
            .code(),
        "tool_not_found"
    );
    let error = service
        .set(&admin(), change("demo.read", Some("ghost"), true))
        .await
        .unwrap_err();
    assert_eq!((error.status(), error.code()), (404, "agent_not_found"));
}

#[tokio::test]
async fn nothing_changes_when_the_change_cannot_be_audited() {
    let harness = harness();
    let service = service(&harness, Arc::new(FailingAuditSink));
    let error = service
        .set(&admin(), change("demo.propose", None, true))
        .await
        .unwrap_err();
    assert_eq!((error.status(), error.code()), (500, "audit_failed"));
    assert!(
        harness
            .enablement
            .list(&TEST_TENANT.into())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        harness
            .call("demo.propose", serde_json::json!({}))
            .await
            .error
            .unwrap()
            .code,
        "tool_disabled"
    );
}

#[tokio::test]
async fn decisions_are_per_tenant() {
    let harness = harness();
    let service = service(&harness, harness.audit.clone());
    let other_admin = AiCaller::new("root", "globex", [Permission::ADMIN_AI]);
    service
        .set(&other_admin, change("demo.propose", None, true))
        .await
        .unwrap();
    assert!(
        harness.audit.events(&TEST_TENANT.into()).is_empty(),
        "audited in globex, not acme"
    );
    assert_eq!(harness.audit.events(&"globex".into()).len(), 1);
    assert_eq!(
        harness
            .call("demo.propose", serde_json::json!({}))
            .await
            .error
            .unwrap()
            .code,
        "tool_disabled"
    );
}
