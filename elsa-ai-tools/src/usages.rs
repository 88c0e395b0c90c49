//! `workflow.findUsages`: which of the caller's tenant's workflows use an activity type, call
//! a given workflow, declare or bind a variable, declare a workflow input or output, or hold
//! expressions of a given syntax; and the bounded scan of definitions it and
//! `workflow.listDefinitions` share.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiTool, AiToolDefinition, AiToolExecutionContext, AiToolRegistration, AuditBehavior,
    DangerLevel, Permission, ToolMutability,
};
use elsa_workflows::{
    ActivityNode, DefinitionQuery, DefinitionSummary, InputValue, PageRequest, VersionOptions,
    WorkflowDefinition,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::envelope::{Evidence, GroundedList, shown};
use crate::names;
use crate::support::{Listing, built_in, input, invalid};
use crate::workflow::search_text;

/// How many definitions one scan reads at most: it reads each candidate's graph through the
/// store (an HTTP request each on an Elsa Server backend).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ScanLimit(pub usize);

impl Default for ScanLimit {
    fn default() -> Self {
        Self(1_000)
    }
}

/// How far a scan got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Scan {
    /// Definitions read.
    pub scanned: usize,
    /// Whether that was every candidate.
    pub complete: bool,
}

/// Reads every definition `query` finds (its `page` is ignored; the version option decides
/// which version of each), up to `limit`, and hands each summary with its definition to
/// `visit`. A definition deleted between the search and the read is skipped; a cancelled
/// turn stops the scan with 503 `tool_cancelled`.
pub(crate) async fn scan_definitions(
    context: &AiToolExecutionContext,
    query: &DefinitionQuery,
    limit: ScanLimit,
    mut visit: impl FnMut(DefinitionSummary, Arc<WorkflowDefinition>),
) -> Result<Scan, AiError> {
    let tenant = &context.caller.tenant_id;
    let definitions = &context.services.definitions;
    let mut scanned = 0;
    let mut total = 0;
    while scanned < limit.0 {
        let query = DefinitionQuery {
            page: PageRequest::new(scanned, PageRequest::MAX_LIMIT.min(limit.0 - scanned)),
            ..query.clone()
        };
        let rows = definitions.search(tenant, &query).await?;
        total = rows.total;
        if rows.items.is_empty() {
            break;
        }
        let more = rows.has_more();
        for row in rows.items {
            scanned += 1;
            if context.cancellation.is_cancelled() {
                return Err(AiError::unavailable(
                    "tool_cancelled",
                    "the search was cancelled",
                ));
            }
            let version = VersionOptions::Specific(row.version);
            if let Some(definition) = definitions
                .find(tenant, &row.definition_id, version)
                .await?
            {
                visit(row, definition);
            }
        }
        if !more {
            break;
        }
    }
    Ok(Scan {
        scanned,
        complete: scanned >= total,
    })
}

/// How many using definitions a result lists, and how many activities per definition.
const MAX_ACTIVITIES: usize = 20;

/// Arguments of `workflow.findUsages`: exactly one of what to look for, and optionally text
/// narrowing the definitions read.
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
    /// A variable name: workflows declaring it, and their activities bound to it.
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub variable_name: Option<String>,
    /// A workflow input name: workflows declaring an input of that name.
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub input_name: Option<String>,
    /// A workflow output name: workflows declaring an output of that name.
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub output_name: Option<String>,
    /// An expression syntax, for example "JavaScript", "Liquid", "CSharp" or "Python":
    /// activities with an input written in it.
    #[serde(default)]
    #[schemars(length(min = 1, max = 100))]
    pub expression_syntax: Option<String>,
    /// Only definitions whose id, name or description contain this text.
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub query: Option<String>,
}

