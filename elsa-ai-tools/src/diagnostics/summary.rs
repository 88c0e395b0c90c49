//! `instance.summarize`: one run in a screenful: its status, the activity that failed, the
//! incident, the path that ran and the last events of its execution log.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiError, AiTool, AiToolDefinition, AiToolExecutionContext, AiToolRegistration, AuditBehavior,
    DangerLevel, Permission, ToolMutability,
};
use elsa_workflows::{ActivityExecutionRecord, ExecutionLogEntry, Incident, PageRequest};
use serde::Serialize;
use serde_json::Value;

use super::failures::is_faulted;
use super::{INCOMPLETE_HISTORY, recorded_executions};
use crate::envelope::{Evidence, count, object};
use crate::instance::{
    ExceptionLine, IncidentLine, InstanceHeader, InstanceIdInput, describe, find_instance,
    instance_evidence,
};
use crate::names;
use crate::support::{Listing, built_in, clip, input};

/// How many steps of the path and how many log events a summary shows.
const PATH_STEPS: usize = 40;
const LOG_EVENTS: usize = 10;

/// One activity execution on the path that ran.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Step {
    #[serde(skip_serializing_if = "Option::is_none")]
    execution_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    activity_id: Option<String>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    type_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: Option<i64>,
}

impl Step {
    fn of(record: &ActivityExecutionRecord) -> Self {
        Self {
            execution_id: record.id.clone(),
            activity_id: record.activity_id.clone(),
            type_name: record.activity_type.clone(),
            name: record.activity_name.clone(),
            status: record.status.map(|s| s.as_str()),
            duration_ms: record
                .started_at
                .zip(record.completed_at)
                .map(|(start, end)| (end - start).num_milliseconds()),
        }
    }
}

/// The execution that failed.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FailingActivity {
    #[serde(skip_serializing_if = "Option::is_none")]
    execution_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    activity_id: Option<String>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    type_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    started_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exception: Option<ExceptionLine>,
    /// JSON path of the record this was read from.
    evidence: String,
}

/// An event of the execution log.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Event {
    sequence: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    event: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    activity_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<DateTime<Utc>>,
}

impl Event {
    fn of(entry: &ExecutionLogEntry) -> Self {
        Self {
            sequence: entry.sequence,
            event: entry.event_name.clone(),
            activity_id: entry.activity_id.clone(),
            message: entry.message.as_deref().map(|m| clip(m, 300)),
            timestamp: entry.timestamp,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    #[serde(flatten)]
    header: InstanceHeader,
    failed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    failing_activity: Option<FailingActivity>,
    /// The first incident (the one that usually explains the failure).
    #[serde(skip_serializing_if = "Option::is_none")]
    incident: Option<IncidentLine>,
    /// Whether `path` is the complete history (Elsa's activity execution records), or only
    /// the executions alive when the instance was saved.
    complete_path: bool,
    /// The activity executions in the order they started (the last ones when there are
    /// more than a summary shows).
    path: Listing<Step>,
    /// The last events of the execution log, oldest first.
    last_events: Listing<Event>,
}

/// The last `limit` of `items`, marked as cut when more exist.
fn last<T>(mut items: Vec<T>, limit: usize) -> Listing<T> {
    let total = items.len();
    let kept = items.split_off(total.saturating_sub(limit));
    let mut listing = Listing::first(kept, limit);
    listing.total = total;
    listing.truncated = total > listing.returned;
    listing
}

/// The execution an incident was raised by: its `activityInstanceId`, else the last
/// execution of its node (or activity).
fn execution_of<'r>(
    incident: &Incident,
    records: &'r [ActivityExecutionRecord],
) -> Option<&'r ActivityExecutionRecord> {
    if let Some(id) = &incident.activity_instance_id
        && let Some(record) = records.iter().find(|r| r.id.as_ref() == Some(id))
    {
        return Some(record);
    }
    let by_node = records.iter().rev().find(|r| {
        incident.activity_node_id.is_some() && r.activity_node_id == incident.activity_node_id
    });
    by_node.or_else(|| {
        records
            .iter()
            .rev()
            .find(|r| incident.activity_id.is_some() && r.activity_id == incident.activity_id)
    })
}

