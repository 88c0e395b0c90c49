//! The proposal lifecycle: the one path by which AI-made workflow changes reach the workflow
//! store.
//!
//! A proposal tool hands a structured draft to [`ProposalService::submit`] (the
//! [`AiProposalIntake`] of [`AiToolServices`](elsa_ai_abstractions::AiToolServices)). The
//! service redacts its rationale, validates the definition against the tenant's activity
//! catalog (`Validated`, or `Blocked` with diagnostics), computes the graph diff against the
//! baseline (or an empty workflow) and stores it with an expiry. People then act on it
//! ([`ProposalAction`]): validate again, approve, reject with a reason, apply, expire. Every
//! action checks permission and tenant, refuses what the current state does not allow (409
//! naming the state), is audited before it takes effect, is stored with a compare-and-set on
//! the proposal's revision, counts into [`Metrics::proposals`](crate::Metrics) and is
//! announced as `proposal.created` / `proposal.updated` on the conversation's stream.
//! See `apply.rs` for why a proposal is applied at most once.

mod apply;
mod create;
mod lifecycle;
mod operations;
mod record;
mod review;
mod store;
mod transition;

use std::sync::Arc;

use async_trait::async_trait;
use chrono::TimeDelta;
use elsa_ai_abstractions::{
    AiAuditSink, AiCaller, AiError, AiProposal, AiProposalIntake, AiProposalStore, Clock,
    ConversationId, OperationDraft, Permission, ProposalDraft, ProposalId, ProposalQuery,
    ProposalStatus,
};
use elsa_workflows::{
    ActivityCatalog, Page, PageRequest, TenantId, WorkflowDefinitionStore, WorkflowDefinitionWriter,
};
use parking_lot::RwLock;
use serde_json::json;

use crate::redaction::Redactor;
use crate::stream::ConversationEvents;
use crate::telemetry::Metrics;
pub use lifecycle::ProposalAction;
pub use operations::{OperationServices, TargetState};
use record::{Actor, Note};
pub use store::InMemoryProposalStore;

/// The actor id the service records for expiries it decides itself (the sweep, or an action
/// that finds its proposal past `expires_at`).
pub const EXPIRY_ACTOR: &str = "system:proposal-expiry";

/// How the proposal service is tuned; every value has a default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProposalSettings {
    /// How long a new proposal stays actionable; `None` keeps it until someone acts.
    pub ttl: Option<TimeDelta>,
    /// How long an apply may hold its claim on a proposal before another apply, a rejection
    /// or the expiry may take over (only a crashed apply holds one that long).
    pub claim_timeout: TimeDelta,
    /// How many instances one operation proposal may target.
    pub max_targets: usize,
}

impl Default for ProposalSettings {
    fn default() -> Self {
        Self {
            ttl: Some(TimeDelta::days(7)),
            claim_timeout: TimeDelta::minutes(5),
            max_targets: 100,
        }
    }
}

/// Builds a [`ProposalService`].
pub struct ProposalServiceBuilder {
    inner: Inner,
}

impl std::fmt::Debug for ProposalServiceBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProposalServiceBuilder")
            .field("settings", &self.inner.settings)
            .finish_non_exhaustive()
    }
}

impl ProposalServiceBuilder {
    /// Counts transitions into `metrics` (default: the service's own counters).
    pub fn metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.inner.metrics = metrics;
        self
    }

    /// All settings at once.
    pub fn settings(mut self, settings: ProposalSettings) -> Self {
        self.inner.settings = settings;
        self
    }

    /// How long new proposals stay actionable (`None`: no expiry; default 7 days).
    pub fn ttl(mut self, ttl: Option<TimeDelta>) -> Self {
        self.inner.settings.ttl = ttl;
        self
    }

    /// Publishes `proposal.*` events through `events` from the start (see
    /// [`ProposalService::publish_events_to`] for hosts that get the handle later).
    pub fn events(self, events: ConversationEvents) -> Self {
        *self.inner.events.write() = Some(events);
        self
    }

    /// How many instances one operation proposal may target (default 100).
    pub fn max_targets(mut self, max: usize) -> Self {
        self.inner.settings.max_targets = max.max(1);
        self
    }

    /// Lets the service propose and apply operations (retry, cancel, restart, publish,
    /// unpublish, delete) through `services`. Without them, operation drafts are refused
    /// with 503 `operations_unavailable`.
    pub fn operations(mut self, services: OperationServices) -> Self {
        self.inner.operations = Some(services);
        self
    }

    /// The service.
    pub fn build(self) -> ProposalService {
        ProposalService {
            inner: Arc::new(self.inner),
        }
    }
}

