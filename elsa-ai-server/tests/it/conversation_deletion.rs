//! Deleting conversations over HTTP on a real socket: the owner (or an administrator of the
//! tenant) deletes, everyone else gets 404, the rows go from the store (memory and SQLite
//! here; PostgreSQL with two replicas in `replicas.rs`), the audit trail keeps who deleted
//! what, proposals stay, replays answer 404, and an owner keeps a conversation shorter.

use elsa_ai_server::config::StoreConfig;
use elsa_ai_server::testing::{ALICE_KEY, BOB_KEY, GINA_KEY, TestServer, two_tenants};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// What alice asks, to check no audit record repeats it.
const ASKED: &str = "Please propose a clearer description.";

async fn delete(server: &TestServer, path: &str, key: &str) -> (StatusCode, Value) {
    let response = server
        .request(Method::DELETE, path, key)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn patch(server: &TestServer, path: &str, key: &str, body: Value) -> (StatusCode, Value) {
    let response = server
        .request(Method::PATCH, path, key)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Alice's conversation in which the demo provider proposed a change: (conversation id,
/// proposal id).
async fn conversation_with_a_proposal(server: &TestServer) -> (String, String) {
    let (proposal, events) = server
        .demo_proposal(ALICE_KEY, "sample-order-approval")
        .await;
    let conversation = events[0].json()["data"]["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    (conversation, proposal)
}

async fn deletion_records(server: &TestServer, key: &str) -> Vec<Value> {
    let (_, audit) = server.get("/ai/audit?limit=200", key).await;
    audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["action"] == "conversation.deleted")
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_deletes_a_conversation_and_no_one_else_can() {
    let server = TestServer::start(two_tenants()).await;
    let (conversation, proposal) = conversation_with_a_proposal(&server).await;
    let path = format!("/ai/conversations/{conversation}");

    // Another tenant's administrator and another person of the tenant: not found.
    for key in [GINA_KEY, BOB_KEY] {
        let (status, body) = delete(&server, &path, key).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert_eq!(body["code"], "conversation_not_found");
    }
    let (status, _) = server.get(&path, ALICE_KEY).await;
    assert_eq!(status, StatusCode::OK, "still there");

    let (status, _) = delete(&server, &path, ALICE_KEY).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = server.get(&path, ALICE_KEY).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = server
        .get(&format!("/ai/chat/{conversation}/events"), ALICE_KEY)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "the replay is gone: {body}");
    let (_, list) = server.get("/ai/conversations", ALICE_KEY).await;
    assert!(
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["id"] != conversation.as_str())
    );

    // The proposal stays for review, without its link to the deleted text.
    let (status, kept) = server
        .get(&format!("/ai/proposals/{proposal}"), ALICE_KEY)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        kept.get("conversationId").is_none_or(Value::is_null),
        "{kept}"
    );

    // Who deleted what, without what was said.
    let records = deletion_records(&server, ALICE_KEY).await;
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["actorId"], "alice");
    assert_eq!(records[0]["conversationId"], conversation.as_str());
    assert_eq!(records[0]["details"]["proposals"], json!([proposal]));
    assert!(!records[0].to_string().contains(ASKED), "{}", records[0]);

    let (status, _) = delete(&server, &path, ALICE_KEY).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "deleted once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_administrator_erases_one_persons_conversations_in_the_tenant() {
    let server = TestServer::start(two_tenants()).await;
    let (first, _) = conversation_with_a_proposal(&server).await;
    let (second, _) = conversation_with_a_proposal(&server).await;

    let (status, body) = delete(&server, "/ai/conversations?actor=alice", BOB_KEY).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    for path in [
        "/ai/conversations",
        "/ai/conversations?actor=",
        "/ai/conversations?actor=%20",
    ] {
        let (status, body) = delete(&server, path, ALICE_KEY).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
    }
    // Globex's administrator erases alice's conversations of globex: there are none.
    let (status, body) = delete(&server, "/ai/conversations?actor=alice", GINA_KEY).await;
    assert_eq!(
        (status, body["deleted"].clone()),
        (StatusCode::OK, json!([]))
    );

    let (status, body) = delete(&server, "/ai/conversations?actor=alice", ALICE_KEY).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut deleted: Vec<String> = body["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap().to_owned())
        .collect();
    deleted.sort();
    let mut expected = vec![first, second];
    expected.sort();
    assert_eq!(deleted, expected);
    assert_eq!(deletion_records(&server, ALICE_KEY).await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_keeps_a_conversation_shorter_than_the_window() {
    let server = TestServer::start(two_tenants()).await;
    let (conversation, _) = conversation_with_a_proposal(&server).await;
    let path = format!("/ai/conversations/{conversation}");

    let (status, body) = patch(&server, &path, ALICE_KEY, json!({"retainDays": 2})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["retainDays"], 2);
    let (_, read) = server.get(&path, ALICE_KEY).await;
    assert_eq!(read["retainDays"], 2);
    let (_, list) = server.get("/ai/conversations", ALICE_KEY).await;
    assert_eq!(list["items"][0]["retainDays"], 2);

    for (body, code) in [
        (json!({"retainDays": 0}), "invalid_retention"),
        (json!({"retainDays": 31}), "invalid_retention"),
        (json!({}), "invalid_body"),
        (json!({"retainDays": 2.5}), "invalid_body"),
        (json!({"retainDays": "2"}), "invalid_body"),
    ] {
        let (status, answer) = patch(&server, &path, ALICE_KEY, body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        if code != "invalid_body" {
            assert_eq!(answer["code"], code, "{answer}");
        }
    }
    let (status, _) = patch(&server, &path, BOB_KEY, json!({"retainDays": 1})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // JSON Schema counts 3.0 as the integer 3.
    let (status, body) = patch(&server, &path, ALICE_KEY, json!({"retainDays": 3.0})).await;
    assert_eq!(
        (status, body["retainDays"].clone()),
        (StatusCode::OK, json!(3))
    );
    let (status, body) = patch(&server, &path, ALICE_KEY, json!({"retainDays": null})).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.get("retainDays").is_none(), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_a_deleted_conversation_leaves_no_row_behind() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("weaver.db");
    let mut config = two_tenants();
    config.store = StoreConfig {
        sqlite: Some(file.clone()),
        ..StoreConfig::default()
    };
    let server = TestServer::start(config).await;
    let (conversation, _) = conversation_with_a_proposal(&server).await;
    let rows = |conversation: &str| -> [i64; 3] {
        let db = rusqlite::Connection::open(&file).unwrap();
        [
            "SELECT COUNT(*) FROM conversations WHERE id = ?1",
            "SELECT COUNT(*) FROM conversation_messages WHERE conversation_id = ?1",
            "SELECT COUNT(*) FROM stream_events WHERE conversation_id = ?1",
        ]
        .map(|query| {
            db.query_row(query, [conversation], |row| row.get(0))
                .unwrap()
        })
    };
    let before = rows(&conversation);
    assert!(before.iter().all(|n| *n > 0), "{before:?}");

    let (status, _) = delete(
        &server,
        &format!("/ai/conversations/{conversation}"),
        ALICE_KEY,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(rows(&conversation), [0, 0, 0]);
    assert_eq!(deletion_records(&server, ALICE_KEY).await.len(), 1);
    server.shutdown().await.unwrap();
}
