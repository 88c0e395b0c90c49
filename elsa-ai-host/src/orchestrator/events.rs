//! A turn's events on their way to the stream: provider events mapped to stream events,
//! the governor's tool events, and the rule that each tool call id gets exactly one
//! `tool.started` and one terminal `tool.completed` / `tool.failed`.
//!
//! The governor's reports win: it knows the redacted arguments and the authoritative
//! outcome. A provider's `ToolStarted` is therefore only *announced* (held back) until the
//! governor reports the call; later provider reports of a call the governor reported are
//! dropped. A call the governor never reports (the provider failed it outside the invoker)
//! is published from the provider's reports, and a call still open when the turn ends is
//! closed with a `tool.failed`, so a client never waits for a terminal event that will not
//! come.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiProviderEvent, AiStreamEventType, AiToolError, AiToolMessage, AiToolOutcome,
    AiToolResult,
};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::governor::{ToolEvent, ToolEventSink};
use crate::redaction::Redacted;
use crate::stream::Channel;
use crate::telemetry::TokenUsage;

/// One turn's view of its conversation channel; the governor's [`ToolEventSink`].
pub(crate) struct TurnEvents {
    channel: Arc<Channel>,
    ledger: Mutex<Ledger>,
}

#[derive(Default)]
struct Ledger {
    calls: Vec<Call>,
    by_id: HashMap<Arc<str>, usize>,
    /// Text deltas since the last complete assistant message.
    pending_text: String,
    /// The id of the assistant message being streamed (`messageId` of its deltas and of its
    /// `assistant.completed`), made when its first delta arrives.
    message_id: Option<String>,
    /// The turn's complete assistant messages.
    messages: Vec<String>,
    /// The first event that could not be journaled; it fails the turn.
    failure: Option<AiError>,
    /// Set when the turn ended: nothing more is published for it.
    closed: bool,
    /// The tokens the provider reported, summed; `None` when it reported none.
    usage: Option<TokenUsage>,
    /// Every finished call with the result the model read, in the order they finished, as
    /// the text of its `Tool` message (redacted).
    tool_messages: Vec<String>,
}

impl Ledger {
    /// Whether the call's terminal event is published.
    fn finished(&self, call_id: &str) -> bool {
        self.by_id
            .get(call_id)
            .is_some_and(|&index| matches!(self.calls[index].state, CallState::Finished))
    }
}

struct Call {
    call_id: Arc<str>,
    tool_name: Arc<str>,
    state: CallState,
    /// The arguments as `tool.started` shows them: the governor's, or the provider's (redacted
    /// here) while the call is only announced.
    arguments: Redacted<Arc<Value>>,
}

enum CallState {
    /// The provider reported the start; held back until the governor reports it.
    Announced,
    /// `tool.started` is published.
    Started,
    /// The terminal event is published.
    Finished,
}

/// What a turn produced, once it is closed.
pub(crate) struct TurnOutput {
    /// The assistant's reply: its complete messages, joined.
    pub reply: String,
    /// How many tool calls the turn made.
    pub tool_calls: usize,
    /// The tokens the provider reported for the turn, if it reported any.
    pub usage: Option<TokenUsage>,
    /// The turn's tool calls and their results, as the (redacted) text of the `Tool`
    /// messages to store.
    pub tool_messages: Vec<String>,
}

impl TurnEvents {
    pub fn new(channel: Arc<Channel>) -> Self {
        Self {
            channel,
            ledger: Mutex::new(Ledger::default()),
        }
    }

    /// The first journal failure of the turn, if any.
    pub async fn failure(&self) -> Option<AiError> {
        self.ledger.lock().await.failure.clone()
    }

    async fn append(&self, ledger: &mut Ledger, event_type: AiStreamEventType, data: Value) {
        if let Err(error) = self.channel.append(event_type, data).await {
            self.not_journaled(ledger, error);
        }
    }

    /// Journals and publishes a tool event: its data is assembled from redacted parts, so the
    /// channel does not walk it again.
    async fn append_tool_event(&self, ledger: &mut Ledger, event: ToolEvent) {
        let event_type = event.event_type();
        let data = event.into_data(self.channel.redactor());
        if let Err(error) = self.channel.append_redacted(event_type, data).await {
            self.not_journaled(ledger, error);
        }
    }

    /// Notes the turn's first event that could not be journaled: it fails the turn.
    fn not_journaled(&self, ledger: &mut Ledger, error: AiError) {
        tracing::error!(
            code = error.code(),
            conversation = %self.channel.id(),
            "a turn event could not be journaled"
        );
        ledger.failure.get_or_insert(error);
    }

