//! The in-memory stream journal for development and tests.

use std::collections::HashMap;

use async_trait::async_trait;
use elsa_ai_abstractions::{AiError, AiStreamEvent, AiStreamJournal, ConversationId};
use elsa_workflows::TenantId;
use parking_lot::RwLock;

/// Keeps every stream event in memory, per conversation of a tenant, in sequence order.
///
/// Appends are checked: an event's sequence must be exactly one more than the last one
/// stored for its (tenant, conversation) (409 `sequence_conflict` otherwise), so the journal
/// is gap-free by construction. Production hosts use a durable journal (`elsa-ai-store`)
/// instead; the [`InMemoryConversationStore`](crate::InMemoryConversationStore) purges this
/// one when conversations expire.
#[derive(Debug, Default)]
pub struct InMemoryStreamJournal {
    // Event `n` of a conversation sits at index `n - 1`. Tenants first, so that a read
    // looks both keys up by reference.
    tenants: RwLock<HashMap<TenantId, HashMap<ConversationId, Vec<AiStreamEvent>>>>,
}

impl InMemoryStreamJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Drops the journals of these (tenant, conversation) pairs; returns how many events were
    /// dropped.
    pub fn remove<'a>(
        &self,
        conversations: impl IntoIterator<Item = (&'a TenantId, &'a ConversationId)>,
    ) -> usize {
        let mut tenants = self.tenants.write();
        let mut dropped = 0;
        for (tenant_id, conversation_id) in conversations {
            let Some(journals) = tenants.get_mut(tenant_id) else {
                continue;
            };
            dropped += journals
                .remove(conversation_id)
                .map_or(0, |events| events.len());
            if journals.is_empty() {
                tenants.remove(tenant_id);
            }
        }
        dropped
    }

    /// How many conversations have a journal, across tenants.
    pub fn conversations(&self) -> usize {
        self.tenants.read().values().map(HashMap::len).sum()
    }

    /// Every event of one conversation of the tenant, in order.
    pub fn events(
        &self,
        conversation_id: &ConversationId,
        tenant_id: &TenantId,
    ) -> Vec<AiStreamEvent> {
        self.tenants
            .read()
            .get(tenant_id)
            .and_then(|journals| journals.get(conversation_id))
            .cloned()
            .unwrap_or_default()
    }
}

#[async_trait]
impl AiStreamJournal for InMemoryStreamJournal {
    async fn append(&self, tenant_id: &TenantId, event: &AiStreamEvent) -> Result<(), AiError> {
        let mut tenants = self.tenants.write();
        let events = tenants
            .entry(tenant_id.clone())
            .or_default()
            .entry(event.conversation_id.clone())
            .or_default();
        let expected = events.len() as u64 + 1;
        if event.sequence != expected {
            return Err(AiError::conflict(
                "sequence_conflict",
                format!(
                    "conversation '{}' expects stream sequence {expected}, got {}",
                    event.conversation_id, event.sequence
                ),
            ));
        }
        events.push(event.clone());
        Ok(())
    }

    async fn read_after(
        &self,
        conversation_id: &ConversationId,
        tenant_id: &TenantId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<AiStreamEvent>, AiError> {
        let tenants = self.tenants.read();
        let Some(events) = tenants
            .get(tenant_id)
            .and_then(|journals| journals.get(conversation_id))
        else {
            return Ok(Vec::new());
        };
        let start = usize::try_from(after)
            .unwrap_or(usize::MAX)
            .min(events.len());
        Ok(events[start..].iter().take(limit).cloned().collect())
    }

    async fn last_sequence(
        &self,
        conversation_id: &ConversationId,
        tenant_id: &TenantId,
    ) -> Result<u64, AiError> {
        Ok(self
            .tenants
            .read()
            .get(tenant_id)
            .and_then(|journals| journals.get(conversation_id))
            .map_or(0, |events| events.len() as u64))
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use elsa_ai_abstractions::AiStreamEventType;
    use serde_json::json;

    use super::*;

    fn event(conversation: &str, sequence: u64) -> AiStreamEvent {
        AiStreamEvent {
            event_type: AiStreamEventType::AssistantDelta,
            conversation_id: ConversationId::new(conversation),
            sequence,
            timestamp: Utc::now(),
            data: json!({"text": sequence.to_string()}).into(),
        }
    }

    fn sequences(events: Vec<AiStreamEvent>) -> Vec<u64> {
        events.into_iter().map(|e| e.sequence).collect()
    }

    #[tokio::test]
    async fn appends_must_be_gap_free_and_reads_start_after_the_given_sequence() {
        let journal = InMemoryStreamJournal::new();
        let acme = TenantId::new("acme");
        for sequence in 1..=5 {
            journal.append(&acme, &event("c1", sequence)).await.unwrap();
        }
        let gap = journal.append(&acme, &event("c1", 7)).await.unwrap_err();
        assert_eq!((gap.status(), gap.code()), (409, "sequence_conflict"));
        let replay = journal.append(&acme, &event("c1", 5)).await.unwrap_err();
        assert_eq!(replay.code(), "sequence_conflict");
        journal.append(&acme, &event("c2", 1)).await.unwrap();

        let id = ConversationId::new("c1");
        assert_eq!(journal.last_sequence(&id, &acme).await.unwrap(), 5);
        assert_eq!(
            sequences(journal.read_after(&id, &acme, 2, 2).await.unwrap()),
            [3, 4]
        );
        assert_eq!(
            sequences(journal.read_after(&id, &acme, 4, 10).await.unwrap()),
            [5]
        );
        assert!(
            journal
                .read_after(&id, &acme, 5, 10)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            journal
                .read_after(&id, &acme, u64::MAX, 10)
                .await
                .unwrap()
                .is_empty()
        );
        let unknown = ConversationId::new("nope");
        assert_eq!(journal.last_sequence(&unknown, &acme).await.unwrap(), 0);
        assert!(
            journal
                .read_after(&unknown, &acme, 0, 10)
                .await
                .unwrap()
                .is_empty()
        );

        assert_eq!(journal.remove([(&acme, &id)]), 5);
        assert_eq!(journal.last_sequence(&id, &acme).await.unwrap(), 0);
        assert_eq!(journal.conversations(), 1, "c2 is untouched");
    }

    #[tokio::test]
    async fn one_conversation_id_under_two_tenants_is_two_journals() {
        let journal = InMemoryStreamJournal::new();
        let (acme, globex) = (TenantId::new("acme"), TenantId::new("globex"));
        let id = ConversationId::new("c1");
        for sequence in 1..=3 {
            journal.append(&acme, &event("c1", sequence)).await.unwrap();
        }
        assert_eq!(journal.last_sequence(&id, &globex).await.unwrap(), 0);
        assert!(journal.events(&id, &globex).is_empty());
        let extend = journal.append(&globex, &event("c1", 4)).await.unwrap_err();
        assert_eq!(extend.code(), "sequence_conflict", "globex starts at 1");
        journal.append(&globex, &event("c1", 1)).await.unwrap();

        assert_eq!(journal.conversations(), 2);
        assert_eq!(journal.remove([(&globex, &id)]), 1);
        assert_eq!(sequences(journal.events(&id, &acme)), [1, 2, 3]);
    }
}
