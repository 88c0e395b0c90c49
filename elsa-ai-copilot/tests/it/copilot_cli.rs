//! The Copilot provider against the real Copilot CLI (pinned in `tools/copilot-cli`, or
//! `COPILOT_CLI_PATH`), with a BYOK `openai` endpoint played by a scripted model server on
//! 127.0.0.1. Without the CLI these tests fail and say how to install it.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiAgentDefinition, AiContextAttachment, AiError, AiMessage, AiProvider, AiProviderEvent,
    AiSessionHandle, AiStreamEvent, AiStreamEventType, AiTool, AiToolDefinition,
    AiToolExecutionContext, AiToolServices, AiTurnRequest, AttachmentKind, AuditAction,
    AuditOutcome, ConversationId, CreateAiSessionRequest, MessageRole, Permission, ToolMutability,
};
use elsa_ai_copilot::testing::{TraceLog, gone, pinned_cli, process_environment, running};
use elsa_ai_copilot::{CopilotProvider, CopilotProviderConfig};
use elsa_ai_host::testing::chat::{ChatHarness, REGISTERED_SECRET, caller_with, of_type, types};
use elsa_ai_host::testing::governance::{
    GovernanceHarness, RefusingProposalIntake, TEST_AGENT, TEST_TENANT, TestTool, all_permissions,
    read_tool, test_agent,
};
use elsa_ai_host::{REDACTED, Redactor, ToolGovernorBuilder};
use elsa_workflows::{InMemoryWorkflowBackend, TenantId, VersionOptions, WorkflowDefinition};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use weaver_testkit::model_server::{ModelReply, ScriptedModelServer};

/// The variable the provider reads the endpoint key from, and the key.
/// The tests of this file run side by side, except the one that captures the provider's
/// trace log: `tracing` caches per call site whether any subscriber listens, and a call
/// site first reached by another test's thread while the capture is being installed can
/// stay muted for it.
static SIDE_BY_SIDE: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

const KEY_VARIABLE: &str = "WEAVER_TEST_MODEL_KEY";
const KEY: &str = "sk-weaver-e2e-endpoint-key-0123456789";

/// Tools every Copilot CLI session would offer unless told otherwise.
const CLI_BUILT_INS: &[&str] = &[
    "bash",
    "create",
    "edit",
    "glob",
    "grep",
    "view",
    "web_fetch",
    "task",
    "sql",
    "read_bash",
    "write_bash",
    "stop_bash",
    "list_bash",
    "report_intent",
    "update_todo",
    "fetch_copilot_cli_documentation",
];

fn provider(server: &ScriptedModelServer, model: &str) -> CopilotProvider {
    let config = CopilotProviderConfig {
        kind: Some("copilot".into()),
        cli_path: Some(pinned_cli()),
        api_key_env: Some(KEY_VARIABLE.into()),
        ..CopilotProviderConfig::openai_compatible(server.base_url(), model)
    };
    CopilotProvider::with_secrets(&config, |name| {
        (name == KEY_VARIABLE).then(|| KEY.to_owned())
    })
    .expect("the configuration is valid")
}

/// `workflow.getDefinition` for these tests: the latest version of a definition of the
/// caller's tenant, whole, read through the workflow definition store.
struct GetDefinition {
    definition: AiToolDefinition,
}

impl GetDefinition {
    fn new() -> Self {
        let mut definition = read_tool("workflow.getDefinition");
        definition.description = "Reads a workflow definition by its definition id.".into();
        definition.input_schema = json!({
            "type": "object",
            "properties": {"definitionId": {"type": "string"}},
            "required": ["definitionId"],
        });
        Self { definition }
    }
}

#[async_trait]
impl AiTool for GetDefinition {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let id = context.arguments["definitionId"]
            .as_str()
            .unwrap_or_default();
        context
            .services
            .definitions
            .find(&context.caller.tenant_id, id, VersionOptions::Latest)
            .await?
            .map(|definition| definition.to_value())
            .ok_or_else(|| AiError::not_found(format!("workflow definition '{id}'")))
    }
}

