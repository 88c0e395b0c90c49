//! `instance.get`, `instance.search`, `instance.getErrors` and `instance.executionHistory`,
//! called through the `ToolGovernor` over the fixture instances plus failed runs seeded here.

mod support;

use elsa_ai_abstractions::{AiCaller, Permission};
use elsa_ai_host::testing::governance::{TEST_TENANT, all_permissions};
use elsa_ai_tools::names;
use elsa_workflows::{
    InstanceQuery, PageRequest, TenantId, WorkflowInstance, WorkflowInstanceStore,
    WorkflowSubStatus,
};
use serde_json::json;
use support::{GLOBEX, GLOBEX_INSTANCE, World, content, faulted_run, refusal, world};

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
    let all = world
        .call(names::INSTANCE_SEARCH, json!({"limit": 50}))
        .await;
    let all = content(&all);
    assert_eq!(all["total"], instances.len());
    assert!(
        !all.to_string().contains(GLOBEX),
        "another tenant's runs are never listed"
    );

    let faulted = world
        .call(names::INSTANCE_SEARCH, json!({"subStatus": "Faulted"}))
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
        .call(names::INSTANCE_SEARCH, json!({"status": "Running"}))
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
        .call(names::INSTANCE_SEARCH, json!({"limit": 1}))
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
