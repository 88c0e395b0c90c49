//! Proposals: the one path by which AI-made workflow changes reach the workflow store.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_workflows::{
    DefinitionVersionRef, Diagnostic, GraphDiff, Page, PageRequest, TenantId, WorkflowDefinition,
    WorkflowStatus, WorkflowSubStatus,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AiCaller, AiError, ConversationId, Permission, ProposalId};

/// What a proposal does once applied: write a definition (create, update) or act on
/// existing instances or definitions (the operations).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ProposalKind {
    /// A new workflow definition.
    Create,
    /// A new version of an existing definition.
    Update,
    /// Run faulted instances again from their faulted activities.
    Retry,
    /// Cancel running instances.
    Cancel,
    /// Start finished instances again as new instances with the same input.
    Restart,
    /// Publish a definition's latest version.
    Publish,
    /// Make a definition's published version unpublished.
    Unpublish,
    /// Delete a definition with all its versions.
    Delete,
}

impl ProposalKind {
    /// Every kind, in declaration order (the API's order).
    pub const ALL: [Self; 8] = [
        Self::Create,
        Self::Update,
        Self::Retry,
        Self::Cancel,
        Self::Restart,
        Self::Publish,
        Self::Unpublish,
        Self::Delete,
    ];

    /// The kind's name as it appears in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "Create",
            Self::Update => "Update",
            Self::Retry => "Retry",
            Self::Cancel => "Cancel",
            Self::Restart => "Restart",
            Self::Publish => "Publish",
            Self::Unpublish => "Unpublish",
            Self::Delete => "Delete",
        }
    }

    /// Whether the proposal acts on existing objects ([`AiProposal::operation`]) rather than
    /// writing a definition ([`AiProposal::payload`]).
    pub fn is_operation(self) -> bool {
        !matches!(self, Self::Create | Self::Update)
    }

    /// Whether its targets are workflow instances (otherwise one definition).
    pub fn targets_instances(self) -> bool {
        matches!(self, Self::Retry | Self::Cancel | Self::Restart)
    }

    /// The permission an operation needs besides the proposal permissions, when it is
    /// proposed, approved and applied: `operate:workflow-instances` for instance
    /// operations, `publish:workflows` for publication and deletion.
    pub fn operation_permission(self) -> Option<Permission> {
        match self {
            Self::Create | Self::Update => None,
            Self::Retry | Self::Cancel | Self::Restart => {
                Some(Permission::OPERATE_WORKFLOW_INSTANCES)
            }
            Self::Publish | Self::Unpublish | Self::Delete => Some(Permission::PUBLISH_WORKFLOWS),
        }
    }

    /// The verb a reviewer reads ("retry", "publish", …).
    pub fn verb(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Update => "update",
            Self::Retry => "retry",
            Self::Cancel => "cancel",
            Self::Restart => "restart",
            Self::Publish => "publish",
            Self::Unpublish => "unpublish",
            Self::Delete => "delete",
        }
    }
}

/// The states of a proposal.
///
/// `Draft → Validated | Blocked`; `Validated → Approved | Rejected | Expired`;
/// `Blocked → Validated | Rejected | Expired`; `Approved → Applied | Blocked | Rejected | Expired`.
/// `Applied`, `Rejected` and `Expired` are final.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
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
    /// Create and update: the definition (and patch) to write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<ProposalPayload>,
    /// Operations: the targets, each with its state when proposed and, once applied, what
    /// happened to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<OperationPlan>,
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
    /// The definition version the apply wrote (create and update).
    pub applied_version: Option<DefinitionVersionRef>,
    /// After this instant the proposal expires.
    pub expires_at: Option<DateTime<Utc>>,
    /// Optimistic-concurrency counter, incremented by every saved change.
    pub revision: u64,
}

impl AiProposal {
    /// The workflow the proposal concerns (for an operation on instances of several
    /// workflows, the first target's).
    pub fn definition_id(&self) -> &str {
        if let Some(baseline) = &self.baseline {
            return &baseline.definition_id;
        }
        if let Some(payload) = &self.payload {
            return payload.definition.definition_id();
        }
        self.operation
            .as_ref()
            .and_then(|plan| plan.targets.first())
            .map_or("", |target| &target.definition_id)
    }

    /// The definition a create or update proposal would write.
    pub fn definition(&self) -> Option<&WorkflowDefinition> {
        self.payload.as_ref().map(|payload| &payload.definition)
    }
}

/// What an operation proposal acts on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationPlan {
    /// The instances (retry, cancel, restart) or the one definition (publish, unpublish,
    /// delete), each with its baseline state.
    pub targets: Vec<OperationTarget>,
    /// Delete: what the deletion removes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion: Option<DeletionImpact>,
}

/// One object an operation acts on, with the state it was in when proposed: at apply, a
/// target whose state changed since is skipped as stale, never acted on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationTarget {
    /// The instance id, or for definition operations the definition id.
    pub id: String,
    /// The definition (of the instance).
    pub definition_id: String,
    /// The definition version the instance runs, or the version published or targeted.
    pub version: i32,
    /// Instances: the status when proposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<WorkflowStatus>,
    /// Instances: the sub-status when proposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_status: Option<WorkflowSubStatus>,
    /// Definitions: the version that was published when proposed (none when none was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_version: Option<i32>,
    /// Definitions: the latest version when proposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_version: Option<i32>,
    /// Set by the apply: what happened to this target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<TargetOutcome>,
}

/// What applying an operation did to one target.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetOutcome {
    /// Done, stale or failed.
    pub result: TargetResult,
    /// Why it was skipped or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Restart: the new instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_instance_id: Option<String>,
}

/// The result for one target of an applied operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum TargetResult {
    /// The operation was carried out.
    Done,
    /// The target's state changed since the proposal; it was not acted on.
    Stale,
    /// The backend refused or failed the operation.
    Failed,
}

impl TargetResult {
    /// Every result, in declaration order.
    pub const ALL: [Self; 3] = [Self::Done, Self::Stale, Self::Failed];

    /// The result's name as it appears in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Done => "Done",
            Self::Stale => "Stale",
            Self::Failed => "Failed",
        }
    }
}

/// What deleting a definition removes, as found when proposed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletionImpact {
    /// Every version number the definition has.
    pub versions: Vec<i32>,
    /// The published version, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_version: Option<i32>,
    /// How many instances of the definition exist (deleting a definition deletes its
    /// instances).
    pub instance_count: u64,
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

/// What an operation tool hands over: the operation, the targets by id and why.
#[derive(Clone, Debug, PartialEq)]
pub struct OperationDraft {
    /// The conversation the draft came from.
    pub conversation_id: Option<ConversationId>,
    /// One of the operation kinds ([`ProposalKind::is_operation`]).
    pub kind: ProposalKind,
    /// Instance ids (retry, cancel, restart) or the one definition id (publish,
    /// unpublish, delete).
    pub targets: Vec<String>,
    /// Publish: the version to publish (it must be the latest; default the latest).
    pub version: Option<i32>,
    /// Why.
    pub rationale: String,
}

/// Where proposal tools submit drafts. The host's proposal service implements it.
#[async_trait]
pub trait AiProposalIntake: Send + Sync {
    /// Stores the draft as a proposal (validated, diffed, audited) and returns it.
    async fn submit(&self, caller: &AiCaller, draft: ProposalDraft) -> Result<AiProposal, AiError>;

    /// Stores an operation as a proposal after reading each target's current state (its
    /// baseline) and checking that the operation applies to it; returns it.
    async fn submit_operation(
        &self,
        caller: &AiCaller,
        draft: OperationDraft,
    ) -> Result<AiProposal, AiError>;
}
