//! Tool registration (metadata validation, linked tools) and filtered listing.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiAgentDefinition, AiCaller, AiError, AiTool, AiToolDefinition, AiToolExecutionContext,
    AiToolQuery, AiToolRegistration, AiToolRegistry, DangerLevel, Permission, TenantBehavior,
    ToolMutability, ToolSource, inventory,
};
use elsa_ai_host::testing::governance::{
    GovernanceHarness, TEST_AGENT, TEST_TENANT, TestTool, all_permissions, proposal_tool,
    read_tool, test_agent,
};
use elsa_ai_host::{
    AgentRegistry, InMemoryToolEnablementStore, ToolRegistrationError, ToolRegistry,
    WORKFLOW_AUTHOR,
};
use serde_json::{Value, json};

/// A tool this test binary links through `inventory`, as `elsa-ai-tools` does.
struct LinkedTool(AiToolDefinition);

#[async_trait]
impl AiTool for LinkedTool {
    fn definition(&self) -> &AiToolDefinition {
        &self.0
    }

    async fn execute(&self, _: AiToolExecutionContext) -> Result<Value, AiError> {
        Ok(json!({"linked": true}))
    }
}

inventory::submit! {
    AiToolRegistration::new(|| Arc::new(LinkedTool(read_tool("workflow.getDefinition"))))
}

fn register(definition: AiToolDefinition) -> Result<(), ToolRegistrationError> {
    ToolRegistry::builder()
        .tool(Arc::new(TestTool::echo(definition)))
        .map(|_| ())
}

#[test]
fn unsafe_and_ambiguous_metadata_is_refused_with_typed_errors() {
    let mut cases: Vec<(AiToolDefinition, &str)> = Vec::new();
    let mut push = |change: &dyn Fn(&mut AiToolDefinition), expected: &'static str| {
        let mut definition = read_tool("demo.tool");
        change(&mut definition);
        cases.push((definition, expected));
    };
    push(&|d| d.name = "getDefinition".into(), "InvalidName");
    push(&|d| d.name = "Demo.Tool".into(), "InvalidName");
    push(&|d| d.name = "demo.tool name".into(), "InvalidName");
    push(&|d| d.name = "mcp.github.issue".into(), "McpNamespace");
    push(&|d| d.source = ToolSource::Mcp, "McpNamespace");
    push(&|d| d.description = " ".into(), "MissingText");
    push(
        &|d| {
            d.mutability = ToolMutability::Proposal;
            d.permissions = vec![Permission::PROPOSE_WORKFLOWS];
        },
        "UnsafeDefault",
    );
    push(
        &|d| d.mutability = ToolMutability::Administrative,
        "UnsafeDefault",
    );
    push(
        &|d| {
            d.name = "mcp.github.issue".into();
            d.source = ToolSource::Mcp;
        },
        "UnsafeDefault",
    );
    push(&|d| d.permissions.clear(), "MissingPermissions");
    push(
        &|d| {
            d.permissions.clear();
            d.tenant_behavior = TenantBehavior::CrossTenantDenied;
        },
        "MissingPermissions",
    );
    push(
        &|d| d.permissions = vec![Permission::new("")],
        "EmptyPermission",
    );
    push(
        &|d| d.input_schema = json!({"type": "string"}),
        "InvalidSchema",
    );
    push(
        &|d| d.input_schema = json!({"type": "object", "properties": {"x": {"type": 5}}}),
        "InvalidSchema",
    );
    push(
        &|d| d.allowed_agents = Some(Vec::new()),
        "EmptyAllowedAgents",
    );
    push(&|d| d.timeout = Some(Duration::ZERO), "ZeroTimeout");

    for (definition, expected) in cases {
        let error = register(definition.clone()).expect_err(expected);
        let variant = format!("{error:?}");
        assert!(variant.starts_with(expected), "{expected}: got {variant}");
        assert!(
            error.to_string().contains(&definition.name),
            "the message names the tool: {error}"
        );
    }
}

