//! Schema migrations: a database an older release wrote is brought up to date when a store
//! opens it, and what it held reads back as the new schema means it.

use chrono::{TimeZone, Utc};
use elsa_ai_abstractions::{
    AiAuditEvent, AiStreamEvent, AiStreamEventType, AuditAction, AuditOutcome, AuditQuery,
    ConversationId,
};
use elsa_workflows::TenantId;
use serde_json::json;

use crate::support::{TestDb, on_both_backends};

on_both_backends!(journal_rows_of_schema_1_read_back_under_their_conversations_tenant);
on_both_backends!(audit_rows_of_schema_2_read_back_without_a_trace_and_new_ones_carry_theirs);

fn event(conversation: &str, sequence: u64) -> AiStreamEvent {
    AiStreamEvent {
        event_type: AiStreamEventType::AssistantDelta,
        conversation_id: ConversationId::new(conversation),
        sequence,
        timestamp: Utc.timestamp_opt(1_750_000_000, 123_456_789).unwrap(),
        data: json!({"text": format!("{conversation} {sequence}"), "quote": "it's"}).into(),
    }
}

/// `value` as an SQL string literal.
fn literal(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// Inserts `events` into schema 1's `stream_events`, which has no tenant column.
async fn insert_schema_1_events(db: &TestDb, events: &[AiStreamEvent]) {
    for e in events {
        let sql = format!(
            "INSERT INTO stream_events (conversation_id, sequence, event_type, occurred_at_ns, \
             body) VALUES ({}, {}, {}, {}, {})",
            literal(e.conversation_id.as_str()),
            e.sequence,
            literal(e.event_type.as_str()),
            e.timestamp.timestamp_nanos_opt().unwrap(),
            literal(&serde_json::to_string(e).unwrap()),
        );
        db.execute(&sql).await.expect("a schema 1 journal row");
    }
}

async fn journal_rows_of_schema_1_read_back_under_their_conversations_tenant(db: TestDb) {
    db.migrate_to(1).await;
    db.execute(
        "INSERT INTO conversations (id, tenant_id, owner_id, agent, title, created_at_ns, \
         updated_at_ns) VALUES \
         ('c-acme', 'acme', 'alice', 'workflow-author', 'Export', 1, 1), \
         ('c-globex', 'globex', 'bob', 'workflow-author', 'Import', 1, 1)",
    )
    .await
    .expect("schema 1 conversations");
    let acme_events: Vec<AiStreamEvent> = (1..=3).map(|n| event("c-acme", n)).collect();
    let globex_events: Vec<AiStreamEvent> = (1..=2).map(|n| event("c-globex", n)).collect();
    // A journal whose conversation is gone (purged while its turn still appended).
    let orphan_events = [event("c-gone", 1)];
    for events in [&acme_events[..], &globex_events, &orphan_events] {
        insert_schema_1_events(&db, events).await;
    }

    let store = db.open().await;
    let (acme, globex) = (TenantId::new("acme"), TenantId::new("globex"));
    let c_acme = ConversationId::new("c-acme");
    assert_eq!(
        store.read_after(&c_acme, &acme, 0, 100).await.unwrap(),
        acme_events
    );
    assert_eq!(store.last_sequence(&c_acme, &acme).await.unwrap(), 3);
    assert!(
        store
            .read_after(&c_acme, &globex, 0, 100)
            .await
            .unwrap()
            .is_empty(),
        "another tenant reads nothing of acme's journal"
    );
    assert_eq!(store.last_sequence(&c_acme, &globex).await.unwrap(), 0);
    let c_globex = ConversationId::new("c-globex");
    assert_eq!(
        store.read_after(&c_globex, &globex, 0, 100).await.unwrap(),
        globex_events
    );
    assert_eq!(
        db.count("SELECT COUNT(*) FROM stream_events WHERE conversation_id = 'c-gone'")
            .await
            .unwrap(),
        0,
        "rows without a conversation are dropped"
    );

    // The migrated journals go on where they stopped, and only under their tenant.
    store.append(&acme, &event("c-acme", 4)).await.unwrap();
    let error = store
        .append(&globex, &event("c-acme", 4))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "sequence_conflict");
    assert_eq!(store.last_sequence(&c_acme, &acme).await.unwrap(), 4);
}

/// A W3C trace id, as the host stamps one on the records a traced operation makes.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

async fn audit_rows_of_schema_2_read_back_without_a_trace_and_new_ones_carry_theirs(db: TestDb) {
    db.migrate_to(2).await;
    let tenant = TenantId::new("acme");
    let mut old = AiAuditEvent::new(
        tenant.clone(),
        "alice",
        AuditAction::TOOL_INVOKED,
        AuditOutcome::Success,
        "before traces",
    );
    old.timestamp = Utc.timestamp_opt(1_750_000_000, 5).unwrap();
    // Schema 2's audit_events has no trace_id column.
    db.execute(&format!(
        "INSERT INTO audit_events (id, tenant_id, occurred_at_ns, actor_id, action, outcome, \
         body) VALUES ({}, 'acme', {}, 'alice', 'tool.invoked', 'Success', {})",
        literal(old.id.as_str()),
        old.timestamp.timestamp_nanos_opt().unwrap(),
        literal(&serde_json::to_string(&old).unwrap()),
    ))
    .await
    .expect("a schema 2 audit row");

    let store = db.open().await;
    let mut traced = AiAuditEvent::new(
        tenant.clone(),
        "alice",
        AuditAction::TOOL_INVOKED,
        AuditOutcome::Success,
        "in a turn",
    );
    traced.trace_id = Some(TRACE.to_owned());
    store.record(traced.clone()).await.unwrap();

    let all = store.query(&tenant, &AuditQuery::default()).await.unwrap();
    assert_eq!(
        all.items,
        [traced.clone(), old],
        "the old row has no trace id"
    );
    let by_trace = AuditQuery {
        trace_id: Some(TRACE.to_owned()),
        ..AuditQuery::default()
    };
    let found = store.query(&tenant, &by_trace).await.unwrap();
    assert_eq!((found.items, found.total), (vec![traced], 1));
    assert_eq!(
        db.count(&format!(
            "SELECT COUNT(*) FROM audit_events WHERE trace_id = {}",
            literal(TRACE)
        ))
        .await
        .unwrap(),
        1,
        "the trace id has a column of its own"
    );
}
