//! `instance.aggregateFailures` and `instance.detectTrends` through the `ToolGovernor`: they
//! refuse to run without an attached diagnostics scope and time range, and read nothing
//! outside them. Failures are seeded inside the scope, just outside the time range, outside
//! the scope and in another tenant, and only the first kind may ever show up.

use crate::support;

use elsa_ai_abstractions::{AiContextAttachment, AttachmentKind, Permission};
use elsa_ai_host::testing::governance::TEST_TENANT;
use elsa_ai_tools::names;
use elsa_workflows::{TenantId, TimeRange, WorkflowDefinition};
use serde_json::{Value, json};
use support::{
    GLOBEX, InstanceRead, RecordingInstances, World, content, faulted_run, recording_world, refusal,
};

const HTTP: &str = "Elsa.SendHttpRequest";
const HTTP_ERROR: &str = "System.Net.Http.HttpRequestException";
const SCRIPT: &str = "Elsa.RunJavaScript";
const SCRIPT_ERROR: &str = "Jint.Runtime.JavaScriptException";
/// Exception types of the failures that must never appear.
const OUTSIDE: [&str; 3] = [
    "System.OutsideRangeException",
    "System.OutsideScopeException",
    "System.OtherTenantException",
];

fn window() -> TimeRange {
    TimeRange {
        from: "2024-05-01T00:00:00Z".parse().unwrap(),
        to: "2024-05-03T00:00:00Z".parse().unwrap(),
    }
}

/// The seeded world: four failures of `orders` inside the window, and failures that must
/// stay invisible.
fn seeded() -> (World, std::sync::Arc<RecordingInstances>) {
    let (world, recording) = recording_world();
    let acme = TenantId::new(TEST_TENANT);
    for definition_id in ["orders", "billing"] {
        world
            .backend
            .insert_definition(
                &acme,
                WorkflowDefinition::new_flowchart(definition_id, definition_id),
            )
            .expect("definition");
    }
    world
        .backend
        .insert_definition(
            &TenantId::new(GLOBEX),
            WorkflowDefinition::new_flowchart("orders", "orders"),
        )
        .expect("globex definition");
    let insert = |tenant: &TenantId, run| {
        world.backend.insert_instance(tenant, run);
    };
    insert(
        &acme,
        faulted_run(
            "run-a1",
            "orders",
            "2024-05-01T10:00:00Z",
            "CallApi",
            HTTP,
            HTTP_ERROR,
        ),
    );
    insert(
        &acme,
        faulted_run(
            "run-a2",
            "orders",
            "2024-05-02T10:00:00Z",
            "CallApi",
            HTTP,
            HTTP_ERROR,
        ),
    );
    insert(
        &acme,
        faulted_run(
            "run-a3",
            "orders",
            "2024-05-02T15:00:00Z",
            "CallApi",
            HTTP,
            HTTP_ERROR,
        ),
    );
    insert(
        &acme,
        faulted_run(
            "run-b1",
            "orders",
            "2024-05-01T12:00:00Z",
            "Transform",
            SCRIPT,
            SCRIPT_ERROR,
        ),
    );
    // Just outside the window, on both sides.
    insert(
        &acme,
        faulted_run(
            "run-early",
            "orders",
            "2024-04-30T23:59:58Z",
            "CallApi",
            HTTP,
            OUTSIDE[0],
        ),
    );
    insert(
        &acme,
        faulted_run(
            "run-late",
            "orders",
            "2024-05-03T00:00:01Z",
            "CallApi",
            HTTP,
            OUTSIDE[0],
        ),
    );
    // Inside the window, outside the scope.
    insert(
        &acme,
        faulted_run(
            "run-billing",
            "billing",
            "2024-05-01T11:00:00Z",
            "Charge",
            HTTP,
            OUTSIDE[1],
        ),
    );
    // Same definition id and window, another tenant.
    insert(
        &TenantId::new(GLOBEX),
        faulted_run(
            "run-globex",
            "orders",
            "2024-05-01T11:00:00Z",
            "CallApi",
            HTTP,
            OUTSIDE[2],
        ),
    );
    (world, recording)
}

fn scope(definition_id: &str) -> AiContextAttachment {
    AiContextAttachment::new(AttachmentKind::DiagnosticsScope, definition_id)
}

