//! One chat turn, in a task of its own.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use elsa_ai_abstractions::{
    AiAgentDefinition, AiCaller, AiContextAttachment, AiError, AiMessage, AiProviderEvent,
    AiResolvedContext, AiSessionHandle, AiStreamEventType, AiToolDefinition, AiTurnRequest,
    AuditAction, AuditOutcome, ConversationId, MessageRole,
};
use elsa_workflows::TenantId;
use futures::{FutureExt, StreamExt};
use serde_json::json;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, Span};

use super::Core;
use super::claims::ClaimGuard;
use super::events::{TurnEvents, TurnOutput};
use crate::governor::ToolCallScope;
use crate::stream::TurnSlot;

/// Everything a turn needs, checked and redacted before it started.
pub(super) struct Turn {
    pub slot: TurnSlot,
    pub cancellation: CancellationToken,
    /// Fired when a person cancels the turn.
    pub stop: CancellationToken,
    /// Fired when another replica took the turn's claim over (this replica was thought dead).
    pub lost: CancellationToken,
    /// The turn's claim in the store shared with other replicas, if there is one.
    pub claim: Option<ClaimGuard>,
    pub conversation_id: ConversationId,
    pub caller: AiCaller,
    pub agent: AiAgentDefinition,
    pub session: AiSessionHandle,
    /// Whether the session was opened for this turn (and is to be recorded with the
    /// conversation).
    pub session_created: bool,
    pub message: String,
    pub history: Vec<AiMessage>,
    pub context: Vec<AiResolvedContext>,
    pub tools: Vec<Arc<AiToolDefinition>>,
    pub attachments: Vec<AiContextAttachment>,
    /// The turn's `chat` span, opened when the request was accepted.
    pub span: Span,
}

/// How a turn ended.
enum End {
    /// The provider completed the turn.
    Completed,
    /// The provider (or the host) failed it.
    Failed(AiError),
    /// The host gave up on it: the grace window expired or the host shuts down.
    Cancelled(AiError),
    /// Another replica took its claim over and ended it already.
    Lost,
}

/// Runs the turn to its terminal event, whatever happens inside (a panicking provider
/// included): the conversation is always freed and its stream always ends.
pub(super) async fn run(core: Arc<Core>, turn: Turn) {
    let span = turn.span.clone();
    let started = Instant::now();
    let events = Arc::new(TurnEvents::new(turn.slot.channel().clone()));
    let end = AssertUnwindSafe(drive(&core, &turn, events.clone()))
        .catch_unwind()
        .instrument(span.clone())
        .await
        .unwrap_or_else(|_| {
            End::Failed(AiError::internal(
                "turn_panicked",
                "the turn failed unexpectedly",
            ))
        });
    // Whatever the provider started stops with the turn; from here on it cannot be
    // cancelled (removed before the terminal event frees the conversation for the next
    // turn, whose stop token would otherwise be removed instead).
    turn.cancellation.cancel();
    core.stops
        .lock()
        .remove(&(turn.caller.tenant_id.clone(), turn.conversation_id.clone()));
    finish(&core, turn, &events, end, started, &span)
        .instrument(span.clone())
        .await;
}