/// The fixture definitions of the test tenant, with one stored under a known id: a real Elsa
/// definition given a registered secret and a description far above the result budget, so
/// that what the model reads of it must have been redacted and clamped.
fn workflow_data() -> (AiToolServices, String) {
    let backend = Arc::new(InMemoryWorkflowBackend::new());
    let tenant = TenantId::from(TEST_TENANT);
    let mut definitions = weaver_testkit::fixture_files("definitions")
        .into_iter()
        .filter_map(|path| WorkflowDefinition::from_slice(&std::fs::read(path).ok()?).ok())
        .filter(|definition| !definition.definition_id().is_empty());
    let mut value = definitions
        .next()
        .expect("a valid fixture definition")
        .to_value();
    value["definitionId"] = json!("weaver-e2e-definition");
    value["description"] = json!(format!(
        "Reads {REGISTERED_SECRET}. {}",
        "A long note. ".repeat(4000)
    ));
    value["customProperties"] = json!({"apiKey": "do-not-show-this", "owner": "ops"});
    let seeded = WorkflowDefinition::from_value(value).expect("still a definition");
    backend.insert_definition(&tenant, seeded).expect("stored");
    for definition in definitions {
        let _ = backend.insert_definition(&tenant, definition);
    }
    let services = AiToolServices {
        definitions: backend.clone(),
        instances: backend.clone(),
        executions: backend.clone(),
        incidents: backend.clone(),
        catalog: backend,
        proposals: Arc::new(RefusingProposalIntake),
    };
    (services, "weaver-e2e-definition".to_owned())
}

fn chat_harness(provider: CopilotProvider, services: AiToolServices) -> ChatHarness {
    ChatHarness::builder()
        .tool(Arc::new(GetDefinition::new()))
        .services(services)
        .provider(Arc::new(provider))
        .build()
}

