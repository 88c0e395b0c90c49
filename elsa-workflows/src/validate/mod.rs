//! Draft validation: checks a [`WorkflowDefinition`] against an activity catalog and reports
//! structured [`Diagnostic`]s, each with a stable code, the activity concerned and a JSON path.
//!
//! A [`DraftValidator`] indexes its catalog once; validating a definition then walks the
//! activity tree once. The rules and their severities:
//!
//! | code | severity | when |
//! |---|---|---|
//! | `unknown_activity_type` | Error | the type is not in the catalog. Warning instead when the activity names a `workflowDefinitionId`: a workflow used as an activity, whose type Elsa derives from another definition that a static catalog may not list |
//! | `unknown_activity_version` | Warning | the type is known but not at the activity's `version`: Elsa then falls back to the newest version it has, so the workflow runs, perhaps not as written |
//! | `duplicate_activity_id` | Error | an id is used twice anywhere in the tree |
//! | `connection_source_missing` / `connection_target_missing` | Error | a flowchart connection names an activity that is not one of that flowchart's activities |
//! | `unknown_port` | Error | a connection leaves an activity through an outcome its descriptor does not declare (skipped when outcomes depend on input: switch cases, fork branches, script outcomes) |
//! | `missing_required_input` | Error | an input the descriptor requires is absent or blank |
//! | `unreachable_activity` | Warning | no connection path leads to the activity from where the flowchart starts |
//! | `no_start_activity` | Error / Warning | Error when the flowchart's `start` names no activity of it; Warning when nothing marks a start and every activity has an inbound connection (Elsa then starts at the first one, which is rarely what was meant) |
//! | `variable_name_clash` | Error | two variables of one scope share a name |
//! | `malformed_expression` | Error | an input wrapper's `expression` is not `{"type": "<syntax>", "value": ...}` |
//! | `invalid_cron_expression` | Error / Warning | Error when a literal cron expression does not parse; Warning when it parses only as five fields or with a Quartz year (Elsa's default scheduler wants six fields, seconds first) |

mod command;
mod cron;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use serde_json::{Map, Value};

pub use command::{EXIT_ERRORS, EXIT_OK, EXIT_UNREADABLE, run};

use crate::definition::{
    ActivityNode, ActivitySlot, Connection, ConnectionShape, InputValue, Variable, camel_case,
    is_activity_shaped, is_input_wrapper,
};
use crate::json::{self, Seg};
use crate::{
    ActivityDescriptor, Diagnostic, DiagnosticCode, Severity, WorkflowDefinition,
    builtin_descriptor,
};
use cron::CronLayout;

/// The Elsa type of the activity that marks where a flowchart starts.
const START_TYPE: &str = "Elsa.Start";

/// Validates `definition` against `catalog`, indexing it for this one call (the descriptors
/// are borrowed, not copied). For repeated validation against one catalog, build a
/// [`DraftValidator`] once instead.
pub fn validate(
    definition: &WorkflowDefinition,
    catalog: &[ActivityDescriptor],
) -> Vec<Diagnostic> {
    check(definition, catalog, &CatalogIndex::new(catalog))
}

/// Validates drafts against one activity catalog, indexed once.
#[derive(Clone, Debug)]
pub struct DraftValidator {
    descriptors: Arc<[ActivityDescriptor]>,
    index: CatalogIndex,
}

impl DraftValidator {
    /// Indexes `catalog`. When a type appears more than once, each entry is one version.
    ///
    /// A descriptor's outcomes count as input-dependent when it says so, or when the built-in
    /// descriptor of the same type says so: catalogs read from an Elsa server do not carry
    /// that note.
    pub fn new(catalog: impl Into<Arc<[ActivityDescriptor]>>) -> Self {
        let catalog = catalog.into();
        Self {
            index: CatalogIndex::new(&catalog),
            descriptors: catalog,
        }
    }

    /// A validator over the built-in catalog, built once per process.
    pub fn builtin() -> &'static Self {
        static BUILTIN: std::sync::LazyLock<DraftValidator> =
            std::sync::LazyLock::new(|| DraftValidator::new(crate::builtin_catalog()));
        &BUILTIN
    }

    /// The catalog this validator checks against.
    pub fn catalog(&self) -> &[ActivityDescriptor] {
        &self.descriptors
    }

    /// The descriptor for `type_name` at `version` (the newest version when `None`).
    pub fn descriptor(&self, type_name: &str, version: Option<i32>) -> Option<&ActivityDescriptor> {
        let index = self.index.find(&self.descriptors, type_name, version)?;
        self.descriptors.get(index)
    }

    /// Every finding for `definition`, in document order within each rule group: activities
    /// (ids, types, inputs), then variables, then flowchart graphs.
    pub fn validate(&self, definition: &WorkflowDefinition) -> Vec<Diagnostic> {
        check(definition, &self.descriptors, &self.index)
    }
}

