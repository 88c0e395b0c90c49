//! Activities: the owned [`Activity`] used to build edits, and the borrowed [`ActivityNode`]
//! through which a definition's tree is read.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::connection::{self, Connection};
use super::variable::{self, Variable};
use super::walk;
use crate::ParseError;
use crate::json::{self, Location, Seg};

/// Keys of an activity object that Elsa itself defines; every other key is an input (or an
/// output binding) of the activity type.
const STRUCTURAL_KEYS: &[&str] = &[
    "id",
    "nodeId",
    "type",
    "version",
    "name",
    "customProperties",
    "metadata",
    "applicationProperties",
    "activities",
    "connections",
    "variables",
    "canStartWorkflow",
    "runAsynchronously",
    "source",
    "line",
    "workflowDefinitionId",
    "workflowDefinitionVersionId",
    "latestAvailablePublishedVersion",
    "latestAvailablePublishedVersionId",
];

/// Whether `key` of `activity` is Elsa's structure rather than an input.
///
/// `start` names the start activity of a container (a flowchart) but is an input of other
/// types (`Elsa.For`); keys starting with `$` or `_` are reference metadata and comments.
pub(crate) fn is_structural_key(activity: &Map<String, Value>, key: &str) -> bool {
    STRUCTURAL_KEYS.contains(&key)
        || key.starts_with('$')
        || key.starts_with('_')
        || (key == "start" && activity.contains_key("activities"))
}

/// Whether an object looks like an activity embedded in another one's property
/// (Fork branches, If then/else, FlowNode body, Switch cases, ...).
pub(crate) fn is_activity_shaped(map: &Map<String, Value>) -> bool {
    matches!(map.get("type"), Some(Value::String(_)))
        && matches!(map.get("id"), Some(Value::String(_)))
}

/// Whether an object is an input wrapper: `{"typeName", "expression": {...}}` or an output
/// binding `{"typeName", "memoryReference": {...}}`.
pub(crate) fn is_input_wrapper(map: &Map<String, Value>) -> bool {
    !is_activity_shaped(map)
        && (map.contains_key("typeName")
            || map.contains_key("expression")
            || map.contains_key("memoryReference"))
}

/// Where an activity sits in its parent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum ActivitySlot {
    /// The definition's root activity.
    Root,
    /// An item of the parent container's `activities` list (flowchart, sequence, ...).
    Child,
    /// Found inside one of the parent's properties (a Fork branch, an If's `then`, ...).
    Embedded {
        /// The parent's property that holds it, as written in the JSON.
        property: String,
    },
}

/// Designer metadata of an activity: where the designer draws it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DesignerMetadata {
    /// Horizontal position on the canvas.
    pub x: Option<f64>,
    /// Vertical position on the canvas.
    pub y: Option<f64>,
    /// Drawn width.
    pub width: Option<f64>,
    /// Drawn height.
    pub height: Option<f64>,
}

/// An expression object `{"type": "Literal", "value": ...}` inside an input wrapper.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Expression<'a> {
    /// The expression language: `Literal`, `JavaScript`, `CSharp`, `Object`, `Variable`, ...
    pub kind: &'a str,
    /// The expression's value, when it has one.
    pub value: Option<&'a Value>,
}

impl Expression<'_> {
    /// The value when this is a `Literal` expression holding a string.
    pub fn literal_str(&self) -> Option<&str> {
        match (self.kind, self.value) {
            ("Literal", Some(Value::String(text))) => Some(text),
            _ => None,
        }
    }
}

/// The value of one activity input as written in the JSON.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InputValue<'a> {
    /// An Elsa input wrapper `{"typeName", "expression": {"type", "value"}}` (or an output
    /// binding with a `memoryReference`).
    Wrapped {
        /// The declared value type (`String`, `Boolean`, `Object`, ...).
        type_name: Option<&'a str>,
        /// The expression, when present and well formed.
        expression: Option<Expression<'a>>,
        /// The id of the memory block (variable) the value is bound to, if any.
        memory_reference: Option<&'a str>,
        /// The whole wrapper object.
        json: &'a Map<String, Value>,
    },
    /// A plain JSON value (non-wrapped inputs such as `joinMode` or `cases`).
    Raw(&'a Value),
}

