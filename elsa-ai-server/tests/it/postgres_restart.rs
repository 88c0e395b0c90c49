//! The `weaver` binary on a PostgreSQL server that is stopped and started again under load:
//! concurrent HTTP clients run chat turns and change a tool's enablement (both write audit
//! records) while the server is down for about two seconds. During the outage requests are
//! refused with 503 `store_unavailable` (never a 500, never a hang, never a crash); afterwards
//! the same weaver process serves again, and every action that was acknowledged has its
//! audit record. The PostgreSQL server is a private one the test starts itself
//! ([`PrivateServer`]), never the shared test server.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use elsa_ai_server::testing::SseStream;
use elsa_ai_store::testing::postgres::PrivateServer;
use reqwest::StatusCode;
use serde_json::{Value, json};
use weaver_testkit::process::WeaverProcess;

const KEY: &str = "pg-restart-key-alice-0001";
const TOOL: &str = "workflow.proposeUpdate";
/// The lease of a turn's claim: a claim that could not be released while PostgreSQL was
/// down lapses after it, and a client resuming that turn's stream waits that long. Short, so
/// the test runs in seconds (the default is 30 s).
const LEASE_SECS: u64 = 2;
/// Longer than any answer may take: a request still unanswered then is a hang.
const SANE: Duration = Duration::from_secs(30);

/// What the clients saw.
#[derive(Default)]
struct Seen {
    /// Turns answered 200: (conversation, message, the terminal event its stream ended with).
    turns: Vec<(String, String, Option<String>)>,
    /// Turns answered 200 whose stream ended before a terminal event (its journal could not
    /// be read): (index in `turns`, the last sequence received), resumed after the restart.
    cut: Vec<(usize, u64)>,
    /// Enablement changes answered 200.
    changes: usize,
    /// Refusals: (status, code).
    refused: Vec<(u16, String)>,
    /// Anything else: a hang, a dropped connection, a stream that ended without a terminal
    /// event.
    broken: Vec<String>,
}

fn config(url: &str) -> String {
    format!(
        "[store]\npostgres = {url:?}\n[provider]\nkind = \"demo\"\n\
         [[auth.api_keys]]\nkey = \"{KEY}\"\nactor = \"alice\"\ntenant = \"acme\"\n\
         permissions = [\"read:workflows\", \"read:activities\", \"admin:ai\"]\n\
         [limits]\nturn_lease_secs = {LEASE_SECS}\n"
    )
}

async fn refusal(response: reqwest::Response) -> (u16, String) {
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    (status, body["code"].as_str().unwrap_or("").to_owned())
}

/// One chat turn, recorded in `seen`.
async fn chat(client: &reqwest::Client, base: &str, message: String, seen: &Mutex<Seen>) {
    let sent = client
        .post(format!("{base}/ai/chat"))
        .header("authorization", format!("ApiKey {KEY}"))
        .json(&json!({ "message": message }))
        .send()
        .await;
    let response = match sent {
        Ok(response) => response,
        Err(error) => return seen.lock().unwrap().broken.push(format!("chat: {error}")),
    };
    if response.status() != StatusCode::OK {
        let refused = refusal(response).await;
        return seen.lock().unwrap().refused.push(refused);
    }
    // The conversation is named before any event (the stream may end before its first).
    let conversation = response
        .headers()
        .get("x-conversation-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Ok(events) = tokio::time::timeout(SANE, SseStream::new(response).collect()).await else {
        return seen
            .lock()
            .unwrap()
            .broken
            .push("a chat stream hung".into());
    };
    let Some(conversation) = conversation else {
        return seen
            .lock()
            .unwrap()
            .broken
            .push("a stream without its conversation".into());
    };
    let mut seen = seen.lock().unwrap();
    let Some(last) = events.last() else {
        // The journal was unreadable before the first event reached the client.
        let cut = (seen.turns.len(), 0);
        seen.turns.push((conversation, message, None));
        return seen.cut.push(cut);
    };
    if matches!(
        last.event.as_str(),
        "conversation.completed" | "conversation.failed"
    ) {
        seen.turns
            .push((conversation, message, Some(last.event.clone())));
    } else {
        // The journal became unreadable mid-turn: the client resumes from here later.
        let cut = (seen.turns.len(), last.sequence());
        seen.turns.push((conversation, message, None));
        seen.cut.push(cut);
    }
}

