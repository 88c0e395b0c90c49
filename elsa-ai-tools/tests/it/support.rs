//! What this crate's integration tests share: the governed world they run in (the linked
//! tools behind the host's `ToolGovernor`, over an in-memory backend seeded with the fixture
//! folders for [`TEST_TENANT`] and a few objects of its own for [`GLOBEX`]) and the checks
//! every tool must pass.

use std::sync::{Arc, Mutex};

use elsa_ai_abstractions::{
    AiCaller, AiContextAttachment, AiToolOutcome, AiToolResult, AiToolServices, AttachmentKind,
    Permission,
};
use elsa_ai_host::testing::governance::{
    GovernanceHarness, RefusingProposalIntake, TEST_TENANT, all_permissions, backend_services,
};
use elsa_ai_host::{
    HostCore, InMemoryAuditLog, InMemoryProposalStore, OperationServices, ProposalService, Redactor,
};
use elsa_ai_tools as _;
use elsa_workflows::{
    InMemoryWorkflowBackend, InstanceQuery, Page, TenantId, TimeRange, WorkflowDefinition,
    WorkflowError, WorkflowInstance, WorkflowInstanceStore,
};
use serde_json::{Value, json};
use weaver_testkit::fixture_backend;

/// The other tenant.
pub const GLOBEX: &str = "globex";
/// A definition only [`GLOBEX`] has.
pub const GLOBEX_DEFINITION: &str = "globex-payroll";
/// A faulted instance only [`GLOBEX`] has.
pub const GLOBEX_INSTANCE: &str = "globex-run-1";

/// The governed tools over the seeded backend.
pub struct World {
    /// Registry (every linked tool) and governor.
    pub harness: GovernanceHarness,
    /// The data both tenants' tools read.
    pub backend: Arc<InMemoryWorkflowBackend>,
}

/// The fixture backend for [`TEST_TENANT`], plus [`GLOBEX`]'s own objects.
fn seeded_backend() -> Arc<InMemoryWorkflowBackend> {
    let backend = Arc::new(fixture_backend(&[TEST_TENANT]));
    seed_globex(&backend);
    backend
}

/// Every linked tool behind a governor handing `services` to tools; the test agent allows
/// every permission Weaver defines, `analyze:tenant` included (callers hold it only when a
/// test gives it to them).
fn governed(backend: Arc<InMemoryWorkflowBackend>, services: AiToolServices) -> World {
    governed_by_agent(backend, services, &Permission::ALL)
}

fn governed_by_agent(
    backend: Arc<InMemoryWorkflowBackend>,
    services: AiToolServices,
    agent_permissions: &[Permission],
) -> World {
    let harness = GovernanceHarness::builder()
        .linked_tools()
        .services(services)
        .agent_permissions(agent_permissions)
        .build();
    World { harness, backend }
}

/// A world whose proposal tools reach no proposal service.
pub fn world() -> World {
    let backend = seeded_backend();
    let services = backend_services(backend.clone(), Arc::new(RefusingProposalIntake));
    governed(backend, services)
}

/// [`world`], but the test agent allows only `agent_permissions`: the permissions tools see
/// are the caller's narrowed by them.
pub fn world_with_agent_permissions(agent_permissions: &[Permission]) -> World {
    let backend = seeded_backend();
    let services = backend_services(backend.clone(), Arc::new(RefusingProposalIntake));
    governed_by_agent(backend, services, agent_permissions)
}

/// A world whose proposal tools submit to the host's real [`ProposalService`] over the same
/// backend (which it validates against and would apply to).
pub fn proposal_world() -> (World, ProposalService) {
    let backend = seeded_backend();
    let service = proposal_service(&backend);
    let services = backend_services(backend.clone(), Arc::new(service.clone()));
    (governed(backend, services), service)
}

/// The host's real proposal service over `backend`, with its own audit log.
pub fn proposal_service(backend: &Arc<InMemoryWorkflowBackend>) -> ProposalService {
    HostCore::builder(
        Arc::new(Redactor::default()),
        Arc::new(InMemoryAuditLog::new()),
    )
    .build()
    .proposals(
        Arc::new(InMemoryProposalStore::new()),
        backend.clone(),
        backend.clone(),
        backend.clone(),
    )
    .operations(OperationServices {
        instances: backend.clone(),
        operator: backend.clone(),
        publisher: backend.clone(),
    })
    .build()
}

