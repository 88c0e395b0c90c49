//! The stream journal under load: many streams appending at once (through two store handles,
//! as two server processes would) all land gap-free and none fails for a busy database, and
//! an append that is not the next sequence fails alone, whatever it was written with, even
//! after another handle appended to the same conversation.

use std::sync::Arc;

use chrono::Utc;
use elsa_ai_abstractions::{AiStreamEvent, AiStreamEventType, ConversationId};
use elsa_workflows::TenantId;
use serde_json::json;

use crate::support::{Store, TestDb, on_both_backends};

on_both_backends!(
    many_concurrent_streams_land_gap_free_and_none_fails,
    an_append_that_is_not_the_next_sequence_fails_alone,
    two_handles_appending_to_one_conversation_take_turns_gap_free,
);

fn tenant() -> TenantId {
    TenantId::new(format!("tenant-{}", ConversationId::generate()))
}

fn event(conversation: &ConversationId, sequence: u64, text: &str) -> AiStreamEvent {
    AiStreamEvent {
        event_type: AiStreamEventType::AssistantDelta,
        conversation_id: conversation.clone(),
        sequence,
        timestamp: Utc::now(),
        data: json!({ "text": text }).into(),
    }
}

async fn many_concurrent_streams_land_gap_free_and_none_fails(db: TestDb) {
    const STREAMS: usize = 200;
    const EVENTS: u64 = 25;
    let handles = [db.open().await, db.open().await];
    let tenant = tenant();
    let conversations: Vec<ConversationId> =
        (0..STREAMS).map(|_| ConversationId::generate()).collect();
    let streams = conversations.iter().enumerate().map(|(i, conversation)| {
        let journal = handles[i % 2].clone();
        let (conversation, tenant) = (conversation.clone(), tenant.clone());
        tokio::spawn(async move {
            // Like a chat stream: each event is appended after the previous one returned.
            for sequence in 1..=EVENTS {
                journal
                    .append(&tenant, &event(&conversation, sequence, "delta"))
                    .await
                    .unwrap_or_else(|error| panic!("append {sequence} failed: {error}"));
            }
        })
    });
    for stream in futures::future::join_all(streams).await {
        stream.unwrap();
    }
    let reader = db.open().await;
    for conversation in &conversations {
        let events = reader
            .read_after(conversation, &tenant, 0, 100)
            .await
            .unwrap();
        let sequences: Vec<u64> = events.iter().map(|e| e.sequence).collect();
        assert_eq!(sequences, (1..=EVENTS).collect::<Vec<_>>());
        assert_eq!(
            reader.last_sequence(conversation, &tenant).await.unwrap(),
            EVENTS
        );
    }
}

async fn an_append_that_is_not_the_next_sequence_fails_alone(db: TestDb) {
    let journal = db.open().await;
    let tenant = tenant();
    let taken = ConversationId::generate();
    let original = event(&taken, 1, "original");
    journal.append(&tenant, &original).await.unwrap();
    let others: Vec<AiStreamEvent> = (0..40)
        .map(|_| event(&ConversationId::generate(), 1, "other"))
        .collect();
    let (duplicate, gap) = (event(&taken, 1, "duplicate"), event(&taken, 3, "gap"));
    // Appended together, so that the refused ones usually share a batch with the others.
    let (duplicate, gap, rest) = tokio::join!(
        journal.append(&tenant, &duplicate),
        journal.append(&tenant, &gap),
        futures::future::join_all(others.iter().map(|e| journal.append(&tenant, e)))
    );
    for refused in [duplicate, gap] {
        let error = refused.expect_err("only the next sequence is accepted");
        assert_eq!((error.status(), error.code()), (409, "sequence_conflict"));
    }
    assert!(
        rest.iter().all(Result::is_ok),
        "the other appends are written: {rest:?}"
    );
    assert_eq!(
        journal.read_after(&taken, &tenant, 0, 10).await.unwrap(),
        [original]
    );
    for other in &others {
        let kept = journal
            .read_after(&other.conversation_id, &tenant, 0, 10)
            .await;
        assert_eq!(kept.unwrap(), std::slice::from_ref(other));
    }
}

/// One conversation appended to through two handles in turn (a turn on one replica, a
/// `replica_lost` or proposal event from another): each handle accepts exactly the next
/// sequence, whatever it wrote there itself before, and refuses a taken or skipped one.
async fn two_handles_appending_to_one_conversation_take_turns_gap_free(db: TestDb) {
    let (first, second) = (db.open().await, db.open().await);
    let tenant = tenant();
    let conversation = ConversationId::generate();
    let append = |journal: &Arc<dyn Store>, sequence: u64, text: &'static str| {
        let (journal, tenant) = (journal.clone(), tenant.clone());
        let event = event(&conversation, sequence, text);
        async move { journal.append(&tenant, &event).await }
    };
    append(&first, 1, "first").await.unwrap();
    append(&first, 2, "first").await.unwrap();
    append(&second, 3, "second").await.unwrap();
    for (journal, sequence) in [(&first, 3), (&first, 5), (&second, 2)] {
        let error = append(journal, sequence, "refused")
            .await
            .expect_err("only the next sequence is accepted");
        assert_eq!((error.status(), error.code()), (409, "sequence_conflict"));
    }
    append(&first, 4, "first").await.unwrap();
    append(&second, 5, "second").await.unwrap();
    append(&first, 6, "first").await.unwrap();
    let texts: Vec<(u64, String)> = second
        .read_after(&conversation, &tenant, 0, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|e| {
            (
                e.sequence,
                e.data["text"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let expected = [
        (1, "first"),
        (2, "first"),
        (3, "second"),
        (4, "first"),
        (5, "second"),
        (6, "first"),
    ];
    assert_eq!(
        texts,
        expected.map(|(sequence, text)| (sequence, text.to_owned()))
    );
}
