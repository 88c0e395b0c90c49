//! Resumable streams: a turn runs independently of its client; a client that reconnects
//! from its last sequence gets the rest exactly once and in order; a client that never
//! comes back makes the turn stop after the grace window. Time is tokio's paused clock, so
//! nothing here waits for real.

use std::sync::Arc;
use std::time::Duration;

use elsa_ai_abstractions::{AiOrchestrator, AiStreamEventType as T, AuditAction};
use elsa_ai_host::OrchestratorSettings;
use elsa_ai_host::testing::chat::{
    ChatHarness, assert_gap_free, collect, of_type, sequences, types,
};
use elsa_ai_host::testing::governance::{TEST_TENANT, TestTool, read_tool};
use elsa_ai_scripted::Script;
use futures::StreamExt;
use serde_json::json;

fn settings(grace: Duration) -> OrchestratorSettings {
    OrchestratorSettings {
        grace_window: grace,
        ..OrchestratorSettings::default()
    }
}

/// A slow turn: text, a pause, more text, a pause, the reply.
fn slow_script() -> Script {
    Script::new()
        .delta("one ")
        .delay(Duration::from_secs(10))
        .delta("two ")
        .delay(Duration::from_secs(10))
        .reply("three")
}

#[tokio::test(start_paused = true)]
async fn a_client_that_reconnects_inside_the_grace_window_gets_the_rest_exactly_once() {
    let harness = ChatHarness::builder()
        .settings(settings(Duration::from_secs(30)))
        .script(slow_script())
        .build();
    let mut stream = harness
        .orchestrator
        .execute_chat(harness.request("go"))
        .await
        .unwrap();
    let conversation = stream.conversation_id.clone();
    let mut seen = Vec::new();
    while let Some(event) = stream.events.next().await {
        let delta = event.event_type == T::AssistantDelta;
        seen.push(event);
        if delta {
            break;
        }
    }
    drop(stream); // The client goes away mid-turn.
    tokio::time::sleep(Duration::from_secs(15)).await;

    assert!(
        harness
            .journal
            .events(&conversation, &harness.caller().tenant_id)
            .iter()
            .all(|e| !e.event_type.is_terminal()),
        "the turn went on without its client and is still running"
    );
    let last = seen.last().unwrap().sequence;
    let resumed = collect(
        harness
            .orchestrator
            .resume(&harness.caller(), &conversation, last)
            .await
            .unwrap(),
    )
    .await;
    assert_gap_free(&resumed, last + 1);
    seen.extend(resumed);
    assert_gap_free(&seen, 1);
    assert_eq!(seen.last().unwrap().event_type, T::ConversationCompleted);
    assert_eq!(
        seen.len() as u64,
        harness
            .journal
            .events(&conversation, &harness.caller().tenant_id)
            .len() as u64
    );
    let texts: Vec<&str> = of_type(&seen, T::AssistantDelta)
        .iter()
        .filter_map(|e| e.data["text"].as_str())
        .collect();
    assert_eq!(texts, ["one ", "two ", "three"]);
}

