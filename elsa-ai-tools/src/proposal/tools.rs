//! `workflow.proposeCreate` and `workflow.proposeUpdate`: a draft or a patch, turned into a
//! stored, validated, reviewable proposal by the host's proposal intake. Neither writes a
//! workflow: a person approves and applies every proposal.

use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiProposal, AiTool, AiToolDefinition, AiToolExecutionContext, AiToolRegistration,
    AuditBehavior, BaselineRef, DangerLevel, Permission, ProposalDraft, ProposalKind,
    ToolMutability,
};
use elsa_workflows::diff::{
    ActivityChange, ActivitySummary, ChangeKind, ConnectionSummary, DiffCounts,
};
use elsa_workflows::validate::validate;
use elsa_workflows::{Diagnostic, GraphDiff, VersionOptions, WorkflowDefinition, mark_predating};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::draft::{DraftError, WorkflowDraft};
use super::patch::{PatchError, PatchOperation, apply_patch, patch_json};
use crate::envelope::{Evidence, count, object};
use crate::graph::{Graph, GraphActivity, GraphConnection, MAX_CONNECTIONS};
use crate::names;
use crate::support::{Listing, built_in, clip, input, quoted};

/// How many diagnostics a proposal result lists.
const MAX_DIAGNOSTICS: usize = 30;
/// How many activities a proposal preview lists.
const MAX_PREVIEW_ACTIVITIES: usize = 50;

/// What a proposal tool tells the model about a proposal: never the stored payload itself.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProposalSummary {
    proposal_id: String,
    status: &'static str,
    kind: ProposalKind,
    definition_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<BaselineRef>,
    validation: ValidationSummary,
    graph_diff: DiffSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    preview: Option<Preview>,
    next_step: &'static str,
}

impl ProposalSummary {
    fn of(proposal: &AiProposal) -> Self {
        Self {
            proposal_id: proposal.id.to_string(),
            status: proposal.status.as_str(),
            kind: proposal.kind,
            definition_id: proposal.definition_id().to_owned(),
            baseline: proposal.baseline.clone(),
            validation: ValidationSummary::of(&proposal.diagnostics),
            // A creation's diff adds everything: the preview already shows it.
            graph_diff: DiffSummary::of(
                &proposal.graph_diff,
                proposal.kind == ProposalKind::Update,
            ),
            preview: proposal.definition().map(Preview::of),
            next_step: "The proposal changes nothing yet: a person reviews it, and only an \
                        approved proposal is applied. Tell the user its id.",
        }
    }

    /// A proposal tool's result: the summary in the grounding envelope, with the proposal's
    /// warnings, and the proposal and its baseline as evidence.
    pub(crate) fn result(proposal: &AiProposal) -> Result<Value, AiError> {
        let summary = Self::of(proposal);
        let what = match &proposal.baseline {
            Some(baseline) => format!(
                "update workflow {} (baseline version {})",
                baseline.definition_id, baseline.version
            ),
            None => format!("create workflow {}", proposal.definition_id()),
        };
        let line = format!(
            "Proposal {} to {what} is {}: {}, {}. Nothing changes until a person approves it.",
            proposal.id,
            summary.status,
            count(summary.validation.errors, "error", "errors"),
            count(summary.validation.warnings, "warning", "warnings")
        );
        let mut evidence = vec![Evidence::proposal(proposal.id.as_str())];
        evidence.extend(
            proposal
                .baseline
                .as_ref()
                .map(|b| Evidence::definition(&b.definition_id, b.version)),
        );
        let warnings: Vec<String> = proposal.warnings.iter().map(|w| clip(w, 300)).collect();
        object(&line, summary, &warnings, &evidence)
    }
}

/// How many items each list of a diff summary shows.
const MAX_DIFF_ITEMS: usize = 20;

