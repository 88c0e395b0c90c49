//! Conversations: the in-memory [`AiConversationStore`], the ownership rule every
//! conversation access goes through, and the [`ConversationService`] that deletes them and
//! sets how long they are kept.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiCaller, AiConversation, AiConversationStore, AiError, AiMessage, AiSessionHandle,
    ConversationId,
};
use elsa_workflows::{Page, PageRequest, TenantId};
use parking_lot::RwLock;

use crate::stream::InMemoryStreamJournal;

mod service;

pub use service::{ConversationService, DeletedConversation, TURN_STOP_WAIT};

/// The conversation `id` if `caller` owns it: same tenant and same actor.
///
/// Unknown conversations, another tenant's and another actor's are all the same 404
/// `conversation_not_found`, so that a caller learns nothing about conversations that are
/// not theirs.
pub async fn find_owned_conversation(
    store: &dyn AiConversationStore,
    caller: &AiCaller,
    id: &ConversationId,
) -> Result<AiConversation, AiError> {
    match store.find(id, &caller.tenant_id).await? {
        Some(conversation)
            if conversation.tenant_id == caller.tenant_id
                && conversation.owner_id == caller.actor_id =>
        {
            Ok(conversation)
        }
        _ => Err(conversation_not_found(id)),
    }
}

/// The 404 for a conversation the caller may not see.
pub(crate) fn conversation_not_found(id: &ConversationId) -> AiError {
    AiError::NotFound {
        code: "conversation_not_found".into(),
        message: format!("conversation '{id}' not found"),
    }
}

/// Keeps conversations in memory, for development and tests.
///
/// Built [`with_journal`](Self::with_journal), purging or deleting a conversation also drops
/// its stream journal, as [`AiConversationStore`] requires.
#[derive(Debug, Default)]
pub struct InMemoryConversationStore {
    conversations: RwLock<HashMap<ConversationId, AiConversation>>,
    sessions: RwLock<HashMap<ConversationId, AiSessionHandle>>,
    journal: Option<Arc<InMemoryStreamJournal>>,
}

impl InMemoryConversationStore {
    /// An empty store without a journal to purge.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store that purges `journal` together with the conversations.
    pub fn with_journal(journal: Arc<InMemoryStreamJournal>) -> Self {
        Self {
            conversations: RwLock::default(),
            sessions: RwLock::default(),
            journal: Some(journal),
        }
    }

    /// Removes the conversations `doomed` picks with their sessions and journals; returns
    /// their ids.
    fn remove_where(&self, doomed: impl Fn(&AiConversation) -> bool) -> Vec<ConversationId> {
        let removed: Vec<(TenantId, ConversationId)> = {
            let mut conversations = self.conversations.write();
            let removed: Vec<(TenantId, ConversationId)> = conversations
                .values()
                .filter(|c| doomed(c))
                .map(|c| (c.tenant_id.clone(), c.id.clone()))
                .collect();
            let mut sessions = self.sessions.write();
            for (_, id) in &removed {
                conversations.remove(id);
                sessions.remove(id);
            }
            removed
        };
        if let Some(journal) = &self.journal {
            journal.remove(removed.iter().map(|(tenant, id)| (tenant, id)));
        }
        removed.into_iter().map(|(_, id)| id).collect()
    }

    /// How many conversations the store holds, across tenants.
    pub fn len(&self) -> usize {
        self.conversations.read().len()
    }

    /// Whether the store holds no conversation.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl AiConversationStore for InMemoryConversationStore {
    async fn create(&self, conversation: &AiConversation) -> Result<(), AiError> {
        let mut conversations = self.conversations.write();
        if conversations.contains_key(&conversation.id) {
            return Err(AiError::conflict(
                "conversation_exists",
                format!("conversation '{}' already exists", conversation.id),
            ));
        }
        conversations.insert(conversation.id.clone(), conversation.clone());
        Ok(())
    }

    async fn find(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
    ) -> Result<Option<AiConversation>, AiError> {
        Ok(self
            .conversations
            .read()
            .get(id)
            .filter(|c| &c.tenant_id == tenant_id)
            .cloned())
    }

