//! The chat orchestrator: turns, continuation, ownership, agents, refusals before the
//! stream, tool events, redaction and proposal events.

use std::sync::Arc;
use std::time::Duration;

use elsa_ai_abstractions::{
    AiChatRequest, AiContextAttachment, AiError, AiOrchestrator, AiProviderEvent,
    AiProviderToolInvocation, AiStreamEventType as T, AiToolError, AiToolMessage, AiToolResult,
    AttachmentKind, AuditAction, AuditOutcome, ConversationId, MessageRole, Permission,
};
use elsa_ai_host::testing::chat::{
    ChatHarness, Played, PlayedProvider, REGISTERED_SECRET, assert_gap_free, caller_with, collect,
    of_type, types,
};
use elsa_ai_host::testing::governance::{TEST_AGENT, TEST_TENANT, TestTool, read_tool};
use elsa_ai_host::{REDACTED, WORKFLOW_AUTHOR, instance_diagnostics};
use elsa_ai_scripted::{Script, ScriptStep, ScriptedProvider};
use serde_json::json;

fn lookup_tool() -> Arc<TestTool> {
    Arc::new(TestTool::returning(
        read_tool("demo.lookup"),
        json!({"definitionId": "orders", "name": "Order fulfilment"}),
    ))
}

fn lookup_script() -> Script {
    Script::new()
        .delta("Let me look. ")
        .tool_call_with_id("call-1", "demo.lookup", json!({"id": "orders"}))
        .computed(|turn| {
            let name = turn
                .result_of("demo.lookup")
                .and_then(|r| r.content["name"].as_str().map(str::to_owned))
                .unwrap_or_default();
            ScriptStep::reply(format!("The workflow is called {name}."))
        })
}

#[tokio::test]
async fn a_turn_runs_its_tool_through_the_governor_and_streams_every_event_in_order() {
    let tool = lookup_tool();
    let harness = ChatHarness::builder()
        .tool(tool.clone())
        .script(lookup_script())
        .build();
    let events = harness
        .run(harness.request("What is the orders workflow?"))
        .await;

    assert_gap_free(&events, 1);
    assert_eq!(events[0].event_type, T::ConversationStarted);
    let conversation = events[0].conversation_id.clone();
    assert_eq!(events[0].data["conversationId"], conversation.as_str());
    assert_eq!(events[0].data["agent"], TEST_AGENT);
    assert!(events.iter().all(|e| e.conversation_id == conversation));
    let kinds = types(&events);
    let position = |t: T| kinds.iter().position(|k| *k == t).unwrap();
    assert!(position(T::AssistantDelta) < position(T::ToolStarted));
    assert!(position(T::ToolStarted) < position(T::ToolCompleted));
    assert!(position(T::ToolCompleted) < position(T::AssistantCompleted));
    assert_eq!(kinds.last(), Some(&T::ConversationCompleted));
    assert_eq!(
        of_type(&events, T::ToolStarted).len(),
        1,
        "one start per call id"
    );
    assert_eq!(
        of_type(&events, T::ToolCompleted).len(),
        1,
        "one end per call id"
    );
    let completed = of_type(&events, T::ToolCompleted)[0];
    assert_eq!(completed.data["callId"], "call-1");
    assert_eq!(completed.data["result"]["name"], "Order fulfilment");
    assert_eq!(
        of_type(&events, T::AssistantCompleted)[0].data["text"],
        "The workflow is called Order fulfilment."
    );
    assert_eq!(tool.calls(), 1, "the governor ran the tool once");
    let context = tool.last_context().unwrap();
    assert_eq!(context.conversation_id, Some(conversation.clone()));

    let stored = harness
        .orchestrator
        .conversations()
        .find(&conversation, &TEST_TENANT.into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.owner_id, "alice");
    assert_eq!(stored.agent, TEST_AGENT);
    let roles: Vec<MessageRole> = stored.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [MessageRole::User, MessageRole::Tool, MessageRole::Assistant]
    );
    // The tool call is stored with the result the model read.
    let call = AiToolMessage::from_message(&stored.messages[1]).unwrap();
    assert_eq!(
        (call.call_id.as_str(), call.tool_name.as_str()),
        ("call-1", "demo.lookup")
    );
    assert_eq!(call.arguments, serde_json::json!({"id": "orders"}));
    assert_eq!(call.result["content"]["name"], "Order fulfilment");
    assert_eq!(
        stored.messages[2].content,
        "The workflow is called Order fulfilment."
    );

    let actions: Vec<String> = harness
        .audit
        .events(&TEST_TENANT.into())
        .iter()
        .map(|e| e.action.as_str().to_owned())
        .collect();
    assert_eq!(
        actions,
        [
            "session.created",
            "prompt.submitted",
            "tool.invoked",
            "turn.completed"
        ]
    );
    let turns = harness.provider.turns();
    assert_eq!(turns.len(), 1);
    let offered: Vec<&str> = turns[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        offered,
        ["demo.lookup"],
        "the authorized tool set of the test agent"
    );
}

