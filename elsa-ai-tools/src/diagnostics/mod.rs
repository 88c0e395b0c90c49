//! Runtime diagnostics, all read-only: `instance.summarize`, `instance.getErrors`,
//! `instance.executionHistory` and `instance.getActivityState` read one instance with what
//! Elsa recorded while running it; `instance.aggregateFailures` and `instance.detectTrends`
//! analyse many, but only inside the diagnostics scope and time range the turn's attachments
//! allow: both must be attached, arguments can only narrow them, and nothing outside them is
//! read. The runtime searches follow a rule of their own ([`SearchScope`]): a workflow,
//! instance or time range from their arguments or the attachments, or `analyze:tenant`.

mod activity_state;
mod aggregate;
mod failures;
mod scope;
mod search_scope;
mod summary;
#[cfg(test)]
mod test_support;
mod trends;

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiError, AiTool, AiToolDefinition, AiToolExecutionContext, AiToolRegistration, AuditBehavior,
    DangerLevel, Permission, ToolMutability,
};
use elsa_workflows::{ActivityExecutionRecord, ExecutionRecordSource, WorkflowInstance};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use activity_state::{GetActivityState, GetActivityStateInput};
pub use aggregate::{AggregateFailures, AggregateFailuresInput};
use failures::UNKNOWN_ACTIVITY_TYPE;
pub(crate) use failures::is_faulted;
pub(crate) use search_scope::{AttachedScope, RuntimeSearch, SearchScope};
pub use summary::Summarize;
pub use trends::{BucketSize, DetectTrends, DetectTrendsInput};

use crate::envelope::{Evidence, count, object, shown};
use crate::instance::{
    ExceptionLine, ExecutionLine, IncidentLine, InstanceHeader, InstanceIdInput, describe,
    find_instance, instance_evidence,
};
use crate::names;
use crate::support::{Listing, built_in, clip, input, page};

/// The activity executions of one instance, as the diagnosis tools read them.
pub(crate) struct Executions {
    /// The executions, in the order they started.
    pub records: Vec<ActivityExecutionRecord>,
    /// Whether they are the instance's complete history.
    pub complete: bool,
    /// Whether they came from the execution record store (else from the instance document).
    pub from_store: bool,
}

/// What a result warns when only the executions alive at the instance's last save are known.
pub(crate) const INCOMPLETE_HISTORY: &str = "Elsa recorded no execution history for this \
     instance: only the executions alive when it was last saved are known";

/// The activity executions of `instance`: Elsa's activity execution records from the
/// execution record store when it has them, else what the instance document carries
/// (records a host attached, or the execution contexts alive when the state was saved).
pub(crate) async fn recorded_executions(
    context: &AiToolExecutionContext,
    instance: &WorkflowInstance,
) -> Result<Executions, AiError> {
    let stored = context
        .services
        .executions
        .activity_executions(&context.caller.tenant_id, instance.id())
        .await?;
    if !stored.is_empty() {
        return Ok(Executions {
            records: stored,
            complete: true,
            from_store: true,
        });
    }
    let carried = instance.execution_records();
    let complete = carried
        .iter()
        .any(|r| r.source == ExecutionRecordSource::ExecutionRecord);
    Ok(Executions {
        records: carried,
        complete,
        from_store: false,
    })
}

/// How many incidents and faulted executions `instance.getErrors` lists.
const LISTED_ERRORS: usize = 20;
/// How many stack-trace lines a primary error shows.
const STACK_LINES: usize = 3;

/// The one error that explains the failure: the first incident, else the first faulted
/// execution.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PrimaryError {
    #[serde(skip_serializing_if = "Option::is_none")]
    activity_id: Option<String>,
    activity_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    activity_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exception: Option<ExceptionLine>,
    /// The top of the stack trace, clipped.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stack_top: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<DateTime<Utc>>,
    /// JSON path of the record this was read from.
    evidence: String,
}

/// A record the diagnosis rests on, with where it was read.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Traced<T> {
    #[serde(flatten)]
    record: T,
    /// JSON path of the record in the instance document.
    evidence: String,
}

