//! Helpers for governance tests: tool definitions and configurable test tools, recording
//! sinks and observers, and a [`GovernanceHarness`] that wires a registry and a governor
//! over in-memory stores.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiAgentDefinition, AiAuditEvent, AiAuditSink, AiCaller, AiContextAttachment, AiConversation,
    AiConversationStore, AiError, AiMessage, AiProposal, AiProposalIntake,
    AiProviderToolInvocation, AiProviderToolInvoker, AiSessionHandle, AiTool, AiToolDefinition,
    AiToolEnablementStore, AiToolExecutionContext, AiToolResult, AiToolServices, AttachmentKind,
    AuditBehavior, ConversationId, DangerLevel, OperationDraft, Permission, ProposalDraft,
    TenantBehavior, ToolEnablement, ToolMutability, ToolNaming, ToolSource,
};
use elsa_workflows::{
    ActivityCatalog, ActivityDescriptor, ActivityExecutionRecord, DefinitionQuery,
    DefinitionSummary, ExecutionLogEntry, ExecutionRecordStore, InMemoryWorkflowBackend,
    IncidentQuery, IncidentSearch, IncidentStore, InstanceQuery, Page, PageRequest, TenantId,
    VersionOptions, WorkflowDefinition, WorkflowDefinitionStore, WorkflowError, WorkflowInstance,
    WorkflowInstanceStore,
};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::agents::AgentRegistry;
use crate::audit::InMemoryAuditLog;
use crate::enablement::InMemoryToolEnablementStore;
use crate::governor::{
    GovernanceStep, StepObserver, ToolCallScope, ToolEvent, ToolEventSink, ToolGovernor,
};

use crate::host_core::HostCore;
use crate::redaction::Redactor;
use crate::registry::{ToolPolicy, ToolRegistry};
use crate::stream::InMemoryStreamJournal;

/// The agent a [`GovernanceHarness`] registers for its tools.
pub const TEST_AGENT: &str = "test-agent";

/// The tenant of the harness caller.
pub const TEST_TENANT: &str = "acme";

/// The conversation the harness caller owns.
pub const TEST_CONVERSATION: &str = "conv-1";

/// Every built-in permission but `analyze:tenant` (which lifts the runtime search scope
/// that tests of scoped searches rely on).
pub fn all_permissions() -> Vec<Permission> {
    vec![
        Permission::READ_WORKFLOWS,
        Permission::READ_WORKFLOW_INSTANCES,
        Permission::READ_ACTIVITIES,
        Permission::PROPOSE_WORKFLOWS,
        Permission::APPLY_WORKFLOWS,
        Permission::ADMIN_AI,
        Permission::OPERATE_WORKFLOW_INSTANCES,
        Permission::PUBLISH_WORKFLOWS,
    ]
}

/// A valid read-only, tenant-scoped, on-by-default tool needing `read:workflows`, with an
/// open object schema and `RecordInvocation` auditing.
pub fn read_tool(name: &str) -> AiToolDefinition {
    AiToolDefinition {
        name: name.to_owned(),
        grounding_name: None,
        display_name: format!("Test {name}"),
        description: format!("Test tool {name}."),
        input_schema: json!({
            "type": "object",
            "properties": {"id": {"type": "string"}},
        }),
        mutability: ToolMutability::ReadOnly,
        danger_level: DangerLevel::Low,
        permissions: vec![Permission::READ_WORKFLOWS],
        tenant_behavior: TenantBehavior::TenantScoped,
        audit_behavior: AuditBehavior::RecordInvocation,
        allowed_agents: None,
        source: ToolSource::BuiltIn,
        enabled_by_default: true,
        timeout: None,
    }
}

/// A valid proposal tool: `propose:workflows`, medium danger, off until enabled.
pub fn proposal_tool(name: &str) -> AiToolDefinition {
    AiToolDefinition {
        mutability: ToolMutability::Proposal,
        danger_level: DangerLevel::Medium,
        permissions: vec![Permission::PROPOSE_WORKFLOWS],
        enabled_by_default: false,
        ..read_tool(name)
    }
}

