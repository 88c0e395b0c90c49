//! Provider-neutral contracts of the Weaver AI copilot platform.
//!
//! This crate holds every trait and model the other Weaver crates share: the provider
//! boundary ([`AiProvider`], [`AiProviderEvent`]), the orchestrator and its stream
//! ([`AiOrchestrator`], [`AiStreamEvent`]), tools and the invoker through which a provider
//! runs them ([`AiTool`], [`AiToolRegistry`], [`AiProviderToolInvoker`]), context
//! attachments, agents, proposals, audit, conversations, enablement and the text redaction
//! a provider applies to what it logs ([`AiTextRedactor`]). It has no policy
//! and no I/O: `elsa-ai-host` implements the policy, `elsa-ai-store` the durable stores,
//! and providers such as `elsa-ai-copilot` the model runtimes.
//!
//! All traits are object-safe and `Send + Sync`, so hosts hold them as `Arc<dyn _>`.
//! Every error is an [`AiError`], whose variants are one-to-one with HTTP statuses.
//!
//! ```
//! use elsa_ai_abstractions::{AiCaller, AiError, AiToolResult, Permission};
//!
//! let caller = AiCaller::new("alice", "acme", [Permission::READ_WORKFLOWS]);
//! assert!(caller.has(&Permission::READ_WORKFLOWS));
//!
//! // A governance denial is a result the model can read, never a panic.
//! let denied = AiToolResult::denied(&AiError::forbidden("permission_denied", "needs admin:ai"));
//! assert!(denied.to_model_text().contains("permission_denied"));
//! ```
//!
//! # Writing a tool and a provider
//!
//! A tool is its metadata ([`AiToolDefinition`]) and an async `execute`. A provider runs a
//! turn: it offers the model only the turn's [`tools`](AiTurnRequest::tools), runs every
//! call through the [`AiProviderToolInvoker`] it is handed and reports what happens as
//! [`AiProviderEvent`]s, ending with `Completed` or `Failed`. The host's invoker is
//! `elsa-ai-host`'s `ToolGovernor` (permissions, schema validation, redaction, audit); in its
//! place, this example implements a minimal invoker that runs the tool it holds.
//!
//! ```
//! use std::sync::Arc;
//!
//! use async_trait::async_trait;
//! use elsa_ai_abstractions::*;
//! use elsa_workflows::InMemoryWorkflowBackend;
//! use futures::StreamExt;
//! use futures::stream::{self, BoxStream};
//! use serde_json::{Value, json};
//! use tokio_util::sync::CancellationToken;
//!
//! // A tool: counts the words of a text.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct CountWordsInput {
//!     /// The text to count.
//!     text: String,
//! }
//!
//! struct CountWords(AiToolDefinition);
//!
//! impl CountWords {
//!     fn new() -> Self {
//!         Self(AiToolDefinition {
//!             input_schema: AiToolDefinition::schema_for::<CountWordsInput>(),
//!             ..AiToolDefinition::read_only(
//!                 "text.countWords",
//!                 "Counts the words of a text.",
//!                 [Permission::READ_WORKFLOWS],
//!             )
//!         })
//!     }
//! }
//!
//! #[async_trait]
//! impl AiTool for CountWords {
//!     fn definition(&self) -> &AiToolDefinition {
//!         &self.0
//!     }
//!
//!     async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
//!         let input: CountWordsInput = context.arguments()?;
//!         Ok(json!({"words": input.text.split_whitespace().count()}))
//!     }
//! }
//!
//! // A provider: its "model" asks for `text.countWords` when the turn offers it, then streams
//! // an answer built from the result.
//! struct WordCounter;
//!
//! #[async_trait]
//! impl AiProvider for WordCounter {
//!     fn name(&self) -> &str {
//!         "word-counter"
//!     }
//!
//!     fn info(&self) -> AiProviderInfo {
//!         AiProviderInfo {
//!             name: self.name().into(),
//!             display_name: "Counts words (no model)".into(),
//!             model: None,
//!             scripted: true,
//!         }
//!     }
//!
//!     async fn create_session(
//!         &self,
//!         request: CreateAiSessionRequest,
//!     ) -> Result<AiSessionHandle, AiError> {
//!         Ok(AiSessionHandle {
//!             session_id: format!("word-counter-{}", request.conversation_id),
//!             provider: self.name().into(),
//!             conversation_id: request.conversation_id,
//!         })
//!     }
//!
//!     fn execute_turn(
//!         &self,
//!         request: AiTurnRequest,
//!         invoker: Arc<dyn AiProviderToolInvoker>,
//!     ) -> BoxStream<'static, AiProviderEvent> {
//!         if !request.tools.iter().any(|tool| tool.name == "text.countWords") {
//!             let error = AiError::forbidden("tool_not_offered", "countWords is not offered");
//!             return stream::iter([AiProviderEvent::Failed { error }]).boxed();
//!         }
//!         let call = AiProviderToolInvocation {
//!             call_id: "call-1".into(),
//!             tool_name: "text.countWords".into(),
//!             arguments: json!({"text": request.message}),
//!         };
//!         let started = AiProviderEvent::ToolStarted {
//!             call_id: call.call_id.clone(),
//!             tool_name: call.tool_name.clone(),
//!             arguments: call.arguments.clone(),
//!         };
//!         // Reported before the call runs; the rest follows once the invoker answers.
//!         let rest = stream::once(async move {
//!             let (call_id, tool_name) = (call.call_id.clone(), call.tool_name.clone());
//!             let result = invoker.invoke(call).await;
//!             let answer = match result.is_success() {
//!                 true => format!("Your message has {} words.", result.content["words"]),
//!                 false => format!("I could not count them: {}", result.to_model_text()),
//!             };
//!             let completed = AiProviderEvent::ToolCompleted { call_id, tool_name, result };
//!             let mut events = vec![completed];
//!             events.extend(answer.split_inclusive(' ').map(|word| {
//!                 AiProviderEvent::AssistantDelta { text: word.into() }
//!             }));
//!             events.push(AiProviderEvent::AssistantMessage { text: answer });
//!             events.push(AiProviderEvent::Completed);
//!             stream::iter(events)
//!         })
//!         .flatten();
//!         stream::iter([started]).chain(rest).boxed()
//!     }
//! }
//!
//! // The host's side, reduced to a minimum: an invoker bound to one caller that runs the
//! // tools it holds if the caller has their permissions.
//! struct MinimalInvoker {
//!     tools: Vec<Arc<dyn AiTool>>,
//!     caller: Arc<AiCaller>,
//!     services: Arc<AiToolServices>,
//! }
//!
//! #[async_trait]
//! impl AiProviderToolInvoker for MinimalInvoker {
//!     async fn invoke(&self, call: AiProviderToolInvocation) -> AiToolResult {
//!         let known = self.tools.iter().find(|t| t.definition().name == call.tool_name);
//!         let Some(tool) = known else {
//!             let error = AiError::not_found(format!("tool '{}'", call.tool_name));
//!             return AiToolResult::denied(&error);
//!         };
//!         if let Some(missing) = self.caller.missing(&tool.definition().permissions) {
//!             let error = AiError::forbidden("permission_denied", format!("needs '{missing}'"));
//!             return AiToolResult::denied(&error);
//!         }
//!         let context = AiToolExecutionContext {
//!             call_id: call.call_id.into(),
//!             caller: self.caller.clone(),
//!             agent: "assistant".into(),
//!             conversation_id: None,
//!             arguments: Arc::new(call.arguments),
//!             attachments: Vec::new(),
//!             services: self.services.clone(),
//!             cancellation: CancellationToken::new(),
//!             limits: GroundingLimits::default(),
//!         };
//!         match tool.execute(context).await {
//!             Ok(content) => AiToolResult::success(content),
//!             Err(error) => AiToolResult::error(&error),
//!         }
//!     }
//! }
//! # struct NoProposals;
//! # #[async_trait]
//! # impl AiProposalIntake for NoProposals {
//! #     async fn submit(&self, _: &AiCaller, _: ProposalDraft) -> Result<AiProposal, AiError> {
//! #         Err(AiError::forbidden("permission_denied", "this example takes no drafts"))
//! #     }
//! #     async fn submit_operation(
//! #         &self,
//! #         _: &AiCaller,
//! #         _: OperationDraft,
//! #     ) -> Result<AiProposal, AiError> {
//! #         Err(AiError::forbidden("permission_denied", "this example takes no drafts"))
//! #     }
//! # }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let caller = AiCaller::new("alice", "acme", [Permission::READ_WORKFLOWS]);
//! let agent = AiAgentDefinition::new("assistant", "Counts words.");
//! let tool: Arc<dyn AiTool> = Arc::new(CountWords::new());
//! // The data tools read (this one reads none); `NoProposals` refuses every draft.
//! let backend = Arc::new(InMemoryWorkflowBackend::new());
//! let services = Arc::new(AiToolServices {
//!     definitions: backend.clone(),
//!     instances: backend.clone(),
//!     executions: backend.clone(),
//!     incidents: backend.clone(),
//!     catalog: backend,
//!     proposals: Arc::new(NoProposals),
//! });
//! let invoker = Arc::new(MinimalInvoker {
//!     tools: vec![tool.clone()],
//!     caller: Arc::new(caller.clone()),
//!     services,
//! });
//!
//! let provider = WordCounter;
//! let session = provider
//!     .create_session(CreateAiSessionRequest {
//!         conversation_id: ConversationId::new("c1"),
//!         agent: agent.clone(),
//!         caller: caller.clone(),
//!     })
//!     .await?;
//! let turn = AiTurnRequest {
//!     session,
//!     agent,
//!     caller,
//!     message: "count these four words".into(),
//!     history: Vec::new(),
//!     context: Vec::new(),
//!     tools: vec![Arc::new(tool.definition().clone())],
//!     cancellation: CancellationToken::new(),
//! };
//! let events: Vec<AiProviderEvent> = provider.execute_turn(turn, invoker).collect().await;
//!
//! let AiProviderEvent::ToolStarted { tool_name, .. } = &events[0] else { panic!("{events:?}") };
//! assert_eq!(tool_name, "text.countWords");
//! let AiProviderEvent::ToolCompleted { result, .. } = &events[1] else { panic!("{events:?}") };
//! assert_eq!(result.content, json!({"words": 4}));
//! let streamed: String = events
//!     .iter()
//!     .filter_map(|event| match event {
//!         AiProviderEvent::AssistantDelta { text } => Some(text.as_str()),
//!         _ => None,
//!     })
//!     .collect();
//! assert_eq!(streamed, "Your message has 4 words.");
//! assert_eq!(events.last(), Some(&AiProviderEvent::Completed));
//! # Ok::<(), AiError>(())
//! # }).unwrap();
//! ```

