//! Conversations, their messages and the stream journal used for reconnect.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_workflows::{Page, PageRequest, TenantId};
use serde::{Deserialize, Serialize};

use crate::{AiError, AiSessionHandle, AiStreamEvent, ConversationId};

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum MessageRole {
    /// The person.
    User,
    /// The assistant.
    Assistant,
    /// A tool call of the assistant and its result, as the model read it (the content is an
    /// [`AiToolMessage`] as JSON), so that a later turn, on any replica, hands the model the
    /// whole conversation.
    Tool,
}

impl MessageRole {
    /// The role's name as it appears in JSON (`User`, `Assistant`, `Tool`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "User",
            Self::Assistant => "Assistant",
            Self::Tool => "Tool",
        }
    }
}

/// What a [`MessageRole::Tool`] message holds: one tool call and its result, redacted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiToolMessage {
    /// The provider's call id.
    pub call_id: String,
    /// The Weaver tool name.
    pub tool_name: String,
    /// The arguments, redacted.
    pub arguments: serde_json::Value,
    /// The result the model read (content or error), redacted.
    pub result: serde_json::Value,
}

impl AiToolMessage {
    /// The call as a message of the conversation.
    pub fn to_message(&self, timestamp: DateTime<Utc>) -> AiMessage {
        AiMessage {
            role: MessageRole::Tool,
            content: Self::text(
                &self.call_id,
                &self.tool_name,
                &self.arguments,
                &self.result,
            ),
            timestamp,
        }
    }

    /// The content of the `Tool` message of a call, written from borrowed parts (`result` is
    /// anything that serialises as the result the model read), so a large result is not
    /// copied into an `AiToolMessage` first. The parts must be redacted.
    pub fn text(
        call_id: &str,
        tool_name: &str,
        arguments: &serde_json::Value,
        result: &impl Serialize,
    ) -> String {
        /// The fields of [`AiToolMessage`], borrowed.
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Borrowed<'a, R> {
            call_id: &'a str,
            tool_name: &'a str,
            arguments: &'a serde_json::Value,
            result: &'a R,
        }
        let borrowed = Borrowed {
            call_id,
            tool_name,
            arguments,
            result,
        };
        // Strings and JSON values always serialise.
        serde_json::to_string(&borrowed).unwrap_or_default()
    }

    /// The call a `Tool` message holds (`None` for other messages or unreadable content).
    pub fn from_message(message: &AiMessage) -> Option<Self> {
        (message.role == MessageRole::Tool)
            .then(|| serde_json::from_str(&message.content).ok())
            .flatten()
    }
}

/// One message of a conversation (redacted).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiMessage {
    /// Who wrote it.
    pub role: MessageRole,
    /// Its text.
    pub content: String,
    /// When it was written.
    pub timestamp: DateTime<Utc>,
}

/// A conversation, owned by one actor in one tenant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiConversation {
    /// The conversation id.
    pub id: ConversationId,
    /// The tenant.
    pub tenant_id: TenantId,
    /// The actor who owns it; only they may continue or read it.
    pub owner_id: String,
    /// The agent it runs under.
    pub agent: String,
    /// A title (the first message, shortened).
    pub title: String,
    /// When it started.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// Its messages, oldest first.
    pub messages: Vec<AiMessage>,
    /// How many days after its last change the conversation is kept, when its owner chose
    /// to keep it shorter than the server's retention window (`None`: the window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retain_days: Option<u32>,
}

/// Stores conversations with configurable retention.
#[async_trait]
pub trait AiConversationStore: Send + Sync {
    /// Stores a new conversation.
    async fn create(&self, conversation: &AiConversation) -> Result<(), AiError>;

    /// The conversation if it exists in this tenant.
    async fn find(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
    ) -> Result<Option<AiConversation>, AiError>;

    /// Appends a message and bumps `updated_at`.
    async fn append_message(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
        message: &AiMessage,
    ) -> Result<(), AiError>;

