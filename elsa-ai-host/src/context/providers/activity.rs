//! `ActivitySelection` attachments.

use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiContextProvider, AiContextResolutionRequest, AiError, AiResolvedContext, AttachmentKind,
    Permission,
};
use elsa_workflows::{ActivityCatalog, VersionOptions, WorkflowDefinitionStore};
use serde_json::{Map, Value};

use super::{not_found, require, require_reference};
use crate::context::summary;

/// Resolves one activity of a definition (`referenceId` = definition id, `activityId`
/// required): its type, name and place, its inputs, its incoming and outgoing connections,
/// its children, and (when the caller may read the catalog) the activity type's descriptor.
/// Needs `read:workflows`.
pub struct ActivitySelectionContext {
    definitions: Arc<dyn WorkflowDefinitionStore>,
    catalog: Arc<dyn ActivityCatalog>,
}

impl ActivitySelectionContext {
    /// A provider over `definitions`, describing activity types from `catalog`.
    pub fn new(
        definitions: Arc<dyn WorkflowDefinitionStore>,
        catalog: Arc<dyn ActivityCatalog>,
    ) -> Self {
        Self {
            definitions,
            catalog,
        }
    }
}

impl std::fmt::Debug for ActivitySelectionContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActivitySelectionContext")
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl AiContextProvider for ActivitySelectionContext {
    fn kind(&self) -> AttachmentKind {
        AttachmentKind::ActivitySelection
    }

    async fn resolve(
        &self,
        request: AiContextResolutionRequest,
    ) -> Result<AiResolvedContext, AiError> {
        let kind = self.kind();
        let caller = &request.caller;
        require(caller, &kind, &Permission::READ_WORKFLOWS)?;
        let id = &request.attachment.reference_id;
        require_reference(&kind, id)?;
        let activity_id = request
            .attachment
            .activity_id
            .as_deref()
            .filter(|a| !a.trim().is_empty())
            .ok_or_else(|| {
                AiError::bad_request(
                    "missing_activity_id",
                    "ActivitySelection attachments need an activityId",
                )
            })?;
        let definition = self
            .definitions
            .find(&caller.tenant_id, id, VersionOptions::Latest)
            .await?
            .ok_or_else(|| not_found("workflow definition", id))?;
        let node = definition.find_activity(activity_id).ok_or_else(|| {
            AiError::not_found(format!(
                "activity '{activity_id}' in workflow definition '{id}'"
            ))
        })?;

        let mut content = Map::new();
        let mut header = summary::definition_header(&definition);
        header.remove("description");
        content.insert("definition".into(), Value::Object(header));
        let mut activity = match summary::activity_line(&node) {
            Value::Object(line) => line,
            _ => Map::new(),
        };
        if let Some(version) = node.type_version() {
            activity.insert("typeVersion".into(), version.into());
        }
        if let Some(parent) = node.parent_id() {
            activity.insert("parentId".into(), parent.into());
        }
        activity.insert("inputs".into(), summary::activity_inputs(&node));
        let children = node.child_ids();
        if !children.is_empty() {
            activity.insert("children".into(), children.into());
        }
        content.insert("activity".into(), Value::Object(activity));

        let connections: Vec<_> = definition
            .activities()
            .iter()
            .filter(|n| n.is_flowchart())
            .flat_map(|n| n.connections())
            .collect();
        let incoming: Vec<Value> = connections
            .iter()
            .filter(|c| c.target.activity == activity_id)
            .map(summary::connection_line)
            .collect();
        let outgoing: Vec<Value> = connections
            .iter()
            .filter(|c| c.source.activity == activity_id)
            .map(summary::connection_line)
            .collect();
        content.insert("incoming".into(), incoming.into());
        content.insert("outgoing".into(), outgoing.into());

        if caller.has(&Permission::READ_ACTIVITIES) {
            let type_name = node.type_name();
            let catalog = self.catalog.list(&caller.tenant_id).await?;
            let descriptor = catalog.iter().find(|d| d.type_name == type_name);
            if let Some(descriptor) = descriptor {
                content.insert(
                    "descriptor".into(),
                    serde_json::to_value(descriptor).unwrap_or(Value::Null),
                );
            }
        }

        let label = node.name().or(node.display_text()).unwrap_or(activity_id);
        Ok(AiResolvedContext {
            kind,
            reference_id: id.clone(),
            title: format!(
                "Activity {label} ({}) of {}",
                node.type_name(),
                summary::definition_title(&definition)
            ),
            content: Value::Object(content),
            truncated: false,
        })
    }
}
