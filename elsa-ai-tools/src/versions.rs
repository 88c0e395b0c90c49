//! `workflow.listVersions` and `workflow.compareVersions`: a definition's stored versions,
//! and what changed between two of them (the header and graph diff the console draws for
//! proposals), so "what changed between version 3 and 5?" has an answer.

use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiTool, AiToolDefinition, AiToolExecutionContext, AiToolRegistration, AuditBehavior,
    DangerLevel, Permission, ToolMutability,
};
use elsa_workflows::{DiffCounts, GraphDiff};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::envelope::{Evidence, GroundedList, count, object, shown};
use crate::graph::DefinitionHeader;
use crate::names;
use crate::support::{Listing, built_in, input, not_found};
use crate::workflow::{DefinitionLocator, DefinitionRow, NamedVersion, VersionSelector};

/// Arguments of `workflow.listVersions`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListVersionsInput {
    /// The workflow definition id.
    #[schemars(length(min = 1, max = 200))]
    pub definition_id: String,
}

/// `workflow.listVersions` (`workflows.listVersions`): every stored version of one
/// definition of the caller's tenant, oldest first. Needs `read:workflows`.
pub struct ListVersions {
    definition: AiToolDefinition,
}

impl Default for ListVersions {
    fn default() -> Self {
        Self {
            definition: built_in::<ListVersionsInput>(
                names::LIST_VERSIONS,
                "List workflow versions",
                "Lists the stored versions of one workflow definition, oldest first: version \
                 number, name, latest and published flags, activity count. Compare two with \
                 workflow.compareVersions.",
                ToolMutability::ReadOnly,
                DangerLevel::Low,
                &[Permission::READ_WORKFLOWS],
                AuditBehavior::RecordInvocation,
            )
            .with_grounding_name(names::grounding::LIST_VERSIONS),
        }
    }
}

#[async_trait]
impl AiTool for ListVersions {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: ListVersionsInput = input(&context)?;
        let id = args.definition_id.trim();
        let versions = context
            .services
            .definitions
            .versions(&context.caller.tenant_id, id)
            .await?;
        if versions.is_empty() {
            return Err(not_found("workflow definition", id));
        }
        let rows = versions.into_iter().map(DefinitionRow::from);
        let listing = Listing::first(rows, context.limits.max_items);
        let id = id.to_owned();
        GroundedList::unpaged(listing).finish(
            &context.limits,
            |listing| {
                format!(
                    "Workflow {id} has {}; showing {}.",
                    count(listing.total, "version", "versions"),
                    shown(listing, 0)
                )
            },
            DefinitionRow::evidence,
        )
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(ListVersions::default())) }

/// Arguments of `workflow.compareVersions`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompareVersionsInput {
    /// The workflow definition id.
    #[schemars(length(min = 1, max = 200))]
    pub definition_id: String,
    /// The older version: a number, "published" or "latest".
    pub from: VersionSelector,
    /// The newer version (default "latest").
    #[serde(default)]
    pub to: Option<VersionSelector>,
}

/// `workflow.compareVersions`' answer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Comparison {
    definition_id: String,
    from: DefinitionHeader,
    to: DefinitionHeader,
    counts: DiffCounts,
    diff: GraphDiff,
}

/// `workflow.compareVersions` (`workflows.compareVersions`): what changed between two stored
/// versions of one definition of the caller's tenant — the header (name, description) and
/// the graph (activities added, removed and changed with their changed inputs, connections,
/// variables). Needs `read:workflows`.
pub struct CompareVersions {
    definition: AiToolDefinition,
}

impl Default for CompareVersions {
    fn default() -> Self {
        Self {
            definition: built_in::<CompareVersionsInput>(
                names::COMPARE_VERSIONS,
                "Compare workflow versions",
                "Compares two versions of one workflow definition ('from' and 'to': a number, \
                 \"published\" or \"latest\"): header fields changed, activities added, removed \
                 and changed (with their changed inputs), connections and variables added and \
                 removed.",
                ToolMutability::ReadOnly,
                DangerLevel::Low,
                &[Permission::READ_WORKFLOWS],
                AuditBehavior::RecordInvocation,
            )
            .with_grounding_name(names::grounding::COMPARE_VERSIONS),
        }
    }
}

#[async_trait]
impl AiTool for CompareVersions {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: CompareVersionsInput = input(&context)?;
        let locate = |version: VersionSelector| DefinitionLocator {
            definition_id: Some(args.definition_id.clone()),
            version: Some(version),
            ..DefinitionLocator::default()
        };
        let from = locate(args.from).find(&context).await?;
        let to = locate(
            args.to
                .unwrap_or(VersionSelector::Named(NamedVersion::Latest)),
        )
        .find(&context)
        .await?;
        let diff = GraphDiff::between(&from, &to);
        let counts = diff.counts();
        let summary = if diff.is_empty() {
            format!(
                "Workflow {} versions {} and {} do not differ.",
                from.definition_id(),
                from.version(),
                to.version()
            )
        } else {
            let mut parts = Vec::new();
            for (n, singular, plural) in [
                (
                    counts.header,
                    "header field changed",
                    "header fields changed",
                ),
                (
                    counts.activities_added,
                    "activity added",
                    "activities added",
                ),
                (
                    counts.activities_removed,
                    "activity removed",
                    "activities removed",
                ),
                (
                    counts.activities_changed,
                    "activity changed",
                    "activities changed",
                ),
                (
                    counts.connections_added,
                    "connection added",
                    "connections added",
                ),
                (
                    counts.connections_removed,
                    "connection removed",
                    "connections removed",
                ),
                (counts.variables_added, "variable added", "variables added"),
                (
                    counts.variables_removed,
                    "variable removed",
                    "variables removed",
                ),
                (
                    counts.variables_changed,
                    "variable changed",
                    "variables changed",
                ),
            ] {
                if n > 0 {
                    parts.push(count(n, singular, plural));
                }
            }
            format!(
                "Workflow {} version {} to {}: {}.",
                from.definition_id(),
                from.version(),
                to.version(),
                parts.join(", ")
            )
        };
        let evidence = [
            Evidence::definition(from.definition_id(), from.version()),
            Evidence::definition(to.definition_id(), to.version()),
        ];
        object(
            &summary,
            Comparison {
                definition_id: from.definition_id().to_owned(),
                from: DefinitionHeader::of(&from),
                to: DefinitionHeader::of(&to),
                counts,
                diff,
            },
            &[],
            &evidence,
        )
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(CompareVersions::default())) }