/// The text every object of the marked tenant carries (see [`two_tenant_backend`]).
pub const MARK: &str = "GLOBEX-SECRET";
/// A definition only the marked tenant has (its id carries no mark; its content does).
pub const B_ONLY_DEFINITION: &str = "b-only-definition";
/// A faulted run only the marked tenant has.
pub const B_ONLY_RUN: &str = "b-only-run";
/// A run with Elsa's activity execution records and execution log that the marked tenant
/// has (with marked names, inputs, outputs and messages) and that tests may give the other
/// tenant too, under the same instance and execution ids.
pub const RECORDED_RUN: &str = "recorded-run";

/// Prefixes every `name`, `displayName`, `description`, `message` and `correlationId` string
/// of a document with [`MARK`].
fn mark(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                match item {
                    Value::String(text)
                        if matches!(
                            key.as_str(),
                            "name" | "displayName" | "description" | "message" | "correlationId"
                        ) =>
                    {
                        *text = format!("{MARK} {text}");
                    }
                    other => mark(other),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mark),
        _ => {}
    }
}

/// The fixture data for [`TEST_TENANT`], and for [`GLOBEX`] the same objects under the same
/// ids with [`MARK`] in every name, description and message (plus a marked correlation id
/// and catalog entry), and objects only [`GLOBEX`] has: [`B_ONLY_DEFINITION`],
/// [`B_ONLY_RUN`] and faulted runs of every fixture instance's definition. Anything of
/// [`GLOBEX`] that reaches [`TEST_TENANT`] shows the mark.
pub fn two_tenant_backend() -> Arc<InMemoryWorkflowBackend> {
    let backend = Arc::new(fixture_backend(&[TEST_TENANT]));
    let globex = TenantId::new(GLOBEX);
    let read = |path: &std::path::Path| -> Option<Value> {
        let text = std::fs::read_to_string(path).ok()?;
        serde_json::from_str(text.trim_start_matches('\u{feff}')).ok()
    };
    let mut definition_ids = Vec::new();
    for path in weaver_testkit::fixture_files("definitions") {
        let Some(mut value) = read(&path) else {
            continue;
        };
        mark(&mut value);
        if value.get("name").is_none() {
            value["name"] = json!(MARK);
        }
        let Ok(mut definition) = WorkflowDefinition::from_value(value) else {
            continue;
        };
        if definition.definition_id().is_empty() {
            let stem = path.file_stem().unwrap_or_default().to_string_lossy();
            definition.set_definition_id(stem.into_owned());
        }
        definition.set_description(Some(MARK));
        definition_ids.push(definition.definition_id().to_owned());
        backend
            .insert_definition(&globex, definition)
            .expect("marked definition");
    }
    for path in weaver_testkit::fixture_files("instances") {
        let Some(mut value) = read(&path) else {
            continue;
        };
        mark(&mut value);
        if value.get("workflowState").is_some_and(Value::is_object) {
            value["workflowState"]["correlationId"] = json!(MARK);
        } else {
            value["correlationId"] = json!(MARK);
        }
        let instance = WorkflowInstance::from_value(value).expect("marked instance");
        definition_ids.extend(instance.definition_id().map(str::to_owned));
        backend.insert_instance(&globex, instance);
    }
    for path in weaver_testkit::fixture_files("activities") {
        let text = std::fs::read_to_string(&path).expect("catalog");
        let mut descriptors =
            elsa_workflows::ActivityDescriptor::catalog_from_json_str(&text).expect("catalog");
        for descriptor in &mut descriptors {
            descriptor.display_name = Some(format!("{MARK} descriptor"));
        }
        let mut secret = elsa_workflows::ActivityDescriptor::new("Globex.SecretStep");
        secret.description = Some(MARK.to_owned());
        descriptors.push(secret);
        backend.set_catalog(&globex, descriptors);
    }
    let mut own = WorkflowDefinition::new_flowchart(B_ONLY_DEFINITION, MARK);
    own.set_description(Some(MARK));
    backend.insert_definition(&globex, own).expect("b-only");
    definition_ids.push(B_ONLY_DEFINITION.to_owned());
    for (i, definition_id) in definition_ids.iter().enumerate() {
        let id = if i == 0 {
            B_ONLY_RUN.to_owned()
        } else {
            format!("{B_ONLY_RUN}-{i}")
        };
        let mut run = faulted_run(
            &id,
            definition_id,
            "2024-04-18T12:30:00Z",
            "SecretStep",
            "Globex.SecretStep",
            "Globex.SecretException",
        )
        .to_value();
        mark(&mut run);
        backend.insert_instance(
            &globex,
            WorkflowInstance::from_value(run).expect("b-only run"),
        );
    }
    let recorded = weaver_testkit::runs::FaultedRun::new(RECORDED_RUN, "2024-04-18T12:40:00Z");
    let mut instance = recorded.instance().to_value();
    mark(&mut instance);
    backend.insert_instance(
        &globex,
        WorkflowInstance::from_value(instance).expect("recorded run"),
    );
    let records = recorded.execution_records().into_iter().map(|mut record| {
        mark(&mut record);
        record["activityName"] = json!(MARK);
        record["activityState"]["Marked"] = json!(MARK);
        record["outputs"]["Marked"] = json!(MARK);
        elsa_workflows::ActivityExecutionRecord::from_json(&record).expect("marked record")
    });
    backend.insert_activity_executions(&globex, RECORDED_RUN, records);
    let log = recorded.execution_log().into_iter().map(|mut entry| {
        mark(&mut entry);
        entry["activityName"] = json!(MARK);
        elsa_workflows::ExecutionLogEntry::from_json(&entry).expect("marked entry")
    });
    backend.insert_execution_log(&globex, RECORDED_RUN, log);
    backend
}

