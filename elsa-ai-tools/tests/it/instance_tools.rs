//! `instance.get`, `instance.search`, `instance.getErrors`, `instance.executionHistory`,
//! `instance.summarize`, `instance.getActivityState` and `incidents.search`, called through
//! the `ToolGovernor` over the fixture instances plus failed runs seeded here (some with
//! Elsa's activity execution records and execution log).

use crate::support;

use elsa_ai_abstractions::{AiCaller, Permission};
use elsa_ai_host::REDACTED;
use elsa_ai_host::testing::governance::{TEST_TENANT, all_permissions};
use elsa_ai_tools::names;
use elsa_workflows::{
    InstanceQuery, PageRequest, TenantId, WorkflowInstance, WorkflowInstanceStore,
    WorkflowSubStatus,
};
use serde_json::{Value, json};
use support::{GLOBEX, GLOBEX_INSTANCE, World, content, faulted_run, refusal, world};
use weaver_testkit::runs::{
    FaultedRun, RUN_DEFINITION, SECRET_COOKIE, SECRET_HEADER, SECRET_VARIABLE, UPLOAD_EXECUTION,
};

/// Every instance of the caller's tenant, read straight from the backend.
async fn acme_instances(world: &World) -> Vec<WorkflowInstance> {
    let store: &dyn WorkflowInstanceStore = world.backend.as_ref();
    store
        .search(
            &TenantId::new(TEST_TENANT),
            &InstanceQuery {
                page: PageRequest::new(0, PageRequest::MAX_LIMIT),
                ..InstanceQuery::default()
            },
        )
        .await
        .expect("search")
        .items
}

/// The world plus a failed run with Elsa's complete execution history.
fn world_with_failed_run() -> World {
    let world = world();
    world.backend.insert_instance(
        &TenantId::new(TEST_TENANT),
        faulted_run(
            "run-http-1",
            "orders",
            "2024-05-01T10:00:00Z",
            "CallApi",
            "Elsa.SendHttpRequest",
            "System.Net.Http.HttpRequestException",
        ),
    );
    world
}

fn fixture_faulted(instances: &[WorkflowInstance]) -> &WorkflowInstance {
    instances
        .iter()
        .find(|i| i.is_faulted() && !i.incidents().is_empty() && i.id() != "run-http-1")
        .expect("the fixtures hold a faulted instance with an incident")
}

#[tokio::test]
async fn get_returns_summary_state_incidents_and_last_executions() {
    let world = world();
    let instances = acme_instances(&world).await;
    assert!(instances.len() >= 3);
    for instance in &instances {
        let result = world
            .call(names::INSTANCE_GET, json!({"instanceId": instance.id()}))
            .await;
        let got = content(&result);
        assert_eq!(got["instanceId"], instance.id());
        assert_eq!(got["status"], instance.status().as_str());
        assert_eq!(got["subStatus"], instance.sub_status().as_str());
        assert_eq!(got["definitionId"].as_str(), instance.definition_id());
        assert_eq!(got["incidentCount"], instance.incident_count());
        assert_eq!(
            got["lastExecutions"]["total"],
            instance.execution_records().len()
        );
        assert!(got.get("variables").is_none() && got.get("properties").is_none());
    }
    let faulted = fixture_faulted(&instances);
    let got = world
        .call(names::INSTANCE_GET, json!({"instanceId": faulted.id()}))
        .await;
    let got = content(&got);
    let incident = &faulted.incidents()[0];
    assert_eq!(
        got["incidents"]["items"][0]["activityId"].as_str(),
        incident.activity_id.as_deref()
    );
    assert_eq!(
        got["incidents"]["items"][0]["exception"]["type"].as_str(),
        incident
            .exception
            .as_ref()
            .and_then(|e| e.short_type_name())
    );
    assert!(
        got["incidents"]["items"][0]["exception"]
            .get("stackTrace")
            .is_none(),
        "instance.get leaves stack traces to instance.getErrors"
    );
    assert_eq!(got["bookmarks"]["total"], faulted.bookmarks().len());
}

#[tokio::test]
async fn get_refuses_unknown_foreign_and_unpermitted_reads_and_bad_arguments() {
    let world = world();
    let known = acme_instances(&world).await[0].id().to_owned();
    for tool in [
        names::INSTANCE_GET,
        names::INSTANCE_ERRORS,
        names::EXECUTION_HISTORY,
    ] {
        world
            .assert_standard_refusals(
                tool,
                &Permission::READ_WORKFLOW_INSTANCES,
                |id| json!({"instanceId": id}),
                &known,
                GLOBEX_INSTANCE,
            )
            .await;
        world
            .assert_invalid_arguments(
                tool,
                &[
                    json!({}),
                    json!({"instanceId": ""}),
                    json!({"instanceId": ["a"]}),
                    json!({"instanceId": "a", "tenant": "globex"}),
                ],
            )
            .await;
    }
    world
        .assert_invalid_arguments(
            names::EXECUTION_HISTORY,
            &[
                json!({"instanceId": "a", "limit": 0}),
                json!({"instanceId": "a", "offset": "1"}),
            ],
        )
        .await;
    // The other tenant reads its own run.
    let gina = AiCaller::new("gina", GLOBEX, all_permissions());
    let own = world
        .call_as(
            gina,
            names::INSTANCE_ERRORS,
            json!({"instanceId": GLOBEX_INSTANCE}),
        )
        .await;
    assert_eq!(content(&own)["primaryError"]["activityType"], "Globex.Pay");
}

