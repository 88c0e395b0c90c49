//! The cross-tenant matrix (issue 3's debt): two tenants, every attachment kind and every
//! built-in read path. Tenant B holds the same fixture objects under the same ids as tenant
//! A, with a mark in every name, description and message, plus objects only B has. Nothing
//! tenant A receives — tool results and errors, resolved context, stream events — ever shows
//! the mark, and B's own ids are 404s for A.

use crate::support;

use std::sync::Arc;

use chrono::Utc;
use elsa_ai_abstractions::{
    AiContextAttachment, AiToolResult, AttachmentKind, ToolEnablement, linked_tools,
};
use elsa_ai_host::testing::chat::ChatHarness;
use elsa_ai_host::testing::governance::{
    GovernanceHarness, TEST_AGENT, TEST_TENANT, all_permissions, backend_services,
};
use elsa_ai_scripted::Script;
use elsa_ai_tools::names;
use elsa_workflows::{
    DefinitionQuery, InMemoryWorkflowBackend, InstanceQuery, PageRequest, TenantId, TimeRange,
    VersionOptions, WorkflowDefinitionStore, WorkflowInstanceStore,
};
use serde_json::{Value, json};
use support::RECORDED_RUN;
use support::{
    B_ONLY_DEFINITION, B_ONLY_RUN, MARK, faulted_run, proposal_service, two_tenant_backend,
};
use weaver_testkit::runs::{FaultedRun, RUN_DEFINITION, UPLOAD_EXECUTION};

/// What tenant A's data looks like: ids shared with B, and the attachments of a turn.
struct Tenants {
    backend: Arc<InMemoryWorkflowBackend>,
    definitions: Vec<String>,
    instances: Vec<String>,
    /// A definition both tenants have, with a faulted run of A (and several of B) in it.
    scoped: String,
    /// An activity of `scoped`.
    activity: String,
}

async fn tenants() -> Tenants {
    let backend = two_tenant_backend();
    let acme = TenantId::new(TEST_TENANT);
    let definitions: Vec<String> = WorkflowDefinitionStore::search(
        backend.as_ref(),
        &acme,
        &DefinitionQuery {
            page: PageRequest::new(0, PageRequest::MAX_LIMIT),
            ..DefinitionQuery::default()
        },
    )
    .await
    .expect("definitions")
    .items
    .into_iter()
    .map(|row| row.definition_id)
    .collect();
    let scoped = definitions
        .iter()
        .find(|id| !id.is_empty())
        .expect("a definition")
        .clone();
    let definition =
        WorkflowDefinitionStore::find(backend.as_ref(), &acme, &scoped, VersionOptions::Latest)
            .await
            .expect("read")
            .expect("exists");
    let activity = definition
        .activities()
        .iter()
        .skip(1)
        .find_map(|n| n.id().map(str::to_owned))
        .expect("an activity");
    FaultedRun::new(RECORDED_RUN, "2024-04-18T12:25:00Z").seed(&backend, &acme);
    backend.insert_instance(
        &acme,
        faulted_run(
            "a-run",
            &scoped,
            "2024-04-18T12:20:00Z",
            "PublicStep",
            "Elsa.WriteLine",
            "System.InvalidOperationException",
        ),
    );
    // A run still going and a definition with a published and a newer draft version, so
    // that every operation applies to something of A's.
    backend.insert_instance(
        &acme,
        elsa_workflows::WorkflowInstance::from_value(json!({
            "id": "a-running", "definitionId": scoped, "version": 1,
            "status": "Running", "subStatus": "Suspended", "createdAt": "2024-04-18T12:30:00Z"
        }))
        .expect("an instance"),
    );
    for (version, published) in [(1, true), (2, false)] {
        backend
            .insert_definition(
                &acme,
                elsa_workflows::WorkflowDefinition::from_value(json!({
                    "definitionId": "a-drafted", "version": version, "isPublished": published,
                    "name": "Drafted", "root": {"id": "r", "type": "Elsa.Flowchart", "activities": []}
                }))
                .expect("a definition"),
            )
            .expect("stored");
    }
    let instances = WorkflowInstanceStore::search(
        backend.as_ref(),
        &acme,
        &InstanceQuery {
            page: PageRequest::new(0, PageRequest::MAX_LIMIT),
            ..InstanceQuery::default()
        },
    )
    .await
    .expect("instances")
    .items
    .iter()
    .map(|i| i.id().to_owned())
    .collect();
    Tenants {
        backend,
        definitions,
        instances,
        scoped,
        activity,
    }
}

