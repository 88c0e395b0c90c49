//! `instance.aggregateFailures`: failures inside the attached scope, grouped by workflow,
//! activity type and error category.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiError, AiTool, AiToolDefinition, AiToolExecutionContext, AiToolRegistration, AuditBehavior,
    DangerLevel, Permission, ToolMutability,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::failures::Failure;
use super::scope::{MAX_SCANNED_INSTANCES, Scope, ScopeEcho, ScopeNarrowing};
use crate::envelope::{Evidence, count, object};
use crate::names;
use crate::support::{DEFAULT_LIMIT, Listing, MAX_LIMIT, built_in, input};

/// How many instance and activity ids a group lists.
const SAMPLES: usize = 5;

/// Arguments of `instance.aggregateFailures`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AggregateFailuresInput {
    /// Only these definitions; each must be in the attached diagnostics scope.
    #[serde(default)]
    #[schemars(length(min = 1, max = 50))]
    pub definition_ids: Option<Vec<String>>,
    /// Start of a window inside the attached time range (RFC 3339).
    #[serde(default)]
    pub from: Option<DateTime<Utc>>,
    /// End of a window inside the attached time range (RFC 3339).
    #[serde(default)]
    pub to: Option<DateTime<Utc>>,
    /// How many groups to return, largest first, 1 to 50 (default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<usize>,
}

/// The grouping key: workflow, activity type, error category.
type GroupKey = (Option<String>, String, String);

/// One group of failures.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FailureGroup {
    #[serde(skip_serializing_if = "Option::is_none")]
    definition_id: Option<String>,
    activity_type: String,
    error_category: String,
    failures: usize,
    instances: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_seen: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_seen: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sample_message: Option<String>,
    activity_ids: Vec<String>,
    sample_instance_ids: Vec<String>,
    /// The group's newest failure, as evidence: its instance and activity.
    #[serde(skip)]
    newest: (String, Option<String>),
}

/// Groups failures, largest group first (then by key, for a stable order).
fn group(failures: &[Failure]) -> Vec<FailureGroup> {
    let mut groups: BTreeMap<GroupKey, Vec<&Failure>> = BTreeMap::new();
    for failure in failures {
        groups
            .entry((
                failure.definition_id.clone(),
                failure.activity_type.clone(),
                failure.category.clone(),
            ))
            .or_default()
            .push(failure);
    }
    let mut out: Vec<FailureGroup> = groups
        .into_iter()
        .map(
            |((definition_id, activity_type, error_category), members)| {
                let instances: BTreeSet<&str> =
                    members.iter().map(|f| f.instance_id.as_str()).collect();
                let activities: BTreeSet<&str> = members
                    .iter()
                    .filter_map(|f| f.activity_id.as_deref())
                    .collect();
                let newest = members
                    .iter()
                    .max_by_key(|f| f.timestamp)
                    .map(|f| (f.instance_id.clone(), f.activity_id.clone()))
                    .unwrap_or_default();
                FailureGroup {
                    definition_id,
                    activity_type,
                    error_category,
                    failures: members.len(),
                    instances: instances.len(),
                    first_seen: members.iter().filter_map(|f| f.timestamp).min(),
                    last_seen: members.iter().filter_map(|f| f.timestamp).max(),
                    sample_message: members.iter().find_map(|f| f.message.clone()),
                    activity_ids: activities
                        .into_iter()
                        .take(SAMPLES)
                        .map(str::to_owned)
                        .collect(),
                    sample_instance_ids: instances
                        .into_iter()
                        .take(SAMPLES)
                        .map(str::to_owned)
                        .collect(),
                    newest,
                }
            },
        )
        .collect();
    out.sort_by_key(|group| std::cmp::Reverse(group.failures));
    out
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Aggregate {
    scope: ScopeEcho,
    total_failures: usize,
    failed_instances: usize,
    groups: Listing<FailureGroup>,
}

/// `instance.aggregateFailures` (`instances.aggregateFailures`): failures grouped by workflow,
/// activity type and error category, only inside the attached diagnostics scope and time
/// range. Needs `read:workflow-instances`.
pub struct AggregateFailures {
    definition: AiToolDefinition,
}

impl Default for AggregateFailures {
    fn default() -> Self {
        Self {
            definition: built_in::<AggregateFailuresInput>(
                names::AGGREGATE_FAILURES,
                "Aggregate failures",
                "Groups failed workflow runs by definition, activity type and error category, \
                 largest group first, with counts, first and last occurrence and sample \
                 instances. Reads only the diagnostics scope and time range attached to the \
                 conversation and refuses without both; the arguments can only narrow them.",
                ToolMutability::ReadOnly,
                DangerLevel::Medium,
                &[Permission::READ_WORKFLOW_INSTANCES],
                AuditBehavior::RecordInvocation,
            )
            .with_grounding_name(names::grounding::AGGREGATE_FAILURES),
        }
    }
}

#[async_trait]
impl AiTool for AggregateFailures {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: AggregateFailuresInput = input(&context)?;
        let scope = Scope::resolve(
            &context.attachments,
            &ScopeNarrowing {
                definition_ids: args.definition_ids,
                from: args.from,
                to: args.to,
            },
        )?;
        let scanned = scope.scan(&context).await?;
        let failed_instances: BTreeSet<&str> = scanned
            .failures
            .iter()
            .map(|f| f.instance_id.as_str())
            .collect();
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let groups = Listing::first(group(&scanned.failures), limit);
        let summary = format!(
            "{} in {} of {} read, in {}{}.",
            count(scanned.failures.len(), "failure", "failures"),
            count(failed_instances.len(), "instance", "instances"),
            scanned.echo.instances_scanned,
            count(groups.total, "group", "groups"),
            if groups.truncated {
                format!(" ({} largest shown)", groups.returned)
            } else {
                String::new()
            }
        );
        let warnings = scan_warning(&scanned.echo);
        let evidence: Vec<Evidence> = groups
            .items
            .iter()
            .map(|g| Evidence::incident(&g.newest.0, g.newest.1.as_deref()))
            .collect();
        object(
            &summary,
            Aggregate {
                total_failures: scanned.failures.len(),
                failed_instances: failed_instances.len(),
                groups,
                scope: scanned.echo,
            },
            &warnings,
            &evidence,
        )
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(AggregateFailures::default())) }

/// The warning of an analysis that read only part of its scope.
pub(super) fn scan_warning(echo: &ScopeEcho) -> Vec<String> {
    echo.scan_truncated
        .then(|| {
            format!(
                "more instances are in scope than one analysis reads: only the first \
                 {MAX_SCANNED_INSTANCES} were read; narrow 'from'/'to' or 'definitionIds'"
            )
        })
        .into_iter()
        .collect()
}