/// The first `lines` non-empty lines of a stack trace, each clipped.
pub(crate) fn stack_top(trace: Option<&str>, lines: usize) -> Vec<String> {
    trace
        .into_iter()
        .flat_map(str::lines)
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(lines)
        .map(|l| clip(l, 200))
        .collect()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ErrorReport {
    #[serde(flatten)]
    header: InstanceHeader,
    failed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    primary_error: Option<PrimaryError>,
    incidents: Listing<Traced<IncidentLine>>,
    faulted_executions: Listing<Traced<ExecutionLine>>,
}

/// `instance.getErrors` (`instances.getErrors`): the incidents and faulted activity
/// executions of one instance, with the failing activity, its type, the exception and the
/// evidence records. Needs `read:workflow-instances`.
pub struct GetErrors {
    definition: AiToolDefinition,
}

impl Default for GetErrors {
    fn default() -> Self {
        Self {
            definition: built_in::<InstanceIdInput>(
                names::INSTANCE_ERRORS,
                "Get instance errors",
                "Explains why one workflow instance failed: the failing activity (id, type, \
                 name), the message, exception type and root cause, the top of the stack trace, \
                 then every incident and faulted execution, each with its evidence path. \
                 'failed' is false when the instance recorded no error.",
                ToolMutability::ReadOnly,
                DangerLevel::Medium,
                &[Permission::READ_WORKFLOW_INSTANCES],
                AuditBehavior::RecordInvocation,
            )
            .with_grounding_name(names::grounding::INSTANCE_ERRORS),
        }
    }
}

#[async_trait]
impl AiTool for GetErrors {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: InstanceIdInput = input(&context)?;
        let instance = find_instance(&context, &args.instance_id).await?;
        let incidents = instance.incidents();
        let executions = recorded_executions(&context, &instance).await?;
        let records = &executions.records;
        let faulted: Vec<&ActivityExecutionRecord> =
            records.iter().filter(|r| is_faulted(r)).collect();
        let name_of = |activity_id: Option<&str>| {
            activity_id.and_then(|id| {
                records
                    .iter()
                    .filter(|r| r.activity_id.as_deref() == Some(id))
                    .find_map(|r| r.activity_name.clone())
            })
        };
        let primary = if let Some(first) = incidents.first() {
            Some(PrimaryError {
                activity_id: first.activity_id.clone(),
                activity_type: first
                    .activity_type
                    .clone()
                    .unwrap_or_else(|| UNKNOWN_ACTIVITY_TYPE.to_owned()),
                activity_name: name_of(first.activity_id.as_deref()),
                message: first
                    .message
                    .as_deref()
                    .or_else(|| first.exception.as_ref().and_then(|e| e.message.as_deref()))
                    .map(|m| clip(m, 300)),
                exception: first.exception.as_ref().map(ExceptionLine::of),
                stack_top: stack_top(
                    first
                        .exception
                        .as_ref()
                        .and_then(|e| e.stack_trace.as_deref()),
                    STACK_LINES,
                ),
                timestamp: first.timestamp,
                evidence: first.path.clone(),
            })
        } else {
            faulted.first().map(|record| PrimaryError {
                activity_id: record.activity_id.clone(),
                activity_type: record
                    .activity_type
                    .clone()
                    .unwrap_or_else(|| UNKNOWN_ACTIVITY_TYPE.to_owned()),
                activity_name: record.activity_name.clone(),
                message: record
                    .exception
                    .as_ref()
                    .and_then(|e| e.message.as_deref())
                    .map(|m| clip(m, 300)),
                exception: record.exception.as_ref().map(ExceptionLine::of),
                stack_top: stack_top(
                    record
                        .exception
                        .as_ref()
                        .and_then(|e| e.stack_trace.as_deref()),
                    STACK_LINES,
                ),
                timestamp: record.completed_at.or(record.started_at),
                evidence: record.path.clone(),
            })
        };
        let failed = primary.is_some() || instance.is_faulted();
        let summary = match &primary {
            Some(primary) => format!(
                "{} failed at activity {} ({}){}; {}, {}.",
                describe(&instance),
                primary.activity_id.as_deref().unwrap_or("(unknown)"),
                primary.activity_type,
                primary
                    .exception
                    .as_ref()
                    .and_then(|e| e.type_name.as_deref())
                    .map(|t| format!(" with {t}"))
                    .unwrap_or_default(),
                count(incidents.len(), "incident", "incidents"),
                count(faulted.len(), "faulted execution", "faulted executions"),
            ),
            None if failed => format!(
                "{} is Faulted but recorded no incident or faulted execution.",
                describe(&instance)
            ),
            None => format!("{} recorded no error.", describe(&instance)),
        };
        let mut evidence = instance_evidence(&instance, executions.from_store);
        for incident in incidents.iter().take(LISTED_ERRORS) {
            let reference = Evidence::incident(instance.id(), incident.activity_id.as_deref());
            if !evidence.contains(&reference) {
                evidence.push(reference);
            }
        }
        object(
            &summary,
            ErrorReport {
                header: InstanceHeader::of(&instance),
                failed,
                primary_error: primary,
                incidents: Listing::first(
                    incidents.iter().map(|i| Traced {
                        record: IncidentLine::of(i),
                        evidence: i.path.clone(),
                    }),
                    LISTED_ERRORS,
                ),
                faulted_executions: Listing::first(
                    faulted.iter().map(|&r| Traced {
                        record: ExecutionLine::of(r),
                        evidence: r.path.clone(),
                    }),
                    LISTED_ERRORS,
                ),
            },
            &[],
            &evidence,
        )
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(GetErrors::default())) }

