//! Graph diff between two versions of a workflow definition, shaped for a review screen.
//!
//! Activities are matched by id wherever they sit in the tree (an activity without an id by
//! its JSON path), connections by their normalised endpoints within their flowchart, variables
//! by name within their scope. Designer metadata (positions, sizes) is ignored: moving a box on
//! the canvas is not a change a reviewer approves. Lists keep document order (the new
//! version's for added and changed items, the old version's for removed ones), so the same two
//! definitions always give the same diff.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::WorkflowDefinition;
use crate::definition::{ActivityNode, Endpoint, Variable, is_activity_shaped};

/// A value before and after a change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change<T> {
    /// The old value.
    pub before: T,
    /// The new value.
    pub after: T,
}

impl<T: PartialEq> Change<T> {
    /// `Some` when the values differ.
    fn of(before: T, after: T) -> Option<Self> {
        (before != after).then_some(Self { before, after })
    }
}

/// A header field of the definition that changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeaderChange {
    /// The JSON field: `name` or `description`.
    pub field: String,
    /// The old value.
    pub before: Option<String>,
    /// The new value.
    pub after: Option<String>,
}

/// An added or removed activity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivitySummary {
    /// The activity id (`None` for hand-written drafts without one).
    pub id: Option<String>,
    /// The activity type.
    #[serde(rename = "type")]
    pub type_name: String,
    /// The activity's name.
    pub name: Option<String>,
    /// The text the designer shows, when set.
    pub display_text: Option<String>,
    /// The id of the activity that contains it (`None` for the root).
    pub parent_id: Option<String>,
    /// Where it sits in its definition.
    pub path: String,
}

impl ActivitySummary {
    fn of(node: &ActivityNode<'_>) -> Self {
        Self {
            id: node.id().map(str::to_owned),
            type_name: node.type_name().to_owned(),
            name: node.name().map(str::to_owned),
            display_text: node.display_text().map(str::to_owned),
            parent_id: node.parent_id().map(str::to_owned),
            path: node.path(),
        }
    }
}

/// How one input (or output binding) of an activity changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChangeKind {
    /// The new version sets it; the old did not.
    Added,
    /// The old version set it; the new does not.
    Removed,
    /// Both set it, to different values.
    Modified,
}

/// One changed input of an activity. Activities embedded in the value appear as
/// `{"$activity": "<id>"}`: their own changes are listed under their ids.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputChange {
    /// The input's JSON key (the new version's spelling).
    pub name: String,
    /// Added, removed or modified.
    pub kind: ChangeKind,
    /// The old value.
    pub before: Option<Value>,
    /// The new value.
    pub after: Option<Value>,
}

/// An activity present in both versions whose content changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityChange {
    /// The activity id (`None` for an activity without one, matched by path).
    pub id: Option<String>,
    /// The activity type in the new version.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Where it sits in the new version.
    pub path: String,
    /// The type, when it changed.
    pub type_change: Option<Change<String>>,
    /// The type version, when it changed.
    pub version_change: Option<Change<Option<i32>>>,
    /// The name, when it changed.
    pub name_change: Option<Change<Option<String>>>,
    /// The designer's display text, when it changed.
    pub display_text_change: Option<Change<Option<String>>>,
    /// The containing activity, when the activity moved to another container.
    pub parent_change: Option<Change<Option<String>>>,
    /// Whether it can start the workflow, when that changed.
    pub can_start_workflow_change: Option<Change<bool>>,
    /// A container's explicit start activity, when it changed.
    pub start_change: Option<Change<Option<String>>>,
    /// The inputs that changed, in the new version's order (removed ones last).
    pub inputs: Vec<InputChange>,
}

/// An added or removed flowchart connection, normalised.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionSummary {
    /// The flowchart holding the connection (`None` when it has no id).
    pub flowchart_id: Option<String>,
    /// Where the connection leaves.
    pub source: Endpoint,
    /// Where it enters.
    pub target: Endpoint,
}

/// An added or removed variable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VariableSummary {
    /// The variable name (its id when it has no name).
    pub name: String,
    /// The container declaring it (`None` for a workflow variable).
    pub scope: Option<String>,
    /// The value type.
    pub type_name: Option<String>,
    /// Whether it holds a list.
    pub is_array: bool,
    /// The initial value.
    pub value: Value,
}

