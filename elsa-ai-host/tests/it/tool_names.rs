//! One tool, two names (SPEC §9): a tool answers to its canonical name and to its grounding
//! name wherever a tool is named, keeps one enablement state under the canonical name, and is
//! offered under the spelling the registry's naming chooses.

use std::sync::Arc;

use elsa_ai_abstractions::{
    AiAuditEvent, AiCaller, AiToolDefinition, AiToolQuery, AiToolRegistry, AuditAction, Permission,
    ToolNaming,
};
use elsa_ai_host::testing::governance::{
    GovernanceHarness, TEST_AGENT, TEST_TENANT, TestTool, proposal_tool, read_tool,
};
use elsa_ai_host::{
    EnablementChange, HostCore, InMemoryAuditLog, Redactor, ToolRegistrationError, ToolRegistry,
};
use serde_json::json;

fn get_definition() -> AiToolDefinition {
    read_tool("workflow.getDefinition").with_grounding_name("workflows.getDefinition")
}

fn propose() -> AiToolDefinition {
    proposal_tool("workflow.proposeCreate").with_grounding_name("workflows.proposeCreate")
}

/// An agent that names one tool by its grounding name and the other by its canonical one.
fn harness(naming: ToolNaming) -> GovernanceHarness {
    GovernanceHarness::builder()
        .definition(get_definition())
        .definition(propose())
        .agent_tools(&["workflows.getDefinition", "workflow.proposeCreate"])
        .naming(naming)
        .build()
}

fn listed_names(tools: &[Arc<AiToolDefinition>]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

fn query(caller: AiCaller) -> AiToolQuery {
    AiToolQuery {
        agent: Some(TEST_AGENT.into()),
        ..AiToolQuery::for_caller(caller)
    }
}

fn tool_records(harness: &GovernanceHarness) -> Vec<AiAuditEvent> {
    harness
        .audit
        .events(&TEST_TENANT.into())
        .into_iter()
        .filter(|e| e.action == AuditAction::TOOL_INVOKED || e.action == AuditAction::TOOL_DENIED)
        .collect()
}

#[tokio::test]
async fn either_name_reaches_the_tool_and_records_name_it_canonically() {
    let harness = harness(ToolNaming::Contract);
    for name in ["workflow.getDefinition", "workflows.getDefinition"] {
        let result = harness.call(name, json!({})).await;
        assert!(result.is_success(), "{name}: {result:?}");
    }
    let records = tool_records(&harness);
    assert_eq!(records.len(), 2);
    for record in &records {
        assert_eq!(
            record.tool_name.as_deref(),
            Some("workflow.getDefinition"),
            "one canonical name in audit records"
        );
    }
    assert_eq!(records[0].details["calledAs"], serde_json::Value::Null);
    assert_eq!(records[1].details["calledAs"], "workflows.getDefinition");

    // Metrics count both calls under the canonical name.
    let counted = harness.governor.metrics().tools.snapshot().by_tool;
    assert_eq!(
        counted.keys().collect::<Vec<_>>(),
        ["workflow.getDefinition"]
    );
    assert_eq!(counted["workflow.getDefinition"][0], 2);
}

#[tokio::test]
async fn a_denial_by_the_grounding_name_is_recorded_under_the_canonical_name() {
    let harness = harness(ToolNaming::Contract);
    // Proposal tools are off until enabled: refused at step 4, whichever name is used.
    let result = harness.call("workflows.proposeCreate", json!({})).await;
    assert_eq!(
        result.error.as_ref().map(|e| e.code.as_str()),
        Some("tool_disabled")
    );
    let records = tool_records(&harness);
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0].tool_name.as_deref(),
        Some("workflow.proposeCreate")
    );
    assert_eq!(records[0].details["calledAs"], "workflows.proposeCreate");
}

