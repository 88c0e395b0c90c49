//! Elsa Studio's Weaver panel against weaver, over a real socket: its chat request as it
//! sends it (System.Text.Json's camelCase with nulls, `application/json; charset=utf-8`,
//! `Accept: text/event-stream`), and the stream read the way its reducer reads it: the type
//! from the JSON's `type`, keys matched case-insensitively, and every field it reads must be
//! a string or absent (it calls `GetValue<string>()`, which throws on anything else).

use std::sync::Arc;

use elsa_ai_abstractions::AiError;
use elsa_ai_scripted::{Script, ScriptedProvider};
use elsa_ai_server::Weaver;
use elsa_ai_server::testing::{ALICE_KEY, SseStream, TestServer, two_tenants};
use reqwest::{Method, StatusCode};
use serde_json::{Map, Value};

/// The chat body exactly as Studio serialises `WeaverChatRequest` with one attachment.
fn studio_chat_body(conversation_id: Option<&str>) -> String {
    let conversation = conversation_id.map_or("null".to_owned(), |id| format!("\"{id}\""));
    format!(
        "{{\"conversationId\":{conversation},\"message\":\"Why is this workflow slow?\",\"agent\":null,\
         \"attachments\":[{{\"id\":\"3f2b8c1e9a7d4e6f8b0c2d4e6f8a0b1c\",\"kind\":\"WorkflowDefinition\",\
         \"referenceId\":\"sample-order-approval\",\"scope\":null,\"timeRange\":null,\"activityId\":null,\
         \"metadata\":{{}}}}]}}"
    )
}

async fn studio_chat(server: &TestServer, conversation_id: Option<&str>) -> SseStream {
    let response = server
        .request(Method::POST, "/ai/chat", ALICE_KEY)
        .header("Accept", "text/event-stream")
        .header("Content-Type", "application/json; charset=utf-8")
        .body(studio_chat_body(conversation_id))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    SseStream::new(response)
}

/// Studio's `ReadString`: the first key equal ignoring case; null is absent; anything but a
/// string is the exception Studio would throw.
fn read_string(data: &Map<String, Value>, name: &str) -> Option<String> {
    let value = data
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .map(|(_, value)| value)?;
    match value {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        other => panic!("Studio would throw reading '{name}': {other}"),
    }
}

/// The first of `names` that is present, reading them in order as Studio's `??` chains do.
fn first_of(data: &Map<String, Value>, names: &[&str]) -> Option<String> {
    names.iter().find_map(|name| read_string(data, name))
}

/// A tool card as Studio's reducer fills it: id, name, status, summary.
type ToolCard = (String, String, String, Option<String>);

/// A proposal card: id, status, kind, summary, workflow definition id.
#[derive(Clone, Debug)]
struct ProposalCard {
    id: String,
    status: String,
    kind: String,
    summary: Option<String>,
    definition: Option<String>,
}

/// What Studio's reducer takes from one event, by its (trimmed, lower-cased) type.
#[derive(Debug, Default)]
struct Seen {
    deltas: String,
    tools: Vec<ToolCard>,
    proposals: Vec<ProposalCard>,
    error: Option<String>,
    completed: bool,
}

fn reduce(events: &[Value]) -> Seen {
    let mut seen = Seen::default();
    for event in events {
        let kind = event["type"].as_str().expect("type").trim().to_lowercase();
        let data = event["data"].as_object().expect("data is an object");
        match kind.as_str() {
            "assistant.delta" => {
                seen.deltas
                    .push_str(&read_string(data, "content").unwrap_or_default());
                read_string(data, "messageId").expect("deltas name their message");
            }
            "tool.started" | "tool.progress" | "tool.result" | "tool.completed" => {
                let id = first_of(data, &["toolCallId", "id"]).expect("a call id");
                let name = first_of(data, &["toolName", "name"]).expect("a tool name");
                let status = read_string(data, "status").expect("a status");
                let summary = first_of(data, &["summary", "content", "result"]);
                seen.tools.push((id, name, status, summary));
            }
            "proposal.created" | "proposal.updated" => {
                seen.proposals.push(ProposalCard {
                    id: first_of(data, &["proposalId", "id"]).expect("a proposal id"),
                    status: read_string(data, "status").expect("a status"),
                    kind: read_string(data, "kind").expect("a kind"),
                    summary: first_of(data, &["summary", "rationale", "content"]),
                    definition: first_of(
                        data,
                        &["workflowDefinitionId", "baselineWorkflowDefinitionId"],
                    ),
                });
            }
            "conversation.error" | "conversation.failed" => {
                seen.error = first_of(data, &["content", "message"]);
            }
            "conversation.completed" => seen.completed = true,
            "conversation.started" | "assistant.completed" => {}
            // Everything else goes to its activity list through `summary` or `content`.
            _ => {
                first_of(data, &["summary", "content"]);
            }
        }
    }
    seen
}