/// A graph diff for a model: the counts, and the first items of each list in one line each.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DiffSummary {
    counts: DiffCounts,
    #[serde(skip_serializing_if = "Option::is_none")]
    changes: Option<DiffItems>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DiffItems {
    header: Vec<String>,
    activities_added: Listing<String>,
    activities_removed: Listing<String>,
    activities_changed: Listing<String>,
    connections_added: Listing<String>,
    connections_removed: Listing<String>,
    variables_added: Listing<String>,
    variables_removed: Listing<String>,
    variables_changed: Listing<String>,
}

fn activity_line(activity: &ActivitySummary) -> String {
    format!(
        "{} ({})",
        activity.id.as_deref().unwrap_or(&activity.path),
        activity.type_name
    )
}

fn connection_line(connection: &ConnectionSummary) -> String {
    format!(
        "{}:{} -> {}:{}",
        connection.source.activity,
        connection.source.port,
        connection.target.activity,
        connection.target.port
    )
}

fn change_line(change: &ActivityChange) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (what, changed) in [
        ("type", change.type_change.is_some()),
        ("version", change.version_change.is_some()),
        ("name", change.name_change.is_some()),
        ("display text", change.display_text_change.is_some()),
        ("container", change.parent_change.is_some()),
        ("trigger flag", change.can_start_workflow_change.is_some()),
        ("start", change.start_change.is_some()),
    ] {
        if changed {
            parts.push(what.to_owned());
        }
    }
    parts.extend(change.inputs.iter().map(|input| {
        let kind = match input.kind {
            ChangeKind::Added => "set",
            ChangeKind::Removed => "removed",
            ChangeKind::Modified => "changed",
        };
        format!("input {} {kind}", input.name)
    }));
    clip(
        &format!(
            "{} ({}): {}",
            change.id.as_deref().unwrap_or(&change.path),
            change.type_name,
            parts.join(", ")
        ),
        300,
    )
}

impl DiffSummary {
    pub(crate) fn of(diff: &GraphDiff, with_items: bool) -> Self {
        let list = |items: Vec<String>| Listing::first(items, MAX_DIFF_ITEMS);
        Self {
            counts: diff.counts(),
            changes: with_items.then(|| DiffItems {
                header: diff
                    .header
                    .iter()
                    .map(|h| {
                        clip(
                            &format!("{}: {:?} -> {:?}", h.field, h.before, h.after),
                            300,
                        )
                    })
                    .collect(),
                activities_added: list(diff.activities_added.iter().map(activity_line).collect()),
                activities_removed: list(
                    diff.activities_removed.iter().map(activity_line).collect(),
                ),
                activities_changed: list(diff.activities_changed.iter().map(change_line).collect()),
                connections_added: list(
                    diff.connections_added.iter().map(connection_line).collect(),
                ),
                connections_removed: list(
                    diff.connections_removed
                        .iter()
                        .map(connection_line)
                        .collect(),
                ),
                variables_added: list(
                    diff.variables_added
                        .iter()
                        .map(|v| v.name.clone())
                        .collect(),
                ),
                variables_removed: list(
                    diff.variables_removed
                        .iter()
                        .map(|v| v.name.clone())
                        .collect(),
                ),
                variables_changed: list(
                    diff.variables_changed
                        .iter()
                        .map(|v| format!("{} ({})", v.name, v.fields.join(", ")))
                        .collect(),
                ),
            }),
        }
    }
}

/// Validation findings, counted and listed first-N.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ValidationSummary {
    passed: bool,
    errors: usize,
    warnings: usize,
    diagnostics: Listing<DiagnosticRow>,
}

impl ValidationSummary {
    fn passed(&self) -> bool {
        self.passed
    }

