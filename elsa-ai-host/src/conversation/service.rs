//! What people do with their conversations besides chatting: delete one (its owner, or an
//! administrator of its tenant), erase one person's conversations (an administrator), and
//! keep one for fewer days than the server's retention window (its owner).

use std::sync::Arc;
use std::time::Duration;

use chrono::TimeDelta;
use elsa_ai_abstractions::{
    AiAuditEvent, AiAuditSink, AiCaller, AiConversation, AiConversationStore, AiError, AuditAction,
    AuditOutcome, Clock, ConversationId, Permission, ProposalId,
};
use elsa_workflows::PageRequest;
use serde_json::json;

use super::conversation_not_found;
use crate::orchestrator::ChatOrchestrator;
use crate::proposals::ProposalService;
use crate::redaction::Redactor;

/// How long a deletion waits for the conversation's running turn to end once stopped.
pub const TURN_STOP_WAIT: Duration = Duration::from_secs(15);

/// How often a deletion looks whether a stopped turn has ended.
const TURN_STOP_POLL: Duration = Duration::from_millis(50);

/// What a deletion took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeletedConversation {
    /// The conversation.
    pub id: ConversationId,
    /// Its owner.
    pub owner_id: String,
    /// How many messages went with it.
    pub messages: usize,
    /// Whether a running turn was stopped first.
    pub stopped_turn: bool,
    /// The proposals made in it, which stay without their link to it.
    pub proposals: Vec<ProposalId>,
}

/// Deletes conversations and sets how long they are kept, audited before effect; hosts call
/// [`HostCore::conversations`](crate::HostCore::conversations) for one.
///
/// A deleted conversation goes with its messages, provider session and stream journal from
/// the store every replica shares; a turn running in it is stopped first (wherever it runs)
/// and awaited, so its stream ends; its proposals stay, as the record a person reviews, but
/// lose their link to it. The audit record says who deleted what, never what was said.
pub struct ConversationService {
    conversations: Arc<dyn AiConversationStore>,
    orchestrator: ChatOrchestrator,
    proposals: ProposalService,
    audit: Arc<dyn AiAuditSink>,
    redactor: Arc<Redactor>,
    clock: Arc<dyn Clock>,
    retention: TimeDelta,
    stop_wait: Duration,
}

impl std::fmt::Debug for ConversationService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConversationService")
            .field("retention", &self.retention)
            .finish_non_exhaustive()
    }
}

impl ConversationService {
    pub(crate) fn new(
        core: &crate::HostCore,
        orchestrator: ChatOrchestrator,
        proposals: ProposalService,
        retention: TimeDelta,
    ) -> Self {
        Self {
            conversations: core.conversations().clone(),
            orchestrator,
            proposals,
            audit: core.audit().clone(),
            redactor: core.redactor().clone(),
            clock: core.clock().clone(),
            retention,
            stop_wait: TURN_STOP_WAIT,
        }
    }

    /// Waits at most `wait` for a stopped turn to end (default [`TURN_STOP_WAIT`]).
    pub fn stop_wait(mut self, wait: Duration) -> Self {
        self.stop_wait = wait;
        self
    }

    /// Deletes the conversation: its owner may, and so may a caller with `admin:ai` in its
    /// tenant. Anyone else, and every other tenant, gets 404 `conversation_not_found`; a
    /// running turn that does not end within the wait is 409 `turn_in_progress` (nothing
    /// deleted); 500/503 `audit_failed` when the record cannot be written (nothing deleted).
    pub async fn delete(
        &self,
        caller: &AiCaller,
        id: &ConversationId,
    ) -> Result<DeletedConversation, AiError> {
        let conversation = self.deletable(caller, id).await?;
        self.erase(caller, conversation).await
    }

    /// Deletes every conversation `owner_id` has in the caller's tenant; needs `admin:ai`.
    /// Returns what went, each audited like [`delete`](Self::delete).
    pub async fn delete_owned_by(
        &self,
        caller: &AiCaller,
        owner_id: &str,
    ) -> Result<Vec<DeletedConversation>, AiError> {
        caller.require(
            &Permission::ADMIN_AI,
            "erasing another person's conversations",
        )?;
        let mut deleted = Vec::new();
        loop {
            // Always the first page: each one deleted leaves the list.
            let page = self
                .conversations
                .list(&caller.tenant_id, owner_id, PageRequest::new(0, 100))
                .await?;
            if page.items.is_empty() {
                return Ok(deleted);
            }
            for listed in page.items {
                // The list has no messages: read the whole conversation for the record.
                let Some(conversation) = self
                    .conversations
                    .find(&listed.id, &caller.tenant_id)
                    .await?
                else {
                    continue;
                };
                deleted.push(self.erase(caller, conversation).await?);
            }
        }
    }

