//! The edit API: small, checked changes to a [`WorkflowDefinition`] that keep it valid Elsa 3
//! JSON and leave every field they do not name untouched. Proposal tools build patched
//! definitions with it; every failure is an [`EditError`], never a panic.

use std::collections::HashSet;

use serde_json::{Map, Value};
use thiserror::Error;

use crate::ParseError;
use crate::definition::{
    Activity, ActivitySlot, Endpoint, InputExpression, NewVariable, WorkflowDefinition, camel_case,
    existing_key, is_structural_key, shape_in_use,
};
use crate::json::{self, Location, Seg};

/// Container types that may be given an `activities` list when they lack one.
const LIST_CONTAINERS: &[&str] = &["Elsa.Flowchart", "Elsa.Sequence", "Elsa.Parallel"];

/// Why an edit could not be made. The definition is unchanged when an edit fails.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum EditError {
    /// No activity has this id.
    #[error("activity '{id}' not found")]
    ActivityNotFound {
        /// The id looked up.
        id: String,
    },
    /// The id is already used by an activity of the definition.
    #[error("an activity with id '{id}' already exists")]
    DuplicateActivityId {
        /// The id in use.
        id: String,
    },
    /// An activity to insert must have an id.
    #[error("the activity to insert has no id")]
    MissingActivityId,
    /// The activity holds no `activities` list.
    #[error("activity '{id}' is not a container of activities")]
    NotAContainer {
        /// The activity named as container.
        id: String,
    },
    /// The activity is not a flowchart, so it has no connections.
    #[error("activity '{id}' is not a flowchart")]
    NotAFlowchart {
        /// The activity named as flowchart.
        id: String,
    },
    /// The root activity can be replaced, not removed.
    #[error("the root activity cannot be removed")]
    CannotRemoveRoot,
    /// The position is past the end of the container's list.
    #[error("index {index} is past the end of a list of {len} activities")]
    IndexOutOfRange {
        /// The requested position.
        index: usize,
        /// The list's length.
        len: usize,
    },
    /// The name is empty or one of Elsa's structural fields (`id`, `type`, `metadata`, ...).
    #[error("'{name}' cannot be used as an input name")]
    InvalidInputName {
        /// The rejected name.
        name: String,
    },
    /// The activity has no such input.
    #[error("activity '{activity_id}' has no input '{name}'")]
    InputNotFound {
        /// The activity.
        activity_id: String,
        /// The input looked up.
        name: String,
    },
    /// The input holds embedded activities; change those with the activity edits.
    #[error("input '{name}' of activity '{activity_id}' holds activities")]
    InputHoldsActivities {
        /// The activity.
        activity_id: String,
        /// The input.
        name: String,
    },
    /// A connection endpoint is not a direct child of the flowchart.
    #[error("'{activity}' is not an activity of flowchart '{flowchart}'")]
    EndpointNotInFlowchart {
        /// The endpoint's activity id.
        activity: String,
        /// The flowchart (its id, or `root`).
        flowchart: String,
    },
    /// The flowchart already has this connection.
    #[error("connection {from} -> {to} already exists")]
    DuplicateConnection {
        /// `activity:port` of the source.
        from: String,
        /// `activity:port` of the target.
        to: String,
    },
    /// The flowchart has no such connection.
    #[error("connection {from} -> {to} not found")]
    ConnectionNotFound {
        /// `activity:port` of the source.
        from: String,
        /// `activity:port` of the target.
        to: String,
    },
    /// A workflow variable already has this name.
    #[error("variable '{name}' already exists")]
    DuplicateVariable {
        /// The name in use.
        name: String,
    },
    /// No workflow variable has this name.
    #[error("variable '{name}' not found")]
    VariableNotFound {
        /// The name looked up.
        name: String,
    },
    /// A variable needs a non-empty name.
    #[error("a variable needs a name")]
    EmptyVariableName,
    /// The JSON given for an activity is not a valid activity.
    #[error("invalid activity JSON: {0}")]
    InvalidActivity(#[from] ParseError),
}

