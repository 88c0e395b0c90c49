//! Several real `weaver` processes on one store: two replicas on one PostgreSQL (a client
//! follows on B a turn running on A, live and exactly once; B refuses a parallel turn; A is
//! killed with SIGKILL mid-turn and B closes the turn with `replica_lost`; the conversation
//! goes on on B; a turn running on A is cancelled through B, and by its heartbeat when the
//! notice was lost), and one process on SQLite killed mid-turn and started again.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use elsa_ai_server::testing::{SseEvent, SseStream};
use elsa_ai_store::testing::postgres::TestDatabase;
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Connection;
use weaver_testkit::model_server::{ModelReply, ScriptedModelServer};
use weaver_testkit::process::WeaverProcess;

const KEY: &str = "replica-test-key-alice-0001";
const MODEL_KEY: &str = "sk-replica-model-key-0001";
/// The lease of a turn claim (and the grace window): short, so the test runs in seconds.
const LEASE_SECS: u64 = 2;

/// The configuration every process shares: the store `store` names (a `[store]` line), the
/// scripted model, alice's key, a lease and grace window of `lease_secs`.
fn config(store: &str, model: &ScriptedModelServer, lease_secs: u64) -> String {
    format!(
        "[store]\n{store}\n\
         [provider]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"scripted-model\"\n\
         api_key_env = \"OPENAI_API_KEY\"\napi = \"chat\"\n\
         [[auth.api_keys]]\nkey = \"{KEY}\"\nactor = \"alice\"\ntenant = \"acme\"\n\
         permissions = [\"read:workflows\", \"read:activities\", \"admin:ai\"]\n\
         [limits]\ngrace_window_secs = {lease_secs}\nturn_lease_secs = {lease_secs}\n",
        model.base_url()
    )
}

/// One `weaver` process serving `config` from `dir` on a free port.
struct Replica {
    process: WeaverProcess,
}

impl Replica {
    async fn start(dir: &Path, config: &str) -> Self {
        let process = WeaverProcess::start(
            env!("CARGO_BIN_EXE_weaver").as_ref(),
            dir,
            config,
            &[("OPENAI_API_KEY", MODEL_KEY)],
        )
        .await;
        Self { process }
    }

