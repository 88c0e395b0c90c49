//! The compact graph of a workflow definition, as `workflow.getDefinition` returns it and as
//! proposal tools preview a draft: activities with type and display name, connections as
//! `activity:port` pairs, variables and the workflow's inputs and outputs. Long lists are cut
//! with a more-available marker and input values are clipped, so a large workflow still fits
//! a model's context.

use std::collections::{BTreeMap, HashSet};

use elsa_ai_abstractions::AiError;
use elsa_ai_abstractions::AiToolExecutionContext;
use elsa_workflows::{ActivityNode, ActivitySlot, InputValue, WorkflowDefinition};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::envelope::size_of;
use crate::support::{Listing, clip, clip_json};

/// How many activities a graph lists.
pub(crate) const MAX_ACTIVITIES: usize = 100;
/// How many connections a graph lists.
pub(crate) const MAX_CONNECTIONS: usize = 200;
/// How many variables, inputs or outputs a graph lists.
pub(crate) const MAX_DECLARATIONS: usize = 50;
/// How many characters of one input value a graph shows.
pub(crate) const MAX_VALUE_CHARS: usize = 120;

/// The header of a definition version.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DefinitionHeader {
    pub definition_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    pub version: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub is_latest: bool,
    pub is_published: bool,
    pub activity_count: usize,
}

impl DefinitionHeader {
    pub fn of(definition: &WorkflowDefinition) -> Self {
        Self {
            definition_id: definition.definition_id().to_owned(),
            version_id: definition.version_id().map(str::to_owned),
            version: definition.version(),
            name: definition.name().map(str::to_owned),
            description: definition.description().map(|d| clip(d, 500)),
            is_latest: definition.is_latest(),
            is_published: definition.is_published(),
            activity_count: definition.activity_count(),
        }
    }
}

/// One activity of the graph.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GraphActivity {
    pub id: Option<String>,
    #[serde(rename = "type")]
    pub type_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The containing activity; absent for the root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// For activities held by a property of their parent (an If's `then`): that property.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_by: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub starts_workflow: bool,
    /// The workflow a workflow-as-activity runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow_definition_id: Option<String>,
    /// Inputs with a value, each shown as one clipped line.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub inputs: Map<String, Value>,
    /// The tenant's activity catalog has no such type (see [`CatalogGaps`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub not_in_catalog: bool,
}

impl GraphActivity {
    pub fn of(node: &ActivityNode<'_>) -> Self {
        let mut inputs = Map::new();
        for input in node.inputs() {
            if input.holds_activities || input.value.is_blank() {
                continue;
            }
            inputs.insert(input.name.to_owned(), Value::String(show(&input.value)));
        }
        Self {
            id: node.id().map(str::to_owned),
            type_name: node.type_name().to_owned(),
            display_name: node
                .name()
                .or_else(|| node.display_text())
                .map(str::to_owned),
            parent: node.parent_id().map(str::to_owned),
            held_by: match node.slot() {
                ActivitySlot::Embedded { property } => Some(property.clone()),
                ActivitySlot::Root | ActivitySlot::Child => None,
            },
            starts_workflow: node.can_start_workflow(),
            workflow_definition_id: node.workflow_definition_id().map(str::to_owned),
            inputs,
            not_in_catalog: false,
        }
    }
}

/// An input value in one line: a literal as itself, an expression as `Language: text`, a
/// binding as `→ memory`.
fn show(value: &InputValue<'_>) -> String {
    match value {
        InputValue::Raw(raw) => clip_json(raw, MAX_VALUE_CHARS),
        InputValue::Wrapped {
            expression: Some(expression),
            ..
        } => {
            let text = expression
                .value
                .map_or_else(String::new, |v| clip_json(v, MAX_VALUE_CHARS));
            if expression.kind == "Literal" {
                text
            } else {
                clip(&format!("{}: {text}", expression.kind), MAX_VALUE_CHARS)
            }
        }
        InputValue::Wrapped {
            memory_reference, ..
        } => format!("→ {}", memory_reference.unwrap_or("?")),
    }
}