impl Tenants {
    /// One attachment of every kind, each naming an object both tenants have.
    fn attachments(&self) -> Vec<AiContextAttachment> {
        let range = TimeRange {
            from: "2024-01-01T00:00:00Z".parse().unwrap(),
            to: "2024-12-31T00:00:00Z".parse().unwrap(),
        };
        let mut selection =
            AiContextAttachment::new(AttachmentKind::ActivitySelection, self.scoped.clone());
        selection.activity_id = Some(self.activity.clone());
        let mut time = AiContextAttachment::new(AttachmentKind::TimeRange, "2024");
        time.time_range = Some(range);
        let attachments = vec![
            AiContextAttachment::new(AttachmentKind::WorkflowDefinition, self.scoped.clone()),
            AiContextAttachment::new(AttachmentKind::WorkflowInstance, "a-run"),
            selection,
            AiContextAttachment::new(AttachmentKind::Tenant, TEST_TENANT),
            AiContextAttachment::new(AttachmentKind::DiagnosticsScope, self.scoped.clone()),
            time,
        ];
        let kinds: Vec<AttachmentKind> = attachments.iter().map(|a| a.kind.clone()).collect();
        assert_eq!(kinds, AttachmentKind::ALL, "every attachment kind");
        attachments
    }

    /// Every built-in tool call tenant A can make about its data, proposal tools included.
    fn calls(&self) -> Vec<(&'static str, Value)> {
        let mut calls = Vec::new();
        for id in &self.definitions {
            calls.push((names::GET_DEFINITION, json!({"definitionId": id})));
            calls.push((names::GET_DEFINITION_GRAPH, json!({"definitionId": id})));
            calls.push((names::LIST_VERSIONS, json!({"definitionId": id})));
            calls.push((names::EXPLAIN, json!({"definitionId": id})));
            calls.push((
                names::GET_DEFINITION,
                json!({"definitionId": id, "version": "published"}),
            ));
        }
        for offset in (0..self.definitions.len()).step_by(50) {
            calls.push((
                names::LIST_DEFINITIONS,
                json!({"offset": offset, "limit": 50}),
            ));
        }
        calls.push((names::LIST_DEFINITIONS, json!({"text": "secret"})));
        calls.push((
            names::LIST_DEFINITIONS,
            json!({"filter": "published", "limit": 50}),
        ));
        for offset in (0..200).step_by(50) {
            calls.push((
                names::ACTIVITIES_CATALOG,
                json!({"offset": offset, "limit": 50}),
            ));
        }
        calls.push((names::ACTIVITIES_CATALOG, json!({"text": "secret"})));
        calls.push((
            names::ACTIVITIES_GET_DESCRIPTOR,
            json!({"type": "Elsa.WriteLine"}),
        ));
        // B holds the same definitions with marked names and descriptions.
        calls.push((
            names::COMPARE_VERSIONS,
            json!({"definitionId": self.scoped, "from": "latest"}),
        ));
        calls.push((
            names::COMPARE_VERSIONS,
            json!({"definitionId": self.scoped, "from": 1, "to": "published"}),
        ));
        // The same definitions exist under B with marked names: a usage listing that read
        // B's would show the mark; B's own definition calls nothing of A's.
        calls.push((
            names::FIND_USAGES,
            json!({"activityType": "Elsa.WriteLine"}),
        ));
        calls.push((
            names::FIND_USAGES,
            json!({"workflowDefinitionId": "refgraph-child"}),
        ));
        calls.push((
            names::FIND_USAGES,
            json!({"workflowDefinitionId": B_ONLY_DEFINITION}),
        ));
        // B holds a run with the same instance and execution ids, with marked records (first:
        // the chat matrix calls each tool once, with its first arguments).
        calls.push((
            names::INSTANCE_ACTIVITY_STATE,
            json!({"instanceId": RECORDED_RUN, "executionId": UPLOAD_EXECUTION}),
        ));
        calls.push((
            names::INCIDENTS_GET,
            json!({"instanceId": RECORDED_RUN, "activityId": "UploadExport"}),
        ));
        calls.push((
            names::INCIDENTS_GET,
            json!({"instanceId": "a-run", "activityId": "PublicStep"}),
        ));
        for id in &self.instances {
            for tool in [
                names::INSTANCE_GET,
                names::INSTANCE_ERRORS,
                names::EXECUTION_HISTORY,
                names::INSTANCE_SUMMARIZE,
                names::INSTANCE_ACTIVITY_STATE,
            ] {
                calls.push((tool, json!({"instanceId": id})));
            }
        }
        // With no scope of their own, the searches are scoped by the turn's attachments.
        calls.push((names::INCIDENTS_SEARCH, json!({"limit": 50})));
        calls.push((
            names::INCIDENTS_SEARCH,
            json!({"definitionId": RUN_DEFINITION, "limit": 50}),
        ));
        calls.push((
            names::INCIDENTS_SEARCH,
            json!({"instanceId": RECORDED_RUN, "text": "secret"}),
        ));
        calls.push((
            names::INCIDENTS_SEARCH,
            json!({"from": "2024-01-01T00:00:00Z", "text": "globex"}),
        ));
        calls.push((names::INSTANCE_SEARCH, json!({"limit": 50})));
        calls.push((
            names::INSTANCE_SEARCH,
            json!({"subStatus": "Faulted", "limit": 50}),
        ));
        calls.push((
            names::INSTANCE_SEARCH,
            json!({"correlationId": MARK, "limit": 50}),
        ));
        calls.push((
            names::INSTANCE_SEARCH,
            json!({"updatedFrom": "2024-01-01T00:00:00Z", "query": "secret", "limit": 50}),
        ));
        calls.push((names::AGGREGATE_FAILURES, json!({})));
        calls.push((names::DETECT_TRENDS, json!({})));
        let patch = json!([{"op": "setName", "name": "Renamed by A"}]);
        let version = 1.max(self.version_of_scoped());
        calls.push((
            names::VALIDATE_DRAFT,
            json!({"update": {"definitionId": self.scoped, "baselineVersion": version, "operations": patch}}),
        ));
        calls.push((
            names::PROPOSE_UPDATE,
            json!({"definitionId": self.scoped, "baselineVersion": version, "operations": patch, "rationale": "rename"}),
        ));
        calls.push((
            names::PROPOSE_CREATE,
            json!({"draft": {"name": "Fresh", "activities": [{"id": "a", "type": "Elsa.WriteLine"}]}, "rationale": "new"}),
        ));
        // Operations read their targets' state: A's, under ids B has too (B's runs of the
        // same ids are faulted and marked).
        calls.push((
            names::PROPOSE_RETRY,
            json!({"instanceIds": ["a-run", RECORDED_RUN], "rationale": "transient"}),
        ));
        calls.push((
            names::PROPOSE_RESTART,
            json!({"instanceIds": ["a-run"], "rationale": "again"}),
        ));
        calls.push((
            names::PROPOSE_CANCEL,
            json!({"instanceIds": ["a-running"], "rationale": "stop"}),
        ));
        calls.push((
            names::PROPOSE_CANCEL,
            json!({"instanceIds": [B_ONLY_RUN], "rationale": "stop"}),
        ));
        calls.push((
            names::PROPOSE_DELETE,
            json!({"definitionId": self.scoped, "rationale": "unused"}),
        ));
        calls.push((
            names::PROPOSE_PUBLISH,
            json!({"definitionId": "a-drafted", "rationale": "ship"}),
        ));
        calls.push((
            names::PROPOSE_UNPUBLISH,
            json!({"definitionId": "a-drafted", "rationale": "retire"}),
        ));
        calls.push((
            names::PROPOSE_PUBLISH,
            json!({"definitionId": B_ONLY_DEFINITION, "rationale": "ship"}),
        ));
        calls
    }

