//! Against the real `@modelcontextprotocol/server-everything`, over stdio and over
//! streamable HTTP.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

use elsa_ai_abstractions::{
    AiCaller, AiMcpServerRegistration, AiToolOutcome, McpTransport, Permission, SecretValue,
};
use elsa_ai_host::REDACTED;
use elsa_ai_host::testing::governance::TEST_TENANT;
use elsa_ai_mcp::McpServerState;
use serde_json::{Value, json};
use weaver_testkit::mcp::npm_bin;

use crate::support::{code, governed};

const SECRET: &str = "tok-3b1f9c2e7a6d5f4e8c";

fn everything_stdio() -> AiMcpServerRegistration {
    let mut registration = AiMcpServerRegistration::new(
        "everything",
        McpTransport::Stdio {
            command: npm_bin("mcp-server-everything").display().to_string(),
            args: vec!["stdio".into()],
            env: vec![("LOG_LEVEL".into(), "info".into())],
            secret_env: vec![("API_TOKEN".into(), SecretValue::new(SECRET))],
        },
        vec!["echo".into(), "get-env".into()],
        vec![Permission::READ_WORKFLOWS],
    );
    registration.tenants = Some(vec![TEST_TENANT.into()]);
    registration
}

fn text_of(content: &Value) -> &str {
    content["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_tools_are_allowlisted_disabled_until_enabled_and_fully_governed() {
    let governed = governed(vec![everything_stdio()]).await;
    let status = &governed.clients.statuses()[0];
    assert_eq!(status.state, McpServerState::Ready, "{status:?}");
    assert_eq!(
        status.tools,
        ["mcp.everything.echo", "mcp.everything.get-env"]
    );

    // Only the allowlist exists: the server's other tools are not registered at all.
    let registered: Vec<&str> = governed
        .harness
        .registry
        .iter()
        .map(|t| t.definition().name.as_str())
        .collect();
    assert_eq!(
        registered,
        ["mcp.everything.echo", "mcp.everything.get-env"]
    );
    assert!(
        governed
            .harness
            .registry
            .registered("mcp.everything.get-sum")
            .is_none()
    );
    let sum = governed
        .call("mcp.everything.get-sum", json!({"a": 1, "b": 2}))
        .await;
    assert_eq!(sum.outcome, AiToolOutcome::Denied);

    // The input schema is the server's; the tool is off until an administrator enables it.
    let echo = governed
        .harness
        .registry
        .registered("mcp.everything.echo")
        .unwrap();
    assert_eq!(
        echo.definition().input_schema["required"],
        json!(["message"])
    );
    assert_eq!(echo.definition().display_name, "Echo Tool");
    let off = governed
        .call("mcp.everything.echo", json!({"message": "hi"}))
        .await;
    assert_eq!(code(&off), "tool_disabled");
    governed.enable("mcp.everything.echo").await;
    governed.enable("mcp.everything.get-env").await;
    let echoed = governed
        .call("mcp.everything.echo", json!({"message": "hi"}))
        .await;
    assert!(echoed.is_success(), "{echoed:?}");
    assert_eq!(text_of(&echoed.content), "Echo: hi");

    // Schema validation happens before the server is asked.
    let wrong = governed
        .call("mcp.everything.echo", json!({"message": 5}))
        .await;
    assert_eq!(code(&wrong), "invalid_arguments");

    // The child starts from an empty environment plus PATH, env and secret_env, and the
    // secret it echoes back is redacted before anyone sees it.
    let env = governed.call("mcp.everything.get-env", json!({})).await;
    assert!(env.is_success(), "{env:?}");
    let shown = text_of(&env.content);
    assert!(!shown.contains(SECRET), "{shown}");
    let variables: Value = serde_json::from_str(shown).expect("get-env prints JSON");
    let names: BTreeSet<&str> = variables
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert!(
        names.is_subset(&BTreeSet::from(["PATH", "LOG_LEVEL", "API_TOKEN"])),
        "the child saw more than PATH, env and secret_env: {names:?}"
    );
    assert_eq!(variables["API_TOKEN"], REDACTED);
    assert_eq!(variables["LOG_LEVEL"], "info");

    // Audited under the caller, without the secret.
    let audit = governed.harness.audit.events(&TEST_TENANT.into());
    let record = audit
        .iter()
        .find(|e| e.tool_name.as_deref() == Some("mcp.everything.get-env"))
        .expect("the call is audited");
    assert_eq!(record.actor_id, "alice");
    assert!(!serde_json::to_string(&audit).unwrap().contains(SECRET));

    // Another tenant does not see the server; a caller without the permission is refused.
    let stranger = AiCaller::new("bob", "globex", vec![Permission::READ_WORKFLOWS]);
    let foreign = governed
        .harness
        .call_as(
            stranger,
            Vec::new(),
            "mcp.everything.echo",
            json!({"message": "x"}),
        )
        .await;
    assert_eq!(code(&foreign), "tool_not_found");
    let reader = AiCaller::new(
        "carol",
        TEST_TENANT,
        vec![Permission::READ_WORKFLOW_INSTANCES],
    );
    let refused = governed
        .harness
        .call_as(
            reader,
            Vec::new(),
            "mcp.everything.echo",
            json!({"message": "x"}),
        )
        .await;
    assert_eq!(code(&refused), "permission_denied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_stdio_server_is_restarted_and_calls_fail_readably_meanwhile() {
    let governed = governed(vec![everything_stdio()]).await;
    governed.enable("mcp.everything.echo").await;
    let pid = governed.clients.statuses()[0].pid.expect("a running child");
    let killed = Instant::now();
    let kill = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(kill.success());

    // Until it is back, calls fail with an error the model can read.
    let during = governed
        .call("mcp.everything.echo", json!({"message": "x"}))
        .await;
    assert_eq!(during.outcome, AiToolOutcome::Error);
    assert_eq!(code(&during), "mcp_server_unavailable");
    assert_eq!(during.error.as_ref().unwrap().status, 503);

    let restart = governed.ready_again(0, Duration::from_secs(20)).await;
    let total = killed.elapsed();
    println!("stdio server restarted {restart:?} after the failed call, {total:?} after kill -9");
    let after = governed
        .call("mcp.everything.echo", json!({"message": "back"}))
        .await;
    assert_eq!(text_of(&after.content), "Echo: back");
    let new_pid = governed.clients.statuses()[0].pid.unwrap();
    assert_ne!(new_pid, pid);

    // The child dies with its clients.
    governed.clients.shutdown();
    let gone = Instant::now();
    while std::path::Path::new(&format!("/proc/{new_pid}")).exists() {
        assert!(
            gone.elapsed() < Duration::from_secs(10),
            "the child outlived weaver"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_server_over_streamable_http() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = tokio::process::Command::new(npm_bin("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("mcp-server-everything starts");
    let started = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the HTTP server never listened"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let registration = AiMcpServerRegistration::new(
        "remote",
        McpTransport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: vec![("X-Team".into(), "a".into())],
            secret_headers: vec![("X-Api-Key".into(), SecretValue::new(SECRET))],
        },
        vec!["echo".into(), "not-a-tool-there".into()],
        vec![Permission::READ_WORKFLOWS],
    );
    let governed = governed(vec![registration]).await;
    let status = &governed.clients.statuses()[0];
    assert_eq!(
        (status.state, status.transport),
        (McpServerState::Ready, "http")
    );
    assert_eq!(status.tools, ["mcp.remote.echo"]);
    assert_eq!(status.missing, ["not-a-tool-there"]);
    governed.enable("mcp.remote.echo").await;
    let echoed = governed
        .call("mcp.remote.echo", json!({"message": "over http"}))
        .await;
    assert_eq!(text_of(&echoed.content), "Echo: over http");
    server.kill().await.unwrap();
}