#[tokio::test]
async fn a_continued_conversation_reuses_its_session_and_numbers_on() {
    let harness = ChatHarness::builder()
        .tool(lookup_tool())
        .script(lookup_script())
        .build();
    let first = harness.run(harness.request("First question")).await;
    let conversation = first[0].conversation_id.clone();
    let mut again = harness.request("Second question");
    again.conversation_id = Some(conversation.clone());
    again.agent = None;
    let second = harness.run(again).await;

    assert_gap_free(&second, first.len() as u64 + 1);
    assert_eq!(second[0].event_type, T::ConversationStarted);
    assert_eq!(
        second[0].data["agent"], TEST_AGENT,
        "the conversation keeps its agent"
    );
    assert_eq!(second.last().unwrap().event_type, T::ConversationCompleted);
    assert_eq!(
        harness.provider.sessions().len(),
        1,
        "one session per conversation"
    );
    let turns = harness.provider.turns();
    assert_eq!(turns[0].session, turns[1].session);
    let history: Vec<(MessageRole, &str)> = turns[1]
        .history
        .iter()
        .map(|m| (m.role, m.content.as_str()))
        .collect();
    assert_eq!(history.len(), 3, "{history:?}");
    assert_eq!(history[0], (MessageRole::User, "First question"));
    assert_eq!(
        history[1].0,
        MessageRole::Tool,
        "the first turn's tool call"
    );
    assert_eq!(
        history[2],
        (
            MessageRole::Assistant,
            "The workflow is called Order fulfilment."
        )
    );
    let stored = harness
        .orchestrator
        .conversations()
        .find(&conversation, &TEST_TENANT.into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.messages.len(),
        6,
        "each turn: question, tool call, reply"
    );
    assert_eq!(stored.title, "First question");
}

#[tokio::test]
async fn only_the_owner_may_continue_or_resume_a_conversation() {
    let harness = ChatHarness::builder()
        .script(Script::new().reply("ok"))
        .build();
    let events = harness.run(harness.request("mine")).await;
    let conversation = events[0].conversation_id.clone();
    let unknown = ConversationId::new("no-such-conversation");

    let continue_as = |caller, id: &ConversationId| AiChatRequest {
        caller,
        conversation_id: Some(id.clone()),
        agent: None,
        message: "hello".into(),
        attachments: Vec::new(),
    };
    let bob = caller_with("bob", TEST_TENANT, &[Permission::READ_WORKFLOWS]);
    let other_tenant = caller_with("alice", "globex", &[Permission::READ_WORKFLOWS]);
    let expected = harness
        .refused(continue_as(harness.caller(), &unknown))
        .await;
    assert_eq!(
        (expected.status(), expected.code()),
        (404, "conversation_not_found")
    );
    for stranger in [bob, other_tenant] {
        let error = harness
            .refused(continue_as(stranger.clone(), &conversation))
            .await;
        assert_eq!(
            (error.status(), error.code()),
            (404, "conversation_not_found")
        );
        assert_eq!(
            error
                .message()
                .replace(conversation.as_str(), unknown.as_str()),
            expected.message(),
            "a stranger cannot tell an existing conversation from a missing one"
        );
        let resumed = harness
            .orchestrator
            .resume(&stranger, &conversation, 0)
            .await;
        assert_eq!(resumed.unwrap_err().code(), "conversation_not_found");
    }
    let stored = harness
        .orchestrator
        .conversations()
        .find(&conversation, &TEST_TENANT.into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.messages.len(),
        2,
        "nothing was written by the strangers"
    );
}

