//! The policy layer of Weaver: governance and orchestration.
//!
//! **Governance.** Every tool a model may see or call passes through this crate. The
//! [`ToolRegistry`] collects the tools linked through `inventory` and those a host registers
//! in code, refuses unsafe metadata at registration and lists only what a caller may call
//! (tenant, permissions narrowed by the agent, agent scope, enablement, mutability and danger
//! policy). [`ToolEnablementService`] records administrators' enablement decisions, audited
//! before they take effect. The [`ToolGovernor`] is the
//! [`AiProviderToolInvoker`](elsa_ai_abstractions::AiProviderToolInvoker) a provider calls:
//! the eleven steps of SPEC §3 in order, each a small type ([`GovernanceStep`]), with schema
//! validation, timeouts, clamping ([`ResultClamp`]) and an audit record for every denial.
//! One [`Redactor`] redacts everything that crosses a boundary; [`AgentRegistry`] holds the
//! least-privilege agents; [`InMemoryAuditLog`] is the development audit trail; [`Metrics`]
//! counts outcomes and [`tool_span`] traces calls with the OpenTelemetry GenAI names; a
//! [`TraceIdSource`] (given to [`HostCore`]) names the trace of each audit record and of
//! `conversation.started`.
//!
//! Every component that redacts, stamps time or audits (governor, context resolver,
//! orchestrator, proposal service, enablement service) is built from one [`HostCore`], which
//! owns the host's redactor, clock, audit sink and conversation stores: no component can be
//! built with a redactor of its own, so none can miss the secrets the host registered.
//!
//! A host wires governance once and binds the governor to every turn:
//!
//! ```
//! use std::sync::Arc;
//!
//! use async_trait::async_trait;
//! use elsa_ai_abstractions::*;
//! use elsa_ai_host::testing::governance::empty_services;
//! use elsa_ai_host::*;
//! use serde_json::{Value, json};
//!
//! struct GetDefinition(AiToolDefinition);
//!
//! #[async_trait]
//! impl AiTool for GetDefinition {
//!     fn definition(&self) -> &AiToolDefinition {
//!         &self.0
//!     }
//!     async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
//!         Ok(json!({"id": context.arguments["id"], "connectionString": "Server=db;Password=x"}))
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let tool = GetDefinition(AiToolDefinition {
//!     name: "workflow.getDefinition".into(),
//!     grounding_name: None,
//!     display_name: "Get definition".into(),
//!     description: "Reads one workflow definition.".into(),
//!     input_schema: json!({"type": "object", "properties": {"id": {"type": "string"}}}),
//!     mutability: ToolMutability::ReadOnly,
//!     danger_level: DangerLevel::Low,
//!     permissions: vec![Permission::READ_WORKFLOWS],
//!     tenant_behavior: TenantBehavior::TenantScoped,
//!     audit_behavior: AuditBehavior::RecordInvocation,
//!     allowed_agents: None,
//!     source: ToolSource::BuiltIn,
//!     enabled_by_default: true,
//!     timeout: None,
//! });
//! let registry = Arc::new(
//!     ToolRegistry::builder()
//!         .linked_tools()?
//!         .tool(Arc::new(tool))?
//!         .build(Arc::new(AgentRegistry::builtin()), Arc::new(InMemoryToolEnablementStore::new())),
//! );
//! let audit = Arc::new(InMemoryAuditLog::new());
//! // One core hands every component the host's redactor, clock, audit sink and stores.
//! let core = HostCore::builder(Arc::new(Redactor::default()), audit.clone()).build();
//! // A real host passes its Elsa backend's stores and its proposal service here.
//! let governor = core.governor(registry.clone(), empty_services()).build();
//!
//! let caller = AiCaller::new("alice", "acme", [Permission::READ_WORKFLOWS]);
//! let query = AiToolQuery { agent: Some(WORKFLOW_AUTHOR.into()), ..AiToolQuery::for_caller(caller.clone()) };
//! assert_eq!(registry.list(&query).await?.len(), 1, "the model is shown what it may call");
//!
//! let invoker = governor.bind(ToolCallScope::new(caller, WORKFLOW_AUTHOR));
//! let call = |tool: &str| AiProviderToolInvocation {
//!     call_id: "call-1".into(),
//!     tool_name: tool.into(),
//!     arguments: json!({"id": "wf-1"}),
//! };
//! let result = invoker.invoke(call("workflow.getDefinition")).await;
//! assert!(result.is_success());
//! assert_eq!(result.content["id"], "wf-1");
//! assert_eq!(result.content["connectionString"], REDACTED, "the model never sees the secret");
//! let denied = invoker.invoke(call("instance.get")).await;
//! assert_eq!(denied.error.unwrap().code, "tool_not_in_agent_scope");
//!
//! // The call and the denial are audited, with the caller, the tool and the arguments.
//! let trail = audit.events(&"acme".into());
//! assert_eq!(trail.len(), 2);
//! assert_eq!(trail[0].action, AuditAction::TOOL_INVOKED);
//! assert_eq!(trail[0].outcome, AuditOutcome::Success);
//! assert_eq!(trail[0].actor_id, "alice");
//! assert_eq!(trail[0].tool_name.as_deref(), Some("workflow.getDefinition"));
//! assert_eq!(trail[0].details["arguments"], json!({"id": "wf-1"}));
//! assert_eq!(trail[1].action, AuditAction::TOOL_DENIED);
//! assert_eq!(trail[1].outcome, AuditOutcome::Denied);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! **Orchestration.** The [`ChatOrchestrator`] is the
//! [`AiOrchestrator`](elsa_ai_abstractions::AiOrchestrator) behind `POST /ai/chat`: it picks
//! the agent, checks conversation ownership, resolves attachments through the
//! [`ContextResolver`] (one provider per attachment kind, see [`builtin_context_providers`]),
//! computes the authorized tool set and opens the provider session, all before anything
//! streams; then it runs the turn in a task of its own with the governor bound to it. Every
//! event is redacted, sequenced and journaled before clients see it, so a client can
//! [`resume`](elsa_ai_abstractions::AiOrchestrator::resume) from any sequence; a turn without
//! clients for longer than the grace window is cancelled. [`ConversationEvents`] lets the
//! proposal service publish onto a conversation's stream, [`RetentionSweeper`] expires old
//! conversations. (Providers that follow a script instead of a model are in `elsa-ai-scripted`.)
//!
//! ```
//! use std::sync::Arc;
//!
//! use elsa_ai_abstractions::*;
//! use elsa_ai_host::testing::governance::empty_services;
//! use elsa_ai_host::*;
//! use elsa_ai_scripted::{Script, ScriptedProvider};
//! use futures::StreamExt;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let services = empty_services(); // a real host passes its Elsa backend's stores
//! let redactor = Arc::new(Redactor::default()); // a real host registers its secrets in it
//! let audit: Arc<dyn AiAuditSink> = Arc::new(InMemoryAuditLog::new());
//! let journal = Arc::new(InMemoryStreamJournal::new());
//! let conversations = Arc::new(InMemoryConversationStore::with_journal(journal.clone()));
//! let core = HostCore::builder(redactor, audit).stores(conversations, journal).build();
//! let registry = Arc::new(ToolRegistry::builder().linked_tools()?.build(
//!     Arc::new(AgentRegistry::builtin()),
//!     Arc::new(InMemoryToolEnablementStore::new()),
//! ));
//! let governor = core.governor(registry, services.clone()).build();
//! let context = core
//!     .context_resolver()
//!     .providers(builtin_context_providers(
//!         services.definitions.clone(),
//!         services.instances.clone(),
//!         services.catalog.clone(),
//!     ))
//!     .build();
//! let provider = Arc::new(ScriptedProvider::new(Script::new().reply("Hello from the script.")));
//! let orchestrator = core.orchestrator(provider, governor, context).build();
//!
//! let caller = AiCaller::new("alice", "acme", [Permission::READ_WORKFLOWS]);
//! let chat = orchestrator
//!     .execute_chat(AiChatRequest {
//!         caller: caller.clone(),
//!         conversation_id: None,
//!         agent: None,
//!         message: "Hi! My password=hunter2".into(),
//!         attachments: Vec::new(),
//!     })
//!     .await?;
//! let conversation = chat.conversation_id.clone();
//! let events: Vec<AiStreamEvent> = chat.events.collect().await;
//! assert_eq!(events[0].event_type, AiStreamEventType::ConversationStarted);
//! assert_eq!(events[0].data["message"], "Hi! My password=[REDACTED]");
//! assert_eq!(events.last().unwrap().event_type, AiStreamEventType::ConversationCompleted);
//!
//! // A client that lost the stream reads it again from its last sequence.
//! let replay: Vec<AiStreamEvent> = orchestrator.resume(&caller, &conversation, 1).await?.events.collect().await;
//! assert_eq!(replay.len(), events.len() - 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! **Proposals.** AI-made workflow changes reach the workflow store only through the
//! [`ProposalService`], the one holder of a
//! [`WorkflowDefinitionWriter`](elsa_workflows::WorkflowDefinitionWriter). Proposal tools
//! submit drafts to it (it is the tools'
//! [`AiProposalIntake`](elsa_ai_abstractions::AiProposalIntake)); it redacts the rationale,
//! validates against the tenant's activity catalog (`Validated` or `Blocked`), diffs against
//! the baseline and stores the proposal with an expiry. People validate, approve, reject
//! (with a reason), apply and expire it ([`ProposalAction`]): each action is
//! permission-checked, tenant-scoped, refused with 409 naming the state when the state
//! machine does not allow it, audited before it takes effect, stored by a compare-and-set on
//! the proposal's revision, counted ([`ProposalCounters`]) and announced on the
//! conversation's stream. Apply re-checks the baseline (409 when stale) and validation (422,
//! `Blocked`) and claims the proposal before writing, so that it is applied at most once,
//! also across replicas sharing a store. [`InMemoryProposalStore`] is the development store.
//!
//! ```
//! use std::sync::Arc;
//!
//! use elsa_ai_abstractions::*;
//! use elsa_ai_host::*;
//! use elsa_workflows::{Activity, InMemoryWorkflowBackend, WorkflowDefinition, builtin_catalog};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let workflows = Arc::new(InMemoryWorkflowBackend::new()); // or the host's Elsa backend
//! workflows.set_catalog(&"acme".into(), builtin_catalog().to_vec());
//! let audit = Arc::new(InMemoryAuditLog::new());
//! let core = HostCore::builder(Arc::new(Redactor::default()), audit.clone()).build();
//! let proposals = core
//!     .proposals(
//!         Arc::new(InMemoryProposalStore::new()), // a durable store in production
//!         workflows.clone(), // definitions (baselines)
//!         workflows.clone(), // the writer apply uses
//!         workflows.clone(), // the activity catalog validation checks against
//!     )
//!     .build();
//!
//! let mut definition = WorkflowDefinition::new_flowchart("greeter", "Greeter");
//! definition.insert_activity(None, Activity::new("start1", "Elsa.Start"), None)?;
//! let draft = ProposalDraft {
//!     conversation_id: None,
//!     kind: ProposalKind::Create,
//!     baseline: None,
//!     definition,
//!     patch: None,
//!     rationale: "A greeter. (The password=hunter2 never reaches the store.)".into(),
//! };
//! let alice = AiCaller::new("alice", "acme", [Permission::PROPOSE_WORKFLOWS, Permission::APPLY_WORKFLOWS]);
//! let proposal = proposals.submit(&alice, draft).await?; // what a proposal tool calls
//! assert_eq!(proposal.status, ProposalStatus::Validated);
//! assert!(proposal.rationale.contains("password=[REDACTED]"));
//!
//! // Nothing is written before someone approves; the requester may approve, audited apart.
//! let early = proposals.apply(&alice, &proposal.id).await.unwrap_err();
//! assert_eq!((early.status(), early.code()), (409, "invalid_state"));
//! proposals.approve(&alice, &proposal.id).await?;
//! let applied = proposals.apply(&alice, &proposal.id).await?;
//! assert_eq!(applied.status, ProposalStatus::Applied);
//! assert_eq!(applied.applied_version.map(|v| v.version), Some(1));
//! let actions: Vec<String> =
//!     audit.events(&"acme".into()).iter().map(|e| e.action.as_str().to_owned()).collect();
//! assert_eq!(actions, ["proposal.created", "proposal.applied", "proposal.approved", "proposal.applied", "proposal.written"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod agents;
mod audit;
mod backoff;
mod clamp;
mod context;
mod conversation;
mod enablement;
mod governor;
mod host_core;
mod orchestrator;
mod proposals;
mod provider_router;
mod redaction;
mod registry;
mod retention;
mod stream;
mod telemetry;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

/// A map from names (tools, tenants) that every governed call looks up: foldhash hashes a
/// short name in a fraction of the instructions std's SipHash takes, and is still seeded at
/// random per process. Its entries come from configuration and administrators; names from a
/// model are only looked up.
type NameMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

pub use agents::{
    AgentRegistrationError, AgentRegistry, AgentRegistryBuilder, INSTANCE_DIAGNOSTICS,
    WORKFLOW_AUTHOR, WORKFLOW_OPERATOR, instance_diagnostics, workflow_author, workflow_operator,
};
pub use audit::{AuditTrail, InMemoryAuditLog};
pub use clamp::{Clamped, ResultClamp, json_size};
pub use context::{
    ActivitySelectionContext, AttachmentCandidate, AttachmentSearch, ContextRequest,
    ContextResolver, ContextResolverBuilder, DiagnosticsScopeContext, ResolvedContext,
    TenantContext, TimeRangeContext, WorkflowDefinitionContext, WorkflowInstanceContext,
    builtin_context_providers,
};
pub use conversation::{
    ConversationService, DeletedConversation, InMemoryConversationStore, TURN_STOP_WAIT,
    find_owned_conversation,
};
pub use enablement::{
    EnablementCaching, EnablementChange, EnablementDecisions, EnablementPolicy,
    InMemoryToolEnablementStore, ToolEnablementService,
};
pub use governor::{
    GovernanceStep, StepObserver, ToolCallScope, ToolEvent, ToolEventSink, ToolGovernor,
    ToolGovernorBuilder,
};
pub use host_core::{HostCore, HostCoreBuilder};
pub use orchestrator::{
    ChatOrchestrator, ChatOrchestratorBuilder, DEFAULT_TURN_LEASE, OrchestratorSettings,
    ProviderSessions, chat_span,
};
pub use proposals::{
    EXPIRY_ACTOR, InMemoryProposalStore, OperationServices, ProposalAction, ProposalService,
    ProposalServiceBuilder, ProposalSettings, TargetState,
};
pub use provider_router::{ProviderRouter, ProviderRouterBuilder};
pub use redaction::{
    REDACTED, Redacted, RedactingAuditSink, Redactor, RedactorBuilder, RedactorError,
};
pub use registry::{
    MAX_TOOL_NAME_LEN, RegisteredTool, ToolAvailability, ToolPolicy, ToolRegistrationError,
    ToolRegistry, ToolRegistryBuilder, ToolUnavailable, agent_names_tool, requires_tenant,
    tool_admits_agent,
};
pub use retention::{RetentionReport, RetentionSweeper};
pub use stream::{ConversationEvents, InMemoryStreamJournal};
pub use telemetry::{
    FIRST_EVENT_BUCKETS, MeasurementObserver, Metrics, ProposalCounters, ProposalCountersSnapshot,
    TokenCounters, TokenUsage, ToolCounters, ToolCountersSnapshot, TraceIdSource, TracedAuditSink,
    TurnCounters, TurnCountersSnapshot, UNRECOGNISED_TOOL, Untraced, tool_span,
};
