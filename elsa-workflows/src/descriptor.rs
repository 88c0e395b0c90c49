//! Activity descriptors: what an activity type is, which inputs it takes, which outputs it
//! produces, which outcomes (flow ports) it can leave through and which of its properties hold
//! child activities.
//!
//! Descriptors are read leniently from two JSON shapes: the catalog shape this crate writes
//! (`outcomes` listed, embedded `ports`, `wrapped` inputs) and the shape Elsa Server's
//! `/descriptors/activities` endpoint returns (`ports` typed `Flow` or `Embedded`, inputs with
//! `typeName` and `isWrapped`, `kind` as a name or a number, the list wrapped in `items`).
//! Unknown fields are ignored; a known field of the wrong JSON type is a [`ParseError`] that
//! names its path.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::ParseError;
use crate::definition::DEFAULT_SOURCE_PORT;
use crate::json::{self, Seg};

/// How an activity runs, as Elsa classifies it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
#[non_exhaustive]
pub enum ActivityKind {
    /// Runs synchronously.
    #[default]
    Action,
    /// Can start (trigger) new workflows.
    Trigger,
    /// Always runs asynchronously.
    Job,
    /// Runs synchronously by default; can be configured to run asynchronously.
    Task,
    /// A kind this crate does not know, kept as written.
    Other(String),
}

impl ActivityKind {
    /// The kind's name as Elsa writes it.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Action => "Action",
            Self::Trigger => "Trigger",
            Self::Job => "Job",
            Self::Task => "Task",
            Self::Other(name) => name,
        }
    }

    /// Reads a kind from its name (any letter case) or from Elsa's enum number
    /// (`Action` = 0, `Trigger` = 1, `Job` = 2, `Task` = 3).
    fn read(value: &Value, location: &[Seg]) -> Result<Self, ParseError> {
        match value {
            Value::String(name) => Ok(Self::from(name.clone())),
            Value::Number(number) => match number.as_u64() {
                Some(0) => Ok(Self::Action),
                Some(1) => Ok(Self::Trigger),
                Some(2) => Ok(Self::Job),
                Some(3) => Ok(Self::Task),
                _ => Ok(Self::Other(number.to_string())),
            },
            other => Err(json::error_at(
                location,
                format!(
                    "`kind` must be a name or a number, found {}",
                    json::kind_of(other)
                ),
            )),
        }
    }
}

impl From<String> for ActivityKind {
    fn from(name: String) -> Self {
        match name.to_ascii_lowercase().as_str() {
            "action" => Self::Action,
            "trigger" => Self::Trigger,
            "job" => Self::Job,
            "task" => Self::Task,
            _ => Self::Other(name),
        }
    }
}

impl From<ActivityKind> for String {
    fn from(kind: ActivityKind) -> Self {
        kind.as_str().to_owned()
    }
}

/// One input property of an activity type.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputDescriptor {
    /// The property name as the catalog spells it (C# PascalCase, for example `CronExpression`);
    /// definitions write it in camelCase, so compare with [`InputDescriptor::matches`].
    pub name: String,
    /// The value type, for example `string`, `bool` or `ICollection<string>`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    /// The label a designer shows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// What the input is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether a definition must give the input a value.
    pub is_required: bool,
    /// Whether the value is an `Input<T>` wrapper (`{"typeName", "expression"}`) rather than a
    /// plain JSON value.
    pub wrapped: bool,
    /// The designer tab or group the input is shown in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The editor a designer uses for it (`SingleLine`, `DropDown`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ui_hint: Option<String>,
}

impl InputDescriptor {
    /// Whether `name` names this input, ignoring ASCII case (`cronExpression` matches
    /// `CronExpression`).
    pub fn matches(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
    }

    fn read(value: &Value, at: &[Seg]) -> Result<Self, ParseError> {
        let map = json::expect_object(value, at, "an input descriptor")?;
        Ok(Self {
            name: required_str(map, "name", at)?,
            type_name: type_field(map, at)?,
            display_name: owned_str(map, "displayName", at)?,
            description: owned_str(map, "description", at)?,
            is_required: json::optional_bool(map, "isRequired", at)?.unwrap_or(false),
            wrapped: match json::optional_bool(map, "wrapped", at)? {
                Some(wrapped) => wrapped,
                None => json::optional_bool(map, "isWrapped", at)?.unwrap_or(false),
            },
            category: owned_str(map, "category", at)?,
            ui_hint: match owned_str(map, "uiHint", at)? {
                Some(hint) => Some(hint),
                None => owned_str(map, "uIHint", at)?,
            },
        })
    }
}

