//! Events that reach a conversation's stream from outside a turn.

use std::sync::Arc;

use elsa_ai_abstractions::{
    AiConversationStore, AiError, AiStreamEvent, AiStreamEventType, ConversationId,
};
use elsa_workflows::TenantId;
use serde_json::Value;

use super::StreamHub;
use crate::conversation::conversation_not_found;

/// Publishes `proposal.created` and `proposal.updated` onto a conversation's stream, for
/// the proposal service; get one from
/// [`ChatOrchestrator::events`](crate::ChatOrchestrator::events).
///
/// The event goes the same way as a turn's events: redacted, given the conversation's next
/// sequence number, journaled, then sent to live subscribers (a client following the turn
/// sees it between the tool events; a client that resumes later replays it). This is a
/// server-side handle with no caller: it checks that the conversation exists in the named
/// tenant (404 `conversation_not_found` otherwise, also for another tenant's) and refuses
/// every other event type (400 `event_type_not_publishable`), so nothing outside a turn can
/// forge a turn's events.
///
/// ```
/// # use elsa_ai_host::ConversationEvents;
/// # use elsa_ai_abstractions::{AiProposal, AiStreamEventType};
/// # async fn example(events: ConversationEvents, proposal: AiProposal) -> Result<(), elsa_ai_abstractions::AiError> {
/// if let Some(conversation) = &proposal.conversation_id {
///     events
///         .publish(
///             &proposal.tenant_id,
///             conversation,
///             AiStreamEventType::ProposalCreated,
///             serde_json::json!({"proposalId": proposal.id, "status": proposal.status}),
///         )
///         .await?;
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ConversationEvents {
    hub: Arc<StreamHub>,
    conversations: Arc<dyn AiConversationStore>,
}

impl std::fmt::Debug for ConversationEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConversationEvents").finish_non_exhaustive()
    }
}

impl ConversationEvents {
    pub(crate) fn new(hub: Arc<StreamHub>, conversations: Arc<dyn AiConversationStore>) -> Self {
        Self { hub, conversations }
    }

    /// Appends one event to the conversation's stream and returns it as journaled.
    pub async fn publish(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
        event_type: AiStreamEventType,
        data: Value,
    ) -> Result<AiStreamEvent, AiError> {
        if !matches!(
            event_type,
            AiStreamEventType::ProposalCreated | AiStreamEventType::ProposalUpdated
        ) {
            return Err(AiError::bad_request(
                "event_type_not_publishable",
                format!(
                    "only proposal events can be published onto a conversation, not '{}'",
                    event_type.as_str()
                ),
            ));
        }
        if self
            .conversations
            .find(conversation_id, tenant_id)
            .await?
            .is_none_or(|c| &c.tenant_id != tenant_id)
        {
            return Err(conversation_not_found(conversation_id));
        }
        self.hub
            .channel(tenant_id, conversation_id)
            .append(event_type, data)
            .await
    }
}
