//! Provider sessions, one per conversation, opened on the first turn and reused after.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiAgentDefinition, AiCaller, AiConversationStore, AiError, AiProvider, AiSessionHandle, Clock,
    ConversationId, CreateAiSessionRequest,
};
use elsa_workflows::TenantId;
use parking_lot::Mutex;

/// The provider sessions of an orchestrator's conversations. Cheap to clone (shared).
///
/// A session is opened on a conversation's first turn (and again after a restart, or after
/// [`close_idle_before`](Self::close_idle_before) closed it) and reused by later turns.
#[derive(Clone)]
pub struct ProviderSessions {
    inner: Arc<Inner>,
}

struct Inner {
    provider: Arc<dyn AiProvider>,
    clock: Arc<dyn Clock>,
    /// Where each conversation's session is recorded, for other replicas and restarts.
    conversations: Arc<dyn AiConversationStore>,
    open: Mutex<HashMap<ConversationId, OpenSession>>,
}

struct OpenSession {
    handle: AiSessionHandle,
    last_used: DateTime<Utc>,
}

impl std::fmt::Debug for ProviderSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSessions")
            .field("provider", &self.inner.provider.name())
            .field("open", &self.len())
            .finish()
    }
}

impl ProviderSessions {
    pub(crate) fn new(
        provider: Arc<dyn AiProvider>,
        clock: Arc<dyn Clock>,
        conversations: Arc<dyn AiConversationStore>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                provider,
                clock,
                conversations,
                open: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// How many sessions are open.
    pub fn len(&self) -> usize {
        self.inner.open.lock().len()
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The conversation's session, and whether it was opened just now: the one open here,
    /// else (for a conversation that existed) the one recorded with it by whichever replica
    /// opened it, else a new one. Turns of one conversation never run at once, so two
    /// callers never race to open the same one.
    pub(crate) async fn session_for(
        &self,
        conversation_id: &ConversationId,
        agent: &AiAgentDefinition,
        caller: &AiCaller,
        existed: bool,
    ) -> Result<(AiSessionHandle, bool), AiError> {
        let now = self.inner.clock.now();
        if let Some(open) = self.inner.open.lock().get_mut(conversation_id) {
            open.last_used = now;
            return Ok((open.handle.clone(), false));
        }
        let recorded = match existed {
            true => {
                self.inner
                    .conversations
                    .provider_session(conversation_id, &caller.tenant_id)
                    .await?
            }
            false => None,
        };
        let request = CreateAiSessionRequest {
            conversation_id: conversation_id.clone(),
            agent: agent.clone(),
            caller: caller.clone(),
        };
        let handle = match &recorded {
            Some(recorded) => {
                self.inner
                    .provider
                    .continue_session(recorded, request)
                    .await?
            }
            None => self.inner.provider.create_session(request).await?,
        };
        let created = recorded.as_ref() != Some(&handle);
        self.inner.open.lock().insert(
            conversation_id.clone(),
            OpenSession {
                handle: handle.clone(),
                last_used: now,
            },
        );
        Ok((handle, created))
    }

    /// Records a session opened for the conversation with it, so that later turns on any
    /// replica continue it (best effort: a failure is logged, and a later turn elsewhere
    /// opens a new session).
    pub(crate) async fn record(&self, tenant_id: &TenantId, handle: &AiSessionHandle) {
        if let Err(error) = self
            .inner
            .conversations
            .set_provider_session(&handle.conversation_id, tenant_id, handle)
            .await
        {
            tracing::warn!(code = error.code(), conversation = %handle.conversation_id, "the provider session could not be recorded");
        }
    }

    /// Closes the conversation's session (best effort: a provider that fails to close is
    /// logged, the session is forgotten either way).
    pub(crate) async fn close(&self, conversation_id: &ConversationId) {
        let open = self.inner.open.lock().remove(conversation_id);
        if let Some(open) = open {
            self.close_handle(&open.handle).await;
        }
    }

    /// Closes every session last used before `cutoff`; returns how many.
    pub async fn close_idle_before(&self, cutoff: DateTime<Utc>) -> usize {
        let idle: Vec<AiSessionHandle> = {
            let mut open = self.inner.open.lock();
            let ids: Vec<ConversationId> = open
                .iter()
                .filter(|(_, s)| s.last_used < cutoff)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter()
                .filter_map(|id| open.remove(id))
                .map(|s| s.handle)
                .collect()
        };
        for handle in &idle {
            self.close_handle(handle).await;
        }
        idle.len()
    }

    async fn close_handle(&self, handle: &AiSessionHandle) {
        if let Err(error) = self.inner.provider.close_session(handle).await {
            tracing::warn!(
                code = error.code(),
                provider = %handle.provider,
                "provider session could not be closed"
            );
        }
    }
}
