use elsa_ai_abstractions::{AiError, AiToolDefinition, ToolEnablement, ToolMutability, ToolSource};

use crate::NameMap;

/// The enablement rules of SPEC §3, as pure functions of a tool's metadata.
///
/// * A read-only tool that says `enabled_by_default` and is not MCP-backed is on until an
///   administrator turns it off.
/// * Proposal tools, MCP-backed tools and anything else that is not read-only (whatever its
///   source) are off until an administrator turns them on.
/// * Administrative tools are off in this release, whatever anyone decides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EnablementPolicy;

impl EnablementPolicy {
    /// Whether the tool is on when no administrator has decided.
    pub fn default_enabled(definition: &AiToolDefinition) -> bool {
        definition.enabled_by_default
            && definition.mutability == ToolMutability::ReadOnly
            && definition.source != ToolSource::Mcp
    }

    /// Whether an administrator may turn the tool on: Administrative tools are refused with
    /// 403 `administrative_tool_disabled`.
    pub fn may_enable(definition: &AiToolDefinition) -> Result<(), AiError> {
        if definition.mutability == ToolMutability::Administrative {
            return Err(AiError::forbidden(
                "administrative_tool_disabled",
                format!(
                    "tool '{}' is administrative; administrative tools stay disabled in this release",
                    definition.name
                ),
            ));
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Default)]
struct ToolDecisions {
    global: Option<bool>,
    per_agent: Vec<(String, bool)>,
}

/// One tenant's enablement decisions, read once and resolved for any tool and agent.
///
/// An agent-specific decision overrides the tenant-wide one, which overrides the default of
/// [`EnablementPolicy`]; Administrative tools resolve to disabled regardless.
#[derive(Clone, Debug, Default)]
pub struct EnablementDecisions {
    tools: NameMap<String, ToolDecisions>,
}

impl EnablementDecisions {
    /// Indexes the decisions a store returned for one tenant.
    pub fn new(decisions: Vec<ToolEnablement>) -> Self {
        let mut tools: NameMap<String, ToolDecisions> =
            NameMap::with_capacity_and_hasher(decisions.len(), Default::default());
        for decision in decisions {
            let entry = tools.entry(decision.tool_name).or_default();
            match decision.agent {
                None => entry.global = Some(decision.enabled),
                Some(agent) => match entry.per_agent.iter_mut().find(|(a, _)| *a == agent) {
                    Some(existing) => existing.1 = decision.enabled,
                    None => entry.per_agent.push((agent, decision.enabled)),
                },
            }
        }
        Self { tools }
    }

    /// The administrator's explicit decision for the tool under `agent` (agent-specific
    /// first, then tenant-wide), if there is one.
    pub fn decision(&self, tool_name: &str, agent: Option<&str>) -> Option<bool> {
        if self.tools.is_empty() {
            return None;
        }
        let tool = self.tools.get(tool_name)?;
        agent
            .and_then(|agent| {
                tool.per_agent
                    .iter()
                    .find(|(a, _)| a == agent)
                    .map(|(_, on)| *on)
            })
            .or(tool.global)
    }

    /// Whether the tool is enabled for `agent` (`None`: tenant-wide).
    pub fn is_enabled(&self, definition: &AiToolDefinition, agent: Option<&str>) -> bool {
        definition.mutability != ToolMutability::Administrative
            && self
                .decision(&definition.name, agent)
                .unwrap_or_else(|| EnablementPolicy::default_enabled(definition))
    }
}
