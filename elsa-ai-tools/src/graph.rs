//! The compact graph of a workflow definition, as `workflow.getDefinition` returns it and as
//! proposal tools preview a draft: activities with type and display name, connections as
//! `activity:port` pairs, variables and the workflow's inputs and outputs. Long lists are cut
//! with a more-available marker and input values are clipped, so a large workflow still fits
//! a model's context.

use elsa_workflows::{ActivityNode, ActivitySlot, InputValue, WorkflowDefinition};
use serde::Serialize;
use serde_json::{Map, Value};

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
