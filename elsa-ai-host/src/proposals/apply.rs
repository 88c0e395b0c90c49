//! Applying a proposal, and why it is applied at most once.
//!
//! The checks run in this order; each refusal is audited and writes nothing:
//!
//! 1. the caller holds `apply:workflows` (403), and the proposal is in their tenant (404,
//!    like a missing one);
//! 2. it is `Approved` (409 `invalid_state`; a proposal past `expires_at` is expired first)
//!    and no other apply holds it (409 `apply_in_progress`);
//! 3. its baseline is still the definition's latest version, or for a creation the id is
//!    still free (409 `stale_baseline` / `definition_exists`; the status stays `Approved`);
//! 4. validation against the tenant's activity catalog passes now; otherwise the proposal
//!    becomes `Blocked` with the new diagnostics (audited and announced like any
//!    transition) and the answer is 422 `validation_failed`.
//!
//! Then the apply **claims** the proposal: a compare-and-set of the proposal's revision from
//! `Approved` at revision `r` to `Approved` at `r + 1` with `applied_by` / `applied_at` set
//! to the caller and now. It audits `proposal.applied` (audit before effect: if the record
//! cannot be written, the claim is released and nothing is written), writes through the
//! [`WorkflowDefinitionWriter`](elsa_workflows::WorkflowDefinitionWriter) (`create`, or
//! `update` with `expected_version` = the baseline version), stores `Applied` with the
//! written version by a compare-and-set from `r + 1`, and finally audits
//! `proposal.written` with the version the store assigned (known only after the write).
//! Both records carry the `definitionDigest` that `proposal.created` recorded, so the trail
//! shows that the reviewed payload is the one written.
//!
//! **At most once.** Two guards, either of which alone prevents a second write:
//!
//! * *The claim.* Every apply, rejection and expiry of one proposal changes it by a
//!   compare-and-set on its revision, which the proposal store performs atomically (a lock
//!   in memory; a conditional `UPDATE … WHERE revision = r` in a database, so across replicas
//!   too). Of concurrent applies that all passed the checks at revision `r`, exactly one
//!   claim succeeds; the others get 409 without writing. Actions that read the proposal
//!   after the claim see it held (409 `apply_in_progress`), and after the apply see
//!   `Applied` (409 `invalid_state`). A rejection or expiry that wins the race against the
//!   claim makes the claim fail, so a proposal is never both written and rejected.
//! * *The writer's compare-and-set.* `update` only succeeds while the definition's latest
//!   version is still the baseline, and `create` only while the id is free. So even an apply
//!   that takes over a claim after [`claim_timeout`](super::ProposalSettings) (from an apply
//!   that crashed, or is still running very slowly) cannot write a second time: one of the
//!   two writes finds the version moved on and is refused as stale. The same guard stops two
//!   different proposals made against one baseline from both being applied.
//!
//! A crash between the write and recording `Applied` leaves the definition written once and
//! the proposal claimed. Once the claim lapses, a retried apply is refused as stale (the
//! write is not repeated), and a reviewer may reject or expire the proposal, which clears the
//! claim. If recording `Applied` fails even after retries, the caller gets 500
//! `apply_unrecorded` naming the version that was written.

use std::time::Duration;

use elsa_ai_abstractions::{
    AiCaller, AiError, AiProposal, AiStreamEventType, AuditAction, AuditOutcome, ProposalId,
    ProposalKind, ProposalStatus,
};
use elsa_workflows::{DefinitionVersionRef, VersionOptions, WorkflowError};
use serde_json::json;

use super::record::{Actor, Note, definition_digest, transition_details};
use super::{Inner, ProposalAction, release_claim, review};

/// How often recording `Applied` is attempted when the store fails (not when it conflicts).
const RECORD_ATTEMPTS: u32 = 3;

