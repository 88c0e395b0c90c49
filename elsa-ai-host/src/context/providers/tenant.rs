//! `Tenant` attachments.

use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiContextProvider, AiContextResolutionRequest, AiError, AiResolvedContext, AttachmentKind,
    Permission,
};
use elsa_workflows::{DefinitionQuery, PageRequest, VersionOptions, WorkflowDefinitionStore};
use serde_json::json;

use super::{not_found, require, require_reference};

/// Resolves the caller's own tenant to an overview of its workflows: how many definitions
/// (and how many published) and the first of them by name. A reference to any other tenant
/// is 404, exactly like a tenant that does not exist. Needs `read:workflows`.
pub struct TenantContext {
    definitions: Arc<dyn WorkflowDefinitionStore>,
}

impl TenantContext {
    /// How many definitions the overview lists.
    pub const LISTED: usize = 25;

    /// A provider over `definitions`.
    pub fn new(definitions: Arc<dyn WorkflowDefinitionStore>) -> Self {
        Self { definitions }
    }
}

impl std::fmt::Debug for TenantContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantContext").finish_non_exhaustive()
    }
}

#[async_trait]
impl AiContextProvider for TenantContext {
    fn kind(&self) -> AttachmentKind {
        AttachmentKind::Tenant
    }

    async fn resolve(
        &self,
        request: AiContextResolutionRequest,
    ) -> Result<AiResolvedContext, AiError> {
        let kind = self.kind();
        let caller = &request.caller;
        require(caller, &kind, &Permission::READ_WORKFLOWS)?;
        let reference = &request.attachment.reference_id;
        require_reference(&kind, reference)?;
        if reference != caller.tenant_id.as_str() {
            return Err(not_found("tenant", reference));
        }
        let latest = self
            .definitions
            .search(
                &caller.tenant_id,
                &DefinitionQuery {
                    text: None,
                    version: VersionOptions::Latest,
                    page: PageRequest::new(0, Self::LISTED),
                    ..DefinitionQuery::default()
                },
            )
            .await?;
        let published = self
            .definitions
            .search(
                &caller.tenant_id,
                &DefinitionQuery {
                    text: None,
                    version: VersionOptions::Published,
                    page: PageRequest::new(0, 0),
                    ..DefinitionQuery::default()
                },
            )
            .await?;
        let listed: Vec<_> = latest
            .items
            .iter()
            .map(|d| {
                json!({
                    "definitionId": d.definition_id,
                    "name": d.name,
                    "version": d.version,
                    "isPublished": d.is_published,
                    "activityCount": d.activity_count,
                })
            })
            .collect();
        Ok(AiResolvedContext {
            kind,
            reference_id: reference.clone(),
            title: format!("Tenant {reference}"),
            content: json!({
                "tenantId": caller.tenant_id,
                "definitionCount": latest.total,
                "publishedCount": published.total,
                "definitions": listed,
                "moreDefinitions": latest.total.saturating_sub(latest.items.len()),
            }),
            truncated: false,
        })
    }
}