#[test]
fn safe_variants_are_accepted() {
    let mut host = read_tool("host.status");
    host.tenant_behavior = TenantBehavior::HostScoped;
    host.permissions.clear();
    register(host).expect("host-scoped tools may need no permission");
    let mut mcp = read_tool("mcp.github.get_issue");
    mcp.source = ToolSource::Mcp;
    mcp.enabled_by_default = false;
    register(mcp).expect("MCP tools off by default are fine");
    register(proposal_tool("workflow.proposeCreate"))
        .expect("proposal tools off by default are fine");
}

#[test]
fn duplicate_names_are_refused_across_linked_and_code_registered_tools() {
    let error = ToolRegistry::builder()
        .linked_tools()
        .unwrap()
        .tool(Arc::new(TestTool::echo(read_tool(
            "workflow.getDefinition",
        ))))
        .unwrap_err();
    assert_eq!(
        error,
        ToolRegistrationError::Duplicate {
            name: "workflow.getDefinition".into()
        }
    );
}

#[tokio::test]
async fn linked_tools_are_collected_and_listed() {
    let registry = ToolRegistry::builder().linked_tools().unwrap().build(
        Arc::new(AgentRegistry::builtin()),
        Arc::new(InMemoryToolEnablementStore::new()),
    );
    assert_eq!(registry.len(), 1);
    let caller = AiCaller::new("alice", "acme", all_permissions());
    let query = AiToolQuery {
        agent: Some(WORKFLOW_AUTHOR.into()),
        ..AiToolQuery::for_caller(caller)
    };
    let listed = registry.list(&query).await.unwrap();
    assert_eq!(
        listed.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
        ["workflow.getDefinition"]
    );
    assert!(
        registry
            .find("workflow.getDefinition", &query)
            .await
            .unwrap()
            .is_some()
    );
}

fn names(definitions: &[Arc<AiToolDefinition>]) -> Vec<&str> {
    definitions.iter().map(|d| d.name.as_str()).collect()
}

fn query(caller: AiCaller) -> AiToolQuery {
    AiToolQuery {
        agent: Some(TEST_AGENT.into()),
        ..AiToolQuery::for_caller(caller)
    }
}

fn catalogue() -> GovernanceHarness {
    let mut instances = read_tool("instance.get");
    instances.permissions = vec![Permission::READ_WORKFLOW_INSTANCES];
    let mut host = read_tool("host.status");
    host.tenant_behavior = TenantBehavior::HostScoped;
    let mut admin = read_tool("admin.purge");
    admin.mutability = ToolMutability::Administrative;
    admin.enabled_by_default = false;
    let mut critical = read_tool("demo.critical");
    critical.danger_level = DangerLevel::Critical;
    let mut foreign = read_tool("demo.foreign");
    foreign.allowed_agents = Some(vec!["instance-diagnostics".into()]);
    GovernanceHarness::builder()
        .definition(read_tool("workflow.listDefinitions"))
        .definition(read_tool("workflow.getDefinition"))
        .definition(instances)
        .definition(host)
        .definition(admin)
        .definition(critical)
        .definition(foreign)
        .definition(proposal_tool("workflow.proposeCreate"))
        .definition(read_tool("demo.unscoped"))
        .agent_tools(&[
            "workflow.listDefinitions",
            "workflow.getDefinition",
            "instance.get",
            "host.status",
            "admin.purge",
            "demo.critical",
            "demo.foreign",
            "workflow.proposeCreate",
        ])
        .build()
}

#[tokio::test]
async fn list_shows_only_callable_tools_sorted_by_name() {
    let harness = catalogue();
    let listed = harness
        .registry
        .list(&query(harness.caller()))
        .await
        .unwrap();
    // Hidden: admin.purge (administrative), demo.critical (above the danger maximum),
    // demo.foreign (allowed_agents), workflow.proposeCreate (not enabled), demo.unscoped (not in scope).
    assert_eq!(
        names(&listed),
        [
            "host.status",
            "instance.get",
            "workflow.getDefinition",
            "workflow.listDefinitions"
        ]
    );
    assert_eq!(
        harness.enablement.reads(),
        1,
        "one enablement read per list"
    );

    harness.decide("workflow.proposeCreate", None, true).await;
    harness
        .decide("instance.get", Some(TEST_AGENT), false)
        .await;
    let listed = harness
        .registry
        .list(&query(harness.caller()))
        .await
        .unwrap();
    assert_eq!(
        names(&listed),
        [
            "host.status",
            "workflow.getDefinition",
            "workflow.listDefinitions",
            "workflow.proposeCreate"
        ]
    );
}