/// Lookup tables over a catalog slice.
#[derive(Clone, Debug)]
struct CatalogIndex {
    /// Type name → indexes into the catalog, newest version first.
    by_type: HashMap<String, Vec<usize>>,
    /// Per descriptor: whether its outcomes depend on input.
    open_outcomes: Vec<bool>,
}

impl CatalogIndex {
    fn new(catalog: &[ActivityDescriptor]) -> Self {
        let mut by_type: HashMap<String, Vec<usize>> = HashMap::with_capacity(catalog.len());
        for (index, descriptor) in catalog.iter().enumerate() {
            by_type
                .entry(descriptor.type_name.clone())
                .or_default()
                .push(index);
        }
        for indexes in by_type.values_mut() {
            indexes.sort_by_key(|&i| std::cmp::Reverse(catalog[i].version));
        }
        let open_outcomes = catalog
            .iter()
            .map(|descriptor| {
                descriptor.has_dynamic_outcomes()
                    || builtin_descriptor(&descriptor.type_name)
                        .is_some_and(ActivityDescriptor::has_dynamic_outcomes)
            })
            .collect();
        Self {
            by_type,
            open_outcomes,
        }
    }

    /// The catalog index of `type_name` at `version` (any version the catalog leaves open
    /// matches), or of its newest version when `version` is `None`.
    fn find(
        &self,
        catalog: &[ActivityDescriptor],
        type_name: &str,
        version: Option<i32>,
    ) -> Option<usize> {
        let indexes = self.by_type.get(type_name)?;
        match version {
            None => indexes.first().copied(),
            Some(version) => indexes
                .iter()
                .copied()
                .find(|&i| catalog[i].version.is_none_or(|known| known == version)),
        }
    }
}

fn check(
    definition: &WorkflowDefinition,
    descriptors: &[ActivityDescriptor],
    index: &CatalogIndex,
) -> Vec<Diagnostic> {
    let nodes = definition.activities();
    let mut run = Run {
        descriptors,
        index,
        nodes: &nodes,
        resolved: Vec::with_capacity(nodes.len()),
        out: Vec::new(),
    };
    run.check_ids();
    for node_index in 0..nodes.len() {
        let resolved = run.check_type(node_index);
        run.resolved.push(resolved);
        run.check_inputs(node_index);
    }
    run.check_variables(None, &definition.variables());
    for node in &nodes {
        if node.json.contains_key("variables") {
            run.check_variables(node.id(), &node.variables());
        }
    }
    for (node_index, node) in nodes.iter().enumerate() {
        if node.is_flowchart() {
            run.check_flowchart(node_index);
        }
    }
    run.out
}

/// The state of one validation.
struct Run<'v, 'd> {
    descriptors: &'v [ActivityDescriptor],
    index: &'v CatalogIndex,
    nodes: &'d [ActivityNode<'d>],
    /// Per node: the index of its descriptor, when its type is known.
    resolved: Vec<Option<usize>>,
    out: Vec<Diagnostic>,
}

impl Run<'_, '_> {
    fn report(
        &mut self,
        severity: Severity,
        code: DiagnosticCode,
        activity_id: Option<&str>,
        path: String,
        message: String,
    ) {
        self.out.push(Diagnostic {
            severity,
            code,
            message,
            activity_id: activity_id.map(str::to_owned),
            path,
        });
    }

    fn check_ids(&mut self) {
        let nodes = self.nodes;
        let mut seen: HashMap<&str, usize> = HashMap::with_capacity(nodes.len());
        for (index, node) in nodes.iter().enumerate() {
            let Some(id) = node.id() else { continue };
            if let Some(&first) = seen.get(id) {
                let first_path = nodes[first].path();
                self.report(
                    Severity::Error,
                    DiagnosticCode::DuplicateActivityId,
                    Some(id),
                    node.field_path("id"),
                    format!("activity id '{id}' is already used by the activity at {first_path}"),
                );
            } else {
                seen.insert(id, index);
            }
        }
    }

