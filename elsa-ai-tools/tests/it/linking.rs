//! Linking the crate is all a host does: a registry built with no explicit registration
//! lists every built-in tool with the metadata SPEC §4 gives it.

use std::sync::Arc;

use elsa_ai_abstractions::{
    AiCaller, AiToolQuery, AiToolRegistry, AuditBehavior, DangerLevel, Permission, TenantBehavior,
    ToolMutability, ToolSource,
};
use elsa_ai_host::testing::governance::all_permissions;
use elsa_ai_host::{AgentRegistry, InMemoryToolEnablementStore, ToolRegistry};
use elsa_ai_tools as _;
use elsa_ai_tools::names;

/// What each built-in tool must declare.
struct Expected {
    name: &'static str,
    mutability: ToolMutability,
    danger: DangerLevel,
    permissions: Vec<Permission>,
    audit: AuditBehavior,
}

fn read(name: &'static str, danger: DangerLevel, permission: Permission) -> Expected {
    Expected {
        name,
        mutability: ToolMutability::ReadOnly,
        danger,
        permissions: vec![permission],
        audit: AuditBehavior::RecordInvocation,
    }
}

fn proposal(name: &'static str, permissions: &[Permission]) -> Expected {
    Expected {
        name,
        mutability: ToolMutability::Proposal,
        danger: DangerLevel::Medium,
        permissions: permissions.to_vec(),
        audit: AuditBehavior::RecordInvocationAndResult,
    }
}

fn expected() -> Vec<Expected> {
    use DangerLevel::{High, Low, Medium};
    let definitions = Permission::READ_WORKFLOWS;
    let instances = || Permission::READ_WORKFLOW_INSTANCES;
    vec![
        read(names::GET_DEFINITION, Low, definitions.clone()),
        read(names::GET_DEFINITION_GRAPH, Low, definitions.clone()),
        read(names::LIST_DEFINITIONS, Low, definitions.clone()),
        read(names::LIST_VERSIONS, Low, definitions.clone()),
        read(names::COMPARE_VERSIONS, Low, definitions.clone()),
        read(names::FIND_USAGES, Low, definitions.clone()),
        read(names::EXPLAIN, Low, definitions.clone()),
        read(names::ACTIVITIES_CATALOG, Low, Permission::READ_ACTIVITIES),
        read(
            names::ACTIVITIES_GET_DESCRIPTOR,
            Low,
            Permission::READ_ACTIVITIES,
        ),
        read(names::INSTANCE_GET, Medium, instances()),
        read(names::INSTANCE_SEARCH, Low, instances()),
        read(names::INSTANCE_ERRORS, Medium, instances()),
        read(names::EXECUTION_HISTORY, Medium, instances()),
        read(names::AGGREGATE_FAILURES, Medium, instances()),
        read(names::DETECT_TRENDS, Medium, instances()),
        read(names::INSTANCE_SUMMARIZE, Medium, instances()),
        read(names::INSTANCE_ACTIVITY_STATE, High, instances()),
        read(names::INCIDENTS_SEARCH, Medium, instances()),
        read(names::INCIDENTS_GET, Medium, instances()),
        proposal(names::VALIDATE_DRAFT, &[Permission::PROPOSE_WORKFLOWS]),
        proposal(names::PROPOSE_CREATE, &[Permission::PROPOSE_WORKFLOWS]),
        proposal(
            names::PROPOSE_UPDATE,
            &[Permission::PROPOSE_WORKFLOWS, definitions],
        ),
        operation(names::PROPOSE_RETRY, Medium, operate()),
        operation(names::PROPOSE_CANCEL, High, operate()),
        operation(names::PROPOSE_RESTART, Medium, operate()),
        operation(names::PROPOSE_PUBLISH, Medium, publish()),
        operation(names::PROPOSE_UNPUBLISH, Medium, publish()),
        operation(names::PROPOSE_DELETE, High, publish()),
    ]
}

fn operate() -> Permission {
    Permission::OPERATE_WORKFLOW_INSTANCES
}