fn range(range: TimeRange) -> AiContextAttachment {
    AiContextAttachment {
        time_range: Some(range),
        ..AiContextAttachment::new(AttachmentKind::TimeRange, "window")
    }
}

fn attachments() -> Vec<AiContextAttachment> {
    vec![scope("orders"), range(window())]
}

/// Nothing that must stay invisible appears anywhere in `content`.
fn assert_only_in_scope(content: &Value) {
    let text = content.to_string();
    for marker in OUTSIDE.iter().copied().chain([
        "run-early",
        "run-late",
        "run-billing",
        "run-globex",
        "billing",
    ]) {
        assert!(!text.contains(marker), "{marker} leaked into {text}");
    }
}

/// Every read stayed inside the scope: searches only of `definitions` and inside the window,
/// lookups only of `attached` instances.
fn assert_reads_stayed_inside(
    recording: &RecordingInstances,
    definitions: &[&str],
    window: TimeRange,
    attached: &[&str],
) {
    let reads = recording.reads();
    assert!(!reads.is_empty(), "the analysis read something");
    for read in reads {
        match read {
            InstanceRead::Search(query) => {
                assert!(!query.definition_ids.is_empty(), "never every definition");
                assert!(
                    query
                        .definition_ids
                        .iter()
                        .all(|id| definitions.contains(&id.as_str())),
                    "{query:?}"
                );
                let searched = query.time_range.expect("always a time range");
                assert!(
                    searched.from >= window.from && searched.to <= window.to,
                    "{query:?}"
                );
            }
            InstanceRead::Find(id) => assert!(attached.contains(&id.as_str()), "read {id}"),
        }
    }
}

#[tokio::test]
async fn both_tools_refuse_to_run_without_scope_and_time_range() {
    let (world, recording) = seeded();
    for tool in [names::AGGREGATE_FAILURES, names::DETECT_TRENDS] {
        let cases = [
            (Vec::new(), "diagnostics_scope_required"),
            (vec![range(window())], "diagnostics_scope_required"),
            (
                vec![
                    AiContextAttachment::new(AttachmentKind::WorkflowDefinition, "orders"),
                    range(window()),
                ],
                "diagnostics_scope_required",
            ),
            (vec![scope("orders")], "time_range_required"),
        ];
        for (attachments, expected) in cases {
            let result = world.call_with(attachments, tool, json!({})).await;
            let (status, code, message) = refusal(&result);
            assert_eq!(
                (status, code.as_str()),
                (400, expected),
                "{tool}: {message}"
            );
        }
        // Arguments cannot stand in for attachments.
        let result = world
            .call(
                tool,
                json!({"definitionIds": ["orders"], "from": "2024-05-01T00:00:00Z", "to": "2024-05-03T00:00:00Z"}),
            )
            .await;
        assert_eq!(refusal(&result).1, "diagnostics_scope_required");
    }
    assert!(
        recording.reads().is_empty(),
        "a refused analysis reads nothing"
    );
}

#[tokio::test]
async fn aggregate_groups_by_workflow_activity_type_and_error_category_inside_the_scope() {
    let (world, recording) = seeded();
    let result = world
        .call_with(attachments(), names::AGGREGATE_FAILURES, json!({}))
        .await;
    let got = content(&result);
    assert_only_in_scope(got);
    assert_reads_stayed_inside(&recording, &["orders"], window(), &[]);
    assert_eq!(got["totalFailures"], 4);
    assert_eq!(got["failedInstances"], 4);
    assert_eq!(got["scope"]["definitionIds"], json!(["orders"]));
    assert_eq!(got["groups"]["total"], 2);
    let top = &got["groups"]["items"][0];
    assert_eq!(top["definitionId"], "orders");
    assert_eq!(top["activityType"], HTTP);
    assert_eq!(top["errorCategory"], HTTP_ERROR);
    assert_eq!(top["failures"], 3);
    assert_eq!(top["instances"], 3);
    assert_eq!(top["activityIds"], json!(["CallApi"]));
    assert_eq!(top["firstSeen"], "2024-05-01T10:00:01Z");
    assert_eq!(top["lastSeen"], "2024-05-02T15:00:01Z");
    assert_eq!(
        top["sampleInstanceIds"],
        json!(["run-a1", "run-a2", "run-a3"])
    );
    let second = &got["groups"]["items"][1];
    assert_eq!(
        (
            second["activityType"].as_str(),
            second["errorCategory"].as_str()
        ),
        (Some(SCRIPT), Some(SCRIPT_ERROR))
    );
}