#[tokio::test]
async fn agents_are_resolved_before_anything_streams() {
    let mut disabled = instance_diagnostics();
    disabled.name = "night-shift".into();
    disabled.enabled = false;
    let harness = ChatHarness::builder()
        .agent(disabled)
        .script(Script::new().reply("ok"))
        .build();

    let mut default_agent = harness.request("hi");
    default_agent.agent = None;
    let events = harness.run(default_agent).await;
    assert_eq!(events[0].data["agent"], WORKFLOW_AUTHOR);

    let mut unknown = harness.request("hi");
    unknown.agent = Some("ghost".into());
    let error = harness.refused(unknown).await;
    assert_eq!((error.status(), error.code()), (404, "agent_not_found"));
    let mut off = harness.request("hi");
    off.agent = Some("night-shift".into());
    let error = harness.refused(off).await;
    assert_eq!((error.status(), error.code()), (403, "agent_disabled"));

    let mut other = harness.request("hi");
    other.conversation_id = Some(events[0].conversation_id.clone());
    other.agent = Some(TEST_AGENT.into());
    let error = harness.refused(other).await;
    assert_eq!((error.status(), error.code()), (400, "agent_mismatch"));
    assert_eq!(
        harness.provider.turns().len(),
        1,
        "refused turns never reach the provider"
    );
}

#[tokio::test]
async fn malformed_messages_are_refused_with_statuses() {
    let harness = ChatHarness::builder().build();
    let error = harness.refused(harness.request("   ")).await;
    assert_eq!((error.status(), error.code()), (400, "empty_message"));
    let huge = "x".repeat(harness.orchestrator.settings().max_message_bytes + 1);
    assert_eq!(harness.refused(harness.request(&huge)).await.status(), 413);
    let mut crowded = harness.request("hi");
    crowded.attachments = (0..=harness.orchestrator.settings().max_attachments)
        .map(|i| AiContextAttachment::new(AttachmentKind::TimeRange, format!("w{i}")))
        .collect();
    assert_eq!(
        harness.refused(crowded).await.code(),
        "too_many_attachments"
    );
    let mut anonymous = harness.request("hi");
    anonymous.caller.actor_id = String::new();
    assert_eq!(harness.refused(anonymous).await.status(), 401);
    assert!(harness.conversations.is_empty());
    assert!(harness.audit.is_empty());
}

#[tokio::test]
async fn an_unavailable_provider_is_a_503_before_anything_is_stored() {
    let provider = ScriptedProvider::new(Script::new()).failing_sessions(AiError::unavailable(
        "runtime_unavailable",
        "the runtime is down",
    ));
    let harness = ChatHarness::builder().provider(Arc::new(provider)).build();
    let error = harness.refused(harness.request("hi")).await;
    assert_eq!((error.status(), error.code()), (503, "runtime_unavailable"));
    assert!(harness.conversations.is_empty());
    assert!(harness.audit.is_empty(), "no prompt was submitted");
    assert_eq!(harness.journal.conversations(), 0);
    // The conversation was not claimed: the next attempt is not a 409.
    assert_eq!(harness.refused(harness.request("hi")).await.status(), 503);
}

#[tokio::test]
async fn an_attachment_kind_the_agent_does_not_allow_is_refused_and_audited() {
    let harness = ChatHarness::builder().build();
    let mut request = harness.request("diagnose");
    request.agent = Some(WORKFLOW_AUTHOR.into());
    request.attachments = vec![AiContextAttachment::new(
        AttachmentKind::WorkflowInstance,
        "i-1",
    )];
    let error = harness.refused(request).await;
    assert_eq!(
        (error.status(), error.code()),
        (400, "unsupported_attachment")
    );
    let audit = harness.audit.events(&TEST_TENANT.into());
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].action, AuditAction::CONTEXT_DENIED);
    assert_eq!(audit[0].outcome, AuditOutcome::Denied);
    assert!(harness.conversations.is_empty());
}