    fn version_of_scoped(&self) -> i32 {
        self.backend
            .definition_versions(&TenantId::new(TEST_TENANT), &self.scoped)
            .last()
            .map_or(1, |d| d.version())
    }
}

/// Fails when `text` shows anything of tenant B, quoting where.
fn assert_clean(what: &str, text: &str) {
    let lowered = text.to_lowercase();
    let found = lowered
        .find(&MARK.to_lowercase())
        .or_else(|| text.find("Globex"));
    if let Some(at) = found {
        let start = text.floor_char_boundary(at.saturating_sub(150));
        let end = text.ceil_char_boundary((at + 150).min(text.len()));
        panic!("{what} shows tenant B's data: …{}…", &text[start..end]);
    }
}

fn text_of(result: &AiToolResult) -> String {
    serde_json::to_string(result).expect("serialisable")
}

#[tokio::test]
async fn no_tool_result_of_tenant_a_shows_tenant_b() {
    let tenants = tenants().await;
    let service = proposal_service(&tenants.backend);
    let harness = GovernanceHarness::builder()
        .linked_tools()
        .services(backend_services(tenants.backend.clone(), Arc::new(service)))
        .build();
    for tool in [
        names::VALIDATE_DRAFT,
        names::PROPOSE_CREATE,
        names::PROPOSE_UPDATE,
    ]
    .iter()
    .chain(names::OPERATIONS)
    {
        harness.decide(tool, None, true).await;
    }
    let alice = elsa_ai_abstractions::AiCaller::new("alice", TEST_TENANT, all_permissions());
    let calls = tenants.calls();
    let mut tools_called: Vec<&str> = calls.iter().map(|(tool, _)| *tool).collect();
    tools_called.sort_unstable();
    tools_called.dedup();
    assert_eq!(
        tools_called.len(),
        names::ALL.len(),
        "every built-in tool is exercised"
    );
    let mut successes = 0;
    for (tool, arguments) in calls {
        let result = harness
            .call_as(
                alice.clone(),
                tenants.attachments(),
                tool,
                arguments.clone(),
            )
            .await;
        successes += usize::from(result.is_success());
        assert!(
            result.is_success() || result.error.as_ref().is_some_and(|e| e.status == 404),
            "{tool} {arguments}: {}",
            result.to_model_text()
        );
        assert_clean(&format!("{tool} {arguments}"), &text_of(&result));
    }
    assert!(
        successes > 50,
        "the matrix reads real data ({successes} successes)"
    );

    // Tenant B's own objects do not exist for tenant A.
    for (tool, arguments) in [
        (
            names::GET_DEFINITION,
            json!({"definitionId": B_ONLY_DEFINITION}),
        ),
        (names::INSTANCE_GET, json!({"instanceId": B_ONLY_RUN})),
        (
            names::INCIDENTS_GET,
            json!({"instanceId": B_ONLY_RUN, "activityId": "SecretStep"}),
        ),
        (names::INSTANCE_ERRORS, json!({"instanceId": B_ONLY_RUN})),
        (names::EXECUTION_HISTORY, json!({"instanceId": B_ONLY_RUN})),
        (names::INSTANCE_SUMMARIZE, json!({"instanceId": B_ONLY_RUN})),
        (
            names::INSTANCE_ACTIVITY_STATE,
            json!({"instanceId": B_ONLY_RUN}),
        ),
        (
            names::PROPOSE_UPDATE,
            json!({"definitionId": B_ONLY_DEFINITION, "baselineVersion": 1, "operations": [{"op": "setName", "name": "x"}], "rationale": "x"}),
        ),
        (
            names::PROPOSE_RETRY,
            json!({"instanceIds": ["a-run", B_ONLY_RUN], "rationale": "x"}),
        ),
        (
            names::PROPOSE_DELETE,
            json!({"definitionId": B_ONLY_DEFINITION, "rationale": "x"}),
        ),
    ] {
        let result = harness
            .call_as(alice.clone(), Vec::new(), tool, arguments)
            .await;
        assert_eq!(result.error.as_ref().map(|e| e.status), Some(404), "{tool}");
        assert_clean(tool, &text_of(&result));
    }
    // A scope naming B's definition is unknown to A.
    let b_scope = vec![
        AiContextAttachment::new(AttachmentKind::DiagnosticsScope, B_ONLY_DEFINITION),
        tenants.attachments().pop().expect("the time range"),
    ];
    for tool in [names::AGGREGATE_FAILURES, names::DETECT_TRENDS] {
        let result = harness
            .call_as(alice.clone(), b_scope.clone(), tool, json!({}))
            .await;
        assert_eq!(result.error.as_ref().map(|e| e.status), Some(404), "{tool}");
        assert_clean(tool, &text_of(&result));
    }
}