    /// Keeps the caller's own conversation `retain_days` after its last change (1 to the
    /// server's retention window), or under the window again (`None`). 404 for anyone else's
    /// conversation, 400 `invalid_retention` outside that range.
    pub async fn set_retention(
        &self,
        caller: &AiCaller,
        id: &ConversationId,
        retain_days: Option<u32>,
    ) -> Result<AiConversation, AiError> {
        let mut conversation =
            super::find_owned_conversation(self.conversations.as_ref(), caller, id).await?;
        let window = self.retention.num_days();
        if let Some(days) = retain_days
            && (days == 0 || i64::from(days) > window)
        {
            return Err(AiError::bad_request(
                "invalid_retention",
                format!(
                    "retainDays keeps a conversation shorter than the server's window: 1 to \
                     {window} days, or null for the window"
                ),
            ));
        }
        let summary = match retain_days {
            Some(days) => format!(
                "{} keeps conversation '{id}' {days} days after its last change",
                caller.actor_id
            ),
            None => format!(
                "{} keeps conversation '{id}' for the server's window",
                caller.actor_id
            ),
        };
        self.record(
            caller,
            id,
            AuditAction::CONVERSATION_RETENTION_CHANGED,
            summary,
            json!({"before": conversation.retain_days, "after": retain_days}),
        )
        .await?;
        self.conversations
            .set_retain_days(id, &caller.tenant_id, retain_days)
            .await?;
        conversation.retain_days = retain_days;
        Ok(conversation)
    }

    /// The conversation if the caller may delete it.
    async fn deletable(
        &self,
        caller: &AiCaller,
        id: &ConversationId,
    ) -> Result<AiConversation, AiError> {
        match self.conversations.find(id, &caller.tenant_id).await? {
            Some(conversation)
                if conversation.owner_id == caller.actor_id
                    || caller.has(&Permission::ADMIN_AI) =>
            {
                Ok(conversation)
            }
            _ => Err(conversation_not_found(id)),
        }
    }

    async fn erase(
        &self,
        caller: &AiCaller,
        conversation: AiConversation,
    ) -> Result<DeletedConversation, AiError> {
        let tenant = &caller.tenant_id;
        let id = &conversation.id;
        let stopped_turn = self.stop_turn(caller, id).await?;
        let proposals = self.proposals.of_conversation(tenant, id).await?;
        let summary = if conversation.owner_id == caller.actor_id {
            format!("{} deleted their conversation '{id}'", caller.actor_id)
        } else {
            format!(
                "{} deleted conversation '{id}' of {}",
                caller.actor_id, conversation.owner_id
            )
        };
        // Audit before effect; the record never holds what was said (title included).
        self.record(
            caller,
            id,
            AuditAction::CONVERSATION_DELETED,
            summary,
            json!({
                "owner": conversation.owner_id,
                "messages": conversation.messages.len(),
                "stoppedTurn": stopped_turn,
                "proposals": proposals,
            }),
        )
        .await?;
        // Unlinked first: an action on one of them no longer announces itself to the stream
        // that is about to go.
        self.proposals
            .unlink_conversation(tenant, &proposals)
            .await?;
        self.conversations.delete(id, tenant).await?;
        Ok(DeletedConversation {
            owner_id: conversation.owner_id,
            messages: conversation.messages.len(),
            id: conversation.id,
            stopped_turn,
            proposals,
        })
    }

    /// Stops the conversation's running turn, if any, and waits for it to end.
    async fn stop_turn(&self, caller: &AiCaller, id: &ConversationId) -> Result<bool, AiError> {
        let tenant = &caller.tenant_id;
        if !self.orchestrator.turn_running(tenant, id).await? {
            return Ok(false);
        }
        self.orchestrator.stop_turn(tenant, id).await?;
        let deadline = tokio::time::Instant::now() + self.stop_wait;
        while self.orchestrator.turn_running(tenant, id).await? {
            if tokio::time::Instant::now() >= deadline {
                return Err(AiError::Conflict {
                    code: "turn_in_progress".into(),
                    message: format!(
                        "the turn running in conversation '{id}' did not stop in time; \
                         nothing was deleted, try again"
                    ),
                    current_state: None,
                });
            }
            tokio::time::sleep(TURN_STOP_POLL).await;
        }
        Ok(true)
    }

    async fn record(
        &self,
        caller: &AiCaller,
        id: &ConversationId,
        action: AuditAction,
        summary: String,
        details: serde_json::Value,
    ) -> Result<(), AiError> {
        let mut event = AiAuditEvent::new(
            caller.tenant_id.clone(),
            caller.actor_id.clone(),
            action,
            AuditOutcome::Success,
            summary,
        );
        event.timestamp = self.clock.now();
        event.conversation_id = Some(id.clone());
        event.details = details.into();
        self.redactor.redact_audit_event(&mut event);
        self.audit.record(event).await.map_err(|error| {
            AiError::audit_failed(
                &error,
                format!(
                    "nothing was changed because the change could not be audited: {}",
                    error.message()
                ),
            )
        })
    }
}
