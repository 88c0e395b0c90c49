//! Operations as proposals: retry, cancel and restart instances; publish, unpublish and
//! delete a definition. Each is a proposal a person reviews and the server applies at most
//! once, never a direct action.
//!
//! **Proposing** reads every target in the caller's tenant (a target the caller may not read
//! is not found, exactly like a missing one or another tenant's), checks that the operation
//! applies to its state (a retry needs a faulted instance, a cancel a running one, a
//! restart a finished one, a publish an unpublished latest version, an unpublish a
//! published version), and records that state as the target's baseline. The proposal is
//! `Validated` from the start: there is no definition to validate.
//!
//! **Applying** takes the same claim as a definition write (see `apply.rs`): of concurrent
//! applies, also on several replicas, one claim wins. It audits `proposal.applied` before any
//! effect, then for each target reads its state again: a target whose state differs from its
//! baseline is skipped as `Stale` and never acted on; otherwise the backend acts and the
//! target is `Done` (or `Failed`, with the backend's reason); a deletion is also stale when
//! the definition's instance count changed, since its instances are deleted with it. A
//! target that cannot be read at all (the backend is down) ends the apply with its error and
//! gives up the claim, keeping the outcomes recorded so far. Each outcome is audited as
//! `proposal.target` and stored in the claimed proposal before the next target, so an apply
//! that takes over a lapsed claim continues after the recorded targets. What it cannot see is
//! a crash between a restart and its record: the restarted instance's state does not change,
//! so the takeover would start it once more (cancels, retries, publications and deletions
//! change their target's state and are skipped as stale instead).

use std::collections::HashSet;
use std::sync::Arc;

use elsa_ai_abstractions::{
    AiCaller, AiError, AiProposal, AiStreamEventType, AuditAction, AuditOutcome, DeletionImpact,
    OperationDraft, OperationPlan, OperationTarget, Permission, ProposalId, ProposalKind,
    ProposalStatus, TargetOutcome, TargetResult,
};
use elsa_workflows::{
    InstanceQuery, PageRequest, TenantId, VersionOptions, WorkflowDefinitionPublisher,
    WorkflowError, WorkflowInstance, WorkflowInstanceOperator, WorkflowInstanceStore,
    WorkflowStatus, WorkflowSubStatus,
};
use serde::Serialize;
use serde_json::json;

use super::record::{Actor, Note, ProposalRef, definition_digest, transition_details};
use super::{Inner, ProposalAction, require};

/// What the proposal service needs to propose and apply operations: the instances it reads
/// targets from, and the two backend traits only an applied proposal reaches.
#[derive(Clone)]
pub struct OperationServices {
    /// Reads the targeted instances.
    pub instances: Arc<dyn WorkflowInstanceStore>,
    /// Cancels, retries and restarts instances.
    pub operator: Arc<dyn WorkflowInstanceOperator>,
    /// Publishes, unpublishes and deletes definitions.
    pub publisher: Arc<dyn WorkflowDefinitionPublisher>,
}

impl std::fmt::Debug for OperationServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperationServices").finish_non_exhaustive()
    }
}

/// A target's state now, beside the baseline its proposal recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetState {
    /// The target's id (instance or definition).
    pub id: String,
    /// Whether it still exists.
    pub exists: bool,
    /// Instances: the status now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<WorkflowStatus>,
    /// Instances: the sub-status now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub_status: Option<WorkflowSubStatus>,
    /// Definitions: the latest version now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_version: Option<i32>,
    /// Definitions: the version published now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published_version: Option<i32>,
}

impl TargetState {
    fn missing(id: &str) -> Self {
        Self {
            id: id.to_owned(),
            exists: false,
            status: None,
            sub_status: None,
            latest_version: None,
            published_version: None,
        }
    }

    /// Whether this is the state `target` recorded when it was proposed.
    fn matches(&self, target: &OperationTarget) -> bool {
        self.exists
            && self.status == target.status
            && self.sub_status == target.sub_status
            && self.latest_version == target.latest_version
            && self.published_version == target.published_version
    }