    /// Resolves the node's descriptor, reporting unknown types and versions.
    fn check_type(&mut self, index: usize) -> Option<usize> {
        let node = &self.nodes[index];
        let descriptors = self.descriptors;
        let type_name = node.type_name();
        let Some(indexes) = self.index.by_type.get(type_name) else {
            match node.workflow_definition_id() {
                Some(definition_id) => self.report(
                    Severity::Warning,
                    DiagnosticCode::UnknownActivityType,
                    node.id(),
                    node.field_path("type"),
                    format!(
                        "activity type '{type_name}' is not in the activity catalog; it runs \
                         workflow definition '{definition_id}', which must exist where the \
                         workflow is published"
                    ),
                ),
                None => self.report(
                    Severity::Error,
                    DiagnosticCode::UnknownActivityType,
                    node.id(),
                    node.field_path("type"),
                    format!("unknown activity type '{type_name}'"),
                ),
            }
            return None;
        };
        let newest = *indexes.first()?;
        let Some(version) = node.type_version() else {
            return Some(newest);
        };
        if let Some(exact) = self.index.find(descriptors, type_name, Some(version)) {
            return Some(exact);
        }
        let known: Vec<String> = indexes
            .iter()
            .filter_map(|&i| descriptors[i].version.map(|v| v.to_string()))
            .collect();
        let newest_version = descriptors[newest]
            .version
            .map_or_else(|| "the newest".to_owned(), |v| v.to_string());
        self.report(
            Severity::Warning,
            DiagnosticCode::UnknownActivityVersion,
            node.id(),
            node.field_path("version"),
            format!(
                "activity type '{type_name}' has no version {version} in the catalog (known: {}); \
                 Elsa falls back to version {newest_version}",
                known.join(", ")
            ),
        );
        Some(newest)
    }

    fn check_inputs(&mut self, index: usize) {
        let node = &self.nodes[index];
        let descriptors = self.descriptors;
        let descriptor = self.resolved[index].map(|i| &descriptors[i]);
        let inputs = node.inputs();
        if let Some(descriptor) = descriptor {
            for required in descriptor.required_inputs() {
                let given = inputs.iter().find(|input| required.matches(input.name));
                if given.is_some_and(|input| !input.value.is_blank()) {
                    continue;
                }
                let path = given.map_or_else(
                    || node.field_path(&camel_case(&required.name)),
                    |input| input.path(),
                );
                self.report(
                    Severity::Error,
                    DiagnosticCode::MissingRequiredInput,
                    node.id(),
                    path,
                    format!(
                        "activity '{}' ({}) needs a value for its required input '{}'",
                        node.id().unwrap_or_default(),
                        node.type_name(),
                        required.name
                    ),
                );
            }
        }
        for input in &inputs {
            let mut location = input.location.clone();
            self.check_expressions(
                node.id(),
                input.name,
                input_raw(node, input.name),
                &mut location,
            );
            if input.name.eq_ignore_ascii_case("cronExpression") {
                self.check_cron(node.id(), input.value, input.path());
            }
        }
    }

    /// Finds input wrappers in `value` (skipping embedded activities, which are nodes of their
    /// own) and checks their expression objects.
    fn check_expressions(
        &mut self,
        activity_id: Option<&str>,
        input: &str,
        value: &Value,
        location: &mut Vec<Seg>,
    ) {
        match value {
            Value::Object(map) if is_activity_shaped(map) => {}
            Value::Object(map) if is_input_wrapper(map) => {
                if let Some(problem) = expression_problem(map) {
                    location.push(Seg::Key("expression".into()));
                    let path = json::render_path(location);
                    location.pop();
                    self.report(
                        Severity::Error,
                        DiagnosticCode::MalformedExpression,
                        activity_id,
                        path,
                        format!("input '{input}': {problem}"),
                    );
                }
            }
            Value::Object(map) => {
                for (key, inner) in map {
                    location.push(Seg::Key(key.clone()));
                    self.check_expressions(activity_id, input, inner, location);
                    location.pop();
                }
            }
            Value::Array(items) => {
                for (i, inner) in items.iter().enumerate() {
                    location.push(Seg::Index(i));
                    self.check_expressions(activity_id, input, inner, location);
                    location.pop();
                }
            }
            _ => {}
        }
    }

    fn check_cron(&mut self, activity_id: Option<&str>, value: InputValue<'_>, input_path: String) {
        let (text, path) = match value {
            InputValue::Raw(Value::String(text)) => (text.as_str(), input_path),
            InputValue::Wrapped {
                expression: Some(expression),
                ..
            } => match (expression.kind, expression.value) {
                ("Literal", Some(Value::String(text))) => {
                    (text.as_str(), format!("{input_path}.expression.value"))
                }
                _ => return,
            },
            _ => return,
        };
        let (severity, message) = match cron::parse(text) {
            Ok(CronLayout::WithSeconds | CronLayout::Macro) => return,
            Ok(CronLayout::WithoutSeconds) => (
                Severity::Warning,
                format!(
                    "cron expression '{text}' has five fields; Elsa's default scheduler expects \
                     six, starting with seconds (for example '0 {text}')"
                ),
            ),
            Ok(CronLayout::WithYear) => (
                Severity::Warning,
                format!(
                    "cron expression '{text}' has a year field, which only the Quartz scheduler \
                     reads; Elsa's default scheduler expects six fields"
                ),
            ),
            Err(error) => (
                Severity::Error,
                format!("cron expression '{text}' does not parse: {error}"),
            ),
        };
        self.report(
            severity,
            DiagnosticCode::InvalidCronExpression,
            activity_id,
            path,
            message,
        );
    }