#[tokio::test]
async fn a_failing_provider_ends_the_stream_with_conversation_failed() {
    let harness = ChatHarness::builder()
        .script(
            Script::new()
                .delta("Thinking")
                .fail(AiError::unavailable("model_overloaded", "try again later")),
        )
        .build();
    let events = harness.run(harness.request("hi")).await;
    assert_eq!(
        types(&events),
        [
            T::ConversationStarted,
            T::AssistantDelta,
            T::ConversationFailed
        ]
    );
    let failed = events.last().unwrap();
    assert_eq!(failed.data["error"]["code"], "model_overloaded");
    assert_eq!(failed.data["error"]["status"], 503);
    let audit = harness.audit.events(&TEST_TENANT.into());
    assert_eq!(audit.last().unwrap().action, AuditAction::TURN_FAILED);
    let stored = harness
        .orchestrator
        .conversations()
        .find(&events[0].conversation_id, &TEST_TENANT.into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.messages.len(),
        1,
        "only the user's message; no reply was completed"
    );
}

#[tokio::test(start_paused = true)]
async fn a_second_turn_while_one_runs_is_a_409() {
    let harness = ChatHarness::builder()
        .script(Script::new().delay(Duration::from_secs(5)).reply("done"))
        .build();
    let stream = harness
        .orchestrator
        .execute_chat(harness.request("one"))
        .await
        .unwrap();
    let mut again = harness.request("two");
    again.conversation_id = Some(stream.conversation_id.clone());
    let error = harness.refused(again.clone()).await;
    assert_eq!((error.status(), error.code()), (409, "turn_in_progress"));
    let first = collect(stream).await;
    assert_eq!(first.last().unwrap().event_type, T::ConversationCompleted);
    let second = harness.run(again).await;
    assert_gap_free(&second, first.len() as u64 + 1);
}

/// A client that has seen a turn's terminal event may start the next turn at once: the
/// conversation is free before anyone can see the event (on a runtime whose turn task runs on
/// another thread than the client, as in a server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_turn_may_start_as_soon_as_the_terminal_event_is_seen() {
    let harness = ChatHarness::builder()
        .script(Script::new().delta("a").reply("b"))
        .build();
    let first = harness.run(harness.request("turn 0")).await;
    let conversation = first[0].conversation_id.clone();
    let mut seen = first.len() as u64;
    for turn in 1..300 {
        let mut next = harness.request(&format!("turn {turn}"));
        next.conversation_id = Some(conversation.clone());
        let stream = harness
            .orchestrator
            .execute_chat(next)
            .await
            .unwrap_or_else(|e| panic!("turn {turn}: {} {}", e.code(), e.message()));
        let events = collect(stream).await;
        assert_gap_free(&events, seen + 1);
        assert_eq!(events.last().unwrap().event_type, T::ConversationCompleted);
        seen += events.len() as u64;
    }
}

#[tokio::test]
async fn secrets_never_reach_the_stream_the_audit_trail_the_store_or_the_provider() {
    let secret_tool = Arc::new(TestTool::returning(
        read_tool("demo.lookup"),
        json!({"name": "Orders", "connectionString": "Server=db;Password=db-pass-1"}),
    ));
    let script = Script::new()
        .tool_call_with_id(
            "call-1",
            "demo.lookup",
            json!({"id": "orders", "apiKey": "arg-api-key-2", "note": format!("uses {REGISTERED_SECRET}")}),
        )
        .computed(|turn| {
            ScriptStep::reply(format!("Tool said: {}", turn.last_result().unwrap().content))
        });
    let harness = ChatHarness::builder()
        .tool(secret_tool.clone())
        .script(script)
        .build();
    let message = format!("Connect with password=hunter2-secret and key {REGISTERED_SECRET}");
    let events = harness.run(harness.request(&message)).await;
    assert_eq!(events.last().unwrap().event_type, T::ConversationCompleted);

    let secrets = [
        "hunter2-secret",
        REGISTERED_SECRET,
        "db-pass-1",
        "arg-api-key-2",
    ];
    let stream = serde_json::to_string(&events).unwrap();
    let audit = serde_json::to_string(&harness.audit.events(&TEST_TENANT.into())).unwrap();
    let stored = serde_json::to_string(
        &harness
            .orchestrator
            .conversations()
            .find(&events[0].conversation_id, &TEST_TENANT.into())
            .await
            .unwrap(),
    )
    .unwrap();
    let turns = harness.provider.turns();
    let provider_saw = format!("{} {:?}", turns[0].message, turns[0].history);
    for secret in secrets {
        for (place, text) in [
            ("stream", &stream),
            ("audit", &audit),
            ("store", &stored),
            ("provider", &provider_saw),
        ] {
            assert!(
                !text.contains(secret),
                "{secret} leaked into the {place}: {text}"
            );
        }
    }
    assert!(turns[0].message.contains(REDACTED));
    assert!(audit.contains("prompt.submitted") && audit.contains(REDACTED));
    let started = of_type(&events, T::ToolStarted)[0];
    assert_eq!(started.data["arguments"]["apiKey"], REDACTED);
    assert_eq!(started.data["arguments"]["id"], "orders");
    // The tool itself got the redacted arguments, as governance step 8 requires.
    assert_eq!(
        secret_tool.last_context().unwrap().arguments["apiKey"],
        REDACTED
    );
}

