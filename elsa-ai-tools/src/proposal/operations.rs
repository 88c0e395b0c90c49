//! The operational proposal tools: `instance.proposeRetry`, `instance.proposeCancel`,
//! `instance.proposeRestart`, `workflow.proposePublish`, `workflow.proposeUnpublish` and
//! `workflow.proposeDelete` (upstream's deferred `instances.propose*` / `workflows.propose*`).
//!
//! Each turns a request into an operation proposal through the host's
//! [`AiProposalIntake::submit_operation`](elsa_ai_abstractions::AiProposalIntake), which
//! reads every target, checks that the operation applies to its state and records that
//! state as its baseline. None of them acts: a person approves the proposal and the server
//! applies it, skipping any target whose state changed meanwhile. All are off until an
//! administrator enables them; delete and cancel are `High` danger, the others `Medium`.

use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiProposal, AiTool, AiToolDefinition, AiToolExecutionContext, AiToolRegistration,
    AuditBehavior, DangerLevel, OperationDraft, OperationTarget, Permission, ProposalKind,
    ToolMutability,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::envelope::{Evidence, object};
use crate::names;
use crate::support::{built_in, clip, input};

/// Arguments of the instance operations (retry, cancel, restart).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InstanceOperationInput {
    /// The workflow instances to act on (ids as instance.search or instance.get returned
    /// them).
    #[schemars(length(min = 1, max = 100))]
    pub instance_ids: Vec<String>,
    /// Why, for the reviewer.
    #[schemars(length(min = 1, max = 4000))]
    pub rationale: String,
}

/// Arguments of the definition operations (publish, unpublish, delete).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DefinitionOperationInput {
    /// The workflow definition to act on.
    #[schemars(length(min = 1, max = 200))]
    pub definition_id: String,
    /// Publish only: the version to publish, which must be the latest (default the latest).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub version: Option<i32>,
    /// Why, for the reviewer.
    #[schemars(length(min = 1, max = 4000))]
    pub rationale: String,
}

/// One operational proposal tool; which one is its [`ProposalKind`].
pub struct ProposeOperation {
    kind: ProposalKind,
    definition: AiToolDefinition,
}

impl ProposeOperation {
    /// The tool proposing `kind`, one of the operation kinds.
    ///
    /// # Panics
    ///
    /// When `kind` writes a definition (create, update): those have their own tools; and
    /// when `kind` is an operation this crate has no tool for.
    pub fn new(kind: ProposalKind) -> Self {
        let (name, grounding, title, what, danger) = match kind {
            ProposalKind::Retry => (
                names::PROPOSE_RETRY,
                names::grounding::PROPOSE_RETRY,
                "Propose retrying instances",
                "run faulted workflow instances again from their faulted activities",
                DangerLevel::Medium,
            ),
            ProposalKind::Cancel => (
                names::PROPOSE_CANCEL,
                names::grounding::PROPOSE_CANCEL,
                "Propose cancelling instances",
                "cancel running (or suspended) workflow instances",
                DangerLevel::High,
            ),
            ProposalKind::Restart => (
                names::PROPOSE_RESTART,
                names::grounding::PROPOSE_RESTART,
                "Propose restarting instances",
                "start finished workflow instances again, each as a new instance of the same \
                 definition version with the same input and correlation id",
                DangerLevel::Medium,
            ),
            ProposalKind::Publish => (
                names::PROPOSE_PUBLISH,
                names::grounding::PROPOSE_PUBLISH,
                "Propose publishing a workflow",
                "publish a workflow definition's latest version",
                DangerLevel::Medium,
            ),
            ProposalKind::Unpublish => (
                names::PROPOSE_UNPUBLISH,
                names::grounding::PROPOSE_UNPUBLISH,
                "Propose unpublishing a workflow",
                "unpublish a workflow definition's published version, so that it no longer \
                 starts from triggers",
                DangerLevel::Medium,
            ),
            ProposalKind::Delete => (
                names::PROPOSE_DELETE,
                names::grounding::PROPOSE_DELETE,
                "Propose deleting a workflow",
                "delete a workflow definition with all its versions",
                DangerLevel::High,
            ),
            // Create and update write definitions and have their own tools; a kind newer than
            // this crate has no tool here.
            _ => panic!("{kind:?} is not an operation this crate proposes"),
        };
        let permission = kind.operation_permission().expect("an operation");
        let description = format!(
            "Proposes to {what}; it changes nothing by itself: a person reviews the proposal \
             and only an approved proposal is applied, skipping anything whose state changed \
             since. {} Returns the proposal id and each target's state as recorded.",
            if kind.targets_instances() {
                "Give instanceIds (at most 100) and a rationale."
            } else if kind == ProposalKind::Publish {
                "Give the definitionId, optionally the version (it must be the latest), and a \
                 rationale."
            } else {
                "Give the definitionId and a rationale."
            }
        );
        let definition = if kind.targets_instances() {
            built_in::<InstanceOperationInput>(
                name,
                title,
                &description,
                ToolMutability::Proposal,
                danger,
                &[Permission::PROPOSE_WORKFLOWS, permission],
                AuditBehavior::RecordInvocationAndResult,
            )
        } else {
            built_in::<DefinitionOperationInput>(
                name,
                title,
                &description,
                ToolMutability::Proposal,
                danger,
                &[Permission::PROPOSE_WORKFLOWS, permission],
                AuditBehavior::RecordInvocationAndResult,
            )
        };
        Self {
            kind,
            definition: definition.with_grounding_name(grounding),
        }
    }
}

