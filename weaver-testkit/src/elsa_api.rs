//! A stand-in for Elsa Server's REST API, served over a real socket on `127.0.0.1`, for
//! testing clients of Elsa (the `elsa-workflows` Elsa Server backend and the `weaver` server
//! wired to it) where no Elsa Server (no .NET) is available.
//!
//! It serves the endpoints Weaver uses under `/elsa/api`, with the request and answer shapes
//! of Elsa 3's sources (FastEndpoints endpoints of `Elsa.Workflows.Api`, camelCase JSON,
//! enums as names), and reproduces the behaviour Weaver depends on:
//!
//! - `GET workflow-definitions/by-definition-id/{id}?versionOptions=Latest|Published|{n}`:
//!   the model (with `links`), 404 when no version matches;
//! - `GET workflow-definitions?versionOptions&searchTerm&definitionIds&page&pageSize`:
//!   summaries ordered by name, `{"items", "totalCount", "links"}`; `searchTerm` matches
//!   name, description, version id and definition id (without regard to case here),
//!   `definitionIds` (repeated) keeps the versions of those definitions;
//! - `GET workflow-definitions/{definitionId}/versions`: every stored version as Elsa's store
//!   entity (the graph serialised in `stringData`, `materializerName: "Json"`), newest first,
//!   as a JSON array; 404 when the definition has none (`ListVersions`);
//! - `GET workflow-definitions/many-by-id?ids=…`: models, `{"items", "count"}`;
//! - `GET workflow-definitions/by-id/{id}`: the model of the version with that id
//!   (`GetWorkflowDefinitionById`), 404 when none;
//! - `POST workflow-definitions` `{"model", "publish"}`: Elsa's draft semantics (a save over
//!   an unpublished latest version replaces it in place; after a published one it adds the
//!   next version; `publish` publishes it and un-publishes the others), answering
//!   `{"workflowDefinition", "alreadyPublished", "consumingWorkflowCount", "validationErrors"}`;
//! - `POST workflow-instances` (`page`, `pageSize`, `searchTerm` (Elsa 3.3+: the name
//!   without regard to case; instance, definition, definition version and correlation ids
//!   with regard to case, as a case-sensitive database compares them), `correlationId`
//!   (exact), `definitionId(s)`, `status(es)`, `subStatus(es)`, `hasIncidents`
//!   (`incidentCount > 0`, or `= 0` when false), `orderBy` (`Created` or
//!   `UpdatedAt`) and `orderDirection`, `timestampFilters` with Elsa's reading of a midnight
//!   timestamp as a whole day, UTC): instance summaries newest first, `{"items",
//!   "totalCount"}`; 400 for a negative page, a page size below 1, an unknown status or
//!   timestamp column;
//! - `GET workflow-instances/{id}`: the instance model (with `workflowState`), 404 if absent;
//! - `GET activity-executions/list?workflowInstanceId&activityNodeId&completed`: the
//!   instance's `ActivityExecutionRecord`s ordered by `startedAt`, `{"items", "count"}`; a
//!   filter that is not given matches everything, as Elsa's filter does;
//! - `GET workflow-instances/{id}/journal?page&pageSize|skip&take`: the instance's execution
//!   log records (`ExecutionLogRecord`, node id as `nodeId`) by `sequence`, `{"items",
//!   "totalCount"}`; page 0 of 100 when neither pair is given (`PageArgs.From`);
//! - `GET descriptors/activities`: descriptors in Elsa Server's shape (flow and embedded
//!   `ports`, inputs with `type`, `isWrapped`, `uiHint`, and the `isBrowsable`, `isStart`
//!   and `isTerminal` flags, from the catalog shape given or Elsa's defaults), `{"items",
//!   "count"}`;
//! - `POST cancel/workflow-instances/{id}` (no body): the instance, and its child instances
//!   (`parentWorkflowInstanceId`), unless already `Finished`, become `Finished`/`Cancelled`
//!   (in the model and its `workflowState`); 200 with an empty body, **also for an unknown
//!   id**, as Elsa's cancellation service ignores one (Elsa 3.1+; 404 after
//!   [`ElsaApiStandIn::without_cancel_endpoint`], as on Elsa 3.0, which has no such route);
//! - `POST alterations/workflows/retry` `{"workflowInstanceIds": [...], "activityIds"?}`:
//!   `{"results": [...]}` with one `RunAlterationsResult` per instance found, ids not stored
//!   left out (still 200), as Elsa does. Each instance found gets the activities of its
//!   incidents (or the `activityIds` given) scheduled, one `Information` log entry each, and
//!   becomes `Running`/`Executing`; `isSuccessful` is Elsa's "some log entry at `Warning` or
//!   below", so an instance with nothing to schedule (no incidents) logs nothing, answers
//!   `isSuccessful: false` and is left as it was here. A body without the id list is 400
//!   here (Elsa would read it as "every instance"); 404 after
//!   [`ElsaApiStandIn::without_alterations_module`] (a server without `Elsa.Alterations`);
//! - `POST workflow-definitions/{definitionId}/dispatch` `{"versionOptions"?, "correlationId"?,
//!   "input"?, "instanceId"?}`: a new instance of the version selected (`Published` when not
//!   given), `Running`/`Pending`, stored at once (Elsa runs it in the background),
//!   `{"workflowInstanceId"}`; 404 when no version matches, 400 for input that is not an
//!   object or `versionOptions` that is not text Elsa reads;
//! - `POST workflow-definitions/{definitionId}/publish` (a JSON body, see below): publishes
//!   the latest version (the others are neither published nor latest any more),
//!   `{"workflowDefinition", "alreadyPublished", "consumingWorkflowCount",
//!   "validationErrors"}` (Elsa 3.2+; nothing changes when it already was); 404 when the
//!   definition has no version;
//! - `POST workflow-definitions/{definitionId}/retract` (a JSON body, see below): no version
//!   is published any more, answering the model of the version that was; 400 with
//!   FastEndpoints' error body when none was, 404 when the definition has no version;
//! - `DELETE workflow-definitions/{definitionId}`: every version goes, and with them the
//!   definition's instances and their execution records and journal (Elsa's
//!   `DeleteWorkflowInstances` handler of `WorkflowDefinitionDeleting`); 204, 404 when
//!   there was no version.
//!
//! Publish and retract answer 415 (Unsupported Media Type, empty body) to a request whose
//! `Content-Type` is not JSON, a body-less `POST` included, as FastEndpoints 7 does for an
//! endpoint whose request type binds only route values (Elsa's own API client posts `{}` as
//! JSON to them). Elsa's cancel endpoint allows a body-less `POST`, and so does the stand-in;
//! its other `POST` endpoints read whatever body comes, whatever its `Content-Type`.
//!
//! Every request needs the configured `Authorization` header (401 without it) and, when set,
//! the `X-Tenant-Id` header. Tests can make every request fail with a status
//! ([`ElsaApiStandIn::fail_with`]; the error body echoes the request's `Authorization` header,
//! as a careless error page would), have another client save just before the next save
//! ([`ElsaApiStandIn::concurrent_save_before_next`]), take the cancel or retry endpoint away
//! ([`ElsaApiStandIn::without_cancel_endpoint`],
//! [`ElsaApiStandIn::without_alterations_module`]), and read back every request received.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{OriginalUri, Path, Query, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use chrono::{DateTime, TimeDelta, Utc};
use elsa_workflows::{
    DefinitionQuery, InstanceQuery, PageRequest, TenantId, WorkflowDefinitionStore,
    WorkflowInstance, WorkflowInstanceStore, WorkflowStatus, WorkflowSubStatus,
};
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Elsa's API path below the server's URL.
pub const API_PATH: &str = "/elsa/api";