    pub(crate) fn of(diagnostics: &[Diagnostic]) -> Self {
        let errors = diagnostics.iter().filter(|d| d.is_error()).count();
        // Errors first, so that a cut list still shows what blocks the draft.
        let mut ordered: Vec<&Diagnostic> = diagnostics.iter().collect();
        ordered.sort_by_key(|d| d.severity);
        Self {
            passed: errors == 0,
            errors,
            warnings: diagnostics.len() - errors,
            diagnostics: Listing::first(
                ordered.into_iter().map(DiagnosticRow::of),
                MAX_DIAGNOSTICS,
            ),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DiagnosticRow {
    severity: elsa_workflows::Severity,
    code: &'static str,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    activity_id: Option<String>,
    path: String,
}

impl DiagnosticRow {
    fn of(diagnostic: &Diagnostic) -> Self {
        Self {
            severity: diagnostic.severity,
            code: diagnostic.code.as_str(),
            message: clip(&diagnostic.message, 300),
            activity_id: diagnostic.activity_id.clone(),
            path: diagnostic.path.clone(),
        }
    }
}

/// A short picture of a drafted definition: its activities and connections.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Preview {
    name: Option<String>,
    activities: Listing<PreviewActivity>,
    connections: Listing<GraphConnection>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PreviewActivity {
    id: Option<String>,
    #[serde(rename = "type")]
    type_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<String>,
}

impl Preview {
    pub(crate) fn of(definition: &WorkflowDefinition) -> Self {
        let graph = Graph::of(definition);
        let Listing { total, items, .. } = graph.activities;
        let mut activities = Listing::first(
            items.into_iter().map(|a: GraphActivity| PreviewActivity {
                id: a.id,
                type_name: a.type_name,
                display_name: a.display_name,
                parent: a.parent,
            }),
            MAX_PREVIEW_ACTIVITIES,
        );
        // The graph view may already have cut the list; keep the true total.
        activities.truncated |= total > activities.returned;
        activities.total = total;
        let Listing {
            total: connection_total,
            items: connections,
            ..
        } = graph.connections;
        let mut connections = Listing::first(connections, MAX_CONNECTIONS);
        connections.truncated |= connection_total > connections.returned;
        connections.total = connection_total;
        Self {
            name: definition.name().map(str::to_owned),
            activities,
            connections,
        }
    }
}

fn invalid_draft(error: &DraftError) -> AiError {
    AiError::bad_request("invalid_draft", error.to_string())
}

fn invalid_patch(error: &PatchError) -> AiError {
    AiError::bad_request("invalid_patch", error.to_string())
}

/// Arguments of `workflow.proposeCreate`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProposeCreateInput {
    /// The new workflow.
    pub draft: WorkflowDraft,
    /// Why the workflow should exist, for the reviewer.
    #[schemars(length(min = 1, max = 4000))]
    pub rationale: String,
}

/// `workflow.proposeCreate`: a structured draft and its rationale become a stored creation
/// proposal with its validation diagnostics, warnings and a graph preview. Needs
/// `propose:workflows`; off until an administrator enables it.
pub struct ProposeCreate {
    definition: AiToolDefinition,
}

impl Default for ProposeCreate {
    fn default() -> Self {
        Self {
            definition: built_in::<ProposeCreateInput>(
                names::PROPOSE_CREATE,
                "Propose a new workflow",
                "Submits a new workflow as a proposal for a person to review; it creates \
                 nothing by itself. Give a rationale and the draft: name, optional description, \
                 variables, activities ({id, type from activities.catalog, name?, inputs as \
                 {\"value\", \"expression\"?}, container?}) and connections ({source, \
                 sourcePort?, target}). Validate it first with workflow.validateDraft. Returns \
                 the proposal id, status and diagnostics.",
                ToolMutability::Proposal,
                DangerLevel::Medium,
                &[Permission::PROPOSE_WORKFLOWS],
                AuditBehavior::RecordInvocationAndResult,
            )
            .with_grounding_name(names::grounding::PROPOSE_CREATE),
        }
    }
}

#[async_trait]
impl AiTool for ProposeCreate {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: ProposeCreateInput = input(&context)?;
        let definition_id = match &args.draft.definition_id {
            Some(id) => id.clone(),
            None => uuid::Uuid::new_v4().simple().to_string(),
        };
        let tenant = &context.caller.tenant_id;
        if context
            .services
            .definitions
            .find(tenant, &definition_id, VersionOptions::Latest)
            .await?
            .is_some()
        {
            return Err(AiError::conflict(
                "definition_exists",
                format!(
                    "workflow definition {} already exists; propose an update with \
                     workflow.proposeUpdate, or choose another definitionId",
                    quoted(&definition_id)
                ),
            ));
        }
        let definition = args
            .draft
            .build(&definition_id)
            .map_err(|e| invalid_draft(&e))?;
        let proposal = context
            .services
            .proposals
            .submit(
                &context.caller,
                ProposalDraft {
                    conversation_id: context.conversation_id.clone(),
                    kind: ProposalKind::Create,
                    baseline: None,
                    definition,
                    patch: None,
                    rationale: args.rationale,
                },
            )
            .await?;
        ProposalSummary::result(&proposal)
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(ProposeCreate::default())) }

/// The update a patch makes: the definition, the version it was read at, the operations.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PatchTarget {
    /// The definition to change.
    #[schemars(length(min = 1, max = 200))]
    pub definition_id: String,
    /// The version the patch was written against (the latest, as workflow.getDefinition
    /// returned it).
    #[schemars(range(min = 1))]
    pub baseline_version: i32,
    /// The changes, applied in order, all or nothing. Ops: addActivity, removeActivity,
    /// connect, disconnect, setInput, removeInput, setName, setDescription, addVariable,
    /// removeVariable.
    #[schemars(length(min = 1, max = 200))]
    pub operations: Vec<PatchOperation>,
}

