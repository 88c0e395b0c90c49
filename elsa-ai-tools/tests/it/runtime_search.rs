//! The runtime searches, `instance.search` and `incidents.search`: their filters, and the
//! scope rule of upstream spec 012 (FR-010): a workflow, instance or time range from the
//! arguments, else from the turn's attachments, else the whole tenant for a caller holding
//! `analyze:tenant`, else 400 `search_scope_required`.

use crate::support;

use elsa_ai_abstractions::{AiContextAttachment, AttachmentKind};
use elsa_ai_host::testing::governance::{TEST_TENANT, all_permissions};
use elsa_ai_tools::names;
use elsa_workflows::{TenantId, WorkflowInstance};
use serde_json::{Value, json};
use support::{
    GLOBEX_DEFINITION, GLOBEX_INSTANCE, World, assert_scope_required, attached_range, content,
    faulted_run, refusal, world,
};
use weaver_testkit::runs::{FaultedRun, RUN_DEFINITION};

/// The world plus three runs of `orders` (two faulted, one healthy with a correlation id, all
/// in early May 2024) and Elsa's full records of a faulted run of [`RUN_DEFINITION`] in June.
fn seeded() -> World {
    let world = world();
    let acme = TenantId::new(TEST_TENANT);
    world.backend.insert_instance(
        &acme,
        faulted_run(
            "run-http-1",
            "orders",
            "2024-05-01T10:00:00Z",
            "CallApi",
            "Elsa.SendHttpRequest",
            "System.Net.Http.HttpRequestException",
        ),
    );
    world.backend.insert_instance(
        &acme,
        faulted_run(
            "run-http-2",
            "orders",
            "2024-05-08T10:00:00Z",
            "CallApi",
            "Elsa.SendHttpRequest",
            "System.TimeoutException",
        ),
    );
    world.backend.insert_instance(
        &acme,
        WorkflowInstance::from_value(json!({
            "id": "run-ok", "definitionId": "orders", "definitionVersion": 1,
            "name": "Order 42", "correlationId": "order-42",
            "status": "Finished", "subStatus": "Finished",
            "createdAt": "2024-05-02T09:00:00Z", "updatedAt": "2024-05-20T09:00:00Z",
            "finishedAt": "2024-05-20T09:00:00Z"
        }))
        .expect("a valid instance"),
    );
    FaultedRun::new("run-1", "2024-06-03T10:00:00Z").seed(&world.backend, &acme);
    world
}

/// The instance ids of a list result, in order.
fn ids(result: &Value) -> Vec<&str> {
    result["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {result}"))
        .iter()
        .map(|row| row["instanceId"].as_str().expect("an instance id"))
        .collect()
}

fn attached(kind: AttachmentKind, id: &str) -> AiContextAttachment {
    AiContextAttachment::new(kind, id)
}