mod agent;
mod audit;
mod clock;
mod context;
mod conversation;
mod enablement;
mod error;
pub mod function_names;
mod identity;
mod ids;
mod mcp;
mod model_schema;
mod proposal;
mod provider;
mod redaction;
mod stream;
mod tool;
mod turn_claims;

pub use agent::AiAgentDefinition;
pub use audit::{
    AiAuditEvent, AiAuditLog, AiAuditSink, AuditAction, AuditDetails, AuditOutcome, AuditQuery,
    ToolCallDetails, ToolDenialDetails,
};
pub use clock::{Clock, ManualClock, SystemClock};
pub use context::{
    AiContextAttachment, AiContextProvider, AiContextProviderFn, AiContextResolutionRequest,
    AiResolvedContext, AttachmentKind, ModuleAttachmentKind, context_provider_fn,
};
pub use conversation::{
    AiConversation, AiConversationStore, AiMessage, AiStreamJournal, AiToolMessage, MessageRole,
};
pub use enablement::{AiToolEnablementStore, ToolEnablement};
pub use error::{AiError, AiErrorBody};
pub use identity::{AiCaller, Permission};
pub use ids::{AuditEventId, ConversationId, ProposalId};
pub use mcp::{AiMcpServerRegistration, McpTransport};
pub use model_schema::{MODEL_SCHEMA_BUDGET, model_arguments, model_schema};
pub use proposal::{
    AiProposal, AiProposalIntake, AiProposalStore, BaselineRef, DeletionImpact, OperationDraft,
    OperationPlan, OperationTarget, ProposalDraft, ProposalKind, ProposalPayload, ProposalQuery,
    ProposalStatus, TargetOutcome, TargetResult,
};
pub use provider::{
    AiProvider, AiProviderEvent, AiProviderInfo, AiSessionHandle, AiTurnRequest,
    CreateAiSessionRequest,
};
pub use redaction::{AiTextRedactor, SecretValue, is_credential_name};
pub use stream::{
    AiChatRequest, AiChatStream, AiOrchestrator, AiStreamEvent, AiStreamEventType, StreamPayload,
};
pub use tool::{
    AiProviderToolInvocation, AiProviderToolInvoker, AiTool, AiToolDefinition, AiToolError,
    AiToolExecutionContext, AiToolFn, AiToolOutcome, AiToolQuery, AiToolRegistration,
    AiToolRegistry, AiToolResult, AiToolServices, AuditBehavior, DangerLevel, GroundingLimits,
    TenantBehavior, ToolMutability, ToolNaming, ToolSource, linked_tools, tool_fn,
};

/// Re-exported so that tool modules register with the same `inventory` this crate collects.
pub use inventory;
pub use turn_claims::{
    AiHeldClaim, AiTurnClaim, AiTurnClaims, TURN_CLAIM_LAPSED, TURN_IN_PROGRESS,
};