/// The proposal lifecycle of SPEC §5: create, validate, approve, reject, apply, expire, and
/// the review inbox. Cheap to clone (shared); the only holder of a
/// [`WorkflowDefinitionWriter`] in Weaver.
///
/// Permissions: creating and validating need `propose:workflows`; approving, rejecting,
/// applying and expiring need `apply:workflows`; reading needs either. The same caller may
/// request, approve and apply: each is an explicit action with its own audit record.
/// Another tenant's proposal is 404 `proposal_not_found`, exactly like a missing one.
///
/// Hosts build it before the orchestrator, because proposal tools submit through it (as
/// [`AiToolServices::proposals`](elsa_ai_abstractions::AiToolServices)), and then connect it
/// to the orchestrator's streams with
/// [`publish_events_to`](Self::publish_events_to)`(orchestrator.events())`. The crate docs
/// show the lifecycle end to end.
#[derive(Clone)]
pub struct ProposalService {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    proposals: Arc<dyn AiProposalStore>,
    definitions: Arc<dyn WorkflowDefinitionStore>,
    writer: Arc<dyn WorkflowDefinitionWriter>,
    catalog: Arc<dyn ActivityCatalog>,
    audit: Arc<dyn AiAuditSink>,
    redactor: Arc<Redactor>,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    settings: ProposalSettings,
    operations: Option<OperationServices>,
    events: RwLock<Option<ConversationEvents>>,
}

impl std::fmt::Debug for ProposalService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProposalService")
            .field("settings", &self.inner.settings)
            .finish_non_exhaustive()
    }
}

impl ProposalService {
    /// A builder over the proposal store, the workflow services (definitions to read
    /// baselines, the writer that applies, the activity catalog that validation checks
    /// against) and what the host core shares; hosts call
    /// [`HostCore::proposals`](crate::HostCore::proposals).
    pub(crate) fn builder(
        proposals: Arc<dyn AiProposalStore>,
        definitions: Arc<dyn WorkflowDefinitionStore>,
        writer: Arc<dyn WorkflowDefinitionWriter>,
        catalog: Arc<dyn ActivityCatalog>,
        audit: Arc<dyn AiAuditSink>,
        redactor: Arc<Redactor>,
        clock: Arc<dyn Clock>,
    ) -> ProposalServiceBuilder {
        ProposalServiceBuilder {
            inner: Inner {
                proposals,
                definitions,
                writer,
                catalog,
                audit,
                redactor,
                clock,
                metrics: Arc::new(Metrics::new()),
                settings: ProposalSettings::default(),
                operations: None,
                events: RwLock::new(None),
            },
        }
    }

    /// Publishes `proposal.created` / `proposal.updated` through `events` from now on
    /// (replacing any earlier handle). The orchestrator that supplies the handle needs the
    /// service first, for its tools; without a handle no stream event is published.
    pub fn publish_events_to(&self, events: ConversationEvents) {
        *self.inner.events.write() = Some(events);
    }

