//! The whole flow over a real socket, as the quickstart tells it: a user chats about a
//! workflow with its definition attached, the provider reads it and proposes a change, the
//! user reviews, approves and applies it, and the audit trail tells the story. And a second
//! tenant sees none of it.

use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiProvider, AiProviderEvent, AiProviderInfo, AiProviderToolInvoker, AiSessionHandle,
    AiTurnRequest, CreateAiSessionRequest,
};
use elsa_ai_scripted::demo::DemoProvider;
use elsa_ai_scripted::{Script, ScriptStep, ScriptedProvider};
use elsa_ai_server::Weaver;
use elsa_ai_server::testing::{ALICE_KEY, GINA_KEY, SseEvent, TestServer, two_tenants};
use elsa_workflows::{TenantId, VersionOptions, WorkflowDefinition, WorkflowDefinitionStore};
use futures::stream::BoxStream;
use reqwest::StatusCode;
use serde_json::{Value, json};

fn names(events: &[SseEvent]) -> Vec<&str> {
    events.iter().map(|e| e.event.as_str()).collect()
}

/// The quickstart's script: read the attached workflow, then propose a new one derived from
/// it (a copy under a new id with a note in its description).
fn quickstart_script() -> Script {
    Script::new()
        .tool_call(
            "workflow.getDefinition",
            json!({"definitionId": "sample-http-hello-world"}),
        )
        .computed(|turn| {
            let read = turn
                .result_of("workflow.getDefinition")
                .map(|r| r.content.clone())
                .unwrap_or(Value::Null);
            ScriptStep::tool_call(
                "workflow.proposeCreate",
                json!({
                    "draft": {
                        "definitionId": "hello-world-greeter",
                        "name": "Hello world greeter",
                        "description": format!("Greets like {} does, once.", read["name"].as_str().unwrap_or("?")),
                        "activities": [
                            {"id": "start", "type": "Elsa.Start", "startsWorkflow": true},
                            {"id": "greet", "type": "Elsa.WriteLine", "inputs": {"Text": {"value": "Hello, world!"}}}
                        ],
                        "connections": [{"source": "start", "target": "greet"}]
                    },
                    "rationale": "A console greeter next to the HTTP hello world."
                }),
            )
        })
        .computed(|turn| {
            let id = turn
                .result_of("workflow.proposeCreate")
                .and_then(|r| r.content["proposalId"].as_str().map(str::to_owned))
                .unwrap_or_default();
            ScriptStep::reply(format!("I proposed a new workflow: proposal {id}."))
        })
}

