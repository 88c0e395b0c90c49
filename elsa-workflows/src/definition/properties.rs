//! Property tests of the definition parser: any text or JSON is a definition or a
//! `ParseError`, never a panic, and what it accepts it reads through every accessor without
//! failing; unknown fields anywhere in a definition are written back exactly as read.
//! `WEAVER_PROPTEST_CASES` sets the number of cases (see `weaver_testkit::property`).

use std::sync::LazyLock;

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::validate::validate;
use crate::{GraphDiff, WorkflowDefinition, builtin_catalog, samples};

/// The sample definitions and the Elsa fixtures that parse: real documents to add to.
static BASES: LazyLock<Vec<Value>> = LazyLock::new(|| {
    let mut bases: Vec<Value> = samples::definitions()
        .iter()
        .map(|d| d.to_value())
        .collect();
    let folder = weaver_testkit::fixtures_dir().join("definitions");
    let mut files: Vec<_> = std::fs::read_dir(&folder)
        .expect("the fixture definitions folder")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect();
    files.sort();
    for file in files {
        let bytes = std::fs::read(&file).expect("a readable fixture");
        if let Ok(definition) = WorkflowDefinition::from_slice(&bytes) {
            bases.push(definition.to_value());
        }
    }
    bases
});

/// Any JSON value, a few levels deep, with the keys Elsa documents use among others.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,8}".prop_map(Value::from),
        prop::sample::select(vec![
            "Elsa.Flowchart",
            "Elsa.WriteLine",
            "Elsa.Sequence",
            "Elsa.Start",
            "Literal"
        ])
        .prop_map(Value::from),
    ];
    let keys = prop::sample::select(vec![
        "id",
        "type",
        "root",
        "activities",
        "connections",
        "source",
        "target",
        "sourcePort",
        "targetPort",
        "variables",
        "name",
        "value",
        "expression",
        "typeName",
        "version",
        "definitionId",
        "start",
        "metadata",
        "$values",
        "inputs",
        "outputs",
        "body",
        "text",
        "customProperties",
        "x",
    ]);
    leaf.prop_recursive(5, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((keys.clone(), inner), 0..6).prop_map(|pairs| {
                Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}

/// Reads everything a caller can read of `definition`, as the proposal tools and reviews do.
fn read_all(definition: &WorkflowDefinition) {
    let _ = definition.summary();
    let _ = (
        definition.variables(),
        definition.inputs(),
        definition.outputs(),
    );
    for node in definition.activities() {
        let _ = (
            node.path(),
            node.inputs(),
            node.connections(),
            node.variables(),
        );
        let _ = (
            node.designer(),
            node.child_ids(),
            node.depth(),
            node.start_activity_id(),
        );
    }
    let _ = validate(definition, builtin_catalog());
    let _ = GraphDiff::between(definition, definition);
    let _ = definition.to_json_string();
}

/// Every object in `value`, as JSON pointers.
fn object_pointers(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            out.push(at.clone());
            for (key, item) in map {
                let key = key.replace('~', "~0").replace('/', "~1");
                object_pointers(item, format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                object_pointers(item, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// A real definition with unknown fields added to some of its objects.
fn with_unknown_fields() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(BASES.clone()),
        prop::collection::vec(
            (
                any::<prop::sample::Index>(),
                "zz[A-Za-z0-9_$]{0,8}",
                any_json(),
            ),
            1..5,
        ),
    )
        .prop_map(|(mut document, additions)| {
            let mut pointers = Vec::new();
            object_pointers(&document, String::new(), &mut pointers);
            for (place, key, value) in additions {
                let pointer = place.get(&pointers).clone();
                if let Some(Value::Object(map)) = document.pointer_mut(&pointer) {
                    map.insert(key, value);
                }
            }
            document
        })
}

#[test]
fn a_float_read_from_text_is_written_back_unchanged() {
    let mut document = samples::definitions()[0].to_value();
    document["zzExtra"] = json!(-2.0940817195783257e-153);
    document["root"]["zzPosition"] = json!({"x": 0.1 + 0.2});
    let text = serde_json::to_string(&document).unwrap();
    let read = WorkflowDefinition::from_json_str(&text).unwrap();
    assert_eq!(read.to_value(), document);
    assert_eq!(serde_json::to_string(&read.to_value()).unwrap(), text);
}

#[test]
fn an_insert_past_the_end_of_a_container_without_a_list_changes_nothing() {
    let mut definition = WorkflowDefinition::new_flowchart("d", "D");
    let inner =
        crate::Activity::from_json(json!({"id": "Inner", "type": "Elsa.Flowchart"})).unwrap();
    definition.insert_activity(None, inner, None).unwrap();
    let before = definition.clone();
    let log = crate::Activity::new("Log1", "Elsa.WriteLine");
    let error = definition
        .insert_activity(Some("Inner"), log.clone(), Some(1))
        .unwrap_err();
    assert_eq!(
        error,
        crate::EditError::IndexOutOfRange { index: 1, len: 0 }
    );
    assert_eq!(definition, before, "no empty list was left behind");
    definition
        .insert_activity(Some("Inner"), log, Some(0))
        .unwrap();
    assert!(definition.find_activity("Log1").is_some());
}

proptest! {
    #![proptest_config(weaver_testkit::property::config(2_000))]

    #[test]
    fn any_text_is_a_definition_or_a_parse_error(text in prop_oneof![
        ".{0,64}",
        any_json().prop_map(|value| value.to_string()),
        (any_json(), 0usize..64).prop_map(|(value, cut)| {
            let text = json!({"root": value}).to_string();
            let cut = text.len().saturating_sub(cut);
            text.char_indices().map(|(i, _)| i).take_while(|i| *i <= cut).last().map_or(text.clone(), |i| text[..i].to_owned())
        }),
    ]) {
        if let Ok(definition) = WorkflowDefinition::from_json_str(&text) {
            read_all(&definition);
        }
        let _ = WorkflowDefinition::from_slice(text.as_bytes());
    }

    #[test]
    fn any_json_under_root_is_a_definition_or_a_parse_error(root in any_json(), header in any_json()) {
        let mut document = match header {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        document.insert("root".into(), root);
        if let Ok(definition) = WorkflowDefinition::from_value(Value::Object(document.clone())) {
            read_all(&definition);
            prop_assert_eq!(definition.to_value(), Value::Object(document), "read back as written");
        }
    }

    #[test]
    fn unknown_fields_are_written_back_as_read(document in with_unknown_fields()) {
        let definition = match WorkflowDefinition::from_value(document.clone()) {
            Ok(definition) => definition,
            // An addition may make the document invalid (an activity-shaped value without a
            // string type, say); refusing is allowed, changing it is not.
            Err(_) => return Ok(()),
        };
        prop_assert_eq!(&definition.to_value(), &document);
        let text = definition.to_json_string();
        let again = WorkflowDefinition::from_json_str(&text).expect("its own output parses");
        prop_assert_eq!(again.to_value(), document);
        read_all(&definition);
    }
}
