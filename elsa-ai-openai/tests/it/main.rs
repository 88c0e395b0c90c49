//! The OpenAI-compatible provider against the repository's scripted OpenAI-compatible
//! server over a real socket, through the host's orchestrator and governor: both APIs, the
//! quirks of real servers, every error class, the tool round limit and cancellation.

mod boundary;

use std::sync::Arc;
use std::time::Duration;

use elsa_ai_abstractions::{
    AiCaller, AiError, AiProvider, AiProviderEvent, AiProviderToolInvocation,
    AiProviderToolInvoker, AiStreamEvent, AiStreamEventType, AiToolResult, AiTurnRequest,
    AuditAction, AuditOutcome, ConversationId, CreateAiSessionRequest,
};
use elsa_ai_host::testing::chat::{ChatHarness, REGISTERED_SECRET, of_type, types};
use elsa_ai_host::testing::governance::{
    TEST_AGENT, TEST_TENANT, TestTool, all_permissions, read_tool, test_agent,
};
use elsa_ai_openai::{OpenAiApi, OpenAiProvider, OpenAiProviderConfig};
use elsa_workflows::TenantId;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use weaver_testkit::model_server::{ModelReply, Quirks, ScriptedModelServer};

const KEY_VARIABLE: &str = "WEAVER_TEST_OPENAI_KEY";
const KEY: &str = "sk-weaver-openai-test-key-0123456789";

/// A provider for `server`, with the test key, the API and the given limits.
fn provider(
    server: &ScriptedModelServer,
    api: OpenAiApi,
    rounds: u32,
    timeout_s: u64,
) -> OpenAiProvider {
    let config = OpenAiProviderConfig {
        kind: Some("openai".into()),
        base_url: server.base_url(),
        model: "scripted-model".into(),
        api_key_env: Some(KEY_VARIABLE.into()),
        api,
        max_tool_rounds: rounds,
        request_timeout_s: timeout_s,
        api_version: None,
        headers: Default::default(),
        temperature: None,
        top_p: None,
        seed: None,
        max_output_tokens: None,
        parallel_tool_calls: None,
    };
    OpenAiProvider::with_secrets(&config, |name| {
        (name == KEY_VARIABLE).then(|| KEY.to_owned())
    })
    .expect("the configuration is valid")
}

/// `test.echo` (returns its arguments) and `test.other`, both allowed to the test agent.
fn harness(provider: OpenAiProvider) -> ChatHarness {
    let mut echo = read_tool("test.echo");
    echo.input_schema = json!({
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1},
            "tag": {"type": "string", "minLength": 1},
        },
        "required": ["text"],
    });
    ChatHarness::builder()
        .tool(Arc::new(TestTool::echo(echo)))
        .tool(Arc::new(TestTool::returning(
            read_tool("test.other"),
            json!({"other": true}),
        )))
        .provider(Arc::new(provider))
        .build()
}

fn last_type(events: &[AiStreamEvent]) -> AiStreamEventType {
    events.last().expect("events").event_type
}