/// Arguments of `instance.executionHistory`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutionHistoryInput {
    /// The workflow instance id.
    #[schemars(length(min = 1, max = 200))]
    pub instance_id: String,
    /// How many executions to skip (default 0).
    #[serde(default)]
    pub offset: Option<usize>,
    /// How many to return, 1 to 50 (default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<usize>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct History {
    #[serde(flatten)]
    header: InstanceHeader,
    /// Whether the list is the complete history, or only the executions alive when the
    /// state was saved (Elsa's execution contexts).
    complete_history: bool,
    #[serde(flatten)]
    executions: Listing<Traced<ExecutionLine>>,
}

/// `instance.executionHistory` (`instances.getExecutionHistory`): the activity executions of
/// one instance in the order they started, a page at a time. Needs `read:workflow-instances`.
pub struct ExecutionHistory {
    definition: AiToolDefinition,
}

impl Default for ExecutionHistory {
    fn default() -> Self {
        Self {
            definition: built_in::<ExecutionHistoryInput>(
                names::EXECUTION_HISTORY,
                "Get execution history",
                "Lists the activity executions of one workflow instance in start order: \
                 activity id, type and name, status, times, duration and the exception of a \
                 faulted one. 'completeHistory' is false when only the executions alive at the \
                 last save are known.",
                ToolMutability::ReadOnly,
                DangerLevel::Medium,
                &[Permission::READ_WORKFLOW_INSTANCES],
                AuditBehavior::RecordInvocation,
            )
            .with_grounding_name(names::grounding::EXECUTION_HISTORY),
        }
    }
}

#[async_trait]
impl AiTool for ExecutionHistory {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: ExecutionHistoryInput = input(&context)?;
        let instance = find_instance(&context, &args.instance_id).await?;
        let executions = recorded_executions(&context, &instance).await?;
        let lines: Vec<Traced<ExecutionLine>> = executions
            .records
            .iter()
            .map(|r| Traced {
                record: ExecutionLine::of(r),
                evidence: r.path.clone(),
            })
            .collect();
        let page = page(args.offset, args.limit, &context.limits);
        let listing = Listing::from_page(page.slice(lines));
        let summary = format!(
            "{}: {}; showing {}.",
            describe(&instance),
            count(listing.total, "activity execution", "activity executions"),
            shown(&listing, page.offset)
        );
        let warnings: Vec<String> = (!executions.complete)
            .then(|| INCOMPLETE_HISTORY.to_owned())
            .into_iter()
            .collect();
        object(
            &summary,
            History {
                header: InstanceHeader::of(&instance),
                complete_history: executions.complete,
                executions: listing,
            },
            &warnings,
            &instance_evidence(&instance, executions.from_store),
        )
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(ExecutionHistory::default())) }
