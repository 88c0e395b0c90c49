//! The stream contract between the host and clients.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
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
    /// subscriber and the replay path hold the same payload, and its JSON text.
    pub data: StreamPayload,
}

impl AiStreamEvent {
    /// The event as JSON text, as `serde_json::to_string` writes it. The payload's part is
    /// encoded once and shared by every clone, so the journal and every SSE subscriber
    /// write the same bytes without encoding the payload again.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        let data = self.data.json()?;
        // One buffer, sized for the payload: the fields in the order serde writes them.
        let mut out = Vec::with_capacity(data.len() + 160);
        out.extend_from_slice(b"{\"type\":");
        serde_json::to_writer(&mut out, &self.event_type)?;
        out.extend_from_slice(b",\"conversationId\":");
        serde_json::to_writer(&mut out, &self.conversation_id)?;
        out.extend_from_slice(b",\"sequence\":");
        serde_json::to_writer(&mut out, &self.sequence)?;
        out.extend_from_slice(b",\"timestamp\":");
        serde_json::to_writer(&mut out, &self.timestamp)?;
        out.extend_from_slice(b",\"data\":");
        out.extend_from_slice(data.as_bytes());
        out.push(b'}');
        String::from_utf8(out).map_err(serde::ser::Error::custom)
    }
}

/// A stream event's payload: an immutable, shared JSON value that keeps its JSON text once
/// encoded. It reads as the [`Value`] it holds, and serialises as that value.
#[derive(Clone)]
pub struct StreamPayload(Arc<EncodedValue>);

struct EncodedValue {
    value: Value,
    json: OnceLock<String>,
}

impl StreamPayload {
    /// The payload as JSON text, encoded on first use and kept for every later one.
    pub fn json(&self) -> Result<&str, serde_json::Error> {
        if let Some(json) = self.0.json.get() {
            return Ok(json);
        }
        let mut json = serde_json::to_string(&self.0.value)?;
        // A large payload's text stays as long as the event is buffered: no doubling slack.
        if json.capacity() - json.len() > 4096 {
            json.shrink_to_fit();
        }
        Ok(self.0.json.get_or_init(|| json))
    }

    /// The value, taken out when this is its only holder and copied otherwise.
    pub fn into_value(self) -> Value {
        match Arc::try_unwrap(self.0) {
            Ok(encoded) => encoded.value,
            Err(shared) => shared.value.clone(),
        }
    }

    /// Whether two payloads are the same shared value (not merely equal ones).
    pub fn ptr_eq(this: &Self, other: &Self) -> bool {
        Arc::ptr_eq(&this.0, &other.0)
    }
}

impl Deref for StreamPayload {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0.value
    }
}

impl From<Value> for StreamPayload {
    fn from(value: Value) -> Self {
        Self(Arc::new(EncodedValue {
            value,
            json: OnceLock::new(),
        }))
    }
}

impl PartialEq for StreamPayload {
    fn eq(&self, other: &Self) -> bool {
        self.0.value == other.0.value
    }
}

impl std::fmt::Debug for StreamPayload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.value.fmt(f)
    }
}

impl std::fmt::Display for StreamPayload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.value.fmt(f)
    }
}

impl Serialize for StreamPayload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.value.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for StreamPayload {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::from)
    }
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

    #[test]
    fn an_event_encoded_once_reads_as_serde_writes_it_and_clones_share_the_text() {
        let event = AiStreamEvent {
            event_type: AiStreamEventType::ToolCompleted,
            conversation_id: ConversationId::new("c\"1"),
            sequence: 7,
            timestamp: Utc::now(),
            data: serde_json::json!({"z": [1, 2.5, null], "a": "line\nbreak", "m": {}}).into(),
        };
        let copy = event.clone();
        assert_eq!(
            event.to_json().unwrap(),
            serde_json::to_string(&event).unwrap()
        );
        // The clone reads the text the first encoding left, not an encoding of its own.
        let first = event.data.json().unwrap().as_ptr();
        assert_eq!(copy.data.json().unwrap().as_ptr(), first);
        assert_eq!(copy.to_json().unwrap(), event.to_json().unwrap());
        assert!(StreamPayload::ptr_eq(&event.data, &copy.data));
        let back: AiStreamEvent = serde_json::from_str(&copy.to_json().unwrap()).unwrap();
        assert_eq!(back, event);
    }

    #[test]
    fn the_hand_written_envelope_matches_serde_for_every_type_id_and_time() {
        let types = [
            AiStreamEventType::ConversationStarted,
            AiStreamEventType::AssistantDelta,
            AiStreamEventType::ProposalUpdated,
            AiStreamEventType::ConversationFailed,
        ];
        let times = [
            Utc::now(),
            DateTime::from_timestamp(0, 0).unwrap(),
            DateTime::from_timestamp(1_700_000_000, 120_000_000).unwrap(),
        ];
        let ids = ["", "c-1", "ü\u{1}\\\"\u{2028}", &"x".repeat(300)];
        let big = "y".repeat(10_000);
        for (i, event_type) in types.into_iter().enumerate() {
            for timestamp in times {
                for id in ids {
                    let event = AiStreamEvent {
                        event_type,
                        conversation_id: ConversationId::new(id),
                        sequence: u64::MAX - i as u64,
                        timestamp,
                        data: serde_json::json!({"text": big, "n": i}).into(),
                    };
                    assert_eq!(
                        event.to_json().unwrap(),
                        serde_json::to_string(&event).unwrap()
                    );
                }
            }
        }
    }
}
