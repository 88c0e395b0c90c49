//! `workflow.validateDraft`, `workflow.proposeCreate` and `workflow.proposeUpdate` through the
//! `ToolGovernor`, submitting to the host's real `ProposalService` over the fixture backend.
//! They are off until an administrator enables them, and none of them writes a workflow.

use std::sync::Arc;

use crate::support;

use elsa_ai_abstractions::{AiToolOutcome, Permission, ProposalId, ProposalKind};
use elsa_ai_host::ProposalService;
use elsa_ai_host::testing::governance::TEST_TENANT;
use elsa_ai_tools::names;
use elsa_workflows::{TenantId, VersionOptions, WorkflowDefinition, WorkflowDefinitionStore};
use serde_json::{Value, json};
use support::{GLOBEX_DEFINITION, World, content, proposal_world, refusal};

const PROPOSAL_TOOLS: [&str; 3] = [
    names::VALIDATE_DRAFT,
    names::PROPOSE_CREATE,
    names::PROPOSE_UPDATE,
];

/// A small valid workflow the tests change: `hello` → `bye`, both `Elsa.WriteLine`.
fn greeting() -> WorkflowDefinition {
    WorkflowDefinition::from_value(json!({
        "definitionId": "greeting", "name": "Greeting", "version": 1, "isPublished": true,
        "root": {"id": "Flowchart1", "type": "Elsa.Flowchart", "activities": [
            {"id": "hello", "type": "Elsa.WriteLine", "version": 1,
             "text": {"typeName": "String", "expression": {"type": "Literal", "value": "Hello"}}},
            {"id": "bye", "type": "Elsa.WriteLine", "version": 1,
             "text": {"typeName": "String", "expression": {"type": "Literal", "value": "Bye"}}}
        ], "connections": [{"source": {"activity": "hello", "port": "Done"}, "target": {"activity": "bye", "port": "In"}}]}
    }))
    .expect("valid")
}

/// The proposal world with `greeting` stored and the proposal tools enabled.
async fn enabled() -> (World, ProposalService) {
    let (world, service) = proposal_world();
    world
        .backend
        .insert_definition(&TenantId::new(TEST_TENANT), greeting())
        .expect("greeting");
    for tool in PROPOSAL_TOOLS {
        world.harness.decide(tool, None, true).await;
    }
    (world, service)
}

fn new_workflow() -> Value {
    json!({
        "definitionId": "welcome-mail",
        "name": "Welcome mail",
        "variables": [{"name": "Recipient", "typeName": "String"}],
        "activities": [
            {"id": "start", "type": "Elsa.WriteLine", "inputs": {"text": {"value": "Starting"}}},
            {"id": "log", "type": "Elsa.WriteLine", "name": "Log it",
             "inputs": {"Text": {"value": "`Welcome ${getRecipient()}`", "expression": "JavaScript", "typeName": "String"}}}
        ],
        "connections": [{"source": "start", "target": "log"}]
    })
}

fn insert_between() -> Value {
    json!([
        {"op": "addActivity", "activity": {"id": "wait", "type": "Elsa.WriteLine", "name": "Wait",
            "inputs": {"text": {"value": "Waiting"}}}},
        {"op": "disconnect", "source": "hello", "target": "bye"},
        {"op": "connect", "source": "hello", "target": "wait"},
        {"op": "connect", "source": "wait", "target": "bye"},
        {"op": "setInput", "activityId": "bye", "input": "text", "value": "Goodbye"}
    ])
}

async fn latest(world: &World, id: &str) -> Option<Arc<WorkflowDefinition>> {
    let store: &dyn WorkflowDefinitionStore = world.backend.as_ref();
    store
        .find(&TenantId::new(TEST_TENANT), id, VersionOptions::Latest)
        .await
        .expect("read")
}

#[tokio::test]
async fn proposal_tools_are_off_until_an_administrator_enables_them() {
    let (world, _) = proposal_world();
    for tool in PROPOSAL_TOOLS {
        let result = world.call(tool, json!({})).await;
        assert_eq!(result.outcome, AiToolOutcome::Denied, "{tool}");
        assert_eq!(refusal(&result).1, "tool_disabled", "{tool}");
        world.harness.decide(tool, None, true).await;
        let result = world.call(tool, json!({})).await;
        assert_ne!(refusal(&result).1, "tool_disabled", "{tool} is enabled now");
    }
}