#[tokio::test]
async fn what_a_provider_reports_of_calls_outside_the_invoker_is_redacted() {
    // Calls the governor never saw: their arguments, results and errors come from the
    // provider and are redacted before the stream has them.
    let played = vec![
        Played::Event(AiProviderEvent::ToolStarted {
            call_id: "remote".into(),
            tool_name: "demo.remote".into(),
            arguments: json!({"apiKey": "k-123", "id": "x"}),
        }),
        Played::Event(AiProviderEvent::ToolCompleted {
            call_id: "remote".into(),
            tool_name: "demo.remote".into(),
            result: AiToolResult::success(json!({"token": "t-456", "rows": 2})),
        }),
        Played::Event(AiProviderEvent::ToolFailed {
            call_id: "Bearer abcdef123456".into(),
            tool_name: "demo.remote".into(),
            error: AiToolError {
                code: "remote_failed".into(),
                status: 502,
                message: "login failed: Password=hunter2;".into(),
            },
        }),
        Played::Event(AiProviderEvent::Completed),
    ];
    let harness = ChatHarness::builder()
        .provider(Arc::new(PlayedProvider::new(played)))
        .build();
    let events = harness.run(harness.request("go")).await;
    let started = of_type(&events, T::ToolStarted);
    assert_eq!(started[0].data["arguments"]["apiKey"], REDACTED);
    assert_eq!(started[0].data["arguments"]["id"], "x");
    let completed = of_type(&events, T::ToolCompleted)[0];
    assert_eq!(completed.data["result"]["token"], REDACTED);
    assert_eq!(completed.data["result"]["rows"], 2);
    let failed = of_type(&events, T::ToolFailed)[0];
    assert_eq!(failed.data["callId"], "Bearer [REDACTED]");
    assert_eq!(
        failed.data["error"]["message"],
        "login failed: Password=[REDACTED];"
    );
    for event in &events {
        let text = event.data.to_string();
        for secret in ["k-123", "t-456", "abcdef123456", "hunter2"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }
}

#[tokio::test]
async fn each_call_id_has_one_start_and_one_end_whoever_reports_it() {
    // The provider reports everything itself as well as going through the invoker, fails a
    // call outside the invoker, and leaves a call open.
    let invocation = AiProviderToolInvocation {
        call_id: "governed".into(),
        tool_name: "demo.lookup".into(),
        arguments: json!({"id": "x"}),
    };
    let played = vec![
        Played::Event(AiProviderEvent::ToolStarted {
            call_id: "governed".into(),
            tool_name: "demo.lookup".into(),
            arguments: json!({"id": "x"}),
        }),
        Played::Invoke(invocation),
        Played::Event(AiProviderEvent::ToolStarted {
            call_id: "governed".into(),
            tool_name: "demo.lookup".into(),
            arguments: json!({"id": "x"}),
        }),
        Played::Event(AiProviderEvent::ToolCompleted {
            call_id: "governed".into(),
            tool_name: "demo.lookup".into(),
            result: AiToolResult::success(json!({"provider": "copy"})),
        }),
        Played::Event(AiProviderEvent::ToolFailed {
            call_id: "outside".into(),
            tool_name: "demo.remote".into(),
            error: AiToolError {
                code: "remote_failed".into(),
                status: 502,
                message: "the remote tool failed".into(),
            },
        }),
        Played::Event(AiProviderEvent::ToolStarted {
            call_id: "open".into(),
            tool_name: "demo.lookup".into(),
            arguments: json!({}),
        }),
        Played::Event(AiProviderEvent::ToolProgress {
            call_id: "open".into(),
            message: "halfway".into(),
        }),
        Played::Event(AiProviderEvent::AssistantDelta {
            text: "Done".into(),
        }),
        Played::Event(AiProviderEvent::Completed),
    ];
    let harness = ChatHarness::builder()
        .tool(lookup_tool())
        .provider(Arc::new(PlayedProvider::new(played)))
        .build();
    let events = harness.run(harness.request("go")).await;
    assert_gap_free(&events, 1);
    let for_call = |id: &str| -> Vec<T> {
        events
            .iter()
            .filter(|e| e.data["callId"] == id)
            .map(|e| e.event_type)
            .collect()
    };
    assert_eq!(for_call("governed"), [T::ToolStarted, T::ToolCompleted]);
    let governed = of_type(&events, T::ToolCompleted)[0];
    assert_eq!(
        governed.data["result"]["name"], "Order fulfilment",
        "the governor's report wins"
    );
    assert_eq!(for_call("outside"), [T::ToolStarted, T::ToolFailed]);
    assert_eq!(
        for_call("open"),
        [T::ToolStarted, T::ToolProgress, T::ToolFailed]
    );
    let closed = events
        .iter()
        .rev()
        .find(|e| e.data["callId"] == "open")
        .unwrap();
    assert_eq!(closed.data["error"]["code"], "tool_call_unfinished");
    // Text that was streamed but never completed is completed for the client.
    let kinds = types(&events);
    assert_eq!(
        &kinds[kinds.len() - 2..],
        [T::AssistantCompleted, T::ConversationCompleted]
    );
}

#[tokio::test]
async fn a_refused_tool_call_streams_one_start_and_one_denial() {
    let harness = ChatHarness::builder()
        .tool(lookup_tool())
        .script(
            Script::new()
                .tool_call_with_id("c1", "instance.get", json!({"id": "i-1"}))
                .reply("I may not."),
        )
        .build();
    let events = harness.run(harness.request("go")).await;
    assert_eq!(of_type(&events, T::ToolStarted).len(), 1);
    let failed = of_type(&events, T::ToolFailed);
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].data["outcome"], "Denied");
    assert!(of_type(&events, T::ToolCompleted).is_empty());
    let audit = harness.audit.events(&TEST_TENANT.into());
    assert!(audit.iter().any(|e| e.action == AuditAction::TOOL_DENIED));
}