#[tokio::test]
async fn a_runtime_search_naming_no_workflow_instance_or_time_range_is_refused() {
    let world = seeded();
    for arguments in [
        json!({}),
        json!({"subStatus": "Faulted"}),
        json!({"query": "run", "hasIncidents": true, "limit": 5}),
    ] {
        let result = world.call(names::INSTANCE_SEARCH, arguments).await;
        assert_scope_required(
            &result,
            &[
                "'definitionId'",
                "'correlationId'",
                "'from'/'to'",
                "'updatedFrom'/'updatedTo'",
                "WorkflowDefinition",
                "DiagnosticsScope",
                "TimeRange",
                "analyze:tenant",
            ],
        );
    }
    for arguments in [
        json!({}),
        json!({"activityType": "Elsa.SendHttpRequest", "text": "refused"}),
    ] {
        let result = world.call(names::INCIDENTS_SEARCH, arguments).await;
        assert_scope_required(
            &result,
            &[
                "'definitionId'",
                "'instanceId'",
                "'from'/'to'",
                "WorkflowInstance",
                "analyze:tenant",
            ],
        );
    }
    // An attached instance scopes incidents, not instances.
    let result = world
        .call_with(
            vec![attached(AttachmentKind::WorkflowInstance, "run-1")],
            names::INSTANCE_SEARCH,
            json!({}),
        )
        .await;
    assert_scope_required(&result, &["'correlationId'"]);

    // Each of these arguments is a scope of its own.
    for arguments in [
        json!({"definitionId": "orders"}),
        json!({"correlationId": "order-42"}),
        json!({"from": "2024-05-01T00:00:00Z"}),
        json!({"to": "2024-05-01T00:00:00Z"}),
        json!({"updatedFrom": "2024-05-01T00:00:00Z"}),
        json!({"updatedTo": "2024-05-01T00:00:00Z"}),
    ] {
        let result = world.call(names::INSTANCE_SEARCH, arguments.clone()).await;
        let summary = support::summary(content(&result));
        assert!(
            !summary.contains("Scoped") && !summary.contains("whole tenant"),
            "{arguments}: {summary}"
        );
    }
    for arguments in [
        json!({"definitionId": "orders"}),
        json!({"instanceId": "run-1"}),
        json!({"from": "2024-05-01T00:00:00Z"}),
        json!({"to": "2024-05-01T00:00:00Z"}),
    ] {
        let result = world.call(names::INCIDENTS_SEARCH, arguments).await;
        assert!(result.is_success(), "{}", result.to_model_text());
    }

    // analyze:tenant lifts the rule, and the summary says the whole tenant was searched.
    for tool in [names::INSTANCE_SEARCH, names::INCIDENTS_SEARCH] {
        let result = world.call_as_analyst(tool, json!({})).await;
        let result = content(&result);
        assert!(
            support::summary(result).ends_with(" Searched the whole tenant (analyze:tenant)."),
            "{tool}: {}",
            result["summary"]
        );
    }
    let everything = world
        .call_as_analyst(names::INCIDENTS_SEARCH, json!({"limit": 50}))
        .await;
    let everything = ids(content(&everything));
    for run in ["run-http-1", "run-http-2", "run-1"] {
        assert!(everything.contains(&run), "{run}: {everything:?}");
    }
    assert!(!everything.contains(&GLOBEX_INSTANCE));

    // ... but only when the agent allows it: agents narrow what callers hold.
    let narrowed = support::world_with_agent_permissions(&all_permissions());
    for tool in [names::INSTANCE_SEARCH, names::INCIDENTS_SEARCH] {
        let result = narrowed.call_as_analyst(tool, json!({})).await;
        assert_scope_required(&result, &["analyze:tenant"]);
    }
}