async fn events_of(stream: SseStream) -> Vec<Value> {
    stream.collect().await.iter().map(|e| e.json()).collect()
}

#[tokio::test]
async fn studios_chat_streams_fields_its_reducer_can_read() {
    let first = Script::new()
        .delta("Reading ")
        .delta("the workflow.")
        .tool_call(
            "workflow.getDefinition",
            serde_json::json!({"definitionId": "sample-order-approval"}),
        )
        // Not enabled by an administrator: refused, streamed as tool.failed.
        .tool_call(
            "workflow.proposeUpdate",
            serde_json::json!({"definitionId": "sample-order-approval", "baselineVersion": 1,
                               "operations": [], "rationale": "x"}),
        )
        .reply("It is not slow.");
    let second = Script::new().fail(AiError::unavailable(
        "provider_unavailable",
        "the model endpoint did not answer",
    ));
    let server = TestServer::start_with(
        Weaver::builder(two_tenants()).provider(Arc::new(ScriptedProvider::turns([first, second]))),
    )
    .await;

    let events = events_of(studio_chat(&server, None).await).await;
    let seen = reduce(&events);
    assert!(
        seen.deltas.starts_with("Reading the workflow.")
            && seen.deltas.ends_with("It is not slow."),
        "{}",
        seen.deltas
    );
    assert!(seen.completed, "{events:#?}");
    let statuses: Vec<(&str, &str)> = seen
        .tools
        .iter()
        .map(|(_, name, status, _)| (name.as_str(), status.as_str()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("workflow.getDefinition", "started"),
            ("workflow.getDefinition", "completed"),
            ("workflow.proposeUpdate", "started"),
        ],
        "tool.failed is not among the reducer's tool cases"
    );
    assert!(
        seen.tools
            .iter()
            .all(|(_, _, _, summary)| summary.is_some())
    );
    let failed = events
        .iter()
        .find(|e| e["type"] == "tool.failed")
        .expect("the refused call");
    let failed = failed["data"].as_object().unwrap();
    assert_eq!(read_string(failed, "status").as_deref(), Some("failed"));
    assert!(
        read_string(failed, "summary")
            .unwrap()
            .contains("proposeUpdate")
    );

    // The same conversation again, as Studio sends it: this turn fails.
    let conversation = events[0]["conversationId"].as_str().unwrap().to_owned();
    let events = events_of(studio_chat(&server, Some(&conversation)).await).await;
    let seen = reduce(&events);
    let error = seen.error.expect("a sentence for a person");
    assert!(error.contains("did not answer"), "{error}");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "conversation.failed");
    assert_eq!(last["data"]["code"], "provider_unavailable");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn proposal_events_carry_the_strings_studio_shows() {
    let server = TestServer::start(two_tenants()).await;
    let (proposal, events) = server
        .demo_proposal(ALICE_KEY, "sample-order-approval")
        .await;
    let events: Vec<Value> = events.iter().map(|e| e.json()).collect();
    let seen = reduce(&events);
    let card = seen.proposals.first().expect("proposal.created").clone();
    assert_eq!(card.id, proposal);
    assert_eq!(
        (card.status.as_str(), card.kind.as_str()),
        ("Validated", "Update")
    );
    assert!(card.summary.unwrap().contains("sample-order-approval"));
    assert_eq!(card.definition.as_deref(), Some("sample-order-approval"));
    server.shutdown().await.unwrap();
}

const STUDIO: &str = "https://studio.example.com";

