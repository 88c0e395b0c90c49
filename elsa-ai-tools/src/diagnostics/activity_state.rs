//! `instance.getActivityState`: what one activity execution received, produced and saw: its
//! inputs, outputs and the variables in its scope, as Elsa recorded them.
//!
//! The values are a run's data and can hold secrets. They are shown as recorded JSON objects
//! keyed by input, output and variable *names* (never flattened into text, and a variable is
//! keyed by its declared name rather than Elsa's internal id), so that the governor's
//! redaction, which runs on every result before a model or client sees it and recognises
//! sensitive values by their keys (`Authorization`, `apiKey`, `…Token`), catches them all. A
//! variable whose declared name cannot be read (its definition version is gone) is listed by
//! id with its value withheld, since redaction could not judge it.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiError, AiTool, AiToolDefinition, AiToolExecutionContext, AiToolRegistration, AuditBehavior,
    DangerLevel, Permission, ToolMutability,
};
use elsa_workflows::{
    ActivityExecutionRecord, ExecutionRecordSource, VersionOptions, WorkflowInstance,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::recorded_executions;
use super::summary::failing_execution;
use crate::envelope::{count, object};
use crate::instance::{ExceptionLine, describe, find_instance, instance_evidence};
use crate::names;
use crate::support::{bounded, built_in, input, invalid, not_found, quoted};

/// What a variable shows instead of its value when its declared name cannot be read.
const WITHHELD: &str = "(value withheld: the variable's declared name is unknown)";

/// Arguments of `instance.getActivityState`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetActivityStateInput {
    /// The workflow instance id.
    #[schemars(length(min = 1, max = 200))]
    pub instance_id: String,
    /// One activity execution, by its id (an `executionId` of instance.summarize's path).
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub execution_id: Option<String>,
    /// An activity id of the definition: its last execution in this run.
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub activity_id: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ActivityState {
    instance_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    execution_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    activity_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    activity_node_id: Option<String>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    type_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    started_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    completed_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exception: Option<ExceptionLine>,
    /// The evaluated inputs, by input name.
    inputs: Value,
    /// The outputs, by output name.
    outputs: Value,
    /// The variables in scope (declared by this execution or a container around it), by
    /// name, the innermost declaration first; by id, value withheld, when the name is unknown.
    variables: Value,
    /// How many times this activity ran in the run.
    executions_of_activity: usize,
    /// Whether the values come from Elsa's activity execution record (`false`: from the
    /// execution context saved in the workflow state, which records no outputs).
    from_execution_record: bool,
    /// JSON path of the record this was read from.
    evidence: String,
}

/// `instance.getActivityState` (`instances.getActivityState`): the inputs, outputs and
/// variables of one activity execution of one instance of the caller's tenant. Needs
/// `read:workflow-instances`.
pub struct GetActivityState {
    definition: AiToolDefinition,
}

impl Default for GetActivityState {
    fn default() -> Self {
        Self {
            definition: built_in::<GetActivityStateInput>(
                names::INSTANCE_ACTIVITY_STATE,
                "Get activity state",
                "Reads what one activity execution of a workflow instance received and \
                 produced: its evaluated inputs and outputs, the variables in its scope, \
                 status, times and exception (values redacted, long ones shortened). Without \
                 executionId or activityId, the failing execution is read.",
                ToolMutability::ReadOnly,
                DangerLevel::High,
                &[Permission::READ_WORKFLOW_INSTANCES],
                AuditBehavior::RecordInvocation,
            )
            .with_grounding_name(names::grounding::INSTANCE_ACTIVITY_STATE),
        }
    }
}

/// The last entry of `records` satisfying `wanted`.
fn last_where(
    records: &[ActivityExecutionRecord],
    wanted: impl Fn(&ActivityExecutionRecord) -> bool,
) -> Option<&ActivityExecutionRecord> {
    records.iter().rev().find(|r| wanted(r))
}

/// Whether `outer`'s node holds `inner`'s (or is it).
fn encloses(outer: &ActivityExecutionRecord, inner: &ActivityExecutionRecord) -> bool {
    match (&outer.activity_node_id, &inner.activity_node_id) {
        (Some(outer), Some(inner)) => {
            inner == outer
                || inner
                    .strip_prefix(outer.as_str())
                    .is_some_and(|rest| rest.starts_with(':'))
        }
        _ => false,
    }
}

/// The declared names of the definition version the instance runs, by variable id (empty
/// when the definition cannot be read: variables are then keyed by id).
async fn variable_names(
    context: &AiToolExecutionContext,
    instance: &WorkflowInstance,
) -> Result<HashMap<String, String>, AiError> {
    let Some(definition_id) = instance.definition_id() else {
        return Ok(HashMap::new());
    };
    let version = instance
        .definition_version()
        .map_or(VersionOptions::Latest, VersionOptions::Specific);
    let Some(definition) = context
        .services
        .definitions
        .find(&context.caller.tenant_id, definition_id, version)
        .await?
    else {
        return Ok(HashMap::new());
    };
    let mut names = HashMap::new();
    let nodes = definition.activities();
    let declared = definition
        .variables()
        .into_iter()
        .chain(nodes.iter().flat_map(|n| n.variables()));
    for variable in declared {
        if let (Some(id), Some(name)) = (variable.id, variable.name) {
            names.insert(id, name);
        }
    }
    Ok(names)
}

#[async_trait]
impl AiTool for GetActivityState {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: GetActivityStateInput = input(&context)?;
        let execution_id = args.execution_id.as_deref().map(str::trim);
        let activity_id = args.activity_id.as_deref().map(str::trim);
        if execution_id.is_some() && activity_id.is_some() {
            return Err(invalid(
                "invalid_arguments",
                "give at most one of 'executionId' and 'activityId'",
            ));
        }
        let instance = find_instance(&context, &args.instance_id).await?;
        let executions = recorded_executions(&context, &instance).await?;
        let records = &executions.records;
        let record = match (execution_id, activity_id) {
            (Some(id), _) => last_where(records, |r| r.id.as_deref() == Some(id))
                .ok_or_else(|| not_found("activity execution", id))?,
            (_, Some(id)) => last_where(records, |r| r.activity_id.as_deref() == Some(id))
                .ok_or_else(|| {
                    AiError::not_found(format!(
                        "no execution of activity {} in workflow instance {}",
                        quoted(id),
                        quoted(instance.id())
                    ))
                })?,
            (None, None) => failing_execution(&instance.incidents(), records).ok_or_else(|| {
                AiError::not_found(format!(
                    "workflow instance {} has no failed activity execution; give 'executionId' \
                     or 'activityId'",
                    quoted(instance.id())
                ))
            })?,
        };
        let names = variable_names(&context, &instance).await?;
        // The innermost declaration of a name wins: walk from this execution outwards.
        let mut variables = Map::new();
        let mut withheld = 0;
        let mut scopes: Vec<&ActivityExecutionRecord> =
            records.iter().filter(|r| encloses(r, record)).collect();
        scopes
            .sort_by_key(|r| std::cmp::Reverse(r.activity_node_id.as_deref().map_or(0, str::len)));
        for scope in scopes {
            for (id, value) in &scope.variables {
                // Redaction judges a value by its key; without the declared name it cannot,
                // so the value of a variable whose name is unknown is not shown.
                let (name, value) = match names.get(id) {
                    Some(name) => (name.clone(), value.clone()),
                    None => (id.clone(), Value::String(WITHHELD.to_owned())),
                };
                if let serde_json::map::Entry::Vacant(entry) = variables.entry(name) {
                    withheld += usize::from(!names.contains_key(id));
                    entry.insert(value);
                }
            }
        }
        let bounded_map = |map: &Map<String, Value>| bounded(&Value::Object(map.clone()));
        let summary = format!(
            "Activity {} ({}) of {}, execution {}: {}; {}, {}, {} in scope.",
            record.activity_id.as_deref().unwrap_or("(unknown)"),
            record.activity_type.as_deref().unwrap_or("type unknown"),
            describe(&instance),
            record.id.as_deref().unwrap_or("(no id)"),
            record.status.map_or("status unknown", |s| s.as_str()),
            count(record.inputs.len(), "input", "inputs"),
            count(record.outputs.len(), "output", "outputs"),
            count(variables.len(), "variable", "variables"),
        );
        let warnings: Vec<String> = (withheld > 0)
            .then(|| {
                format!(
                    "{} shown by id without a value: {} declared name is unknown",
                    count(withheld, "variable is", "variables are"),
                    if withheld == 1 { "its" } else { "their" }
                )
            })
            .into_iter()
            .collect();
        let state = ActivityState {
            instance_id: instance.id().to_owned(),
            execution_id: record.id.clone(),
            activity_id: record.activity_id.clone(),
            activity_node_id: record.activity_node_id.clone(),
            type_name: record.activity_type.clone(),
            name: record.activity_name.clone(),
            status: record.status.map(|s| s.as_str()),
            started_at: record.started_at,
            completed_at: record.completed_at,
            exception: record.exception.as_ref().map(ExceptionLine::of),
            inputs: bounded_map(&record.inputs),
            outputs: bounded_map(&record.outputs),
            variables: bounded(&Value::Object(variables)),
            executions_of_activity: records
                .iter()
                .filter(|r| record.activity_id.is_some() && r.activity_id == record.activity_id)
                .count(),
            from_execution_record: record.source == ExecutionRecordSource::ExecutionRecord,
            evidence: record.path.clone(),
        };
        object(
            &summary,
            state,
            &warnings,
            &instance_evidence(&instance, executions.from_store),
        )
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(GetActivityState::default())) }
