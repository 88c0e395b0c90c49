//! [`AiConversationStore`]: creation, tenant scope, messages, provider sessions, the owner's
//! list, deletion and retention (both also remove the [`AiStreamJournal`] of every
//! conversation that goes).

use chrono::{DateTime, Duration, Utc};
use elsa_ai_abstractions::{
    AiConversation, AiConversationStore, AiMessage, AiSessionHandle, AiStreamEvent,
    AiStreamEventType, AiStreamJournal, ConversationId, MessageRole,
};
use elsa_workflows::{PageRequest, TenantId};
use serde_json::json;

use super::{assert_status, case, unique};

/// Every case, in order. `journal` must be the journal the store purges.
pub async fn run<S, J>(store: &S, journal: &J)
where
    S: AiConversationStore + ?Sized,
    J: AiStreamJournal + ?Sized,
{
    create_then_find_round_trips_in_the_tenant(store).await;
    append_message_keeps_order_and_bumps_updated_at(store).await;
    provider_sessions_are_kept_per_conversation_in_the_tenant(store).await;
    writes_made_together_land_whatever_one_of_them_is_refused(store).await;
    list_is_the_owners_newest_first_without_messages(store).await;
    delete_takes_a_conversation_with_everything_it_holds_in_its_tenant_only(store, journal).await;
    purge_before_drops_expired_conversations_and_their_journals(store, journal).await;
    a_conversation_kept_shorter_by_its_owner_is_purged_sooner(store, journal).await;
}

fn tenant() -> TenantId {
    TenantId::new(unique("tenant"))
}

/// A conversation of `owner` in `tenant`, last updated at `at`.
pub fn conversation(tenant: &TenantId, owner: &str, at: DateTime<Utc>) -> AiConversation {
    AiConversation {
        id: ConversationId::generate(),
        tenant_id: tenant.clone(),
        owner_id: owner.into(),
        agent: "workflow-author".into(),
        title: "Why did the export fail?".into(),
        created_at: at,
        updated_at: at,
        messages: Vec::new(),
        retain_days: None,
    }
}

fn message(role: MessageRole, content: &str, at: DateTime<Utc>) -> AiMessage {
    AiMessage {
        role,
        content: content.into(),
        timestamp: at,
    }
}

/// A conversation (with messages) is found exactly, only in its tenant; its id is unique.
pub async fn create_then_find_round_trips_in_the_tenant<S: AiConversationStore + ?Sized>(
    store: &S,
) {
    case("conversations: create then find round-trips in the tenant");
    let tenant = tenant();
    let now = Utc::now();
    let mut created = conversation(&tenant, "alice", now);
    created.messages = vec![
        message(MessageRole::User, "Why did it fail? ✓", now),
        message(MessageRole::Assistant, "The HTTP call timed out.", now),
    ];
    store.create(&created).await.expect("create succeeds");
    let twice = assert_status(
        store.create(&created).await,
        409,
        "creating the same id twice",
    );
    assert_eq!(twice.code(), "conversation_exists");
    assert_eq!(
        store.find(&created.id, &tenant).await.unwrap(),
        Some(created.clone())
    );
    assert_eq!(
        store
            .find(&created.id, &TenantId::new(unique("other")))
            .await
            .unwrap(),
        None,
        "another tenant does not see the conversation"
    );
    assert_eq!(
        store
            .find(&ConversationId::generate(), &tenant)
            .await
            .unwrap(),
        None
    );
}

/// Provider sessions recorded at once (a group-committing store writes them together) are
/// each kept with their own conversation, the last one recorded wins, and one for a
/// conversation outside the tenant is a 404 that changes nothing.
pub async fn provider_sessions_are_kept_per_conversation_in_the_tenant<
    S: AiConversationStore + ?Sized,
