//! The chat orchestrator: everything before a turn streams (agent, conversation, context,
//! tools, session), the turn in its own task, and resumable streams.
//!
//! It implements the flow of a chat turn in ARCHITECTURE.md: every check that can refuse a
//! request runs before anything streams, so refusals are HTTP statuses; the turn then runs
//! in a task of its own, independent of the client, and calls
//! [`AiProvider::execute_turn`] with a [`ToolGovernor`] bound to the turn. The provider owns
//! the model/tool loop; the orchestrator only maps what it reports onto the conversation's
//! stream. A turn nobody listens to for longer than the grace window is cancelled.

mod events;
mod sessions;
mod span;
mod turn;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiAuditEvent, AiAuditSink, AiCaller, AiChatRequest, AiChatStream, AiConversation,
    AiConversationStore, AiError, AiMessage, AiOrchestrator, AiProvider, AiResolvedContext,
    AiStreamEventType, AiStreamJournal, AiToolQuery, AiToolRegistry, AuditAction, AuditOutcome,
    Clock, ConversationId, MessageRole,
};
use elsa_workflows::TenantId;
use futures::future;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::context::{ContextRequest, ContextResolver, ResolvedContext};
use crate::conversation::find_owned_conversation;
use crate::stream::{HubLimits, StreamEnd, StreamHub};
use crate::{AgentRegistry, ConversationEvents, Redactor, ToolGovernor, TraceIdSource};
pub use sessions::ProviderSessions;
pub use span::chat_span;
use turn::Turn;

/// How an orchestrator is tuned; every value has a default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrchestratorSettings {
    /// How long a turn runs on with no client attached before it is cancelled.
    pub grace_window: Duration,
    /// How long a cancelled provider may take to wind down before the turn ends anyway.
    pub cancel_timeout: Duration,
    /// The largest user message accepted, in bytes (413 above).
    pub max_message_bytes: usize,
    /// The most attachments one message may carry (400 above).
    pub max_attachments: usize,
    /// How many earlier messages a turn hands the provider as history.
    pub history_limit: usize,
    /// Live events buffered per conversation for a slow client before it catches up from
    /// the journal instead.
    pub live_buffer: usize,
    /// Events read from the journal per replay batch.
    pub replay_batch: usize,
}

impl Default for OrchestratorSettings {
    fn default() -> Self {
        Self {
            grace_window: Duration::from_secs(60),
            cancel_timeout: Duration::from_secs(5),
            max_message_bytes: 32 * 1024,
            max_attachments: 16,
            history_limit: 50,
            live_buffer: 256,
            replay_batch: 256,
        }
    }
}

/// Builds a [`ChatOrchestrator`].
pub struct ChatOrchestratorBuilder {
    provider: Arc<dyn AiProvider>,
    governor: ToolGovernor,
    context: ContextResolver,
    audit: Arc<dyn AiAuditSink>,
    conversations: Arc<dyn AiConversationStore>,
    journal: Arc<dyn AiStreamJournal>,
    redactor: Arc<Redactor>,
    clock: Arc<dyn Clock>,
    traces: Arc<dyn TraceIdSource>,
    settings: OrchestratorSettings,
}

impl std::fmt::Debug for ChatOrchestratorBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatOrchestratorBuilder")
            .field("provider", &self.provider.name())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl ChatOrchestratorBuilder {
    /// All settings at once.
    pub fn settings(mut self, settings: OrchestratorSettings) -> Self {
        self.settings = settings;
        self
    }

    /// How long a turn runs on with no client attached (default 60 s).
    pub fn grace_window(mut self, window: Duration) -> Self {
        self.settings.grace_window = window;
        self
    }

    /// The orchestrator.
    pub fn build(self) -> ChatOrchestrator {
        let conversations = self.conversations;
        let hub = StreamHub::new(
            self.journal,
            self.redactor.clone(),
            self.clock.clone(),
            HubLimits {
                live_buffer: self.settings.live_buffer,
                replay_batch: self.settings.replay_batch,
            },
        );
        ChatOrchestrator {
            core: Arc::new(Core {
                sessions: ProviderSessions::new(self.provider.clone(), self.clock.clone()),
                provider: self.provider,
                governor: self.governor,
                context: self.context,
                conversations,
                audit: self.audit,
                redactor: self.redactor,
                clock: self.clock,
                hub,
                settings: self.settings,
                draining: CancellationToken::new(),
                shutdown: CancellationToken::new(),
                stops: parking_lot::Mutex::default(),
                tasks: TaskTracker::new(),
                traces: self.traces,
            }),
        }
    }
}

