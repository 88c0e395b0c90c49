//! The stream contract between the host and clients.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AiCaller, AiContextAttachment, AiError, ConversationId};

/// The type of a stream event; serialised as the contract's dotted name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum AiStreamEventType {
    /// First event of a turn; carries the conversation id.
    #[serde(rename = "conversation.started")]
    ConversationStarted,
    /// A piece of assistant text.
    #[serde(rename = "assistant.delta")]
    AssistantDelta,
    /// The assistant's complete message.
    #[serde(rename = "assistant.completed")]
    AssistantCompleted,
    /// A tool call began.
    #[serde(rename = "tool.started")]
    ToolStarted,
    /// A tool call reported progress.
    #[serde(rename = "tool.progress")]
    ToolProgress,
    /// A tool call ended with a result.
    #[serde(rename = "tool.completed")]
    ToolCompleted,
    /// A tool call failed or was denied.
    #[serde(rename = "tool.failed")]
    ToolFailed,
    /// A proposal was created.
    #[serde(rename = "proposal.created")]
    ProposalCreated,
    /// A proposal changed state.
    #[serde(rename = "proposal.updated")]
    ProposalUpdated,
    /// The turn completed.
    #[serde(rename = "conversation.completed")]
    ConversationCompleted,
    /// The turn failed or was cancelled; `data` says why.
    #[serde(rename = "conversation.failed")]
    ConversationFailed,
}

impl AiStreamEventType {
    /// The dotted wire name, also used as the SSE event name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ConversationStarted => "conversation.started",
            Self::AssistantDelta => "assistant.delta",
            Self::AssistantCompleted => "assistant.completed",
            Self::ToolStarted => "tool.started",
            Self::ToolProgress => "tool.progress",
            Self::ToolCompleted => "tool.completed",
            Self::ToolFailed => "tool.failed",
            Self::ProposalCreated => "proposal.created",
            Self::ProposalUpdated => "proposal.updated",
            Self::ConversationCompleted => "conversation.completed",
            Self::ConversationFailed => "conversation.failed",
        }
    }

    /// Whether the event ends a turn.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::ConversationCompleted | Self::ConversationFailed)
    }
}

/// One event of a conversation's stream. `sequence` is gap-free per conversation (journaled
/// under the conversation's tenant), from 1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiStreamEvent {
    /// The event type.
    #[serde(rename = "type")]
    pub event_type: AiStreamEventType,
    /// The conversation.
    pub conversation_id: ConversationId,
    /// Position in the conversation's stream.
    pub sequence: u64,
    /// When the event was produced.
    pub timestamp: DateTime<Utc>,
    /// Event-specific payload, redacted. Shared, not copied: the journal, every live
    /// subscriber and the replay path hold the same payload.
    pub data: Arc<Value>,
}

/// A chat message from a client.
#[derive(Clone, Debug, PartialEq)]
pub struct AiChatRequest {
    /// Who sends it.
    pub caller: AiCaller,
    /// Continue this conversation (the caller must own it); `None` starts a new one.
    pub conversation_id: Option<ConversationId>,
    /// The agent; `None` means `workflow-author`.
    pub agent: Option<String>,
    /// The user's message.
    pub message: String,
    /// References to resolve as context.
    pub attachments: Vec<AiContextAttachment>,
}

/// A conversation's event stream, as returned to a client.
pub struct AiChatStream {
    /// The conversation the events belong to.
    pub conversation_id: ConversationId,
    /// The events, in sequence order, each exactly once.
    pub events: BoxStream<'static, AiStreamEvent>,
}

impl std::fmt::Debug for AiChatStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AiChatStream")
            .field("conversation_id", &self.conversation_id)
            .finish_non_exhaustive()
    }
}

/// Runs chat turns and serves their streams.
#[async_trait]
pub trait AiOrchestrator: Send + Sync {
    /// Starts a turn and returns its stream. Errors found before the turn starts (unknown
    /// conversation, attachment refused, provider unavailable) are returned, not streamed.
    async fn execute_chat(&self, request: AiChatRequest) -> Result<AiChatStream, AiError>;

    /// The stream of a conversation the caller owns, from the event after `after_sequence`:
    /// every later event exactly once and in order, live events included.
    async fn resume(
        &self,
        caller: &AiCaller,
        conversation_id: &ConversationId,
        after_sequence: u64,
    ) -> Result<AiChatStream, AiError>;

    /// Stops the turn running in a conversation the caller owns (on another replica, through
    /// the shared turn claims); the turn ends with `conversation.failed`, code `cancelled`.
    /// 404 for a conversation the caller does not own, 409 `no_turn_in_progress` when none
    /// runs.
    async fn cancel(
        &self,
        caller: &AiCaller,
        conversation_id: &ConversationId,
    ) -> Result<(), AiError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_types_use_dotted_names() {
        let json = serde_json::to_value(AiStreamEventType::ToolCompleted).unwrap();
        assert_eq!(json, AiStreamEventType::ToolCompleted.as_str());
        let event = AiStreamEvent {
            event_type: AiStreamEventType::ConversationStarted,
            conversation_id: ConversationId::new("c1"),
            sequence: 1,
            timestamp: Utc::now(),
            data: serde_json::json!({}).into(),
        };
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["type"], "conversation.started");
        assert_eq!(json["conversationId"], "c1");
    }
}