fn assert_no_built_ins(server: &ScriptedModelServer, offered: &[&str]) {
    let requests = server.chat_requests();
    assert!(!requests.is_empty(), "the model was called");
    for request in &requests {
        assert_eq!(
            request.tool_names(),
            offered,
            "exactly the authorized tools are offered"
        );
        assert!(
            !request
                .tool_names()
                .iter()
                .any(|name| CLI_BUILT_INS.contains(&name.as_str())),
            "no CLI built-in tool"
        );
        assert_eq!(
            request.authorization.as_deref(),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
}

#[tokio::test]
async fn a_governed_turn_runs_end_to_end_through_the_real_cli() {
    let _side_by_side = SIDE_BY_SIDE.read().await;
    let server = ScriptedModelServer::start([
        ModelReply::ToolCall {
            name: "workflow_getDefinition".into(),
            arguments: json!({"definitionId": "weaver-e2e-definition"}),
        },
        ModelReply::QuoteToolResult {
            prefix: "The definition reads: ".into(),
        },
        ModelReply::ToolCall {
            name: "workflow_getDefinition".into(),
            arguments: json!({"definitionId": "no-such-definition"}),
        },
        ModelReply::QuoteToolResult {
            prefix: "The tool answered: ".into(),
        },
    ])
    .await
    .unwrap();
    let provider = provider(&server, "gpt-4.1");
    assert!(
        !format!("{provider:?}").contains(KEY),
        "the key is never printed"
    );
    let (services, definition_id) = workflow_data();
    let harness = chat_harness(provider.clone(), services);

    let events = harness
        .run(harness.request("What does the workflow do?"))
        .await;
    let kinds = types(&events);
    for expected in [
        AiStreamEventType::ConversationStarted,
        AiStreamEventType::ToolStarted,
        AiStreamEventType::ToolCompleted,
        AiStreamEventType::AssistantDelta,
        AiStreamEventType::AssistantCompleted,
        AiStreamEventType::ConversationCompleted,
    ] {
        assert!(
            kinds.contains(&expected),
            "{expected:?} missing from {kinds:?}"
        );
    }
    let started = of_type(&events, AiStreamEventType::ToolStarted);
    assert_eq!(
        started[0].data["toolName"], "workflow.getDefinition",
        "reported by its Weaver name"
    );
    assert_eq!(started[0].data["arguments"]["definitionId"], definition_id);

    // The governed tool ran, and the audit log says so.
    let audit = harness.audit.events(&TenantId::from(TEST_TENANT));
    let invoked: Vec<_> = audit
        .iter()
        .filter(|e| {
            e.action == AuditAction::TOOL_INVOKED
                && e.tool_name.as_deref() == Some("workflow.getDefinition")
        })
        .collect();
    assert_eq!(invoked.len(), 1, "{audit:#?}");
    assert_eq!(invoked[0].outcome, AuditOutcome::Success);

    // The model got exactly the authorized tool, and the tool result redacted and clamped.
    assert_no_built_ins(&server, &["workflow_getDefinition"]);
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].messages_with_role("system"),
        [test_agent(TEST_AGENT, &[], &[]).instructions],
        "the agent's instructions are the whole system message"
    );
    let tool_result = requests[1]
        .tool_messages()
        .pop()
        .expect("the tool result reached the model");
    assert!(tool_result.contains(&definition_id), "{tool_result}");
    assert!(!tool_result.contains(REGISTERED_SECRET) && !tool_result.contains("do-not-show-this"));
    assert!(tool_result.contains("[REDACTED]"), "redacted");
    assert!(
        tool_result.contains("_truncated"),
        "clamped: {} {}",
        tool_result.len(),
        &tool_result[..tool_result.len().min(1500)]
    );
    assert!(
        tool_result.len() <= ToolGovernorBuilder::DEFAULT_RESULT_LIMIT + 1024,
        "{}",
        tool_result.len()
    );
    let reply = &of_type(&events, AiStreamEventType::AssistantCompleted)[0].data["text"];
    assert!(
        reply
            .as_str()
            .unwrap()
            .starts_with("The definition reads: "),
        "{reply}"
    );

    // The next turn resumes the same Copilot session: the model sees the first turn once,
    // and a failing call reaches it as an error it can read.
    let conversation = events[0].conversation_id.clone();
    let mut next = harness.request("And the one that does not exist?");
    next.conversation_id = Some(conversation);
    let events = harness.run(next).await;
    assert!(
        types(&events).contains(&AiStreamEventType::ToolFailed),
        "{:?}",
        types(&events)
    );
    assert_eq!(
        types(&events).last(),
        Some(&AiStreamEventType::ConversationCompleted)
    );
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 4);
    let users = requests[2].messages_with_role("user");
    assert_eq!(
        users.len(),
        2,
        "the first turn's message once, then this one: {users:?}"
    );
    assert!(
        users[0].ends_with("What does the workflow do?")
            && users[1].ends_with("And the one that does not exist?")
    );
    let failure = requests[3].tool_messages().pop().unwrap();
    assert!(failure.contains("not_found"), "{failure}");
    assert_eq!(
        harness.provider.sessions().len(),
        1,
        "one Copilot session per conversation"
    );
    assert_no_built_ins(&server, &["workflow_getDefinition"]);

    provider.shutdown().await;
}

#[tokio::test]
async fn a_tool_the_caller_may_not_use_is_denied_audited_and_explained_to_the_model() {
    let _side_by_side = SIDE_BY_SIDE.read().await;
    // The caller lacks `read:workflows`, so the tool is not offered; the model, as models
    // do, calls it anyway.
    let server = ScriptedModelServer::start([
        ModelReply::ToolCall {
            name: "workflow_getDefinition".into(),
            arguments: json!({"definitionId": "weaver-e2e-definition"}),
        },
        ModelReply::QuoteToolResult {
            prefix: "Refused: ".into(),
        },
    ])
    .await
    .unwrap();
    let provider = provider(&server, "gpt-4.1");
    let (services, _) = workflow_data();
    let harness = chat_harness(provider.clone(), services);
    let caller = caller_with("bob", TEST_TENANT, &[Permission::READ_ACTIVITIES]);
    let events = harness
        .run(harness.request_with(caller, TEST_AGENT, Vec::new()))
        .await;

    assert_eq!(
        types(&events).last(),
        Some(&AiStreamEventType::ConversationCompleted)
    );
    let failed = of_type(&events, AiStreamEventType::ToolFailed);
    assert_eq!(failed.len(), 1, "{:?}", types(&events));
    assert_eq!(failed[0].data["toolName"], "workflow.getDefinition");

    let audit = harness.audit.events(&TenantId::from(TEST_TENANT));
    let denied: Vec<_> = audit
        .iter()
        .filter(|e| e.action == AuditAction::TOOL_DENIED)
        .collect();
    assert_eq!(denied.len(), 1, "{audit:#?}");
    assert_eq!(denied[0].outcome, AuditOutcome::Denied);
    assert_eq!(
        denied[0].tool_name.as_deref(),
        Some("workflow.getDefinition")
    );
    assert_eq!(denied[0].details["error"]["code"], "permission_denied");
    assert_eq!(denied[0].actor_id, "bob");

    assert_no_built_ins(&server, &[]);
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2);
    let refusal = requests[1].tool_messages().pop().unwrap();
    assert!(
        refusal.contains("permission_denied") && refusal.contains("read:workflows"),
        "{refusal}"
    );
    let reply = &of_type(&events, AiStreamEventType::AssistantCompleted)[0].data["text"];
    assert!(
        reply.as_str().unwrap().contains("permission_denied"),
        "{reply}"
    );

    provider.shutdown().await;
}