/// The [`AiOrchestrator`] of Weaver; see the module docs. Cheap to clone (shared).
#[derive(Clone)]
pub struct ChatOrchestrator {
    core: Arc<Core>,
}

pub(crate) struct Core {
    provider: Arc<dyn AiProvider>,
    governor: ToolGovernor,
    context: ContextResolver,
    conversations: Arc<dyn AiConversationStore>,
    audit: Arc<dyn AiAuditSink>,
    redactor: Arc<Redactor>,
    clock: Arc<dyn Clock>,
    hub: Arc<StreamHub>,
    sessions: ProviderSessions,
    settings: OrchestratorSettings,
    /// Cancelled when the host stops taking new turns (drain or shutdown).
    draining: CancellationToken,
    /// Cancelled at shutdown; every turn's token is a child of it.
    shutdown: CancellationToken,
    /// The stop token of each running turn, by (tenant, conversation): what a person's
    /// cancel request fires.
    stops: parking_lot::Mutex<HashMap<(TenantId, ConversationId), CancellationToken>>,
    tasks: TaskTracker,
    /// Which trace a turn's span belongs to (named in `conversation.started`).
    traces: Arc<dyn TraceIdSource>,
}

impl std::fmt::Debug for ChatOrchestrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatOrchestrator")
            .field("provider", &self.core.provider.name())
            .field("settings", &self.core.settings)
            .finish_non_exhaustive()
    }
}

impl ChatOrchestrator {
    /// A builder over the provider, the governor (whose registry also supplies the agents
    /// and the authorized tool set), the context resolver and what the host core shares
    /// (redactor, clock, audit sink, conversation store and journal); hosts call
    /// [`HostCore::orchestrator`](crate::HostCore::orchestrator).
    pub(crate) fn builder(
        provider: Arc<dyn AiProvider>,
        governor: ToolGovernor,
        context: ContextResolver,
        core: &crate::HostCore,
    ) -> ChatOrchestratorBuilder {
        ChatOrchestratorBuilder {
            provider,
            governor,
            context,
            audit: core.audit().clone(),
            conversations: core.conversations().clone(),
            journal: core.journal().clone(),
            redactor: core.redactor().clone(),
            clock: core.clock().clone(),
            traces: core.traces().clone(),
            settings: OrchestratorSettings::default(),
        }
    }

    /// The handle through which the proposal service publishes `proposal.*` events.
    pub fn events(&self) -> ConversationEvents {
        ConversationEvents::new(self.core.hub.clone(), self.core.conversations.clone())
    }

    /// The provider sessions, for the retention sweeper.
    pub fn sessions(&self) -> &ProviderSessions {
        &self.core.sessions
    }

    /// The conversation store.
    pub fn conversations(&self) -> &Arc<dyn AiConversationStore> {
        &self.core.conversations
    }

    /// The settings in force.
    pub fn settings(&self) -> &OrchestratorSettings {
        &self.core.settings
    }

    /// Refuses new turns (503 `shutting_down`), cancels the running ones (each ends with
    /// `conversation.failed`, code `host_shutdown`) and waits until they have ended.
    pub async fn shutdown(&self) {
        self.core.draining.cancel();
        self.core.shutdown.cancel();
        self.core.tasks.close();
        self.core.tasks.wait().await;
    }

    /// Shuts down gently: refuses new turns at once (503 `shutting_down`), lets the running
    /// ones go on for up to `grace` (they end normally and their clients get every event),
    /// then [`shutdown`](Self::shutdown)s the rest. Returns how many turns had to be
    /// cancelled.
    pub async fn drain(&self, grace: Duration) -> usize {
        self.core.draining.cancel();
        self.core.tasks.close();
        if tokio::time::timeout(grace, self.core.tasks.wait())
            .await
            .is_ok()
        {
            return 0;
        }
        let cancelled = self.core.tasks.len();
        self.shutdown().await;
        cancelled
    }
}

impl Core {
    /// Records a redacted audit event; a record that cannot be written is 500 `audit_failed`
    /// (503 `store_unavailable` while the store is unavailable).
    async fn record(&self, mut event: AiAuditEvent) -> Result<(), AiError> {
        self.redactor.redact_audit_event(&mut event);
        self.audit.record(event).await.map_err(|error| {
            tracing::error!(
                code = error.code(),
                "orchestrator audit record could not be written"
            );
            AiError::audit_failed(
                &error,
                "the chat turn could not be audited, so it was refused",
            )
        })
    }

    /// Writes `events` all at once, so that a group-committing sink commits them together
    /// (one wait instead of one per record); succeeds once every one is written.
    async fn record_all(&self, events: Vec<AiAuditEvent>) -> Result<(), AiError> {
        future::try_join_all(events.into_iter().map(|event| self.record(event)))
            .await
            .map(drop)
    }