    /// The counters the service increments.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.inner.metrics
    }

    /// The settings in force.
    pub fn settings(&self) -> &ProposalSettings {
        &self.inner.settings
    }

    /// Stores a draft as a new proposal, `Validated` or `Blocked`, and returns it.
    ///
    /// Errors: 403 `permission_denied` without `propose:workflows`; 400 when the draft's
    /// kind, baseline and definition do not fit together; 404 `baseline_not_found` when the
    /// baseline version does not exist in the caller's tenant; 500 `audit_failed`.
    pub async fn create(
        &self,
        caller: &AiCaller,
        draft: ProposalDraft,
    ) -> Result<AiProposal, AiError> {
        self.inner.create(caller, draft).await
    }

    /// The proposal, if the caller may read proposals and it belongs to their tenant.
    pub async fn find(&self, caller: &AiCaller, id: &ProposalId) -> Result<AiProposal, AiError> {
        require_reader(caller)?;
        self.inner.load(&caller.tenant_id, id).await
    }

    /// The review actions (approve, reject, apply, and for instance operations with more
    /// than one target dropTargets) `caller` could take on `proposal` now: the permissions
    /// held (an operation's own included), the state allowing it, not past its expiry and no
    /// apply under way. What a client offers as buttons; the action itself checks everything again.
    pub fn allowed_actions(&self, caller: &AiCaller, proposal: &AiProposal) -> Vec<ProposalAction> {
        let now = self.inner.clock.now();
        let open = caller.tenant_id == proposal.tenant_id
            && proposal.expires_at.is_none_or(|at| now < at)
            && self.inner.live_claim(proposal, now).is_none();
        let operation_allowed = proposal
            .kind
            .operation_permission()
            .is_none_or(|permission| caller.has(&permission));
        let droppable = proposal.kind.targets_instances()
            && proposal
                .operation
                .as_ref()
                .is_some_and(|plan| plan.targets.len() > 1);
        [
            ProposalAction::Approve,
            ProposalAction::Reject,
            ProposalAction::Apply,
            ProposalAction::DropTargets,
        ]
        .into_iter()
        .filter(|action| {
            open && caller.has(&action.permission())
                && action.is_allowed_from(proposal.status)
                && (*action == ProposalAction::Reject || operation_allowed)
                && (*action != ProposalAction::DropTargets || droppable)
        })
        .collect()
    }

    /// The caller's tenant's proposals matching `query`, newest first (the review inbox).
    pub async fn list(
        &self,
        caller: &AiCaller,
        query: &ProposalQuery,
    ) -> Result<Page<AiProposal>, AiError> {
        require_reader(caller)?;
        self.inner.proposals.list(&caller.tenant_id, query).await
    }

    /// Validates a `Draft` or `Blocked` proposal again against the tenant's current activity
    /// catalog: `Validated` when it passes, `Blocked` with the diagnostics otherwise.
    pub async fn validate(
        &self,
        caller: &AiCaller,
        id: &ProposalId,
    ) -> Result<AiProposal, AiError> {
        let action = ProposalAction::Validate;
        let actor = Actor::of(caller);
        self.inner.authorize(caller, id, action).await?;
        let current = self.inner.load_for(actor, id, action).await?;
        // Operations are Validated from the start and never reach a state Validate leaves.
        let Some(definition) = current.definition() else {
            return Err(invalid_state(action, &current));
        };
        let review = self
            .inner
            .review(
                &current.tenant_id,
                current.baseline.as_ref(),
                definition,
                false,
            )
            .await?;
        let mut next = current.clone();
        next.status = review.status();
        next.warnings = review.warnings;
        next.diagnostics = review.diagnostics;
        if let Some(diff) = review.graph_diff {
            next.graph_diff = diff;
        }
        next.revision += 1;
        let summary = format!(
            "{} validated proposal '{}': {}",
            caller.actor_id,
            current.id,
            next.status.as_str()
        );
        let errors = next.diagnostics.iter().filter(|d| d.is_error()).count();
        self.inner
            .commit(
                actor,
                action,
                &current,
                next,
                Note::success(summary, json!({"errors": errors})),
            )
            .await
    }

    /// Approves a `Validated` proposal; the caller becomes its reviewer.
    pub async fn approve(&self, caller: &AiCaller, id: &ProposalId) -> Result<AiProposal, AiError> {
        let action = ProposalAction::Approve;
        let actor = Actor::of(caller);
        self.inner.authorize(caller, id, action).await?;
        let current = self.inner.load_for(actor, id, action).await?;
        self.inner
            .authorize_operation(caller, &current, action)
            .await?;
        let mut next = current.clone();
        next.status = ProposalStatus::Approved;
        next.reviewed_by = Some(caller.actor_id.clone());
        next.reviewed_at = Some(self.inner.clock.now());
        next.review_reason = None;
        next.revision += 1;
        let summary = format!("{} approved proposal '{}'", caller.actor_id, current.id);
        self.inner
            .commit(
                actor,
                action,
                &current,
                next,
                Note::success(summary, json!({})),
            )
            .await
    }

    /// Rejects a `Validated`, `Blocked` or `Approved` proposal; `reason` is required (400
    /// `reason_required` when blank) and is stored redacted.
    pub async fn reject(
        &self,
        caller: &AiCaller,
        id: &ProposalId,
        reason: &str,
    ) -> Result<AiProposal, AiError> {
        let action = ProposalAction::Reject;
        let actor = Actor::of(caller);
        self.inner.authorize(caller, id, action).await?;
        if reason.trim().is_empty() {
            let error = AiError::bad_request(
                "reason_required",
                "a rejection needs a reason for the requester",
            );
            return Err(self.inner.refuse(actor, action, id.into(), error).await);
        }
        let current = self.inner.load_for(actor, id, action).await?;
        let reason = self.inner.redactor.redact_str(reason.trim()).into_owned();
        let mut next = current.clone();
        next.status = ProposalStatus::Rejected;
        next.reviewed_by = Some(caller.actor_id.clone());
        next.reviewed_at = Some(self.inner.clock.now());
        next.review_reason = Some(reason.clone());
        release_claim(&mut next);
        next.revision += 1;
        let summary = format!(
            "{} rejected proposal '{}': {reason}",
            caller.actor_id, current.id
        );
        self.inner
            .commit(
                actor,
                action,
                &current,
                next,
                Note::success(summary, json!({"reason": reason})),
            )
            .await
    }

    /// Applies an `Approved` proposal: see `apply.rs` for the checks, their order and why a
    /// proposal is applied at most once. Returns the `Applied` proposal with the written
    /// version in `applied_version`.
    ///
    /// Errors: 403 without `apply:workflows`; 404 for a missing or another tenant's
    /// proposal; 409 `invalid_state` unless `Approved`, 409 `apply_in_progress` /
    /// `concurrent_update` when another action holds or changed it, 409 `stale_baseline`
    /// (`definition_exists` for creations) when the workflow moved on (nothing written,
    /// status unchanged); 422 `validation_failed` with the diagnostics when validation fails
    /// now (nothing written, status `Blocked`); 500 `audit_failed`.
    pub async fn apply(&self, caller: &AiCaller, id: &ProposalId) -> Result<AiProposal, AiError> {
        self.inner.apply(caller, id).await
    }

    /// Stores an operation (retry, cancel, restart, publish, unpublish, delete) as a
    /// `Validated` proposal after reading each target's state (its baseline) and checking
    /// that the operation applies to it.
    ///
    /// Errors: 403 without `propose:workflows` and the kind's permission; 400 for no
    /// targets, too many, or several definitions; 404 `instance_not_found` /
    /// `definition_not_found` for a target the caller may not read or that is not in their
    /// tenant; 409 when the operation does not apply to a target's state
    /// (`instance_not_faulted`, `instance_finished`, `instance_running`,
    /// `already_published`, `version_not_latest`, `not_published`); 503
    /// `operations_unavailable` when the host wired no operation services.
    pub async fn create_operation(
        &self,
        caller: &AiCaller,
        draft: OperationDraft,
    ) -> Result<AiProposal, AiError> {
        self.inner.create_operation(caller, draft).await
    }

    /// Removes `targets` from a `Validated` instance operation (a new revision, audited);
    /// at least one target must remain (400 `targets_required`), and every id must be one
    /// of its targets (400 `unknown_target`).
    pub async fn drop_targets(
        &self,
        caller: &AiCaller,
        id: &ProposalId,
        targets: &[String],
    ) -> Result<AiProposal, AiError> {
        self.inner.drop_targets(caller, id, targets).await
    }

    /// The current state of each of an operation proposal's targets, in its order, for a
    /// reviewer to compare with the state at proposal time (empty for other kinds).
    pub async fn target_states(
        &self,
        caller: &AiCaller,
        proposal: &AiProposal,
    ) -> Result<Vec<TargetState>, AiError> {
        require_reader(caller)?;
        self.inner.target_states(proposal).await
    }

    /// Expires a `Validated`, `Blocked` or `Approved` proposal now, whatever its
    /// `expires_at`.
    pub async fn expire(&self, caller: &AiCaller, id: &ProposalId) -> Result<AiProposal, AiError> {
        let action = ProposalAction::Expire;
        let actor = Actor::of(caller);
        self.inner.authorize(caller, id, action).await?;
        let current = self.inner.load_for(actor, id, action).await?;
        self.inner.expire_as(actor, &current).await
    }

    /// Expires every proposal of `tenant_id` past its `expires_at` (the periodic sweep);
    /// returns how many. Proposals another action changes meanwhile are left to it. Actions
    /// expire a due proposal themselves too, so a late sweep never lets one be acted on.
    pub async fn expire_due(&self, tenant_id: &TenantId) -> Result<usize, AiError> {
        self.inner.expire_due(tenant_id).await
    }
}