#[tokio::test]
async fn the_quickstart_flow_chat_propose_review_approve_apply_and_audit() {
    let server = TestServer::start_with(
        Weaver::builder(two_tenants())
            .provider(Arc::new(ScriptedProvider::new(quickstart_script()))),
    )
    .await;
    server
        .enable_tool(ALICE_KEY, "workflow.proposeCreate")
        .await;

    let events = server
        .chat(
            ALICE_KEY,
            &json!({
                "message": "Make me a console version of the hello world workflow.",
                "attachments": [{"kind": "WorkflowDefinition", "referenceId": "sample-http-hello-world"}]
            }),
        )
        .await
        .collect()
        .await;
    let kinds = names(&events);
    assert_eq!(kinds[0], "conversation.started");
    assert_eq!(
        *kinds.last().unwrap(),
        "conversation.completed",
        "{kinds:?}"
    );
    let tools: Vec<(String, String)> = events
        .iter()
        .filter(|e| e.event.starts_with("tool."))
        .map(|e| {
            (
                e.event.clone(),
                e.json()["data"]["toolName"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            ("tool.started".into(), "workflow.getDefinition".into()),
            ("tool.completed".into(), "workflow.getDefinition".into()),
            ("tool.started".into(), "workflow.proposeCreate".into()),
            ("tool.completed".into(), "workflow.proposeCreate".into()),
        ]
    );
    let created = events
        .iter()
        .find(|e| e.event == "proposal.created")
        .expect("proposal.created");
    let proposal = created.json()["data"]["proposalId"]
        .as_str()
        .unwrap()
        .to_owned();
    let conversation = events[0].json()["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();

    // The review inbox shows it; the detail has diagnostics and the graph diff.
    let (status, inbox) = server
        .get("/ai/proposals?status=Validated", ALICE_KEY)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(inbox["items"][0]["id"], proposal.as_str());
    assert_eq!(inbox["items"][0]["kind"], "Create");
    let (_, by_conversation) = server
        .get(
            &format!("/ai/proposals?conversationId={conversation}"),
            ALICE_KEY,
        )
        .await;
    assert_eq!(by_conversation["total"], 1);
    let (status, detail) = server
        .get(&format!("/ai/proposals/{proposal}"), ALICE_KEY)
        .await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    assert_eq!(detail["status"], "Validated");
    assert_eq!(detail["definitionId"], "hello-world-greeter");
    assert!(detail["diagnostics"].is_array());
    assert!(
        detail["graphDiff"].is_object() && detail["graphDiff"] != json!({}),
        "{detail}"
    );
    assert!(detail["definition"]["root"].is_object());

    // Approve and apply: the workflow now exists.
    let (status, approved) = server
        .proposal_action(ALICE_KEY, &proposal, "approve")
        .await;
    assert_eq!(
        (status, approved["status"].as_str()),
        (StatusCode::OK, Some("Approved"))
    );
    assert_eq!(approved["reviewedBy"], "alice");
    let (status, applied) = server.proposal_action(ALICE_KEY, &proposal, "apply").await;
    assert_eq!(
        (status, applied["status"].as_str()),
        (StatusCode::OK, Some("Applied")),
        "{applied}"
    );
    assert_eq!(applied["appliedVersion"]["version"], 1);
    let written = server
        .workflows
        .find(
            &TenantId::new("acme"),
            "hello-world-greeter",
            VersionOptions::Latest,
        )
        .await
        .unwrap()
        .expect("the applied workflow exists");
    assert_eq!(written.name(), Some("Hello world greeter"));

    // The conversation's stream told the story too.
    let (_, history) = server
        .get(&format!("/ai/conversations/{conversation}"), ALICE_KEY)
        .await;
    let roles: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["User", "Tool", "Tool", "Assistant"],
        "the prompt, both tool calls with their results, and the reply"
    );

    // The audit trail: the prompt, both tool calls and every proposal action.
    let (status, trail) = server
        .get(
            &format!("/ai/audit?conversationId={conversation}&limit=100"),
            ALICE_KEY,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let actions: Vec<&str> = trail["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    for expected in ["prompt.submitted", "tool.invoked", "turn.completed"] {
        assert!(
            actions.contains(&expected),
            "{expected} missing from {actions:?}"
        );
    }
    let (_, proposal_trail) = server
        .get(&format!("/ai/audit?proposalId={proposal}"), ALICE_KEY)
        .await;
    let actions: Vec<&str> = proposal_trail["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    for expected in ["proposal.created", "proposal.approved", "proposal.applied"] {
        assert!(
            actions.contains(&expected),
            "{expected} missing from {actions:?}"
        );
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_demo_provider_summarises_and_proposes_a_description_change() {
    let server = TestServer::start(two_tenants()).await;
    let (_, capabilities) = server.get("/ai/capabilities", ALICE_KEY).await;
    assert_eq!(capabilities["provider"]["name"], "demo");
    assert_eq!(capabilities["provider"]["scripted"], true);
    assert!(
        capabilities["provider"]["notice"]
            .as_str()
            .unwrap()
            .contains("not produced by a model")
    );
    assert_eq!(capabilities["proposalReview"], true);
    // Elsa Studio reads these case-sensitively, as booleans and arrays.
    assert_eq!(capabilities["streaming"], true);
    assert_eq!(capabilities["streamingDetails"]["protocol"], "sse");
    assert!(capabilities["conversationPersistence"].is_boolean());
    assert_eq!(
        capabilities["conversationPersistence"],
        capabilities["persistence"]["durable"]
    );
    assert_eq!(
        capabilities["supportedAttachmentKinds"],
        capabilities["attachmentKinds"]
    );
    for agent in capabilities["agents"].as_array().unwrap() {
        for field in ["name", "displayName", "description"] {
            assert!(agent[field].is_string(), "{field} of {agent}");
        }
    }
    assert!(
        capabilities["attachmentKinds"]
            .as_array()
            .unwrap()
            .contains(&json!("WorkflowDefinition"))
    );
    let agents: Vec<&str> = capabilities["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        agents,
        [
            "instance-diagnostics",
            "workflow-author",
            "workflow-operator"
        ]
    );

    let (proposal, events) = server
        .demo_proposal(ALICE_KEY, "sample-order-approval")
        .await;
    let reply = events
        .iter()
        .filter(|e| e.event == "assistant.completed")
        .map(|e| e.json()["data"]["text"].as_str().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(reply.contains("sample-order-approval"), "{reply}");
    assert!(
        reply.contains(&proposal),
        "the reply names the proposal: {reply}"
    );
    let (_, detail) = server
        .get(&format!("/ai/proposals/{proposal}"), ALICE_KEY)
        .await;
    assert_eq!(detail["kind"], "Update");
    assert!(
        detail["definition"]["description"]
            .as_str()
            .unwrap()
            .ends_with("described by the Weaver demo provider.")
    );
    server.shutdown().await.unwrap();
}

/// The demo provider, except that a message `read <id>` makes the model call
/// `workflow.getDefinition` on `<id>` whatever is attached, and repeat the result.
struct ReadAnything {
    demo: DemoProvider,
    reader: ScriptedProvider,
}

#[async_trait]
impl AiProvider for ReadAnything {
    fn name(&self) -> &str {
        self.demo.name()
    }
    fn info(&self) -> AiProviderInfo {
        self.demo.info()
    }
    async fn create_session(
        &self,
        request: CreateAiSessionRequest,
    ) -> Result<AiSessionHandle, AiError> {
        self.demo.create_session(request).await
    }
    fn execute_turn(
        &self,
        request: AiTurnRequest,
        invoker: Arc<dyn AiProviderToolInvoker>,
    ) -> BoxStream<'static, AiProviderEvent> {
        if request.message.starts_with("read ") {
            self.reader.execute_turn(request, invoker)
        } else {
            self.demo.execute_turn(request, invoker)
        }
    }
}

fn read_anything() -> ReadAnything {
    ReadAnything {
        demo: DemoProvider::new(),
        reader: ScriptedProvider::directed(|turn| {
            let id = turn.message.trim_start_matches("read ").to_owned();
            Script::new()
                .tool_call("workflow.getDefinition", json!({"definitionId": id}))
                .computed(|turn| {
                    let result = turn.result_of("workflow.getDefinition").cloned();
                    ScriptStep::reply(result.map(|r| r.to_model_text()).unwrap_or_default())
                })
        }),
    }
}

#[tokio::test]
async fn a_second_tenant_sees_nothing_of_the_first() {
    let server =
        TestServer::start_with(Weaver::builder(two_tenants()).provider(Arc::new(read_anything())))
            .await;
    // A workflow only acme has.
    let acme_only = WorkflowDefinition::from_json_str(
        &json!({
            "definitionId": "acme-secret-flow", "version": 1, "name": "Acme secret flow",
            "isLatest": true, "isPublished": true,
            "root": {"type": "Elsa.Sequence", "id": "root", "activities": []}
        })
        .to_string(),
    )
    .unwrap();
    server
        .workflows
        .insert_definition(&TenantId::new("acme"), acme_only)
        .unwrap();
    let (proposal, events) = server.demo_proposal(ALICE_KEY, "acme-secret-flow").await;
    let conversation = events[0].json()["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();

    // Gina (globex) cannot see acme's conversation, its stream, its proposal or its audit.
    let (status, _) = server
        .get(&format!("/ai/conversations/{conversation}"), GINA_KEY)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, list) = server.get("/ai/conversations", GINA_KEY).await;
    assert_eq!(list["total"], 0);
    let resume = server
        .request(
            reqwest::Method::GET,
            &format!("/ai/chat/{conversation}/events"),
            GINA_KEY,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        resume.status(),
        StatusCode::NOT_FOUND,
        "no tool results through the stream"
    );
    let (status, _) = server
        .get(&format!("/ai/proposals/{proposal}"), GINA_KEY)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, inbox) = server.get("/ai/proposals", GINA_KEY).await;
    assert_eq!(inbox["total"], 0);
    for action in ["approve", "apply"] {
        let (status, _) = server.proposal_action(GINA_KEY, &proposal, action).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{action}");
    }
    let (_, trail) = server
        .get(
            &format!("/ai/audit?conversationId={conversation}"),
            GINA_KEY,
        )
        .await;
    assert_eq!(trail["total"], 0);
    let (_, all) = server.get("/ai/audit?limit=500", GINA_KEY).await;
    assert!(
        all["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["tenantId"] == "globex"),
        "{all}"
    );
    // Nor can her own turn reach acme's workflow: the reference is unknown in globex.
    let (status, body) = server
        .post(
            "/ai/chat",
            GINA_KEY,
            &json!({"message": "show me", "attachments": [{"kind": "WorkflowDefinition", "referenceId": "acme-secret-flow"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    // Nor can a tool call made in her turn: to her tools, acme's workflow does not exist.
    let events = server
        .chat(GINA_KEY, &json!({"message": "read acme-secret-flow"}))
        .await
        .collect()
        .await;
    let result = events
        .iter()
        .find(|e| e.event.starts_with("tool.") && e.event != "tool.started")
        .expect("the tool call ended");
    assert_eq!(result.event, "tool.failed", "{result:?}");
    assert!(
        events.iter().all(|e| !e.data.contains("Acme secret flow")),
        "nothing of acme's workflow reached globex's stream"
    );
    // While alice reads it in hers.
    let events = server
        .chat(ALICE_KEY, &json!({"message": "read acme-secret-flow"}))
        .await
        .collect()
        .await;
    assert!(
        events
            .iter()
            .any(|e| e.event == "tool.completed" && e.data.contains("Acme secret flow"))
    );
    server.shutdown().await.unwrap();
}

const PROPOSER_KEY: &str = "test-key-paul-acme-proposer";

#[tokio::test]
async fn me_and_allowed_actions_tell_a_client_which_review_buttons_to_offer() {
    let mut config = two_tenants();
    config
        .auth
        .api_keys
        .push(elsa_ai_server::config::ApiKeyConfig {
            key: Some(PROPOSER_KEY.into()),
            key_env: None,
            actor: "paul".into(),
            tenant: "acme".into(),
            permissions: vec!["propose:workflows".into(), "read:workflows".into()],
        });
    let server = TestServer::start(config).await;
    let (status, me) = server.get("/ai/me", PROPOSER_KEY).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        me,
        json!({"actor": "paul", "tenant": "acme", "permissions": ["propose:workflows", "read:workflows"]})
    );

    let (proposal, _) = server
        .demo_proposal(ALICE_KEY, "sample-order-approval")
        .await;
    let path = format!("/ai/proposals/{proposal}");
    let allowed = |key: &'static str| {
        let path = path.clone();
        let server = &server;
        async move {
            let (status, view) = server.get(&path, key).await;
            assert_eq!(status, StatusCode::OK, "{view}");
            let (_, inbox) = server.get("/ai/proposals", key).await;
            let row = inbox["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|row| row["id"] == view["id"])
                .unwrap()
                .clone();
            assert_eq!(
                row["allowedActions"], view["allowedActions"],
                "inbox and detail agree"
            );
            view["allowedActions"].clone()
        }
    };
    assert_eq!(allowed(ALICE_KEY).await, json!(["approve", "reject"]));
    assert_eq!(
        allowed(PROPOSER_KEY).await,
        json!([]),
        "a proposer may read the proposal but review nothing"
    );
    let (status, _) = server
        .proposal_action(ALICE_KEY, &proposal, "approve")
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(allowed(ALICE_KEY).await, json!(["reject", "apply"]));
    let (status, applied) = server.proposal_action(ALICE_KEY, &proposal, "apply").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        applied["allowedActions"],
        json!([]),
        "an applied proposal is final"
    );
    let (status, _) = server.get(&path, GINA_KEY).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "another tenant sees no proposal at all"
    );
    server.shutdown().await.unwrap();
}
