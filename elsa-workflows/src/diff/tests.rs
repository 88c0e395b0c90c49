use serde_json::{Value, json};

use super::*;

fn definition(value: Value) -> WorkflowDefinition {
    WorkflowDefinition::from_value(value).expect("valid")
}

fn text(value: &str) -> Value {
    json!({"typeName": "String", "expression": {"type": "Literal", "value": value}})
}

fn link(from: &str, port: &str, to: &str) -> Value {
    json!({"source": {"activity": from, "port": port}, "target": {"activity": to, "port": "In"}})
}

fn before() -> WorkflowDefinition {
    definition(json!({
        "definitionId": "d", "name": "Greeter", "version": 1,
        "variables": [
            {"id": "X", "name": "X", "typeName": "String", "value": "a"},
            {"id": "Old", "name": "Old", "typeName": "String"}
        ],
        "root": {"id": "F", "type": "Elsa.Flowchart", "version": 1, "activities": [
            {"id": "s", "type": "Elsa.Start", "version": 1,
             "metadata": {"designer": {"position": {"x": 0, "y": 0}}}},
            {"id": "a", "type": "Elsa.WriteLine", "version": 1, "name": "WriteLine1", "text": text("hi")},
            {"id": "b", "type": "Elsa.WriteLine", "version": 1, "text": text("bye")}
        ], "connections": [link("s", "Done", "a"), link("a", "Done", "b")]}
    }))
}

fn after() -> WorkflowDefinition {
    definition(json!({
        "definitionId": "d", "name": "Greeter 2", "description": "Says hello.", "version": 2,
        "variables": [
            {"id": "X", "name": "X", "typeName": "Int32", "value": "a"},
            {"id": "New", "name": "New", "typeName": "Boolean", "value": true}
        ],
        "root": {"id": "F", "type": "Elsa.Flowchart", "version": 1, "activities": [
            {"id": "s", "type": "Elsa.Start", "version": 1,
             "metadata": {"designer": {"position": {"x": 300, "y": 120}}}},
            {"id": "a", "type": "Elsa.WriteLine", "version": 1, "name": "Greet", "text": text("hello")},
            {"id": "c", "type": "Elsa.FlowDecision", "version": 1,
             "condition": {"typeName": "Boolean", "expression": {"type": "JavaScript", "value": "true"}}}
        ], "connections": [link("s", "Done", "a"), link("a", "Done", "c")]}
    }))
}

#[test]
fn an_update_diff_has_an_exact_stable_shape() {
    let diff = GraphDiff::between(&before(), &after());
    let expected = json!({
        "header": [
            {"field": "name", "before": "Greeter", "after": "Greeter 2"},
            {"field": "description", "before": null, "after": "Says hello."}
        ],
        "activitiesAdded": [
            {"id": "c", "type": "Elsa.FlowDecision", "name": null, "displayText": null,
             "parentId": "F", "path": "$.root.activities[2]"}
        ],
        "activitiesRemoved": [
            {"id": "b", "type": "Elsa.WriteLine", "name": null, "displayText": null,
             "parentId": "F", "path": "$.root.activities[2]"}
        ],
        "activitiesChanged": [
            {"id": "a", "type": "Elsa.WriteLine", "path": "$.root.activities[1]",
             "typeChange": null, "versionChange": null,
             "nameChange": {"before": "WriteLine1", "after": "Greet"},
             "displayTextChange": null, "parentChange": null,
             "canStartWorkflowChange": null, "startChange": null,
             "inputs": [{"name": "text", "kind": "Modified", "before": text("hi"), "after": text("hello")}]}
        ],
        "connectionsAdded": [
            {"flowchartId": "F", "source": {"activity": "a", "port": "Done"}, "target": {"activity": "c", "port": "In"}}
        ],
        "connectionsRemoved": [
            {"flowchartId": "F", "source": {"activity": "a", "port": "Done"}, "target": {"activity": "b", "port": "In"}}
        ],
        "variablesAdded": [
            {"name": "New", "scope": null, "typeName": "Boolean", "isArray": false, "value": true}
        ],
        "variablesRemoved": [
            {"name": "Old", "scope": null, "typeName": "String", "isArray": false, "value": null}
        ],
        "variablesChanged": [
            {"name": "X", "scope": null, "fields": ["typeName"],
             "before": {"name": "X", "scope": null, "typeName": "String", "isArray": false, "value": "a"},
             "after": {"name": "X", "scope": null, "typeName": "Int32", "isArray": false, "value": "a"}}
        ]
    });
    assert_eq!(serde_json::to_value(&diff).expect("serialise"), expected);
    assert_eq!(
        diff.counts(),
        DiffCounts {
            header: 2,
            activities_added: 1,
            activities_removed: 1,
            activities_changed: 1,
            connections_added: 1,
            connections_removed: 1,
            variables_added: 1,
            variables_removed: 1,
            variables_changed: 1,
        }
    );
    assert_eq!(diff.counts().total(), 10);
    assert!(!diff.is_empty());
    let read_back: GraphDiff = serde_json::from_value(expected).expect("deserialise");
    assert_eq!(read_back, diff);
    assert_eq!(
        GraphDiff::between(&before(), &after()),
        diff,
        "deterministic"
    );
}

