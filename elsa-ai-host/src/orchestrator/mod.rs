//! The chat orchestrator: everything before a turn streams (agent, conversation, context,
//! tools, session), the turn in its own task, and resumable streams.
//!
//! It implements the flow of a chat turn in ARCHITECTURE.md: every check that can refuse a
//! request runs before anything streams, so refusals are HTTP statuses; the turn then runs
//! in a task of its own, independent of the client, and calls
//! [`AiProvider::execute_turn`] with a [`ToolGovernor`] bound to the turn. The provider owns
//! the model/tool loop; the orchestrator only maps what it reports onto the conversation's
//! stream. A turn nobody listens to for longer than the grace window is cancelled.

mod admission;
mod claims;
mod events;
mod sessions;
mod span;
mod turn;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiAuditEvent, AiAuditSink, AiCaller, AiChatRequest, AiChatStream, AiConversationStore, AiError,
    AiOrchestrator, AiProvider, AiStreamJournal, AiTurnClaims, AuditAction, AuditOutcome, Clock,
    ConversationId,
};
use elsa_workflows::TenantId;
use futures::future;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::context::ContextResolver;
use crate::conversation::find_owned_conversation;
use crate::governor::ToolGovernor;
use crate::redaction::Redactor;
use crate::stream::ConversationEvents;
use crate::stream::{HubLimits, StreamEnd, StreamHub, turn_end_backoff};
use crate::telemetry::TraceIdSource;
use admission::TurnParts;
pub use claims::DEFAULT_TURN_LEASE;
use claims::ReplicaClaims;
pub use sessions::ProviderSessions;
pub use span::chat_span;

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
    claims: Option<(Arc<dyn AiTurnClaims>, Duration)>,
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

    /// Claims every turn in `claims`, the store shared by every replica (and by this
    /// process after a restart), renewing each claim's `lease` while the turn runs: a
    /// conversation then has one running turn across replicas, a client of any replica
    /// follows it live, and a turn whose process died is closed with `conversation.failed`
    /// (code `replica_lost`) once its lease has passed. Call
    /// [`ChatOrchestrator::keep_claims`] to run the heartbeat and that sweep. Without it
    /// (the default), turns are claimed in this process only.
    pub fn turn_claims(mut self, claims: Arc<dyn AiTurnClaims>, lease: Duration) -> Self {
        self.claims = Some((claims, lease));
        self
    }

    /// The orchestrator.
    pub fn build(self) -> ChatOrchestrator {
        let conversations = self.conversations;
        let claims = self
            .claims
            .map(|(store, lease)| ReplicaClaims::new(store, lease));
        let hub = StreamHub::new(
            self.journal,
            self.redactor.clone(),
            self.clock.clone(),
            HubLimits {
                live_buffer: self.settings.live_buffer,
                replay_batch: self.settings.replay_batch,
            },
            claims.as_ref().map(|c| (c.store.clone(), c.heartbeat())),
        );
        ChatOrchestrator {
            core: Arc::new(Core {
                sessions: ProviderSessions::new(
                    self.provider.clone(),
                    self.clock.clone(),
                    conversations.clone(),
                ),
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
                claims,
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
    /// The claims shared with other replicas, when configured.
    claims: Option<ReplicaClaims>,
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
            claims: None,
        }
    }

    /// Stops the conversation's running turn, here or (with shared claims) on whichever
    /// replica runs it; `false` when none runs.
    pub(crate) async fn stop_turn(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
    ) -> Result<bool, AiError> {
        let stop = self
            .core
            .stops
            .lock()
            .get(&(tenant_id.clone(), conversation_id.clone()))
            .cloned();
        if let Some(stop) = stop {
            stop.cancel();
            return Ok(true);
        }
        match &self.core.claims {
            Some(claims) => {
                claims
                    .store
                    .request_cancel(tenant_id, conversation_id, self.core.clock.now())
                    .await
            }
            None => Ok(false),
        }
    }

    /// Whether a turn of the conversation runs here or, with shared claims, anywhere.
    pub(crate) async fn turn_running(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
    ) -> Result<bool, AiError> {
        let here = self
            .core
            .stops
            .lock()
            .contains_key(&(tenant_id.clone(), conversation_id.clone()));
        if here {
            return Ok(true);
        }
        match &self.core.claims {
            Some(claims) => Ok(claims
                .store
                .current(tenant_id, conversation_id)
                .await?
                .is_some()),
            None => Ok(false),
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

    /// Runs, until `stop` fires, the heartbeat that renews this replica's turn claims and
    /// the sweep that closes turns whose replica died (see
    /// [`ChatOrchestratorBuilder::turn_claims`]; without claims it returns at once).
    pub async fn keep_claims(&self, stop: CancellationToken) {
        claims::keep(self.core.clone(), stop).await;
    }

    /// Another replica appended to the tenant's conversation's journal up to `sequence`:
    /// clients of this replica that follow the conversation receive the new events live.
    pub fn journal_advanced(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
        sequence: u64,
    ) {
        self.core
            .hub
            .journal_advanced(tenant_id, conversation_id, Some(sequence));
    }

    /// A client asked another replica to cancel the tenant's conversation's turn
    /// `turn_id`: if it runs here, it is cancelled (as `POST /ai/chat/{id}/cancel` would).
    pub fn cancel_requested(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
        turn_id: &str,
    ) {
        self.core
            .cancel_claimed(tenant_id, conversation_id, turn_id);
    }

    /// Announcements of other replicas' appends may have been missed (the listening
    /// connection was lost): every followed conversation catches up from its journal.
    pub fn journal_missed(&self) {
        self.core.hub.journal_missed();
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

    /// Records the audit event of a turn's end, trying again while the store is unavailable
    /// (503) for as long as the turn tries to journal its end: the trail must say how every
    /// streamed turn ended.
    async fn record_turn_end(&self, event: AiAuditEvent) -> Result<(), AiError> {
        let mut backoff = turn_end_backoff();
        loop {
            let recorded = self.record(event.clone()).await;
            if !matches!(&recorded, Err(error) if error.status() == 503) || !backoff.wait().await {
                return recorded;
            }
        }
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
        event.details = details.into();
        event
    }
}

#[async_trait]
impl AiOrchestrator for ChatOrchestrator {
    /// The stages of ARCHITECTURE.md's flow of a chat turn, each in `admission`: any of
    /// them may refuse the request before anything streams.
    async fn execute_chat(&self, request: AiChatRequest) -> Result<AiChatStream, AiError> {
        let received = Instant::now();
        let core = &self.core;
        core.check_request(&request)?;
        let AiChatRequest {
            caller,
            conversation_id,
            agent,
            message,
            attachments,
        } = request;
        let target = core
            .pick_target(&caller, conversation_id.as_ref(), agent)
            .await?;
        let span = core.turn_span(&target);
        let trace_id = core.traces.trace_id(&span);
        let turn_span = span.clone();
        let accepted: Result<AiChatStream, AiError> = async move {
            let message = core.redactor.redact_str(&message).into_owned();
            let opening = async {
                let mut resolved = core.resolve(&caller, &target, &attachments).await?;
                let session = core
                    .open_session(&caller, &target, &mut resolved.opening)
                    .await?;
                let written = core
                    .write_opening_records(
                        &caller,
                        &target,
                        &session,
                        &message,
                        &attachments,
                        &mut resolved,
                    )
                    .await;
                core.or_close(&session, &target, written).await?;
                Ok::<_, AiError>((resolved, session))
            };
            // A conversation continued is claimed before anything else happens for the turn
            // (a parallel turn gets 409 and leaves no record). A new conversation's id is
            // known to no one until `conversation.started` names it, so its claim cannot be
            // contested: it is taken while the opening is resolved and audited, and the turn
            // waits for the store once less. Either way the claim holds before the user
            // message is stored and before anything streams.
            let (claimed, opened) = if target.existing.is_some() {
                let claimed = core.claim(&caller, &target).await?;
                (Ok(claimed), opening.await)
            } else {
                tokio::join!(core.claim(&caller, &target), opening)
            };
            let (resolved, session) = opened?;
            let claimed = core.or_close(&session, &target, claimed).await?;
            let history = core.history(&target);
            let stored = core.store_user_message(&caller, &target, &message).await;
            core.or_close(&session, &target, stored).await?;
            let events = core
                .start_stream(
                    &claimed,
                    &target,
                    &session,
                    &message,
                    &resolved.context,
                    trace_id,
                    received,
                )
                .await?;
            let conversation_id = target.conversation_id.clone();
            self.core.spawn_turn(TurnParts {
                claimed,
                target,
                caller,
                session,
                message,
                history,
                resolved,
                attachments,
                span: turn_span,
            });
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
        if let Some(stop) = stop {
            stop.cancel();
            return Ok(());
        }
        // The turn may run on another replica: the store passes the request on.
        let asked = match &self.core.claims {
            Some(claims) => {
                claims
                    .store
                    .request_cancel(&caller.tenant_id, conversation_id, self.core.clock.now())
                    .await?
            }
            None => false,
        };
        if asked {
            return Ok(());
        }
        Err(AiError::Conflict {
            code: "no_turn_in_progress".into(),
            message: format!("no turn is running in conversation '{conversation_id}'"),
            current_state: None,
        })
    }
}