#[tokio::test]
async fn arguments_narrow_the_scope_but_never_widen_it() {
    let (world, recording) = seeded();
    let narrowed = world
        .call_with(
            attachments(),
            names::AGGREGATE_FAILURES,
            json!({"from": "2024-05-02T00:00:00Z"}),
        )
        .await;
    let narrowed = content(&narrowed);
    assert_eq!(narrowed["totalFailures"], 2, "only the runs of 2 May");
    assert_eq!(narrowed["scope"]["from"], "2024-05-02T00:00:00Z");
    recording.clear();

    for (arguments, expected) in [
        (
            json!({"from": "2024-04-30T00:00:00Z"}),
            "outside_time_range",
        ),
        (json!({"to": "2024-05-04T00:00:00Z"}), "outside_time_range"),
        (
            json!({"definitionIds": ["billing"]}),
            "outside_diagnostics_scope",
        ),
        (
            json!({"definitionIds": ["orders", "billing"]}),
            "outside_diagnostics_scope",
        ),
    ] {
        for tool in [names::AGGREGATE_FAILURES, names::DETECT_TRENDS] {
            let result = world
                .call_with(attachments(), tool, arguments.clone())
                .await;
            let (status, code, _) = refusal(&result);
            assert_eq!(
                (status, code.as_str()),
                (403, expected),
                "{tool} {arguments}"
            );
        }
    }
    assert!(
        recording.reads().is_empty(),
        "a refused widening reads nothing"
    );

    // Two attached ranges: only their overlap is read.
    let overlap = TimeRange {
        from: "2024-05-02T12:00:00Z".parse().unwrap(),
        to: "2024-05-10T00:00:00Z".parse().unwrap(),
    };
    let mut two = attachments();
    two.push(range(overlap));
    let result = world
        .call_with(two, names::AGGREGATE_FAILURES, json!({}))
        .await;
    let got = content(&result);
    assert_eq!(got["totalFailures"], 1, "only run-a3 lies in both ranges");
    assert_eq!(got["scope"]["from"], "2024-05-02T12:00:00Z");
    assert_eq!(got["scope"]["to"], "2024-05-03T00:00:00Z");
    assert_only_in_scope(got);
}

#[tokio::test]
async fn attached_instances_are_read_too_and_only_they() {
    let (world, recording) = seeded();
    let mut with_instance = attachments();
    with_instance.push(AiContextAttachment::new(
        AttachmentKind::WorkflowInstance,
        "run-billing",
    ));
    let result = world
        .call_with(with_instance, names::AGGREGATE_FAILURES, json!({}))
        .await;
    let got = content(&result);
    assert_eq!(got["totalFailures"], 5, "the attached run counts");
    assert!(got.to_string().contains("System.OutsideScopeException"));
    assert_reads_stayed_inside(&recording, &["orders"], window(), &["run-billing"]);
    assert_eq!(got["scope"]["attachedInstanceIds"], json!(["run-billing"]));
}

