use serde_json::{Value, json};

use super::*;
use crate::{ActivityKind, InputDescriptor, builtin_catalog};

fn definition(root: Value) -> WorkflowDefinition {
    WorkflowDefinition::from_value(json!({"definitionId": "d", "root": root})).expect("valid")
}

fn flowchart(activities: Value, connections: Value) -> WorkflowDefinition {
    definition(json!({
        "id": "F", "type": "Elsa.Flowchart", "version": 1,
        "activities": activities, "connections": connections
    }))
}

fn write_line(id: &str) -> Value {
    json!({"id": id, "type": "Elsa.WriteLine", "version": 1,
           "text": {"typeName": "String", "expression": {"type": "Literal", "value": id}}})
}

fn start(id: &str) -> Value {
    json!({"id": id, "type": "Elsa.Start", "version": 1})
}

fn link(from: &str, port: &str, to: &str) -> Value {
    json!({"source": {"activity": from, "port": port}, "target": {"activity": to, "port": "In"}})
}

fn builtin(definition: &WorkflowDefinition) -> Vec<Diagnostic> {
    DraftValidator::builtin().validate(definition)
}

/// The findings as (code, severity, activity id, path) for exact comparison.
fn findings(diagnostics: &[Diagnostic]) -> Vec<(&'static str, Severity, Option<&str>, &str)> {
    diagnostics
        .iter()
        .map(|d| {
            (
                d.code.as_str(),
                d.severity,
                d.activity_id.as_deref(),
                d.path.as_str(),
            )
        })
        .collect()
}

/// A small, valid flowchart: Start → a → b.
fn valid_chain() -> WorkflowDefinition {
    flowchart(
        json!([start("s"), write_line("a"), write_line("b")]),
        json!([link("s", "Done", "a"), link("a", "Done", "b")]),
    )
}

#[test]
fn a_valid_draft_draws_nothing() {
    assert_eq!(builtin(&valid_chain()), []);
    assert_eq!(validate(&valid_chain(), builtin_catalog()), []);
    let sequence =
        definition(json!({"id": "S", "type": "Elsa.Sequence", "activities": [write_line("a")]}));
    assert_eq!(builtin(&sequence), []);
}

#[test]
fn unknown_activity_types_are_errors() {
    let draft = flowchart(
        json!([{"id": "x", "type": "Acme.Teleport", "version": 1}]),
        json!([]),
    );
    assert_eq!(
        findings(&builtin(&draft)),
        [(
            "unknown_activity_type",
            Severity::Error,
            Some("x"),
            "$.root.activities[0].type"
        )]
    );
}

#[test]
fn workflows_used_as_activities_are_only_warned_about() {
    let draft = flowchart(
        json!([{"id": "c", "type": "ChildFlow", "version": 1, "workflowDefinitionId": "child"}]),
        json!([]),
    );
    let diagnostics = builtin(&draft);
    assert_eq!(
        findings(&diagnostics),
        [(
            "unknown_activity_type",
            Severity::Warning,
            Some("c"),
            "$.root.activities[0].type"
        )]
    );
    assert!(diagnostics[0].message.contains("'child'"));
    // A catalog that lists the workflow activity accepts it silently.
    let mut catalog = builtin_catalog().to_vec();
    catalog.push(ActivityDescriptor::new("ChildFlow"));
    assert_eq!(validate(&draft, &catalog), []);
}

#[test]
fn unknown_versions_are_warnings_and_known_ones_pass() {
    let draft = flowchart(
        json!([{"id": "a", "type": "Elsa.WriteLine", "version": 3}]),
        json!([]),
    );
    let diagnostics = builtin(&draft);
    assert_eq!(
        findings(&diagnostics),
        [(
            "unknown_activity_version",
            Severity::Warning,
            Some("a"),
            "$.root.activities[0].version"
        )]
    );
    assert!(
        diagnostics[0].message.contains("falls back to version 1"),
        "{}",
        diagnostics[0].message
    );

    let mut v1 = ActivityDescriptor::new("Acme.Step");
    v1.version = Some(1);
    let mut v2 = v1.clone();
    v2.version = Some(2);
    v2.outcomes = vec!["Next".into()];
    let validator = DraftValidator::new(vec![v1, v2]);
    for version in [json!(1), json!(2), Value::Null] {
        let mut activity = json!({"id": "a", "type": "Acme.Step"});
        if !version.is_null() {
            activity["version"] = version;
        }
        assert_eq!(
            validator.validate(&definition(activity.clone())),
            [],
            "{activity}"
        );
    }
    assert_eq!(
        validator
            .descriptor("Acme.Step", None)
            .and_then(|d| d.version),
        Some(2)
    );
    assert_eq!(
        validator
            .descriptor("Acme.Step", Some(1))
            .and_then(|d| d.version),
        Some(1)
    );
    assert!(validator.descriptor("Acme.Step", Some(7)).is_none());
}