/// Inputs whose editor hint Elsa Server writes as `dynamic-outcomes` (their values become
/// outcomes): `FlowFork.Branches`, and `PossibleOutcomes` of the script activities.
const DYNAMIC_OUTCOME_INPUTS: [(&str, &str); 4] = [
    ("Elsa.FlowFork", "Branches"),
    ("Elsa.RunJavaScript", "PossibleOutcomes"),
    ("Elsa.RunCSharp", "PossibleOutcomes"),
    ("Elsa.RunPython", "PossibleOutcomes"),
];

/// A request the stand-in received.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path and query, for example `/elsa/api/workflow-definitions?page=0&pageSize=5`.
    pub path_and_query: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// The `X-Tenant-Id` header, if any.
    pub tenant: Option<String>,
    /// The JSON body, if any.
    pub body: Option<Value>,
}

/// What another Elsa client saves just before the stand-in handles the next save.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConcurrentSave {
    /// A new published version of the same definition.
    PublishedVersion,
    /// A draft of the same definition (a new version after a published one, or the draft
    /// replaced in place).
    Draft,
}

/// The stand-in's data and switches.
#[derive(Default)]
struct Data {
    authorization: String,
    tenant: Option<String>,
    /// Versions of each definition, ordered by version number.
    definitions: BTreeMap<String, Vec<Map<String, Value>>>,
    /// Instance models, in insertion order.
    instances: Vec<Map<String, Value>>,
    /// Activity descriptors in Elsa Server's shape.
    catalog: Vec<Value>,
    /// Activity execution records (`ActivityExecutionRecord`), in insertion order.
    executions: Vec<Map<String, Value>>,
    /// Workflow execution log records as the store holds them (`WorkflowExecutionLogRecord`).
    journal: Vec<Map<String, Value>>,
    requests: Vec<RecordedRequest>,
    failure: Option<StatusCode>,
    concurrent: Option<ConcurrentSave>,
    /// The cancel endpoint is not there (Elsa 3.0).
    no_cancel_endpoint: bool,
    /// The alterations module is not installed (no retry endpoint).
    no_alterations_module: bool,
    next_id: u64,
}

type Shared = Arc<Mutex<Data>>;

fn lock(shared: &Shared) -> MutexGuard<'_, Data> {
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A running stand-in for Elsa Server's API. See the [module documentation](self).
pub struct ElsaApiStandIn {
    url: String,
    data: Shared,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for ElsaApiStandIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElsaApiStandIn")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl ElsaApiStandIn {
    /// An empty Elsa that accepts `Authorization: <authorization>` (for example
    /// `"ApiKey the-key"`).
    ///
    /// # Panics
    ///
    /// When no port on 127.0.0.1 can be bound.
    pub async fn start(authorization: &str) -> Self {
        let data: Shared = Arc::new(Mutex::new(Data {
            authorization: authorization.to_owned(),
            ..Data::default()
        }));
        let api = Router::new()
            .route(
                "/workflow-definitions",
                get(list_definitions).post(save_definition),
            )
            .route("/workflow-definitions/many-by-id", get(definitions_by_id))
            .route(
                "/workflow-definitions/by-id/{id}",
                get(definition_by_version_id),
            )
            .route(
                "/workflow-definitions/by-definition-id/{definition_id}",
                get(definition_by_definition_id),
            )
            .route(
                "/workflow-definitions/{definition_id}/versions",
                get(definition_versions),
            )
            .route(
                "/workflow-definitions/{definition_id}",
                delete(delete_definition),
            )
            .route(
                "/workflow-definitions/{definition_id}/publish",
                post(publish_definition),
            )
            .route(
                "/workflow-definitions/{definition_id}/retract",
                post(retract_definition),
            )
            .route(
                "/workflow-definitions/{definition_id}/dispatch",
                post(dispatch_definition),
            )
            .route("/workflow-instances", post(list_instances))
            .route("/workflow-instances/{id}", get(instance_by_id))
            .route("/workflow-instances/{id}/journal", get(instance_journal))
            .route("/cancel/workflow-instances/{id}", post(cancel_instance))
            .route("/alterations/workflows/retry", post(retry_instances))
            .route("/activity-executions/list", get(activity_executions))
            .route("/descriptors/activities", get(activity_descriptors))
            .layer(middleware::from_fn_with_state(data.clone(), gate))
            .with_state(data.clone());
        let app = Router::new().nest(API_PATH, api);
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free port on 127.0.0.1");
        let address = listener.local_addr().expect("a bound address");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        Self {
            url: format!("http://{address}/"),
            data,
            stop: Some(stop),
            task,
        }
    }

    /// An Elsa holding every readable fixture (found by listing the fixture folders): the
    /// definitions with all their versions, the instances (a creation time is given to those
    /// without one, as Elsa's store always has one) and the activity catalog.
    ///
    /// # Panics
    ///
    /// When the fixtures cannot be read.
    pub async fn with_fixtures(authorization: &str) -> Self {
        let stand_in = Self::start(authorization).await;
        let tenant = TenantId::new("fixtures");
        let backend = crate::fixture_backend(&[tenant.as_str()]);
        let all = PageRequest::new(0, PageRequest::MAX_LIMIT);
        let listed = WorkflowDefinitionStore::search(
            &backend,
            &tenant,
            &DefinitionQuery {
                page: all,
                ..DefinitionQuery::default()
            },
        )
        .await
        .expect("the fixture definitions");
        for row in &listed.items {
            for version in backend.definition_versions(&tenant, &row.definition_id) {
                stand_in.insert_definition(version.to_value());
            }
        }
        let instances = WorkflowInstanceStore::search(
            &backend,
            &tenant,
            &InstanceQuery {
                page: all,
                ..InstanceQuery::default()
            },
        )
        .await
        .expect("the fixture instances");
        let base: DateTime<Utc> = "2024-06-01T09:00:00Z".parse().expect("a timestamp");
        for (i, instance) in instances.items.iter().enumerate() {
            let hours = i64::try_from(i).unwrap_or_default();
            stand_in.insert_instance(instance, base + TimeDelta::hours(hours));
        }
        for file in crate::fixture_files("activities") {
            let text = std::fs::read_to_string(&file).expect("a readable catalog");
            let catalog: Value = serde_json::from_str(&text).expect("a JSON catalog");
            for descriptor in catalog.as_array().into_iter().flatten() {
                stand_in.insert_descriptor(descriptor);
            }
        }
        stand_in
    }

    /// The server's URL (`http://127.0.0.1:<port>/`); the API is under [`API_PATH`].
    pub fn url(&self) -> &str {
        &self.url
    }

    /// From now on, requests also need `X-Tenant-Id: <tenant>` (400 otherwise, as Elsa's
    /// header tenant resolver would leave the request without a tenant).
    pub fn require_tenant_header(&self, tenant: &str) {
        lock(&self.data).tenant = Some(tenant.to_owned());
    }

    /// Stores one definition version as given (a version id and creation time are added when
    /// missing; a stored version with the same version number is replaced).
    pub fn insert_definition(&self, mut document: Value) {
        let mut data = lock(&self.data);
        let id = data.new_id();
        let Some(map) = document.as_object_mut() else {
            return;
        };
        if map
            .get("id")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            map.insert("id".into(), Value::String(id));
        }
        map.entry("createdAt")
            .or_insert_with(|| json!("2024-01-01T00:00:00+00:00"));
        let definition_id = map
            .get("definitionId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let version = version_of(map);
        let versions = data.definitions.entry(definition_id).or_default();
        versions.retain(|v| version_of(v) != version);
        versions.push(map.clone());
        versions.sort_by_key(version_of);
    }

