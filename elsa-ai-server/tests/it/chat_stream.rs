//! Chat turns over a real socket: the SSE wire format as a browser reads it, disconnecting
//! mid-turn and resuming, the grace window, and graceful shutdown.

use std::sync::Arc;
use std::time::Duration;

use elsa_ai_scripted::{Script, ScriptedProvider};
use elsa_ai_server::Weaver;
use elsa_ai_server::config::WeaverConfig;
use elsa_ai_server::testing::{
    ALICE_KEY, BOB_KEY, GINA_KEY, SseEvent, SseStream, TestServer, two_tenants,
};
use reqwest::{Method, StatusCode};
use serde_json::json;

fn slow_script() -> Script {
    Script::new()
        .delta("one ")
        .delay(Duration::from_millis(300))
        .delta("two ")
        .delay(Duration::from_millis(300))
        .delta("three ")
        .delay(Duration::from_millis(300))
        .reply("Counted to three.")
}

async fn server_with(script: Script, config: WeaverConfig) -> TestServer {
    TestServer::start_with(
        Weaver::builder(config).provider(Arc::new(ScriptedProvider::new(script))),
    )
    .await
}

async fn resume(
    server: &TestServer,
    conversation: &str,
    last_event_id: Option<u64>,
    query: &str,
) -> SseStream {
    let mut request = server.request(
        Method::GET,
        &format!("/ai/chat/{conversation}/events{query}"),
        ALICE_KEY,
    );
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id.to_string());
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    SseStream::new(response)
}

fn sequences(events: &[SseEvent]) -> Vec<u64> {
    events.iter().map(SseEvent::sequence).collect()
}

