//! Copilot session events mapped to Weaver's provider events. Nothing of the SDK's event
//! names or payload types leaves this module: the host only ever sees [`AiProviderEvent`]s.

use std::collections::HashMap;
use std::sync::Arc;

use elsa_ai_abstractions::{AiError, AiProviderEvent, AiToolError, AiToolResult};
use github_copilot_sdk::SessionEvent;
use github_copilot_sdk::session_events::{
    AssistantMessageData, AssistantMessageDeltaData, SessionErrorData, SessionEventType,
    SessionIdleData, ToolExecutionCompleteData, ToolExecutionProgressData,
    ToolExecutionStartData,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::names::ToolNames;
use crate::tools::ToolResults;

/// What one session event means for the turn.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Mapped {
    /// The provider events to report, in order.
    pub events: Vec<AiProviderEvent>,
    /// Whether the turn is over (the last event is `Completed` or `Failed`).
    pub finished: bool,
}

impl Mapped {
    fn one(event: AiProviderEvent) -> Self {
        Self {
            events: vec![event],
            finished: false,
        }
    }

    fn last(event: AiProviderEvent) -> Self {
        Self {
            events: vec![event],
            finished: true,
        }
    }
}

/// The cancellation every cancelled or aborted turn ends with.
pub(crate) fn turn_cancelled() -> AiError {
    AiError::unavailable("turn_cancelled", "the turn was cancelled")
}

/// Maps the events of one turn. Events before the turn's own user message (the replay a
/// resumed session starts with) and events of sub-agents never end the turn.
pub(crate) struct TurnEventMapper {
    names: Arc<ToolNames>,
    results: Arc<ToolResults>,
    /// The id of the message that started the turn.
    message_id: Option<String>,
    /// Whether the runtime has begun the turn.
    started: bool,
    /// The Weaver name of each tool call started and not yet completed.
    calls: HashMap<String, String>,
}

impl TurnEventMapper {
    pub(crate) fn new(names: Arc<ToolNames>, results: Arc<ToolResults>) -> Self {
        Self {
            names,
            results,
            message_id: None,
            started: false,
            calls: HashMap::new(),
        }
    }

    /// Remembers the id the runtime gave the turn's message.
    pub(crate) fn sent(&mut self, message_id: String) {
        self.message_id = Some(message_id);
    }

    pub(crate) fn map(&mut self, event: &SessionEvent) -> Mapped {
        if event.agent_id.is_some() {
            return Mapped::default();
        }
        match event.parsed_type() {
            SessionEventType::UserMessage | SessionEventType::AssistantTurnStart => {
                self.started = true;
                Mapped::default()
            }
            SessionEventType::AssistantMessageDelta => payload::<AssistantMessageDeltaData>(event)
                .filter(|data| !data.delta_content.is_empty())
                .map_or_else(Mapped::default, |data| {
                    Mapped::one(AiProviderEvent::AssistantDelta { text: data.delta_content })
                }),
            SessionEventType::AssistantMessage => payload::<AssistantMessageData>(event)
                .filter(|data| !data.content.is_empty())
                .map_or_else(Mapped::default, |data| {
                    Mapped::one(AiProviderEvent::AssistantMessage { text: data.content })
                }),
            SessionEventType::ToolExecutionStart => {
                payload::<ToolExecutionStartData>(event).map_or_else(Mapped::default, |data| {
                    let tool_name = self.weaver_name(&data.tool_name);
                    self.calls.insert(data.tool_call_id.clone(), tool_name.clone());
                    Mapped::one(AiProviderEvent::ToolStarted {
                        call_id: data.tool_call_id,
                        tool_name,
                        arguments: data.arguments.unwrap_or_else(|| json!({})),
                    })
                })
            }
            SessionEventType::ToolExecutionProgress => payload::<ToolExecutionProgressData>(event)
                .map_or_else(Mapped::default, |data| {
                    Mapped::one(AiProviderEvent::ToolProgress {
                        call_id: data.tool_call_id,
                        message: data.progress_message,
                    })
                }),
            SessionEventType::ToolExecutionComplete => payload::<ToolExecutionCompleteData>(event)
                .map_or_else(Mapped::default, |data| Mapped::one(self.tool_completed(data))),
            SessionEventType::SessionError if self.owns_error(event) && !event.is_transient_error() => {
                payload::<SessionErrorData>(event).map_or_else(
                    || Mapped::last(AiProviderEvent::Failed {
                        error: AiError::unavailable("copilot_runtime_error", "the Copilot runtime failed the turn"),
                    }),
                    |data| Mapped::last(AiProviderEvent::Failed { error: session_error(&data) }),
                )
            }
            SessionEventType::SessionIdle if self.started => {
                let aborted = payload::<SessionIdleData>(event).and_then(|data| data.aborted);
                if aborted == Some(true) {
                    Mapped::last(AiProviderEvent::Failed { error: turn_cancelled() })
                } else {
                    Mapped::last(AiProviderEvent::Completed)
                }
            }
            other => {
                tracing::trace!(event = ?other, "Copilot event ignored");
                Mapped::default()
            }
        }
    }

    fn weaver_name(&self, wire: &str) -> String {
        self.names.weaver(wire).unwrap_or(wire).to_owned()
    }

    /// An error ends the turn once the turn began, or when it names the turn's message.
    fn owns_error(&self, event: &SessionEvent) -> bool {
        self.started
            || (self.message_id.is_some()
                && event.data["originatingMessageId"].as_str() == self.message_id.as_deref())
    }

    /// A governed call completes with the invoker's own result; a call that never reached
    /// the invoker (the model named a tool the turn does not offer) fails with the
    /// runtime's reason.
    fn tool_completed(&mut self, data: ToolExecutionCompleteData) -> AiProviderEvent {
        let started = self.calls.remove(&data.tool_call_id);
        if let Some((tool_name, result)) = self.results.take(&data.tool_call_id) {
            return AiProviderEvent::ToolCompleted {
                call_id: data.tool_call_id,
                tool_name,
                result,
            };
        }
        let tool_name = started.unwrap_or_else(|| "unknown".to_owned());
        if data.success {
            AiProviderEvent::ToolCompleted {
                call_id: data.tool_call_id,
                tool_name,
                result: AiToolResult::success(Value::String(
                    data.result.map(|result| result.content).unwrap_or_default(),
                )),
            }
        } else {
            AiProviderEvent::ToolFailed {
                call_id: data.tool_call_id,
                tool_name,
                error: AiToolError {
                    code: "tool_failed".into(),
                    status: 500,
                    message: data
                        .error
                        .map_or_else(|| "the tool call failed".to_owned(), |error| error.message),
                },
            }
        }
    }
}

fn payload<T: DeserializeOwned>(event: &SessionEvent) -> Option<T> {
    let data = event.typed_data::<T>();
    if data.is_none() {
        tracing::warn!(event = %event.event_type, "a Copilot event had an unexpected shape and was ignored");
    }
    data
}

/// A failed turn: an endpoint that cannot be reached, refuses the credentials, throttles or
/// fails itself is unavailable (503); a request the endpoint rejected is an internal error.
fn session_error(data: &SessionErrorData) -> AiError {
    match data.status_code {
        Some(400..=499) if !matches!(data.status_code, Some(401 | 403 | 404 | 408 | 429)) => {
            AiError::internal("model_request_rejected", data.message.clone())
        }
        _ => AiError::unavailable("model_unavailable", data.message.clone()),
    }
}
