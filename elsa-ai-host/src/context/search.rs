//! [`AttachmentSearch`]: finding what a person can attach to a message (definitions and
//! instances of the caller's tenant), for pickers such as the console's.

use std::sync::Arc;

use elsa_ai_abstractions::{AiCaller, AiError, AttachmentKind, Permission};
use elsa_workflows::{
    DefinitionQuery, InstanceQuery, PageRequest, VersionOptions, WorkflowDefinitionStore,
    WorkflowInstanceStore,
};
use serde::Serialize;

/// How many instances a text search reads, newest first, before it gives up.
const INSTANCE_SCAN: usize = 500;

/// One thing that can be attached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AttachmentCandidate {
    /// The attachment kind.
    pub kind: AttachmentKind,
    /// The reference a chat request names.
    pub reference_id: String,
    /// A title for people.
    pub title: String,
    /// A short detail (version, status).
    pub detail: String,
}

/// Searches the caller's tenant for definitions and instances to attach, with the same
/// permissions their context providers require.
#[derive(Clone)]
pub struct AttachmentSearch {
    definitions: Arc<dyn WorkflowDefinitionStore>,
    instances: Arc<dyn WorkflowInstanceStore>,
}

impl std::fmt::Debug for AttachmentSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttachmentSearch").finish_non_exhaustive()
    }
}

impl AttachmentSearch {
    /// A search over these stores.
    pub fn new(
        definitions: Arc<dyn WorkflowDefinitionStore>,
        instances: Arc<dyn WorkflowInstanceStore>,
    ) -> Self {
        Self {
            definitions,
            instances,
        }
    }

    /// Up to `limit` (1..=50) candidates of `kind` whose id or name contains `text` (any case;
    /// empty matches all). Definitions need `read:workflows`, instances
    /// `read:workflow-instances` (403 without); other kinds are 400.
    pub async fn search(
        &self,
        caller: &AiCaller,
        kind: AttachmentKind,
        text: &str,
        limit: usize,
    ) -> Result<Vec<AttachmentCandidate>, AiError> {
        let limit = limit.clamp(1, 50);
        let text = text.trim().to_lowercase();
        match kind {
            AttachmentKind::WorkflowDefinition => {
                caller.require(&Permission::READ_WORKFLOWS, "searching definitions")?;
                let query = DefinitionQuery {
                    text: (!text.is_empty()).then(|| text.clone()),
                    version: VersionOptions::Latest,
                    page: PageRequest::new(0, limit),
                    ..DefinitionQuery::default()
                };
                let page = self.definitions.search(&caller.tenant_id, &query).await?;
                Ok(page
                    .items
                    .into_iter()
                    .map(|d| AttachmentCandidate {
                        kind: kind.clone(),
                        title: d.name.clone().unwrap_or_else(|| d.definition_id.clone()),
                        detail: format!(
                            "version {}{}",
                            d.version,
                            if d.is_published { ", published" } else { "" }
                        ),
                        reference_id: d.definition_id,
                    })
                    .collect())
            }
            AttachmentKind::WorkflowInstance => {
                caller.require(&Permission::READ_WORKFLOW_INSTANCES, "searching instances")?;
                let query = InstanceQuery {
                    page: PageRequest::new(0, INSTANCE_SCAN),
                    ..InstanceQuery::default()
                };
                let page = self.instances.search(&caller.tenant_id, &query).await?;
                Ok(page
                    .items
                    .iter()
                    .filter(|i| {
                        text.is_empty()
                            || [Some(i.id()), i.definition_id(), i.name()]
                                .into_iter()
                                .flatten()
                                .any(|field| field.to_lowercase().contains(&text))
                    })
                    .take(limit)
                    .map(|i| AttachmentCandidate {
                        kind: kind.clone(),
                        reference_id: i.id().to_owned(),
                        title: i.name().or(i.definition_id()).unwrap_or(i.id()).to_owned(),
                        detail: format!("{} {}", i.status().as_str(), i.sub_status().as_str()),
                    })
                    .collect())
            }
            other => Err(AiError::bad_request(
                "search_not_supported",
                format!("attachments of kind {other} cannot be searched; name them directly"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elsa_workflows::InMemoryWorkflowBackend;

    fn search() -> AttachmentSearch {
        let backend = Arc::new(InMemoryWorkflowBackend::new());
        elsa_workflows::samples::seed(&backend, &"acme".into());
        AttachmentSearch::new(backend.clone(), backend)
    }

    #[tokio::test]
    async fn definitions_and_instances_of_the_callers_tenant_only() {
        let search = search();
        let all = AiCaller::new(
            "alice",
            "acme",
            [
                Permission::READ_WORKFLOWS,
                Permission::READ_WORKFLOW_INSTANCES,
            ],
        );
        let found = search
            .search(&all, AttachmentKind::WorkflowDefinition, "", 10)
            .await
            .unwrap();
        assert!(!found.is_empty());
        let first = &found[0];
        let narrowed = search
            .search(
                &all,
                AttachmentKind::WorkflowDefinition,
                &first.reference_id.to_uppercase(),
                10,
            )
            .await
            .unwrap();
        assert!(
            narrowed
                .iter()
                .any(|c| c.reference_id == first.reference_id)
        );
        let instances = search
            .search(&all, AttachmentKind::WorkflowInstance, "", 3)
            .await
            .unwrap();
        assert!(instances.len() <= 3);

        let other_tenant = AiCaller::new("mallory", "globex", [Permission::READ_WORKFLOWS]);
        let nothing = search
            .search(&other_tenant, AttachmentKind::WorkflowDefinition, "", 10)
            .await
            .unwrap();
        assert!(nothing.is_empty(), "{nothing:?}");
    }

    #[tokio::test]
    async fn each_kind_needs_its_permission_and_other_kinds_are_refused() {
        let search = search();
        let none = AiCaller::new("bob", "acme", []);
        for kind in [
            AttachmentKind::WorkflowDefinition,
            AttachmentKind::WorkflowInstance,
        ] {
            let error = search.search(&none, kind, "", 5).await.unwrap_err();
            assert_eq!((error.status(), error.code()), (403, "permission_denied"));
        }
        let all = AiCaller::new("alice", "acme", [Permission::READ_WORKFLOWS]);
        let error = search
            .search(&all, AttachmentKind::TimeRange, "", 5)
            .await
            .unwrap_err();
        assert_eq!(error.status(), 400);
    }
}