impl Inner {
    pub(super) async fn apply(
        &self,
        caller: &AiCaller,
        id: &ProposalId,
    ) -> Result<AiProposal, AiError> {
        let action = ProposalAction::Apply;
        let actor = Actor::of(caller);
        self.authorize(caller, id, action).await?;
        let current = self.load_for(actor, id, action).await?;
        self.authorize_operation(caller, &current, action).await?;
        if current.kind.is_operation() {
            return self.apply_operation(caller, current).await;
        }
        let Some(definition) = current.definition() else {
            let error = AiError::internal(
                "proposal_without_definition",
                format!("proposal '{}' has no definition to write", current.id),
            );
            return Err(self.refuse(actor, action, (&current).into(), error).await);
        };

        if let Some(stale) = self.baseline_conflict(&current).await? {
            return Err(self.refuse(actor, action, (&current).into(), stale).await);
        }

        // The baseline is the latest version here (checked above): findings it has too stay
        // warnings, as they were when the proposal was made.
        let baseline = match &current.baseline {
            Some(baseline) => self
                .definitions
                .find(
                    &current.tenant_id,
                    &baseline.definition_id,
                    VersionOptions::Specific(baseline.version),
                )
                .await?
                .map(|definition| (baseline.version, definition)),
            None => None,
        };
        let diagnostics = self
            .diagnostics(
                &current.tenant_id,
                definition,
                baseline.as_ref().map(|(v, d)| (*v, &**d)),
            )
            .await?;
        if review::is_blocking(&diagnostics) {
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            let mut blocked = current.clone();
            blocked.status = ProposalStatus::Blocked;
            blocked.diagnostics = diagnostics.clone();
            blocked.revision += 1;
            let summary = format!(
                "apply of proposal '{}' by {} failed validation ({errors} errors): Blocked",
                current.id, caller.actor_id
            );
            self.commit(
                actor,
                action,
                &current,
                blocked,
                Note::failure(summary, json!({"errors": errors})),
            )
            .await?;
            return Err(AiError::validation_failed(
                format!(
                    "proposal '{}' no longer passes validation and is Blocked",
                    current.id
                ),
                diagnostics,
            ));
        }

        let mut claimed = current.clone();
        claimed.diagnostics = diagnostics;
        let claimed = self.claim(actor, &current, claimed).await?;

        let summary = match &claimed.baseline {
            Some(baseline) => format!(
                "{} applied proposal '{}': workflow '{}' after version {}",
                caller.actor_id, claimed.id, baseline.definition_id, baseline.version
            ),
            None => format!(
                "{} applied proposal '{}': new workflow '{}'",
                caller.actor_id,
                claimed.id,
                claimed.definition_id()
            ),
        };
        let details = transition_details(
            action.as_str(),
            Some(ProposalStatus::Approved),
            ProposalStatus::Applied,
            &claimed,
            json!({
                "reviewedBy": claimed.reviewed_by,
                "definitionDigest": definition_digest(&claimed),
            }),
        );
        if let Err(error) = self
            .audit(
                actor,
                action.audit_action(),
                AuditOutcome::Success,
                (&claimed).into(),
                summary,
                details,
            )
            .await
        {
            self.release(&claimed).await;
            return Err(error);
        }

        let version = match self.write(&claimed).await {
            Ok(version) => version,
            Err(error) => {
                self.release(&claimed).await;
                let error = match error {
                    // The version moved on (or the definition went away) since the check.
                    WorkflowError::Conflict { message } => {
                        self.metrics.proposals.stale_baseline();
                        stale(&current, message)
                    }
                    WorkflowError::NotFound { what } => {
                        self.metrics.proposals.stale_baseline();
                        stale(&current, format!("{what} no longer exists"))
                    }
                    other => AiError::from(other),
                };
                self.apply_failed(actor, &claimed, &error).await;
                return Err(error);
            }
        };

        let mut applied = claimed.clone();
        applied.status = ProposalStatus::Applied;
        applied.applied_at = Some(self.clock.now());
        applied.applied_version = Some(version);
        applied.revision += 1;
        if let Err(error) = self.record_applied(&claimed, &applied).await {
            self.apply_failed(actor, &claimed, &error).await;
            return Err(error);
        }
        self.audit_written(actor, &applied).await;
        self.announce(
            AiStreamEventType::ProposalUpdated,
            &applied,
            Some(ProposalStatus::Approved),
        )
        .await;
        Ok(applied)
    }

    /// Takes the apply claim: `claimed` (the current proposal, possibly with fresh
    /// diagnostics) held by `actor` from now, stored by a compare-and-set from `current`'s
    /// revision. Of concurrent claims one wins; the others get the audited refusal of a lost
    /// race.
    pub(super) async fn claim(
        &self,
        actor: Actor<'_>,
        current: &AiProposal,
        mut claimed: AiProposal,
    ) -> Result<AiProposal, AiError> {
        claimed.applied_by = Some(actor.id.to_owned());
        claimed.applied_at = Some(self.clock.now());
        claimed.applied_version = None;
        claimed.revision = current.revision + 1;
        if let Err(error) = self.proposals.update(&claimed, current.revision).await {
            let error = match error {
                AiError::Conflict { .. } => self.lost_race(current).await,
                other => return Err(other),
            };
            let action = ProposalAction::Apply;
            return Err(self.refuse(actor, action, current.into(), error).await);
        }
        Ok(claimed)
    }

    /// The 409 for a proposal whose workflow moved on since it was made, if it did.
    async fn baseline_conflict(&self, proposal: &AiProposal) -> Result<Option<AiError>, AiError> {
        let id = proposal.definition_id();
        let latest = self
            .definitions
            .find(&proposal.tenant_id, id, VersionOptions::Latest)
            .await?;
        Ok(match (&proposal.baseline, latest) {
            (Some(baseline), Some(latest)) if latest.version() == baseline.version => None,
            (Some(baseline), Some(latest)) => Some(stale(
                proposal,
                format!(
                    "workflow '{id}' is at version {} now; the proposal was made against version {}",
                    latest.version(),
                    baseline.version
                ),
            )),
            (Some(baseline), None) => Some(stale(
                proposal,
                format!(
                    "workflow '{id}' no longer exists; the proposal was made against version {}",
                    baseline.version
                ),
            )),
            (None, None) => None,
            (None, Some(existing)) => Some(stale(
                proposal,
                format!(
                    "workflow '{id}' already exists (version {})",
                    existing.version()
                ),
            )),
        })
    }

