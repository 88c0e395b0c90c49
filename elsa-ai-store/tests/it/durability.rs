//! Everything acknowledged survives: write, drop every handle, reopen (SQLite: the same file;
//! PostgreSQL: a new pool) and find it all intact.

use std::collections::BTreeMap;

use chrono::{Duration, Utc};
use elsa_ai_abstractions::{
    AiAuditEvent, AiConversation, AiConversationStore, AiMessage, AiProposalStore, AiStreamEvent,
    AiStreamEventType, AiToolEnablementStore, AuditAction, AuditOutcome, AuditQuery,
    ConversationId, MessageRole, ProposalQuery, ProposalStatus, ToolEnablement,
};
use elsa_workflows::{PageRequest, TenantId};
use serde_json::json;
use weaver_testkit::conformance::proposals::sample;

use crate::support::{TestDb, on_both_backends};

on_both_backends!(
    everything_survives_dropping_every_handle_and_reopening,
    replicas_opening_a_new_database_together_migrate_it_once,
);

/// Several processes (here: pools) open a database nobody has migrated yet, at once: each
/// open succeeds and the schema exists once.
async fn replicas_opening_a_new_database_together_migrate_it_once(db: TestDb) {
    let opened = futures::future::join_all((0..4).map(|_| db.open())).await;
    let tenant = TenantId::new("acme");
    let proposal = sample(&tenant, Utc::now());
    opened[0].save(&proposal).await.unwrap();
    for store in &opened {
        let found = AiProposalStore::find(&**store, &proposal.id, &tenant)
            .await
            .unwrap();
        assert_eq!(found.as_ref(), Some(&proposal));
    }
    let applied = db
        .execute("UPDATE _sqlx_migrations SET description = description")
        .await
        .unwrap();
    assert_eq!(
        applied,
        db.migrations() as u64,
        "every migration, recorded once"
    );
}

async fn everything_survives_dropping_every_handle_and_reopening(db: TestDb) {
    let tenant = TenantId::new("acme");
    let now = Utc::now();
    let store = db.open().await;

    // Proposals, some of them moved on by an update.
    let mut proposals = Vec::new();
    for i in 0..20 {
        let mut proposal = sample(&tenant, now + Duration::seconds(i));
        store.save(&proposal).await.unwrap();
        if i % 2 == 0 {
            proposal.status = ProposalStatus::Validated;
            proposal.revision = 1;
            store.update(&proposal, 0).await.unwrap();
        }
        proposals.push(proposal);
    }

    // Audit records, written concurrently so that they are committed in batches.
    let events: Vec<AiAuditEvent> = (0..300)
        .map(|i| {
            let mut event = AiAuditEvent::new(
                tenant.clone(),
                format!("actor-{}", i % 7),
                AuditAction::TOOL_INVOKED,
                AuditOutcome::Success,
                format!("call {i}"),
            );
            event.details = json!({"call": i}).into();
            event
        })
        .collect();
    let acknowledged =
        futures::future::join_all(events.iter().map(|e| store.record(e.clone()))).await;
    assert!(acknowledged.iter().all(Result::is_ok));

    // A conversation with messages and its journal; an enablement decision.
    let conversation = AiConversation {
        id: ConversationId::generate(),
        tenant_id: tenant.clone(),
        owner_id: "alice".into(),
        agent: "workflow-author".into(),
        title: "export".into(),
        created_at: now,
        updated_at: now,
        messages: vec![AiMessage {
            role: MessageRole::User,
            content: "why?".into(),
            timestamp: now,
        }],
        retain_days: None,
    };
    store.create(&conversation).await.unwrap();
    let journal: Vec<AiStreamEvent> = (1..=30)
        .map(|sequence| AiStreamEvent {
            event_type: AiStreamEventType::AssistantDelta,
            conversation_id: conversation.id.clone(),
            sequence,
            timestamp: now,
            data: json!({"text": sequence}).into(),
        })
        .collect();
    for event in &journal {
        store.append(&tenant, event).await.unwrap();
    }
    let enablement = ToolEnablement {
        tenant_id: tenant.clone(),
        tool_name: "workflow.proposeCreate".into(),
        agent: Some("workflow-author".into()),
        enabled: true,
        changed_by: "admin".into(),
        changed_at: now,
    };
    store.set(&enablement).await.unwrap();

    drop(store);
    let reopened = db.open().await;

    for proposal in &proposals {
        let found = AiProposalStore::find(&*reopened, &proposal.id, &tenant)
            .await
            .unwrap();
        assert_eq!(found.as_ref(), Some(proposal));
    }
    let all = ProposalQuery {
        page: PageRequest::new(0, 100),
        ..ProposalQuery::default()
    };
    let listed = AiProposalStore::list(&*reopened, &tenant, &all)
        .await
        .unwrap();
    assert_eq!(listed.total, proposals.len());

    let trail = reopened
        .query(
            &tenant,
            &AuditQuery {
                page: PageRequest::new(0, 500),
                ..AuditQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(trail.total, events.len());
    let stored: BTreeMap<_, _> = trail.items.into_iter().map(|e| (e.id.clone(), e)).collect();
    for event in &events {
        assert_eq!(stored.get(&event.id), Some(event));
    }

    assert_eq!(
        AiConversationStore::find(&*reopened, &conversation.id, &tenant)
            .await
            .unwrap(),
        Some(conversation.clone())
    );
    assert_eq!(
        reopened
            .read_after(&conversation.id, &tenant, 0, 100)
            .await
            .unwrap(),
        journal
    );
    assert_eq!(
        reopened
            .last_sequence(&conversation.id, &tenant)
            .await
            .unwrap(),
        30
    );
    assert_eq!(
        AiToolEnablementStore::list(&*reopened, &tenant)
            .await
            .unwrap(),
        [enablement]
    );

    // Reopening is idempotent: the migrations ran once and the data is still one copy.
    drop(reopened);
    let again = db.open().await;
    let listed_again = AiProposalStore::list(&*again, &tenant, &all).await.unwrap();
    assert_eq!(listed_again.items, listed.items);
}