impl<'a> InputValue<'a> {
    pub(crate) fn read(value: &'a Value) -> Self {
        match value {
            Value::Object(map) if is_input_wrapper(map) => Self::Wrapped {
                type_name: map.get("typeName").and_then(Value::as_str),
                expression: map.get("expression").and_then(read_expression),
                memory_reference: map
                    .get("memoryReference")
                    .and_then(|r| r.get("id"))
                    .and_then(Value::as_str),
                json: map,
            },
            other => Self::Raw(other),
        }
    }

    /// The expression of a wrapped input.
    pub fn expression(&self) -> Option<Expression<'a>> {
        match self {
            Self::Wrapped { expression, .. } => *expression,
            Self::Raw(_) => None,
        }
    }

    /// Whether the input holds nothing a workflow could use: null, an empty string, or a
    /// wrapper without an expression value.
    pub fn is_blank(&self) -> bool {
        match self {
            Self::Raw(value) => is_blank_value(value),
            Self::Wrapped {
                expression,
                memory_reference,
                ..
            } => match expression {
                Some(expression) => expression.value.is_none_or(is_blank_value),
                None => memory_reference.is_none(),
            },
        }
    }
}

fn is_blank_value(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.trim().is_empty(),
        _ => false,
    }
}

fn read_expression(value: &Value) -> Option<Expression<'_>> {
    let map = value.as_object()?;
    Some(Expression {
        kind: map.get("type")?.as_str()?,
        value: map.get("value"),
    })
}

/// One input (or output binding) of an activity.
#[derive(Clone, Debug, PartialEq)]
pub struct ActivityInput<'a> {
    /// The key as written (camelCase in Elsa 3 JSON).
    pub name: &'a str,
    /// The value.
    pub value: InputValue<'a>,
    /// Whether activities are embedded in this property (they are reported as nodes of their own).
    pub holds_activities: bool,
    pub(crate) location: Location,
}

impl ActivityInput<'_> {
    /// JSON path of the input's value.
    pub fn path(&self) -> String {
        json::render_path(&self.location)
    }
}

/// A read-only view of one activity inside a definition (or inside an [`Activity`]).
#[derive(Clone, Debug)]
pub struct ActivityNode<'a> {
    pub(crate) json: &'a Map<String, Value>,
    pub(crate) location: Location,
    pub(crate) parent: Option<usize>,
    pub(crate) parent_id: Option<&'a str>,
    pub(crate) slot: ActivitySlot,
    pub(crate) depth: usize,
}