/// A world whose tools read instances through a [`RecordingInstances`].
pub fn recording_world() -> (World, Arc<RecordingInstances>) {
    let backend = seeded_backend();
    let recording = Arc::new(RecordingInstances {
        inner: backend.clone(),
        reads: Mutex::new(Vec::new()),
    });
    let mut services = backend_services(backend.clone(), Arc::new(RefusingProposalIntake));
    services.instances = recording.clone();
    (governed(backend, services), recording)
}

/// One read of the instance store.
#[derive(Clone, Debug, PartialEq)]
pub enum InstanceRead {
    /// A search with this query.
    Search(InstanceQuery),
    /// A lookup of this id.
    Find(String),
}

/// An instance store that records every read before passing it on.
pub struct RecordingInstances {
    inner: Arc<InMemoryWorkflowBackend>,
    reads: Mutex<Vec<InstanceRead>>,
}

impl RecordingInstances {
    /// The reads so far, in order.
    pub fn reads(&self) -> Vec<InstanceRead> {
        self.reads.lock().expect("not poisoned").clone()
    }

    /// Forgets the reads so far.
    pub fn clear(&self) {
        self.reads.lock().expect("not poisoned").clear();
    }
}

#[async_trait::async_trait]
impl WorkflowInstanceStore for RecordingInstances {
    async fn find(
        &self,
        tenant: &TenantId,
        instance_id: &str,
    ) -> Result<Option<WorkflowInstance>, WorkflowError> {
        self.reads
            .lock()
            .expect("not poisoned")
            .push(InstanceRead::Find(instance_id.to_owned()));
        WorkflowInstanceStore::find(self.inner.as_ref(), tenant, instance_id).await
    }

    async fn search(
        &self,
        tenant: &TenantId,
        query: &InstanceQuery,
    ) -> Result<Page<WorkflowInstance>, WorkflowError> {
        self.reads
            .lock()
            .expect("not poisoned")
            .push(InstanceRead::Search(query.clone()));
        WorkflowInstanceStore::search(self.inner.as_ref(), tenant, query).await
    }
}

/// Gives [`GLOBEX`] a definition and a faulted instance of its own.
fn seed_globex(backend: &InMemoryWorkflowBackend) {
    let globex = TenantId::new(GLOBEX);
    let mut definition = WorkflowDefinition::new_flowchart(GLOBEX_DEFINITION, "Globex payroll");
    definition.set_published(true);
    backend
        .insert_definition(&globex, definition)
        .expect("globex definition");
    let instance = WorkflowInstance::from_value(json!({
        "id": GLOBEX_INSTANCE,
        "definitionId": GLOBEX_DEFINITION,
        "definitionVersion": 1,
        "status": "Finished",
        "subStatus": "Faulted",
        "createdAt": "2024-04-18T12:00:00Z",
        "incidents": [{
            "activityId": "Pay1", "activityType": "Globex.Pay", "message": "globex secret failure",
            "exception": {"type": "System.InvalidOperationException", "message": "globex secret failure"},
            "timestamp": "2024-04-18T12:00:01Z"
        }]
    }))
    .expect("globex instance");
    backend.insert_instance(&globex, instance);
}

