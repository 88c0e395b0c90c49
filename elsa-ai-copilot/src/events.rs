//! Copilot session events mapped to Weaver's provider events. Nothing of the SDK's event
//! names or payload types leaves this module: the host only ever sees [`AiProviderEvent`]s.
//!
//! A session's event stream carries more than one turn's events: a resumed session first
//! reports its own start-up, and the runtime reports sub-agents and ephemeral bookkeeping
//! too. The mapper therefore follows the SDK's own rule for `send_and_wait`: a turn begins
//! with the user message that carries the id `send` returned, its events come from the
//! root agent, and it ends with the next `session.idle` (or a `session.error` of its own).

use std::collections::HashMap;
use std::sync::Arc;

use elsa_ai_abstractions::{AiError, AiProviderEvent, AiToolError, AiToolResult};
use github_copilot_sdk::SessionEvent;
use github_copilot_sdk::session_events::{
    AssistantMessageData, AssistantMessageDeltaData, AssistantUsageData, SessionErrorData,
    SessionEventType, SessionIdleData, SessionMode, ToolExecutionCompleteData,
    ToolExecutionProgressData, ToolExecutionStartData, UserMessageData,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::tools::ToolResults;
use elsa_ai_abstractions::function_names::ToolNames;

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

    fn extend(&mut self, other: Mapped) {
        self.events.extend(other.events);
        self.finished |= other.finished;
    }
}

/// The error a cancelled (aborted) turn ends with.
pub(crate) fn turn_cancelled() -> AiError {
    AiError::unavailable("turn_cancelled", "the turn was cancelled")
}

/// Maps the events of one turn.
pub(crate) struct TurnEventMapper {
    names: Arc<ToolNames>,
    results: Arc<ToolResults>,
    /// The id `send` returned for the turn's message, once it returned.
    message_id: Option<String>,
    /// Events that arrived before `send` returned, in order.
    pending: Vec<SessionEvent>,
    /// Whether the turn's own user message has been seen.
    started: bool,
    /// Whether the terminal event has been reported.
    finished: bool,
    /// The Weaver name of each tool call started and not yet completed.
    calls: HashMap<String, String>,
}

impl TurnEventMapper {
    pub(crate) fn new(names: Arc<ToolNames>, results: Arc<ToolResults>) -> Self {
        Self {
            names,
            results,
            message_id: None,
            pending: Vec::new(),
            started: false,
            finished: false,
            calls: HashMap::new(),
        }
    }

    /// Remembers the id the runtime gave the turn's message and maps the events that
    /// arrived before it was known.
    pub(crate) fn sent(&mut self, message_id: String) -> Mapped {
        self.message_id = Some(message_id);
        let mut mapped = Mapped::default();
        for event in std::mem::take(&mut self.pending) {
            if mapped.finished {
                break;
            }
            mapped.extend(self.map(&event));
        }
        mapped
    }