fn failure_code(events: &[AiStreamEvent]) -> String {
    let failed = of_type(events, AiStreamEventType::ConversationFailed);
    assert_eq!(failed.len(), 1, "{:?}", types(events));
    failed[0].data["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn text_streams_as_deltas_and_usage_reaches_the_completed_event_on_both_apis() {
    for api in [OpenAiApi::Chat, OpenAiApi::Responses] {
        let server = ScriptedModelServer::start([ModelReply::Text(
            "The workflow greets the user twice.".into(),
        )])
        .await
        .unwrap();
        let harness = harness(provider(&server, api, 8, 10));
        let events = harness.run(harness.request("What does it do?")).await;
        assert_eq!(
            last_type(&events),
            AiStreamEventType::ConversationCompleted,
            "{api:?}"
        );
        let deltas = of_type(&events, AiStreamEventType::AssistantDelta);
        assert!(
            deltas.len() > 1,
            "{api:?}: streamed in pieces, got {}",
            deltas.len()
        );
        let completed = of_type(&events, AiStreamEventType::AssistantCompleted);
        assert_eq!(
            completed[0].data["text"],
            "The workflow greets the user twice."
        );
        let end = &events.last().unwrap().data;
        assert_eq!(
            end["usage"],
            json!({"inputTokens": 7, "outputTokens": 6}),
            "{api:?}"
        );

        let requests = server.model_requests();
        assert_eq!(requests.len(), 1);
        let request = &requests[0];
        assert_eq!(request.body["model"], "scripted-model");
        assert_eq!(request.body["stream"], true);
        assert_eq!(
            request.authorization.as_deref(),
            Some(format!("Bearer {KEY}").as_str())
        );
        let users = request.messages_with_role("user");
        assert_eq!(users.last().map(String::as_str), Some("What does it do?"));
        match api {
            OpenAiApi::Chat => {
                assert!(request.path.ends_with("/v1/chat/completions"));
                assert_eq!(request.messages_with_role("system"), ["Use the tools."]);
                assert_eq!(request.tool_names(), ["test_echo", "test_other"]);
            }
            OpenAiApi::Responses => {
                assert!(request.path.ends_with("/v1/responses"));
                assert_eq!(request.body["instructions"], "Use the tools.");
                assert_eq!(request.body["store"], false);
                assert_eq!(request.tool_names(), ["test_echo", "test_other"]);
            }
            other => panic!("no expectations for {other:?} yet"),
        }
    }
}

#[tokio::test]
async fn sampling_and_the_output_limit_are_sent_on_both_apis_only_when_configured() {
    for api in [OpenAiApi::Chat, OpenAiApi::Responses] {
        let server = ScriptedModelServer::start([
            ModelReply::Text("Deterministic.".into()),
            ModelReply::Text("Server defaults.".into()),
        ])
        .await
        .unwrap();
        let mut config: OpenAiProviderConfig = toml::from_str(&format!(
            "kind = \"openai\"\nbase_url = \"{}\"\nmodel = \"m\"\napi = \"{}\"\n\
             temperature = 0.0\ntop_p = 0.5\nseed = 42\nmax_output_tokens = 256\n\
             parallel_tool_calls = false\n",
            server.base_url(),
            if api == OpenAiApi::Chat {
                "chat"
            } else {
                "responses"
            },
        ))
        .unwrap();
        let sampled = harness(OpenAiProvider::with_secrets(&config, |_| None).unwrap());
        sampled.run(sampled.request("Hello?")).await;
        config.temperature = None;
        config.top_p = None;
        config.seed = None;
        config.max_output_tokens = None;
        config.parallel_tool_calls = None;
        let plain = harness(OpenAiProvider::with_secrets(&config, |_| None).unwrap());
        plain.run(plain.request("Hello?")).await;

        let requests = server.model_requests();
        let limit = match api {
            OpenAiApi::Chat => "max_tokens",
            _ => "max_output_tokens",
        };
        let body = &requests[0].body;
        assert_eq!(
            (
                &body["temperature"],
                &body["top_p"],
                &body["seed"],
                &body[limit]
            ),
            (&json!(0.0), &json!(0.5), &json!(42), &json!(256)),
            "{api:?}"
        );
        assert_eq!(body["parallel_tool_calls"], false, "{api:?}");
        for name in [
            "temperature",
            "top_p",
            "seed",
            "max_tokens",
            "max_output_tokens",
        ] {
            assert!(requests[1].body.get(name).is_none(), "{api:?}: {name}");
        }
    }
}

/// A small model's habit: after a tool's result it calls the same tool again. The second call
/// is answered with a `repeated_call` note instead of running, and the turn goes on to its
/// answer without spending more rounds.
#[tokio::test]
async fn a_repeated_read_call_in_a_turn_gets_a_note_and_the_turn_goes_on() {
    let call = || ModelReply::ToolCall {
        name: "test_echo".into(),
        arguments: json!({"text": "hello"}),
    };
    let server =
        ScriptedModelServer::start([call(), call(), ModelReply::Text("It echoes hello.".into())])
            .await
            .unwrap();
    let harness = harness(provider(&server, OpenAiApi::Chat, 8, 10));
    let events = harness.run(harness.request("Echo hello.")).await;
    assert_eq!(last_type(&events), AiStreamEventType::ConversationCompleted);
    let completed = of_type(&events, AiStreamEventType::ToolCompleted);
    let failed = of_type(&events, AiStreamEventType::ToolFailed);
    assert_eq!(
        (completed.len(), failed.len()),
        (1, 1),
        "{:?}",
        types(&events)
    );
    assert_eq!(failed[0].data["error"]["code"], "repeated_call");
    let requests = server.model_requests();
    assert_eq!(requests.len(), 3);
    let results = requests[2].tool_messages();
    assert_eq!(results.len(), 2);
    assert!(results[1].contains("repeated_call"), "{}", results[1]);
}

/// A small model fills in every parameter: the optional ones it left empty where their own
/// bounds refuse that (`0` under a minimum of 1, `""` under a minimum length of 1) are taken
/// out, so the call runs as meant instead of being refused; the required one stays as written.
#[tokio::test]
async fn optional_arguments_a_model_left_empty_are_taken_out_before_the_governor() {
    let server = ScriptedModelServer::start([
        ModelReply::ToolCall {
            name: "test_echo".into(),
            arguments: json!({"text": "", "limit": 0, "tag": ""}),
        },
        ModelReply::Text("Done.".into()),
    ])
    .await
    .unwrap();
    let harness = harness(provider(&server, OpenAiApi::Chat, 8, 10));
    let events = harness.run(harness.request("Echo nothing.")).await;
    assert_eq!(last_type(&events), AiStreamEventType::ConversationCompleted);
    let started = of_type(&events, AiStreamEventType::ToolStarted);
    assert_eq!(started[0].data["arguments"], json!({"text": ""}));
    let completed = of_type(&events, AiStreamEventType::ToolCompleted);
    assert_eq!(completed.len(), 1, "{:?}", types(&events));
    assert_eq!(completed[0].data["result"], json!({"text": ""}));
}

/// Parallel calls, arguments in three-byte pieces, no call ids, `finish_reason: stop` after
/// tool calls, usage only in a last chunk without choices, keep-alive comments, no `[DONE]`.
fn quirky() -> Quirks {
    Quirks {
        argument_piece_len: 3,
        omit_tool_call_ids: true,
        tool_finish_reason: Some("stop".into()),
        usage_in_last_chunk: true,
        keep_alive_comments: true,
        omit_done: true,
        required_key: Some(KEY.into()),
    }
}

#[tokio::test]
async fn parallel_tool_calls_assembled_from_quirky_streams_run_through_the_governor() {
    for api in [OpenAiApi::Chat, OpenAiApi::Responses] {
        let server = ScriptedModelServer::start_with(
            [
                ModelReply::ToolCalls(vec![
                    (
                        "test_echo".into(),
                        json!({"text": format!("hello {REGISTERED_SECRET} é")}),
                    ),
                    ("test_other".into(), json!({})),
                ]),
                ModelReply::QuoteToolResult {
                    prefix: "Last result: ".into(),
                },
            ],
            quirky(),
        )
        .await
        .unwrap();
        let harness = harness(provider(&server, api, 8, 10));
        let events = harness.run(harness.request("Echo something.")).await;
        assert_eq!(
            last_type(&events),
            AiStreamEventType::ConversationCompleted,
            "{api:?}: {:?}",
            types(&events)
        );

        let started = of_type(&events, AiStreamEventType::ToolStarted);
        let completed = of_type(&events, AiStreamEventType::ToolCompleted);
        assert_eq!((started.len(), completed.len()), (2, 2), "{api:?}");
        assert_eq!(
            started[0].data["toolName"], "test.echo",
            "reported by the Weaver name"
        );
        assert_eq!(started[1].data["toolName"], "test.other");
        let ids: Vec<&str> = started
            .iter()
            .map(|e| e.data["toolCallId"].as_str().unwrap())
            .collect();
        assert_ne!(ids[0], ids[1], "made-up call ids are distinct");
        assert!(ids.iter().all(|id| !id.is_empty()));

        // Every call was governed and audited under the caller.
        let audit = harness.audit.events(&TenantId::from(TEST_TENANT));
        let invoked: Vec<_> = audit
            .iter()
            .filter(|e| e.action == AuditAction::TOOL_INVOKED && e.outcome == AuditOutcome::Success)
            .collect();
        assert_eq!(invoked.len(), 2, "{api:?}: {audit:#?}");
        assert!(invoked.iter().all(|e| e.actor_id == "alice"));

        // Both results went back to the model in one request, the secret redacted.
        let requests = server.model_requests();
        assert_eq!(requests.len(), 2, "{api:?}");
        let results = requests[1].tool_messages();
        assert_eq!(results.len(), 2, "{api:?}: {results:?}");
        assert!(
            results[0].contains("hello") && results[0].contains("é"),
            "{}",
            results[0]
        );
        for text in results
            .iter()
            .chain(requests[1].messages_with_role("user").iter())
        {
            assert!(!text.contains(REGISTERED_SECRET), "{api:?}: {text}");
        }
        for event in &events {
            assert!(
                !event.data.to_string().contains(REGISTERED_SECRET),
                "{event:?}"
            );
        }
        let reply = &of_type(&events, AiStreamEventType::AssistantCompleted)
            .last()
            .unwrap()
            .data["text"];
        assert!(
            reply.as_str().unwrap().starts_with("Last result: "),
            "{reply}"
        );
        assert!(
            events.last().unwrap().data["usage"]["inputTokens"] == 14,
            "usage summed over both requests: {}",
            events.last().unwrap().data
        );
    }
}

#[tokio::test]
async fn a_call_to_a_tool_the_turn_was_not_offered_is_refused_audited_and_explained() {
    let server = ScriptedModelServer::start([
        ModelReply::ToolCall {
            name: "bash".into(),
            arguments: json!({"command": "cat /etc/passwd"}),
        },
        ModelReply::QuoteToolResult {
            prefix: "Refused: ".into(),
        },
    ])
    .await
    .unwrap();
    let harness = harness(provider(&server, OpenAiApi::Chat, 8, 10));
    let events = harness.run(harness.request("Run a shell.")).await;
    assert_eq!(last_type(&events), AiStreamEventType::ConversationCompleted);
    let failed = of_type(&events, AiStreamEventType::ToolFailed);
    assert_eq!(failed.len(), 1, "{:?}", types(&events));
    let audit = harness.audit.events(&TenantId::from(TEST_TENANT));
    assert!(
        audit
            .iter()
            .any(|e| e.outcome == AuditOutcome::Denied && e.tool_name.as_deref() == Some("bash")),
        "{audit:#?}"
    );
    let told = server.model_requests()[1].tool_messages().pop().unwrap();
    assert!(told.contains("tool_not_in_agent_scope"), "{told}");
}

#[tokio::test]
async fn a_model_that_keeps_calling_tools_is_stopped_at_the_round_limit() {
    // Each call asks for something new (a repeated one would only get a note).
    let call = |round: u32| ModelReply::ToolCall {
        name: "test_echo".into(),
        arguments: json!({"text": format!("round {round}")}),
    };
    let server = ScriptedModelServer::start([call(1), call(2), call(3)])
        .await
        .unwrap();
    let harness = harness(provider(&server, OpenAiApi::Chat, 2, 10));
    let events = harness.run(harness.request("Loop forever.")).await;
    assert_eq!(failure_code(&events), "tool_round_limit");
    assert_eq!(
        server.model_requests().len(),
        2,
        "no request after the limit"
    );
    assert_eq!(of_type(&events, AiStreamEventType::ToolCompleted).len(), 2);
}

#[tokio::test]
async fn endpoint_failures_before_the_stream_are_http_errors() {
    // Wrong key: the session's reachability check is refused.
    let server = ScriptedModelServer::start_with(
        [],
        Quirks {
            required_key: Some("another-key-entirely".into()),
            ..Quirks::default()
        },
    )
    .await
    .unwrap();
    let harness = harness(provider(&server, OpenAiApi::Chat, 8, 10));
    let error = harness.refused(harness.request("Hello?")).await;
    assert_eq!((error.status(), error.code()), (503, "model_auth_failed"));
    assert!(!error.message().contains(KEY), "{}", error.message());

    // Nothing listens: refused at once, not after the request timeout.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config: OpenAiProviderConfig = toml::from_str(&format!(
        "base_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\nrequest_timeout_s = 30"
    ))
    .unwrap();
    let harness = self::harness(OpenAiProvider::new(&config).unwrap());
    let started = std::time::Instant::now();
    let error = harness.refused(harness.request("Hello?")).await;
    assert_eq!(
        (error.status(), error.code()),
        (503, "provider_unavailable")
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn endpoint_failures_during_a_turn_fail_it_with_their_code() {
    let cases = [
        (
            ModelReply::Error {
                status: 401,
                message: "bad key".into(),
            },
            "model_auth_failed",
        ),
        (
            ModelReply::Error {
                status: 403,
                message: "no access".into(),
            },
            "model_auth_failed",
        ),
        (
            ModelReply::Error {
                status: 500,
                message: "boom".into(),
            },
            "provider_unavailable",
        ),
        (
            ModelReply::Error {
                status: 404,
                message: "model 'x' not found".into(),
            },
            "model_request_rejected",
        ),
        (
            ModelReply::RateLimited {
                retry_after_secs: 30,
            },
            "model_rate_limited",
        ),
        (ModelReply::Garbage, "provider_protocol_error"),
        (ModelReply::CutOff, "provider_unavailable"),
        (ModelReply::Hold, "provider_unavailable"),
    ];
    for api in [OpenAiApi::Chat, OpenAiApi::Responses] {
        for (reply, code) in cases.clone() {
            let server = ScriptedModelServer::start([reply.clone()]).await.unwrap();
            let harness = harness(provider(&server, api, 8, 2));
            let started = std::time::Instant::now();
            let events = harness.run(harness.request("Hello?")).await;
            assert_eq!(failure_code(&events), code, "{api:?} {reply:?}");
            assert!(
                started.elapsed() < Duration::from_secs(8),
                "{reply:?} took {:?}, beyond the request timeout",
                started.elapsed()
            );
            let failed = &of_type(&events, AiStreamEventType::ConversationFailed)[0].data;
            assert!(failed["content"].as_str().is_some_and(|c| !c.is_empty()));
            assert!(!failed.to_string().contains(KEY));
        }
    }
}

#[tokio::test]
async fn rate_limits_are_retried_after_the_time_the_endpoint_asks_for() {
    let server = ScriptedModelServer::start([
        ModelReply::RateLimited {
            retry_after_secs: 1,
        },
        ModelReply::Text("Answered after waiting.".into()),
    ])
    .await
    .unwrap();
    let harness = harness(provider(&server, OpenAiApi::Chat, 8, 10));
    let started = std::time::Instant::now();
    let events = harness.run(harness.request("Hello?")).await;
    assert_eq!(last_type(&events), AiStreamEventType::ConversationCompleted);
    assert_eq!(server.model_requests().len(), 2);
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "Retry-After honoured"
    );
}