impl World {
    /// Calls `tool` as `alice` of [`TEST_TENANT`] with every permission.
    pub async fn call(&self, tool: &str, arguments: Value) -> AiToolResult {
        self.harness
            .call_as(self.alice(), Vec::new(), tool, arguments)
            .await
    }

    /// Calls `tool` as `alice` in a turn with `attachments`.
    pub async fn call_with(
        &self,
        attachments: Vec<AiContextAttachment>,
        tool: &str,
        arguments: Value,
    ) -> AiToolResult {
        self.harness
            .call_as(self.alice(), attachments, tool, arguments)
            .await
    }

    /// Calls `tool` as `caller`.
    pub async fn call_as(&self, caller: AiCaller, tool: &str, arguments: Value) -> AiToolResult {
        self.harness
            .call_as(caller, Vec::new(), tool, arguments)
            .await
    }

    /// `alice` of [`TEST_TENANT`] with every permission.
    pub fn alice(&self) -> AiCaller {
        AiCaller::new("alice", TEST_TENANT, all_permissions())
    }

    /// `ana` of [`TEST_TENANT`] with every permission and `analyze:tenant`: her runtime
    /// searches may cover the whole tenant.
    pub fn analyst(&self) -> AiCaller {
        AiCaller::new(
            "ana",
            TEST_TENANT,
            all_permissions()
                .into_iter()
                .chain([Permission::ANALYZE_TENANT]),
        )
    }

    /// Calls `tool` as [`Self::analyst`].
    pub async fn call_as_analyst(&self, tool: &str, arguments: Value) -> AiToolResult {
        self.call_as(self.analyst(), tool, arguments).await
    }

    /// `bob` of [`TEST_TENANT`] with every permission but `missing`.
    pub fn without(&self, missing: &Permission) -> AiCaller {
        AiCaller::new(
            "bob",
            TEST_TENANT,
            all_permissions().into_iter().filter(|p| p != missing),
        )
    }

    /// Checks what every tool that reads one object must do: an unknown id and another
    /// tenant's id are the same 404 (only the id in the message differs), and a caller
    /// without `permission` is denied before anything is read.
    pub async fn assert_standard_refusals(
        &self,
        tool: &str,
        permission: &Permission,
        arguments: impl Fn(&str) -> Value,
        known_id: &str,
        globex_id: &str,
    ) {
        let unknown = refusal(&self.call(tool, arguments("no-such-id")).await);
        assert_eq!(
            (unknown.0, unknown.1.as_str()),
            (404, "not_found"),
            "{tool}: {unknown:?}"
        );
        let foreign = refusal(&self.call(tool, arguments(globex_id)).await);
        assert_eq!(
            (foreign.0, foreign.1.as_str()),
            (404, "not_found"),
            "{tool}: another tenant's id"
        );
        assert_eq!(
            foreign.2.replace(globex_id, "ID"),
            unknown.2.replace("no-such-id", "ID"),
            "{tool}: another tenant's id reads exactly like an unknown one"
        );
        let denied = self
            .call_as(self.without(permission), tool, arguments(known_id))
            .await;
        assert_eq!(denied.outcome, AiToolOutcome::Denied, "{tool}");
        let (status, code, message) = refusal(&denied);
        assert_eq!(
            (status, code.as_str()),
            (403, "permission_denied"),
            "{tool}"
        );
        assert!(message.contains(permission.as_str()), "{tool}: {message}");
    }

    /// Checks that each of `bad` arguments is refused as `invalid_arguments` before the tool
    /// runs.
    pub async fn assert_invalid_arguments(&self, tool: &str, bad: &[Value]) {
        for arguments in bad {
            let (status, code, message) = refusal(&self.call(tool, arguments.clone()).await);
            assert_eq!(
                (status, code.as_str()),
                (400, "invalid_arguments"),
                "{tool} {arguments}: {message}"
            );
        }
    }
}

/// The content of a successful result.
///
/// # Panics
///
/// When the call did not succeed.
pub fn content(result: &AiToolResult) -> &Value {
    assert!(
        result.is_success(),
        "expected success, got {}",
        result.to_model_text()
    );
    &result.content
}

