//! Admission: the stages a chat request passes before its turn streams, in the order of
//! ARCHITECTURE.md's flow of a chat turn. Each stage either refuses the request (so a refusal
//! is an HTTP status, not a stream event) or hands what it found to the next;
//! [`ChatOrchestrator::execute_chat`](super::ChatOrchestrator) reads as the list of them.

use std::sync::Arc;
use std::time::Instant;

use elsa_ai_abstractions::{
    AiAgentDefinition, AiAuditEvent, AiCaller, AiChatRequest, AiContextAttachment, AiConversation,
    AiError, AiMessage, AiResolvedContext, AiSessionHandle, AiStreamEvent, AiStreamEventType,
    AiToolDefinition, AiToolQuery, AiToolRegistry, AuditAction, AuditOutcome, ConversationId,
    MessageRole,
};
use futures::stream::BoxStream;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tracing::Span;

use super::Core;
use super::claims::{ClaimGuard, RunningClaim};
use super::span::chat_span;
use super::turn::Turn;
use crate::agents::AgentRegistry;
use crate::context::{ContextRequest, ResolvedContext};
use crate::conversation::find_owned_conversation;
use crate::stream::TurnSlot;

/// Whom a turn is for: the agent it runs under and the conversation it starts or continues.
pub(super) struct Target {
    pub agent: AiAgentDefinition,
    /// The conversation continued, `None` for a new one.
    pub existing: Option<AiConversation>,
    pub conversation_id: ConversationId,
}

/// The conversation claimed for the turn: here (the slot) and across replicas (the claim).
pub(super) struct Claimed {
    pub slot: TurnSlot,
    pub claim: Option<ClaimGuard>,
}

/// The turn's context and authorized tools, and the audit records their resolution produced.
pub(super) struct Resolved {
    pub context: Vec<AiResolvedContext>,
    pub tools: Vec<Arc<AiToolDefinition>>,
    pub opening: Vec<AiAuditEvent>,
}

/// The provider session the turn runs in; one opened for this turn is closed again if the
/// turn is refused after all.
pub(super) struct OpenedSession {
    pub handle: AiSessionHandle,
    pub created: bool,
}

impl Core {
    /// Stage 1, the request itself: an identity, a host that still takes turns, a non-empty
    /// message within the size limit, not too many attachments.
    pub(super) fn check_request(&self, request: &AiChatRequest) -> Result<(), AiError> {
        let caller = &request.caller;
        if caller.actor_id.trim().is_empty() || caller.tenant_id.as_str().trim().is_empty() {
            return Err(AiError::unauthenticated(
                "a chat needs an actor and a tenant",
            ));
        }
        if self.draining.is_cancelled() {
            return Err(AiError::unavailable(
                "shutting_down",
                "the host is shutting down and accepts no new turns",
            ));
        }
        let message = &request.message;
        if message.trim().is_empty() {
            return Err(AiError::bad_request(
                "empty_message",
                "the message is empty",
            ));
        }
        if message.len() > self.settings.max_message_bytes {
            return Err(AiError::payload_too_large(format!(
                "the message has {} bytes; at most {} are accepted",
                message.len(),
                self.settings.max_message_bytes
            )));
        }
        if request.attachments.len() > self.settings.max_attachments {
            return Err(AiError::bad_request(
                "too_many_attachments",
                format!(
                    "a message may carry at most {} attachments",
                    self.settings.max_attachments
                ),
            ));
        }
        Ok(())
    }

    /// Stage 2, the agent and the conversation: the agent named (404/403 if unknown or
    /// disabled), the conversation continued (404 unless the caller owns it), which keeps its
    /// own agent (400 `agent_mismatch` when another is named); the default agent otherwise.
    pub(super) async fn pick_target(
        &self,
        caller: &AiCaller,
        conversation_id: Option<&ConversationId>,
        agent: Option<String>,
    ) -> Result<Target, AiError> {
        let agents = self.governor.registry().agents();
        if let Some(name) = &agent {
            agents.resolve(name)?;
        }
        let existing = match conversation_id {
            Some(id) => {
                Some(find_owned_conversation(self.conversations.as_ref(), caller, id).await?)
            }
            None => None,
        };
        let agent_name = match (agent, &existing) {
            (Some(named), Some(conversation)) if named != conversation.agent => {
                return Err(AiError::bad_request(
                    "agent_mismatch",
                    format!(
                        "conversation '{}' runs under agent '{}', not '{named}'",
                        conversation.id, conversation.agent
                    ),
                ));
            }
            (Some(named), _) => named,
            (None, Some(conversation)) => conversation.agent.clone(),
            (None, None) => AgentRegistry::DEFAULT_AGENT.to_owned(),
        };
        let agent = agents.resolve(&agent_name)?.clone();
        let conversation_id = existing
            .as_ref()
            .map_or_else(ConversationId::generate, |c| c.id.clone());
        Ok(Target {
            agent,
            existing,
            conversation_id,
        })
    }