    /// The one definition write of Weaver.
    async fn write(&self, claimed: &AiProposal) -> Result<DefinitionVersionRef, WorkflowError> {
        let Some(definition) = claimed.definition().cloned() else {
            return Err(WorkflowError::Backend {
                message: format!("proposal '{}' has no definition to write", claimed.id),
            });
        };
        match &claimed.baseline {
            Some(baseline) => {
                self.writer
                    .update(
                        &claimed.tenant_id,
                        &baseline.definition_id,
                        baseline.version,
                        definition,
                    )
                    .await
            }
            None => self.writer.create(&claimed.tenant_id, definition).await,
        }
    }

    /// Stores `applied` over the claim; retries store failures, never a conflict (only a
    /// takeover after the claim timeout changes a claimed proposal).
    pub(super) async fn record_applied(
        &self,
        claimed: &AiProposal,
        applied: &AiProposal,
    ) -> Result<(), AiError> {
        let mut attempt = 1;
        loop {
            match self.proposals.update(applied, claimed.revision).await {
                Ok(()) => return Ok(()),
                Err(error) if attempt < RECORD_ATTEMPTS && error.status() != 409 => {
                    tracing::warn!(
                        proposal.id = %claimed.id,
                        code = error.code(),
                        attempt,
                        "recording an applied proposal failed; retrying"
                    );
                    tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
                    attempt += 1;
                }
                Err(error) => {
                    let version = applied
                        .applied_version
                        .as_ref()
                        .map_or(0, |version| version.version);
                    tracing::error!(
                        proposal.id = %claimed.id,
                        version,
                        code = error.code(),
                        "a proposal was applied but could not be marked Applied"
                    );
                    let done = match &applied.operation {
                        Some(_) => format!("the {} operation was carried out", applied.kind.verb()),
                        None => format!(
                            "workflow '{}' was written as version {version}",
                            applied.definition_id()
                        ),
                    };
                    return Err(AiError::internal(
                        "apply_unrecorded",
                        format!(
                            "{done}, but proposal '{}' could not be marked Applied: {}",
                            claimed.id,
                            error.message()
                        ),
                    ));
                }
            }
        }
    }

    /// Gives up a claim after a failed apply, so that the proposal can be applied again (or
    /// rejected). If even that fails, the claim lapses after the claim timeout.
    pub(super) async fn release(&self, claimed: &AiProposal) {
        let mut released = claimed.clone();
        release_claim(&mut released);
        released.revision += 1;
        if let Err(error) = self.proposals.update(&released, claimed.revision).await {
            tracing::warn!(
                proposal.id = %claimed.id,
                code = error.code(),
                "an apply claim could not be released; it lapses after the claim timeout"
            );
        }
    }

    /// Records the version the write produced, which only exists after the effect (the
    /// audit-before-effect record is `proposal.applied`). The workflow is written and the
    /// proposal recorded by now, so a record that cannot be written is logged, not answered.
    async fn audit_written(&self, actor: Actor<'_>, applied: &AiProposal) {
        let Some(version) = &applied.applied_version else {
            return;
        };
        let summary = format!(
            "proposal '{}' wrote workflow '{}' version {}",
            applied.id, version.definition_id, version.version
        );
        let details = json!({
            "action": "apply",
            "definitionId": version.definition_id,
            "appliedVersion": version,
            "baseline": applied.baseline,
            "definitionDigest": definition_digest(applied),
        });
        if let Err(error) = self
            .audit(
                actor,
                AuditAction::PROPOSAL_WRITTEN,
                AuditOutcome::Success,
                applied.into(),
                summary,
                details,
            )
            .await
        {
            tracing::error!(
                proposal.id = %applied.id,
                version = version.version,
                code = error.code(),
                "the written version of an applied proposal could not be audited"
            );
        }
    }

    /// A best-effort failure record after the audited apply did not complete (the caller
    /// gets the apply's error either way).
    pub(super) async fn apply_failed(
        &self,
        actor: Actor<'_>,
        claimed: &AiProposal,
        error: &AiError,
    ) {
        let summary = format!(
            "apply of proposal '{}' by {} failed: {}",
            claimed.id,
            actor.id,
            error.code()
        );
        let details = json!({"action": "apply", "error": error.to_body()});
        let _ = self
            .audit(
                actor,
                ProposalAction::Apply.audit_action(),
                AuditOutcome::Failure,
                claimed.into(),
                summary,
                details,
            )
            .await;
    }
}

/// The 409 for a proposal whose workflow moved on; the proposal stays as it is.
fn stale(proposal: &AiProposal, message: String) -> AiError {
    let code = match proposal.kind {
        ProposalKind::Create => "definition_exists",
        _ => "stale_baseline",
    };
    AiError::Conflict {
        code: code.into(),
        message: format!("proposal '{}' is stale: {message}", proposal.id),
        current_state: Some(proposal.status.as_str().to_owned()),
    }
}
