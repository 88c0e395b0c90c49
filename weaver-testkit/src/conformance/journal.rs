//! [`AiStreamJournal`]: gap-free sequences per (tenant, conversation), duplicates refused,
//! reads after a sequence in order, and another tenant's journal of the same conversation id
//! out of sight and out of reach.

use chrono::Utc;
use elsa_ai_abstractions::{AiStreamEvent, AiStreamEventType, AiStreamJournal, ConversationId};
use elsa_workflows::TenantId;
use serde_json::json;

use super::{assert_status, case, instant, unique};

/// Every case, in order.
pub async fn run<J: AiStreamJournal + ?Sized>(journal: &J) {
    append_is_gap_free_and_refuses_duplicates(journal).await;
    read_after_returns_later_events_in_order(journal).await;
    events_round_trip_exactly(journal).await;
    concurrent_appends_of_one_sequence_admit_one(journal, 20).await;
    a_wrong_tenant_reads_nothing(journal).await;
    one_conversation_id_under_two_tenants_keeps_two_journals(journal).await;
    appends_interleaved_across_tenants_stay_gap_free_per_tenant(journal, 20).await;
}

fn tenant() -> TenantId {
    TenantId::new(unique("tenant"))
}

fn event(conversation: &ConversationId, sequence: u64) -> AiStreamEvent {
    AiStreamEvent {
        event_type: AiStreamEventType::AssistantDelta,
        conversation_id: conversation.clone(),
        sequence,
        timestamp: Utc::now(),
        data: json!({"text": sequence.to_string()}).into(),
    }
}

fn sequences(events: Vec<AiStreamEvent>) -> Vec<u64> {
    events.into_iter().map(|e| e.sequence).collect()
}

/// Each append must be exactly one after the last: a gap, a repeat or a zero is a 409
/// `sequence_conflict`; conversations count independently.
pub async fn append_is_gap_free_and_refuses_duplicates<J: AiStreamJournal + ?Sized>(journal: &J) {
    case("journal: append is gap-free and refuses duplicates");
    let tenant = tenant();
    let c1 = ConversationId::generate();
    let c2 = ConversationId::generate();
    assert_eq!(journal.last_sequence(&c1, &tenant).await.unwrap(), 0);
    assert_status(
        journal.append(&tenant, &event(&c1, 0)).await,
        409,
        "appending sequence 0",
    );
    assert_status(
        journal.append(&tenant, &event(&c1, 2)).await,
        409,
        "starting at 2",
    );
    for sequence in 1..=5 {
        journal
            .append(&tenant, &event(&c1, sequence))
            .await
            .unwrap();
    }
    let gap = assert_status(journal.append(&tenant, &event(&c1, 7)).await, 409, "a gap");
    assert_eq!(gap.code(), "sequence_conflict");
    let repeat = assert_status(
        journal.append(&tenant, &event(&c1, 5)).await,
        409,
        "a repeat",
    );
    assert_eq!(repeat.code(), "sequence_conflict");
    assert_status(
        journal.append(&tenant, &event(&c1, u64::MAX)).await,
        409,
        "an absurd sequence",
    );
    journal.append(&tenant, &event(&c2, 1)).await.unwrap();
    assert_eq!(journal.last_sequence(&c1, &tenant).await.unwrap(), 5);
    assert_eq!(journal.last_sequence(&c2, &tenant).await.unwrap(), 1);
    assert_eq!(
        sequences(journal.read_after(&c1, &tenant, 0, 100).await.unwrap()),
        [1, 2, 3, 4, 5]
    );
}

/// `read_after(n, limit)` returns the events after `n`, in order, at most `limit`.
pub async fn read_after_returns_later_events_in_order<J: AiStreamJournal + ?Sized>(journal: &J) {
    case("journal: read after returns later events in order");
    let tenant = tenant();
    let id = ConversationId::generate();
    for sequence in 1..=5 {
        journal
            .append(&tenant, &event(&id, sequence))
            .await
            .unwrap();
    }
    let read = |after: u64, limit: usize| journal.read_after(&id, &tenant, after, limit);
    assert_eq!(sequences(read(2, 2).await.unwrap()), [3, 4]);
    assert_eq!(sequences(read(4, 10).await.unwrap()), [5]);
    assert!(read(5, 10).await.unwrap().is_empty());
    assert!(read(u64::MAX, 10).await.unwrap().is_empty());
    assert!(read(0, 0).await.unwrap().is_empty());
    let unknown = ConversationId::generate();
    assert_eq!(journal.last_sequence(&unknown, &tenant).await.unwrap(), 0);
    assert!(
        journal
            .read_after(&unknown, &tenant, 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

/// Every event type, nested data and nanosecond timestamps come back exactly.
pub async fn events_round_trip_exactly<J: AiStreamJournal + ?Sized>(journal: &J) {
    case("journal: events round-trip exactly");
    let tenant = tenant();
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
            data: json!({"z": i, "a": {"text": "Grüße ✓", "list": [1.5, null, true]}}).into(),
        })
        .collect();
    for e in &events {
        journal.append(&tenant, e).await.unwrap();
    }
    let read = journal.read_after(&id, &tenant, 0, 100).await.unwrap();
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
    let tenant = tenant();
    let id = ConversationId::generate();
    let events: Vec<AiStreamEvent> = (0..n)
        .map(|i| AiStreamEvent {
            data: json!({"writer": i}).into(),
            ..event(&id, 1)
        })
        .collect();
    let results =
        futures::future::join_all(events.iter().map(|e| journal.append(&tenant, e))).await;
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
        journal.read_after(&id, &tenant, 0, 10).await.unwrap(),
        [events[winners[0]].clone()]
    );
}

