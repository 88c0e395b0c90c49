//! Elsa 3 workflow definitions.
//!
//! A [`WorkflowDefinition`] keeps the JSON document it was read from and exposes typed,
//! normalised views of it: header fields, variables, the activity tree (walked wherever
//! activities are embedded) and flowchart connections in one shape. Writing it back yields
//! the same JSON, unknown fields included; edits change only what they name.

mod activity;
mod connection;
#[cfg(test)]
mod properties;
mod variable;
mod walk;

use std::sync::LazyLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

pub use activity::{
    Activity, ActivityInput, ActivityNode, ActivitySlot, DesignerMetadata, Expression,
    InputExpression, InputValue,
};
pub(crate) use activity::{
    camel_case, existing_key, is_activity_shaped, is_input_wrapper, is_structural_key,
};
pub(crate) use connection::shape_in_use;
pub use connection::{
    Connection, ConnectionShape, DEFAULT_SOURCE_PORT, DEFAULT_TARGET_PORT, Endpoint,
};
pub use variable::{IoDeclaration, NewVariable, Variable};

use crate::json::{self, Seg};
use crate::{DefinitionSummary, ParseError};

static EMPTY: LazyLock<Map<String, Value>> = LazyLock::new(Map::new);

/// An Elsa 3 workflow definition that writes back exactly what was read.
///
/// Construction checks the shape (a `root` activity whose tree has a string `type` on every
/// activity, well-formed connections and variables, typed header fields), so the accessors
/// never fail. Unknown fields, `$id` metadata and designer data are kept untouched.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkflowDefinition {
    pub(crate) document: Map<String, Value>,
}

impl WorkflowDefinition {
    /// Reads a definition from JSON text (a UTF-8 BOM is ignored).
    pub fn from_json_str(text: &str) -> Result<Self, ParseError> {
        Self::from_value(json::parse_text(text)?)
    }

    /// Reads a definition from JSON bytes (UTF-8, with or without a BOM).
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ParseError> {
        Self::from_value(json::parse_bytes(bytes)?)
    }

    /// Reads a definition from a JSON value, checking its shape.
    pub fn from_value(value: Value) -> Result<Self, ParseError> {
        json::check_depth(&value)?;
        let Value::Object(document) = value else {
            return Err(json::error_at(
                &[],
                format!(
                    "a workflow definition must be a JSON object, found {}",
                    json::kind_of(&value)
                ),
            ));
        };
        check_document(&document)?;
        Ok(Self { document })
    }

    /// A new, empty flowchart definition (version 1, not published).
    pub fn new_flowchart(definition_id: impl Into<String>, name: impl Into<String>) -> Self {
        let document = json!({
            "definitionId": definition_id.into(),
            "name": name.into(),
            "version": 1,
            "isLatest": true,
            "isPublished": false,
            "variables": [],
            "inputs": [],
            "outputs": [],
            "root": {
                "id": "Flowchart1",
                "type": "Elsa.Flowchart",
                "version": 1,
                "activities": [],
                "connections": [],
            },
        });
        Self {
            document: json::into_object(document),
        }
    }

    /// The JSON document, every unknown field included.
    pub fn as_json(&self) -> &Map<String, Value> {
        &self.document
    }

    /// The document as a JSON value.
    pub fn to_value(&self) -> Value {
        Value::Object(self.document.clone())
    }

    /// The document as indented JSON text.
    pub fn to_json_string(&self) -> String {
        serde_json::to_string_pretty(&self.document).unwrap_or_default()
    }

    /// The stable definition id shared by all versions (empty when the JSON has none).
    pub fn definition_id(&self) -> &str {
        self.str_field("definitionId").unwrap_or_default()
    }

    /// The id of this version (`id`, or `versionId` in older exports).
    pub fn version_id(&self) -> Option<&str> {
        self.str_field("id").or_else(|| self.str_field("versionId"))
    }

    /// The version number; 1 when the JSON has none (Elsa's first version).
    pub fn version(&self) -> i32 {
        self.document
            .get("version")
            .and_then(Value::as_i64)
            .and_then(|v| i32::try_from(v).ok())
            .unwrap_or(1)
    }

    /// The display name.
    pub fn name(&self) -> Option<&str> {
        self.str_field("name")
    }

    /// The description.
    pub fn description(&self) -> Option<&str> {
        self.str_field("description")
    }

