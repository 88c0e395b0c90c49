//! Operations as proposals, over real sockets: the six operational tools (retry, cancel and
//! restart instances; publish, unpublish and delete a definition) called through weaver's
//! `/mcp` as the `workflow-operator` agent, then reviewed and applied over the HTTP API, on
//! the in-memory samples and on a tenant served by the Elsa Server stand-in. What is
//! checked: the proposal records each target's state and shows it beside the state now, only
//! an approved apply acts (each target once, audited as `proposal.target`), a target whose
//! state changed meanwhile is skipped as stale, the permissions and tenants are enforced,
//! and a reviewer can drop instances from a proposal before approving it.

use std::collections::BTreeSet;

use elsa_ai_abstractions::ToolNaming;
use elsa_ai_server::Weaver;
use elsa_ai_server::config::{ApiKeyConfig, WeaverConfig};
use elsa_ai_server::testing::{ALICE_KEY, BOB_KEY, GINA_KEY, TestServer, two_tenants};
use elsa_workflows::{
    TenantId, VersionOptions, WorkflowDefinitionStore, WorkflowInstance, WorkflowInstanceStore,
    WorkflowStatus, WorkflowSubStatus, samples,
};
use reqwest::StatusCode;
use rmcp::model::{CallToolResult, ClientConfig};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};
use weaver_testkit::elsa_api::{ElsaApiStandIn, RecordedRequest};
use weaver_testkit::mcp::{call_tool, weaver_client};

type Client = RunningService<RoleClient, ClientConfig>;

/// The agent that may use the operational tools.
const OPERATOR: &str = "workflow-operator";

/// The six operational tools, by their contract names.
const TOOLS: [&str; 6] = [
    "instance.proposeRetry",
    "instance.proposeCancel",
    "instance.proposeRestart",
    "workflow.proposePublish",
    "workflow.proposeUnpublish",
    "workflow.proposeDelete",
];

/// The same tools as upstream Elsa's grounding catalog spells them.
const GROUNDING_TOOLS: [&str; 6] = [
    "instances.proposeRetry",
    "instances.proposeCancel",
    "instances.proposeRestart",
    "workflows.proposePublish",
    "workflows.proposeUnpublish",
    "workflows.proposeDelete",
];

// The samples (elsa-workflows/samples), in every samples tenant.
/// `sample-inventory-sync` run that faulted: `Finished`/`Faulted`, version 1.
const FAULTED: &str = "4e8b0d2f6a1c9573";
/// `sample-order-approval` run waiting for approval: `Running`/`Suspended`, version 1.
const SUSPENDED: &str = "7a1d5e93c04b6f28";
/// `sample-order-approval` run that finished: `Finished`/`Finished`, version 1, correlation
/// id `order-1001`.
const FINISHED: &str = "0c6f3e1a9b2d4f57";
/// Version 1 published, version 2 (the latest) a draft.
const ORDER_APPROVAL: &str = "sample-order-approval";
/// Version 1, published and latest.
const HELLO_WORLD: &str = "sample-http-hello-world";
/// Version 1, published and latest; the faulted run is its only instance.
const INVENTORY_SYNC: &str = "sample-inventory-sync";

/// A key in `acme` that may apply and publish, but not operate on instances.
const CAROL_KEY: &str = "test-key-carol-acme-no-operate";

/// The Elsa API key, as the environment holds it, and acme's tenant in Elsa.
const ELSA_KEY: &str = "elsa-api-key-operations-5d1f";
const ELSA_KEY_VARIABLE: &str = "TEST_ELSA_OPERATIONS_KEY";
const ELSA_TENANT: &str = "acme-ops-in-elsa";

fn acme() -> TenantId {
    TenantId::new("acme")
}

/// One of the six operations, as the tests drive it on the samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Retry,
    Cancel,
    Restart,
    Publish,
    Unpublish,
    Delete,
}

impl Op {
    const ALL: [Self; 6] = [
        Self::Retry,
        Self::Cancel,
        Self::Restart,
        Self::Publish,
        Self::Unpublish,
        Self::Delete,
    ];

