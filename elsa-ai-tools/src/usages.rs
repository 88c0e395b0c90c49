//! `workflow.findUsages`: which of the caller's tenant's workflows use an activity type, or
//! call a given workflow.

use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiTool, AiToolDefinition, AiToolExecutionContext, AiToolRegistration, AuditBehavior,
    DangerLevel, Permission, ToolMutability,
};
use elsa_workflows::{
    ActivityNode, DefinitionQuery, PageRequest, VersionOptions, WorkflowDefinition,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::names;
use crate::support::{Listing, built_in, input, invalid, to_json};

/// How many definitions one call reads at most: the scan reads each definition's newest
/// version through the store (an HTTP request each on an Elsa Server backend).
const SCAN_LIMIT: usize = 1_000;

/// How many using definitions a result lists, and how many activities per definition.
const MAX_DEFINITIONS: usize = 50;
const MAX_ACTIVITIES: usize = 20;

/// Arguments of `workflow.findUsages`: exactly one of the two.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FindUsagesInput {
    /// An activity type name, for example "Elsa.SendHttpRequest" (letter case ignored).
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub activity_type: Option<String>,
    /// A workflow definition id: finds the workflows that run it as an activity, or name it in
    /// a workflow-calling activity's `workflowDefinitionId` input.
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub workflow_definition_id: Option<String>,
}

/// What is looked for.
enum Target<'a> {
    ActivityType(&'a str),
    Workflow(&'a str),
}

impl Target<'_> {
    fn matches(&self, node: &ActivityNode<'_>) -> bool {
        match self {
            Self::ActivityType(wanted) => node.type_name().eq_ignore_ascii_case(wanted),
            // A workflow used as an activity names it as a string; Elsa.ExecuteWorkflow and
            // Elsa.DispatchWorkflow hold it as an input wrapper with a literal expression.
            Self::Workflow(id) => match node.json().get("workflowDefinitionId") {
                Some(Value::String(named)) => named == id,
                Some(Value::Object(wrapper)) => {
                    wrapper.get("expression").is_some_and(|expression| {
                        expression.get("type").and_then(Value::as_str) == Some("Literal")
                            && expression.get("value").and_then(Value::as_str) == Some(id)
                    })
                }
                _ => false,
            },
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UsingActivity {
    id: Option<String>,
    #[serde(rename = "type")]
    type_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    display_name: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UsingDefinition {
    definition_id: String,
    version: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    activities: Listing<UsingActivity>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UsagesResult {
    /// How many definitions were read, and whether that was all of the tenant's.
    scanned: usize,
    complete: bool,
    #[serde(flatten)]
    definitions: Listing<UsingDefinition>,
}

/// `workflow.findUsages`: the caller's tenant's workflow definitions (newest versions) that
/// use an activity type or call a given workflow, with the activities that do. Needs
/// `read:workflows`.
pub struct FindUsages {
    definition: AiToolDefinition,
}

impl Default for FindUsages {
    fn default() -> Self {
        Self {
            definition: built_in::<FindUsagesInput>(
                names::FIND_USAGES,
                "Find workflow usages",
                "Finds the current tenant's workflow definitions (each one's newest version) \
                 that use an activity type ('activityType', for example \"Elsa.SendHttpRequest\", \
                 letter case ignored) or that call another workflow ('workflowDefinitionId': as a \
                 workflow-as-activity, or named in an activity's workflowDefinitionId input). \
                 Give exactly one of the two. Each row names the definition, its version and the \
                 activities that match (id, type, display name). 'scanned' says how many \
                 definitions were read and 'complete' whether that was all of them.",
                ToolMutability::ReadOnly,
                DangerLevel::Low,
                &[Permission::READ_WORKFLOWS],
                AuditBehavior::RecordInvocation,
            ),
        }
    }
}

#[async_trait]
impl AiTool for FindUsages {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: FindUsagesInput = input(&context)?;
        let target = match (
            args.activity_type.as_deref().map(str::trim),
            args.workflow_definition_id.as_deref().map(str::trim),
        ) {
            (Some(activity_type), None) if !activity_type.is_empty() => {
                Target::ActivityType(activity_type)
            }
            (None, Some(id)) if !id.is_empty() => Target::Workflow(id),
            _ => {
                return Err(invalid(
                    "invalid_arguments",
                    "give exactly one of 'activityType' and 'workflowDefinitionId'",
                ));
            }
        };
        let tenant = &context.caller.tenant_id;
        let definitions = &context.services.definitions;
        let mut using = Vec::new();
        let mut scanned = 0;
        let mut total = 0;
        while scanned < SCAN_LIMIT {
            let query = DefinitionQuery {
                text: None,
                version: VersionOptions::Latest,
                page: PageRequest::new(scanned, PageRequest::MAX_LIMIT.min(SCAN_LIMIT - scanned)),
                ..DefinitionQuery::default()
            };
            let rows = definitions.search(tenant, &query).await?;
            total = rows.total;
            if rows.items.is_empty() {
                break;
            }
            for row in &rows.items {
                scanned += 1;
                if context.cancellation.is_cancelled() {
                    return Err(AiError::unavailable(
                        "tool_cancelled",
                        "the search was cancelled",
                    ));
                }
                // A definition deleted since the search is simply not a user any more.
                if let Some(definition) = definitions
                    .find(tenant, &row.definition_id, VersionOptions::Latest)
                    .await?
                    && let Some(found) = usages_in(&definition, &target)
                {
                    using.push(found);
                }
            }
            if !rows.has_more() {
                break;
            }
        }
        to_json(&UsagesResult {
            scanned,
            complete: scanned >= total,
            definitions: Listing::first(using, MAX_DEFINITIONS),
        })
    }
}

/// The activities of `definition` that match, or `None` when none does.
fn usages_in(definition: &WorkflowDefinition, target: &Target<'_>) -> Option<UsingDefinition> {
    let activities: Vec<UsingActivity> = definition
        .activities()
        .iter()
        .filter(|node| target.matches(node))
        .map(|node| UsingActivity {
            id: node.id().map(str::to_owned),
            type_name: node.type_name().to_owned(),
            display_name: node.display_text().map(str::to_owned),
        })
        .collect();
    (!activities.is_empty()).then(|| UsingDefinition {
        definition_id: definition.definition_id().to_owned(),
        version: definition.version(),
        name: definition.name().map(str::to_owned),
        activities: Listing::first(activities, MAX_ACTIVITIES),
    })
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(FindUsages::default())) }