    /// How the state moved away from `target`'s baseline, for a stale outcome.
    fn change_from(&self, target: &OperationTarget) -> String {
        if !self.exists {
            return format!("'{}' no longer exists", target.id);
        }
        match (target.sub_status, self.sub_status) {
            (Some(before), Some(now)) => format!(
                "instance '{}' was {}/{before} when proposed and is {}/{now} now",
                target.id,
                target.status.map_or("?", WorkflowStatus::as_str),
                self.status.map_or("?", WorkflowStatus::as_str),
            ),
            _ => format!(
                "workflow '{}' was at version {} (published: {}) when proposed and is at \
                 version {} (published: {}) now",
                target.id,
                target.latest_version.unwrap_or_default(),
                version_text(target.published_version),
                self.latest_version.unwrap_or_default(),
                version_text(self.published_version),
            ),
        }
    }
}

fn version_text(version: Option<i32>) -> String {
    version.map_or_else(|| "none".to_owned(), |v| format!("version {v}"))
}

fn instance_not_found(id: &str) -> AiError {
    AiError::NotFound {
        code: "instance_not_found".into(),
        message: format!("workflow instance '{id}' not found"),
    }
}

fn definition_not_found(id: &str) -> AiError {
    AiError::NotFound {
        code: "definition_not_found".into(),
        message: format!("workflow definition '{id}' not found"),
    }
}

/// Whether `kind` applies to an instance in this state; the 409 saying why not otherwise.
fn check_instance(kind: ProposalKind, instance: &WorkflowInstance) -> Result<(), AiError> {
    let (status, sub_status) = (instance.status(), instance.sub_status());
    let code = match kind {
        ProposalKind::Retry if sub_status != WorkflowSubStatus::Faulted => "instance_not_faulted",
        ProposalKind::Cancel if status != WorkflowStatus::Running => "instance_finished",
        ProposalKind::Restart if status != WorkflowStatus::Finished => "instance_running",
        _ => return Ok(()),
    };
    let why = match kind {
        ProposalKind::Retry => "only a faulted instance can be retried",
        ProposalKind::Cancel => "only a running instance can be cancelled",
        _ => "only a finished instance can be restarted (cancel it first)",
    };
    Err(AiError::conflict(
        code,
        format!(
            "cannot {} workflow instance '{}': it is {status}/{sub_status}; {why}",
            kind.verb(),
            instance.id()
        ),
    ))
}

impl Inner {
    fn operation_services(&self) -> Result<&OperationServices, AiError> {
        self.operations.as_ref().ok_or_else(|| {
            AiError::unavailable(
                "operations_unavailable",
                "this host applies no operations on instances or definitions",
            )
        })
    }

    /// An operation's own permission, for approving and applying it (403, audited).
    pub(super) async fn authorize_operation(
        &self,
        caller: &AiCaller,
        proposal: &AiProposal,
        action: ProposalAction,
    ) -> Result<(), AiError> {
        let Some(permission) = proposal.kind.operation_permission() else {
            return Ok(());
        };
        match require(caller, &permission) {
            Ok(()) => Ok(()),
            Err(error) => Err(self
                .refuse(Actor::of(caller), action, proposal.into(), error)
                .await),
        }
    }

