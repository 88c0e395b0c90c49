//! `incidents.search`: the incidents recorded in the caller's tenant's instances, newest
//! first, by definition, instance, activity type, error text and time; and `incidents.get`:
//! one incident whole, with the definition version its instance ran and the activity
//! execution that raised it.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiError, AiTool, AiToolDefinition, AiToolExecutionContext, AiToolRegistration, AuditBehavior,
    DangerLevel, Permission, ToolMutability,
};
use elsa_workflows::{
    ActivityExecutionRecord, Incident, IncidentQuery, IncidentSearch, InstanceIncident, Page,
    PageRequest, VersionOptions,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::diagnostics::{
    AttachedScope, RuntimeSearch, SearchScope, is_faulted, recorded_executions, stack_top,
};
use crate::envelope::{Evidence, GroundedList, count, object, shown};
use crate::instance::{ExceptionLine, ExecutionLine, describe, find_instance, time_range, trimmed};
use crate::names;
use crate::support::{Listing, built_in, clip, input, page, quoted};
use crate::workflow::search_text;

/// Arguments of `incidents.search`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchIncidentsInput {
    /// Only incidents of instances of this workflow definition.
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub definition_id: Option<String>,
    /// Only incidents of this workflow instance.
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub instance_id: Option<String>,
    /// Only incidents of activities of this type, for example "Elsa.SendHttpRequest" (letter
    /// case ignored).
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub activity_type: Option<String>,
    /// Text found in the incident's message or its exception's type or messages (letter case
    /// ignored).
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub text: Option<String>,
    /// Same as text.
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub query: Option<String>,
    /// Only incidents recorded at or after this instant (RFC 3339).
    #[serde(default)]
    pub from: Option<DateTime<Utc>>,
    /// Only incidents recorded at or before this instant (RFC 3339).
    #[serde(default)]
    pub to: Option<DateTime<Utc>>,
    /// How many matches to skip (default 0).
    #[serde(default)]
    pub offset: Option<usize>,
    /// How many to return, 1 to 50 (default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<usize>,
}

/// One incident as the search lists it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IncidentRow {
    instance_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    definition_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    definition_version: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    activity_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    activity_type: Option<String>,
    /// The activity execution that raised it, when Elsa recorded which.
    #[serde(skip_serializing_if = "Option::is_none")]
    execution_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exception: Option<ExceptionLine>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<DateTime<Utc>>,
}

impl IncidentRow {
    fn of(found: InstanceIncident) -> Self {
        let incident = found.incident;
        Self {
            instance_id: found.instance_id,
            definition_id: found.definition_id,
            definition_version: found.definition_version,
            activity_id: incident.activity_id,
            activity_type: incident.activity_type,
            execution_id: incident.activity_instance_id,
            message: incident.message.as_deref().map(|m| clip(m, 300)),
            exception: incident.exception.as_ref().map(ExceptionLine::of),
            timestamp: incident.timestamp,
        }
    }

    fn evidence(&self) -> Evidence {
        Evidence::incident(&self.instance_id, self.activity_id.as_deref())
    }
}

/// What the search read, beside the list.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReadExtra {
    /// How many instances with incidents were read, and whether that was all of them.
    instances_read: usize,
    complete: bool,
}

/// `incidents.search`: the caller's tenant's incidents, newest first, within a workflow,
/// instance or time range from the arguments or the turn's attachments (or across the tenant
/// with `analyze:tenant`). Needs `read:workflow-instances`.
pub struct SearchIncidents {
    definition: AiToolDefinition,
}

impl Default for SearchIncidents {
    fn default() -> Self {
        Self {
            definition: built_in::<SearchIncidentsInput>(
                names::INCIDENTS_SEARCH,
                "Search incidents",
                "Searches the incidents (faults Elsa recorded) of the current tenant's workflow \
                 instances, newest first. It needs a workflow, an instance or a time range, \
                 from the arguments or the conversation's attachments. Each row names the \
                 instance, definition, activity, message and exception; incidents.get reads one \
                 whole.",
                ToolMutability::ReadOnly,
                DangerLevel::Medium,
                &[Permission::READ_WORKFLOW_INSTANCES],
                AuditBehavior::RecordInvocation,
            ),
        }
    }
}

