//! `activities.catalog` (`activities.search`: the activity types available to the caller's
//! tenant) and `activities.getDescriptor` (one of them, whole).

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiTool, AiToolDefinition, AiToolExecutionContext, AiToolRegistration, AuditBehavior,
    DangerLevel, Permission, ToolMutability,
};
use elsa_workflows::ActivityDescriptor;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::envelope::{Evidence, GroundedList, object, shown};
use crate::names;
use crate::support::{Listing, built_in, clip, either, input, invalid, not_found, page, quoted};
use crate::workflow::search_text;

/// Arguments of `activities.catalog`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActivityCatalogInput {
    /// Only activities of this category (case-insensitive), for example "HTTP" or "Console".
    #[serde(default)]
    #[schemars(length(min = 1, max = 100))]
    pub category: Option<String>,
    /// Case-insensitive text matched against type, name, display name, description,
    /// category, namespace and input and output names.
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub text: Option<String>,
    /// Same as text.
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub query: Option<String>,
    /// A type name ("Elsa.SendHttpRequest"), or a namespace prefix ("Elsa.Http").
    #[serde(default, rename = "type")]
    #[schemars(length(min = 1, max = 200))]
    pub type_name: Option<String>,
    /// Only this version of each type.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub version: Option<i32>,
    /// Only activities with an input of this name (letter case ignored).
    #[serde(default)]
    #[schemars(length(min = 1, max = 100))]
    pub input_name: Option<String>,
    /// Same as inputName.
    #[serde(default)]
    #[schemars(length(min = 1, max = 100))]
    pub input: Option<String>,
    /// Only activities with an output of this name (letter case ignored).
    #[serde(default)]
    #[schemars(length(min = 1, max = 100))]
    pub output_name: Option<String>,
    /// Same as outputName.
    #[serde(default)]
    #[schemars(length(min = 1, max = 100))]
    pub output: Option<String>,
    /// true: only activities a workflow can start with (triggers and start nodes); false:
    /// only the others.
    #[serde(default)]
    pub can_start_workflow: Option<bool>,
    /// Same as canStartWorkflow.
    #[serde(default)]
    pub trigger: Option<bool>,
    /// Also list activities designers hide (isBrowsable false); default false.
    #[serde(default)]
    pub include_non_browsable: Option<bool>,
    /// How many matches to skip (default 0).
    #[serde(default)]
    pub offset: Option<usize>,
    /// Same as offset.
    #[serde(default)]
    pub skip: Option<usize>,
    /// How many to return, 1 to 50 (default 20; the server may return fewer).
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<usize>,
    /// Same as limit.
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub take: Option<usize>,
}

/// The filters of a catalog search, with both spellings resolved.
struct CatalogFilter {
    category: Option<String>,
    text: Option<String>,
    type_name: Option<String>,
    version: Option<i32>,
    input_name: Option<String>,
    output_name: Option<String>,
    can_start_workflow: Option<bool>,
    include_non_browsable: bool,
}

impl CatalogFilter {
    fn of(args: &ActivityCatalogInput) -> Result<Self, AiError> {
        let lowered = |text: Option<String>| {
            text.map(|t| t.trim().to_lowercase())
                .filter(|t| !t.is_empty())
        };
        Ok(Self {
            category: lowered(args.category.clone()),
            text: lowered(search_text(args.text.clone(), args.query.clone())?),
            type_name: lowered(args.type_name.clone()),
            version: args.version,
            input_name: lowered(either(
                ("inputName", "input"),
                args.input_name.clone(),
                args.input.clone(),
            )?),
            output_name: lowered(either(
                ("outputName", "output"),
                args.output_name.clone(),
                args.output.clone(),
            )?),
            can_start_workflow: either(
                ("canStartWorkflow", "trigger"),
                args.can_start_workflow,
                args.trigger,
            )?,
            include_non_browsable: args.include_non_browsable.unwrap_or(false),
        })
    }

    fn admits(&self, d: &ActivityDescriptor) -> bool {
        let lower = |text: Option<&str>| text.map(str::to_lowercase);
        (self.include_non_browsable || d.is_browsable)
            && self
                .category
                .as_deref()
                .is_none_or(|wanted| lower(d.category.as_deref()).as_deref() == Some(wanted))
            && self.type_name.as_deref().is_none_or(|wanted| {
                let type_name = d.type_name.to_lowercase();
                type_name == wanted
                    || lower(d.name.as_deref()).as_deref() == Some(wanted)
                    || type_name.starts_with(&format!("{wanted}."))
            })
            && self.version.is_none_or(|wanted| d.version == Some(wanted))
            && self
                .input_name
                .as_deref()
                .is_none_or(|wanted| d.inputs.iter().any(|i| i.name.to_lowercase() == wanted))
            && self
                .output_name
                .as_deref()
                .is_none_or(|wanted| d.outputs.iter().any(|o| o.name.to_lowercase() == wanted))
            && self
                .can_start_workflow
                .is_none_or(|wanted| d.can_start_workflow() == wanted)
            && self.text.as_deref().is_none_or(|t| matches_text(d, t))
    }
}

