//! Clients that never read their stream, against the real `weaver` binary (SQLite): chat
//! streams whose client sends `POST /ai/chat` with a 4 KiB receive buffer and then reads
//! nothing, and clients following a long turn of another conversation
//! (`GET /ai/chat/{id}/events`) that read nothing either. Every turn streams far more than
//! the kernel and hyper buffer for a connection, so the server's writes to those clients
//! stall.
//!
//! What it shows: a well-behaved client of the same server gets its whole stream, gap-free;
//! every stalled client's turn still runs to its end and is journaled; the stalled
//! connections stay open (for less than `stalled_connection_secs`, 5 minutes by default)
//! and the server keeps answering;
//! its resident memory with the stalled clients stays within a per-connection bound of its
//! memory with none; and it does not grow while the stalled followers miss another 2 MiB of
//! events each (keeping what they miss would take 200 MiB). And a client that stops reading
//! for longer than `stalled_connection_secs` is cut off, so that its turn ends as
//! `client_gone` after the grace window instead of running on for a client that is not
//! there.

use std::net::SocketAddr;
use std::time::Duration;

use elsa_ai_server::testing::{SseEvent, SseStream};
use reqwest::StatusCode;
use serde_json::json;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use weaver_testkit::model_server::{ModelReply, ScriptedModelServer};
use weaver_testkit::process::{WeaverProcess, get, json_post, memory_kib, stalled_request};

const KEY: &str = "slow-readers-key-alice-0001";
const MODEL_KEY: &str = "sk-slow-readers-model-0001";
/// Clients that send `POST /ai/chat` and read nothing (not even the response head, until
/// their turn has ended).
const STALLED_TURNS: usize = 10;
/// Clients that follow the long turns' conversation and read nothing.
const STALLED_FOLLOWERS: usize = 100;
/// One "word" of a model reply: the scripted model streams one chunk per word, so every
/// word is one `assistant.delta` event of about 1 KiB.
const WORD_BYTES: usize = 1024;
/// Words of each stalled client's own turn (256 KiB: the server's writes stall after about
/// 100 KiB).
const TURN_WORDS: usize = 256;
/// Words of the first long turn, the one the followers attach to (1 MiB).
const LONG_WORDS: usize = 1024;
/// Words of the second long turn of the same conversation, which the stalled followers miss
/// whole (2 MiB each).
const LONGER_WORDS: usize = 2048;

