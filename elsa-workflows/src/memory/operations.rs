//! Instance operations and publication on the in-memory backend.
//!
//! There is no workflow engine in memory: an operation changes the records an engine would
//! change (a cancelled instance is `Finished`/`Cancelled`, a retried one `Running`/`Executing`
//! with its incidents kept as history, a restart adds a new `Running`/`Pending` instance, a
//! deleted definition takes its instances with it as in Elsa) and nothing runs. Like every
//! other change to this backend, the effect lasts as long as the process; only definition
//! versions are also written to a tenant's folder (`FolderDefinitionWriter`, feature
//! `folder`).

use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use serde_json::{Map, Value};

use super::{InMemoryWorkflowBackend, normalise_flags};
use crate::{
    TenantId, WorkflowDefinitionPublisher, WorkflowError, WorkflowInstance,
    WorkflowInstanceOperator, WorkflowStatus, WorkflowSubStatus,
};

impl InMemoryWorkflowBackend {
    /// Sets the status of one of the tenant's instances under the lock.
    fn set_instance_status(
        &self,
        tenant: &TenantId,
        instance_id: &str,
        status: WorkflowStatus,
        sub_status: WorkflowSubStatus,
    ) -> Result<(), WorkflowError> {
        let mut tenants = self.tenants.write();
        let instance = tenants
            .get_mut(tenant)
            .and_then(|data| data.instances.get_mut(instance_id))
            .ok_or_else(|| instance_not_found(instance_id))?;
        instance.set_status(status, sub_status, Utc::now());
        Ok(())
    }
}

#[async_trait]
impl WorkflowInstanceOperator for InMemoryWorkflowBackend {
    async fn cancel(&self, tenant: &TenantId, instance_id: &str) -> Result<(), WorkflowError> {
        self.set_instance_status(
            tenant,
            instance_id,
            WorkflowStatus::Finished,
            WorkflowSubStatus::Cancelled,
        )
    }

    async fn retry(&self, tenant: &TenantId, instance_id: &str) -> Result<(), WorkflowError> {
        self.set_instance_status(
            tenant,
            instance_id,
            WorkflowStatus::Running,
            WorkflowSubStatus::Executing,
        )
    }

    async fn restart(
        &self,
        tenant: &TenantId,
        instance: &WorkflowInstance,
    ) -> Result<String, WorkflowError> {
        let now = Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let id = uuid::Uuid::new_v4().simple().to_string()[..16].to_owned();
        let mut document = Map::new();
        document.insert("id".into(), Value::String(id.clone()));
        for (field, value) in [
            ("definitionId", instance.definition_id()),
            ("definitionVersionId", instance.definition_version_id()),
            ("name", instance.name()),
            ("correlationId", instance.correlation_id()),
        ] {
            if let Some(value) = value {
                document.insert(field.into(), Value::String(value.to_owned()));
            }
        }
        if let Some(version) = instance.definition_version() {
            document.insert("version".into(), Value::from(version));
        }
        if let Some(input) = instance.input() {
            document.insert("input".into(), Value::Object(input.clone()));
        }
        document.insert("status".into(), "Running".into());
        document.insert("subStatus".into(), "Pending".into());
        document.insert("createdAt".into(), Value::String(now.clone()));
        document.insert("updatedAt".into(), Value::String(now));
        let restarted = WorkflowInstance::from_value(Value::Object(document))?;
        let mut tenants = self.tenants.write();
        let data = tenants
            .get_mut(tenant)
            .filter(|data| data.instances.contains_key(instance.id()))
            .ok_or_else(|| instance_not_found(instance.id()))?;
        data.instances.insert(id.clone(), restarted);
        Ok(id)
    }
}

#[async_trait]
impl WorkflowDefinitionPublisher for InMemoryWorkflowBackend {
    async fn publish(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        version: i32,
    ) -> Result<(), WorkflowError> {
        let mut tenants = self.tenants.write();
        let versions = tenants
            .get_mut(tenant)
            .and_then(|data| data.definitions.get_mut(definition_id))
            .filter(|versions| !versions.is_empty())
            .ok_or_else(|| definition_not_found(definition_id))?;
        let latest = versions.keys().next_back().copied().unwrap_or_default();
        if latest != version {
            return Err(WorkflowError::Conflict {
                message: format!(
                    "workflow definition '{definition_id}' is at version {latest}; version \
                     {version} is not the latest"
                ),
            });
        }
        for (number, definition) in versions.iter_mut() {
            if definition.is_published() != (*number == version) {
                Arc::make_mut(definition).set_published(*number == version);
            }
        }
        normalise_flags(versions);
        Ok(())
    }

    async fn unpublish(&self, tenant: &TenantId, definition_id: &str) -> Result<(), WorkflowError> {
        let mut tenants = self.tenants.write();
        let versions = tenants
            .get_mut(tenant)
            .and_then(|data| data.definitions.get_mut(definition_id))
            .filter(|versions| !versions.is_empty())
            .ok_or_else(|| definition_not_found(definition_id))?;
        if !versions.values().any(|d| d.is_published()) {
            return Err(WorkflowError::Conflict {
                message: format!("workflow definition '{definition_id}' is not published"),
            });
        }
        for definition in versions.values_mut().filter(|d| d.is_published()) {
            Arc::make_mut(definition).set_published(false);
        }
        Ok(())
    }

