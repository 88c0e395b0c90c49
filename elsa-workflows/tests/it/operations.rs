//! Instance operations (cancel, retry, restart) and publication (publish, unpublish, delete)
//! of the Elsa Server backend, against the testkit's stand-in for Elsa 3 Server's API: the
//! exact request each call sends, the state read back through the backend's own read traits
//! afterwards, and the calls that must fail (an unknown instance or definition, another
//! tenant, a stale version, a definition that is not published, a server without the
//! endpoint, a retry with nothing to retry) with a typed error and, where the backend can
//! tell by itself or from a read, without sending the operation itself.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use elsa_workflows::{
    ElsaServerBackend, ElsaServerConfig, TenantId, VersionOptions, WorkflowDefinition,
    WorkflowDefinitionPublisher, WorkflowDefinitionStore, WorkflowError, WorkflowInstance,
    WorkflowInstanceOperator, WorkflowInstanceStore, WorkflowStatus, WorkflowSubStatus,
};
use serde_json::{Value, json};
use weaver_testkit::elsa_api::{ElsaApiStandIn, RecordedRequest};

const KEY: &str = "operations-key-51c0";

fn authorization() -> String {
    format!("ApiKey {KEY}")
}

fn acme() -> TenantId {
    TenantId::new("acme")
}

/// `(definitionId, version, published, latest)`: `orders` with v1 retired, v2 published and
/// v3 a draft on top; `billing` with one published version; `drafty` never published.
const VERSIONS: [(&str, i32, bool, bool); 5] = [
    ("orders", 1, false, false),
    ("orders", 2, true, false),
    ("orders", 3, false, true),
    ("billing", 1, true, true),
    ("drafty", 1, false, true),
];

/// The instances: a faulted run of orders v2 (with an incident, input and a correlation id),
/// a suspended one with a running child, and a finished run of billing.
fn instances() -> Vec<Value> {
    let incident = json!({
        "activityId": "Pay", "activityNodeId": "Workflow1:Flowchart1:Pay",
        "activityType": "Elsa.SendHttpRequest", "message": "Payment gateway timed out",
        "timestamp": "2025-03-01T10:05:00+00:00"
    });
    vec![
        json!({
            "id": "run-faulted", "definitionId": "orders", "definitionVersionId": "orders-v2",
            "version": 2, "name": "Order 42", "correlationId": "order-42",
            "status": "Finished", "subStatus": "Faulted",
            "createdAt": "2025-03-01T10:00:00+00:00", "updatedAt": "2025-03-01T10:05:00+00:00",
            "finishedAt": "2025-03-01T10:05:00+00:00",
            "workflowState": {
                "id": "run-faulted", "definitionId": "orders", "definitionVersion": 2,
                "status": "Finished", "subStatus": "Faulted", "correlationId": "order-42",
                "input": {"orderId": 42, "rush": true}, "incidents": [incident],
                "finishedAt": "2025-03-01T10:05:00+00:00"
            }
        }),
        json!({
            "id": "run-waiting", "definitionId": "orders", "definitionVersionId": "orders-v2",
            "version": 2, "status": "Running", "subStatus": "Suspended",
            "createdAt": "2025-03-02T10:00:00+00:00",
            "workflowState": {"id": "run-waiting", "status": "Running", "subStatus": "Suspended"}
        }),
        json!({
            "id": "run-child", "definitionId": "billing", "definitionVersionId": "billing-v1",
            "version": 1, "parentWorkflowInstanceId": "run-waiting",
            "status": "Running", "subStatus": "Executing",
            "createdAt": "2025-03-02T10:01:00+00:00"
        }),
        json!({
            "id": "run-done", "definitionId": "billing", "definitionVersionId": "billing-v1",
            "version": 1, "status": "Finished", "subStatus": "Finished",
            "createdAt": "2025-03-03T10:00:00+00:00", "finishedAt": "2025-03-03T10:01:00+00:00"
        }),
    ]
}

