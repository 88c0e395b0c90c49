//! Instance operations and publication over Elsa's REST API (the table is in the module
//! documentation of `elsa_server`).

use async_trait::async_trait;
use reqwest::{Method, StatusCode};
use serde_json::{Map, Value, json};

use super::ElsaServerBackend;
use super::client::is_one_segment;
use crate::json as js;
use crate::{
    TenantId, VersionOptions, WorkflowDefinitionPublisher, WorkflowDefinitionStore, WorkflowError,
    WorkflowInstance, WorkflowInstanceOperator,
};

impl ElsaServerBackend {
    /// Sends one operation; success is any 2xx answer, whose JSON (if any) is returned.
    async fn operate(
        &self,
        tenant: &TenantId,
        what: &str,
        id: &str,
        method: Method,
        segments: &[&str],
        body: Option<&Value>,
    ) -> Result<Option<Value>, WorkflowError> {
        if !self.serves(tenant) || !is_one_segment(id) {
            return Err(WorkflowError::NotFound { what: what.into() });
        }
        let url = self.http.url(segments);
        let answer = self.http.send(what, method, url, body).await?;
        match answer.status {
            StatusCode::NOT_FOUND => Err(WorkflowError::NotFound { what: what.into() }),
            status if status.is_success() => Ok(if answer.body.is_empty() {
                None
            } else {
                Some(self.http.json(what, &answer)?)
            }),
            _ => Err(self.http.failure(what, &answer)),
        }
    }
}

#[async_trait]
impl WorkflowInstanceOperator for ElsaServerBackend {
    async fn cancel(&self, tenant: &TenantId, instance_id: &str) -> Result<(), WorkflowError> {
        let what = format!("workflow instance '{instance_id}'");
        self.operate(
            tenant,
            &what,
            instance_id,
            Method::POST,
            &["cancel", "workflow-instances", instance_id],
            None,
        )
        .await
        .map(drop)
    }

    async fn retry(&self, tenant: &TenantId, instance_id: &str) -> Result<(), WorkflowError> {
        let what = format!("workflow instance '{instance_id}'");
        let body = json!({"workflowInstanceIds": [instance_id]});
        self.operate(
            tenant,
            &what,
            instance_id,
            Method::POST,
            &["alterations", "workflows", "retry"],
            Some(&body),
        )
        .await
        .map(drop)
    }

    async fn restart(
        &self,
        tenant: &TenantId,
        instance: &WorkflowInstance,
    ) -> Result<String, WorkflowError> {
        let definition_id = instance.definition_id().unwrap_or_default();
        let what = format!("workflow definition '{definition_id}'");
        let mut body = Map::new();
        if let Some(version) = instance.definition_version() {
            body.insert("versionOptions".into(), Value::String(version.to_string()));
        }
        if let Some(correlation) = instance.correlation_id() {
            body.insert("correlationId".into(), Value::String(correlation.into()));
        }
        if let Some(input) = instance.input() {
            body.insert("input".into(), Value::Object(input.clone()));
        }
        let answer = self
            .operate(
                tenant,
                &what,
                definition_id,
                Method::POST,
                &["workflow-definitions", definition_id, "dispatch"],
                Some(&Value::Object(body)),
            )
            .await?;
        match answer
            .as_ref()
            .and_then(|a| a.get("workflowInstanceId"))
            .and_then(Value::as_str)
        {
            Some(id) if !id.is_empty() => Ok(id.to_owned()),
            _ => Err(self.http.invalid_answer(
                &format!("dispatching {what}"),
                js::error_at(&[], "the answer has no `workflowInstanceId`"),
            )),
        }
    }
}

#[async_trait]
impl WorkflowDefinitionPublisher for ElsaServerBackend {
    async fn publish(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        version: i32,
    ) -> Result<(), WorkflowError> {
        let what = format!("workflow definition '{definition_id}'");
        let latest =
            WorkflowDefinitionStore::find(self, tenant, definition_id, VersionOptions::Latest)
                .await?
                .ok_or_else(|| WorkflowError::NotFound { what: what.clone() })?;
        if latest.version() != version {
            return Err(WorkflowError::Conflict {
                message: format!(
                    "{what} is at version {}; version {version} is not the latest",
                    latest.version()
                ),
            });
        }
        self.operate(
            tenant,
            &what,
            definition_id,
            Method::POST,
            &["workflow-definitions", definition_id, "publish"],
            None,
        )
        .await
        .map(drop)
    }

    async fn unpublish(&self, tenant: &TenantId, definition_id: &str) -> Result<(), WorkflowError> {
        let what = format!("workflow definition '{definition_id}'");
        self.operate(
            tenant,
            &what,
            definition_id,
            Method::POST,
            &["workflow-definitions", definition_id, "retract"],
            None,
        )
        .await
        .map(drop)
    }

    async fn delete(&self, tenant: &TenantId, definition_id: &str) -> Result<(), WorkflowError> {
        let what = format!("workflow definition '{definition_id}'");
        self.operate(
            tenant,
            &what,
            definition_id,
            Method::DELETE,
            &["workflow-definitions", definition_id],
            None,
        )
        .await
        .map(drop)
    }
}
