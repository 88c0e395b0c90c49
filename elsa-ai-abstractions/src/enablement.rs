use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_workflows::TenantId;
use serde::{Deserialize, Serialize};

use crate::AiError;

/// An administrator's decision to enable or disable a tool in a tenant, for all agents
/// (`agent = None`) or for one agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolEnablement {
    /// The tenant.
    pub tenant_id: TenantId,
    /// The tool name.
    pub tool_name: String,
    /// One agent, or all agents when `None`.
    pub agent: Option<String>,
    /// On or off.
    pub enabled: bool,
    /// The administrator who decided.
    pub changed_by: String,
    /// When.
    pub changed_at: DateTime<Utc>,
}

/// Stores enablement decisions.
#[async_trait]
pub trait AiToolEnablementStore: Send + Sync {
    /// Every decision recorded for the tenant.
    async fn list(&self, tenant_id: &TenantId) -> Result<Vec<ToolEnablement>, AiError>;

    /// Records a decision, replacing an earlier one for the same tenant, tool and agent.
    async fn set(&self, enablement: &ToolEnablement) -> Result<(), AiError>;
}
