//! The policy layer of Weaver.
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
//! counts outcomes and [`tool_span`] traces calls with the OpenTelemetry GenAI names.
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
//! // A real host passes its Elsa backend's stores and its proposal service here.
//! let governor = ToolGovernor::builder(registry.clone(), empty_services(), audit.clone()).build();
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
//! assert_eq!(result.content["connectionString"], REDACTED);
//! let denied = invoker.invoke(call("instance.get")).await;
//! assert_eq!(denied.error.unwrap().code, "tool_not_in_agent_scope");
//! assert_eq!(audit.events(&"acme".into()).len(), 2, "the call and the denial are audited");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod agents;
mod audit;
mod clamp;
mod context;
mod conversation;
mod enablement;
mod governor;
mod orchestrator;
mod redaction;
mod registry;
mod retention;
mod scripted;
mod stream;
mod telemetry;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use agents::{
    AgentRegistrationError, AgentRegistry, AgentRegistryBuilder, INSTANCE_DIAGNOSTICS,
    WORKFLOW_AUTHOR, instance_diagnostics, workflow_author,
};
pub use audit::InMemoryAuditLog;
pub use clamp::{Clamped, ResultClamp, json_size};
pub use context::{
    ActivitySelectionContext, ContextRequest, ContextResolver, ContextResolverBuilder,
    DiagnosticsScopeContext, TenantContext, TimeRangeContext, WorkflowDefinitionContext,
    WorkflowInstanceContext, builtin_context_providers,
};
pub use conversation::{InMemoryConversationStore, find_owned_conversation};
pub use enablement::{
    EnablementChange, EnablementDecisions, EnablementPolicy, InMemoryToolEnablementStore,
    ToolEnablementService,
};
pub use governor::{
    GovernanceStep, StepObserver, ToolCallScope, ToolEvent, ToolEventSink, ToolGovernor,
    ToolGovernorBuilder,
};
pub use orchestrator::{
    ChatOrchestrator, ChatOrchestratorBuilder, OrchestratorSettings, ProviderSessions, chat_span,
};
pub use redaction::{REDACTED, RedactingAuditSink, Redactor, RedactorBuilder, RedactorError};
pub use registry::{
    MAX_TOOL_NAME_LEN, RegisteredTool, ToolPolicy, ToolRegistrationError, ToolRegistry,
    ToolRegistryBuilder, agent_names_tool, requires_tenant, tool_admits_agent,
};
pub use retention::{RetentionReport, RetentionSweeper};
pub use scripted::{
    CompletedToolCall, ComputedStep, Script, ScriptStep, ScriptedProvider, ScriptedToolCall,
    TurnSoFar,
};
pub use stream::{ConversationEvents, InMemoryStreamJournal};
pub use telemetry::{Metrics, ToolCounters, ToolCountersSnapshot, tool_span};