#[tokio::test]
async fn the_naming_decides_the_spelling_offered_and_a_tool_is_never_offered_twice() {
    let contract = harness(ToolNaming::Contract);
    contract.decide("workflow.proposeCreate", None, true).await;
    let listed = contract
        .registry
        .list(&query(contract.caller()))
        .await
        .unwrap();
    assert_eq!(
        listed_names(&listed),
        ["workflow.getDefinition", "workflow.proposeCreate"]
    );

    let grounding = harness(ToolNaming::Grounding);
    grounding.decide("workflow.proposeCreate", None, true).await;
    let listed = grounding
        .registry
        .list(&query(grounding.caller()))
        .await
        .unwrap();
    assert_eq!(
        listed_names(&listed),
        ["workflows.getDefinition", "workflows.proposeCreate"]
    );
    // The offered definition is the tool's, under the other spelling.
    assert_eq!(
        listed[0].grounding_name.as_deref(),
        Some("workflows.getDefinition")
    );
    let registered = grounding
        .registry
        .registered("workflows.getDefinition")
        .unwrap();
    assert_eq!(&**registered.name(), "workflow.getDefinition");
}

#[tokio::test]
async fn an_agent_naming_either_spelling_scopes_the_tool() {
    let harness = harness(ToolNaming::Contract);
    // The agent names the read tool only by its grounding name and the proposal tool only by
    // its canonical one; both are in scope under either name.
    harness.decide("workflow.proposeCreate", None, true).await;
    for name in [
        "workflow.getDefinition",
        "workflows.getDefinition",
        "workflow.proposeCreate",
        "workflows.proposeCreate",
    ] {
        let found = harness
            .registry
            .find(name, &query(harness.caller()))
            .await
            .unwrap();
        assert!(found.is_some(), "{name}");
    }
}

#[tokio::test]
async fn enablement_set_through_either_name_is_one_decision_under_the_canonical_name() {
    let harness = harness(ToolNaming::Contract);
    let log = Arc::new(InMemoryAuditLog::new());
    let service = HostCore::builder(Arc::new(Redactor::default()), log.clone())
        .build()
        .enablement(harness.registry.clone());
    let admin = AiCaller::new("root", TEST_TENANT, [Permission::ADMIN_AI]);
    let change = |name: &str, enabled| EnablementChange {
        tool_name: name.into(),
        agent: None,
        enabled,
    };
    let stored = service
        .set(&admin, change("workflows.proposeCreate", true))
        .await
        .unwrap();
    assert_eq!(stored.tool_name, "workflow.proposeCreate");
    assert!(
        harness
            .call("workflows.proposeCreate", json!({}))
            .await
            .is_success()
    );

    service
        .set(&admin, change("workflow.proposeCreate", false))
        .await
        .unwrap();
    let decisions = service.decisions(&admin).await.unwrap();
    assert_eq!(decisions.len(), 1, "one state, whichever name changed it");
    assert!(!decisions[0].enabled);
    assert!(
        !harness
            .call("workflows.proposeCreate", json!({}))
            .await
            .is_success()
    );

    let records = log.events(&TEST_TENANT.into());
    assert_eq!(
        records[0].tool_name.as_deref(),
        Some("workflow.proposeCreate")
    );
    assert_eq!(records[0].details["calledAs"], "workflows.proposeCreate");
    assert_eq!(records[1].details["calledAs"], serde_json::Value::Null);
}

#[test]
fn a_second_name_is_unique_across_every_name_of_every_tool() {
    let taken = ToolRegistry::builder()
        .tool(Arc::new(TestTool::echo(get_definition())))
        .unwrap()
        .tool(Arc::new(TestTool::echo(read_tool(
            "workflows.getDefinition",
        ))))
        .unwrap_err();
    assert_eq!(
        taken,
        ToolRegistrationError::Duplicate {
            name: "workflows.getDefinition".into()
        }
    );
    let invalid = ToolRegistry::builder()
        .tool(Arc::new(TestTool::echo(
            read_tool("demo.read").with_grounding_name("Demo Read"),
        )))
        .unwrap_err();
    assert!(
        matches!(invalid, ToolRegistrationError::InvalidName { .. }),
        "{invalid:?}"
    );
    let mcp = ToolRegistry::builder()
        .tool(Arc::new(TestTool::echo(
            read_tool("demo.read").with_grounding_name("mcp.github.read"),
        )))
        .unwrap_err();
    assert!(
        matches!(mcp, ToolRegistrationError::McpNamespace { .. }),
        "{mcp:?}"
    );
}