/// A stand-in holding [`VERSIONS`] and [`instances`], and a backend serving acme from it.
async fn seeded() -> (ElsaApiStandIn, ElsaServerBackend) {
    let elsa = ElsaApiStandIn::start(&authorization()).await;
    for (definition_id, version, published, latest) in VERSIONS {
        elsa.insert_definition(json!({
            "id": format!("{definition_id}-v{version}"),
            "definitionId": definition_id,
            "name": format!("{definition_id} {version}"),
            "version": version,
            "isPublished": published,
            "isLatest": latest,
            "root": {"id": "Flowchart1", "type": "Elsa.Flowchart", "version": 1,
                     "activities": [], "connections": []},
        }));
    }
    let created: DateTime<Utc> = "2025-03-01T00:00:00Z".parse().expect("a timestamp");
    for document in instances() {
        let instance = WorkflowInstance::from_value(document).expect("a readable instance");
        elsa.insert_instance(&instance, created);
    }
    let config = ElsaServerConfig::new(elsa.url())
        .expect("a valid URL")
        .api_key(KEY);
    let backend = ElsaServerBackend::new(acme(), config).expect("a usable configuration");
    (elsa, backend)
}

/// A request as the stand-in records it when the backend sends it.
fn request(method: &str, path: &str, body: Option<Value>) -> RecordedRequest {
    RecordedRequest {
        method: method.to_owned(),
        path_and_query: path.to_owned(),
        authorization: Some(authorization()),
        tenant: None,
        body,
    }
}

/// The read of one instance that cancel and retry send first.
fn read_instance(id: &str) -> RecordedRequest {
    request("GET", &format!("/elsa/api/workflow-instances/{id}"), None)
}

/// The read of the published version that unpublish sends first.
fn read_latest(definition_id: &str) -> RecordedRequest {
    request(
        "GET",
        &format!(
            "/elsa/api/workflow-definitions/by-definition-id/{definition_id}?versionOptions=Latest"
        ),
        None,
    )
}

fn read_published(definition_id: &str) -> RecordedRequest {
    request(
        "GET",
        &format!(
            "/elsa/api/workflow-definitions/by-definition-id/{definition_id}?versionOptions=Published"
        ),
        None,
    )
}

/// The requests the stand-in received after the first `from`.
fn since(elsa: &ElsaApiStandIn, from: usize) -> Vec<RecordedRequest> {
    elsa.requests().split_off(from)
}

async fn instance(backend: &ElsaServerBackend, id: &str) -> Option<WorkflowInstance> {
    WorkflowInstanceStore::find(backend, &acme(), id)
        .await
        .expect("the instance read")
}

async fn definition(
    backend: &ElsaServerBackend,
    definition_id: &str,
    version: VersionOptions,
) -> Option<Arc<WorkflowDefinition>> {
    WorkflowDefinitionStore::find(backend, &acme(), definition_id, version)
        .await
        .expect("the definition read")
}

/// `(version, published, latest)` of what `find` answers.
async fn flags(
    backend: &ElsaServerBackend,
    definition_id: &str,
    version: VersionOptions,
) -> Option<(i32, bool, bool)> {
    definition(backend, definition_id, version)
        .await
        .map(|d| (d.version(), d.is_published(), d.is_latest()))
}

fn state_field<'a>(instance: &'a WorkflowInstance, field: &str) -> Option<&'a str> {
    instance
        .workflow_state()
        .and_then(|state| state.get(field))
        .and_then(Value::as_str)
}

fn assert_not_found<T: std::fmt::Debug>(result: Result<T, WorkflowError>, what: &str) {
    match result {
        Err(WorkflowError::NotFound { what: found }) => assert_eq!(found, what),
        other => panic!("expected {what} not found, got {other:?}"),
    }
}