    /// The turn's `chat` span, opened once the target is known, so that what the turn
    /// records before it streams (its opening audit records, `conversation.started`) is in
    /// the turn's trace too.
    pub(super) fn turn_span(&self, target: &Target) -> Span {
        let info = self.provider.info();
        chat_span(
            &info.name,
            info.model.as_deref(),
            target.conversation_id.as_str(),
            &target.agent.name,
        )
    }

    /// Stage 3, the claim: one turn at a time per conversation, in this process (409
    /// `turn_in_progress`) and then across replicas through the shared claim store. A new
    /// conversation's claim runs alongside stages 4 to 6 (see `execute_chat`).
    pub(super) async fn claim(
        &self,
        caller: &AiCaller,
        target: &Target,
    ) -> Result<Claimed, AiError> {
        let channel = match &target.existing {
            Some(_) => self.hub.channel(&caller.tenant_id, &target.conversation_id),
            None => self
                .hub
                .new_channel(&caller.tenant_id, &target.conversation_id),
        };
        let slot = channel.begin_turn()?;
        let claim = self
            .claim_turn(&caller.tenant_id, &target.conversation_id)
            .await?;
        Ok(Claimed { slot, claim })
    }

    /// Stage 4, context and tools: every attachment resolved through the context provider
    /// of its kind (redacted, clamped, each refusal audited), and the authorized tool set for
    /// caller and agent. Neither depends on the other, so both are read at once.
    pub(super) async fn resolve(
        &self,
        caller: &AiCaller,
        target: &Target,
        attachments: &[AiContextAttachment],
    ) -> Result<Resolved, AiError> {
        let tool_query = AiToolQuery {
            agent: Some(target.agent.name.clone()),
            ..AiToolQuery::for_caller(caller.clone())
        };
        let (
            ResolvedContext {
                attachments: context,
                audit: opening,
            },
            tools,
        ) = tokio::try_join!(
            self.context.resolve(ContextRequest {
                caller,
                agent: &target.agent,
                conversation_id: Some(&target.conversation_id),
                attachments,
            }),
            self.governor.registry().list(&tool_query),
        )?;
        Ok(Resolved {
            context,
            tools,
            opening,
        })
    }

    /// Stage 5, the provider session: the conversation's open session, or a new one (the
    /// provider's error, redacted, if it cannot open one); a new one is audited
    /// `session.created` with the opening records.
    pub(super) async fn open_session(
        &self,
        caller: &AiCaller,
        target: &Target,
        opening: &mut Vec<AiAuditEvent>,
    ) -> Result<OpenedSession, AiError> {
        let (handle, created) = self
            .sessions
            .session_for(
                &target.conversation_id,
                &target.agent,
                caller,
                target.existing.is_some(),
            )
            .await
            .map_err(|error| self.redactor.redact_error(error))?;
        if created {
            opening.push(self.audit_event(
                caller,
                &target.conversation_id,
                AuditAction::SESSION_CREATED,
                AuditOutcome::Success,
                format!("provider session opened with '{}'", handle.provider),
                json!({"provider": handle.provider, "sessionId": handle.session_id, "agent": target.agent.name}),
            ));
        }
        Ok(OpenedSession { handle, created })
    }

    /// Stage 6, the opening records: the context's and the session's records and
    /// `prompt.submitted` (with the redacted message), written together so that a
    /// group-committing sink commits them in one wait, before anything is stored or streams.
    pub(super) async fn write_opening_records(
        &self,
        caller: &AiCaller,
        target: &Target,
        session: &OpenedSession,
        message: &str,
        attachments: &[AiContextAttachment],
        resolved: &mut Resolved,
    ) -> Result<(), AiError> {
        let tool_names: Vec<&str> = resolved.tools.iter().map(|t| t.name.as_str()).collect();
        let attachment_refs: Vec<Value> = attachments
            .iter()
            .map(|a| json!({"kind": a.kind, "referenceId": a.reference_id, "activityId": a.activity_id}))
            .collect();
        let prompt = self.audit_event(
            caller,
            &target.conversation_id,
            AuditAction::PROMPT_SUBMITTED,
            AuditOutcome::Success,
            format!("prompt submitted to agent '{}'", target.agent.name),
            json!({
                "agent": target.agent.name,
                "provider": session.handle.provider,
                "message": message,
                "attachments": attachment_refs,
                "tools": tool_names,
            }),
        );
        let mut opening = std::mem::take(&mut resolved.opening);
        opening.push(prompt);
        self.record_all(opening).await
    }

    /// The history the provider is handed: the conversation's last messages, redacted
    /// again (a secret registered since they were stored does not reach the model).
    pub(super) fn history(&self, target: &Target) -> Vec<AiMessage> {
        let Some(conversation) = &target.existing else {
            return Vec::new();
        };
        let skip = conversation
            .messages
            .len()
            .saturating_sub(self.settings.history_limit);
        conversation.messages[skip..]
            .iter()
            .map(|m| AiMessage {
                content: self.redactor.redact_str(&m.content).into_owned(),
                ..m.clone()
            })
            .collect()
    }