#[tokio::test]
async fn list_filters_by_permissions_tenant_and_query_filters() {
    let harness = catalogue();
    harness.decide("workflow.proposeCreate", None, true).await;
    let reader = AiCaller::new("bob", TEST_TENANT, [Permission::READ_WORKFLOWS]);
    let listed = harness.registry.list(&query(reader)).await.unwrap();
    assert_eq!(
        names(&listed),
        [
            "host.status",
            "workflow.getDefinition",
            "workflow.listDefinitions"
        ]
    );

    let hostless = AiCaller::new("ops", "", all_permissions());
    let listed = harness.registry.list(&query(hostless)).await.unwrap();
    assert_eq!(
        names(&listed),
        ["host.status"],
        "tenant tools need a tenant"
    );

    let proposals = AiToolQuery {
        mutability: Some(ToolMutability::Proposal),
        ..query(harness.caller())
    };
    assert_eq!(
        names(&harness.registry.list(&proposals).await.unwrap()),
        ["workflow.proposeCreate"]
    );
    let medium = AiToolQuery {
        danger_level: Some(DangerLevel::Medium),
        ..query(harness.caller())
    };
    assert_eq!(
        names(&harness.registry.list(&medium).await.unwrap()),
        ["workflow.proposeCreate"]
    );
}

#[tokio::test]
async fn agents_narrow_and_unknown_agents_are_errors() {
    let harness = catalogue();
    let author = AiToolQuery {
        agent: Some(WORKFLOW_AUTHOR.into()),
        ..AiToolQuery::for_caller(harness.caller())
    };
    assert_eq!(
        names(&harness.registry.list(&author).await.unwrap()),
        ["workflow.getDefinition", "workflow.listDefinitions"],
        "workflow-author's scope, proposal tools still disabled"
    );
    let unknown = AiToolQuery {
        agent: Some("ghost".into()),
        ..AiToolQuery::for_caller(harness.caller())
    };
    assert_eq!(
        harness.registry.list(&unknown).await.unwrap_err().status(),
        404
    );

    // Without an agent the caller's own permissions and tenant-wide enablement apply.
    let anywhere = harness
        .registry
        .list(&AiToolQuery::for_caller(harness.caller()))
        .await
        .unwrap();
    assert!(names(&anywhere).contains(&"demo.unscoped"));
    assert!(names(&anywhere).contains(&"demo.foreign"));
    assert!(!names(&anywhere).contains(&"admin.purge"));
}

#[tokio::test]
async fn administrative_tools_stay_hidden_even_when_a_decision_says_on() {
    let harness = catalogue();
    // Written straight into the store: the enablement service itself refuses this.
    harness.decide("admin.purge", None, true).await;
    harness.decide("admin.purge", Some(TEST_AGENT), true).await;
    for q in [
        query(harness.caller()),
        AiToolQuery::for_caller(harness.caller()),
    ] {
        let listed = harness.registry.list(&q).await.unwrap();
        assert!(!names(&listed).contains(&"admin.purge"), "{q:?}");
        assert!(
            harness
                .registry
                .find("admin.purge", &q)
                .await
                .unwrap()
                .is_none()
        );
    }
}

#[tokio::test]
async fn find_applies_the_same_filters() {
    let harness = catalogue();
    let q = query(harness.caller());
    assert!(
        harness
            .registry
            .find("workflow.getDefinition", &q)
            .await
            .unwrap()
            .is_some()
    );
    for hidden in [
        "admin.purge",
        "demo.critical",
        "demo.foreign",
        "workflow.proposeCreate",
        "demo.unscoped",
        "nope.nope",
    ] {
        assert!(
            harness.registry.find(hidden, &q).await.unwrap().is_none(),
            "{hidden}"
        );
    }
}