#[tokio::test]
async fn a_turn_streams_as_server_sent_events_a_browser_can_read() {
    let server = server_with(Script::new().reply("Hello there."), two_tenants()).await;
    let response = server
        .request(Method::POST, "/ai/chat", ALICE_KEY)
        .json(&json!({"message": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let conversation = response.headers()["x-conversation-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let events = SseStream::new(response).collect().await;

    assert_eq!(events[0].event, "conversation.started");
    assert_eq!(events[0].json()["data"]["conversationId"], conversation);
    assert_eq!(
        events[0].json()["data"]["agent"],
        "workflow-author",
        "the default agent"
    );
    assert_eq!(events.last().unwrap().event, "conversation.completed");
    for event in &events {
        let data = event.json();
        assert_eq!(data["type"], event.event, "event name = type");
        assert_eq!(data["sequence"], event.sequence(), "id = sequence");
        assert_eq!(data["conversationId"], conversation);
    }
    assert_eq!(
        sequences(&events),
        (1..=events.len() as u64).collect::<Vec<_>>()
    );
    let completed = events
        .iter()
        .find(|e| e.event == "assistant.completed")
        .unwrap();
    assert_eq!(completed.json()["data"]["text"], "Hello there.");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_client_that_disconnects_mid_turn_gets_every_missed_event_exactly_once() {
    let server = server_with(slow_script(), two_tenants()).await;
    let mut stream = server.chat(ALICE_KEY, &json!({"message": "count"})).await;
    let seen = stream.until(&["assistant.delta"]).await;
    let conversation = seen[0].json()["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    let last = seen.last().unwrap().sequence();
    drop(stream); // the client goes away; the turn goes on

    tokio::time::sleep(Duration::from_millis(450)).await;
    let missed = resume(&server, &conversation, Some(last), "")
        .await
        .collect()
        .await;
    assert_eq!(
        sequences(&missed),
        (last + 1..=last + missed.len() as u64).collect::<Vec<_>>(),
        "every later event, in order, none twice"
    );
    assert_eq!(missed.last().unwrap().event, "conversation.completed");
    assert!(
        missed.iter().any(|e| e.json()["data"]["text"] == "three "),
        "events produced while nobody listened are delivered"
    );

    // The journal holds exactly what the two connections saw, and `after` works like the header.
    let everything = resume(&server, &conversation, None, "")
        .await
        .collect()
        .await;
    let joined: Vec<SseEvent> = seen.iter().chain(&missed).cloned().collect();
    assert_eq!(everything, joined);
    let tail = resume(&server, &conversation, None, &format!("?after={last}"))
        .await
        .collect()
        .await;
    assert_eq!(tail, missed);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_turn_without_a_client_for_longer_than_the_grace_window_is_cancelled() {
    let mut config = two_tenants();
    config.limits.grace_window_secs = Some(1);
    let script = Script::new()
        .delta("working ")
        .delay(Duration::from_secs(3600))
        .reply("never");
    let server = server_with(script, config).await;
    let mut stream = server.chat(ALICE_KEY, &json!({"message": "long"})).await;
    let seen = stream.until(&["assistant.delta"]).await;
    let conversation = seen[0].json()["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    drop(stream);

    tokio::time::sleep(Duration::from_millis(2500)).await;
    let rest = resume(
        &server,
        &conversation,
        Some(seen.last().unwrap().sequence()),
        "",
    )
    .await
    .collect()
    .await;
    let failed = rest.last().unwrap();
    assert_eq!(failed.event, "conversation.failed");
    assert_eq!(failed.json()["data"]["error"]["code"], "client_gone");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn shutdown_lets_a_running_turn_finish_within_the_grace_window() {
    let server = server_with(slow_script(), two_tenants()).await;
    let mut stream = server.chat(ALICE_KEY, &json!({"message": "count"})).await;
    let first = stream.next_event().await.unwrap();
    assert_eq!(first.event, "conversation.started");
    let reader = tokio::spawn(async move { stream.collect().await });
    server.shutdown().await.unwrap();
    let rest = reader.await.unwrap();
    assert_eq!(
        rest.last().unwrap().event,
        "conversation.completed",
        "the turn finished and its client got every event before the server stopped"
    );
}

#[tokio::test]
async fn shutdown_cancels_a_turn_still_running_after_the_grace_window() {
    let mut config = two_tenants();
    config.limits.grace_window_secs = Some(1);
    let script = Script::new()
        .delay(Duration::from_secs(3600))
        .reply("never");
    let server = server_with(script, config).await;
    let mut stream = server.chat(ALICE_KEY, &json!({"message": "long"})).await;
    stream.next_event().await.unwrap();
    let reader = tokio::spawn(async move { stream.collect().await });
    let started = std::time::Instant::now();
    server.shutdown().await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    let rest = reader.await.unwrap();
    let last = rest.last().unwrap();
    assert_eq!(last.event, "conversation.failed");
    assert_eq!(last.json()["data"]["error"]["code"], "host_shutdown");
}

#[tokio::test]
async fn a_person_cancels_a_running_turn_and_only_the_owner_may() {
    let script = Script::new()
        .delta("working ")
        .delay(Duration::from_secs(3600))
        .reply("never");
    let server = TestServer::start_with(Weaver::builder(two_tenants()).provider(Arc::new(
        ScriptedProvider::turns([script, Script::new().reply("next turn")]),
    )))
    .await;
    let mut stream = server.chat(ALICE_KEY, &json!({"message": "long"})).await;
    let seen = stream.until(&["assistant.delta"]).await;
    let conversation = seen[0].json()["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    let cancel = format!("/ai/chat/{conversation}/cancel");

    // Another actor of the tenant, and another tenant, see no such conversation.
    for key in [BOB_KEY, GINA_KEY] {
        let (status, body) = server.post(&cancel, key, &json!({})).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    }
    let response = server
        .request(Method::POST, &cancel, ALICE_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let rest = stream.collect().await;
    let last = rest.last().unwrap().json();
    assert_eq!(last["type"], "conversation.failed");
    assert_eq!(last["data"]["code"], "cancelled");
    assert_eq!(last["data"]["error"]["code"], "cancelled");

    let (status, body) = server.post(&cancel, ALICE_KEY, &json!({})).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("no_turn_in_progress"))
    );
    // The conversation takes the next turn.
    let next = server
        .chat(
            ALICE_KEY,
            &json!({"message": "again", "conversationId": conversation}),
        )
        .await
        .collect()
        .await;
    assert_eq!(next.last().unwrap().event, "conversation.completed");
    server.shutdown().await.unwrap();
}