#[async_trait]
impl AiTool for SearchIncidents {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: SearchIncidentsInput = input(&context)?;
        let definition_id = trimmed(args.definition_id);
        let instance_id = trimmed(args.instance_id);
        let range = time_range(("from", "to"), args.from, args.to)?;
        let named = definition_id.is_some() || instance_id.is_some() || range.is_some();
        let scope = SearchScope::of(&context, RuntimeSearch::Incidents, named)?;
        let page = page(args.offset, args.limit, &context.limits);
        let query = IncidentQuery {
            instance_id,
            text: search_text(args.text, args.query)?,
            definition_ids: definition_id.into_iter().collect(),
            activity_type: trimmed(args.activity_type),
            time_range: range,
            page,
        };
        let found = match &scope {
            SearchScope::Attachments(attached) => {
                search_attached(&context, query, attached).await?
            }
            SearchScope::Arguments | SearchScope::Tenant => {
                context
                    .services
                    .incidents
                    .search(&context.caller.tenant_id, &query)
                    .await?
            }
        };
        let note = scope.note();
        let warning = (!found.complete).then(|| {
            format!(
                "only {} instances with incidents were read: more incidents may match",
                found.instances_read
            )
        });
        GroundedList::new(
            Listing::from_page(found.incidents.map(IncidentRow::of)),
            page.offset,
        )
        .with_extra(ReadExtra {
            instances_read: found.instances_read,
            complete: found.complete,
        })
        .with_warnings(warning)
        .finish(
            &context.limits,
            |listing| {
                format!(
                    "Incidents matching: {}; showing {}.{note}",
                    listing.total,
                    shown(listing, page.offset)
                )
            },
            IncidentRow::evidence,
        )
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(SearchIncidents::default())) }

/// Searches what the turn's attachments scope: the incidents of the attached workflows and of
/// each attached instance (one query for the workflows, one per instance of another workflow),
/// inside the attached time range, merged newest first and paged as `query.page` asks.
async fn search_attached(
    context: &AiToolExecutionContext,
    query: IncidentQuery,
    attached: &AttachedScope,
) -> Result<IncidentSearch, AiError> {
    let wanted = query.page;
    let scoped = IncidentQuery {
        time_range: attached.range,
        ..query
    };
    let mut queries = Vec::new();
    if !attached.definition_ids.is_empty() || attached.instance_ids.is_empty() {
        queries.push(IncidentQuery {
            definition_ids: attached.definition_ids.iter().cloned().collect(),
            ..scoped.clone()
        });
    }
    queries.extend(attached.instance_ids.iter().map(|id| IncidentQuery {
        instance_id: Some(id.clone()),
        ..scoped.clone()
    }));
    if let [only] = queries.as_slice() {
        return Ok(context
            .services
            .incidents
            .search(&context.caller.tenant_id, only)
            .await?);
    }
    let window = wanted.offset + wanted.limit;
    let mut rows = Vec::new();
    let (mut total, mut instances_read, mut complete) = (0, 0, true);
    for query in &queries {
        let (found, read) = first_incidents(context, query, window).await?;
        // An attached instance of an attached workflow is already among the workflow's.
        let covered = query.instance_id.is_some()
            && found.items.first().is_some_and(|row| {
                row.definition_id
                    .as_ref()
                    .is_some_and(|id| attached.definition_ids.contains(id))
            });
        if covered {
            continue;
        }
        total += found.total;
        instances_read += read.instances_read;
        complete &= read.complete;
        rows.extend(found.items);
    }
    rows.sort_by(|a, b| newest_first(a).cmp(&newest_first(b)));
    let items = rows
        .into_iter()
        .skip(wanted.offset)
        .take(wanted.limit)
        .collect();
    Ok(IncidentSearch {
        incidents: Page {
            items,
            total,
            offset: wanted.offset,
            limit: wanted.limit,
        },
        instances_read,
        complete,
    })
}

/// The store's order: newest first, incidents without a time last, then by instance id.
fn newest_first(row: &InstanceIncident) -> (bool, std::cmp::Reverse<Option<DateTime<Utc>>>, &str) {
    let time = row.incident.timestamp;
    (time.is_none(), std::cmp::Reverse(time), &row.instance_id)
}

/// How far a search read: instances read and whether that was all of them.
struct ReadCounts {
    instances_read: usize,
    complete: bool,
}

/// The first `n` incidents `query` finds (its page is ignored), read a store page at a time.
async fn first_incidents(
    context: &AiToolExecutionContext,
    query: &IncidentQuery,
    n: usize,
) -> Result<(Page<InstanceIncident>, ReadCounts), AiError> {
    let mut items = Vec::new();
    loop {
        let page = PageRequest::new(items.len(), n - items.len());
        let found = context
            .services
            .incidents
            .search(
                &context.caller.tenant_id,
                &IncidentQuery {
                    page,
                    ..query.clone()
                },
            )
            .await?;
        let more = found.incidents.has_more();
        let fetched = found.incidents.items.len();
        items.extend(found.incidents.items);
        if !more || fetched == 0 || items.len() >= n {
            let counts = ReadCounts {
                instances_read: found.instances_read,
                complete: found.complete,
            };
            let page = Page {
                items,
                total: found.incidents.total,
                offset: 0,
                limit: n,
            };
            return Ok((page, counts));
        }
    }
}