    fn check_variables(&mut self, owner: Option<&str>, variables: &[Variable]) {
        let mut seen: HashMap<&str, &str> = HashMap::with_capacity(variables.len());
        for variable in variables {
            let Some(name) = variable.name.as_deref() else {
                continue;
            };
            if let Some(first) = seen.get(name) {
                let message = format!(
                    "variable name '{name}' is already declared at {first} in the same scope"
                );
                self.report(
                    Severity::Error,
                    DiagnosticCode::VariableNameClash,
                    owner,
                    format!("{}.name", variable.path),
                    message,
                );
            } else {
                seen.insert(name, &variable.path);
            }
        }
    }

    fn check_flowchart(&mut self, flowchart: usize) {
        let nodes = self.nodes;
        let node = &nodes[flowchart];
        let flowchart_id = node.id();
        let children: Vec<usize> = (0..nodes.len())
            .filter(|&i| nodes[i].parent == Some(flowchart) && nodes[i].slot == ActivitySlot::Child)
            .collect();
        let by_id: HashMap<&str, usize> = children
            .iter()
            .filter_map(|&i| nodes[i].id().map(|id| (id, i)))
            .collect();
        let connections = node.connections();
        let mut outbound: HashMap<usize, Vec<usize>> = HashMap::new();
        let mut has_inbound: HashSet<usize> = HashSet::new();
        for connection in &connections {
            let source = by_id.get(connection.source.activity.as_str()).copied();
            let target = by_id.get(connection.target.activity.as_str()).copied();
            if source.is_none() {
                self.report_missing_end(flowchart_id, connection, true);
            }
            if target.is_none() {
                self.report_missing_end(flowchart_id, connection, false);
            }
            if let Some(source) = source {
                self.check_port(source, connection);
            }
            if let (Some(source), Some(target)) = (source, target) {
                outbound.entry(source).or_default().push(target);
                has_inbound.insert(target);
            }
        }
        if children.is_empty() {
            return;
        }

        // Where Elsa may start: the trigger that fired (any activity that can start the
        // workflow), or, when run directly, the explicit `start`, else the first Start
        // activity, else the first activity that can start the workflow, else the first
        // activity without inbound connections, else the first activity.
        let mut entries: Vec<usize> = children
            .iter()
            .copied()
            .filter(|&i| nodes[i].can_start_workflow())
            .collect();
        let explicit = match node.start_activity_id() {
            Some(start) => {
                match by_id.get(start) {
                    Some(&index) => Some(index),
                    None => {
                        self.report(
                        Severity::Error,
                        DiagnosticCode::NoStartActivity,
                        flowchart_id,
                        node.field_path("start"),
                        format!("the flowchart's start activity '{start}' is not one of its activities"),
                    );
                        None
                    }
                }
            }
            None => None,
        };
        let marked = explicit
            .or_else(|| {
                children
                    .iter()
                    .copied()
                    .find(|&i| nodes[i].type_name() == START_TYPE)
            })
            .or_else(|| entries.first().copied());
        let direct = match marked {
            Some(index) => index,
            None => match children.iter().copied().find(|i| !has_inbound.contains(i)) {
                Some(index) => index,
                None => {
                    let first = children[0];
                    self.report(
                        Severity::Warning,
                        DiagnosticCode::NoStartActivity,
                        flowchart_id,
                        node.path(),
                        format!(
                            "nothing marks where the flowchart starts and every activity has an \
                             inbound connection; Elsa would start at the first one, '{}'",
                            nodes[first].id().unwrap_or_default()
                        ),
                    );
                    first
                }
            },
        };
        entries.push(direct);

        let mut reached: HashSet<usize> = HashSet::with_capacity(children.len());
        let mut queue: VecDeque<usize> = entries.into_iter().collect();
        while let Some(index) = queue.pop_front() {
            if reached.insert(index)
                && let Some(targets) = outbound.get(&index)
            {
                queue.extend(targets.iter().copied().filter(|t| !reached.contains(t)));
            }
        }
        for &child in &children {
            if reached.contains(&child) {
                continue;
            }
            let child_node = &nodes[child];
            let message = format!(
                "activity '{}' ({}) cannot be reached from where the flowchart starts",
                child_node.id().unwrap_or_default(),
                child_node.type_name()
            );
            self.report(
                Severity::Warning,
                DiagnosticCode::UnreachableActivity,
                child_node.id(),
                child_node.path(),
                message,
            );
        }
    }

