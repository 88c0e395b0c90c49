//! What every PostgreSQL replica hears of the others (`PostgresStore::journal_feed`): the
//! journal commits that followers of a conversation on another replica read, and the tool
//! enablement changes that replicas keeping decisions between changes act on.

use std::collections::HashMap;

use chrono::Utc;
use elsa_ai_abstractions::{
    AiStreamEvent, AiStreamEventType, AiStreamJournal, AiToolEnablementStore, ConversationId,
    ToolEnablement,
};
use elsa_ai_store::{JournalFeed, PostgresStoreOptions};
use elsa_workflows::TenantId;
use serde_json::json;

use crate::support::{PATIENCE, TestDb};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enablement_change_is_announced_to_every_replica() {
    let db = TestDb::postgres().await;
    let replica = || db.open_postgres(PostgresStoreOptions::new(db.location()));
    let (a, b) = (replica().await, replica().await);
    let mut heard = b.journal_feed().await.unwrap();
    for (tenant, enabled) in [("acme", false), ("initech", true)] {
        a.set(&ToolEnablement {
            tenant_id: TenantId::new(tenant),
            tool_name: "workflow.proposeUpdate".into(),
            agent: None,
            enabled,
            changed_by: "admin".into(),
            changed_at: Utc::now(),
        })
        .await
        .unwrap();
        let notice = tokio::time::timeout(PATIENCE, heard.recv())
            .await
            .expect("announced")
            .expect("the feed is open");
        assert_eq!(
            notice,
            JournalFeed::EnablementChanged {
                tenant_id: TenantId::new(tenant)
            }
        );
    }
}

/// Many conversations appending at once, their events committed in shared batches: the other
/// replica hears every conversation reach its last sequence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_conversation_is_heard_at_its_last_commit() {
    const STREAMS: usize = 60;
    const EVENTS: u64 = 12;
    let db = TestDb::postgres().await;
    let replica = || db.open_postgres(PostgresStoreOptions::new(db.location()));
    let (a, b) = (replica().await, replica().await);
    let mut heard = b.journal_feed().await.unwrap();
    let tenant = TenantId::new("acme");
    let conversations: Vec<ConversationId> =
        (0..STREAMS).map(|_| ConversationId::generate()).collect();
    let streams = conversations.iter().map(|conversation| {
        let (a, tenant, conversation) = (a.clone(), tenant.clone(), conversation.clone());
        tokio::spawn(async move {
            for sequence in 1..=EVENTS {
                let event = AiStreamEvent {
                    event_type: AiStreamEventType::AssistantDelta,
                    conversation_id: conversation.clone(),
                    sequence,
                    timestamp: Utc::now(),
                    data: json!({"text": "delta"}).into(),
                };
                a.append(&tenant, &event).await.unwrap();
            }
        })
    });
    for stream in futures::future::join_all(streams).await {
        stream.unwrap();
    }
    let mut reached: HashMap<ConversationId, u64> = HashMap::new();
    while reached.values().filter(|&&at| at == EVENTS).count() < STREAMS {
        let notice = tokio::time::timeout(PATIENCE, heard.recv())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{} of {STREAMS} conversations heard at their last commit",
                    reached.values().filter(|&&at| at == EVENTS).count()
                )
            })
            .expect("the feed is open");
        if let JournalFeed::Appended(notice) = notice {
            assert_eq!(notice.tenant_id, tenant);
            let at = reached.entry(notice.conversation_id).or_default();
            *at = (*at).max(notice.sequence);
        }
    }
    assert!(reached.keys().all(|c| conversations.contains(c)));
}
