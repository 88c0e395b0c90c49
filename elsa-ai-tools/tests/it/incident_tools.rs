//! `incidents.get`: one incident whole, by instance and activity (and time), with the
//! definition version its instance ran and the activity execution that raised it.

use crate::support;

use elsa_ai_abstractions::{AiCaller, Permission};
use elsa_ai_host::testing::governance::{TEST_TENANT, all_permissions};
use elsa_ai_tools::names;
use elsa_workflows::{TenantId, WorkflowInstance};
use serde_json::{Value, json};
use support::{GLOBEX, World, content, refusal, world};
use weaver_testkit::runs::{FaultedRun, RUN_DEFINITION, UPLOAD_EXECUTION};

/// Elsa's full records of one faulted run for acme (`run-1`) and of a run with the same
/// activity for globex (`run-g`).
fn world_with_recorded_runs() -> World {
    let world = world();
    FaultedRun::new("run-1", "2024-06-03T10:00:00Z")
        .seed(&world.backend, &TenantId::new(TEST_TENANT));
    FaultedRun::new("run-g", "2024-06-05T10:00:00Z").seed(&world.backend, &TenantId::new(GLOBEX));
    world
}

const FLAKY_TIMES: [&str; 3] = [
    "2024-07-01T10:00:00+00:00",
    "2024-07-01T10:05:00+00:00",
    "2024-07-01T10:10:00+00:00",
];

/// A run whose activity `Flaky` failed three times (Elsa recorded no execution ids with the
/// incidents), of a definition version that is not stored.
fn flaky_run() -> WorkflowInstance {
    let incident = |n: usize| {
        json!({
            "activityId": "Flaky", "activityNodeId": "Workflow1:Flowchart1:Flaky",
            "activityType": "Acme.Flaky", "message": format!("attempt {} failed", n + 1),
            "exception": {"type": "System.IO.IOException", "message": "disk busy"},
            "timestamp": FLAKY_TIMES[n]
        })
    };
    let execution = |n: usize| {
        let end: chrono::DateTime<chrono::Utc> = FLAKY_TIMES[n].parse().unwrap();
        json!({
            "id": format!("exec-f{}", n + 1), "activityId": "Flaky",
            "activityNodeId": "Workflow1:Flowchart1:Flaky", "activityType": "Acme.Flaky",
            "status": "Faulted",
            "startedAt": (end - chrono::Duration::seconds(2)).to_rfc3339(),
            "completedAt": end.to_rfc3339(),
            "exception": {"type": "System.IO.IOException", "message": "disk busy"}
        })
    };
    WorkflowInstance::from_value(json!({
        "id": "run-flaky", "definitionId": "retired-workflow", "definitionVersion": 4,
        "status": "Running", "subStatus": "Faulted",
        "createdAt": "2024-07-01T09:59:00Z",
        "incidents": [incident(0), incident(1), incident(2), {
            "activityId": "Other", "activityType": "Elsa.WriteLine", "message": "other",
            "timestamp": "2024-07-01T10:20:00+00:00"
        }],
        "activityExecutionRecords": [execution(0), execution(1), execution(2)]
    }))
    .expect("a valid instance")
}

fn get(instance_id: &str, activity_id: &str) -> Value {
    json!({"instanceId": instance_id, "activityId": activity_id})
}