>(
    store: &S,
) {
    case("conversations: provider sessions are kept per conversation in the tenant");
    let tenant = tenant();
    let other = TenantId::new(unique("other"));
    let now = Utc::now();
    let conversations: Vec<AiConversation> = (0..8)
        .map(|_| conversation(&tenant, "alice", now))
        .collect();
    for created in &conversations {
        store.create(created).await.unwrap();
        assert_eq!(
            store.provider_session(&created.id, &tenant).await.unwrap(),
            None
        );
    }
    let session = |id: &ConversationId, n: usize| AiSessionHandle {
        session_id: format!("session-{n}-{id}"),
        provider: "scripted".into(),
        conversation_id: id.clone(),
    };
    let sessions: Vec<AiSessionHandle> = conversations
        .iter()
        .enumerate()
        .map(|(n, c)| session(&c.id, n))
        .collect();
    let recorded = futures::future::join_all(
        conversations
            .iter()
            .zip(&sessions)
            .map(|(c, s)| store.set_provider_session(&c.id, &tenant, s)),
    )
    .await;
    assert!(recorded.iter().all(Result::is_ok), "{recorded:?}");
    let first = &conversations[0].id;
    let missing = ConversationId::generate();
    let (newer, unknown, stranger) = (
        session(first, 100),
        session(&missing, 101),
        session(first, 102),
    );
    let (replaced, unknown, elsewhere) = futures::join!(
        store.set_provider_session(first, &tenant, &newer),
        store.set_provider_session(&missing, &tenant, &unknown),
        store.set_provider_session(first, &other, &stranger),
    );
    replaced.expect("a session is replaced");
    assert_eq!(
        assert_status(unknown, 404, "an unknown conversation").code(),
        "conversation_not_found"
    );
    assert_eq!(
        assert_status(elsewhere, 404, "another tenant's conversation").code(),
        "conversation_not_found"
    );
    for (n, created) in conversations.iter().enumerate() {
        let expected = session(&created.id, if n == 0 { 100 } else { n });
        assert_eq!(
            store.provider_session(&created.id, &tenant).await.unwrap(),
            Some(expected)
        );
        assert_eq!(
            store.provider_session(&created.id, &other).await.unwrap(),
            None,
            "another tenant does not see the session"
        );
    }
}

/// Messages are kept in the order appended; `updated_at` moves to the newest message and
/// never back; appending in another tenant or to an unknown conversation is a 404.
pub async fn append_message_keeps_order_and_bumps_updated_at<S: AiConversationStore + ?Sized>(
    store: &S,
) {
    case("conversations: append message keeps order and bumps updated_at");
    let tenant = tenant();
    let start = Utc::now();
    let created = conversation(&tenant, "alice", start);
    store.create(&created).await.unwrap();
    let later = message(MessageRole::User, "hello", start + Duration::seconds(5));
    let earlier = message(MessageRole::Assistant, "hi", start + Duration::seconds(1));
    store
        .append_message(&created.id, &tenant, &later)
        .await
        .unwrap();
    store
        .append_message(&created.id, &tenant, &earlier)
        .await
        .unwrap();
    let found = store.find(&created.id, &tenant).await.unwrap().unwrap();
    assert_eq!(found.messages, [later.clone(), earlier.clone()]);
    assert_eq!(
        found.updated_at, later.timestamp,
        "updated_at never moves back"
    );
    assert_eq!(found.created_at, start);

    let other = TenantId::new(unique("other"));
    let cross = store.append_message(&created.id, &other, &later).await;
    assert_eq!(
        assert_status(cross, 404, "appending from another tenant").code(),
        "conversation_not_found"
    );
    assert_status(
        store
            .append_message(&ConversationId::generate(), &tenant, &later)
            .await,
        404,
        "appending to an unknown conversation",
    );
    assert_eq!(
        store
            .find(&created.id, &tenant)
            .await
            .unwrap()
            .unwrap()
            .messages
            .len(),
        2
    );
}

/// Writes made at the same moment (which a store may commit together) each land or are
/// refused on their own: messages and sessions of the tenant's conversations land whole while
/// an append from another tenant, one to an unknown conversation and a creation whose id
/// exists are refused, and none of the refused writes leaves anything behind.
pub async fn writes_made_together_land_whatever_one_of_them_is_refused<
    S: AiConversationStore + ?Sized,