#[test]
fn the_reverse_diff_mirrors_the_forward_one() {
    let forward = GraphDiff::between(&before(), &after());
    let backward = GraphDiff::between(&after(), &before());
    assert_eq!(backward.activities_added, forward.activities_removed);
    assert_eq!(backward.activities_removed, forward.activities_added);
    assert_eq!(backward.connections_added, forward.connections_removed);
    assert_eq!(backward.variables_removed, forward.variables_added);
    assert_eq!(backward.counts().total(), forward.counts().total());
}

#[test]
fn identical_and_layout_only_changes_are_empty() {
    assert!(GraphDiff::between(&before(), &before()).is_empty());
    let mut moved = before().to_value();
    moved["root"]["activities"][0]["metadata"]["designer"]["position"] = json!({"x": 999, "y": 1});
    moved["version"] = json!(7);
    let diff = GraphDiff::between(&before(), &definition(moved));
    assert!(diff.is_empty(), "{diff:?}");
    assert_eq!(diff, GraphDiff::default());
}

#[test]
fn creation_lists_everything_as_added() {
    let diff = GraphDiff::creation(&before());
    assert_eq!(
        diff.header,
        [HeaderChange {
            field: "name".into(),
            before: None,
            after: Some("Greeter".into())
        }]
    );
    let ids: Vec<Option<&str>> = diff
        .activities_added
        .iter()
        .map(|a| a.id.as_deref())
        .collect();
    assert_eq!(ids, [Some("F"), Some("s"), Some("a"), Some("b")]);
    assert_eq!(diff.activities_added[0].parent_id, None);
    assert_eq!(diff.connections_added.len(), 2);
    assert_eq!(diff.variables_added.len(), 2);
    let counts = diff.counts();
    assert_eq!(counts.activities_removed + counts.activities_changed, 0);
    assert_eq!(counts.total(), 1 + 4 + 2 + 2);
}

#[test]
fn embedded_activities_change_on_their_own_and_appear_as_references_in_their_parent() {
    let with_then = |then: Value| {
        definition(
            json!({"root": {"id": "S", "type": "Elsa.Sequence", "activities": [
                {"id": "if", "type": "Elsa.If", "condition": text("x"), "then": then}
            ]}}),
        )
    };
    let old = with_then(json!({"id": "t", "type": "Elsa.WriteLine", "text": text("one")}));
    let edited = with_then(json!({"id": "t", "type": "Elsa.WriteLine", "text": text("two")}));
    let diff = GraphDiff::between(&old, &edited);
    assert_eq!(diff.activities_changed.len(), 1);
    assert_eq!(diff.activities_changed[0].id.as_deref(), Some("t"));
    assert_eq!(diff.activities_changed[0].path, "$.root.activities[0].then");

    let replaced = with_then(json!({"id": "u", "type": "Elsa.WriteLine", "text": text("one")}));
    let diff = GraphDiff::between(&old, &replaced);
    assert_eq!(
        diff.activities_changed[0].inputs,
        [InputChange {
            name: "then".into(),
            kind: ChangeKind::Modified,
            before: Some(json!({"$activity": "t"})),
            after: Some(json!({"$activity": "u"})),
        }]
    );
    assert_eq!(diff.activities_added[0].id.as_deref(), Some("u"));
    assert_eq!(diff.activities_removed[0].id.as_deref(), Some("t"));
}