/// An enabled agent allowed `tools`, holding `permissions`, resolving every context kind.
pub fn test_agent(name: &str, tools: &[&str], permissions: &[Permission]) -> AiAgentDefinition {
    AiAgentDefinition {
        name: name.to_owned(),
        display_name: format!("Test agent {name}"),
        description: "An agent for tests.".to_owned(),
        instructions: "Use the tools.".to_owned(),
        allowed_tools: tools.iter().map(|t| (*t).to_owned()).collect(),
        allowed_context_providers: AttachmentKind::ALL.to_vec(),
        allowed_mcp_servers: Vec::new(),
        permissions: permissions.to_vec(),
        enabled: true,
    }
}

/// Elsa services with no data at all: every lookup finds nothing. For governance tests that
/// exercise the pipeline, not the tools' data access.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoWorkflowData;

#[async_trait]
impl WorkflowDefinitionStore for NoWorkflowData {
    async fn find(
        &self,
        _: &TenantId,
        _: &str,
        _: VersionOptions,
    ) -> Result<Option<Arc<WorkflowDefinition>>, WorkflowError> {
        Ok(None)
    }

    async fn search(
        &self,
        _: &TenantId,
        query: &DefinitionQuery,
    ) -> Result<Page<DefinitionSummary>, WorkflowError> {
        Ok(query.page.slice(Vec::new()))
    }
}

#[async_trait]
impl WorkflowInstanceStore for NoWorkflowData {
    async fn find(&self, _: &TenantId, _: &str) -> Result<Option<WorkflowInstance>, WorkflowError> {
        Ok(None)
    }

    async fn search(
        &self,
        _: &TenantId,
        query: &InstanceQuery,
    ) -> Result<Page<WorkflowInstance>, WorkflowError> {
        Ok(query.page.slice(Vec::new()))
    }
}

#[async_trait]
impl ExecutionRecordStore for NoWorkflowData {
    async fn activity_executions(
        &self,
        _: &TenantId,
        _: &str,
    ) -> Result<Vec<ActivityExecutionRecord>, WorkflowError> {
        Ok(Vec::new())
    }

    async fn execution_log(
        &self,
        _: &TenantId,
        _: &str,
        page: PageRequest,
    ) -> Result<Page<ExecutionLogEntry>, WorkflowError> {
        Ok(page.slice(Vec::new()))
    }
}

#[async_trait]
impl IncidentStore for NoWorkflowData {
    async fn search(
        &self,
        _: &TenantId,
        query: &IncidentQuery,
    ) -> Result<IncidentSearch, WorkflowError> {
        Ok(IncidentSearch {
            incidents: query.page.slice(Vec::new()),
            instances_read: 0,
            complete: true,
        })
    }
}

#[async_trait]
impl ActivityCatalog for NoWorkflowData {
    async fn list(
        &self,
        _: &TenantId,
    ) -> Result<std::sync::Arc<[ActivityDescriptor]>, WorkflowError> {
        Ok(std::sync::Arc::from([]))
    }
}

/// A proposal intake that refuses every draft (503): for tests that never submit one.
#[derive(Clone, Copy, Debug, Default)]
pub struct RefusingProposalIntake;

#[async_trait]
impl AiProposalIntake for RefusingProposalIntake {
    async fn submit(&self, _: &AiCaller, _: ProposalDraft) -> Result<AiProposal, AiError> {
        Err(AiError::unavailable(
            "no_proposal_service",
            "this test has no proposal service",
        ))
    }

    async fn submit_operation(
        &self,
        _: &AiCaller,
        _: OperationDraft,
    ) -> Result<AiProposal, AiError> {
        Err(AiError::unavailable(
            "no_proposal_service",
            "this test has no proposal service",
        ))
    }
}

/// [`AiToolServices`] reading `backend` (definitions, instances and catalog) and handing
/// drafts to `proposals`.
pub fn backend_services(
    backend: Arc<InMemoryWorkflowBackend>,
    proposals: Arc<dyn AiProposalIntake>,
) -> AiToolServices {
    AiToolServices {
        definitions: backend.clone(),
        instances: backend.clone(),
        executions: backend.clone(),
        incidents: backend.clone(),
        catalog: backend,
        proposals,
    }
}