#[tokio::test]
async fn a_model_endpoint_that_refuses_the_key_fails_the_turn_with_503() {
    let _side_by_side = SIDE_BY_SIDE.read().await;
    let server = ScriptedModelServer::start((0..8).map(|_| ModelReply::Error {
        status: 401,
        message: "invalid api key".into(),
    }))
    .await
    .unwrap();
    let provider = provider(&server, "gpt-4.1");
    let harness = chat_harness(provider.clone(), workflow_data().0);
    let events = harness.run(harness.request("Hello?")).await;
    let failed = of_type(&events, AiStreamEventType::ConversationFailed);
    assert_eq!(failed.len(), 1, "{:?}", types(&events));
    assert_eq!(failed[0].data["error"]["status"], 503);
    assert_eq!(failed[0].data["error"]["code"], "model_auth_failed");
    let everything =
        serde_json::to_string(&events.iter().map(|e| &e.data).collect::<Vec<_>>()).unwrap();
    assert!(
        !everything.contains(KEY),
        "the key never reaches the stream"
    );
    provider.shutdown().await;
}

/// A turn request for `session` with `tools`, cancelled by `cancellation`.
fn turn(
    session: &AiSessionHandle,
    agent: &AiAgentDefinition,
    message: &str,
    tools: Vec<AiToolDefinition>,
    cancellation: CancellationToken,
) -> AiTurnRequest {
    AiTurnRequest {
        session: session.clone(),
        agent: agent.clone(),
        caller: weaver_testkit::full_caller("alice", TEST_TENANT),
        message: message.to_owned(),
        history: vec![
            AiMessage {
                role: MessageRole::User,
                content: "An earlier question.".into(),
                timestamp: chrono::Utc::now(),
            },
            AiMessage {
                role: MessageRole::Assistant,
                content: "An earlier answer.".into(),
                timestamp: chrono::Utc::now(),
            },
        ],
        context: Vec::new(),
        tools: tools.into_iter().map(Arc::new).collect(),
        cancellation,
    }
}

async fn open(provider: &CopilotProvider, agent: &AiAgentDefinition) -> AiSessionHandle {
    provider
        .create_session(CreateAiSessionRequest {
            conversation_id: ConversationId::generate(),
            agent: agent.clone(),
            caller: weaver_testkit::full_caller("alice", TEST_TENANT),
        })
        .await
        .expect("the session opens")
}

async fn run_turn(
    provider: &CopilotProvider,
    request: AiTurnRequest,
    harness: &GovernanceHarness,
) -> Vec<AiProviderEvent> {
    let stream = provider.execute_turn(request, harness.invoker());
    tokio::time::timeout(Duration::from_secs(120), stream.collect::<Vec<_>>())
        .await
        .expect("the turn ends")
}

