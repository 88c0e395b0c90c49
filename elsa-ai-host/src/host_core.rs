//! The one construction every host component comes from.
//!
//! The governor, the context resolver, the orchestrator, the proposal service and the
//! enablement service each redact, stamp time and write audit records. Built one by one,
//! a host that forgot to hand one of them its redactor would run that component on the
//! built-in rules alone, and the secrets it registered would leave through it. A
//! [`HostCore`] owns the redactor, the clock, the audit sink and the conversation stores,
//! and it is the only way to build those components: each receives the same ones. It also
//! owns the [`TraceIdSource`] that names the trace of what those components record.

use std::sync::Arc;

use chrono::TimeDelta;
use elsa_ai_abstractions::{
    AiAuditSink, AiConversationStore, AiProposalStore, AiProvider, AiStreamJournal, AiToolServices,
    Clock, SystemClock,
};
use elsa_workflows::{ActivityCatalog, WorkflowDefinitionStore, WorkflowDefinitionWriter};

use crate::context::{ContextResolver, ContextResolverBuilder};
use crate::conversation::{ConversationService, InMemoryConversationStore};
use crate::enablement::ToolEnablementService;
use crate::governor::{ToolGovernor, ToolGovernorBuilder};
use crate::orchestrator::{ChatOrchestrator, ChatOrchestratorBuilder};
use crate::proposals::{ProposalService, ProposalServiceBuilder};
use crate::redaction::Redactor;
use crate::registry::ToolRegistry;
use crate::stream::InMemoryStreamJournal;
use crate::telemetry::{TraceIdSource, TracedAuditSink, Untraced};

/// What every component of a host shares: the redactor, the clock, the audit sink, the
/// conversation store and the stream journal. Cheap to clone (shared).
#[derive(Clone)]
pub struct HostCore {
    redactor: Arc<Redactor>,
    clock: Arc<dyn Clock>,
    audit: Arc<dyn AiAuditSink>,
    conversations: Arc<dyn AiConversationStore>,
    journal: Arc<dyn AiStreamJournal>,
    traces: Arc<dyn TraceIdSource>,
}

impl std::fmt::Debug for HostCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostCore").finish_non_exhaustive()
    }
}

/// Builds a [`HostCore`].
pub struct HostCoreBuilder {
    core: HostCore,
}

impl std::fmt::Debug for HostCoreBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostCoreBuilder").finish_non_exhaustive()
    }
}

impl HostCoreBuilder {
    /// Keeps conversations and their stream journals here (default: an in-memory pair in
    /// which purging a conversation drops its journal).
    pub fn stores(
        mut self,
        conversations: Arc<dyn AiConversationStore>,
        journal: Arc<dyn AiStreamJournal>,
    ) -> Self {
        self.core.conversations = conversations;
        self.core.journal = journal;
        self
    }

    /// Stamps messages, events, proposals and audit records with `clock` (default: the
    /// system clock).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.core.clock = clock;
        self
    }

    /// Names the trace of what the components record with `traces`: every audit record
    /// made inside a traced span carries its trace id, and so does `conversation.started`
    /// (default: [`Untraced`], no trace ids).
    pub fn traces(mut self, traces: Arc<dyn TraceIdSource>) -> Self {
        self.core.audit = Arc::new(TracedAuditSink::new(self.core.audit, traces.clone()));
        self.core.traces = traces;
        self
    }

    /// The core.
    pub fn build(self) -> HostCore {
        self.core
    }
}

impl HostCore {
    /// A builder over the host's one redactor (with every configured secret registered) and
    /// its audit sink. There is no default redactor: a host states which one it uses.
    pub fn builder(redactor: Arc<Redactor>, audit: Arc<dyn AiAuditSink>) -> HostCoreBuilder {
        let journal = Arc::new(InMemoryStreamJournal::new());
        HostCoreBuilder {
            core: Self {
                redactor,
                clock: Arc::new(SystemClock),
                audit,
                conversations: Arc::new(InMemoryConversationStore::with_journal(journal.clone())),
                journal,
                traces: Arc::new(Untraced),
            },
        }
    }

    /// The redactor every component uses.
    pub fn redactor(&self) -> &Arc<Redactor> {
        &self.redactor
    }

    /// The clock every component uses.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Which trace a span belongs to.
    pub fn traces(&self) -> &Arc<dyn TraceIdSource> {
        &self.traces
    }

    /// The audit sink every component writes to (stamping trace ids on the records).
    pub fn audit(&self) -> &Arc<dyn AiAuditSink> {
        &self.audit
    }

    /// The conversation store (the governor's ownership check reads the orchestrator's).
    pub fn conversations(&self) -> &Arc<dyn AiConversationStore> {
        &self.conversations
    }

    /// The stream journal.
    pub fn journal(&self) -> &Arc<dyn AiStreamJournal> {
        &self.journal
    }

    /// A governor over the registry (tools, agents, enablement) and the Elsa services tools
    /// use, checking conversation ownership against this core's conversation store.
    pub fn governor(
        &self,
        registry: Arc<ToolRegistry>,
        services: AiToolServices,
    ) -> ToolGovernorBuilder {
        ToolGovernor::builder(
            registry,
            services,
            self.audit.clone(),
            self.redactor.clone(),
            self.clock.clone(),
            self.conversations.clone(),
        )
    }

    /// A context resolver with no providers yet (add [`builtin_context_providers`] and the
    /// host's own).
    ///
    /// [`builtin_context_providers`]: crate::builtin_context_providers
    pub fn context_resolver(&self) -> ContextResolverBuilder {
        ContextResolver::builder(
            self.audit.clone(),
            self.redactor.clone(),
            self.clock.clone(),
        )
    }

    /// An orchestrator over the provider, a governor and a context resolver built from this
    /// core, keeping conversations in this core's stores.
    pub fn orchestrator(
        &self,
        provider: Arc<dyn AiProvider>,
        governor: ToolGovernor,
        context: ContextResolver,
    ) -> ChatOrchestratorBuilder {
        ChatOrchestrator::builder(provider, governor, context, self)
    }

    /// A proposal service over the proposal store and the workflow services: definitions
    /// (baselines), the writer apply uses, and the activity catalog validation checks.
    pub fn proposals(
        &self,
        proposals: Arc<dyn AiProposalStore>,
        definitions: Arc<dyn WorkflowDefinitionStore>,
        writer: Arc<dyn WorkflowDefinitionWriter>,
        catalog: Arc<dyn ActivityCatalog>,
    ) -> ProposalServiceBuilder {
        ProposalService::builder(
            proposals,
            definitions,
            writer,
            catalog,
            self.audit.clone(),
            self.redactor.clone(),
            self.clock.clone(),
        )
    }

    /// The service that deletes conversations (stopping a running turn first through
    /// `orchestrator`, unlinking their proposals through `proposals`) and keeps one shorter
    /// than the server's retention window (`retention`).
    pub fn conversation_service(
        &self,
        orchestrator: ChatOrchestrator,
        proposals: ProposalService,
        retention: TimeDelta,
    ) -> ConversationService {
        ConversationService::new(self, orchestrator, proposals, retention)
    }

    /// The enablement service over the registry's enablement store.
    pub fn enablement(&self, registry: Arc<ToolRegistry>) -> ToolEnablementService {
        ToolEnablementService::new(
            registry,
            self.audit.clone(),
            self.redactor.clone(),
            self.clock.clone(),
        )
    }
}
