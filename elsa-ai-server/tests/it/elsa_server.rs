//! A tenant served by an Elsa Server (`elsa_url` in `[[tenants]]`), over real sockets: the
//! `weaver` server talks to the testkit's stand-in for Elsa 3 Server's REST API. A chat turn
//! reads a definition that lives only in Elsa, an approved proposal is applied by saving the
//! new version to Elsa, a failing Elsa never leaks its API key into the stream, and bad
//! `elsa_*` settings stop the server at start-up with a clear message.

use elsa_ai_server::config::WeaverConfig;
use elsa_ai_server::testing::{ALICE_KEY, GINA_KEY, SseEvent, TestServer, two_tenants};
use elsa_ai_server::{StartupError, Weaver};
use elsa_workflows::{TenantId, VersionOptions, WorkflowDefinitionStore};
use reqwest::StatusCode;
use serde_json::{Value, json};
use weaver_testkit::elsa_api::ElsaApiStandIn;

/// The Elsa API key, as the environment holds it.
const ELSA_KEY: &str = "elsa-api-key-7b2e9c40d1";
const ELSA_KEY_VARIABLE: &str = "TEST_ELSA_API_KEY";
const ELSA_TENANT: &str = "acme-in-elsa";
const DEFINITION: &str = "elsa-hosted-order";

/// An Elsa Server holding the fixtures and one published definition of our own.
async fn elsa() -> ElsaApiStandIn {
    let elsa = ElsaApiStandIn::with_fixtures(&format!("ApiKey {ELSA_KEY}")).await;
    elsa.require_tenant_header(ELSA_TENANT);
    elsa.insert_definition(json!({
        "id": "elsa-hosted-order-v1",
        "definitionId": DEFINITION,
        "name": "Order handled in Elsa",
        "description": "Greets and finishes.",
        "version": 1,
        "isLatest": true,
        "isPublished": true,
        "root": {
            "id": "Flowchart1", "type": "Elsa.Flowchart", "version": 1,
            "activities": [
                {"id": "start", "type": "Elsa.Start", "version": 1},
                {"id": "greet", "type": "Elsa.WriteLine", "version": 1,
                 "text": {"typeName": "String", "expression": {"type": "Literal", "value": "Hi"}}}
            ],
            "connections": [
                {"source": {"activity": "start", "port": "Done"},
                 "target": {"activity": "greet", "port": "In"}}
            ]
        }
    }));
    elsa
}

/// `two_tenants()` with `acme` served by `elsa` instead of the samples.
fn config(elsa: &ElsaApiStandIn) -> WeaverConfig {
    let mut config = two_tenants();
    let acme = &mut config.tenants[0];
    assert_eq!(acme.id, "acme");
    acme.elsa_url = Some(elsa.url().to_owned());
    acme.elsa_api_key_env = Some(ELSA_KEY_VARIABLE.to_owned());
    acme.elsa_tenant = Some(ELSA_TENANT.to_owned());
    config
}

fn env(name: &str) -> Option<String> {
    (name == ELSA_KEY_VARIABLE).then(|| ELSA_KEY.to_owned())
}

async fn start(elsa: &ElsaApiStandIn) -> TestServer {
    TestServer::start_with(Weaver::builder(config(elsa)).env(env)).await
}

