//! MCP both ways through the real server on a real socket: the pinned
//! `@modelcontextprotocol/server-everything` (stdio) as a configured `[[mcp.servers]]`
//! entry, and weaver's own `/mcp` driven by an `rmcp` client and by the official MCP
//! Inspector CLI (pinned in tools/mcp).

use std::collections::BTreeSet;

use elsa_ai_server::config::{McpConfig, WeaverConfig};
use elsa_ai_server::testing::{ALICE_KEY, BOB_KEY, GINA_KEY, TestServer, two_tenants};
use elsa_workflows::{TenantId, WorkflowDefinition};
use reqwest::{Method, StatusCode};
use rmcp::model::{CallToolResult, ClientConfig};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};
use weaver_testkit::mcp::{call_tool, npm_bin, weaver_client};

/// Two tenants; acme also sees server-everything's `echo` (agents and permissions as
/// configured).
fn with_everything() -> WeaverConfig {
    let everything = npm_bin("mcp-server-everything").display().to_string();
    let mcp: McpConfig = WeaverConfig::from_toml(&format!(
        r#"
        [[mcp.servers]]
        name = "everything"
        command = "{everything}"
        args = ["stdio"]
        tools = ["echo"]
        permissions = ["read:workflows"]
        tenants = ["acme"]
        "#
    ))
    .unwrap()
    .mcp;
    WeaverConfig {
        mcp,
        ..two_tenants()
    }
}

async fn client(
    server: &TestServer,
    key: &str,
    agent: Option<&str>,
) -> RunningService<RoleClient, ClientConfig> {
    let url = match agent {
        Some(agent) => server.url(&format!("/mcp?agent={agent}")),
        None => server.url("/mcp"),
    };
    weaver_client(&url, key).await
}

fn text(result: &CallToolResult) -> &str {
    result.content[0].as_text().map_or("", |t| t.text.as_str())
}

