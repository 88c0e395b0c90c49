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
mod lifecycle;
mod record;
mod review;
mod store;

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};
use elsa_ai_abstractions::{
    AiAuditSink, AiCaller, AiError, AiProposal, AiProposalIntake, AiProposalStore,
    AiStreamEventType, AuditAction, AuditOutcome, BaselineRef, Clock, Permission, ProposalDraft,
    ProposalId, ProposalKind, ProposalPayload, ProposalQuery, ProposalStatus,
};
use elsa_workflows::{
    ActivityCatalog, Diagnostic, GraphDiff, Page, PageRequest, TenantId, VersionOptions,
    WorkflowDefinition, WorkflowDefinitionStore, WorkflowDefinitionWriter,
};
use parking_lot::RwLock;
use serde_json::json;

use crate::{ConversationEvents, Metrics, Redactor};
pub use lifecycle::ProposalAction;
use record::{Actor, Note, definition_digest, transition_details};
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
}

impl Default for ProposalSettings {
    fn default() -> Self {
        Self {
            ttl: Some(TimeDelta::days(7)),
            claim_timeout: TimeDelta::minutes(5),
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

    /// The review actions (approve, reject, apply) `caller` could take on `proposal` now:
    /// the permission held, the state allowing it, not past its expiry and no apply under
    /// way. What a client offers as buttons; the action itself checks everything again.
    pub fn allowed_actions(&self, caller: &AiCaller, proposal: &AiProposal) -> Vec<ProposalAction> {
        let now = self.inner.clock.now();
        let open = caller.tenant_id == proposal.tenant_id
            && proposal.expires_at.is_none_or(|at| now < at)
            && self.inner.live_claim(proposal, now).is_none();
        [
            ProposalAction::Approve,
            ProposalAction::Reject,
            ProposalAction::Apply,
        ]
        .into_iter()
        .filter(|action| {
            open && caller.has(&action.permission()) && action.is_allowed_from(proposal.status)
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
        let review = self
            .inner
            .review(
                &current.tenant_id,
                current.baseline.as_ref(),
                &current.payload.definition,
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

/// What reviewing a definition found.
struct Review {
    diagnostics: Vec<Diagnostic>,
    warnings: Vec<String>,
    /// `None` when the baseline could not be read again (the stored diff stays).
    graph_diff: Option<GraphDiff>,
}

impl Review {
    fn status(&self) -> ProposalStatus {
        if review::is_blocking(&self.diagnostics) {
            ProposalStatus::Blocked
        } else {
            ProposalStatus::Validated
        }
    }
}

impl<'a> Actor<'a> {
    fn of(caller: &'a AiCaller) -> Self {
        Self {
            id: &caller.actor_id,
            tenant_id: &caller.tenant_id,
        }
    }
}

impl Inner {
    async fn create(&self, caller: &AiCaller, draft: ProposalDraft) -> Result<AiProposal, AiError> {
        let actor = Actor::of(caller);
        let id = ProposalId::generate();
        let audit_action = AuditAction::PROPOSAL_CREATED;
        if let Err(error) = require(caller, &Permission::PROPOSE_WORKFLOWS) {
            return Err(self.refuse_creation(actor, &id, error).await);
        }
        if let Err(error) = check_draft(&draft) {
            return Err(self.refuse_creation(actor, &id, error).await);
        }
        let review = match self
            .review(
                &caller.tenant_id,
                draft.baseline.as_ref(),
                &draft.definition,
                true,
            )
            .await
        {
            Ok(review) => review,
            Err(error) if error.status() == 404 => {
                return Err(self.refuse_creation(actor, &id, error).await);
            }
            Err(error) => return Err(error),
        };
        let now = self.clock.now();
        let proposal = AiProposal {
            id: id.clone(),
            tenant_id: caller.tenant_id.clone(),
            conversation_id: draft.conversation_id,
            kind: draft.kind,
            status: review.status(),
            baseline: draft.baseline,
            payload: ProposalPayload {
                definition: draft.definition,
                patch: draft.patch,
            },
            rationale: self.redactor.redact_str(&draft.rationale).into_owned(),
            warnings: review.warnings,
            diagnostics: review.diagnostics,
            graph_diff: review.graph_diff.unwrap_or_default(),
            created_by: caller.actor_id.clone(),
            created_at: now,
            reviewed_by: None,
            reviewed_at: None,
            review_reason: None,
            applied_by: None,
            applied_at: None,
            applied_version: None,
            expires_at: self.settings.ttl.map(|ttl| now + ttl),
            revision: 0,
        };
        let summary = format!(
            "{} proposed {} workflow '{}' ({})",
            caller.actor_id,
            match proposal.kind {
                ProposalKind::Create => "creating",
                ProposalKind::Update => "updating",
            },
            proposal.definition_id(),
            proposal.status.as_str()
        );
        let details = transition_details(
            "create",
            None,
            proposal.status,
            &proposal,
            json!({
                "rationale": proposal.rationale,
                "warnings": proposal.warnings,
                "errors": proposal.diagnostics.iter().filter(|d| d.is_error()).count(),
                "expiresAt": proposal.expires_at,
                "graphDiff": proposal.graph_diff,
                "definitionDigest": definition_digest(&proposal),
            }),
        );
        self.audit(
            actor,
            audit_action.clone(),
            AuditOutcome::Success,
            (&proposal).into(),
            summary,
            details,
        )
        .await?;
        if let Err(error) = self.proposals.save(&proposal).await {
            let details = json!({"action": "create", "error": error.to_body()});
            // The store's error is what the caller must see; this record is best effort.
            let _ = self
                .audit(
                    actor,
                    audit_action,
                    AuditOutcome::Failure,
                    (&proposal).into(),
                    format!("proposal '{}' could not be stored", proposal.id),
                    details,
                )
                .await;
            return Err(error);
        }
        self.metrics.proposals.created();
        self.announce(AiStreamEventType::ProposalCreated, &proposal, None)
            .await;
        Ok(proposal)
    }

    /// Audits a refused creation like the refusals of actions.
    async fn refuse_creation(&self, actor: Actor<'_>, id: &ProposalId, error: AiError) -> AiError {
        if error.status() == 403 {
            self.metrics.proposals.denied();
        }
        let summary = format!("proposal by {} refused: {}", actor.id, error.code());
        let details = json!({"action": "create", "error": error.to_body()});
        match self
            .audit(
                actor,
                AuditAction::PROPOSAL_CREATED,
                AuditOutcome::Denied,
                id.into(),
                summary,
                details,
            )
            .await
        {
            Ok(()) => error,
            Err(audit_failed) => audit_failed,
        }
    }

    /// The caller's tenant's proposal `id`, or 404 (also for another tenant's).
    async fn load(&self, tenant_id: &TenantId, id: &ProposalId) -> Result<AiProposal, AiError> {
        match self.proposals.find(id, tenant_id).await? {
            Some(proposal) if &proposal.tenant_id == tenant_id => Ok(proposal),
            _ => Err(proposal_not_found(id)),
        }
    }

    /// Step one of every action: the caller holds the action's permission (403, audited).
    async fn authorize(
        &self,
        caller: &AiCaller,
        id: &ProposalId,
        action: ProposalAction,
    ) -> Result<(), AiError> {
        match require(caller, &action.permission()) {
            Ok(()) => Ok(()),
            Err(error) => Err(self
                .refuse(Actor::of(caller), action, id.into(), error)
                .await),
        }
    }

    /// Step two: the proposal exists in the actor's tenant (404), is expired first if it is
    /// past `expires_at`, and its state allows `action` (409 naming the state), which also
    /// means no apply holds it (409 `apply_in_progress`). Refusals are audited.
    async fn load_for(
        &self,
        actor: Actor<'_>,
        id: &ProposalId,
        action: ProposalAction,
    ) -> Result<AiProposal, AiError> {
        let mut proposal = match self.load(actor.tenant_id, id).await {
            Ok(proposal) => proposal,
            Err(error) if error.status() == 404 => {
                return Err(self.refuse(actor, action, id.into(), error).await);
            }
            Err(error) => return Err(error),
        };
        let now = self.clock.now();
        if action != ProposalAction::Expire && self.is_due(&proposal, now) {
            let system = Actor {
                id: EXPIRY_ACTOR,
                tenant_id: actor.tenant_id,
            };
            proposal = self.expire_as(system, &proposal).await?;
        }
        if !action.is_allowed_from(proposal.status) {
            let error = invalid_state(action, &proposal);
            return Err(self.refuse(actor, action, (&proposal).into(), error).await);
        }
        if let Some((holder, since)) = self.live_claim(&proposal, now) {
            let error = AiError::Conflict {
                code: "apply_in_progress".into(),
                message: format!(
                    "cannot {} proposal '{}': {holder} is applying it since {since}",
                    action.as_str(),
                    proposal.id
                ),
                current_state: Some(proposal.status.as_str().to_owned()),
            };
            return Err(self.refuse(actor, action, (&proposal).into(), error).await);
        }
        Ok(proposal)
    }

    /// Whether `proposal` is past its expiry and may still expire.
    fn is_due(&self, proposal: &AiProposal, now: DateTime<Utc>) -> bool {
        proposal.expires_at.is_some_and(|at| now >= at)
            && ProposalAction::Expire.is_allowed_from(proposal.status)
            && self.live_claim(proposal, now).is_none()
    }

    /// Who holds an apply claim on `proposal`, and since when, unless it timed out.
    fn live_claim<'p>(
        &self,
        proposal: &'p AiProposal,
        now: DateTime<Utc>,
    ) -> Option<(&'p str, DateTime<Utc>)> {
        match (&proposal.applied_by, proposal.applied_at) {
            (Some(holder), Some(since))
                if proposal.status == ProposalStatus::Approved
                    && proposal.applied_version.is_none()
                    && now < since + self.settings.claim_timeout =>
            {
                Some((holder, since))
            }
            _ => None,
        }
    }

    /// Audits `next` (before the effect), stores it with a compare-and-set against
    /// `current`'s revision, then counts and announces it. A lost race is 409
    /// `concurrent_update` naming the state the winner left.
    async fn commit(
        &self,
        actor: Actor<'_>,
        action: ProposalAction,
        current: &AiProposal,
        next: AiProposal,
        note: Note,
    ) -> Result<AiProposal, AiError> {
        let Note {
            outcome,
            summary,
            extra,
        } = note;
        let details = transition_details(
            action.as_str(),
            Some(current.status),
            next.status,
            &next,
            extra,
        );
        self.audit(
            actor,
            action.audit_action(),
            outcome,
            (&next).into(),
            summary,
            details,
        )
        .await?;
        if let Err(error) = self.proposals.update(&next, current.revision).await {
            return Err(self.failed_update(actor, action, current, error).await);
        }
        self.announce(
            AiStreamEventType::ProposalUpdated,
            &next,
            Some(current.status),
        )
        .await;
        Ok(next)
    }

    /// A compare-and-set the store refused after the action was audited: a best-effort
    /// failure record, and the error to answer with (409 `concurrent_update` for a lost race).
    async fn failed_update(
        &self,
        actor: Actor<'_>,
        action: ProposalAction,
        current: &AiProposal,
        error: AiError,
    ) -> AiError {
        let error = match error {
            AiError::Conflict { .. } => {
                self.metrics.proposals.lost_race();
                self.lost_race(current).await
            }
            other => other,
        };
        let summary = format!(
            "{} of proposal '{}' by {} failed: {}",
            action.as_str(),
            current.id,
            actor.id,
            error.code()
        );
        let details = json!({"action": action.as_str(), "error": error.to_body()});
        let _ = self
            .audit(
                actor,
                action.audit_action(),
                AuditOutcome::Failure,
                current.into(),
                summary,
                details,
            )
            .await;
        error
    }

    /// The 409 for an action another action overtook, naming the state the proposal is in now.
    async fn lost_race(&self, current: &AiProposal) -> AiError {
        let now = self
            .proposals
            .find(&current.id, &current.tenant_id)
            .await
            .ok()
            .flatten()
            .map_or(current.status, |p| p.status);
        AiError::Conflict {
            code: "concurrent_update".into(),
            message: format!(
                "proposal '{}' was changed by another action meanwhile; it is now {}",
                current.id,
                now.as_str()
            ),
            current_state: Some(now.as_str().to_owned()),
        }
    }

    /// Moves `current` to `Expired` on behalf of `actor`.
    async fn expire_as(
        &self,
        actor: Actor<'_>,
        current: &AiProposal,
    ) -> Result<AiProposal, AiError> {
        let mut next = current.clone();
        next.status = ProposalStatus::Expired;
        release_claim(&mut next);
        next.revision += 1;
        let summary = if actor.id == EXPIRY_ACTOR {
            format!("proposal '{}' expired", current.id)
        } else {
            format!("{} expired proposal '{}'", actor.id, current.id)
        };
        let extra = json!({"expiresAt": current.expires_at});
        self.commit(
            actor,
            ProposalAction::Expire,
            current,
            next,
            Note::success(summary, extra),
        )
        .await
    }

    async fn expire_due(&self, tenant_id: &TenantId) -> Result<usize, AiError> {
        let now = self.clock.now();
        let mut due = Vec::new();
        for status in ProposalAction::Expire.allowed_from() {
            let mut page = PageRequest::new(0, PageRequest::MAX_LIMIT);
            loop {
                let query = ProposalQuery {
                    status: Some(*status),
                    page,
                    ..ProposalQuery::default()
                };
                let found = self.proposals.list(tenant_id, &query).await?;
                let more = found.has_more() && !found.items.is_empty();
                page.offset += found.items.len();
                due.extend(found.items.into_iter().filter(|p| self.is_due(p, now)));
                if !more {
                    break;
                }
            }
        }
        let system = Actor {
            id: EXPIRY_ACTOR,
            tenant_id,
        };
        let mut expired = 0;
        for proposal in &due {
            match self.expire_as(system, proposal).await {
                Ok(_) => expired += 1,
                // Another action got there first; it decides the proposal's fate.
                Err(AiError::Conflict { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(expired)
    }

    /// Validates `definition` against the tenant's catalog, collects warnings and diffs it
    /// against the baseline (an empty workflow for creations). At creation
    /// (`baseline_required`) a missing baseline version is 404 `baseline_not_found`; later it
    /// is a warning and the stored diff stays.
    async fn review(
        &self,
        tenant_id: &TenantId,
        baseline: Option<&BaselineRef>,
        definition: &WorkflowDefinition,
        baseline_required: bool,
    ) -> Result<Review, AiError> {
        let mut warnings = Vec::new();
        let mut graph_diff = None;
        match baseline {
            Some(baseline) => {
                let id = baseline.definition_id.as_str();
                let before = self
                    .definitions
                    .find(tenant_id, id, VersionOptions::Specific(baseline.version))
                    .await?;
                match &before {
                    Some(before) => {
                        let diff = review::diff(Some(before), definition);
                        warnings.extend(review::diff_warnings(&diff));
                        graph_diff = Some(diff);
                    }
                    None if baseline_required => {
                        return Err(AiError::NotFound {
                            code: "baseline_not_found".into(),
                            message: format!(
                                "workflow definition '{id}' version {} not found",
                                baseline.version
                            ),
                        });
                    }
                    None => warnings.push(format!(
                        "the baseline version {} of workflow '{id}' no longer exists",
                        baseline.version
                    )),
                }
                let latest = self
                    .definitions
                    .find(tenant_id, id, VersionOptions::Latest)
                    .await?;
                if let Some(latest) = latest.filter(|l| l.version() != baseline.version) {
                    warnings.push(format!(
                        "workflow '{id}' is at version {} now, not the baseline version {}: \
                         applying will be refused as stale",
                        latest.version(),
                        baseline.version
                    ));
                }
            }
            None => {
                graph_diff = Some(review::diff(None, definition));
                let id = definition.definition_id();
                let existing = self
                    .definitions
                    .find(tenant_id, id, VersionOptions::Latest)
                    .await?;
                if let Some(existing) = existing {
                    warnings.push(format!(
                        "workflow '{id}' already exists (version {}): applying this creation \
                         will be refused",
                        existing.version()
                    ));
                }
            }
        }
        let diagnostics = self.diagnostics(tenant_id, definition).await?;
        warnings.extend(review::warnings(&diagnostics));
        let warnings = warnings
            .into_iter()
            .map(|w| self.redactor.redact_str(&w).into_owned())
            .collect();
        Ok(Review {
            diagnostics,
            warnings,
            graph_diff,
        })
    }

    /// Validation findings for `definition` against the tenant's catalog as it is now,
    /// with redacted messages (they may quote the definition).
    async fn diagnostics(
        &self,
        tenant_id: &TenantId,
        definition: &WorkflowDefinition,
    ) -> Result<Vec<Diagnostic>, AiError> {
        let catalog = self.catalog.list(tenant_id).await?;
        let mut diagnostics = review::validate(definition, catalog);
        for diagnostic in &mut diagnostics {
            if let std::borrow::Cow::Owned(message) = self.redactor.redact_str(&diagnostic.message)
            {
                diagnostic.message = message;
            }
        }
        Ok(diagnostics)
    }
}

/// The draft's kind, baseline and definition must fit together (400 otherwise).
fn check_draft(draft: &ProposalDraft) -> Result<(), AiError> {
    let id = draft.definition.definition_id();
    if id.trim().is_empty() {
        return Err(AiError::bad_request(
            "definition_id_required",
            "the proposed definition has no definitionId",
        ));
    }
    match (draft.kind, &draft.baseline) {
        (ProposalKind::Create, Some(_)) => Err(AiError::bad_request(
            "unexpected_baseline",
            "a creation proposal has no baseline",
        )),
        (ProposalKind::Update, None) => Err(AiError::bad_request(
            "baseline_required",
            "an update proposal needs the baseline definition id and version",
        )),
        (ProposalKind::Update, Some(baseline)) if baseline.definition_id != id => {
            Err(AiError::bad_request(
                "definition_id_mismatch",
                format!(
                    "the proposed definition '{id}' is not the baseline '{}'",
                    baseline.definition_id
                ),
            ))
        }
        _ => Ok(()),
    }
}
