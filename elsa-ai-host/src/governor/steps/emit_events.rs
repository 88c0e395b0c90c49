//! Step 11: emit stream and audit events.

use std::borrow::Cow;
use std::sync::Arc;

use elsa_ai_abstractions::{
    AiAuditEvent, AiAuditSink, AiCaller, AiError, AiToolOutcome, AiToolResult, AuditAction,
    AuditBehavior, AuditDetails, AuditEventId, AuditOutcome, Clock, ConversationId,
    ToolCallDetails, ToolDenialDetails,
};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;

use crate::governor::{GovernanceStep, ToolEvent, ToolEventSink};
use crate::redaction::{Redacted, Redactor};
use crate::telemetry::{self, ToolCounters};

/// One call as step 11 reports it. `arguments` are the redacted arguments.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CallRecord<'a> {
    /// Shared with the call's events and audit details rather than copied for each.
    pub call_id: &'a Arc<str>,
    /// The canonical name once the name called is known to the registry, else that name.
    pub tool_name: &'a Arc<str>,
    /// The name the call used, when it was not the canonical one.
    pub called_as: Option<&'a Arc<str>>,
    pub caller: &'a AiCaller,
    pub agent: &'a Arc<str>,
    pub conversation_id: Option<&'a ConversationId>,
    pub started: Instant,
}

/// Writes the audit record the tool's audit behaviour asks for (denials and failures always;
/// successes unless the behaviour is `None`; the result too for `RecordInvocationAndResult`),
/// publishes `tool.started` and the terminal `tool.completed`/`tool.failed` to the turn's
/// event sink, and counts the outcome. A result whose audit record cannot be written is
/// replaced by a 500 `audit_failed` error (503 `store_unavailable` while the store is
/// unavailable): nothing is returned unaudited.
#[derive(Clone, Copy)]
pub(crate) struct EmitEvents<'r> {
    pub audit: &'r dyn AiAuditSink,
    pub events: Option<&'r dyn ToolEventSink>,
    pub counters: &'r ToolCounters,
    pub redactor: &'r Redactor,
    pub clock: &'r dyn Clock,
}

