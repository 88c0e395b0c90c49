//! `workflow.explain`: a definition walked the way it runs, for a model to explain it.
//!
//! `workflow.getDefinition` lists activities and connections as stored; a model then has to
//! rebuild the control flow itself, and gets it wrong for branching flowcharts. This tool
//! does that work once: for every container (the root and any nested flowchart or sequence)
//! it gives the entry activities, the activities in the order control reaches them with the
//! outcome each leaves through and where it leads, where the flow ends, and what is never
//! reached.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiTool, AiToolDefinition, AiToolExecutionContext, AiToolRegistration, AuditBehavior,
    DangerLevel, Permission, ToolMutability,
};
use elsa_workflows::{ActivityNode, VersionOptions, WorkflowDefinition};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::envelope::{Evidence, count, object};
use crate::graph::{CatalogGaps, DefinitionHeader};
use crate::names;
use crate::support::{Listing, built_in, input, not_found};
use crate::workflow::describe;

/// How many containers, and steps per container, one explanation lists.
const MAX_CONTAINERS: usize = 20;
const MAX_STEPS: usize = 100;

/// Arguments of `workflow.explain`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExplainInput {
    /// The workflow definition id.
    #[schemars(length(min = 1, max = 200))]
    pub definition_id: String,
    /// A version number; the newest version when absent.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub version: Option<i32>,
}

/// Where control goes from a step.
#[derive(Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Next {
    /// The outcome (port) it leaves through.
    outcome: String,
    /// The activity it enters.
    to: String,
}

/// One activity in the order control reaches it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Step {
    id: String,
    #[serde(rename = "type")]
    type_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    display_name: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    starts_workflow: bool,
    /// Outgoing connections (flowcharts only); more than one distinct outcome is a branch.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    next: Vec<Next>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    branches: bool,
    /// Activities this one holds (a nested container, an If's `then`, ...).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    holds: Vec<String>,
}

/// One container walked.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Walk {
    container: String,
    #[serde(rename = "type")]
    type_name: String,
    /// `flowchart` (connections decide the order) or `sequence` (list order).
    mode: &'static str,
    entries: Vec<String>,
    steps: Listing<Step>,
    /// Steps control leaves from no outcome: where the flow ends.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    ends: Vec<String>,
    /// Children no entry leads to.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unreachable: Vec<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Explanation {
    #[serde(flatten)]
    header: DefinitionHeader,
    /// Activity types used, with how often.
    activity_types: BTreeMap<String, usize>,
    /// Workflows this one runs as activities.
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    calls_workflows: BTreeSet<String>,
    containers: Listing<Walk>,
}

/// `workflow.explain`: one definition of the caller's tenant walked in execution order, per
/// container. Needs `read:workflows`.
pub struct Explain {
    definition: AiToolDefinition,
}

impl Default for Explain {
    fn default() -> Self {
        Self {
            definition: built_in::<ExplainInput>(
                names::EXPLAIN,
                "Explain workflow",
                "Walks one workflow definition the way it runs: per container, the entry \
                 activities, then each activity in the order control reaches it, with its \
                 outcomes and where each leads, where the flow ends and what is never reached. \
                 Use workflow.getDefinition for input values.",
                ToolMutability::ReadOnly,
                DangerLevel::Low,
                &[Permission::READ_WORKFLOWS],
                AuditBehavior::RecordInvocation,
            )
            .with_grounding_name(names::grounding::EXPLAIN),
        }
    }
}

#[async_trait]
impl AiTool for Explain {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let args: ExplainInput = input(&context)?;
        let version = match args.version {
            Some(n) => VersionOptions::Specific(n),
            None => VersionOptions::Latest,
        };
        let definition = context
            .services
            .definitions
            .find(&context.caller.tenant_id, &args.definition_id, version)
            .await?
            .ok_or_else(|| not_found("workflow definition", &args.definition_id))?;
        let gaps = CatalogGaps::of(&context, &definition).await?;
        let explanation = explain(&definition);
        let unreachable: usize = explanation
            .containers
            .items
            .iter()
            .map(|walk| walk.unreachable.len())
            .sum();
        let summary = format!(
            "{}: {} in {}{}.",
            describe(&definition),
            count(definition.activity_count(), "activity", "activities"),
            count(explanation.containers.total, "container", "containers"),
            match unreachable {
                0 => String::new(),
                n => format!(", {} never reached", count(n, "activity", "activities")),
            }
        );
        object(
            &summary,
            explanation,
            &gaps.warnings(),
            &[Evidence::definition(
                definition.definition_id(),
                definition.version(),
            )],
        )
    }
}

