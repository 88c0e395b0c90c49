//! The policy layer of Weaver.
//!
//! **Governance.** Every tool a model may see or call passes through this crate. The
//! [`ToolRegistry`] collects the tools linked through `inventory` and those a host registers
//! in code, validates their metadata and lists only what a caller may call.
//! [`ToolEnablementService`] records administrators' enablement decisions. The
//! [`ToolGovernor`] is the [`AiProviderToolInvoker`](elsa_ai_abstractions::AiProviderToolInvoker)
//! a provider calls: the eleven steps of governed execution, in order, each a small type.
//! One [`Redactor`] redacts everything that crosses a boundary; [`ResultClamp`] keeps tool
//! results inside the model-context budget; [`AgentRegistry`] holds the least-privilege
//! agents; [`InMemoryAuditLog`] is the development audit trail; [`Metrics`] counts outcomes.

mod agents;
mod audit;
mod clamp;
mod enablement;
mod governor;
mod redaction;
mod registry;
mod telemetry;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use agents::{
    AgentRegistrationError, AgentRegistry, AgentRegistryBuilder, INSTANCE_DIAGNOSTICS,
    WORKFLOW_AUTHOR, instance_diagnostics, workflow_author,
};
pub use audit::InMemoryAuditLog;
pub use clamp::{Clamped, ResultClamp, json_size};
pub use enablement::{
    EnablementChange, EnablementDecisions, EnablementPolicy, InMemoryToolEnablementStore,
    ToolEnablementService,
};
pub use governor::{
    GovernanceStep, StepObserver, ToolCallScope, ToolEvent, ToolEventSink, ToolGovernor,
    ToolGovernorBuilder,
};
pub use redaction::{REDACTED, RedactingAuditSink, Redactor, RedactorBuilder, RedactorError};
pub use registry::{
    MAX_TOOL_NAME_LEN, RegisteredTool, ToolPolicy, ToolRegistrationError, ToolRegistry,
    ToolRegistryBuilder, agent_names_tool, requires_tenant, tool_admits_agent,
};
pub use telemetry::{Metrics, ToolCounters, ToolCountersSnapshot, tool_span};
