//! `WorkflowDefinition` attachments.

use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiContextProvider, AiContextResolutionRequest, AiError, AiResolvedContext, AttachmentKind,
    Permission,
};
use elsa_workflows::{VersionOptions, WorkflowDefinitionStore};

use super::{not_found, require, require_reference};
use crate::context::summary;

/// Resolves a definition id to a summary of its latest version: header, variables,
/// inputs and outputs, one line per activity and every flowchart connection. Needs
/// `read:workflows`.
pub struct WorkflowDefinitionContext {
    definitions: Arc<dyn WorkflowDefinitionStore>,
}

impl WorkflowDefinitionContext {
    /// A provider over `definitions`.
    pub fn new(definitions: Arc<dyn WorkflowDefinitionStore>) -> Self {
        Self { definitions }
    }
}

impl std::fmt::Debug for WorkflowDefinitionContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkflowDefinitionContext")
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl AiContextProvider for WorkflowDefinitionContext {
    fn kind(&self) -> AttachmentKind {
        AttachmentKind::WorkflowDefinition
    }

    async fn resolve(
        &self,
        request: AiContextResolutionRequest,
    ) -> Result<AiResolvedContext, AiError> {
        let kind = self.kind();
        require(&request.caller, &kind, &Permission::READ_WORKFLOWS)?;
        let id = &request.attachment.reference_id;
        require_reference(&kind, id)?;
        let definition = self
            .definitions
            .find(&request.caller.tenant_id, id, VersionOptions::Latest)
            .await?
            .ok_or_else(|| not_found("workflow definition", id))?;
        Ok(AiResolvedContext {
            kind,
            reference_id: id.clone(),
            title: format!(
                "Workflow definition {}",
                summary::definition_title(&definition)
            ),
            content: summary::definition(&definition),
            truncated: false,
        })
    }
}
