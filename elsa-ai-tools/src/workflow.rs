//! `workflow.getDefinition`, `workflow.getDefinitionGraph` and `workflow.listDefinitions`:
//! reading the caller's tenant's workflow definitions.

use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiTool, AiToolDefinition, AiToolExecutionContext, AiToolRegistration, AuditBehavior,
    DangerLevel, Permission, ToolMutability,
};
use elsa_workflows::{DefinitionQuery, DefinitionSummary, VersionOptions, WorkflowDefinition};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::envelope::{Evidence, GroundedList, count, object, shown};
use crate::graph::{CatalogGaps, DefinitionHeader, Graph, Structure};
use crate::names;
use crate::support::{Listing, built_in, clip, either, either_text, input, invalid, page, quoted};
use crate::usages::{ScanLimit, scan_definitions};

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
#[non_exhaustive]
pub enum NamedVersion {
    /// The newest version, published or not.
    Latest,
    /// The version currently published.
    Published,
}

impl VersionSelector {
    /// The store's version options: 400 `invalid_version` for a number below 1.
    pub(crate) fn options(self) -> Result<VersionOptions, AiError> {
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

/// Which definition version a read names: a definition id with a version (or `published`),
/// or one version's own id (`versionId`, or upstream's `id`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DefinitionLocator {
    pub definition_id: Option<String>,
    pub version_id: Option<String>,
    pub version: Option<VersionSelector>,
    pub published: Option<bool>,
}

impl DefinitionLocator {
    /// The located version: 400 `definition_required` when neither a definition id nor a
    /// version id is given (or both are), 400 `conflicting_arguments` when `version` and
    /// `published: true` disagree, 404 when the tenant has no such version.
    pub async fn find(
        self,
        context: &AiToolExecutionContext,
    ) -> Result<Arc<WorkflowDefinition>, AiError> {
        let store = &context.services.definitions;
        let tenant = &context.caller.tenant_id;
        let trimmed =
            |text: Option<String>| text.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
        match (trimmed(self.definition_id), trimmed(self.version_id)) {
            (Some(definition_id), None) => {
                let selector = match (self.version, self.published) {
                    (Some(version), Some(true))
                        if version != VersionSelector::Named(NamedVersion::Published) =>
                    {
                        return Err(invalid(
                            "conflicting_arguments",
                            "give either 'version' or 'published': true, not both",
                        ));
                    }
                    (_, Some(true)) => VersionSelector::Named(NamedVersion::Published),
                    (Some(version), _) => version,
                    (None, _) => VersionSelector::Named(NamedVersion::Latest),
                };
                store
                    .find(tenant, &definition_id, selector.options()?)
                    .await?
                    .ok_or_else(|| {
                        AiError::not_found(format!(
                            "workflow definition {}{}",
                            quoted(&definition_id),
                            selector.describe()
                        ))
                    })
            }
            (None, Some(version_id)) => {
                store
                    .find_version(tenant, &version_id)
                    .await?
                    .ok_or_else(|| {
                        AiError::not_found(format!(
                            "workflow definition version {}",
                            quoted(&version_id)
                        ))
                    })
            }
            _ => Err(invalid(
                "definition_required",
                "name the definition with 'definitionId' (and optionally 'version' or \
                 'published'), or one version with 'versionId'",
            )),
        }
    }
}

/// Arguments of `workflow.getDefinition`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetDefinitionInput {
    /// The workflow definition id (shared by all its versions).
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub definition_id: Option<String>,
    /// Which version: "latest" (default), "published", or a version number.
    #[serde(default)]
    pub version: Option<VersionSelector>,
    /// true: the published version (the same as version "published").
    #[serde(default)]
    pub published: Option<bool>,
    /// One version's own id, instead of definitionId.
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub version_id: Option<String>,
    /// The same as versionId.
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub id: Option<String>,
}

impl GetDefinitionInput {
    pub(crate) fn locator(self) -> Result<DefinitionLocator, AiError> {
        Ok(DefinitionLocator {
            definition_id: self.definition_id,
            version_id: either(("id", "versionId"), self.id, self.version_id)?,
            version: self.version,
            published: self.published,
        })
    }
}

/// The one-line description of a definition version a summary starts with.
pub(crate) fn describe(definition: &WorkflowDefinition) -> String {
    let state = match (definition.is_latest(), definition.is_published()) {
        (true, true) => ", latest and published",
        (true, false) => ", latest",
        (false, true) => ", published",
        (false, false) => "",
    };
    match definition.name() {
        Some(name) => format!(
            "Workflow '{name}' ({}) version {}{state}",
            definition.definition_id(),
            definition.version()
        ),
        None => format!(
            "Workflow {} version {}{state}",
            definition.definition_id(),
            definition.version()
        ),
    }
}

