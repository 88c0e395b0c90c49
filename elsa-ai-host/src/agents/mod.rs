//! Agents: the built-in `workflow-author`, `instance-diagnostics` and `workflow-operator`
//! plus host-registered
//! ones, each a least-privilege scope. An agent's permissions only narrow the caller's;
//! its instructions never grant anything.

mod builtin;

use std::collections::{BTreeMap, BTreeSet};

use elsa_ai_abstractions::{AiAgentDefinition, AiCaller, AiError, Permission};

pub use builtin::{
    INSTANCE_DIAGNOSTICS, WORKFLOW_AUTHOR, WORKFLOW_OPERATOR, instance_diagnostics,
    workflow_author, workflow_operator,
};

/// Why an agent definition was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentRegistrationError {
    /// The name is not lowercase kebab-case (`[a-z][a-z0-9-]*`, at most 64 characters).
    #[error("agent name '{0}' must match [a-z][a-z0-9-]* and be at most 64 characters")]
    InvalidName(String),
    /// An agent of that name is already registered.
    #[error("agent '{0}' is registered twice")]
    Duplicate(String),
    /// The display name is empty.
    #[error("agent '{0}' has no display name")]
    MissingDisplayName(String),
    /// An allowed-tool entry is empty.
    #[error("agent '{0}' lists an empty tool name")]
    EmptyToolName(String),
    /// A scope grant names an agent that does not exist.
    #[error("agent '{0}' is not registered")]
    UnknownAgent(String),
}

/// Builds an [`AgentRegistry`].
#[derive(Debug, Default)]
pub struct AgentRegistryBuilder {
    agents: BTreeMap<String, AiAgentDefinition>,
}

impl AgentRegistryBuilder {
    /// Adds `workflow-author`, `instance-diagnostics` and `workflow-operator`.
    pub fn with_builtin_agents(self) -> Result<Self, AgentRegistrationError> {
        self.agent(workflow_author())?
            .agent(instance_diagnostics())?
            .agent(workflow_operator())
    }

    /// Adds a host-defined agent, refusing invalid or duplicate definitions.
    pub fn agent(mut self, agent: AiAgentDefinition) -> Result<Self, AgentRegistrationError> {
        let valid_name = !agent.name.is_empty()
            && agent.name.len() <= 64
            && agent.name.starts_with(|c: char| c.is_ascii_lowercase())
            && agent
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !valid_name {
            return Err(AgentRegistrationError::InvalidName(agent.name));
        }
        if agent.display_name.trim().is_empty() {
            return Err(AgentRegistrationError::MissingDisplayName(agent.name));
        }
        if agent.allowed_tools.iter().any(|t| t.trim().is_empty()) {
            return Err(AgentRegistrationError::EmptyToolName(agent.name));
        }
        if self.agents.contains_key(&agent.name) {
            return Err(AgentRegistrationError::Duplicate(agent.name));
        }
        self.agents.insert(agent.name.clone(), agent);
        Ok(self)
    }

    /// Puts an MCP server into the scope of `agents` (`None`: every agent added so far), so
    /// that its tools can be offered to them. Refuses an agent that was not added.
    pub fn grant_mcp_server(
        mut self,
        server: &str,
        agents: Option<&[String]>,
    ) -> Result<Self, AgentRegistrationError> {
        if let Some(unknown) = agents
            .into_iter()
            .flatten()
            .find(|name| !self.agents.contains_key(name.as_str()))
        {
            return Err(AgentRegistrationError::UnknownAgent(unknown.clone()));
        }
        for agent in self.agents.values_mut() {
            let granted = agents.is_none_or(|names| names.contains(&agent.name));
            if granted && !agent.allowed_mcp_servers.iter().any(|s| s == server) {
                agent.allowed_mcp_servers.push(server.to_owned());
            }
        }
        Ok(self)
    }

    /// The registry.
    pub fn build(self) -> AgentRegistry {
        AgentRegistry {
            agents: self.agents,
        }
    }
}

/// The agents a host offers, by name. Immutable once built.
#[derive(Clone, Debug)]
pub struct AgentRegistry {
    agents: BTreeMap<String, AiAgentDefinition>,
}

impl AgentRegistry {
    /// The agent a chat uses when the request names none.
    pub const DEFAULT_AGENT: &'static str = WORKFLOW_AUTHOR;

    /// A builder, empty until agents are added.
    pub fn builder() -> AgentRegistryBuilder {
        AgentRegistryBuilder::default()
    }

    /// A registry of the built-in agents.
    pub fn builtin() -> Self {
        let mut agents = BTreeMap::new();
        for agent in [
            workflow_author(),
            instance_diagnostics(),
            workflow_operator(),
        ] {
            agents.insert(agent.name.clone(), agent);
        }
        Self { agents }
    }

    /// The agent of that name, enabled or not.
    pub fn get(&self, name: &str) -> Option<&AiAgentDefinition> {
        self.agents.get(name)
    }

