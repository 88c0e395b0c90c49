//! Proposals: the one path by which AI-made workflow changes reach the workflow store.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_workflows::{
    DefinitionVersionRef, Diagnostic, GraphDiff, Page, PageRequest, TenantId, WorkflowDefinition,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AiCaller, AiError, ConversationId, ProposalId};

/// Whether a proposal creates a new definition or updates an existing one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ProposalKind {
    /// A new workflow definition.
    Create,
    /// A new version of an existing definition.
    Update,
}

/// The states of a proposal.
///
/// `Draft → Validated | Blocked`; `Validated → Approved | Rejected | Expired`;
/// `Blocked → Validated | Rejected | Expired`; `Approved → Applied | Blocked | Rejected | Expired`.
/// `Applied`, `Rejected` and `Expired` are final.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ProposalStatus {
    /// Created, not validated yet.
    Draft,
    /// Validation passed; awaiting review.
    Validated,
    /// Validation failed; cannot be approved until it passes.
    Blocked,
    /// A reviewer approved it; awaiting apply.
    Approved,
    /// A reviewer rejected it.
    Rejected,
    /// Written to the workflow store.
    Applied,
    /// Too old to act on.
    Expired,
}

impl ProposalStatus {
    /// Every state, in declaration order.
    pub const ALL: [Self; 7] = [
        Self::Draft,
        Self::Validated,
        Self::Blocked,
        Self::Approved,
        Self::Rejected,
        Self::Applied,
        Self::Expired,
    ];

    /// The state's name as it appears in JSON and error messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "Draft",
            Self::Validated => "Validated",
            Self::Blocked => "Blocked",
            Self::Approved => "Approved",
            Self::Rejected => "Rejected",
            Self::Applied => "Applied",
            Self::Expired => "Expired",
        }
    }

    /// Whether no further transition is possible.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Applied | Self::Rejected | Self::Expired)
    }
}

/// The definition version a proposal was made against.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BaselineRef {
    /// The definition id.
    pub definition_id: String,
    /// The version the change was based on.
    pub version: i32,
}

/// A proposal's structured payload: always a full definition, never free text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProposalPayload {
    /// The definition as it would be written.
    pub definition: WorkflowDefinition,
    /// For updates: the structured patch the definition was produced from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<Value>,
}

/// A reviewable workflow change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiProposal {
    /// The proposal id.
    pub id: ProposalId,
    /// The owning tenant.
    pub tenant_id: TenantId,
    /// The conversation it came from, if any.
    pub conversation_id: Option<ConversationId>,
    /// Create or update.
    pub kind: ProposalKind,
    /// The current state.
    pub status: ProposalStatus,
    /// For updates: the baseline the change was made against.
    pub baseline: Option<BaselineRef>,
    /// The definition (and patch) to write.
    pub payload: ProposalPayload,
    /// Why the change is proposed (redacted).
    pub rationale: String,
    /// Points a reviewer should notice.
    pub warnings: Vec<String>,
    /// The latest validation findings.
    pub diagnostics: Vec<Diagnostic>,
    /// Changes against the baseline (against an empty workflow for creates).
    pub graph_diff: GraphDiff,
    /// Who requested it.
    pub created_by: String,
    /// When it was requested.
    pub created_at: DateTime<Utc>,
    /// Who approved or rejected it.
    pub reviewed_by: Option<String>,
    /// When it was approved or rejected.
    pub reviewed_at: Option<DateTime<Utc>>,
    /// The reviewer's reason (required for rejections).
    pub review_reason: Option<String>,
    /// Who applied it. While the status is still `Approved`, who is applying it right now:
    /// the apply claim that keeps concurrent applies, rejections and expiry out.
    pub applied_by: Option<String>,
    /// When it was applied (while still `Approved`: when the apply claim was taken).
    pub applied_at: Option<DateTime<Utc>>,
    /// The definition version the apply wrote.
    pub applied_version: Option<DefinitionVersionRef>,
    /// After this instant the proposal expires.
    pub expires_at: Option<DateTime<Utc>>,
    /// Optimistic-concurrency counter, incremented by every saved change.
    pub revision: u64,
}

impl AiProposal {
    /// The workflow the proposal concerns.
    pub fn definition_id(&self) -> &str {
        match &self.baseline {
            Some(baseline) => &baseline.definition_id,
            None => self.payload.definition.definition_id(),
        }
    }
}

/// Filters for the review inbox.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProposalQuery {
    /// Only proposals in this state.
    pub status: Option<ProposalStatus>,
    /// Only proposals of this conversation.
    pub conversation_id: Option<ConversationId>,
    /// Only proposals about this definition.
    pub definition_id: Option<String>,
    /// Only proposals requested by this actor.
    pub created_by: Option<String>,
    /// Paging; results are ordered newest first.
    pub page: PageRequest,
}

/// Durable storage of proposals.
#[async_trait]
pub trait AiProposalStore: Send + Sync {
    /// The proposal, if it exists in this tenant.
    async fn find(
        &self,
        id: &ProposalId,
        tenant_id: &TenantId,
    ) -> Result<Option<AiProposal>, AiError>;

    /// Stores a new proposal; [`AiError::Conflict`] if the id exists.
    async fn save(&self, proposal: &AiProposal) -> Result<(), AiError>;

    /// Replaces a stored proposal only if its stored revision is still `expected_revision`
    /// (atomically, also across processes); [`AiError::Conflict`] otherwise, and
    /// [`AiError::NotFound`] when the tenant has no such proposal. The caller hands over the
    /// new state with `proposal.revision == expected_revision + 1`, which is stored as given.
    async fn update(&self, proposal: &AiProposal, expected_revision: u64) -> Result<(), AiError>;

    /// The tenant's proposals matching the query, newest first.
    async fn list(
        &self,
        tenant_id: &TenantId,
        query: &ProposalQuery,
    ) -> Result<Page<AiProposal>, AiError>;
}

/// What a proposal tool hands over: a structured change and its rationale.
#[derive(Clone, Debug, PartialEq)]
pub struct ProposalDraft {
    /// The conversation the draft came from.
    pub conversation_id: Option<ConversationId>,
    /// Create or update.
    pub kind: ProposalKind,
    /// For updates: the baseline.
    pub baseline: Option<BaselineRef>,
    /// The definition to write (for updates: already patched).
    pub definition: WorkflowDefinition,
    /// For updates: the patch the definition came from.
    pub patch: Option<Value>,
    /// Why.
    pub rationale: String,
}

/// Where proposal tools submit drafts. The host's proposal service implements it.
#[async_trait]
pub trait AiProposalIntake: Send + Sync {
    /// Stores the draft as a proposal (validated, diffed, audited) and returns it.
    async fn submit(&self, caller: &AiCaller, draft: ProposalDraft) -> Result<AiProposal, AiError>;
}
