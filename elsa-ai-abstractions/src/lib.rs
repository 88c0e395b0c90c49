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
pub use stream::{AiChatRequest, AiChatStream, AiOrchestrator, AiStreamEvent, AiStreamEventType};
pub use tool::{
    AiProviderToolInvocation, AiProviderToolInvoker, AiTool, AiToolDefinition, AiToolError,
    AiToolExecutionContext, AiToolFn, AiToolOutcome, AiToolQuery, AiToolRegistration,
    AiToolRegistry, AiToolResult, AiToolServices, AuditBehavior, DangerLevel, GroundingLimits,
    TenantBehavior, ToolMutability, ToolNaming, ToolSource, linked_tools, tool_fn,
};

pub use inventory;
/// Re-exported so that tool modules register with the same `inventory` this crate collects.
pub use turn_claims::{
    AiHeldClaim, AiTurnClaim, AiTurnClaims, TURN_CLAIM_LAPSED, TURN_IN_PROGRESS,
};