/// The message of a [`WorkflowError::Backend`], which must not quote the credential.
fn backend_message<T: std::fmt::Debug>(result: Result<T, WorkflowError>) -> String {
    match result {
        Err(WorkflowError::Backend { message }) => {
            assert!(!message.contains(KEY), "{message}");
            message
        }
        other => panic!("expected a backend error, got {other:?}"),
    }
}

/// `(status, sub-status)` of a stored instance, read back through the backend.
async fn run_status(backend: &ElsaServerBackend, id: &str) -> (WorkflowStatus, WorkflowSubStatus) {
    let instance = instance(backend, id).await.expect("the instance");
    (instance.status(), instance.sub_status())
}

#[tokio::test]
async fn cancel_reads_the_instance_then_posts_without_a_body_and_finishes_it_and_its_children() {
    let (elsa, backend) = seeded().await;
    let before = elsa.requests().len();
    backend.cancel(&acme(), "run-waiting").await.unwrap();
    assert_eq!(
        since(&elsa, before),
        [
            read_instance("run-waiting"),
            request(
                "POST",
                "/elsa/api/cancel/workflow-instances/run-waiting",
                None
            ),
        ]
    );
    let cancelled = instance(&backend, "run-waiting")
        .await
        .expect("the instance");
    assert_eq!(
        (cancelled.status(), cancelled.sub_status()),
        (WorkflowStatus::Finished, WorkflowSubStatus::Cancelled)
    );
    assert!(cancelled.finished_at().is_some());
    assert_eq!(state_field(&cancelled, "status"), Some("Finished"));
    assert_eq!(state_field(&cancelled, "subStatus"), Some("Cancelled"));
    // Elsa's cancellation service cancels the child instances too.
    let child = instance(&backend, "run-child").await.expect("the child");
    assert_eq!(child.sub_status(), WorkflowSubStatus::Cancelled);
    // The others are untouched.
    let done = instance(&backend, "run-done").await.expect("an instance");
    assert_eq!(done.sub_status(), WorkflowSubStatus::Finished);
}

#[tokio::test]
async fn cancel_leaves_a_finished_instance_as_it_is() {
    let (elsa, backend) = seeded().await;
    let before = elsa.requests().len();
    // Elsa answers 200 and skips instances that already finished.
    backend.cancel(&acme(), "run-faulted").await.unwrap();
    assert_eq!(
        since(&elsa, before),
        [
            read_instance("run-faulted"),
            request(
                "POST",
                "/elsa/api/cancel/workflow-instances/run-faulted",
                None
            ),
        ]
    );
    let faulted = instance(&backend, "run-faulted")
        .await
        .expect("the instance");
    assert_eq!(
        (faulted.status(), faulted.sub_status()),
        (WorkflowStatus::Finished, WorkflowSubStatus::Faulted)
    );
}

#[tokio::test]
async fn retry_reads_the_instance_then_posts_its_id_to_the_alterations_endpoint_and_runs_it() {
    let (elsa, backend) = seeded().await;
    let before = elsa.requests().len();
    backend.retry(&acme(), "run-faulted").await.unwrap();
    assert_eq!(
        since(&elsa, before),
        [
            read_instance("run-faulted"),
            request(
                "POST",
                "/elsa/api/alterations/workflows/retry",
                Some(json!({"workflowInstanceIds": ["run-faulted"]}))
            ),
        ]
    );
    let retried = instance(&backend, "run-faulted")
        .await
        .expect("the instance");
    assert_eq!(
        (retried.status(), retried.sub_status()),
        (WorkflowStatus::Running, WorkflowSubStatus::Executing)
    );
    assert_eq!(retried.finished_at(), None);
    assert_eq!(state_field(&retried, "subStatus"), Some("Executing"));
    // The incident stays in the state as history; the input is unchanged.
    assert_eq!(retried.incident_count(), 1);
    assert_eq!(retried.input().expect("the input")["orderId"], 42);
}