#[tokio::test]
async fn an_incident_is_read_with_its_definition_version_and_the_execution_that_raised_it() {
    let world = world_with_recorded_runs();
    let result = world
        .call(names::INCIDENTS_GET, get("run-1", "UploadExport"))
        .await;
    let got = content(&result);
    assert_eq!(
        (got["status"].as_str(), got["subStatus"].as_str()),
        (Some("Finished"), Some("Faulted"))
    );
    assert_eq!(got["definitionId"], RUN_DEFINITION);
    assert_eq!(got["definitionVersion"], 2);
    assert_eq!(got["definitionName"], "Invoice upload");
    let incident = &got["incident"];
    assert_eq!(incident["activityId"], "UploadExport");
    assert_eq!(incident["activityType"], "Elsa.SendHttpRequest");
    assert_eq!(incident["executionId"], UPLOAD_EXECUTION);
    assert!(
        incident["message"]
            .as_str()
            .is_some_and(|m| m.contains("503"))
    );
    assert_eq!(
        incident["exception"]["type"],
        "System.Net.Http.HttpRequestException"
    );
    let stack: Vec<&str> = incident["stackTrace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(stack.len(), 2);
    assert!(stack[0].contains("EnsureSuccessStatusCode"), "{stack:?}");
    assert_eq!(incident["evidence"], "$.incidents[0]");
    assert_eq!(got["incidentsOfActivity"], 1);
    let execution = &got["execution"];
    assert_eq!(execution["executionId"], UPLOAD_EXECUTION);
    assert_eq!(execution["status"], "Faulted");
    assert_eq!(execution["activityType"], "Elsa.SendHttpRequest");
    assert!(execution["evidence"].is_string());
    assert!(
        execution.get("inputs").is_none() && execution.get("outputs").is_none(),
        "recorded values are instance.getActivityState's (High), not this Medium tool's"
    );
    assert!(got.get("warnings").is_none(), "{got}");
    assert_eq!(
        support::summary(got),
        format!(
            "Workflow instance run-1 (invoice-upload version 2): incident of activity \
             UploadExport (Elsa.SendHttpRequest) at {}: System.Net.Http.HttpRequestException.",
            incident["timestamp"]
                .as_str()
                .unwrap()
                .parse::<chrono::DateTime<chrono::Utc>>()
                .unwrap()
                .to_rfc3339()
        )
    );
    assert_eq!(
        support::evidence(got),
        [
            "instance:run-1",
            "definition:invoice-upload@2",
            "incident:run-1/UploadExport",
            "executions:run-1"
        ]
    );
    // Its time, as incidents.search lists it, picks the same incident.
    let listed = world
        .call(names::INCIDENTS_SEARCH, json!({"instanceId": "run-1"}))
        .await;
    let timestamp = content(&listed)["items"][0]["timestamp"].clone();
    let by_time = world
        .call(
            names::INCIDENTS_GET,
            json!({"instanceId": "run-1", "activityId": "UploadExport", "timestamp": timestamp}),
        )
        .await;
    assert_eq!(content(&by_time), got);
}

#[tokio::test]
async fn several_incidents_of_one_activity_give_the_newest_unless_a_time_picks_one() {
    let world = world();
    world
        .backend
        .insert_instance(&TenantId::new(TEST_TENANT), flaky_run());
    let newest = world
        .call(names::INCIDENTS_GET, get("run-flaky", "Flaky"))
        .await;
    let newest = content(&newest);
    assert_eq!(newest["incident"]["message"], "attempt 3 failed");
    assert_eq!(newest["incidentsOfActivity"], 3);
    assert_eq!(
        newest["execution"]["executionId"], "exec-f3",
        "the execution that ended when it was raised"
    );
    assert_eq!(
        newest["warnings"],
        json!([
            format!(
                "activity Flaky recorded 3 incidents in this instance; this is the newest (pass \
                 'timestamp' to read another: {}, {})",
                FLAKY_TIMES[1], FLAKY_TIMES[0]
            ),
            "workflow definition retired-workflow version 4 is no longer stored"
        ])
    );
    assert!(newest.get("definitionName").is_none());
    assert_eq!(
        support::evidence(newest),
        [
            "instance:run-flaky",
            "definition:retired-workflow@4",
            "incident:run-flaky/Flaky",
            "executions:run-flaky"
        ]
    );

    for (n, time) in FLAKY_TIMES.iter().enumerate() {
        let picked = world
            .call(
                names::INCIDENTS_GET,
                json!({"instanceId": "run-flaky", "activityId": "Flaky", "timestamp": time}),
            )
            .await;
        let picked = content(&picked);
        assert_eq!(
            picked["incident"]["message"],
            format!("attempt {} failed", n + 1)
        );
        assert_eq!(
            picked["execution"]["executionId"],
            format!("exec-f{}", n + 1)
        );
        assert_eq!(
            picked["warnings"],
            json!(["workflow definition retired-workflow version 4 is no longer stored"]),
            "a time names one incident"
        );
    }
    let (status, code, message) = refusal(
        &world
            .call(
                names::INCIDENTS_GET,
                json!({"instanceId": "run-flaky", "activityId": "Flaky",
                       "timestamp": "2024-07-01T10:01:00Z"}),
            )
            .await,
    );
    assert_eq!((status, code.as_str()), (404, "not_found"));
    assert!(
        message.contains("'Flaky' at 2024-07-01T10:01:00+00:00"),
        "{message}"
    );
    // An incident Elsa recorded no execution for has none.
    let other = world
        .call(names::INCIDENTS_GET, get("run-flaky", "Other"))
        .await;
    let other = content(&other);
    assert!(other.get("execution").is_none(), "{other}");
    assert_eq!(other["incidentsOfActivity"], 1);
}

#[tokio::test]
async fn an_incident_of_another_tenant_or_of_no_failure_is_a_404() {
    let world = world_with_recorded_runs();
    // run-g of globex has the same activity: it reads exactly like an unknown run.
    world
        .assert_standard_refusals(
            names::INCIDENTS_GET,
            &Permission::READ_WORKFLOW_INSTANCES,
            |id| get(id, "UploadExport"),
            "run-1",
            "run-g",
        )
        .await;
    for activity in ["Nope", "CollectInvoices"] {
        let (status, code, message) = refusal(
            &world
                .call(names::INCIDENTS_GET, get("run-1", activity))
                .await,
        );
        assert_eq!((status, code.as_str()), (404, "not_found"));
        assert_eq!(
            message,
            format!("incident of activity '{activity}' in workflow instance 'run-1' not found")
        );
    }
    world
        .assert_invalid_arguments(
            names::INCIDENTS_GET,
            &[
                json!({}),
                json!({"instanceId": "run-1"}),
                json!({"activityId": "UploadExport"}),
                json!({"instanceId": "run-1", "activityId": ""}),
                json!({"instanceId": "run-1", "activityId": "UploadExport", "timestamp": "yesterday"}),
                json!({"instanceId": "run-1", "activityId": "UploadExport", "tenant": "globex"}),
            ],
        )
        .await;
    // The other tenant reads its own.
    let gina = AiCaller::new("gina", GLOBEX, all_permissions());
    let own = world
        .call_as(gina, names::INCIDENTS_GET, get("run-g", "UploadExport"))
        .await;
    assert_eq!(content(&own)["instanceId"], "run-g");
}