    /// Maps one event. Unknown kinds, other agents' events and payloads of an unexpected
    /// shape are ignored; nothing is reported after the terminal event.
    pub(crate) fn map(&mut self, event: &SessionEvent) -> Mapped {
        if self.finished || !is_root(event) {
            return Mapped::default();
        }
        let Some(message_id) = self.message_id.clone() else {
            self.pending.push(event.clone());
            return Mapped::default();
        };
        let mapped = match event.parsed_type() {
            SessionEventType::UserMessage => {
                if payload::<UserMessageData>(event)
                    .is_some_and(|data| data.message_id.as_deref() == Some(message_id.as_str()))
                {
                    self.started = true;
                }
                Mapped::default()
            }
            SessionEventType::SessionError => self.session_error(event, &message_id),
            _ if !self.started => Mapped::default(),
            SessionEventType::AssistantMessageDelta => payload::<AssistantMessageDeltaData>(event)
                .filter(|data| !data.delta_content.is_empty())
                .map_or_else(Mapped::default, |data| {
                    Mapped::one(AiProviderEvent::AssistantDelta {
                        text: data.delta_content,
                    })
                }),
            SessionEventType::AssistantMessage => payload::<AssistantMessageData>(event)
                .filter(|data| {
                    !data.content.is_empty()
                        && data
                            .originating_message_id
                            .as_deref()
                            .is_none_or(|origin| origin == message_id)
                })
                .map_or_else(Mapped::default, |data| {
                    Mapped::one(AiProviderEvent::AssistantMessage { text: data.content })
                }),
            // One model call's tokens; the host sums a turn's reports.
            SessionEventType::AssistantUsage => payload::<AssistantUsageData>(event)
                .filter(|data| data.input_tokens.is_some() || data.output_tokens.is_some())
                .map_or_else(Mapped::default, |data| {
                    let tokens = |n: Option<i64>| n.map_or(0, |n| u64::try_from(n).unwrap_or(0));
                    Mapped::one(AiProviderEvent::Usage {
                        input_tokens: tokens(data.input_tokens),
                        output_tokens: tokens(data.output_tokens),
                    })
                }),
            SessionEventType::ToolExecutionStart => payload::<ToolExecutionStartData>(event)
                .map_or_else(Mapped::default, |data| {
                    let tool_name = self.weaver_name(&data.tool_name);
                    self.calls
                        .insert(data.tool_call_id.clone(), tool_name.clone());
                    Mapped::one(AiProviderEvent::ToolStarted {
                        call_id: data.tool_call_id,
                        tool_name,
                        arguments: data.arguments.unwrap_or_else(|| json!({})),
                    })
                }),
            SessionEventType::ToolExecutionProgress => payload::<ToolExecutionProgressData>(event)
                .map_or_else(Mapped::default, |data| {
                    Mapped::one(AiProviderEvent::ToolProgress {
                        call_id: data.tool_call_id,
                        message: data.progress_message,
                    })
                }),
            SessionEventType::ToolExecutionComplete => payload::<ToolExecutionCompleteData>(event)
                .map_or_else(Mapped::default, |data| {
                    Mapped::one(self.tool_completed(data))
                }),
            SessionEventType::SessionIdle => {
                let data = payload::<SessionIdleData>(event);
                let idle = data.as_ref();
                if idle.and_then(|d| d.mode.as_ref()) == Some(&SessionMode::Autopilot) {
                    // An autopilot continuation is not the end of the turn.
                    Mapped::default()
                } else if idle.and_then(|d| d.aborted) == Some(true) {
                    Mapped::last(AiProviderEvent::Failed {
                        error: turn_cancelled(),
                    })
                } else {
                    Mapped::last(AiProviderEvent::Completed)
                }
            }
            other => {
                tracing::trace!(event = ?other, "Copilot event ignored");
                Mapped::default()
            }
        };
        self.finished |= mapped.finished;
        mapped
    }

    /// A session error ends the turn when it names the turn's message, or names no message
    /// once the turn began. Errors the runtime recovers from itself are not the end.
    fn session_error(&self, event: &SessionEvent, message_id: &str) -> Mapped {
        if event.is_transient_error() {
            return Mapped::default();
        }
        let Some(data) = payload::<SessionErrorData>(event) else {
            return if self.started {
                Mapped::last(AiProviderEvent::Failed {
                    error: AiError::unavailable(
                        "model_unavailable",
                        "the Copilot runtime failed the turn",
                    ),
                })
            } else {
                Mapped::default()
            };
        };
        let owned = match data.originating_message_id.as_deref() {
            Some(origin) if !origin.is_empty() => origin == message_id,
            _ => self.started,
        };
        if owned {
            Mapped::last(AiProviderEvent::Failed {
                error: session_error(&data),
            })
        } else {
            Mapped::default()
        }
    }

    fn weaver_name(&self, wire: &str) -> String {
        self.names.resolve(wire).unwrap_or(wire).to_owned()
    }