impl<'r> EmitEvents<'r> {
    /// `tool.started` for a call that passed the checks, with its redacted arguments.
    pub fn started(
        &self,
        record: &CallRecord<'_>,
        arguments: &Redacted<Arc<Value>>,
    ) -> Publication<'r> {
        self.publish(|| ToolEvent::Started {
            call_id: Arc::clone(record.call_id),
            tool_name: Arc::clone(record.tool_name),
            arguments: arguments.clone(),
        })
    }

    /// Reports a call a check step refused: always audited as a denial.
    pub async fn refused(
        &self,
        record: &CallRecord<'_>,
        step: GovernanceStep,
        arguments: Redacted<Arc<Value>>,
        result: Redacted<AiToolResult>,
    ) -> Redacted<AiToolResult> {
        self.counters.denied_at(step);
        // The name comes from the model; it is only echoed after redaction.
        let tool_name: Arc<str> = match self.redactor.redact_str(record.tool_name) {
            Cow::Borrowed(_) => Arc::clone(record.tool_name),
            Cow::Owned(redacted) => redacted.into(),
        };
        let record = CallRecord {
            tool_name: &tool_name,
            ..*record
        };
        // Both reports are made in a block of its own (they run in order when awaited), so
        // that what they are made from is not kept while they are written.
        let (audited, started) = {
            let code = result.error.as_ref().map_or("denied", |e| e.code.as_str());
            let summary = format!(
                "tool '{tool_name}' denied at step {} ({}): {code}",
                step.number(),
                step.as_str()
            );
            let details = ToolDenialDetails {
                call_id: Arc::clone(record.call_id),
                agent: Arc::clone(record.agent),
                called_as: record.called_as.cloned(),
                step: step.as_str().into(),
                step_number: step.number(),
                arguments: Arc::clone(arguments.get()),
                error: result.error.clone(),
            };
            let started = self.started(&record, &arguments);
            let audited = self.audit(
                &record,
                AuditAction::TOOL_DENIED,
                AuditOutcome::Denied,
                summary,
                details.into(),
                result,
            );
            (audited, started)
        };
        let result = audited.await;
        started.done().await;
        // Until step 3 has found it, the name is the model's: it gets no label of its own.
        let label = if step.number() <= GovernanceStep::FindTool.number() {
            telemetry::UNRECOGNISED_TOOL
        } else {
            record.tool_name
        };
        self.finish(&record, result, label).await
    }

    /// Reports a call that ran (or tried to): success or failure, per the audit behaviour.
    pub async fn finished(
        &self,
        record: &CallRecord<'_>,
        behavior: AuditBehavior,
        arguments: Redacted<Arc<Value>>,
        result: Redacted<AiToolResult>,
    ) -> Redacted<AiToolResult> {
        let success = result.is_success();
        let result = if success && behavior == AuditBehavior::None {
            result
        } else {
            // Made in a block of its own, so that what the record is built from is not kept
            // while it is written.
            let audited = {
                let details = ToolCallDetails {
                    call_id: Arc::clone(record.call_id),
                    agent: Arc::clone(record.agent),
                    called_as: record.called_as.cloned(),
                    arguments: arguments.into_inner(),
                    outcome: result.outcome,
                    duration_ms: u64::try_from(record.started.elapsed().as_millis())
                        .unwrap_or(u64::MAX),
                    truncated: result.truncated,
                    error: result.error.clone(),
                    result: (success && behavior == AuditBehavior::RecordInvocationAndResult)
                        .then(|| result.content.clone()),
                };
                let (outcome, summary) = match &result.error {
                    // Joined rather than formatted: this runs on every call.
                    None => (
                        AuditOutcome::Success,
                        ["tool '", record.tool_name, "' succeeded"].concat(),
                    ),
                    Some(error) => (
                        AuditOutcome::Failure,
                        format!("tool '{}' failed: {}", record.tool_name, error.code),
                    ),
                };
                self.audit(
                    record,
                    AuditAction::TOOL_INVOKED,
                    outcome,
                    summary,
                    details.into(),
                    result,
                )
            };
            audited.await
        };
        self.finish(record, result, record.tool_name).await
    }

    /// Hands the record to the sink now and waits for its answer when awaited: the record
    /// moves into the sink's future instead of being kept in the governor's.
    fn audit<'s>(
        &'s self,
        record: &CallRecord<'_>,
        action: AuditAction,
        outcome: AuditOutcome,
        summary: String,
        details: AuditDetails,
        result: Redacted<AiToolResult>,
    ) -> impl Future<Output = Redacted<AiToolResult>> + 's {
        // Built whole: `AiAuditEvent::new` would read the system clock for a timestamp that
        // the governor's clock replaces. The id takes its time from the same reading; stores
        // order records by timestamp and sequence, never by id.
        let timestamp = self.clock.now();
        let event = AiAuditEvent {
            id: AuditEventId::generate_at(timestamp),
            timestamp,
            tenant_id: record.caller.tenant_id.clone(),
            actor_id: record.caller.actor_id.clone(),
            action,
            outcome,
            conversation_id: record.conversation_id.cloned(),
            proposal_id: None,
            tool_name: Some(Arc::clone(record.tool_name)),
            summary,
            details,
            trace_id: None,
        };
        let recorded = self.audit.record(event);
        async move {
            match recorded.await {
                Ok(()) => result,
                Err(error) => {
                    self.counters.audit_failed();
                    tracing::error!(
                        code = error.code(),
                        "audit record of a tool call could not be written"
                    );
                    self.redactor
                        .redacted_tool_result(AiToolResult::error(&AiError::audit_failed(
                            &error,
                            "the tool call could not be audited, so its result is withheld",
                        )))
                }
            }
        }
    }

    async fn finish(
        &self,
        record: &CallRecord<'_>,
        result: Redacted<AiToolResult>,
        label: &str,
    ) -> Redacted<AiToolResult> {
        self.publish(|| {
            let (call_id, tool_name) = (Arc::clone(record.call_id), Arc::clone(record.tool_name));
            let result = result.clone();
            if result.is_success() {
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
            }
        })
        .done()
        .await;
        self.counters
            .finished(label, result.outcome, result.truncated);
        telemetry::record_outcome(
            &tracing::Span::current(),
            result.outcome,
            result.error.as_ref().map(|e| e.code.as_str()),
        );
        if result.outcome == AiToolOutcome::Error
            && result
                .error
                .as_ref()
                .is_some_and(|e| e.code == "tool_timeout")
        {
            self.counters.timed_out();
        }
        result
    }

    /// Hands the event `event` makes to the sink, which only happens when the call has one.
    /// The event moves into the sink's future at once rather than waiting in the caller's.
    fn publish(&self, event: impl FnOnce() -> ToolEvent) -> Publication<'r> {
        Publication {
            sending: self.events.map(|events| events.publish(event())),
            counters: self.counters,
        }
    }
}

