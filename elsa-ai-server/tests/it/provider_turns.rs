//! The `weaver` server with each real provider against a scripted OpenAI-compatible model on
//! 127.0.0.1: with `kind = "copilot"` a chat turn over HTTP runs through the real Copilot CLI
//! (pinned in `tools/copilot-cli`, or `COPILOT_CLI_PATH`; without it the test fails and says
//! how to install it), with `kind = "openai"` directly; either way the model's tool call
//! reaches the built-in `workflow.getDefinition` through Weaver's governance. Several
//! `[[providers]]` route conversations by tenant and agent.

use elsa_ai_copilot::testing::pinned_cli;
use elsa_ai_host::{REDACTED, Redactor};
use elsa_ai_server::Weaver;
use elsa_ai_server::config::WeaverConfig;
use elsa_ai_server::testing::TestServer;
use reqwest::StatusCode;
use serde_json::json;
use weaver_testkit::model_server::{ModelReply, Quirks, ScriptedModelServer};
use weaver_testkit::process::free_loopback_address;

const DEV_KEY: &str = "copilot-turn-dev-key";
const MODEL_KEY: &str = "sk-weaver-server-e2e-model-key-0123456789";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_turn_runs_through_the_copilot_cli_and_its_tool_call_is_governed() {
    let model = ScriptedModelServer::start([
        ModelReply::ToolCall {
            name: "workflow_getDefinition".into(),
            arguments: json!({"definitionId": "sample-order-approval"}),
        },
        ModelReply::QuoteToolResult {
            prefix: "The workflow reads: ".into(),
        },
    ])
    .await
    .unwrap();

    // The provider section of issue 6, pointed at the pinned CLI and the scripted model.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weaver.toml");
    let cli = pinned_cli().display().to_string().replace('\\', "/");
    std::fs::write(
        &path,
        format!(
            "[store]\nmemory = true\n\
             [provider]\n\
             kind = \"copilot\"\n\
             cli_path = \"{cli}\"\n\
             model = \"gpt-4.1\"\n\
             byok_type = \"openai\"\n\
             base_url = \"{}\"\n\
             api_key_env = \"OPENAI_API_KEY\"\n",
            model.base_url()
        ),
    )
    .unwrap();
    let config = WeaverConfig::load(&path).unwrap();
    let server = TestServer::start_with(Weaver::builder(config).env(|name| match name {
        "OPENAI_API_KEY" => Some(MODEL_KEY.to_owned()),
        "WEAVER_DEV_KEY" => Some(DEV_KEY.to_owned()),
        _ => None,
    }))
    .await;

    let events = server
        .chat(
            DEV_KEY,
            &json!({
                "message": "What does this workflow do?",
                "attachments": [{"kind": "WorkflowDefinition", "referenceId": "sample-order-approval"}],
            }),
        )
        .await
        .collect()
        .await;
    let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names.first(), Some(&"conversation.started"), "{names:?}");
    assert_eq!(names.last(), Some(&"conversation.completed"), "{events:#?}");
    for expected in ["tool.started", "tool.completed", "assistant.completed"] {
        assert!(names.contains(&expected), "{expected} missing: {names:?}");
    }
    let completed = events.iter().find(|e| e.event == "tool.completed").unwrap();
    assert_eq!(
        completed.json()["data"]["toolName"],
        "workflow.getDefinition"
    );

    // The model saw only the tools Weaver authorized, under their function names, and the
    // second request carried the governed tool's result.
    let requests = model.chat_requests();
    assert!(requests.len() >= 2, "{requests:#?}");
    let offered = requests[0].tool_names();
    assert!(
        offered.contains(&"workflow_getDefinition".to_owned()),
        "{offered:?}"
    );
    assert!(
        offered
            .iter()
            .all(|name| !["bash", "edit", "web_fetch"].contains(&name.as_str())),
        "a CLI built-in tool was offered: {offered:?}"
    );
    let tool_results = requests[1].tool_messages();
    assert!(
        tool_results
            .iter()
            .any(|r| r.contains("sample-order-approval")),
        "{tool_results:?}"
    );

    // The call is in the tenant's audit trail; the model key appears nowhere a client sees.
    let audit = audited_get_definition(&server).await;
    let everything = format!("{events:?}{audit}");
    assert!(!everything.contains(MODEL_KEY));

    // Shutdown stops the CLI with the server.
    server.shutdown().await.unwrap();
}

/// The server's audit trail, checked to hold a successful `workflow.getDefinition` call.
async fn audited_get_definition(server: &TestServer) -> serde_json::Value {
    let (status, audit) = server.get("/ai/audit", DEV_KEY).await;
    assert_eq!(status, StatusCode::OK);
    let records = audit["items"].as_array().unwrap();
    assert!(
        records.iter().any(|r| r["action"] == "tool.invoked"
            && r["toolName"] == "workflow.getDefinition"
            && r["outcome"] == "Success"),
        "{audit:#}"
    );
    audit
}