#[tokio::test]
async fn under_base_path_studio_reaches_every_route_and_posts_chat_one_level_up() {
    let mut config = two_tenants();
    config.http.base_path = Some("/elsa/api/".into());
    config.http.cors_origins = vec![STUDIO.into()];
    let server = TestServer::start(config).await;

    let (status, _) = server
        .get(
            "/elsa/api/features/installed/Elsa.AI.Host.ShellFeatures.AIFeature",
            ALICE_KEY,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, capabilities) = server.get("/elsa/api/ai/capabilities", ALICE_KEY).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(capabilities["streaming"], true);
    let (status, _) = server.get("/ai/capabilities", ALICE_KEY).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "nothing is served outside base_path"
    );

    // Studio's chat URL, `new Uri("<origin>/elsa/api", "ai/chat")`, and the one under the base.
    for path in ["/elsa/ai/chat", "/elsa/api/ai/chat"] {
        let response = server
            .request(Method::POST, path, ALICE_KEY)
            .header("Origin", STUDIO)
            .header("Accept", "text/event-stream")
            .header("Content-Type", "application/json; charset=utf-8")
            .body(studio_chat_body(None))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(
            response.headers()["access-control-allow-origin"],
            STUDIO,
            "{path}"
        );
        let events = events_of(SseStream::new(response)).await;
        assert_eq!(
            events.last().unwrap()["type"],
            "conversation.completed",
            "{path}"
        );
    }

    // The browser's preflight for Studio's POST, and for an origin not configured.
    let preflight = |origin: &'static str| {
        server
            .client
            .request(Method::OPTIONS, server.url("/elsa/ai/chat"))
            .header("Origin", origin)
            .header("Access-Control-Request-Method", "POST")
            .header(
                "Access-Control-Request-Headers",
                "authorization,content-type,accept",
            )
            .send()
    };
    let allowed = preflight(STUDIO).await.unwrap();
    assert!(allowed.status().is_success(), "{}", allowed.status());
    let headers = allowed.headers();
    assert_eq!(headers["access-control-allow-origin"], STUDIO);
    let methods = headers["access-control-allow-methods"].to_str().unwrap();
    assert!(methods.contains("POST"), "{methods}");
    let allowed_headers = headers["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_lowercase();
    for needed in ["authorization", "content-type", "accept"] {
        assert!(allowed_headers.contains(needed), "{allowed_headers}");
    }
    let foreign = preflight("https://evil.example").await.unwrap();
    assert!(
        foreign
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn without_cors_origins_no_origin_is_allowed() {
    let server = TestServer::start(two_tenants()).await;
    let response = server
        .request(Method::GET, "/ai/capabilities", ALICE_KEY)
        .header("Origin", STUDIO)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
    server.shutdown().await.unwrap();
}

/// `value` is one of `allowed`, as System.Text.Json's string enum converter requires.
fn assert_enum(value: &Value, allowed: &[&str]) {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"));
    assert!(allowed.contains(&text), "{text} is none of {allowed:?}");
}

#[tokio::test]
async fn studios_discovery_requests_deserialise_into_its_records() {
    let mut config = two_tenants();
    config.http.base_path = Some("/elsa/api".into());
    let server = TestServer::start(config).await;

    // The menu: the list names the feature and the single lookup answers.
    let (status, features) = server.get("/elsa/api/features/installed", ALICE_KEY).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        features["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["fullName"] == "Elsa.AI.Host.ShellFeatures.AIFeature")
    );

    // WeaverCapabilities(bool, bool, bool, string[], {name, displayName, description}[]).
    let (status, capabilities) = server.get("/elsa/api/ai/capabilities", ALICE_KEY).await;
    assert_eq!(status, StatusCode::OK);
    for field in ["streaming", "conversationPersistence", "proposalReview"] {
        assert!(capabilities[field].is_boolean(), "{field}");
    }
    assert!(
        capabilities["supportedAttachmentKinds"]
            .as_array()
            .unwrap()
            .iter()
            .all(Value::is_string)
    );
    for agent in capabilities["agents"].as_array().unwrap() {
        for field in ["name", "displayName", "description"] {
            assert!(agent[field].is_string(), "{field}");
        }
    }

    // WeaverToolDefinition[], with and without Refit's `agent` query parameter.
    for path in [
        "/elsa/api/ai/tools",
        "/elsa/api/ai/tools?agent=instance-diagnostics",
    ] {
        let (status, tools) = server.get(path, ALICE_KEY).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        let tools = tools.as_array().expect("a top-level array");
        assert!(!tools.is_empty(), "{path}");
        for tool in tools {
            for field in ["name", "displayName", "description"] {
                assert!(tool[field].is_string(), "{field}");
            }
            assert!(tool["schema"].is_object());
            assert_enum(
                &tool["mutability"],
                &["ReadOnly", "Proposal", "Administrative"],
            );
            assert_enum(&tool["dangerLevel"], &["Low", "Medium", "High", "Critical"]);
            assert_enum(
                &tool["tenantBehavior"],
                &["TenantScoped", "HostScoped", "CrossTenantDenied"],
            );
            assert_enum(
                &tool["auditBehavior"],
                &["None", "RecordInvocation", "RecordInvocationAndResult"],
            );
            assert!(
                tool["permissions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(Value::is_string)
            );
            assert!(tool["enabledByDefault"].is_boolean() && tool["isEnabled"].is_boolean());
        }
    }
    server.shutdown().await.unwrap();
}