/// A tool event handed to the sink, published when [`Publication::done`] is awaited.
#[must_use = "nothing is published until `done` is awaited"]
pub(crate) struct Publication<'r> {
    sending: Option<BoxFuture<'r, Result<(), AiError>>>,
    counters: &'r ToolCounters,
}

impl Publication<'_> {
    /// Publishes the event; a failure is logged and counted.
    pub async fn done(self) {
        if let Some(sending) = self.sending
            && let Err(error) = sending.await
        {
            self.counters.event_failed();
            tracing::warn!(code = error.code(), "a tool event could not be published");
        }
    }
}

#[cfg(test)]
mod tests {
    use elsa_ai_abstractions::{AiAuditSink, SystemClock};
    use elsa_workflows::TenantId;
    use serde_json::json;

    use super::*;
    use crate::audit::InMemoryAuditLog;
    use crate::testing::governance::{FailingAuditSink, RecordingEventSink};

    struct Fixture {
        log: InMemoryAuditLog,
        events: RecordingEventSink,
        counters: ToolCounters,
        redactor: Redactor,
        caller: AiCaller,
        call_id: Arc<str>,
        tool_name: Arc<str>,
        agent: Arc<str>,
    }

    impl Fixture {
        fn new() -> Self {
            Self {
                log: InMemoryAuditLog::new(),
                events: RecordingEventSink::default(),
                counters: ToolCounters::default(),
                redactor: Redactor::default(),
                caller: AiCaller::new("alice", "acme", []),
                call_id: "call-1".into(),
                tool_name: "demo.read".into(),
                agent: "test-agent".into(),
            }
        }

        fn step<'a>(&'a self, audit: &'a dyn AiAuditSink) -> EmitEvents<'a> {
            EmitEvents {
                audit,
                events: Some(&self.events),
                counters: &self.counters,
                redactor: &self.redactor,
                clock: &SystemClock,
            }
        }

        fn record(&self) -> CallRecord<'_> {
            CallRecord {
                call_id: &self.call_id,
                tool_name: &self.tool_name,
                called_as: None,
                caller: &self.caller,
                agent: &self.agent,
                conversation_id: None,
                started: Instant::now(),
            }
        }

        fn audited(&self) -> Vec<AiAuditEvent> {
            self.log.events(&TenantId::new("acme"))
        }

        /// Arguments as the redaction step hands them on.
        fn arguments(&self, arguments: Value) -> Redacted<Arc<Value>> {
            self.redactor.redacted(arguments).wrapped(Arc::new)
        }