#[tokio::test]
async fn trends_count_recurring_failures_per_bucket_inside_the_scope() {
    let (world, recording) = seeded();
    let result = world
        .call_with(
            attachments(),
            names::DETECT_TRENDS,
            json!({"bucket": "day"}),
        )
        .await;
    let got = content(&result);
    assert_only_in_scope(got);
    assert_reads_stayed_inside(&recording, &["orders"], window(), &[]);
    assert_eq!(got["bucket"], "day");
    let buckets: Vec<(&str, u64)> = got["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["start"].as_str().unwrap(),
                b["failures"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        buckets,
        [
            ("2024-05-01T00:00:00Z", 2),
            ("2024-05-02T00:00:00Z", 2),
            ("2024-05-03T00:00:00Z", 0)
        ]
    );
    assert_eq!(got["totalFailures"], 4);
    assert_eq!(got["recurringSignatures"], 1);
    let first = &got["signatures"]["items"][0];
    assert_eq!(first["activityType"], HTTP);
    assert_eq!(first["errorCategory"], HTTP_ERROR);
    assert_eq!(first["counts"], json!([1, 2, 0]));
    assert_eq!(first["recurring"], true);
    let second = &got["signatures"]["items"][1];
    assert_eq!(second["recurring"], false);
    assert_eq!(second["counts"], json!([1, 0, 0]));

    // Without a bucket size the finest that fits is chosen: hours for two days.
    let hourly = world
        .call_with(attachments(), names::DETECT_TRENDS, json!({}))
        .await;
    let hourly = content(&hourly);
    assert_eq!(hourly["bucket"], "hour");
    assert_eq!(hourly["buckets"].as_array().unwrap().len(), 49);
    assert_only_in_scope(hourly);
}

#[tokio::test]
async fn a_scope_naming_an_unknown_or_foreign_definition_is_a_404() {
    let (world, recording) = seeded();
    for tool in [names::AGGREGATE_FAILURES, names::DETECT_TRENDS] {
        let unknown = refusal(
            &world
                .call_with(vec![scope("no-such-id"), range(window())], tool, json!({}))
                .await,
        );
        let foreign = refusal(
            &world
                .call_with(
                    vec![scope(support::GLOBEX_DEFINITION), range(window())],
                    tool,
                    json!({}),
                )
                .await,
        );
        assert_eq!(
            (unknown.0, unknown.1.as_str()),
            (404, "not_found"),
            "{tool}"
        );
        assert_eq!(
            foreign.2.replace(support::GLOBEX_DEFINITION, "ID"),
            unknown.2.replace("no-such-id", "ID"),
            "{tool}: another tenant's definition reads like an unknown one"
        );
    }
    assert!(recording.reads().is_empty(), "no instance was read");
}

#[tokio::test]
async fn diagnostics_need_instance_permission_and_valid_arguments() {
    let (world, _) = seeded();
    for tool in [names::AGGREGATE_FAILURES, names::DETECT_TRENDS] {
        let denied = world
            .harness
            .call_as(
                world.without(&Permission::READ_WORKFLOW_INSTANCES),
                attachments(),
                tool,
                json!({}),
            )
            .await;
        assert_eq!(refusal(&denied).0, 403, "{tool}");
        for bad in [
            json!({"definitionIds": []}),
            json!({"from": "last week"}),
            json!({"limit": 0}),
            json!({"scope": "everything"}),
        ] {
            let result = world.call_with(attachments(), tool, bad.clone()).await;
            assert_eq!(refusal(&result).1, "invalid_arguments", "{tool} {bad}");
        }
    }
    let result = world
        .call_with(
            attachments(),
            names::DETECT_TRENDS,
            json!({"bucket": "minute"}),
        )
        .await;
    assert_eq!(refusal(&result).1, "invalid_arguments");
}

#[tokio::test]
async fn a_scope_without_a_reference_is_the_whole_tenant_and_still_only_the_time_range() {
    let (world, recording) = seeded();
    let whole = vec![scope(""), range(window())];
    let result = world
        .call_with(whole.clone(), names::AGGREGATE_FAILURES, json!({}))
        .await;
    let got = content(&result);
    assert_eq!(got["scope"]["wholeTenant"], true);
    assert_eq!(got["scope"]["definitionIds"], json!([]));
    let text = got.to_string();
    assert!(
        text.contains("run-billing"),
        "every workflow of the tenant is in scope: {text}"
    );
    for marker in [
        OUTSIDE[0],
        OUTSIDE[2],
        "run-early",
        "run-late",
        "run-globex",
    ] {
        assert!(!text.contains(marker), "{marker} leaked into {text}");
    }
    for read in recording.reads() {
        if let InstanceRead::Search(query) = read {
            let searched = query.time_range.expect("always a time range");
            assert!(searched.from >= window().from && searched.to <= window().to);
        }
    }

    // Naming definitions narrows a whole-tenant scope; a time range is still required.
    let narrowed = world
        .call_with(
            whole,
            names::AGGREGATE_FAILURES,
            json!({"definitionIds": ["billing"]}),
        )
        .await;
    let narrowed = content(&narrowed);
    assert_eq!(narrowed["scope"]["definitionIds"], json!(["billing"]));
    assert!(narrowed["scope"].get("wholeTenant").is_none());
    assert!(!narrowed.to_string().contains("run-a1"));
    let without_range = world
        .call_with(vec![scope("")], names::DETECT_TRENDS, json!({}))
        .await;
    assert_eq!(refusal(&without_range).1, "time_range_required");
}