/// `workflow.getDefinition` (`workflows.getDefinition`): one definition of the caller's
/// tenant, its header and its compact graph (activities with type, display name and set
/// inputs, connections, variables, inputs, outputs), flagging activity types the tenant's
/// catalog lacks. Needs `read:workflows`.
pub struct GetDefinition {
    definition: AiToolDefinition,
}

impl Default for GetDefinition {
    fn default() -> Self {
        Self {
            definition: built_in::<GetDefinitionInput>(
                names::GET_DEFINITION,
                "Get workflow definition",
                "Reads one workflow definition: its header (id, version, name, description, \
                 flags) and graph: every activity with id, type, name, parent and its inputs, \
                 the connections, variables, inputs and outputs. Activity types the catalog \
                 lacks are named in 'warnings'. workflow.getDefinitionGraph is cheaper when \
                 input values do not matter.",
                ToolMutability::ReadOnly,
                DangerLevel::Low,
                &[Permission::READ_WORKFLOWS],
                AuditBehavior::RecordInvocation,
            )
            .with_grounding_name(names::grounding::GET_DEFINITION),
        }
    }
}

/// `workflow.getDefinition`'s answer: the header and the graph.
#[derive(Serialize)]
struct DefinitionAnswer {
    #[serde(flatten)]
    header: DefinitionHeader,
    #[serde(flatten)]
    graph: Graph,
}

#[async_trait]
impl AiTool for GetDefinition {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: GetDefinitionInput = input(&context)?;
        let definition = args.locator()?.find(&context).await?;
        let gaps = CatalogGaps::of(&context, &definition).await?;
        let mut graph = Graph::of(&definition);
        graph.flag(&gaps);
        let summary = format!(
            "{}: {}, {}.",
            describe(&definition),
            count(graph.activities.total, "activity", "activities"),
            count(graph.connections.total, "connection", "connections")
        );
        object(
            &summary,
            DefinitionAnswer {
                header: DefinitionHeader::of(&definition),
                graph,
            },
            &gaps.warnings(),
            &[Evidence::definition(
                definition.definition_id(),
                definition.version(),
            )],
        )
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(GetDefinition::default())) }

/// `workflow.getDefinitionGraph` (`workflows.getDefinitionGraph`): a definition's structure
/// alone — activities (id, type, name, display text, parent), connections, variables, inputs
/// and outputs — without input values, bounded in size. Needs `read:workflows`.
pub struct GetDefinitionGraph {
    definition: AiToolDefinition,
}

impl Default for GetDefinitionGraph {
    fn default() -> Self {
        Self {
            definition: built_in::<GetDefinitionInput>(
                names::GET_DEFINITION_GRAPH,
                "Get workflow graph",
                "Reads the structure of one workflow definition without input values: \
                 activities (id, type, name, parent), connections as 'source:port -> \
                 target:port', variables, inputs and outputs. Name it like \
                 workflow.getDefinition.",
                ToolMutability::ReadOnly,
                DangerLevel::Low,
                &[Permission::READ_WORKFLOWS],
                AuditBehavior::RecordInvocation,
            )
            .with_grounding_name(names::grounding::GET_DEFINITION_GRAPH),
        }
    }
}

/// `workflow.getDefinitionGraph`'s answer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StructureAnswer {
    definition_id: String,
    version: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(flatten)]
    structure: Structure,
}

#[async_trait]
impl AiTool for GetDefinitionGraph {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: GetDefinitionInput = input(&context)?;
        let definition = args.locator()?.find(&context).await?;
        let gaps = CatalogGaps::of(&context, &definition).await?;
        let mut structure = Structure::of(&definition, &gaps);
        structure.fit(context.limits.max_result_bytes);
        let activities = &structure.activities;
        let summary = format!(
            "{}: {}{}, {}.",
            describe(&definition),
            count(activities.total, "activity", "activities"),
            if activities.truncated {
                format!(" ({} shown)", activities.returned)
            } else {
                String::new()
            },
            count(structure.connections.total, "connection", "connections")
        );
        object(
            &summary,
            StructureAnswer {
                definition_id: definition.definition_id().to_owned(),
                version: definition.version(),
                name: definition.name().map(str::to_owned),
                structure,
            },
            &gaps.warnings(),
            &[Evidence::definition(
                definition.definition_id(),
                definition.version(),
            )],
        )
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(GetDefinitionGraph::default())) }