#[async_trait]
impl AiProposalIntake for ProposalService {
    async fn submit(&self, caller: &AiCaller, draft: ProposalDraft) -> Result<AiProposal, AiError> {
        self.create(caller, draft).await
    }

    async fn submit_operation(
        &self,
        caller: &AiCaller,
        draft: OperationDraft,
    ) -> Result<AiProposal, AiError> {
        self.create_operation(caller, draft).await
    }
}

impl ProposalService {
    /// The ids of the tenant's proposals made in the conversation.
    pub(crate) async fn of_conversation(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
    ) -> Result<Vec<ProposalId>, AiError> {
        let mut ids = Vec::new();
        let mut offset = 0;
        loop {
            let query = ProposalQuery {
                conversation_id: Some(conversation_id.clone()),
                page: PageRequest::new(offset, PageRequest::MAX_LIMIT),
                ..ProposalQuery::default()
            };
            let page = self.inner.proposals.list(tenant_id, &query).await?;
            let (more, read) = (page.has_more(), page.items.len());
            offset += read;
            ids.extend(page.items.into_iter().map(|p| p.id));
            if !more || read == 0 {
                return Ok(ids);
            }
        }
    }

    /// Removes the link of each of `ids` to its conversation (a deleted conversation's
    /// proposals stay, as the record a person reviews, without a way back to its text). A
    /// proposal another action changes meanwhile is read again and unlinked after it.
    pub(crate) async fn unlink_conversation(
        &self,
        tenant_id: &TenantId,
        ids: &[ProposalId],
    ) -> Result<(), AiError> {
        /// How often a proposal changed by someone else in between is read again.
        const ATTEMPTS: usize = 5;
        for id in ids {
            for attempt in 1..=ATTEMPTS {
                let Some(current) = self.inner.proposals.find(id, tenant_id).await? else {
                    break;
                };
                if current.conversation_id.is_none() {
                    break;
                }
                let mut unlinked = current.clone();
                unlinked.conversation_id = None;
                unlinked.revision += 1;
                match self
                    .inner
                    .proposals
                    .update(&unlinked, current.revision)
                    .await
                {
                    Ok(()) => break,
                    Err(AiError::Conflict { .. }) if attempt < ATTEMPTS => {}
                    Err(error) => return Err(error),
                }
            }
        }
        Ok(())
    }
}