    /// The agent of that name if it can be used: unknown is 404 `agent_not_found`,
    /// disabled is 403 `agent_disabled`.
    pub fn resolve(&self, name: &str) -> Result<&AiAgentDefinition, AiError> {
        match self.agents.get(name) {
            None => Err(AiError::NotFound {
                code: "agent_not_found".into(),
                message: format!("agent '{name}' not found"),
            }),
            Some(agent) if !agent.enabled => Err(AiError::forbidden(
                "agent_disabled",
                format!("agent '{name}' is disabled"),
            )),
            Some(agent) => Ok(agent),
        }
    }

    /// Every agent, by name.
    pub fn list(&self) -> impl Iterator<Item = &AiAgentDefinition> {
        self.agents.values()
    }

    /// What a caller may do under an agent: the caller's permissions intersected with the
    /// agent's. Nothing an agent says can add to what the caller holds.
    pub fn effective_permissions(
        caller: &AiCaller,
        agent: &AiAgentDefinition,
    ) -> BTreeSet<Permission> {
        agent
            .permissions
            .iter()
            .filter(|p| caller.has(p))
            .cloned()
            .collect()
    }

    /// The caller as tools act for them under an agent: the same actor and tenant, with the
    /// [effective permissions](Self::effective_permissions) (least privilege).
    pub fn narrowed_caller(caller: &AiCaller, agent: &AiAgentDefinition) -> AiCaller {
        AiCaller {
            actor_id: caller.actor_id.clone(),
            tenant_id: caller.tenant_id.clone(),
            permissions: Self::effective_permissions(caller, agent),
        }
    }
}

impl Default for AgentRegistry {
    fn default() -> Self {
        Self::builtin()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_agents_have_their_documented_scopes() {
        let registry = AgentRegistry::builtin();
        let author = registry.resolve(WORKFLOW_AUTHOR).unwrap();
        assert!(author.allows_tool("workflow.proposeUpdate"));
        assert!(!author.allows_tool("instance.get"));
        assert!(author.allows_context(&elsa_ai_abstractions::AttachmentKind::ActivitySelection));
        let diagnostics = registry.resolve(INSTANCE_DIAGNOSTICS).unwrap();
        assert!(diagnostics.allows_tool("instance.detectTrends"));
        assert!(
            !diagnostics.allows_tool("workflow.proposeCreate"),
            "diagnostics is read-only"
        );
        assert!(
            !diagnostics
                .permissions
                .contains(&Permission::PROPOSE_WORKFLOWS)
        );
        let operator = registry.resolve(WORKFLOW_OPERATOR).unwrap();
        assert!(operator.allows_tool("instance.summarize"));
        for tool in [
            "instance.proposeRetry",
            "instance.proposeCancel",
            "instance.proposeRestart",
            "workflow.proposePublish",
            "workflow.proposeUnpublish",
            "workflow.proposeDelete",
        ] {
            assert!(operator.allows_tool(tool), "{tool}");
            assert!(!author.allows_tool(tool), "the author does not get {tool}");
            assert!(
                !diagnostics.allows_tool(tool),
                "diagnostics does not get {tool}"
            );
        }
        assert!(!operator.allows_tool("workflow.proposeUpdate"));
        assert_eq!(registry.list().count(), 3);
    }

    #[test]
    fn agent_permissions_only_narrow_the_callers() {
        let caller = AiCaller::new(
            "alice",
            "acme",
            [Permission::READ_WORKFLOWS, Permission::ADMIN_AI],
        );
        let effective = AgentRegistry::effective_permissions(&caller, &workflow_author());
        assert_eq!(
            effective.into_iter().collect::<Vec<_>>(),
            [Permission::READ_WORKFLOWS]
        );
    }

    #[test]
    fn unknown_and_disabled_agents_are_refused_with_statuses() {
        let mut disabled = instance_diagnostics();
        disabled.name = "night-shift".into();
        disabled.enabled = false;
        let registry = AgentRegistry::builder()
            .with_builtin_agents()
            .unwrap()
            .agent(disabled)
            .unwrap()
            .build();
        assert_eq!(registry.resolve("ghost").unwrap_err().status(), 404);
        let error = registry.resolve("night-shift").unwrap_err();
        assert_eq!((error.status(), error.code()), (403, "agent_disabled"));
    }

    #[test]
    fn invalid_and_duplicate_agents_are_refused() {
        let mut bad = workflow_author();
        bad.name = "Workflow Author".into();
        assert_eq!(
            AgentRegistry::builder().agent(bad).unwrap_err(),
            AgentRegistrationError::InvalidName("Workflow Author".into())
        );
        let twice = AgentRegistry::builder()
            .with_builtin_agents()
            .unwrap()
            .agent(workflow_author());
        assert_eq!(
            twice.unwrap_err(),
            AgentRegistrationError::Duplicate(WORKFLOW_AUTHOR.into())
        );
    }
}