#[tokio::test]
async fn a_panicking_provider_fails_the_turn_and_frees_the_conversation() {
    let harness = ChatHarness::builder()
        .provider(Arc::new(PlayedProvider::new(vec![
            Played::Event(AiProviderEvent::AssistantDelta { text: "a".into() }),
            Played::Panic,
        ])))
        .build();
    let events = harness.run(harness.request("go")).await;
    assert_eq!(
        types(&events),
        [
            T::ConversationStarted,
            T::AssistantDelta,
            T::ConversationFailed
        ]
    );
    assert_eq!(events[2].data["error"]["code"], "turn_panicked");
    let mut again = harness.request("again");
    again.conversation_id = Some(events[0].conversation_id.clone());
    let second = harness.run(again).await;
    assert_gap_free(&second, 4);
}

#[tokio::test]
async fn a_provider_stream_that_just_ends_fails_the_turn() {
    let harness = ChatHarness::builder()
        .provider(Arc::new(PlayedProvider::new(vec![Played::Event(
            AiProviderEvent::AssistantMessage {
                text: "partial".into(),
            },
        )])))
        .build();
    let events = harness.run(harness.request("go")).await;
    assert_eq!(events.last().unwrap().event_type, T::ConversationFailed);
    assert_eq!(
        events.last().unwrap().data["error"]["code"],
        "provider_stream_ended"
    );
}