fn endpoint_label(endpoint: &Endpoint) -> String {
    format!("{}:{}", endpoint.activity, endpoint.port)
}

/// What the edits need to know about an activity, detached from the document borrow.
struct Located {
    location: Location,
    label: String,
    is_root: bool,
    slot: ActivitySlot,
    type_name: String,
    is_container: bool,
    parent_location: Option<Location>,
    parent_is_flowchart: bool,
}

impl WorkflowDefinition {
    fn locate(&self, id: Option<&str>) -> Result<Located, EditError> {
        let nodes = self.activities();
        let node = match id {
            None => nodes.first(),
            Some(id) => nodes.iter().find(|node| node.id() == Some(id)),
        }
        .ok_or_else(|| EditError::ActivityNotFound {
            id: id.unwrap_or("root").to_owned(),
        })?;
        let parent = node.parent.and_then(|p| nodes.get(p));
        Ok(Located {
            location: node.location.clone(),
            label: node.id().unwrap_or("root").to_owned(),
            is_root: node.parent.is_none(),
            slot: node.slot.clone(),
            type_name: node.type_name().to_owned(),
            is_container: node.is_container(),
            parent_location: parent.map(|p| p.location.clone()),
            parent_is_flowchart: parent.is_some_and(|p| p.is_flowchart()),
        })
    }

    fn object_at(&mut self, location: &[Seg]) -> Option<&mut Map<String, Value>> {
        json::locate_mut(&mut self.document, location).and_then(Value::as_object_mut)
    }

    /// Sets a workflow's display name (`None` removes it).
    pub fn set_name(&mut self, name: Option<&str>) {
        self.set_header_text("name", name);
    }

    /// Sets a workflow's description (`None` removes it).
    pub fn set_description(&mut self, description: Option<&str>) {
        self.set_header_text("description", description);
    }

    fn set_header_text(&mut self, field: &str, text: Option<&str>) {
        match text {
            Some(text) => {
                self.document
                    .insert(field.to_owned(), Value::String(text.to_owned()));
            }
            None => {
                self.document.shift_remove(field);
            }
        }
    }

    /// Sets an activity input to an expression wrapper. An existing key is matched
    /// case-insensitively and keeps its other fields (a `memoryReference`, say); a new key is
    /// written in camelCase.
    pub fn set_input(
        &mut self,
        activity_id: &str,
        name: &str,
        value: &InputExpression,
    ) -> Result<(), EditError> {
        let (location, key) = self.input_location(activity_id, name, false)?;
        let activity = self
            .object_at(&location)
            .ok_or_else(|| EditError::ActivityNotFound {
                id: activity_id.to_owned(),
            })?;
        let written = value.to_json();
        match activity.get_mut(&key) {
            Some(Value::Object(existing)) => {
                if let Value::Object(fresh) = written {
                    existing.extend(fresh);
                }
            }
            _ => {
                activity.insert(key, written);
            }
        }
        Ok(())
    }

    /// Removes an activity input and returns its former value.
    pub fn remove_input(&mut self, activity_id: &str, name: &str) -> Result<Value, EditError> {
        let (location, key) = self.input_location(activity_id, name, true)?;
        self.object_at(&location)
            .and_then(|activity| activity.shift_remove(&key))
            .ok_or_else(|| EditError::InputNotFound {
                activity_id: activity_id.to_owned(),
                name: name.to_owned(),
            })
    }

    fn input_location(
        &self,
        activity_id: &str,
        name: &str,
        must_exist: bool,
    ) -> Result<(Location, String), EditError> {
        let node = self
            .find_activity(activity_id)
            .ok_or_else(|| EditError::ActivityNotFound {
                id: activity_id.to_owned(),
            })?;
        let existing = existing_key(node.json(), name);
        let key = existing.clone().unwrap_or_else(|| camel_case(name));
        if name.trim().is_empty() || is_structural_key(node.json(), &key) {
            return Err(EditError::InvalidInputName {
                name: name.to_owned(),
            });
        }
        if must_exist && existing.is_none() {
            return Err(EditError::InputNotFound {
                activity_id: activity_id.to_owned(),
                name: name.to_owned(),
            });
        }
        if node.input(&key).is_some_and(|input| input.holds_activities) {
            return Err(EditError::InputHoldsActivities {
                activity_id: activity_id.to_owned(),
                name: key,
            });
        }
        Ok((node.location.clone(), key))
    }