>(
    store: &S,
) {
    case("conversations: writes made together land whatever one of them is refused");
    let tenant = tenant();
    let other = TenantId::new(unique("other"));
    let now = Utc::now();
    let conversations: Vec<AiConversation> = (0..6)
        .map(|_| conversation(&tenant, "alice", now))
        .collect();
    for created in &conversations {
        store.create(created).await.unwrap();
    }
    let said = |n: usize| message(MessageRole::User, &format!("message {n}"), now);
    let session = |n: usize, id: &ConversationId| AiSessionHandle {
        session_id: format!("session-{n}"),
        provider: "scripted".into(),
        conversation_id: id.clone(),
    };
    let messages: Vec<AiMessage> = (0..conversations.len()).map(said).collect();
    let sessions: Vec<AiSessionHandle> = conversations
        .iter()
        .enumerate()
        .map(|(n, c)| session(n, &c.id))
        .collect();
    let first = &conversations[0].id;
    let unknown_id = ConversationId::generate();
    let stray = message(MessageRole::User, "not yours", now);
    let fresh = conversation(&tenant, "alice", now);
    let mut duplicate = conversation(&tenant, "mallory", now);
    duplicate.id = first.clone();
    duplicate.title = "Replaced".into();
    let (appended, recorded, cross, unknown, created, existing) = futures::join!(
        futures::future::join_all(
            conversations
                .iter()
                .zip(&messages)
                .map(|(c, m)| store.append_message(&c.id, &tenant, m)),
        ),
        futures::future::join_all(
            conversations
                .iter()
                .zip(&sessions)
                .map(|(c, s)| store.set_provider_session(&c.id, &tenant, s)),
        ),
        store.append_message(first, &other, &stray),
        store.append_message(&unknown_id, &tenant, &stray),
        store.create(&fresh),
        store.create(&duplicate),
    );
    assert!(appended.iter().all(Result::is_ok), "{appended:?}");
    assert!(recorded.iter().all(Result::is_ok), "{recorded:?}");
    created.expect("a new conversation is created beside the refused writes");
    assert_eq!(
        assert_status(cross, 404, "appending from another tenant").code(),
        "conversation_not_found"
    );
    assert_eq!(
        assert_status(unknown, 404, "appending to an unknown conversation").code(),
        "conversation_not_found"
    );
    assert_status(existing, 409, "creating a conversation whose id exists");
    for (n, c) in conversations.iter().enumerate() {
        let found = store.find(&c.id, &tenant).await.unwrap().unwrap();
        assert_eq!(
            found.messages,
            [messages[n].clone()],
            "conversation {n} holds its message only"
        );
        assert_eq!(
            (found.owner_id.as_str(), found.title.as_str()),
            (c.owner_id.as_str(), c.title.as_str()),
            "conversation {n} is not replaced"
        );
        assert_eq!(
            store
                .provider_session(&c.id, &tenant)
                .await
                .unwrap()
                .as_ref(),
            Some(&sessions[n])
        );
    }
    assert!(store.find(&fresh.id, &tenant).await.unwrap().is_some());
    assert_eq!(store.find(first, &other).await.unwrap(), None);
}

/// The owner's conversations in the tenant, most recently updated first (ties by id),
/// without messages, paged with the total.
pub async fn list_is_the_owners_newest_first_without_messages<S: AiConversationStore + ?Sized>(
    store: &S,
) {
    case("conversations: list is the owner's, newest first, without messages");
    let tenant = tenant();
    let now = Utc::now();
    let old = conversation(&tenant, "alice", now - Duration::hours(1));
    let mut new = conversation(&tenant, "alice", now);
    new.messages.push(message(MessageRole::User, "hi", now));
    let mut tie_a = conversation(&tenant, "alice", now - Duration::minutes(30));
    let mut tie_b = tie_a.clone();
    tie_a.id = ConversationId::new(format!("a-{}", unique("c")));
    tie_b.id = ConversationId::new(format!("b-{}", unique("c")));
    for c in [&old, &new, &tie_b, &tie_a] {
        store.create(c).await.unwrap();
    }
    store
        .create(&conversation(&tenant, "bob", now))
        .await
        .unwrap();
    store
        .create(&conversation(&TenantId::new(unique("other")), "alice", now))
        .await
        .unwrap();

    let page = store
        .list(&tenant, "alice", PageRequest::default())
        .await
        .unwrap();
    let ids: Vec<&ConversationId> = page.items.iter().map(|c| &c.id).collect();
    assert_eq!(ids, [&new.id, &tie_a.id, &tie_b.id, &old.id]);
    assert_eq!(page.total, 4);
    assert!(
        page.items.iter().all(|c| c.messages.is_empty()),
        "lists carry no messages"
    );
    assert_eq!(
        page.items[0],
        AiConversation {
            messages: Vec::new(),
            ..new.clone()
        }
    );
    let second = store
        .list(&tenant, "alice", PageRequest::new(3, 2))
        .await
        .unwrap();
    assert_eq!((second.items.len(), second.total), (1, 4));
    assert_eq!(second.items[0].id, old.id);
    assert_eq!(
        store
            .list(&tenant, "carol", PageRequest::default())
            .await
            .unwrap()
            .total,
        0
    );
}

