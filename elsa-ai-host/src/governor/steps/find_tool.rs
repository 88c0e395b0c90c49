//! Step 3: find the tool.

use elsa_ai_abstractions::AiError;

use super::AgentScope;
use super::resolve_agent_scope::outside_scope;
use crate::registry::{RegisteredTool, tool_admits_agent};

/// The tool the name called (looked up once per call, by either name) must be registered
/// for the caller's tenant (404 `tool_not_found`) and its `allowed_agents` must admit the
/// agent (403 `tool_not_in_agent_scope`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FindTool;

impl FindTool {
    pub fn run<'r>(
        &self,
        scope: &AgentScope<'_>,
        tool_name: &str,
        registered: Option<&'r RegisteredTool>,
    ) -> Result<&'r RegisteredTool, AiError> {
        let tool = registered
            .filter(|tool| tool.serves(&scope.actor.caller.tenant_id))
            .ok_or_else(|| AiError::NotFound {
                code: "tool_not_found".into(),
                message: format!("tool '{tool_name}' not found"),
            })?;
        if !tool_admits_agent(tool.definition(), &scope.agent.name) {
            return Err(outside_scope(&scope.agent.name, tool_name));
        }
        Ok(tool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governor::steps::scope_for;
    use crate::testing::governance::{GovernanceHarness, read_tool};

    #[test]
    fn unknown_tools_are_404_and_foreign_agents_403() {
        let mut restricted = read_tool("demo.restricted");
        restricted.allowed_agents = Some(vec!["someone-else".into()]);
        let harness = GovernanceHarness::builder()
            .definition(read_tool("demo.read"))
            .definition(restricted)
            .agent_tools(&["demo.read", "demo.restricted", "demo.missing"])
            .build();
        let caller = harness.caller();
        let scope = scope_for(&harness, &caller);
        let run = |name: &str| FindTool.run(&scope, name, harness.registry.registered(name));
        assert_eq!(run("demo.read").unwrap().definition().name, "demo.read");
        let missing = run("demo.missing").unwrap_err();
        assert_eq!((missing.status(), missing.code()), (404, "tool_not_found"));
        assert_eq!(
            run("demo.restricted").unwrap_err().code(),
            "tool_not_in_agent_scope"
        );
    }
}