    /// Inserts an activity into a container's `activities` list: the flowchart or sequence
    /// with id `container` (the root when `None`), at `index` (the end when `None`).
    pub fn insert_activity(
        &mut self,
        container: Option<&str>,
        activity: Activity,
        index: Option<usize>,
    ) -> Result<(), EditError> {
        if activity.id().is_none() {
            return Err(EditError::MissingActivityId);
        }
        let mut seen: HashSet<&str> = self.activities().iter().filter_map(|n| n.id()).collect();
        for node in activity.nodes() {
            if let Some(id) = node.id()
                && !seen.insert(id)
            {
                return Err(EditError::DuplicateActivityId { id: id.to_owned() });
            }
        }
        let located = self.locate(container)?;
        let create_list =
            !located.is_container && LIST_CONTAINERS.contains(&located.type_name.as_str());
        if !located.is_container && !create_list {
            return Err(EditError::NotAContainer { id: located.label });
        }
        let label = located.label;
        let target = self
            .object_at(&located.location)
            .ok_or(EditError::NotAContainer { id: label.clone() })?;
        if create_list {
            // The new list is empty: refuse a position past its end before adding it, so
            // that a failed insert leaves the container as it was.
            let at = index.unwrap_or(0);
            if at > 0 {
                return Err(EditError::IndexOutOfRange { index: at, len: 0 });
            }
            target.insert(
                "activities".into(),
                Value::Array(vec![activity.into_json()]),
            );
            return Ok(());
        }
        let list = target
            .get_mut("activities")
            .and_then(json::array_like_mut)
            .ok_or(EditError::NotAContainer { id: label })?;
        let at = index.unwrap_or(list.len());
        if at > list.len() {
            return Err(EditError::IndexOutOfRange {
                index: at,
                len: list.len(),
            });
        }
        list.insert(at, activity.into_json());
        Ok(())
    }

    /// Removes an activity wherever it sits, with the connections of its flowchart that
    /// touch it, and returns it. An activity held by a property (an If's `then`) leaves null.
    pub fn remove_activity(&mut self, id: &str) -> Result<Activity, EditError> {
        let located = self.locate(Some(id))?;
        if located.is_root {
            return Err(EditError::CannotRemoveRoot);
        }
        if located.parent_is_flowchart
            && located.slot == ActivitySlot::Child
            && let Some(parent_location) = &located.parent_location
            && let Some(parent) = self.object_at(parent_location)
        {
            if let Some(list) = parent.get_mut("connections").and_then(json::array_like_mut) {
                list.retain(|connection| !touches(connection, id));
            }
            if parent.get("start").and_then(Value::as_str) == Some(id) {
                parent.shift_remove("start");
            }
        }
        let Some((last, holder)) = located.location.split_last() else {
            return Err(EditError::CannotRemoveRoot);
        };
        let holder = json::locate_mut(&mut self.document, holder)
            .ok_or_else(|| EditError::ActivityNotFound { id: id.to_owned() })?;
        let removed = match (last, holder) {
            (Seg::Index(i), Value::Array(items)) if *i < items.len() => items.remove(*i),
            (Seg::Key(k), Value::Object(map)) => {
                map.insert(k.clone(), Value::Null).unwrap_or_default()
            }
            _ => return Err(EditError::ActivityNotFound { id: id.to_owned() }),
        };
        Ok(Activity::from_json(removed)?)
    }

