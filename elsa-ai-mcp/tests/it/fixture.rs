//! Against the repository's own `rmcp` fixture server over streamable HTTP: slowness, huge
//! output, a secret in the output, a tool list that changes, and a server that goes away.

use std::time::{Duration, Instant};

use elsa_ai_abstractions::{
    AiMcpServerRegistration, AiToolOutcome, McpTransport, Permission, SecretValue,
};
use elsa_ai_host::REDACTED;
use elsa_ai_mcp::McpServerState;
use serde_json::json;
use weaver_testkit::mcp::McpFixtureServer;

use crate::support::{Governed, code, governed};

const SECRET: &str = "Bearer fx-7c1d2e3f4a5b6c7d8e9f";

async fn fixture_governed(server: &McpFixtureServer) -> Governed {
    let mut registration = AiMcpServerRegistration::new(
        "fixture",
        McpTransport::Http {
            url: server.url(),
            headers: Vec::new(),
            secret_headers: vec![("Authorization".into(), SecretValue::new(SECRET))],
        },
        ["echo", "echo2", "slow", "huge", "whoami", "retire", "late"]
            .map(String::from)
            .to_vec(),
        vec![Permission::READ_WORKFLOWS],
    );
    registration.timeout = Duration::from_secs(1);
    let governed = governed(vec![registration]).await;
    for tool in ["echo", "echo2", "slow", "huge", "whoami", "retire"] {
        governed.enable(&format!("mcp.fixture.{tool}")).await;
    }
    governed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_huge_and_secret_bearing_results_are_governed() {
    let server = McpFixtureServer::start().await;
    let governed = fixture_governed(&server).await;

    let started = Instant::now();
    let slow = governed
        .call("mcp.fixture.slow", json!({"ms": 10_000}))
        .await;
    assert_eq!(code(&slow), "tool_timeout");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    let huge = governed
        .call("mcp.fixture.huge", json!({"bytes": 4 << 20}))
        .await;
    assert!(huge.is_success(), "{huge:?}");
    assert!(huge.truncated);
    assert!(huge.content.to_string().len() <= 17 * 1024);

    // The secret header the fixture received and echoes back never reaches the model.
    let whoami = governed.call("mcp.fixture.whoami", json!({})).await;
    let shown = whoami.content.to_string();
    assert!(shown.contains("you sent Authorization"), "{shown}");
    assert!(!shown.contains("fx-7c1d2e3f4a5b6c7d8e9f"), "{shown}");
    assert!(shown.contains(REDACTED), "{shown}");
    let audit = serde_json::to_string(&governed.harness.audit.events(&"acme".into())).unwrap();
    assert!(!audit.contains("fx-7c1d2e3f4a5b6c7d8e9f"));
    // Nor does it show in the client's own description of itself.
    assert!(!format!("{:?}", governed.clients.statuses()).contains("fx-7c1d2e3f4a5b6c7d8e9f"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_tool_list_never_widens_the_allowlist() {
    let server = McpFixtureServer::start().await;
    let governed = fixture_governed(&server).await;
    let status = &governed.clients.statuses()[0];
    // `late` is allowlisted but not offered at start-up: not registered.
    assert_eq!(status.missing, ["late"]);
    let echo2 = governed
        .call("mcp.fixture.echo2", json!({"text": "a"}))
        .await;
    assert!(echo2.is_success(), "{echo2:?}");

    let retired = governed.call("mcp.fixture.retire", json!({})).await;
    assert!(retired.is_success(), "{retired:?}");
    // After notifications/tools/list_changed, the tool the server stopped offering fails
    // readably; the tools it added are unknown, allowlisted or not.
    let started = Instant::now();
    loop {
        let call = governed
            .call("mcp.fixture.echo2", json!({"text": "a"}))
            .await;
        if code(&call) == "mcp_tool_unavailable" {
            assert_eq!(call.error.unwrap().status, 503);
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{call:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for unknown in ["mcp.fixture.sneaky", "mcp.fixture.late"] {
        assert!(governed.harness.registry.registered(unknown).is_none());
        let call = governed.call(unknown, json!({"text": "a"})).await;
        assert_eq!(call.outcome, AiToolOutcome::Denied, "{unknown}");
    }
    let echo = governed
        .call("mcp.fixture.echo", json!({"text": "still"}))
        .await;
    assert_eq!(echo.content["structuredContent"]["echo"], "still");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_goes_away_is_reconnected_when_it_returns() {
    let mut server = McpFixtureServer::start().await;
    let governed = fixture_governed(&server).await;
    assert!(
        governed
            .call("mcp.fixture.echo", json!({"text": "1"}))
            .await
            .is_success()
    );

    server.stop();
    let during = governed
        .call("mcp.fixture.echo", json!({"text": "2"}))
        .await;
    assert_eq!(code(&during), "mcp_server_unavailable", "{during:?}");
    server.restart().await;
    // Either rmcp's own session recovery or weaver's reconnect brings it back.
    let returned = Instant::now();
    loop {
        let call = governed
            .call("mcp.fixture.echo", json!({"text": "3"}))
            .await;
        if call.is_success() {
            break;
        }
        assert_eq!(code(&call), "mcp_server_unavailable", "{call:?}");
        assert!(returned.elapsed() < Duration::from_secs(30), "{call:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "HTTP server answered again {:?} after it returned",
        returned.elapsed()
    );
    assert_eq!(governed.clients.statuses()[0].state, McpServerState::Ready);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_that_cannot_start_are_reported_and_do_not_stop_the_others() {
    let server = McpFixtureServer::start().await;
    let unreachable = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/mcp", probe.local_addr().unwrap())
    };
    let registrations = vec![
        AiMcpServerRegistration::new(
            "missing",
            McpTransport::Stdio {
                command: "/nonexistent/mcp-server".into(),
                args: Vec::new(),
                env: Vec::new(),
                secret_env: Vec::new(),
            },
            vec!["echo".into()],
            vec![Permission::READ_WORKFLOWS],
        ),
        AiMcpServerRegistration::new(
            "down",
            McpTransport::Http {
                url: unreachable,
                headers: Vec::new(),
                secret_headers: vec![("Authorization".into(), SecretValue::new(SECRET))],
            },
            vec!["echo".into()],
            vec![Permission::READ_WORKFLOWS],
        ),
        AiMcpServerRegistration::new(
            "fixture",
            McpTransport::Http {
                url: server.url(),
                headers: Vec::new(),
                secret_headers: Vec::new(),
            },
            vec!["echo".into()],
            vec![Permission::READ_WORKFLOWS],
        ),
    ];
    let started = Instant::now();
    let governed = governed(registrations).await;
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
    let statuses = governed.clients.statuses();
    for failed in &statuses[..2] {
        assert_eq!(failed.state, McpServerState::Failed, "{failed:?}");
        assert!(failed.tools.is_empty());
        assert_eq!(failed.missing, ["echo"]);
        let error = failed.error.as_deref().unwrap_or_default();
        assert!(
            !error.is_empty() && !error.contains("fx-7c1d2e3f4a5b6c7d8e9f"),
            "{error}"
        );
    }
    assert!(
        statuses[0]
            .error
            .as_deref()
            .unwrap()
            .contains("/nonexistent/mcp-server")
    );
    assert_eq!(statuses[2].state, McpServerState::Ready);
    let names: Vec<&str> = governed
        .harness
        .registry
        .iter()
        .map(|t| t.definition().name.as_str())
        .collect();
    assert_eq!(names, ["mcp.fixture.echo"]);
}
