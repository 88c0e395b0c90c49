//! Helpers for orchestration tests: a [`ChatHarness`] wiring a [`ChatOrchestrator`] over
//! in-memory stores, the real governor and context resolver; a [`RecordingProvider`] that
//! remembers what a provider was asked; a [`PlayedProvider`] that reports fixed events; and
//! stream helpers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiAgentDefinition, AiAuditSink, AiCaller, AiChatRequest, AiChatStream, AiContextAttachment,
    AiError, AiOrchestrator, AiProvider, AiProviderEvent, AiProviderInfo, AiProviderToolInvocation,
    AiProviderToolInvoker, AiSessionHandle, AiStreamEvent, AiStreamEventType, AiTool,
    AiToolServices, AiTurnClaims, AiTurnRequest, Clock, CreateAiSessionRequest, Permission,
    SystemClock,
};
use futures::StreamExt;
use futures::stream::BoxStream;
use parking_lot::Mutex;

use super::governance::{TEST_AGENT, TEST_TENANT, all_permissions, empty_services, test_agent};
use crate::agents::AgentRegistry;
use crate::audit::InMemoryAuditLog;
use crate::context::builtin_context_providers;
use crate::conversation::InMemoryConversationStore;
use crate::enablement::InMemoryToolEnablementStore;
use crate::governor::ToolGovernor;
use crate::host_core::HostCore;
use crate::orchestrator::{ChatOrchestrator, OrchestratorSettings};
use crate::proposals::ProposalService;
use crate::redaction::Redactor;
use crate::registry::ToolRegistry;
use crate::stream::InMemoryStreamJournal;
use elsa_ai_scripted::{Script, ScriptedProvider};

/// A secret the harness redactor knows, as a host registers its configured API keys.
pub const REGISTERED_SECRET: &str = "sk-weaver-test-registered-secret";

/// Wraps a provider and records every session request, turn request and closed session.
pub struct RecordingProvider {
    inner: Arc<dyn AiProvider>,
    sessions: Mutex<Vec<CreateAiSessionRequest>>,
    turns: Mutex<Vec<AiTurnRequest>>,
    closed: AtomicUsize,
}

impl std::fmt::Debug for RecordingProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingProvider")
            .field("provider", &self.inner.name())
            .finish_non_exhaustive()
    }
}

impl RecordingProvider {
    /// Records what `inner` is asked.
    pub fn new(inner: Arc<dyn AiProvider>) -> Self {
        Self {
            inner,
            sessions: Mutex::new(Vec::new()),
            turns: Mutex::new(Vec::new()),
            closed: AtomicUsize::new(0),
        }
    }

    /// Every session request so far.
    pub fn sessions(&self) -> Vec<CreateAiSessionRequest> {
        self.sessions.lock().clone()
    }

    /// Every turn request so far.
    pub fn turns(&self) -> Vec<AiTurnRequest> {
        self.turns.lock().clone()
    }

    /// How many sessions were closed.
    pub fn closed(&self) -> usize {
        self.closed.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl AiProvider for RecordingProvider {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn info(&self) -> AiProviderInfo {
        self.inner.info()
    }

    async fn create_session(
        &self,
        request: CreateAiSessionRequest,
    ) -> Result<AiSessionHandle, AiError> {
        self.sessions.lock().push(request.clone());
        self.inner.create_session(request).await
    }

    fn execute_turn(
        &self,
        request: AiTurnRequest,
        invoker: Arc<dyn AiProviderToolInvoker>,
    ) -> BoxStream<'static, AiProviderEvent> {
        self.turns.lock().push(request.clone());
        self.inner.execute_turn(request, invoker)
    }

    async fn close_session(&self, session: &AiSessionHandle) -> Result<(), AiError> {
        self.closed.fetch_add(1, Ordering::SeqCst);
        self.inner.close_session(session).await
    }
}

/// What a [`PlayedProvider`] does at one point of its turn.
#[derive(Clone, Debug)]
pub enum Played {
    /// Report this event.
    Event(AiProviderEvent),
    /// Run this call through the invoker without reporting anything about it.
    Invoke(AiProviderToolInvocation),
    /// Panic, like a buggy provider.
    Panic,
}

/// A provider that reports exactly the events it is given (and runs the calls it is told
/// to), for tests of how the orchestrator maps provider reports: duplicate or missing tool
/// events, calls failed outside the invoker, streams that end without completing.
#[derive(Debug)]
pub struct PlayedProvider {
    played: Vec<Played>,
}

impl PlayedProvider {
    /// A provider playing `played` on every turn.
    pub fn new(played: Vec<Played>) -> Self {
        Self { played }
    }
}

#[async_trait]
impl AiProvider for PlayedProvider {
    fn name(&self) -> &str {
        "played"
    }