fn reply(events: &[SseEvent]) -> String {
    events
        .iter()
        .filter(|e| e.event == "assistant.completed")
        .map(|e| {
            e.json()["data"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test]
async fn a_chat_reads_a_definition_that_lives_in_elsa_and_an_applied_proposal_is_saved_there() {
    let elsa = elsa().await;
    let server = start(&elsa).await;

    // Read: the demo provider calls workflow.getDefinition on the attached definition.
    let events: Vec<SseEvent> = server
        .chat(
            ALICE_KEY,
            &json!({
                "message": "What does this workflow do?",
                "attachments": [{"kind": "WorkflowDefinition", "referenceId": DEFINITION}],
            }),
        )
        .await
        .collect()
        .await;
    let completed = events
        .iter()
        .find(|e| e.event == "tool.completed")
        .unwrap_or_else(|| panic!("the tool ran: {events:#?}"));
    assert_eq!(
        completed.json()["data"]["toolName"],
        "workflow.getDefinition"
    );
    let text = reply(&events);
    assert!(text.contains("Order handled in Elsa"), "{text}");
    let reads: Vec<_> = elsa
        .requests()
        .into_iter()
        .filter(|r| {
            r.path_and_query
                .contains(&format!("/by-definition-id/{DEFINITION}"))
        })
        .collect();
    assert!(!reads.is_empty(), "Weaver asked Elsa for the definition");
    for read in &reads {
        assert_eq!(
            read.authorization.as_deref(),
            Some(format!("ApiKey {ELSA_KEY}").as_str())
        );
        assert_eq!(read.tenant.as_deref(), Some(ELSA_TENANT));
    }

    // Write: propose, approve, apply; the new version is saved to Elsa.
    let (proposal, _) = server.demo_proposal(ALICE_KEY, DEFINITION).await;
    let (status, approved) = server
        .proposal_action(ALICE_KEY, &proposal, "approve")
        .await;
    assert_eq!(
        (status, approved["status"].as_str()),
        (StatusCode::OK, Some("Approved")),
        "{approved}"
    );
    assert!(
        !elsa
            .requests()
            .iter()
            .any(|r| r.method == "POST" && r.path_and_query == "/elsa/api/workflow-definitions"),
        "nothing is written before apply"
    );
    let (status, applied) = server.proposal_action(ALICE_KEY, &proposal, "apply").await;
    assert_eq!(
        (status, applied["status"].as_str()),
        (StatusCode::OK, Some("Applied")),
        "{applied}"
    );
    assert_eq!(applied["appliedVersion"]["version"], 2);

    let saves: Vec<Value> = elsa
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path_and_query == "/elsa/api/workflow-definitions")
        .filter_map(|r| r.body)
        .collect();
    assert_eq!(saves.len(), 1, "one save");
    assert_eq!(saves[0]["model"]["definitionId"], DEFINITION);
    let versions = elsa.versions(DEFINITION);
    assert_eq!(versions.len(), 2);
    let newest = &versions[1];
    assert_eq!(newest["version"], 2);
    assert_eq!(newest["isLatest"], true);
    assert_eq!(newest["id"], applied["appliedVersion"]["versionId"]);
    assert!(
        newest["description"]
            .as_str()
            .unwrap()
            .ends_with("described by the Weaver demo provider."),
        "{newest}"
    );

    // Applying again writes nothing more.
    let (status, _) = server.proposal_action(ALICE_KEY, &proposal, "apply").await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(elsa.versions(DEFINITION).len(), 2);

    // The other tenant is still served from memory and sees nothing of Elsa's.
    let globex = TenantId::new("globex");
    assert!(
        server
            .workflows
            .find(&globex, "sample-order-approval", VersionOptions::Latest)
            .await
            .unwrap()
            .is_some()
    );
    let before = elsa.requests().len();
    let (status, _) = server
        .post(
            "/ai/chat",
            GINA_KEY,
            &json!({
                "message": "What does this workflow do?",
                "attachments": [{"kind": "WorkflowDefinition", "referenceId": DEFINITION}],
            }),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(elsa.requests().len(), before, "globex never reaches Elsa");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_failing_elsa_is_reported_without_its_api_key() {
    let elsa = elsa().await;
    let server = start(&elsa).await;
    // Elsa answers every request with a 500 whose body echoes the Authorization header.
    elsa.fail_with(Some(500));
    let (status, body) = server
        .post(
            "/ai/chat",
            ALICE_KEY,
            &json!({
                "message": "What does this workflow do?",
                "attachments": [{"kind": "WorkflowDefinition", "referenceId": DEFINITION}],
            }),
        )
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["code"], "workflow_backend_unavailable", "{body}");
    assert!(!body.to_string().contains(ELSA_KEY), "{body}");

    // The audit records the failure by its code, and never the key.
    let (status, audit) = server.get("/ai/audit", ALICE_KEY).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        audit.to_string().contains("workflow_backend_unavailable"),
        "{audit}"
    );
    assert!(!audit.to_string().contains(ELSA_KEY), "{audit}");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_elsa_settings_stop_the_server_with_a_clear_message() {
    let elsa = elsa().await;
    let failure = |config: WeaverConfig| async move {
        let error: StartupError = Weaver::builder(config)
            .env(env)
            .build()
            .await
            .expect_err("the server must not start");
        error.to_string()
    };

    let mut both = config(&elsa);
    both.tenants[0].workflows = Some("data/acme".into());
    let message = failure(both).await;
    assert!(message.contains("tenant 'acme'"), "{message}");
    assert!(message.contains("mutually exclusive"), "{message}");

    let mut unset = config(&elsa);
    unset.tenants[0].elsa_api_key_env = Some("NOT_SET_ANYWHERE".into());
    let message = failure(unset).await;
    assert!(message.contains("NOT_SET_ANYWHERE"), "{message}");

    let mut no_url = config(&elsa);
    no_url.tenants[0].elsa_url = None;
    let message = failure(no_url).await;
    assert!(message.contains("need elsa_url"), "{message}");

    let mut bad_url = config(&elsa);
    bad_url.tenants[0].elsa_url = Some("ftp://elsa.example".into());
    let message = failure(bad_url).await;
    assert!(message.contains("elsa_url"), "{message}");
    assert!(!message.contains(ELSA_KEY), "{message}");

    // A folder tenant keeps working exactly as before.
    let folder = WeaverConfig::from_toml(
        "[store]\nmemory = true\n[[tenants]]\nid = \"acme\"\nworkflows = \"/nonexistent/acme\"\n",
    )
    .unwrap();
    let message = failure(folder).await;
    assert!(message.contains("/nonexistent/acme"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_diagnosis_tools_read_elsas_own_records_of_a_run_through_the_governor() {
    use weaver_testkit::mcp::{call_tool, weaver_client};
    use weaver_testkit::runs::{
        FaultedRun, SECRET_COOKIE, SECRET_HEADER, SECRET_VARIABLE, UPLOAD_EXECUTION,
    };

    let elsa = elsa().await;
    FaultedRun::new("run-in-elsa", "2024-06-03T10:00:00Z").serve(&elsa);
    let server = start(&elsa).await;
    let client = weaver_client(&server.url("/mcp?agent=instance-diagnostics"), ALICE_KEY).await;

    let summary = call_tool(
        &client,
        "instance.summarize",
        json!({"instanceId": "run-in-elsa"}),
    )
    .await;
    assert_eq!(summary.is_error, Some(false), "{summary:?}");
    let summary = summary.structured_content.expect("structured content");
    assert_eq!(summary["failingActivity"]["executionId"], UPLOAD_EXECUTION);
    assert_eq!(summary["completePath"], true);
    assert_eq!(summary["path"]["total"], 4);
    assert_eq!(summary["lastEvents"]["total"], 7);

    let state = call_tool(
        &client,
        "instance.getActivityState",
        json!({"instanceId": "run-in-elsa"}),
    )
    .await;
    assert_eq!(state.is_error, Some(false), "{state:?}");
    let text = serde_json::to_string(&state).unwrap();
    for secret in [SECRET_HEADER, SECRET_VARIABLE, SECRET_COOKIE] {
        assert!(!text.contains(secret), "{secret} reached the MCP client");
    }
    let state = state.structured_content.expect("structured content");
    assert_eq!(state["inputs"]["Method"], "PUT");
    assert_eq!(state["variables"]["InvoiceCount"], 42);

    // A search needs a scope (a time range here): it still reads Elsa's incident listing.
    let incidents = call_tool(
        &client,
        "incidents.search",
        json!({"from": "2000-01-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(incidents.is_error, Some(false), "{incidents:?}");
    let incidents = incidents.structured_content.expect("structured content");
    assert!(
        incidents["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|row| row["instanceId"] == "run-in-elsa"),
        "{incidents}"
    );

    // Weaver asked Elsa for its records, as acme's Elsa tenant, with the key.
    let asked = elsa.requests();
    let records = asked
        .iter()
        .find(|r| r.path_and_query.contains("/activity-executions/list"))
        .expect("the activity execution records were read");
    assert_eq!(records.tenant.as_deref(), Some(ELSA_TENANT));
    assert_eq!(
        records.authorization.as_deref(),
        Some(format!("ApiKey {ELSA_KEY}").as_str())
    );
    assert!(asked.iter().any(|r| {
        r.path_and_query
            .contains("/workflow-instances/run-in-elsa/journal")
    }));

    // Globex (served from memory) has no such run.
    let gina = weaver_client(&server.url("/mcp?agent=instance-diagnostics"), GINA_KEY).await;
    let foreign = call_tool(
        &gina,
        "instance.summarize",
        json!({"instanceId": "run-in-elsa"}),
    )
    .await;
    assert_eq!(foreign.is_error, Some(true), "{foreign:?}");
    let _ = client.cancel().await;
    let _ = gina.cancel().await;
}