impl PatchTarget {
    /// Reads the baseline (404 when the tenant has no such version; 409 `stale_baseline`
    /// when a newer version exists) and applies the operations to it (400 `invalid_patch`).
    /// Returns the baseline reference and the patched definition.
    pub(crate) async fn apply(
        &self,
        context: &AiToolExecutionContext,
    ) -> Result<(BaselineRef, WorkflowDefinition), AiError> {
        // Reading the baseline is a definition read, whichever tool does it.
        if !context.caller.has(&Permission::READ_WORKFLOWS) {
            return Err(AiError::forbidden(
                "permission_denied",
                format!(
                    "patching a workflow reads its baseline and requires '{}'",
                    Permission::READ_WORKFLOWS
                ),
            ));
        }
        let tenant = &context.caller.tenant_id;
        let definitions = &context.services.definitions;
        let baseline = definitions
            .find(
                tenant,
                &self.definition_id,
                VersionOptions::Specific(self.baseline_version),
            )
            .await?
            .ok_or_else(|| {
                AiError::not_found(format!(
                    "workflow definition {} version {}",
                    quoted(&self.definition_id),
                    self.baseline_version
                ))
            })?;
        let latest = definitions
            .find(tenant, &self.definition_id, VersionOptions::Latest)
            .await?
            .map_or(baseline.version(), |d| d.version());
        if latest != self.baseline_version {
            return Err(AiError::conflict(
                "stale_baseline",
                format!(
                    "version {} of workflow definition {} is not the latest (version {latest} \
                     is); read the latest with workflow.getDefinition and patch that",
                    self.baseline_version,
                    quoted(&self.definition_id)
                ),
            ));
        }
        let patched = apply_patch(&baseline, &self.operations).map_err(|e| invalid_patch(&e))?;
        Ok((
            BaselineRef {
                definition_id: self.definition_id.clone(),
                version: self.baseline_version,
            },
            patched,
        ))
    }
}

