//! The patch format of `workflow.proposeUpdate`: a list of purpose-built operations keyed by
//! activity id, applied in order, all or nothing.
//!
//! **Why not RFC 6902 JSON Patch.** A JSON Patch addresses values by JSON Pointer, and in an
//! Elsa definition that means array indices (`/root/activities/7/text/expression/value`):
//! every add or remove shifts the indices of what follows, so a model has to recompute
//! pointers after each operation, and a pointer that is off by one does not fail — it edits
//! the wrong activity. It also has to reproduce Elsa's storage details exactly: input wrappers
//! (`{"typeName", "expression": {"type", "value"}}`), two connection shapes, `$values` list
//! wrappers. What models produce reliably is the vocabulary they already read in
//! `workflow.getDefinition` results: activity ids, types, input names and `activity:port`
//! connections. So each operation names its target by id, says one thing (add an activity,
//! connect, set an input, ...), maps to one checked edit of the `elsa-workflows` edit API, and
//! fails with a typed error naming the operation's index instead of doing something else.
//!
//! Operations (`op` tag): `addActivity`, `removeActivity` (also removes its connections),
//! `connect`, `disconnect`, `setInput`, `removeInput`, `setName`, `setDescription`,
//! `addVariable`, `removeVariable`.

use elsa_workflows::{EditError, WorkflowDefinition};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::draft::{ActivitySpec, ConnectionSpec, InputSpec, VariableSpec};

/// The most operations one patch may hold.
pub const MAX_OPERATIONS: usize = 200;

/// One change to a workflow definition.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub enum PatchOperation {
    /// Adds an activity (to `activity.container`, default the root flowchart).
    AddActivity {
        /// The activity.
        activity: ActivitySpec,
        /// Its position in the container's list (default: the end).
        #[serde(default)]
        index: Option<usize>,
    },
    /// Removes an activity, wherever it is, with the connections that touch it.
    #[serde(rename_all = "camelCase")]
    RemoveActivity {
        /// The activity's id.
        activity_id: String,
    },
    /// Connects an outcome port of one activity to another activity of the same flowchart.
    Connect(ConnectionSpec),
    /// Removes a connection.
    Disconnect(ConnectionSpec),
    /// Sets an input of an activity (replacing its value).
    #[serde(rename_all = "camelCase")]
    SetInput {
        /// The activity's id.
        activity_id: String,
        /// The input's name as the catalog spells it (camelCase or PascalCase).
        input: String,
        /// The literal value, or the expression's source text.
        value: Value,
        /// The expression language: "Literal" (default), "JavaScript", "CSharp", "Python",
        /// "Liquid" or "Variable".
        #[serde(default)]
        expression: Option<String>,
        /// The value type ("String", "Int32", ...); inferred from a literal when omitted.
        #[serde(default)]
        type_name: Option<String>,
    },
    /// Removes an input's value from an activity.
    #[serde(rename_all = "camelCase")]
    RemoveInput {
        /// The activity's id.
        activity_id: String,
        /// The input's name.
        input: String,
    },
    /// Renames the workflow.
    SetName {
        /// The new name.
        name: String,
    },
    /// Replaces (or, with null, removes) the workflow's description.
    SetDescription {
        /// The new description.
        description: Option<String>,
    },
    /// Declares a workflow variable.
    AddVariable(VariableSpec),
    /// Removes a workflow variable by name.
    RemoveVariable {
        /// The variable's name.
        name: String,
    },
}