#[tokio::test]
async fn restart_dispatches_the_instances_version_with_its_input_and_correlation_id() {
    let (elsa, backend) = seeded().await;
    let old = instance(&backend, "run-faulted")
        .await
        .expect("the instance");
    let before = elsa.requests().len();
    let new_id = backend.restart(&acme(), &old).await.unwrap();
    assert_eq!(
        since(&elsa, before),
        [request(
            "POST",
            "/elsa/api/workflow-definitions/orders/dispatch",
            Some(json!({
                "versionOptions": "2",
                "correlationId": "order-42",
                "input": {"orderId": 42, "rush": true},
            }))
        )]
    );
    assert_ne!(new_id, "run-faulted");
    let new = instance(&backend, &new_id).await.expect("the new instance");
    assert_eq!(new.id(), new_id);
    assert_eq!(
        (new.status(), new.sub_status()),
        (WorkflowStatus::Running, WorkflowSubStatus::Pending)
    );
    assert_eq!(new.definition_id(), Some("orders"));
    assert_eq!(new.definition_version(), Some(2));
    assert_eq!(new.definition_version_id(), Some("orders-v2"));
    assert_eq!(new.correlation_id(), Some("order-42"));
    assert_eq!(
        new.input().map(|input| Value::Object(input.clone())),
        Some(json!({"orderId": 42, "rush": true}))
    );
    // The old run is left as it was.
    let old = instance(&backend, "run-faulted")
        .await
        .expect("the old instance");
    assert_eq!(old.sub_status(), WorkflowSubStatus::Faulted);
}

#[tokio::test]
async fn restart_without_a_version_or_input_sends_only_what_the_instance_has() {
    let (elsa, backend) = seeded().await;
    // A summary row without a version number or input: Elsa starts the published version.
    let row = WorkflowInstance::from_value(json!({
        "id": "row-1", "definitionId": "billing", "status": "Finished", "subStatus": "Finished"
    }))
    .unwrap();
    let before = elsa.requests().len();
    let new_id = backend.restart(&acme(), &row).await.unwrap();
    assert_eq!(
        since(&elsa, before),
        [request(
            "POST",
            "/elsa/api/workflow-definitions/billing/dispatch",
            Some(json!({}))
        )]
    );
    let new = instance(&backend, &new_id).await.expect("the new instance");
    assert_eq!(new.definition_version(), Some(1));
    assert_eq!(new.correlation_id(), None);
}

#[tokio::test]
async fn restart_of_a_version_or_definition_elsa_does_not_have_is_not_found() {
    let (elsa, backend) = seeded().await;
    let count = elsa.instances().len();
    for (definition_id, version, path) in [
        (
            "orders",
            7,
            "/elsa/api/workflow-definitions/orders/dispatch",
        ),
        (
            "no-such-definition",
            1,
            "/elsa/api/workflow-definitions/no-such-definition/dispatch",
        ),
    ] {
        let old = WorkflowInstance::from_value(json!({
            "id": "old-run", "definitionId": definition_id, "version": version,
            "status": "Finished", "subStatus": "Faulted"
        }))
        .unwrap();
        let before = elsa.requests().len();
        assert_not_found(
            backend.restart(&acme(), &old).await,
            &format!("workflow definition '{definition_id}'"),
        );
        assert_eq!(
            since(&elsa, before),
            [request(
                "POST",
                path,
                Some(json!({"versionOptions": version.to_string()}))
            )]
        );
    }
    assert_eq!(elsa.instances().len(), count, "no instance was started");
}