    /// Maps one non-terminal provider event onto the stream.
    pub async fn provider_event(&self, event: AiProviderEvent) {
        let mut ledger = self.ledger.lock().await;
        if ledger.closed {
            return;
        }
        match event {
            AiProviderEvent::AssistantDelta { text } => {
                ledger.pending_text.push_str(&text);
                let message_id = ledger.message_id().to_owned();
                self.append(
                    &mut ledger,
                    AiStreamEventType::AssistantDelta,
                    json!({"text": text, "content": text, "messageId": message_id}),
                )
                .await;
            }
            AiProviderEvent::AssistantMessage { text } => {
                ledger.pending_text.clear();
                ledger.messages.push(text.clone());
                let message_id = ledger.message_id().to_owned();
                ledger.message_id = None;
                self.append(
                    &mut ledger,
                    AiStreamEventType::AssistantCompleted,
                    json!({"text": text, "content": text, "messageId": message_id}),
                )
                .await;
            }
            AiProviderEvent::ToolStarted {
                call_id,
                tool_name,
                arguments,
            } => {
                if !ledger.by_id.contains_key(call_id.as_str()) {
                    let arguments = self.channel.redactor().redacted(arguments);
                    ledger.insert(
                        call_id.into(),
                        tool_name.into(),
                        CallState::Announced,
                        arguments.wrapped(Arc::new),
                    );
                }
            }
            AiProviderEvent::ToolProgress { call_id, message } => {
                let Some(index) = ledger.by_id.get(call_id.as_str()).copied() else {
                    tracing::debug!(%call_id, "progress of an unknown tool call dropped");
                    return;
                };
                if matches!(ledger.calls[index].state, CallState::Finished) {
                    return;
                }
                self.ensure_started(&mut ledger, index).await;
                let tool_name = ledger.calls[index].tool_name.clone();
                self.append(
                    &mut ledger,
                    AiStreamEventType::ToolProgress,
                    json!({
                        "callId": call_id,
                        "toolCallId": call_id,
                        "toolName": tool_name,
                        "status": "running",
                        "summary": message,
                        "message": message,
                    }),
                )
                .await;
            }
            // A call the governor ran is finished before its provider reports it: the
            // report is dropped, so its result is not redacted for nothing.
            AiProviderEvent::ToolCompleted { call_id, .. }
            | AiProviderEvent::ToolFailed { call_id, .. }
                if ledger.finished(&call_id) => {}
            AiProviderEvent::ToolCompleted {
                call_id,
                tool_name,
                result,
            } => {
                let (call_id, tool_name) = (call_id.into(), tool_name.into());
                let result = self.channel.redactor().redacted_tool_result(result);
                let event = if result.is_success() {
                    ToolEvent::Completed {
                        call_id,
                        tool_name,
                        result,
                    }
                } else {
                    ToolEvent::Failed {
                        call_id,
                        tool_name,
                        result,
                    }
                };
                self.terminal(&mut ledger, event).await;
            }
            AiProviderEvent::ToolFailed {
                call_id,
                tool_name,
                error,
            } => {
                let result = self
                    .channel
                    .redactor()
                    .redacted_tool_result(failed_result(error));
                self.terminal(
                    &mut ledger,
                    ToolEvent::Failed {
                        call_id: call_id.into(),
                        tool_name: tool_name.into(),
                        result,
                    },
                )
                .await;
            }
            AiProviderEvent::Usage {
                input_tokens,
                output_tokens,
            } => {
                let usage = ledger.usage.get_or_insert_with(TokenUsage::default);
                usage.input_tokens = usage.input_tokens.saturating_add(input_tokens);
                usage.output_tokens = usage.output_tokens.saturating_add(output_tokens);
            }
            // The turn loop handles the end of a turn itself.
            AiProviderEvent::Completed | AiProviderEvent::Failed { .. } => {}
            // An event newer than this host: nothing of it reaches the stream.
            other => tracing::debug!(event = ?other, "provider event of an unknown kind dropped"),
        }
    }

    /// Publishes `tool.started` for a call that has only been announced.
    async fn ensure_started(&self, ledger: &mut Ledger, index: usize) {
        let call = &mut ledger.calls[index];
        if !matches!(
            std::mem::replace(&mut call.state, CallState::Started),
            CallState::Announced
        ) {
            return;
        }
        let started = ToolEvent::Started {
            call_id: call.call_id.clone(),
            tool_name: call.tool_name.clone(),
            arguments: call.arguments.clone(),
        };
        self.append_tool_event(ledger, started).await;
    }