impl PatchOperation {
    /// The operation's `op` name.
    pub fn op(&self) -> &'static str {
        match self {
            Self::AddActivity { .. } => "addActivity",
            Self::RemoveActivity { .. } => "removeActivity",
            Self::Connect(_) => "connect",
            Self::Disconnect(_) => "disconnect",
            Self::SetInput { .. } => "setInput",
            Self::RemoveInput { .. } => "removeInput",
            Self::SetName { .. } => "setName",
            Self::SetDescription { .. } => "setDescription",
            Self::AddVariable(_) => "addVariable",
            Self::RemoveVariable { .. } => "removeVariable",
        }
    }

    fn apply(&self, definition: &mut WorkflowDefinition) -> Result<(), EditError> {
        match self {
            Self::AddActivity { activity, index } => activity.insert_into(definition, *index),
            Self::RemoveActivity { activity_id } => {
                definition.remove_activity(activity_id).map(drop)
            }
            Self::Connect(c) => {
                definition.add_connection(c.flowchart.as_deref(), c.source(), c.target())
            }
            Self::Disconnect(c) => {
                definition.remove_connection(c.flowchart.as_deref(), &c.source(), &c.target())
            }
            Self::SetInput {
                activity_id,
                input,
                value,
                expression,
                type_name,
            } => {
                let spec = InputSpec {
                    value: value.clone(),
                    expression: expression.clone(),
                    type_name: type_name.clone(),
                };
                definition.set_input(activity_id, input, &spec.to_expression())
            }
            Self::RemoveInput { activity_id, input } => {
                definition.remove_input(activity_id, input).map(drop)
            }
            Self::SetName { name } => {
                definition.set_name(Some(name));
                Ok(())
            }
            Self::SetDescription { description } => {
                definition.set_description(description.as_deref());
                Ok(())
            }
            Self::AddVariable(variable) => definition.add_variable(&variable.to_new_variable()),
            Self::RemoveVariable { name } => definition.remove_variable(name).map(drop),
        }
    }
}

/// Why a patch could not be applied. Nothing of the patch is kept when one operation fails.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatchError {
    /// The patch holds no operation.
    #[error("the patch holds no operation")]
    Empty,
    /// The patch holds more than [`MAX_OPERATIONS`] operations.
    #[error("the patch holds {count} operations; at most {MAX_OPERATIONS} are allowed")]
    TooManyOperations {
        /// How many it holds.
        count: usize,
    },
    /// One operation could not be applied to the definition as the earlier ones left it.
    #[error("operation {index} ({op}) failed: {error}")]
    Operation {
        /// The operation's position in the list (from 0).
        index: usize,
        /// Its `op` name.
        op: &'static str,
        /// Why it failed.
        error: EditError,
    },
}

/// `baseline` with every operation applied in order, or the first operation's failure.
pub fn apply_patch(
    baseline: &WorkflowDefinition,
    operations: &[PatchOperation],
) -> Result<WorkflowDefinition, PatchError> {
    if operations.is_empty() {
        return Err(PatchError::Empty);
    }
    if operations.len() > MAX_OPERATIONS {
        return Err(PatchError::TooManyOperations {
            count: operations.len(),
        });
    }
    let mut patched = baseline.clone();
    for (index, operation) in operations.iter().enumerate() {
        operation
            .apply(&mut patched)
            .map_err(|error| PatchError::Operation {
                index,
                op: operation.op(),
                error,
            })?;
    }
    Ok(patched)
}

/// The operations as stored in a proposal's payload: the model's arguments, re-read.
pub(crate) fn patch_json(operations: &Value) -> Value {
    serde_json::json!({ "format": "weaver.workflowPatch/v1", "operations": operations })
}

