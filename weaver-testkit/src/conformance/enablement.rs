//! [`AiToolEnablementStore`]: one decision per tenant, tool and agent scope.

use elsa_ai_abstractions::{AiToolEnablementStore, ToolEnablement};
use elsa_workflows::TenantId;

use super::{case, instant, unique};

/// Every case, in order.
pub async fn run<S: AiToolEnablementStore + ?Sized>(store: &S) {
    set_replaces_the_decision_for_the_same_scope(store).await;
}

fn decision(tenant: &TenantId, tool: &str, agent: Option<&str>, enabled: bool) -> ToolEnablement {
    ToolEnablement {
        tenant_id: tenant.clone(),
        tool_name: tool.into(),
        agent: agent.map(str::to_owned),
        enabled,
        changed_by: "admin".into(),
        changed_at: instant(0),
    }
}

async fn sorted<S: AiToolEnablementStore + ?Sized>(
    store: &S,
    tenant: &TenantId,
) -> Vec<ToolEnablement> {
    let mut decisions = store.list(tenant).await.expect("list succeeds");
    decisions.sort_by(|a, b| (&a.tool_name, &a.agent).cmp(&(&b.tool_name, &b.agent)));
    decisions
}

/// Decisions are kept per tenant; a decision for all agents, one for an agent (even one
/// named `""`) are distinct scopes; setting a scope again replaces its decision.
pub async fn set_replaces_the_decision_for_the_same_scope<S: AiToolEnablementStore + ?Sized>(
    store: &S,
) {
    case("enablement: set replaces the decision for the same scope");
    let tenant = TenantId::new(unique("tenant"));
    let other = TenantId::new(unique("other"));
    let all_agents = decision(&tenant, "workflow.proposeCreate", None, false);
    let one_agent = decision(
        &tenant,
        "workflow.proposeCreate",
        Some("workflow-author"),
        true,
    );
    let empty_agent = decision(&tenant, "workflow.proposeCreate", Some(""), true);
    let other_tool = decision(&tenant, "mcp.github.search", None, true);
    for d in [&all_agents, &one_agent, &empty_agent, &other_tool] {
        store.set(d).await.expect("set succeeds");
    }
    store
        .set(&decision(&other, "workflow.proposeCreate", None, true))
        .await
        .unwrap();
    assert_eq!(
        sorted(store, &tenant).await,
        [
            other_tool.clone(),
            all_agents.clone(),
            empty_agent.clone(),
            one_agent.clone()
        ]
    );

    let changed = ToolEnablement {
        enabled: true,
        changed_by: "second-admin".into(),
        changed_at: instant(60),
        ..all_agents
    };
    store.set(&changed).await.unwrap();
    assert_eq!(
        sorted(store, &tenant).await,
        [other_tool, changed, empty_agent, one_agent],
        "the decision for all agents was replaced, the others kept"
    );
    assert_eq!(store.list(&other).await.unwrap().len(), 1);
    assert!(
        store
            .list(&TenantId::new(unique("nobody")))
            .await
            .unwrap()
            .is_empty()
    );
}
