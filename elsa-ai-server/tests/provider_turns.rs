//! The `weaver` server with `[provider] kind = "copilot"`: a chat turn over HTTP runs through
//! the real Copilot CLI (pinned in `tools/copilot-cli`, or `COPILOT_CLI_PATH`) against a
//! scripted OpenAI-compatible model on 127.0.0.1, and the model's tool call reaches the
//! built-in `workflow.getDefinition` through Weaver's governance. Without the CLI this test
//! fails and says how to install it.

use elsa_ai_copilot::testing::{ModelReply, ScriptedModelServer, pinned_cli};
use elsa_ai_host::{REDACTED, Redactor};
use elsa_ai_server::Weaver;
use elsa_ai_server::config::WeaverConfig;
use elsa_ai_server::testing::TestServer;
use reqwest::StatusCode;
use serde_json::json;

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
    let (status, audit) = server.get("/ai/audit", DEV_KEY).await;
    assert_eq!(status, StatusCode::OK);
    let records = audit["items"].as_array().unwrap();
    assert!(
        records.iter().any(|r| r["action"] == "tool.invoked"
            && r["toolName"] == "workflow.getDefinition"
            && r["outcome"] == "Success"),
        "{audit:#}"
    );
    let everything = format!("{events:?}{audit}");
    assert!(!everything.contains(MODEL_KEY));

    // Shutdown stops the CLI with the server.
    server.shutdown().await.unwrap();
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
