use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{AiError, AiStreamEventType, AiToolResult};
use serde_json::{Map, Value, json};

/// What the governor reports about one tool call, already redacted (and, for results,
/// clamped). Exactly one `Started` and one terminal event per call id.
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
        arguments: Arc<Value>,
    },
    /// The tool ran and returned content.
    Completed {
        /// The provider's call id.
        call_id: Arc<str>,
        /// The tool name.
        tool_name: Arc<str>,
        /// The redacted, clamped result the model receives.
        result: AiToolResult,
    },
    /// The call was refused or failed.
    Failed {
        /// The provider's call id.
        call_id: Arc<str>,
        /// The tool name as the model asked for it.
        tool_name: Arc<str>,
        /// The error result the model receives (`outcome` is `Denied` or `Error`).
        result: AiToolResult,
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

    /// The stream event's `data` (camelCase JSON). `toolCallId`, `status` and `summary` are
    /// the strings Elsa Studio's panel reads (it reads `summary` before `result`).
    pub fn data(&self) -> Value {
        self.clone().into_data()
    }

    /// [`Self::data`], moving the arguments or the result in instead of copying them.
    pub fn into_data(self) -> Value {
        let mut data = Map::with_capacity(9);
        match self {
            Self::Started {
                call_id,
                tool_name,
                arguments,
            } => {
                let summary = format!("{tool_name} started");
                data.insert("callId".into(), call_id[..].into());
                data.insert("toolCallId".into(), call_id[..].into());
                data.insert("toolName".into(), tool_name[..].into());
                data.insert("status".into(), "started".into());
                data.insert("summary".into(), summary.into());
                data.insert("arguments".into(), Arc::unwrap_or_clone(arguments));
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
                let (status, summary) = match &result.error {
                    Some(error) => ("failed", format!("{tool_name} failed: {}", error.message)),
                    None => ("completed", format!("{tool_name} completed")),
                };
                data.insert("callId".into(), call_id[..].into());
                data.insert("toolCallId".into(), call_id[..].into());
                data.insert("toolName".into(), tool_name[..].into());
                data.insert("status".into(), status.into());
                data.insert("summary".into(), summary.into());
                data.insert("outcome".into(), json!(result.outcome));
                data.insert("result".into(), result.content);
                data.insert("error".into(), json!(result.error));
                data.insert("truncated".into(), result.truncated.into());
            }
        }
        Value::Object(data)
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
        let started = ToolEvent::Started {
            call_id: "c1".into(),
            tool_name: "demo.echo".into(),
            arguments: Arc::new(json!({"x": 1})),
        };
        assert_eq!(started.event_type(), AiStreamEventType::ToolStarted);
        assert_eq!(started.data()["callId"], "c1");
        assert_eq!(
            started.data(),
            json!({
                "callId": "c1", "toolCallId": "c1", "toolName": "demo.echo",
                "status": "started", "summary": "demo.echo started", "arguments": {"x": 1},
            })
        );
        let failed = ToolEvent::Failed {
            call_id: "c1".into(),
            tool_name: "demo.echo".into(),
            result: AiToolResult::denied(&AiError::forbidden("tool_disabled", "off")),
        };
        assert_eq!(failed.event_type(), AiStreamEventType::ToolFailed);
        assert_eq!(failed.data()["outcome"], "Denied");
        assert_eq!(failed.data()["error"]["status"], 403);
        assert_eq!(failed.call_id(), "c1");
    }
}