/// A conversation's journal read under another tenant is empty: no events, last sequence 0.
pub async fn a_wrong_tenant_reads_nothing<J: AiStreamJournal + ?Sized>(journal: &J) {
    case("journal: a wrong tenant reads nothing");
    let (owner, stranger) = (tenant(), tenant());
    let id = ConversationId::generate();
    for sequence in 1..=3 {
        journal.append(&owner, &event(&id, sequence)).await.unwrap();
    }
    assert_eq!(journal.last_sequence(&id, &stranger).await.unwrap(), 0);
    assert!(
        journal
            .read_after(&id, &stranger, 0, 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(journal.last_sequence(&id, &owner).await.unwrap(), 3);
}

/// The same conversation id under two tenants is two journals: neither can extend the other
/// (the second tenant starts at 1, whatever the first has), each reads only its own events.
pub async fn one_conversation_id_under_two_tenants_keeps_two_journals<
    J: AiStreamJournal + ?Sized,
>(
    journal: &J,
) {
    case("journal: one conversation id under two tenants keeps two journals");
    let (a, b) = (tenant(), tenant());
    let id = ConversationId::generate();
    let of = |tenant: &str, sequence: u64| AiStreamEvent {
        data: json!({"tenant": tenant, "sequence": sequence}).into(),
        ..event(&id, sequence)
    };
    let mut a_events: Vec<AiStreamEvent> = (1..=3).map(|n| of("a", n)).collect();
    for e in &a_events {
        journal.append(&a, e).await.unwrap();
    }
    let extend = assert_status(
        journal.append(&b, &of("b", 4)).await,
        409,
        "continuing another tenant's journal",
    );
    assert_eq!(extend.code(), "sequence_conflict");
    let b_events: Vec<AiStreamEvent> = (1..=2).map(|n| of("b", n)).collect();
    for e in &b_events {
        journal.append(&b, e).await.unwrap();
    }
    assert_status(
        journal.append(&a, &of("a", 3)).await,
        409,
        "b's appends do not move a's journal back",
    );
    a_events.push(of("a", 4));
    journal.append(&a, &a_events[3]).await.unwrap();

    assert_eq!(journal.last_sequence(&id, &a).await.unwrap(), 4);
    assert_eq!(journal.last_sequence(&id, &b).await.unwrap(), 2);
    assert_eq!(journal.read_after(&id, &a, 0, 100).await.unwrap(), a_events);
    assert_eq!(journal.read_after(&id, &b, 0, 100).await.unwrap(), b_events);
}

/// Two tenants streaming the same conversation id at once, `n` events each, appended
/// concurrently (so that batching writers mix them): each tenant's journal is exactly
/// 1..=n with only its own events.
pub async fn appends_interleaved_across_tenants_stay_gap_free_per_tenant<
    J: AiStreamJournal + ?Sized,
>(
    journal: &J,
    n: u64,
) {
    case("journal: appends interleaved across tenants stay gap-free per tenant");
    let tenants = [tenant(), tenant()];
    let id = ConversationId::generate();
    let stream = |tenant: &TenantId| {
        let id = id.clone();
        let tenant = tenant.clone();
        async move {
            for sequence in 1..=n {
                let e = AiStreamEvent {
                    data: json!({"tenant": tenant.as_str()}).into(),
                    ..event(&id, sequence)
                };
                journal.append(&tenant, &e).await?;
            }
            Ok::<(), elsa_ai_abstractions::AiError>(())
        }
    };
    let (first, second) = futures::join!(stream(&tenants[0]), stream(&tenants[1]));
    first.unwrap();
    second.unwrap();
    for tenant in &tenants {
        let events = journal.read_after(&id, tenant, 0, 1000).await.unwrap();
        assert_eq!(sequences(events.clone()), (1..=n).collect::<Vec<_>>());
        assert!(
            events.iter().all(|e| e.data["tenant"] == tenant.as_str()),
            "only the tenant's own events"
        );
        assert_eq!(journal.last_sequence(&id, tenant).await.unwrap(), n);
    }
}