/// One flowchart connection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GraphConnection {
    /// `activity:port` the connection leaves from.
    pub from: String,
    /// `activity:port` it enters.
    pub to: String,
    /// The flowchart holding it, when that is not the root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flowchart: Option<String>,
}

/// A variable or workflow input/output declaration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Declaration {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_array: bool,
}

/// The whole compact graph.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Graph {
    pub root: GraphActivity,
    pub activities: Listing<GraphActivity>,
    pub connections: Listing<GraphConnection>,
    pub variables: Listing<Declaration>,
    pub inputs: Listing<Declaration>,
    pub outputs: Listing<Declaration>,
}

impl Graph {
    pub fn of(definition: &WorkflowDefinition) -> Self {
        let nodes = definition.activities();
        let root = definition.root();
        let mut connections = Vec::new();
        for node in nodes.iter().filter(|n| n.is_flowchart()) {
            let flowchart = (node.depth() > 0).then(|| node.id().unwrap_or("?").to_owned());
            connections.extend(node.connections().into_iter().map(|c| GraphConnection {
                from: format!("{}:{}", c.source.activity, c.source.port),
                to: format!("{}:{}", c.target.activity, c.target.port),
                flowchart: flowchart.clone(),
            }));
        }
        let mut variables: Vec<Declaration> = definition
            .variables()
            .into_iter()
            .map(|v| Declaration {
                name: v.name.or(v.id),
                type_name: v.type_name,
                display_name: None,
                is_array: v.is_array,
            })
            .collect();
        // Container-level variables are workflow state too.
        for node in nodes.iter().filter(|n| n.is_container()) {
            variables.extend(node.variables().into_iter().map(|v| Declaration {
                name: v.name.or(v.id),
                type_name: v.type_name,
                display_name: node.id().map(|id| format!("declared on {id}")),
                is_array: v.is_array,
            }));
        }
        let io = |list: Vec<elsa_workflows::IoDeclaration>| {
            Listing::first(
                list.into_iter().map(|d| Declaration {
                    name: d.name,
                    type_name: d.type_name,
                    display_name: d.display_name,
                    is_array: false,
                }),
                MAX_DECLARATIONS,
            )
        };
        Self {
            root: GraphActivity::of(&root),
            activities: Listing::first(nodes.iter().skip(1).map(GraphActivity::of), MAX_ACTIVITIES),
            connections: Listing::first(connections, MAX_CONNECTIONS),
            variables: Listing::first(variables, MAX_DECLARATIONS),
            inputs: io(definition.inputs()),
            outputs: io(definition.outputs()),
        }
    }
}

impl Graph {
    /// Marks the activities whose type the tenant's catalog lacks.
    pub fn flag(&mut self, gaps: &CatalogGaps) {
        for activity in std::iter::once(&mut self.root).chain(&mut self.activities.items) {
            activity.not_in_catalog = gaps.lacks(&activity.type_name);
        }
    }
}

/// The activity types a definition uses that the caller's tenant's catalog does not have
/// (an activity that is no longer installed, or a custom one the server never had), and
/// which activities use each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CatalogGaps {
    missing: BTreeMap<String, Vec<String>>,
}

/// How many activities a catalog-gap warning names before it only counts them.
const GAP_ACTIVITIES_NAMED: usize = 5;

impl CatalogGaps {
    /// The gaps of `definition` against the tenant's catalog.
    pub async fn of(
        context: &AiToolExecutionContext,
        definition: &WorkflowDefinition,
    ) -> Result<Self, AiError> {
        let catalog = context
            .services
            .catalog
            .list(&context.caller.tenant_id)
            .await?;
        let known: HashSet<&str> = catalog.iter().map(|d| d.type_name.as_str()).collect();
        let mut missing: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for node in definition.activities() {
            if !known.contains(node.type_name()) {
                missing
                    .entry(node.type_name().to_owned())
                    .or_default()
                    .push(node.id().unwrap_or("?").to_owned());
            }
        }
        Ok(Self { missing })
    }