    /// Stores an instance as Elsa's API returns it (`workflowState` and header fields),
    /// created at `created` unless it says when.
    pub fn insert_instance(&self, instance: &WorkflowInstance, created: DateTime<Utc>) {
        let state = instance
            .workflow_state()
            .cloned()
            .unwrap_or_else(|| instance.as_json().clone());
        let created = instance.created_at().unwrap_or(created);
        let model = json!({
            "id": instance.id(),
            "definitionId": instance.definition_id(),
            "definitionVersionId": instance.definition_version_id(),
            "version": instance.definition_version().unwrap_or(1),
            "parentWorkflowInstanceId": instance.parent_instance_id(),
            "workflowState": state,
            "status": instance.status().as_str(),
            "subStatus": instance.sub_status().as_str(),
            "isExecuting": false,
            "correlationId": instance.correlation_id(),
            "name": instance.name(),
            "incidentCount": instance.incident_count(),
            "isSystem": false,
            "createdAt": created.to_rfc3339(),
            "updatedAt": instance.updated_at().unwrap_or(created).to_rfc3339(),
            "finishedAt": instance.finished_at().map(|t| t.to_rfc3339()),
        });
        let mut data = lock(&self.data);
        data.instances.retain(|i| i.get("id") != model.get("id"));
        if let Value::Object(model) = model {
            data.instances.push(model);
        }
    }

    /// Stores one activity execution record as Elsa's activity execution store holds it
    /// (camelCase `ActivityExecutionRecord`, naming its `workflowInstanceId`).
    pub fn insert_activity_execution(&self, record: Value) {
        if let Value::Object(record) = record {
            lock(&self.data).executions.push(record);
        }
    }

    /// Stores one workflow execution log record as Elsa's log store holds it (camelCase
    /// `WorkflowExecutionLogRecord`: `workflowInstanceId`, `activityNodeId`, `sequence`, ...).
    pub fn insert_journal_entry(&self, entry: Value) {
        if let Value::Object(entry) = entry {
            lock(&self.data).journal.push(entry);
        }
    }

    /// Adds one descriptor given in the catalog shape of Weaver's fixtures, converted to the
    /// shape Elsa Server answers with.
    pub fn insert_descriptor(&self, descriptor: &Value) {
        let converted = elsa_descriptor(descriptor);
        lock(&self.data).catalog.push(converted);
    }

    /// Every stored version of a definition, oldest first.
    pub fn versions(&self, definition_id: &str) -> Vec<Value> {
        lock(&self.data)
            .definitions
            .get(definition_id)
            .map(|versions| versions.iter().cloned().map(Value::Object).collect())
            .unwrap_or_default()
    }

    /// The stored instance models, in insertion order.
    pub fn instances(&self) -> Vec<Value> {
        lock(&self.data)
            .instances
            .iter()
            .cloned()
            .map(Value::Object)
            .collect()
    }

    /// The stored descriptors, in Elsa Server's shape.
    pub fn catalog(&self) -> Vec<Value> {
        lock(&self.data).catalog.clone()
    }

    /// Answers every request with `status` from now on (`None` restores normal service).
    pub fn fail_with(&self, status: Option<u16>) {
        lock(&self.data).failure =
            status.map(|s| StatusCode::from_u16(s).expect("an HTTP status code"));
    }

    /// From now on, `POST cancel/workflow-instances/{id}` answers 404, as Elsa 3.0 (which has
    /// no cancel endpoint) does.
    pub fn without_cancel_endpoint(&self) {
        lock(&self.data).no_cancel_endpoint = true;
    }

    /// From now on, `POST alterations/workflows/retry` answers 404, as a server without the
    /// `Elsa.Alterations` module does.
    pub fn without_alterations_module(&self) {
        lock(&self.data).no_alterations_module = true;
    }

    /// Has another client save the same definition just before the next save is handled.
    pub fn concurrent_save_before_next(&self, save: ConcurrentSave) {
        lock(&self.data).concurrent = Some(save);
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.data).requests.clone()
    }

    /// Stops serving and waits for the server task.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

impl Drop for ElsaApiStandIn {
    fn drop(&mut self) {
        if self.stop.is_some() {
            self.task.abort();
        }
    }
}

impl Data {
    /// A fresh id in the 16-hex-digit style of Elsa's identity generator.
    fn new_id(&mut self) -> String {
        self.next_id += 1;
        format!("{:016x}", 0x5eed_0000_0000_0000_u64 + self.next_id)
    }
}

fn version_of(map: &Map<String, Value>) -> i64 {
    map.get("version").and_then(Value::as_i64).unwrap_or(1)
}

fn flag(map: &Map<String, Value>, name: &str) -> bool {
    map.get(name).and_then(Value::as_bool).unwrap_or(false)
}

fn text<'a>(map: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    map.get(name).and_then(Value::as_str)
}

/// FastEndpoints' error answer.
fn errors(status: StatusCode, messages: &[String]) -> Response {
    (
        status,
        axum::Json(json!({
            "statusCode": status.as_u16(),
            "message": "One or more errors occurred!",
            "errors": {"generalErrors": messages},
        })),
    )
        .into_response()
}