    /// Removes every version and, as Elsa does, the definition's instances with their
    /// execution records and logs.
    async fn delete(&self, tenant: &TenantId, definition_id: &str) -> Result<(), WorkflowError> {
        let mut tenants = self.tenants.write();
        let data = tenants
            .get_mut(tenant)
            .filter(|data| {
                data.definitions
                    .get(definition_id)
                    .is_some_and(|v| !v.is_empty())
            })
            .ok_or_else(|| definition_not_found(definition_id))?;
        data.definitions.remove(definition_id);
        let runs: Vec<String> = data
            .instances
            .iter()
            .filter(|(_, instance)| instance.definition_id() == Some(definition_id))
            .map(|(id, _)| id.clone())
            .collect();
        for id in runs {
            data.instances.remove(&id);
            data.executions.remove(&id);
            data.execution_logs.remove(&id);
        }
        Ok(())
    }
}

fn instance_not_found(instance_id: &str) -> WorkflowError {
    WorkflowError::NotFound {
        what: format!("workflow instance '{instance_id}'"),
    }
}

fn definition_not_found(definition_id: &str) -> WorkflowError {
    WorkflowError::NotFound {
        what: format!("workflow definition '{definition_id}'"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{
        VersionOptions, WorkflowDefinition, WorkflowDefinitionStore, WorkflowInstanceStore,
    };

    fn acme() -> TenantId {
        TenantId::new("acme")
    }

    fn seeded() -> InMemoryWorkflowBackend {
        let backend = InMemoryWorkflowBackend::new();
        for (version, published) in [(1, true), (2, false)] {
            let definition = WorkflowDefinition::from_value(json!({
                "definitionId": "orders", "version": version, "isPublished": published,
                "root": {"id": "r", "type": "Elsa.Flowchart", "activities": []}
            }))
            .unwrap();
            backend.insert_definition(&acme(), definition).unwrap();
        }
        let faulted = WorkflowInstance::from_value(json!({
            "id": "i-1", "definitionId": "orders", "version": 1, "correlationId": "c-9",
            "status": "Finished", "subStatus": "Faulted", "finishedAt": "2026-01-01T00:00:00Z",
            "workflowState": {"status": "Finished", "subStatus": "Faulted", "input": {"a": 1}}
        }))
        .unwrap();
        backend.insert_instance(&acme(), faulted);
        backend
    }

    #[tokio::test]
    async fn retry_and_cancel_change_every_layer_of_the_instance() {
        let backend = seeded();
        backend.retry(&acme(), "i-1").await.unwrap();
        let found = WorkflowInstanceStore::find(&backend, &acme(), "i-1")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.status(), WorkflowStatus::Running);
        assert_eq!(found.sub_status(), WorkflowSubStatus::Executing);
        assert_eq!(found.finished_at(), None);
        let state = found.workflow_state().unwrap();
        assert_eq!(state["subStatus"], "Executing");
        backend.cancel(&acme(), "i-1").await.unwrap();
        let found = WorkflowInstanceStore::find(&backend, &acme(), "i-1")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.sub_status(), WorkflowSubStatus::Cancelled);
        assert!(found.finished_at().is_some());
    }

    #[tokio::test]
    async fn restart_adds_a_new_instance_with_the_same_input_and_correlation() {
        let backend = seeded();
        let old = WorkflowInstanceStore::find(&backend, &acme(), "i-1")
            .await
            .unwrap()
            .unwrap();
        let id = backend.restart(&acme(), &old).await.unwrap();
        assert_ne!(id, "i-1");
        let new = WorkflowInstanceStore::find(&backend, &acme(), &id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(new.correlation_id(), Some("c-9"));
        assert_eq!(new.definition_version(), Some(1));
        assert_eq!(new.input().unwrap()["a"], 1);
        assert_eq!(new.sub_status(), WorkflowSubStatus::Pending);
        let other = TenantId::new("globex");
        assert!(matches!(
            backend.restart(&other, &old).await,
            Err(WorkflowError::NotFound { .. })
        ));
    }

    #[tokio::test]
    async fn publish_moves_the_published_flag_and_unpublish_and_delete_remove_it() {
        let backend = seeded();
        assert!(matches!(
            backend.publish(&acme(), "orders", 1).await,
            Err(WorkflowError::Conflict { .. })
        ));
        backend.publish(&acme(), "orders", 2).await.unwrap();
        let published =
            WorkflowDefinitionStore::find(&backend, &acme(), "orders", VersionOptions::Published)
                .await
                .unwrap()
                .unwrap();
        assert_eq!(published.version(), 2);
        backend.unpublish(&acme(), "orders").await.unwrap();
        assert!(
            WorkflowDefinitionStore::find(&backend, &acme(), "orders", VersionOptions::Published)
                .await
                .unwrap()
                .is_none()
        );
        assert!(matches!(
            backend.unpublish(&acme(), "orders").await,
            Err(WorkflowError::Conflict { .. })
        ));
        assert!(matches!(
            backend.delete(&TenantId::new("globex"), "orders").await,
            Err(WorkflowError::NotFound { .. })
        ));
        backend.delete(&acme(), "orders").await.unwrap();
        assert!(
            WorkflowInstanceStore::find(&backend, &acme(), "i-1")
                .await
                .unwrap()
                .is_none(),
            "the definition's instances go with it"
        );
        assert!(
            WorkflowDefinitionStore::find(&backend, &acme(), "orders", VersionOptions::Latest)
                .await
                .unwrap()
                .is_none()
        );
    }
}
