//! `WorkflowInstance` attachments.

use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiContextProvider, AiContextResolutionRequest, AiError, AiResolvedContext, AttachmentKind,
    Permission,
};
use elsa_workflows::{WorkflowInstance, WorkflowInstanceStore};
use serde_json::{Map, Value};

use super::{not_found, require, require_reference};

/// Resolves an instance id to a summary of the run: its definition and version, status and
/// sub-status, timestamps, its incidents (activity, type, message, exception type) and the
/// bookmarks it waits on. Variables, inputs, outputs and execution contexts are left out:
/// diagnostics tools read them on demand. Needs `read:workflow-instances`.
pub struct WorkflowInstanceContext {
    instances: Arc<dyn WorkflowInstanceStore>,
}

impl WorkflowInstanceContext {
    /// How many incidents and bookmarks the summary lists (the counts are always complete).
    pub const LISTED: usize = 20;

    /// A provider over `instances`.
    pub fn new(instances: Arc<dyn WorkflowInstanceStore>) -> Self {
        Self { instances }
    }
}

impl std::fmt::Debug for WorkflowInstanceContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkflowInstanceContext")
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl AiContextProvider for WorkflowInstanceContext {
    fn kind(&self) -> AttachmentKind {
        AttachmentKind::WorkflowInstance
    }

    async fn resolve(
        &self,
        request: AiContextResolutionRequest,
    ) -> Result<AiResolvedContext, AiError> {
        let kind = self.kind();
        require(&request.caller, kind, &Permission::READ_WORKFLOW_INSTANCES)?;
        let id = &request.attachment.reference_id;
        require_reference(kind, id)?;
        let instance = self
            .instances
            .find(&request.caller.tenant_id, id)
            .await?
            .ok_or_else(|| not_found("workflow instance", id))?;
        let content = summarize(&instance);
        let status = |key: &str| {
            content
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("unknown")
                .to_owned()
        };
        let definition = content
            .get("definitionId")
            .and_then(Value::as_str)
            .unwrap_or("unknown definition")
            .to_owned();
        Ok(AiResolvedContext {
            kind,
            reference_id: id.clone(),
            title: format!(
                "Workflow instance {id} of {definition} ({}/{})",
                status("status"),
                status("subStatus")
            ),
            content: Value::Object(content),
            truncated: false,
        })
    }
}

/// Elsa serialises lists either plainly or as `{"$id", "$values": [...]}`.
fn list(value: Option<&Value>) -> &[Value] {
    match value {
        Some(Value::Array(items)) => items,
        Some(Value::Object(map)) => map
            .get("$values")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice),
        _ => &[],
    }
}

fn copy(from: &Map<String, Value>, to: &mut Map<String, Value>, key: &str, as_key: &str) {
    if let Some(value) = from.get(key).filter(|v| !v.is_null()) {
        to.insert(as_key.to_owned(), value.clone());
    }
}

fn summarize(instance: &WorkflowInstance) -> Map<String, Value> {
    let document = serde_json::to_value(instance).unwrap_or(Value::Null);
    // API responses wrap the state: {"workflowState": {...}}.
    let state = document
        .get("workflowState")
        .and_then(Value::as_object)
        .or_else(|| document.as_object());
    let Some(state) = state else {
        return Map::new();
    };
    let mut summary = Map::new();
    for (key, as_key) in [
        ("id", "instanceId"),
        ("workflowInstanceId", "instanceId"),
        ("definitionId", "definitionId"),
        ("definitionVersion", "definitionVersion"),
        ("version", "definitionVersion"),
        ("definitionVersionId", "definitionVersionId"),
        ("name", "name"),
        ("correlationId", "correlationId"),
        ("status", "status"),
        ("subStatus", "subStatus"),
        ("createdAt", "createdAt"),
        ("updatedAt", "updatedAt"),
        ("finishedAt", "finishedAt"),
    ] {
        if !summary.contains_key(as_key) {
            copy(state, &mut summary, key, as_key);
        }
    }

    let incidents = list(state.get("incidents"));
    let count = state
        .get("incidentCount")
        .and_then(Value::as_u64)
        .map_or(incidents.len(), |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        });
    summary.insert("incidentCount".into(), count.into());
    let listed: Vec<Value> = incidents
        .iter()
        .filter_map(Value::as_object)
        .take(WorkflowInstanceContext::LISTED)
        .map(|incident| {
            let mut line = Map::new();
            for key in ["activityId", "activityType", "message", "timestamp"] {
                copy(incident, &mut line, key, key);
            }
            if let Some(exception) = incident.get("exception").and_then(Value::as_object) {
                copy(exception, &mut line, "type", "exceptionType");
                if exception.get("message") != incident.get("message") {
                    copy(exception, &mut line, "message", "exceptionMessage");
                }
            }
            Value::Object(line)
        })
        .collect();
    if !listed.is_empty() {
        summary.insert("incidents".into(), listed.into());
    }

    let bookmarks = list(state.get("bookmarks"));
    if !bookmarks.is_empty() {
        summary.insert("bookmarkCount".into(), bookmarks.len().into());
        let listed: Vec<Value> = bookmarks
            .iter()
            .filter_map(Value::as_object)
            .take(WorkflowInstanceContext::LISTED)
            .map(|bookmark| {
                let mut line = Map::new();
                for key in ["name", "activityId", "createdAt"] {
                    copy(bookmark, &mut line, key, key);
                }
                Value::Object(line)
            })
            .collect();
        summary.insert("bookmarks".into(), listed.into());
    }
    summary
}
