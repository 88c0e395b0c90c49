//! Compact, model-friendly summaries of Elsa objects: what a model needs to reason about
//! them, not their raw JSON.

use elsa_workflows::{
    ActivityNode, Connection, DEFAULT_TARGET_PORT, InputValue, WorkflowDefinition,
};
use serde_json::{Map, Value, json};

/// Inserts `value` under `key` unless it is `None`.
fn put(map: &mut Map<String, Value>, key: &str, value: Option<impl Into<Value>>) {
    if let Some(value) = value {
        map.insert(key.to_owned(), value.into());
    }
}

/// The header of a definition: ids, version, name, publication state, size.
pub(super) fn definition_header(definition: &WorkflowDefinition) -> Map<String, Value> {
    let mut header = Map::new();
    header.insert("definitionId".into(), definition.definition_id().into());
    put(&mut header, "versionId", definition.version_id());
    header.insert("version".into(), definition.version().into());
    put(&mut header, "name", definition.name());
    put(&mut header, "description", definition.description());
    header.insert("isLatest".into(), definition.is_latest().into());
    header.insert("isPublished".into(), definition.is_published().into());
    header.insert("activityCount".into(), definition.activity_count().into());
    header
}

/// A short title for a definition: its name (or id) and version.
pub(super) fn definition_title(definition: &WorkflowDefinition) -> String {
    let id = definition.definition_id();
    match definition.name() {
        Some(name) if !name.is_empty() => format!("{name} ({id}, v{})", definition.version()),
        _ => format!("{id} (v{})", definition.version()),
    }
}

/// The whole definition as a model reads it: header, variables, inputs and outputs, every
/// activity as one line (id, type, name, container) and every flowchart connection.
pub(super) fn definition(definition: &WorkflowDefinition) -> Value {
    let mut summary = definition_header(definition);
    let root = definition.root();
    summary.insert("rootType".into(), root.type_name().into());
    let variables: Vec<Value> = definition
        .variables()
        .iter()
        .map(|v| json!({"name": v.key(), "type": v.type_name, "isArray": v.is_array}))
        .collect();
    if !variables.is_empty() {
        summary.insert("variables".into(), variables.into());
    }
    for (key, declarations) in [
        ("inputs", definition.inputs()),
        ("outputs", definition.outputs()),
    ] {
        if !declarations.is_empty() {
            let list: Vec<Value> = declarations
                .iter()
                .map(|d| json!({"name": d.name, "type": d.type_name}))
                .collect();
            summary.insert(key.into(), list.into());
        }
    }
    let nodes = definition.activities();
    let activities: Vec<Value> = nodes.iter().skip(1).map(activity_line).collect();
    summary.insert("activities".into(), activities.into());
    let connections: Vec<Value> = nodes
        .iter()
        .filter(|node| node.is_flowchart())
        .flat_map(|node| node.connections())
        .map(|c| connection_line(&c))
        .collect();
    if !connections.is_empty() {
        summary.insert("connections".into(), connections.into());
    }
    Value::Object(summary)
}

/// One activity as a line of a definition summary.
pub(super) fn activity_line(node: &ActivityNode<'_>) -> Value {
    let mut line = Map::new();
    put(&mut line, "id", node.id());
    line.insert("type".into(), node.type_name().into());
    put(&mut line, "name", node.name());
    put(&mut line, "displayText", node.display_text());
    if node.depth() > 1 {
        put(&mut line, "parentId", node.parent_id());
    }
    if node.can_start_workflow() {
        line.insert("canStartWorkflow".into(), true.into());
    }
    Value::Object(line)
}

/// A connection as `{source, port, target}` (plus `targetPort` when it is not the default).
pub(super) fn connection_line(connection: &Connection) -> Value {
    let mut line = Map::new();
    line.insert("source".into(), connection.source.activity.clone().into());
    line.insert("port".into(), connection.source.port.clone().into());
    line.insert("target".into(), connection.target.activity.clone().into());
    if connection.target.port != DEFAULT_TARGET_PORT {
        line.insert("targetPort".into(), connection.target.port.clone().into());
    }
    Value::Object(line)
}

/// An activity's inputs: the expression language and value of each wrapped input, the
/// value of each plain one, the bound variable of each output binding. Properties holding
/// embedded activities are listed by name only (the activities are lines of their own).
pub(super) fn activity_inputs(node: &ActivityNode<'_>) -> Value {
    let mut inputs = Map::new();
    for input in node.inputs() {
        let value = if input.holds_activities {
            json!({"holdsActivities": true})
        } else {
            match input.value {
                InputValue::Wrapped {
                    type_name,
                    expression,
                    memory_reference,
                    ..
                } => {
                    let mut wrapped = Map::new();
                    put(&mut wrapped, "type", type_name);
                    if let Some(expression) = expression {
                        wrapped.insert("language".into(), expression.kind.into());
                        wrapped.insert(
                            "value".into(),
                            expression.value.cloned().unwrap_or(Value::Null),
                        );
                    }
                    put(&mut wrapped, "variable", memory_reference);
                    Value::Object(wrapped)
                }
                InputValue::Raw(value) => value.clone(),
            }
        };
        inputs.insert(input.name.to_owned(), value);
    }
    Value::Object(inputs)
}