#[tokio::test]
async fn the_configured_provider_keys_are_registered_with_the_redactor() {
    // Keys of no credential shape: only their registration can redact them.
    const ENDPOINT_KEY: &str = "local-endpoint-key-0123456789";
    const GITHUB_TOKEN: &str = "weaver-test-github-token-0123456789";
    let endpoint = "base_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\n\
                    api_key_env = \"WEAVER_TEST_ENDPOINT_KEY\"\n";
    let github = "github_token_env = \"WEAVER_TEST_GITHUB_TOKEN\"\n";
    for (provider, secret) in [(endpoint, ENDPOINT_KEY), (github, GITHUB_TOKEN)] {
        let config = WeaverConfig::from_toml(&format!(
            "[store]\nmemory = true\n[provider]\nkind = \"copilot\"\n{provider}"
        ))
        .unwrap();
        let weaver = Weaver::builder(config)
            .env(|name| match name {
                "WEAVER_TEST_ENDPOINT_KEY" => Some(ENDPOINT_KEY.to_owned()),
                "WEAVER_TEST_GITHUB_TOKEN" => Some(GITHUB_TOKEN.to_owned()),
                _ => None,
            })
            .build()
            .await
            .unwrap();
        let text = format!("the model answered with {secret} in it");
        assert_eq!(
            Redactor::default().redact_str(&text),
            text,
            "not a built-in shape"
        );
        assert_eq!(
            weaver.redactor().redact_str(&text),
            format!("the model answered with {REDACTED} in it")
        );
    }
}

/// A server over `config` (TOML) whose environment holds the model key and the dev key.
async fn openai_server(config: &str) -> TestServer {
    openai_server_with_key(config, "OPENAI_API_KEY", MODEL_KEY).await
}

/// A server over `config` (TOML) whose environment holds `key` in `variable` and the dev
/// key.
async fn openai_server_with_key(
    config: &str,
    variable: &'static str,
    key: &'static str,
) -> TestServer {
    let config = WeaverConfig::from_toml(&format!("{config}\n[store]\nmemory = true\n")).unwrap();
    TestServer::start_with(Weaver::builder(config).env(move |name| match name {
        "WEAVER_DEV_KEY" => Some(DEV_KEY.to_owned()),
        name if name == variable => Some(key.to_owned()),
        _ => None,
    }))
    .await
}