        /// A result as the redaction step hands it on.
        fn result(&self, result: AiToolResult) -> Redacted<AiToolResult> {
            self.redactor.redacted_tool_result(result)
        }
    }

    #[tokio::test]
    async fn audit_behaviour_decides_what_successes_record() {
        let content = json!({"rows": 3});
        for (behavior, records, has_result) in [
            (AuditBehavior::None, 0, false),
            (AuditBehavior::RecordInvocation, 1, false),
            (AuditBehavior::RecordInvocationAndResult, 1, true),
        ] {
            let f = Fixture::new();
            let result = f
                .step(&f.log)
                .finished(
                    &f.record(),
                    behavior,
                    f.arguments(json!({"id": "x"})),
                    f.result(AiToolResult::success(content.clone())),
                )
                .await;
            assert!(result.is_success());
            let audited = f.audited();
            assert_eq!(audited.len(), records, "{behavior:?}");
            if let Some(event) = audited.first() {
                assert_eq!(event.action, AuditAction::TOOL_INVOKED);
                assert_eq!(event.details["arguments"]["id"], "x");
                assert_eq!(
                    event.details.json().get("result").is_some(),
                    has_result,
                    "{behavior:?}"
                );
            }
            assert_eq!(
                f.events.events().len(),
                1,
                "the terminal event is always published"
            );
        }
    }

    #[tokio::test]
    async fn failures_are_recorded_even_when_the_behaviour_is_none() {
        let f = Fixture::new();
        let failed = f.result(AiToolResult::error(&AiError::unavailable(
            "tool_timeout",
            "slow",
        )));
        f.step(&f.log)
            .finished(
                &f.record(),
                AuditBehavior::None,
                f.arguments(json!({})),
                failed,
            )
            .await;
        let audited = f.audited();
        assert_eq!(audited.len(), 1);
        assert_eq!(audited[0].outcome, AuditOutcome::Failure);
        assert_eq!(f.counters.snapshot().timed_out, 1);
    }

    #[tokio::test]
    async fn denials_are_always_audited_with_redacted_arguments_and_published_twice() {
        let f = Fixture::new();
        let denied = f.result(AiToolResult::denied(&AiError::forbidden(
            "tool_disabled",
            "off",
        )));
        let result = f
            .step(&f.log)
            .refused(
                &f.record(),
                GovernanceStep::CheckEnablement,
                f.arguments(json!({"password": "hunter2"})),
                denied,
            )
            .await;
        assert_eq!(result.outcome, AiToolOutcome::Denied);
        let audited = f.audited();
        assert_eq!(audited.len(), 1);
        assert_eq!(audited[0].action, AuditAction::TOOL_DENIED);
        assert_eq!(audited[0].details["step"], "checkEnablement");
        assert_eq!(audited[0].details["arguments"]["password"], "[REDACTED]");
        let events = f.events.events();
        assert!(
            matches!(&events[0], ToolEvent::Started { arguments, .. } if arguments["password"] == "[REDACTED]")
        );
        assert!(matches!(&events[1], ToolEvent::Failed { .. }));
        assert_eq!(f.counters.snapshot().denied_by_step[3], 1);
    }

    /// The keys of the one audit record's details, in order, and the details without
    /// `durationMs`.
    fn details_of(f: &Fixture) -> (Vec<String>, Value) {
        let audited = f.audited();
        let details = audited[0].details.json().as_object().expect("an object");
        let keys = details.keys().cloned().collect();
        let mut values = details.clone();
        values.remove("durationMs");
        (keys, Value::Object(values))
    }

    #[tokio::test]
    async fn audit_details_hold_each_value_under_its_key_in_a_fixed_order() {
        // What every record of a call that ran has, before `result` or `error`.
        const RAN: [&str; 6] = [
            "callId",
            "agent",
            "arguments",
            "outcome",
            "durationMs",
            "truncated",
        ];
        let f = Fixture::new();
        f.step(&f.log)
            .finished(
                &f.record(),
                AuditBehavior::RecordInvocationAndResult,
                f.arguments(json!({"id": "x"})),
                f.result(AiToolResult::success(json!({"rows": 3}))),
            )
            .await;
        let (keys, values) = details_of(&f);
        assert_eq!(keys, [&RAN[..], &["result"]].concat());
        assert_eq!(
            values,
            json!({"callId": "call-1", "agent": "test-agent", "arguments": {"id": "x"},
                   "outcome": "Success", "truncated": false, "result": {"rows": 3}})
        );

        let f = Fixture::new();
        let failure = AiError::unavailable("tool_timeout", "slow");
        f.step(&f.log)
            .finished(
                &f.record(),
                AuditBehavior::None,
                f.arguments(json!({})),
                f.result(AiToolResult::error(&failure)),
            )
            .await;
        let (keys, values) = details_of(&f);
        assert_eq!(keys, [&RAN[..], &["error"]].concat());
        assert_eq!(values["outcome"], "Error");
        assert_eq!(values["error"]["code"], "tool_timeout");

        let f = Fixture::new();
        f.step(&f.log)
            .refused(
                &f.record(),
                GovernanceStep::CheckPermissions,
                f.arguments(json!({"id": "y"})),
                f.result(AiToolResult::denied(&AiError::forbidden(
                    "permission_denied",
                    "no",
                ))),
            )
            .await;
        let (keys, values) = details_of(&f);
        assert_eq!(
            keys,
            [
                "callId",
                "agent",
                "step",
                "stepNumber",
                "arguments",
                "error"
            ]
        );
        assert_eq!(
            (&values["callId"], &values["agent"], &values["step"]),
            (
                &json!("call-1"),
                &json!("test-agent"),
                &json!("checkPermissions")
            )
        );
        assert_eq!(
            (&values["stepNumber"], &values["arguments"]),
            (&json!(6), &json!({"id": "y"}))
        );
        assert_eq!(values["error"]["code"], "permission_denied");
    }

    #[tokio::test]
    async fn a_failing_audit_sink_withholds_the_result() {
        let f = Fixture::new();
        let sink = FailingAuditSink;
        let result = f
            .step(&sink)
            .finished(
                &f.record(),
                AuditBehavior::RecordInvocation,
                f.arguments(json!({})),
                f.result(AiToolResult::success(json!({"secret": 1}))),
            )
            .await;
        assert_eq!(result.outcome, AiToolOutcome::Error);
        assert_eq!(result.content, Value::Null);
        assert_eq!(result.error.as_ref().unwrap().code, "audit_failed");
        assert!(matches!(&f.events.events()[0], ToolEvent::Failed { .. }));
        assert_eq!(f.counters.snapshot().audit_failures, 1);
    }
}