#[tokio::test(start_paused = true)]
async fn proposal_events_join_the_stream_of_their_conversation_only() {
    let harness = ChatHarness::builder()
        .script(
            Script::new()
                .delta("a")
                .delay(Duration::from_secs(1))
                .reply("done"),
        )
        .build();
    let stream = harness
        .orchestrator
        .execute_chat(harness.request("propose"))
        .await
        .unwrap();
    let conversation = stream.conversation_id.clone();
    let publisher = harness.orchestrator.events();
    let published = publisher
        .publish(
            &TEST_TENANT.into(),
            &conversation,
            T::ProposalCreated,
            json!({"proposalId": "p-1", "rationale": format!("uses {REGISTERED_SECRET}")}),
        )
        .await
        .unwrap();
    let events = collect(stream).await;
    assert_gap_free(&events, 1);
    let proposal = of_type(&events, T::ProposalCreated);
    assert_eq!(proposal.len(), 1);
    assert_eq!(proposal[0].sequence, published.sequence);
    assert_eq!(proposal[0].data["rationale"], format!("uses {REDACTED}"));

    let cross = publisher
        .publish(
            &"globex".into(),
            &conversation,
            T::ProposalUpdated,
            json!({}),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (cross.status(), cross.code()),
        (404, "conversation_not_found")
    );
    let forged = publisher
        .publish(
            &TEST_TENANT.into(),
            &conversation,
            T::ConversationCompleted,
            json!({}),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (forged.status(), forged.code()),
        (400, "event_type_not_publishable")
    );
    // After the turn, an update still lands in the journal for clients that resume.
    let update = publisher
        .publish(
            &TEST_TENANT.into(),
            &conversation,
            T::ProposalUpdated,
            json!({"status": "Approved"}),
        )
        .await
        .unwrap();
    assert_eq!(update.sequence, events.len() as u64 + 1);
    let resumed = collect(
        harness
            .orchestrator
            .resume(&harness.caller(), &conversation, events.len() as u64)
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(types(&resumed), [T::ProposalUpdated]);
}

#[tokio::test(start_paused = true)]
async fn shutdown_cancels_running_turns_and_refuses_new_ones() {
    let harness = ChatHarness::builder()
        .script(
            Script::new()
                .delay(Duration::from_secs(3600))
                .reply("never"),
        )
        .build();
    let stream = harness
        .orchestrator
        .execute_chat(harness.request("long"))
        .await
        .unwrap();
    harness.orchestrator.shutdown().await;
    let events = collect(stream).await;
    assert_eq!(events.last().unwrap().event_type, T::ConversationFailed);
    assert_eq!(
        events.last().unwrap().data["error"]["code"],
        "host_shutdown"
    );
    let error = harness.refused(harness.request("new")).await;
    assert_eq!((error.status(), error.code()), (503, "shutting_down"));
}

#[tokio::test(start_paused = true)]
async fn drain_lets_running_turns_finish_within_the_grace_and_cancels_the_rest() {
    let harness = ChatHarness::builder()
        .provider(Arc::new(ScriptedProvider::directed(|turn| {
            let seconds = if turn.message == "short" { 5 } else { 3600 };
            Script::new()
                .delay(Duration::from_secs(seconds))
                .reply("finished")
        })))
        .build();
    let short = harness
        .orchestrator
        .execute_chat(harness.request("short"))
        .await
        .unwrap();
    let long = harness
        .orchestrator
        .execute_chat(harness.request("long"))
        .await
        .unwrap();
    let drain = tokio::spawn({
        let orchestrator = harness.orchestrator.clone();
        async move { orchestrator.drain(Duration::from_secs(30)).await }
    });
    tokio::task::yield_now().await;
    let error = harness.refused(harness.request("new")).await;
    assert_eq!((error.status(), error.code()), (503, "shutting_down"));

    let short = collect(short).await;
    assert_eq!(short.last().unwrap().event_type, T::ConversationCompleted);
    let long = collect(long).await;
    assert_eq!(long.last().unwrap().event_type, T::ConversationFailed);
    assert_eq!(long.last().unwrap().data["error"]["code"], "host_shutdown");
    assert_eq!(drain.await.unwrap(), 1, "only the long turn was cancelled");
}

#[tokio::test]
async fn a_reply_that_cannot_be_audited_fails_the_turn() {
    let harness = ChatHarness::builder()
        .audit(Arc::new(
            elsa_ai_host::testing::governance::FailingAuditSink,
        ))
        .script(Script::new().reply("hi"))
        .build();
    let error = harness.refused(harness.request("hi")).await;
    assert_eq!((error.status(), error.code()), (500, "audit_failed"));
    assert!(
        harness.conversations.is_empty(),
        "nothing proceeds unaudited"
    );
    assert_eq!(
        harness.provider.closed(),
        1,
        "the session opened for it is closed again"
    );
}
