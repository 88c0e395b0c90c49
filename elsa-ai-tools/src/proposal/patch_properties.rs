//! Property tests of the patch applier: any list of operations is applied or refused with a
//! `PatchError`, never a panic; an operation that fails leaves the definition exactly as it
//! was; what is applied is still a definition the parser accepts.
//! `WEAVER_PROPTEST_CASES` sets the number of cases (see `weaver_testkit::property`).

use std::sync::LazyLock;

use elsa_workflows::{WorkflowDefinition, samples};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::{PatchError, PatchOperation, apply_patch};

/// The activity and variable names of the samples, and names no sample has.
static IDS: LazyLock<Vec<String>> = LazyLock::new(|| {
    let mut ids: Vec<String> = samples::definitions()
        .iter()
        .flat_map(|d| {
            d.activities()
                .into_iter()
                .filter_map(|a| a.id().map(str::to_owned))
        })
        .collect();
    ids.extend(["New1", "New2", "root", "", " "].map(str::to_owned));
    ids.sort();
    ids.dedup();
    ids
});

fn id() -> impl Strategy<Value = String> {
    prop::sample::select(IDS.clone())
}

fn small_json() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[a-z {}]{0,8}".prop_map(Value::from),
        Just(json!({"type": "Elsa.WriteLine", "id": "Nested"})),
        Just(json!([1, "two"])),
    ]
}

fn maybe<T: std::fmt::Debug + Clone + 'static>(
    strategy: impl Strategy<Value = T> + 'static,
) -> impl Strategy<Value = Option<T>> {
    prop::option::of(strategy)
}

/// One operation as a model would send it (some of them not well-formed).
fn operation_json() -> impl Strategy<Value = Value> {
    let types = prop::sample::select(vec![
        "Elsa.WriteLine",
        "Elsa.Flowchart",
        "Elsa.Sequence",
        "Elsa.If",
        "Elsa.HttpEndpoint",
        "Nope.Type",
        "",
    ]);
    let inputs = prop::sample::select(vec![
        "text",
        "Text",
        "condition",
        "path",
        "id",
        "type",
        "metadata",
        "",
        "activities",
    ]);
    let ports = prop::sample::select(vec!["Done", "In", "True", "False", "Out", ""]);
    let expressions = prop::sample::select(vec!["Literal", "JavaScript", "Variable", "Nope", ""]);
    let connection = (id(), maybe(ports.clone()), id(), maybe(ports), maybe(id()))
        .boxed()
        .prop_map(|(source, source_port, target, target_port, flowchart)| {
            json!({"source": source, "sourcePort": source_port, "target": target,
                   "targetPort": target_port, "flowchart": flowchart})
        })
        .boxed();
    prop_oneof![
        (id(), types, maybe(id()), maybe(0usize..6), prop::collection::btree_map(inputs.clone(), small_json(), 0..3))
            .prop_map(|(id, kind, container, index, inputs)| {
                let inputs: serde_json::Map<String, Value> =
                    inputs.into_iter().map(|(k, v)| (k.to_owned(), json!({"value": v}))).collect();
                json!({"op": "addActivity", "index": index, "activity":
                    {"id": id, "type": kind, "container": container, "inputs": inputs}})
            }),
        id().prop_map(|id| json!({"op": "removeActivity", "activityId": id})),
        connection.clone().prop_map(|mut c| { c["op"] = json!("connect"); c }),
        connection.prop_map(|mut c| { c["op"] = json!("disconnect"); c }),
        (id(), inputs.clone(), small_json(), maybe(expressions), maybe("[A-Za-z]{0,8}"))
            .prop_map(|(id, input, value, expression, type_name)| json!({"op": "setInput",
                "activityId": id, "input": input, "value": value, "expression": expression,
                "typeName": type_name})),
        (id(), inputs).prop_map(|(id, input)| json!({"op": "removeInput", "activityId": id, "input": input})),
        ".{0,12}".prop_map(|name| json!({"op": "setName", "name": name})),
        maybe(".{0,12}").prop_map(|d| json!({"op": "setDescription", "description": d})),
        (id(), "[A-Za-z]{0,8}", small_json()).prop_map(|(name, kind, value)|
            json!({"op": "addVariable", "name": name, "typeName": kind, "value": value})),
        id().prop_map(|name| json!({"op": "removeVariable", "name": name})),
        small_json().prop_map(|value| json!({"op": "nope", "value": value})),
    ]
}

fn operations() -> impl Strategy<Value = Vec<PatchOperation>> {
    prop::collection::vec(operation_json(), 0..12).prop_map(|values| {
        values
            .into_iter()
            .filter_map(|value| serde_json::from_value(value).ok())
            .collect()
    })
}

fn baseline() -> impl Strategy<Value = WorkflowDefinition> {
    prop::sample::select(samples::definitions().to_vec())
}

#[test]
fn an_activity_whose_input_cannot_be_set_is_not_left_behind() {
    let mut definition = samples::definitions()[0].clone();
    let before = definition.clone();
    let operation: PatchOperation = serde_json::from_value(json!({
        "op": "addActivity",
        "activity": {"id": "Log1", "type": "Elsa.WriteLine", "inputs": {"id": {"value": 1}}}
    }))
    .unwrap();
    assert!(
        operation.apply(&mut definition).is_err(),
        "'id' is no input name"
    );
    assert_eq!(definition, before);
    assert!(definition.find_activity("Log1").is_none());
}

proptest! {
    #![proptest_config(weaver_testkit::property::config(3_000))]

    #[test]
    fn a_patch_is_applied_or_refused_and_what_is_applied_parses(
        definition in baseline(),
        operations in operations(),
    ) {
        let before = definition.clone();
        match apply_patch(&definition, &operations) {
            Ok(patched) => {
                let reread = WorkflowDefinition::from_value(patched.to_value());
                prop_assert!(reread.is_ok(), "the patched definition does not parse: {:?}", reread.err());
                prop_assert_eq!(reread.unwrap(), patched);
            }
            Err(PatchError::Empty) => prop_assert!(operations.is_empty()),
            Err(PatchError::TooManyOperations { .. }) => prop_assert!(false, "at most 12 operations"),
            Err(PatchError::Operation { index, op, .. }) => {
                prop_assert!(index < operations.len());
                prop_assert_eq!(op, operations[index].op());
            }
        }
        prop_assert_eq!(definition, before, "the baseline is never changed");
    }

    #[test]
    fn an_operation_that_fails_changes_nothing(
        definition in baseline(),
        operations in operations(),
    ) {
        let mut working = definition;
        for operation in &operations {
            let before = working.clone();
            if let Err(error) = operation.apply(&mut working) {
                prop_assert_eq!(&working, &before, "{} failed ({}) but changed the definition", operation.op(), error);
            }
        }
    }
}