/// Arguments of `incidents.get`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetIncidentInput {
    /// The workflow instance the incident was recorded in.
    #[schemars(length(min = 1, max = 200))]
    pub instance_id: String,
    /// The activity that failed (its id in the definition).
    #[schemars(length(min = 1, max = 200))]
    pub activity_id: String,
    /// When the incident happened (RFC 3339, as incidents.search lists it): picks one of
    /// several incidents of the activity; default the newest.
    #[serde(default)]
    pub timestamp: Option<DateTime<Utc>>,
}

/// How many stack-trace lines an incident shows.
const STACK_LINES: usize = 10;

/// The incident itself.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IncidentDetail {
    activity_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    activity_node_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    activity_type: Option<String>,
    /// The activity execution that raised it, when Elsa recorded which.
    #[serde(skip_serializing_if = "Option::is_none")]
    execution_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exception: Option<ExceptionLine>,
    /// The top of the stack trace, each line clipped.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stack_trace: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<DateTime<Utc>>,
    /// JSON path of the incident in the instance document.
    evidence: String,
}

/// The activity execution that raised the incident.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RaisingExecution {
    #[serde(skip_serializing_if = "Option::is_none")]
    execution_id: Option<String>,
    #[serde(flatten)]
    line: ExecutionLine,
    /// JSON path of the record it was read from.
    evidence: String,
}

/// `incidents.get`'s answer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IncidentAnswer {
    instance_id: String,
    status: &'static str,
    sub_status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    definition_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    definition_version: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    definition_name: Option<String>,
    incident: IncidentDetail,
    /// How many incidents the activity recorded in this instance.
    incidents_of_activity: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    execution: Option<RaisingExecution>,
}

/// `incidents.get`: one incident of one instance of the caller's tenant, by activity (and
/// time, when the activity failed more than once), with the exception and its stack trace,
/// the definition version the instance ran and the activity execution that raised it. Needs
/// `read:workflow-instances`.
pub struct GetIncident {
    definition: AiToolDefinition,
}

impl Default for GetIncident {
    fn default() -> Self {
        Self {
            definition: built_in::<GetIncidentInput>(
                names::INCIDENTS_GET,
                "Get incident",
                "Reads one incident of a workflow instance, by instance and activity: the \
                 activity, the message, the exception type, message and root cause, the top of \
                 its stack trace, when it happened and the execution that raised it.",
                ToolMutability::ReadOnly,
                DangerLevel::Medium,
                &[Permission::READ_WORKFLOW_INSTANCES],
                AuditBehavior::RecordInvocation,
            ),
        }
    }
}

#[async_trait]
impl AiTool for GetIncident {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: GetIncidentInput = input(&context)?;
        let activity_id = args.activity_id.trim();
        let instance = find_instance(&context, args.instance_id.trim()).await?;
        let of_activity: Vec<Incident> = instance
            .incidents()
            .into_iter()
            .filter(|i| i.activity_id.as_deref() == Some(activity_id))
            .collect();
        let candidates: Vec<&Incident> = match args.timestamp {
            Some(at) => of_activity
                .iter()
                .filter(|i| i.timestamp == Some(at))
                .collect(),
            None => of_activity.iter().collect(),
        };
        // The newest; among equal times the one Elsa recorded last.
        let Some(incident) = candidates.iter().copied().max_by_key(|i| i.timestamp) else {
            let at = args
                .timestamp
                .map(|t| format!(" at {}", t.to_rfc3339()))
                .unwrap_or_default();
            return Err(AiError::not_found(format!(
                "incident of activity {}{at} in workflow instance {}",
                quoted(activity_id),
                quoted(instance.id())
            )));
        };
        let mut warnings = Vec::new();
        if candidates.len() > 1 {
            let others: Vec<String> = of_activity
                .iter()
                .filter(|i| !std::ptr::eq(*i, incident))
                .filter_map(|i| i.timestamp)
                .rev()
                .take(5)
                .map(|t| t.to_rfc3339())
                .collect();
            warnings.push(format!(
                "activity {activity_id} recorded {} in this instance; this is the newest{}",
                count(candidates.len(), "incident", "incidents"),
                if others.is_empty() {
                    String::new()
                } else {
                    format!(" (pass 'timestamp' to read another: {})", others.join(", "))
                }
            ));
        }

