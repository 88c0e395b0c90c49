//! The audit trail: append-only records of everything governance decided.

use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_workflows::{Page, PageRequest, TenantId, TimeRange};
use serde::{Deserialize, Serialize};

use crate::{AiError, AuditEventId, ConversationId, ProposalId};

mod details;

pub use details::{AuditDetails, ToolCallDetails, ToolDenialDetails};

/// What an audit record is about, as a dotted name such as `tool.invoked`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AuditAction(Cow<'static, str>);

impl AuditAction {
    /// A user prompt entered a turn.
    pub const PROMPT_SUBMITTED: Self = Self::from_static("prompt.submitted");
    /// A provider session was opened.
    pub const SESSION_CREATED: Self = Self::from_static("session.created");
    /// A turn completed.
    pub const TURN_COMPLETED: Self = Self::from_static("turn.completed");
    /// A turn failed or was cancelled.
    pub const TURN_FAILED: Self = Self::from_static("turn.failed");
    /// An attachment was resolved into context.
    pub const CONTEXT_RESOLVED: Self = Self::from_static("context.resolved");
    /// An attachment was refused.
    pub const CONTEXT_DENIED: Self = Self::from_static("context.denied");
    /// A tool ran (successfully or not).
    pub const TOOL_INVOKED: Self = Self::from_static("tool.invoked");
    /// Governance refused a tool call.
    pub const TOOL_DENIED: Self = Self::from_static("tool.denied");
    /// A tool's enablement changed.
    pub const TOOL_ENABLEMENT_CHANGED: Self = Self::from_static("tool.enablement_changed");
    /// A proposal was created.
    pub const PROPOSAL_CREATED: Self = Self::from_static("proposal.created");
    /// A proposal was validated (passed or blocked).
    pub const PROPOSAL_VALIDATED: Self = Self::from_static("proposal.validated");
    /// A proposal was approved.
    pub const PROPOSAL_APPROVED: Self = Self::from_static("proposal.approved");
    /// A proposal was rejected.
    pub const PROPOSAL_REJECTED: Self = Self::from_static("proposal.rejected");
    /// A proposal was applied, or an apply was refused.
    pub const PROPOSAL_APPLIED: Self = Self::from_static("proposal.applied");
    /// An applied proposal's definition version was written (after the effect, naming the
    /// version the workflow store assigned; `proposal.applied` precedes the write).
    pub const PROPOSAL_WRITTEN: Self = Self::from_static("proposal.written");
    /// One target of an applied operation was acted on, skipped as stale or failed (one
    /// record per target, after its effect).
    pub const PROPOSAL_TARGET: Self = Self::from_static("proposal.target");
    /// A reviewer dropped targets from an operation proposal before approving it.
    pub const PROPOSAL_TARGETS_DROPPED: Self = Self::from_static("proposal.targets_dropped");
    /// A proposal expired.
    pub const PROPOSAL_EXPIRED: Self = Self::from_static("proposal.expired");
    /// A conversation was deleted, with its messages and stream journal (never its content).
    pub const CONVERSATION_DELETED: Self = Self::from_static("conversation.deleted");
    /// A conversation's owner set how long it is kept.
    pub const CONVERSATION_RETENTION_CHANGED: Self =
        Self::from_static("conversation.retention_changed");

    /// An action from a static name.
    pub const fn from_static(name: &'static str) -> Self {
        Self(Cow::Borrowed(name))
    }

    /// An action from a runtime name.
    pub fn new(name: impl Into<String>) -> Self {
        Self(Cow::Owned(name.into()))
    }

    /// The dotted name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// How the audited operation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum AuditOutcome {
    /// It succeeded.
    Success,
    /// It was attempted and failed.
    Failure,
    /// Governance refused it.
    Denied,
}

impl AuditOutcome {
    /// The outcome's name as it appears in JSON (`Success`, `Failure`, `Denied`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "Success",
            Self::Failure => "Failure",
            Self::Denied => "Denied",
        }
    }
}

/// One audit record. Every field has passed redaction before it reaches a sink.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiAuditEvent {
    /// The record id.
    pub id: AuditEventId,
    /// When it happened.
    pub timestamp: DateTime<Utc>,
    /// The tenant it happened in.
    pub tenant_id: TenantId,
    /// Who did it.
    pub actor_id: String,
    /// What it was.
    pub action: AuditAction,
    /// How it ended.
    pub outcome: AuditOutcome,
    /// The conversation, if any.
    pub conversation_id: Option<ConversationId>,
    /// The proposal, if any.
    pub proposal_id: Option<ProposalId>,
    /// The tool, if any (a governed call shares its name with the call's events).
    pub tool_name: Option<Arc<str>>,
    /// A one-line summary for people.
    pub summary: String,
    /// Structured details (redacted arguments, results, reasons).
    pub details: AuditDetails,
    /// The W3C trace id (32 lowercase hex digits) of the trace the record was made in, when
    /// the host traces its work (the chat turn's trace for everything a turn audits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

impl AiAuditEvent {
    /// A record stamped now with a fresh id and no details.
    pub fn new(
        tenant_id: TenantId,
        actor_id: impl Into<String>,
        action: AuditAction,
        outcome: AuditOutcome,
        summary: impl Into<String>,
    ) -> Self {
        Self {
            id: AuditEventId::generate(),
            timestamp: Utc::now(),
            tenant_id,
            actor_id: actor_id.into(),
            action,
            outcome,
            conversation_id: None,
            proposal_id: None,
            tool_name: None,
            summary: summary.into(),
            details: AuditDetails::default(),
            trace_id: None,
        }
    }
}

/// Filters for reading the audit trail.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditQuery {
    /// Only records of this conversation.
    pub conversation_id: Option<ConversationId>,
    /// Only records of this proposal.
    pub proposal_id: Option<ProposalId>,
    /// Only records of this actor.
    pub actor_id: Option<String>,
    /// Only records with this outcome.
    pub outcome: Option<AuditOutcome>,
    /// Only records made in this trace (a W3C trace id, 32 lowercase hex digits).
    #[serde(default)]
    pub trace_id: Option<String>,
    /// Only records inside this range.
    pub time_range: Option<TimeRange>,
    /// Paging; results are ordered newest first.
    pub page: PageRequest,
}

/// Where audit records go. Durable in production; a failure means the operation that
/// needed the record must fail too.
#[async_trait]
pub trait AiAuditSink: Send + Sync {
    /// Appends a record; returns only once the record is durable (or fails).
    async fn record(&self, event: AiAuditEvent) -> Result<(), AiError>;
}

/// Reads the audit trail back.
#[async_trait]
pub trait AiAuditLog: Send + Sync {
    /// The tenant's records matching the query, newest first.
    async fn query(
        &self,
        tenant_id: &TenantId,
        query: &AuditQuery,
    ) -> Result<Page<AiAuditEvent>, AiError>;
}
