//! `activities.catalog` (the activity types available to the caller's tenant) and
//! `activities.getDescriptor` (one of them, whole).

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

use crate::names;
use crate::support::{Listing, built_in, clip, input, not_found, page, to_json};

/// Arguments of `activities.catalog`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActivityCatalogInput {
    /// Only activities of this category (case-insensitive), for example "HTTP" or "Console".
    #[serde(default)]
    #[schemars(length(min = 1, max = 100))]
    pub category: Option<String>,
    /// Case-insensitive text matched against type name, display name and description.
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub text: Option<String>,
    /// How many matches to skip (default 0).
    #[serde(default)]
    pub offset: Option<usize>,
    /// How many to return, 1 to 50 (default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<usize>,
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
}

impl From<&ActivityDescriptor> for ActivityRow {
    fn from(descriptor: &ActivityDescriptor) -> Self {
        Self {
            type_name: descriptor.type_name.clone(),
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
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CatalogResult {
    /// Every category of the tenant's catalog with how many activity types it holds.
    categories: BTreeMap<String, usize>,
    #[serde(flatten)]
    activities: Listing<ActivityRow>,
}

/// `activities.catalog`: the activity types available to the caller's tenant, filtered by
/// category or text, with their inputs, outputs and outcomes. Needs `read:activities`.
pub struct ActivityCatalogTool {
    definition: AiToolDefinition,
}

impl Default for ActivityCatalogTool {
    fn default() -> Self {
        Self {
            definition: built_in::<ActivityCatalogInput>(
                names::ACTIVITIES_CATALOG,
                "Activity catalog",
                "Lists the activity types the current tenant's workflows may use. Filter with \
                 'category' (case-insensitive, for example \"HTTP\") and/or 'text' (matches type \
                 name, display name and description). Each row gives the type name to use in \
                 drafts, display name, category, kind, a clipped description, inputs and outputs \
                 (name, type, required) and the outcomes a connection may leave through. The \
                 result also counts activity types per category, and says 'truncated': true with \
                 'nextOffset' when more match.",
                ToolMutability::ReadOnly,
                DangerLevel::Low,
                &[Permission::READ_ACTIVITIES],
                AuditBehavior::RecordInvocation,
            ),
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
        let mut descriptors = context
            .services
            .catalog
            .list(&context.caller.tenant_id)
            .await?;
        descriptors.sort_by(|a, b| a.type_name.cmp(&b.type_name));
        let mut categories = BTreeMap::new();
        for descriptor in &descriptors {
            let category = descriptor.category.as_deref().unwrap_or("(none)");
            *categories.entry(category.to_owned()).or_insert(0) += 1;
        }
        let category = args.category.as_deref().map(str::trim);
        let text = args
            .text
            .as_deref()
            .map(|t| t.trim().to_lowercase())
            .filter(|t| !t.is_empty());
        let matching: Vec<ActivityRow> = descriptors
            .iter()
            .filter(|d| {
                category.is_none_or(|c| {
                    d.category
                        .as_deref()
                        .is_some_and(|own| own.eq_ignore_ascii_case(c))
                })
            })
            .filter(|d| text.as_deref().is_none_or(|t| matches_text(d, t)))
            .map(ActivityRow::from)
            .collect();
        let activities = Listing::from_page(page(args.offset, args.limit).slice(matching));
        to_json(&CatalogResult {
            categories,
            activities,
        })
    }
}

fn matches_text(descriptor: &ActivityDescriptor, lowered: &str) -> bool {
    [
        Some(descriptor.type_name.as_str()),
        descriptor.display_name.as_deref(),
        descriptor.description.as_deref(),
    ]
    .into_iter()
    .flatten()
    .any(|field| field.to_lowercase().contains(lowered))
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(ActivityCatalogTool::default())) }

/// Arguments of `activities.getDescriptor`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetDescriptorInput {
    /// The activity type name as definitions write it, for example "Elsa.SendHttpRequest".
    #[serde(rename = "type")]
    #[schemars(length(min = 1, max = 200))]
    pub type_name: String,
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
                "Reads the full descriptor of one activity type of the current tenant's catalog, \
                 by its type name (for example \"Elsa.SendHttpRequest\"; the 'type' of a catalog \
                 row): display name, category, kind, description, every input (name, type, \
                 whether required, default value, options, UI hint), every output, the outcomes a \
                 connection may leave through and the ports holding child activities. Use it \
                 before drafting an activity whose inputs you do not know. An unknown type is \
                 404. The lookup ignores letter case when no type matches exactly.",
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
        let wanted = args.type_name.trim();
        let descriptors = context
            .services
            .catalog
            .list(&context.caller.tenant_id)
            .await?;
        let descriptor = descriptors
            .iter()
            .find(|d| d.type_name == wanted)
            .or_else(|| {
                descriptors
                    .iter()
                    .find(|d| d.type_name.eq_ignore_ascii_case(wanted))
            })
            .ok_or_else(|| not_found("activity type", wanted))?;
        to_json(descriptor)
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(GetDescriptor::default())) }
