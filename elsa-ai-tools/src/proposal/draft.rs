//! The structured pieces a model writes to describe workflow content: activities with their
//! inputs, connections and variables, and whole drafts of new workflows. Each piece is turned
//! into Elsa 3 JSON through the checked edit API of `elsa-workflows`, so what a model writes
//! can only ever become a well-formed definition, and every mistake is a typed error naming
//! where it is.

use std::collections::BTreeMap;

use elsa_workflows::{
    Activity, DEFAULT_SOURCE_PORT, DEFAULT_TARGET_PORT, EditError, Endpoint, InputExpression,
    NewVariable, ParseError, WorkflowDefinition,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// How an input value is written: a literal (default) or an expression in a language Elsa
/// evaluates.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InputSpec {
    /// The literal value, or the expression's source text.
    pub value: Value,
    /// The expression language: "Literal" (default), "JavaScript", "CSharp", "Python",
    /// "Liquid" or "Variable" (value = a variable name).
    #[serde(default)]
    #[schemars(length(min = 1, max = 40))]
    pub expression: Option<String>,
    /// The value type, such as "String", "Int32", "Boolean", "Object". Inferred from a literal
    /// when omitted; "Object" for other expressions.
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub type_name: Option<String>,
}

impl InputSpec {
    /// The Elsa input wrapper this spec stands for.
    pub fn to_expression(&self) -> InputExpression {
        let language = self.expression.as_deref().unwrap_or("Literal");
        let type_name = self.type_name.clone().unwrap_or_else(|| {
            if language == "Literal" {
                literal_type(&self.value).to_owned()
            } else {
                "Object".to_owned()
            }
        });
        InputExpression {
            type_name,
            expression_type: language.to_owned(),
            value: self.value.clone(),
        }
    }
}

/// The Elsa type name of a literal JSON value.
fn literal_type(value: &Value) -> &'static str {
    match value {
        Value::String(_) | Value::Null => "String",
        Value::Bool(_) => "Boolean",
        Value::Number(n) if n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()) => "Int32",
        Value::Number(n) if n.is_i64() || n.is_u64() => "Int64",
        Value::Number(_) => "Double",
        Value::Array(_) | Value::Object(_) => "Object",
    }
}

/// An activity to add: id, type, optional display name and inputs, and where it goes.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActivitySpec {
    /// A new id, unique in the workflow (for example "SendEmail1").
    #[schemars(length(min = 1, max = 200))]
    pub id: String,
    /// The activity type from the catalog (activities.catalog), for example "Elsa.WriteLine".
    #[serde(rename = "type")]
    #[schemars(length(min = 1, max = 300))]
    pub type_name: String,
    /// The name the designer shows.
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub name: Option<String>,
    /// The activity type's version (default 1).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub version: Option<i32>,
    /// Input values by input name (the catalog's input names; camelCase or PascalCase).
    #[serde(default)]
    pub inputs: BTreeMap<String, InputSpec>,
    /// Whether this activity is a trigger that can start the workflow.
    #[serde(default)]
    pub starts_workflow: bool,
    /// The id of the flowchart or sequence to put it in (default: the workflow's root).
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub container: Option<String>,
}

impl ActivitySpec {
    /// The activity without its inputs (they are set through the edit API, which checks
    /// their names).
    fn to_activity(&self) -> Result<Activity, ParseError> {
        let mut activity = Activity::new(self.id.as_str(), self.type_name.as_str());
        if let Some(name) = &self.name {
            activity = activity.with_name(name.as_str());
        }
        let mut json = activity.into_json();
        if let Some(object) = json.as_object_mut() {
            if let Some(version) = self.version {
                object.insert("version".into(), Value::from(version));
            }
            if self.starts_workflow {
                object.insert("canStartWorkflow".into(), Value::Bool(true));
            }
        }
        Activity::from_json(json)
    }

    /// Inserts the activity (at `index` of its container, the end when `None`) and sets its
    /// inputs. All or nothing, as every edit: when an input cannot be set, the definition is
    /// left as it was, without the activity.
    pub fn insert_into(
        &self,
        definition: &mut WorkflowDefinition,
        index: Option<usize>,
    ) -> Result<(), EditError> {
        let activity = self.to_activity()?;
        if self.inputs.is_empty() {
            return definition.insert_activity(self.container.as_deref(), activity, index);
        }
        // The inputs are set through the edit API once the activity is in place, so the
        // whole change is staged on a copy.
        let mut staged = definition.clone();
        staged.insert_activity(self.container.as_deref(), activity, index)?;
        for (name, value) in &self.inputs {
            staged.set_input(&self.id, name, &value.to_expression())?;
        }
        *definition = staged;
        Ok(())
    }
}