/// The failing execution: the first incident's, else the first faulted one that is not a
/// container merely reporting its child's fault (the innermost faulted execution).
pub(super) fn failing_execution<'r>(
    incidents: &[Incident],
    records: &'r [ActivityExecutionRecord],
) -> Option<&'r ActivityExecutionRecord> {
    if let Some(record) = incidents.first().and_then(|i| execution_of(i, records)) {
        return Some(record);
    }
    let faulted: Vec<&ActivityExecutionRecord> = records.iter().filter(|r| is_faulted(r)).collect();
    faulted
        .iter()
        .find(|r| {
            let node = r.activity_node_id.as_deref().unwrap_or_default();
            !faulted.iter().any(|other| {
                other
                    .activity_node_id
                    .as_deref()
                    .is_some_and(|inner| inner.len() > node.len() && inner.starts_with(node))
            })
        })
        .copied()
}

/// `instance.summarize` (`instances.summarize`): one instance of the caller's tenant
/// summarised for a diagnosis. Needs `read:workflow-instances`.
pub struct Summarize {
    definition: AiToolDefinition,
}

impl Default for Summarize {
    fn default() -> Self {
        Self {
            definition: built_in::<InstanceIdInput>(
                names::INSTANCE_SUMMARIZE,
                "Summarize workflow instance",
                "Summarises one workflow instance (a run): status, whether it failed, the \
                 failing activity with its exception and root cause, the first incident, the \
                 path of activity executions that ran and the last log events. Start a \
                 diagnosis here; instance.getActivityState reads one execution's data.",
                ToolMutability::ReadOnly,
                DangerLevel::Medium,
                &[Permission::READ_WORKFLOW_INSTANCES],
                AuditBehavior::RecordInvocation,
            )
            .with_grounding_name(names::grounding::INSTANCE_SUMMARIZE),
        }
    }
}

#[async_trait]
impl AiTool for Summarize {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: InstanceIdInput = input(&context)?;
        let instance = find_instance(&context, &args.instance_id).await?;
        let executions = recorded_executions(&context, &instance).await?;
        let records = &executions.records;
        let incidents = instance.incidents();
        let failing = failing_execution(&incidents, records).map(|record| FailingActivity {
            execution_id: record.id.clone(),
            activity_id: record.activity_id.clone(),
            type_name: record.activity_type.clone(),
            name: record.activity_name.clone(),
            started_at: record.started_at,
            exception: record
                .exception
                .as_ref()
                .or_else(|| incidents.first().and_then(|i| i.exception.as_ref()))
                .map(ExceptionLine::of),
            evidence: record.path.clone(),
        });
        let log = &context.services.executions;
        let tenant = &context.caller.tenant_id;
        let size = log
            .execution_log(tenant, instance.id(), PageRequest::new(0, 0))
            .await?
            .total;
        let tail = log
            .execution_log(
                tenant,
                instance.id(),
                PageRequest::new(size.saturating_sub(LOG_EVENTS), LOG_EVENTS),
            )
            .await?;
        let mut last_events = Listing::first(tail.items.iter().map(Event::of), LOG_EVENTS);
        last_events.total = tail.total;
        last_events.truncated = tail.total > last_events.returned;
        let failed = instance.is_faulted() || !incidents.is_empty();
        let mut summary = format!(
            "{}: {}, {}",
            describe(&instance),
            instance.status().as_str(),
            instance.sub_status().as_str()
        );
        if let Some(failing) = &failing {
            summary.push_str(&format!(
                "; failed at activity {} ({})",
                failing.activity_id.as_deref().unwrap_or("(unknown)"),
                failing.type_name.as_deref().unwrap_or("type unknown")
            ));
        } else if failed {
            summary.push_str("; failed, at an activity not recorded");
        }
        summary.push_str(&format!(
            "; {} on its path, {} logged.",
            count(records.len(), "activity execution", "activity executions"),
            count(tail.total, "event", "events")
        ));
        let warnings: Vec<String> = (!executions.complete)
            .then(|| INCOMPLETE_HISTORY.to_owned())
            .into_iter()
            .collect();
        let mut evidence = instance_evidence(&instance, executions.from_store || tail.total > 0);
        if let Some(incident) = incidents.first() {
            evidence.push(Evidence::incident(
                instance.id(),
                incident.activity_id.as_deref(),
            ));
        }
        object(
            &summary,
            Summary {
                header: InstanceHeader::of(&instance),
                failed,
                failing_activity: failing,
                incident: incidents.first().map(IncidentLine::of),
                complete_path: executions.complete,
                path: last(records.iter().map(Step::of).collect(), PATH_STEPS),
                last_events,
            },
            &warnings,
            &evidence,
        )
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(Summarize::default())) }