    /// Whether the catalog lacks `type_name`.
    pub fn lacks(&self, type_name: &str) -> bool {
        self.missing.contains_key(type_name)
    }

    /// One warning per missing type, naming the activities that use it.
    pub fn warnings(&self) -> Vec<String> {
        self.missing
            .iter()
            .map(|(type_name, activities)| {
                let mut named: Vec<&str> = activities
                    .iter()
                    .take(GAP_ACTIVITIES_NAMED)
                    .map(String::as_str)
                    .collect();
                let more = activities.len().saturating_sub(GAP_ACTIVITIES_NAMED);
                let more = (more > 0).then(|| format!(" and {more} more"));
                named.sort_unstable();
                format!(
                    "activity type '{type_name}' is not in this tenant's catalog (used by {}{}): \
                     it is not installed, so the workflow cannot run it",
                    named.join(", "),
                    more.unwrap_or_default()
                )
            })
            .collect()
    }
}

/// One activity of the structure-only graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StructureActivity {
    pub id: Option<String>,
    #[serde(rename = "type")]
    pub type_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_text: Option<String>,
    /// The containing activity; absent for children of the root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub not_in_catalog: bool,
}

/// A workflow's structure without input values: what `workflow.getDefinitionGraph` returns
/// when a model needs the shape of a workflow rather than its settings. Connections are one
/// string each, `source:port -> target:port`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Structure {
    #[serde(rename = "rootType")]
    pub root_type: String,
    pub activities: Listing<StructureActivity>,
    pub connections: Listing<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub variables: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<String>,
}

impl Structure {
    /// The structure of `definition`, flagging the activities `gaps` names.
    pub fn of(definition: &WorkflowDefinition, gaps: &CatalogGaps) -> Self {
        let nodes = definition.activities();
        let root = definition.root();
        let root_id = root.id().map(str::to_owned);
        let activities = nodes.iter().skip(1).map(|node| StructureActivity {
            id: node.id().map(str::to_owned),
            type_name: node.type_name().to_owned(),
            name: node.name().map(str::to_owned),
            display_text: node
                .display_text()
                .filter(|text| Some(*text) != node.name())
                .map(|text| clip(text, MAX_VALUE_CHARS)),
            parent: node
                .parent_id()
                .filter(|parent| Some(*parent) != root_id.as_deref())
                .map(str::to_owned),
            not_in_catalog: gaps.lacks(node.type_name()),
        });
        let mut connections = Vec::new();
        for node in nodes.iter().filter(|n| n.is_flowchart()) {
            connections.extend(node.connections().into_iter().map(|c| {
                format!(
                    "{}:{} -> {}:{}",
                    c.source.activity, c.source.port, c.target.activity, c.target.port
                )
            }));
        }
        let declared = |name: Option<String>, type_name: Option<String>| {
            let name = name.unwrap_or_else(|| "?".to_owned());
            match type_name {
                Some(type_name) => format!("{name}: {type_name}"),
                None => name,
            }
        };
        Self {
            root_type: root.type_name().to_owned(),
            activities: Listing::first(activities, MAX_ACTIVITIES),
            connections: Listing::first(connections, MAX_CONNECTIONS),
            variables: definition
                .variables()
                .into_iter()
                .take(MAX_DECLARATIONS)
                .map(|v| declared(v.name.or(v.id), v.type_name))
                .collect(),
            inputs: definition
                .inputs()
                .into_iter()
                .take(MAX_DECLARATIONS)
                .map(|d| declared(d.name, d.type_name))
                .collect(),
            outputs: definition
                .outputs()
                .into_iter()
                .take(MAX_DECLARATIONS)
                .map(|d| declared(d.name, d.type_name))
                .collect(),
        }
    }

