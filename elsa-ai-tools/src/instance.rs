//! `instance.get` (`instances.get`) and `instance.search` (`instances.search`): reading the
//! caller's tenant's workflow instances.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiError, AiTool, AiToolDefinition, AiToolExecutionContext, AiToolRegistration, AuditBehavior,
    DangerLevel, Permission, ToolMutability,
};
use elsa_workflows::{
    ActivityExecutionRecord, ExceptionInfo, Incident, InstanceQuery, TimeRange, WorkflowInstance,
    WorkflowStatus, WorkflowSubStatus,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::diagnostics::{RuntimeSearch, SearchScope, recorded_executions};
use crate::envelope::{Evidence, GroundedList, count, object, shown};
use crate::names;
use crate::support::{Listing, bounded, built_in, clip, input, invalid, not_found, page};
use crate::workflow::search_text;

/// How many incidents, bookmarks and execution records `instance.get` lists.
const LISTED: usize = 10;

/// An instance id argument.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InstanceIdInput {
    /// The workflow instance id.
    #[schemars(length(min = 1, max = 200))]
    pub instance_id: String,
}

/// Reads one instance of the caller's tenant: 404 for unknown and other tenants' ids alike.
pub(crate) async fn find_instance(
    context: &AiToolExecutionContext,
    instance_id: &str,
) -> Result<WorkflowInstance, AiError> {
    context
        .services
        .instances
        .find(&context.caller.tenant_id, instance_id)
        .await?
        .ok_or_else(|| not_found("workflow instance", instance_id))
}

/// The words a summary names an instance with: "Workflow instance run-1 (invoice-upload
/// version 2)".
pub(crate) fn describe(instance: &WorkflowInstance) -> String {
    let id = instance.id();
    match (instance.definition_id(), instance.definition_version()) {
        (Some(definition), Some(version)) => {
            format!("Workflow instance {id} ({definition} version {version})")
        }
        (Some(definition), None) => format!("Workflow instance {id} ({definition})"),
        _ => format!("Workflow instance {id}"),
    }
}

/// The records an answer about one instance rests on: the instance, the definition version it
/// runs (when it names one), and Elsa's execution records when they came from the store.
pub(crate) fn instance_evidence(instance: &WorkflowInstance, recorded: bool) -> Vec<Evidence> {
    let mut evidence = vec![Evidence::instance(instance.id())];
    if let (Some(definition), Some(version)) =
        (instance.definition_id(), instance.definition_version())
    {
        evidence.push(Evidence::definition(definition, version));
    }
    if recorded {
        evidence.push(Evidence::executions(instance.id()));
    }
    evidence
}

/// An exception in a few words: short type, clipped message, and the innermost cause.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExceptionLine {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The innermost inner exception, when it differs: usually the root cause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_cause: Option<Box<ExceptionLine>>,
}

impl ExceptionLine {
    pub fn of(exception: &ExceptionInfo) -> Self {
        let mut innermost = exception;
        while let Some(inner) = &innermost.inner {
            innermost = inner;
        }
        let root_cause = (!std::ptr::eq(innermost, exception)).then(|| {
            Box::new(Self {
                type_name: innermost.short_type_name().map(str::to_owned),
                message: innermost.message.as_deref().map(|m| clip(m, 300)),
                root_cause: None,
            })
        });
        Self {
            type_name: exception.short_type_name().map(str::to_owned),
            message: exception.message.as_deref().map(|m| clip(m, 300)),
            root_cause,
        }
    }
}

/// An incident as tools list it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct IncidentLine {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activity_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activity_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exception: Option<ExceptionLine>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<DateTime<Utc>>,
}

impl IncidentLine {
    pub fn of(incident: &Incident) -> Self {
        Self {
            activity_id: incident.activity_id.clone(),
            activity_type: incident.activity_type.clone(),
            message: incident.message.as_deref().map(|m| clip(m, 300)),
            exception: incident.exception.as_ref().map(ExceptionLine::of),
            timestamp: incident.timestamp,
        }
    }
}

/// An activity execution record as tools list it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExecutionLine {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activity_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activity_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activity_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exception: Option<ExceptionLine>,
}