    async fn append_message(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
        message: &AiMessage,
    ) -> Result<(), AiError> {
        let mut conversations = self.conversations.write();
        let conversation = conversations
            .get_mut(id)
            .filter(|c| &c.tenant_id == tenant_id)
            .ok_or_else(|| conversation_not_found(id))?;
        conversation.messages.push(message.clone());
        conversation.updated_at = conversation.updated_at.max(message.timestamp);
        Ok(())
    }

    async fn list(
        &self,
        tenant_id: &TenantId,
        owner_id: &str,
        page: PageRequest,
    ) -> Result<Page<AiConversation>, AiError> {
        let mut found: Vec<AiConversation> = self
            .conversations
            .read()
            .values()
            .filter(|c| &c.tenant_id == tenant_id && c.owner_id == owner_id)
            .map(|c| AiConversation {
                messages: Vec::new(),
                ..c.clone()
            })
            .collect();
        found.sort_by(|a, b| {
            b.updated_at
                .cmp(&a.updated_at)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(page.slice(found))
    }

    async fn purge_expired(
        &self,
        cutoff: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<usize, AiError> {
        let expired = self.remove_where(|c| {
            c.updated_at < cutoff
                || c.retain_days.is_some_and(|days| {
                    c.updated_at < now - chrono::TimeDelta::days(i64::from(days))
                })
        });
        Ok(expired.len())
    }

    async fn delete(&self, id: &ConversationId, tenant_id: &TenantId) -> Result<bool, AiError> {
        Ok(!self
            .remove_where(|c| &c.id == id && &c.tenant_id == tenant_id)
            .is_empty())
    }

    async fn delete_owned_by(
        &self,
        tenant_id: &TenantId,
        owner_id: &str,
    ) -> Result<Vec<ConversationId>, AiError> {
        Ok(self.remove_where(|c| &c.tenant_id == tenant_id && c.owner_id == owner_id))
    }

    async fn set_retain_days(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
        retain_days: Option<u32>,
    ) -> Result<(), AiError> {
        let mut conversations = self.conversations.write();
        let conversation = conversations
            .get_mut(id)
            .filter(|c| &c.tenant_id == tenant_id)
            .ok_or_else(|| conversation_not_found(id))?;
        conversation.retain_days = retain_days;
        Ok(())
    }

    async fn provider_session(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
    ) -> Result<Option<AiSessionHandle>, AiError> {
        if self.find(id, tenant_id).await?.is_none() {
            return Ok(None);
        }
        Ok(self.sessions.read().get(id).cloned())
    }

    async fn set_provider_session(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
        session: &AiSessionHandle,
    ) -> Result<(), AiError> {
        if self.find(id, tenant_id).await?.is_none() {
            return Err(conversation_not_found(id));
        }
        self.sessions.write().insert(id.clone(), session.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use chrono::Duration;
    use elsa_ai_abstractions::{
        AiStreamEvent, AiStreamEventType, AiStreamJournal, MessageRole, Permission,
    };
    use serde_json::json;

    use super::*;

    fn conversation(id: &str, tenant: &str, owner: &str, at: DateTime<Utc>) -> AiConversation {
        AiConversation {
            id: ConversationId::new(id),
            tenant_id: tenant.into(),
            owner_id: owner.into(),
            agent: "workflow-author".into(),
            title: id.into(),
            created_at: at,
            updated_at: at,
            messages: Vec::new(),
            retain_days: None,
        }
    }

    #[tokio::test]
    async fn conversations_are_tenant_scoped_and_owned() {
        let store = InMemoryConversationStore::new();
        let now = Utc::now();
        store
            .create(&conversation("c1", "acme", "alice", now))
            .await
            .unwrap();
        let twice = store
            .create(&conversation("c1", "acme", "alice", now))
            .await;
        assert_eq!(twice.unwrap_err().code(), "conversation_exists");
        let id = ConversationId::new("c1");
        assert!(store.find(&id, &"globex".into()).await.unwrap().is_none());

        let alice = AiCaller::new("alice", "acme", [Permission::READ_WORKFLOWS]);
        let bob = AiCaller::new("bob", "acme", [Permission::READ_WORKFLOWS]);
        let mallory = AiCaller::new("alice", "globex", [Permission::READ_WORKFLOWS]);
        assert!(find_owned_conversation(&store, &alice, &id).await.is_ok());
        let unknown = find_owned_conversation(&store, &alice, &ConversationId::new("c9"))
            .await
            .unwrap_err();
        for stranger in [&bob, &mallory] {
            let error = find_owned_conversation(&store, stranger, &id)
                .await
                .unwrap_err();
            assert_eq!(
                (error.status(), error.code()),
                (404, "conversation_not_found")
            );
            assert_eq!(
                error.message().replace("c1", "c9"),
                unknown.message(),
                "a stranger's conversation reads exactly like an unknown one"
            );
        }

        let message = AiMessage {
            role: MessageRole::User,
            content: "hi".into(),
            timestamp: now + Duration::seconds(5),
        };
        store
            .append_message(&id, &"acme".into(), &message)
            .await
            .unwrap();
        let cross = store.append_message(&id, &"globex".into(), &message).await;
        assert_eq!(cross.unwrap_err().status(), 404);
        let found = store.find(&id, &"acme".into()).await.unwrap().unwrap();
        assert_eq!(found.messages.len(), 1);
        assert_eq!(found.messages[0], message);
        assert_eq!(found.updated_at, message.timestamp);
    }

    #[tokio::test]
    async fn lists_are_newest_first_without_messages() {
        let store = InMemoryConversationStore::new();
        let now = Utc::now();
        store
            .create(&conversation(
                "old",
                "acme",
                "alice",
                now - Duration::hours(1),
            ))
            .await
            .unwrap();
        let mut new = conversation("new", "acme", "alice", now);
        new.messages.push(AiMessage {
            role: MessageRole::User,
            content: "hi".into(),
            timestamp: now,
        });
        store.create(&new).await.unwrap();
        store
            .create(&conversation("bobs", "acme", "bob", now))
            .await
            .unwrap();
        store
            .create(&conversation("other", "globex", "alice", now))
            .await
            .unwrap();
        let page = store
            .list(&"acme".into(), "alice", PageRequest::default())
            .await
            .unwrap();
        let ids: Vec<&str> = page.items.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["new", "old"]);
        assert!(page.items.iter().all(|c| c.messages.is_empty()));
    }

    #[tokio::test]
    async fn purging_drops_expired_conversations_and_their_journals() {
        let journal = Arc::new(InMemoryStreamJournal::new());
        let store = InMemoryConversationStore::with_journal(journal.clone());
        let now = Utc::now();
        store
            .create(&conversation(
                "old",
                "acme",
                "alice",
                now - Duration::days(40),
            ))
            .await
            .unwrap();
        store
            .create(&conversation("new", "acme", "alice", now))
            .await
            .unwrap();
        // The same id under another tenant is another conversation's journal: it stays.
        let (acme, globex) = (TenantId::new("acme"), TenantId::new("globex"));
        for (tenant, id) in [(&acme, "old"), (&acme, "new"), (&globex, "old")] {
            journal
                .append(
                    tenant,
                    &AiStreamEvent {
                        event_type: AiStreamEventType::ConversationStarted,
                        conversation_id: ConversationId::new(id),
                        sequence: 1,
                        timestamp: now,
                        data: json!({}).into(),
                    },
                )
                .await
                .unwrap();
        }
        assert_eq!(
            store
                .purge_expired(now - Duration::days(30), now)
                .await
                .unwrap(),
            1
        );
        assert_eq!(store.len(), 1);
        let last = |tenant: &TenantId, id: &str| {
            let journal = journal.clone();
            let (tenant, id) = (tenant.clone(), ConversationId::new(id));
            async move { journal.last_sequence(&id, &tenant).await.unwrap() }
        };
        assert_eq!(last(&acme, "old").await, 0);
        assert_eq!(last(&acme, "new").await, 1);
        assert_eq!(last(&globex, "old").await, 1);
    }
}