/// A `TimeRange` attachment from `from` to `to` (RFC 3339).
pub fn attached_range(from: &str, to: &str) -> AiContextAttachment {
    AiContextAttachment {
        time_range: Some(TimeRange {
            from: from.parse().expect("RFC 3339"),
            to: to.parse().expect("RFC 3339"),
        }),
        ..AiContextAttachment::new(AttachmentKind::TimeRange, "window")
    }
}

/// Checks that a runtime search was refused for want of a scope: 400
/// `search_scope_required`, its message naming each of `named`.
///
/// # Panics
///
/// When the result is anything else.
pub fn assert_scope_required(result: &AiToolResult, named: &[&str]) {
    let (status, code, message) = refusal(result);
    assert_eq!(
        (status, code.as_str()),
        (400, "search_scope_required"),
        "{message}"
    );
    for name in named {
        assert!(message.contains(name), "{name} missing from: {message}");
    }
}

/// The references a result's envelope gives as its evidence.
///
/// # Panics
///
/// When the result has no `evidence` list.
pub fn evidence(result: &Value) -> Vec<&str> {
    result["evidence"]
        .as_array()
        .unwrap_or_else(|| panic!("no evidence in {result}"))
        .iter()
        .map(|e| e.as_str().expect("evidence is text"))
        .collect()
}

/// A result's summary line.
///
/// # Panics
///
/// When the result has none.
pub fn summary(result: &Value) -> &str {
    result["summary"]
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| panic!("no summary in {result}"))
}

/// Status, code and message of a failed or denied result.
///
/// # Panics
///
/// When the call succeeded.
pub fn refusal(result: &AiToolResult) -> (u16, String, String) {
    let error = result
        .error
        .as_ref()
        .unwrap_or_else(|| panic!("expected a refusal, got {}", result.content));
    (error.status, error.code.clone(), error.message.clone())
}

/// A finished, faulted run of `definition_id` created at `created_at` (RFC 3339), whose
/// activity `activity_id` of `activity_type` threw `exception_type` one second later. It
/// carries Elsa's complete execution history: a started `Elsa.Flowchart`, a completed
/// `Elsa.WriteLine` and the faulted activity.
pub fn faulted_run(
    id: &str,
    definition_id: &str,
    created_at: &str,
    activity_id: &str,
    activity_type: &str,
    exception_type: &str,
) -> WorkflowInstance {
    let created: chrono::DateTime<chrono::Utc> = created_at.parse().expect("RFC 3339");
    let at = |ms: i64| (created + chrono::Duration::milliseconds(ms)).to_rfc3339();
    let message = format!("{activity_id} failed in run {id}");
    WorkflowInstance::from_value(json!({
        "id": id,
        "definitionId": definition_id,
        "definitionVersion": 1,
        "status": "Finished",
        "subStatus": "Faulted",
        "createdAt": at(0),
        "updatedAt": at(1000),
        "finishedAt": at(1000),
        "incidents": [{
            "activityId": activity_id,
            "activityNodeId": format!("Workflow1:Flowchart1:{activity_id}"),
            "activityType": activity_type,
            "message": message,
            "exception": {
                "type": format!("{exception_type}, System.Private.CoreLib"),
                "message": message,
                "stackTrace": format!("   at {activity_type}.ExecuteAsync()\r\n   at Elsa.Workflows.Middleware.Activities.DefaultActivityInvokerMiddleware.InvokeAsync()\r\n   at more\r\n   at even.more"),
                "innerException": {"type": "System.Net.Sockets.SocketException", "message": "Connection refused"}
            },
            "timestamp": at(1000)
        }],
        "activityExecutionRecords": [
            {"id": format!("{id}-r1"), "activityId": "Flowchart1", "activityNodeId": "Workflow1:Flowchart1",
             "activityType": "Elsa.Flowchart", "status": "Running", "startedAt": at(0)},
            {"id": format!("{id}-r2"), "activityId": "WriteLine1", "activityNodeId": "Workflow1:Flowchart1:WriteLine1",
             "activityType": "Elsa.WriteLine", "activityName": "Say hello", "status": "Completed",
             "startedAt": at(100), "completedAt": at(150)},
            {"id": format!("{id}-r3"), "activityId": activity_id, "activityNodeId": format!("Workflow1:Flowchart1:{activity_id}"),
             "activityType": activity_type, "activityName": "Call the API", "status": "Faulted",
             "startedAt": at(200), "completedAt": at(1000),
             "exception": {"type": format!("{exception_type}, System.Private.CoreLib"), "message": message}}
        ]
    }))
    .expect("a valid faulted run")
}