fn require(caller: &AiCaller, permission: &Permission) -> Result<(), AiError> {
    caller.require(permission, "this proposal action")
}

fn require_reader(caller: &AiCaller) -> Result<(), AiError> {
    if caller.has(&Permission::PROPOSE_WORKFLOWS) || caller.has(&Permission::APPLY_WORKFLOWS) {
        Ok(())
    } else {
        Err(AiError::forbidden(
            "permission_denied",
            format!(
                "reading proposals needs '{}' or '{}'",
                Permission::PROPOSE_WORKFLOWS,
                Permission::APPLY_WORKFLOWS
            ),
        ))
    }
}

/// The 404 for a proposal the caller may not see (missing or another tenant's).
fn proposal_not_found(id: &ProposalId) -> AiError {
    AiError::NotFound {
        code: "proposal_not_found".into(),
        message: format!("proposal '{id}' not found"),
    }
}

/// The 409 for an action the current state does not allow.
fn invalid_state(action: ProposalAction, proposal: &AiProposal) -> AiError {
    AiError::invalid_state(
        proposal.status.as_str(),
        format!(
            "cannot {} proposal '{}': it is {}",
            action.as_str(),
            proposal.id,
            proposal.status.as_str()
        ),
    )
}

/// Clears an apply claim (a crashed apply's, taken over after the claim timeout).
fn release_claim(proposal: &mut AiProposal) {
    if proposal.applied_version.is_none() {
        proposal.applied_by = None;
        proposal.applied_at = None;
    }
}
