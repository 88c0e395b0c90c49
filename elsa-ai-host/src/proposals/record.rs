//! How a proposal action leaves traces: the audit record (before the effect), the
//! `proposal.*` stream event and the counters (after it), and refusals.

use elsa_ai_abstractions::{
    AiAuditEvent, AiCaller, AiError, AiProposal, AiStreamEventType, AuditAction, AuditOutcome,
    ProposalId, ProposalStatus,
};
use elsa_workflows::TenantId;
use serde_json::{Value, json};

use super::{Inner, ProposalAction};

/// What a transition's audit record says besides the transition itself.
#[derive(Debug)]
pub(crate) struct Note {
    pub outcome: AuditOutcome,
    pub summary: String,
    /// Details added to the transition's own (from, to, kind, definition, baseline).
    pub extra: Value,
}

impl Note {
    /// A transition that does what was asked.
    pub fn success(summary: String, extra: Value) -> Self {
        Self {
            outcome: AuditOutcome::Success,
            summary,
            extra,
        }
    }

    /// A transition forced by a failed action (an apply whose validation now fails).
    pub fn failure(summary: String, extra: Value) -> Self {
        Self {
            outcome: AuditOutcome::Failure,
            summary,
            extra,
        }
    }
}

/// Who acts: a caller's actor id, or the service itself (expiry).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Actor<'a> {
    pub id: &'a str,
    pub tenant_id: &'a TenantId,
}

impl<'a> Actor<'a> {
    pub(crate) fn of(caller: &'a AiCaller) -> Self {
        Self {
            id: &caller.actor_id,
            tenant_id: &caller.tenant_id,
        }
    }
}

impl Inner {
    /// Writes one redacted audit record; a record that cannot be written is 500
    /// `audit_failed` and the action must not take effect.
    pub(crate) async fn audit(
        &self,
        actor: Actor<'_>,
        action: AuditAction,
        outcome: AuditOutcome,
        proposal: ProposalRef<'_>,
        summary: String,
        details: Value,
    ) -> Result<(), AiError> {
        let mut event =
            AiAuditEvent::new(actor.tenant_id.clone(), actor.id, action, outcome, summary);
        event.timestamp = self.clock.now();
        event.proposal_id = Some(proposal.id.clone());
        event.conversation_id = proposal.conversation_id.cloned();
        event.details = details.into();
        self.redactor.redact_audit_event(&mut event);
        self.audit.record(event).await.map_err(|error| {
            self.metrics.proposals.audit_failed();
            AiError::audit_failed(
                &error,
                format!(
                    "the proposal action was not carried out because it could not be audited: {}",
                    error.message()
                ),
            )
        })
    }

    /// Audits a refusal (outcome `Denied`), counts it, and returns the error to answer with:
    /// the refusal itself, or `audit_failed` when even the refusal cannot be audited.
    pub(crate) async fn refuse(
        &self,
        actor: Actor<'_>,
        action: ProposalAction,
        proposal: ProposalRef<'_>,
        error: AiError,
    ) -> AiError {
        match (error.status(), error.code()) {
            (403, _) => self.metrics.proposals.denied(),
            (_, "invalid_state" | "apply_in_progress") => {
                self.metrics.proposals.invalid_transition()
            }
            (_, "stale_baseline" | "definition_exists") => self.metrics.proposals.stale_baseline(),
            (_, "concurrent_update") => self.metrics.proposals.lost_race(),
            _ => {}
        }
        let summary = format!(
            "{} of proposal '{}' by {} refused: {}",
            action.as_str(),
            proposal.id,
            actor.id,
            error.code()
        );
        let details = json!({"action": action.as_str(), "error": error.to_body()});
        match self
            .audit(
                actor,
                action.audit_action(),
                AuditOutcome::Denied,
                proposal,
                summary,
                details,
            )
            .await
        {
            Ok(()) => error,
            Err(audit_failed) => audit_failed,
        }
    }

    /// Counts a transition and publishes it on the proposal's conversation stream.
    ///
    /// The transition is already stored, so a stream that cannot take the event does not
    /// undo it: the failure is counted and logged, and clients still read the proposal.
    pub(crate) async fn announce(
        &self,
        event_type: AiStreamEventType,
        proposal: &AiProposal,
        previous: Option<ProposalStatus>,
    ) {
        self.metrics.proposals.entered(proposal.status);
        tracing::info!(
            proposal.id = %proposal.id,
            tenant.id = %proposal.tenant_id,
            from = previous.map(ProposalStatus::as_str),
            to = proposal.status.as_str(),
            "proposal transition"
        );
        let Some(conversation) = &proposal.conversation_id else {
            return;
        };
        let Some(events) = self.events.read().clone() else {
            tracing::debug!(proposal.id = %proposal.id, "no conversation stream connected");
            return;
        };
        if let Err(error) = events
            .publish(
                &proposal.tenant_id,
                conversation,
                event_type,
                event_data(proposal, previous),
            )
            .await
        {
            self.metrics.proposals.event_failed();
            tracing::warn!(
                proposal.id = %proposal.id,
                code = error.code(),
                "a proposal event could not be published"
            );
        }
    }
}