    fn info(&self) -> AiProviderInfo {
        AiProviderInfo {
            name: "played".into(),
            display_name: "Played events".into(),
            model: None,
            scripted: true,
        }
    }

    async fn create_session(
        &self,
        request: CreateAiSessionRequest,
    ) -> Result<AiSessionHandle, AiError> {
        Ok(AiSessionHandle {
            session_id: "played-session".into(),
            provider: "played".into(),
            conversation_id: request.conversation_id,
        })
    }

    fn execute_turn(
        &self,
        _: AiTurnRequest,
        invoker: Arc<dyn AiProviderToolInvoker>,
    ) -> BoxStream<'static, AiProviderEvent> {
        let played = self.played.clone();
        futures::stream::iter(played)
            .filter_map(move |step| {
                let invoker = invoker.clone();
                async move {
                    match step {
                        Played::Event(event) => Some(event),
                        Played::Invoke(invocation) => {
                            invoker.invoke(invocation).await;
                            None
                        }
                        Played::Panic => panic!("the played provider panics on purpose"),
                    }
                }
            })
            .boxed()
    }
}

/// Builds a [`ChatHarness`].
pub struct ChatHarnessBuilder {
    tools: Vec<Arc<dyn AiTool>>,
    agents: Vec<AiAgentDefinition>,
    provider: Arc<dyn AiProvider>,
    services: AiToolServices,
    settings: OrchestratorSettings,
    clock: Arc<dyn Clock>,
    audit: Option<Arc<dyn AiAuditSink>>,
    proposals: Option<ProposalService>,
    result_limit: Option<usize>,
    traces: Option<Arc<dyn crate::TraceIdSource>>,
    claims: Option<(Arc<dyn AiTurnClaims>, std::time::Duration)>,
}

impl std::fmt::Debug for ChatHarnessBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatHarnessBuilder").finish_non_exhaustive()
    }
}