impl<'a> ActivityNode<'a> {
    /// The activity id (`None` only for hand-written drafts that omit it).
    pub fn id(&self) -> Option<&'a str> {
        self.json.get("id").and_then(Value::as_str)
    }

    /// The activity type, for example `Elsa.WriteLine`.
    pub fn type_name(&self) -> &'a str {
        self.json
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The activity type version, when written.
    pub fn type_version(&self) -> Option<i32> {
        self.json
            .get("version")
            .and_then(Value::as_i64)
            .and_then(|v| i32::try_from(v).ok())
    }

    /// The activity's name (Elsa's designer names activities `WriteLine1`, ...).
    pub fn name(&self) -> Option<&'a str> {
        self.json.get("name").and_then(Value::as_str)
    }

    /// The display text the designer shows, when set in the metadata.
    pub fn display_text(&self) -> Option<&'a str> {
        self.json
            .get("metadata")
            .and_then(|m| m.get("displayText"))
            .and_then(Value::as_str)
    }

    /// The raw JSON object of the activity, every unknown field included.
    pub fn json(&self) -> &'a Map<String, Value> {
        self.json
    }

    /// JSON path of the activity inside its document, for example `$.root.activities[2]`.
    pub fn path(&self) -> String {
        json::render_path(&self.location)
    }

    /// JSON path of one of the activity's fields.
    pub fn field_path(&self, field: &str) -> String {
        json::render_path(&json::key(&self.location, field))
    }

    /// How the activity is held by its parent.
    pub fn slot(&self) -> &ActivitySlot {
        &self.slot
    }

    /// The id of the activity that contains this one (`None` for the root).
    pub fn parent_id(&self) -> Option<&'a str> {
        self.parent_id
    }

    /// How many containers enclose this activity (0 for the root).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Whether the activity holds an `activities` list (flowchart, sequence, parallel, ...).
    pub fn is_container(&self) -> bool {
        self.json
            .get("activities")
            .and_then(json::array_like)
            .is_some()
    }

    /// Whether the activity is a flowchart: it has `connections` or is `Elsa.Flowchart`.
    pub fn is_flowchart(&self) -> bool {
        self.is_container()
            && (self.type_name() == "Elsa.Flowchart" || self.json.contains_key("connections"))
    }

    /// The explicit start activity id of a flowchart (`start`), if set.
    pub fn start_activity_id(&self) -> Option<&'a str> {
        if self.is_container() {
            self.json.get("start").and_then(Value::as_str)
        } else {
            None
        }
    }

    /// Whether the activity is marked as able to start the workflow (a trigger).
    pub fn can_start_workflow(&self) -> bool {
        let flag = |map: &Map<String, Value>| map.get("canStartWorkflow").and_then(Value::as_bool);
        flag(self.json)
            .or_else(|| {
                self.json
                    .get("customProperties")
                    .and_then(Value::as_object)
                    .and_then(flag)
            })
            .unwrap_or(false)
    }

    /// The workflow definition this activity runs, when it is a workflow used as an activity.
    pub fn workflow_definition_id(&self) -> Option<&'a str> {
        self.json
            .get("workflowDefinitionId")
            .and_then(Value::as_str)
    }

    /// Designer position and size, when present.
    pub fn designer(&self) -> Option<DesignerMetadata> {
        let designer = self.json.get("metadata")?.get("designer")?;
        let number = |outer: &str, inner: &str| designer.get(outer)?.get(inner)?.as_f64();
        Some(DesignerMetadata {
            x: number("position", "x"),
            y: number("position", "y"),
            width: number("size", "width"),
            height: number("size", "height"),
        })
    }

    /// Every input and output binding, in document order.
    pub fn inputs(&self) -> Vec<ActivityInput<'a>> {
        self.json
            .iter()
            .filter(|(key, _)| !is_structural_key(self.json, key))
            .map(|(key, value)| ActivityInput {
                name: key,
                value: InputValue::read(value),
                holds_activities: walk::holds_activities(value),
                location: json::key(&self.location, key),
            })
            .collect()
    }

    /// One input by name, matched case-insensitively (catalogs spell inputs in PascalCase,
    /// definitions in camelCase).
    pub fn input(&self, name: &str) -> Option<ActivityInput<'a>> {
        self.inputs()
            .into_iter()
            .find(|input| input.name.eq_ignore_ascii_case(name))
    }

    /// The direct children of a container (its `activities` list) as raw objects.
    pub(crate) fn child_objects(&self) -> Vec<&'a Map<String, Value>> {
        self.json
            .get("activities")
            .and_then(json::array_like)
            .map(|(items, _)| items.iter().filter_map(Value::as_object).collect())
            .unwrap_or_default()
    }

    /// The ids of the direct children of a container, in order.
    pub fn child_ids(&self) -> Vec<&'a str> {
        self.child_objects()
            .into_iter()
            .filter_map(|child| child.get("id").and_then(Value::as_str))
            .collect()
    }

    /// The connections of a flowchart, normalised (empty for other activities).
    pub fn connections(&self) -> Vec<Connection> {
        connection::read_all(self.json, &self.location, false).unwrap_or_default()
    }

    /// The variables declared on this container activity.
    pub fn variables(&self) -> Vec<Variable> {
        variable::read_all(self.json, &self.location, false).unwrap_or_default()
    }
}

/// An activity as an owned JSON object: built from JSON or from an id and a type, and
/// inserted into a definition with the edit API.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Value", into = "Value")]
pub struct Activity {
    json: Map<String, Value>,
}

impl Activity {
    /// A new activity `{"id", "type", "version": 1}` with no inputs.
    pub fn new(id: impl Into<String>, type_name: impl Into<String>) -> Self {
        let mut json = Map::new();
        json.insert("id".into(), Value::String(id.into()));
        json.insert("type".into(), Value::String(type_name.into()));
        json.insert("version".into(), Value::from(1));
        Self { json }
    }