/// Resumes a cut stream: the terminal event it ends with, if the journal has one.
async fn resume(base: &str, conversation: &str, after: u64) -> Option<String> {
    // No overall timeout on the client: a stream that does not end within SANE fails below.
    let response = reqwest::Client::new()
        .get(format!(
            "{base}/ai/chat/{conversation}/events?after={after}"
        ))
        .header("authorization", format!("ApiKey {KEY}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let events = tokio::time::timeout(SANE, SseStream::new(response).collect())
        .await
        .expect("a resumed stream ends");
    if let Some(first) = events.first() {
        assert_eq!(first.sequence(), after + 1, "resumed where it was cut");
    }
    events
        .last()
        .map(|e| e.event.clone())
        .filter(|e| e == "conversation.completed" || e == "conversation.failed")
}

/// One enablement change, recorded in `seen`.
async fn change(client: &reqwest::Client, base: &str, enabled: bool, seen: &Mutex<Seen>) {
    let sent = client
        .put(format!("{base}/ai/admin/tools/{TOOL}/enablement"))
        .header("authorization", format!("ApiKey {KEY}"))
        .json(&json!({ "enabled": enabled }))
        .send()
        .await;
    match sent {
        Ok(response) if response.status() == StatusCode::OK => seen.lock().unwrap().changes += 1,
        Ok(response) => {
            let refused = refusal(response).await;
            seen.lock().unwrap().refused.push(refused);
        }
        Err(error) => seen
            .lock()
            .unwrap()
            .broken
            .push(format!("enablement: {error}")),
    }
}

/// The tenant's whole audit trail.
async fn trail(client: &reqwest::Client, base: &str) -> Vec<Value> {
    let mut items = Vec::new();
    loop {
        let page: Value = client
            .get(format!("{base}/ai/audit?limit=500&offset={}", items.len()))
            .header("authorization", format!("ApiKey {KEY}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let page = page["items"].as_array().unwrap().clone();
        if page.is_empty() {
            return items;
        }
        items.extend(page);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weaver_on_a_restarted_postgres_refuses_with_503_and_loses_no_acknowledged_record() {
    let server = tokio::task::spawn_blocking(PrivateServer::start)
        .await
        .unwrap()
        .expect("a private PostgreSQL server");
    let server = Arc::new(server);
    let dir = tempfile::tempdir().unwrap();
    let mut weaver = WeaverProcess::start(
        env!("CARGO_BIN_EXE_weaver").as_ref(),
        dir.path(),
        &config(&server.url()),
        &[],
    )
    .await;
    let base = weaver.base_url();
    let client = reqwest::Client::builder().timeout(SANE).build().unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    chat(&client, &base, "before the load".into(), &seen).await;
    assert_eq!(seen.lock().unwrap().turns.len(), 1, "a healthy turn");

    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..8)
        .map(|i| {
            let (client, base, seen, stop) =
                (client.clone(), base.clone(), seen.clone(), stop.clone());
            tokio::spawn(async move {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    if i < 6 {
                        chat(&client, &base, format!("client {i} turn {n}"), &seen).await;
                    } else {
                        change(&client, &base, n % 2 == 0, &seen).await;
                    }
                    if !seen.lock().unwrap().refused.is_empty() {
                        // Do not hammer a store that is down.
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            })
        })
        .collect();

    let deadline = tokio::time::Instant::now() + SANE;
    while seen.lock().unwrap().turns.len() < 10 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the clients were running turns"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = seen.lock().unwrap().turns.len();
    let restarting = server.clone();
    tokio::task::spawn_blocking(move || {
        restarting.stop().expect("PostgreSQL stops");
        std::thread::sleep(Duration::from_secs(2));
        restarting.start_again().expect("PostgreSQL starts again");
    })
    .await
    .unwrap();
    let restarted = seen.lock().unwrap().turns.len();
    // The same weaver process reconnects and serves turns again.
    let deadline = tokio::time::Instant::now() + SANE;
    while seen.lock().unwrap().turns.len() < restarted + 30 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "weaver serves turns again after the restart"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.await.unwrap();
    }
    assert!(weaver.running(), "weaver did not end");

    let mut seen = std::mem::take(&mut *seen.lock().unwrap());
    // Streams cut while the journal was unreachable resume once it is back.
    let resuming = std::time::Instant::now();
    let resumed = futures::future::join_all(
        seen.cut
            .iter()
            .map(|(index, after)| resume(&base, &seen.turns[*index].0, *after)),
    )
    .await;
    for ((index, _), ended) in seen.cut.clone().into_iter().zip(resumed) {
        seen.turns[index].2 = ended;
    }
    println!("cut streams resumed in {:?}", resuming.elapsed());
    let unterminated = seen.turns.iter().filter(|t| t.2.is_none()).count();
    println!(
        "{} turns ({} before the restart, {} streams cut and resumed, {} without a journaled \
         end), {} enablement changes acknowledged; {} refused",
        seen.turns.len(),
        before,
        seen.cut.len(),
        unterminated,
        seen.changes,
        seen.refused.len()
    );
    assert!(seen.broken.is_empty(), "{:#?}", seen.broken);
    assert_eq!(
        unterminated, 0,
        "every accepted turn's stream ends with a journaled end, the outage notwithstanding"
    );
    assert!(
        !seen.refused.is_empty(),
        "requests were refused while PostgreSQL was down"
    );
    let unexpected: Vec<_> = seen
        .refused
        .iter()
        .filter(|(status, code)| (*status, code.as_str()) != (503, "store_unavailable"))
        .collect();
    assert!(unexpected.is_empty(), "outage answers: {unexpected:?}");

    // Every acknowledged action has its audit record.
    let trail = trail(&client, &base).await;
    let mut actions: BTreeMap<(String, String), Vec<Value>> = BTreeMap::new();
    for record in &trail {
        let conversation = record["conversationId"].as_str().unwrap_or("").to_owned();
        let action = record["action"].as_str().unwrap().to_owned();
        actions
            .entry((conversation, action))
            .or_default()
            .push(record["details"].clone());
    }
    let recorded = |conversation: &str, action: &str| {
        actions
            .get(&(conversation.to_owned(), action.to_owned()))
            .cloned()
            .unwrap_or_default()
    };
    let mut conversations = BTreeSet::new();
    for (conversation, message, ended) in &seen.turns {
        assert!(
            conversations.insert(conversation),
            "one turn per conversation"
        );
        let prompts = recorded(conversation, "prompt.submitted");
        assert_eq!(
            prompts.len(),
            1,
            "the accepted turn '{message}' has its prompt record"
        );
        assert_eq!(prompts[0]["message"], json!(message));
        let ended = match ended.as_deref() {
            Some("conversation.completed") => "turn.completed",
            Some(_) => "turn.failed",
            None => unreachable!("every turn ended, as asserted above"),
        };
        assert_eq!(
            recorded(conversation, ended).len(),
            1,
            "the turn '{message}' that streamed its end has its {ended} record"
        );
    }
    let changes = trail
        .iter()
        .filter(|r| r["action"] == "tool.enablement_changed" && r["toolName"] == TOOL)
        .count();
    let refused_changes_at_most = seen.refused.len();
    assert!(
        changes >= seen.changes && changes <= seen.changes + refused_changes_at_most,
        "{} enablement changes acknowledged, {changes} recorded",
        seen.changes
    );
    // The cut turns' conversations are free: nothing of those turns holds them (their claims were
    // released once PostgreSQL was back).
    for (index, _) in &seen.cut {
        let response = client
            .post(format!("{base}/ai/chat"))
            .header("authorization", format!("ApiKey {KEY}"))
            .json(&json!({ "message": "again", "conversationId": seen.turns[*index].0 }))
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            StatusCode::OK,
            "a cut turn's conversation takes a new turn"
        );
        let events = SseStream::new(response).collect().await;
        assert_eq!(events.last().unwrap().event, "conversation.completed");
    }
}