#[tokio::test]
async fn publish_posts_an_empty_json_object_and_publishes_the_latest_version_and_no_other() {
    let (elsa, backend) = seeded().await;
    let before = elsa.requests().len();
    backend.publish(&acme(), "orders", 3).await.unwrap();
    assert_eq!(
        since(&elsa, before),
        [
            request(
                "GET",
                "/elsa/api/workflow-definitions/by-definition-id/orders?versionOptions=Latest",
                None
            ),
            request(
                "POST",
                "/elsa/api/workflow-definitions/orders/publish",
                Some(json!({}))
            ),
        ]
    );
    let published = VersionOptions::Published;
    assert_eq!(
        flags(&backend, "orders", published).await,
        Some((3, true, true))
    );
    assert_eq!(
        flags(&backend, "orders", VersionOptions::Latest).await,
        Some((3, true, true))
    );
    assert_eq!(
        flags(&backend, "orders", VersionOptions::Specific(2)).await,
        Some((2, false, false))
    );
    // Publishing it again: Elsa answers `alreadyPublished` and nothing changes.
    let before = elsa.requests().len();
    backend.publish(&acme(), "orders", 3).await.unwrap();
    assert_eq!(
        since(&elsa, before).last(),
        Some(&request(
            "POST",
            "/elsa/api/workflow-definitions/orders/publish",
            Some(json!({}))
        ))
    );
    assert_eq!(
        flags(&backend, "orders", published).await,
        Some((3, true, true))
    );
    // Another definition is untouched.
    assert_eq!(
        flags(&backend, "billing", published).await,
        Some((1, true, true))
    );
}

#[tokio::test]
async fn publishing_a_version_that_is_not_the_latest_is_a_conflict_and_sends_no_publish() {
    let (elsa, backend) = seeded().await;
    for stale in [2, 1, 4] {
        let before = elsa.requests().len();
        let error = backend.publish(&acme(), "orders", stale).await.unwrap_err();
        match &error {
            WorkflowError::Conflict { message } => {
                assert!(message.contains("at version 3"), "{message}");
                assert!(
                    message.contains(&format!("version {stale} is not the latest")),
                    "{message}"
                );
            }
            other => panic!("expected a conflict, got {other:?}"),
        }
        assert_eq!(
            since(&elsa, before),
            [request(
                "GET",
                "/elsa/api/workflow-definitions/by-definition-id/orders?versionOptions=Latest",
                None
            )],
            "only the latest version is read"
        );
    }
    assert_eq!(
        flags(&backend, "orders", VersionOptions::Published).await,
        Some((2, true, false))
    );
    assert_eq!(
        flags(&backend, "orders", VersionOptions::Latest).await,
        Some((3, false, true))
    );
}

#[tokio::test]
async fn unpublish_reads_the_published_version_then_retracts_it_with_an_empty_json_object() {
    let (elsa, backend) = seeded().await;
    let before = elsa.requests().len();
    backend.unpublish(&acme(), "orders").await.unwrap();
    assert_eq!(
        since(&elsa, before),
        [
            read_published("orders"),
            request(
                "POST",
                "/elsa/api/workflow-definitions/orders/retract",
                Some(json!({}))
            ),
        ]
    );
    assert_eq!(
        flags(&backend, "orders", VersionOptions::Published).await,
        None
    );
    assert_eq!(
        flags(&backend, "orders", VersionOptions::Specific(2)).await,
        Some((2, false, false))
    );
    assert_eq!(
        flags(&backend, "orders", VersionOptions::Latest).await,
        Some((3, false, true))
    );
    // A second unpublish finds nothing published: a conflict, and no retract is sent.
    let before = elsa.requests().len();
    let error = backend.unpublish(&acme(), "orders").await.unwrap_err();
    assert!(matches!(error, WorkflowError::Conflict { .. }), "{error:?}");
    assert_eq!(
        since(&elsa, before),
        [read_published("orders"), read_latest("orders")]
    );
}

