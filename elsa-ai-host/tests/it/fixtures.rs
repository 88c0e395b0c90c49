//! Clamping and redaction over real Elsa 3 JSON: every fixture document (definitions,
//! instances, activity catalogs), whatever its shape, clamped to several budgets stays valid
//! JSON within the budget and says what it lost; redacted, it keeps its shape.

use elsa_ai_host::{Redactor, ResultClamp, json_size};
use serde_json::Value;

/// Every fixture file that is JSON at all (some are deliberately broken Elsa documents, but
/// still JSON; the rest are skipped).
fn documents() -> Vec<(String, Value)> {
    let documents: Vec<(String, Value)> = ["definitions", "instances", "activities"]
        .into_iter()
        .flat_map(weaver_testkit::fixture_files)
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            let value = serde_json::from_str(&text).ok()?;
            Some((path.display().to_string(), value))
        })
        .collect();
    assert!(documents.len() > 10, "the fixture folders hold documents");
    documents
}

fn shape(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(shape).collect()),
        _ => Value::Null,
    }
}

#[test]
fn every_fixture_clamps_to_valid_json_within_the_budget_with_a_marker() {
    let mut clamped_any = false;
    for (path, document) in documents() {
        let size = json_size(&document);
        for limit in [256, 1024, 4096, 16 * 1024] {
            let clamp = ResultClamp::new(limit);
            let clamped = clamp.clamp(document.clone());
            let text = serde_json::to_string(&clamped.value).unwrap();
            assert!(
                text.len() <= limit,
                "{path} at {limit}: {} bytes",
                text.len()
            );
            let reparsed: Value = serde_json::from_str(&text).expect("valid JSON");
            assert_eq!(clamped.original_bytes, size);
            if size <= limit {
                assert!(!clamped.truncated, "{path} fits {limit}");
                assert_eq!(clamped.value, document);
            } else {
                clamped_any = true;
                assert!(clamped.truncated, "{path} at {limit}");
                let marker = &reparsed[ResultClamp::MARKER_KEY];
                assert_eq!(marker["originalBytes"], size, "{path} at {limit}");
                assert_eq!(marker["limitBytes"], limit, "{path} at {limit}");
            }
        }
    }
    assert!(clamped_any, "some fixtures exceed the small budgets");
}

#[test]
fn every_fixture_keeps_its_shape_when_redacted() {
    let redactor = Redactor::default();
    for (path, document) in documents() {
        let mut redacted = document.clone();
        redactor.redact_value(&mut redacted);
        assert_eq!(shape(&redacted), shape(&document), "{path}");
        // Redacting again changes nothing.
        let once = redacted.clone();
        assert!(!redactor.redact_value(&mut redacted), "{path}");
        assert_eq!(redacted, once);
    }
}