/// Records the request, then applies failure injection, authentication and the tenant header.
async fn gate(State(data): State<Shared>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = to_bytes(body, 16 * 1024 * 1024).await.unwrap_or_default();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let authorization = header("authorization");
    let tenant = header("x-tenant-id");
    let (failure, expected_authorization, expected_tenant) = {
        let mut data = lock(&data);
        data.requests.push(RecordedRequest {
            method: parts.method.to_string(),
            // The URI as sent: nesting strips the API path from `parts.uri`.
            path_and_query: parts
                .extensions
                .get::<OriginalUri>()
                .map_or(&parts.uri, |original| &original.0)
                .path_and_query()
                .map(|p| p.as_str().to_owned())
                .unwrap_or_default(),
            authorization: authorization.clone(),
            tenant: tenant.clone(),
            body: serde_json::from_slice(&bytes).ok(),
        });
        (
            data.failure,
            data.authorization.clone(),
            data.tenant.clone(),
        )
    };
    if let Some(status) = failure {
        let echoed = authorization.unwrap_or_default();
        return (
            status,
            axum::Json(json!({
                "statusCode": status.as_u16(),
                "message": format!("Unhandled exception while serving a request with Authorization: {echoed}"),
                "errors": {"stackTrace": ["at Elsa.Workflows.Api.Endpoints (stand-in)"]},
            })),
        )
            .into_response();
    }
    if authorization.as_deref() != Some(expected_authorization.as_str()) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    if let Some(expected) = expected_tenant
        && tenant.as_deref() != Some(expected.as_str())
    {
        return errors(
            StatusCode::BAD_REQUEST,
            &["The request does not name the tenant.".to_owned()],
        );
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The query's value for `name`, compared without regard to case as FastEndpoints binds.
fn param<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
}

/// Which stored versions `versionOptions` selects (`VersionOptions.FromString`).
#[derive(Clone, Copy)]
enum VersionSelect {
    All,
    Latest,
    Published,
    LatestOrPublished,
    LatestAndPublished,
    Draft,
    Version(i64),
}

impl VersionSelect {
    /// `None` for text Elsa's parser would throw on (a 500 there).
    fn parse(options: Option<&str>) -> Option<Self> {
        Some(match options {
            None | Some("AllVersions") => Self::All,
            Some("Latest") => Self::Latest,
            Some("Published") => Self::Published,
            Some("LatestOrPublished") => Self::LatestOrPublished,
            Some("LatestAndPublished") => Self::LatestAndPublished,
            Some("Draft") => Self::Draft,
            Some(number) => Self::Version(number.trim().parse().ok()?),
        })
    }

    fn matches(self, version: &Map<String, Value>) -> bool {
        let (latest, published) = (flag(version, "isLatest"), flag(version, "isPublished"));
        match self {
            Self::All => true,
            Self::Latest => latest,
            Self::Published => published,
            Self::LatestOrPublished => latest || published,
            Self::LatestAndPublished => latest && published,
            Self::Draft => !published,
            Self::Version(wanted) => version_of(version) == wanted,
        }
    }
}

fn links(kind: &str, id: &str) -> Value {
    json!([{"href": format!("{API_PATH}/{kind}/by-id/{id}"), "rel": "self", "method": "GET"}])
}

/// A stored version as `LinkedWorkflowDefinitionModel`.
fn definition_model(version: &Map<String, Value>) -> Value {
    let mut model = version.clone();
    let id = text(version, "id").unwrap_or_default();
    model.insert("links".into(), links("workflow-definitions", id));
    Value::Object(model)
}

/// A stored version as `LinkedWorkflowDefinitionSummary`.
fn definition_summary(version: &Map<String, Value>) -> Value {
    let id = text(version, "id").unwrap_or_default();
    json!({
        "id": id,
        "definitionId": version.get("definitionId"),
        "name": version.get("name"),
        "description": version.get("description"),
        "version": version_of(version),
        "toolVersion": version.get("toolVersion"),
        "isLatest": flag(version, "isLatest"),
        "isPublished": flag(version, "isPublished"),
        "providerName": "Default",
        "materializerName": "Json",
        "createdAt": version.get("createdAt"),
        "isReadonly": false,
        "isSystem": false,
        "links": links("workflow-definitions", id),
    })
}

async fn definition_by_definition_id(
    State(data): State<Shared>,
    Path(definition_id): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    let options = param(&query, "versionOptions").unwrap_or("Latest");
    let Some(select) = VersionSelect::parse(Some(options)) else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let data = lock(&data);
    let found = data
        .definitions
        .get(&definition_id)
        .and_then(|versions| versions.iter().rev().find(|v| select.matches(v)));
    match found {
        Some(version) => axum::Json(definition_model(version)).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn list_definitions(
    State(data): State<Shared>,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    let Some(select) = VersionSelect::parse(param(&query, "versionOptions")) else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let number = |name: &str| param(&query, name).map(str::parse::<i64>);
    let (page, size) = match (number("page"), number("pageSize")) {
        (Some(Err(_)), _) | (_, Some(Err(_))) => {
            return errors(StatusCode::BAD_REQUEST, &["Invalid paging.".to_owned()]);
        }
        (page, size) => (page.and_then(Result::ok), size.and_then(Result::ok)),
    };
    let term = param(&query, "searchTerm")
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase);
    let definition_ids: Vec<&str> = query
        .iter()
        .filter(|(key, _)| key.eq_ignore_ascii_case("definitionIds"))
        .map(|(_, value)| value.as_str())
        .collect();
    let data = lock(&data);
    let mut rows: Vec<&Map<String, Value>> = data
        .definitions
        .values()
        .flatten()
        .filter(|v| select.matches(v))
        .filter(|v| {
            definition_ids.is_empty()
                || text(v, "definitionId").is_some_and(|id| definition_ids.contains(&id))
        })
        .filter(|v| {
            term.as_deref().is_none_or(|term| {
                ["name", "description", "id", "definitionId"]
                    .iter()
                    .filter_map(|field| text(v, field))
                    .any(|field| field.to_lowercase().contains(term))
            })
        })
        .collect();
    // Elsa orders by name (ascending; a missing name first, as the database sorts null).
    rows.sort_by(|a, b| text(a, "name").cmp(&text(b, "name")));
    let total = rows.len();
    let items: Vec<Value> = window(rows, page, size)
        .into_iter()
        .map(definition_summary)
        .collect();
    axum::Json(json!({"items": items, "totalCount": total, "links": []})).into_response()
}

/// A stored version as Elsa's store entity (`WorkflowDefinition`): the graph serialised in
/// `stringData` for the JSON materializer instead of a `root`.
fn definition_entity(version: &Map<String, Value>) -> Value {
    let mut entity = version.clone();
    let root = entity.remove("root").unwrap_or(Value::Null);
    entity.insert("materializerName".into(), json!("Json"));
    entity.insert("stringData".into(), Value::String(root.to_string()));
    entity.insert("version".into(), json!(version_of(version)));
    for field in ["isLatest", "isPublished", "isReadonly", "isSystem"] {
        entity.insert(field.into(), Value::Bool(flag(version, field)));
    }
    Value::Object(entity)
}

/// `ListVersions`: every version of the definition, newest first; 404 when there is none.
async fn definition_versions(
    State(data): State<Shared>,
    Path(definition_id): Path<String>,
) -> Response {
    let data = lock(&data);
    let versions: Vec<Value> = data
        .definitions
        .get(&definition_id)
        .into_iter()
        .flatten()
        .rev()
        .map(definition_entity)
        .collect();
    if versions.is_empty() {
        return StatusCode::NOT_FOUND.into_response();
    }
    axum::Json(Value::Array(versions)).into_response()
}

/// `PageArgs.FromPage(page, pageSize)`: skip `page * pageSize` (nothing without a page),
/// take `pageSize` (everything without one).
fn window<T>(rows: Vec<T>, page: Option<i64>, size: Option<i64>) -> Vec<T> {
    let skip = match (page, size) {
        (Some(page), Some(size)) => usize::try_from(page * size).unwrap_or(0),
        _ => 0,
    };
    let take = size.map_or(usize::MAX, |s| usize::try_from(s).unwrap_or(0));
    rows.into_iter().skip(skip).take(take).collect()
}

async fn definition_by_version_id(State(data): State<Shared>, Path(id): Path<String>) -> Response {
    let data = lock(&data);
    let found = data
        .definitions
        .values()
        .flatten()
        .find(|v| text(v, "id") == Some(id.as_str()));
    match found {
        Some(version) => axum::Json(definition_model(version)).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn definitions_by_id(
    State(data): State<Shared>,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    let ids: Vec<&str> = query
        .iter()
        .filter(|(key, _)| key.eq_ignore_ascii_case("ids"))
        .map(|(_, value)| value.as_str())
        .collect();
    let data = lock(&data);
    let items: Vec<Value> = data
        .definitions
        .values()
        .flatten()
        .filter(|v| text(v, "id").is_some_and(|id| ids.contains(&id)))
        .map(definition_model)
        .collect();
    axum::Json(json!({"items": items, "count": items.len()})).into_response()
}

/// The fields of a saved model that Elsa's save endpoint copies onto the draft.
const SAVED_FIELDS: [&str; 8] = [
    "variables",
    "inputs",
    "outputs",
    "outcomes",
    "customProperties",
    "options",
    "toolVersion",
    "root",
];

async fn save_definition(State(data): State<Shared>, body: axum::body::Bytes) -> Response {
    let Ok(Value::Object(request)) = serde_json::from_slice::<Value>(&body) else {
        return errors(
            StatusCode::BAD_REQUEST,
            &["The request body is not valid JSON.".to_owned()],
        );
    };
    let Some(Value::Object(model)) = request.get("model") else {
        return errors(StatusCode::BAD_REQUEST, &["model is required.".to_owned()]);
    };
    if let Some(root) = model.get("root")
        && !root.is_null()
        && root.get("type").and_then(Value::as_str).is_none()
    {
        return errors(
            StatusCode::BAD_REQUEST,
            &["root is not an activity.".to_owned()],
        );
    }
    let publish = request.get("publish").and_then(Value::as_bool) == Some(true);
    let mut data = lock(&data);
    let definition_id = match text(model, "definitionId").filter(|id| !id.trim().is_empty()) {
        Some(id) => id.to_owned(),
        None => data.new_id(),
    };
    if let Some(concurrent) = data.concurrent.take()
        && let Some(latest) = data
            .definitions
            .get(&definition_id)
            .and_then(|versions| versions.iter().rev().find(|v| flag(v, "isLatest")))
            .cloned()
    {
        let mut other = latest;
        let name = format!(
            "{} (saved by another client)",
            text(&other, "name").unwrap_or("")
        );
        other.insert("name".into(), Value::String(name));
        save(
            &mut data,
            &definition_id,
            &other,
            concurrent == ConcurrentSave::PublishedVersion,
        );
    }
    let saved = save(&mut data, &definition_id, model, publish);
    axum::Json(json!({
        "workflowDefinition": definition_model(&saved),
        "alreadyPublished": false,
        "consumingWorkflowCount": 0,
        "validationErrors": [],
    }))
    .into_response()
}

/// Elsa's `Post` endpoint over `WorkflowDefinitionPublisher`: `GetDraftAsync` (the latest
/// version itself when unpublished, else a new version after the last one), the model's
/// fields copied on, then `PublishAsync` or `SaveDraftAsync`.
fn save(
    data: &mut Data,
    definition_id: &str,
    model: &Map<String, Value>,
    publish: bool,
) -> Map<String, Value> {
    let new_id = data.new_id();
    let now = Utc::now().to_rfc3339();
    let versions = data
        .definitions
        .entry(definition_id.to_owned())
        .or_default();
    let last_version = versions.iter().map(version_of).max();
    let latest = versions.iter().rev().find(|v| flag(v, "isLatest")).cloned();
    let mut draft = match latest {
        Some(latest) if !flag(&latest, "isPublished") => latest,
        _ => {
            let mut draft = Map::new();
            draft.insert("id".into(), Value::String(new_id));
            draft.insert(
                "definitionId".into(),
                Value::String(definition_id.to_owned()),
            );
            draft.insert("version".into(), json!(last_version.unwrap_or(0) + 1));
            draft.insert("createdAt".into(), Value::String(now));
            draft.insert("isReadonly".into(), Value::Bool(false));
            draft.insert("isSystem".into(), Value::Bool(false));
            draft
        }
    };
    for field in SAVED_FIELDS {
        match model.get(field) {
            Some(value) => draft.insert(field.into(), value.clone()),
            None => draft.remove(field),
        };
    }
    if !draft.contains_key("root") {
        draft.insert(
            "root".into(),
            json!({"id": "Sequence1", "type": "Elsa.Sequence", "version": 1, "activities": []}),
        );
    }
    for field in ["name", "description"] {
        let value = text(model, field).map(|t| Value::String(t.trim().to_owned()));
        draft.insert(field.into(), value.unwrap_or(Value::Null));
    }
    let draft_id = text(&draft, "id").unwrap_or_default().to_owned();
    if publish {
        for version in versions.iter_mut() {
            if flag(version, "isLatest") || flag(version, "isPublished") {
                version.insert("isLatest".into(), Value::Bool(false));
                version.insert("isPublished".into(), Value::Bool(false));
            }
        }
        draft.insert("isPublished".into(), Value::Bool(true));
    } else {
        draft.insert("isPublished".into(), Value::Bool(false));
        for version in versions.iter_mut() {
            let is_last = Some(version_of(version)) == last_version;
            if is_last
                && text(version, "id") != Some(draft_id.as_str())
                && flag(version, "isPublished")
                && flag(version, "isLatest")
            {
                version.insert("isLatest".into(), Value::Bool(false));
            }
        }
    }
    draft.insert("isLatest".into(), Value::Bool(true));
    versions.retain(|v| text(v, "id") != Some(draft_id.as_str()));
    versions.push(draft.clone());
    versions.sort_by_key(version_of);
    draft
}

/// The stored versions of a definition, `None` when it has none (Elsa's 404).
fn versions_of<'a>(
    data: &'a mut Data,
    definition_id: &str,
) -> Option<&'a mut Vec<Map<String, Value>>> {
    data.definitions
        .get_mut(definition_id)
        .filter(|versions| !versions.is_empty())
}

/// Whether the request says its body is JSON (`application/json` or a `+json` type, with
/// any parameters), as ASP.NET's `HasJsonContentType` checks.
fn has_json_content_type(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .map(|media| media.trim().to_ascii_lowercase())
        .is_some_and(|media| media == "application/json" || media.ends_with("+json"))
}

/// `Publish`: the latest version (`VersionOptions.Latest`) is published unless it already
/// is; `WorkflowDefinitionPublisher.PublishAsync` leaves no other version published or
/// latest. 415 without a JSON `Content-Type`.
async fn publish_definition(
    State(data): State<Shared>,
    Path(definition_id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !has_json_content_type(&headers) {
        return StatusCode::UNSUPPORTED_MEDIA_TYPE.into_response();
    }
    let mut data = lock(&data);
    let Some(versions) = versions_of(&mut data, &definition_id) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let Some(latest) = versions.iter().rposition(|v| flag(v, "isLatest")) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let already_published = flag(&versions[latest], "isPublished");
    if !already_published {
        for (index, version) in versions.iter_mut().enumerate() {
            version.insert("isPublished".into(), Value::Bool(index == latest));
            version.insert("isLatest".into(), Value::Bool(index == latest));
        }
    }
    axum::Json(json!({
        "workflowDefinition": definition_model(&versions[latest]),
        "alreadyPublished": already_published,
        "consumingWorkflowCount": 0,
        "validationErrors": [],
    }))
    .into_response()
}

/// `Retract`: the published version is published no more; 400 when none is, 415 without a
/// JSON `Content-Type`.
async fn retract_definition(
    State(data): State<Shared>,
    Path(definition_id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !has_json_content_type(&headers) {
        return StatusCode::UNSUPPORTED_MEDIA_TYPE.into_response();
    }
    let mut data = lock(&data);
    let Some(versions) = versions_of(&mut data, &definition_id) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let mut retracted = None;
    for version in versions.iter_mut().filter(|v| flag(v, "isPublished")) {
        version.insert("isPublished".into(), Value::Bool(false));
        retracted = Some(definition_model(version));
    }
    match retracted {
        Some(model) => axum::Json(model).into_response(),
        None => errors(
            StatusCode::BAD_REQUEST,
            &[format!("Workflow with id {definition_id} is not published")],
        ),
    }
}

/// `Delete`: every version, then (Elsa's `DeleteWorkflowInstances` notification handler)
/// the definition's instances with their activity execution records and journal.
async fn delete_definition(
    State(data): State<Shared>,
    Path(definition_id): Path<String>,
) -> Response {
    let mut data = lock(&data);
    if versions_of(&mut data, &definition_id).is_none() {
        return StatusCode::NOT_FOUND.into_response();
    }
    data.definitions.remove(&definition_id);
    let gone: BTreeSet<String> = data
        .instances
        .iter()
        .filter(|i| text(i, "definitionId") == Some(definition_id.as_str()))
        .filter_map(|i| text(i, "id").map(str::to_owned))
        .collect();
    let kept = |record: &Map<String, Value>| {
        text(record, "workflowInstanceId").is_none_or(|id| !gone.contains(id))
    };
    data.instances
        .retain(|i| text(i, "id").is_none_or(|id| !gone.contains(id)));
    data.executions.retain(kept);
    data.journal.retain(kept);
    StatusCode::NO_CONTENT.into_response()
}

/// `Dispatch`: a new instance of the version `versionOptions` selects (`Published` when
/// absent or blank), stored at once as `Running`/`Pending`.
async fn dispatch_definition(
    State(data): State<Shared>,
    Path(definition_id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let request: Map<String, Value> = if body.is_empty() {
        Map::new()
    } else {
        match serde_json::from_slice(&body) {
            Ok(Value::Object(map)) => map,
            _ => {
                return errors(
                    StatusCode::BAD_REQUEST,
                    &["The request body is not valid JSON.".to_owned()],
                );
            }
        }
    };
    // `VersionOptionsJsonConverter` reads text only; blank text means `Published`.
    let options = match request.get("versionOptions") {
        None | Some(Value::Null) => "Published",
        Some(Value::String(text)) if text.trim().is_empty() => "Published",
        Some(Value::String(text)) => text.as_str(),
        Some(_) => {
            return errors(
                StatusCode::BAD_REQUEST,
                &["versionOptions must be text.".to_owned()],
            );
        }
    };
    let Some(select) = VersionSelect::parse(Some(options)) else {
        return errors(
            StatusCode::BAD_REQUEST,
            &[format!("Invalid version options '{options}'.")],
        );
    };
    let input = match request.get("input") {
        None | Some(Value::Null) => Value::Null,
        Some(Value::Object(input)) => Value::Object(input.clone()),
        Some(_) => {
            return errors(
                StatusCode::BAD_REQUEST,
                &["Input must be a dictionary.".to_owned()],
            );
        }
    };
    let correlation_id = request.get("correlationId").cloned().unwrap_or(Value::Null);
    let mut data = lock(&data);
    let Some(version) = data
        .definitions
        .get(&definition_id)
        .and_then(|versions| versions.iter().rev().find(|v| select.matches(v)))
        .cloned()
    else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let id = match text(&request, "instanceId").filter(|id| !id.is_empty()) {
        Some(id) => id.to_owned(),
        None => data.new_id(),
    };
    let now = Utc::now().to_rfc3339();
    let model = json!({
        "id": id,
        "definitionId": definition_id,
        "definitionVersionId": version.get("id"),
        "version": version_of(&version),
        "parentWorkflowInstanceId": null,
        "workflowState": {
            "id": id,
            "definitionId": definition_id,
            "definitionVersionId": version.get("id"),
            "definitionVersion": version_of(&version),
            "correlationId": correlation_id,
            "status": "Running",
            "subStatus": "Pending",
            "bookmarks": [],
            "incidents": [],
            "input": input,
            "createdAt": now,
            "updatedAt": now,
        },
        "status": "Running",
        "subStatus": "Pending",
        "isExecuting": false,
        "correlationId": correlation_id,
        "name": version.get("name"),
        "incidentCount": 0,
        "isSystem": false,
        "createdAt": now,
        "updatedAt": now,
        "finishedAt": null,
    });
    data.instances
        .retain(|i| text(i, "id") != Some(id.as_str()));
    if let Value::Object(model) = model {
        data.instances.push(model);
    }
    axum::Json(json!({"workflowInstanceId": id})).into_response()
}

/// Sets an instance's status and sub-status, in its model and its `workflowState`, with the
/// update time (and the finish time: now when finished, none otherwise).
fn set_run_status(instance: &mut Map<String, Value>, status: &str, sub_status: &str) {
    let now = Value::String(Utc::now().to_rfc3339());
    let finished = if status == "Finished" {
        now.clone()
    } else {
        Value::Null
    };
    let set = |map: &mut Map<String, Value>| {
        map.insert("status".into(), json!(status));
        map.insert("subStatus".into(), json!(sub_status));
        map.insert("updatedAt".into(), now.clone());
        map.insert("finishedAt".into(), finished.clone());
    };
    set(instance);
    if let Some(Value::Object(state)) = instance.get_mut("workflowState") {
        set(state);
    }
}

/// `Cancel` over `WorkflowCancellationService`: the instance and its children, the finished
/// ones left as they are; always 200 with no body (an unknown id is ignored). 404 when the
/// endpoint is switched off (Elsa 3.0).
async fn cancel_instance(State(data): State<Shared>, Path(id): Path<String>) -> Response {
    let mut data = lock(&data);
    if data.no_cancel_endpoint {
        return StatusCode::NOT_FOUND.into_response();
    }
    let mut pending = vec![id];
    let mut seen = BTreeSet::new();
    while let Some(id) = pending.pop() {
        if !seen.insert(id.clone()) {
            continue;
        }
        for instance in &mut data.instances {
            if text(instance, "id") == Some(id.as_str())
                && text(instance, "status") != Some("Finished")
            {
                set_run_status(instance, "Finished", "Cancelled");
            }
            if text(instance, "parentWorkflowInstanceId") == Some(id.as_str())
                && let Some(child) = text(instance, "id")
            {
                pending.push(child.to_owned());
            }
        }
    }
    StatusCode::OK.into_response()
}

/// The ids of a JSON list of strings.
fn id_list(value: Option<&Value>) -> Option<Vec<String>> {
    value.and_then(Value::as_array).map(|ids| {
        ids.iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    })
}

/// `Retry` (`Elsa.Alterations`): each stored instance named gets the activities of its
/// incidents (or the `activityIds` given) scheduled again and runs on. A result is
/// successful when its log has an entry at `Warning` or below (Elsa's
/// `RunAlterationsResult.IsSuccessful`): with nothing scheduled it has none. 404 without the
/// module.
async fn retry_instances(State(data): State<Shared>, body: axum::body::Bytes) -> Response {
    if lock(&data).no_alterations_module {
        return StatusCode::NOT_FOUND.into_response();
    }
    let request = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Object(map)) => map,
        _ => {
            return errors(
                StatusCode::BAD_REQUEST,
                &["The request body is not valid JSON.".to_owned()],
            );
        }
    };
    let Some(ids) = id_list(request.get("workflowInstanceIds")) else {
        return errors(
            StatusCode::BAD_REQUEST,
            &["workflowInstanceIds is required.".to_owned()],
        );
    };
    let activity_ids = id_list(request.get("activityIds")).filter(|list| !list.is_empty());
    let now = Utc::now().to_rfc3339();
    let mut data = lock(&data);
    let mut results = Vec::new();
    for instance in &mut data.instances {
        let Some(id) = text(instance, "id").map(str::to_owned) else {
            continue;
        };
        if !ids.contains(&id) {
            continue;
        }
        let scheduled = activity_ids.clone().unwrap_or_else(|| {
            let mut faulted: Vec<String> = Vec::new();
            let incidents = instance
                .get("workflowState")
                .and_then(|state| state.get("incidents"))
                .and_then(Value::as_array);
            for activity in incidents
                .into_iter()
                .flatten()
                .filter_map(|incident| incident.get("activityId").and_then(Value::as_str))
            {
                if !faulted.iter().any(|a| a == activity) {
                    faulted.push(activity.to_owned());
                }
            }
            faulted
        });
        if !scheduled.is_empty() {
            set_run_status(instance, "Running", "Executing");
        }
        let entries: Vec<Value> = scheduled
            .iter()
            .map(|activity| {
                json!({
                    "message": format!("Scheduled activity {activity}"),
                    "logLevel": "Information",
                    "timestamp": now,
                })
            })
            .collect();
        // `IsSuccessful`: some entry at `Warning` or below (every entry here is `Information`).
        let successful = !entries.is_empty();
        results.push(json!({
            "workflowInstanceId": id,
            "log": {"logEntries": entries},
            "workflowHasScheduledWork": !scheduled.is_empty(),
            "isSuccessful": successful,
        }));
    }
    axum::Json(json!({"results": results})).into_response()
}

async fn instance_by_id(State(data): State<Shared>, Path(id): Path<String>) -> Response {
    let data = lock(&data);
    match data
        .instances
        .iter()
        .find(|i| text(i, "id") == Some(id.as_str()))
    {
        Some(model) => axum::Json(Value::Object(model.clone())).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// One of Elsa's `TimestampFilter`s, checked against an instance model.
fn timestamp_filter(filter: &Value) -> Result<impl Fn(&Map<String, Value>) -> bool, String> {
    let column = filter.get("column").and_then(Value::as_str).unwrap_or("");
    let column = ["CreatedAt", "UpdatedAt", "FinishedAt"]
        .into_iter()
        .find(|c| c.eq_ignore_ascii_case(column.trim()))
        .ok_or_else(|| {
            "Invalid timestamp filter column. Allowed columns are: CreatedAt, UpdatedAt, FinishedAt."
                .to_owned()
        })?;
    let operator = filter
        .get("operator")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let timestamp: DateTime<Utc> = filter
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
        .ok_or_else(|| "Timestamp filter must be specified.".to_owned())?;
    // A timestamp at midnight means the whole day (`TimeOfDay == TimeSpan.Zero`).
    let zero_time = timestamp.time() == chrono::NaiveTime::MIN;
    let start_day = timestamp;
    let end_day = timestamp + TimeDelta::days(1);
    if !matches!(
        operator.as_str(),
        "Is" | "IsNot" | "LessThan" | "GreaterThan" | "LessThanOrEqual" | "GreaterThanOrEqual"
    ) {
        return Err(format!("Invalid timestamp filter operator '{operator}'."));
    }
    let field = column.chars().next().map_or_else(String::new, |c| {
        c.to_ascii_lowercase().to_string() + &column[1..]
    });
    Ok(move |model: &Map<String, Value>| {
        let Some(value) = text(model, &field)
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc))
        else {
            return false;
        };
        match (operator.as_str(), zero_time) {
            ("Is", true) => start_day <= value && value < end_day,
            ("Is", false) => value == timestamp,
            ("IsNot", true) => value < start_day || value >= end_day,
            ("IsNot", false) => value != timestamp,
            ("GreaterThan", true) => value > end_day,
            ("GreaterThan", false) => value > timestamp,
            ("GreaterThanOrEqual", true) => value >= start_day,
            ("GreaterThanOrEqual", false) => value >= timestamp,
            ("LessThan", true) => value < start_day,
            ("LessThan", false) => value < timestamp,
            ("LessThanOrEqual", true) => value <= end_day,
            (_, _) => value <= timestamp,
        }
    })
}

/// The names in a JSON list of enum names, each checked with `parse`.
fn names<T>(
    value: Option<&Value>,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Option<Vec<T>>, String> {
    let Some(Value::Array(items)) = value else {
        return Ok(None);
    };
    items
        .iter()
        .map(|item| {
            let name = item.as_str().unwrap_or_default();
            parse(name).ok_or_else(|| format!("Invalid enum value '{name}'."))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(|list| Some(list).filter(|l| !l.is_empty()))
}

async fn list_instances(State(data): State<Shared>, body: axum::body::Bytes) -> Response {
    let request: Map<String, Value> = if body.is_empty() {
        Map::new()
    } else {
        match serde_json::from_slice(&body) {
            Ok(Value::Object(map)) => map,
            _ => {
                return errors(
                    StatusCode::BAD_REQUEST,
                    &["The request body is not valid JSON.".to_owned()],
                );
            }
        }
    };
    let number = |name: &str| request.get(name).and_then(Value::as_i64);
    let (page, size) = (number("page"), number("pageSize"));
    let mut problems = Vec::new();
    if page.is_some_and(|p| p < 0) {
        problems.push("Page must be greater than or equal to 1.".to_owned());
    }
    if size.is_some_and(|s| s < 1) {
        problems.push("Page size must be greater than or equal to 1.".to_owned());
    }
    let statuses = names(request.get("statuses"), |n| {
        n.parse::<WorkflowStatus>().ok()
    });
    let sub_statuses = names(request.get("subStatuses"), |n| {
        n.parse::<WorkflowSubStatus>().ok()
    });
    let single = |name: &str| request.get(name).and_then(Value::as_str).map(str::to_owned);
    let filters: Vec<_> = request
        .get("timestampFilters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(timestamp_filter)
        .collect();
    let (statuses, sub_statuses) = match (statuses, sub_statuses) {
        (Ok(s), Ok(u)) => (s, u),
        (Err(e), _) | (_, Err(e)) => {
            problems.push(e);
            (None, None)
        }
    };
    let mut checks = Vec::new();
    for filter in filters {
        match filter {
            Ok(check) => checks.push(check),
            Err(problem) => problems.push(problem),
        }
    }
    if !problems.is_empty() {
        return errors(StatusCode::BAD_REQUEST, &problems);
    }
    let definition_ids: Option<Vec<String>> = request
        .get("definitionIds")
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .filter(|ids: &Vec<String>| !ids.is_empty());
    let (definition_id, status, sub_status) = (
        single("definitionId"),
        single("status"),
        single("subStatus"),
    );
    let has_incidents = request.get("hasIncidents").and_then(Value::as_bool);
    // Elsa ignores a blank correlation id or search term (`IsNullOrWhiteSpace`).
    let correlation_id = single("correlationId").filter(|c| !c.trim().is_empty());
    let term = single("searchTerm").filter(|t| !t.trim().is_empty());
    let order_by = single("orderBy").unwrap_or_else(|| "Created".to_owned());
    let ascending = single("orderDirection").as_deref() == Some("Ascending");
    let data = lock(&data);
    let mut rows: Vec<&Map<String, Value>> = data
        .instances
        .iter()
        .filter(|i| {
            let of = |field: &str| text(i, field).unwrap_or_default();
            definition_id
                .as_deref()
                .is_none_or(|d| of("definitionId") == d)
                && definition_ids
                    .as_ref()
                    .is_none_or(|ids| ids.iter().any(|d| of("definitionId") == d))
                && status.as_deref().is_none_or(|s| of("status") == s)
                && sub_status.as_deref().is_none_or(|s| of("subStatus") == s)
                && statuses
                    .as_ref()
                    .is_none_or(|list| list.iter().any(|s| s.as_str() == of("status")))
                && sub_statuses
                    .as_ref()
                    .is_none_or(|list| list.iter().any(|s| s.as_str() == of("subStatus")))
                && checks.iter().all(|check| check(i))
                && has_incidents.is_none_or(|wanted| {
                    let count = i.get("incidentCount").and_then(Value::as_i64).unwrap_or(0);
                    wanted == (count > 0)
                })
                && correlation_id
                    .as_deref()
                    .is_none_or(|c| text(i, "correlationId") == Some(c))
                && term
                    .as_deref()
                    .is_none_or(|term| search_term_matches(i, term))
        })
        .collect();
    // Elsa's default order: created, newest first; `UpdatedAt` orders by the last update.
    let column = if order_by == "UpdatedAt" {
        "updatedAt"
    } else {
        "createdAt"
    };
    let at = |i: &Map<String, Value>| {
        text(i, column)
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc))
    };
    if ascending {
        rows.sort_by_key(|i| at(i));
    } else {
        rows.sort_by_key(|i| std::cmp::Reverse(at(i)));
    }
    let total = rows.len();
    let items: Vec<Value> = window(rows, page, size)
        .into_iter()
        .map(|i| {
            json!({
                "id": i.get("id"),
                "definitionId": i.get("definitionId"),
                "definitionVersionId": i.get("definitionVersionId"),
                "version": i.get("version"),
                "status": i.get("status"),
                "subStatus": i.get("subStatus"),
                "correlationId": i.get("correlationId"),
                "name": i.get("name"),
                "incidentCount": i.get("incidentCount"),
                "createdAt": i.get("createdAt"),
                "updatedAt": i.get("updatedAt"),
                "finishedAt": i.get("finishedAt"),
            })
        })
        .collect();
    axum::Json(json!({"items": items, "totalCount": total})).into_response()
}

/// `WorkflowInstanceFilter.SearchTerm` (Elsa 3.3+): the name contains the term without
/// regard to case, or an id contains it exactly (ordinal `Contains`, as a case-sensitive
/// database compares).
fn search_term_matches(instance: &Map<String, Value>, term: &str) -> bool {
    let named = text(instance, "name")
        .is_some_and(|name| name.to_lowercase().contains(&term.to_lowercase()));
    named
        || ["definitionVersionId", "definitionId", "id", "correlationId"]
            .iter()
            .filter_map(|field| text(instance, field))
            .any(|id| id.contains(term))
}

/// `ActivityExecutionRecordFilter`: each filter given must match; none given lists all.
async fn activity_executions(
    State(data): State<Shared>,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    let instance = param(&query, "workflowInstanceId");
    let node = param(&query, "activityNodeId");
    let completed = match param(&query, "completed").map(str::parse::<bool>) {
        None => None,
        Some(Ok(flag)) => Some(flag),
        Some(Err(_)) => {
            return errors(
                StatusCode::BAD_REQUEST,
                &["Invalid completed flag.".to_owned()],
            );
        }
    };
    let data = lock(&data);
    let mut rows: Vec<&Map<String, Value>> = data
        .executions
        .iter()
        .filter(|r| instance.is_none_or(|id| text(r, "workflowInstanceId") == Some(id)))
        .filter(|r| node.is_none_or(|id| text(r, "activityNodeId") == Some(id)))
        .filter(|r| {
            completed.is_none_or(|flag| flag == r.get("completedAt").is_some_and(|c| !c.is_null()))
        })
        .collect();
    let started = |r: &Map<String, Value>| {
        text(r, "startedAt")
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc))
    };
    rows.sort_by_key(|r| started(r));
    let items: Vec<Value> = rows.into_iter().cloned().map(Value::Object).collect();
    axum::Json(json!({"items": items, "count": items.len()})).into_response()
}

/// The journal of one instance as `ExecutionLogRecord`s, by sequence, paged by
/// `PageArgs.From(page, pageSize, skip, take)`.
async fn instance_journal(
    State(data): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    let number = |name: &str| param(&query, name).map(str::parse::<i64>);
    let mut values = [None; 4];
    for (slot, name) in values.iter_mut().zip(["page", "pageSize", "skip", "take"]) {
        match number(name) {
            None => {}
            Some(Ok(n)) if n >= 0 => *slot = Some(n),
            Some(_) => return errors(StatusCode::BAD_REQUEST, &["Invalid paging.".to_owned()]),
        }
    }
    let (skip, take) = match values {
        [Some(page), Some(size), _, _] => (page * size, size),
        [_, _, Some(skip), Some(take)] => (skip, take),
        _ => (0, 100),
    };
    let data = lock(&data);
    let mut rows: Vec<&Map<String, Value>> = data
        .journal
        .iter()
        .filter(|entry| text(entry, "workflowInstanceId") == Some(id.as_str()))
        .collect();
    rows.sort_by_key(|entry| entry.get("sequence").and_then(Value::as_i64).unwrap_or(0));
    let total = rows.len();
    let items: Vec<Value> = rows
        .into_iter()
        .skip(usize::try_from(skip).unwrap_or(usize::MAX))
        .take(usize::try_from(take).unwrap_or(0))
        .map(|entry| {
            json!({
                "id": entry.get("id"),
                "activityInstanceId": entry.get("activityInstanceId"),
                "parentActivityInstanceId": entry.get("parentActivityInstanceId"),
                "activityId": entry.get("activityId"),
                "activityType": entry.get("activityType"),
                "activityTypeVersion": entry.get("activityTypeVersion").cloned().unwrap_or(json!(1)),
                "activityName": entry.get("activityName"),
                "nodeId": entry.get("activityNodeId"),
                "timestamp": entry.get("timestamp"),
                "sequence": entry.get("sequence"),
                "eventName": entry.get("eventName"),
                "message": entry.get("message"),
                "source": entry.get("source"),
                "activityState": entry.get("activityState"),
                "payload": entry.get("payload"),
            })
        })
        .collect();
    axum::Json(json!({"items": items, "totalCount": total})).into_response()
}

async fn activity_descriptors(State(data): State<Shared>) -> Response {
    let catalog = lock(&data).catalog.clone();
    axum::Json(json!({"count": catalog.len(), "items": catalog})).into_response()
}

/// A descriptor in the shape of Weaver's fixture catalog, as Elsa Server writes it: flow
/// outcomes and embedded properties as typed `ports`, inputs with `isWrapped` and `uiHint`.
fn elsa_descriptor(descriptor: &Value) -> Value {
    let empty = Vec::new();
    let list = |field: &str| {
        descriptor
            .get(field)
            .and_then(Value::as_array)
            .unwrap_or(&empty)
    };
    let type_name = descriptor
        .get("typeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    let inputs: Vec<Value> = list("inputs")
        .iter()
        .enumerate()
        .map(|(order, input)| {
            let name = input.get("name").and_then(Value::as_str).unwrap_or("");
            let dynamic =
                DYNAMIC_OUTCOME_INPUTS.contains(&(type_name, name)) || (name == "PossibleOutcomes");
            let hint = if dynamic {
                json!("dynamic-outcomes")
            } else {
                input.get("uiHint").cloned().unwrap_or(json!("singleline"))
            };
            json!({
                "name": name,
                "type": input.get("type"),
                "displayName": input.get("displayName").cloned().unwrap_or(json!(name)),
                "description": input.get("description"),
                "order": order,
                "isBrowsable": true,
                "isSerializable": true,
                "isSynthetic": false,
                "isWrapped": input.get("wrapped").and_then(Value::as_bool).unwrap_or(false),
                "uiHint": hint,
                "category": input.get("category"),
                "isSensitive": false,
                "autoEvaluate": true,
            })
        })
        .collect();
    let outputs: Vec<Value> = list("outputs")
        .iter()
        .enumerate()
        .map(|(order, output)| {
            let name = output.get("name").and_then(Value::as_str).unwrap_or("");
            json!({
                "name": name,
                "type": output.get("type"),
                "displayName": output.get("displayName").cloned().unwrap_or(json!(name)),
                "description": output.get("description"),
                "order": order,
                "isBrowsable": true,
                "isSerializable": true,
                "isSynthetic": false,
            })
        })
        .collect();
    let mut ports: Vec<Value> = list("outcomes")
        .iter()
        .filter_map(Value::as_str)
        .map(|outcome| {
            json!({"name": outcome, "displayName": outcome, "type": "Flow", "isBrowsable": true})
        })
        .collect();
    ports.extend(list("ports").iter().map(|port| {
        let name = port.get("name").and_then(Value::as_str).unwrap_or("");
        json!({"name": name, "displayName": port.get("displayName").cloned().unwrap_or(json!(name)), "type": "Embedded", "isBrowsable": true})
    }));
    json!({
        "typeName": type_name,
        "namespace": descriptor.get("namespace"),
        "name": descriptor.get("name"),
        "version": descriptor.get("version").cloned().unwrap_or(json!(1)),
        "category": descriptor.get("category"),
        "displayName": descriptor.get("displayName"),
        "description": descriptor.get("description"),
        "inputs": inputs,
        "outputs": outputs,
        "kind": descriptor.get("kind").cloned().unwrap_or(json!("Action")),
        "runAsynchronously": false,
        "ports": ports,
        "customProperties": {},
        "constructionProperties": {},
        "isContainer": descriptor.get("isContainer").and_then(Value::as_bool).unwrap_or(false),
        "isBrowsable": descriptor.get("isBrowsable").and_then(Value::as_bool).unwrap_or(true),
        "isStart": descriptor.get("isStart").and_then(Value::as_bool).unwrap_or(false),
        "isTerminal": descriptor.get("isTerminal").and_then(Value::as_bool).unwrap_or(false),
    })
}