#[tokio::test]
async fn validate_draft_reports_diagnostics_and_persists_nothing() {
    let (world, service) = enabled().await;
    let clean = world
        .call(names::VALIDATE_DRAFT, json!({"draft": new_workflow()}))
        .await;
    let clean = content(&clean);
    assert_eq!(clean["valid"], true, "{clean}");
    assert_eq!(clean["persisted"], false);
    assert_eq!(clean["validation"]["errors"], 0);
    assert_eq!(clean["preview"]["activities"]["total"], 2);
    assert_eq!(
        clean["preview"]["connections"]["items"][0],
        json!({"from": "start:Done", "to": "log:In"})
    );

    let mut broken = new_workflow();
    broken["activities"][1]["type"] = json!("Acme.DoesNotExist");
    broken["connections"] = json!([{"source": "start", "sourcePort": "Nowhere", "target": "log"}]);
    let result = world
        .call(names::VALIDATE_DRAFT, json!({"draft": broken}))
        .await;
    let report = content(&result);
    assert_eq!(report["valid"], false);
    let codes: Vec<(&str, Option<&str>)> = report["validation"]["diagnostics"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["code"].as_str().unwrap(), d["activityId"].as_str()))
        .collect();
    assert!(
        codes.contains(&("unknown_activity_type", Some("log"))),
        "{codes:?}"
    );
    assert!(
        codes.iter().any(|(code, _)| *code == "unknown_port"),
        "{codes:?}"
    );
    assert_eq!(
        report["validation"]["diagnostics"]["items"][0]["severity"], "Error",
        "errors come first"
    );

    let update = world
        .call(
            names::VALIDATE_DRAFT,
            json!({"update": {"definitionId": "greeting", "baselineVersion": 1, "operations": insert_between()}}),
        )
        .await;
    let update = content(&update);
    assert_eq!(update["valid"], true, "{update}");
    assert_eq!(
        update["baseline"],
        json!({"definitionId": "greeting", "version": 1})
    );
    assert_eq!(update["preview"]["activities"]["total"], 3);

    let listed = service
        .list(&world.alice(), &Default::default())
        .await
        .expect("inbox");
    assert_eq!(listed.total, 0, "validation stores no proposal");
    assert!(
        latest(&world, "welcome-mail").await.is_none(),
        "nor any workflow"
    );
    assert!(
        latest(&world, "greeting")
            .await
            .unwrap()
            .find_activity("wait")
            .is_none()
    );
}

#[tokio::test]
async fn validate_draft_refuses_unbuildable_drafts_and_ambiguous_arguments() {
    let (world, _) = enabled().await;
    let mut duplicate = new_workflow();
    duplicate["activities"][1]["id"] = json!("start");
    let (status, code, message) = refusal(
        &world
            .call(names::VALIDATE_DRAFT, json!({"draft": duplicate}))
            .await,
    );
    assert_eq!((status, code.as_str()), (400, "invalid_draft"));
    assert!(message.contains("activities[1]"), "{message}");

    for arguments in [
        json!({}),
        json!({"draft": new_workflow(), "update": {"definitionId": "greeting", "baselineVersion": 1, "operations": insert_between()}}),
    ] {
        let (status, code, _) = refusal(&world.call(names::VALIDATE_DRAFT, arguments).await);
        assert_eq!((status, code.as_str()), (400, "invalid_arguments"));
    }
    world
        .assert_invalid_arguments(
            names::VALIDATE_DRAFT,
            &[
                json!({"draft": {"activities": []}}),
                json!({"draft": {"name": "x", "activities": [{"id": "a"}]}}),
                json!({"draft": {"name": "x"}, "persist": true}),
            ],
        )
        .await;
    // Patching reads the baseline: it takes read:workflows too.
    let result = world
        .call_as(
            world.without(&Permission::READ_WORKFLOWS),
            names::VALIDATE_DRAFT,
            json!({"update": {"definitionId": "greeting", "baselineVersion": 1, "operations": insert_between()}}),
        )
        .await;
    let (status, code, _) = refusal(&result);
    assert_eq!((status, code.as_str()), (403, "permission_denied"));
    let result = world
        .call_as(
            world.without(&Permission::PROPOSE_WORKFLOWS),
            names::VALIDATE_DRAFT,
            json!({"draft": new_workflow()}),
        )
        .await;
    assert_eq!(refusal(&result).0, 403);
}