fn reply_text(words: usize, tag: &str) -> String {
    (0..words)
        .map(|i| format!("{tag}{i:05}{}", "x".repeat(WORD_BYTES - tag.len() - 6)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The test's configuration: SQLite at `database`, the scripted model, alice's key, and
/// `limits` (a `[limits]` table's lines, or nothing for the defaults).
fn config(model: &ScriptedModelServer, database: &std::path::Path, limits: &str) -> String {
    format!(
        "[store]\nsqlite = {:?}\n\
         [provider]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"scripted-model\"\n\
         api_key_env = \"OPENAI_API_KEY\"\napi = \"chat\"\n\
         [[auth.api_keys]]\nkey = \"{KEY}\"\nactor = \"alice\"\ntenant = \"acme\"\n\
         permissions = [\"read:workflows\", \"read:activities\", \"admin:ai\"]\n\
         [limits]\n{limits}",
        database.display().to_string(),
        model.base_url()
    )
}

fn rss_mib(weaver: &WeaverProcess) -> f64 {
    let (rss, _) = memory_kib(weaver.pid()).expect("weaver's /proc status");
    rss as f64 / 1024.0
}

/// Weaver's resident memory once it has stopped growing: within 1 MiB over a second, or
/// after 30 s. A stalled connection's server side reaches its stall point only when its
/// stream has been polled far enough; on a loaded machine that happens late, and a reading
/// taken before it books the connection's memory to whatever comes next.
async fn settled_rss_mib(weaver: &WeaverProcess) -> f64 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut readings = vec![rss_mib(weaver)];
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        readings.push(rss_mib(weaver));
        let last = &readings[readings.len().saturating_sub(5)..];
        let spread = last.iter().cloned().fold(f64::MIN, f64::max)
            - last.iter().cloned().fold(f64::MAX, f64::min);
        if (last.len() == 5 && spread < 1.0) || tokio::time::Instant::now() >= deadline {
            return *readings.last().unwrap();
        }
    }
}

async fn chat(weaver: &WeaverProcess, message: &str) -> SseStream {
    let response = reqwest::Client::new()
        .post(format!("{}/ai/chat", weaver.base_url()))
        .header("authorization", format!("ApiKey {KEY}"))
        .json(&json!({ "message": message }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    SseStream::new(response)
}

/// The conversation's whole journal, read by a client that reads.
async fn journal(weaver: &WeaverProcess, conversation: &str) -> Vec<SseEvent> {
    let response = reqwest::Client::new()
        .get(format!(
            "{}/ai/chat/{conversation}/events",
            weaver.base_url()
        ))
        .header("authorization", format!("ApiKey {KEY}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    SseStream::new(response).collect().await
}

/// A whole turn's stream: gap-free from 1 (or from `first`), ending `conversation.completed`,
/// with `words` deltas.
fn assert_whole(events: &[SseEvent], first: u64, words: usize) {
    let sequences: Vec<u64> = events.iter().map(SseEvent::sequence).collect();
    assert_eq!(
        sequences,
        (first..first + sequences.len() as u64).collect::<Vec<_>>(),
        "gap-free"
    );
    assert_eq!(events.last().unwrap().event, "conversation.completed");
    let deltas = events
        .iter()
        .filter(|e| e.event == "assistant.delta")
        .count();
    assert_eq!(deltas, words, "one delta per word");
}

/// The response head a stalled client finally reads: its `x-conversation-id`. Reading it
/// takes a few KiB off the connection; the rest stays unread.
async fn conversation_of(connection: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut buffer = [0; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = tokio::time::timeout(Duration::from_secs(30), connection.read(&mut buffer))
            .await
            .expect("the response head arrives")
            .unwrap();
        assert!(read > 0, "the server closed a stalled connection");
        head.extend_from_slice(&buffer[..read]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    head.lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("x-conversation-id")
                .then(|| value.trim().to_owned())
        })
        .expect("an x-conversation-id header")
}

/// Waits until the model server has received `count` requests.
async fn model_requests(model: &ScriptedModelServer, count: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while model.model_requests().len() < count {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the model was not asked"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_never_read_their_stream_keep_server_memory_bounded() {
    let model = ScriptedModelServer::start([]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let weaver = WeaverProcess::start(
        env!("CARGO_BIN_EXE_weaver").as_ref(),
        dir.path(),
        &config(&model, &dir.path().join("weaver.db"), ""),
        &[("OPENAI_API_KEY", MODEL_KEY)],
    )
    .await;
    let address: SocketAddr = weaver.address();
    let authorization = format!("ApiKey {KEY}");
    let idle = rss_mib(&weaver);

    // The work of a stalled client, read whole: the server's memory with no stalled client.
    model.push([ModelReply::Text(reply_text(TURN_WORDS, "w"))]);
    let events = chat(&weaver, "warm up").await.collect().await;
    assert_whole(&events, 1, TURN_WORDS);
    let unstalled = settled_rss_mib(&weaver).await;

    // Clients that send their turn and read nothing; each turn is the model's next reply.
    let mut stalled_turns = Vec::new();
    for i in 0..STALLED_TURNS {
        model.push([ModelReply::Text(reply_text(TURN_WORDS, "s"))]);
        let asked = model.model_requests().len() + 1;
        let body = json!({ "message": format!("never read {i}") }).to_string();
        let request = json_post(address, "/ai/chat", &authorization, &body);
        stalled_turns.push(stalled_request(address, &request).await.unwrap());
        model_requests(&model, asked).await;
    }

    // A well-behaved client's long turn, paced so that the followers attach while it runs.
    model.push([ModelReply::Paced {
        text: reply_text(LONG_WORDS, "p"),
        pause: Duration::from_millis(2),
    }]);
    let mut reader = chat(&weaver, "the long one").await;
    let started = reader.next_event().await.unwrap();
    assert_eq!(started.event, "conversation.started");
    let conversation = started.json()["data"]["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut followers = Vec::new();
    for _ in 0..STALLED_FOLLOWERS {
        let path = format!("/ai/chat/{conversation}/events?after=0");
        let request = get(address, &path, &authorization);
        followers.push(stalled_request(address, &request).await.unwrap());
    }
    let mut events = vec![started];
    events.extend(reader.collect().await);
    assert_whole(&events, 1, LONG_WORDS);
    let long_turn_events = events.len() as u64;

    // Every stalled client's turn ran to its end and is in the journal.
    let mut conversations = Vec::new();
    for connection in &mut stalled_turns {
        conversations.push(conversation_of(connection).await);
    }
    for id in &conversations {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let events = journal(&weaver, id).await;
            if events.last().map(|e| e.event.as_str()) == Some("conversation.completed") {
                assert_whole(&events, 1, TURN_WORDS);
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "a stalled client's turn did not end"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let stalled = settled_rss_mib(&weaver).await;

    // The next turn of the followed conversation: the followers miss all of it.
    model.push([ModelReply::Text(reply_text(LONGER_WORDS, "q"))]);
    let response = reqwest::Client::new()
        .post(format!("{}/ai/chat", weaver.base_url()))
        .header("authorization", &authorization)
        .json(&json!({ "message": "and more", "conversationId": conversation }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let events = SseStream::new(response).collect().await;
    assert_whole(&events, long_turn_events + 1, LONGER_WORDS);
    let missed = settled_rss_mib(&weaver).await;

    // The server keeps answering, and keeps every stalled connection open.
    model.push([ModelReply::Text("still here".into())]);
    assert_whole(&chat(&weaver, "and now?").await.collect().await, 1, 2);
    let mut open = 0;
    for connection in followers.iter_mut().chain(&mut stalled_turns) {
        let mut byte = [0; 1];
        // Data waiting (or nothing yet) means open; end of stream or an error means closed.
        match tokio::time::timeout(Duration::from_millis(1), connection.peek(&mut byte)).await {
            Ok(Ok(0) | Err(_)) => {}
            Ok(Ok(_)) | Err(_) => open += 1,
        }
    }
    let stalled_connections = STALLED_TURNS + STALLED_FOLLOWERS;
    println!(
        "weaver RSS: idle {idle:.1} MiB; after a turn read whole {unstalled:.1} MiB; with \
         {stalled_connections} stalled connections {stalled:.1} MiB; after they missed \
         another turn {missed:.1} MiB"
    );
    let status = std::fs::read_to_string(format!("/proc/{}/status", weaver.pid())).unwrap();
    println!(
        "{}",
        status
            .lines()
            .filter(|l| l.starts_with("Rss"))
            .collect::<Vec<_>>()
            .join("; ")
    );
    assert_eq!(open, stalled_connections, "stalled connections stay open");

    // What a stalled connection may hold: what hyper buffers before it stops pulling the
    // stream (16 chunks), the journal batch its stream read and has not sent (up to 256
    // events of 1 KiB), its conversation's live buffer (256 events, for a stalled turn of
    // its own), and the connection's own state: well under 1 MiB. The debug build measured
    // about 2.2 MiB per stalled connection (the allocator keeps what the concurrent journal
    // reads of the followers used); 3 MiB each is the bound. This bounds the cost per
    // connection; the check after it is the one a leak fails.
    let bound = 64.0 + 3.0 * stalled_connections as f64;
    assert!(
        stalled - unstalled < bound,
        "with {stalled_connections} stalled clients weaver grew from {unstalled:.1} to \
         {stalled:.1} MiB (bound {bound:.0} MiB more)"
    );
    // Missing events costs nothing: keeping them would take 2 MiB per follower, 200 MiB in
    // all; the turn itself (the reply kept in the conversation, its audit record, the
    // allocator) measured under 20 MiB.
    assert!(
        missed - stalled < 64.0,
        "while {STALLED_FOLLOWERS} stalled followers missed a 2 MiB turn weaver grew from \
         {stalled:.1} to {missed:.1} MiB"
    );

    // Once the stalled clients go, the server is whole.
    drop(followers);
    drop(stalled_turns);
    model.push([ModelReply::Text("after them".into())]);
    assert_whole(&chat(&weaver, "after them").await.collect().await, 1, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_cut_off_and_its_turn_ends_as_client_gone() {
    // A 30-second turn of 1 KiB deltas: far more than the connection buffers.
    let model = ScriptedModelServer::start([ModelReply::Paced {
        text: reply_text(3000, "s"),
        pause: Duration::from_millis(10),
    }])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let weaver = WeaverProcess::start(
        env!("CARGO_BIN_EXE_weaver").as_ref(),
        dir.path(),
        &config(
            &model,
            &dir.path().join("weaver.db"),
            "stalled_connection_secs = 2\ngrace_window_secs = 1\n",
        ),
        &[("OPENAI_API_KEY", MODEL_KEY)],
    )
    .await;
    let address = weaver.address();
    let authorization = format!("ApiKey {KEY}");
    let body = json!({ "message": "never read" }).to_string();
    let request = json_post(address, "/ai/chat", &authorization, &body);
    let mut stalled = stalled_request(address, &request).await.unwrap();
    let conversation = conversation_of(&mut stalled).await;

    // Cut off after about 2 s of unread data, gone for the 1 s grace window: the turn ends
    // as client_gone long before its 30 s of text would have. Watched through the audit
    // trail: a client reading the stream would count as attached.
    let audit = format!("/ai/audit?conversationId={conversation}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let ended = loop {
        let records = weaver.get_json(&audit, &authorization).await;
        let ended = records["items"].as_array().and_then(|items| {
            items
                .iter()
                .find(|r| r["action"] == "turn.failed" || r["action"] == "turn.completed")
                .cloned()
        });
        if let Some(ended) = ended {
            break ended;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the turn still runs for a client that stopped reading"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(ended["action"], "turn.failed", "{ended}");
    assert_eq!(ended["details"]["error"]["code"], "client_gone", "{ended}");
    let events = journal(&weaver, &conversation).await;
    let last = events.last().unwrap().json();
    assert_eq!(last["type"], "conversation.failed", "{last}");
    assert_eq!(last["data"]["code"], "client_gone", "{last}");

    // The server closed the connection: what was buffered reads out, then the end (or a
    // reset).
    let mut buffer = vec![0; 64 * 1024];
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match stalled.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the stalled connection is still open");
}