    /// Adds a connection to a flowchart (the root when `flowchart` is `None`), written in the
    /// shape the flowchart's connections already use.
    pub fn add_connection(
        &mut self,
        flowchart: Option<&str>,
        source: Endpoint,
        target: Endpoint,
    ) -> Result<(), EditError> {
        let (location, existing) = self.flowchart_connections(flowchart, &[&source, &target])?;
        if existing.iter().any(|c| c.links(&source, &target)) {
            return Err(EditError::DuplicateConnection {
                from: endpoint_label(&source),
                to: endpoint_label(&target),
            });
        }
        let container = self
            .object_at(&location)
            .ok_or_else(|| EditError::NotAFlowchart {
                id: flowchart.unwrap_or("root").to_owned(),
            })?;
        let shape = shape_in_use(container);
        if container
            .get("connections")
            .and_then(json::array_like)
            .is_none()
        {
            container.insert("connections".into(), Value::Array(Vec::new()));
        }
        if let Some(list) = container
            .get_mut("connections")
            .and_then(json::array_like_mut)
        {
            list.push(shape.write(&source, &target));
        }
        Ok(())
    }

    /// Removes a connection from a flowchart (the root when `flowchart` is `None`).
    pub fn remove_connection(
        &mut self,
        flowchart: Option<&str>,
        source: &Endpoint,
        target: &Endpoint,
    ) -> Result<(), EditError> {
        let (location, existing) = self.flowchart_connections(flowchart, &[])?;
        let not_found = || EditError::ConnectionNotFound {
            from: endpoint_label(source),
            to: endpoint_label(target),
        };
        let index = existing
            .iter()
            .find(|c| c.links(source, target))
            .map(|c| c.index)
            .ok_or_else(not_found)?;
        let container = self.object_at(&location).ok_or_else(not_found)?;
        let list = container
            .get_mut("connections")
            .and_then(json::array_like_mut)
            .ok_or_else(not_found)?;
        if index < list.len() {
            list.remove(index);
            Ok(())
        } else {
            Err(not_found())
        }
    }

    fn flowchart_connections(
        &self,
        flowchart: Option<&str>,
        endpoints: &[&Endpoint],
    ) -> Result<(Location, Vec<crate::Connection>), EditError> {
        let located = self.locate(flowchart)?;
        let nodes = self.activities();
        let node = nodes
            .iter()
            .find(|n| n.location == located.location)
            .filter(|n| n.is_flowchart() || n.type_name() == "Elsa.Flowchart")
            .ok_or_else(|| EditError::NotAFlowchart {
                id: located.label.clone(),
            })?;
        let children = node.child_ids();
        for endpoint in endpoints {
            if !children.contains(&endpoint.activity.as_str()) {
                return Err(EditError::EndpointNotInFlowchart {
                    activity: endpoint.activity.clone(),
                    flowchart: located.label.clone(),
                });
            }
        }
        Ok((located.location.clone(), node.connections()))
    }

    /// Adds a workflow-level variable.
    pub fn add_variable(&mut self, variable: &NewVariable) -> Result<(), EditError> {
        if variable.name.trim().is_empty() {
            return Err(EditError::EmptyVariableName);
        }
        if self
            .variables()
            .iter()
            .any(|v| v.key() == Some(variable.name.as_str()))
        {
            return Err(EditError::DuplicateVariable {
                name: variable.name.clone(),
            });
        }
        if self
            .document
            .get("variables")
            .and_then(json::array_like)
            .is_none()
        {
            self.document
                .insert("variables".into(), Value::Array(Vec::new()));
        }
        if let Some(list) = self
            .document
            .get_mut("variables")
            .and_then(json::array_like_mut)
        {
            list.push(variable.to_json());
        }
        Ok(())
    }

    /// Removes a workflow-level variable by name and returns its declaration.
    pub fn remove_variable(&mut self, name: &str) -> Result<Value, EditError> {
        let not_found = || EditError::VariableNotFound {
            name: name.to_owned(),
        };
        let list = self
            .document
            .get_mut("variables")
            .and_then(json::array_like_mut)
            .ok_or_else(not_found)?;
        let index = list
            .iter()
            .position(|v| {
                let key = v.get("name").or_else(|| v.get("id"));
                key.and_then(Value::as_str) == Some(name)
            })
            .ok_or_else(not_found)?;
        Ok(list.remove(index))
    }
}