fn publish() -> Permission {
    Permission::PUBLISH_WORKFLOWS
}

/// An operational proposal tool: proposal permission plus the operation's own.
fn operation(name: &'static str, danger: DangerLevel, permission: Permission) -> Expected {
    Expected {
        danger,
        ..proposal(name, &[Permission::PROPOSE_WORKFLOWS, permission])
    }
}

fn registry() -> ToolRegistry {
    ToolRegistry::builder()
        .linked_tools()
        .expect("every built-in tool passes registration-time validation")
        .build(
            Arc::new(AgentRegistry::builtin()),
            Arc::new(InMemoryToolEnablementStore::new()),
        )
}

#[test]
fn a_registry_with_no_explicit_registration_holds_every_built_in_tool() {
    let registry = registry();
    let registered: Vec<&str> = registry
        .iter()
        .map(|t| t.definition().name.as_str())
        .collect();
    for name in names::ALL {
        assert!(
            registered.contains(name),
            "{name} is not linked: {registered:?}"
        );
    }
    let expected = expected();
    assert_eq!(
        expected.len(),
        names::ALL.len(),
        "every tool has expectations"
    );
    for expected in &expected {
        let tool = registry.registered(expected.name).expect("registered");
        let definition = tool.definition();
        assert_eq!(
            definition.mutability, expected.mutability,
            "{}",
            expected.name
        );
        assert_eq!(
            definition.danger_level, expected.danger,
            "{}",
            expected.name
        );
        assert_eq!(
            definition.permissions, expected.permissions,
            "{}",
            expected.name
        );
        assert_eq!(
            definition.audit_behavior, expected.audit,
            "{}",
            expected.name
        );
        assert_eq!(
            definition.tenant_behavior,
            TenantBehavior::TenantScoped,
            "{}",
            expected.name
        );
        assert_eq!(definition.source, ToolSource::BuiltIn, "{}", expected.name);
        assert_eq!(
            definition.enabled_by_default,
            expected.mutability == ToolMutability::ReadOnly,
            "{}: only read-only tools are on by default",
            expected.name
        );
        assert_eq!(definition.allowed_agents, None, "{}", expected.name);
        assert!(!definition.description.is_empty() && !definition.display_name.is_empty());
        let schema = &definition.input_schema;
        assert_eq!(schema["type"], "object", "{}", expected.name);
        assert_eq!(
            schema["additionalProperties"], false,
            "{}: unknown arguments are refused",
            expected.name
        );
    }
}

#[tokio::test]
async fn a_caller_with_every_permission_is_listed_the_read_only_tools_until_proposals_are_enabled()
{
    let registry = registry();
    let caller = AiCaller::new("alice", "acme", all_permissions());
    let listed: Vec<String> = registry
        .list(&AiToolQuery::for_caller(caller))
        .await
        .expect("listing")
        .into_iter()
        .map(|t| t.name.clone())
        .collect();
    for expected in &expected() {
        let shown = listed.iter().any(|n| n == expected.name);
        assert_eq!(
            shown,
            expected.mutability == ToolMutability::ReadOnly,
            "{} listed: {shown}",
            expected.name
        );
    }
}

#[test]
fn every_grounding_name_reaches_its_tool_and_every_tool_has_a_grounding_spelling() {
    let registry = registry();
    for (grounding, canonical) in names::grounding::CATALOG {
        let tool = registry
            .registered(grounding)
            .expect("a catalog name reaches a tool");
        assert_eq!(&**tool.name(), *canonical, "{grounding}");
    }
    // Under grounding naming, every built-in tool is offered in upstream's plural spelling.
    for name in names::ALL {
        let definition = registry.registered(name).expect("registered").definition();
        let offered = definition.name_for(elsa_ai_abstractions::ToolNaming::Grounding);
        let namespace = offered.split('.').next().unwrap_or_default();
        assert!(
            ["activities", "workflows", "instances", "incidents"].contains(&namespace),
            "{name} is offered as {offered}"
        );
    }
}