/// [`AiToolServices`] over [`NoWorkflowData`] and [`RefusingProposalIntake`].
pub fn empty_services() -> AiToolServices {
    AiToolServices {
        definitions: Arc::new(NoWorkflowData),
        instances: Arc::new(NoWorkflowData),
        executions: Arc::new(NoWorkflowData),
        incidents: Arc::new(NoWorkflowData),
        catalog: Arc::new(NoWorkflowData),
        proposals: Arc::new(RefusingProposalIntake),
    }
}

enum Behavior {
    Echo,
    Return(Value),
    Fail(AiError),
    Sleep(Duration),
    Panic,
}

/// A tool with a fixed definition and behaviour that records its calls.
pub struct TestTool {
    definition: AiToolDefinition,
    behavior: Behavior,
    calls: AtomicUsize,
    last: Mutex<Option<AiToolExecutionContext>>,
}

impl std::fmt::Debug for TestTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestTool")
            .field("name", &self.definition.name)
            .finish_non_exhaustive()
    }
}

impl TestTool {
    fn new(definition: AiToolDefinition, behavior: Behavior) -> Self {
        Self {
            definition,
            behavior,
            calls: AtomicUsize::new(0),
            last: Mutex::new(None),
        }
    }

    /// Returns its arguments.
    pub fn echo(definition: AiToolDefinition) -> Self {
        Self::new(definition, Behavior::Echo)
    }

    /// Returns `content`.
    pub fn returning(definition: AiToolDefinition, content: Value) -> Self {
        Self::new(definition, Behavior::Return(content))
    }

    /// Fails with `error`.
    pub fn failing(definition: AiToolDefinition, error: AiError) -> Self {
        Self::new(definition, Behavior::Fail(error))
    }

    /// Sleeps for `duration`, then returns `{}`; stops early when its token is cancelled.
    pub fn sleeping(definition: AiToolDefinition, duration: Duration) -> Self {
        Self::new(definition, Behavior::Sleep(duration))
    }

    /// Panics.
    pub fn panicking(definition: AiToolDefinition) -> Self {
        Self::new(definition, Behavior::Panic)
    }

    /// How often it ran.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// The context of its latest execution.
    pub fn last_context(&self) -> Option<AiToolExecutionContext> {
        self.last.lock().clone()
    }
}

#[async_trait]
impl AiTool for TestTool {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        *self.last.lock() = Some(context.clone());
        match &self.behavior {
            Behavior::Echo => Ok(Arc::unwrap_or_clone(context.arguments)),
            Behavior::Return(content) => Ok(content.clone()),
            Behavior::Fail(error) => Err(error.clone()),
            Behavior::Sleep(duration) => {
                tokio::select! {
                    () = tokio::time::sleep(*duration) => Ok(json!({})),
                    () = context.cancellation.cancelled() => Err(AiError::unavailable("cancelled", "cancelled")),
                }
            }
            Behavior::Panic => panic!("test tool {} panics on purpose", self.definition.name),
        }
    }
}

/// Collects the tool events it receives.
#[derive(Debug, Default)]
pub struct RecordingEventSink {
    events: Mutex<Vec<ToolEvent>>,
}

impl RecordingEventSink {
    /// Every event so far, in order.
    pub fn events(&self) -> Vec<ToolEvent> {
        self.events.lock().clone()
    }
}

#[async_trait]
impl ToolEventSink for RecordingEventSink {
    async fn publish(&self, event: ToolEvent) -> Result<(), AiError> {
        self.events.lock().push(event);
        Ok(())
    }
}

/// An audit sink that always fails, like an unreachable database.
#[derive(Clone, Copy, Debug, Default)]
pub struct FailingAuditSink;

#[async_trait]
impl AiAuditSink for FailingAuditSink {
    async fn record(&self, _: AiAuditEvent) -> Result<(), AiError> {
        Err(AiError::internal(
            "audit_store_unavailable",
            "the audit store is unreachable",
        ))
    }
}

/// Records which governance steps ran, in order, and which one refused.
#[derive(Debug, Default)]
pub struct StepLog {
    steps: Mutex<Vec<(GovernanceStep, Option<String>)>>,
}