/// An input or output of an activity type, in one line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Property {
    name: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    type_name: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    required: bool,
}

/// One activity type as the tool lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
struct ActivityRow {
    #[serde(rename = "type")]
    type_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    category: Option<String>,
    kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    inputs: Vec<Property>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    outputs: Vec<Property>,
    /// Ports a flowchart connection may leave through.
    outcomes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dynamic_outcomes: Option<String>,
    /// Properties that hold child activities.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    embedded_ports: Vec<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    is_container: bool,
    /// A trigger or a start node: a workflow can begin here.
    can_start_workflow: bool,
    /// Whether designers offer it (false for activities Elsa uses internally).
    is_browsable: bool,
}

impl From<&ActivityDescriptor> for ActivityRow {
    fn from(descriptor: &ActivityDescriptor) -> Self {
        Self {
            type_name: descriptor.type_name.clone(),
            version: descriptor.version,
            namespace: descriptor.namespace.clone(),
            display_name: descriptor.display_name.clone(),
            category: descriptor.category.clone(),
            kind: descriptor.kind.as_str().to_owned(),
            description: descriptor.description.as_deref().map(|d| clip(d, 200)),
            inputs: descriptor
                .inputs
                .iter()
                .map(|i| Property {
                    name: i.name.clone(),
                    type_name: i.type_name.clone(),
                    required: i.is_required,
                })
                .collect(),
            outputs: descriptor
                .outputs
                .iter()
                .map(|o| Property {
                    name: o.name.clone(),
                    type_name: o.type_name.clone(),
                    required: false,
                })
                .collect(),
            outcomes: descriptor.outcomes.clone(),
            dynamic_outcomes: descriptor.dynamic_outcomes.as_deref().map(|d| clip(d, 160)),
            embedded_ports: descriptor.ports.iter().map(|p| p.name.clone()).collect(),
            is_container: descriptor.is_container,
            can_start_workflow: descriptor.can_start_workflow(),
            is_browsable: descriptor.is_browsable,
        }
    }
}

impl ActivityRow {
    fn evidence(&self) -> Evidence {
        Evidence::descriptor(&self.type_name, self.version)
    }
}

/// The counts beside the list: every category of the tenant's catalog with how many
/// activity types it holds.
#[derive(Serialize)]
struct Categories {
    categories: BTreeMap<String, usize>,
}

/// `activities.catalog` (`activities.search`): the activity types available to the caller's
/// tenant, filtered by text, category, type or namespace, version, port names and whether a
/// workflow can start with them, with their inputs, outputs and outcomes. Needs
/// `read:activities`.
pub struct ActivityCatalogTool {
    definition: AiToolDefinition,
}

impl Default for ActivityCatalogTool {
    fn default() -> Self {
        Self {
            definition: built_in::<ActivityCatalogInput>(
                names::ACTIVITIES_CATALOG,
                "Activity catalog",
                "Lists the activity types available to the current tenant (type name, version, \
                 display name, category, description, inputs and outputs), filtered by the \
                 arguments. Use it to find the exact type name before you draft an activity; \
                 activities.getDescriptor reads one type whole.",
                ToolMutability::ReadOnly,
                DangerLevel::Low,
                &[Permission::READ_ACTIVITIES],
                AuditBehavior::RecordInvocation,
            )
            .with_grounding_name(names::grounding::ACTIVITIES_SEARCH),
        }
    }
}