/// One output of an activity type.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputDescriptor {
    /// The output name (C# PascalCase, for example `StatusCode`).
    pub name: String,
    /// The value type.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    /// The label a designer shows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// What the output holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl OutputDescriptor {
    /// Whether `name` names this output, ignoring ASCII case.
    pub fn matches(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
    }

    fn read(value: &Value, at: &[Seg]) -> Result<Self, ParseError> {
        let map = json::expect_object(value, at, "an output descriptor")?;
        Ok(Self {
            name: required_str(map, "name", at)?,
            type_name: type_field(map, at)?,
            display_name: owned_str(map, "displayName", at)?,
            description: owned_str(map, "description", at)?,
        })
    }
}

/// A property of an activity type that holds child activities (an `If`'s `Then`, a loop's
/// `Body`): Elsa calls these embedded ports.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PortDescriptor {
    /// The property name (C# PascalCase, for example `Body`).
    pub name: String,
    /// The label a designer shows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Always `Embedded`: flow ports are listed as outcomes instead.
    #[serde(rename = "type")]
    pub port_type: EmbeddedPort,
}

/// The `type` of an embedded port as written in JSON (`"Embedded"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum EmbeddedPort {
    /// A property holding child activities.
    #[default]
    Embedded,
}

impl PortDescriptor {
    /// An embedded port named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            display_name: None,
            port_type: EmbeddedPort::Embedded,
        }
    }

    /// Whether `name` names this port, ignoring ASCII case.
    pub fn matches(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
    }
}

/// Describes one activity type of a catalog.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityDescriptor {
    /// Full type name as definitions write it, for example `Elsa.WriteLine`.
    pub type_name: String,
    /// The namespace part of the type name, for example `Elsa`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The short name, for example `WriteLine`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The type version, when the catalog states one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    /// The toolbox category, for example `Console` or `HTTP`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The label a designer shows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// What the activity does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// How it runs.
    pub kind: ActivityKind,
    /// Its input properties.
    pub inputs: Vec<InputDescriptor>,
    /// Its outputs.
    pub outputs: Vec<OutputDescriptor>,
    /// The outcomes a flowchart connection may leave it through (`["Done"]` unless stated).
    pub outcomes: Vec<String>,
    /// When set, outcomes also depend on the activity's inputs (a flow switch's case labels,
    /// a flow fork's branch names): a note saying how. Port checks accept any outcome then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamic_outcomes: Option<String>,
    /// Properties that hold child activities.
    pub ports: Vec<PortDescriptor>,
    /// Whether it holds an `activities` list (flowchart, sequence, parallel).
    pub is_container: bool,
    /// Whether designers offer it in their toolbox (Elsa's `isBrowsable`, true when absent);
    /// Elsa hides activities it uses internally.
    pub is_browsable: bool,
    /// Whether Elsa marks it as a start node (`isStart`, from `IStartNode`): where a
    /// flowchart begins when no trigger starts it.
    pub is_start: bool,
    /// Whether Elsa marks it as a terminal node (`isTerminal`, from `ITerminalNode`): reaching
    /// it ends the flow it runs in.
    pub is_terminal: bool,
}

impl ActivityDescriptor {
    /// A descriptor for `type_name` with no inputs or outputs and the default `Done` outcome;
    /// the namespace and short name are split off the type name.
    pub fn new(type_name: impl Into<String>) -> Self {
        let type_name = type_name.into();
        let (namespace, name) = split_type_name(&type_name);
        Self {
            namespace,
            name: Some(name),
            type_name,
            version: None,
            category: None,
            display_name: None,
            description: None,
            kind: ActivityKind::Action,
            inputs: Vec::new(),
            outputs: Vec::new(),
            outcomes: vec![DEFAULT_SOURCE_PORT.to_owned()],
            dynamic_outcomes: None,
            ports: Vec::new(),
            is_container: false,
            is_browsable: true,
            is_start: false,
            is_terminal: false,
        }
    }

    /// Reads one descriptor from JSON.
    pub fn from_value(value: &Value) -> Result<Self, ParseError> {
        Self::read(value, &[])
    }

    /// Reads a catalog of descriptors from JSON text: an array of descriptors, or an object
    /// whose `items` (Elsa Server's list response) or `activityDescriptors` holds the array.
    pub fn catalog_from_json_str(text: &str) -> Result<Vec<Self>, ParseError> {
        Self::catalog_from_value(&json::parse_text(text)?)
    }