#[tokio::test]
async fn attachments_scope_a_search_whose_arguments_name_nothing() {
    let world = seeded();
    let may = || attached_range("2024-05-01T00:00:00Z", "2024-05-03T00:00:00Z");

    let by_workflow = world
        .call_with(
            vec![attached(AttachmentKind::WorkflowDefinition, "orders")],
            names::INSTANCE_SEARCH,
            json!({}),
        )
        .await;
    let by_workflow = content(&by_workflow);
    assert_eq!(ids(by_workflow), ["run-http-2", "run-ok", "run-http-1"]);
    assert_eq!(
        support::summary(by_workflow),
        "Workflow instances matching: 3; showing all 3. Scoped by the conversation's \
         attachments: workflow orders."
    );
    let by_scope = world
        .call_with(
            vec![attached(AttachmentKind::DiagnosticsScope, "orders")],
            names::INSTANCE_SEARCH,
            json!({"hasIncidents": true}),
        )
        .await;
    assert_eq!(ids(content(&by_scope)), ["run-http-2", "run-http-1"]);
    let by_range = world
        .call_with(vec![may()], names::INSTANCE_SEARCH, json!({}))
        .await;
    let by_range = content(&by_range);
    assert_eq!(ids(by_range), ["run-ok", "run-http-1"]);
    assert!(
        support::summary(by_range)
            .ends_with("attachments: 2024-05-01T00:00:00+00:00 to 2024-05-03T00:00:00+00:00."),
        "{}",
        by_range["summary"]
    );
    // Attached ranges intersect; ranges that do not overlap are refused.
    let narrower = world
        .call_with(
            vec![
                may(),
                attached_range("2024-05-01T12:00:00Z", "2024-06-30T00:00:00Z"),
            ],
            names::INSTANCE_SEARCH,
            json!({}),
        )
        .await;
    assert_eq!(ids(content(&narrower)), ["run-ok"]);
    let apart = world
        .call_with(
            vec![
                may(),
                attached_range("2024-06-01T00:00:00Z", "2024-06-30T00:00:00Z"),
            ],
            names::INSTANCE_SEARCH,
            json!({}),
        )
        .await;
    let (status, code, _) = refusal(&apart);
    assert_eq!((status, code.as_str()), (400, "empty_time_range"));

    // Arguments that name a scope win over the attachments.
    let own = world
        .call_with(
            vec![attached(AttachmentKind::WorkflowDefinition, "orders")],
            names::INSTANCE_SEARCH,
            json!({"definitionId": RUN_DEFINITION}),
        )
        .await;
    let own = content(&own);
    assert_eq!(ids(own), ["run-1"]);
    assert!(!support::summary(own).contains("Scoped"));

    // Incidents: the attached workflows and instances together, inside the attached range.
    let attachments = vec![
        attached(AttachmentKind::WorkflowDefinition, RUN_DEFINITION),
        attached(AttachmentKind::WorkflowInstance, "run-http-1"),
        // Already among the workflow's: counted once.
        attached(AttachmentKind::WorkflowInstance, "run-1"),
    ];
    let union = world
        .call_with(attachments.clone(), names::INCIDENTS_SEARCH, json!({}))
        .await;
    let union = content(&union);
    assert_eq!(ids(union), ["run-1", "run-http-1"], "newest first");
    assert_eq!(union["total"], 2);
    assert_eq!(
        support::summary(union),
        "Incidents matching: 2; showing all 2. Scoped by the conversation's attachments: \
         workflow invoice-upload; instances run-1, run-http-1."
    );
    assert_eq!(
        support::evidence(union),
        ["incident:run-1/UploadExport", "incident:run-http-1/CallApi"]
    );
    let first = world
        .call_with(
            attachments.clone(),
            names::INCIDENTS_SEARCH,
            json!({"limit": 1}),
        )
        .await;
    let first = content(&first);
    assert_eq!(ids(first), ["run-1"]);
    assert_eq!(
        (first["total"].as_u64(), first["truncated"].as_bool()),
        (Some(2), Some(true))
    );
    assert_eq!(first["nextOffset"], 1);
    let second = world
        .call_with(
            attachments.clone(),
            names::INCIDENTS_SEARCH,
            json!({"offset": 1, "limit": 1}),
        )
        .await;
    let second = content(&second);
    assert_eq!(ids(second), ["run-http-1"]);
    assert_eq!(second["truncated"], false);
    // Filters of the arguments still apply to every attached part.
    let timeouts = world
        .call_with(
            vec![
                attached(AttachmentKind::WorkflowInstance, "run-http-1"),
                attached(AttachmentKind::WorkflowInstance, "run-http-2"),
            ],
            names::INCIDENTS_SEARCH,
            json!({"text": "TimeoutException"}),
        )
        .await;
    assert_eq!(ids(content(&timeouts)), ["run-http-2"]);
    let in_may = world
        .call_with(
            vec![
                attached(AttachmentKind::WorkflowInstance, "run-http-1"),
                attached(AttachmentKind::WorkflowInstance, "run-http-2"),
                may(),
            ],
            names::INCIDENTS_SEARCH,
            json!({}),
        )
        .await;
    assert_eq!(ids(content(&in_may)), ["run-http-1"]);

    // An id of another tenant (which a real turn would have refused to attach) finds nothing.
    for tool in [names::INSTANCE_SEARCH, names::INCIDENTS_SEARCH] {
        let foreign = world
            .call_with(
                vec![attached(
                    AttachmentKind::WorkflowDefinition,
                    GLOBEX_DEFINITION,
                )],
                tool,
                json!({}),
            )
            .await;
        let foreign = content(&foreign);
        assert_eq!(foreign["total"], 0, "{tool}");
        assert!(!foreign["items"].to_string().contains("globex"), "{tool}");
    }
}