#[test]
fn duplicate_ids_are_found_anywhere_in_the_tree() {
    let draft = flowchart(
        json!([
            start("s"),
            {"id": "if", "type": "Elsa.If", "version": 1, "then": write_line("s")},
        ]),
        json!([link("s", "Done", "if")]),
    );
    assert_eq!(
        findings(&builtin(&draft)),
        [(
            "duplicate_activity_id",
            Severity::Error,
            Some("s"),
            "$.root.activities[1].then.id"
        )]
    );
}

#[test]
fn connections_to_or_from_missing_activities_are_errors() {
    let draft = flowchart(
        json!([start("s"), write_line("a")]),
        json!([
            link("s", "Done", "a"),
            link("ghost", "Done", "a"),
            {"source": "a", "target": "nowhere", "sourcePort": "Done", "targetPort": "In"},
        ]),
    );
    let diagnostics = builtin(&draft);
    assert_eq!(
        findings(&diagnostics),
        [
            (
                "connection_source_missing",
                Severity::Error,
                Some("F"),
                "$.root.connections[1].source.activity"
            ),
            (
                "connection_target_missing",
                Severity::Error,
                Some("F"),
                "$.root.connections[2].target"
            ),
        ]
    );
    assert!(diagnostics[0].message.contains("'ghost' names no activity"));
}

#[test]
fn a_connection_into_another_container_is_missing_from_this_flowchart() {
    let draft = flowchart(
        json!([
            start("s"),
            {"id": "inner", "type": "Elsa.Sequence", "version": 1, "activities": [write_line("deep")]},
        ]),
        json!([link("s", "Done", "inner"), link("inner", "Done", "deep")]),
    );
    let diagnostics = builtin(&draft);
    assert_eq!(
        findings(&diagnostics),
        [(
            "connection_target_missing",
            Severity::Error,
            Some("F"),
            "$.root.connections[1].target.activity"
        )]
    );
    assert!(diagnostics[0].message.contains("another container"));
}

#[test]
fn ports_must_be_declared_outcomes() {
    let draft = flowchart(
        json!([start("s"), write_line("a"), write_line("b")]),
        json!([link("s", "Done", "a"), link("a", "True", "b")]),
    );
    let diagnostics = builtin(&draft);
    assert_eq!(
        findings(&diagnostics),
        [(
            "unknown_port",
            Severity::Error,
            Some("a"),
            "$.root.connections[1].source.port"
        )]
    );
    assert!(diagnostics[0].message.contains("its outcomes are: Done"));
    // The flat shape names the port in `sourcePort`.
    let flat = flowchart(
        json!([start("s"), write_line("a")]),
        json!([{"source": "s", "target": "a", "sourcePort": "Nope", "targetPort": "In"}]),
    );
    assert_eq!(
        findings(&builtin(&flat)),
        [(
            "unknown_port",
            Severity::Error,
            Some("s"),
            "$.root.connections[0].sourcePort"
        )]
    );
}