    /// A governed call completes with the invoker's own result; a call that never reached
    /// the invoker fails with the runtime's reason.
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

/// The call id and function name of a root-agent tool call the turn does not offer, if
/// `event` starts one. Such calls never reach a tool handler; the pre-tool-use hook sends
/// them to the governor under this call id.
pub(crate) fn unoffered_call(event: &SessionEvent, names: &ToolNames) -> Option<(String, String)> {
    if !is_root(event) || event.parsed_type() != SessionEventType::ToolExecutionStart {
        return None;
    }
    let data = event.typed_data::<ToolExecutionStartData>()?;
    (!names.contains_wire(&data.tool_name)).then_some((data.tool_call_id, data.tool_name))
}

/// Root-agent events have no agent id (sub-agents' events carry theirs).
fn is_root(event: &SessionEvent) -> bool {
    event.agent_id.as_deref().is_none_or(str::is_empty)
}

fn payload<T: DeserializeOwned>(event: &SessionEvent) -> Option<T> {
    let data = event.typed_data::<T>();
    if data.is_none() {
        tracing::warn!(event = %event.event_type, "a Copilot event had an unexpected shape and was ignored");
    }
    data
}

/// A failed turn is the model endpoint failing (unreachable, throttling, refusing the
/// request or the credentials): the provider runtime is unavailable or misconfigured (503).
fn session_error(data: &SessionErrorData) -> AiError {
    let auth = matches!(data.status_code, Some(401 | 403)) || data.error_type == "authentication";
    let code = if auth {
        "model_auth_failed"
    } else {
        "model_unavailable"
    };
    AiError::unavailable(
        code,
        format!("the model endpoint failed the turn: {}", data.message),
    )
}

#[cfg(test)]
mod tests {
    use elsa_ai_abstractions::{AiToolOutcome, AiToolResult};

    use super::*;

    const MESSAGE: &str = "msg-1";

    fn event(event_type: &str, data: Value) -> SessionEvent {
        serde_json::from_value(json!({
            "id": "e", "timestamp": "2026-01-01T00:00:00Z", "parentId": null,
            "type": event_type, "data": data,
        }))
        .unwrap()
    }

    fn sub_agent(mut event: SessionEvent) -> SessionEvent {
        event.agent_id = Some("sub-1".into());
        event
    }

    fn user_message(id: &str) -> SessionEvent {
        event("user.message", json!({"content": "hi", "messageId": id}))
    }

    fn mapper() -> (TurnEventMapper, Arc<ToolResults>) {
        let names = ToolNames::new(["workflow.getDefinition"])
            .unwrap()
            .with_known(["instance.get"]);
        let results = Arc::new(ToolResults::default());
        (
            TurnEventMapper::new(Arc::new(names), results.clone()),
            results,
        )
    }

    /// A mapper whose turn has begun.
    fn started() -> (TurnEventMapper, Arc<ToolResults>) {
        let (mut mapper, results) = mapper();
        assert_eq!(mapper.sent(MESSAGE.into()), Mapped::default());
        assert_eq!(mapper.map(&user_message(MESSAGE)), Mapped::default());
        (mapper, results)
    }

    fn only(mapped: Mapped) -> AiProviderEvent {
        assert!(!mapped.finished, "{mapped:?}");
        assert_eq!(mapped.events.len(), 1, "{mapped:?}");
        mapped.events.into_iter().next().unwrap()
    }

    fn last(mapped: Mapped) -> AiProviderEvent {
        assert!(mapped.finished, "{mapped:?}");
        assert_eq!(mapped.events.len(), 1, "{mapped:?}");
        mapped.events.into_iter().next().unwrap()
    }

    #[test]
    fn usage_reports_become_token_usage() {
        let (mut mapper, _) = started();
        let usage = event(
            "assistant.usage",
            json!({"model": "gpt-4.1", "inputTokens": 120, "outputTokens": 7}),
        );
        assert_eq!(
            only(mapper.map(&usage)),
            AiProviderEvent::Usage {
                input_tokens: 120,
                output_tokens: 7
            }
        );
        let without = event("assistant.usage", json!({"model": "gpt-4.1"}));
        assert_eq!(mapper.map(&without), Mapped::default());
    }