/// A flowchart connection from one activity's outcome port to another activity.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectionSpec {
    /// The activity the connection leaves.
    #[schemars(length(min = 1, max = 200))]
    pub source: String,
    /// The outcome it leaves through (default "Done"; for example "True"/"False" of an If).
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub source_port: Option<String>,
    /// The activity it enters.
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// The port it enters (default "In").
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub target_port: Option<String>,
    /// The flowchart both activities belong to (default: the root flowchart).
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub flowchart: Option<String>,
}

impl ConnectionSpec {
    /// The source endpoint.
    pub fn source(&self) -> Endpoint {
        Endpoint::new(
            self.source.as_str(),
            self.source_port.as_deref().unwrap_or(DEFAULT_SOURCE_PORT),
        )
    }

    /// The target endpoint.
    pub fn target(&self) -> Endpoint {
        Endpoint::new(
            self.target.as_str(),
            self.target_port.as_deref().unwrap_or(DEFAULT_TARGET_PORT),
        )
    }
}

/// A workflow variable to declare.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VariableSpec {
    /// The variable name scripts use.
    #[schemars(length(min = 1, max = 200))]
    pub name: String,
    /// The value type, for example "String" or "Int32".
    #[schemars(length(min = 1, max = 200))]
    pub type_name: String,
    /// The initial value.
    #[serde(default)]
    pub value: Value,
}

impl VariableSpec {
    /// The declaration to add.
    pub fn to_new_variable(&self) -> NewVariable {
        NewVariable {
            name: self.name.clone(),
            type_name: self.type_name.clone(),
            value: self.value.clone(),
        }
    }
}

/// A new workflow: a flowchart holding the activities, connected as listed.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkflowDraft {
    /// The id of the new definition (default: a generated id).
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub definition_id: Option<String>,
    /// The workflow's name.
    #[schemars(length(min = 1, max = 200))]
    pub name: String,
    /// What the workflow does.
    #[serde(default)]
    #[schemars(length(max = 2000))]
    pub description: Option<String>,
    /// Workflow variables.
    #[serde(default)]
    #[schemars(length(max = 100))]
    pub variables: Vec<VariableSpec>,
    /// The activities, in order; containers before what they contain.
    #[serde(default)]
    #[schemars(length(max = 300))]
    pub activities: Vec<ActivitySpec>,
    /// The flowchart connections.
    #[serde(default)]
    #[schemars(length(max = 600))]
    pub connections: Vec<ConnectionSpec>,
}

/// Why a draft could not be turned into a definition: which element, and the edit error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("draft {at}: {error}")]
pub struct DraftError {
    /// The element of the draft, for example `activities[2]` or `connections[0]`.
    pub at: String,
    /// What was wrong with it.
    pub error: EditError,
}