impl ChatHarnessBuilder {
    /// Registers a tool; the test agent may use every registered tool.
    pub fn tool(mut self, tool: Arc<dyn AiTool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Registers another agent.
    pub fn agent(mut self, agent: AiAgentDefinition) -> Self {
        self.agents.push(agent);
        self
    }

    /// Plays `script` on every turn.
    pub fn script(self, script: Script) -> Self {
        self.provider(Arc::new(ScriptedProvider::new(script)))
    }

    /// Uses `provider` (recorded by the harness).
    pub fn provider(mut self, provider: Arc<dyn AiProvider>) -> Self {
        self.provider = provider;
        self
    }

    /// The Elsa services tools and context providers read (default: no data).
    pub fn services(mut self, services: AiToolServices) -> Self {
        self.services = services;
        self
    }

    /// The orchestrator settings.
    pub fn settings(mut self, settings: OrchestratorSettings) -> Self {
        self.settings = settings;
        self
    }

    /// The clock of stores, events and audit records.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Names the trace of spans with `traces` (default: untraced).
    pub fn traces(mut self, traces: Arc<dyn crate::TraceIdSource>) -> Self {
        self.traces = Some(traces);
        self
    }

    /// Audits into `audit` instead of the harness log.
    pub fn audit(mut self, audit: Arc<dyn AiAuditSink>) -> Self {
        self.audit = Some(audit);
        self
    }

    /// Hands proposal tools the real `proposals` service (instead of the services' intake)
    /// and connects it to the orchestrator's conversation streams.
    pub fn proposals(mut self, proposals: ProposalService) -> Self {
        self.proposals = Some(proposals);
        self
    }

    /// Clamps tool results handed to the model at `bytes` (default: the governor's).
    pub fn result_limit(mut self, bytes: usize) -> Self {
        self.result_limit = Some(bytes);
        self
    }

    /// Claims each turn in `claims` with `lease`, as replicas sharing a store do (no
    /// heartbeat runs: leases are not renewed).
    pub fn turn_claims(
        mut self,
        claims: Arc<dyn AiTurnClaims>,
        lease: std::time::Duration,
    ) -> Self {
        self.claims = Some((claims, lease));
        self
    }

    /// Wires everything.
    ///
    /// # Panics
    ///
    /// When a tool or agent is refused at registration: the test is wrong.
    pub fn build(mut self) -> ChatHarness {
        if let Some(proposals) = &self.proposals {
            self.services.proposals = Arc::new(proposals.clone());
        }
        let names: Vec<String> = self
            .tools
            .iter()
            .map(|t| t.definition().name.clone())
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut agents = AgentRegistry::builder()
            .with_builtin_agents()
            .and_then(|b| b.agent(test_agent(TEST_AGENT, &names, &all_permissions())))
            .expect("the test agent is valid");
        for agent in self.agents {
            agents = agents.agent(agent).expect("extra test agents are valid");
        }
        let mut registry = ToolRegistry::builder();
        for tool in self.tools {
            registry = registry
                .tool(tool)
                .unwrap_or_else(|e| panic!("test tool refused: {e}"));
        }
        let registry = Arc::new(registry.build(
            Arc::new(agents.build()),
            Arc::new(InMemoryToolEnablementStore::new()),
        ));
        let redactor = Arc::new(
            Redactor::builder()
                .secret(REGISTERED_SECRET)
                .build()
                .expect("the test secret is long enough"),
        );
        let log = Arc::new(InMemoryAuditLog::new());
        let audit: Arc<dyn AiAuditSink> = self.audit.unwrap_or_else(|| log.clone());
        let journal = Arc::new(InMemoryStreamJournal::new());
        let conversations = Arc::new(InMemoryConversationStore::with_journal(journal.clone()));
        let mut core = HostCore::builder(redactor.clone(), audit)
            .stores(conversations.clone(), journal.clone())
            .clock(self.clock);
        if let Some(traces) = self.traces {
            core = core.traces(traces);
        }
        let core = core.build();
        let mut governor = core.governor(registry.clone(), self.services.clone());
        if let Some(bytes) = self.result_limit {
            governor = governor.result_limit(bytes);
        }
        let governor = governor.build();
        let bare_governor = governor.clone();
        let context = core
            .context_resolver()
            .providers(builtin_context_providers(
                self.services.definitions.clone(),
                self.services.instances.clone(),
                self.services.catalog.clone(),
            ))
            .build();
        let provider = Arc::new(RecordingProvider::new(self.provider));
        let mut orchestrator = core
            .orchestrator(provider.clone(), governor, context)
            .settings(self.settings);
        if let Some((claims, lease)) = self.claims {
            orchestrator = orchestrator.turn_claims(claims, lease);
        }
        let orchestrator = orchestrator.build();
        if let Some(proposals) = &self.proposals {
            proposals.publish_events_to(orchestrator.events());
        }
        ChatHarness {
            orchestrator,
            governor: bare_governor,
            provider,
            audit: log,
            journal,
            conversations,
            registry,
            redactor,
        }
    }
}

/// An orchestrator over in-memory stores with everything observable, for one test.
pub struct ChatHarness {
    /// The orchestrator.
    pub orchestrator: ChatOrchestrator,
    /// The orchestrator's governor, to call tools outside a turn.
    pub governor: ToolGovernor,
    /// The provider, recorded.
    pub provider: Arc<RecordingProvider>,
    /// The audit log (unless the builder replaced the sink).
    pub audit: Arc<InMemoryAuditLog>,
    /// The stream journal.
    pub journal: Arc<InMemoryStreamJournal>,
    /// The conversation store (which purges the journal).
    pub conversations: Arc<InMemoryConversationStore>,
    /// The tool registry (built-in agents plus [`TEST_AGENT`] allowed every test tool).
    pub registry: Arc<ToolRegistry>,
    /// The redactor, knowing [`REGISTERED_SECRET`].
    pub redactor: Arc<Redactor>,
}

impl std::fmt::Debug for ChatHarness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatHarness").finish_non_exhaustive()
    }
}

