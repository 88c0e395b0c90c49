//! Step 4: enabled globally and for the agent.

use elsa_ai_abstractions::AiError;

use super::AgentScope;
use crate::registry::{RegisteredTool, ToolRegistry};

/// Takes the tenant's decisions from the registry and refuses a tool that is not enabled for
/// the agent (403 `tool_disabled`). Administrative tools are never enabled.
#[derive(Clone, Copy)]
pub(crate) struct CheckEnablement<'r> {
    pub registry: &'r ToolRegistry,
}

impl CheckEnablement<'_> {
    pub async fn run(&self, scope: &AgentScope<'_>, tool: &RegisteredTool) -> Result<(), AiError> {
        let decisions = self
            .registry
            .decisions(&scope.actor.caller.tenant_id)
            .await?;
        let definition = tool.definition();
        if decisions.is_enabled(definition, Some(&scope.agent.name)) {
            Ok(())
        } else {
            Err(AiError::forbidden(
                "tool_disabled",
                format!(
                    "tool '{}' is not enabled for agent '{}' in this tenant",
                    definition.name, scope.agent.name
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use elsa_ai_abstractions::{ToolMutability, ToolSource};

    use super::*;
    use crate::governor::steps::scope_for;
    use crate::testing::governance::{GovernanceHarness, TEST_AGENT, proposal_tool, read_tool};

    #[tokio::test]
    async fn defaults_then_global_then_agent_decisions_apply() {
        let mut module_write = read_tool("vendor.write");
        module_write.mutability = ToolMutability::Proposal;
        module_write.enabled_by_default = false;
        module_write.source = ToolSource::Module;
        let harness = GovernanceHarness::builder()
            .definition(read_tool("demo.read"))
            .definition(proposal_tool("demo.propose"))
            .definition(module_write)
            .agent_tools(&["demo.read", "demo.propose", "vendor.write"])
            .build();
        let caller = harness.caller();
        let scope = scope_for(&harness, &caller);
        let step = CheckEnablement {
            registry: &harness.registry,
        };
        let tool = |name| harness.registry.registered(name).unwrap();

        step.run(&scope, tool("demo.read")).await.unwrap();
        let error = step.run(&scope, tool("demo.propose")).await.unwrap_err();
        assert_eq!((error.status(), error.code()), (403, "tool_disabled"));
        assert!(
            step.run(&scope, tool("vendor.write")).await.is_err(),
            "third-party writes need enablement"
        );

        harness.decide("demo.propose", None, true).await;
        step.run(&scope, tool("demo.propose")).await.unwrap();
        harness
            .decide("demo.propose", Some(TEST_AGENT), false)
            .await;
        assert!(
            step.run(&scope, tool("demo.propose")).await.is_err(),
            "the agent decision overrides"
        );
        harness.decide("demo.read", None, false).await;
        assert!(
            step.run(&scope, tool("demo.read")).await.is_err(),
            "defaults can be turned off"
        );
    }

    #[tokio::test]
    async fn administrative_tools_stay_disabled_even_if_a_decision_says_on() {
        let mut admin = proposal_tool("demo.admin");
        admin.mutability = ToolMutability::Administrative;
        let harness = GovernanceHarness::builder()
            .definition(admin)
            .agent_tools(&["demo.admin"])
            .build();
        // Written straight into the store, bypassing the service that refuses it.
        harness.decide("demo.admin", None, true).await;
        let caller = harness.caller();
        let scope = scope_for(&harness, &caller);
        let step = CheckEnablement {
            registry: &harness.registry,
        };
        let error = step
            .run(&scope, harness.registry.registered("demo.admin").unwrap())
            .await
            .unwrap_err();
        assert_eq!(error.code(), "tool_disabled");
    }
}
