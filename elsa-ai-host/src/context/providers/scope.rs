//! `DiagnosticsScope` attachments.

use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiContextProvider, AiContextResolutionRequest, AiError, AiResolvedContext, AttachmentKind,
    Permission,
};
use elsa_workflows::{
    InstanceQuery, PageRequest, TenantId, TimeRange, VersionOptions, WorkflowDefinitionStore,
    WorkflowInstanceStore, WorkflowStatus, WorkflowSubStatus,
};
use serde_json::{Value, json};

use super::{check_range, not_found, range_json, require};
use crate::context::summary;

/// Resolves the workflows a diagnostics agent may analyse (`referenceId` = definition id,
/// optional `timeRange`): the definition's header and, when the caller may read instances,
/// how many of its instances ran in the window and how many are running or faulted. Without
/// a `referenceId` (as Elsa Studio may send it) the scope is the caller's whole tenant, with
/// the same counts over all its workflows. Needs `read:workflows`.
pub struct DiagnosticsScopeContext {
    definitions: Arc<dyn WorkflowDefinitionStore>,
    instances: Arc<dyn WorkflowInstanceStore>,
}

impl DiagnosticsScopeContext {
    /// A provider over `definitions` and `instances`.
    pub fn new(
        definitions: Arc<dyn WorkflowDefinitionStore>,
        instances: Arc<dyn WorkflowInstanceStore>,
    ) -> Self {
        Self {
            definitions,
            instances,
        }
    }

    async fn count(
        &self,
        tenant: &TenantId,
        definition_id: Option<&str>,
        time_range: Option<TimeRange>,
        status: Option<WorkflowStatus>,
        sub_status: Option<WorkflowSubStatus>,
    ) -> Result<usize, AiError> {
        let query = InstanceQuery {
            status,
            sub_status,
            definition_ids: definition_id.map(str::to_owned).into_iter().collect(),
            time_range,
            page: PageRequest::new(0, 0),
            ..InstanceQuery::default()
        };
        Ok(self.instances.search(tenant, &query).await?.total)
    }
}

impl std::fmt::Debug for DiagnosticsScopeContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiagnosticsScopeContext")
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl AiContextProvider for DiagnosticsScopeContext {
    fn kind(&self) -> AttachmentKind {
        AttachmentKind::DiagnosticsScope
    }

    async fn resolve(
        &self,
        request: AiContextResolutionRequest,
    ) -> Result<AiResolvedContext, AiError> {
        let kind = self.kind();
        let caller = &request.caller;
        require(caller, &kind, &Permission::READ_WORKFLOWS)?;
        let id = request.attachment.reference_id.trim();
        let range = request.attachment.time_range;
        if let Some(range) = &range {
            check_range(range)?;
        }
        let mut content = serde_json::Map::new();
        let title = if id.is_empty() {
            content.insert("scope".into(), json!("tenant"));
            format!(
                "Diagnostics scope: every workflow of tenant {}",
                caller.tenant_id
            )
        } else {
            let definition = self
                .definitions
                .find(&caller.tenant_id, id, VersionOptions::Latest)
                .await?
                .ok_or_else(|| not_found("workflow definition", id))?;
            content.insert(
                "definition".into(),
                Value::Object(summary::definition_header(&definition)),
            );
            format!(
                "Diagnostics scope {}",
                summary::definition_title(&definition)
            )
        };
        content.insert(
            "timeRange".into(),
            range.as_ref().map_or(Value::Null, range_json),
        );
        if caller.has(&Permission::READ_WORKFLOW_INSTANCES) {
            let tenant = &caller.tenant_id;
            let scoped = (!id.is_empty()).then_some(id);
            let total = self.count(tenant, scoped, range, None, None).await?;
            let running = self
                .count(tenant, scoped, range, Some(WorkflowStatus::Running), None)
                .await?;
            let faulted = self
                .count(
                    tenant,
                    scoped,
                    range,
                    None,
                    Some(WorkflowSubStatus::Faulted),
                )
                .await?;
            content.insert(
                "instances".into(),
                json!({"total": total, "running": running, "faulted": faulted}),
            );
        }
        Ok(AiResolvedContext {
            kind,
            reference_id: id.to_owned(),
            title,
            content: Value::Object(content),
            truncated: false,
        })
    }
}