    /// Whether this is the newest version.
    pub fn is_latest(&self) -> bool {
        self.document
            .get("isLatest")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// Whether this version is published.
    pub fn is_published(&self) -> bool {
        self.document
            .get("isPublished")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// The workflow-level variables.
    pub fn variables(&self) -> Vec<Variable> {
        variable::read_all(&self.document, &[], false).unwrap_or_default()
    }

    /// The workflow's input declarations.
    pub fn inputs(&self) -> Vec<IoDeclaration> {
        variable::read_io(&self.document, "inputs", false).unwrap_or_default()
    }

    /// The workflow's output declarations.
    pub fn outputs(&self) -> Vec<IoDeclaration> {
        variable::read_io(&self.document, "outputs", false).unwrap_or_default()
    }

    /// The root activity (`Elsa.Flowchart`, `Elsa.Sequence` or any single activity).
    pub fn root(&self) -> ActivityNode<'_> {
        ActivityNode {
            json: self.root_map(),
            location: vec![Seg::Key("root".into())],
            parent: None,
            parent_id: None,
            slot: ActivitySlot::Root,
            depth: 0,
        }
    }

    /// Every activity of the tree in document order, the root first.
    pub fn activities(&self) -> Vec<ActivityNode<'_>> {
        walk::nodes(self.root_map(), vec![Seg::Key("root".into())], false).unwrap_or_default()
    }

    /// The activity with `id`, wherever it sits in the tree.
    pub fn find_activity(&self, id: &str) -> Option<ActivityNode<'_>> {
        self.activities()
            .into_iter()
            .find(|node| node.id() == Some(id))
    }

    /// Number of activities in the graph, nested ones included; a container root is not
    /// counted (a flowchart holding one activity counts 1).
    pub fn activity_count(&self) -> usize {
        let all = self.activities().len();
        if self.root().is_container() {
            all.saturating_sub(1)
        } else {
            all
        }
    }

    /// The row a definition search shows for this version.
    pub fn summary(&self) -> DefinitionSummary {
        DefinitionSummary {
            definition_id: self.definition_id().to_owned(),
            version_id: self.version_id().map(str::to_owned),
            version: self.version(),
            name: self.name().map(str::to_owned),
            description: self.description().map(str::to_owned),
            is_latest: self.is_latest(),
            is_published: self.is_published(),
            activity_count: self.activity_count(),
        }
    }

    /// Sets the definition id.
    pub fn set_definition_id(&mut self, definition_id: impl Into<String>) {
        self.document
            .insert("definitionId".into(), Value::String(definition_id.into()));
    }

    /// Sets the version id (`id`).
    pub fn set_version_id(&mut self, version_id: impl Into<String>) {
        self.document
            .insert("id".into(), Value::String(version_id.into()));
    }

    /// Sets the version number.
    pub fn set_version(&mut self, version: i32) {
        self.document.insert("version".into(), Value::from(version));
    }

    /// Sets `isLatest`.
    pub fn set_latest(&mut self, latest: bool) {
        self.document.insert("isLatest".into(), Value::Bool(latest));
    }

    /// Sets `isPublished`.
    pub fn set_published(&mut self, published: bool) {
        self.document
            .insert("isPublished".into(), Value::Bool(published));
    }

    fn str_field(&self, field: &str) -> Option<&str> {
        self.document.get(field).and_then(Value::as_str)
    }

    pub(crate) fn root_map(&self) -> &Map<String, Value> {
        self.document
            .get("root")
            .and_then(Value::as_object)
            .unwrap_or(&EMPTY)
    }
}

/// The shape checks of a whole definition document.
fn check_document(document: &Map<String, Value>) -> Result<(), ParseError> {
    // The format comes first: an Elsa 2 document also has fields of other shapes (its
    // `variables` is an object), and naming those would hide the real problem.
    let root_at = [Seg::Key("root".into())];
    let root = match document.get("root") {
        Some(root) => json::expect_object(root, &root_at, "the root activity")?,
        None if document.contains_key("activities") || document.contains_key("connections") => {
            return Err(json::error_at(
                &root_at,
                "Elsa 2 format: top-level `activities`/`connections` and no `root` activity \
                 (Elsa 3 definitions hold their graph in `root`)",
            ));
        }
        None => {
            return Err(json::error_at(
                &root_at,
                "a workflow definition needs a `root` activity",
            ));
        }
    };
    for field in ["definitionId", "id", "name", "description"] {
        json::optional_str(document, field, &[])?;
    }
    json::optional_i32(document, "version", &[])?;
    json::optional_bool(document, "isLatest", &[])?;
    json::optional_bool(document, "isPublished", &[])?;
    variable::read_all(document, &[], true)?;
    variable::read_io(document, "inputs", true)?;
    variable::read_io(document, "outputs", true)?;
    walk::nodes(root, root_at.to_vec(), true)?;
    Ok(())
}