impl WorkflowDraft {
    /// Builds the definition the draft describes (a flowchart root with id `Flowchart1`),
    /// with `definition_id` when the draft names none.
    pub fn build(&self, definition_id: &str) -> Result<WorkflowDefinition, DraftError> {
        let id = self.definition_id.as_deref().unwrap_or(definition_id);
        let mut definition = WorkflowDefinition::new_flowchart(id, self.name.as_str());
        definition.set_description(self.description.as_deref());
        fn at(what: &'static str, i: usize) -> impl FnOnce(EditError) -> DraftError {
            move |error| DraftError {
                at: format!("{what}[{i}]"),
                error,
            }
        }
        for (i, variable) in self.variables.iter().enumerate() {
            definition
                .add_variable(&variable.to_new_variable())
                .map_err(at("variables", i))?;
        }
        for (i, activity) in self.activities.iter().enumerate() {
            activity
                .insert_into(&mut definition, None)
                .map_err(at("activities", i))?;
        }
        for (i, connection) in self.connections.iter().enumerate() {
            definition
                .add_connection(
                    connection.flowchart.as_deref(),
                    connection.source(),
                    connection.target(),
                )
                .map_err(at("connections", i))?;
        }
        Ok(definition)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn draft(value: Value) -> WorkflowDraft {
        serde_json::from_value(value).expect("a well-formed draft")
    }

    #[test]
    fn a_draft_becomes_an_elsa_flowchart() {
        let draft = draft(json!({
            "name": "Greet",
            "description": "Says hello",
            "variables": [{"name": "Who", "typeName": "String", "value": "world"}],
            "activities": [
                {"id": "start", "type": "Elsa.HttpEndpoint", "startsWorkflow": true,
                 "inputs": {"Path": {"value": "/greet"}, "supportedMethods": {"value": ["GET"], "typeName": "String[]"}}},
                {"id": "say", "type": "Elsa.WriteLine", "name": "Say hello",
                 "inputs": {"text": {"value": "`Hello ${getWho()}`", "expression": "JavaScript"}}}
            ],
            "connections": [{"source": "start", "target": "say"}]
        }));
        let definition = draft.build("generated").expect("builds");
        assert_eq!(definition.definition_id(), "generated");
        assert_eq!(definition.name(), Some("Greet"));
        assert_eq!(definition.description(), Some("Says hello"));
        assert_eq!(definition.variables()[0].key(), Some("Who"));
        let start = definition.find_activity("start").unwrap();
        assert!(start.can_start_workflow());
        assert_eq!(start.json()["path"]["expression"]["value"], "/greet");
        assert_eq!(start.json()["path"]["typeName"], "String");
        assert_eq!(start.json()["supportedMethods"]["typeName"], "String[]");
        let say = definition.find_activity("say").unwrap();
        assert_eq!(say.name(), Some("Say hello"));
        assert_eq!(say.json()["text"]["expression"]["type"], "JavaScript");
        assert_eq!(say.json()["text"]["typeName"], "Object");
        let connections = definition.root().connections();
        assert_eq!(connections[0].source, Endpoint::new("start", "Done"));
        assert_eq!(connections[0].target, Endpoint::new("say", "In"));
        // The result is a definition the reader accepts.
        WorkflowDefinition::from_value(definition.to_value()).expect("valid Elsa 3 JSON");
    }

    #[test]
    fn nested_containers_take_their_children() {
        let draft = draft(json!({
            "definitionId": "mine", "name": "Nested",
            "activities": [
                {"id": "seq", "type": "Elsa.Sequence"},
                {"id": "a", "type": "Elsa.WriteLine", "container": "seq"}
            ]
        }));
        let definition = draft.build("ignored").unwrap();
        assert_eq!(definition.definition_id(), "mine");
        assert_eq!(
            definition.find_activity("a").unwrap().parent_id(),
            Some("seq")
        );
    }

    #[test]
    fn mistakes_name_the_element() {
        let duplicate = draft(json!({"name": "x", "activities": [
            {"id": "a", "type": "Elsa.WriteLine"}, {"id": "a", "type": "Elsa.WriteLine"}]}));
        let error = duplicate.build("d").unwrap_err();
        assert_eq!(error.at, "activities[1]");
        assert_eq!(
            error.error,
            EditError::DuplicateActivityId { id: "a".into() }
        );

        let dangling = draft(
            json!({"name": "x", "activities": [{"id": "a", "type": "Elsa.WriteLine"}],
            "connections": [{"source": "a", "target": "ghost"}]}),
        );
        let error = dangling.build("d").unwrap_err();
        assert_eq!(error.at, "connections[0]");
        assert!(matches!(
            error.error,
            EditError::EndpointNotInFlowchart { .. }
        ));

        let structural = draft(json!({"name": "x", "activities": [
            {"id": "a", "type": "Elsa.WriteLine", "inputs": {"type": {"value": "x"}}}]}));
        let error = structural.build("d").unwrap_err();
        assert!(
            matches!(error.error, EditError::InvalidInputName { .. }),
            "{error}"
        );

        let not_a_container = draft(json!({"name": "x", "activities": [
            {"id": "a", "type": "Elsa.WriteLine"}, {"id": "b", "type": "Elsa.WriteLine", "container": "a"}]}));
        assert_eq!(not_a_container.build("d").unwrap_err().at, "activities[1]");

        let unknown_field =
            json!({"name": "x", "activities": [{"id": "a", "type": "T", "colour": 1}]});
        assert!(serde_json::from_value::<WorkflowDraft>(unknown_field).is_err());
    }

    #[test]
    fn literal_types_are_inferred() {
        let types: Vec<String> = [
            json!("s"),
            json!(true),
            json!(3),
            json!(1u64 << 40),
            json!(1.5),
            json!({}),
        ]
        .into_iter()
        .map(|value| {
            InputSpec {
                value,
                expression: None,
                type_name: None,
            }
            .to_expression()
            .type_name
        })
        .collect();
        assert_eq!(
            types,
            ["String", "Boolean", "Int32", "Int64", "Double", "Object"]
        );
    }
}