#[async_trait]
impl AiTool for ActivityCatalogTool {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: ActivityCatalogInput = input(&context)?;
        let filter = CatalogFilter::of(&args)?;
        let offset = either(("offset", "skip"), args.offset, args.skip)?;
        let limit = either(("limit", "take"), args.limit, args.take)?;
        let catalog = context
            .services
            .catalog
            .list(&context.caller.tenant_id)
            .await?;
        let mut descriptors: Vec<&ActivityDescriptor> = catalog.iter().collect();
        descriptors.sort_by(|a, b| {
            a.type_name
                .cmp(&b.type_name)
                .then(b.version.cmp(&a.version))
        });
        let mut categories = BTreeMap::new();
        for descriptor in descriptors.iter().filter(|d| d.is_browsable) {
            let category = descriptor.category.as_deref().unwrap_or("(none)");
            *categories.entry(category.to_owned()).or_insert(0) += 1;
        }
        let matching: Vec<ActivityRow> = descriptors
            .into_iter()
            .filter(|d| filter.admits(d))
            .map(ActivityRow::from)
            .collect();
        let page = page(offset, limit, &context.limits);
        let activities = Listing::from_page(page.slice(matching));
        GroundedList::new(activities, page.offset)
            .with_extra(Categories { categories })
            .finish(
                &context.limits,
                |listing| {
                    format!(
                        "Activity types matching: {}; showing {}.",
                        listing.total,
                        shown(listing, page.offset)
                    )
                },
                ActivityRow::evidence,
            )
    }
}

fn matches_text(descriptor: &ActivityDescriptor, lowered: &str) -> bool {
    [
        Some(descriptor.type_name.as_str()),
        descriptor.name.as_deref(),
        descriptor.display_name.as_deref(),
        descriptor.description.as_deref(),
        descriptor.category.as_deref(),
        descriptor.namespace.as_deref(),
    ]
    .into_iter()
    .flatten()
    .chain(descriptor.inputs.iter().map(|i| i.name.as_str()))
    .chain(descriptor.outputs.iter().map(|o| o.name.as_str()))
    .any(|field| field.to_lowercase().contains(lowered))
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(ActivityCatalogTool::default())) }

/// Arguments of `activities.getDescriptor`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetDescriptorInput {
    /// The activity type name as definitions write it, for example "Elsa.SendHttpRequest".
    #[serde(default, rename = "type")]
    #[schemars(length(min = 1, max = 200))]
    pub type_name: Option<String>,
    /// Same as type.
    #[serde(default, rename = "typeName")]
    #[schemars(length(min = 1, max = 200))]
    pub type_name_alias: Option<String>,
    /// The type's version (default: its newest).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub version: Option<i32>,
}

/// `activities.getDescriptor`: the whole descriptor of one activity type of the caller's
/// tenant (every input with its type, default and options, outputs, outcomes, ports), where
/// `activities.catalog` gives one compact row per type. Needs `read:activities`.
pub struct GetDescriptor {
    definition: AiToolDefinition,
}

impl Default for GetDescriptor {
    fn default() -> Self {
        Self {
            definition: built_in::<GetDescriptorInput>(
                names::ACTIVITIES_GET_DESCRIPTOR,
                "Get activity descriptor",
                "Reads one activity type's full descriptor: every input (name, type, whether \
                 required, default, options, UI hint), every output, the outcomes a connection \
                 may leave through and the ports holding child activities. Use it before \
                 drafting an activity whose inputs you do not know.",
                ToolMutability::ReadOnly,
                DangerLevel::Low,
                &[Permission::READ_ACTIVITIES],
                AuditBehavior::RecordInvocation,
            ),
        }
    }
}

#[async_trait]
impl AiTool for GetDescriptor {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: GetDescriptorInput = input(&context)?;
        let wanted = either(("type", "typeName"), args.type_name, args.type_name_alias)?
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| invalid("type_required", "name the activity type with 'type'"))?;
        let descriptors = context
            .services
            .catalog
            .list(&context.caller.tenant_id)
            .await?;
        let exact: Vec<&ActivityDescriptor> = descriptors
            .iter()
            .filter(|d| d.type_name == wanted)
            .collect();
        let candidates = if exact.is_empty() {
            descriptors
                .iter()
                .filter(|d| d.type_name.eq_ignore_ascii_case(&wanted))
                .collect()
        } else {
            exact
        };
        let descriptor = match args.version {
            Some(version) => candidates
                .into_iter()
                .find(|d| d.version == Some(version))
                .ok_or_else(|| {
                    AiError::not_found(format!(
                        "activity type {} version {version}",
                        quoted(&wanted)
                    ))
                })?,
            None => candidates
                .into_iter()
                .max_by_key(|d| d.version)
                .ok_or_else(|| not_found("activity type", &wanted))?,
        };
        let summary = format!(
            "Activity type {}{} ({}): {} inputs, {} outputs.",
            descriptor.type_name,
            descriptor
                .version
                .map(|v| format!(" version {v}"))
                .unwrap_or_default(),
            descriptor.label(),
            descriptor.inputs.len(),
            descriptor.outputs.len()
        );
        object(
            &summary,
            descriptor,
            &[],
            &[Evidence::descriptor(
                &descriptor.type_name,
                descriptor.version,
            )],
        )
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(GetDescriptor::default())) }