    /// Publishes a terminal tool event unless the call already has one.
    async fn terminal(&self, ledger: &mut Ledger, event: ToolEvent) {
        let (call_id, tool_name) = match &event {
            ToolEvent::Completed {
                call_id, tool_name, ..
            }
            | ToolEvent::Failed {
                call_id, tool_name, ..
            }
            | ToolEvent::Started {
                call_id, tool_name, ..
            } => (call_id.clone(), tool_name.clone()),
        };
        let index = match ledger.by_id.get(&call_id) {
            Some(index) => *index,
            None => ledger.insert(
                call_id,
                tool_name,
                CallState::Announced,
                // Null holds nothing to redact.
                Redacted::assembled(Arc::new(Value::Null)),
            ),
        };
        if matches!(ledger.calls[index].state, CallState::Finished) {
            return;
        }
        self.ensure_started(ledger, index).await;
        ledger.calls[index].state = CallState::Finished;
        if let ToolEvent::Completed { result, .. } | ToolEvent::Failed { result, .. } = &event {
            let call = &ledger.calls[index];
            /// The result the model read, as its tool message stores it.
            #[derive(Serialize)]
            struct Stored<'a> {
                outcome: AiToolOutcome,
                content: &'a Value,
                error: &'a Option<AiToolError>,
            }
            // Written as the message's text now, from the redacted result itself (not a copy
            // of it); the call id and tool name, the provider's, are redacted here.
            let redactor = self.channel.redactor();
            let text = AiToolMessage::text(
                &redactor.redact_str(&call.call_id),
                &redactor.redact_str(&call.tool_name),
                call.arguments.get(),
                &Stored {
                    outcome: result.outcome,
                    content: &result.content,
                    error: &result.error,
                },
            );
            ledger.tool_messages.push(text);
        }
        self.append_tool_event(ledger, event).await;
    }

    /// Ends the turn's event flow: closes every open tool call with a `tool.failed`
    /// carrying `reason`, publishes a synthesized `assistant.completed` for text that was
    /// streamed but never completed (when the turn `completed`), and drops anything that
    /// arrives later.
    pub async fn close(&self, completed: bool, reason: &AiError) -> TurnOutput {
        let mut ledger = self.ledger.lock().await;
        let open: Vec<usize> = (0..ledger.calls.len())
            .filter(|i| !matches!(ledger.calls[*i].state, CallState::Finished))
            .collect();
        for index in open {
            let call = &ledger.calls[index];
            let failed = ToolEvent::Failed {
                call_id: call.call_id.clone(),
                tool_name: call.tool_name.clone(),
                result: self
                    .channel
                    .redactor()
                    .redacted_tool_result(AiToolResult::error(reason)),
            };
            self.terminal(&mut ledger, failed).await;
        }
        if completed && !ledger.pending_text.is_empty() {
            let text = std::mem::take(&mut ledger.pending_text);
            ledger.messages.push(text.clone());
            let message_id = ledger.message_id().to_owned();
            self.append(
                &mut ledger,
                AiStreamEventType::AssistantCompleted,
                json!({"text": text, "content": text, "messageId": message_id}),
            )
            .await;
        }
        ledger.closed = true;
        TurnOutput {
            reply: ledger.messages.join("\n\n"),
            tool_calls: ledger.calls.len(),
            usage: ledger.usage,
            tool_messages: std::mem::take(&mut ledger.tool_messages),
        }
    }
}

impl Ledger {
    /// The id of the assistant message being streamed, made on first use.
    fn message_id(&mut self) -> &str {
        self.message_id
            .get_or_insert_with(|| uuid::Uuid::new_v4().simple().to_string())
    }

    fn insert(
        &mut self,
        call_id: Arc<str>,
        tool_name: Arc<str>,
        state: CallState,
        arguments: Redacted<Arc<Value>>,
    ) -> usize {
        let index = self.calls.len();
        self.by_id.insert(Arc::clone(&call_id), index);
        self.calls.push(Call {
            call_id,
            tool_name,
            state,
            arguments,
        });
        index
    }
}

fn failed_result(error: AiToolError) -> AiToolResult {
    AiToolResult {
        outcome: AiToolOutcome::Error,
        content: Value::Null,
        error: Some(error),
        truncated: false,
    }
}

#[async_trait]
impl ToolEventSink for TurnEvents {
    async fn publish(&self, event: ToolEvent) -> Result<(), AiError> {
        let mut ledger = self.ledger.lock().await;
        if ledger.closed {
            tracing::debug!(
                call_id = event.call_id(),
                "tool event after the turn ended dropped"
            );
            return Ok(());
        }
        match event {
            ToolEvent::Started {
                call_id,
                tool_name,
                arguments,
            } => {
                let fresh = match ledger.by_id.get(&call_id).copied() {
                    None => {
                        ledger.insert(
                            call_id.clone(),
                            tool_name.clone(),
                            CallState::Started,
                            arguments.clone(),
                        );
                        true
                    }
                    Some(index) => {
                        let call = &mut ledger.calls[index];
                        let announced = matches!(call.state, CallState::Announced);
                        if announced {
                            call.state = CallState::Started;
                            call.tool_name = tool_name.clone();
                            call.arguments = arguments.clone();
                        }
                        announced
                    }
                };
                if fresh {
                    let started = ToolEvent::Started {
                        call_id,
                        tool_name,
                        arguments,
                    };
                    self.append_tool_event(&mut ledger, started).await;
                }
            }
            terminal => self.terminal(&mut ledger, terminal).await,
        }
        Ok(())
    }
}