#[test]
fn declared_and_input_dependent_outcomes_are_not_false_positives() {
    let draft = flowchart(
        json!([
            start("s"),
            {"id": "d", "type": "Elsa.FlowDecision", "version": 1},
            {"id": "sw", "type": "Elsa.FlowSwitch", "version": 1, "cases": [{"label": "Gold"}]},
            {"id": "fork", "type": "Elsa.FlowFork", "version": 1},
            {"id": "js", "type": "Elsa.RunJavaScript", "version": 1},
            {"id": "http", "type": "Elsa.FlowSendHttpRequest", "version": 1},
            write_line("end"),
        ]),
        json!([
            link("s", "Done", "d"),
            link("d", "True", "sw"),
            link("d", "False", "fork"),
            link("sw", "Gold", "js"),
            link("fork", "Left", "http"),
            link("js", "Approved", "end"),
            link("http", "404", "end"),
        ]),
    );
    assert_eq!(builtin(&draft), []);
    // A catalog read from an Elsa server carries no dynamic-outcome note: the built-in
    // knowledge of the type still applies.
    let mut server_switch = ActivityDescriptor::new("Elsa.FlowSwitch");
    server_switch.outcomes = vec!["Default".into()];
    let mut catalog: Vec<_> = builtin_catalog()
        .iter()
        .filter(|d| d.type_name != "Elsa.FlowSwitch")
        .cloned()
        .collect();
    catalog.push(server_switch);
    assert_eq!(validate(&draft, &catalog), []);
}

#[test]
fn missing_required_inputs_are_errors() {
    let mut approve = ActivityDescriptor::new("Acme.Approve");
    approve.kind = ActivityKind::Task;
    approve.inputs.push(InputDescriptor {
        name: "Approver".into(),
        is_required: true,
        wrapped: true,
        ..InputDescriptor::default()
    });
    let validator = DraftValidator::new(vec![approve, ActivityDescriptor::new("Elsa.Sequence")]);
    let sequence = |activities: Value| {
        definition(json!({"id": "S", "type": "Elsa.Sequence", "activities": activities}))
    };
    let draft = sequence(json!([
        {"id": "none", "type": "Acme.Approve"},
        {"id": "blank", "type": "Acme.Approve", "approver": {"typeName": "String", "expression": {"type": "Literal", "value": " "}}},
    ]));
    let diagnostics = validator.validate(&draft);
    assert_eq!(
        findings(&diagnostics),
        [
            (
                "missing_required_input",
                Severity::Error,
                Some("none"),
                "$.root.activities[0].approver"
            ),
            (
                "missing_required_input",
                Severity::Error,
                Some("blank"),
                "$.root.activities[1].approver"
            ),
        ]
    );
    assert!(diagnostics[0].message.contains("'Approver'"));
    let given = sequence(json!([
        {"id": "lit", "type": "Acme.Approve", "Approver": {"typeName": "String", "expression": {"type": "Literal", "value": "ann"}}},
        {"id": "js", "type": "Acme.Approve", "approver": {"typeName": "String", "expression": {"type": "JavaScript", "value": "getBoss()"}}},
        {"id": "bound", "type": "Acme.Approve", "approver": {"typeName": "String", "memoryReference": {"id": "Boss"}}},
    ]));
    assert_eq!(validator.validate(&given), []);
}

#[test]
fn activities_no_path_reaches_are_warned_about() {
    let draft = flowchart(
        json!([
            start("s"),
            write_line("a"),
            write_line("island"),
            write_line("after")
        ]),
        json!([link("s", "Done", "a"), link("island", "Done", "after")]),
    );
    assert_eq!(
        findings(&builtin(&draft)),
        [
            (
                "unreachable_activity",
                Severity::Warning,
                Some("island"),
                "$.root.activities[2]"
            ),
            (
                "unreachable_activity",
                Severity::Warning,
                Some("after"),
                "$.root.activities[3]"
            ),
        ]
    );
    // Without any marker Elsa starts at the first activity with no inbound connection; a second
    // such activity never runs.
    let two_roots = flowchart(
        json!([write_line("a"), write_line("b"), write_line("c")]),
        json!([link("a", "Done", "c")]),
    );
    assert_eq!(
        findings(&builtin(&two_roots)),
        [(
            "unreachable_activity",
            Severity::Warning,
            Some("b"),
            "$.root.activities[1]"
        )]
    );
}

#[test]
fn every_trigger_is_an_entry() {
    let draft = flowchart(
        json!([
            {"id": "http", "type": "Elsa.HttpEndpoint", "version": 1, "customProperties": {"canStartWorkflow": true}},
            {"id": "timer", "type": "Elsa.Timer", "version": 1, "canStartWorkflow": true},
            write_line("a"),
            write_line("b"),
        ]),
        json!([link("http", "Done", "a"), link("timer", "Done", "b")]),
    );
    assert_eq!(builtin(&draft), []);
}