    fn report_missing_end(
        &mut self,
        flowchart_id: Option<&str>,
        connection: &Connection,
        source: bool,
    ) {
        let (end, field, code) = if source {
            (
                &connection.source,
                "source",
                DiagnosticCode::ConnectionSourceMissing,
            )
        } else {
            (
                &connection.target,
                "target",
                DiagnosticCode::ConnectionTargetMissing,
            )
        };
        let path = match connection.shape {
            ConnectionShape::Endpoints => format!("{}.{field}.activity", connection.path),
            ConnectionShape::Flat => format!("{}.{field}", connection.path),
        };
        let elsewhere = self
            .nodes
            .iter()
            .any(|node| node.id() == Some(end.activity.as_str()));
        let message = if elsewhere {
            format!(
                "connection {field} '{}' is not an activity of this flowchart (it sits in another container)",
                end.activity
            )
        } else {
            format!("connection {field} '{}' names no activity", end.activity)
        };
        self.report(Severity::Error, code, flowchart_id, path, message);
    }

    fn check_port(&mut self, source: usize, connection: &Connection) {
        let Some(descriptor_index) = self.resolved[source] else {
            return;
        };
        let descriptor = &self.descriptors[descriptor_index];
        let port = connection.source.port.as_str();
        if self.index.open_outcomes[descriptor_index] || descriptor.allows_outcome(port) {
            return;
        }
        let node = &self.nodes[source];
        let message = format!(
            "activity '{}' ({}) has no outcome '{port}'; its outcomes are: {}",
            node.id().unwrap_or_default(),
            node.type_name(),
            descriptor.outcomes.join(", ")
        );
        self.report(
            Severity::Error,
            DiagnosticCode::UnknownPort,
            node.id(),
            connection.source_port_path.clone(),
            message,
        );
    }
}

/// The raw JSON value of an activity's input.
fn input_raw<'a>(node: &ActivityNode<'a>, name: &str) -> &'a Value {
    static NULL: Value = Value::Null;
    node.json.get(name).unwrap_or(&NULL)
}

/// What is wrong with an input wrapper's `expression`, if anything. A wrapper without an
/// expression (no value, or bound to a memory block) is fine.
fn expression_problem(wrapper: &Map<String, Value>) -> Option<String> {
    let expression = match wrapper.get("expression") {
        None | Some(Value::Null) => return None,
        Some(Value::Object(expression)) => expression,
        Some(other) => {
            return Some(format!(
                "`expression` must be an object {{\"type\", \"value\"}}, found {}",
                json::kind_of(other)
            ));
        }
    };
    match expression.get("type") {
        Some(Value::String(kind)) if !kind.trim().is_empty() => None,
        Some(Value::String(_)) => Some("the expression's `type` is empty".into()),
        Some(other) => Some(format!(
            "the expression's `type` must be a syntax name such as \"Literal\", found {}",
            json::kind_of(other)
        )),
        None => {
            Some("the expression has no `type` (for example \"Literal\" or \"JavaScript\")".into())
        }
    }
}

/// Turns the blocking findings of a draft that its baseline (version `version`) has as well
/// into warnings that say so: an unknown activity type or a missing input the workflow
/// already had must not block a change that did not touch it, while anything the change
/// introduces still blocks. Findings are the same when rule, activity and message are: paths
/// are not compared, since a change that inserts an activity moves its neighbours' paths.
pub fn mark_predating(draft: &mut [Diagnostic], baseline: &[Diagnostic], version: i32) {
    let known: HashSet<(DiagnosticCode, Option<&str>, &str)> = baseline
        .iter()
        .filter(|d| d.is_error())
        .map(|d| (d.code, d.activity_id.as_deref(), d.message.as_str()))
        .collect();
    for finding in draft.iter_mut().filter(|d| d.is_error()) {
        let key = (
            finding.code,
            finding.activity_id.as_deref(),
            finding.message.as_str(),
        );
        if known.contains(&key) {
            finding.severity = Severity::Warning;
            finding.message = format!(
                "{} (already in version {version}: it predates this proposal)",
                finding.message
            );
        }
    }
}

#[cfg(test)]
mod tests;
