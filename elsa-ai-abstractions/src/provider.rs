//! The provider boundary: sessions, turns and the events a provider reports.

use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    AiAgentDefinition, AiCaller, AiError, AiMessage, AiProviderToolInvoker, AiResolvedContext,
    AiToolDefinition, AiToolError, AiToolResult, ConversationId,
};

/// Describes a provider for capabilities screens and start-up logs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiProviderInfo {
    /// The provider's stable name, such as `copilot` or `demo`.
    pub name: String,
    /// A description for people.
    pub display_name: String,
    /// The model in use, when known.
    pub model: Option<String>,
    /// True for scripted providers that play a transcript instead of calling a model.
    pub scripted: bool,
}

/// Asks a provider to open a session for a conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct CreateAiSessionRequest {
    /// The conversation the session serves.
    pub conversation_id: ConversationId,
    /// The agent whose instructions become the system message.
    pub agent: AiAgentDefinition,
    /// Who the session is for.
    pub caller: AiCaller,
}

/// A provider session. Opaque to the host beyond its ids.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiSessionHandle {
    /// The provider-side session id.
    pub session_id: String,
    /// The provider's name.
    pub provider: String,
    /// The conversation it belongs to.
    pub conversation_id: ConversationId,
}

/// One chat turn for the provider to run, with everything already redacted and authorized.
#[derive(Clone, Debug)]
pub struct AiTurnRequest {
    /// The session from [`AiProvider::create_session`].
    pub session: AiSessionHandle,
    /// The agent.
    pub agent: AiAgentDefinition,
    /// Who the turn is for.
    pub caller: AiCaller,
    /// The user's message, redacted.
    pub message: String,
    /// Earlier messages of the conversation, redacted.
    pub history: Vec<AiMessage>,
    /// Resolved attachments, clamped and redacted.
    pub context: Vec<AiResolvedContext>,
    /// The only tools the provider may offer the model this turn.
    pub tools: Vec<Arc<AiToolDefinition>>,
    /// Cancelled when the host gives up on the turn (for example the grace window expired).
    pub cancellation: CancellationToken,
}

/// What a provider reports while it runs a turn. The provider owns the model/tool loop;
/// the host only maps these to stream events.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AiProviderEvent {
    /// A piece of assistant text.
    AssistantDelta {
        /// The text fragment.
        text: String,
    },
    /// The assistant's complete message.
    AssistantMessage {
        /// The whole message.
        text: String,
    },
    /// The model asked for a tool call.
    ToolStarted {
        /// The provider's call id.
        call_id: String,
        /// The Weaver tool name.
        tool_name: String,
        /// The arguments as the model produced them.
        arguments: Value,
    },
    /// A running tool reported progress.
    ToolProgress {
        /// The provider's call id.
        call_id: String,
        /// What happened.
        message: String,
    },
    /// A tool call ended with a result (successful or an error the model can read).
    ToolCompleted {
        /// The provider's call id.
        call_id: String,
        /// The Weaver tool name.
        tool_name: String,
        /// The result the invoker returned.
        result: AiToolResult,
    },
    /// A tool call failed outside the invoker.
    ToolFailed {
        /// The provider's call id.
        call_id: String,
        /// The Weaver tool name.
        tool_name: String,
        /// The failure.
        error: AiToolError,
    },
    /// Tokens one model request of the turn used, as the endpoint reported them; the host
    /// sums every report of a turn.
    Usage {
        /// Prompt (input) tokens.
        input_tokens: u64,
        /// Completion (output) tokens.
        output_tokens: u64,
    },
    /// The turn failed; no further events follow.
    Failed {
        /// Why.
        error: AiError,
    },
    /// The turn is complete (the provider is idle).
    Completed,
}

/// A model runtime. Implementations own planning, tool-call sequencing and continuation.
#[async_trait]
pub trait AiProvider: Send + Sync {
    /// The provider's stable name.
    fn name(&self) -> &str;

    /// Describes the provider.
    fn info(&self) -> AiProviderInfo;

    /// Opens a session; an unavailable runtime is [`AiError::Unavailable`].
    async fn create_session(
        &self,
        request: CreateAiSessionRequest,
    ) -> Result<AiSessionHandle, AiError>;

    /// The session for a conversation whose session `recorded` was opened earlier, possibly
    /// by another replica or before a restart. The default opens a new one (a provider whose
    /// sessions live in its own process cannot continue another process's; the new session's
    /// first turn gets the conversation's history); a provider whose sessions hold no state
    /// of their own returns `recorded`.
    async fn continue_session(
        &self,
        recorded: &AiSessionHandle,
        request: CreateAiSessionRequest,
    ) -> Result<AiSessionHandle, AiError> {
        let _ = recorded;
        self.create_session(request).await
    }

    /// Runs one turn, calling tools only through `invoker`. The stream ends after
    /// [`AiProviderEvent::Completed`] or [`AiProviderEvent::Failed`].
    fn execute_turn(
        &self,
        request: AiTurnRequest,
        invoker: Arc<dyn AiProviderToolInvoker>,
    ) -> BoxStream<'static, AiProviderEvent>;

    /// Releases the session's provider-side resources.
    async fn close_session(&self, session: &AiSessionHandle) -> Result<(), AiError> {
        let _ = session;
        Ok(())
    }
}
