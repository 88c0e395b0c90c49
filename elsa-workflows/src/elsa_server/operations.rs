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
    WorkflowInstance, WorkflowInstanceOperator, WorkflowInstanceStore,
};

impl ElsaServerBackend {
    /// Sends one operation to the endpoint `segments` name (an id that is no single segment
    /// names nothing); success is any 2xx answer, whose JSON (if any) is returned. A 404 is
    /// `missing` (the object, or for endpoints that answer 200 for unknown ids, the
    /// endpoint itself).
    async fn operate(
        &self,
        tenant: &TenantId,
        what: &str,
        method: Method,
        segments: &[&str],
        body: Option<&Value>,
        missing: fn(&str) -> WorkflowError,
    ) -> Result<Option<Value>, WorkflowError> {
        if !self.serves(tenant) || !segments.iter().all(|segment| is_one_segment(segment)) {
            return Err(WorkflowError::NotFound { what: what.into() });
        }
        let url = self.http.url(segments);
        let answer = self.http.send(what, method, url, body).await?;
        match answer.status {
            StatusCode::NOT_FOUND => Err(missing(what)),
            status if status.is_success() => Ok(if answer.body.is_empty() {
                None
            } else {
                Some(self.http.json(what, &answer)?)
            }),
            _ => Err(self.http.failure(what, &answer)),
        }
    }

    /// The instance, or [`WorkflowError::NotFound`]: Elsa's cancel and retry answer 200 for
    /// ids it does not know, so the instance is read first.
    async fn existing_instance(
        &self,
        tenant: &TenantId,
        instance_id: &str,
    ) -> Result<WorkflowInstance, WorkflowError> {
        WorkflowInstanceStore::find(self, tenant, instance_id)
            .await?
            .ok_or_else(|| WorkflowError::NotFound {
                what: format!("workflow instance '{instance_id}'"),
            })
    }
}

/// A 404 for an object that exists is the endpoint missing (Elsa 3.0 has no cancel
/// endpoint; retry needs the alterations module).
fn endpoint_missing(what: &str) -> WorkflowError {
    WorkflowError::Backend {
        message: format!(
            "Elsa Server has no endpoint for this operation on {what} (cancel needs Elsa 3.1+, \
             retry the Elsa.Alterations module)"
        ),
    }
}

fn not_found(what: &str) -> WorkflowError {
    WorkflowError::NotFound { what: what.into() }
}

#[async_trait]
impl WorkflowInstanceOperator for ElsaServerBackend {
    async fn cancel(&self, tenant: &TenantId, instance_id: &str) -> Result<(), WorkflowError> {
        let what = format!("workflow instance '{instance_id}'");
        self.existing_instance(tenant, instance_id).await?;
        self.operate(
            tenant,
            &what,
            Method::POST,
            &["cancel", "workflow-instances", instance_id],
            None,
            endpoint_missing,
        )
        .await
        .map(drop)
    }

    async fn retry(&self, tenant: &TenantId, instance_id: &str) -> Result<(), WorkflowError> {
        let what = format!("workflow instance '{instance_id}'");
        self.existing_instance(tenant, instance_id).await?;
        let body = json!({"workflowInstanceIds": [instance_id]});
        let answer = self
            .operate(
                tenant,
                &what,
                Method::POST,
                &["alterations", "workflows", "retry"],
                Some(&body),
                endpoint_missing,
            )
            .await?;
        // Each result says whether its alterations succeeded (`isSuccessful`).
        let failed = answer
            .as_ref()
            .and_then(|a| a.get("results"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|result| result.get("isSuccessful") == Some(&Value::Bool(false)));
        if failed {
            return Err(WorkflowError::Backend {
                message: format!("Elsa Server could not schedule the retry of {what}"),
            });
        }
        Ok(())
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
                Method::POST,
                &["workflow-definitions", definition_id, "dispatch"],
                Some(&Value::Object(body)),
                not_found,
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
                .ok_or_else(|| not_found(&what))?;
        if latest.version() != version {
            return Err(WorkflowError::Conflict {
                message: format!(
                    "{what} is at version {}; version {version} is not the latest",
                    latest.version()
                ),
            });
        }
        // Elsa's endpoints without a body of their own still want a JSON body.
        self.operate(
            tenant,
            &what,
            Method::POST,
            &["workflow-definitions", definition_id, "publish"],
            Some(&json!({})),
            not_found,
        )
        .await
        .map(drop)
    }

    async fn unpublish(&self, tenant: &TenantId, definition_id: &str) -> Result<(), WorkflowError> {
        let what = format!("workflow definition '{definition_id}'");
        let find = |version| WorkflowDefinitionStore::find(self, tenant, definition_id, version);
        if find(VersionOptions::Published).await?.is_none() {
            // Nothing published: a conflict for a definition that exists, else not found.
            return Err(match find(VersionOptions::Latest).await? {
                Some(_) => WorkflowError::Conflict {
                    message: format!("{what} is not published"),
                },
                None => not_found(&what),
            });
        }
        self.operate(
            tenant,
            &what,
            Method::POST,
            &["workflow-definitions", definition_id, "retract"],
            Some(&json!({})),
            not_found,
        )
        .await
        .map(drop)
    }

    async fn delete(&self, tenant: &TenantId, definition_id: &str) -> Result<(), WorkflowError> {
        let what = format!("workflow definition '{definition_id}'");
        self.operate(
            tenant,
            &what,
            Method::DELETE,
            &["workflow-definitions", definition_id],
            None,
            not_found,
        )
        .await
        .map(drop)
    }
}
