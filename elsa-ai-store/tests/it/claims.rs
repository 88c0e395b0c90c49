//! Turn claims through two store handles (as two replicas hold them): a conversation is
//! claimed by one turn only, even when the claims share batches with the conversations
//! being created, the commit that journals a turn's terminal event ends its claim, releasing
//! a claim ends that turn's claim and never the next turn's, a turn reads its claim back at
//! its end only when its lease is near its end, and a cancel asked through one handle
//! reaches the heartbeat of the replica holding the claim.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use elsa_ai_abstractions::{
    AiConversation, AiConversationStore, AiError, AiHeldClaim, AiMessage, AiStreamEvent,
    AiStreamEventType, AiTurnClaim, AiTurnClaims, ConversationId, MessageRole, TURN_IN_PROGRESS,
};
use elsa_ai_host::testing::chat::ChatHarness;
use elsa_ai_scripted::{Script, ScriptStep};
use elsa_workflows::TenantId;
use serde_json::json;

use crate::support::{ConcreteStore, TestDb, on_both_backends};

on_both_backends!(
    a_conversation_is_claimed_once_even_in_batches_with_its_creation,
    the_commit_of_a_terminal_event_ends_the_claim,
    a_cancel_request_marks_the_live_claim_for_its_replicas_heartbeat,
    releasing_a_claim_ends_that_turns_claim_and_no_other,
    a_turn_reads_its_claim_back_at_its_end_only_when_its_lease_is_near_its_end,
);

fn tenant() -> TenantId {
    TenantId::new(format!("tenant-{}", ConversationId::generate()))
}

fn claims(store: &ConcreteStore) -> Arc<dyn AiTurnClaims> {
    match store {
        ConcreteStore::Sqlite(store) => Arc::new(store.clone()),
        ConcreteStore::Postgres(store) => Arc::new(store.clone()),
    }
}

fn conversation(tenant: &TenantId, id: &ConversationId) -> AiConversation {
    let now = Utc::now();
    AiConversation {
        id: id.clone(),
        tenant_id: tenant.clone(),
        owner_id: "alice".into(),
        agent: "default".into(),
        title: "a question".into(),
        created_at: now,
        updated_at: now,
        messages: vec![AiMessage {
            role: MessageRole::User,
            content: "a question".into(),
            timestamp: now,
        }],
        retain_days: None,
    }
}

fn claim(tenant: &TenantId, id: &ConversationId, replica: &str) -> AiTurnClaim {
    AiTurnClaim {
        tenant_id: tenant.clone(),
        conversation_id: id.clone(),
        turn_id: format!("turn-{}", ConversationId::generate()),
        replica_id: replica.into(),
        lease_until: Utc::now() + Duration::seconds(30),
        attached_until: None,
    }
}

async fn a_conversation_is_claimed_once_even_in_batches_with_its_creation(db: TestDb) {
    const CONVERSATIONS: usize = 40;
    let (a, b) = (db.open_concrete().await, db.open_concrete().await);
    let tenant = tenant();
    let ids: Vec<ConversationId> = (0..CONVERSATIONS)
        .map(|_| ConversationId::generate())
        .collect();
    // Replica A creates each conversation and claims it at once (as a new conversation's
    // turn does); replica B claims it at the same time.
    let attempts = ids.iter().map(|id| {
        let (a, b, tenant) = (a.clone(), b.clone(), tenant.clone());
        let id = id.clone();
        async move {
            let (from_a, from_b) = (claim(&tenant, &id, "a"), claim(&tenant, &id, "b"));
            let (store, claims_a, claims_b) = (a.shared(), claims(&a), claims(&b));
            let created = conversation(&tenant, &id);
            let (created, mine, theirs) = tokio::join!(
                store.create(&created),
                claims_a.claim(&from_a, Utc::now()),
                claims_b.claim(&from_b, Utc::now()),
            );
            (created, mine.map(|()| from_a), theirs.map(|()| from_b))
        }
    });
    let results = futures::future::join_all(attempts).await;
    let reader = db.open_concrete().await;
    for (id, (created, mine, theirs)) in ids.iter().zip(results) {
        created.unwrap_or_else(|error| panic!("the creation of {id} failed: {error}"));
        let (winner, refused) = match (mine, theirs) {
            (Ok(won), Err(refused)) | (Err(refused), Ok(won)) => (won, refused),
            (mine, theirs) => panic!("exactly one claim of {id} wins: {mine:?} / {theirs:?}"),
        };
        assert_eq!((refused.status(), refused.code()), (409, TURN_IN_PROGRESS));
        let held = claims(&reader).current(&tenant, id).await.unwrap();
        assert_eq!(held.map(|c| c.turn_id), Some(winner.turn_id), "{id}");
        let stored = AiConversationStore::find(&*reader.shared(), id, &tenant)
            .await
            .unwrap();
        assert_eq!(stored.map(|c| c.messages.len()), Some(1), "{id}");
    }
}