    async fn get_json(&self, path: &str) -> Value {
        reqwest::Client::new()
            .get(format!("{}{path}", self.process.base_url()))
            .header("authorization", format!("ApiKey {KEY}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// `POST /ai/chat`: the status and, when it streams, the stream.
    async fn chat(&self, body: Value) -> (StatusCode, Option<SseStream>, Value) {
        let response = reqwest::Client::new()
            .post(format!("{}/ai/chat", self.process.base_url()))
            .header("authorization", format!("ApiKey {KEY}"))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        if status == StatusCode::OK {
            (status, Some(SseStream::new(response)), Value::Null)
        } else {
            (status, None, response.json().await.unwrap_or(Value::Null))
        }
    }

    /// `POST /ai/chat/{conversation}/cancel`: the status and the body.
    async fn cancel(&self, conversation: &str) -> (StatusCode, Value) {
        let response = reqwest::Client::new()
            .post(format!(
                "{}/ai/chat/{conversation}/cancel",
                self.process.base_url()
            ))
            .header("authorization", format!("ApiKey {KEY}"))
            .send()
            .await
            .unwrap();
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// `DELETE /ai/conversations/{conversation}`: the status.
    async fn delete(&self, conversation: &str) -> StatusCode {
        reqwest::Client::new()
            .delete(format!(
                "{}/ai/conversations/{conversation}",
                self.process.base_url()
            ))
            .header("authorization", format!("ApiKey {KEY}"))
            .send()
            .await
            .unwrap()
            .status()
    }

    /// The status of a replay of the conversation's stream.
    async fn replay_status(&self, conversation: &str) -> StatusCode {
        reqwest::Client::new()
            .get(format!(
                "{}/ai/chat/{conversation}/events",
                self.process.base_url()
            ))
            .header("authorization", format!("ApiKey {KEY}"))
            .send()
            .await
            .unwrap()
            .status()
    }

    /// The conversation's stream from after `after`.
    async fn resume(&self, conversation: &str, after: u64) -> SseStream {
        let response = reqwest::Client::new()
            .get(format!(
                "{}/ai/chat/{conversation}/events?after={after}",
                self.process.base_url()
            ))
            .header("authorization", format!("ApiKey {KEY}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        SseStream::new(response)
    }

    /// SIGKILL: the process ends at once, nothing is flushed or released.
    fn kill_9(self) {
        self.process.kill();
    }
}

/// A turn whose answer streams for a while: a governed tool call, then `words` words, each
/// `pause` after the last.
fn paced_turn(words: usize, pause: Duration) -> [ModelReply; 2] {
    [
        ModelReply::ToolCall {
            name: "workflow_getDefinition".into(),
            arguments: json!({"definitionId": "sample-order-approval"}),
        },
        ModelReply::Paced {
            text: (0..words)
                .map(|n| format!("word{n}"))
                .collect::<Vec<_>>()
                .join(" "),
            pause,
        },
    ]
}

fn sequences(events: &[SseEvent]) -> Vec<u64> {
    events.iter().map(SseEvent::sequence).collect()
}

/// Reads the whole journal through `replica` and checks it is gap-free from 1, with each
/// turn (from `conversation.started`) ended by exactly one terminal event before the next.
async fn gap_free_journal(replica: &Replica, conversation: &str) -> Vec<SseEvent> {
    let journal = replica.resume(conversation, 0).await.collect().await;
    let expected: Vec<u64> = (1..=journal.len() as u64).collect();
    assert_eq!(sequences(&journal), expected, "{journal:#?}");
    let mut open = false;
    for event in &journal {
        match event.event.as_str() {
            "conversation.started" => {
                assert!(
                    !open,
                    "a turn started before the last one ended: {journal:#?}"
                );
                open = true;
            }
            "conversation.completed" | "conversation.failed" => {
                assert!(open, "a terminal event without its turn: {journal:#?}");
                open = false;
            }
            _ => {}
        }
    }
    assert!(!open, "the last turn never ended: {journal:#?}");
    journal
}

/// `count` replicas of one configuration (the scripted model, a lease of `lease_secs`) on
/// a fresh PostgreSQL database, each serving from a directory of its own.
struct OnPostgres {
    // Dropped in this order: the processes end before their directories and the database go.
    replicas: Vec<Replica>,
    _dirs: Vec<tempfile::TempDir>,
    database: TestDatabase,
}

impl OnPostgres {
    async fn start(model: &ScriptedModelServer, lease_secs: u64, count: usize) -> Self {
        let database = TestDatabase::create().await;
        let config = config(
            &format!("postgres = \"{}\"", database.url()),
            model,
            lease_secs,
        );
        let dirs: Vec<tempfile::TempDir> =
            (0..count).map(|_| tempfile::tempdir().unwrap()).collect();
        let mut replicas = Vec::with_capacity(count);
        for dir in &dirs {
            replicas.push(Replica::start(dir.path(), &config).await);
        }
        Self {
            replicas,
            _dirs: dirs,
            database,
        }
    }
}

/// Starts a new conversation's turn on `replica` and reads its stream up to the first of
/// `until`: the stream, the events read and the conversation's id.
async fn turn_until(
    replica: &Replica,
    message: &str,
    until: &[&str],
) -> (SseStream, Vec<SseEvent>, String) {
    let (status, stream, body) = replica.chat(json!({ "message": message })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut stream = stream.unwrap();
    let seen = stream.until(until).await;
    let conversation = seen[0].json()["data"]["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    (stream, seen, conversation)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_one_postgres_share_streams_and_turn_claims_and_survive_a_kill_9() {
    let model = ScriptedModelServer::start(paced_turn(16, Duration::from_millis(250)))
        .await
        .unwrap();
    let mut cluster = OnPostgres::start(&model, LEASE_SECS, 2).await;
    let (b, a) = (
        cluster.replicas.pop().unwrap(),
        cluster.replicas.pop().unwrap(),
    );

    // A turn on A; its client leaves once the turn streams, and a client follows it on B.
    let (on_a, seen_on_a, conversation) =
        turn_until(&a, "What does it do?", &["tool.completed"]).await;
    drop(on_a);
    let resumed_at = seen_on_a.last().unwrap().sequence();
    let mut on_b = b.resume(&conversation, resumed_at).await;

    // While it runs, B refuses a second turn in the conversation.
    let first_live = on_b.next_event().await.unwrap();
    let (status, _, body) = b
        .chat(json!({"conversationId": conversation, "message": "And now?"}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["code"], "turn_in_progress");

    // B's client gets every later event live, once each, in order, up to the turn's end:
    // the turn outlives A's grace window because B's client counts as attached.
    let mut live = vec![first_live];
    let mut arrivals = vec![Instant::now()];
    while let Some(event) = on_b.next_event().await {
        live.push(event);
        arrivals.push(Instant::now());
    }
    let names: Vec<&str> = live.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names.last(), Some(&"conversation.completed"), "{live:#?}");
    let deltas = names.iter().filter(|n| **n == "assistant.delta").count();
    assert!(deltas >= 16, "{names:?}");
    // Live, not replayed at the end: the deltas arrived spread over the turn (paced 250 ms).
    let spread = arrivals.last().unwrap().duration_since(arrivals[0]);
    assert!(spread >= Duration::from_secs(2), "{spread:?}");
    let journal = gap_free_journal(&a, &conversation).await;
    assert_eq!(
        sequences(&live),
        sequences(&journal[resumed_at as usize..]),
        "exactly the journal after the resume point"
    );
    assert_eq!(live, journal[resumed_at as usize..].to_vec());

    // The conversation goes on on B: the model gets the first turn's tool call and result
    // (stored as messages), and the provider session A opened continues (no new one).
    model.push([ModelReply::Text("Second answer.".into())]);
    let (status, stream, body) = b
        .chat(json!({"conversationId": conversation, "message": "Thanks; and then?"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let second = stream.unwrap().collect().await;
    assert_eq!(
        second.last().unwrap().event,
        "conversation.completed",
        "{second:#?}"
    );
    let asked = model.model_requests().pop().unwrap();
    let results = asked.tool_messages();
    assert!(
        results.len() == 1 && results[0].contains("sample-order-approval"),
        "the first turn's tool result reaches the model on B: {results:?}"
    );
    assert_eq!(
        asked.messages_with_role("user").first().map(String::as_str),
        Some("What does it do?")
    );
    let audit = b
        .get_json(&format!(
            "/ai/audit?conversationId={conversation}&limit=500"
        ))
        .await;
    let sessions: Vec<&Value> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|record| record["action"] == "session.created")
        .collect();
    assert_eq!(sessions.len(), 1, "one provider session: {sessions:#?}");

    // A third turn on A, killed with SIGKILL mid-turn: B closes it with replica_lost within
    // the lease plus the grace window, and the journal stays gap-free.
    model.push(paced_turn(40, Duration::from_millis(250)));
    let (status, stream, body) = a
        .chat(json!({"conversationId": conversation, "message": "Once more"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut on_a = stream.unwrap();
    let before_kill = on_a.until(&["assistant.delta"]).await;
    let mut on_b = b
        .resume(&conversation, before_kill.last().unwrap().sequence())
        .await;
    a.kill_9();
    let killed = Instant::now();
    let rest = tokio::time::timeout(Duration::from_secs(30), async {
        let mut rest = Vec::new();
        while let Some(event) = on_b.next_event().await {
            rest.push(event);
        }
        rest
    })
    .await
    .expect("B ends the lost turn");
    let closed_after = killed.elapsed();
    let failed = rest.last().unwrap();
    assert_eq!(failed.event, "conversation.failed", "{rest:#?}");
    assert_eq!(failed.json()["data"]["code"], "replica_lost", "{failed:?}");
    let bound = Duration::from_secs(2 * LEASE_SECS) + Duration::from_secs(2);
    assert!(
        closed_after <= bound,
        "closed {closed_after:?} after the kill; lease plus grace (plus 2 s) is {bound:?}"
    );
    gap_free_journal(&b, &conversation).await;

    // The next turn works, on B.
    model.push([ModelReply::Text("Back again.".into())]);
    let (status, stream, body) = b
        .chat(json!({"conversationId": conversation, "message": "Are you there?"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let after = stream.unwrap().collect().await;
    assert_eq!(
        after.last().unwrap().event,
        "conversation.completed",
        "{after:#?}"
    );
    gap_free_journal(&b, &conversation).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_running_on_one_replica_is_cancelled_through_the_other() {
    let model = ScriptedModelServer::start(paced_turn(200, Duration::from_millis(100)))
        .await
        .unwrap();
    // A lease of 30 s: the heartbeat, every 10 s, is far slower than a cancel must be.
    let cluster = OnPostgres::start(&model, 30, 2).await;
    let [a, b] = &cluster.replicas[..] else {
        unreachable!("two replicas")
    };

    // A 20-second turn on A, its client attached there.
    let (on_a, _, conversation) = turn_until(a, "Talk for a while", &["assistant.delta"]).await;

    // Cancelled through B: A stops the turn within seconds, not at its next heartbeat.
    let (status, body) = b.cancel(&conversation).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let asked = Instant::now();
    let rest = tokio::time::timeout(Duration::from_secs(5), on_a.collect())
        .await
        .expect("A ends the turn B was asked to cancel");
    let cancelled_after = asked.elapsed();
    let last = rest.last().unwrap().json();
    assert_eq!(last["type"], "conversation.failed", "{rest:#?}");
    assert_eq!(last["data"]["code"], "cancelled", "{last}");
    assert!(
        cancelled_after < Duration::from_secs(5),
        "{cancelled_after:?}"
    );
    gap_free_journal(b, &conversation).await;

    // Nothing runs any more, on either replica; the next turn runs on B.
    for replica in [a, b] {
        let (status, body) = replica.cancel(&conversation).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::CONFLICT, Some("no_turn_in_progress"))
        );
    }
    model.push([ModelReply::Text("Short this time.".into())]);
    let (status, stream, body) = b
        .chat(json!({"conversationId": conversation, "message": "Briefly?"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let next = stream.unwrap().collect().await;
    assert_eq!(
        next.last().unwrap().event,
        "conversation.completed",
        "{next:#?}"
    );
}

/// A conversation deleted through one replica while its turn runs on the other: the turn is
/// stopped there (its stream ends, `cancelled`), then every row goes from the shared
/// database, and neither replica replays it any more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_deleted_through_one_replica_is_gone_from_both() {
    let model = ScriptedModelServer::start(paced_turn(200, Duration::from_millis(100)))
        .await
        .unwrap();
    let cluster = OnPostgres::start(&model, 30, 2).await;
    let [a, b] = &cluster.replicas[..] else {
        unreachable!("two replicas")
    };
    let (on_a, _, conversation) = turn_until(a, "Talk for a while", &["assistant.delta"]).await;
    // Followers of the running turn, one on each replica: their streams end too.
    let followers = [
        a.resume(&conversation, 0).await,
        b.resume(&conversation, 0).await,
    ];

    assert_eq!(b.delete(&conversation).await, StatusCode::NO_CONTENT);
    let rest = tokio::time::timeout(Duration::from_secs(5), on_a.collect())
        .await
        .expect("the stream on A ends");
    let last = rest.last().unwrap().json();
    assert_eq!(last["type"], "conversation.failed", "{rest:#?}");
    assert_eq!(last["data"]["code"], "cancelled", "{last}");
    for follower in followers {
        let seen = tokio::time::timeout(Duration::from_secs(5), follower.collect())
            .await
            .expect("a follower's stream ends");
        let last = seen.last().unwrap().json();
        assert_eq!(last["type"], "conversation.failed", "{seen:#?}");
        assert_eq!(last["data"]["code"], "cancelled", "{last}");
    }

    for replica in [a, b] {
        assert_eq!(
            replica.replay_status(&conversation).await,
            StatusCode::NOT_FOUND
        );
        assert_eq!(replica.delete(&conversation).await, StatusCode::NOT_FOUND);
    }
    let mut connection = sqlx::PgConnection::connect(cluster.database.url())
        .await
        .unwrap();
    for query in [
        "SELECT COUNT(*) FROM conversations WHERE id = $1",
        "SELECT COUNT(*) FROM conversation_messages WHERE conversation_id = $1",
        "SELECT COUNT(*) FROM stream_events WHERE conversation_id = $1",
        "SELECT COUNT(*) FROM turn_claims WHERE conversation_id = $1",
    ] {
        let rows: i64 = sqlx::query_scalar(query)
            .bind(&conversation)
            .fetch_one(&mut connection)
            .await
            .unwrap();
        assert_eq!(rows, 0, "{query}");
    }
    let recorded: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM audit_events WHERE action = 'conversation.deleted' \
         AND conversation_id = $1",
    )
    .bind(&conversation)
    .fetch_one(&mut connection)
    .await
    .unwrap();
    assert_eq!(recorded, 1, "the deletion is audited");
}

/// Replicas keep a tenant's enablement decisions between changes: a change made through one
/// reaches the others' tool lists as soon as PostgreSQL announces it (well before the
/// 10-second bound kept decisions have in case an announcement is lost).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_disabled_through_one_replica_is_gone_from_the_others_at_once() {
    let model = ScriptedModelServer::start([]).await.unwrap();
    let cluster = OnPostgres::start(&model, LEASE_SECS, 2).await;
    let [a, b] = &cluster.replicas[..] else {
        unreachable!("two replicas")
    };
    const TOOL: &str = "workflow.getDefinition";
    let offers = |tools: Value| {
        tools
            .as_array()
            .expect("a list of tools")
            .iter()
            .any(|tool| tool["name"] == TOOL)
    };
    // Both replicas have read (and now keep) the tenant's decisions.
    assert!(offers(a.get_json("/ai/tools").await) && offers(b.get_json("/ai/tools").await));

    for (enabled, reason) in [(false, "disabled"), (true, "enabled again")] {
        let changed = reqwest::Client::new()
            .put(format!(
                "{}/ai/admin/tools/{TOOL}/enablement",
                a.process.base_url()
            ))
            .header("authorization", format!("ApiKey {KEY}"))
            .json(&json!({ "enabled": enabled }))
            .send()
            .await
            .unwrap();
        assert_eq!(changed.status(), StatusCode::OK);
        assert_eq!(
            offers(a.get_json("/ai/tools").await),
            enabled,
            "{reason} on A"
        );
        let started = Instant::now();
        while offers(b.get_json("/ai/tools").await) != enabled {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "B still lists the tool as it was before it was {reason}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        println!(
            "{reason} on B {:?} after the change on A",
            started.elapsed()
        );
    }
}

/// A cancel request whose notice never arrived (the listening connection was down): the
/// replica running the turn reads the claim's mark at its next heartbeat and cancels it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_mark_whose_notice_was_lost_is_read_at_the_next_heartbeat() {
    let model = ScriptedModelServer::start(paced_turn(200, Duration::from_millis(100)))
        .await
        .unwrap();
    let cluster = OnPostgres::start(&model, LEASE_SECS, 1).await;
    let (on_a, _, _) = turn_until(
        &cluster.replicas[0],
        "Talk for a while",
        &["assistant.delta"],
    )
    .await;

    // The mark as a cancel through another replica writes it, without the notice.
    let mut connection = sqlx::PgConnection::connect(cluster.database.url())
        .await
        .unwrap();
    let marked = sqlx::query("UPDATE turn_claims SET cancel_requested_ns = 1")
        .execute(&mut connection)
        .await
        .unwrap()
        .rows_affected();
    assert_eq!(marked, 1, "the running turn's claim");
    // A heartbeat comes every third of the lease.
    let rest = tokio::time::timeout(Duration::from_secs(2 * LEASE_SECS), on_a.collect())
        .await
        .expect("the heartbeat cancels the marked turn");
    let last = rest.last().unwrap().json();
    assert_eq!(last["type"], "conversation.failed", "{rest:#?}");
    assert_eq!(last["data"]["code"], "cancelled", "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_server_killed_mid_turn_closes_the_turn_after_a_restart() {
    let model = ScriptedModelServer::start(paced_turn(40, Duration::from_millis(250)))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let database: PathBuf = dir.path().join("weaver.db");
    let config = config(
        &format!("sqlite = {:?}", database.display().to_string()),
        &model,
        LEASE_SECS,
    );
    let server = Replica::start(dir.path(), &config).await;
    let (status, stream, body) = server.chat(json!({"message": "What does it do?"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut stream = stream.unwrap();
    let before_kill = stream.until(&["assistant.delta"]).await;
    let conversation = before_kill[0].json()["data"]["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    server.kill_9();

    let restarted = Replica::start(dir.path(), &config).await;
    let rest = tokio::time::timeout(Duration::from_secs(30), async {
        restarted
            .resume(&conversation, before_kill.last().unwrap().sequence())
            .await
            .collect()
            .await
    })
    .await
    .expect("the restarted server ends the interrupted turn");
    let failed = rest.last().unwrap();
    assert_eq!(failed.event, "conversation.failed", "{rest:#?}");
    assert_eq!(failed.json()["data"]["code"], "replica_lost");
    gap_free_journal(&restarted, &conversation).await;

    model.push([ModelReply::Text("Back again.".into())]);
    let (status, stream, body) = restarted
        .chat(json!({"conversationId": conversation, "message": "Are you there?"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let after = stream.unwrap().collect().await;
    assert_eq!(
        after.last().unwrap().event,
        "conversation.completed",
        "{after:#?}"
    );
    gap_free_journal(&restarted, &conversation).await;
}
