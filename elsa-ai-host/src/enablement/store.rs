use async_trait::async_trait;
use elsa_ai_abstractions::{AiError, AiToolEnablementStore, ToolEnablement};
use elsa_workflows::TenantId;
use parking_lot::RwLock;

use crate::NameMap;

/// Enablement decisions kept in memory, per tenant; for development and tests.
#[derive(Debug, Default)]
pub struct InMemoryToolEnablementStore {
    tenants: RwLock<NameMap<TenantId, Vec<ToolEnablement>>>,
}

impl InMemoryToolEnablementStore {
    /// An empty store: every tool follows its default.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl AiToolEnablementStore for InMemoryToolEnablementStore {
    async fn list(&self, tenant_id: &TenantId) -> Result<Vec<ToolEnablement>, AiError> {
        Ok(self
            .tenants
            .read()
            .get(tenant_id)
            .cloned()
            .unwrap_or_default())
    }

    async fn set(&self, enablement: &ToolEnablement) -> Result<(), AiError> {
        let mut tenants = self.tenants.write();
        let decisions = tenants.entry(enablement.tenant_id.clone()).or_default();
        match decisions
            .iter_mut()
            .find(|d| d.tool_name == enablement.tool_name && d.agent == enablement.agent)
        {
            Some(existing) => *existing = enablement.clone(),
            None => decisions.push(enablement.clone()),
        }
        Ok(())
    }
}