impl Serialize for WorkflowDefinition {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.document.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for WorkflowDefinition {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_value(value).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<Value> for WorkflowDefinition {
    type Error = ParseError;

    fn try_from(value: Value) -> Result<Self, ParseError> {
        Self::from_value(value)
    }
}

impl std::str::FromStr for WorkflowDefinition {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Self, ParseError> {
        Self::from_json_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(value: Value) -> Result<WorkflowDefinition, ParseError> {
        WorkflowDefinition::from_value(value)
    }

    #[test]
    fn header_fields_are_typed_views() {
        let definition = parse(json!({
            "id": "v1", "definitionId": "d", "name": "N", "description": null, "version": 3,
            "isLatest": true, "isPublished": false, "extra": {"kept": true},
            "variables": [{"id": "x", "name": "X", "typeName": "String"}],
            "root": {"id": "f", "type": "Elsa.Flowchart", "activities": [{"id": "a", "type": "Elsa.WriteLine"}]}
        }))
        .expect("valid");
        assert_eq!(definition.definition_id(), "d");
        assert_eq!(definition.version_id(), Some("v1"));
        assert_eq!(definition.version(), 3);
        assert_eq!(definition.description(), None);
        assert!(definition.is_latest() && !definition.is_published());
        assert_eq!(definition.variables()[0].key(), Some("X"));
        assert_eq!(definition.activity_count(), 1);
        assert_eq!(definition.as_json()["extra"], json!({"kept": true}));
        let summary = definition.summary();
        assert_eq!(summary.activity_count, 1);
        assert_eq!(summary.version_id.as_deref(), Some("v1"));
    }

    #[test]
    fn wrong_shapes_are_typed_errors_with_paths() {
        let cases = [
            (json!([]), "$"),
            (json!({"name": "x"}), "$.root"),
            (json!({"activities": [], "connections": []}), "$.root"),
            (
                json!({"variables": {"$id": "2", "data": {}}, "activities": []}),
                "$.root",
            ),
            (json!({"root": []}), "$.root"),
            (json!({"root": {"id": "a"}}), "$.root.type"),
            (json!({"version": "2", "root": {"type": "A"}}), "$.version"),
            (json!({"isLatest": 1, "root": {"type": "A"}}), "$.isLatest"),
            (
                json!({"definitionId": 7, "root": {"type": "A"}}),
                "$.definitionId",
            ),
            (
                json!({"variables": {}, "root": {"type": "A"}}),
                "$.variables",
            ),
            (
                json!({"root": {"type": "Elsa.Flowchart", "activities": [{"type": "A"}, {"type": "B"}, {"type": "C"}, {"id": "d", "type": 4}]}}),
                "$.root.activities[3].type",
            ),
            (
                json!({"root": {"type": "Elsa.Flowchart", "activities": [], "connections": [{"source": 1, "target": "b"}]}}),
                "$.root.connections[0].source",
            ),
        ];
        for (value, path) in cases {
            let error = parse(value.clone()).expect_err("invalid");
            assert_eq!(error.path, path, "{value}: {error}");
        }
    }

    #[test]
    fn elsa2_documents_are_named_as_such() {
        let error = parse(json!({"activities": [], "connections": []})).expect_err("elsa 2");
        assert!(error.problem.contains("Elsa 2"), "{error}");
    }

    #[test]
    fn serde_round_trip_keeps_unknown_fields() {
        let text = r#"{"definitionId":"d","zeta":[1,{"$id":"2"}],"root":{"type":"Custom.Thing","odd":{"k":1}}}"#;
        let definition: WorkflowDefinition = serde_json::from_str(text).expect("valid");
        let written = serde_json::to_value(&definition).expect("serialise");
        let original: Value = serde_json::from_str(text).expect("json");
        assert_eq!(written, original);
        assert!(serde_json::from_str::<WorkflowDefinition>(r#"{"root": 1}"#).is_err());
    }

    #[test]
    fn new_flowchart_is_valid() {
        let definition = WorkflowDefinition::new_flowchart("d", "Draft");
        let reparsed = parse(definition.to_value()).expect("valid");
        assert_eq!(reparsed, definition);
        assert!(definition.root().is_flowchart());
    }
}