/// Whether a connection's JSON touches activity `id` (any shape).
fn touches(connection: &Value, id: &str) -> bool {
    ["source", "target"]
        .iter()
        .any(|end| match connection.get(end) {
            Some(Value::String(activity)) => activity == id,
            Some(Value::Object(end)) => end.get("activity").and_then(Value::as_str) == Some(id),
            _ => false,
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{ConnectionShape, WorkflowDefinition};

    fn flowchart(shape: ConnectionShape) -> WorkflowDefinition {
        let connection = shape.write(&Endpoint::new("a", "Done"), &Endpoint::new("b", "In"));
        WorkflowDefinition::from_value(json!({
            "definitionId": "d", "name": "N", "custom": {"keep": 1},
            "variables": [{"id": "X", "name": "X", "typeName": "String"}],
            "root": {"id": "f", "type": "Elsa.Flowchart", "start": "a", "activities": [
                {"id": "a", "type": "Elsa.WriteLine", "text": {"typeName": "String", "expression": {"type": "Literal", "value": "hi"}, "memoryReference": {"id": "m"}}},
                {"id": "b", "type": "Elsa.WriteLine"},
                {"id": "if", "type": "Elsa.If", "then": {"id": "t", "type": "Elsa.WriteLine"}}
            ], "connections": [connection]}
        }))
        .expect("valid")
    }

    fn reparse(definition: &WorkflowDefinition) -> WorkflowDefinition {
        WorkflowDefinition::from_value(definition.to_value())
            .expect("edited definitions stay valid")
    }

    #[test]
    fn set_and_remove_inputs() {
        let mut definition = flowchart(ConnectionShape::Endpoints);
        definition
            .set_input("a", "Text", &InputExpression::literal("String", "bye"))
            .expect("set");
        let a = definition.find_activity("a").expect("a");
        assert_eq!(a.json()["text"]["expression"]["value"], json!("bye"));
        assert_eq!(
            a.json()["text"]["memoryReference"],
            json!({"id": "m"}),
            "other fields kept"
        );
        definition
            .set_input("b", "Text", &InputExpression::javascript("String", "x"))
            .expect("new input");
        assert!(
            definition
                .find_activity("b")
                .expect("b")
                .json()
                .contains_key("text")
        );
        assert_eq!(
            definition.remove_input("b", "TEXT").expect("removed")["expression"]["type"],
            json!("JavaScript")
        );
        assert_eq!(
            definition.remove_input("b", "text"),
            Err(EditError::InputNotFound {
                activity_id: "b".into(),
                name: "text".into()
            })
        );
        assert_eq!(
            definition.set_input("a", "Type", &InputExpression::literal("String", "x")),
            Err(EditError::InvalidInputName {
                name: "Type".into()
            })
        );
        assert_eq!(
            definition.set_input("nope", "Text", &InputExpression::literal("String", "x")),
            Err(EditError::ActivityNotFound { id: "nope".into() })
        );
        assert!(matches!(
            definition.set_input("if", "Then", &InputExpression::literal("String", "x")),
            Err(EditError::InputHoldsActivities { .. })
        ));
        reparse(&definition);
    }

    #[test]
    fn insert_and_remove_activities() {
        let mut definition = flowchart(ConnectionShape::Endpoints);
        definition
            .insert_activity(None, Activity::new("c", "Elsa.WriteLine"), None)
            .expect("insert");
        assert_eq!(definition.root().child_ids(), ["a", "b", "if", "c"]);
        assert_eq!(
            definition.insert_activity(None, Activity::new("a", "Elsa.WriteLine"), None),
            Err(EditError::DuplicateActivityId { id: "a".into() })
        );
        assert_eq!(
            definition.insert_activity(Some("b"), Activity::new("z", "Elsa.WriteLine"), None),
            Err(EditError::NotAContainer { id: "b".into() })
        );
        assert_eq!(
            definition.insert_activity(None, Activity::new("z", "X"), Some(10)),
            Err(EditError::IndexOutOfRange { index: 10, len: 4 })
        );
        let nameless = Activity::from_json(json!({"type": "X"})).expect("valid");
        assert_eq!(
            definition.insert_activity(None, nameless, None),
            Err(EditError::MissingActivityId)
        );
        let removed = definition.remove_activity("a").expect("remove");
        assert_eq!(removed.id(), Some("a"));
        assert!(
            definition.root().connections().is_empty(),
            "its connections went too"
        );
        assert!(
            !definition.root().json().contains_key("start"),
            "start cleared"
        );
        definition.remove_activity("t").expect("embedded");
        assert_eq!(
            definition.find_activity("if").expect("if").json()["then"],
            Value::Null
        );
        assert_eq!(
            definition.remove_activity("f"),
            Err(EditError::CannotRemoveRoot)
        );
        assert_eq!(definition.as_json()["custom"], json!({"keep": 1}));
        reparse(&definition);
    }

    #[test]
    fn sequences_take_inserts_too() {
        let mut definition = WorkflowDefinition::from_value(json!({
            "root": {"type": "Elsa.Sequence", "activities": [{"id": "a", "type": "X"}]}
        }))
        .expect("valid");
        definition
            .insert_activity(None, Activity::new("b", "Elsa.WriteLine"), Some(0))
            .expect("root without id");
        assert_eq!(definition.root().child_ids(), ["b", "a"]);
        assert_eq!(
            definition.add_connection(None, Endpoint::new("a", "Done"), Endpoint::new("b", "In")),
            Err(EditError::NotAFlowchart { id: "root".into() })
        );
    }

    #[test]
    fn connections_keep_the_shape_in_use() {
        for shape in [ConnectionShape::Endpoints, ConnectionShape::Flat] {
            let mut definition = flowchart(shape);
            definition
                .add_connection(None, Endpoint::new("b", "Done"), Endpoint::new("if", "In"))
                .expect("add");
            let connections = definition.root().connections();
            assert_eq!(connections.len(), 2);
            assert!(connections.iter().all(|c| c.shape == shape));
            assert!(matches!(
                definition.add_connection(
                    None,
                    Endpoint::new("b", "Done"),
                    Endpoint::new("if", "In")
                ),
                Err(EditError::DuplicateConnection { .. })
            ));
            assert!(matches!(
                definition.add_connection(
                    None,
                    Endpoint::new("t", "Done"),
                    Endpoint::new("a", "In")
                ),
                Err(EditError::EndpointNotInFlowchart { .. })
            ));
            definition
                .remove_connection(None, &Endpoint::new("a", "Done"), &Endpoint::new("b", "In"))
                .expect("remove");
            assert!(matches!(
                definition.remove_connection(
                    None,
                    &Endpoint::new("a", "Done"),
                    &Endpoint::new("b", "In")
                ),
                Err(EditError::ConnectionNotFound { .. })
            ));
            reparse(&definition);
        }
    }

    #[test]
    fn variables_and_header() {
        let mut definition = flowchart(ConnectionShape::Endpoints);
        definition
            .add_variable(&NewVariable::new("Y", "Int32"))
            .expect("add");
        assert_eq!(definition.variables().len(), 2);
        assert_eq!(
            definition.add_variable(&NewVariable::new("X", "String")),
            Err(EditError::DuplicateVariable { name: "X".into() })
        );
        assert_eq!(
            definition.add_variable(&NewVariable::new(" ", "String")),
            Err(EditError::EmptyVariableName)
        );
        assert_eq!(
            definition.remove_variable("X").expect("removed")["typeName"],
            json!("String")
        );
        assert_eq!(
            definition.remove_variable("X"),
            Err(EditError::VariableNotFound { name: "X".into() })
        );
        definition.set_name(Some("Renamed"));
        definition.set_description(Some("About"));
        assert_eq!(definition.name(), Some("Renamed"));
        definition.set_description(None);
        assert_eq!(definition.description(), None);
        reparse(&definition);
    }
}