impl VariableSummary {
    fn of(variable: &Variable, scope: Option<&str>) -> Option<Self> {
        Some(Self {
            name: variable.key()?.to_owned(),
            scope: scope.map(str::to_owned),
            type_name: variable.type_name.clone(),
            is_array: variable.is_array,
            value: variable.value.clone(),
        })
    }
}

/// A variable present in both versions whose declaration changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VariableChange {
    /// The variable name.
    pub name: String,
    /// The container declaring it (`None` for a workflow variable).
    pub scope: Option<String>,
    /// The fields that changed: `typeName`, `isArray`, `value`.
    pub fields: Vec<String>,
    /// The old declaration.
    pub before: VariableSummary,
    /// The new declaration.
    pub after: VariableSummary,
}

/// How many items each part of a [`GraphDiff`] holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffCounts {
    /// Changed header fields.
    pub header: usize,
    /// Added activities.
    pub activities_added: usize,
    /// Removed activities.
    pub activities_removed: usize,
    /// Changed activities.
    pub activities_changed: usize,
    /// Added connections.
    pub connections_added: usize,
    /// Removed connections.
    pub connections_removed: usize,
    /// Added variables.
    pub variables_added: usize,
    /// Removed variables.
    pub variables_removed: usize,
    /// Changed variables.
    pub variables_changed: usize,
}

impl DiffCounts {
    /// All changes together.
    pub fn total(&self) -> usize {
        self.header
            + self.activities_added
            + self.activities_removed
            + self.activities_changed
            + self.connections_added
            + self.connections_removed
            + self.variables_added
            + self.variables_removed
            + self.variables_changed
    }
}

/// What changed between two versions of a workflow, shaped for a review screen.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GraphDiff {
    /// Changed header fields (`name`, then `description`).
    pub header: Vec<HeaderChange>,
    /// Activities only the new version has.
    pub activities_added: Vec<ActivitySummary>,
    /// Activities only the old version has.
    pub activities_removed: Vec<ActivitySummary>,
    /// Activities both versions have, with different content.
    pub activities_changed: Vec<ActivityChange>,
    /// Connections only the new version has.
    pub connections_added: Vec<ConnectionSummary>,
    /// Connections only the old version has.
    pub connections_removed: Vec<ConnectionSummary>,
    /// Variables only the new version declares.
    pub variables_added: Vec<VariableSummary>,
    /// Variables only the old version declares.
    pub variables_removed: Vec<VariableSummary>,
    /// Variables both versions declare, differently.
    pub variables_changed: Vec<VariableChange>,
}

impl GraphDiff {
    /// The changes from `before` to `after`.
    pub fn between(before: &WorkflowDefinition, after: &WorkflowDefinition) -> Self {
        Self::compute(Some(before), after)
    }

    /// The diff of a new workflow against an empty one: everything in it is added.
    pub fn creation(after: &WorkflowDefinition) -> Self {
        Self::compute(None, after)
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.counts().total() == 0
    }

    /// How many items each part holds.
    pub fn counts(&self) -> DiffCounts {
        DiffCounts {
            header: self.header.len(),
            activities_added: self.activities_added.len(),
            activities_removed: self.activities_removed.len(),
            activities_changed: self.activities_changed.len(),
            connections_added: self.connections_added.len(),
            connections_removed: self.connections_removed.len(),
            variables_added: self.variables_added.len(),
            variables_removed: self.variables_removed.len(),
            variables_changed: self.variables_changed.len(),
        }
    }

    fn compute(before: Option<&WorkflowDefinition>, after: &WorkflowDefinition) -> Self {
        let mut diff = Self::default();
        let old_nodes = before
            .map(WorkflowDefinition::activities)
            .unwrap_or_default();
        let new_nodes = after.activities();
        diff.header_changes(before, after);
        diff.activity_changes(&old_nodes, &new_nodes);
        diff.connection_changes(&old_nodes, &new_nodes);
        let old_variables = before
            .map(|b| scoped_variables(b, &old_nodes))
            .unwrap_or_default();
        diff.variable_changes(&old_variables, &scoped_variables(after, &new_nodes));
        diff
    }