/// Which versions `workflow.listDefinitions` lists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
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
    /// The same as text.
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub query: Option<String>,
    /// Only the definition with exactly this name (letter case ignored).
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub name: Option<String>,
    /// Only this definition.
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub definition_id: Option<String>,
    /// Only this version number of each definition.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub version: Option<i32>,
    /// true: only published versions (the same as filter "published").
    #[serde(default)]
    pub published: Option<bool>,
    /// "latest" (default: each definition's newest version) or "published".
    #[serde(default)]
    pub filter: Option<ListFilter>,
    /// Only definitions with an activity of this type, for example "Elsa.SendHttpRequest"
    /// (letter case ignored; reads each candidate's graph).
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub uses_activity_type: Option<String>,
    /// How many matches to skip (default 0).
    #[serde(default)]
    pub offset: Option<usize>,
    /// How many to return, 1 to 50 (default 20; the server may return fewer).
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<usize>,
}

/// One row of `workflow.listDefinitions`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DefinitionRow {
    pub definition_id: String,
    pub version: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub is_latest: bool,
    pub is_published: bool,
    pub activity_count: usize,
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

impl DefinitionRow {
    pub(crate) fn evidence(&self) -> Evidence {
        Evidence::definition(&self.definition_id, self.version)
    }
}

/// Whether a definition search read every candidate (`usesActivityType` reads graphs one by
/// one, up to a bound).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ScanExtra {
    scanned: usize,
    complete: bool,
}

/// `workflow.listDefinitions` (`workflows.search`): searches the caller's tenant's
/// definitions by text, exact name, id, version, publication and activity type used, a page
/// at a time. Needs `read:workflows`.
pub struct ListDefinitions {
    definition: AiToolDefinition,
}

impl Default for ListDefinitions {
    fn default() -> Self {
        Self {
            definition: built_in::<ListDefinitionsInput>(
                names::LIST_DEFINITIONS,
                "List workflow definitions",
                "Searches the current tenant's workflow definitions by text, name, id, version, \
                 publication or an activity type they use. Returns one row per definition (id, \
                 version, name, short description, flags, activity count), by name. Use \
                 workflow.getDefinition for a definition's graph.",
                ToolMutability::ReadOnly,
                DangerLevel::Low,
                &[Permission::READ_WORKFLOWS],
                AuditBehavior::RecordInvocation,
            )
            .with_grounding_name(names::grounding::WORKFLOWS_SEARCH),
        }
    }
}

/// Free text given as `text` or as upstream's `query`.
pub(crate) fn search_text(
    text: Option<String>,
    query: Option<String>,
) -> Result<Option<String>, AiError> {
    either_text(("text", "query"), text, query)
}

#[async_trait]
impl AiTool for ListDefinitions {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: ListDefinitionsInput = input(&context)?;
        let published = args.published == Some(true)
            || args.filter.unwrap_or_default() == ListFilter::Published;
        let version = match (args.version, published) {
            (Some(_), true) => {
                return Err(invalid(
                    "conflicting_arguments",
                    "give either 'version' or published versions, not both",
                ));
            }
            (Some(n), false) => VersionSelector::Number(n).options()?,
            (None, true) => VersionOptions::Published,
            (None, false) => VersionOptions::Latest,
        };
        let page = page(args.offset, args.limit, &context.limits);
        let query = DefinitionQuery {
            text: search_text(args.text, args.query)?,
            name: args
                .name
                .map(|n| n.trim().to_owned())
                .filter(|n| !n.is_empty()),
            definition_id: args
                .definition_id
                .map(|n| n.trim().to_owned())
                .filter(|n| !n.is_empty()),
            version,
            page,
        };
        let offset = page.offset;
        let summary = |what: String| {
            move |listing: &Listing<DefinitionRow>| {
                format!(
                    "Workflow definitions {what}: {}; showing {}.",
                    listing.total,
                    shown(listing, offset)
                )
            }
        };
        let Some(activity_type) = args
            .uses_activity_type
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
        else {
            let found = context
                .services
                .definitions
                .search(&context.caller.tenant_id, &query)
                .await?;
            return GroundedList::new(Listing::from_page(found.map(DefinitionRow::from)), offset)
                .finish(
                    &context.limits,
                    summary("matching".to_owned()),
                    DefinitionRow::evidence,
                );
        };
        let mut matching = Vec::new();
        let scan = scan_definitions(
            &context,
            &query,
            ScanLimit::default(),
            |summary, definition| {
                if definition
                    .activities()
                    .iter()
                    .any(|node| node.type_name().eq_ignore_ascii_case(&activity_type))
                {
                    matching.push(DefinitionRow::from(summary));
                }
            },
        )
        .await?;
        let what = format!("using {activity_type}");
        let summary = summary(what);
        GroundedList::new(Listing::from_page(page.slice(matching)), offset)
            .with_extra(ScanExtra {
                scanned: scan.scanned,
                complete: scan.complete,
            })
            .with_warnings((!scan.complete).then(|| {
                format!(
                    "only the first {} definitions were read: more may use {activity_type}",
                    scan.scanned
                )
            }))
            .finish(&context.limits, summary, DefinitionRow::evidence)
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(ListDefinitions::default())) }
