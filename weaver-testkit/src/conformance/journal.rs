//! [`AiStreamJournal`]: gap-free sequences per conversation, duplicates refused, reads after a
//! sequence in order.

use chrono::Utc;
use elsa_ai_abstractions::{AiStreamEvent, AiStreamEventType, AiStreamJournal, ConversationId};
use serde_json::json;

use super::{assert_status, case, instant};

/// Every case, in order.
pub async fn run<J: AiStreamJournal + ?Sized>(journal: &J) {
    append_is_gap_free_and_refuses_duplicates(journal).await;
    read_after_returns_later_events_in_order(journal).await;
    events_round_trip_exactly(journal).await;
    concurrent_appends_of_one_sequence_admit_one(journal, 20).await;
}

fn event(conversation: &ConversationId, sequence: u64) -> AiStreamEvent {
    AiStreamEvent {
        event_type: AiStreamEventType::AssistantDelta,
        conversation_id: conversation.clone(),
        sequence,
        timestamp: Utc::now(),
        data: json!({"text": sequence.to_string()}),
    }
}

fn sequences(events: Vec<AiStreamEvent>) -> Vec<u64> {
    events.into_iter().map(|e| e.sequence).collect()
}

/// Each append must be exactly one after the last: a gap, a repeat or a zero is a 409
/// `sequence_conflict`; conversations count independently.
pub async fn append_is_gap_free_and_refuses_duplicates<J: AiStreamJournal + ?Sized>(journal: &J) {
    case("journal: append is gap-free and refuses duplicates");
    let c1 = ConversationId::generate();
    let c2 = ConversationId::generate();
    assert_eq!(journal.last_sequence(&c1).await.unwrap(), 0);
    assert_status(
        journal.append(&event(&c1, 0)).await,
        409,
        "appending sequence 0",
    );
    assert_status(journal.append(&event(&c1, 2)).await, 409, "starting at 2");
    for sequence in 1..=5 {
        journal.append(&event(&c1, sequence)).await.unwrap();
    }
    let gap = assert_status(journal.append(&event(&c1, 7)).await, 409, "a gap");
    assert_eq!(gap.code(), "sequence_conflict");
    let repeat = assert_status(journal.append(&event(&c1, 5)).await, 409, "a repeat");
    assert_eq!(repeat.code(), "sequence_conflict");
    assert_status(
        journal.append(&event(&c1, u64::MAX)).await,
        409,
        "an absurd sequence",
    );
    journal.append(&event(&c2, 1)).await.unwrap();
    assert_eq!(journal.last_sequence(&c1).await.unwrap(), 5);
    assert_eq!(journal.last_sequence(&c2).await.unwrap(), 1);
    assert_eq!(
        sequences(journal.read_after(&c1, 0, 100).await.unwrap()),
        [1, 2, 3, 4, 5]
    );
}

/// `read_after(n, limit)` returns the events after `n`, in order, at most `limit`.
pub async fn read_after_returns_later_events_in_order<J: AiStreamJournal + ?Sized>(journal: &J) {
    case("journal: read after returns later events in order");
    let id = ConversationId::generate();
    for sequence in 1..=5 {
        journal.append(&event(&id, sequence)).await.unwrap();
    }
    assert_eq!(
        sequences(journal.read_after(&id, 2, 2).await.unwrap()),
        [3, 4]
    );
    assert_eq!(
        sequences(journal.read_after(&id, 4, 10).await.unwrap()),
        [5]
    );
    assert!(journal.read_after(&id, 5, 10).await.unwrap().is_empty());
    assert!(
        journal
            .read_after(&id, u64::MAX, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(journal.read_after(&id, 0, 0).await.unwrap().is_empty());
    let unknown = ConversationId::generate();
    assert_eq!(journal.last_sequence(&unknown).await.unwrap(), 0);
    assert!(
        journal
            .read_after(&unknown, 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

/// Every event type, nested data and nanosecond timestamps come back exactly.
pub async fn events_round_trip_exactly<J: AiStreamJournal + ?Sized>(journal: &J) {
    case("journal: events round-trip exactly");
    let id = ConversationId::generate();
    let types = [
        AiStreamEventType::ConversationStarted,
        AiStreamEventType::AssistantDelta,
        AiStreamEventType::ToolStarted,
        AiStreamEventType::ToolCompleted,
        AiStreamEventType::ProposalCreated,
        AiStreamEventType::ConversationFailed,
    ];
    let events: Vec<AiStreamEvent> = types
        .into_iter()
        .enumerate()
        .map(|(i, event_type)| AiStreamEvent {
            event_type,
            conversation_id: id.clone(),
            sequence: i as u64 + 1,
            timestamp: instant(i as i64),
            data: json!({"z": i, "a": {"text": "Grüße ✓", "list": [1.5, null, true]}}),
        })
        .collect();
    for e in &events {
        journal.append(e).await.unwrap();
    }
    let read = journal.read_after(&id, 0, 100).await.unwrap();
    assert_eq!(read, events);
    assert_eq!(
        serde_json::to_string(&read[0].data).unwrap(),
        serde_json::to_string(&events[0].data).unwrap(),
        "data keeps its key order"
    );
}

/// Of `n` concurrent appends of the same next sequence, exactly one is kept.
pub async fn concurrent_appends_of_one_sequence_admit_one<J: AiStreamJournal + ?Sized>(
    journal: &J,
    n: usize,
) {
    case("journal: concurrent appends of one sequence admit one");
    let id = ConversationId::generate();
    let events: Vec<AiStreamEvent> = (0..n)
        .map(|i| AiStreamEvent {
            data: json!({"writer": i}),
            ..event(&id, 1)
        })
        .collect();
    let results = futures::future::join_all(events.iter().map(|e| journal.append(e))).await;
    let winners: Vec<usize> = (0..n).filter(|&i| results[i].is_ok()).collect();
    assert_eq!(
        winners.len(),
        1,
        "exactly one append of sequence 1 succeeds"
    );
    for result in results.into_iter().filter(Result::is_err) {
        assert_status(result, 409, "a losing concurrent append");
    }
    assert_eq!(
        journal.read_after(&id, 0, 10).await.unwrap(),
        [events[winners[0]].clone()]
    );
}