#[tokio::test(start_paused = true)]
async fn a_client_that_never_returns_cancels_the_turn_after_the_grace_window() {
    let sleeper = Arc::new(TestTool::sleeping(
        read_tool("demo.slow"),
        Duration::from_secs(3600),
    ));
    let harness = ChatHarness::builder()
        .settings(settings(Duration::from_secs(30)))
        .tool(sleeper.clone())
        .script(
            Script::new()
                .tool_call_with_id("c1", "demo.slow", json!({}))
                .reply("never"),
        )
        .build();
    let mut stream = harness
        .orchestrator
        .execute_chat(harness.request("go"))
        .await
        .unwrap();
    let conversation = stream.conversation_id.clone();
    let started = stream.events.next().await.unwrap();
    assert_eq!(started.event_type, T::ConversationStarted);
    drop(stream);

    let before = tokio::time::Instant::now();
    tokio::time::sleep(Duration::from_secs(29)).await;
    let running = harness
        .journal
        .events(&conversation, &harness.caller().tenant_id);
    assert!(
        running.iter().all(|e| !e.event_type.is_terminal()),
        "still running inside the window"
    );
    // The window runs out at 30 s; the running tool sees the cancellation at once.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        harness
            .journal
            .events(&conversation, &harness.caller().tenant_id)
            .last()
            .map(|e| e.event_type),
        Some(T::ConversationFailed),
        "cancelled as soon as the window ran out"
    );
    let events = collect(
        harness
            .orchestrator
            .resume(&harness.caller(), &conversation, 0)
            .await
            .unwrap(),
    )
    .await;
    assert_gap_free(&events, 1);
    assert_eq!(
        types(&events),
        [
            T::ConversationStarted,
            T::ToolStarted,
            T::ToolFailed,
            T::ConversationFailed
        ]
    );
    let failed = events.last().unwrap();
    assert_eq!(failed.data["error"]["code"], "client_gone");
    let cancelled_at = failed.timestamp;
    assert!(cancelled_at >= started.timestamp);
    assert_eq!(sleeper.calls(), 1);
    assert!(
        sleeper.last_context().unwrap().cancellation.is_cancelled(),
        "the running tool saw the cancellation"
    );
    assert_eq!(before.elapsed(), Duration::from_secs(31));
    let audit = harness.audit.events(&TEST_TENANT.into());
    let turn_failed = audit
        .iter()
        .find(|e| e.action == AuditAction::TURN_FAILED)
        .unwrap();
    assert_eq!(turn_failed.details["error"]["code"], "client_gone");
    // The conversation is free for the next turn.
    let mut again = harness.request("again");
    again.conversation_id = Some(conversation);
    assert!(harness.orchestrator.execute_chat(again).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn any_attached_client_keeps_the_turn_alive() {
    let harness = ChatHarness::builder()
        .settings(settings(Duration::from_secs(5)))
        .script(slow_script())
        .build();
    let stream = harness
        .orchestrator
        .execute_chat(harness.request("go"))
        .await
        .unwrap();
    let conversation = stream.conversation_id.clone();
    // A second client (another tab) follows from the start, then the first one leaves.
    let watcher = harness
        .orchestrator
        .resume(&harness.caller(), &conversation, 0)
        .await
        .unwrap();
    drop(stream);
    let events = collect(watcher).await;
    assert_gap_free(&events, 1);
    assert_eq!(events.last().unwrap().event_type, T::ConversationCompleted);
}

#[tokio::test(start_paused = true)]
async fn reconnecting_just_before_the_window_ends_restarts_it() {
    let harness = ChatHarness::builder()
        .settings(settings(Duration::from_secs(8)))
        .script(slow_script())
        .build();
    let stream = harness
        .orchestrator
        .execute_chat(harness.request("go"))
        .await
        .unwrap();
    let conversation = stream.conversation_id.clone();
    drop(stream);
    // Away for 7 s, back for a moment, away again for 7 s, then back for good: never 8 s in
    // a row, so the 20 s turn completes.
    tokio::time::sleep(Duration::from_secs(7)).await;
    let peek = harness
        .orchestrator
        .resume(&harness.caller(), &conversation, 0)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
    drop(peek);
    tokio::time::sleep(Duration::from_secs(7)).await;
    let events = collect(
        harness
            .orchestrator
            .resume(&harness.caller(), &conversation, 0)
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(events.last().unwrap().event_type, T::ConversationCompleted);
}

#[tokio::test(start_paused = true)]
async fn a_client_too_slow_for_the_live_buffer_catches_up_from_the_journal() {
    // A pause (the client catches up and follows live), then a burst far larger than the
    // live buffer while the client does not read.
    let mut script = Script::new().delay(Duration::from_secs(1));
    for i in 0..200 {
        script = script.delta(format!("{i} "));
    }
    let harness = ChatHarness::builder()
        .settings(OrchestratorSettings {
            live_buffer: 2,
            replay_batch: 7,
            ..settings(Duration::from_secs(30))
        })
        .script(script.message("done"))
        .build();
    let mut stream = harness
        .orchestrator
        .execute_chat(harness.request("go"))
        .await
        .unwrap();
    let first = stream.events.next().await.unwrap();
    let waiting = tokio::time::timeout(Duration::from_millis(100), stream.events.next()).await;
    assert!(
        waiting.is_err(),
        "the client is following live when the burst starts"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut events = vec![first];
    events.extend(stream.events.collect::<Vec<_>>().await);
    assert_gap_free(&events, 1);
    assert_eq!(events.len(), 1 + 200 + 1 + 1);
    assert_eq!(events.last().unwrap().event_type, T::ConversationCompleted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_at_any_point_of_a_running_turn_yields_a_contiguous_tail() {
    let mut script = Script::new();
    for i in 0..300 {
        script = script.delta(format!("{i} "));
        if i % 10 == 0 {
            script = script.delay(Duration::from_millis(1));
        }
    }
    let harness = Arc::new(
        ChatHarness::builder()
            .settings(OrchestratorSettings {
                live_buffer: 8,
                ..settings(Duration::from_secs(30))
            })
            .script(script.message("done"))
            .build(),
    );
    let stream = harness
        .orchestrator
        .execute_chat(harness.request("go"))
        .await
        .unwrap();
    let conversation = stream.conversation_id.clone();
    let mut readers = Vec::new();
    for after in (0..300).step_by(15) {
        let harness = harness.clone();
        let conversation = conversation.clone();
        readers.push(tokio::spawn(async move {
            // Join at different moments of the turn.
            tokio::time::sleep(Duration::from_micros(after * 50)).await;
            let events = collect(
                harness
                    .orchestrator
                    .resume(&harness.caller(), &conversation, after)
                    .await
                    .unwrap(),
            )
            .await;
            (after, events)
        }));
    }
    let all = collect(stream).await;
    assert_gap_free(&all, 1);
    for reader in readers {
        let (after, events) = reader.await.unwrap();
        assert_gap_free(&events, after + 1);
        assert_eq!(
            events.last().map(|e| e.event_type),
            Some(T::ConversationCompleted)
        );
        assert_eq!(
            events.last().unwrap().sequence,
            all.last().unwrap().sequence
        );
    }
}

#[tokio::test]
async fn resuming_a_finished_conversation_replays_it_and_ends() {
    let harness = ChatHarness::builder()
        .script(Script::new().reply("hello there"))
        .build();
    let first = harness.run(harness.request("one")).await;
    let conversation = first[0].conversation_id.clone();
    let mut again = harness.request("two");
    again.conversation_id = Some(conversation.clone());
    let second = harness.run(again).await;
    let caller = harness.caller();
    let replay = collect(
        harness
            .orchestrator
            .resume(&caller, &conversation, 0)
            .await
            .unwrap(),
    )
    .await;
    let mut both = first.clone();
    both.extend(second.clone());
    assert_eq!(replay, both, "both turns, as they were streamed");
    let tail = collect(
        harness
            .orchestrator
            .resume(&caller, &conversation, first.len() as u64)
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(sequences(&tail), sequences(&second));
    let beyond = collect(
        harness
            .orchestrator
            .resume(&caller, &conversation, 10_000)
            .await
            .unwrap(),
    )
    .await;
    assert!(beyond.is_empty());
}