    /// Drops activities and connections from the ends of their lists (the longer list
    /// first) until the structure fits `max_bytes`, marking what it cut.
    pub fn fit(&mut self, max_bytes: usize) {
        let mut size = size_of(self);
        while size > max_bytes {
            let activities_first = self.activities.items.len() >= self.connections.items.len();
            let dropped = if activities_first {
                self.activities.items.pop().map(|a| size_of(&a) + 1)
            } else {
                self.connections.items.pop().map(|c| size_of(&c) + 1)
            };
            let Some(dropped) = dropped else { break };
            size -= dropped;
            self.activities.returned = self.activities.items.len();
            self.activities.truncated = self.activities.returned < self.activities.total;
            self.connections.returned = self.connections.items.len();
            self.connections.truncated = self.connections.returned < self.connections.total;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_graph_names_types_connections_and_clipped_inputs() {
        let long = "x".repeat(500);
        let definition = WorkflowDefinition::from_value(json!({
            "definitionId": "d", "name": "N", "version": 2,
            "variables": [{"id": "v", "name": "Counter", "typeName": "Int32"}],
            "inputs": [{"name": "Order", "type": "Object", "displayName": "Order"}],
            "root": {"id": "f", "type": "Elsa.Flowchart", "activities": [
                {"id": "a", "type": "Elsa.WriteLine", "name": "Hello", "canStartWorkflow": true,
                 "text": {"typeName": "String", "expression": {"type": "Literal", "value": long}}},
                {"id": "b", "type": "Elsa.If", "condition": {"typeName": "Boolean", "expression": {"type": "JavaScript", "value": "x > 1"}},
                 "then": {"id": "t", "type": "Elsa.WriteLine"}},
                {"id": "c", "type": "Elsa.SetVariable", "result": {"typeName": "Object", "memoryReference": {"id": "v"}}}
            ], "connections": [{"source": {"activity": "a", "port": "Done"}, "target": {"activity": "b", "port": "In"}}]}
        }))
        .unwrap();
        let graph = serde_json::to_value(Graph::of(&definition)).unwrap();
        assert_eq!(graph["root"]["type"], "Elsa.Flowchart");
        assert_eq!(graph["activities"]["total"], 4);
        let a = &graph["activities"]["items"][0];
        assert_eq!(a["displayName"], "Hello");
        assert_eq!(a["startsWorkflow"], true);
        assert_eq!(a["parent"], "f");
        assert!(a["inputs"]["text"].as_str().unwrap().ends_with('…'));
        assert!(a["inputs"]["text"].as_str().unwrap().chars().count() <= MAX_VALUE_CHARS + 1);
        let b = &graph["activities"]["items"][1];
        assert_eq!(b["inputs"]["condition"], "JavaScript: x > 1");
        assert!(
            b["inputs"].get("then").is_none(),
            "embedded activities are nodes"
        );
        let t = &graph["activities"]["items"][2];
        assert_eq!(
            (t["parent"].as_str(), t["heldBy"].as_str()),
            (Some("b"), Some("then"))
        );
        assert_eq!(graph["activities"]["items"][3]["inputs"]["result"], "→ v");
        assert_eq!(
            graph["connections"]["items"][0],
            json!({"from": "a:Done", "to": "b:In"})
        );
        assert_eq!(
            graph["variables"]["items"][0],
            json!({"name": "Counter", "type": "Int32"})
        );
        assert_eq!(graph["inputs"]["items"][0]["type"], "Object");
    }

    #[test]
    fn large_graphs_are_cut_with_a_marker() {
        let activities: Vec<Value> = (0..MAX_ACTIVITIES + 10)
            .map(|i| json!({"id": format!("a{i}"), "type": "Elsa.WriteLine"}))
            .collect();
        let definition = WorkflowDefinition::from_value(json!({
            "root": {"id": "f", "type": "Elsa.Flowchart", "activities": activities}
        }))
        .unwrap();
        let graph = Graph::of(&definition);
        assert_eq!(graph.activities.total, MAX_ACTIVITIES + 10);
        assert_eq!(graph.activities.returned, MAX_ACTIVITIES);
        assert!(graph.activities.truncated);
    }
}