    #[test]
    fn message_deltas_become_assistant_deltas() {
        let (mut mapper, _) = started();
        let delta = event(
            "assistant.message_delta",
            json!({"messageId": "a", "deltaContent": "Hel"}),
        );
        assert_eq!(
            only(mapper.map(&delta)),
            AiProviderEvent::AssistantDelta { text: "Hel".into() }
        );
        let empty = event(
            "assistant.message_delta",
            json!({"messageId": "a", "deltaContent": ""}),
        );
        assert_eq!(mapper.map(&empty), Mapped::default());
    }

    #[test]
    fn final_messages_become_assistant_messages_unless_empty_or_foreign() {
        let (mut mapper, _) = started();
        let message = event(
            "assistant.message",
            json!({"messageId": "a", "content": "Hello.", "originatingMessageId": MESSAGE}),
        );
        assert_eq!(
            only(mapper.map(&message)),
            AiProviderEvent::AssistantMessage {
                text: "Hello.".into()
            }
        );
        let tool_request = event(
            "assistant.message",
            json!({"messageId": "b", "content": "", "toolRequests": [{"toolCallId": "c", "name": "x"}]}),
        );
        assert_eq!(mapper.map(&tool_request), Mapped::default());
        let other = event(
            "assistant.message",
            json!({"messageId": "c", "content": "old", "originatingMessageId": "msg-0"}),
        );
        assert_eq!(
            mapper.map(&other),
            Mapped::default(),
            "another message's reply"
        );
    }

    #[test]
    fn tool_calls_start_progress_and_complete_with_the_governed_result() {
        let (mut mapper, results) = started();
        let start = event(
            "tool.execution_start",
            json!({"toolCallId": "call-1", "toolName": "workflow_getDefinition", "arguments": {"id": "wf-1"}}),
        );
        assert_eq!(
            only(mapper.map(&start)),
            AiProviderEvent::ToolStarted {
                call_id: "call-1".into(),
                tool_name: "workflow.getDefinition".into(),
                arguments: json!({"id": "wf-1"}),
            }
        );
        let progress = event(
            "tool.execution_progress",
            json!({"toolCallId": "call-1", "progressMessage": "reading"}),
        );
        assert_eq!(
            only(mapper.map(&progress)),
            AiProviderEvent::ToolProgress {
                call_id: "call-1".into(),
                message: "reading".into()
            }
        );
        let governed = AiToolResult::success(json!({"name": "Hello"}));
        results.record("call-1", "workflow.getDefinition", governed.clone());
        let complete = event(
            "tool.execution_complete",
            json!({"toolCallId": "call-1", "success": true, "result": {"content": "{\"name\":\"Hello\"}"}}),
        );
        assert_eq!(
            only(mapper.map(&complete)),
            AiProviderEvent::ToolCompleted {
                call_id: "call-1".into(),
                tool_name: "workflow.getDefinition".into(),
                result: governed,
            }
        );
    }

    #[test]
    fn a_denied_call_completes_with_the_governors_denial() {
        let (mut mapper, results) = started();
        let denied = AiToolResult::denied(&AiError::forbidden("permission_denied", "no"));
        results.record("call-2", "instance.get", denied.clone());
        let start = event(
            "tool.execution_start",
            json!({"toolCallId": "call-2", "toolName": "instance_get", "arguments": {}}),
        );
        let AiProviderEvent::ToolStarted { tool_name, .. } = only(mapper.map(&start)) else {
            panic!("tool started")
        };
        assert_eq!(
            tool_name, "instance.get",
            "a known name is reported by its Weaver name"
        );
        let complete = event(
            "tool.execution_complete",
            json!({"toolCallId": "call-2", "success": false, "error": {"message": "Denied by preToolUse hook"}}),
        );
        let AiProviderEvent::ToolCompleted { result, .. } = only(mapper.map(&complete)) else {
            panic!("completed with the governed result")
        };
        assert_eq!(result.outcome, AiToolOutcome::Denied);
    }