async fn the_commit_of_a_terminal_event_ends_the_claim(db: TestDb) {
    let (a, b) = (db.open_concrete().await, db.open_concrete().await);
    let tenant = tenant();
    let id = ConversationId::generate();
    a.shared()
        .create(&conversation(&tenant, &id))
        .await
        .unwrap();
    claims(&a)
        .claim(&claim(&tenant, &id, "a"), Utc::now())
        .await
        .unwrap();
    let event = |sequence, event_type, data| AiStreamEvent {
        event_type,
        conversation_id: id.clone(),
        sequence,
        timestamp: Utc::now(),
        data,
    };
    let journal = a.shared();
    journal
        .append(
            &tenant,
            &event(
                1,
                AiStreamEventType::AssistantDelta,
                json!({"text": "hi"}).into(),
            ),
        )
        .await
        .unwrap();
    let busy = claims(&b)
        .claim(&claim(&tenant, &id, "b"), Utc::now())
        .await
        .expect_err("the turn still runs");
    assert_eq!(busy.code(), TURN_IN_PROGRESS);
    journal
        .append(
            &tenant,
            &event(
                2,
                AiStreamEventType::ConversationCompleted,
                json!({}).into(),
            ),
        )
        .await
        .unwrap();
    assert!(
        claims(&b).current(&tenant, &id).await.unwrap().is_none(),
        "the terminal event's commit deleted the claim"
    );
    claims(&b)
        .claim(&claim(&tenant, &id, "b"), Utc::now())
        .await
        .expect("the next turn claims the conversation anywhere at once");
}

fn event(id: &ConversationId, sequence: u64, event_type: AiStreamEventType) -> AiStreamEvent {
    AiStreamEvent {
        event_type,
        conversation_id: id.clone(),
        sequence,
        timestamp: Utc::now(),
        data: json!({}).into(),
    }
}

/// A store may skip the delete of a claim that its own terminal-event commit has ended: the
/// release must still end a claim no commit ended, and must never end a later turn's claim.
async fn releasing_a_claim_ends_that_turns_claim_and_no_other(db: TestDb) {
    let (a, b) = (db.open_concrete().await, db.open_concrete().await);
    let (claims_a, claims_b) = (claims(&a), claims(&b));
    let tenant = tenant();
    let (ended, open, late) = (
        ConversationId::generate(),
        ConversationId::generate(),
        ConversationId::generate(),
    );
    for id in [&ended, &open, &late] {
        a.shared().create(&conversation(&tenant, id)).await.unwrap();
    }
    let journal = a.shared();

    // A turn whose terminal event was journaled: its release is done, and the next turn's
    // claim (taken on the other replica meanwhile) stays.
    let first = claim(&tenant, &ended, "a");
    claims_a.claim(&first, Utc::now()).await.unwrap();
    journal
        .append(
            &tenant,
            &event(&ended, 1, AiStreamEventType::ConversationCompleted),
        )
        .await
        .unwrap();
    let next = claim(&tenant, &ended, "b");
    claims_b.claim(&next, Utc::now()).await.unwrap();
    claims_a
        .release(&tenant, &ended, &first.turn_id)
        .await
        .unwrap();
    let held = claims_b.current(&tenant, &ended).await.unwrap();
    assert_eq!(held.map(|c| c.turn_id), Some(next.turn_id.clone()));
    // Released again (a retry): still not the next turn's.
    claims_a
        .release(&tenant, &ended, &first.turn_id)
        .await
        .unwrap();
    assert!(claims_b.current(&tenant, &ended).await.unwrap().is_some());
    claims_b
        .release(&tenant, &ended, &next.turn_id)
        .await
        .unwrap();
    assert!(claims_a.current(&tenant, &ended).await.unwrap().is_none());

    // A turn that ended without a terminal event (refused, taken over): the release deletes.
    let unfinished = claim(&tenant, &open, "a");
    claims_a.claim(&unfinished, Utc::now()).await.unwrap();
    journal
        .append(&tenant, &event(&open, 1, AiStreamEventType::AssistantDelta))
        .await
        .unwrap();
    claims_a
        .release(&tenant, &open, &unfinished.turn_id)
        .await
        .unwrap();
    assert!(claims_b.current(&tenant, &open).await.unwrap().is_none());

    // A terminal event journaled before the turn claimed ends nothing of that turn's.
    journal
        .append(
            &tenant,
            &event(&late, 1, AiStreamEventType::ConversationFailed),
        )
        .await
        .unwrap();
    let after = claim(&tenant, &late, "a");
    claims_a.claim(&after, Utc::now()).await.unwrap();
    assert!(claims_b.current(&tenant, &late).await.unwrap().is_some());
    claims_a
        .release(&tenant, &late, &after.turn_id)
        .await
        .unwrap();
    assert!(claims_b.current(&tenant, &late).await.unwrap().is_none());
}