    /// Reads a catalog of descriptors from a JSON value (see
    /// [`ActivityDescriptor::catalog_from_json_str`]).
    pub fn catalog_from_value(value: &Value) -> Result<Vec<Self>, ParseError> {
        json::check_depth(value)?;
        let (items, at) = match value {
            Value::Object(map) => {
                let field = ["items", "activityDescriptors"]
                    .into_iter()
                    .find(|field| map.contains_key(*field))
                    .ok_or_else(|| {
                        json::error_at(
                            &[],
                            "an activity catalog must be an array of descriptors or an object with `items`",
                        )
                    })?;
                json::optional_array(map, field, &[])?.unwrap_or((&EMPTY_LIST, Vec::new()))
            }
            other => match json::array_like(other) {
                Some((items, step)) => (items, step.into_iter().collect()),
                None => {
                    return Err(json::error_at(
                        &[],
                        format!(
                            "an activity catalog must be an array of descriptors, found {}",
                            json::kind_of(other)
                        ),
                    ));
                }
            },
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| Self::read(item, &json::index(&at, i)))
            .collect()
    }

    /// The input named `name`, ignoring ASCII case: definitions write `cronExpression` where
    /// catalogs write `CronExpression`.
    pub fn input(&self, name: &str) -> Option<&InputDescriptor> {
        self.inputs.iter().find(|input| input.matches(name))
    }

    /// The output named `name`, ignoring ASCII case.
    pub fn output(&self, name: &str) -> Option<&OutputDescriptor> {
        self.outputs.iter().find(|output| output.matches(name))
    }

    /// The embedded port named `name`, ignoring ASCII case.
    pub fn port(&self, name: &str) -> Option<&PortDescriptor> {
        self.ports.iter().find(|port| port.matches(name))
    }

    /// The inputs a definition must give a value.
    pub fn required_inputs(&self) -> impl Iterator<Item = &InputDescriptor> {
        self.inputs.iter().filter(|input| input.is_required)
    }

    /// Whether the activity's outcomes depend on its inputs.
    pub fn has_dynamic_outcomes(&self) -> bool {
        self.dynamic_outcomes.is_some()
    }

    /// Whether a flowchart connection may leave the activity through `outcome`: one of the
    /// declared outcomes, or any outcome when they are dynamic or none are declared.
    pub fn allows_outcome(&self, outcome: &str) -> bool {
        self.has_dynamic_outcomes()
            || self.outcomes.is_empty()
            || self.outcomes.iter().any(|known| known == outcome)
    }

    /// Whether the activity can start workflows.
    pub fn is_trigger(&self) -> bool {
        self.kind == ActivityKind::Trigger
    }

    /// Whether a workflow can begin at this activity: a trigger, or a start node.
    pub fn can_start_workflow(&self) -> bool {
        self.is_trigger() || self.is_start
    }

    /// The label to show: the display name, else the short name, else the type name.
    pub fn label(&self) -> &str {
        self.display_name
            .as_deref()
            .or(self.name.as_deref())
            .unwrap_or(&self.type_name)
    }