/// What is looked for.
enum Target<'a> {
    ActivityType(&'a str),
    Workflow(&'a str),
    Variable(&'a str),
    Input(&'a str),
    Output(&'a str),
    Syntax(&'a str),
}

impl<'a> Target<'a> {
    fn of(args: &'a FindUsagesInput) -> Result<Self, AiError> {
        let given =
            |value: &'a Option<String>| value.as_deref().map(str::trim).filter(|v| !v.is_empty());
        let targets: Vec<Target<'a>> = [
            given(&args.activity_type).map(Target::ActivityType),
            given(&args.workflow_definition_id).map(Target::Workflow),
            given(&args.variable_name).map(Target::Variable),
            given(&args.input_name).map(Target::Input),
            given(&args.output_name).map(Target::Output),
            given(&args.expression_syntax).map(Target::Syntax),
        ]
        .into_iter()
        .flatten()
        .collect();
        match <[Target<'a>; 1]>::try_from(targets) {
            Ok([target]) => Ok(target),
            Err(_) => Err(invalid(
                "invalid_arguments",
                "give exactly one of 'activityType', 'workflowDefinitionId', 'variableName', \
                 'inputName', 'outputName' and 'expressionSyntax'",
            )),
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::ActivityType(t) => format!("using activity type {t}"),
            Self::Workflow(id) => format!("calling workflow {id}"),
            Self::Variable(name) => format!("declaring variable {name}"),
            Self::Input(name) => format!("declaring input {name}"),
            Self::Output(name) => format!("declaring output {name}"),
            Self::Syntax(syntax) => format!("with {syntax} expressions"),
        }
    }

    /// The input of `node` that matches, or `Some(None)` when the whole activity does.
    fn matches(&self, node: &ActivityNode<'_>, bound: &HashSet<String>) -> Option<Option<String>> {
        match self {
            Self::ActivityType(wanted) => node
                .type_name()
                .eq_ignore_ascii_case(wanted)
                .then_some(None),
            // A workflow used as an activity names it as a string; Elsa.ExecuteWorkflow and
            // Elsa.DispatchWorkflow hold it as an input wrapper with a literal expression.
            Self::Workflow(id) => {
                let calls = match node.json().get("workflowDefinitionId") {
                    Some(Value::String(named)) => named == id,
                    Some(Value::Object(wrapper)) => {
                        wrapper.get("expression").is_some_and(|expression| {
                            expression.get("type").and_then(Value::as_str) == Some("Literal")
                                && expression.get("value").and_then(Value::as_str) == Some(id)
                        })
                    }
                    _ => false,
                };
                calls.then_some(None)
            }
            Self::Variable(_) => node
                .inputs()
                .into_iter()
                .find_map(|input| match input.value {
                    InputValue::Wrapped {
                        memory_reference: Some(reference),
                        ..
                    } if bound.contains(reference) => Some(Some(input.name.to_owned())),
                    _ => None,
                }),
            Self::Syntax(syntax) => node
                .inputs()
                .into_iter()
                .find_map(|input| match input.value {
                    InputValue::Wrapped {
                        expression: Some(expression),
                        ..
                    } if expression.kind.eq_ignore_ascii_case(syntax) => {
                        Some(Some(input.name.to_owned()))
                    }
                    _ => None,
                }),
            Self::Input(_) | Self::Output(_) => None,
        }
    }

    /// What the definition declares that matches (variables, inputs, outputs), and the
    /// memory ids of matching variables (what activities bind to).
    fn declarations(&self, definition: &WorkflowDefinition) -> (Vec<String>, HashSet<String>) {
        let mut declared = Vec::new();
        let mut bound = HashSet::new();
        match self {
            Self::Variable(name) => {
                let mut variables = definition.variables();
                for node in definition.activities() {
                    variables.extend(node.variables());
                }
                for variable in variables {
                    if variable
                        .key()
                        .is_some_and(|key| key.eq_ignore_ascii_case(name))
                    {
                        declared.push(format!("variable at {}", variable.path));
                        bound.extend(variable.id.clone());
                        bound.extend(variable.name.clone());
                    }
                }
            }
            Self::Input(name) => declared.extend(
                definition
                    .inputs()
                    .into_iter()
                    .filter(|d| {
                        d.name
                            .as_deref()
                            .is_some_and(|n| n.eq_ignore_ascii_case(name))
                    })
                    .map(|d| format!("input {}", d.name.unwrap_or_default())),
            ),
            Self::Output(name) => declared.extend(
                definition
                    .outputs()
                    .into_iter()
                    .filter(|d| {
                        d.name
                            .as_deref()
                            .is_some_and(|n| n.eq_ignore_ascii_case(name))
                    })
                    .map(|d| format!("output {}", d.name.unwrap_or_default())),
            ),
            _ => {}
        }
        (declared, bound)
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
    /// The input that matches (a bound variable, an expression of the syntax).
    #[serde(skip_serializing_if = "Option::is_none")]
    input: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UsingDefinition {
    definition_id: String,
    version: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// Matching declarations (variables, workflow inputs and outputs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    declared: Vec<String>,
    activities: Listing<UsingActivity>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ScanExtra {
    /// How many definitions were read, and whether that was all of the tenant's.
    scanned: usize,
    complete: bool,
}

/// `workflow.findUsages` (`workflows.findUsages`): the caller's tenant's workflow definitions
/// (newest versions) that use an activity type, call a given workflow, declare or bind a
/// variable, declare an input or output, or hold expressions of a syntax, with what matches.
/// Needs `read:workflows`.
pub struct FindUsages {
    definition: AiToolDefinition,
}

impl Default for FindUsages {
    fn default() -> Self {
        Self {
            definition: built_in::<FindUsagesInput>(
                names::FIND_USAGES,
                "Find workflow usages",
                "Finds the current tenant's workflow definitions that use an activity type, \
                 call another workflow, use a variable, declare an input or output, or hold \
                 expressions of a syntax: give exactly one of these. Each row names the \
                 definition, its version and the matching activities (id, type, display name).",
                ToolMutability::ReadOnly,
                DangerLevel::Low,
                &[Permission::READ_WORKFLOWS],
                AuditBehavior::RecordInvocation,
            )
            .with_grounding_name(names::grounding::FIND_USAGES),
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
        let target = Target::of(&args)?;
        let query = DefinitionQuery {
            text: search_text(None, args.query.clone())?,
            version: VersionOptions::Latest,
            ..DefinitionQuery::default()
        };
        let mut using = Vec::new();
        let scan = scan_definitions(&context, &query, ScanLimit::default(), |_, definition| {
            using.extend(usages_in(&definition, &target));
        })
        .await?;
        let what = target.describe();
        GroundedList::unpaged(Listing::first(using, context.limits.max_items))
            .with_extra(ScanExtra {
                scanned: scan.scanned,
                complete: scan.complete,
            })
            .with_warnings((!scan.complete).then(|| {
                format!(
                    "only the first {} definitions were read: more may match",
                    scan.scanned
                )
            }))
            .finish(
                &context.limits,
                |listing| {
                    format!(
                        "Workflow definitions {what}: {}; showing {}.",
                        listing.total,
                        shown(listing, 0)
                    )
                },
                |using| Evidence::definition(&using.definition_id, using.version),
            )
    }
}

/// What of `definition` matches, or `None` when nothing does.
fn usages_in(definition: &WorkflowDefinition, target: &Target<'_>) -> Option<UsingDefinition> {
    let (declared, bound) = target.declarations(definition);
    let activities: Vec<UsingActivity> = definition
        .activities()
        .iter()
        .filter_map(|node| {
            let input = target.matches(node, &bound)?;
            Some(UsingActivity {
                id: node.id().map(str::to_owned),
                type_name: node.type_name().to_owned(),
                display_name: node.display_text().map(str::to_owned),
                input,
            })
        })
        .collect();
    (!activities.is_empty() || !declared.is_empty()).then(|| UsingDefinition {
        definition_id: definition.definition_id().to_owned(),
        version: definition.version(),
        name: definition.name().map(str::to_owned),
        declared,
        activities: Listing::first(activities, MAX_ACTIVITIES),
    })
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(FindUsages::default())) }
