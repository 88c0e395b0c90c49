//! Creating a proposal from a draft a proposal tool submitted: the draft's shape, the
//! baseline, redaction of the rationale, the review, the stored record and its audit.

use elsa_ai_abstractions::{
    AiCaller, AiError, AiProposal, AiStreamEventType, AuditAction, AuditOutcome, Permission,
    ProposalDraft, ProposalId, ProposalKind, ProposalPayload,
};
use serde_json::json;

use super::record::{Actor, definition_digest, transition_details};
use super::{Inner, require};

impl Inner {
    pub(super) async fn create(
        &self,
        caller: &AiCaller,
        draft: ProposalDraft,
    ) -> Result<AiProposal, AiError> {
        let actor = Actor::of(caller);
        let id = ProposalId::generate();
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
            payload: Some(ProposalPayload {
                definition: draft.definition,
                patch: draft.patch,
            }),
            operation: None,
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
                _ => "updating",
            },
            proposal.definition_id(),
            proposal.status.as_str()
        );
        let extra = json!({
            "warnings": proposal.warnings,
            "errors": proposal.diagnostics.iter().filter(|d| d.is_error()).count(),
            "graphDiff": proposal.graph_diff,
        });
        self.record_new(actor, proposal, summary, extra).await
    }

    /// Audits a new proposal (before it is stored), stores it, counts and announces it.
    /// Every creation record carries the rationale, expiry and digest besides `extra`.
    pub(super) async fn record_new(
        &self,
        actor: Actor<'_>,
        proposal: AiProposal,
        summary: String,
        extra: serde_json::Value,
    ) -> Result<AiProposal, AiError> {
        let audit_action = AuditAction::PROPOSAL_CREATED;
        let mut details = json!({
            "rationale": proposal.rationale,
            "expiresAt": proposal.expires_at,
            "definitionDigest": definition_digest(&proposal),
        });
        if let (Some(details), serde_json::Value::Object(extra)) = (details.as_object_mut(), extra)
        {
            details.extend(extra);
        }
        let details = transition_details("create", None, proposal.status, &proposal, details);
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
    pub(super) async fn refuse_creation(
        &self,
        actor: Actor<'_>,
        id: &ProposalId,
        error: AiError,
    ) -> AiError {
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
}

/// The draft's kind, baseline and definition must fit together (400 otherwise).
fn check_draft(draft: &ProposalDraft) -> Result<(), AiError> {
    let id = draft.definition.definition_id();
    if draft.kind.is_operation() {
        return Err(AiError::bad_request(
            "not_a_definition_change",
            format!(
                "a {} proposal acts on existing objects; submit it as an operation",
                draft.kind.as_str()
            ),
        ));
    }
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
