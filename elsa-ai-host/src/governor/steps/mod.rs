//! The eleven governance steps, one type each, composed in order by the `ToolGovernor`.

mod check_enablement;
mod check_mutability_policy;
mod check_permissions;
mod check_tenant_behavior;
mod emit_events;
mod execute_tool;
mod find_tool;
mod redact_arguments;
mod redact_result;
mod resolve_actor;
mod resolve_agent_scope;

pub(crate) use check_enablement::CheckEnablement;
pub(crate) use check_mutability_policy::CheckMutabilityPolicy;
pub(crate) use check_permissions::CheckPermissions;
pub(crate) use check_tenant_behavior::CheckTenantBehavior;
pub(crate) use emit_events::{CallRecord, EmitEvents};
pub(crate) use execute_tool::ExecuteTool;
pub(crate) use find_tool::FindTool;
pub(crate) use redact_arguments::RedactArguments;
pub(crate) use redact_result::{ClampResult, RedactResult};
pub(crate) use resolve_actor::{Actor, ResolveActor};
pub(crate) use resolve_agent_scope::{AgentScope, ResolveAgentScope};

/// The scope of the harness's test agent for `caller`, without the step-2 tool check.
#[cfg(test)]
pub(crate) fn scope_for<'a>(
    harness: &'a crate::testing::governance::GovernanceHarness,
    caller: &'a elsa_ai_abstractions::AiCaller,
) -> AgentScope<'a> {
    let agent = harness
        .registry
        .agents()
        .get(crate::testing::governance::TEST_AGENT)
        .expect("the harness registers its test agent");
    AgentScope {
        actor: ResolveActor
            .run(caller)
            .expect("test callers are authenticated"),
        agent,
        narrowed: std::sync::Arc::new(crate::AgentRegistry::narrowed_caller(caller, agent)),
    }
}