/// The SHA-256 of the proposal's definition payload as stored (`sha256:<hex>`), or of an
/// operation's targets with their baselines (outcomes left out): the creation and apply
/// records both carry it, so the audit trail shows that what was applied is exactly what
/// was proposed and reviewed.
pub(crate) fn definition_digest(proposal: &AiProposal) -> String {
    use sha2::{Digest, Sha256};
    use std::fmt::Write;
    // Serialising a definition or a target cannot fail (string keys, no non-finite numbers).
    let bytes = match (&proposal.payload, &proposal.operation) {
        (Some(payload), _) => serde_json::to_vec(&payload.definition).unwrap_or_default(),
        (None, Some(plan)) => {
            let baselines: Vec<_> = plan
                .targets
                .iter()
                .map(|target| elsa_ai_abstractions::OperationTarget {
                    outcome: None,
                    ..target.clone()
                })
                .collect();
            serde_json::to_vec(&baselines).unwrap_or_default()
        }
        (None, None) => Vec::new(),
    };
    let digest = Sha256::digest(&bytes);
    let mut text = String::with_capacity(7 + 2 * digest.len());
    text.push_str("sha256:");
    for byte in digest.iter() {
        let _ = write!(text, "{byte:02x}");
    }
    text
}

/// The proposal an audit record is about: its id, and its conversation once it is known.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProposalRef<'a> {
    pub id: &'a ProposalId,
    pub conversation_id: Option<&'a elsa_ai_abstractions::ConversationId>,
}

impl<'a> From<&'a AiProposal> for ProposalRef<'a> {
    fn from(proposal: &'a AiProposal) -> Self {
        Self {
            id: &proposal.id,
            conversation_id: proposal.conversation_id.as_ref(),
        }
    }
}

impl<'a> From<&'a ProposalId> for ProposalRef<'a> {
    fn from(id: &'a ProposalId) -> Self {
        Self {
            id,
            conversation_id: None,
        }
    }
}

/// What `proposal.created` / `proposal.updated` carry: the review-relevant state, not the
/// payload (clients read that from the proposal itself). `summary` and
/// `workflowDefinitionId` are the strings Elsa Studio's panel reads.
pub(crate) fn event_data(proposal: &AiProposal, previous: Option<ProposalStatus>) -> Value {
    let summary = match &proposal.operation {
        Some(plan) if proposal.kind.targets_instances() => format!(
            "{} {} instance(s): {}",
            proposal.kind.as_str(),
            plan.targets.len(),
            proposal.status.as_str()
        ),
        _ => format!(
            "{} workflow '{}': {}",
            proposal.kind.as_str(),
            proposal.definition_id(),
            proposal.status.as_str()
        ),
    };
    json!({
        "proposalId": proposal.id,
        "status": proposal.status,
        "previousStatus": previous,
        "kind": proposal.kind,
        "summary": summary,
        "workflowDefinitionId": proposal.definition_id(),
        "definitionId": proposal.definition_id(),
        "baseline": proposal.baseline,
        "rationale": proposal.rationale,
        "warnings": proposal.warnings,
        "diagnostics": proposal.diagnostics,
        "reviewedBy": proposal.reviewed_by,
        "reviewReason": proposal.review_reason,
        "appliedBy": proposal.applied_version.as_ref().and(proposal.applied_by.as_ref()),
        "appliedVersion": proposal.applied_version,
        "operation": proposal.operation,
        "expiresAt": proposal.expires_at,
        "revision": proposal.revision,
    })
}

/// The details every transition record carries.
pub(crate) fn transition_details(
    action: &str,
    from: Option<ProposalStatus>,
    to: ProposalStatus,
    proposal: &AiProposal,
    extra: Value,
) -> Value {
    let mut details = json!({
        "action": action,
        "fromStatus": from,
        "toStatus": to,
        "kind": proposal.kind,
        "definitionId": proposal.definition_id(),
        "baseline": proposal.baseline,
    });
    if let (Value::Object(details), Value::Object(extra)) = (&mut details, extra) {
        details.extend(extra);
    }
    details
}
