//! What every action on a stored proposal runs: loading it in the caller's tenant, the
//! permission, expiry of a proposal past `expiresAt`, the state machine and apply claims,
//! and the compare-and-set that stores the new state (with its audit record and event).

use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiCaller, AiError, AiProposal, AiStreamEventType, AuditOutcome, ProposalId, ProposalQuery,
    ProposalStatus,
};
use elsa_workflows::{PageRequest, TenantId};
use serde_json::json;

use super::record::{Actor, Note, transition_details};
use super::{
    EXPIRY_ACTOR, Inner, ProposalAction, invalid_state, proposal_not_found, release_claim, require,
};

impl Inner {
    /// The caller's tenant's proposal `id`, or 404 (also for another tenant's).
    pub(super) async fn load(
        &self,
        tenant_id: &TenantId,
        id: &ProposalId,
    ) -> Result<AiProposal, AiError> {
        match self.proposals.find(id, tenant_id).await? {
            Some(proposal) if &proposal.tenant_id == tenant_id => Ok(proposal),
            _ => Err(proposal_not_found(id)),
        }
    }

    /// Step one of every action: the caller holds the action's permission (403, audited).
    pub(super) async fn authorize(
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
    pub(super) async fn load_for(
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
    pub(super) fn is_due(&self, proposal: &AiProposal, now: DateTime<Utc>) -> bool {
        proposal.expires_at.is_some_and(|at| now >= at)
            && ProposalAction::Expire.is_allowed_from(proposal.status)
            && self.live_claim(proposal, now).is_none()
    }

    /// Who holds an apply claim on `proposal`, and since when, unless it timed out.
    pub(super) fn live_claim<'p>(
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
    pub(super) async fn commit(
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
    pub(super) async fn failed_update(
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
    pub(super) async fn lost_race(&self, current: &AiProposal) -> AiError {
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
    pub(super) async fn expire_as(
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

    pub(super) async fn expire_due(&self, tenant_id: &TenantId) -> Result<usize, AiError> {
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
}