#[tokio::test]
async fn no_resolved_context_or_stream_event_of_tenant_a_shows_tenant_b() {
    let tenants = tenants().await;
    let service = proposal_service(&tenants.backend);
    let mut script = Script::new();
    let mut seen = std::collections::BTreeSet::new();
    // One call of each tool, with the arguments of the governed matrix.
    for (tool, arguments) in tenants.calls() {
        if seen.insert(tool) {
            script = script.tool_call(tool, arguments);
        }
    }
    script = script.tool_call(names::INSTANCE_GET, json!({"instanceId": B_ONLY_RUN}));
    let mut builder = ChatHarness::builder()
        .services(backend_services(
            tenants.backend.clone(),
            Arc::new(service.clone()),
        ))
        .proposals(service)
        .script(script.reply("Done."));
    for tool in linked_tools() {
        builder = builder.tool(tool);
    }
    let harness = builder.build();
    for tool in [
        names::VALIDATE_DRAFT,
        names::PROPOSE_CREATE,
        names::PROPOSE_UPDATE,
    ]
    .iter()
    .chain(names::OPERATIONS)
    {
        harness
            .registry
            .enablement()
            .set(&ToolEnablement {
                tenant_id: TEST_TENANT.into(),
                tool_name: (*tool).to_owned(),
                agent: None,
                enabled: true,
                changed_by: "admin".into(),
                changed_at: Utc::now(),
            })
            .await
            .expect("enable");
    }

    let alice = harness.caller();
    let events = harness
        .run(harness.request_with(alice.clone(), TEST_AGENT, tenants.attachments()))
        .await;
    let turns = harness.provider.turns();
    let context = &turns.last().expect("a turn").context;
    assert_eq!(
        context.len(),
        AttachmentKind::ALL.len(),
        "every attachment resolved"
    );
    for resolved in context {
        assert_clean(
            &format!("{:?} context", resolved.kind),
            &serde_json::to_string(resolved).expect("serialisable"),
        );
    }
    let completed = events
        .iter()
        .filter(|e| e.event_type.as_str() == "tool.completed")
        .count();
    assert!(completed >= names::ALL.len(), "{completed} tools completed");
    for event in &events {
        assert_clean(
            event.event_type.as_str(),
            &serde_json::to_string(event).expect("serialisable"),
        );
    }

    // Attaching one of B's objects is refused like an unknown one, and says nothing of B.
    for (kind, reference) in [
        (AttachmentKind::WorkflowDefinition, B_ONLY_DEFINITION),
        (AttachmentKind::WorkflowInstance, B_ONLY_RUN),
        (AttachmentKind::DiagnosticsScope, B_ONLY_DEFINITION),
        (AttachmentKind::Tenant, support::GLOBEX),
    ] {
        let error = harness
            .refused(harness.request_with(
                alice.clone(),
                TEST_AGENT,
                vec![AiContextAttachment::new(kind.clone(), reference)],
            ))
            .await;
        assert!(matches!(error.status(), 403 | 404), "{kind:?}: {error}");
        assert_clean(&format!("{kind:?} refusal"), error.message());
    }
}