async fn names(client: &RunningService<RoleClient, ClientConfig>) -> BTreeSet<String> {
    client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_mcp_tools_are_offered_per_tenant_only_once_enabled() {
    let server = TestServer::start(with_everything()).await;

    // Capabilities show the server to its tenant only.
    let (status, acme) = server.get("/ai/capabilities", ALICE_KEY).await;
    assert_eq!(status, StatusCode::OK);
    let everything = &acme["mcpServers"][0];
    assert_eq!(everything["name"], "everything");
    assert_eq!(everything["transport"], "stdio");
    assert_eq!(everything["state"], "ready", "{everything}");
    assert_eq!(everything["tools"], json!(["mcp.everything.echo"]));
    let (_, globex) = server.get("/ai/capabilities", GINA_KEY).await;
    assert_eq!(globex["mcpServers"], json!([]));

    // Off until enabled; outside the allowlist or the tenant it does not exist.
    let (_, tools) = server.get("/ai/tools", ALICE_KEY).await;
    assert!(!tools.to_string().contains("mcp.everything.echo"));
    for (key, tool) in [
        (ALICE_KEY, "mcp.everything.get-sum"),
        (GINA_KEY, "mcp.everything.echo"),
    ] {
        let response = server
            .request(
                Method::PUT,
                &format!("/ai/admin/tools/{tool}/enablement"),
                key,
            )
            .json(&json!({"enabled": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{tool}");
    }
    let (_, admin) = server.get("/ai/admin/tools", GINA_KEY).await;
    assert!(!admin.to_string().contains("mcp.everything"), "{admin}");
    server.enable_tool(ALICE_KEY, "mcp.everything.echo").await;
    let (_, tools) = server.get("/ai/tools", ALICE_KEY).await;
    assert!(tools.to_string().contains("mcp.everything.echo"));

    // Through weaver's own MCP endpoint, the external tool runs governed.
    let alice = client(&server, ALICE_KEY, None).await;
    let echoed = call_tool(
        &alice,
        "mcp.everything.echo",
        json!({"message": "via weaver"}),
    )
    .await;
    assert_eq!(echoed.is_error, Some(false), "{echoed:?}");
    assert!(
        text(&echoed).contains("Echo: via weaver"),
        "{}",
        text(&echoed)
    );
    alice.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_endpoint_lists_and_calls_exactly_what_the_caller_may() {
    let server = TestServer::start(two_tenants()).await;
    server
        .workflows
        .insert_definition(
            &TenantId::from("globex"),
            WorkflowDefinition::new_flowchart("globex-only-plan", "Globex plan"),
        )
        .unwrap();

    // No credentials: 401 with the API's error body.
    let anonymous = server
        .client
        .post(server.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let body: Value = anonymous.json().await.unwrap();
    assert_eq!(body["code"], "unauthenticated");

    // tools/list is /ai/tools for the same caller and agent.
    let alice = client(&server, ALICE_KEY, None).await;
    let listed = names(&alice).await;
    let (_, rest) = server
        .get("/ai/tools?agent=workflow-author", ALICE_KEY)
        .await;
    let expected: BTreeSet<String> = rest
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, expected);
    assert!(listed.contains("workflow.getDefinition"));
    let diagnostics = client(&server, ALICE_KEY, Some("instance-diagnostics")).await;
    let (_, rest) = server
        .get("/ai/tools?agent=instance-diagnostics", ALICE_KEY)
        .await;
    assert_eq!(
        names(&diagnostics).await.len(),
        rest.as_array().unwrap().len()
    );
    diagnostics.cancel().await.unwrap();

    // Another tenant's definition reads as not found; the caller's own is there.
    let foreign = call_tool(
        &alice,
        "workflow.getDefinition",
        json!({"definitionId": "globex-only-plan"}),
    )
    .await;
    assert_eq!(foreign.is_error, Some(true));
    assert!(text(&foreign).contains("not_found"), "{}", text(&foreign));
    let own = call_tool(
        &alice,
        "workflow.getDefinition",
        json!({"definitionId": "sample-order-approval"}),
    )
    .await;
    assert_eq!(own.is_error, Some(false), "{}", text(&own));
    let version = own.structured_content.as_ref().unwrap()["version"]
        .as_i64()
        .unwrap();

    // A denial is a result with isError and the reason: the proposal tool is off, and bob
    // lacks the permission anyway.
    let proposal = json!({
        "definitionId": "sample-order-approval", "baselineVersion": version,
        "operations": [{"op": "setDescription", "description": "Set over MCP."}],
        "rationale": "An MCP client asked."
    });
    let off = call_tool(&alice, "workflow.proposeUpdate", proposal.clone()).await;
    assert_eq!(off.is_error, Some(true));
    assert!(text(&off).contains("tool_disabled"), "{}", text(&off));
    let bob = client(&server, BOB_KEY, None).await;
    assert!(!names(&bob).await.contains("workflow.proposeUpdate"));
    bob.cancel().await.unwrap();

    // Once enabled, a proposal made over MCP waits in the review inbox for a person.
    server
        .enable_tool(ALICE_KEY, "workflow.proposeUpdate")
        .await;
    let proposed = call_tool(&alice, "workflow.proposeUpdate", proposal).await;
    assert_eq!(proposed.is_error, Some(false), "{}", text(&proposed));
    let (_, inbox) = server.get("/ai/proposals", ALICE_KEY).await;
    let waiting = &inbox["items"][0];
    assert_eq!(waiting["definitionId"], "sample-order-approval", "{inbox}");
    assert_eq!(waiting["status"], "Validated", "{inbox}");
    assert_eq!(waiting["allowedActions"], json!(["approve", "reject"]));

    // Every call is audited with the caller as actor.
    let (_, audit) = server.get("/ai/audit?limit=100", ALICE_KEY).await;
    let records = audit["items"]
        .as_array()
        .or(audit.as_array())
        .cloned()
        .unwrap_or_default();
    assert!(
        records
            .iter()
            .any(|r| r["toolName"] == "workflow.proposeUpdate" && r["actorId"] == "alice"),
        "{audit}"
    );
    alice.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_inspector_cli_lists_and_calls_weavers_tools() {
    let server = TestServer::start(two_tenants()).await;
    let inspector = |extra: &[&str]| {
        let mut command = std::process::Command::new(npm_bin("mcp-inspector"));
        command.args(["--cli", &server.url("/mcp"), "--transport", "http"]);
        command.args(["--header", &format!("Authorization: ApiKey {ALICE_KEY}")]);
        command.args(extra);
        command
    };
    let listed = tokio::task::spawn_blocking({
        let mut command = inspector(&["--method", "tools/list"]);
        move || command.output().unwrap()
    })
    .await
    .unwrap();
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let tools: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"workflow.getDefinition"), "{names:?}");

    let called = tokio::task::spawn_blocking({
        let mut command = inspector(&[
            "--method",
            "tools/call",
            "--tool-name",
            "workflow.getDefinition",
            "--tool-arg",
            "definitionId=sample-order-approval",
        ]);
        move || command.output().unwrap()
    })
    .await
    .unwrap();
    assert!(
        called.status.success(),
        "{}",
        String::from_utf8_lossy(&called.stderr)
    );
    let result: Value = serde_json::from_slice(&called.stdout).unwrap();
    assert_ne!(result["isError"], true, "{result}");
    assert!(
        result.to_string().contains("sample-order-approval"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_base_path_the_endpoint_moves_with_the_api() {
    let mut config = two_tenants();
    config.http.base_path = Some("/elsa/api".into());
    let server = TestServer::start(config).await;
    let initialize = |path: &str| {
        server
            .client
            .post(server.url(path))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
            .send()
    };
    assert_eq!(
        initialize("/elsa/api/mcp").await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        initialize("/mcp").await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    let alice = weaver_client(&server.url("/elsa/api/mcp"), ALICE_KEY).await;
    assert!(names(&alice).await.contains("workflow.getDefinition"));
    alice.cancel().await.unwrap();
}
