//! Step 2: resolve the agent scope.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use elsa_ai_abstractions::{AiAgentDefinition, AiCaller, AiError, Permission};

use super::Actor;
use crate::agents::AgentRegistry;
use crate::registry::{RegisteredTool, agent_names_tool};

/// The actor under an agent: the agent's definition and the caller narrowed by it.
#[derive(Clone, Debug)]
pub(crate) struct AgentScope<'a> {
    pub actor: Actor<'a>,
    pub agent: &'a AiAgentDefinition,
    /// The caller with their permissions intersected with the agent's: whom tools act for.
    pub narrowed: Arc<AiCaller>,
}

impl AgentScope<'_> {
    /// The caller's permissions intersected with the agent's.
    pub fn permissions(&self) -> &BTreeSet<Permission> {
        &self.narrowed.permissions
    }
}

/// The agent must exist (404 `agent_not_found`), be enabled (403 `agent_disabled`) and name
/// the tool in its scope (403 `tool_not_in_agent_scope`), by any name the tool answers to.
/// The tool's own `allowed_agents` is checked once the tool is found (step 3).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResolveAgentScope<'r> {
    pub agents: &'r AgentRegistry,
    /// The narrowed caller, made on the first call of a bound turn (its caller and agent do
    /// not change, and neither do the registered agents) and shared by the turn's tools.
    pub narrowed: &'r OnceLock<Arc<AiCaller>>,
}

pub(crate) fn outside_scope(agent: &str, tool_name: &str) -> AiError {
    AiError::forbidden(
        "tool_not_in_agent_scope",
        format!("tool '{tool_name}' is not available to agent '{agent}'"),
    )
}

impl<'r> ResolveAgentScope<'r> {
    pub fn run<'a>(
        &self,
        actor: Actor<'a>,
        agent: &str,
        tool_name: &str,
        registered: Option<&RegisteredTool>,
    ) -> Result<AgentScope<'a>, AiError>
    where
        'r: 'a,
    {
        let agent = self.agents.resolve(agent)?;
        // A registered tool is named by any of its names; another name only as called.
        let named = registered.map_or_else(
            || agent_names_tool(agent, tool_name),
            |tool| tool.named_by(agent),
        );
        if !named {
            return Err(outside_scope(&agent.name, tool_name));
        }
        let narrowed = self
            .narrowed
            .get_or_init(|| Arc::new(AgentRegistry::narrowed_caller(actor.caller, agent)));
        Ok(AgentScope {
            narrowed: Arc::clone(narrowed),
            actor,
            agent,
        })
    }
}

#[cfg(test)]
mod tests {
    use elsa_ai_abstractions::AiCaller;

    use super::*;
    use crate::agents::WORKFLOW_AUTHOR;
    use crate::governor::steps::ResolveActor;
    use crate::testing::governance::test_agent;

    fn registry() -> AgentRegistry {
        let mut off = test_agent("off-agent", &["demo.read"], &[Permission::READ_WORKFLOWS]);
        off.enabled = false;
        AgentRegistry::builder()
            .with_builtin_agents()
            .unwrap()
            .agent(off)
            .unwrap()
            .build()
    }

    #[test]
    fn effective_permissions_are_the_intersection() {
        let agents = registry();
        let caller = AiCaller::new(
            "alice",
            "acme",
            [Permission::READ_WORKFLOWS, Permission::ADMIN_AI],
        );
        let actor = ResolveActor.run(&caller).unwrap();
        let narrowed = OnceLock::new();
        let scope = ResolveAgentScope {
            agents: &agents,
            narrowed: &narrowed,
        }
        .run(actor, WORKFLOW_AUTHOR, "workflow.getDefinition", None)
        .unwrap();
        assert_eq!(
            scope.permissions().iter().collect::<Vec<_>>(),
            [&Permission::READ_WORKFLOWS]
        );
        assert_eq!(
            (
                scope.narrowed.actor_id.as_str(),
                scope.narrowed.tenant_id.as_str()
            ),
            ("alice", "acme")
        );
        assert!(
            narrowed
                .get()
                .is_some_and(|kept| Arc::ptr_eq(kept, &scope.narrowed)),
            "kept for the turn"
        );
    }

    #[test]
    fn unknown_disabled_and_out_of_scope_are_refused() {
        let agents = registry();
        let caller = AiCaller::new("alice", "acme", [Permission::READ_WORKFLOWS]);
        let narrowed = OnceLock::new();
        let step = ResolveAgentScope {
            agents: &agents,
            narrowed: &narrowed,
        };
        let actor = ResolveActor.run(&caller).unwrap();
        assert_eq!(
            step.run(actor, "ghost", "demo.read", None)
                .unwrap_err()
                .code(),
            "agent_not_found"
        );
        assert_eq!(
            step.run(actor, "off-agent", "demo.read", None)
                .unwrap_err()
                .code(),
            "agent_disabled"
        );
        let error = step
            .run(actor, WORKFLOW_AUTHOR, "instance.get", None)
            .unwrap_err();
        assert_eq!(
            (error.status(), error.code()),
            (403, "tool_not_in_agent_scope")
        );
    }
}