    fn audit_event(
        &self,
        caller: &AiCaller,
        conversation_id: &ConversationId,
        action: AuditAction,
        outcome: AuditOutcome,
        summary: impl Into<String>,
        details: Value,
    ) -> AiAuditEvent {
        let mut event = AiAuditEvent::new(
            caller.tenant_id.clone(),
            caller.actor_id.clone(),
            action,
            outcome,
            summary,
        );
        event.timestamp = self.clock.now();
        event.conversation_id = Some(conversation_id.clone());
        event.details = details;
        event
    }
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

#[async_trait]
impl AiOrchestrator for ChatOrchestrator {
    async fn execute_chat(&self, request: AiChatRequest) -> Result<AiChatStream, AiError> {
        let received = std::time::Instant::now();
        let core = &self.core;
        let AiChatRequest {
            caller,
            conversation_id,
            agent,
            message,
            attachments,
        } = request;
        if caller.actor_id.trim().is_empty() || caller.tenant_id.as_str().trim().is_empty() {
            return Err(AiError::unauthenticated(
                "a chat needs an actor and a tenant",
            ));
        }
        if core.draining.is_cancelled() {
            return Err(AiError::unavailable(
                "shutting_down",
                "the host is shutting down and accepts no new turns",
            ));
        }
        if message.trim().is_empty() {
            return Err(AiError::bad_request(
                "empty_message",
                "the message is empty",
            ));
        }
        if message.len() > core.settings.max_message_bytes {
            return Err(AiError::payload_too_large(format!(
                "the message has {} bytes; at most {} are accepted",
                message.len(),
                core.settings.max_message_bytes
            )));
        }
        if attachments.len() > core.settings.max_attachments {
            return Err(AiError::bad_request(
                "too_many_attachments",
                format!(
                    "a message may carry at most {} attachments",
                    core.settings.max_attachments
                ),
            ));
        }

        // The agent named in the request, then the conversation it continues.
        let agents = core.governor.registry().agents();
        if let Some(name) = &agent {
            agents.resolve(name)?;
        }
        let existing = match &conversation_id {
            Some(id) => {
                Some(find_owned_conversation(core.conversations.as_ref(), &caller, id).await?)
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

        // The turn's span opens here, so that what the turn records before it streams (its
        // opening audit records, `conversation.started`) is in the turn's trace too.
        let info = core.provider.info();
        let span = chat_span(
            &info.name,
            info.model.as_deref(),
            conversation_id.as_str(),
            &agent.name,
        );
        let trace_id = core.traces.trace_id(&span);
        let turn_span = span.clone();
        let accepted: Result<AiChatStream, AiError> = async move {
            // One turn at a time per conversation.
            let channel = match &existing {
                Some(_) => core.hub.channel(&caller.tenant_id, &conversation_id),
                None => core.hub.new_channel(&caller.tenant_id, &conversation_id),
            };
            let slot = channel.begin_turn()?;

            // The context and the authorized tool set do not depend on each other: both are
            // read at once.
            let tool_query = AiToolQuery {
                agent: Some(agent.name.clone()),
                ..AiToolQuery::for_caller(caller.clone())
            };
            let (
                ResolvedContext {
                    attachments: context,
                    audit: mut opening,
                },
                tools,
            ) = tokio::try_join!(
                core.context.resolve(ContextRequest {
                    caller: &caller,
                    agent: &agent,
                    conversation_id: Some(&conversation_id),
                    attachments: &attachments,
                }),
                core.governor.registry().list(&tool_query),
            )?;

            let (session, created) = core
                .sessions
                .session_for(&conversation_id, &agent, &caller)
                .await
                .map_err(|error| core.redactor.redact_error(error))?;
            let opened = OpenedSession {
                core,
                conversation_id: &conversation_id,
                created,
            };
            if created {
                opening.push(core.audit_event(
                    &caller,
                    &conversation_id,
                    AuditAction::SESSION_CREATED,
                    AuditOutcome::Success,
                    format!("provider session opened with '{}'", session.provider),
                    json!({"provider": session.provider, "sessionId": session.session_id, "agent": agent.name}),
                ));
            }

            let message = core.redactor.redact_str(&message).into_owned();
            let tool_names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            let attachment_refs: Vec<Value> = attachments
                .iter()
                .map(|a| json!({"kind": a.kind, "referenceId": a.reference_id, "activityId": a.activity_id}))
                .collect();
            opening.push(core.audit_event(
                &caller,
                &conversation_id,
                AuditAction::PROMPT_SUBMITTED,
                AuditOutcome::Success,
                format!("prompt submitted to agent '{}'", agent.name),
                json!({
                    "agent": agent.name,
                    "provider": session.provider,
                    "message": message,
                    "attachments": attachment_refs,
                    "tools": tool_names,
                }),
            ));
            // The context's, the session's and the prompt's records are written before the
            // conversation is stored or anything streams.
            opened.or_close(core.record_all(opening).await).await?;

            let now = core.clock.now();
            let user_message = AiMessage {
                role: MessageRole::User,
                content: message.clone(),
                timestamp: now,
            };
            let history: Vec<AiMessage> = match &existing {
                Some(conversation) => {
                    let skip = conversation
                        .messages
                        .len()
                        .saturating_sub(core.settings.history_limit);
                    conversation.messages[skip..]
                        .iter()
                        .map(|m| AiMessage {
                            content: core.redactor.redact_str(&m.content).into_owned(),
                            ..m.clone()
                        })
                        .collect()
                }
                None => Vec::new(),
            };
            let stored = match &existing {
                Some(_) => {
                    core.conversations
                        .append_message(&conversation_id, &caller.tenant_id, &user_message)
                        .await
                }
                None => {
                    core.conversations
                        .create(&AiConversation {
                            id: conversation_id.clone(),
                            tenant_id: caller.tenant_id.clone(),
                            owner_id: caller.actor_id.clone(),
                            agent: agent.name.clone(),
                            title: title_of(&message),
                            created_at: now,
                            updated_at: now,
                            messages: vec![user_message],
                        })
                        .await
                }
            };
            opened.or_close(stored).await?;

            let mut started = json!({
                "conversationId": conversation_id,
                "agent": agent.name,
                "provider": session.provider,
                "message": message,
                "attachments": context_summary(&context),
            });
            if let Some(trace_id) = trace_id {
                started["traceId"] = json!(trace_id);
            }
            let started = channel
                .append(AiStreamEventType::ConversationStarted, started)
                .await?;
            core.governor.metrics().first_event(received.elapsed());
            let events = channel.subscribe(started.sequence - 1, StreamEnd::AtTerminal);

            let stop = CancellationToken::new();
            core.stops.lock().insert(
                (caller.tenant_id.clone(), conversation_id.clone()),
                stop.clone(),
            );
            let turn = Turn {
                cancellation: core.shutdown.child_token(),
                stop,
                slot,
                conversation_id: conversation_id.clone(),
                caller,
                agent,
                session,
                message,
                history,
                context,
                tools,
                attachments,
                span: turn_span,
            };
            core.tasks.spawn(turn::run(self.core.clone(), turn));
            Ok(AiChatStream {
                conversation_id,
                events,
            })
        }
        .instrument(span.clone())
        .await;
        if let Err(error) = &accepted {
            span.record("weaver.turn.outcome", "refused");
            span.record("error.type", error.code());
        }
        accepted
    }

    async fn resume(
        &self,
        caller: &AiCaller,
        conversation_id: &ConversationId,
        after_sequence: u64,
    ) -> Result<AiChatStream, AiError> {
        find_owned_conversation(self.core.conversations.as_ref(), caller, conversation_id).await?;
        let events = self
            .core
            .hub
            .channel(&caller.tenant_id, conversation_id)
            .subscribe(after_sequence, StreamEnd::WhenIdle);
        Ok(AiChatStream {
            conversation_id: conversation_id.clone(),
            events,
        })
    }

    async fn cancel(
        &self,
        caller: &AiCaller,
        conversation_id: &ConversationId,
    ) -> Result<(), AiError> {
        find_owned_conversation(self.core.conversations.as_ref(), caller, conversation_id).await?;
        let stop = self
            .core
            .stops
            .lock()
            .get(&(caller.tenant_id.clone(), conversation_id.clone()))
            .cloned();
        match stop {
            Some(stop) => {
                stop.cancel();
                Ok(())
            }
            None => Err(AiError::Conflict {
                code: "no_turn_in_progress".into(),
                message: format!("no turn is running in conversation '{conversation_id}'"),
                current_state: None,
            }),
        }
    }
}

/// A session opened for a turn that has not started yet: if the turn is refused after all,
/// a session opened for it is closed again.
struct OpenedSession<'a> {
    core: &'a Core,
    conversation_id: &'a ConversationId,
    created: bool,
}

impl OpenedSession<'_> {
    async fn or_close<T>(&self, result: Result<T, AiError>) -> Result<T, AiError> {
        if result.is_err() && self.created {
            self.core.sessions.close(self.conversation_id).await;
        }
        result
    }
}