#[cfg(test)]
#[path = "patch_properties.rs"]
mod properties;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn baseline() -> WorkflowDefinition {
        WorkflowDefinition::from_value(json!({
            "definitionId": "d", "version": 3, "name": "Orders",
            "variables": [{"id": "Total", "name": "Total", "typeName": "Int32"}],
            "root": {"id": "Flowchart1", "type": "Elsa.Flowchart", "activities": [
                {"id": "a", "type": "Elsa.WriteLine", "text": {"typeName": "String", "expression": {"type": "Literal", "value": "hi"}}},
                {"id": "b", "type": "Elsa.WriteLine"}
            ], "connections": [{"source": {"activity": "a", "port": "Done"}, "target": {"activity": "b", "port": "In"}}]}
        }))
        .unwrap()
    }

    fn ops(value: Value) -> Vec<PatchOperation> {
        serde_json::from_value(value).expect("well-formed operations")
    }

    #[test]
    fn operations_apply_in_order() {
        let patch = ops(json!([
            {"op": "addActivity", "activity": {"id": "c", "type": "Elsa.Delay", "inputs": {"timeSpan": {"value": "00:00:05", "typeName": "TimeSpan"}}}},
            {"op": "disconnect", "source": "a", "target": "b"},
            {"op": "connect", "source": "a", "target": "c"},
            {"op": "connect", "source": "c", "target": "b"},
            {"op": "setInput", "activityId": "a", "input": "Text", "value": "hello"},
            {"op": "removeInput", "activityId": "c", "input": "timeSpan"},
            {"op": "setName", "name": "Orders v2"},
            {"op": "setDescription", "description": null},
            {"op": "addVariable", "name": "Count", "typeName": "Int32", "value": 0},
            {"op": "removeVariable", "name": "Total"}
        ]));
        let patched = apply_patch(&baseline(), &patch).expect("applies");
        let links: Vec<(String, String)> = patched
            .root()
            .connections()
            .into_iter()
            .map(|c| (c.source.activity, c.target.activity))
            .collect();
        assert_eq!(links, [("a".into(), "c".into()), ("c".into(), "b".into())]);
        let a = patched.find_activity("a").unwrap();
        assert_eq!(a.json()["text"]["expression"]["value"], "hello");
        assert!(
            !patched
                .find_activity("c")
                .unwrap()
                .json()
                .contains_key("timeSpan")
        );
        assert_eq!(patched.name(), Some("Orders v2"));
        let variables: Vec<_> = patched
            .variables()
            .into_iter()
            .filter_map(|v| v.name)
            .collect();
        assert_eq!(variables, ["Count"]);
        assert_eq!(
            patched.version(),
            3,
            "the writer assigns the new version at apply"
        );
    }

    #[test]
    fn a_failing_operation_is_named_and_nothing_is_kept() {
        let base = baseline();
        let patch = ops(json!([
            {"op": "removeActivity", "activityId": "b"},
            {"op": "connect", "source": "a", "target": "b"}
        ]));
        let error = apply_patch(&base, &patch).unwrap_err();
        assert_eq!(
            error,
            PatchError::Operation {
                index: 1,
                op: "connect",
                error: EditError::EndpointNotInFlowchart {
                    activity: "b".into(),
                    flowchart: "Flowchart1".into()
                }
            }
        );
        assert!(
            base.find_activity("b").is_some(),
            "the baseline is untouched"
        );
        assert_eq!(apply_patch(&base, &[]), Err(PatchError::Empty));
        let many = vec![PatchOperation::SetName { name: "x".into() }; MAX_OPERATIONS + 1];
        assert!(matches!(
            apply_patch(&base, &many),
            Err(PatchError::TooManyOperations { .. })
        ));
    }

    #[test]
    fn removing_an_activity_removes_its_connections() {
        let patched = apply_patch(
            &baseline(),
            &ops(json!([{"op": "removeActivity", "activityId": "a"}])),
        )
        .unwrap();
        assert!(patched.root().connections().is_empty());
    }

    #[test]
    fn malformed_operations_do_not_parse() {
        for bad in [
            json!([{"op": "rename", "name": "x"}]),
            json!([{"op": "setName"}]),
            json!([{"op": "connect", "source": "a"}]),
            json!([{"op": "removeActivity", "activityId": "a", "cascade": true}]),
            json!([{"op": "setInput", "activityId": "a", "input": "text", "value": 1, "extra": 2}]),
        ] {
            assert!(
                serde_json::from_value::<Vec<PatchOperation>>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }
}