#[test]
fn start_problems_are_reported() {
    let ghost = definition(json!({
        "id": "F", "type": "Elsa.Flowchart", "start": "ghost",
        "activities": [write_line("a")], "connections": []
    }));
    assert_eq!(
        findings(&builtin(&ghost)),
        [(
            "no_start_activity",
            Severity::Error,
            Some("F"),
            "$.root.start"
        )]
    );
    let cycle = flowchart(
        json!([write_line("a"), write_line("b")]),
        json!([link("a", "Done", "b"), link("b", "Done", "a")]),
    );
    let diagnostics = builtin(&cycle);
    assert_eq!(
        findings(&diagnostics),
        [("no_start_activity", Severity::Warning, Some("F"), "$.root")]
    );
    assert!(diagnostics[0].message.contains("'a'"));
    let explicit = definition(json!({
        "id": "F", "type": "Elsa.Flowchart", "start": "b",
        "activities": [write_line("a"), write_line("b")],
        "connections": [link("a", "Done", "b"), link("b", "Done", "a")]
    }));
    assert_eq!(builtin(&explicit), []);
    assert_eq!(builtin(&flowchart(json!([]), json!([]))), []);
}

#[test]
fn variable_names_clash_within_one_scope_only() {
    let draft = WorkflowDefinition::from_value(json!({
        "variables": [
            {"id": "v1", "name": "Total", "typeName": "Int32"},
            {"id": "v2", "name": "Total", "typeName": "Int32"},
            {"id": "v3", "name": "total", "typeName": "Int32"},
        ],
        "root": {"id": "S", "type": "Elsa.Sequence", "activities": [], "variables": [
            {"id": "v4", "name": "Total", "typeName": "String"},
            {"id": "v5", "name": "Item", "typeName": "String"},
            {"id": "v6", "name": "Item", "typeName": "String"},
        ]}
    }))
    .expect("valid");
    let diagnostics = builtin(&draft);
    assert_eq!(
        findings(&diagnostics),
        [
            (
                "variable_name_clash",
                Severity::Error,
                None,
                "$.variables[1].name"
            ),
            (
                "variable_name_clash",
                Severity::Error,
                Some("S"),
                "$.root.variables[2].name"
            ),
        ]
    );
    assert!(diagnostics[0].message.contains("$.variables[0]"));
}

#[test]
fn malformed_expressions_are_errors_wherever_the_wrapper_sits() {
    let draft = flowchart(
        json!([
            start("s"),
            {"id": "a", "type": "Elsa.WriteLine", "version": 1, "text": {"typeName": "String", "expression": "hi"}},
            {"id": "b", "type": "Elsa.WriteLine", "version": 1, "text": {"typeName": "String", "expression": {"value": "hi"}}},
            {"id": "sw", "type": "Elsa.FlowSwitch", "version": 1, "cases": [
                {"label": "A", "condition": {"typeName": "Boolean", "expression": {"type": 7, "value": true}}}
            ]},
            {"id": "fork", "type": "Elsa.Fork", "version": 1, "branches": [
                {"id": "inner", "type": "Elsa.WriteLine", "text": {"typeName": "String", "expression": {"type": "", "value": "x"}}}
            ]},
        ]),
        json!([
            link("s", "Done", "a"),
            link("a", "Done", "b"),
            link("b", "Done", "sw"),
            link("sw", "A", "fork")
        ]),
    );
    let diagnostics = builtin(&draft);
    assert_eq!(
        findings(&diagnostics),
        [
            (
                "malformed_expression",
                Severity::Error,
                Some("a"),
                "$.root.activities[1].text.expression"
            ),
            (
                "malformed_expression",
                Severity::Error,
                Some("b"),
                "$.root.activities[2].text.expression"
            ),
            (
                "malformed_expression",
                Severity::Error,
                Some("sw"),
                "$.root.activities[3].cases[0].condition.expression"
            ),
            (
                "malformed_expression",
                Severity::Error,
                Some("inner"),
                "$.root.activities[4].branches[0].text.expression"
            ),
        ]
    );
    assert!(diagnostics[1].message.contains("no `type`"));
    let fine = flowchart(
        json!([
            {"id": "a", "type": "Elsa.WriteLine", "text": {"typeName": "String", "expression": {"type": "Object", "value": {"expression": 5}}}},
            {"id": "b", "type": "Elsa.WriteLine", "text": {"typeName": "String", "expression": null}},
            {"id": "c", "type": "Elsa.WriteLine", "text": {"typeName": "String", "memoryReference": {"id": "v"}}},
            {"id": "d", "type": "Elsa.WriteLine", "text": {"typeName": "String"}},
        ]),
        json!([
            link("a", "Done", "b"),
            link("b", "Done", "c"),
            link("c", "Done", "d")
        ]),
    );
    assert_eq!(builtin(&fine), []);
}