    fn header_changes(&mut self, before: Option<&WorkflowDefinition>, after: &WorkflowDefinition) {
        let fields = [
            (
                "name",
                before.and_then(WorkflowDefinition::name),
                after.name(),
            ),
            (
                "description",
                before.and_then(WorkflowDefinition::description),
                after.description(),
            ),
        ];
        for (field, old, new) in fields {
            if old != new {
                self.header.push(HeaderChange {
                    field: field.to_owned(),
                    before: old.map(str::to_owned),
                    after: new.map(str::to_owned),
                });
            }
        }
    }

    fn activity_changes(&mut self, old_nodes: &[ActivityNode<'_>], new_nodes: &[ActivityNode<'_>]) {
        let old_by_key: HashMap<NodeKey, &ActivityNode<'_>> = old_nodes
            .iter()
            .map(|node| (NodeKey::of(node), node))
            .collect();
        let new_keys: std::collections::HashSet<NodeKey> =
            new_nodes.iter().map(NodeKey::of).collect();
        for node in new_nodes {
            match old_by_key.get(&NodeKey::of(node)) {
                None => self.activities_added.push(ActivitySummary::of(node)),
                Some(old) => {
                    if let Some(change) = activity_change(old, node) {
                        self.activities_changed.push(change);
                    }
                }
            }
        }
        for node in old_nodes {
            if !new_keys.contains(&NodeKey::of(node)) {
                self.activities_removed.push(ActivitySummary::of(node));
            }
        }
    }

    fn connection_changes(
        &mut self,
        old_nodes: &[ActivityNode<'_>],
        new_nodes: &[ActivityNode<'_>],
    ) {
        let old = connections(old_nodes);
        let new = connections(new_nodes);
        // Multiset difference: a connection written twice and kept once is one removal.
        let mut remaining: HashMap<&ConnectionSummary, usize> = HashMap::new();
        for connection in &old {
            *remaining.entry(connection).or_default() += 1;
        }
        for connection in &new {
            match remaining.get_mut(connection) {
                Some(count) if *count > 0 => *count -= 1,
                _ => self.connections_added.push(connection.clone()),
            }
        }
        let mut unmatched: HashMap<&ConnectionSummary, usize> = HashMap::new();
        for connection in &new {
            *unmatched.entry(connection).or_default() += 1;
        }
        for connection in &old {
            match unmatched.get_mut(connection) {
                Some(count) if *count > 0 => *count -= 1,
                _ => self.connections_removed.push(connection.clone()),
            }
        }
    }

    fn variable_changes(&mut self, old: &[VariableSummary], new: &[VariableSummary]) {
        let key = |v: &VariableSummary| (v.scope.clone(), v.name.clone());
        let old_by_key: HashMap<_, &VariableSummary> = old.iter().map(|v| (key(v), v)).collect();
        let new_by_key: HashMap<_, &VariableSummary> = new.iter().map(|v| (key(v), v)).collect();
        for variable in new {
            match old_by_key.get(&key(variable)) {
                None => self.variables_added.push(variable.clone()),
                Some(previous) => {
                    let mut fields = Vec::new();
                    if previous.type_name != variable.type_name {
                        fields.push("typeName".to_owned());
                    }
                    if previous.is_array != variable.is_array {
                        fields.push("isArray".to_owned());
                    }
                    if previous.value != variable.value {
                        fields.push("value".to_owned());
                    }
                    if !fields.is_empty() {
                        self.variables_changed.push(VariableChange {
                            name: variable.name.clone(),
                            scope: variable.scope.clone(),
                            fields,
                            before: (*previous).clone(),
                            after: variable.clone(),
                        });
                    }
                }
            }
        }
        for variable in old {
            if !new_by_key.contains_key(&key(variable)) {
                self.variables_removed.push(variable.clone());
            }
        }
    }
}

/// How activities are matched across versions: by id, or by path when they have none.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum NodeKey {
    Id(String),
    Path(String),
}

impl NodeKey {
    fn of(node: &ActivityNode<'_>) -> Self {
        match node.id() {
            Some(id) => Self::Id(id.to_owned()),
            None => Self::Path(node.path()),
        }
    }
}

fn activity_change(old: &ActivityNode<'_>, new: &ActivityNode<'_>) -> Option<ActivityChange> {
    let owned = |text: Option<&str>| text.map(str::to_owned);
    let change = ActivityChange {
        id: owned(new.id()),
        type_name: new.type_name().to_owned(),
        path: new.path(),
        type_change: Change::of(old.type_name().to_owned(), new.type_name().to_owned()),
        version_change: Change::of(old.type_version(), new.type_version()),
        name_change: Change::of(owned(old.name()), owned(new.name())),
        display_text_change: Change::of(owned(old.display_text()), owned(new.display_text())),
        parent_change: Change::of(owned(old.parent_id()), owned(new.parent_id())),
        can_start_workflow_change: Change::of(old.can_start_workflow(), new.can_start_workflow()),
        start_change: Change::of(
            owned(old.start_activity_id()),
            owned(new.start_activity_id()),
        ),
        inputs: input_changes(old, new),
    };
    let changed = change.type_change.is_some()
        || change.version_change.is_some()
        || change.name_change.is_some()
        || change.display_text_change.is_some()
        || change.parent_change.is_some()
        || change.can_start_workflow_change.is_some()
        || change.start_change.is_some()
        || !change.inputs.is_empty();
    changed.then_some(change)
}

/// Input changes, matching keys without regard to ASCII case (`Text` and `text` are one input).
fn input_changes(old: &ActivityNode<'_>, new: &ActivityNode<'_>) -> Vec<InputChange> {
    let old_inputs: Vec<(&str, Value)> = input_values(old);
    let new_inputs: Vec<(&str, Value)> = input_values(new);
    let find = |inputs: &[(&str, Value)], name: &str| -> Option<usize> {
        inputs
            .iter()
            .position(|(key, _)| key.eq_ignore_ascii_case(name))
    };
    let mut changes = Vec::new();
    for (name, value) in &new_inputs {
        match find(&old_inputs, name) {
            None => changes.push(InputChange {
                name: (*name).to_owned(),
                kind: ChangeKind::Added,
                before: None,
                after: Some(value.clone()),
            }),
            Some(i) if old_inputs[i].1 != *value => changes.push(InputChange {
                name: (*name).to_owned(),
                kind: ChangeKind::Modified,
                before: Some(old_inputs[i].1.clone()),
                after: Some(value.clone()),
            }),
            Some(_) => {}
        }
    }
    for (name, value) in &old_inputs {
        if find(&new_inputs, name).is_none() {
            changes.push(InputChange {
                name: (*name).to_owned(),
                kind: ChangeKind::Removed,
                before: Some(value.clone()),
                after: None,
            });
        }
    }
    changes
}

/// An activity's inputs with embedded activities replaced by references to their ids.
fn input_values<'a>(node: &ActivityNode<'a>) -> Vec<(&'a str, Value)> {
    node.inputs()
        .into_iter()
        .filter_map(|input| {
            let raw = node.json().get(input.name)?;
            Some((input.name, without_activities(raw)))
        })
        .collect()
}