#[tokio::test]
async fn cancelling_a_turn_closes_the_model_stream_at_once() {
    let server = ScriptedModelServer::start([ModelReply::Stall("Thinking…".into())])
        .await
        .unwrap();
    let provider = provider(&server, OpenAiApi::Chat, 8, 60);
    let agent = test_agent(TEST_AGENT, &[], &all_permissions());
    let caller = AiCaller::new("alice", TEST_TENANT, all_permissions());
    let session = provider
        .create_session(CreateAiSessionRequest {
            conversation_id: ConversationId::new("c-1"),
            agent: agent.clone(),
            caller: caller.clone(),
        })
        .await
        .unwrap();
    let cancellation = CancellationToken::new();
    let request = AiTurnRequest {
        session,
        agent,
        caller,
        message: "Think hard.".into(),
        history: Vec::new(),
        context: Vec::new(),
        tools: Vec::new(),
        cancellation: cancellation.clone(),
    };
    let invoker = Arc::new(NoTools);
    let mut events = provider.execute_turn(request, invoker);
    assert_eq!(
        events.next().await,
        Some(AiProviderEvent::AssistantDelta {
            text: "Thinking…".into()
        })
    );
    assert_eq!(server.open_streams(), 1);
    cancellation.cancel();
    let last = tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("the turn ends promptly");
    assert!(
        matches!(last, Some(AiProviderEvent::Failed { .. })),
        "{last:?}"
    );
    for _ in 0..100 {
        if server.open_streams() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the model's stream is still open after the turn was cancelled");
}

/// An invoker for a turn that offers no tools.
struct NoTools;

#[async_trait::async_trait]
impl AiProviderToolInvoker for NoTools {
    async fn invoke(&self, invocation: AiProviderToolInvocation) -> AiToolResult {
        AiToolResult::error(&AiError::not_found(format!(
            "tool '{}'",
            invocation.tool_name
        )))
    }
}

#[test]
fn the_key_never_shows_in_debug_output() {
    let config: OpenAiProviderConfig =
        toml::from_str("base_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\napi_key_env = \"K\"")
            .unwrap();
    let provider = OpenAiProvider::with_secrets(&config, |_| Some(KEY.into())).unwrap();
    assert_eq!(provider.secrets(), [KEY]);
    for shown in [format!("{provider:?}"), format!("{config:?}")] {
        assert!(!shown.contains(KEY), "{shown}");
    }
    let _: Value = json!(provider.info());
}
