//! `incidents.search`: the incidents recorded in the caller's tenant's instances, newest
//! first, by definition, activity type and time.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiError, AiTool, AiToolDefinition, AiToolExecutionContext, AiToolRegistration, AuditBehavior,
    DangerLevel, Permission, ToolMutability,
};
use elsa_workflows::{IncidentQuery, InstanceIncident};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::instance::{ExceptionLine, time_range};
use crate::names;
use crate::support::{Listing, built_in, clip, input, page, to_json};

/// Arguments of `incidents.search`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchIncidentsInput {
    /// Only incidents of instances of this workflow definition.
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub definition_id: Option<String>,
    /// Only incidents of activities of this type, for example "Elsa.SendHttpRequest" (letter
    /// case ignored).
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub activity_type: Option<String>,
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
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SearchResult {
    /// How many instances with incidents were read, and whether that was all of them.
    instances_read: usize,
    complete: bool,
    #[serde(flatten)]
    incidents: Listing<IncidentRow>,
}

/// `incidents.search`: the caller's tenant's incidents, newest first. Needs
/// `read:workflow-instances`.
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
                 instances, newest first, by 'definitionId', 'activityType' (letter case \
                 ignored) and time ('from'/'to', RFC 3339). Each row names the instance, its \
                 definition and version, the activity (id, type, the execution that raised it), \
                 the message, the exception type and root cause, and when it happened. \
                 'instancesRead' and 'complete' say whether every instance with incidents was \
                 read; 'truncated': true with 'nextOffset' when more match.",
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
        let trimmed =
            |text: Option<String>| text.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
        let query = IncidentQuery {
            definition_ids: trimmed(args.definition_id).into_iter().collect(),
            activity_type: trimmed(args.activity_type),
            time_range: time_range(args.from, args.to)?,
            page: page(args.offset, args.limit, &context.limits),
            ..IncidentQuery::default()
        };
        let found = context
            .services
            .incidents
            .search(&context.caller.tenant_id, &query)
            .await?;
        to_json(&SearchResult {
            instances_read: found.instances_read,
            complete: found.complete,
            incidents: Listing::from_page(found.incidents.map(IncidentRow::of)),
        })
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(SearchIncidents::default())) }