#[tokio::test]
async fn propose_create_stores_a_validated_proposal_and_writes_nothing() {
    let (world, service) = enabled().await;
    let result = world
        .call(
            names::PROPOSE_CREATE,
            json!({"draft": new_workflow(), "rationale": "New hires should get a welcome mail."}),
        )
        .await;
    let got = content(&result);
    assert_eq!(got["status"], "Validated", "{got}");
    assert_eq!(got["kind"], "Create");
    assert_eq!(got["definitionId"], "welcome-mail");
    assert_eq!(got["validation"]["passed"], true);
    assert_eq!(
        got["graphDiff"]["counts"]["activitiesAdded"], 3,
        "root and two activities"
    );
    assert!(
        got["graphDiff"].get("changes").is_none(),
        "the preview shows a creation"
    );
    assert_eq!(got["preview"]["name"], "Welcome mail");
    assert!(got["nextStep"].as_str().unwrap().contains("review"));

    let id = ProposalId::new(got["proposalId"].as_str().unwrap());
    let stored = service.find(&world.alice(), &id).await.expect("stored");
    assert_eq!(stored.kind, ProposalKind::Create);
    assert_eq!(stored.rationale, "New hires should get a welcome mail.");
    assert_eq!(stored.created_by, "alice");
    let log = stored
        .definition()
        .unwrap()
        .find_activity("log")
        .expect("drafted");
    assert_eq!(log.json()["text"]["expression"]["type"], "JavaScript");
    assert!(
        latest(&world, "welcome-mail").await.is_none(),
        "nothing written"
    );
}