#[tokio::test]
async fn unpublishing_a_definition_that_is_not_published_is_a_conflict_and_sends_no_retract() {
    let (elsa, backend) = seeded().await;
    let before = elsa.requests().len();
    let error = backend.unpublish(&acme(), "drafty").await.unwrap_err();
    match &error {
        WorkflowError::Conflict { message } => {
            assert_eq!(message, "workflow definition 'drafty' is not published");
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(
        since(&elsa, before),
        [read_published("drafty"), read_latest("drafty")],
        "the published and the latest versions are looked up"
    );
    assert_eq!(
        flags(&backend, "drafty", VersionOptions::Latest).await,
        Some((1, false, true))
    );
}

#[tokio::test]
async fn delete_removes_every_version_and_elsa_deletes_the_instances_with_them() {
    let (elsa, backend) = seeded().await;
    let before = elsa.requests().len();
    backend.delete(&acme(), "orders").await.unwrap();
    assert_eq!(
        since(&elsa, before),
        [request(
            "DELETE",
            "/elsa/api/workflow-definitions/orders",
            None
        )]
    );
    for version in [
        VersionOptions::Latest,
        VersionOptions::Published,
        VersionOptions::Specific(1),
    ] {
        assert!(definition(&backend, "orders", version).await.is_none());
    }
    let versions = WorkflowDefinitionStore::versions(&backend, &acme(), "orders")
        .await
        .unwrap();
    assert!(versions.is_empty(), "{versions:?}");
    // Elsa's `WorkflowDefinitionDeleting` handler deletes the definition's instances.
    assert!(instance(&backend, "run-faulted").await.is_none());
    assert!(instance(&backend, "run-waiting").await.is_none());
    // Other definitions and their instances stay.
    assert_eq!(
        flags(&backend, "billing", VersionOptions::Latest).await,
        Some((1, true, true))
    );
    assert!(instance(&backend, "run-done").await.is_some());
    // Deleting it again: nothing is there.
    assert_not_found(
        backend.delete(&acme(), "orders").await,
        "workflow definition 'orders'",
    );
}

#[tokio::test]
async fn unknown_definitions_are_not_found() {
    let (elsa, backend) = seeded().await;
    let what = "workflow definition 'no-such-definition'";

    let before = elsa.requests().len();
    assert_not_found(
        backend.publish(&acme(), "no-such-definition", 1).await,
        what,
    );
    assert_eq!(
        since(&elsa, before),
        [request(
            "GET",
            "/elsa/api/workflow-definitions/by-definition-id/no-such-definition?versionOptions=Latest",
            None
        )],
        "no publish is sent for a definition that is not there"
    );

    // Unpublish looks up the published and the latest version and sends no retract.
    let before = elsa.requests().len();
    assert_not_found(backend.unpublish(&acme(), "no-such-definition").await, what);
    assert_eq!(
        since(&elsa, before),
        [
            read_published("no-such-definition"),
            read_latest("no-such-definition")
        ]
    );

    let before = elsa.requests().len();
    assert_not_found(backend.delete(&acme(), "no-such-definition").await, what);
    assert_eq!(
        since(&elsa, before),
        [request(
            "DELETE",
            "/elsa/api/workflow-definitions/no-such-definition",
            None
        )]
    );
}

#[tokio::test]
async fn another_tenant_and_ids_that_name_nothing_are_not_found_without_a_request() {
    let (elsa, backend) = seeded().await;
    let globex = TenantId::new("globex");
    let faulted = WorkflowInstance::from_value(instances().remove(0)).unwrap();
    let before = elsa.requests().len();

    let instance_what = "workflow instance 'run-faulted'";
    assert_not_found(backend.cancel(&globex, "run-faulted").await, instance_what);
    assert_not_found(backend.retry(&globex, "run-faulted").await, instance_what);
    assert_not_found(
        backend.restart(&globex, &faulted).await,
        "workflow definition 'orders'",
    );
    let definition_what = "workflow definition 'orders'";
    assert_not_found(backend.publish(&globex, "orders", 3).await, definition_what);
    assert_not_found(backend.unpublish(&globex, "orders").await, definition_what);
    assert_not_found(backend.delete(&globex, "orders").await, definition_what);

    // Ids a URL cannot carry as one segment name nothing in Elsa.
    for id in ["", ".", ".."] {
        let instance_what = format!("workflow instance '{id}'");
        let definition_what = format!("workflow definition '{id}'");
        assert_not_found(backend.cancel(&acme(), id).await, &instance_what);
        assert_not_found(backend.retry(&acme(), id).await, &instance_what);
        assert_not_found(backend.publish(&acme(), id, 1).await, &definition_what);
        assert_not_found(backend.unpublish(&acme(), id).await, &definition_what);
        assert_not_found(backend.delete(&acme(), id).await, &definition_what);
    }
    let without_definition = WorkflowInstance::from_value(json!({
        "id": "orphan", "status": "Finished", "subStatus": "Faulted"
    }))
    .unwrap();
    assert_not_found(
        backend.restart(&acme(), &without_definition).await,
        "workflow definition ''",
    );

    assert_eq!(since(&elsa, before), [], "nothing was sent");
    // Nothing changed either.
    assert_eq!(
        flags(&backend, "orders", VersionOptions::Published).await,
        Some((2, true, false))
    );
    let faulted = instance(&backend, "run-faulted")
        .await
        .expect("the instance");
    assert_eq!(faulted.sub_status(), WorkflowSubStatus::Faulted);
}

/// Elsa's cancel and retry endpoints answer 200 for an instance id they do not store (the
/// cancellation service and the retry endpoint skip it), so the backend reads the instance
/// first: an unknown one is [`WorkflowError::NotFound`] and neither operation is sent.
#[tokio::test]
async fn cancel_and_retry_of_an_unknown_instance_are_not_found_and_send_only_the_read() {
    let (elsa, backend) = seeded().await;
    let stored = elsa.instances();
    let what = "workflow instance 'no-such-run'";
    let before = elsa.requests().len();
    assert_not_found(backend.cancel(&acme(), "no-such-run").await, what);
    assert_eq!(since(&elsa, before), [read_instance("no-such-run")]);
    let before = elsa.requests().len();
    assert_not_found(backend.retry(&acme(), "no-such-run").await, what);
    assert_eq!(since(&elsa, before), [read_instance("no-such-run")]);
    assert_eq!(elsa.instances(), stored, "nothing changed");
}

/// Elsa's retry answers 200 with one result per instance; a result is successful only when
/// its alteration log has an entry at `Warning` or below. An instance without incidents has
/// no activity to schedule, logs nothing and so fails: the backend reports it.
#[tokio::test]
async fn a_retry_elsa_reports_as_unsuccessful_is_a_backend_error() {
    let (elsa, backend) = seeded().await;
    let before = elsa.requests().len();
    let message = backend_message(backend.retry(&acme(), "run-done").await);
    assert!(
        message.contains("could not schedule the retry of workflow instance 'run-done'"),
        "{message}"
    );
    assert_eq!(
        since(&elsa, before),
        [
            read_instance("run-done"),
            request(
                "POST",
                "/elsa/api/alterations/workflows/retry",
                Some(json!({"workflowInstanceIds": ["run-done"]}))
            ),
        ]
    );
    assert_eq!(
        run_status(&backend, "run-done").await,
        (WorkflowStatus::Finished, WorkflowSubStatus::Finished),
        "nothing was scheduled"
    );
    // The same for a suspended instance: no incident, nothing to retry.
    let message = backend_message(backend.retry(&acme(), "run-waiting").await);
    assert!(message.contains("'run-waiting'"), "{message}");
    assert_eq!(
        run_status(&backend, "run-waiting").await,
        (WorkflowStatus::Running, WorkflowSubStatus::Suspended)
    );
}

/// A 404 from cancel or retry once the instance was found means the server lacks the
/// endpoint (Elsa 3.0 has no cancel; retry needs the alterations module): a backend error,
/// not a missing instance.
#[tokio::test]
async fn a_server_without_the_cancel_or_retry_endpoint_is_a_backend_error() {
    let (elsa, backend) = seeded().await;
    elsa.without_cancel_endpoint();
    let before = elsa.requests().len();
    let message = backend_message(backend.cancel(&acme(), "run-waiting").await);
    assert!(
        message.contains("workflow instance 'run-waiting'"),
        "{message}"
    );
    assert!(message.contains("no endpoint"), "{message}");
    assert_eq!(
        since(&elsa, before),
        [
            read_instance("run-waiting"),
            request(
                "POST",
                "/elsa/api/cancel/workflow-instances/run-waiting",
                None
            ),
        ]
    );
    assert_eq!(
        run_status(&backend, "run-waiting").await,
        (WorkflowStatus::Running, WorkflowSubStatus::Suspended)
    );
    // An unknown instance is still not found, and nothing is posted.
    let before = elsa.requests().len();
    assert_not_found(
        backend.cancel(&acme(), "no-such-run").await,
        "workflow instance 'no-such-run'",
    );
    assert_eq!(since(&elsa, before), [read_instance("no-such-run")]);

    elsa.without_alterations_module();
    let before = elsa.requests().len();
    let message = backend_message(backend.retry(&acme(), "run-faulted").await);
    assert!(
        message.contains("workflow instance 'run-faulted'"),
        "{message}"
    );
    assert!(message.contains("no endpoint"), "{message}");
    assert_eq!(
        since(&elsa, before),
        [
            read_instance("run-faulted"),
            request(
                "POST",
                "/elsa/api/alterations/workflows/retry",
                Some(json!({"workflowInstanceIds": ["run-faulted"]}))
            ),
        ]
    );
    assert_eq!(
        run_status(&backend, "run-faulted").await,
        (WorkflowStatus::Finished, WorkflowSubStatus::Faulted)
    );
}

/// The stand-in's publish and retract refuse a `POST` without a JSON body with 415, as
/// FastEndpoints 7 does for request types that bind only route values; the backend's `{}`
/// gets through (the tests above).
#[tokio::test]
async fn publish_and_retract_refuse_a_post_without_a_json_body() {
    let (elsa, backend) = seeded().await;
    let client = reqwest::Client::new();
    for action in ["publish", "retract"] {
        let url = format!(
            "{}elsa/api/workflow-definitions/orders/{action}",
            elsa.url()
        );
        let bare = client
            .post(&url)
            .header("Authorization", authorization())
            .send()
            .await
            .unwrap();
        assert_eq!(bare.status(), reqwest::StatusCode::UNSUPPORTED_MEDIA_TYPE);
        let text = client
            .post(&url)
            .header("Authorization", authorization())
            .header("Content-Type", "text/plain")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(text.status(), reqwest::StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }
    // Nothing changed.
    assert_eq!(
        flags(&backend, "orders", VersionOptions::Published).await,
        Some((2, true, false))
    );
    assert_eq!(
        flags(&backend, "orders", VersionOptions::Latest).await,
        Some((3, false, true))
    );
}

/// `unpublish` of a definition this backend does not hold (unknown in its tenant, another
/// tenant's, an id that names nothing) is `NotFound`, as `publish` and `delete` answer and
/// as the in-memory backend answers; only an existing, unpublished one is a `Conflict`.
#[tokio::test]
async fn unpublishing_what_the_backend_does_not_hold_is_not_found() {
    let (elsa, backend) = seeded().await;
    let before = elsa.requests().len();
    assert_not_found(
        backend.unpublish(&acme(), "no-such-definition").await,
        "workflow definition 'no-such-definition'",
    );
    assert!(
        since(&elsa, before)
            .iter()
            .all(|r| !r.path_and_query.ends_with("/retract")),
        "no retract is sent"
    );
    let before = elsa.requests().len();
    assert_not_found(
        backend.unpublish(&TenantId::new("globex"), "orders").await,
        "workflow definition 'orders'",
    );
    for id in ["", ".", ".."] {
        assert_not_found(
            backend.unpublish(&acme(), id).await,
            &format!("workflow definition '{id}'"),
        );
    }
    assert_eq!(since(&elsa, before), [], "nothing was sent");
}