#[test]
fn type_version_trigger_and_input_case_changes() {
    let old = definition(
        json!({"root": {"id": "F", "type": "Elsa.Flowchart", "activities": [
        {"id": "t", "type": "Elsa.Timer", "version": 1, "Interval": text("00:01:00"), "extra": 1}
    ], "connections": []}}),
    );
    let new = definition(
        json!({"root": {"id": "F", "type": "Elsa.Flowchart", "start": "t", "activities": [
        {"id": "t", "type": "Elsa.Cron", "version": 2, "interval": text("00:01:00"),
         "customProperties": {"canStartWorkflow": true}, "cronExpression": text("0 * * * * *")}
    ], "connections": []}}),
    );
    let diff = GraphDiff::between(&old, &new);
    let flowchart = &diff.activities_changed[0];
    assert_eq!(flowchart.id.as_deref(), Some("F"));
    assert_eq!(
        flowchart.start_change,
        Some(Change {
            before: None,
            after: Some("t".into())
        })
    );
    let timer = &diff.activities_changed[1];
    assert_eq!(
        timer.type_change,
        Some(Change {
            before: "Elsa.Timer".into(),
            after: "Elsa.Cron".into()
        })
    );
    assert_eq!(
        timer.version_change,
        Some(Change {
            before: Some(1),
            after: Some(2)
        })
    );
    assert_eq!(
        timer.can_start_workflow_change,
        Some(Change {
            before: false,
            after: true
        })
    );
    let inputs: Vec<(&str, ChangeKind)> = timer
        .inputs
        .iter()
        .map(|i| (i.name.as_str(), i.kind))
        .collect();
    // `Interval` → `interval` with the same value is no change.
    assert_eq!(
        inputs,
        [
            ("cronExpression", ChangeKind::Added),
            ("extra", ChangeKind::Removed)
        ]
    );
}

#[test]
fn repeated_connections_are_counted_as_a_multiset() {
    let graph = |connections: Value| {
        definition(
            json!({"root": {"id": "F", "type": "Elsa.Flowchart", "activities": [
            {"id": "a", "type": "Elsa.WriteLine"}, {"id": "b", "type": "Elsa.WriteLine"}
        ], "connections": connections}}),
        )
    };
    let twice = graph(json!([link("a", "Done", "b"), link("a", "Done", "b")]));
    let once =
        graph(json!([{"source": "a", "target": "b", "sourcePort": "Done", "targetPort": "In"}]));
    let diff = GraphDiff::between(&twice, &once);
    assert_eq!(
        diff.connections_removed.len(),
        1,
        "the shape does not matter, the count does"
    );
    assert!(diff.connections_added.is_empty());
}

#[test]
fn container_variables_are_scoped_by_their_container() {
    let old = definition(json!({"variables": [{"name": "V", "typeName": "String"}],
        "root": {"id": "S", "type": "Elsa.Sequence", "activities": [], "variables": [{"name": "V", "typeName": "String"}]}}));
    let new = definition(json!({"variables": [{"name": "V", "typeName": "String"}],
        "root": {"id": "S", "type": "Elsa.Sequence", "activities": [], "variables": [{"name": "V", "typeName": "String", "isArray": true}]}}));
    let diff = GraphDiff::between(&old, &new);
    assert_eq!(diff.variables_changed.len(), 1);
    assert_eq!(diff.variables_changed[0].scope.as_deref(), Some("S"));
    assert_eq!(diff.variables_changed[0].fields, ["isArray"]);
}
