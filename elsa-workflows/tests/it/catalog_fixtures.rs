//! The descriptor model against the fixture catalog, and the built-in catalog against the
//! fixture catalog and the activity types the fixture definitions use.

use std::collections::BTreeSet;

use elsa_workflows::{
    ActivityDescriptor, InputDescriptor, OutputDescriptor, WorkflowDefinition, builtin_catalog,
    builtin_descriptor,
};
use weaver_testkit::fixture_files;

fn fixture_catalogs() -> Vec<Vec<ActivityDescriptor>> {
    let files = fixture_files("activities");
    assert!(!files.is_empty(), "no fixture catalog");
    files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).expect("readable");
            ActivityDescriptor::catalog_from_json_str(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .collect()
}

fn camel(name: &str) -> String {
    let mut chars = name.chars();
    chars
        .next()
        .map(|first| first.to_lowercase().chain(chars).collect())
        .unwrap_or_default()
}

#[test]
fn fixture_catalogs_read_with_case_insensitive_input_lookup() {
    for catalog in fixture_catalogs() {
        assert!(catalog.len() > 10);
        for descriptor in &catalog {
            assert!(!descriptor.type_name.is_empty());
            assert!(!descriptor.outcomes.is_empty(), "{}", descriptor.type_name);
            for input in &descriptor.inputs {
                let found = descriptor.input(&camel(&input.name));
                assert_eq!(
                    found,
                    Some(input),
                    "{} {}",
                    descriptor.type_name,
                    input.name
                );
            }
            // Notes about input-dependent outcomes are read, not dropped.
            if descriptor.type_name.ends_with("FlowSwitch") {
                assert!(descriptor.has_dynamic_outcomes());
            }
        }
        let text = serde_json::to_string(&catalog).expect("serialise");
        let again = ActivityDescriptor::catalog_from_json_str(&text).expect("read back");
        assert_eq!(again, catalog, "the model survives a round trip");
    }
}

/// Differences between the built-in catalog and the fixture catalog that are deliberate: facts
/// from Elsa's sources that the fixture's generator did not record.
fn deliberate_difference(type_name: &str) -> Option<&'static str> {
    match type_name {
        // `Fork.Branches` is an `ICollection<IActivity>` port; the generator only listed single
        // `IActivity` properties.
        "Elsa.Fork" => Some("Branches port added"),
        // The script activities take `PossibleOutcomes` (editor hint `DynamicOutcomes`): the
        // script chooses among them, so their outcomes depend on input.
        "Elsa.RunJavaScript" | "Elsa.RunCSharp" | "Elsa.RunPython" => {
            Some("dynamic outcomes noted")
        }
        _ => None,
    }
}

/// An activity's inputs without their description sentences: the built-in catalog words its
/// descriptions itself, so only the facts (name, type, label, flags, category, editor) are
/// compared with the fixture catalog.
fn input_facts(inputs: &[InputDescriptor]) -> Vec<InputDescriptor> {
    inputs
        .iter()
        .map(|input| InputDescriptor {
            description: None,
            ..input.clone()
        })
        .collect()
}

/// An activity's outputs without their description sentences (see [`input_facts`]).
fn output_facts(outputs: &[OutputDescriptor]) -> Vec<OutputDescriptor> {
    outputs
        .iter()
        .map(|output| OutputDescriptor {
            description: None,
            ..output.clone()
        })
        .collect()
}

/// Compares facts only (kind, outcomes, flags, version, names, labels, inputs, outputs, ports);
/// description text is deliberately left out.
#[test]
fn the_builtin_catalog_agrees_with_the_fixture_catalog() {
    for catalog in fixture_catalogs() {
        for expected in &catalog {
            let builtin = builtin_descriptor(&expected.type_name)
                .unwrap_or_else(|| panic!("{} is missing", expected.type_name));
            assert_eq!(builtin.kind, expected.kind, "{}", expected.type_name);
            assert_eq!(
                builtin.outcomes, expected.outcomes,
                "{}",
                expected.type_name
            );
            assert_eq!(
                builtin.is_container, expected.is_container,
                "{}",
                expected.type_name
            );
            assert_eq!(builtin.version, expected.version, "{}", expected.type_name);
            assert_eq!(
                builtin.namespace, expected.namespace,
                "{}",
                expected.type_name
            );
            assert_eq!(builtin.name, expected.name, "{}", expected.type_name);
            assert_eq!(
                builtin.category, expected.category,
                "{}",
                expected.type_name
            );
            assert_eq!(
                builtin.display_name, expected.display_name,
                "{}",
                expected.type_name
            );
            assert_eq!(
                input_facts(&builtin.inputs),
                input_facts(&expected.inputs),
                "{}",
                expected.type_name
            );
            assert_eq!(
                output_facts(&builtin.outputs),
                output_facts(&expected.outputs),
                "{}",
                expected.type_name
            );
            if deliberate_difference(&expected.type_name).is_none() {
                assert_eq!(builtin.ports, expected.ports, "{}", expected.type_name);
                assert_eq!(
                    builtin.dynamic_outcomes, expected.dynamic_outcomes,
                    "{}",
                    expected.type_name
                );
            } else {
                for port in &expected.ports {
                    assert!(builtin.port(&port.name).is_some(), "{}", expected.type_name);
                }
            }
        }
    }
}

/// Activity types the fixture definitions use that no static catalog can hold, each with why.
fn not_a_builtin_activity(
    type_name: &str,
    activity: &serde_json::Map<String, serde_json::Value>,
) -> Option<&'static str> {
    if activity.contains_key("workflowDefinitionId") {
        return Some("a workflow used as an activity: its type comes from another definition");
    }
    if type_name.starts_with("Elsa.Agents.") {
        return Some("an agent activity: Elsa's agent provider creates these at run time");
    }
    match type_name {
        "Custom.WaitForApproval" => Some("a placeholder in a hand-written documentation sample"),
        // Elsa 3's fan-in is Elsa.FlowJoin; the docs' fan-out sample names a type Elsa lacks.
        "Elsa.Join" => Some("a type a hand-written documentation sample names but Elsa lacks"),
        "Demo.Reqres.CreateUser" => Some("made by the sample's own dynamic activity provider"),
        _ => None,
    }
}

#[test]
fn every_activity_type_the_fixtures_use_is_builtin_or_a_listed_exception() {
    let mut checked = BTreeSet::new();
    let mut excepted = BTreeSet::new();
    for path in fixture_files("definitions") {
        let Ok(definition) =
            WorkflowDefinition::from_slice(&std::fs::read(&path).expect("readable"))
        else {
            continue; // the README's unreadable files; the reader's own tests cover them
        };
        for node in definition.activities() {
            let type_name = node.type_name();
            if builtin_descriptor(type_name).is_some() {
                checked.insert(type_name.to_owned());
            } else if let Some(reason) = not_a_builtin_activity(type_name, node.json()) {
                excepted.insert(format!("{type_name}: {reason}"));
            } else {
                panic!(
                    "{}: {type_name} is not in the built-in catalog",
                    path.display()
                );
            }
        }
    }
    assert!(checked.len() > 20, "{checked:?}");
    assert!(checked.contains("Elsa.Flowchart") && checked.contains("Elsa.Cron"));
    assert!(!excepted.is_empty());
    assert!(builtin_catalog().len() >= checked.len());
}