#[tokio::test]
async fn the_cli_starts_lazily_restarts_after_being_killed_and_leaves_no_process_behind() {
    let _side_by_side = SIDE_BY_SIDE.read().await;
    let server = ScriptedModelServer::start([
        ModelReply::Text("First answer.".into()),
        ModelReply::Text("Second answer.".into()),
    ])
    .await
    .unwrap();
    let provider = provider(&server, "weaver-local-model");
    assert_eq!(
        provider.cli_pid().await,
        None,
        "nothing runs before the first session"
    );
    let harness = GovernanceHarness::builder().build();
    let agent = test_agent(TEST_AGENT, &[], &all_permissions());

    let session = open(&provider, &agent).await;
    let first_pid = provider
        .cli_pid()
        .await
        .expect("the first session started the CLI");
    assert!(running(first_pid));
    let events = run_turn(
        &provider,
        turn(&session, &agent, "one", vec![], CancellationToken::new()),
        &harness,
    )
    .await;
    assert_eq!(
        events.last(),
        Some(&AiProviderEvent::Completed),
        "{events:?}"
    );
    assert!(events.contains(&AiProviderEvent::AssistantMessage {
        text: "First answer.".into()
    }));

    let killed = std::process::Command::new("kill")
        .args(["-9", &first_pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    for _ in 0..100 {
        if !running(first_pid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!running(first_pid), "the CLI was killed");

    // The next turn finds the CLI dead, starts another and resumes the session from disk.
    let events = run_turn(
        &provider,
        turn(&session, &agent, "two", vec![], CancellationToken::new()),
        &harness,
    )
    .await;
    assert_eq!(
        events.last(),
        Some(&AiProviderEvent::Completed),
        "{events:?}"
    );
    assert!(events.contains(&AiProviderEvent::AssistantMessage {
        text: "Second answer.".into()
    }));
    let second_pid = provider.cli_pid().await.expect("restarted");
    assert_ne!(second_pid, first_pid);
    let users = server.chat_requests()[1].messages_with_role("user");
    assert_eq!(
        users.len(),
        2,
        "the restarted CLI resumed the conversation: {users:?}"
    );
    // A session opened for a conversation with history gets it once, on its first turn.
    assert!(users[0].contains(
        "<conversation_history>\nuser: An earlier question.\nassistant: An earlier answer.\n"
    ));
    assert!(users[0].ends_with("one"));
    assert!(
        users[1].ends_with("two") && !users[1].contains("<conversation_history>"),
        "{users:?}"
    );

    provider
        .close_session(&session)
        .await
        .expect("the session is deleted");
    provider.shutdown().await;
    assert!(gone(second_pid).await, "the CLI stopped with the provider");
    assert!(gone(first_pid).await, "the killed CLI was reaped");
    assert_eq!(provider.cli_pid().await, None);
    let refused = provider
        .create_session(CreateAiSessionRequest {
            conversation_id: ConversationId::generate(),
            agent,
            caller: weaver_testkit::full_caller("alice", TEST_TENANT),
        })
        .await
        .unwrap_err();
    assert_eq!(
        (refused.status(), refused.code()),
        (503, "provider_shut_down")
    );
}

#[tokio::test]
async fn a_cancelled_turn_aborts_the_copilot_turn_and_frees_the_session() {
    let _side_by_side = SIDE_BY_SIDE.read().await;
    let server = ScriptedModelServer::start([
        ModelReply::ToolCall {
            name: "demo_slow".into(),
            arguments: json!({}),
        },
        ModelReply::Text("Back again.".into()),
    ])
    .await
    .unwrap();
    let provider = provider(&server, "gpt-4.1");
    let slow = read_tool("demo.slow");
    assert_eq!(slow.mutability, ToolMutability::ReadOnly);
    let harness = GovernanceHarness::builder()
        .tool(Arc::new(TestTool::sleeping(
            slow.clone(),
            Duration::from_secs(60),
        )))
        .build();
    let agent = test_agent(TEST_AGENT, &["demo.slow"], &all_permissions());
    let session = open(&provider, &agent).await;

    let cancellation = CancellationToken::new();
    let invoker = harness.governor.bind(
        harness
            .scope(harness.caller())
            .with_cancellation(cancellation.clone()),
    );
    let mut stream = provider.execute_turn(
        turn(
            &session,
            &agent,
            "slow please",
            vec![slow.clone()],
            cancellation.clone(),
        ),
        invoker,
    );
    let mut seen = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(event) = stream.next().await {
            if matches!(event, AiProviderEvent::ToolStarted { .. }) {
                tokio::time::sleep(Duration::from_millis(300)).await;
                cancellation.cancel();
            }
            seen.push(event);
        }
    })
    .await;
    assert!(ended.is_ok(), "the cancelled turn ended: {seen:?}");
    assert!(
        matches!(seen.last(), Some(AiProviderEvent::Failed { error }) if error.code() == "turn_cancelled"),
        "{seen:?}"
    );
    assert_eq!(
        server.chat_requests().len(),
        1,
        "the model was not asked to continue"
    );

    // The session was disconnected cleanly: the next turn resumes it.
    assert_eq!(
        server.remaining_replies(),
        1,
        "the aborted turn asked the model nothing more"
    );
    let events = run_turn(
        &provider,
        turn(
            &session,
            &agent,
            "still there?",
            vec![slow],
            CancellationToken::new(),
        ),
        &harness,
    )
    .await;
    assert_eq!(
        events.last(),
        Some(&AiProviderEvent::Completed),
        "{events:?}"
    );
    let requests = server.chat_requests();
    assert_eq!(
        requests.len(),
        2,
        "one request per turn, no continuation of the aborted one"
    );
    let interrupted = requests[1].tool_messages();
    assert_eq!(
        interrupted.len(),
        1,
        "the aborted call is part of the session's history"
    );
    assert!(interrupted[0].contains("interrupted"), "{interrupted:?}");
    provider.shutdown().await;
}

#[tokio::test]
async fn a_text_turn_streams_deltas_and_the_model_reads_the_attached_context() {
    let _side_by_side = SIDE_BY_SIDE.read().await;
    let server = ScriptedModelServer::start([ModelReply::Text("Just words, no tools.".into())])
        .await
        .unwrap();
    let provider = provider(&server, "gpt-4.1");
    let (services, definition_id) = workflow_data();
    let harness = chat_harness(provider.clone(), services);
    let attachment =
        AiContextAttachment::new(AttachmentKind::WorkflowDefinition, definition_id.clone());
    let mut request = harness.request_with(harness.caller(), TEST_AGENT, vec![attachment]);
    request.message = "Say something about it.".into();
    let events: Vec<AiStreamEvent> = harness.run(request).await;
    let deltas: String = of_type(&events, AiStreamEventType::AssistantDelta)
        .iter()
        .map(|e| e.data["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(deltas, "Just words, no tools.");
    assert_eq!(
        of_type(&events, AiStreamEventType::AssistantCompleted)[0].data["text"],
        "Just words, no tools."
    );
    assert_eq!(
        types(&events).last(),
        Some(&AiStreamEventType::ConversationCompleted)
    );

    // The resolved attachment (redacted by the host) reached the model with the message.
    let user = server.chat_requests()[0]
        .messages_with_role("user")
        .pop()
        .unwrap();
    assert!(
        user.contains(&format!(
            "<context kind=\"WorkflowDefinition\" reference=\"{definition_id}\""
        )),
        "{}",
        &user[..user.len().min(600)]
    );
    assert!(user.ends_with("Say something about it."));
    assert!(!user.contains(REGISTERED_SECRET) && !user.contains("do-not-show-this"));
    provider.shutdown().await;
}

/// Everything the CLI's environment may hold: what it inherits (`PATH`, the locale, the time
/// zone, the temporary directory), its private home, and what the SDK sets.
const CLI_ENVIRONMENT: &[&str] = &[
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "HOME",
    "COPILOT_HOME",
    "COPILOT_DISABLE_KEYTAR",
    "COPILOT_TELEMETRY_DISABLED",
];

#[tokio::test]
async fn the_cli_starts_from_a_cleared_environment_plus_the_allowlist() {
    let _side_by_side = SIDE_BY_SIDE.read().await;
    let server = ScriptedModelServer::start([]).await.unwrap();
    let provider = provider(&server, "gpt-4.1");
    let agent = test_agent(TEST_AGENT, &[], &all_permissions());
    let _session = open(&provider, &agent).await;
    let pid = provider
        .cli_pid()
        .await
        .expect("the session started the CLI");

    let environment = process_environment(pid);
    let names: Vec<&str> = environment.iter().map(|(name, _)| name.as_str()).collect();
    assert!(
        names.iter().all(|name| CLI_ENVIRONMENT.contains(name)),
        "only the allowlist reaches the CLI: {names:?}"
    );
    let value = |wanted: &str| {
        environment
            .iter()
            .find(|(name, _)| name == wanted)
            .map(|(_, value)| value.clone())
    };
    assert_eq!(
        value("PATH"),
        std::env::var("PATH").ok(),
        "PATH is inherited"
    );
    let home = value("COPILOT_HOME").expect("the private home");
    assert_eq!(
        value("HOME"),
        Some(home.clone()),
        "HOME is the private home"
    );
    assert_ne!(std::env::var("HOME").ok(), Some(home));
    provider.shutdown().await;
}

#[tokio::test]
async fn a_cli_that_dies_mid_turn_fails_the_turn_and_the_next_turn_starts_another_cli() {
    let _side_by_side = SIDE_BY_SIDE.read().await;
    let server = ScriptedModelServer::start([
        ModelReply::Hold,
        ModelReply::Text("Answered by the new CLI.".into()),
    ])
    .await
    .unwrap();
    let provider = provider(&server, "gpt-4.1");
    let harness = ChatHarness::builder()
        .provider(Arc::new(provider.clone()))
        .build();

    // The model holds the first request; while it does, the CLI is killed.
    let kill_while_the_model_thinks = async {
        while server.chat_requests().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let pid = provider.cli_pid().await.expect("the CLI runs the turn");
        let killed = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        pid
    };
    let (events, killed) = tokio::time::timeout(Duration::from_secs(120), async {
        tokio::join!(
            harness.run(harness.request("Think hard.")),
            kill_while_the_model_thinks
        )
    })
    .await
    .expect("the turn ends when its CLI dies");
    assert_eq!(
        types(&events).last(),
        Some(&AiStreamEventType::ConversationFailed),
        "{:?}",
        types(&events)
    );
    let failed = of_type(&events, AiStreamEventType::ConversationFailed);
    assert_eq!(failed[0].data["error"]["status"], 503);
    assert_eq!(failed[0].data["error"]["code"], "provider_unavailable");

    let mut next = harness.request("And now?");
    next.conversation_id = Some(events[0].conversation_id.clone());
    let events = tokio::time::timeout(Duration::from_secs(120), harness.run(next))
        .await
        .expect("the next turn ends");
    assert_eq!(
        types(&events).last(),
        Some(&AiStreamEventType::ConversationCompleted),
        "{events:#?}"
    );
    assert_eq!(
        of_type(&events, AiStreamEventType::AssistantCompleted)[0].data["text"],
        "Answered by the new CLI."
    );
    let restarted = provider.cli_pid().await.expect("a new CLI runs");
    assert_ne!(restarted, killed, "the next turn started a new CLI");
    assert!(!running(killed));
    provider.shutdown().await;
}

#[tokio::test]
async fn provider_events_logged_at_trace_level_pass_the_redactor() {
    // Alone: see `SIDE_BY_SIDE`.
    let _alone = SIDE_BY_SIDE.write().await;
    let server = ScriptedModelServer::start([ModelReply::Text(format!(
        "The configured secret is {REGISTERED_SECRET}."
    ))])
    .await
    .unwrap();
    let provider = provider(&server, "gpt-4.1");
    provider.redact_logs_with(Arc::new(
        Redactor::builder()
            .secret(REGISTERED_SECRET)
            .build()
            .unwrap(),
    ));
    let harness = GovernanceHarness::builder().build();
    let agent = test_agent(TEST_AGENT, &[], &all_permissions());
    let session = open(&provider, &agent).await;

    // A current-thread test: the turn's task and the SDK's tasks log on this thread.
    let log = TraceLog::capture();
    let events = run_turn(
        &provider,
        turn(
            &session,
            &agent,
            "Tell me",
            vec![],
            CancellationToken::new(),
        ),
        &harness,
    )
    .await;
    let log = log.text();
    assert_eq!(
        events.last(),
        Some(&AiProviderEvent::Completed),
        "{events:?}"
    );
    assert!(
        events.iter().any(|event| matches!(
            event,
            AiProviderEvent::AssistantMessage { text } if text.contains(REGISTERED_SECRET)
        )),
        "the provider reports the model's text as it is (the host redacts the stream)"
    );
    assert!(log.contains("Copilot event"), "{log}");
    assert!(
        log.contains(&format!("The configured secret is {REDACTED}")),
        "{log}"
    );
    assert!(!log.contains(REGISTERED_SECRET), "{log}");
    provider.shutdown().await;
}