fn started(conversation: &ConversationId) -> AiStreamEvent {
    AiStreamEvent {
        event_type: AiStreamEventType::ConversationStarted,
        conversation_id: conversation.clone(),
        sequence: 1,
        timestamp: Utc::now(),
        data: json!({"conversationId": conversation}).into(),
    }
}

/// Conversations last updated before the cutoff go, with their messages and journals; newer
/// ones, journals without a conversation and another tenant's journal under the same
/// conversation id stay.
pub async fn purge_before_drops_expired_conversations_and_their_journals<S, J>(
    store: &S,
    journal: &J,
) where
    S: AiConversationStore + ?Sized,
    J: AiStreamJournal + ?Sized,
{
    case("conversations: purge before drops expired conversations and their journals");
    let tenant = tenant();
    let now = Utc::now();
    let mut expired = conversation(&tenant, "alice", now - Duration::days(40));
    expired
        .messages
        .push(message(MessageRole::User, "old", expired.created_at));
    let mut recent = conversation(&tenant, "alice", now - Duration::days(40));
    store.create(&expired).await.unwrap();
    store.create(&recent).await.unwrap();
    // A message today keeps a conversation that started long ago.
    let today = message(MessageRole::User, "still here", now);
    store
        .append_message(&recent.id, &tenant, &today)
        .await
        .unwrap();
    recent.messages.push(today);
    recent.updated_at = now;
    let orphan = ConversationId::generate();
    for id in [&expired.id, &recent.id, &orphan] {
        journal.append(&tenant, &started(id)).await.unwrap();
    }
    let other_tenant = self::tenant();
    journal
        .append(&other_tenant, &started(&expired.id))
        .await
        .unwrap();

    let purged = store
        .purge_expired(now - Duration::days(30), now)
        .await
        .unwrap();
    assert_eq!(purged, 1, "exactly the expired conversation is purged");
    assert_eq!(store.find(&expired.id, &tenant).await.unwrap(), None);
    assert_eq!(
        journal.last_sequence(&expired.id, &tenant).await.unwrap(),
        0,
        "its journal went with it"
    );
    assert!(
        journal
            .read_after(&expired.id, &tenant, 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        journal
            .last_sequence(&expired.id, &other_tenant)
            .await
            .unwrap(),
        1,
        "another tenant's journal of the same id is not the purged conversation's"
    );
    assert_eq!(
        store.find(&recent.id, &tenant).await.unwrap(),
        Some(recent.clone())
    );
    assert_eq!(journal.last_sequence(&recent.id, &tenant).await.unwrap(), 1);
    assert_eq!(journal.last_sequence(&orphan, &tenant).await.unwrap(), 1);
    assert_eq!(
        store
            .purge_expired(now - Duration::days(30), now)
            .await
            .unwrap(),
        0
    );

    // A purged id is free again.
    let reborn = AiConversation {
        messages: Vec::new(),
        ..expired.clone()
    };
    store.create(&reborn).await.unwrap();
    assert_eq!(
        store.find(&expired.id, &tenant).await.unwrap(),
        Some(reborn)
    );
}

/// Deleting a conversation takes its messages, provider session and journal, in its tenant
/// only (another tenant's delete of the id finds nothing); deleting an owner's conversations
/// takes exactly theirs; a deleted id is free again.
pub async fn delete_takes_a_conversation_with_everything_it_holds_in_its_tenant_only<S, J>(
    store: &S,
    journal: &J,
) where
    S: AiConversationStore + ?Sized,
    J: AiStreamJournal + ?Sized,
{
    case("conversations: delete takes a conversation with everything it holds, in its tenant only");
    let tenant = tenant();
    let other_tenant = self::tenant();
    let now = Utc::now();
    let mut doomed = conversation(&tenant, "alice", now);
    doomed
        .messages
        .push(message(MessageRole::User, "a secret I pasted", now));
    let kept = conversation(&tenant, "alice", now);
    let bobs = conversation(&tenant, "bob", now);
    let elsewhere = conversation(&other_tenant, "alice", now);
    for c in [&doomed, &kept, &bobs, &elsewhere] {
        store.create(c).await.unwrap();
        journal.append(&c.tenant_id, &started(&c.id)).await.unwrap();
    }
    let session = AiSessionHandle {
        session_id: format!("session-{}", doomed.id),
        provider: "scripted".into(),
        conversation_id: doomed.id.clone(),
    };
    store
        .set_provider_session(&doomed.id, &tenant, &session)
        .await
        .unwrap();

    assert!(
        !store.delete(&doomed.id, &other_tenant).await.unwrap(),
        "another tenant's delete finds nothing"
    );
    assert_eq!(
        store.find(&doomed.id, &tenant).await.unwrap(),
        Some(doomed.clone())
    );
    assert!(store.delete(&doomed.id, &tenant).await.unwrap());
    assert_eq!(store.find(&doomed.id, &tenant).await.unwrap(), None);
    assert_eq!(
        store.provider_session(&doomed.id, &tenant).await.unwrap(),
        None
    );
    assert_eq!(journal.last_sequence(&doomed.id, &tenant).await.unwrap(), 0);
    assert!(!store.delete(&doomed.id, &tenant).await.unwrap(), "gone");
    assert_eq!(journal.last_sequence(&kept.id, &tenant).await.unwrap(), 1);

    let mut deleted = store.delete_owned_by(&tenant, "alice").await.unwrap();
    deleted.sort();
    assert_eq!(deleted, std::slice::from_ref(&kept.id));
    assert_eq!(store.find(&kept.id, &tenant).await.unwrap(), None);
    assert_eq!(journal.last_sequence(&kept.id, &tenant).await.unwrap(), 0);
    assert!(store.find(&bobs.id, &tenant).await.unwrap().is_some());
    assert!(
        store
            .find(&elsewhere.id, &other_tenant)
            .await
            .unwrap()
            .is_some(),
        "the same owner in another tenant keeps hers"
    );
    assert_eq!(
        journal
            .last_sequence(&elsewhere.id, &other_tenant)
            .await
            .unwrap(),
        1
    );
    assert!(
        store
            .delete_owned_by(&tenant, "alice")
            .await
            .unwrap()
            .is_empty()
    );

    // A deleted id is free again.
    let reborn = conversation(&tenant, "alice", now);
    let reborn = AiConversation {
        id: doomed.id.clone(),
        ..reborn
    };
    store.create(&reborn).await.unwrap();
    assert_eq!(store.find(&doomed.id, &tenant).await.unwrap(), Some(reborn));
    for (id, tenant) in [
        (&doomed.id, &tenant),
        (&bobs.id, &tenant),
        (&elsewhere.id, &other_tenant),
    ] {
        assert!(store.delete(id, tenant).await.unwrap());
    }
}

/// A conversation its owner keeps for fewer days than the server's window goes once those
/// days have passed since its last change, with its journal; the setting is read back,
/// changed, and refused outside the tenant.
pub async fn a_conversation_kept_shorter_by_its_owner_is_purged_sooner<S, J>(store: &S, journal: &J)
where
    S: AiConversationStore + ?Sized,
    J: AiStreamJournal + ?Sized,
{
    case("conversations: a conversation kept shorter by its owner is purged sooner");
    let tenant = tenant();
    let now = Utc::now();
    let window = now - Duration::days(30);
    let short = AiConversation {
        retain_days: Some(2),
        ..conversation(&tenant, "alice", now - Duration::days(3))
    };
    let longer = conversation(&tenant, "alice", now - Duration::days(3));
    for c in [&short, &longer] {
        store.create(c).await.unwrap();
        journal.append(&tenant, &started(&c.id)).await.unwrap();
    }
    assert_eq!(
        store.find(&short.id, &tenant).await.unwrap(),
        Some(short.clone()),
        "created with its own retention"
    );
    store
        .set_retain_days(&longer.id, &tenant, Some(7))
        .await
        .unwrap();
    assert_eq!(
        store
            .find(&longer.id, &tenant)
            .await
            .unwrap()
            .and_then(|c| c.retain_days),
        Some(7)
    );
    assert_status(
        store
            .set_retain_days(&longer.id, &self::tenant(), Some(1))
            .await,
        404,
        "setting another tenant's retention",
    );

    // Other cases' conversations past the window may go too: count at least this one.
    assert!(store.purge_expired(window, now).await.unwrap() >= 1);
    assert_eq!(store.find(&short.id, &tenant).await.unwrap(), None);
    assert_eq!(journal.last_sequence(&short.id, &tenant).await.unwrap(), 0);
    assert!(store.find(&longer.id, &tenant).await.unwrap().is_some());

    store
        .set_retain_days(&longer.id, &tenant, Some(1))
        .await
        .unwrap();
    assert_eq!(store.purge_expired(window, now).await.unwrap(), 1);
    assert_eq!(store.find(&longer.id, &tenant).await.unwrap(), None);
}
