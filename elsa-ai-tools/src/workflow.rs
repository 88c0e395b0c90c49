//! `workflow.getDefinition` and `workflow.listDefinitions`: reading the caller's tenant's
//! workflow definitions.

use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiTool, AiToolDefinition, AiToolExecutionContext, AiToolRegistration, AuditBehavior,
    DangerLevel, Permission, ToolMutability,
};
use elsa_workflows::{DefinitionQuery, DefinitionSummary, VersionOptions};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::graph::{DefinitionHeader, Graph};
use crate::names;
use crate::support::{Listing, built_in, clip, input, invalid, page, quoted, to_json};

/// Which version of a definition to read: `"latest"`, `"published"` or a version number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum VersionSelector {
    /// `"latest"` or `"published"`.
    Named(NamedVersion),
    /// Exactly this version number (1 or more).
    Number(#[schemars(range(min = 1))] i32),
}

/// The named version selectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NamedVersion {
    /// The newest version, published or not.
    Latest,
    /// The version currently published.
    Published,
}

impl VersionSelector {
    fn options(self) -> Result<VersionOptions, AiError> {
        match self {
            Self::Named(NamedVersion::Latest) => Ok(VersionOptions::Latest),
            Self::Named(NamedVersion::Published) => Ok(VersionOptions::Published),
            Self::Number(n) if n >= 1 => Ok(VersionOptions::Specific(n)),
            Self::Number(n) => Err(invalid(
                "invalid_version",
                format!("version numbers start at 1, got {n}"),
            )),
        }
    }

    fn describe(self) -> String {
        match self {
            Self::Named(NamedVersion::Latest) => String::new(),
            Self::Named(NamedVersion::Published) => " (published version)".to_owned(),
            Self::Number(n) => format!(" version {n}"),
        }
    }
}

/// Arguments of `workflow.getDefinition`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetDefinitionInput {
    /// The workflow definition id (shared by all its versions).
    #[schemars(length(min = 1, max = 200))]
    pub definition_id: String,
    /// Which version: "latest" (default), "published", or a version number.
    #[serde(default)]
    pub version: Option<VersionSelector>,
}

/// `workflow.getDefinition`: one definition of the caller's tenant, its header and its
/// compact graph (activities with type and display name, connections, variables, inputs,
/// outputs). Needs `read:workflows`.
pub struct GetDefinition {
    definition: AiToolDefinition,
}

impl Default for GetDefinition {
    fn default() -> Self {
        Self {
            definition: built_in::<GetDefinitionInput>(
                names::GET_DEFINITION,
                "Get workflow definition",
                "Reads one workflow definition of the current tenant: its header (id, version, \
                 name, description, published/latest flags) and its graph — every activity with \
                 id, type, display name, parent and its set inputs (values clipped), the \
                 flowchart connections as 'activity:port' pairs, variables, and the workflow's \
                 inputs and outputs. Lists longer than their limit say 'truncated': true with \
                 the total. Pick a version with 'version': \"latest\" (default), \"published\" or \
                 a number.",
                ToolMutability::ReadOnly,
                DangerLevel::Low,
                &[Permission::READ_WORKFLOWS],
                AuditBehavior::RecordInvocation,
            ),
        }
    }
}

#[async_trait]
impl AiTool for GetDefinition {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: GetDefinitionInput = input(&context)?;
        let selector = args
            .version
            .unwrap_or(VersionSelector::Named(NamedVersion::Latest));
        let definition = context
            .services
            .definitions
            .find(
                &context.caller.tenant_id,
                &args.definition_id,
                selector.options()?,
            )
            .await?
            .ok_or_else(|| {
                AiError::not_found(format!(
                    "workflow definition {}{}",
                    quoted(&args.definition_id),
                    selector.describe()
                ))
            })?;
        let mut result = to_json(&DefinitionHeader::of(&definition))?;
        let graph = to_json(&Graph::of(&definition))?;
        if let (Value::Object(result), Value::Object(graph)) = (&mut result, graph) {
            result.extend(graph);
        }
        Ok(result)
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(GetDefinition::default())) }

/// Which versions `workflow.listDefinitions` lists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ListFilter {
    /// Each definition's newest version.
    #[default]
    Latest,
    /// Only published versions.
    Published,
}

/// Arguments of `workflow.listDefinitions`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListDefinitionsInput {
    /// Case-insensitive text matched against definition id, name and description.
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub text: Option<String>,
    /// "latest" (default: each definition's newest version) or "published".
    #[serde(default)]
    pub filter: Option<ListFilter>,
    /// How many matches to skip (default 0).
    #[serde(default)]
    pub offset: Option<usize>,
    /// How many to return, 1 to 50 (default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<usize>,
}

/// One row of `workflow.listDefinitions`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
struct DefinitionRow {
    definition_id: String,
    version: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    is_latest: bool,
    is_published: bool,
    activity_count: usize,
}

impl From<DefinitionSummary> for DefinitionRow {
    fn from(summary: DefinitionSummary) -> Self {
        Self {
            definition_id: summary.definition_id,
            version: summary.version,
            name: summary.name,
            description: summary.description.map(|d| clip(&d, 160)),
            is_latest: summary.is_latest,
            is_published: summary.is_published,
            activity_count: summary.activity_count,
        }
    }
}

/// `workflow.listDefinitions`: searches the caller's tenant's definitions by text, newest or
/// published versions, a page at a time. Needs `read:workflows`.
pub struct ListDefinitions {
    definition: AiToolDefinition,
}

impl Default for ListDefinitions {
    fn default() -> Self {
        Self {
            definition: built_in::<ListDefinitionsInput>(
                names::LIST_DEFINITIONS,
                "List workflow definitions",
                "Searches the current tenant's workflow definitions. 'text' matches id, name and \
                 description (case-insensitive); 'filter' is \"latest\" (each definition's newest \
                 version, default) or \"published\". Returns one row per definition (id, version, \
                 name, clipped description, flags, activity count), ordered by name, with \
                 'total', and 'truncated': true plus 'nextOffset' when more matches exist. Use \
                 workflow.getDefinition for a definition's graph.",
                ToolMutability::ReadOnly,
                DangerLevel::Low,
                &[Permission::READ_WORKFLOWS],
                AuditBehavior::RecordInvocation,
            ),
        }
    }
}

#[async_trait]
impl AiTool for ListDefinitions {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: ListDefinitionsInput = input(&context)?;
        let query = DefinitionQuery {
            text: args
                .text
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty()),
            version: match args.filter.unwrap_or_default() {
                ListFilter::Latest => VersionOptions::Latest,
                ListFilter::Published => VersionOptions::Published,
            },
            page: page(args.offset, args.limit),
            ..DefinitionQuery::default()
        };
        let found = context
            .services
            .definitions
            .search(&context.caller.tenant_id, &query)
            .await?;
        to_json(&Listing::from_page(found.map(DefinitionRow::from)))
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(ListDefinitions::default())) }