#[tokio::test]
async fn mcp_tools_are_scoped_by_the_agents_mcp_servers() {
    let mut issue = read_tool("mcp.github.get_issue");
    issue.source = ToolSource::Mcp;
    issue.enabled_by_default = false;
    let mut agent: AiAgentDefinition = test_agent("mcp-user", &[], &all_permissions());
    agent.allowed_mcp_servers = vec!["github".into()];
    let harness = GovernanceHarness::builder()
        .definition(issue)
        .agent(agent)
        .build();
    let q = AiToolQuery {
        agent: Some("mcp-user".into()),
        ..AiToolQuery::for_caller(harness.caller())
    };
    assert!(
        harness.registry.list(&q).await.unwrap().is_empty(),
        "MCP tools need explicit enablement"
    );
    harness.decide("mcp.github.get_issue", None, true).await;
    assert_eq!(
        names(&harness.registry.list(&q).await.unwrap()),
        ["mcp.github.get_issue"]
    );
}

#[tokio::test]
async fn a_tool_registered_for_some_tenants_does_not_exist_for_the_others() {
    let mut mcp = read_tool("mcp.crm.lookup");
    mcp.source = ToolSource::Mcp;
    mcp.enabled_by_default = false;
    let harness = GovernanceHarness::builder()
        .definition(read_tool("demo.read"))
        .tool_for_tenants(
            Arc::new(TestTool::echo(mcp)),
            Some(vec![TEST_TENANT.into()]),
        )
        .build();
    harness.decide("mcp.crm.lookup", None, true).await;
    let registry = &harness.registry;
    let home = TEST_TENANT.into();
    let elsewhere = "globex".into();
    assert!(registry.registered_for("mcp.crm.lookup", &home).is_some());
    assert!(
        registry
            .registered_for("mcp.crm.lookup", &elsewhere)
            .is_none()
    );
    assert!(registry.registered_for("demo.read", &elsewhere).is_some());
    assert_eq!(registry.iter_for(&elsewhere).count(), 1);
    assert_eq!(registry.iter_for(&home).count(), 2);

    let query =
        |tenant: &str| AiToolQuery::for_caller(AiCaller::new("a", tenant, all_permissions()));
    let listed = |tools: Vec<Arc<AiToolDefinition>>| -> Vec<String> {
        tools.iter().map(|t| t.name.clone()).collect()
    };
    assert_eq!(
        listed(registry.list(&query(TEST_TENANT)).await.unwrap()),
        ["demo.read", "mcp.crm.lookup"]
    );
    assert_eq!(
        listed(registry.list(&query("globex")).await.unwrap()),
        ["demo.read"]
    );

    // The governor reads it as unknown (404), not as forbidden.
    let foreign = harness
        .call_as(
            AiCaller::new("g", "globex", all_permissions()),
            Vec::new(),
            "mcp.crm.lookup",
            json!({}),
        )
        .await;
    let error = foreign.error.unwrap();
    assert_eq!((error.status, error.code.as_str()), (404, "tool_not_found"));
    assert!(harness.call("mcp.crm.lookup", json!({})).await.is_success());
}

#[test]
fn mcp_servers_are_granted_to_named_agents_or_to_all() {
    let named = AgentRegistry::builder()
        .with_builtin_agents()
        .unwrap()
        .grant_mcp_server("crm", Some(&[WORKFLOW_AUTHOR.to_owned()]))
        .unwrap()
        .build();
    assert_eq!(
        named.get(WORKFLOW_AUTHOR).unwrap().allowed_mcp_servers,
        ["crm"]
    );
    assert!(
        named
            .get("instance-diagnostics")
            .unwrap()
            .allowed_mcp_servers
            .is_empty()
    );
    let all = AgentRegistry::builder()
        .with_builtin_agents()
        .unwrap()
        .grant_mcp_server("crm", None)
        .unwrap()
        .grant_mcp_server("crm", None)
        .unwrap()
        .build();
    assert!(all.list().all(|agent| agent.allowed_mcp_servers == ["crm"]));
    let unknown = AgentRegistry::builder()
        .with_builtin_agents()
        .unwrap()
        .grant_mcp_server("crm", Some(&["nobody".to_owned()]))
        .unwrap_err();
    assert!(unknown.to_string().contains("nobody"));
}