impl ChatHarness {
    /// A builder playing an empty script, with no tools and no workflow data.
    pub fn builder() -> ChatHarnessBuilder {
        ChatHarnessBuilder {
            tools: Vec::new(),
            agents: Vec::new(),
            provider: Arc::new(ScriptedProvider::new(Script::new())),
            services: empty_services(),
            settings: OrchestratorSettings::default(),
            clock: Arc::new(SystemClock),
            audit: None,
            proposals: None,
            result_limit: None,
            traces: None,
            claims: None,
        }
    }

    /// `alice` in [`TEST_TENANT`] with every built-in permission.
    pub fn caller(&self) -> AiCaller {
        AiCaller::new("alice", TEST_TENANT, all_permissions())
    }

    /// A new conversation of the harness caller with [`TEST_AGENT`].
    pub fn request(&self, message: &str) -> AiChatRequest {
        AiChatRequest {
            caller: self.caller(),
            conversation_id: None,
            agent: Some(TEST_AGENT.to_owned()),
            message: message.to_owned(),
            attachments: Vec::new(),
        }
    }

    /// Runs a turn of `request` and collects its whole stream.
    ///
    /// # Panics
    ///
    /// When the orchestrator refuses the request.
    pub async fn run(&self, request: AiChatRequest) -> Vec<AiStreamEvent> {
        let stream = self
            .orchestrator
            .execute_chat(request)
            .await
            .unwrap_or_else(|e| panic!("the turn was refused: {} {}", e.code(), e.message()));
        collect(stream).await
    }

    /// Runs a turn of `message` with `attachments` and returns the refusal.
    ///
    /// # Panics
    ///
    /// When the orchestrator accepts the request.
    pub async fn refused(&self, request: AiChatRequest) -> AiError {
        match self.orchestrator.execute_chat(request).await {
            Ok(stream) => panic!("the turn was accepted: {:?}", types(&collect(stream).await)),
            Err(error) => error,
        }
    }

    /// A request with attachments.
    pub fn request_with(
        &self,
        caller: AiCaller,
        agent: &str,
        attachments: Vec<AiContextAttachment>,
    ) -> AiChatRequest {
        AiChatRequest {
            caller,
            conversation_id: None,
            agent: Some(agent.to_owned()),
            message: "Tell me about the attachments.".to_owned(),
            attachments,
        }
    }
}

/// A caller in `tenant` holding `permissions`.
pub fn caller_with(actor: &str, tenant: &str, permissions: &[Permission]) -> AiCaller {
    AiCaller::new(actor, tenant, permissions.iter().cloned())
}

/// Every event of a stream.
pub async fn collect(stream: AiChatStream) -> Vec<AiStreamEvent> {
    stream.events.collect().await
}

/// The types of `events`, in order.
pub fn types(events: &[AiStreamEvent]) -> Vec<AiStreamEventType> {
    events.iter().map(|e| e.event_type).collect()
}

/// The sequences of `events`, in order.
pub fn sequences(events: &[AiStreamEvent]) -> Vec<u64> {
    events.iter().map(|e| e.sequence).collect()
}

/// Asserts that `events` are numbered `first, first + 1, …` without gap or repeat.
///
/// # Panics
///
/// When they are not.
pub fn assert_gap_free(events: &[AiStreamEvent], first: u64) {
    let expected: Vec<u64> = (first..first + events.len() as u64).collect();
    assert_eq!(
        sequences(events),
        expected,
        "sequences must be gap-free from {first}"
    );
}

/// The events of one type.
pub fn of_type(events: &[AiStreamEvent], event_type: AiStreamEventType) -> Vec<&AiStreamEvent> {
    events
        .iter()
        .filter(|e| e.event_type == event_type)
        .collect()
}