    /// Reads an activity from JSON, checking its shape and that of any activities inside it.
    pub fn from_json(value: Value) -> Result<Self, ParseError> {
        json::check_depth(&value)?;
        let Value::Object(json) = value else {
            return Err(json::error_at(
                &[],
                format!(
                    "an activity must be a JSON object, found {}",
                    json::kind_of(&value)
                ),
            ));
        };
        walk::nodes(&json, Vec::new(), true)?;
        Ok(Self { json })
    }

    /// Reads an activity from JSON text.
    pub fn from_json_str(text: &str) -> Result<Self, ParseError> {
        Self::from_json(json::parse_text(text)?)
    }

    /// The activity id, when it has one.
    pub fn id(&self) -> Option<&str> {
        self.json.get("id").and_then(Value::as_str)
    }

    /// The activity type.
    pub fn type_name(&self) -> &str {
        self.json
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// A read-only view of this activity (paths start at `$`).
    pub fn node(&self) -> ActivityNode<'_> {
        ActivityNode {
            json: &self.json,
            location: Vec::new(),
            parent: None,
            parent_id: None,
            slot: ActivitySlot::Root,
            depth: 0,
        }
    }

    /// Every activity in this one's tree, itself first.
    pub fn nodes(&self) -> Vec<ActivityNode<'_>> {
        walk::nodes(&self.json, Vec::new(), false).unwrap_or_default()
    }

    /// Sets the activity's `name`.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.json.insert("name".into(), Value::String(name.into()));
        self
    }

    /// Sets an input to an expression wrapper (the key is written in camelCase).
    pub fn with_input(mut self, name: &str, value: &InputExpression) -> Self {
        let key = existing_key(&self.json, name).unwrap_or_else(|| camel_case(name));
        self.json.insert(key, value.to_json());
        self
    }

    /// Sets the designer position.
    pub fn with_position(mut self, x: f64, y: f64) -> Self {
        let metadata = self
            .json
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !metadata.is_object() {
            *metadata = Value::Object(Map::new());
        }
        if let Some(metadata) = metadata.as_object_mut() {
            let designer = metadata
                .entry("designer")
                .or_insert_with(|| Value::Object(Map::new()));
            if !designer.is_object() {
                *designer = Value::Object(Map::new());
            }
            if let Some(designer) = designer.as_object_mut() {
                designer.insert("position".into(), json!({ "x": x, "y": y }));
            }
        }
        self
    }

    /// The activity's JSON object.
    pub fn as_json(&self) -> &Map<String, Value> {
        &self.json
    }

    /// The activity as a JSON value.
    pub fn into_json(self) -> Value {
        Value::Object(self.json)
    }
}

impl TryFrom<Value> for Activity {
    type Error = ParseError;

    fn try_from(value: Value) -> Result<Self, ParseError> {
        Self::from_json(value)
    }
}

impl From<Activity> for Value {
    fn from(activity: Activity) -> Self {
        activity.into_json()
    }
}

/// An input value to write: Elsa's wrapper `{"typeName", "expression": {"type", "value"}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputExpression {
    /// The value type, for example `String`, `Boolean`, `Int32`, `Object`.
    pub type_name: String,
    /// The expression language, for example `Literal` or `JavaScript`.
    pub expression_type: String,
    /// The expression's value (the literal, or the script text).
    pub value: Value,
}

impl InputExpression {
    /// A `Literal` expression.
    pub fn literal(type_name: impl Into<String>, value: impl Into<Value>) -> Self {
        Self {
            type_name: type_name.into(),
            expression_type: "Literal".into(),
            value: value.into(),
        }
    }

    /// A `JavaScript` expression.
    pub fn javascript(type_name: impl Into<String>, script: impl Into<String>) -> Self {
        Self {
            type_name: type_name.into(),
            expression_type: "JavaScript".into(),
            value: Value::String(script.into()),
        }
    }

    /// The wrapper as Elsa 3 writes it.
    pub fn to_json(&self) -> Value {
        json!({
            "typeName": self.type_name,
            "expression": { "type": self.expression_type, "value": self.value },
        })
    }
}