async fn drive(core: &Core, turn: &Turn, events: Arc<TurnEvents>) -> End {
    let invoker = core.governor.bind(
        ToolCallScope::new(turn.caller.clone(), turn.agent.name.clone())
            .as_one_turn()
            // Admission found (or made) the conversation the caller's.
            .with_owned_conversation(turn.conversation_id.clone())
            .with_attachments(turn.attachments.clone())
            .with_events(events.clone())
            .with_cancellation(turn.cancellation.clone())
            .with_span(turn.span.clone()),
    );
    let request = AiTurnRequest {
        session: turn.session.clone(),
        agent: turn.agent.clone(),
        caller: turn.caller.clone(),
        message: turn.message.clone(),
        history: turn.history.clone(),
        context: turn.context.clone(),
        tools: turn.tools.clone(),
        cancellation: turn.cancellation.clone(),
    };
    let mut provider_events = core.provider.execute_turn(request, invoker);
    let absent = clients_absent(core, turn);
    tokio::pin!(absent);
    let end = loop {
        tokio::select! {
            biased;
            () = &mut absent => break End::Cancelled(AiError::unavailable(
                "client_gone",
                format!(
                    "no client was attached for {}s, so the turn was cancelled",
                    core.settings.grace_window.as_secs_f64()
                ),
            )),
            () = turn.cancellation.cancelled() => break End::Cancelled(AiError::unavailable(
                "host_shutdown",
                "the host shut down while the turn was running",
            )),
            () = turn.stop.cancelled() => break End::Cancelled(AiError::unavailable(
                "cancelled",
                "the turn was cancelled at the user's request",
            )),
            () = turn.lost.cancelled() => break End::Lost,
            next = provider_events.next() => match next {
                None => break End::Failed(AiError::internal(
                    "provider_stream_ended",
                    "the provider ended the turn without completing or failing it",
                )),
                Some(AiProviderEvent::Completed) => break End::Completed,
                Some(AiProviderEvent::Failed { error }) => break End::Failed(error),
                Some(event) => {
                    events.provider_event(event).await;
                    if let Some(error) = events.failure().await {
                        break End::Failed(error);
                    }
                }
            },
        }
    };
    if matches!(end, End::Cancelled(_) | End::Lost) {
        // Let the provider wind down: running tools see the cancellation and report how
        // they ended, so their events reach the stream before the turn's end.
        turn.cancellation.cancel();
        let wind_down = async {
            while let Some(event) = provider_events.next().await {
                if matches!(
                    event,
                    AiProviderEvent::Completed | AiProviderEvent::Failed { .. }
                ) {
                    break;
                }
                events.provider_event(event).await;
            }
        };
        if tokio::time::timeout(core.settings.cancel_timeout, wind_down)
            .await
            .is_err()
        {
            tracing::warn!("the provider did not wind down within the cancel timeout");
        }
    }
    end
}

/// Resolves once no client has been attached for the grace window in a row, on this replica
/// or (with shared claims) on another one.
async fn clients_absent(core: &Core, turn: &Turn) {
    let grace = core.settings.grace_window;
    loop {
        absent_here(turn.slot.channel().attached(), grace).await;
        if !core
            .watched_elsewhere(&turn.caller.tenant_id, &turn.conversation_id)
            .await
        {
            return;
        }
    }
}

/// Resolves once no client of this replica has been attached for `grace` in a row.
async fn absent_here(mut attached: watch::Receiver<usize>, grace: Duration) {
    loop {
        if attached.wait_for(|n| *n == 0).await.is_err() {
            return std::future::pending().await;
        }
        let returned = tokio::time::timeout(grace, attached.wait_for(|n| *n > 0))
            .await
            .map(|seen| seen.is_ok());
        match returned {
            Err(_) => return,
            Ok(true) => {}
            Ok(false) => return std::future::pending().await,
        }
    }
}

async fn finish(
    core: &Core,
    turn: Turn,
    events: &TurnEvents,
    end: End,
    started: Instant,
    span: &Span,
) {
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let unfinished = AiError::internal(
        "tool_call_unfinished",
        "the turn ended before the tool call finished",
    );
    let (end, output) = match end {
        End::Completed => {
            let output = events.close(true, &unfinished).await;
            let reply = core.redactor.redact_str(&output.reply).into_owned();
            let completed = complete(core, &turn, reply, &output, duration_ms).await;
            match completed {
                Ok(()) => (Ok(()), output),
                Err(error) => (Err(error), output),
            }
        }
        End::Failed(error) => {
            let output = events.close(false, &unfinished).await;
            (Err(error), output)
        }
        End::Cancelled(error) => {
            let output = events.close(false, &error).await;
            (Err(error), output)
        }
        End::Lost => {
            // The replica that took the claim over journaled the turn's end; this one
            // writes nothing more to the conversation.
            core.governor.metrics().turns.ended("failed");
            span.record("weaver.turn.outcome", "lost");
            forget_claim(
                core,
                &turn.caller.tenant_id,
                &turn.conversation_id,
                turn.claim.as_ref(),
            );
            return;
        }
    };
    span.record("weaver.turn.tool_calls", output.tool_calls);
    if let Some(usage) = output.usage {
        core.governor
            .metrics()
            .token_usage(&turn.session.provider, usage);
        span.record("gen_ai.usage.input_tokens", usage.input_tokens);
        span.record("gen_ai.usage.output_tokens", usage.output_tokens);
    }
    let conversation_id = turn.conversation_id.clone();
    if turn.session_created {
        core.sessions
            .record(&turn.caller.tenant_id, &turn.session)
            .await;
    }
    if let Some(claim) = &turn.claim
        && !core
            .still_holds(&turn.caller.tenant_id, &conversation_id, claim.turn_id())
            .await
    {
        tracing::warn!(conversation = %conversation_id, "the turn's claim was taken over; its end is not journaled twice");
        forget_claim(
            core,
            &turn.caller.tenant_id,
            &turn.conversation_id,
            turn.claim.as_ref(),
        );
        return;
    }
    let terminal = match end {
        Ok(()) => {
            span.record("weaver.turn.outcome", "completed");
            core.governor.metrics().turns.ended("completed");
            let mut data =
                json!({"conversationId": conversation_id, "toolCalls": output.tool_calls});
            if let Some(usage) = output.usage {
                data["usage"] = json!(usage);
            }
            turn.slot
                .finish(AiStreamEventType::ConversationCompleted, data)
                .await
        }
        Err(error) => {
            let error = core.redactor.redact_error(error);
            let outcome = if matches!(error.code(), "client_gone" | "host_shutdown" | "cancelled") {
                "cancelled"
            } else {
                "failed"
            };
            span.record("weaver.turn.outcome", outcome);
            core.governor.metrics().turns.ended(outcome);
            span.record("error.type", error.code());
            let event = core.audit_event(
                &turn.caller,
                &conversation_id,
                AuditAction::TURN_FAILED,
                AuditOutcome::Failure,
                format!("turn {outcome}: {}", error.code()),
                json!({
                    "agent": turn.agent.name,
                    "provider": turn.session.provider,
                    "error": error.to_body(),
                    "toolCalls": output.tool_calls,
                    "durationMs": duration_ms,
                }),
            );
            if let Err(audit) = core.record_turn_end(event).await {
                tracing::error!(code = audit.code(), "turn.failed could not be audited");
            }
            turn.slot
                .finish(
                    AiStreamEventType::ConversationFailed,
                    failed_data(&conversation_id, &error),
                )
                .await
        }
    };
    if let Err(error) = terminal {
        tracing::error!(
            code = error.code(),
            conversation = %conversation_id,
            "the turn's terminal event could not be journaled"
        );
    }
    forget_claim(
        core,
        &turn.caller.tenant_id,
        &turn.conversation_id,
        turn.claim.as_ref(),
    );
    if let Some(claim) = turn.claim {
        claim.ended().await;
    }
}