fn explain(definition: &WorkflowDefinition) -> Explanation {
    let nodes = definition.activities();
    let mut activity_types = BTreeMap::new();
    let mut calls_workflows = BTreeSet::new();
    for node in &nodes {
        *activity_types
            .entry(node.type_name().to_owned())
            .or_insert(0) += 1;
        if let Some(id) = node.workflow_definition_id() {
            calls_workflows.insert(id.to_owned());
        }
    }
    let walks = nodes
        .iter()
        .filter(|node| node.is_container())
        .map(|container| walk(container, &nodes));
    Explanation {
        header: DefinitionHeader::of(definition),
        activity_types,
        calls_workflows,
        containers: Listing::first(walks, MAX_CONTAINERS),
    }
}

fn id_of(node: &ActivityNode<'_>) -> String {
    node.id().unwrap_or("?").to_owned()
}

/// The children of `container` in the order control reaches them.
fn walk(container: &ActivityNode<'_>, nodes: &[ActivityNode<'_>]) -> Walk {
    let container_id = container.id();
    let children: Vec<&ActivityNode<'_>> = nodes
        .iter()
        .filter(|n| n.parent_id().is_some() && n.parent_id() == container_id)
        .filter(|n| matches!(n.slot(), elsa_workflows::ActivitySlot::Child))
        .collect();
    let by_id: BTreeMap<&str, &ActivityNode<'_>> = children
        .iter()
        .filter_map(|n| n.id().map(|id| (id, *n)))
        .collect();
    let holds = |node: &ActivityNode<'_>| -> Vec<String> {
        nodes
            .iter()
            .filter(|n| n.parent_id().is_some() && n.parent_id() == node.id())
            .map(id_of)
            .collect()
    };
    let step = |node: &ActivityNode<'_>, next: Vec<Next>| {
        let outcomes: BTreeSet<&str> = next.iter().map(|n| n.outcome.as_str()).collect();
        Step {
            id: id_of(node),
            type_name: node.type_name().to_owned(),
            display_name: node
                .name()
                .or_else(|| node.display_text())
                .map(str::to_owned),
            starts_workflow: node.can_start_workflow(),
            branches: outcomes.len() > 1,
            next,
            holds: if node.is_container() {
                Vec::new()
            } else {
                holds(node)
            },
        }
    };

    if !container.is_flowchart() {
        let steps: Vec<Step> = children.iter().map(|n| step(n, Vec::new())).collect();
        return Walk {
            container: id_of(container),
            type_name: container.type_name().to_owned(),
            mode: "sequence",
            entries: children.first().map(|n| id_of(n)).into_iter().collect(),
            ends: children.last().map(|n| id_of(n)).into_iter().collect(),
            steps: Listing::first(steps, MAX_STEPS),
            unreachable: Vec::new(),
        };
    }

    let mut outgoing: BTreeMap<String, Vec<Next>> = BTreeMap::new();
    let mut entered = BTreeSet::new();
    for connection in container.connections() {
        entered.insert(connection.target.activity.clone());
        outgoing
            .entry(connection.source.activity)
            .or_default()
            .push(Next {
                outcome: connection.source.port,
                to: connection.target.activity,
            });
    }
    // Elsa starts a flowchart at `start`, else at a trigger, else at what nothing enters.
    let entries: Vec<String> = match container.start_activity_id() {
        Some(start) if by_id.contains_key(start) => vec![start.to_owned()],
        _ => {
            let triggers: Vec<String> = children
                .iter()
                .filter(|n| n.can_start_workflow())
                .map(|n| id_of(n))
                .collect();
            if triggers.is_empty() {
                children
                    .iter()
                    .map(|n| id_of(n))
                    .filter(|id| !entered.contains(id))
                    .collect()
            } else {
                triggers
            }
        }
    };
    let mut seen = BTreeSet::new();
    let mut queue: VecDeque<String> = entries.iter().cloned().collect();
    let mut steps = Vec::new();
    let mut ends = Vec::new();
    while let Some(id) = queue.pop_front() {
        if !seen.insert(id.clone()) {
            continue;
        }
        let Some(node) = by_id.get(id.as_str()) else {
            continue;
        };
        let next = outgoing.remove(&id).unwrap_or_default();
        if next.is_empty() {
            ends.push(id.clone());
        }
        queue.extend(next.iter().map(|n| n.to.clone()));
        steps.push(step(node, next));
    }
    let unreachable = children
        .iter()
        .map(|n| id_of(n))
        .filter(|id| !seen.contains(id))
        .collect();
    Walk {
        container: id_of(container),
        type_name: container.type_name().to_owned(),
        mode: "flowchart",
        entries,
        steps: Listing::first(steps, MAX_STEPS),
        ends,
        unreachable,
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(Explain::default())) }

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn explained(definition: Value) -> Value {
        let definition = WorkflowDefinition::from_value(definition).unwrap();
        serde_json::to_value(explain(&definition)).unwrap()
    }

    #[test]
    fn a_flowchart_is_walked_from_its_entry_through_its_branches() {
        let result = explained(json!({
            "definitionId": "d", "version": 1,
            "root": {"id": "f", "type": "Elsa.Flowchart", "activities": [
                {"id": "end", "type": "Elsa.End"},
                {"id": "start", "type": "Elsa.Start"},
                {"id": "if", "type": "Elsa.FlowDecision"},
                {"id": "yes", "type": "Elsa.WriteLine"},
                {"id": "no", "type": "Elsa.WriteLine"},
                {"id": "orphan", "type": "Elsa.WriteLine"}
            ], "connections": [
                {"source": {"activity": "start", "port": "Done"}, "target": {"activity": "if", "port": "In"}},
                {"source": {"activity": "if", "port": "True"}, "target": {"activity": "yes", "port": "In"}},
                {"source": {"activity": "if", "port": "False"}, "target": {"activity": "no", "port": "In"}},
                {"source": {"activity": "yes", "port": "Done"}, "target": {"activity": "end", "port": "In"}},
                {"source": {"activity": "no", "port": "Done"}, "target": {"activity": "end", "port": "In"}}
            ]}
        }));
        let walk = &result["containers"]["items"][0];
        assert_eq!(walk["mode"], "flowchart");
        // `end` and `orphan` are entered by nothing but are not entries: `orphan` is, `end` is entered.
        assert_eq!(walk["entries"], json!(["start", "orphan"]));
        let order: Vec<&str> = walk["steps"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        assert_eq!(order, ["start", "orphan", "if", "yes", "no", "end"]);
        let decision = &walk["steps"]["items"][2];
        assert_eq!(decision["branches"], true);
        assert_eq!(
            decision["next"],
            json!([{"outcome": "True", "to": "yes"}, {"outcome": "False", "to": "no"}])
        );
        assert_eq!(walk["ends"], json!(["orphan", "end"]));
        assert_eq!(result["activityTypes"]["Elsa.WriteLine"], 3);
    }

    #[test]
    fn an_explicit_start_leaves_the_rest_unreachable_and_sequences_keep_list_order() {
        let result = explained(json!({
            "definitionId": "d", "version": 1,
            "root": {"id": "f", "type": "Elsa.Flowchart", "start": "a", "activities": [
                {"id": "a", "type": "Elsa.WriteLine"},
                {"id": "b", "type": "Elsa.WriteLine"},
                {"id": "s", "type": "Elsa.Sequence", "activities": [
                    {"id": "s1", "type": "Elsa.WriteLine"},
                    {"id": "s2", "type": "Child", "workflowDefinitionId": "child-flow"}
                ]}
            ], "connections": []}
        }));
        let root = &result["containers"]["items"][0];
        assert_eq!(root["entries"], json!(["a"]));
        assert_eq!(root["unreachable"], json!(["b", "s"]));
        let sequence = &result["containers"]["items"][1];
        assert_eq!(sequence["mode"], "sequence");
        assert_eq!(sequence["steps"]["items"][1]["id"], "s2");
        assert_eq!(sequence["ends"], json!(["s2"]));
        assert_eq!(result["callsWorkflows"], json!(["child-flow"]));
    }
}