impl ExecutionLine {
    pub fn of(record: &ActivityExecutionRecord) -> Self {
        Self {
            activity_id: record.activity_id.clone(),
            activity_type: record.activity_type.clone(),
            activity_name: record.activity_name.clone(),
            status: record.status.map(|s| s.as_str().to_owned()),
            started_at: record.started_at,
            completed_at: record.completed_at,
            duration_ms: record
                .started_at
                .zip(record.completed_at)
                .map(|(start, end)| (end - start).num_milliseconds()),
            exception: record.exception.as_ref().map(ExceptionLine::of),
        }
    }
}

/// The header of an instance, as both instance tools show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InstanceHeader {
    pub instance_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub definition_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub definition_version: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub status: &'static str,
    pub sub_status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
    pub incident_count: usize,
}

impl InstanceHeader {
    pub fn of(instance: &WorkflowInstance) -> Self {
        Self {
            instance_id: instance.id().to_owned(),
            definition_id: instance.definition_id().map(str::to_owned),
            definition_version: instance.definition_version(),
            name: instance.name().map(str::to_owned),
            status: instance.status().as_str(),
            sub_status: instance.sub_status().as_str(),
            created_at: instance.created_at(),
            finished_at: instance.finished_at(),
            incident_count: instance.incident_count(),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InstanceDetails {
    #[serde(flatten)]
    header: InstanceHeader,
    #[serde(skip_serializing_if = "Option::is_none")]
    correlation_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_instance_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_at: Option<DateTime<Utc>>,
    incidents: Listing<IncidentLine>,
    bookmarks: Listing<BookmarkLine>,
    /// The most recent activity executions, newest last.
    last_executions: Listing<ExecutionLine>,
    /// The workflow's input, by name (shortened; sensitive names redacted).
    #[serde(skip_serializing_if = "Option::is_none")]
    input: Option<Value>,
    /// The workflow's output, by name (shortened; sensitive names redacted).
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<Value>,
}

/// What the input or output of a workflow shows when it is not an object keyed by name.
const NOT_KEYED: &str = "(not shown: the value is not keyed by name)";

/// The workflow's `input` or `output` (`key`), as its state records it: an object keyed by
/// name, with Elsa's `$id` reference markers removed and `$values` lists unwrapped, shortened
/// by [`bounded`]. Keys stay keys, so that the governor's redaction, which recognises secrets
/// by their keys, sees every value. `None` when absent or empty; anything but an object is
/// withheld, since redaction could not judge it.
fn workflow_values(instance: &WorkflowInstance, key: &str) -> Option<Value> {
    fn present<'a>(map: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a Value> {
        map.get(key).filter(|v| !v.is_null())
    }
    let value = present(instance.as_json(), key).or_else(|| {
        instance
            .workflow_state()
            .and_then(|state| present(state, key))
    })?;
    match without_references(value) {
        Value::Object(map) if map.is_empty() => None,
        object @ Value::Object(_) => Some(bounded(&object)),
        _ => Some(Value::String(NOT_KEYED.to_owned())),
    }
}

/// `value` without Elsa's reference metadata: `$id` keys dropped, `{"$id", "$values": [...]}`
/// wrappers replaced by their lists.
fn without_references(value: &Value) -> Value {
    match value {
        Value::Object(map) => match map.get("$values") {
            Some(Value::Array(items)) => {
                Value::Array(items.iter().map(without_references).collect())
            }
            _ => Value::Object(
                map.iter()
                    .filter(|(key, _)| key.as_str() != "$id")
                    .map(|(key, item)| (key.clone(), without_references(item)))
                    .collect(),
            ),
        },
        Value::Array(items) => Value::Array(items.iter().map(without_references).collect()),
        other => other.clone(),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BookmarkLine {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    activity_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    created_at: Option<DateTime<Utc>>,
}

/// `instance.get` (`instances.get`): one instance of the caller's tenant: its header, status
/// and sub-status, incidents, bookmarks, last activity executions and the workflow's input
/// and output. Needs `read:workflow-instances`.
pub struct GetInstance {
    definition: AiToolDefinition,
}

impl Default for GetInstance {
    fn default() -> Self {
        Self {
            definition: built_in::<InstanceIdInput>(
                names::INSTANCE_GET,
                "Get workflow instance",
                "Reads one workflow instance (a run): definition and version, status and \
                 sub-status, timestamps, its first incidents, the bookmarks it waits on, its \
                 last activity executions and the workflow's input and output. Use \
                 instance.getErrors for a failure's details.",
                ToolMutability::ReadOnly,
                DangerLevel::Medium,
                &[Permission::READ_WORKFLOW_INSTANCES],
                AuditBehavior::RecordInvocation,
            )
            .with_grounding_name(names::grounding::INSTANCE_GET),
        }
    }
}

#[async_trait]
impl AiTool for GetInstance {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: InstanceIdInput = input(&context)?;
        let instance = find_instance(&context, &args.instance_id).await?;
        let executions = recorded_executions(&context, &instance).await?;
        let records = &executions.records;
        let skip = records.len().saturating_sub(LISTED);
        let mut last_executions =
            Listing::first(records.iter().skip(skip).map(ExecutionLine::of), LISTED);
        last_executions.total = records.len();
        last_executions.truncated = skip > 0;
        let bookmarks = instance.bookmarks();
        let mut summary = format!(
            "{}: {}, {}; {}",
            describe(&instance),
            instance.status().as_str(),
            instance.sub_status().as_str(),
            count(instance.incident_count(), "incident", "incidents")
        );
        if !bookmarks.is_empty() {
            summary.push_str(&format!(
                ", waiting on {}",
                count(bookmarks.len(), "bookmark", "bookmarks")
            ));
        }
        summary.push('.');
        object(
            &summary,
            InstanceDetails {
                header: InstanceHeader::of(&instance),
                correlation_id: instance.correlation_id().map(str::to_owned),
                parent_instance_id: instance.parent_instance_id().map(str::to_owned),
                updated_at: instance.updated_at(),
                incidents: Listing::first(
                    instance.incidents().iter().map(IncidentLine::of),
                    LISTED,
                ),
                bookmarks: Listing::first(
                    bookmarks.into_iter().map(|b| BookmarkLine {
                        name: b.name,
                        activity_id: b.activity_id,
                        created_at: b.created_at,
                    }),
                    LISTED,
                ),
                last_executions,
                input: workflow_values(&instance, "input"),
                output: workflow_values(&instance, "output"),
            },
            &[],
            &instance_evidence(&instance, executions.from_store),
        )
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(GetInstance::default())) }

/// An instance status filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[non_exhaustive]
pub enum StatusFilter {
    /// Not finished yet.
    Running,
    /// Finished, successfully or not (see the sub-status).
    Finished,
}

impl From<StatusFilter> for WorkflowStatus {
    fn from(filter: StatusFilter) -> Self {
        match filter {
            StatusFilter::Running => Self::Running,
            StatusFilter::Finished => Self::Finished,
        }
    }
}

/// An instance sub-status filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[non_exhaustive]
pub enum SubStatusFilter {
    /// Waiting to run.
    Pending,
    /// Running right now.
    Executing,
    /// Waiting on a bookmark.
    Suspended,
    /// Completed.
    Finished,
    /// Cancelled.
    Cancelled,
    /// Failed.
    Faulted,
}

impl From<SubStatusFilter> for WorkflowSubStatus {
    fn from(filter: SubStatusFilter) -> Self {
        match filter {
            SubStatusFilter::Pending => Self::Pending,
            SubStatusFilter::Executing => Self::Executing,
            SubStatusFilter::Suspended => Self::Suspended,
            SubStatusFilter::Finished => Self::Finished,
            SubStatusFilter::Cancelled => Self::Cancelled,
            SubStatusFilter::Faulted => Self::Faulted,
        }
    }
}

/// Arguments of `instance.search`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchInstancesInput {
    /// Text found in the instance id, name, correlation id or definition id (letter case
    /// ignored).
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub text: Option<String>,
    /// Same as text.
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub query: Option<String>,
    /// Only instances with this status.
    #[serde(default)]
    pub status: Option<StatusFilter>,
    /// Only instances with this sub-status ("Faulted" for failed runs).
    #[serde(default)]
    pub sub_status: Option<SubStatusFilter>,
    /// Only instances of this workflow definition.
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub definition_id: Option<String>,
    /// Only instances with exactly this correlation id.
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub correlation_id: Option<String>,
    /// true: only instances with incidents; false: only those without.
    #[serde(default)]
    pub has_incidents: Option<bool>,
    /// Only instances created at or after this instant (RFC 3339).
    #[serde(default)]
    pub from: Option<DateTime<Utc>>,
    /// Only instances created at or before this instant (RFC 3339).
    #[serde(default)]
    pub to: Option<DateTime<Utc>>,
    /// Only instances last updated at or after this instant (RFC 3339).
    #[serde(default)]
    pub updated_from: Option<DateTime<Utc>>,
    /// Only instances last updated at or before this instant (RFC 3339).
    #[serde(default)]
    pub updated_to: Option<DateTime<Utc>>,
    /// How many matches to skip (default 0).
    #[serde(default)]
    pub offset: Option<usize>,
    /// How many to return, 1 to 50 (default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<usize>,
}

/// A time range from optional bounds given as the arguments `names` (for messages): open
/// ends reach the representable extremes, and a range that starts after it ends is 400
/// `invalid_time_range`.
pub(crate) fn time_range(
    names: (&str, &str),
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
) -> Result<Option<TimeRange>, AiError> {
    if from.is_none() && to.is_none() {
        return Ok(None);
    }
    let range = TimeRange {
        from: from.unwrap_or(DateTime::<Utc>::MIN_UTC),
        to: to.unwrap_or(DateTime::<Utc>::MAX_UTC),
    };
    if range.from > range.to {
        return Err(invalid(
            "invalid_time_range",
            format!(
                "'{}' ({}) is after '{}' ({})",
                names.0,
                range.from.to_rfc3339(),
                names.1,
                range.to.to_rfc3339()
            ),
        ));
    }
    Ok(Some(range))
}

/// Text of a filter argument, trimmed; `None` when absent or blank.
pub(crate) fn trimmed(text: Option<String>) -> Option<String> {
    text.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty())
}

/// `instance.search` (`instances.search`): the caller's tenant's instances by text, status,
/// sub-status, definition, correlation id, incidents and creation or update time, newest
/// first, a page at a time, within a workflow, correlation id or time range from the
/// arguments or the turn's attachments (or across the tenant with `analyze:tenant`). Needs
/// `read:workflow-instances`.
pub struct SearchInstances {
    definition: AiToolDefinition,
}

impl Default for SearchInstances {
    fn default() -> Self {
        Self {
            definition: built_in::<SearchInstancesInput>(
                names::INSTANCE_SEARCH,
                "Search workflow instances",
                "Searches the current tenant's workflow instances (runs), newest first; use \
                 subStatus \"Faulted\" for failed runs. It needs a workflow, a correlation id \
                 or a time range, from the arguments or the conversation's attachments. Returns \
                 one row per instance with its status and incident count.",
                ToolMutability::ReadOnly,
                DangerLevel::Low,
                &[Permission::READ_WORKFLOW_INSTANCES],
                AuditBehavior::RecordInvocation,
            )
            .with_grounding_name(names::grounding::INSTANCE_SEARCH),
        }
    }
}

#[async_trait]
impl AiTool for SearchInstances {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: SearchInstancesInput = input(&context)?;
        let definition_id = trimmed(args.definition_id);
        let correlation_id = trimmed(args.correlation_id);
        let created = time_range(("from", "to"), args.from, args.to)?;
        let updated = time_range(
            ("updatedFrom", "updatedTo"),
            args.updated_from,
            args.updated_to,
        )?;
        let named = definition_id.is_some()
            || correlation_id.is_some()
            || created.is_some()
            || updated.is_some();
        let scope = SearchScope::of(&context, RuntimeSearch::Instances, named)?;
        let page = page(args.offset, args.limit, &context.limits);
        let mut query = InstanceQuery {
            text: search_text(args.text, args.query)?,
            correlation_id,
            has_incidents: args.has_incidents,
            status: args.status.map(Into::into),
            sub_status: args.sub_status.map(Into::into),
            definition_ids: definition_id.into_iter().collect(),
            time_range: created,
            updated_range: updated,
            page,
        };
        if let SearchScope::Attachments(attached) = &scope {
            query.definition_ids = attached.definition_ids.iter().cloned().collect();
            query.time_range = attached.range;
        }
        let found = context
            .services
            .instances
            .search(&context.caller.tenant_id, &query)
            .await?;
        let note = scope.note();
        GroundedList::new(
            Listing::from_page(found.map(|i| InstanceHeader::of(&i))),
            page.offset,
        )
        .finish(
            &context.limits,
            |listing| {
                format!(
                    "Workflow instances matching: {}; showing {}.{note}",
                    listing.total,
                    shown(listing, page.offset)
                )
            },
            |row| Evidence::instance(&row.instance_id),
        )
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(SearchInstances::default())) }
