//! Every file in the fixture `definitions/` folder either reads and writes back the same JSON
//! (key order included), or is one of the files the fixture README declares invalid and is
//! rejected with a typed error naming the problem and its JSON path.

use std::path::Path;

use elsa_workflows::{ParseError, WorkflowDefinition};
use serde_json::Value;
use weaver_testkit::{fixture_files, fixture_files_declared_invalid};

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The reasons the README gives for invalid files, as the reader reports them: the path the
/// problem is at and a phrase of its description.
const DECLARED_PROBLEMS: [(&str, &str); 2] = [("$.root", "Elsa 2 format"), ("$", "not valid JSON")];

#[test]
fn every_fixture_definition_round_trips_or_is_a_declared_invalid_file() {
    let invalid = fixture_files_declared_invalid();
    let files = fixture_files("definitions");
    assert!(files.len() > invalid.len());
    let mut rejected: Vec<(String, ParseError)> = Vec::new();
    for path in &files {
        let name = file_name(path);
        let bytes = std::fs::read(path).expect("readable fixture");
        match WorkflowDefinition::from_slice(&bytes) {
            Ok(definition) => {
                assert!(
                    !invalid.contains(&name),
                    "{name} is declared invalid but was read"
                );
                let text = std::str::from_utf8(&bytes).expect("UTF-8");
                let original: Value =
                    serde_json::from_str(text.trim_start_matches('\u{feff}')).expect("JSON");
                let written = serde_json::to_value(&definition).expect("serialise");
                assert_eq!(written, original, "{name}: JSON changed");
                assert_eq!(
                    serde_json::to_string(&definition).expect("serialise"),
                    serde_json::to_string(&original).expect("serialise"),
                    "{name}: key order changed"
                );
                let reread = WorkflowDefinition::from_json_str(&definition.to_json_string())
                    .expect("reread");
                assert_eq!(reread, definition, "{name}");
            }
            Err(error) => {
                assert!(
                    invalid.contains(&name),
                    "{name} is not declared invalid but was rejected: {error}"
                );
                rejected.push((name, error));
            }
        }
    }
    assert_eq!(
        rejected.len(),
        invalid.len(),
        "every declared file is rejected"
    );
    for (name, error) in &rejected {
        assert!(
            DECLARED_PROBLEMS
                .iter()
                .any(|(path, phrase)| error.path == *path && error.problem.contains(phrase)),
            "{name}: unexpected error {error}"
        );
    }
    for (path, phrase) in DECLARED_PROBLEMS {
        assert!(
            rejected
                .iter()
                .any(|(_, e)| e.path == path && e.problem.contains(phrase)),
            "no declared file is rejected for '{phrase}'"
        );
    }
}