    fn read(value: &Value, at: &[Seg]) -> Result<Self, ParseError> {
        let map = json::expect_object(value, at, "an activity descriptor")?;
        let type_name = match json::optional_str(map, "typeName", at)? {
            Some(type_name) => type_name.to_owned(),
            None => required_str(map, "type", at).map_err(|_| {
                json::error_at(
                    &json::key(at, "typeName"),
                    "an activity descriptor needs a `typeName`",
                )
            })?,
        };
        if type_name.trim().is_empty() {
            return Err(json::error_at(
                &json::key(at, "typeName"),
                "`typeName` is empty",
            ));
        }
        let (default_namespace, default_name) = split_type_name(&type_name);
        let kind = match map.get("kind") {
            None | Some(Value::Null) => ActivityKind::Action,
            Some(kind) => ActivityKind::read(kind, &json::key(at, "kind"))?,
        };
        let inputs = read_list(map, "inputs", at, InputDescriptor::read)?;
        let outputs = read_list(map, "outputs", at, OutputDescriptor::read)?;
        let (ports, flow_ports) = read_ports(map, at)?;
        let outcomes = match json::optional_array(map, "outcomes", at)? {
            Some((items, list_at)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    item.as_str().map(str::to_owned).ok_or_else(|| {
                        json::error_at(
                            &json::index(&list_at, i),
                            format!("an outcome must be a string, found {}", json::kind_of(item)),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
            None if !flow_ports.is_empty() => flow_ports,
            None => vec![DEFAULT_SOURCE_PORT.to_owned()],
        };
        let dynamic_outcomes = match map.get("dynamicOutcomes") {
            // Elsa marks inputs whose values become outcomes with an editor hint: Elsa Server
            // writes `dynamic-outcomes` (`InputUIHints.DynamicOutcomes`), catalogs may write the
            // constant's name.
            None | Some(Value::Null) => inputs
                .iter()
                .find(|input| {
                    input
                        .ui_hint
                        .as_deref()
                        .is_some_and(is_dynamic_outcomes_hint)
                })
                .map(|input| format!("Outcomes include the values of the {} input.", input.name)),
            Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) => Some("Outcomes depend on the activity's inputs.".to_owned()),
            Some(Value::String(note)) => Some(note.clone()),
            Some(other) => {
                return Err(json::error_at(
                    &json::key(at, "dynamicOutcomes"),
                    format!(
                        "`dynamicOutcomes` must be a note or a boolean, found {}",
                        json::kind_of(other)
                    ),
                ));
            }
        };
        Ok(Self {
            namespace: owned_str(map, "namespace", at)?.or(default_namespace),
            name: owned_str(map, "name", at)?.or(Some(default_name)),
            version: json::optional_i32(map, "version", at)?,
            category: owned_str(map, "category", at)?,
            display_name: owned_str(map, "displayName", at)?,
            description: owned_str(map, "description", at)?,
            kind,
            inputs,
            outputs,
            outcomes,
            dynamic_outcomes,
            ports,
            is_container: json::optional_bool(map, "isContainer", at)?.unwrap_or(false),
            is_browsable: json::optional_bool(map, "isBrowsable", at)?.unwrap_or(true),
            is_start: json::optional_bool(map, "isStart", at)?.unwrap_or(false),
            is_terminal: json::optional_bool(map, "isTerminal", at)?.unwrap_or(false),
            type_name,
        })
    }
}

impl<'de> Deserialize<'de> for ActivityDescriptor {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_value(&value).map_err(serde::de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for InputDescriptor {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::read(&value, &[]).map_err(serde::de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for OutputDescriptor {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::read(&value, &[]).map_err(serde::de::Error::custom)
    }
}

static EMPTY_LIST: Vec<Value> = Vec::new();

/// Whether an input's editor hint says that its values become outcomes.
fn is_dynamic_outcomes_hint(hint: &str) -> bool {
    hint.eq_ignore_ascii_case("dynamic-outcomes") || hint.eq_ignore_ascii_case("DynamicOutcomes")
}

/// `Namespace.Type` → (`Some("Namespace")`, `"Type"`); a name without a dot has no namespace.
fn split_type_name(type_name: &str) -> (Option<String>, String) {
    match type_name.rsplit_once('.') {
        Some((namespace, name)) => (Some(namespace.to_owned()), name.to_owned()),
        None => (None, type_name.to_owned()),
    }
}

fn owned_str(
    map: &Map<String, Value>,
    field: &str,
    at: &[Seg],
) -> Result<Option<String>, ParseError> {
    Ok(json::optional_str(map, field, at)?.map(str::to_owned))
}

fn required_str(map: &Map<String, Value>, field: &str, at: &[Seg]) -> Result<String, ParseError> {
    json::optional_str(map, field, at)?
        .map(str::to_owned)
        .ok_or_else(|| json::error_at(&json::key(at, field), format!("`{field}` is required")))
}

/// The value type of an input or output: `type` (catalog shape) or `typeName` (Elsa Server).
fn type_field(map: &Map<String, Value>, at: &[Seg]) -> Result<Option<String>, ParseError> {
    match owned_str(map, "type", at)? {
        Some(type_name) => Ok(Some(type_name)),
        None => owned_str(map, "typeName", at),
    }
}

fn read_list<T>(
    map: &Map<String, Value>,
    field: &str,
    at: &[Seg],
    read: fn(&Value, &[Seg]) -> Result<T, ParseError>,
) -> Result<Vec<T>, ParseError> {
    let Some((items, list_at)) = json::optional_array(map, field, at)? else {
        return Ok(Vec::new());
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| read(item, &json::index(&list_at, i)))
        .collect()
}

/// Splits `ports` into embedded ports and flow-port names. A port typed `Flow` (or Elsa's enum
/// number 1) is an outcome; anything else holds child activities.
fn read_ports(
    map: &Map<String, Value>,
    at: &[Seg],
) -> Result<(Vec<PortDescriptor>, Vec<String>), ParseError> {
    let mut embedded = Vec::new();
    let mut flow = Vec::new();
    let Some((items, list_at)) = json::optional_array(map, "ports", at)? else {
        return Ok((embedded, flow));
    };
    for (i, item) in items.iter().enumerate() {
        let item_at = json::index(&list_at, i);
        let port = json::expect_object(item, &item_at, "a port")?;
        let name = required_str(port, "name", &item_at)?;
        let is_flow = match port.get("type").or_else(|| port.get("mode")) {
            Some(Value::String(kind)) => kind.eq_ignore_ascii_case("flow"),
            Some(Value::Number(number)) => number.as_u64() == Some(1),
            _ => false,
        };
        if is_flow {
            flow.push(name);
        } else {
            embedded.push(PortDescriptor {
                name,
                display_name: owned_str(port, "displayName", &item_at)?,
                port_type: EmbeddedPort::Embedded,
            });
        }
    }
    Ok((embedded, flow))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn catalog_shape_is_read_with_defaults() {
        let descriptor = ActivityDescriptor::from_value(&json!({
            "typeName": "Elsa.Cron", "namespace": "Elsa", "name": "Cron", "version": 1,
            "category": "Scheduling", "displayName": "Cron", "kind": "Trigger",
            "inputs": [{"name": "CronExpression", "type": "string", "wrapped": true, "isRequired": false, "uiHint": "SingleLine"}],
            "outputs": [], "ports": [], "isContainer": false,
            "clrType": "Elsa.Scheduling.Activities.Cron", "source": {"repo": "x"}
        }))
        .expect("valid");
        assert_eq!(descriptor.kind, ActivityKind::Trigger);
        assert_eq!(descriptor.outcomes, ["Done"]);
        assert_eq!(descriptor.version, Some(1));
        let input = descriptor
            .input("cronExpression")
            .expect("case-insensitive");
        assert_eq!(input.name, "CronExpression");
        assert!(input.wrapped && !input.is_required);
        assert_eq!(input.ui_hint.as_deref(), Some("SingleLine"));
        assert!(descriptor.input("cron").is_none());
        assert!(descriptor.is_trigger());
    }

    #[test]
    fn elsa_server_shape_splits_flow_and_embedded_ports() {
        let descriptor = ActivityDescriptor::from_value(&json!({
            "typeName": "Acme.Approve", "kind": 3,
            "inputs": [{"name": "Approver", "typeName": "String", "isWrapped": true, "displayName": "Approver"}],
            "outputs": [{"name": "Result", "typeName": "Boolean"}],
            "ports": [
                {"name": "Approved", "type": "Flow"},
                {"name": "Rejected", "type": 1},
                {"name": "Body", "type": "Embedded", "displayName": "Body"}
            ]
        }))
        .expect("valid");
        assert_eq!(descriptor.kind, ActivityKind::Task);
        assert_eq!(descriptor.outcomes, ["Approved", "Rejected"]);
        assert_eq!(
            descriptor.ports,
            [PortDescriptor {
                display_name: Some("Body".into()),
                ..PortDescriptor::new("Body")
            }]
        );
        assert_eq!(descriptor.namespace.as_deref(), Some("Acme"));
        assert_eq!(descriptor.name.as_deref(), Some("Approve"));
        let input = descriptor.input("APPROVER").expect("input");
        assert!(input.wrapped);
        assert_eq!(input.type_name.as_deref(), Some("String"));
        assert_eq!(
            descriptor
                .output("result")
                .and_then(|o| o.type_name.as_deref()),
            Some("Boolean")
        );
        assert!(descriptor.allows_outcome("Approved"));
        assert!(!descriptor.allows_outcome("Done"));
    }

    #[test]
    fn dynamic_outcomes_allow_any_port() {
        let descriptor = ActivityDescriptor::from_value(&json!({
            "typeName": "Elsa.FlowSwitch", "outcomes": ["Default"],
            "dynamicOutcomes": "Outcomes are the Label of each entry in Cases."
        }))
        .expect("valid");
        assert!(descriptor.has_dynamic_outcomes());
        assert!(descriptor.allows_outcome("Case 7"));
        // Elsa Server marks the input whose values become outcomes with `dynamic-outcomes`.
        let fork = ActivityDescriptor::from_value(&json!({
            "typeName": "Elsa.FlowFork",
            "inputs": [{"name": "Branches", "type": "String[]", "uiHint": "dynamic-outcomes"}],
            "ports": [{"name": "Done", "type": "Flow"}]
        }))
        .expect("valid");
        assert!(fork.has_dynamic_outcomes());
        assert!(fork.allows_outcome("Left"));
        let plain = ActivityDescriptor::from_value(&json!({
            "typeName": "Elsa.WriteLine",
            "inputs": [{"name": "Text", "type": "String", "uiHint": "singleline"}]
        }))
        .expect("valid");
        assert!(!plain.has_dynamic_outcomes());
    }

    #[test]
    fn wrong_field_types_name_their_path() {
        let cases = [
            (json!([{"typeName": "A"}, {"typeName": 3}]), "$[1].typeName"),
            (json!([{"name": "A"}]), "$[0].typeName"),
            (
                json!([{"typeName": "A", "inputs": [{"name": "X", "isRequired": "yes"}]}]),
                "$[0].inputs[0].isRequired",
            ),
            (
                json!([{"typeName": "A", "outcomes": ["Done", 2]}]),
                "$[0].outcomes[1]",
            ),
            (json!([{"typeName": "A", "kind": []}]), "$[0].kind"),
            (
                json!({"items": [{"typeName": "A", "ports": [{"type": "Flow"}]}]}),
                "$.items[0].ports[0].name",
            ),
            (json!({"count": 1}), "$"),
            (json!("x"), "$"),
        ];
        for (value, path) in cases {
            let error = ActivityDescriptor::catalog_from_value(&value).expect_err("invalid");
            assert_eq!(error.path, path, "{value}: {error}");
        }
    }

    #[test]
    fn browsable_start_and_terminal_flags_are_read_with_elsas_defaults() {
        // Elsa Server writes all three flags on every descriptor.
        let start = ActivityDescriptor::from_value(&json!({
            "typeName": "Elsa.Start", "kind": "Action",
            "isBrowsable": true, "isStart": true, "isTerminal": false
        }))
        .expect("valid");
        assert!(start.is_browsable && start.is_start && !start.is_terminal);
        assert!(start.can_start_workflow() && !start.is_trigger());
        let hidden_end = ActivityDescriptor::from_value(&json!({
            "typeName": "Acme.End", "isBrowsable": false, "isTerminal": true
        }))
        .expect("valid");
        assert!(!hidden_end.is_browsable && hidden_end.is_terminal && !hidden_end.is_start);
        assert!(!hidden_end.can_start_workflow());
        // Absent flags: browsable, neither start nor terminal, as Elsa's defaults are.
        let plain =
            ActivityDescriptor::from_value(&json!({"typeName": "Acme.Step"})).expect("valid");
        assert!(plain.is_browsable && !plain.is_start && !plain.is_terminal);
        assert!(!plain.can_start_workflow());
        let trigger = ActivityDescriptor::from_value(&json!({"typeName": "Elsa.Cron", "kind": 1}))
            .expect("valid");
        assert!(trigger.can_start_workflow() && !trigger.is_start);
        for field in ["isBrowsable", "isStart", "isTerminal"] {
            let error =
                ActivityDescriptor::catalog_from_value(&json!([{"typeName": "A", field: "yes"}]))
                    .expect_err("not a boolean");
            assert_eq!(error.path, format!("$[0].{field}"), "{error}");
        }
    }

    #[test]
    fn serde_round_trip_keeps_the_model() {
        let mut descriptor = ActivityDescriptor::new("Elsa.FlowDecision");
        descriptor.outcomes = vec!["True".into(), "False".into()];
        descriptor.ports.push(PortDescriptor::new("Body"));
        descriptor.kind = ActivityKind::Other("Saga".into());
        descriptor.is_browsable = false;
        descriptor.is_terminal = true;
        let text = serde_json::to_string(&descriptor).expect("serialise");
        let read: ActivityDescriptor = serde_json::from_str(&text).expect("read back");
        assert_eq!(read, descriptor);
        let value: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(value["ports"][0]["type"], "Embedded");
        assert_eq!(value["kind"], "Saga");
        assert_eq!(value["isContainer"], false);
        assert_eq!(
            (
                &value["isBrowsable"],
                &value["isStart"],
                &value["isTerminal"]
            ),
            (&json!(false), &json!(false), &json!(true))
        );
    }
}
