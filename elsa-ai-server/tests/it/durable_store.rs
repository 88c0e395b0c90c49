//! The server on its durable stores: SQLite keeps everything across a restart (the audit
//! batches are flushed at shutdown), a tenant's workflow folder keeps applied proposals, and
//! PostgreSQL lets two servers share one database.

use elsa_ai_server::config::StoreConfig;
use elsa_ai_server::testing::{ALICE_KEY, TestServer, two_tenants};
use elsa_ai_store::testing::postgres::TestDatabase;
use reqwest::StatusCode;

#[tokio::test]
async fn sqlite_keeps_conversations_proposals_journal_and_audit_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = two_tenants();
    config.store = StoreConfig {
        sqlite: Some(dir.path().join("weaver.db")),
        ..StoreConfig::default()
    };

    let server = TestServer::start(config.clone()).await;
    let (_, capabilities) = server.get("/ai/capabilities", ALICE_KEY).await;
    assert_eq!(capabilities["persistence"]["store"], "sqlite");
    assert_eq!(capabilities["persistence"]["durable"], true);
    assert_eq!(capabilities["conversationPersistence"], true);
    let (proposal, events) = server
        .demo_proposal(ALICE_KEY, "sample-order-approval")
        .await;
    let conversation = events[0].json()["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, before) = server.get("/ai/audit?limit=500", ALICE_KEY).await;
    server.shutdown().await.unwrap();
    assert!(dir.path().join("weaver.db").is_file());

    let server = TestServer::start(config).await;
    let (status, history) = server
        .get(&format!("/ai/conversations/{conversation}"), ALICE_KEY)
        .await;
    assert_eq!(status, StatusCode::OK);
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
    let (status, detail) = server
        .get(&format!("/ai/proposals/{proposal}"), ALICE_KEY)
        .await;
    assert_eq!(
        (status, detail["status"].as_str()),
        (StatusCode::OK, Some("Validated"))
    );
    let replay = server
        .request(
            reqwest::Method::GET,
            &format!("/ai/chat/{conversation}/events"),
            ALICE_KEY,
        )
        .send()
        .await
        .unwrap();
    let replayed = elsa_ai_server::testing::SseStream::new(replay)
        .collect()
        .await;
    assert_eq!(replayed, events, "the journal replays the turn exactly");
    let (_, after) = server.get("/ai/audit?limit=500", ALICE_KEY).await;
    assert_eq!(
        after["total"], before["total"],
        "every audit record was written"
    );
    // The tool enablement decided before the restart still holds.
    let (_, tools) = server.get("/ai/admin/tools", ALICE_KEY).await;
    let propose = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "workflow.proposeUpdate")
        .unwrap();
    assert_eq!(propose["enabled"], true);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_applied_proposal_is_saved_into_the_tenants_workflow_folder() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("acme");
    std::fs::create_dir(&folder).unwrap();
    for definition in elsa_workflows::samples::definitions() {
        let file = folder.join(format!("{}.json", definition.definition_id()));
        std::fs::write(file, serde_json::to_vec(definition).unwrap()).unwrap();
    }
    let mut config = two_tenants();
    config.store = StoreConfig {
        sqlite: Some(dir.path().join("weaver.db")),
        ..StoreConfig::default()
    };
    config.tenants[0].workflows = Some(folder.clone());

    let server = TestServer::start(config.clone()).await;
    let (proposal, _) = server
        .demo_proposal(ALICE_KEY, "sample-order-approval")
        .await;
    for action in ["approve", "apply"] {
        let (status, body) = server.proposal_action(ALICE_KEY, &proposal, action).await;
        assert_eq!(status, StatusCode::OK, "{action}: {body}");
    }
    let applied = server
        .workflows
        .definition_versions(&"acme".into(), "sample-order-approval");
    assert_eq!(applied.len(), 2);
    server.shutdown().await.unwrap();
    let version = applied[1].version();
    assert!(
        folder
            .join(format!("sample-order-approval.v{version}.json"))
            .is_file()
    );

    // A restart seeds the folder again: the applied version is the latest.
    let server = TestServer::start(config).await;
    let reloaded = server
        .workflows
        .definition_versions(&"acme".into(), "sample-order-approval");
    assert_eq!(reloaded.len(), 2);
    assert_eq!(reloaded[1].to_value(), applied[1].to_value());
    assert!(reloaded[1].is_latest() && !reloaded[0].is_latest());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn two_servers_on_one_postgres_database_share_the_review_flow() {
    let database = TestDatabase::create().await;
    let mut config = two_tenants();
    config.store = StoreConfig {
        postgres: Some(database.url().to_owned()),
        ..StoreConfig::default()
    };
    let first = TestServer::start(config.clone()).await;
    let second = TestServer::start(config).await;
    let (_, capabilities) = second.get("/ai/capabilities", ALICE_KEY).await;
    assert_eq!(capabilities["persistence"]["store"], "postgres");

    // Proposed through the first server, reviewed and applied through the second.
    let (proposal, events) = first
        .demo_proposal(ALICE_KEY, "sample-http-hello-world")
        .await;
    let conversation = events[0].json()["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _) = second
        .proposal_action(ALICE_KEY, &proposal, "approve")
        .await;
    assert_eq!(status, StatusCode::OK);
    // Each server serves its own workflow data; the proposal store is shared.
    let (status, _) = first.proposal_action(ALICE_KEY, &proposal, "apply").await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = second.proposal_action(ALICE_KEY, &proposal, "apply").await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "applied once across servers: {body}"
    );

    let (_, conversations) = second.get("/ai/conversations", ALICE_KEY).await;
    assert_eq!(conversations["items"][0]["id"], conversation.as_str());
    let (_, trail) = second
        .get(&format!("/ai/audit?proposalId={proposal}"), ALICE_KEY)
        .await;
    let actions: Vec<&str> = trail["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["action"].as_str().unwrap())
        .collect();
    assert!(actions.contains(&"proposal.applied") && actions.contains(&"proposal.approved"));
    first.shutdown().await.unwrap();
    second.shutdown().await.unwrap();
}