fn openai_section(header: &str, model: &ScriptedModelServer, api: &str) -> String {
    format!(
        "{header}\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"scripted-model\"\n\
         api_key_env = \"OPENAI_API_KEY\"\napi = \"{api}\"\n",
        model.base_url()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_turn_runs_through_an_openai_compatible_endpoint_with_no_runtime_beside_weaver() {
    for api in ["chat", "responses"] {
        let model = ScriptedModelServer::start_with(
            [
                ModelReply::ToolCall {
                    name: "workflow_getDefinition".into(),
                    arguments: json!({"definitionId": "sample-order-approval"}),
                },
                ModelReply::QuoteToolResult {
                    prefix: "The workflow reads: ".into(),
                },
            ],
            Quirks {
                required_key: Some(MODEL_KEY.into()),
                ..Quirks::default()
            },
        )
        .await
        .unwrap();
        let server = openai_server(&openai_section("[provider]", &model, api)).await;

        let (status, capabilities) = server.get("/ai/capabilities", DEV_KEY).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            capabilities["provider"]["name"], "openai",
            "{capabilities:#}"
        );
        assert_eq!(capabilities["provider"]["model"], "scripted-model");

        let events = server
            .chat(
                DEV_KEY,
                &json!({"message": "What does sample-order-approval do?"}),
            )
            .await
            .collect()
            .await;
        let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
        assert_eq!(
            names.last(),
            Some(&"conversation.completed"),
            "{api}: {events:#?}"
        );
        for expected in [
            "tool.started",
            "tool.completed",
            "assistant.delta",
            "assistant.completed",
        ] {
            assert!(
                names.contains(&expected),
                "{api}: {expected} missing: {names:?}"
            );
        }
        let completed = events.last().unwrap().json();
        assert!(
            completed["data"]["usage"]["inputTokens"].as_u64() > Some(0),
            "{completed:#}"
        );
        let results = model.model_requests()[1].tool_messages();
        assert!(
            results.iter().any(|r| r.contains("sample-order-approval")),
            "{results:?}"
        );

        let audit = audited_get_definition(&server).await;
        assert!(!format!("{events:?}{audit}{capabilities}").contains(MODEL_KEY));
        server.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_endpoint_that_cannot_be_used_is_an_http_error_before_the_stream() {
    let port = free_loopback_address().port();
    let unreachable = openai_server(&format!(
        "[provider]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\n"
    ))
    .await;
    let (status, body) = unreachable
        .post("/ai/chat", DEV_KEY, &json!({"message": "Hello?"}))
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body:#}");
    assert_eq!(body["code"], "provider_unavailable");
    unreachable.shutdown().await.unwrap();

    let model = ScriptedModelServer::start_with(
        [],
        Quirks {
            required_key: Some("the-key-the-endpoint-expects".into()),
            ..Quirks::default()
        },
    )
    .await
    .unwrap();
    let refused = openai_server(&openai_section("[provider]", &model, "chat")).await;
    let (status, body) = refused
        .post("/ai/chat", DEV_KEY, &json!({"message": "Hello?"}))
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body:#}");
    assert_eq!(body["code"], "model_auth_failed");
    assert!(!body.to_string().contains(MODEL_KEY));
    refused.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_providers_serve_the_agents_they_are_configured_for() {
    let local = ScriptedModelServer::start([ModelReply::Text("From the local model.".into())])
        .await
        .unwrap();
    let hosted = ScriptedModelServer::start([ModelReply::Text("From the hosted model.".into())])
        .await
        .unwrap();
    let config = format!(
        "default_provider = \"local\"\n{}name = \"local\"\n{}name = \"hosted\"\n\
         [[agents]]\nname = \"instance-diagnostics\"\nprovider = \"hosted\"\n",
        openai_section("[[providers]]", &local, "chat"),
        openai_section("[[providers]]", &hosted, "responses"),
    );
    let server = openai_server(&config).await;
    let (_, capabilities) = server.get("/ai/capabilities", DEV_KEY).await;
    let names: Vec<&str> = capabilities["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["local", "hosted"], "{capabilities:#}");
    assert_eq!(capabilities["provider"]["name"], "local", "the default");
    let reply = |events: &[elsa_ai_server::testing::SseEvent]| {
        events
            .iter()
            .find(|e| e.event == "assistant.completed")
            .map(|e| {
                e.json()["data"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
    };
    let author = server
        .chat(DEV_KEY, &json!({"message": "Hello?"}))
        .await
        .collect()
        .await;
    assert_eq!(reply(&author).as_deref(), Some("From the local model."));
    let explainer = server
        .chat(
            DEV_KEY,
            &json!({"message": "Hello?", "agent": "instance-diagnostics"}),
        )
        .await
        .collect()
        .await;
    assert_eq!(reply(&explainer).as_deref(), Some("From the hosted model."));
    assert_eq!(
        (local.model_requests().len(), hosted.model_requests().len()),
        (1, 1)
    );
    server.shutdown().await.unwrap();
}

/// A placeholder key for a local model server ("sk-1"), shorter than the redactor's minimum:
/// weaver starts, sends it, and warns naming the variable that holds it, never the value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_placeholder_key_too_short_to_redact_is_used_with_a_warning_naming_its_variable() {
    const PLACEHOLDER: &str = "sk-1";
    let model = ScriptedModelServer::start_with(
        [ModelReply::Text("Hello from the local model.".into())],
        Quirks {
            required_key: Some(PLACEHOLDER.into()),
            ..Quirks::default()
        },
    )
    .await
    .unwrap();
    let config = WeaverConfig::from_toml(&format!(
        "[provider]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"m\"\n\
         api_key_env = \"LOCAL_MODEL_KEY\"\n[store]\nmemory = true\n",
        model.base_url()
    ))
    .unwrap();
    let builder = Weaver::builder(config).env(|name| match name {
        "LOCAL_MODEL_KEY" => Some(PLACEHOLDER.to_owned()),
        "WEAVER_DEV_KEY" => Some(DEV_KEY.to_owned()),
        _ => None,
    });
    let weaver = builder
        .build()
        .await
        .expect("a short key does not stop start-up");
    let warning = weaver
        .startup_report()
        .iter()
        .find(|line| line.contains("too short to be redacted"))
        .expect("the report warns about the key")
        .clone();
    assert!(warning.contains("LOCAL_MODEL_KEY"), "{warning}");
    assert!(!warning.contains(PLACEHOLDER), "{warning}");
    drop(weaver);

    let server = openai_server_with_key(&format!(
        "[provider]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"LOCAL_MODEL_KEY\"\n",
        model.base_url()
    ), "LOCAL_MODEL_KEY", PLACEHOLDER)
    .await;
    let events = server
        .chat(DEV_KEY, &json!({"message": "Hello?"}))
        .await
        .collect()
        .await;
    assert_eq!(
        events.last().map(|e| e.event.as_str()),
        Some("conversation.completed"),
        "the model accepted the key weaver sent"
    );
    let sent = model.model_requests();
    assert_eq!(
        sent[0].authorization.as_deref(),
        Some(format!("Bearer {PLACEHOLDER}").as_str())
    );
    server.shutdown().await.unwrap();
}
