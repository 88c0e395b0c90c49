//! `[[tools]]`: enablement decisions the configuration makes, applied at start-up through
//! the audited enablement service as actor `system`, so that an operator need not call the
//! admin API after every deploy.

use elsa_ai_abstractions::{AiCaller, Permission, linked_tools};
use elsa_ai_host::{EnablementChange, ToolEnablementService, ToolRegistry};
use elsa_ai_tools::families::GroundingFamily;
use elsa_workflows::TenantId;

use super::{StartupError, invalid};
use crate::config::{GroundingConfig, ToolEntryConfig};

/// The actor configuration-made decisions are recorded under.
pub const SYSTEM_ACTOR: &str = "system";

/// Applies every `[[tools]]` entry to its tenants (default: every tenant served) and agents
/// (default: tenant-wide). A decision already stored as configured is left alone, so a
/// restart writes nothing; any other is made through `enablement` and so audited. An entry
/// naming a tool of a family `[grounding]` turned off is reported and skipped; an unknown
/// tool, tenant or agent stops start-up.
pub(super) async fn apply(
    entries: &[ToolEntryConfig],
    grounding: &GroundingConfig,
    registry: &ToolRegistry,
    enablement: &ToolEnablementService,
    served: &[TenantId],
    report: &mut Vec<String>,
) -> Result<(), StartupError> {
    for entry in entries {
        let Some(tool) = registry.registered(&entry.name) else {
            if let Some(family) = switched_off(&entry.name, grounding) {
                report.push(format!(
                    "tools: [[tools]] '{}' skipped: the {} family is off in [grounding]",
                    entry.name,
                    family.name()
                ));
                continue;
            }
            return Err(invalid(format!(
                "[[tools]] names '{}', which is not a tool of this server",
                entry.name
            )));
        };
        let canonical = tool.name().to_string();
        let tenants: Vec<TenantId> = match &entry.tenants {
            Some(tenants) => tenants.iter().map(|t| TenantId::new(t.clone())).collect(),
            None => served.to_vec(),
        };
        if let Some(unknown) = tenants.iter().find(|t| !served.contains(t)) {
            return Err(invalid(format!(
                "[[tools]] '{}' names the tenant '{unknown}', which this server does not serve",
                entry.name
            )));
        }
        let agents: Vec<Option<String>> = match &entry.agents {
            Some(agents) => agents.iter().cloned().map(Some).collect(),
            None => vec![None],
        };
        for tenant in &tenants {
            let caller = AiCaller::new(SYSTEM_ACTOR, tenant.as_str(), [Permission::ADMIN_AI]);
            let stored = enablement.decisions(&caller).await.map_err(|error| {
                invalid(format!(
                    "[[tools]] '{}': the decisions of tenant '{tenant}' cannot be read: {}",
                    entry.name,
                    error.message()
                ))
            })?;
            for agent in &agents {
                let unchanged = stored.iter().any(|decision| {
                    decision.tool_name == canonical
                        && decision.agent == *agent
                        && decision.enabled == entry.enabled
                });
                if unchanged {
                    continue;
                }
                // By the name the entry gives: the service stores it canonically and records
                // which name was used.
                let change = EnablementChange {
                    tool_name: entry.name.clone(),
                    agent: agent.clone(),
                    enabled: entry.enabled,
                };
                enablement.set(&caller, change).await.map_err(|error| {
                    invalid(format!(
                        "[[tools]] '{}' for tenant '{tenant}': {} ({})",
                        entry.name,
                        error.message(),
                        error.code()
                    ))
                })?;
                report.push(format!(
                    "tools: {canonical} {} for tenant '{tenant}'{} by [[tools]]",
                    if entry.enabled { "enabled" } else { "disabled" },
                    agent
                        .as_deref()
                        .map(|a| format!(" (agent '{a}')"))
                        .unwrap_or_default()
                ));
            }
        }
    }
    Ok(())
}

/// The family `[grounding]` turned off that the built-in tool called `name` (by either
/// name) belongs to.
fn switched_off(name: &str, grounding: &GroundingConfig) -> Option<GroundingFamily> {
    linked_tools()
        .find(|tool| tool.definition().names().any(|n| n == name))
        .and_then(|tool| GroundingFamily::of(&tool.definition().name))
        .filter(|family| !grounding.is_on(*family))
}