/// This replica no longer runs the turn: its heartbeat stops renewing the claim.
fn forget_claim(
    core: &Core,
    tenant_id: &TenantId,
    conversation_id: &ConversationId,
    claim: Option<&ClaimGuard>,
) {
    if let (Some(claims), Some(claim)) = (&core.claims, claim) {
        let key = (tenant_id.clone(), conversation_id.clone());
        let mut running = claims.running.lock();
        if running
            .get(&key)
            .is_some_and(|running| running.turn_id == claim.turn_id())
        {
            running.remove(&key);
        }
    }
}

/// Stores the turn's tool calls and its reply as messages and audits `turn.completed`; any of
/// them failing fails the turn.
async fn complete(
    core: &Core,
    turn: &Turn,
    reply: String,
    output: &TurnOutput,
    duration_ms: u64,
) -> Result<(), AiError> {
    let tool_calls = output.tool_calls;
    // Group-committed together; the conversation keeps them in this order.
    let stored = core.clock.now();
    futures::future::try_join_all(output.tool_messages.iter().map(|text| {
        // Written from redacted parts (`TurnEvents`), so not redacted again.
        let message = AiMessage {
            role: MessageRole::Tool,
            content: text.clone(),
            timestamp: stored,
        };
        async move {
            core.conversations
                .append_message(&turn.conversation_id, &turn.caller.tenant_id, &message)
                .await
        }
    }))
    .await?;
    if !reply.is_empty() {
        let message = AiMessage {
            role: MessageRole::Assistant,
            content: reply.clone(),
            timestamp: core.clock.now(),
        };
        core.conversations
            .append_message(&turn.conversation_id, &turn.caller.tenant_id, &message)
            .await?;
    }
    let event = core.audit_event(
        &turn.caller,
        &turn.conversation_id,
        AuditAction::TURN_COMPLETED,
        AuditOutcome::Success,
        format!("turn completed by agent '{}'", turn.agent.name),
        json!({
            "agent": turn.agent.name,
            "provider": turn.session.provider,
            "reply": reply,
            "toolCalls": tool_calls,
            "durationMs": duration_ms,
        }),
    );
    core.record(event).await
}

/// `conversation.failed` data: the error body, and beside its code a sentence for a person
/// (`content`, what Elsa Studio's panel shows).
pub(super) fn failed_data(conversation_id: &ConversationId, error: &AiError) -> serde_json::Value {
    json!({
        "conversationId": conversation_id,
        "code": error.code(),
        "content": format!("Weaver could not complete the turn: {}", error.message()),
        "error": error.to_body(),
    })
}