    /// Stage 7, the user message: appended to the conversation, or the new conversation
    /// stored with it, only after the opening records are written.
    pub(super) async fn store_user_message(
        &self,
        caller: &AiCaller,
        target: &Target,
        message: &str,
    ) -> Result<(), AiError> {
        let now = self.clock.now();
        let user_message = AiMessage {
            role: MessageRole::User,
            content: message.to_owned(),
            timestamp: now,
        };
        match &target.existing {
            Some(_) => {
                self.conversations
                    .append_message(&target.conversation_id, &caller.tenant_id, &user_message)
                    .await
            }
            None => {
                self.conversations
                    .create(&AiConversation {
                        id: target.conversation_id.clone(),
                        tenant_id: caller.tenant_id.clone(),
                        owner_id: caller.actor_id.clone(),
                        agent: target.agent.name.clone(),
                        title: title_of(message),
                        created_at: now,
                        updated_at: now,
                        messages: vec![user_message],
                        retain_days: None,
                    })
                    .await
            }
        }
    }

    /// Stage 8, the stream: `conversation.started` appended to the journal (conversation,
    /// agent, provider, message, attachments, and the trace id when the host traces), the
    /// first-event latency measured from `received`, and the caller subscribed from it.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn start_stream(
        &self,
        claimed: &Claimed,
        target: &Target,
        session: &OpenedSession,
        message: &str,
        context: &[AiResolvedContext],
        trace_id: Option<String>,
        received: Instant,
    ) -> Result<BoxStream<'static, AiStreamEvent>, AiError> {
        let mut started = json!({
            "conversationId": target.conversation_id,
            "agent": target.agent.name,
            "provider": session.handle.provider,
            "message": message,
            "attachments": context_summary(context),
        });
        if let Some(trace_id) = trace_id {
            started["traceId"] = json!(trace_id);
        }
        let channel = claimed.slot.channel();
        let stream = channel.open_turn_stream();
        let started = channel
            .append(AiStreamEventType::ConversationStarted, started)
            .await?;
        self.governor.metrics().first_event(received.elapsed());
        Ok(stream.starting_with(started))
    }

    /// Stage 9, the turn: registered so a person can cancel it and another replica's
    /// takeover stops it, then run in a task of its own.
    pub(super) fn spawn_turn(self: &Arc<Self>, turn: TurnParts) {
        let TurnParts {
            claimed,
            target,
            caller,
            session,
            message,
            history,
            resolved,
            attachments,
            span,
        } = turn;
        let key = (caller.tenant_id.clone(), target.conversation_id.clone());
        let stop = CancellationToken::new();
        self.stops.lock().insert(key.clone(), stop.clone());
        let lost = CancellationToken::new();
        if let (Some(claims), Some(claim)) = (&self.claims, &claimed.claim) {
            claims.running.lock().insert(
                key,
                RunningClaim {
                    turn_id: claim.turn_id().to_owned(),
                    lost: lost.clone(),
                    held_until: claim.lease_until().unwrap_or_default(),
                },
            );
        }
        let turn = Turn {
            cancellation: self.shutdown.child_token(),
            stop,
            lost,
            claim: claimed.claim,
            session_created: session.created,
            slot: claimed.slot,
            conversation_id: target.conversation_id,
            caller,
            agent: target.agent,
            session: session.handle,
            message,
            history,
            context: resolved.context,
            tools: resolved.tools,
            attachments,
            span,
        };
        self.tasks.spawn(super::turn::run(self.clone(), turn));
    }

    /// Closes a session opened for this turn when a later stage refuses it.
    pub(super) async fn or_close<T>(
        &self,
        session: &OpenedSession,
        target: &Target,
        result: Result<T, AiError>,
    ) -> Result<T, AiError> {
        if result.is_err() && session.created {
            self.sessions.close(&target.conversation_id).await;
        }
        result
    }
}

/// Everything the stages gathered, handed to the turn's task.
pub(super) struct TurnParts {
    pub claimed: Claimed,
    pub target: Target,
    pub caller: AiCaller,
    pub session: OpenedSession,
    pub message: String,
    pub history: Vec<AiMessage>,
    pub resolved: Resolved,
    pub attachments: Vec<AiContextAttachment>,
    pub span: Span,
}

/// A conversation title: the message's first line, at most 80 characters.
fn title_of(message: &str) -> String {
    let line = message
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim();
    match line.char_indices().nth(80) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_owned(),
    }
}

fn context_summary(context: &[AiResolvedContext]) -> Vec<Value> {
    context
        .iter()
        .map(|c| {
            json!({
                "kind": c.kind,
                "referenceId": c.reference_id,
                "title": c.title,
                "truncated": c.truncated,
            })
        })
        .collect()
}