#[tokio::test]
async fn propose_create_blocks_invalid_drafts_and_refuses_taken_ids() {
    let (world, _) = enabled().await;
    let mut broken = new_workflow();
    broken["activities"][0]["type"] = json!("Acme.DoesNotExist");
    let blocked = world
        .call(
            names::PROPOSE_CREATE,
            json!({"draft": broken, "rationale": "try"}),
        )
        .await;
    let blocked = content(&blocked);
    assert_eq!(blocked["status"], "Blocked");
    assert_eq!(blocked["validation"]["passed"], false);
    assert_eq!(
        blocked["validation"]["diagnostics"]["items"][0]["code"],
        "unknown_activity_type"
    );

    let mut taken = new_workflow();
    taken["definitionId"] = json!("greeting");
    let (status, code, message) = refusal(
        &world
            .call(
                names::PROPOSE_CREATE,
                json!({"draft": taken, "rationale": "x"}),
            )
            .await,
    );
    assert_eq!((status, code.as_str()), (409, "definition_exists"));
    assert!(message.contains("workflow.proposeUpdate"), "{message}");

    // Without an id, one is generated.
    let mut anonymous = new_workflow();
    anonymous.as_object_mut().unwrap().remove("definitionId");
    let generated = world
        .call(
            names::PROPOSE_CREATE,
            json!({"draft": anonymous, "rationale": "x"}),
        )
        .await;
    let generated = content(&generated)["definitionId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(generated.len(), 32, "{generated}");

    world
        .assert_invalid_arguments(
            names::PROPOSE_CREATE,
            &[
                json!({"draft": new_workflow()}),
                json!({"draft": new_workflow(), "rationale": ""}),
                json!({"rationale": "x"}),
                json!({"draft": new_workflow(), "rationale": "x", "status": "Approved"}),
            ],
        )
        .await;
    let denied = world
        .call_as(
            world.without(&Permission::PROPOSE_WORKFLOWS),
            names::PROPOSE_CREATE,
            json!({"draft": new_workflow(), "rationale": "x"}),
        )
        .await;
    let (status, code, _) = refusal(&denied);
    assert_eq!((status, code.as_str()), (403, "permission_denied"));
}

#[tokio::test]
async fn propose_update_patches_the_baseline_into_a_proposal_with_a_graph_diff() {
    let (world, service) = enabled().await;
    let result = world
        .call(
            names::PROPOSE_UPDATE,
            json!({
                "definitionId": "greeting", "baselineVersion": 1,
                "operations": insert_between(), "rationale": "Pause between the lines."
            }),
        )
        .await;
    let got = content(&result);
    assert_eq!(got["status"], "Validated", "{got}");
    assert_eq!(got["kind"], "Update");
    assert_eq!(
        got["baseline"],
        json!({"definitionId": "greeting", "version": 1})
    );
    let diff = &got["graphDiff"];
    assert_eq!(diff["counts"]["activitiesAdded"], 1);
    assert_eq!(
        diff["changes"]["activitiesAdded"]["items"][0],
        "wait (Elsa.WriteLine)"
    );
    assert_eq!(
        diff["changes"]["connectionsRemoved"]["items"][0],
        "hello:Done -> bye:In"
    );
    assert_eq!(diff["changes"]["connectionsAdded"]["total"], 2);
    assert_eq!(
        diff["changes"]["activitiesChanged"]["items"][0],
        "bye (Elsa.WriteLine): input text changed"
    );

    let id = ProposalId::new(got["proposalId"].as_str().unwrap());
    let stored = service.find(&world.alice(), &id).await.expect("stored");
    let patched = stored.definition().unwrap();
    assert!(patched.find_activity("wait").is_some());
    assert_eq!(patched.version(), 1, "the applier assigns the next version");
    let patch = stored
        .payload
        .as_ref()
        .and_then(|p| p.patch.as_ref())
        .expect("the patch is kept");
    assert_eq!(patch["format"], "weaver.workflowPatch/v1");
    assert_eq!(patch["operations"], insert_between());
    let unchanged = latest(&world, "greeting").await.expect("greeting");
    assert_eq!(unchanged.version(), 1);
    assert!(unchanged.find_activity("wait").is_none(), "nothing written");
}

#[tokio::test]
async fn propose_update_refuses_stale_unknown_foreign_and_failing_patches() {
    let (world, _) = enabled().await;
    let update = |id: &str, version: i32, operations: Value| json!({"definitionId": id, "baselineVersion": version, "operations": operations, "rationale": "r"});
    world
        .assert_standard_refusals(
            names::PROPOSE_UPDATE,
            &Permission::PROPOSE_WORKFLOWS,
            |id| update(id, 1, insert_between()),
            "greeting",
            GLOBEX_DEFINITION,
        )
        .await;
    let missing_version = refusal(
        &world
            .call(
                names::PROPOSE_UPDATE,
                update("greeting", 7, insert_between()),
            )
            .await,
    );
    assert_eq!(
        (missing_version.0, missing_version.1.as_str()),
        (404, "not_found")
    );

    let failing = refusal(
        &world
            .call(
                names::PROPOSE_UPDATE,
                update(
                    "greeting",
                    1,
                    json!([
                        {"op": "removeActivity", "activityId": "bye"},
                        {"op": "connect", "source": "hello", "target": "bye"}
                    ]),
                ),
            )
            .await,
    );
    assert_eq!((failing.0, failing.1.as_str()), (400, "invalid_patch"));
    assert!(failing.2.contains("operation 1 (connect)"), "{}", failing.2);

    let mut next = greeting();
    next.set_version(2);
    next.set_version_id("greeting-v2");
    world
        .backend
        .insert_definition(&TenantId::new(TEST_TENANT), next)
        .expect("v2");
    let stale = refusal(
        &world
            .call(
                names::PROPOSE_UPDATE,
                update("greeting", 1, insert_between()),
            )
            .await,
    );
    assert_eq!((stale.0, stale.1.as_str()), (409, "stale_baseline"));
    assert!(stale.2.contains("version 2"), "{}", stale.2);

    let denied = world
        .call_as(
            world.without(&Permission::READ_WORKFLOWS),
            names::PROPOSE_UPDATE,
            update("greeting", 2, insert_between()),
        )
        .await;
    assert_eq!(refusal(&denied).1, "permission_denied");

    world
        .assert_invalid_arguments(
            names::PROPOSE_UPDATE,
            &[
                update("greeting", 2, json!([])),
                update("greeting", 0, insert_between()),
                update("greeting", 2, json!([{"op": "rewrite", "path": "/root"}])),
                update("greeting", 2, json!([{"op": "replace", "path": "/name", "value": "JSON Patch"}])),
                json!({"definitionId": "greeting", "baselineVersion": 2, "operations": insert_between()}),
            ],
        )
        .await;
}