async fn a_cancel_request_marks_the_live_claim_for_its_replicas_heartbeat(db: TestDb) {
    let (a, b) = (db.open_concrete().await, db.open_concrete().await);
    let tenant = tenant();
    let (running, idle, lapsed) = (
        ConversationId::generate(),
        ConversationId::generate(),
        ConversationId::generate(),
    );
    let held = claim(&tenant, &running, "a");
    claims(&a).claim(&held, Utc::now()).await.unwrap();
    let held_turn = held.turn_id.clone();
    let mut old = claim(&tenant, &lapsed, "gone");
    old.lease_until = Utc::now() - Duration::seconds(1);
    claims(&a)
        .claim(&old, Utc::now() - Duration::seconds(31))
        .await
        .unwrap();
    // What a's heartbeat finds: its claim, and whether a cancel was asked.
    let beat = || async {
        let held = claims(&a)
            .renew("a", Utc::now() + Duration::seconds(30), &[])
            .await
            .unwrap();
        let [
            AiHeldClaim {
                turn_id,
                cancel_requested,
            },
        ] = &held[..]
        else {
            panic!("a holds one claim: {held:?}")
        };
        assert_eq!(turn_id, &held_turn);
        *cancel_requested
    };
    assert!(!beat().await);
    // No turn runs in `idle`, and `lapsed`'s replica is gone: nothing to ask.
    for id in [&idle, &lapsed] {
        let asked = claims(&b).request_cancel(&tenant, id, Utc::now()).await;
        assert!(!asked.unwrap(), "{id}");
    }
    // Another tenant's conversation of the same id is not the one running.
    let other = claims(&b)
        .request_cancel(&self::tenant(), &running, Utc::now())
        .await;
    assert!(!other.unwrap());
    assert!(
        claims(&b)
            .request_cancel(&tenant, &running, Utc::now())
            .await
            .unwrap()
    );
    assert!(beat().await, "the next heartbeat finds the request");
}

/// A store's claims, with a count of the claim reads (`current`).
struct CountedReads {
    inner: Arc<dyn AiTurnClaims>,
    reads: AtomicUsize,
}

#[async_trait]
impl AiTurnClaims for CountedReads {
    async fn claim(&self, claim: &AiTurnClaim, now: DateTime<Utc>) -> Result<(), AiError> {
        self.inner.claim(claim, now).await
    }

    async fn current(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
    ) -> Result<Option<AiTurnClaim>, AiError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.current(tenant_id, conversation_id).await
    }

    async fn renew(
        &self,
        replica_id: &str,
        lease_until: DateTime<Utc>,
        watching: &[(TenantId, ConversationId)],
    ) -> Result<Vec<AiHeldClaim>, AiError> {
        self.inner.renew(replica_id, lease_until, watching).await
    }

    async fn request_cancel(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
        now: DateTime<Utc>,
    ) -> Result<bool, AiError> {
        self.inner
            .request_cancel(tenant_id, conversation_id, now)
            .await
    }

    async fn release(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
        turn_id: &str,
    ) -> Result<(), AiError> {
        self.inner
            .release(tenant_id, conversation_id, turn_id)
            .await
    }

    async fn lapsed(&self, now: DateTime<Utc>, limit: usize) -> Result<Vec<AiTurnClaim>, AiError> {
        self.inner.lapsed(now, limit).await
    }

    async fn take_over(
        &self,
        lapsed: &AiTurnClaim,
        by: &AiTurnClaim,
        now: DateTime<Utc>,
    ) -> Result<bool, AiError> {
        self.inner.take_over(lapsed, by, now).await
    }
}

/// Only a lapsed claim is taken over, so a turn whose lease is well ahead of the clock still
/// holds its claim without asking the store; one near the end of its lease asks.
async fn a_turn_reads_its_claim_back_at_its_end_only_when_its_lease_is_near_its_end(db: TestDb) {
    let store = db.open_concrete().await;
    for (lease, pause, reads) in [
        // A fresh lease (a heartbeat would renew it every 10 s; none runs here).
        (30_000, 0, 0),
        // 250 ms into a 300 ms lease: past the last heartbeat's third, so the store tells.
        (300, 250, 1),
    ] {
        let counted = Arc::new(CountedReads {
            inner: claims(&store),
            reads: AtomicUsize::new(0),
        });
        let script = Script::new()
            .step(ScriptStep::Delay(std::time::Duration::from_millis(pause)))
            .step(ScriptStep::reply("Done."));
        let harness = ChatHarness::builder()
            .script(script)
            .turn_claims(counted.clone(), std::time::Duration::from_millis(lease))
            .build();
        let events = harness.run(harness.request("go")).await;
        let last = events.last().expect("events");
        assert_eq!(
            last.event_type,
            AiStreamEventType::ConversationCompleted,
            "{lease} ms lease"
        );
        assert_eq!(
            counted.reads.load(Ordering::SeqCst),
            reads,
            "claim reads at the end of a turn {pause} ms into a {lease} ms lease"
        );
    }
}