    #[test]
    fn calls_that_never_reached_the_invoker_report_the_runtimes_outcome() {
        let (mut mapper, _) = started();
        let start = event(
            "tool.execution_start",
            json!({"toolCallId": "c3", "toolName": "bash"}),
        );
        assert_eq!(
            only(mapper.map(&start)),
            AiProviderEvent::ToolStarted {
                call_id: "c3".into(),
                tool_name: "bash".into(),
                arguments: json!({})
            }
        );
        let failed = event(
            "tool.execution_complete",
            json!({"toolCallId": "c3", "success": false, "error": {"message": "Tool 'bash' does not exist."}}),
        );
        assert_eq!(
            only(mapper.map(&failed)),
            AiProviderEvent::ToolFailed {
                call_id: "c3".into(),
                tool_name: "bash".into(),
                error: AiToolError {
                    code: "tool_failed".into(),
                    status: 500,
                    message: "Tool 'bash' does not exist.".into(),
                },
            }
        );
        let succeeded = event(
            "tool.execution_complete",
            json!({"toolCallId": "c4", "success": true, "result": {"content": "ok"}}),
        );
        assert_eq!(
            only(mapper.map(&succeeded)),
            AiProviderEvent::ToolCompleted {
                call_id: "c4".into(),
                tool_name: "unknown".into(),
                result: AiToolResult::success(json!("ok")),
            }
        );
    }

    #[test]
    fn idle_completes_the_turn_and_nothing_follows() {
        let (mut mapper, _) = started();
        let idle = event("session.idle", json!({"mode": "interactive"}));
        assert_eq!(last(mapper.map(&idle)), AiProviderEvent::Completed);
        let delta = event(
            "assistant.message_delta",
            json!({"messageId": "a", "deltaContent": "late"}),
        );
        assert_eq!(mapper.map(&delta), Mapped::default());
    }

    #[test]
    fn an_aborted_idle_fails_the_turn_as_cancelled() {
        let (mut mapper, _) = started();
        let idle = event(
            "session.idle",
            json!({"aborted": true, "mode": "interactive"}),
        );
        assert_eq!(
            last(mapper.map(&idle)),
            AiProviderEvent::Failed {
                error: turn_cancelled()
            }
        );
    }

    #[test]
    fn an_autopilot_continuation_idle_is_not_the_end() {
        let (mut mapper, _) = started();
        let idle = event("session.idle", json!({"mode": "autopilot"}));
        assert_eq!(mapper.map(&idle), Mapped::default());
    }

    #[test]
    fn session_errors_fail_the_turn_with_503() {
        let (mut mapper, _) = started();
        let auth = event(
            "session.error",
            json!({"errorType": "authentication", "message": "HTTP 401", "statusCode": 401, "originatingMessageId": MESSAGE}),
        );
        let AiProviderEvent::Failed { error } = last(mapper.map(&auth)) else {
            panic!("failed")
        };
        assert_eq!((error.status(), error.code()), (503, "model_auth_failed"));
        assert!(error.message().contains("HTTP 401"));

        let (mut mapper, _) = started();
        let down = event(
            "session.error",
            json!({"errorType": "query", "message": "Could not connect to local model provider"}),
        );
        let AiProviderEvent::Failed { error } = last(mapper.map(&down)) else {
            panic!("failed")
        };
        assert_eq!((error.status(), error.code()), (503, "model_unavailable"));
    }

    #[test]
    fn transient_and_foreign_errors_do_not_end_the_turn() {
        let (mut mapper, _) = started();
        let transient = event(
            "session.error",
            json!({"errorType": "model_call", "message": "retrying"}),
        );
        assert_eq!(mapper.map(&transient), Mapped::default());
        let foreign = event(
            "session.error",
            json!({"errorType": "query", "message": "x", "originatingMessageId": "msg-0"}),
        );
        assert_eq!(mapper.map(&foreign), Mapped::default());
    }