#[async_trait]
impl AiTool for ProposeOperation {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let (targets, version, rationale) = if self.kind.targets_instances() {
            let args: InstanceOperationInput = input(&context)?;
            (args.instance_ids, None, args.rationale)
        } else {
            let args: DefinitionOperationInput = input(&context)?;
            if args.version.is_some() && self.kind != ProposalKind::Publish {
                return Err(AiError::bad_request(
                    "invalid_arguments",
                    "'version' is for publishing only",
                ));
            }
            (vec![args.definition_id], args.version, args.rationale)
        };
        let proposal = context
            .services
            .proposals
            .submit_operation(
                &context.caller,
                OperationDraft {
                    conversation_id: context.conversation_id.clone(),
                    kind: self.kind,
                    targets,
                    version,
                    rationale,
                },
            )
            .await?;
        operation_result(&proposal)
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(ProposeOperation::new(ProposalKind::Retry))) }
inventory::submit! { AiToolRegistration::new(|| Arc::new(ProposeOperation::new(ProposalKind::Cancel))) }
inventory::submit! { AiToolRegistration::new(|| Arc::new(ProposeOperation::new(ProposalKind::Restart))) }
inventory::submit! { AiToolRegistration::new(|| Arc::new(ProposeOperation::new(ProposalKind::Publish))) }
inventory::submit! { AiToolRegistration::new(|| Arc::new(ProposeOperation::new(ProposalKind::Unpublish))) }
inventory::submit! { AiToolRegistration::new(|| Arc::new(ProposeOperation::new(ProposalKind::Delete))) }

/// What an operational proposal tool tells the model.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OperationSummary<'a> {
    proposal_id: &'a str,
    status: &'static str,
    kind: ProposalKind,
    targets: &'a [OperationTarget],
    #[serde(skip_serializing_if = "Option::is_none")]
    deletion: Option<&'a elsa_ai_abstractions::DeletionImpact>,
    next_step: &'static str,
}

fn operation_result(proposal: &AiProposal) -> Result<Value, AiError> {
    let plan = proposal.operation.as_ref();
    let targets = plan.map_or(&[][..], |p| &p.targets[..]);
    let what = if proposal.kind.targets_instances() {
        format!("{} {} instance(s)", proposal.kind.verb(), targets.len())
    } else {
        format!(
            "{} workflow {}",
            proposal.kind.verb(),
            proposal.definition_id()
        )
    };
    let line = format!(
        "Proposal {} to {what} is {}. Nothing changes until a person approves and applies it.",
        proposal.id,
        proposal.status.as_str()
    );
    let summary = OperationSummary {
        proposal_id: proposal.id.as_str(),
        status: proposal.status.as_str(),
        kind: proposal.kind,
        targets,
        deletion: plan.and_then(|p| p.deletion.as_ref()),
        next_step: "Tell the user the proposal id; a person reviews it.",
    };
    let mut evidence = vec![Evidence::proposal(proposal.id.as_str())];
    evidence.extend(targets.iter().map(|target| {
        if proposal.kind.targets_instances() {
            Evidence::instance(&target.id)
        } else {
            Evidence::definition(&target.id, target.version)
        }
    }));
    let warnings: Vec<String> = proposal.warnings.iter().map(|w| clip(w, 300)).collect();
    object(&line, summary, &warnings, &evidence)
}
