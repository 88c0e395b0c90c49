//! The static access rules shared by the registry (what a caller is shown) and the governor
//! (what a caller may run), so that both always agree.

use std::collections::{BTreeSet, HashMap};

use elsa_ai_abstractions::{
    AiAgentDefinition, AiError, AiToolDefinition, DangerLevel, Permission, TenantBehavior,
    ToolMutability, ToolSource,
};

use super::validation::mcp_server;

/// The host's mutability and danger policy (governance step 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolPolicy {
    /// The highest danger level a tool may have to be listed or run.
    pub max_danger_level: DangerLevel,
}

impl Default for ToolPolicy {
    /// Everything up to `High`; `Critical` tools are refused.
    fn default() -> Self {
        Self {
            max_danger_level: DangerLevel::High,
        }
    }
}

impl ToolPolicy {
    /// Administrative tools are always refused; Proposal tools need `propose:workflows`
    /// among the effective permissions; the danger level must not exceed the maximum.
    pub fn check(
        &self,
        definition: &AiToolDefinition,
        effective: &BTreeSet<Permission>,
    ) -> Result<(), AiError> {
        match definition.mutability {
            ToolMutability::Administrative => {
                return Err(AiError::forbidden(
                    "administrative_tool_denied",
                    format!(
                        "tool '{}' is administrative; administrative tools never run in this release",
                        definition.name
                    ),
                ));
            }
            ToolMutability::Proposal if !effective.contains(&Permission::PROPOSE_WORKFLOWS) => {
                return Err(AiError::forbidden(
                    "permission_denied",
                    format!(
                        "tool '{}' drafts proposals and needs '{}'",
                        definition.name,
                        Permission::PROPOSE_WORKFLOWS
                    ),
                ));
            }
            ToolMutability::ReadOnly | ToolMutability::Proposal => {}
            // A mutability newer than this host: refused, as administrative tools are.
            other => {
                return Err(AiError::forbidden(
                    "permission_denied",
                    format!(
                        "tool '{}' has mutability {other:?}, which this host does not run",
                        definition.name
                    ),
                ));
            }
        }
        if definition.danger_level > self.max_danger_level {
            return Err(AiError::forbidden(
                "danger_level_exceeded",
                format!(
                    "tool '{}' has danger level {:?}, above the host's maximum {:?}",
                    definition.name, definition.danger_level, self.max_danger_level
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn admits(&self, definition: &AiToolDefinition, may_propose: bool) -> bool {
        let mutability = match definition.mutability {
            ToolMutability::ReadOnly => true,
            ToolMutability::Proposal => may_propose,
            // Administrative tools, and mutabilities newer than this host, are never listed.
            _ => false,
        };
        mutability && definition.danger_level <= self.max_danger_level
    }
}

/// Whether the agent's scope names the tool: listed in `allowed_tools`, or an MCP-backed
/// tool of a server in `allowed_mcp_servers`.
pub fn agent_names_tool(agent: &AiAgentDefinition, tool_name: &str) -> bool {
    agent.allows_tool(tool_name)
        || mcp_server(tool_name)
            .is_some_and(|server| agent.allowed_mcp_servers.iter().any(|s| s == server))
}

/// Whether the tool's own `allowed_agents` admits the agent (`None` admits every agent).
pub fn tool_admits_agent(definition: &AiToolDefinition, agent: &str) -> bool {
    definition
        .allowed_agents
        .as_ref()
        .is_none_or(|agents| agents.iter().any(|a| a == agent))
}

/// Whether the tool only runs for a caller who acts in a tenant.
pub fn requires_tenant(definition: &AiToolDefinition) -> bool {
    definition.tenant_behavior != TenantBehavior::HostScoped
}

/// Whether the tool comes from an MCP server.
pub(super) fn is_mcp(definition: &AiToolDefinition) -> bool {
    definition.source == ToolSource::Mcp
}

/// Dense ids for the permissions registered tools require, so that "holds all of them" is a
/// few word operations per tool instead of set lookups.
#[derive(Clone, Debug, Default)]
pub(super) struct PermissionIndex {
    ids: HashMap<Permission, usize>,
}

/// A set of interned permissions as a bitset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct PermissionMask(Box<[u64]>);

impl PermissionIndex {
    pub(super) fn intern(&mut self, permission: &Permission) {
        let next = self.ids.len();
        self.ids.entry(permission.clone()).or_insert(next);
    }

    /// The mask of those `permissions` that are interned (others no tool requires).
    pub(super) fn mask<'a>(
        &self,
        permissions: impl IntoIterator<Item = &'a Permission>,
    ) -> PermissionMask {
        let mut words = vec![0u64; self.ids.len().div_ceil(64)];
        for permission in permissions {
            if let Some(&id) = self.ids.get(permission) {
                words[id / 64] |= 1 << (id % 64);
            }
        }
        PermissionMask(words.into_boxed_slice())
    }
}

impl PermissionMask {
    /// Whether every permission of `required` is in `self` (both built by one index).
    pub(super) fn contains_all(&self, required: &PermissionMask) -> bool {
        required
            .0
            .iter()
            .enumerate()
            .all(|(i, word)| word & !self.0.get(i).copied().unwrap_or(0) == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_answer_subset_questions() {
        let mut index = PermissionIndex::default();
        for p in [Permission::READ_WORKFLOWS, Permission::ADMIN_AI] {
            index.intern(&p);
        }
        let held = index.mask([&Permission::READ_WORKFLOWS, &Permission::READ_ACTIVITIES]);
        assert!(held.contains_all(&index.mask([&Permission::READ_WORKFLOWS])));
        assert!(held.contains_all(&index.mask([])));
        assert!(
            !held.contains_all(&index.mask([&Permission::READ_WORKFLOWS, &Permission::ADMIN_AI]))
        );
    }

    #[test]
    fn many_permissions_span_several_words() {
        let mut index = PermissionIndex::default();
        let permissions: Vec<Permission> = (0..130)
            .map(|i| Permission::new(format!("p:{i}")))
            .collect();
        permissions.iter().for_each(|p| index.intern(p));
        let all = index.mask(&permissions);
        assert!(all.contains_all(&index.mask([&permissions[129]])));
        assert!(
            !index
                .mask(&permissions[..129])
                .contains_all(&index.mask([&permissions[129]]))
        );
    }
}