impl StepLog {
    /// The steps that ran, in order.
    pub fn steps(&self) -> Vec<GovernanceStep> {
        self.steps.lock().iter().map(|(step, _)| *step).collect()
    }

    /// The steps that ran with the refusing error code, if any.
    pub fn outcomes(&self) -> Vec<(GovernanceStep, Option<String>)> {
        self.steps.lock().clone()
    }

    /// Forgets what was recorded.
    pub fn clear(&self) {
        self.steps.lock().clear();
    }
}

impl StepObserver for StepLog {
    fn step_finished(&self, _: &str, step: GovernanceStep, refusal: Option<&AiError>) {
        self.steps
            .lock()
            .push((step, refusal.map(|e| e.code().to_owned())));
    }
}

/// A conversation store that counts its lookups (the data access of step 6).
#[derive(Debug, Default)]
pub struct RecordingConversations {
    conversations: Mutex<Vec<AiConversation>>,
    sessions: Mutex<Vec<AiSessionHandle>>,
    finds: AtomicUsize,
}

impl RecordingConversations {
    /// Adds an empty conversation `id` owned by `owner` in `tenant`.
    pub fn insert(&self, tenant: &str, owner: &str, id: &str) {
        let now = Utc::now();
        self.conversations.lock().push(AiConversation {
            id: ConversationId::new(id),
            tenant_id: tenant.into(),
            owner_id: owner.to_owned(),
            agent: TEST_AGENT.to_owned(),
            title: id.to_owned(),
            created_at: now,
            updated_at: now,
            messages: Vec::new(),
            retain_days: None,
        });
    }

    fn holds(&self, id: &ConversationId, tenant_id: &TenantId) -> bool {
        self.conversations
            .lock()
            .iter()
            .any(|c| &c.id == id && &c.tenant_id == tenant_id)
    }

