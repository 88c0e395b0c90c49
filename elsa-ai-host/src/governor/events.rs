use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{AiError, AiStreamEventType, AiToolResult};
use serde_json::{Map, Value, json};

use crate::redaction::{Redacted, Redactor};

/// What the governor reports about one tool call: its arguments and result already redacted
/// (and, for results, clamped), which their type says. Exactly one `Started` and one
/// terminal event per call id.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ToolEvent {
    /// The call passed governance and is about to run, or was refused (then `Failed` follows).
    Started {
        /// The provider's call id.
        call_id: Arc<str>,
        /// The tool name as the model asked for it.
        tool_name: Arc<str>,
        /// The redacted arguments, shared with the tool's context and the audit record.
        arguments: Redacted<Arc<Value>>,
    },
    /// The tool ran and returned content.
    Completed {
        /// The provider's call id.
        call_id: Arc<str>,
        /// The tool name.
        tool_name: Arc<str>,
        /// The redacted, clamped result the model receives.
        result: Redacted<AiToolResult>,
    },
    /// The call was refused or failed.
    Failed {
        /// The provider's call id.
        call_id: Arc<str>,
        /// The tool name as the model asked for it.
        tool_name: Arc<str>,
        /// The error result the model receives (`outcome` is `Denied` or `Error`).
        result: Redacted<AiToolResult>,
    },
}

impl ToolEvent {
    /// The call id the event belongs to.
    pub fn call_id(&self) -> &str {
        match self {
            Self::Started { call_id, .. }
            | Self::Completed { call_id, .. }
            | Self::Failed { call_id, .. } => call_id,
        }
    }

    /// The stream event type it maps to: `tool.started`, `tool.completed` or `tool.failed`.
    pub fn event_type(&self) -> AiStreamEventType {
        match self {
            Self::Started { .. } => AiStreamEventType::ToolStarted,
            Self::Completed { .. } => AiStreamEventType::ToolCompleted,
            Self::Failed { .. } => AiStreamEventType::ToolFailed,
        }
    }

    /// The stream event's `data` (camelCase JSON), redacted. `toolCallId`, `status` and
    /// `summary` are the strings Elsa Studio's panel reads (it reads `summary` before
    /// `result`).
    pub fn data(&self, redactor: &Redactor) -> Redacted<Value> {
        self.clone().into_data(redactor)
    }

    /// [`Self::data`], moving the arguments or the result in instead of copying them. Only
    /// the call id, the tool name and the summary are redacted here: the arguments and the
    /// result were redacted before, and the keys are this function's own.
    pub fn into_data(self, redactor: &Redactor) -> Redacted<Value> {
        let text = |text: &str| Value::String(redactor.redact_str(text).into_owned());
        let mut data = Map::with_capacity(9);
        match self {
            Self::Started {
                call_id,
                tool_name,
                arguments,
            } => {
                let summary = format!("{tool_name} started");
                data.insert("callId".into(), text(&call_id));
                data.insert("toolCallId".into(), text(&call_id));
                data.insert("toolName".into(), text(&tool_name));
                data.insert("status".into(), "started".into());
                data.insert("summary".into(), text(&summary));
                data.insert(
                    "arguments".into(),
                    Arc::unwrap_or_clone(arguments.into_inner()),
                );
            }
            Self::Completed {
                call_id,
                tool_name,
                result,
            }
            | Self::Failed {
                call_id,
                tool_name,
                result,
            } => {
                let result = result.into_inner();
                let (status, summary) = match &result.error {
                    Some(error) => ("failed", format!("{tool_name} failed: {}", error.message)),
                    None => ("completed", format!("{tool_name} completed")),
                };
                data.insert("callId".into(), text(&call_id));
                data.insert("toolCallId".into(), text(&call_id));
                data.insert("toolName".into(), text(&tool_name));
                data.insert("status".into(), status.into());
                data.insert("summary".into(), text(&summary));
                data.insert("outcome".into(), json!(result.outcome));
                data.insert("result".into(), result.content);
                data.insert("error".into(), json!(result.error));
                data.insert("truncated".into(), result.truncated.into());
            }
        }
        Redacted::assembled(Value::Object(data))
    }
}

/// Where the governor reports tool events of a turn; the orchestrator connects it to the
/// conversation's stream journal.
#[async_trait]
pub trait ToolEventSink: Send + Sync {
    /// Publishes one event. A failure is logged and counted; it does not change the result
    /// the model receives (the audit trail, not the stream, is the record of the call).
    async fn publish(&self, event: ToolEvent) -> Result<(), AiError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_map_to_stream_types_and_camel_case_data() {
        let redactor = Redactor::default();
        let started = ToolEvent::Started {
            call_id: "c1".into(),
            tool_name: "demo.echo".into(),
            arguments: redactor.redacted(json!({"x": 1})).wrapped(Arc::new),
        };
        assert_eq!(started.event_type(), AiStreamEventType::ToolStarted);
        assert_eq!(started.data(&redactor)["callId"], "c1");
        assert_eq!(
            *started.data(&redactor),
            json!({
                "callId": "c1", "toolCallId": "c1", "toolName": "demo.echo",
                "status": "started", "summary": "demo.echo started", "arguments": {"x": 1},
            })
        );
        let failed = ToolEvent::Failed {
            call_id: "c1".into(),
            tool_name: "demo.echo".into(),
            result: redactor.redacted_tool_result(AiToolResult::denied(&AiError::forbidden(
                "tool_disabled",
                "off",
            ))),
        };
        assert_eq!(failed.event_type(), AiStreamEventType::ToolFailed);
        assert_eq!(failed.data(&redactor)["outcome"], "Denied");
        assert_eq!(failed.data(&redactor)["error"]["status"], 403);
        assert_eq!(failed.call_id(), "c1");
    }

    #[test]
    fn the_names_a_provider_chose_are_redacted_in_the_data() {
        // The arguments and the result come redacted; the call id and the tool name come
        // from the provider (a model may have written them) and are redacted here.
        let redactor = Redactor::default();
        let failed = ToolEvent::Failed {
            call_id: "Bearer abcdef123456".into(),
            tool_name: "password=hunter2".into(),
            result: redactor.redacted_tool_result(AiToolResult::error(&AiError::internal(
                "failed",
                "Password=hunter2;",
            ))),
        };
        let data = failed.into_data(&redactor).into_inner();
        assert_eq!(data["callId"], "Bearer [REDACTED]");
        assert_eq!(data["toolCallId"], "Bearer [REDACTED]");
        assert!(!data.to_string().contains("hunter2"), "{data}");
        assert_eq!(
            redactor.redacted_value(&data),
            data,
            "nothing left to redact"
        );
    }
}