/// Arguments of `workflow.proposeUpdate`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProposeUpdateInput {
    /// The definition to change.
    #[schemars(length(min = 1, max = 200))]
    pub definition_id: String,
    /// The version the patch was written against: the latest, as workflow.getDefinition
    /// returned it.
    #[schemars(range(min = 1))]
    pub baseline_version: i32,
    /// The changes, applied in order, all or nothing. Ops: addActivity, removeActivity,
    /// connect, disconnect, setInput, removeInput, setName, setDescription, addVariable,
    /// removeVariable.
    #[schemars(length(min = 1, max = 200))]
    pub operations: Vec<PatchOperation>,
    /// Why the change should be made, for the reviewer.
    #[schemars(length(min = 1, max = 4000))]
    pub rationale: String,
}

/// `workflow.proposeUpdate`: a baseline (definition id and version) and a patch of
/// purpose-built operations become a stored update proposal whose payload is the patched
/// definition and whose graph diff is against the baseline. See [`crate::proposal::patch`]
/// for the format and why it is not RFC 6902. Needs `propose:workflows` and, because it reads
/// the baseline, `read:workflows`; off until an administrator enables it.
pub struct ProposeUpdate {
    definition: AiToolDefinition,
}

impl Default for ProposeUpdate {
    fn default() -> Self {
        Self {
            definition: built_in::<ProposeUpdateInput>(
                names::PROPOSE_UPDATE,
                "Propose a workflow change",
                "Submits a change to an existing workflow as a proposal for a person to review; \
                 it changes nothing by itself. Give the definitionId, the baselineVersion you \
                 read with workflow.getDefinition (the latest), a rationale and 'operations', \
                 applied in order, all or nothing: {\"op\": \"addActivity\", \"activity\": {id, \
                 type, name?, inputs?, container?}}, {\"op\": \"removeActivity\", \
                 \"activityId\"}, {\"op\": \"connect\"|\"disconnect\", \"source\", \
                 \"sourcePort\"?, \"target\"}, {\"op\": \"setInput\", \"activityId\", \
                 \"input\", \"value\", \"expression\"?}, {\"op\": \"removeInput\", \
                 \"activityId\", \"input\"}, {\"op\": \"setName\", \"name\"}, {\"op\": \
                 \"setDescription\", \"description\"}, {\"op\": \"addVariable\", \"name\", \
                 \"typeName\", \"value\"?}, {\"op\": \"removeVariable\", \"name\"}. Returns the \
                 proposal id, status, diagnostics and diff.",
                ToolMutability::Proposal,
                DangerLevel::Medium,
                &[Permission::PROPOSE_WORKFLOWS, Permission::READ_WORKFLOWS],
                AuditBehavior::RecordInvocationAndResult,
            )
            .with_grounding_name(names::grounding::PROPOSE_UPDATE),
        }
    }
}

#[async_trait]
impl AiTool for ProposeUpdate {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: ProposeUpdateInput = input(&context)?;
        let target = PatchTarget {
            definition_id: args.definition_id,
            baseline_version: args.baseline_version,
            operations: args.operations,
        };
        let (baseline, definition) = target.apply(&context).await?;
        // The operations as the model wrote them (and redaction left them) are the record.
        let operations = context
            .arguments
            .get("operations")
            .cloned()
            .unwrap_or(Value::Null);
        let proposal = context
            .services
            .proposals
            .submit(
                &context.caller,
                ProposalDraft {
                    conversation_id: context.conversation_id.clone(),
                    kind: ProposalKind::Update,
                    baseline: Some(baseline),
                    definition,
                    patch: Some(patch_json(&operations)),
                    rationale: args.rationale,
                },
            )
            .await?;
        ProposalSummary::result(&proposal)
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(ProposeUpdate::default())) }

/// Arguments of `workflow.validateDraft`: exactly one of `draft` and `update`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValidateDraftInput {
    /// A new workflow, as workflow.proposeCreate takes it.
    #[serde(default)]
    pub draft: Option<WorkflowDraft>,
    /// A change to an existing workflow, as workflow.proposeUpdate takes it (without the
    /// rationale).
    #[serde(default)]
    pub update: Option<PatchTarget>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DraftValidation {
    valid: bool,
    definition_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<BaselineRef>,
    validation: ValidationSummary,
    preview: Preview,
    persisted: bool,
}