    /// How many times `find` was called.
    pub fn finds(&self) -> usize {
        self.finds.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl AiConversationStore for RecordingConversations {
    async fn create(&self, conversation: &AiConversation) -> Result<(), AiError> {
        self.conversations.lock().push(conversation.clone());
        Ok(())
    }

    async fn find(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
    ) -> Result<Option<AiConversation>, AiError> {
        self.finds.fetch_add(1, Ordering::SeqCst);
        Ok(self
            .conversations
            .lock()
            .iter()
            .find(|c| &c.id == id && &c.tenant_id == tenant_id)
            .cloned())
    }

    async fn append_message(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
        message: &AiMessage,
    ) -> Result<(), AiError> {
        let mut conversations = self.conversations.lock();
        let conversation = conversations
            .iter_mut()
            .find(|c| &c.id == id && &c.tenant_id == tenant_id)
            .ok_or_else(|| AiError::not_found(format!("conversation '{id}'")))?;
        conversation.messages.push(message.clone());
        conversation.updated_at = message.timestamp;
        Ok(())
    }

    async fn list(
        &self,
        tenant_id: &TenantId,
        owner_id: &str,
        page: PageRequest,
    ) -> Result<Page<AiConversation>, AiError> {
        let mut found: Vec<AiConversation> = self
            .conversations
            .lock()
            .iter()
            .filter(|c| &c.tenant_id == tenant_id && c.owner_id == owner_id)
            .map(|c| AiConversation {
                messages: Vec::new(),
                ..c.clone()
            })
            .collect();
        found.sort_by_key(|c| std::cmp::Reverse(c.updated_at));
        Ok(page.slice(found))
    }

    async fn purge_expired(
        &self,
        cutoff: DateTime<Utc>,
        _now: DateTime<Utc>,
    ) -> Result<usize, AiError> {
        let mut conversations = self.conversations.lock();
        let before = conversations.len();
        conversations.retain(|c| c.updated_at >= cutoff);
        Ok(before - conversations.len())
    }

    async fn delete(&self, id: &ConversationId, tenant_id: &TenantId) -> Result<bool, AiError> {
        let mut conversations = self.conversations.lock();
        let before = conversations.len();
        conversations.retain(|c| !(&c.id == id && &c.tenant_id == tenant_id));
        Ok(conversations.len() < before)
    }

    async fn delete_owned_by(
        &self,
        tenant_id: &TenantId,
        owner_id: &str,
    ) -> Result<Vec<ConversationId>, AiError> {
        let mut conversations = self.conversations.lock();
        let (gone, kept) = conversations
            .drain(..)
            .partition(|c| &c.tenant_id == tenant_id && c.owner_id == owner_id);
        *conversations = kept;
        Ok(gone.into_iter().map(|c: AiConversation| c.id).collect())
    }

    async fn set_retain_days(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
        retain_days: Option<u32>,
    ) -> Result<(), AiError> {
        let mut conversations = self.conversations.lock();
        let conversation = conversations
            .iter_mut()
            .find(|c| &c.id == id && &c.tenant_id == tenant_id)
            .ok_or_else(|| AiError::not_found(format!("conversation '{id}'")))?;
        conversation.retain_days = retain_days;
        Ok(())
    }

    async fn provider_session(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
    ) -> Result<Option<AiSessionHandle>, AiError> {
        if !self.holds(id, tenant_id) {
            return Ok(None);
        }
        Ok(self
            .sessions
            .lock()
            .iter()
            .rev()
            .find(|s| &s.conversation_id == id)
            .cloned())
    }

    async fn set_provider_session(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
        session: &AiSessionHandle,
    ) -> Result<(), AiError> {
        if !self.holds(id, tenant_id) {
            return Err(AiError::not_found(format!("conversation '{id}'")));
        }
        self.sessions.lock().push(session.clone());
        Ok(())
    }
}

/// An in-memory enablement store that counts its reads.
#[derive(Debug, Default)]
pub struct CountingEnablementStore {
    inner: InMemoryToolEnablementStore,
    reads: AtomicUsize,
}

impl CountingEnablementStore {
    /// How many times `list` was called.
    pub fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl AiToolEnablementStore for CountingEnablementStore {
    async fn list(&self, tenant_id: &TenantId) -> Result<Vec<ToolEnablement>, AiError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.list(tenant_id).await
    }

    async fn set(&self, enablement: &ToolEnablement) -> Result<(), AiError> {
        self.inner.set(enablement).await
    }
}

/// A tool with the tenants that see it (`None`: every tenant).
type TenantTool = (Arc<dyn AiTool>, Option<Vec<TenantId>>);

/// Builds a [`GovernanceHarness`].
pub struct GovernanceHarnessBuilder {
    linked: bool,
    services: AiToolServices,
    tools: Vec<TenantTool>,
    agent_tools: Option<Vec<String>>,
    agent_permissions: Vec<Permission>,
    agents: Vec<AiAgentDefinition>,
    policy: ToolPolicy,
    result_limit: Option<usize>,
    default_timeout: Option<Duration>,
    redactor: Redactor,
    audit: Option<Arc<dyn AiAuditSink>>,
    naming: ToolNaming,
}

impl GovernanceHarnessBuilder {
    /// Registers every tool linked into the test binary through `inventory` (before the
    /// tools registered with [`tool`](Self::tool)), as a host does.
    pub fn linked_tools(mut self) -> Self {
        self.linked = true;
        self
    }

    /// The Elsa services tools read (default: [`empty_services`]).
    pub fn services(mut self, services: AiToolServices) -> Self {
        self.services = services;
        self
    }

    /// Registers a [`TestTool::echo`] with this definition.
    pub fn definition(self, definition: AiToolDefinition) -> Self {
        self.tool(Arc::new(TestTool::echo(definition)))
    }

    /// Registers a tool.
    pub fn tool(mut self, tool: Arc<dyn AiTool>) -> Self {
        self.tools.push((tool, None));
        self
    }

    /// Registers a tool only callers of `tenants` see (`None`: every tenant).
    pub fn tool_for_tenants(
        mut self,
        tool: Arc<dyn AiTool>,
        tenants: Option<Vec<TenantId>>,
    ) -> Self {
        self.tools.push((tool, tenants));
        self
    }

    /// The tools the test agent may use (default: every registered tool).
    pub fn agent_tools(mut self, tools: &[&str]) -> Self {
        self.agent_tools = Some(tools.iter().map(|t| (*t).to_owned()).collect());
        self
    }

    /// The test agent's permissions (default: every built-in permission).
    pub fn agent_permissions(mut self, permissions: &[Permission]) -> Self {
        self.agent_permissions = permissions.to_vec();
        self
    }

    /// Registers another agent besides the built-in ones and the test agent.
    pub fn agent(mut self, agent: AiAgentDefinition) -> Self {
        self.agents.push(agent);
        self
    }

    /// The registry's mutability and danger policy.
    pub fn policy(mut self, policy: ToolPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Which spelling of their names tools are listed under.
    pub fn naming(mut self, naming: ToolNaming) -> Self {
        self.naming = naming;
        self
    }

    /// The governor's result budget.
    pub fn result_limit(mut self, bytes: usize) -> Self {
        self.result_limit = Some(bytes);
        self
    }

    /// The governor's default timeout.
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }

    /// The redactor (default: built-in rules).
    pub fn redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// Audits into `audit` instead of the harness's in-memory log.
    pub fn audit(mut self, audit: Arc<dyn AiAuditSink>) -> Self {
        self.audit = Some(audit);
        self
    }

    /// Wires everything.
    ///
    /// # Panics
    ///
    /// When a tool or agent is refused at registration: the test is wrong.
    pub fn build(self) -> GovernanceHarness {
        let linked: Vec<TenantTool> = if self.linked {
            elsa_ai_abstractions::linked_tools()
                .map(|tool| (tool, None))
                .collect()
        } else {
            Vec::new()
        };
        let tools: Vec<_> = linked.into_iter().chain(self.tools).collect();
        let names: Vec<String> = tools
            .iter()
            .map(|(t, _)| t.definition().name.clone())
            .collect();
        let agent_tools = self.agent_tools.unwrap_or(names);
        let agent_tools: Vec<&str> = agent_tools.iter().map(String::as_str).collect();
        let mut agents = AgentRegistry::builder()
            .with_builtin_agents()
            .and_then(|b| {
                b.agent(test_agent(
                    TEST_AGENT,
                    &agent_tools,
                    &self.agent_permissions,
                ))
            })
            .expect("the test agent is valid");
        for agent in self.agents {
            agents = agents.agent(agent).expect("extra test agents are valid");
        }
        let agents = Arc::new(agents.build());
        let enablement = Arc::new(CountingEnablementStore::default());
        let mut registry = ToolRegistry::builder()
            .policy(self.policy)
            .naming(self.naming);
        for (tool, tenants) in tools {
            registry = registry
                .tool_for_tenants(tool, tenants)
                .unwrap_or_else(|e| panic!("test tool refused: {e}"));
        }
        let registry = Arc::new(registry.build(agents, enablement.clone()));
        let audit_log = Arc::new(InMemoryAuditLog::new());
        let events = Arc::new(RecordingEventSink::default());
        let steps = Arc::new(StepLog::default());
        let conversations = Arc::new(RecordingConversations::default());
        conversations.insert(TEST_TENANT, "alice", TEST_CONVERSATION);
        let redactor = Arc::new(self.redactor);
        let audit: Arc<dyn AiAuditSink> = self.audit.unwrap_or_else(|| audit_log.clone());
        let core = HostCore::builder(redactor.clone(), audit)
            .stores(
                conversations.clone(),
                Arc::new(InMemoryStreamJournal::new()),
            )
            .build();
        let mut governor = core
            .governor(registry.clone(), self.services.clone())
            .observer(steps.clone());
        if let Some(limit) = self.result_limit {
            governor = governor.result_limit(limit);
        }
        if let Some(timeout) = self.default_timeout {
            governor = governor.default_timeout(timeout);
        }
        GovernanceHarness {
            services: self.services,
            registry,
            enablement,
            audit: audit_log,
            events,
            steps,
            conversations,
            redactor,
            governor: governor.build(),
        }
    }
}

/// A registry and governor over in-memory stores, with recording sinks, for one test.
pub struct GovernanceHarness {
    /// The Elsa services the governor hands to tools.
    pub services: AiToolServices,
    /// The registry (built-in agents plus [`TEST_AGENT`]).
    pub registry: Arc<ToolRegistry>,
    /// The enablement store the registry and governor read.
    pub enablement: Arc<CountingEnablementStore>,
    /// The audit log (unless the builder replaced the sink).
    pub audit: Arc<InMemoryAuditLog>,
    /// The events of calls made through [`GovernanceHarness::invoker`].
    pub events: Arc<RecordingEventSink>,
    /// Every step of every call.
    pub steps: Arc<StepLog>,
    /// The conversation store (holding [`TEST_CONVERSATION`], owned by the harness caller).
    pub conversations: Arc<RecordingConversations>,
    /// The redactor the governor uses.
    pub redactor: Arc<Redactor>,
    /// The governor.
    pub governor: ToolGovernor,
}

impl std::fmt::Debug for GovernanceHarness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GovernanceHarness")
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

impl GovernanceHarness {
    /// A builder with no tools.
    pub fn builder() -> GovernanceHarnessBuilder {
        GovernanceHarnessBuilder {
            linked: false,
            services: empty_services(),
            tools: Vec::new(),
            agent_tools: None,
            agent_permissions: all_permissions(),
            agents: Vec::new(),
            policy: ToolPolicy::default(),
            result_limit: None,
            default_timeout: None,
            redactor: Redactor::default(),
            audit: None,
            naming: ToolNaming::Contract,
        }
    }

    /// `alice` in [`TEST_TENANT`] with every built-in permission.
    pub fn caller(&self) -> AiCaller {
        AiCaller::new("alice", TEST_TENANT, all_permissions())
    }

    /// The scope of a turn of `caller` under [`TEST_AGENT`] in [`TEST_CONVERSATION`],
    /// reporting to [`GovernanceHarness::events`].
    pub fn scope(&self, caller: AiCaller) -> ToolCallScope {
        ToolCallScope::new(caller, TEST_AGENT)
            .with_conversation(ConversationId::new(TEST_CONVERSATION))
            .with_events(self.events.clone())
    }

    /// The invoker of a turn of the harness caller.
    pub fn invoker(&self) -> Arc<dyn AiProviderToolInvoker> {
        self.governor.bind(self.scope(self.caller()))
    }

    /// Invokes `tool` with `arguments` through a fresh invoker of the harness caller.
    pub async fn call(&self, tool: &str, arguments: Value) -> AiToolResult {
        self.invoker().invoke(invocation(tool, arguments)).await
    }

    /// Invokes `tool` for `caller` (any actor and tenant) in a turn outside any conversation
    /// whose attachments are `attachments`, reporting to [`GovernanceHarness::events`].
    pub async fn call_as(
        &self,
        caller: AiCaller,
        attachments: Vec<AiContextAttachment>,
        tool: &str,
        arguments: Value,
    ) -> AiToolResult {
        let scope = ToolCallScope::new(caller, TEST_AGENT)
            .with_attachments(attachments)
            .with_events(self.events.clone());
        self.governor
            .bind(scope)
            .invoke(invocation(tool, arguments))
            .await
    }

    /// Records an enablement decision directly in the store (bypassing the service).
    pub async fn decide(&self, tool: &str, agent: Option<&str>, enabled: bool) {
        self.enablement
            .set(&ToolEnablement {
                tenant_id: TEST_TENANT.into(),
                tool_name: tool.to_owned(),
                agent: agent.map(str::to_owned),
                enabled,
                changed_by: "admin".to_owned(),
                changed_at: Utc::now(),
            })
            .await
            .expect("the in-memory store accepts decisions");
    }
}

/// A provider invocation with call id `call-1`.
pub fn invocation(tool: &str, arguments: Value) -> AiProviderToolInvocation {
    AiProviderToolInvocation {
        call_id: "call-1".to_owned(),
        tool_name: tool.to_owned(),
        arguments,
    }
}

/// An execution context for the harness caller under [`TEST_AGENT`].
pub fn execution_context(harness: &GovernanceHarness, arguments: Value) -> AiToolExecutionContext {
    AiToolExecutionContext {
        call_id: "call-1".into(),
        caller: Arc::new(harness.caller()),
        agent: TEST_AGENT.into(),
        conversation_id: None,
        arguments: Arc::new(arguments),
        attachments: Vec::new(),
        services: Arc::new(empty_services()),
        cancellation: CancellationToken::new(),
        limits: Default::default(),
    }
}