    fn tool(self) -> &'static str {
        TOOLS[self as usize]
    }

    /// The proposal kind as the API names it.
    fn kind(self) -> &'static str {
        match self {
            Self::Retry => "Retry",
            Self::Cancel => "Cancel",
            Self::Restart => "Restart",
            Self::Publish => "Publish",
            Self::Unpublish => "Unpublish",
            Self::Delete => "Delete",
        }
    }

    /// The tool's arguments.
    fn arguments(self) -> Value {
        let rationale = format!("{} as the operator found necessary.", self.kind());
        match self {
            Self::Retry => json!({"instanceIds": [FAULTED], "rationale": rationale}),
            Self::Cancel => json!({"instanceIds": [SUSPENDED], "rationale": rationale}),
            Self::Restart => json!({"instanceIds": [FINISHED], "rationale": rationale}),
            Self::Publish => {
                json!({"definitionId": ORDER_APPROVAL, "version": 2, "rationale": rationale})
            }
            Self::Unpublish => json!({"definitionId": HELLO_WORLD, "rationale": rationale}),
            Self::Delete => json!({"definitionId": INVENTORY_SYNC, "rationale": rationale}),
        }
    }

    /// The one target: its id, definition, version, and its state as seeded (the baseline
    /// the proposal must record).
    fn target(self) -> (&'static str, &'static str, i64, Value) {
        let instance = |status: &str, sub_status: &str| json!({"exists": true, "status": status, "subStatus": sub_status});
        match self {
            Self::Retry => (FAULTED, INVENTORY_SYNC, 1, instance("Finished", "Faulted")),
            Self::Cancel => (
                SUSPENDED,
                ORDER_APPROVAL,
                1,
                instance("Running", "Suspended"),
            ),
            Self::Restart => (
                FINISHED,
                ORDER_APPROVAL,
                1,
                instance("Finished", "Finished"),
            ),
            Self::Publish => (
                ORDER_APPROVAL,
                ORDER_APPROVAL,
                2,
                json!({"exists": true, "latestVersion": 2, "publishedVersion": 1}),
            ),
            Self::Unpublish => (
                HELLO_WORLD,
                HELLO_WORLD,
                1,
                json!({"exists": true, "latestVersion": 1, "publishedVersion": 1}),
            ),
            Self::Delete => (
                INVENTORY_SYNC,
                INVENTORY_SYNC,
                1,
                json!({"exists": true, "latestVersion": 1, "publishedVersion": 1}),
            ),
        }
    }

    /// The target's state once the operation was applied, as the view reads it.
    fn state_after(self) -> Value {
        match self {
            Self::Retry => json!({"exists": true, "status": "Running", "subStatus": "Executing"}),
            Self::Cancel => {
                json!({"exists": true, "status": "Finished", "subStatus": "Cancelled"})
            }
            // The old run stays as it was; the restart is a new instance.
            Self::Restart => json!({"exists": true, "status": "Finished", "subStatus": "Finished"}),
            Self::Publish => json!({"exists": true, "latestVersion": 2, "publishedVersion": 2}),
            Self::Unpublish => json!({"exists": true, "latestVersion": 1}),
            Self::Delete => json!({"exists": false}),
        }
    }

    /// The one request the operation sends Elsa when applied: method, path, JSON body.
    fn elsa_request(self) -> (&'static str, String, Option<Value>) {
        let api = weaver_testkit::elsa_api::API_PATH;
        match self {
            Self::Retry => (
                "POST",
                format!("{api}/alterations/workflows/retry"),
                Some(json!({"workflowInstanceIds": [FAULTED]})),
            ),
            Self::Cancel => (
                "POST",
                format!("{api}/cancel/workflow-instances/{SUSPENDED}"),
                None,
            ),
            Self::Restart => (
                "POST",
                format!("{api}/workflow-definitions/{ORDER_APPROVAL}/dispatch"),
                Some(json!({"versionOptions": "1", "correlationId": "order-1001", "input": {}})),
            ),
            Self::Publish => (
                "POST",
                format!("{api}/workflow-definitions/{ORDER_APPROVAL}/publish"),
                Some(json!({})),
            ),
            Self::Unpublish => (
                "POST",
                format!("{api}/workflow-definitions/{HELLO_WORLD}/retract"),
                Some(json!({})),
            ),
            Self::Delete => (
                "DELETE",
                format!("{api}/workflow-definitions/{INVENTORY_SYNC}"),
                None,
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Helpers.

/// Turns the six tools on tenant-wide as the administrator `key`.
async fn enable_operations(server: &TestServer, key: &str) {
    for tool in TOOLS {
        server.enable_tool(key, tool).await;
    }
}

/// An MCP client of `/mcp` as `agent`.
async fn mcp(server: &TestServer, key: &str, agent: &str) -> Client {
    weaver_client(&server.url(&format!("/mcp?agent={agent}")), key).await
}

fn text(result: &CallToolResult) -> &str {
    result.content[0].as_text().map_or("", |t| t.text.as_str())
}

/// Calls a proposal tool that must succeed; the tool's structured answer.
async fn propose(client: &Client, tool: &str, arguments: Value) -> Value {
    let result = call_tool(client, tool, arguments).await;
    assert_eq!(result.is_error, Some(false), "{tool}: {}", text(&result));
    result
        .structured_content
        .unwrap_or_else(|| panic!("{tool} answers structured content"))
}

/// Calls a tool that must be refused; the error (`code`, `status`, `message`).
async fn refused(client: &Client, tool: &str, arguments: Value) -> Value {
    let result = call_tool(client, tool, arguments).await;
    assert_eq!(result.is_error, Some(true), "{tool}: {}", text(&result));
    let body: Value = serde_json::from_str(text(&result))
        .unwrap_or_else(|e| panic!("{tool}: the error is JSON ({e}): {}", text(&result)));
    body["error"].clone()
}

/// The proposal id of a tool's answer.
fn proposal_id(answer: &Value) -> String {
    answer["proposalId"]
        .as_str()
        .unwrap_or_else(|| panic!("the answer names the proposal: {answer}"))
        .to_owned()
}

/// `GET /ai/proposals/{id}` as `key`, which must succeed.
async fn proposal(server: &TestServer, key: &str, id: &str) -> Value {
    let (status, body) = server.get(&format!("/ai/proposals/{id}"), key).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// `POST /ai/proposals/{id}/drop-targets` as `key`.
async fn drop_targets(
    server: &TestServer,
    key: &str,
    id: &str,
    targets: &[&str],
) -> (StatusCode, Value) {
    server
        .post(
            &format!("/ai/proposals/{id}/drop-targets"),
            key,
            &json!({"targets": targets}),
        )
        .await
}

/// The audit records of one proposal, oldest first.
async fn audit_of(server: &TestServer, id: &str) -> Vec<Value> {
    let (status, audit) = server
        .get(&format!("/ai/audit?proposalId={id}&limit=500"), ALICE_KEY)
        .await;
    assert_eq!(status, StatusCode::OK, "{audit}");
    let mut items = audit["items"].as_array().cloned().unwrap_or_default();
    let at = |record: &Value| {
        record["timestamp"]
            .as_str()
            .and_then(|t| t.parse::<chrono::DateTime<chrono::Utc>>().ok())
    };
    items.sort_by_key(|record| at(record));
    items
}

fn with_action<'a>(records: &'a [Value], action: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["action"] == action).collect()
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("an array: {value}"))
        .iter()
        .map(|v| v.as_str().unwrap_or_default())
        .collect()
}

/// The ids of a proposal view's targets, in order.
fn target_ids(view: &Value) -> Vec<&str> {
    view["operation"]["targets"]
        .as_array()
        .unwrap_or_else(|| panic!("an operation with targets: {view}"))
        .iter()
        .map(|t| t["id"].as_str().unwrap_or_default())
        .collect()
}

/// The inbox of `key`'s tenant.
async fn inbox(server: &TestServer, key: &str) -> Vec<Value> {
    let (status, body) = server.get("/ai/proposals", key).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["items"].as_array().cloned().unwrap_or_default()
}

async fn instance(server: &TestServer, id: &str) -> Option<WorkflowInstance> {
    WorkflowInstanceStore::find(&*server.workflows, &acme(), id)
        .await
        .expect("the in-memory backend answers")
}

fn state_of(instance: &WorkflowInstance) -> (WorkflowStatus, WorkflowSubStatus) {
    (instance.status(), instance.sub_status())
}

/// A copy of a sample run under another id (in its document and its wrapped state).
fn sample_copy(sample_id: &str, id: &str) -> WorkflowInstance {
    let sample = samples::instances()
        .iter()
        .find(|i| i.id() == sample_id)
        .unwrap_or_else(|| panic!("no sample instance {sample_id}"));
    let mut document = sample.to_value();
    document["id"] = json!(id);
    if let Some(state) = document
        .get_mut("workflowState")
        .and_then(Value::as_object_mut)
    {
        state.insert("id".into(), json!(id));
    }
    WorkflowInstance::from_value(document).expect("a valid instance")
}

/// Seeds copies of a sample run into acme only.
fn seed_copies(server: &TestServer, sample_id: &str, ids: &[&str]) {
    for id in ids {
        server
            .workflows
            .insert_instance(&acme(), sample_copy(sample_id, id));
    }
}

// ---------------------------------------------------------------------------------------
// 1. Each kind on the in-memory samples.

/// Proposes `op` through the operator agent and checks the proposal as a reviewer sees
/// it; returns its id.
async fn propose_and_review(server: &TestServer, client: &Client, op: Op) -> String {
    let answer = propose(client, op.tool(), op.arguments()).await;
    assert_eq!(answer["status"], "Validated", "{answer}");
    assert_eq!(answer["kind"], op.kind(), "{answer}");
    let id = proposal_id(&answer);

    let view = proposal(server, ALICE_KEY, &id).await;
    assert_eq!(view["kind"], op.kind(), "{view}");
    assert_eq!(view["status"], "Validated", "{view}");
    assert!(view.get("definition").is_none(), "{view}");
    let operation = &view["operation"];
    assert!(
        operation["description"]
            .as_str()
            .is_some_and(|d| !d.trim().is_empty()),
        "{view}"
    );
    let (target_id, definition_id, version, seeded) = op.target();
    let targets = operation["targets"].as_array().expect("targets");
    assert_eq!(targets.len(), 1, "{view}");
    let target = &targets[0];
    assert_eq!(target["id"], target_id, "{view}");
    assert_eq!(target["definitionId"], definition_id, "{view}");
    assert_eq!(target["version"], version, "{view}");
    assert_eq!(target["proposed"], seeded, "{op:?}: {view}");
    assert_eq!(target["current"], seeded, "{op:?}: {view}");
    assert!(target.get("outcome").is_none(), "{view}");
    let actions = strings(&view["allowedActions"]);
    assert!(actions.contains(&"approve"), "{view}");
    assert!(!actions.contains(&"dropTargets"), "one target: {view}");
    if op == Op::Delete {
        assert_eq!(
            operation["deletion"],
            json!({"versions": [1], "publishedVersion": 1, "instanceCount": 1}),
            "{view}"
        );
    } else {
        assert!(operation.get("deletion").is_none(), "{view}");
    }
    if op == Op::Publish {
        let warnings = view["warnings"].to_string();
        assert!(warnings.contains("version 1 is published now"), "{view}");
    }
    id
}

/// Approves and applies `id` as alice; the applied view, checked for one `Done` target.
async fn approve_and_apply(server: &TestServer, op: Op, id: &str) -> Value {
    let (status, approved) = server.proposal_action(ALICE_KEY, id, "approve").await;
    assert_eq!(status, StatusCode::OK, "{approved}");
    assert_eq!(approved["status"], "Approved", "{approved}");
    assert!(
        strings(&approved["allowedActions"]).contains(&"apply"),
        "{approved}"
    );

    let (status, applied) = server.proposal_action(ALICE_KEY, id, "apply").await;
    assert_eq!(status, StatusCode::OK, "{applied}");
    assert_eq!(applied["status"], "Applied", "{applied}");
    assert_eq!(applied["appliedBy"], "alice", "{applied}");
    let target = &applied["operation"]["targets"][0];
    assert_eq!(target["outcome"]["result"], "Done", "{applied}");
    assert!(target["outcome"].get("reason").is_none(), "{applied}");
    assert_eq!(
        target["proposed"],
        op.target().3,
        "the baseline stays: {applied}"
    );
    assert_eq!(target["current"], op.state_after(), "{op:?}: {applied}");
    let new_instance = target["outcome"].get("newInstanceId");
    if op == Op::Restart {
        assert!(
            new_instance
                .and_then(Value::as_str)
                .is_some_and(|id| !id.is_empty() && id != FINISHED),
            "{applied}"
        );
    } else {
        assert!(new_instance.is_none(), "{applied}");
    }

    // At most once: a second apply is refused.
    let (status, again) = server.proposal_action(ALICE_KEY, id, "apply").await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    assert_eq!(again["currentState"], "Applied", "{again}");
    applied
}

/// The audit trail of an applied one-target proposal: created, approved and applied once
/// each (a refused second apply is audited too, as `Denied`), and one `proposal.target`
/// record with the outcome.
async fn check_audit(server: &TestServer, op: Op, id: &str, applied: &Value) {
    let records = audit_of(server, id).await;
    for action in ["proposal.created", "proposal.approved", "proposal.applied"] {
        let succeeded = with_action(&records, action)
            .into_iter()
            .filter(|r| r["outcome"] == "Success")
            .count();
        assert_eq!(succeeded, 1, "{action}: {records:#?}");
    }
    let targets = with_action(&records, "proposal.target");
    assert_eq!(targets.len(), 1, "{records:#?}");
    let record = targets[0];
    let (target_id, definition_id, _, _) = op.target();
    assert_eq!(record["outcome"], "Success", "{record}");
    assert_eq!(record["actorId"], "alice", "{record}");
    assert_eq!(record["proposalId"], id, "{record}");
    assert_eq!(record["details"]["kind"], op.kind(), "{record}");
    assert_eq!(record["details"]["target"], target_id, "{record}");
    assert_eq!(record["details"]["definitionId"], definition_id, "{record}");
    assert_eq!(
        record["details"]["outcome"], applied["operation"]["targets"][0]["outcome"],
        "the audited outcome is the stored one: {record}"
    );
}

/// Propose, review, approve, apply and audit `op` on acme's in-memory samples; returns the
/// server and the applied view for the effect checks.
async fn round_trip_in_memory(op: Op) -> (TestServer, Value) {
    let server = TestServer::start(two_tenants()).await;
    enable_operations(&server, ALICE_KEY).await;
    let client = mcp(&server, ALICE_KEY, OPERATOR).await;
    let id = propose_and_review(&server, &client, op).await;
    let _ = client.cancel().await;
    let applied = approve_and_apply(&server, op, &id).await;
    check_audit(&server, op, &id, &applied).await;
    (server, applied)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_applied_retry_runs_the_faulted_instance_again() {
    let (server, _) = round_trip_in_memory(Op::Retry).await;
    let retried = instance(&server, FAULTED).await.expect("still there");
    assert_eq!(
        state_of(&retried),
        (WorkflowStatus::Running, WorkflowSubStatus::Executing)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_applied_cancel_cancels_the_running_instance() {
    let (server, _) = round_trip_in_memory(Op::Cancel).await;
    let cancelled = instance(&server, SUSPENDED).await.expect("still there");
    assert_eq!(
        state_of(&cancelled),
        (WorkflowStatus::Finished, WorkflowSubStatus::Cancelled)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_applied_restart_starts_a_new_instance_and_leaves_the_old_one() {
    let (server, applied) = round_trip_in_memory(Op::Restart).await;
    let old = instance(&server, FINISHED).await.expect("still there");
    assert_eq!(
        state_of(&old),
        (WorkflowStatus::Finished, WorkflowSubStatus::Finished)
    );
    let new_id = applied["operation"]["targets"][0]["outcome"]["newInstanceId"]
        .as_str()
        .unwrap();
    let new = instance(&server, new_id).await.expect("the new instance");
    assert_eq!(
        state_of(&new),
        (WorkflowStatus::Running, WorkflowSubStatus::Pending)
    );
    assert_eq!(new.definition_id(), Some(ORDER_APPROVAL));
    assert_eq!(new.definition_version(), Some(1));
    assert_eq!(new.correlation_id(), Some("order-1001"));
    assert_eq!(new.definition_version_id(), old.definition_version_id());
    // Applied once: exactly one new instance of the definition.
    let runs = WorkflowInstanceStore::search(
        &*server.workflows,
        &acme(),
        &elsa_workflows::InstanceQuery {
            definition_ids: vec![ORDER_APPROVAL.into()],
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(runs.total, 3, "finished, suspended and the restart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_applied_publish_publishes_the_latest_version() {
    let (server, _) = round_trip_in_memory(Op::Publish).await;
    let published = WorkflowDefinitionStore::find(
        &*server.workflows,
        &acme(),
        ORDER_APPROVAL,
        VersionOptions::Published,
    )
    .await
    .unwrap()
    .expect("a published version");
    assert_eq!(published.version(), 2);
    let versions = server
        .workflows
        .definition_versions(&acme(), ORDER_APPROVAL);
    let flags: Vec<(i32, bool)> = versions
        .iter()
        .map(|v| (v.version(), v.is_published()))
        .collect();
    assert_eq!(flags, vec![(1, false), (2, true)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_applied_unpublish_leaves_no_version_published() {
    let (server, _) = round_trip_in_memory(Op::Unpublish).await;
    let published = WorkflowDefinitionStore::find(
        &*server.workflows,
        &acme(),
        HELLO_WORLD,
        VersionOptions::Published,
    )
    .await
    .unwrap();
    assert!(published.is_none(), "{published:?}");
    let latest = WorkflowDefinitionStore::find(
        &*server.workflows,
        &acme(),
        HELLO_WORLD,
        VersionOptions::Latest,
    )
    .await
    .unwrap();
    assert_eq!(latest.map(|d| d.version()), Some(1), "the version stays");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_applied_delete_removes_the_definition_and_its_instances() {
    let (server, _) = round_trip_in_memory(Op::Delete).await;
    assert!(
        server
            .workflows
            .definition_versions(&acme(), INVENTORY_SYNC)
            .is_empty()
    );
    assert!(
        instance(&server, FAULTED).await.is_none(),
        "its run went too"
    );
    // The other tenant's copy of the samples is untouched.
    let globex = TenantId::new("globex");
    assert_eq!(
        server
            .workflows
            .definition_versions(&globex, INVENTORY_SYNC)
            .len(),
        1
    );
}

// ---------------------------------------------------------------------------------------
// 2. Each kind against the Elsa Server stand-in.

/// An empty Elsa holding the samples (definitions and runs) for acme.
async fn elsa_with_samples() -> ElsaApiStandIn {
    let elsa = ElsaApiStandIn::start(&format!("ApiKey {ELSA_KEY}")).await;
    elsa.require_tenant_header(ELSA_TENANT);
    for definition in samples::definitions() {
        elsa.insert_definition(definition.to_value());
    }
    let created = "2024-06-01T09:00:00Z".parse().unwrap();
    for instance in samples::instances() {
        elsa.insert_instance(instance, created);
    }
    elsa
}

/// `two_tenants()` with `acme` served by `elsa`.
async fn start_over_elsa(elsa: &ElsaApiStandIn) -> TestServer {
    let mut config = two_tenants();
    let acme = &mut config.tenants[0];
    assert_eq!(acme.id, "acme");
    acme.elsa_url = Some(elsa.url().to_owned());
    acme.elsa_api_key_env = Some(ELSA_KEY_VARIABLE.to_owned());
    acme.elsa_tenant = Some(ELSA_TENANT.to_owned());
    let env = |name: &str| (name == ELSA_KEY_VARIABLE).then(|| ELSA_KEY.to_owned());
    TestServer::start_with(Weaver::builder(config).env(env)).await
}

/// Whether a request to Elsa only reads: a `GET`, or the instance search (a `POST`).
fn is_read(request: &RecordedRequest) -> bool {
    let list = format!("{}/workflow-instances", weaver_testkit::elsa_api::API_PATH);
    request.method == "GET"
        || (request.method == "POST"
            && request.path_and_query.split('?').next() == Some(list.as_str()))
}

fn elsa_instance(elsa: &ElsaApiStandIn, id: &str) -> Option<Value> {
    elsa.instances().into_iter().find(|i| i["id"] == id)
}

fn run_state(model: &Value) -> (&str, &str) {
    (
        model["status"].as_str().unwrap_or_default(),
        model["subStatus"].as_str().unwrap_or_default(),
    )
}

/// Propose, review and approve `op` over Elsa without operating; then apply: exactly the
/// operation's request reaches Elsa, and the stand-in's data changed accordingly.
async fn round_trip_over_elsa(op: Op) {
    let elsa = elsa_with_samples().await;
    let server = start_over_elsa(&elsa).await;
    enable_operations(&server, ALICE_KEY).await;
    let client = mcp(&server, ALICE_KEY, OPERATOR).await;
    let id = propose_and_review(&server, &client, op).await;
    let _ = client.cancel().await;
    let (status, approved) = server.proposal_action(ALICE_KEY, &id, "approve").await;
    assert_eq!(status, StatusCode::OK, "{approved}");

    let before = elsa.requests();
    assert!(!before.is_empty(), "the targets were read from Elsa");
    let operational: Vec<_> = before.iter().filter(|r| !is_read(r)).collect();
    assert!(
        operational.is_empty(),
        "{op:?}: only reads before apply: {operational:#?}"
    );

    let (status, applied) = server.proposal_action(ALICE_KEY, &id, "apply").await;
    assert_eq!(status, StatusCode::OK, "{applied}");
    assert_eq!(applied["status"], "Applied", "{applied}");
    let target = &applied["operation"]["targets"][0];
    assert_eq!(target["outcome"]["result"], "Done", "{op:?}: {applied}");
    assert_eq!(target["current"], op.state_after(), "{op:?}: {applied}");

    let sent: Vec<RecordedRequest> = elsa.requests()[before.len()..]
        .iter()
        .filter(|r| !is_read(r))
        .cloned()
        .collect();
    let (method, path, body) = op.elsa_request();
    assert_eq!(sent.len(), 1, "{op:?}: one operation request: {sent:#?}");
    let request = &sent[0];
    assert_eq!(
        (request.method.as_str(), request.path_and_query.as_str()),
        (method, path.as_str()),
        "{op:?}"
    );
    assert_eq!(request.body, body, "{op:?}");
    assert_eq!(
        request.authorization.as_deref(),
        Some(format!("ApiKey {ELSA_KEY}").as_str())
    );
    assert_eq!(request.tenant.as_deref(), Some(ELSA_TENANT));

    match op {
        Op::Retry => {
            let run = elsa_instance(&elsa, FAULTED).expect("still there");
            assert_eq!(run_state(&run), ("Running", "Executing"), "{run}");
        }
        Op::Cancel => {
            let run = elsa_instance(&elsa, SUSPENDED).expect("still there");
            assert_eq!(run_state(&run), ("Finished", "Cancelled"), "{run}");
        }
        Op::Restart => {
            let new_id = target["outcome"]["newInstanceId"].as_str().unwrap();
            let run = elsa_instance(&elsa, new_id).expect("the dispatched instance");
            assert_eq!(run["definitionId"], ORDER_APPROVAL, "{run}");
            assert_eq!(run["version"], 1, "{run}");
            assert_eq!(run["correlationId"], "order-1001", "{run}");
            let old = elsa_instance(&elsa, FINISHED).expect("still there");
            assert_eq!(run_state(&old), ("Finished", "Finished"), "{old}");
        }
        Op::Publish => {
            let flags: Vec<(i64, bool)> = elsa
                .versions(ORDER_APPROVAL)
                .iter()
                .map(|v| (v["version"].as_i64().unwrap(), v["isPublished"] == true))
                .collect();
            assert_eq!(flags, vec![(1, false), (2, true)]);
        }
        Op::Unpublish => {
            let versions = elsa.versions(HELLO_WORLD);
            assert_eq!(versions.len(), 1);
            assert_eq!(versions[0]["isPublished"], false, "{:?}", versions[0]);
        }
        Op::Delete => {
            assert!(elsa.versions(INVENTORY_SYNC).is_empty());
            assert!(elsa_instance(&elsa, FAULTED).is_none(), "its run went too");
        }
    }
    check_audit(&server, op, &id, &applied).await;

    // Applying again sends nothing more.
    let count = elsa.requests().len();
    let (status, _) = server.proposal_action(ALICE_KEY, &id, "apply").await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(
        elsa.requests()[count..].iter().all(is_read),
        "{op:?}: nothing operational after the second apply"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_elsa_each_operation_sends_exactly_its_request_and_only_when_applied() {
    for op in Op::ALL {
        round_trip_over_elsa(op).await;
    }
}

// ---------------------------------------------------------------------------------------
// 3. A stale target is skipped.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_whose_state_changed_before_apply_is_skipped_as_stale() {
    const SECOND: &str = "acme-second-suspended-run";
    let server = TestServer::start(two_tenants()).await;
    seed_copies(&server, SUSPENDED, &[SECOND]);
    enable_operations(&server, ALICE_KEY).await;
    let client = mcp(&server, ALICE_KEY, OPERATOR).await;
    let answer = propose(
        &client,
        "instance.proposeCancel",
        json!({"instanceIds": [SUSPENDED, SECOND], "rationale": "Both are stuck."}),
    )
    .await;
    let _ = client.cancel().await;
    let id = proposal_id(&answer);
    let (status, approved) = server.proposal_action(ALICE_KEY, &id, "approve").await;
    assert_eq!(status, StatusCode::OK, "{approved}");

    // Meanwhile the second run finishes on its own.
    let mut finished = instance(&server, SECOND).await.unwrap();
    finished.set_status(
        WorkflowStatus::Finished,
        WorkflowSubStatus::Finished,
        chrono::Utc::now(),
    );
    server.workflows.insert_instance(&acme(), finished);

    // The reviewer sees the change before applying.
    let view = proposal(&server, ALICE_KEY, &id).await;
    let targets = &view["operation"]["targets"];
    assert_eq!(target_ids(&view), vec![SUSPENDED, SECOND], "{view}");
    assert_eq!(targets[1]["proposed"]["subStatus"], "Suspended", "{view}");
    assert_eq!(targets[1]["current"]["subStatus"], "Finished", "{view}");
    assert_eq!(targets[0]["current"], targets[0]["proposed"], "{view}");

    let (status, applied) = server.proposal_action(ALICE_KEY, &id, "apply").await;
    assert_eq!(status, StatusCode::OK, "{applied}");
    assert_eq!(applied["status"], "Applied", "{applied}");
    let targets = &applied["operation"]["targets"];
    assert_eq!(targets[0]["outcome"]["result"], "Done", "{applied}");
    let stale = &targets[1]["outcome"];
    assert_eq!(stale["result"], "Stale", "{applied}");
    let reason = stale["reason"].as_str().expect("a reason");
    assert!(
        reason.contains(SECOND) && reason.contains("Running/Suspended"),
        "{reason}"
    );
    assert!(reason.contains("Finished/Finished"), "{reason}");

    // The stale one was not acted on; the other was cancelled.
    assert_eq!(
        state_of(&instance(&server, SECOND).await.unwrap()),
        (WorkflowStatus::Finished, WorkflowSubStatus::Finished)
    );
    assert_eq!(
        state_of(&instance(&server, SUSPENDED).await.unwrap()),
        (WorkflowStatus::Finished, WorkflowSubStatus::Cancelled)
    );

    let records = audit_of(&server, &id).await;
    let mut outcomes: Vec<(String, String, String)> = with_action(&records, "proposal.target")
        .into_iter()
        .map(|r| {
            (
                r["details"]["target"].as_str().unwrap().to_owned(),
                r["details"]["outcome"]["result"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                r["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    outcomes.sort();
    let mut expected = vec![
        (
            SUSPENDED.to_owned(),
            "Done".to_owned(),
            "Success".to_owned(),
        ),
        (SECOND.to_owned(), "Stale".to_owned(), "Failure".to_owned()),
    ];
    expected.sort();
    assert_eq!(outcomes, expected, "{records:#?}");
    let stale_record = with_action(&records, "proposal.target")
        .into_iter()
        .find(|r| r["details"]["target"] == SECOND)
        .unwrap();
    assert_eq!(stale_record["details"]["outcome"]["reason"], reason);
}

// ---------------------------------------------------------------------------------------
// 4. Denials.

/// `two_tenants()` plus carol in acme, who may propose, apply and publish but not operate
/// on instances.
fn with_carol() -> WeaverConfig {
    let mut config = two_tenants();
    config.auth.api_keys.push(ApiKeyConfig {
        key: Some(CAROL_KEY.into()),
        key_env: None,
        actor: "carol".into(),
        tenant: "acme".into(),
        permissions: [
            "read:workflows",
            "read:workflow-instances",
            "read:activities",
            "propose:workflows",
            "apply:workflows",
            "publish:workflows",
        ]
        .iter()
        .map(|p| (*p).to_owned())
        .collect(),
    });
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_are_refused_to_whoever_may_not_propose_approve_or_apply_them() {
    const ACME_ONLY: &str = "acme-only-faulted-run";
    let server = TestServer::start(with_carol()).await;
    seed_copies(&server, FAULTED, &[ACME_ONLY]);
    let alice = mcp(&server, ALICE_KEY, OPERATOR).await;
    let retry = json!({"instanceIds": [FAULTED], "rationale": "A transient fault."});

    // Off until an administrator enables it.
    let error = refused(&alice, "instance.proposeRetry", retry.clone()).await;
    assert_eq!(
        (error["status"].as_u64(), &error["code"]),
        (Some(403), &json!("tool_disabled"))
    );
    enable_operations(&server, ALICE_KEY).await;
    server.enable_tool(GINA_KEY, "instance.proposeRetry").await;

    // Only the operator agent has the tools.
    let (_, listed) = server
        .get(&format!("/ai/tools?agent={OPERATOR}"), ALICE_KEY)
        .await;
    let operator_tools = listed.to_string();
    for tool in TOOLS {
        assert!(operator_tools.contains(tool), "{tool}: {listed}");
    }
    for agent in ["workflow-author", "instance-diagnostics"] {
        let (_, listed) = server
            .get(&format!("/ai/tools?agent={agent}"), ALICE_KEY)
            .await;
        let client = mcp(&server, ALICE_KEY, agent).await;
        let names: BTreeSet<String> = client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect();
        for tool in TOOLS.iter().chain(&GROUNDING_TOOLS) {
            assert!(!listed.to_string().contains(tool), "{agent} lists {tool}");
            assert!(!names.contains(*tool), "{agent} offers {tool} over MCP");
        }
        let error = refused(&client, "instance.proposeRetry", retry.clone()).await;
        assert_eq!(error["status"], 403, "{agent}: {error}");
        assert_eq!(error["code"], "tool_not_in_agent_scope", "{agent}: {error}");
        let _ = client.cancel().await;
    }

    // Bob may only read workflows.
    let bob = mcp(&server, BOB_KEY, OPERATOR).await;
    let error = refused(&bob, "instance.proposeRetry", retry.clone()).await;
    assert_eq!(error["status"], 403, "{error}");
    assert_eq!(error["code"], "permission_denied", "{error}");
    let _ = bob.cancel().await;

    // Gina (globex) cannot reach acme's run: not found, like a missing one.
    let gina = mcp(&server, GINA_KEY, OPERATOR).await;
    let error = refused(
        &gina,
        "instance.proposeRetry",
        json!({"instanceIds": [ACME_ONLY], "rationale": "Not ours."}),
    )
    .await;
    assert_eq!(error["status"], 404, "{error}");
    assert_eq!(error["code"], "instance_not_found", "{error}");
    assert!(inbox(&server, GINA_KEY).await.is_empty());
    let _ = gina.cancel().await;

    // The state must fit the operation.
    let error = refused(
        &alice,
        "instance.proposeRetry",
        json!({"instanceIds": [SUSPENDED], "rationale": "It is stuck."}),
    )
    .await;
    assert_eq!(error["status"], 409, "{error}");
    assert_eq!(error["code"], "instance_not_faulted", "{error}");
    let error = refused(
        &alice,
        "workflow.proposePublish",
        json!({"definitionId": HELLO_WORLD, "rationale": "Publish it."}),
    )
    .await;
    assert_eq!(error["status"], 409, "{error}");
    assert_eq!(error["code"], "already_published", "{error}");
    assert!(
        inbox(&server, ALICE_KEY).await.is_empty(),
        "no refused call left a proposal"
    );

    // Carol may apply and publish, but not operate on instances: she cannot propose,
    // approve or apply a retry.
    let carol = mcp(&server, CAROL_KEY, OPERATOR).await;
    let error = refused(&carol, "instance.proposeRetry", retry.clone()).await;
    assert_eq!(
        (error["status"].as_u64(), &error["code"]),
        (Some(403), &json!("permission_denied")),
        "{error}"
    );
    let _ = carol.cancel().await;
    let id = proposal_id(&propose(&alice, "instance.proposeRetry", retry).await);
    let seen = proposal(&server, CAROL_KEY, &id).await;
    let actions = strings(&seen["allowedActions"]);
    assert!(!actions.contains(&"approve"), "{seen}");
    let (status, body) = server.proposal_action(CAROL_KEY, &id, "approve").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["code"], "permission_denied", "{body}");
    let (status, approved) = server.proposal_action(ALICE_KEY, &id, "approve").await;
    assert_eq!(status, StatusCode::OK, "{approved}");
    let (status, body) = server.proposal_action(CAROL_KEY, &id, "apply").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["code"], "permission_denied", "{body}");
    assert_eq!(
        state_of(&instance(&server, FAULTED).await.unwrap()),
        (WorkflowStatus::Finished, WorkflowSubStatus::Faulted),
        "nothing was retried"
    );
    assert_eq!(
        proposal(&server, ALICE_KEY, &id).await["status"],
        "Approved"
    );
    let records = audit_of(&server, &id).await;
    let denied: Vec<&str> = records
        .iter()
        .filter(|r| r["actorId"] == "carol" && r["outcome"] == "Denied")
        .map(|r| r["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        denied,
        vec!["proposal.approved", "proposal.applied"],
        "{records:#?}"
    );
    assert!(with_action(&records, "proposal.target").is_empty());

    // Another tenant cannot see or act on it.
    let (status, body) = server.get(&format!("/ai/proposals/{id}"), GINA_KEY).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    for action in ["approve", "apply"] {
        let (status, body) = server.proposal_action(GINA_KEY, &id, action).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{action}: {body}");
        assert_eq!(body["code"], "proposal_not_found", "{action}: {body}");
    }
    let _ = alice.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grounding_spellings_reach_the_same_tools() {
    // Under the contract names, a grounding name still reaches its tool.
    let server = TestServer::start(two_tenants()).await;
    enable_operations(&server, ALICE_KEY).await;
    let client = mcp(&server, ALICE_KEY, OPERATOR).await;
    let retry = propose(
        &client,
        "instances.proposeRetry",
        json!({"instanceIds": [FAULTED], "rationale": "A transient fault."}),
    )
    .await;
    assert_eq!(retry["kind"], "Retry", "{retry}");
    let delete = propose(
        &client,
        "workflows.proposeDelete",
        json!({"definitionId": HELLO_WORLD, "rationale": "Unused."}),
    )
    .await;
    assert_eq!(delete["kind"], "Delete", "{delete}");
    let _ = client.cancel().await;

    // Under the grounding names, the operator is offered them by those names.
    let mut config = two_tenants();
    config.tools.names = ToolNaming::Grounding;
    let server = TestServer::start(config).await;
    enable_operations(&server, ALICE_KEY).await;
    let client = mcp(&server, ALICE_KEY, OPERATOR).await;
    let names: BTreeSet<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect();
    for tool in GROUNDING_TOOLS {
        assert!(names.contains(tool), "{tool}: {names:?}");
    }
    let cancel = propose(
        &client,
        "instances.proposeCancel",
        json!({"instanceIds": [SUSPENDED], "rationale": "Stuck."}),
    )
    .await;
    assert_eq!(cancel["kind"], "Cancel", "{cancel}");
    let _ = client.cancel().await;
}

// ---------------------------------------------------------------------------------------
// 5. Dropping targets before approval.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_drops_instances_from_a_retry_before_approving_it() {
    const SECOND: &str = "acme-faulted-run-2";
    const THIRD: &str = "acme-faulted-run-3";
    let server = TestServer::start(two_tenants()).await;
    seed_copies(&server, FAULTED, &[SECOND, THIRD]);
    enable_operations(&server, ALICE_KEY).await;
    let client = mcp(&server, ALICE_KEY, OPERATOR).await;
    let answer = propose(
        &client,
        "instance.proposeRetry",
        json!({"instanceIds": [FAULTED, SECOND, THIRD], "rationale": "The host is back."}),
    )
    .await;
    let publish = proposal_id(
        &propose(
            &client,
            "workflow.proposePublish",
            json!({"definitionId": ORDER_APPROVAL, "rationale": "Ready."}),
        )
        .await,
    );
    let _ = client.cancel().await;
    let id = proposal_id(&answer);
    let view = proposal(&server, ALICE_KEY, &id).await;
    assert_eq!(target_ids(&view), vec![FAULTED, SECOND, THIRD], "{view}");
    assert!(
        strings(&view["allowedActions"]).contains(&"dropTargets"),
        "{view}"
    );
    let revision = view["revision"].as_u64().unwrap();

    // Drop one: two remain, in a new revision, audited.
    let (status, dropped) = drop_targets(&server, ALICE_KEY, &id, &[SECOND]).await;
    assert_eq!(status, StatusCode::OK, "{dropped}");
    assert_eq!(dropped["status"], "Validated", "{dropped}");
    assert_eq!(target_ids(&dropped), vec![FAULTED, THIRD], "{dropped}");
    assert_eq!(
        dropped["revision"].as_u64(),
        Some(revision + 1),
        "{dropped}"
    );
    let records = audit_of(&server, &id).await;
    let audited = with_action(&records, "proposal.targets_dropped");
    assert_eq!(audited.len(), 1, "{records:#?}");
    assert_eq!(audited[0]["outcome"], "Success", "{records:#?}");
    assert_eq!(audited[0]["actorId"], "alice");
    assert_eq!(audited[0]["details"]["dropped"], json!([SECOND]));
    assert_eq!(audited[0]["details"]["remaining"], 2);

    // What cannot be dropped: all of them, nothing, a non-target, a definition.
    for (targets, code) in [
        (vec![FAULTED, THIRD], "targets_required"),
        (vec![], "targets_required"),
        (vec!["not-a-target"], "unknown_target"),
        (vec![SECOND], "unknown_target"),
    ] {
        let (status, body) = drop_targets(&server, ALICE_KEY, &id, &targets).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{targets:?}: {body}");
        assert_eq!(body["code"], code, "{targets:?}: {body}");
    }
    let (status, body) = drop_targets(&server, ALICE_KEY, &publish, &[ORDER_APPROVAL]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["code"], "not_droppable", "{body}");
    let unchanged = proposal(&server, ALICE_KEY, &id).await;
    assert_eq!(target_ids(&unchanged), vec![FAULTED, THIRD]);
    assert_eq!(unchanged["revision"].as_u64(), Some(revision + 1));

    // Bob may not; after approval nobody may.
    let (status, body) = drop_targets(&server, BOB_KEY, &id, &[THIRD]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, approved) = server.proposal_action(ALICE_KEY, &id, "approve").await;
    assert_eq!(status, StatusCode::OK, "{approved}");
    assert!(
        !strings(&approved["allowedActions"]).contains(&"dropTargets"),
        "{approved}"
    );
    let (status, body) = drop_targets(&server, ALICE_KEY, &id, &[THIRD]).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["currentState"], "Approved", "{body}");

    // The apply retries only the remaining two.
    let (status, applied) = server.proposal_action(ALICE_KEY, &id, "apply").await;
    assert_eq!(status, StatusCode::OK, "{applied}");
    assert_eq!(target_ids(&applied), vec![FAULTED, THIRD]);
    for (run, expected) in [
        (
            FAULTED,
            (WorkflowStatus::Running, WorkflowSubStatus::Executing),
        ),
        (
            THIRD,
            (WorkflowStatus::Running, WorkflowSubStatus::Executing),
        ),
        (
            SECOND,
            (WorkflowStatus::Finished, WorkflowSubStatus::Faulted),
        ),
    ] {
        assert_eq!(
            state_of(&instance(&server, run).await.unwrap()),
            expected,
            "{run}"
        );
    }
    let records = audit_of(&server, &id).await;
    assert_eq!(with_action(&records, "proposal.target").len(), 2);
}

/// An apply whose backend fails while it re-reads a target acts on nothing, gives up its
/// claim and says so in the trail; once Elsa is back the proposal is applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_that_fails_before_acting_can_be_applied_again_once_elsa_is_back() {
    let elsa = elsa_with_samples().await;
    let server = start_over_elsa(&elsa).await;
    enable_operations(&server, ALICE_KEY).await;
    let client = mcp(&server, ALICE_KEY, OPERATOR).await;
    let id = proposal_id(&propose(&client, Op::Cancel.tool(), Op::Cancel.arguments()).await);
    let _ = client.cancel().await;
    let (status, approved) = server.proposal_action(ALICE_KEY, &id, "approve").await;
    assert_eq!(status, StatusCode::OK, "{approved}");

    // Elsa fails while the apply re-reads the target: nothing is acted on.
    elsa.fail_with(Some(503));
    let (status, body) = server.proposal_action(ALICE_KEY, &id, "apply").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    elsa.fail_with(None);
    let run = elsa_instance(&elsa, SUSPENDED).unwrap();
    assert_eq!(run_state(&run), ("Running", "Suspended"), "{run}");

    // The proposal is still approved and nothing happened, so it can be applied now.
    let view = proposal(&server, ALICE_KEY, &id).await;
    assert!(
        strings(&view["allowedActions"]).contains(&"apply"),
        "the failed apply still holds its claim: {view}"
    );
    let records = audit_of(&server, &id).await;
    let applies: Vec<&str> = with_action(&records, "proposal.applied")
        .iter()
        .map(|r| r["outcome"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(applies, ["Success", "Failure"], "claimed, then failed");
    let (status, applied) = server.proposal_action(ALICE_KEY, &id, "apply").await;
    assert_eq!(status, StatusCode::OK, "{applied}");
    assert_eq!(
        applied["operation"]["targets"][0]["outcome"]["result"],
        "Done"
    );
}
