//! Cost of the built-in tools behind the governor (all eleven governance steps included):
//! `workflow.getDefinition` on the largest fixture definition, and the scope-limited
//! diagnostics (`instance.aggregateFailures`, `instance.detectTrends`) over the most runs one
//! analysis reads (2,000 faulted runs in the attached scope and time range).
//!
//! No target is set for these; measured on the shared 2-core machine: about 0.85 ms for the
//! definition, about 0.45 s for either analysis of 2,000 runs, three quarters of which is
//! the in-memory backend's instance search (four 500-row pages, each cloning every match).

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use criterion::{Criterion, criterion_group, criterion_main};
use elsa_ai_abstractions::{AiCaller, AiContextAttachment, AttachmentKind};
use elsa_ai_host::testing::governance::{
    GovernanceHarness, RefusingProposalIntake, TEST_TENANT, all_permissions, backend_services,
};
use elsa_ai_tools::names;
use elsa_workflows::{
    DefinitionQuery, InMemoryWorkflowBackend, PageRequest, TenantId, TimeRange, VersionOptions,
    WorkflowDefinition, WorkflowDefinitionStore, WorkflowInstance,
};
use serde_json::{Value, json};
use weaver_testkit::fixture_backend;

/// How many runs the diagnostics benchmark seeds: as many as one analysis reads.
const RUNS: usize = 2000;

fn harness(backend: Arc<InMemoryWorkflowBackend>) -> GovernanceHarness {
    GovernanceHarness::builder()
        .linked_tools()
        .services(backend_services(backend, Arc::new(RefusingProposalIntake)))
        .build()
}

fn caller() -> AiCaller {
    AiCaller::new("alice", TEST_TENANT, all_permissions())
}

/// The id of the fixture definition with the most activities.
async fn largest_definition(backend: &InMemoryWorkflowBackend) -> String {
    let tenant = TenantId::new(TEST_TENANT);
    let rows = backend
        .search(
            &tenant,
            &DefinitionQuery {
                page: PageRequest::new(0, PageRequest::MAX_LIMIT),
                ..DefinitionQuery::default()
            },
        )
        .await
        .expect("search");
    let mut largest = (0, String::new());
    for row in rows.items {
        let definition = backend
            .find(&tenant, &row.definition_id, VersionOptions::Latest)
            .await
            .expect("find")
            .expect("exists");
        largest = largest.max((definition.activities().len(), row.definition_id));
    }
    largest.1
}

/// A faulted run of `orders` created at `created`, failing in one of three activities.
fn faulted_run(i: usize, created: DateTime<Utc>) -> WorkflowInstance {
    let (activity, activity_type, exception) = match i % 3 {
        0 => (
            "CallApi",
            "Elsa.SendHttpRequest",
            "System.Net.Http.HttpRequestException",
        ),
        1 => (
            "Transform",
            "Elsa.RunJavaScript",
            "Jint.Runtime.JavaScriptException",
        ),
        _ => (
            "Notify",
            "Elsa.SendEmail",
            "MailKit.Net.Smtp.SmtpCommandException",
        ),
    };
    let at = |ms: i64| (created + Duration::milliseconds(ms)).to_rfc3339();
    WorkflowInstance::from_value(json!({
        "id": format!("run-{i}"), "definitionId": "orders", "definitionVersion": 1,
        "status": "Finished", "subStatus": "Faulted",
        "createdAt": at(0), "updatedAt": at(900), "finishedAt": at(900),
        "incidents": [{
            "activityId": activity, "activityType": activity_type,
            "message": format!("{activity} failed for order {i}"),
            "exception": {"type": format!("{exception}, Vendor"), "message": format!("order {i}")},
            "timestamp": at(900)
        }],
        "activityExecutionRecords": [
            {"id": format!("{i}-1"), "activityId": "Flowchart1", "activityType": "Elsa.Flowchart", "status": "Running", "startedAt": at(0)},
            {"id": format!("{i}-2"), "activityId": activity, "activityType": activity_type, "status": "Faulted",
             "startedAt": at(100), "completedAt": at(900), "exception": {"type": exception, "message": "x"}}
        ]
    }))
    .expect("a valid run")
}

fn diagnostics_backend() -> (Arc<InMemoryWorkflowBackend>, Vec<AiContextAttachment>) {
    let backend = Arc::new(InMemoryWorkflowBackend::new());
    let tenant = TenantId::new(TEST_TENANT);
    backend
        .insert_definition(
            &tenant,
            WorkflowDefinition::new_flowchart("orders", "Orders"),
        )
        .expect("the scoped definition");
    let start: DateTime<Utc> = "2024-05-01T00:00:00Z".parse().expect("instant");
    for i in 0..RUNS {
        let created = start + Duration::minutes(i64::try_from(i).unwrap_or(0) * 7);
        backend.insert_instance(&tenant, faulted_run(i, created));
    }
    let mut range = AiContextAttachment::new(AttachmentKind::TimeRange, "window");
    range.time_range = Some(TimeRange {
        from: start,
        to: start + Duration::days(14),
    });
    let scope = AiContextAttachment::new(AttachmentKind::DiagnosticsScope, "orders");
    (backend, vec![scope, range])
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");

    let backend = Arc::new(fixture_backend(&[TEST_TENANT]));
    let largest = runtime.block_on(largest_definition(&backend));
    let tools = harness(backend);
    let arguments = json!({"definitionId": largest});
    c.bench_function("workflow.getDefinition (largest fixture)", |b| {
        b.to_async(&runtime).iter(|| async {
            let result = tools
                .call_as(
                    caller(),
                    Vec::new(),
                    names::GET_DEFINITION,
                    arguments.clone(),
                )
                .await;
            assert!(result.is_success());
            std::hint::black_box(result)
        });
    });

    let (backend, attachments) = diagnostics_backend();
    let tools = harness(backend);
    let mut group = c.benchmark_group("diagnostics over 2000 runs");
    group.sample_size(20);
    for (name, arguments) in [
        (names::AGGREGATE_FAILURES, json!({})),
        (names::DETECT_TRENDS, json!({"bucket": "day"})),
    ] {
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter(|| async {
                let result = tools
                    .call_as(caller(), attachments.clone(), name, arguments.clone())
                    .await;
                assert_eq!(result.content["totalFailures"], Value::from(RUNS));
                std::hint::black_box(result)
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
