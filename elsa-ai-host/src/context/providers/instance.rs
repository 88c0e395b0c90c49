//! `WorkflowInstance` attachments.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, Utc};
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
        require(&request.caller, &kind, &Permission::READ_WORKFLOW_INSTANCES)?;
        let id = &request.attachment.reference_id;
        require_reference(&kind, id)?;
        let instance = self
            .instances
            .find(&request.caller.tenant_id, id)
            .await?
            .ok_or_else(|| not_found("workflow instance", id))?;
        let title = format!(
            "Workflow instance {id} of {} ({}/{})",
            instance.definition_id().unwrap_or("unknown definition"),
            instance.status(),
            instance.sub_status()
        );
        Ok(AiResolvedContext {
            kind,
            reference_id: id.clone(),
            title,
            content: Value::Object(summarize(&instance)),
            truncated: false,
        })
    }
}

fn insert_opt(summary: &mut Map<String, Value>, key: &str, value: Option<impl Into<Value>>) {
    if let Some(value) = value {
        summary.insert(key.to_owned(), value.into());
    }
}

fn timestamp(value: Option<DateTime<Utc>>) -> Option<String> {
    value.map(|t| t.to_rfc3339_opts(SecondsFormat::AutoSi, true))
}

fn summarize(instance: &WorkflowInstance) -> Map<String, Value> {
    let mut summary = Map::new();
    summary.insert("instanceId".into(), instance.id().into());
    insert_opt(&mut summary, "definitionId", instance.definition_id());
    insert_opt(
        &mut summary,
        "definitionVersion",
        instance.definition_version(),
    );
    insert_opt(
        &mut summary,
        "definitionVersionId",
        instance.definition_version_id(),
    );
    insert_opt(&mut summary, "name", instance.name());
    insert_opt(&mut summary, "correlationId", instance.correlation_id());
    summary.insert("status".into(), instance.status().as_str().into());
    summary.insert("subStatus".into(), instance.sub_status().as_str().into());
    insert_opt(&mut summary, "createdAt", timestamp(instance.created_at()));
    insert_opt(&mut summary, "updatedAt", timestamp(instance.updated_at()));
    insert_opt(
        &mut summary,
        "finishedAt",
        timestamp(instance.finished_at()),
    );

    summary.insert("incidentCount".into(), instance.incident_count().into());
    let listed: Vec<Value> = instance
        .incidents()
        .into_iter()
        .take(WorkflowInstanceContext::LISTED)
        .map(|incident| {
            let mut line = Map::new();
            insert_opt(&mut line, "activityId", incident.activity_id);
            insert_opt(&mut line, "activityType", incident.activity_type);
            insert_opt(&mut line, "timestamp", timestamp(incident.timestamp));
            if let Some(exception) = incident.exception {
                insert_opt(&mut line, "exceptionType", exception.type_name);
                if exception.message != incident.message {
                    insert_opt(&mut line, "exceptionMessage", exception.message);
                }
            }
            insert_opt(&mut line, "message", incident.message);
            Value::Object(line)
        })
        .collect();
    if !listed.is_empty() {
        summary.insert("incidents".into(), listed.into());
    }

    let bookmarks = instance.bookmarks();
    if !bookmarks.is_empty() {
        summary.insert("bookmarkCount".into(), bookmarks.len().into());
        let listed: Vec<Value> = bookmarks
            .into_iter()
            .take(WorkflowInstanceContext::LISTED)
            .map(|bookmark| {
                let mut line = Map::new();
                insert_opt(&mut line, "name", bookmark.name);
                insert_opt(&mut line, "activityId", bookmark.activity_id);
                insert_opt(&mut line, "createdAt", timestamp(bookmark.created_at));
                Value::Object(line)
            })
            .collect();
        summary.insert("bookmarks".into(), listed.into());
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summary_lists_header_incidents_and_bookmarks_from_typed_views() {
        let instance = WorkflowInstance::from_value(json!({
            "workflowState": {
                "$id": "1", "id": "i-1", "definitionId": "orders", "definitionVersion": 2,
                "status": 1, "subStatus": "Faulted",
                "createdAt": "2025-03-01T10:00:00.1234567+00:00",
                "incidents": {"$id": "2", "$values": [{
                    "activityId": "Http1", "activityType": "Elsa.SendHttpRequest",
                    "message": "Request failed",
                    "exception": {"type": "System.Net.Http.HttpRequestException", "message": "refused"},
                    "timestamp": "2025-03-01T10:00:01Z"
                }]},
                "bookmarks": [{"name": "Elsa.Event", "activityId": "Wait1"}],
                "input": {"password": "not summarised"}
            }
        }))
        .expect("valid instance");
        let summary = summarize(&instance);
        assert_eq!(summary["instanceId"], "i-1");
        assert_eq!(summary["definitionVersion"], 2);
        assert_eq!(summary["status"], "Finished");
        assert_eq!(summary["subStatus"], "Faulted");
        assert_eq!(summary["createdAt"], "2025-03-01T10:00:00.123456700Z");
        assert_eq!(summary["incidentCount"], 1);
        let incident = &summary["incidents"][0];
        assert_eq!(
            incident["exceptionType"],
            "System.Net.Http.HttpRequestException"
        );
        assert_eq!(incident["exceptionMessage"], "refused");
        assert_eq!(summary["bookmarkCount"], 1);
        assert_eq!(summary["bookmarks"][0]["activityId"], "Wait1");
        assert!(!summary.contains_key("input"));
    }
}