fn without_activities(value: &Value) -> Value {
    match value {
        Value::Object(map) if is_activity_shaped(map) => {
            let mut reference = Map::new();
            reference.insert(
                "$activity".into(),
                map.get("id").cloned().unwrap_or(Value::Null),
            );
            Value::Object(reference)
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, inner)| (key.clone(), without_activities(inner)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_activities).collect()),
        other => other.clone(),
    }
}

/// Every flowchart connection of the tree, in document order.
fn connections(nodes: &[ActivityNode<'_>]) -> Vec<ConnectionSummary> {
    nodes
        .iter()
        .filter(|node| node.is_flowchart())
        .flat_map(|node| {
            let flowchart_id = node.id().map(str::to_owned);
            node.connections()
                .into_iter()
                .map(move |connection| ConnectionSummary {
                    flowchart_id: flowchart_id.clone(),
                    source: connection.source,
                    target: connection.target,
                })
        })
        .collect()
}

/// Workflow variables, then each container's, in document order.
fn scoped_variables(
    definition: &WorkflowDefinition,
    nodes: &[ActivityNode<'_>],
) -> Vec<VariableSummary> {
    let mut out: Vec<VariableSummary> = definition
        .variables()
        .iter()
        .filter_map(|v| VariableSummary::of(v, None))
        .collect();
    for node in nodes {
        if node.json().contains_key("variables") {
            out.extend(
                node.variables()
                    .iter()
                    .filter_map(|v| VariableSummary::of(v, node.id())),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests;