/// `workflow.validateDraft`: validates a structured draft (or a baseline plus patch) against
/// the tenant's activity catalog and returns the diagnostics; it persists nothing. Needs
/// `propose:workflows` (and `read:workflows` for a patch, which reads its baseline); off
/// until an administrator enables it.
pub struct ValidateDraft {
    definition: AiToolDefinition,
}

impl Default for ValidateDraft {
    fn default() -> Self {
        Self {
            definition: built_in::<ValidateDraftInput>(
                names::VALIDATE_DRAFT,
                "Validate a workflow draft",
                "Checks a draft against the tenant's activity catalog without storing anything: \
                 'draft' as workflow.proposeCreate takes it, or 'update' ({definitionId, \
                 baselineVersion, operations}) as workflow.proposeUpdate takes it. Returns \
                 'valid' and the diagnostics (code, message, activity id), errors first.",
                ToolMutability::Proposal,
                DangerLevel::Medium,
                &[Permission::PROPOSE_WORKFLOWS],
                AuditBehavior::RecordInvocationAndResult,
            )
            .with_grounding_name(names::grounding::VALIDATE_DRAFT),
        }
    }
}

#[async_trait]
impl AiTool for ValidateDraft {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: ValidateDraftInput = input(&context)?;
        let (baseline, definition) = match (args.draft, args.update) {
            (Some(draft), None) => {
                let id = draft
                    .definition_id
                    .clone()
                    .unwrap_or_else(|| "draft".to_owned());
                (None, draft.build(&id).map_err(|e| invalid_draft(&e))?)
            }
            (None, Some(update)) => {
                let (baseline, patched) = update.apply(&context).await?;
                (Some(baseline), patched)
            }
            _ => {
                return Err(AiError::bad_request(
                    "invalid_arguments",
                    "give exactly one of 'draft' (a new workflow) and 'update' (a patch of an \
                     existing one)",
                ));
            }
        };
        let tenant = &context.caller.tenant_id;
        let catalog = context.services.catalog.list(tenant).await?;
        let mut diagnostics = validate(&definition, &catalog);
        let mut evidence = Vec::new();
        // As a proposal would be judged: what the baseline already had does not block.
        if let Some(baseline) = &baseline {
            evidence.push(Evidence::definition(
                &baseline.definition_id,
                baseline.version,
            ));
            if let Some(before) = context
                .services
                .definitions
                .find(
                    tenant,
                    &baseline.definition_id,
                    VersionOptions::Specific(baseline.version),
                )
                .await?
            {
                mark_predating(
                    &mut diagnostics,
                    &validate(&before, &catalog),
                    baseline.version,
                );
            }
        }
        // And the descriptors the draft was checked against.
        let nodes = definition.activities();
        let used: std::collections::BTreeSet<&str> =
            nodes.iter().map(|node| node.type_name()).collect();
        evidence.extend(
            catalog
                .iter()
                .filter(|d| used.contains(d.type_name.as_str()))
                .map(|d| Evidence::descriptor(&d.type_name, d.version)),
        );
        let validation = ValidationSummary::of(&diagnostics);
        let line = format!(
            "The draft of workflow {} {}: {}, {}. Nothing was stored.",
            definition.definition_id(),
            if validation.passed() {
                "passes validation"
            } else {
                "does not pass validation"
            },
            count(validation.errors, "error", "errors"),
            count(validation.warnings, "warning", "warnings")
        );
        object(
            &line,
            DraftValidation {
                valid: validation.passed(),
                definition_id: definition.definition_id().to_owned(),
                baseline,
                validation,
                preview: Preview::of(&definition),
                persisted: false,
            },
            &[],
            &evidence,
        )
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(ValidateDraft::default())) }