#[tokio::test]
async fn instances_are_found_by_text_correlation_id_incidents_and_update_time() {
    let world = seeded();
    let search = |arguments: Value| {
        let world = &world;
        async move {
            let result = world.call(names::INSTANCE_SEARCH, arguments.clone()).await;
            let result = content(&result).clone();
            ids(&result)
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        }
    };
    // Text: instance id, name, correlation id or definition id, letter case ignored.
    assert_eq!(
        search(json!({"definitionId": "orders", "query": "HTTP"})).await,
        ["run-http-2", "run-http-1"]
    );
    assert_eq!(
        search(json!({"definitionId": "orders", "text": "order 42"})).await,
        ["run-ok"]
    );
    assert_eq!(
        search(json!({"from": "2024-01-01T00:00:00Z", "query": "order-42"})).await,
        ["run-ok"]
    );
    assert_eq!(
        search(json!({"from": "2024-01-01T00:00:00Z", "query": "invoice-UPLOAD"})).await,
        ["run-1"]
    );
    let (status, code, _) = refusal(
        &world
            .call(
                names::INSTANCE_SEARCH,
                json!({"definitionId": "orders", "text": "a", "query": "b"}),
            )
            .await,
    );
    assert_eq!((status, code.as_str()), (400, "conflicting_arguments"));

    // Correlation id: exact.
    assert_eq!(
        search(json!({"correlationId": "order-42"})).await,
        ["run-ok"]
    );
    assert!(search(json!({"correlationId": "order-4"})).await.is_empty());
    assert_eq!(
        search(json!({"correlationId": "claim-2026-0417"})).await,
        ["e1c5a09b7d3f2648"]
    );

    // Incidents.
    assert_eq!(
        search(json!({"definitionId": "orders", "hasIncidents": true})).await,
        ["run-http-2", "run-http-1"]
    );
    assert_eq!(
        search(json!({"definitionId": "orders", "hasIncidents": false})).await,
        ["run-ok"]
    );

    // Last update, beside creation.
    assert_eq!(
        search(json!({"updatedFrom": "2024-05-15T00:00:00Z", "updatedTo": "2024-05-31T00:00:00Z"}))
            .await,
        ["run-ok"]
    );
    assert_eq!(
        search(json!({"updatedTo": "2024-05-02T00:00:00Z"})).await,
        ["run-http-1"]
    );
    assert_eq!(
        search(
            json!({"from": "2024-05-01T00:00:00Z", "to": "2024-05-03T00:00:00Z",
                      "updatedFrom": "2024-05-10T00:00:00Z"})
        )
        .await,
        ["run-ok"]
    );
    let (status, code, message) = refusal(
        &world
            .call(
                names::INSTANCE_SEARCH,
                json!({"updatedFrom": "2024-05-10T00:00:00Z", "updatedTo": "2024-05-01T00:00:00Z"}),
            )
            .await,
    );
    assert_eq!((status, code.as_str()), (400, "invalid_time_range"));
    assert!(
        message.contains("'updatedFrom'") && message.contains("'updatedTo'"),
        "{message}"
    );
    world
        .assert_invalid_arguments(
            names::INSTANCE_SEARCH,
            &[
                json!({"definitionId": "orders", "hasIncidents": "yes"}),
                json!({"updatedFrom": "last week"}),
                json!({"correlationId": ""}),
                json!({"correlationId": 42}),
            ],
        )
        .await;
}

#[tokio::test]
async fn incidents_are_found_by_instance_and_error_text() {
    let world = seeded();
    let by_instance = world
        .call(names::INCIDENTS_SEARCH, json!({"instanceId": "run-http-2"}))
        .await;
    let by_instance = content(&by_instance);
    assert_eq!(ids(by_instance), ["run-http-2"]);
    assert_eq!(
        by_instance["items"][0]["exception"]["type"],
        "System.TimeoutException"
    );
    assert_eq!(
        support::summary(by_instance),
        "Incidents matching: 1; showing all 1."
    );
    assert_eq!(
        support::evidence(by_instance),
        ["incident:run-http-2/CallApi"]
    );
    assert_eq!(
        (
            by_instance["instancesRead"].as_u64(),
            by_instance["complete"].as_bool()
        ),
        (Some(1), Some(true))
    );
    assert!(by_instance.get("warnings").is_none());

    let text = |arguments: Value| {
        let world = &world;
        async move {
            let result = world.call(names::INCIDENTS_SEARCH, arguments).await;
            ids(content(&result))
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        }
    };
    // The exception's type, the message, an inner exception's message; letter case ignored.
    assert_eq!(
        text(json!({"definitionId": "orders", "text": "timeoutexception"})).await,
        ["run-http-2"]
    );
    assert_eq!(
        text(json!({"definitionId": "orders", "query": "connection REFUSED"})).await,
        ["run-http-2", "run-http-1"]
    );
    assert_eq!(
        text(json!({"instanceId": "run-1", "query": "503"})).await,
        ["run-1"]
    );
    assert!(
        text(json!({"definitionId": "orders", "text": "no such words"}))
            .await
            .is_empty()
    );
    // Another tenant's instance, or none: nothing, exactly alike.
    assert!(
        text(json!({"instanceId": GLOBEX_INSTANCE}))
            .await
            .is_empty()
    );
    assert!(text(json!({"instanceId": "no-such-run"})).await.is_empty());
    let (status, code, _) = refusal(
        &world
            .call(
                names::INCIDENTS_SEARCH,
                json!({"definitionId": "orders", "text": "a", "query": "b"}),
            )
            .await,
    );
    assert_eq!((status, code.as_str()), (400, "conflicting_arguments"));
}