    #[test]
    fn events_before_the_turns_message_are_ignored() {
        let (mut mapper, _) = mapper();
        assert_eq!(mapper.sent(MESSAGE.into()), Mapped::default());
        // A resumed session reports its start-up and may replay an earlier idle.
        for early in [
            event("session.resume", json!({"eventCount": 3})),
            user_message("msg-0"),
            event(
                "assistant.message_delta",
                json!({"messageId": "a", "deltaContent": "old"}),
            ),
            event("session.idle", json!({})),
            event(
                "session.error",
                json!({"errorType": "query", "message": "unowned"}),
            ),
        ] {
            assert_eq!(
                mapper.map(&early),
                Mapped::default(),
                "{}",
                early.event_type
            );
        }
        let failed = event(
            "session.error",
            json!({"errorType": "query", "message": "refused", "originatingMessageId": MESSAGE}),
        );
        assert!(
            mapper.map(&failed).finished,
            "an error naming the message ends it even before it began"
        );
    }

    #[test]
    fn events_before_send_returned_are_mapped_once_the_id_is_known() {
        let (mut mapper, _) = mapper();
        let delta = event(
            "assistant.message_delta",
            json!({"messageId": "a", "deltaContent": "Hi"}),
        );
        let idle = event("session.idle", json!({}));
        for early in [&user_message(MESSAGE), &delta, &idle] {
            assert_eq!(mapper.map(early), Mapped::default());
        }
        let mapped = mapper.sent(MESSAGE.into());
        assert!(mapped.finished);
        assert_eq!(
            mapped.events,
            [
                AiProviderEvent::AssistantDelta { text: "Hi".into() },
                AiProviderEvent::Completed
            ]
        );
    }

    #[test]
    fn sub_agent_events_are_ignored() {
        let (mut mapper, _) = started();
        for nested in [
            event(
                "assistant.message_delta",
                json!({"messageId": "a", "deltaContent": "x"}),
            ),
            event(
                "tool.execution_start",
                json!({"toolCallId": "c", "toolName": "workflow_getDefinition"}),
            ),
            event("session.idle", json!({})),
        ] {
            assert_eq!(mapper.map(&sub_agent(nested)), Mapped::default());
        }
    }

    #[test]
    fn unknown_kinds_and_unexpected_shapes_are_ignored_without_failing_the_turn() {
        let (mut mapper, _) = started();
        for ignored in [
            event("session.some_future_event", json!({"anything": [1, 2, 3]})),
            event(
                "assistant.reasoning_delta",
                json!({"deltaContent": "thinking"}),
            ),
            event("model.call_start", json!({})),
            event("permission.requested", json!({"requestId": "r"})),
            event("abort", json!({"reason": "user_initiated"})),
            event("assistant.message_delta", json!({"unexpected": true})),
            event("tool.execution_start", json!("not an object")),
        ] {
            assert_eq!(
                mapper.map(&ignored),
                Mapped::default(),
                "{}",
                ignored.event_type
            );
        }
        let idle = event("session.idle", json!({}));
        assert_eq!(
            last(mapper.map(&idle)),
            AiProviderEvent::Completed,
            "the turn still completes"
        );
    }

    #[test]
    fn unoffered_calls_are_recognised_from_their_start() {
        let names = ToolNames::new(["workflow.getDefinition"]).unwrap();
        let offered = event(
            "tool.execution_start",
            json!({"toolCallId": "c1", "toolName": "workflow_getDefinition"}),
        );
        assert_eq!(unoffered_call(&offered, &names), None);
        let unoffered = event(
            "tool.execution_start",
            json!({"toolCallId": "c2", "toolName": "instance_get"}),
        );
        assert_eq!(
            unoffered_call(&unoffered, &names),
            Some(("c2".into(), "instance_get".into()))
        );
        assert_eq!(unoffered_call(&sub_agent(unoffered), &names), None);
        let other = event(
            "tool.execution_complete",
            json!({"toolCallId": "c2", "success": false}),
        );
        assert_eq!(unoffered_call(&other, &names), None);
    }
}