#[tokio::test]
async fn search_filters_by_status_definition_and_time_and_pages() {
    let world = world_with_failed_run();
    let instances = acme_instances(&world).await;
    // Without a workflow, correlation id or time range only an analyst searches everything.
    let all = world
        .call_as_analyst(names::INSTANCE_SEARCH, json!({"limit": 50}))
        .await;
    let all = content(&all);
    assert_eq!(all["total"], instances.len());
    assert!(
        support::summary(all).contains("whole tenant"),
        "{}",
        all["summary"]
    );
    assert!(
        !all.to_string().contains(GLOBEX),
        "another tenant's runs are never listed"
    );

    let faulted = world
        .call_as_analyst(names::INSTANCE_SEARCH, json!({"subStatus": "Faulted"}))
        .await;
    let faulted = content(&faulted);
    let expected = instances
        .iter()
        .filter(|i| i.sub_status() == WorkflowSubStatus::Faulted)
        .count();
    assert_eq!(faulted["total"], expected);
    assert!(
        faulted["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|row| row["subStatus"] == "Faulted")
    );

    let running = world
        .call_as_analyst(names::INSTANCE_SEARCH, json!({"status": "Running"}))
        .await;
    assert!(
        content(&running)["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|row| row["status"] == "Running")
    );

    let by_definition = world
        .call(names::INSTANCE_SEARCH, json!({"definitionId": "orders"}))
        .await;
    let by_definition = content(&by_definition);
    assert_eq!(by_definition["total"], 1);
    assert_eq!(by_definition["items"][0]["instanceId"], "run-http-1");
    assert_eq!(
        support::summary(by_definition),
        "Workflow instances matching: 1; showing all 1."
    );
    assert_eq!(support::evidence(by_definition), ["instance:run-http-1"]);

    let window = world
        .call(
            names::INSTANCE_SEARCH,
            json!({"from": "2024-05-01T00:00:00Z", "to": "2024-05-02T00:00:00Z"}),
        )
        .await;
    assert_eq!(content(&window)["total"], 1);
    let before = world
        .call(
            names::INSTANCE_SEARCH,
            json!({"to": "2024-04-30T00:00:00Z"}),
        )
        .await;
    assert!(
        content(&before)["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|row| row["instanceId"] != "run-http-1")
    );

    let page = world
        .call_as_analyst(names::INSTANCE_SEARCH, json!({"limit": 1}))
        .await;
    let page = content(&page);
    assert_eq!(
        (page["returned"].as_u64(), page["truncated"].as_bool()),
        (Some(1), Some(true))
    );
    assert_eq!(page["nextOffset"], 1);

    let backwards = world
        .call(
            names::INSTANCE_SEARCH,
            json!({"from": "2024-05-02T00:00:00Z", "to": "2024-05-01T00:00:00Z"}),
        )
        .await;
    let (status, code, _) = refusal(&backwards);
    assert_eq!((status, code.as_str()), (400, "invalid_time_range"));
    world
        .assert_invalid_arguments(
            names::INSTANCE_SEARCH,
            &[
                json!({"subStatus": "Broken"}),
                json!({"status": "faulted"}),
                json!({"from": "yesterday"}),
                json!({"limit": 0}),
                json!({"definitionIds": ["x"]}),
            ],
        )
        .await;
    let denied = world
        .call_as(
            world.without(&Permission::READ_WORKFLOW_INSTANCES),
            names::INSTANCE_SEARCH,
            json!({}),
        )
        .await;
    assert_eq!(refusal(&denied).1, "permission_denied");
}

#[tokio::test]
async fn get_errors_names_the_failing_activity_type_primary_error_and_evidence() {
    let world = world_with_failed_run();
    let result = world
        .call(names::INSTANCE_ERRORS, json!({"instanceId": "run-http-1"}))
        .await;
    let got = content(&result);
    assert_eq!(got["failed"], true);
    let primary = &got["primaryError"];
    assert_eq!(primary["activityId"], "CallApi");
    assert_eq!(primary["activityType"], "Elsa.SendHttpRequest");
    assert_eq!(primary["activityName"], "Call the API");
    assert_eq!(
        primary["exception"]["type"],
        "System.Net.Http.HttpRequestException"
    );
    assert_eq!(
        primary["exception"]["rootCause"]["type"],
        "System.Net.Sockets.SocketException"
    );
    assert_eq!(primary["message"], "CallApi failed in run run-http-1");
    assert_eq!(primary["stackTop"].as_array().unwrap().len(), 3);
    assert_eq!(primary["evidence"], "$.incidents[0]");
    assert_eq!(got["incidents"]["total"], 1);
    assert_eq!(got["incidents"]["items"][0]["evidence"], "$.incidents[0]");
    let faulted = &got["faultedExecutions"];
    assert_eq!(
        faulted["total"], 1,
        "only the faulted execution is evidence"
    );
    assert_eq!(faulted["items"][0]["activityId"], "CallApi");
    assert_eq!(faulted["items"][0]["status"], "Faulted");
    assert_eq!(
        faulted["items"][0]["evidence"],
        "$.activityExecutionRecords[2]"
    );
}

#[tokio::test]
async fn get_errors_reads_the_fixture_failure_and_reports_healthy_runs_as_such() {
    let world = world();
    let instances = acme_instances(&world).await;
    let faulted = fixture_faulted(&instances);
    let incident = &faulted.incidents()[0];
    let got = world
        .call(names::INSTANCE_ERRORS, json!({"instanceId": faulted.id()}))
        .await;
    let got = content(&got);
    let primary = &got["primaryError"];
    assert_eq!(
        primary["activityId"].as_str(),
        incident.activity_id.as_deref()
    );
    assert_eq!(
        primary["activityType"].as_str(),
        incident.activity_type.as_deref()
    );
    assert_eq!(
        primary["exception"]["type"].as_str(),
        incident
            .exception
            .as_ref()
            .and_then(|e| e.short_type_name())
    );
    assert_eq!(primary["evidence"].as_str(), Some(incident.path.as_str()));
    assert!(
        got["faultedExecutions"]["total"].as_u64().unwrap() >= 1,
        "the faulted execution context is evidence too"
    );

    let healthy = instances
        .iter()
        .find(|i| !i.is_faulted() && i.incidents().is_empty())
        .expect("a healthy fixture run");
    let got = world
        .call(names::INSTANCE_ERRORS, json!({"instanceId": healthy.id()}))
        .await;
    let got = content(&got);
    assert_eq!(got["failed"], false);
    assert!(got.get("primaryError").is_none());
    assert_eq!(got["incidents"]["total"], 0);
}

#[tokio::test]
async fn execution_history_is_ordered_and_paged() {
    let world = world_with_failed_run();
    let first = world
        .call(
            names::EXECUTION_HISTORY,
            json!({"instanceId": "run-http-1", "limit": 2}),
        )
        .await;
    let first = content(&first);
    assert_eq!(first["completeHistory"], true);
    assert_eq!(first["total"], 3);
    assert_eq!(first["truncated"], true);
    let activities: Vec<&str> = first["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["activityId"].as_str())
        .collect();
    assert_eq!(activities, ["Flowchart1", "WriteLine1"]);
    assert_eq!(first["items"][1]["durationMs"], 50);
    let rest = world
        .call(
            names::EXECUTION_HISTORY,
            json!({"instanceId": "run-http-1", "offset": 2}),
        )
        .await;
    let rest = content(&rest);
    assert_eq!(rest["items"][0]["activityId"], "CallApi");
    assert_eq!(
        rest["items"][0]["exception"]["type"],
        "System.Net.Http.HttpRequestException"
    );
    assert_eq!(rest["truncated"], false);

    // A saved state carries only the executions still alive: the tool says so.
    let instances = acme_instances(&world).await;
    let state = fixture_faulted(&instances);
    let got = world
        .call(names::EXECUTION_HISTORY, json!({"instanceId": state.id()}))
        .await;
    let got = content(&got);
    assert_eq!(got["completeHistory"], false);
    let starts: Vec<&str> = got["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["startedAt"].as_str())
        .collect();
    let mut sorted = starts.clone();
    sorted.sort();
    assert_eq!(starts, sorted, "ordered by start time");
}

/// The world plus Elsa's full records of one faulted run for acme (`run-1`) and of a run
/// with the same execution ids for globex (`run-g`).
fn world_with_recorded_runs() -> World {
    let world = world();
    FaultedRun::new("run-1", "2024-06-03T10:00:00Z")
        .seed(&world.backend, &TenantId::new(TEST_TENANT));
    FaultedRun::new("run-g", "2024-06-05T10:00:00Z").seed(&world.backend, &TenantId::new(GLOBEX));
    world
}

#[tokio::test]
async fn summarize_names_the_failing_activity_the_incident_and_the_path_that_ran() {
    let world = world_with_recorded_runs();
    let summary = world
        .call(names::INSTANCE_SUMMARIZE, json!({"instanceId": "run-1"}))
        .await;
    let summary = content(&summary);
    assert_eq!(
        (summary["status"].as_str(), summary["subStatus"].as_str()),
        (Some("Finished"), Some("Faulted"))
    );
    assert_eq!(summary["failed"], true);
    let failing = &summary["failingActivity"];
    assert_eq!(failing["executionId"], UPLOAD_EXECUTION);
    assert_eq!(failing["activityId"], "UploadExport");
    assert_eq!(failing["type"], "Elsa.SendHttpRequest");
    assert_eq!(
        failing["exception"]["type"],
        "System.Net.Http.HttpRequestException"
    );
    assert_eq!(summary["incident"]["activityId"], "UploadExport");
    assert_eq!(summary["completePath"], true);
    let path: Vec<&str> = summary["path"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["activityId"].as_str().unwrap())
        .collect();
    assert_eq!(
        path,
        ["Flowchart1", "Start1", "CollectInvoices", "UploadExport"]
    );
    assert_eq!(summary["path"]["items"][3]["status"], "Faulted");
    assert_eq!(summary["path"]["items"][2]["durationMs"], 20);
    assert_eq!(summary["lastEvents"]["total"], 7);
    let last = summary["lastEvents"]["items"]
        .as_array()
        .unwrap()
        .last()
        .unwrap();
    assert_eq!(
        (last["event"].as_str(), last["activityId"].as_str()),
        (Some("Faulted"), Some("UploadExport"))
    );
    assert_eq!(summary["lastEvents"]["items"][0]["sequence"], 0);

    // A run with no records in the store: what its document carries, marked incomplete.
    let instances = acme_instances(&world).await;
    let fixture = fixture_faulted(&instances);
    let partial = world
        .call(
            names::INSTANCE_SUMMARIZE,
            json!({"instanceId": fixture.id()}),
        )
        .await;
    let partial = content(&partial);
    assert_eq!(partial["failed"], true);
    assert_eq!(partial["completePath"], false);
    let incident = &fixture.incidents()[0];
    assert_eq!(
        partial["failingActivity"]["activityId"].as_str(),
        incident.activity_id.as_deref()
    );
    assert_eq!(partial["lastEvents"]["total"], 0);
    // A healthy run is not failed and names no failing activity.
    let healthy = instances
        .iter()
        .find(|i| !i.is_faulted() && i.incidents().is_empty())
        .expect("a healthy fixture run");
    let healthy = world
        .call(
            names::INSTANCE_SUMMARIZE,
            json!({"instanceId": healthy.id()}),
        )
        .await;
    assert_eq!(content(&healthy)["failed"], false);
    assert!(content(&healthy).get("failingActivity").is_none());

    world
        .assert_standard_refusals(
            names::INSTANCE_SUMMARIZE,
            &Permission::READ_WORKFLOW_INSTANCES,
            |id| json!({"instanceId": id}),
            "run-1",
            "run-g",
        )
        .await;
    world
        .assert_invalid_arguments(
            names::INSTANCE_SUMMARIZE,
            &[
                json!({}),
                json!({"instanceId": ""}),
                json!({"instanceId": 7}),
                json!({"instanceId": "run-1", "verbose": true}),
            ],
        )
        .await;
}

#[tokio::test]
async fn activity_state_shows_inputs_outputs_and_variables_by_name_with_secrets_redacted() {
    let world = world_with_recorded_runs();
    // No selector: the failing execution.
    let failing = world
        .call(
            names::INSTANCE_ACTIVITY_STATE,
            json!({"instanceId": "run-1"}),
        )
        .await;
    let text = serde_json::to_string(&failing).unwrap();
    let state = content(&failing);
    assert_eq!(state["executionId"], UPLOAD_EXECUTION);
    assert_eq!(state["status"], "Faulted");
    assert_eq!(
        state["inputs"]["Url"],
        "https://exports.example.com/invoices"
    );
    assert_eq!(state["inputs"]["Method"], "PUT");
    assert_eq!(state["inputs"]["Content"]["invoices"], 42);
    assert_eq!(state["outputs"]["StatusCode"], 503);
    assert_eq!(
        state["variables"]["InvoiceCount"], 42,
        "variables are keyed by name: {state}"
    );
    assert_eq!(
        state["exception"]["type"],
        "System.Net.Http.HttpRequestException"
    );
    assert_eq!(state["fromExecutionRecord"], true);
    // Secrets under sensitive names are redacted by the governor before anyone sees them.
    assert_eq!(state["inputs"]["Authorization"], REDACTED);
    assert_eq!(state["variables"]["ApiToken"], REDACTED);
    assert_eq!(state["outputs"]["ResponseHeaders"]["Set-Cookie"], REDACTED);
    let audit =
        serde_json::to_string(&world.harness.audit.events(&TenantId::new(TEST_TENANT))).unwrap();
    for secret in [SECRET_HEADER, SECRET_VARIABLE, SECRET_COOKIE] {
        assert!(!text.contains(secret), "{secret} reached the result");
        assert!(!audit.contains(secret), "{secret} reached the audit log");
    }

    // A variable the definition does not declare (its name unknown) shows no value.
    world.backend.insert_activity_executions(
        &TenantId::new(TEST_TENANT),
        "run-1",
        [elsa_workflows::ActivityExecutionRecord::from_json(&json!({
            "id": "exec-workflow", "activityId": "Workflow1", "activityNodeId": "Workflow1",
            "activityType": "Elsa.Workflow", "status": "Faulted",
            "startedAt": "2024-06-03T09:59:59Z",
            "properties": {"Variables": {"d41f09c2e7a8b350": "undeclared-secret-55"}}
        }))
        .unwrap()],
    );
    let by_id = world
        .call(
            names::INSTANCE_ACTIVITY_STATE,
            json!({"instanceId": "run-1", "executionId": UPLOAD_EXECUTION}),
        )
        .await;
    assert!(
        !serde_json::to_string(&by_id)
            .unwrap()
            .contains("undeclared-secret-55")
    );
    let by_id = content(&by_id);
    assert!(
        by_id["variables"]["d41f09c2e7a8b350"]
            .as_str()
            .is_some_and(|v| v.contains("withheld")),
        "{by_id}"
    );
    assert_eq!(by_id["variables"]["InvoiceCount"], 42);
    assert_eq!(by_id["executionId"], UPLOAD_EXECUTION);
    assert_eq!(
        by_id["warnings"],
        json!(["1 variable is shown by id without a value: its declared name is unknown"])
    );
    let collect = world
        .call(
            names::INSTANCE_ACTIVITY_STATE,
            json!({"instanceId": "run-1", "activityId": "CollectInvoices"}),
        )
        .await;
    let collect = content(&collect);
    assert_eq!(collect["executionId"], "exec-collect");
    assert_eq!(collect["inputs"]["Text"], "Collecting invoices");
    assert_eq!(collect["executionsOfActivity"], 1);
    assert_eq!(collect["outputs"], json!({}));

    // From the execution context a workflow state saved, when Elsa's records are absent.
    let instances = acme_instances(&world).await;
    let fixture = fixture_faulted(&instances);
    let from_context = world
        .call(
            names::INSTANCE_ACTIVITY_STATE,
            json!({"instanceId": fixture.id()}),
        )
        .await;
    let from_context = content(&from_context);
    assert_eq!(from_context["fromExecutionRecord"], false);
    assert!(
        from_context["inputs"]
            .as_object()
            .is_some_and(|i| !i.is_empty()),
        "{from_context}"
    );

    // Unknown executions and activities are 404s; so is a healthy run without a selector.
    for arguments in [
        json!({"instanceId": "run-1", "executionId": "exec-nope"}),
        json!({"instanceId": "run-1", "activityId": "Nope"}),
    ] {
        let (status, code, _) =
            refusal(&world.call(names::INSTANCE_ACTIVITY_STATE, arguments).await);
        assert_eq!((status, code.as_str()), (404, "not_found"));
    }
    let healthy = instances
        .iter()
        .find(|i| !i.is_faulted() && i.incidents().is_empty())
        .expect("a healthy fixture run");
    let (status, _, message) = refusal(
        &world
            .call(
                names::INSTANCE_ACTIVITY_STATE,
                json!({"instanceId": healthy.id()}),
            )
            .await,
    );
    assert_eq!(status, 404);
    assert!(message.contains("executionId"), "{message}");

    world
        .assert_standard_refusals(
            names::INSTANCE_ACTIVITY_STATE,
            &Permission::READ_WORKFLOW_INSTANCES,
            |id| json!({"instanceId": id, "executionId": UPLOAD_EXECUTION}),
            "run-1",
            "run-g",
        )
        .await;
    world
        .assert_invalid_arguments(
            names::INSTANCE_ACTIVITY_STATE,
            &[
                json!({}),
                json!({"executionId": UPLOAD_EXECUTION}),
                json!({"instanceId": "run-1", "executionId": ""}),
                json!({"instanceId": "run-1", "executionId": UPLOAD_EXECUTION, "activityId": "UploadExport"}),
                json!({"instanceId": "run-1", "activityId": 3}),
                json!({"instanceId": "run-1", "values": true}),
            ],
        )
        .await;
}

#[tokio::test]
async fn incidents_are_searched_newest_first_in_the_callers_tenant_only() {
    let world = world_with_recorded_runs();
    let all = world
        .call_as_analyst(names::INCIDENTS_SEARCH, json!({"limit": 50}))
        .await;
    let all = content(&all);
    assert_eq!(all["complete"], true);
    let rows = all["items"].as_array().unwrap();
    let instances: Vec<&str> = rows
        .iter()
        .map(|r| r["instanceId"].as_str().unwrap())
        .collect();
    assert!(instances.contains(&"run-1"), "{instances:?}");
    assert!(!instances.contains(&"run-g") && !instances.contains(&GLOBEX_INSTANCE));
    let times: Vec<&str> = rows
        .iter()
        .filter_map(|r| r["timestamp"].as_str())
        .collect();
    let parsed: Vec<chrono::DateTime<chrono::Utc>> =
        times.iter().map(|t| t.parse().unwrap()).collect();
    assert!(
        parsed.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {times:?}"
    );
    let run = rows.iter().find(|r| r["instanceId"] == "run-1").unwrap();
    assert_eq!(run["executionId"], UPLOAD_EXECUTION);
    assert_eq!(run["definitionId"], RUN_DEFINITION);
    assert_eq!(
        run["exception"]["type"],
        "System.Net.Http.HttpRequestException"
    );

    let narrowed = world
        .call(
            names::INCIDENTS_SEARCH,
            json!({"definitionId": RUN_DEFINITION, "activityType": "elsa.sendhttprequest",
                   "from": "2024-06-03T00:00:00Z", "to": "2024-06-04T00:00:00Z"}),
        )
        .await;
    let narrowed = content(&narrowed);
    assert_eq!(narrowed["total"], 1);
    assert_eq!(narrowed["items"][0]["instanceId"], "run-1");
    let later = world
        .call(
            names::INCIDENTS_SEARCH,
            json!({"definitionId": RUN_DEFINITION, "from": "2024-06-04T00:00:00Z"}),
        )
        .await;
    assert_eq!(
        content(&later)["total"],
        0,
        "acme's run is older; globex's is not acme's"
    );
    let foreign = world
        .call(
            names::INCIDENTS_SEARCH,
            json!({"definitionId": support::GLOBEX_DEFINITION}),
        )
        .await;
    assert_eq!(content(&foreign)["total"], 0);

    let paged = world
        .call_as_analyst(names::INCIDENTS_SEARCH, json!({"offset": 1, "limit": 1}))
        .await;
    let paged = content(&paged);
    assert_eq!(paged["total"], rows.len());
    assert_eq!(paged["items"][0]["instanceId"], instances[1]);
    assert_eq!(paged["truncated"], rows.len() > 2);

    let (status, code, _) = refusal(
        &world
            .call(
                names::INCIDENTS_SEARCH,
                json!({"from": "2024-06-05T00:00:00Z", "to": "2024-06-01T00:00:00Z"}),
            )
            .await,
    );
    assert_eq!((status, code.as_str()), (400, "invalid_time_range"));
    let denied = world
        .call_as(
            world.without(&Permission::READ_WORKFLOW_INSTANCES),
            names::INCIDENTS_SEARCH,
            json!({}),
        )
        .await;
    assert_eq!(denied.outcome, elsa_ai_abstractions::AiToolOutcome::Denied);
    let (status, code, _) = refusal(&denied);
    assert_eq!((status, code.as_str()), (403, "permission_denied"));
    world
        .assert_invalid_arguments(
            names::INCIDENTS_SEARCH,
            &[
                json!({"limit": 0}),
                json!({"limit": 51}),
                json!({"from": "yesterday"}),
                json!({"definitionId": ""}),
                json!({"activityType": 3}),
                json!({"instanceId": ""}),
                json!({"instanceIds": ["run-1"]}),
            ],
        )
        .await;
    // The other tenant finds its own.
    let gina = AiCaller::new("gina", GLOBEX, all_permissions());
    let own = world
        .call_as(
            gina,
            names::INCIDENTS_SEARCH,
            json!({"from": "2024-01-01T00:00:00Z"}),
        )
        .await;
    let own: Vec<&str> = content(&own)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["instanceId"].as_str().unwrap())
        .collect();
    assert!(
        own.contains(&"run-g") && own.contains(&GLOBEX_INSTANCE),
        "{own:?}"
    );
    assert!(!own.contains(&"run-1"));
}

#[tokio::test]
async fn the_diagnosis_tools_answer_alike_from_elsa_server_and_from_memory() {
    use std::sync::Arc;

    use elsa_ai_abstractions::AiToolServices;
    use elsa_ai_host::testing::governance::{GovernanceHarness, RefusingProposalIntake};
    use elsa_workflows::{ElsaServerBackend, ElsaServerConfig, InMemoryWorkflowBackend};
    use weaver_testkit::elsa_api::ElsaApiStandIn;

    let run = FaultedRun::new("run-1", "2024-06-03T10:00:00Z");
    let acme = TenantId::new(TEST_TENANT);
    let elsa = ElsaApiStandIn::start("ApiKey elsa-key").await;
    run.serve(&elsa);
    let config = ElsaServerConfig::new(elsa.url())
        .unwrap()
        .api_key("elsa-key");
    let server = Arc::new(ElsaServerBackend::new(acme.clone(), config).unwrap());
    let memory = Arc::new(InMemoryWorkflowBackend::new());
    run.seed(&memory, &acme);
    let governed = |definitions, instances, executions, incidents, catalog| {
        GovernanceHarness::builder()
            .linked_tools()
            .services(AiToolServices {
                definitions,
                instances,
                executions,
                incidents,
                catalog,
                proposals: Arc::new(RefusingProposalIntake),
            })
            .build()
    };
    let over_elsa = governed(
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
    );
    let in_memory = governed(
        memory.clone(),
        memory.clone(),
        memory.clone(),
        memory.clone(),
        memory,
    );
    let alice = AiCaller::new("alice", TEST_TENANT, all_permissions());
    for (tool, arguments) in [
        (names::INSTANCE_SUMMARIZE, json!({"instanceId": "run-1"})),
        (
            names::INSTANCE_ACTIVITY_STATE,
            json!({"instanceId": "run-1"}),
        ),
        (
            names::INSTANCE_ACTIVITY_STATE,
            json!({"instanceId": "run-1", "activityId": "CollectInvoices"}),
        ),
        (
            names::INCIDENTS_SEARCH,
            json!({"definitionId": RUN_DEFINITION}),
        ),
        (
            names::INCIDENTS_GET,
            json!({"instanceId": "run-1", "activityId": "UploadExport"}),
        ),
        (names::EXECUTION_HISTORY, json!({"instanceId": "run-1"})),
        (names::INSTANCE_ERRORS, json!({"instanceId": "run-1"})),
        (names::INSTANCE_GET, json!({"instanceId": "run-1"})),
    ] {
        let from_elsa = over_elsa
            .call_as(alice.clone(), Vec::new(), tool, arguments.clone())
            .await;
        let from_memory = in_memory
            .call_as(alice.clone(), Vec::new(), tool, arguments.clone())
            .await;
        // Evidence in the instance document differs by one level: Elsa's API wraps the state
        // in `workflowState`.
        let from_elsa: Value = serde_json::from_str(
            &content(&from_elsa)
                .to_string()
                .replace("\"$.workflowState.", "\"$."),
        )
        .unwrap();
        assert_eq!(&from_elsa, content(&from_memory), "{tool} {arguments}");
    }
    let state = over_elsa
        .call_as(
            alice.clone(),
            Vec::new(),
            names::INSTANCE_ACTIVITY_STATE,
            json!({"instanceId": "run-1"}),
        )
        .await;
    assert_eq!(content(&state)["variables"]["InvoiceCount"], 42);
    assert_eq!(content(&state)["inputs"]["Authorization"], REDACTED);
    let history = over_elsa
        .call_as(
            alice,
            Vec::new(),
            names::EXECUTION_HISTORY,
            json!({"instanceId": "run-1"}),
        )
        .await;
    assert_eq!(
        content(&history)["completeHistory"],
        true,
        "Elsa's records make the history complete"
    );
    let asked: Vec<String> = elsa
        .requests()
        .into_iter()
        .map(|r| r.path_and_query)
        .collect();
    for wanted in [
        "/elsa/api/activity-executions/list?workflowInstanceId=run-1",
        "/elsa/api/workflow-instances/run-1/journal?skip=0&take=0",
        "/elsa/api/workflow-definitions/by-definition-id/invoice-upload?versionOptions=2",
    ] {
        assert!(asked.iter().any(|p| p == wanted), "{wanted}: {asked:#?}");
    }

    // The backend serves acme only: globex's caller finds nothing and Elsa is not asked.
    let before = elsa.requests().len();
    let gina = AiCaller::new("gina", GLOBEX, all_permissions());
    for tool in [names::INSTANCE_SUMMARIZE, names::INSTANCE_ACTIVITY_STATE] {
        let result = over_elsa
            .call_as(
                gina.clone(),
                Vec::new(),
                tool,
                json!({"instanceId": "run-1"}),
            )
            .await;
        assert_eq!(refusal(&result).0, 404, "{tool}");
    }
    let none = over_elsa
        .call_as(
            gina,
            Vec::new(),
            names::INCIDENTS_SEARCH,
            json!({"definitionId": RUN_DEFINITION}),
        )
        .await;
    assert_eq!(content(&none)["total"], 0);
    assert_eq!(elsa.requests().len(), before);
}

/// A suspended run whose workflow state carries an input and an output as Elsa 3 saves them
/// (`$id` reference markers, a `$values` list), with secrets under sensitive names.
fn run_with_input_and_output() -> WorkflowInstance {
    WorkflowInstance::from_value(json!({
        "workflowState": {
            "$id": "1",
            "id": "run-io",
            "definitionId": "orders",
            "definitionVersion": 3,
            "status": "Running",
            "subStatus": "Suspended",
            "input": {
                "$id": "2",
                "OrderId": "order-17",
                "Customer": {"$id": "3", "Name": "Ada", "Password": "io-input-secret-31"},
                "Lines": {"$id": "4", "$values": [{"$id": "5", "Sku": "A-1", "Quantity": 2}]},
                "ApiKey": "io-input-secret-32",
                "Notes": "n".repeat(1_000)
            },
            "output": {"$id": "6", "Approved": true, "AccessToken": "io-output-secret-33"},
            "createdAt": "2024-05-03T10:00:00Z",
            "updatedAt": "2024-05-03T10:05:00Z"
        }
    }))
    .expect("a valid instance")
}

#[tokio::test]
async fn get_shows_the_workflows_input_and_output_by_name_with_secrets_redacted() {
    let world = world();
    let acme = TenantId::new(TEST_TENANT);
    world
        .backend
        .insert_instance(&acme, run_with_input_and_output());
    let result = world
        .call(names::INSTANCE_GET, json!({"instanceId": "run-io"}))
        .await;
    let text = serde_json::to_string(&result).unwrap();
    let got = content(&result);
    let input = &got["input"];
    assert_eq!(input["OrderId"], "order-17");
    assert_eq!(input["Customer"]["Name"], "Ada");
    assert_eq!(
        input["Lines"],
        json!([{"Sku": "A-1", "Quantity": 2}]),
        "reference markers are gone and lists unwrapped"
    );
    assert!(input.get("$id").is_none() && input["Customer"].get("$id").is_none());
    assert!(
        input["Notes"].as_str().unwrap().chars().count() < 1_000,
        "long values are shortened"
    );
    assert_eq!(got["output"]["Approved"], true);
    // The governor redacts by key, so keys stay keys and every secret is caught.
    assert_eq!(input["Customer"]["Password"], REDACTED);
    assert_eq!(input["ApiKey"], REDACTED);
    assert_eq!(got["output"]["AccessToken"], REDACTED);
    let audit = serde_json::to_string(&world.harness.audit.events(&acme)).unwrap();
    for secret in [
        "io-input-secret-31",
        "io-input-secret-32",
        "io-output-secret-33",
    ] {
        assert!(!text.contains(secret), "{secret} reached the result");
        assert!(!audit.contains(secret), "{secret} reached the audit log");
    }
    assert_eq!(
        support::summary(got),
        "Workflow instance run-io (orders version 3): Running, Suspended; 0 incidents."
    );
    assert_eq!(
        support::evidence(got),
        ["instance:run-io", "definition:orders@3"]
    );

    // The fixture's suspended claim: its input as Elsa saved it, without the empty output.
    let claim = world
        .call(
            names::INSTANCE_GET,
            json!({"instanceId": "e1c5a09b7d3f2648"}),
        )
        .await;
    let claim = content(&claim);
    assert_eq!(
        claim["input"],
        json!({"ClaimId": "claim-2026-0417", "Amount": 412.5})
    );
    assert!(claim.get("output").is_none(), "an empty output is left out");
}

#[tokio::test]
async fn every_instance_tool_answers_in_the_envelope_and_to_its_grounding_name() {
    let world = world_with_recorded_runs();
    for (tool, grounding, arguments) in [
        (
            names::INSTANCE_GET,
            names::grounding::INSTANCE_GET,
            json!({"instanceId": "run-1"}),
        ),
        (
            names::INSTANCE_ERRORS,
            names::grounding::INSTANCE_ERRORS,
            json!({"instanceId": "run-1"}),
        ),
        (
            names::EXECUTION_HISTORY,
            names::grounding::EXECUTION_HISTORY,
            json!({"instanceId": "run-1"}),
        ),
        (
            names::INSTANCE_SUMMARIZE,
            names::grounding::INSTANCE_SUMMARIZE,
            json!({"instanceId": "run-1"}),
        ),
        (
            names::INSTANCE_ACTIVITY_STATE,
            names::grounding::INSTANCE_ACTIVITY_STATE,
            json!({"instanceId": "run-1"}),
        ),
        (
            names::INSTANCE_SEARCH,
            names::grounding::INSTANCE_SEARCH,
            json!({"definitionId": RUN_DEFINITION}),
        ),
    ] {
        let canonical = world.call(tool, arguments.clone()).await;
        let canonical = content(&canonical);
        let grounded = world.call(grounding, arguments).await;
        assert_eq!(content(&grounded), canonical, "{grounding} is {tool}");
        assert!(
            support::summary(canonical).contains("run-1")
                || support::summary(canonical).starts_with("Workflow instances"),
            "{tool}: {}",
            canonical["summary"]
        );
        let evidence = support::evidence(canonical);
        assert!(evidence.contains(&"instance:run-1"), "{tool}: {evidence:?}");
        if tool != names::INSTANCE_SEARCH {
            assert!(
                evidence.contains(&"definition:invoice-upload@2"),
                "{tool}: {evidence:?}"
            );
            assert!(
                evidence.contains(&"executions:run-1"),
                "{tool} read Elsa's records: {evidence:?}"
            );
        }
        assert!(canonical.get("warnings").is_none(), "{tool}: {canonical}");
    }
    let errors = world
        .call(names::INSTANCE_ERRORS, json!({"instanceId": "run-1"}))
        .await;
    let errors = content(&errors);
    assert_eq!(
        support::summary(errors),
        "Workflow instance run-1 (invoice-upload version 2) failed at activity UploadExport \
         (Elsa.SendHttpRequest) with System.Net.Http.HttpRequestException; 1 incident, 2 faulted \
         executions."
    );
    assert!(support::evidence(errors).contains(&"incident:run-1/UploadExport"));
    let summary = world
        .call(names::INSTANCE_SUMMARIZE, json!({"instanceId": "run-1"}))
        .await;
    assert_eq!(
        support::summary(content(&summary)),
        "Workflow instance run-1 (invoice-upload version 2): Finished, Faulted; failed at \
         activity UploadExport (Elsa.SendHttpRequest); 4 activity executions on its path, 7 \
         events logged."
    );

    // A saved state alone: the tools warn that the history is incomplete.
    let instances = acme_instances(&world).await;
    let fixture = fixture_faulted(&instances);
    for tool in [names::EXECUTION_HISTORY, names::INSTANCE_SUMMARIZE] {
        let result = world.call(tool, json!({"instanceId": fixture.id()})).await;
        let result = content(&result);
        assert!(
            result["warnings"][0]
                .as_str()
                .is_some_and(|w| w.contains("no execution history")),
            "{tool}: {result}"
        );
        assert!(
            !support::evidence(result).contains(&format!("executions:{}", fixture.id()).as_str()),
            "{tool}: nothing was read from the execution store"
        );
    }
}