        let definition_name = match (instance.definition_id(), instance.definition_version()) {
            (Some(id), Some(version)) => {
                let stored = context
                    .services
                    .definitions
                    .find(
                        &context.caller.tenant_id,
                        id,
                        VersionOptions::Specific(version),
                    )
                    .await?;
                if stored.is_none() {
                    warnings.push(format!(
                        "workflow definition {id} version {version} is no longer stored"
                    ));
                }
                stored.and_then(|d| d.name().map(str::to_owned))
            }
            _ => None,
        };
        let executions = recorded_executions(&context, &instance).await?;
        let raising =
            raising_execution(incident, &executions.records).map(|record| RaisingExecution {
                execution_id: record.id.clone(),
                line: ExecutionLine::of(record),
                evidence: record.path.clone(),
            });

        let exception_type = incident
            .exception
            .as_ref()
            .and_then(|e| e.short_type_name())
            .map(|t| format!(": {t}"))
            .unwrap_or_default();
        let summary = format!(
            "{}: incident of activity {activity_id} ({}){}{exception_type}.",
            describe(&instance),
            incident.activity_type.as_deref().unwrap_or("type unknown"),
            incident
                .timestamp
                .map(|t| format!(" at {}", t.to_rfc3339()))
                .unwrap_or_default(),
        );
        let mut evidence = vec![Evidence::instance(instance.id())];
        if let (Some(id), Some(version)) = (instance.definition_id(), instance.definition_version())
        {
            evidence.push(Evidence::definition(id, version));
        }
        evidence.push(Evidence::incident(instance.id(), Some(activity_id)));
        if raising.is_some() && executions.from_store {
            evidence.push(Evidence::executions(instance.id()));
        }
        object(
            &summary,
            IncidentAnswer {
                instance_id: instance.id().to_owned(),
                status: instance.status().as_str(),
                sub_status: instance.sub_status().as_str(),
                definition_id: instance.definition_id().map(str::to_owned),
                definition_version: instance.definition_version(),
                definition_name,
                incident: IncidentDetail {
                    activity_id: incident.activity_id.clone(),
                    activity_node_id: incident.activity_node_id.clone(),
                    activity_type: incident.activity_type.clone(),
                    execution_id: incident.activity_instance_id.clone(),
                    message: incident.message.as_deref().map(|m| clip(m, 1_000)),
                    exception: incident.exception.as_ref().map(ExceptionLine::of),
                    stack_trace: stack_top(
                        incident
                            .exception
                            .as_ref()
                            .and_then(|e| e.stack_trace.as_deref()),
                        STACK_LINES,
                    ),
                    timestamp: incident.timestamp,
                    evidence: incident.path.clone(),
                },
                incidents_of_activity: of_activity.len(),
                execution: raising,
            },
            &warnings,
            &evidence,
        )
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(GetIncident::default())) }

/// The execution that raised `incident`: the one Elsa named (`activityInstanceId`), else, of
/// the executions of its node (or activity), the faulted one that ended last before the
/// incident (the last one when times are missing).
fn raising_execution<'r>(
    incident: &Incident,
    records: &'r [ActivityExecutionRecord],
) -> Option<&'r ActivityExecutionRecord> {
    if let Some(id) = &incident.activity_instance_id {
        return records.iter().find(|r| r.id.as_ref() == Some(id));
    }
    let same_activity = |r: &&ActivityExecutionRecord| match &incident.activity_node_id {
        Some(node) => r.activity_node_id.as_ref() == Some(node),
        None => incident.activity_id.is_some() && r.activity_id == incident.activity_id,
    };
    let ended = |r: &ActivityExecutionRecord| r.completed_at.or(r.started_at);
    let faulted: Vec<&ActivityExecutionRecord> = records
        .iter()
        .filter(same_activity)
        .filter(|r| is_faulted(r))
        .collect();
    let before = faulted
        .iter()
        .copied()
        .filter(|r| match (ended(r), incident.timestamp) {
            (Some(end), Some(at)) => end <= at,
            _ => true,
        });
    // The last by end time; the later in start order among equals.
    let latest = |records: Vec<&'r ActivityExecutionRecord>| {
        records
            .into_iter()
            .enumerate()
            .max_by_key(|(i, r)| (ended(r), *i))
            .map(|(_, r)| r)
    };
    latest(before.collect()).or_else(|| latest(faulted))
}