    /// The owner's conversations in this tenant, most recently updated first, without messages.
    async fn list(
        &self,
        tenant_id: &TenantId,
        owner_id: &str,
        page: PageRequest,
    ) -> Result<Page<AiConversation>, AiError>;

    /// Deletes conversations (with their messages and journals) last updated before
    /// `cutoff`, and those whose own `retain_days` have passed at `now`; returns how many.
    async fn purge_expired(
        &self,
        cutoff: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<usize, AiError>;

    /// Deletes the conversation of this tenant with its messages, provider session and
    /// stream journal; `false` when the tenant has no such conversation.
    async fn delete(&self, id: &ConversationId, tenant_id: &TenantId) -> Result<bool, AiError>;

    /// Deletes every conversation `owner_id` has in the tenant, like [`delete`](Self::delete);
    /// returns the ids deleted.
    async fn delete_owned_by(
        &self,
        tenant_id: &TenantId,
        owner_id: &str,
    ) -> Result<Vec<ConversationId>, AiError>;

    /// Sets how many days after its last change the conversation is kept (`None`: the
    /// server's retention window); 404 `conversation_not_found` outside the tenant.
    async fn set_retain_days(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
        retain_days: Option<u32>,
    ) -> Result<(), AiError>;

    /// The provider session the conversation's turns continue, as last recorded (`None` when
    /// none was, or the conversation is not in this tenant).
    async fn provider_session(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
    ) -> Result<Option<AiSessionHandle>, AiError>;

    /// Records the provider session of the conversation, so that its next turn continues it
    /// on any replica, or after a restart (404 `conversation_not_found` outside the tenant).
    async fn set_provider_session(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
        session: &AiSessionHandle,
    ) -> Result<(), AiError>;
}

/// The durable, ordered log of every stream event, per conversation of a tenant.
///
/// A journal is keyed by (tenant, conversation): the same conversation id under another
/// tenant is another, independent journal, so a caller of the wrong tenant reads nothing and
/// cannot extend or interleave with someone else's stream, whatever the layers above check.
#[async_trait]
pub trait AiStreamJournal: Send + Sync {
    /// Appends an event to the tenant's journal of its conversation; its sequence must be
    /// exactly one more than the last one there.
    async fn append(&self, tenant_id: &TenantId, event: &AiStreamEvent) -> Result<(), AiError>;

    /// Events of the conversation in this tenant with sequence greater than `after`, in
    /// order, at most `limit` of them.
    async fn read_after(
        &self,
        conversation_id: &ConversationId,
        tenant_id: &TenantId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<AiStreamEvent>, AiError>;

    /// The highest sequence written for the conversation in this tenant (0 when there is
    /// none).
    async fn last_sequence(
        &self,
        conversation_id: &ConversationId,
        tenant_id: &TenantId,
    ) -> Result<u64, AiError>;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A message written from borrowed parts reads back as the `AiToolMessage` of them.
    #[test]
    fn a_tool_message_written_from_borrowed_parts_reads_back_whole() {
        #[derive(Serialize)]
        struct Result<'a> {
            outcome: &'a str,
            content: &'a serde_json::Value,
        }
        let (arguments, content) = (json!({"definitionId": "d"}), json!({"name": "Orders"}));
        let text = AiToolMessage::text(
            "call-1",
            "workflow.getDefinition",
            &arguments,
            &Result {
                outcome: "success",
                content: &content,
            },
        );
        let message = AiMessage {
            role: MessageRole::Tool,
            content: text,
            timestamp: Utc::now(),
        };
        let read = AiToolMessage::from_message(&message).expect("a tool message");
        let whole = AiToolMessage {
            call_id: "call-1".into(),
            tool_name: "workflow.getDefinition".into(),
            arguments,
            result: json!({"outcome": "success", "content": {"name": "Orders"}}),
        };
        assert_eq!(read, whole);
    }
}