#[test]
fn literal_cron_expressions_must_parse() {
    let cron = |expression: Value| {
        flowchart(
            json!([{"id": "c", "type": "Elsa.Cron", "version": 1, "canStartWorkflow": true,
                    "cronExpression": {"typeName": "String", "expression": expression}}]),
            json!([]),
        )
    };
    let diagnostics = builtin(&cron(
        json!({"type": "Literal", "value": "BadCronExpression"}),
    ));
    assert_eq!(
        findings(&diagnostics),
        [(
            "invalid_cron_expression",
            Severity::Error,
            Some("c"),
            "$.root.activities[0].cronExpression.expression.value"
        )]
    );
    assert!(diagnostics[0].message.contains("found 1"));
    assert_eq!(
        findings(&builtin(&cron(
            json!({"type": "Literal", "value": "0 0 25 * * *"})
        ))),
        [(
            "invalid_cron_expression",
            Severity::Error,
            Some("c"),
            "$.root.activities[0].cronExpression.expression.value"
        )]
    );
    assert_eq!(
        findings(&builtin(&cron(
            json!({"type": "Literal", "value": "*/5 * * * *"})
        ))),
        [(
            "invalid_cron_expression",
            Severity::Warning,
            Some("c"),
            "$.root.activities[0].cronExpression.expression.value"
        )]
    );
    for fine in [
        json!({"type": "Literal", "value": "0 */5 * * * *"}),
        json!({"type": "Literal", "value": "@hourly"}),
        json!({"type": "JavaScript", "value": "getSchedule()"}),
    ] {
        assert_eq!(builtin(&cron(fine.clone())), [], "{fine}");
    }
}

#[test]
fn nested_flowcharts_are_checked_on_their_own() {
    let draft = flowchart(
        json!([
            start("s"),
            {"id": "inner", "type": "Elsa.Flowchart", "version": 1,
             "activities": [start("is"), write_line("ia"), write_line("ib"), write_line("lost")],
             "connections": [link("is", "Done", "ia"), link("ia", "Oops", "ib")]},
        ]),
        json!([link("s", "Done", "inner")]),
    );
    assert_eq!(
        findings(&builtin(&draft)),
        [
            (
                "unknown_port",
                Severity::Error,
                Some("ia"),
                "$.root.activities[1].connections[1].source.port"
            ),
            (
                "unreachable_activity",
                Severity::Warning,
                Some("lost"),
                "$.root.activities[1].activities[3]"
            ),
        ]
    );
}

#[test]
fn findings_the_baseline_had_are_warnings_wherever_the_activity_moved() {
    let finding = |path: &str, activity: &str, message: &str| Diagnostic {
        severity: Severity::Error,
        code: DiagnosticCode::UnknownActivityType,
        message: message.to_owned(),
        activity_id: Some(activity.to_owned()),
        path: path.to_owned(),
    };
    let baseline = [finding(
        "$.root.activities[4].type",
        "join",
        "type 'Elsa.Join' is unknown",
    )];
    let mut draft = vec![
        // Moved by an inserted activity: still the same finding.
        finding(
            "$.root.activities[5].type",
            "join",
            "type 'Elsa.Join' is unknown",
        ),
        // Another activity, or another type on the same activity: the change's own.
        finding(
            "$.root.activities[6].type",
            "join2",
            "type 'Elsa.Join' is unknown",
        ),
        finding(
            "$.root.activities[5].type",
            "join",
            "type 'Acme.Join' is unknown",
        ),
    ];
    mark_predating(&mut draft, &baseline, 3);
    assert_eq!(draft[0].severity, Severity::Warning);
    assert_eq!(
        draft[0].message,
        "type 'Elsa.Join' is unknown (already in version 3: it predates this proposal)"
    );
    assert!(draft[1].is_error() && draft[2].is_error());
    assert!(!draft[0].is_error());
}