/// The key of `map` equal to `name` ignoring ASCII case, if any.
pub(crate) fn existing_key(map: &Map<String, Value>, name: &str) -> Option<String> {
    map.keys().find(|k| k.eq_ignore_ascii_case(name)).cloned()
}

/// `PascalCase` → `camelCase` (the first character lowered), as Elsa 3 writes input keys.
pub(crate) fn camel_case(name: &str) -> String {
    let mut chars = name.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Shape checks of one activity's own fields (children are checked by the walk).
pub(crate) fn check_fields(map: &Map<String, Value>, location: &[Seg]) -> Result<(), ParseError> {
    match map.get("type") {
        Some(Value::String(type_name)) if !type_name.trim().is_empty() => {}
        Some(Value::String(_)) => {
            return Err(json::error_at(
                &json::key(location, "type"),
                "activity `type` is empty",
            ));
        }
        Some(other) => {
            return Err(json::error_at(
                &json::key(location, "type"),
                format!(
                    "activity `type` must be a string, found {}",
                    json::kind_of(other)
                ),
            ));
        }
        None => {
            return Err(json::error_at(
                &json::key(location, "type"),
                "activity has no `type`",
            ));
        }
    }
    json::optional_str(map, "id", location)?;
    json::optional_str(map, "name", location)?;
    json::optional_i32(map, "version", location)?;
    json::optional_array(map, "activities", location)?;
    if map.contains_key("activities") {
        json::optional_str(map, "start", location)?;
    }
    connection::read_all(map, location, true)?;
    variable::read_all(map, location, true)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_activities_are_valid_and_carry_inputs() {
        let activity = Activity::new("w1", "Elsa.WriteLine")
            .with_name("WriteLine1")
            .with_input("Text", &InputExpression::literal("String", "hi"))
            .with_position(10.0, 20.0);
        let node = activity.node();
        assert_eq!(node.id(), Some("w1"));
        assert_eq!(node.type_name(), "Elsa.WriteLine");
        assert_eq!(node.type_version(), Some(1));
        let text = node.input("TEXT").expect("case-insensitive lookup");
        assert_eq!(text.name, "text");
        assert_eq!(
            text.value
                .expression()
                .and_then(|e| e.literal_str().map(str::to_owned)),
            Some("hi".to_owned())
        );
        assert_eq!(node.designer().and_then(|d| d.x), Some(10.0));
        let round = Activity::from_json(activity.clone().into_json()).expect("valid");
        assert_eq!(round, activity);
    }

    #[test]
    fn from_json_rejects_wrong_shapes_with_paths() {
        let error = Activity::from_json(json!({"id": "a", "type": 3})).expect_err("type");
        assert_eq!(error.path, "$.type");
        let error = Activity::from_json(
            json!({"id": "a", "type": "Elsa.Sequence", "activities": [{"id": "b"}]}),
        )
        .expect_err("child without type");
        assert_eq!(error.path, "$.activities[0].type");
        let error = Activity::from_json(json!(["x"])).expect_err("array");
        assert_eq!(error.path, "$");
    }

    #[test]
    fn structural_keys_are_not_inputs_but_start_of_a_loop_is() {
        let flowchart = json!({"id": "f", "type": "Elsa.Flowchart", "start": "a", "activities": [], "_comment": "x"});
        let activity = Activity::from_json(flowchart).expect("valid");
        assert!(activity.node().inputs().is_empty());
        let for_loop = Activity::from_json(json!({"id": "l", "type": "Elsa.For", "start": {"typeName": "Int32", "expression": {"type": "Literal", "value": 1}}}))
            .expect("valid");
        assert_eq!(for_loop.node().inputs().len(), 1);
    }

    #[test]
    fn blank_inputs_are_recognised() {
        let blank = json!({"typeName": "String", "expression": {"type": "Literal", "value": "  "}});
        assert!(InputValue::read(&blank).is_blank());
        let bound = json!({"typeName": "Object", "memoryReference": {"id": "v"}});
        assert!(!InputValue::read(&bound).is_blank());
        assert!(InputValue::read(&Value::Null).is_blank());
        assert!(!InputValue::read(&json!("WaitAny")).is_blank());
    }
}