    pub(super) async fn create_operation(
        &self,
        caller: &AiCaller,
        draft: OperationDraft,
    ) -> Result<AiProposal, AiError> {
        let actor = Actor::of(caller);
        let id = ProposalId::generate();
        let (plan, warnings) = match self.plan(caller, &draft).await {
            Ok(planned) => planned,
            Err(error) if error.status() < 500 => {
                return Err(self.refuse_creation(actor, &id, error).await);
            }
            Err(error) => return Err(error),
        };
        let now = self.clock.now();
        let proposal = AiProposal {
            id,
            tenant_id: caller.tenant_id.clone(),
            conversation_id: draft.conversation_id,
            kind: draft.kind,
            status: ProposalStatus::Validated,
            baseline: None,
            payload: None,
            operation: Some(plan),
            rationale: self.redactor.redact_str(&draft.rationale).into_owned(),
            warnings,
            diagnostics: Vec::new(),
            graph_diff: Default::default(),
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
        let plan = proposal.operation.as_ref().expect("set above");
        let summary = format!(
            "{} proposed to {} {}",
            caller.actor_id,
            proposal.kind.verb(),
            targets_text(proposal.kind, plan)
        );
        let extra = json!({"targets": plan.targets, "deletion": plan.deletion});
        self.record_new(actor, proposal, summary, extra).await
    }

    /// Reads and checks the draft's targets; the plan with each target's baseline, and the
    /// warnings a reviewer should read.
    async fn plan(
        &self,
        caller: &AiCaller,
        draft: &OperationDraft,
    ) -> Result<(OperationPlan, Vec<String>), AiError> {
        let kind = draft.kind;
        let Some(permission) = kind.operation_permission() else {
            return Err(AiError::bad_request(
                "not_an_operation",
                format!("a {} proposal writes a definition", kind.as_str()),
            ));
        };
        require(caller, &Permission::PROPOSE_WORKFLOWS)?;
        require(caller, &permission)?;
        let services = self.operation_services()?;
        let mut seen = HashSet::new();
        let ids: Vec<&str> = draft
            .targets
            .iter()
            .map(|id| id.trim())
            .filter(|id| !id.is_empty() && seen.insert(*id))
            .collect();
        if ids.is_empty() {
            return Err(AiError::bad_request(
                "targets_required",
                format!("name what to {}", kind.verb()),
            ));
        }
        let tenant = &caller.tenant_id;
        if kind.targets_instances() {
            if ids.len() > self.settings.max_targets {
                return Err(AiError::bad_request(
                    "too_many_targets",
                    format!(
                        "one proposal may {} at most {} instances, not {}",
                        kind.verb(),
                        self.settings.max_targets,
                        ids.len()
                    ),
                ));
            }
            let readable = caller.has(&Permission::READ_WORKFLOW_INSTANCES);
            let mut targets = Vec::with_capacity(ids.len());
            for id in ids {
                let instance = match readable {
                    true => services.instances.find(tenant, id).await?,
                    false => None,
                }
                .ok_or_else(|| instance_not_found(id))?;
                check_instance(kind, &instance)?;
                targets.push(OperationTarget {
                    id: id.to_owned(),
                    definition_id: instance.definition_id().unwrap_or_default().to_owned(),
                    version: instance.definition_version().unwrap_or_default(),
                    status: Some(instance.status()),
                    sub_status: Some(instance.sub_status()),
                    published_version: None,
                    latest_version: None,
                    outcome: None,
                });
            }
            let plan = OperationPlan {
                targets,
                deletion: None,
            };
            return Ok((plan, Vec::new()));
        }
        let [id] = ids[..] else {
            return Err(AiError::bad_request(
                "one_definition",
                format!("a {} proposal names exactly one definition", kind.as_str()),
            ));
        };
        let state = match caller.has(&Permission::READ_WORKFLOWS) {
            true => self.definition_state(tenant, id).await?,
            false => TargetState::missing(id),
        };
        if !state.exists {
            return Err(definition_not_found(id));
        }
        let latest = state.latest_version.unwrap_or_default();
        let published = state.published_version;
        let mut warnings = Vec::new();
        let mut deletion = None;
        let version = match kind {
            ProposalKind::Publish => {
                let version = draft.version.unwrap_or(latest);
                if version != latest {
                    return Err(AiError::conflict(
                        "version_not_latest",
                        format!(
                            "workflow '{id}' is at version {latest}; Elsa publishes a \
                             definition's latest version, not version {version}"
                        ),
                    ));
                }
                if published == Some(version) {
                    return Err(AiError::conflict(
                        "already_published",
                        format!("version {version} of workflow '{id}' is already published"),
                    ));
                }
                if let Some(previous) = published {
                    warnings.push(format!(
                        "version {previous} is published now and will no longer be"
                    ));
                }
                version
            }
            ProposalKind::Unpublish => match published {
                Some(version) => version,
                None => {
                    return Err(AiError::conflict(
                        "not_published",
                        format!("workflow '{id}' has no published version"),
                    ));
                }
            },
            _ => {
                let versions: Vec<i32> = self
                    .definitions
                    .versions(tenant, id)
                    .await?
                    .iter()
                    .map(|summary| summary.version)
                    .collect();
                let instance_count = instance_count(services, tenant, id).await?;
                warnings.push(format!(
                    "deleting workflow '{id}' removes {} version(s){} and its {instance_count} \
                     instance(s)",
                    versions.len(),
                    published.map_or_else(String::new, |v| format!(
                        ", including the published version {v}"
                    ))
                ));
                deletion = Some(DeletionImpact {
                    versions,
                    published_version: published,
                    instance_count,
                });
                latest
            }
        };
        let target = OperationTarget {
            id: id.to_owned(),
            definition_id: id.to_owned(),
            version,
            status: None,
            sub_status: None,
            published_version: published,
            latest_version: Some(latest),
            outcome: None,
        };
        let plan = OperationPlan {
            targets: vec![target],
            deletion,
        };
        Ok((plan, warnings))
    }

    /// A definition's latest and published versions now.
    async fn definition_state(&self, tenant: &TenantId, id: &str) -> Result<TargetState, AiError> {
        let Some(latest) = self
            .definitions
            .find(tenant, id, VersionOptions::Latest)
            .await?
        else {
            return Ok(TargetState::missing(id));
        };
        let published = self
            .definitions
            .find(tenant, id, VersionOptions::Published)
            .await?;
        Ok(TargetState {
            latest_version: Some(latest.version()),
            published_version: published.map(|d| d.version()),
            ..TargetState::missing(id)
        }
        .existing())
    }

    /// An instance's state now.
    async fn instance_state(
        &self,
        services: &OperationServices,
        tenant: &TenantId,
        id: &str,
    ) -> Result<(TargetState, Option<WorkflowInstance>), AiError> {
        Ok(match services.instances.find(tenant, id).await? {
            Some(instance) => (
                TargetState {
                    status: Some(instance.status()),
                    sub_status: Some(instance.sub_status()),
                    ..TargetState::missing(id)
                }
                .existing(),
                Some(instance),
            ),
            None => (TargetState::missing(id), None),
        })
    }

    pub(super) async fn target_states(
        &self,
        proposal: &AiProposal,
    ) -> Result<Vec<TargetState>, AiError> {
        let (Some(plan), Some(services)) = (&proposal.operation, &self.operations) else {
            return Ok(Vec::new());
        };
        let mut states = Vec::with_capacity(plan.targets.len());
        for target in &plan.targets {
            states.push(if proposal.kind.targets_instances() {
                self.instance_state(services, &proposal.tenant_id, &target.id)
                    .await?
                    .0
            } else {
                self.definition_state(&proposal.tenant_id, &target.id)
                    .await?
            });
        }
        Ok(states)
    }

    /// Applies a claimed-to-be operation proposal (the caller checked permission, tenant and
    /// state): claim, audit, each target against its baseline, record `Applied`.
    pub(super) async fn apply_operation(
        &self,
        caller: &AiCaller,
        current: AiProposal,
    ) -> Result<AiProposal, AiError> {
        let action = ProposalAction::Apply;
        let actor = Actor::of(caller);
        let services = match self.operation_services() {
            Ok(services) => services,
            Err(error) => return Err(self.refuse(actor, action, (&current).into(), error).await),
        };
        let mut claimed = self.claim(actor, &current, current.clone()).await?;
        let plan = claimed.operation.clone().unwrap_or_default();
        let summary = format!(
            "{} applied proposal '{}': {} {}",
            caller.actor_id,
            claimed.id,
            claimed.kind.verb(),
            targets_text(claimed.kind, &plan)
        );
        let details = transition_details(
            action.as_str(),
            Some(ProposalStatus::Approved),
            ProposalStatus::Applied,
            &claimed,
            json!({
                "reviewedBy": claimed.reviewed_by,
                "definitionDigest": definition_digest(&claimed),
                "targets": plan.targets.len(),
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

        for index in 0..plan.targets.len() {
            let target = &claimed.operation.as_ref().expect("an operation").targets[index];
            // An apply that took over a lapsed claim continues after what was recorded.
            if target.outcome.is_some() {
                continue;
            }
            let deletion = plan.deletion.as_ref();
            let outcome = match self
                .act_on(services, &claimed.tenant_id, claimed.kind, target, deletion)
                .await
            {
                Ok(outcome) => outcome,
                // The target could not even be read: nothing was done to it, so the claim
                // is given up (with the outcomes recorded so far) for a later apply.
                Err(error) => {
                    self.release(&claimed).await;
                    self.apply_failed(actor, &claimed, &error).await;
                    return Err(error);
                }
            };
            self.audit_target(actor, &claimed, target, &outcome).await;
            let mut next = claimed.clone();
            if let Some(plan) = next.operation.as_mut() {
                plan.targets[index].outcome = Some(outcome);
            }
            next.revision += 1;
            if let Err(error) = self.record_applied(&claimed, &next).await {
                self.apply_failed(actor, &claimed, &error).await;
                return Err(error);
            }
            claimed = next;
        }

        let mut applied = claimed.clone();
        applied.status = ProposalStatus::Applied;
        applied.applied_at = Some(self.clock.now());
        applied.revision += 1;
        if let Err(error) = self.record_applied(&claimed, &applied).await {
            self.apply_failed(actor, &claimed, &error).await;
            return Err(error);
        }
        self.announce(
            AiStreamEventType::ProposalUpdated,
            &applied,
            Some(ProposalStatus::Approved),
        )
        .await;
        Ok(applied)
    }

    /// Carries out the operation on one target if its state is still its baseline.
    /// A deletion also needs the number of the definition's instances to be what the
    /// reviewer saw (`deletion`), since deleting a definition deletes its instances.
    async fn act_on(
        &self,
        services: &OperationServices,
        tenant: &TenantId,
        kind: ProposalKind,
        target: &OperationTarget,
        deletion: Option<&DeletionImpact>,
    ) -> Result<TargetOutcome, AiError> {
        let (state, instance) = if kind.targets_instances() {
            self.instance_state(services, tenant, &target.id).await?
        } else {
            (self.definition_state(tenant, &target.id).await?, None)
        };
        let stale = |reason: String| TargetOutcome {
            result: TargetResult::Stale,
            reason: Some(reason),
            new_instance_id: None,
        };
        if !state.matches(target) {
            return Ok(stale(state.change_from(target)));
        }
        if let Some(deletion) = deletion.filter(|_| kind == ProposalKind::Delete) {
            let now = instance_count(services, tenant, &target.id).await?;
            if now != deletion.instance_count {
                return Ok(stale(format!(
                    "workflow '{}' had {} instance(s) when proposed and has {now} now; \
                     deleting it would delete them all",
                    target.id, deletion.instance_count
                )));
            }
        }
        let id = target.id.as_str();
        let mut new_instance_id = None;
        let done: Result<(), WorkflowError> = match kind {
            ProposalKind::Retry => services.operator.retry(tenant, id).await,
            ProposalKind::Cancel => services.operator.cancel(tenant, id).await,
            ProposalKind::Restart => match instance {
                Some(instance) => services
                    .operator
                    .restart(tenant, &instance)
                    .await
                    .map(|new| new_instance_id = Some(new)),
                None => Ok(()),
            },
            ProposalKind::Publish => services.publisher.publish(tenant, id, target.version).await,
            ProposalKind::Unpublish => services.publisher.unpublish(tenant, id).await,
            ProposalKind::Delete => services.publisher.delete(tenant, id).await,
            ProposalKind::Create | ProposalKind::Update => Ok(()),
            // A kind newer than this host: nothing is done, and the target says so.
            other => Err(WorkflowError::Backend {
                message: format!("this host cannot apply '{}' operations", other.as_str()),
            }),
        };
        Ok(match done {
            Ok(()) => TargetOutcome {
                result: TargetResult::Done,
                reason: None,
                new_instance_id,
            },
            Err(error) => TargetOutcome {
                result: TargetResult::Failed,
                reason: Some(self.redactor.redact_str(&error.to_string()).into_owned()),
                new_instance_id: None,
            },
        })
    }

    /// One record per target, after its effect; a record that cannot be written is logged
    /// (the effect happened and the outcome is stored in the proposal).
    async fn audit_target(
        &self,
        actor: Actor<'_>,
        proposal: &AiProposal,
        target: &OperationTarget,
        outcome: &TargetOutcome,
    ) {
        let summary = format!(
            "{} of '{}' by proposal '{}': {}{}",
            proposal.kind.verb(),
            target.id,
            proposal.id,
            outcome.result.as_str(),
            outcome
                .reason
                .as_deref()
                .map_or_else(String::new, |reason| format!(" ({reason})"))
        );
        let details = json!({
            "action": "apply",
            "kind": proposal.kind,
            "target": target.id,
            "definitionId": target.definition_id,
            "baseline": {
                "version": target.version,
                "status": target.status,
                "subStatus": target.sub_status,
                "latestVersion": target.latest_version,
                "publishedVersion": target.published_version,
            },
            "outcome": outcome,
        });
        let result = match outcome.result {
            TargetResult::Done => AuditOutcome::Success,
            // Stale, failed, or a result newer than this host: the target was not acted on.
            _ => AuditOutcome::Failure,
        };
        if let Err(error) = self
            .audit(
                actor,
                AuditAction::PROPOSAL_TARGET,
                result,
                ProposalRef::from(proposal),
                summary,
                details,
            )
            .await
        {
            tracing::error!(
                proposal.id = %proposal.id,
                target = %target.id,
                code = error.code(),
                "the outcome of an operation target could not be audited"
            );
        }
    }

    pub(super) async fn drop_targets(
        &self,
        caller: &AiCaller,
        id: &ProposalId,
        dropped: &[String],
    ) -> Result<AiProposal, AiError> {
        let action = ProposalAction::DropTargets;
        let actor = Actor::of(caller);
        self.authorize(caller, id, action).await?;
        let current = self.load_for(actor, id, action).await?;
        self.authorize_operation(caller, &current, action).await?;
        let checked = match &current.operation {
            Some(plan) if current.kind.targets_instances() => {
                let known: HashSet<&str> = plan.targets.iter().map(|t| t.id.as_str()).collect();
                match dropped.iter().find(|id| !known.contains(id.as_str())) {
                    Some(unknown) => Err(AiError::bad_request(
                        "unknown_target",
                        format!("'{unknown}' is not a target of proposal '{}'", current.id),
                    )),
                    None if dropped.is_empty() => Err(AiError::bad_request(
                        "targets_required",
                        "name the targets to drop",
                    )),
                    None => {
                        let drop: HashSet<&str> = dropped.iter().map(String::as_str).collect();
                        let kept: Vec<OperationTarget> = plan
                            .targets
                            .iter()
                            .filter(|t| !drop.contains(t.id.as_str()))
                            .cloned()
                            .collect();
                        if kept.is_empty() {
                            Err(AiError::bad_request(
                                "targets_required",
                                "at least one target must remain; reject the proposal instead",
                            ))
                        } else {
                            Ok(kept)
                        }
                    }
                }
            }
            _ => Err(AiError::bad_request(
                "not_droppable",
                format!(
                    "proposal '{}' ({}) has no instance targets to drop",
                    current.id,
                    current.kind.as_str()
                ),
            )),
        };
        let kept = match checked {
            Ok(kept) => kept,
            Err(error) => return Err(self.refuse(actor, action, (&current).into(), error).await),
        };
        let mut next = current.clone();
        if let Some(plan) = next.operation.as_mut() {
            plan.targets = kept;
        }
        next.revision += 1;
        let remaining = next.operation.as_ref().map_or(0, |p| p.targets.len());
        let summary = format!(
            "{} dropped {} target(s) from proposal '{}'; {remaining} remain",
            caller.actor_id,
            dropped.len(),
            current.id
        );
        self.commit(
            actor,
            action,
            &current,
            next,
            Note::success(summary, json!({"dropped": dropped, "remaining": remaining})),
        )
        .await
    }
}

impl TargetState {
    fn existing(mut self) -> Self {
        self.exists = true;
        self
    }
}

/// How many instances of the definition `id` the tenant has.
async fn instance_count(
    services: &OperationServices,
    tenant: &TenantId,
    id: &str,
) -> Result<u64, AiError> {
    let query = InstanceQuery {
        definition_ids: vec![id.to_owned()],
        page: PageRequest::new(0, 1),
        ..InstanceQuery::default()
    };
    let total = services.instances.search(tenant, &query).await?.total;
    Ok(u64::try_from(total).unwrap_or(u64::MAX))
}

/// "3 instances" or "workflow 'orders' version 2", for summaries.
fn targets_text(kind: ProposalKind, plan: &OperationPlan) -> String {
    match plan.targets.first() {
        Some(target) if !kind.targets_instances() => {
            format!("workflow '{}' version {}", target.id, target.version)
        }
        _ => format!("{} instance(s)", plan.targets.len()),
    }
}
