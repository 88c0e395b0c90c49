//! The in-memory stream journal for development and tests.

use std::collections::HashMap;

use async_trait::async_trait;
use elsa_ai_abstractions::{AiError, AiStreamEvent, AiStreamJournal, ConversationId};
use parking_lot::RwLock;

/// Keeps every stream event in memory, per conversation, in sequence order.
///
/// Appends are checked: an event's sequence must be exactly one more than the last one
/// stored (409 `sequence_conflict` otherwise), so the journal is gap-free by construction.
/// Production hosts use a durable journal (`elsa-ai-store`) instead; the
/// [`InMemoryConversationStore`](crate::InMemoryConversationStore) purges this one when
/// conversations expire.
#[derive(Debug, Default)]
pub struct InMemoryStreamJournal {
    // Event `n` of a conversation sits at index `n - 1`.
    conversations: RwLock<HashMap<ConversationId, Vec<AiStreamEvent>>>,
}

impl InMemoryStreamJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Drops the journals of these conversations; returns how many events were dropped.
    pub fn remove<'a>(&self, conversations: impl IntoIterator<Item = &'a ConversationId>) -> usize {
        let mut journals = self.conversations.write();
        conversations
            .into_iter()
            .filter_map(|id| journals.remove(id))
            .map(|events| events.len())
            .sum()
    }

    /// How many conversations have a journal.
    pub fn conversations(&self) -> usize {
        self.conversations.read().len()
    }

    /// Every event of one conversation, in order.
    pub fn events(&self, conversation_id: &ConversationId) -> Vec<AiStreamEvent> {
        self.conversations
            .read()
            .get(conversation_id)
            .cloned()
            .unwrap_or_default()
    }
}

#[async_trait]
impl AiStreamJournal for InMemoryStreamJournal {
    async fn append(&self, event: &AiStreamEvent) -> Result<(), AiError> {
        let mut journals = self.conversations.write();
        let events = journals.entry(event.conversation_id.clone()).or_default();
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
        after: u64,
        limit: usize,
    ) -> Result<Vec<AiStreamEvent>, AiError> {
        let journals = self.conversations.read();
        let Some(events) = journals.get(conversation_id) else {
            return Ok(Vec::new());
        };
        let start = usize::try_from(after)
            .unwrap_or(usize::MAX)
            .min(events.len());
        Ok(events[start..].iter().take(limit).cloned().collect())
    }

    async fn last_sequence(&self, conversation_id: &ConversationId) -> Result<u64, AiError> {
        Ok(self
            .conversations
            .read()
            .get(conversation_id)
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
            data: json!({"text": sequence.to_string()}),
        }
    }

    #[tokio::test]
    async fn appends_must_be_gap_free_and_reads_start_after_the_given_sequence() {
        let journal = InMemoryStreamJournal::new();
        for sequence in 1..=5 {
            journal.append(&event("c1", sequence)).await.unwrap();
        }
        let gap = journal.append(&event("c1", 7)).await.unwrap_err();
        assert_eq!((gap.status(), gap.code()), (409, "sequence_conflict"));
        let replay = journal.append(&event("c1", 5)).await.unwrap_err();
        assert_eq!(replay.code(), "sequence_conflict");
        journal.append(&event("c2", 1)).await.unwrap();

        let id = ConversationId::new("c1");
        assert_eq!(journal.last_sequence(&id).await.unwrap(), 5);
        let sequences = |events: Vec<AiStreamEvent>| -> Vec<u64> {
            events.into_iter().map(|e| e.sequence).collect()
        };
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
        let unknown = ConversationId::new("nope");
        assert_eq!(journal.last_sequence(&unknown).await.unwrap(), 0);
        assert!(
            journal
                .read_after(&unknown, 0, 10)
                .await
                .unwrap()
                .is_empty()
        );

        assert_eq!(journal.remove([&id]), 5);
        assert_eq!(journal.last_sequence(&id).await.unwrap(), 0);
        assert_eq!(journal.conversations(), 1, "c2 is untouched");
    }
}
