//! Draft validation over every fixture definition, against the fixture catalog and the
//! built-in one.

use std::path::Path;

use elsa_workflows::{
    ActivityDescriptor, Diagnostic, DiagnosticCode, DraftValidator, Severity, WorkflowDefinition,
};
use weaver_testkit::{fixture_files, fixture_files_declared_invalid};

/// The README's "meant to draw diagnostics" files, by the name fragments it gives.
const BAD_CRON: &str = "bad-cron-expression";
const HAND_WRITTEN: &str = "timeout-approval";

fn fixture_validator() -> DraftValidator {
    let files = fixture_files("activities");
    let text = std::fs::read_to_string(&files[0]).expect("readable catalog");
    DraftValidator::new(ActivityDescriptor::catalog_from_json_str(&text).expect("valid catalog"))
}

/// Every readable definition with its file name; the README's unreadable files are checked to
/// be unreadable and left out.
fn readable_definitions() -> Vec<(String, WorkflowDefinition)> {
    let invalid = fixture_files_declared_invalid();
    let mut out = Vec::new();
    for path in fixture_files("definitions") {
        let name = file_name(&path);
        let parsed = WorkflowDefinition::from_slice(&std::fs::read(&path).expect("readable"));
        if invalid.contains(&name) {
            assert!(parsed.is_err(), "{name} should not read");
        } else {
            out.push((
                name,
                parsed.unwrap_or_else(|e| panic!("{}: {e}", path.display())),
            ));
        }
    }
    assert!(out.len() > 20);
    out
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn one<'a>(all: &'a [(String, WorkflowDefinition)], fragment: &str) -> &'a WorkflowDefinition {
    let mut matching = all.iter().filter(|(name, _)| name.contains(fragment));
    let (_, definition) = matching
        .next()
        .unwrap_or_else(|| panic!("no file named *{fragment}*"));
    assert!(
        matching.next().is_none(),
        "several files named *{fragment}*"
    );
    definition
}

#[test]
fn the_bad_cron_file_draws_an_invalid_cron_error() {
    let all = readable_definitions();
    let definition = one(&all, BAD_CRON);
    for validator in [&fixture_validator(), DraftValidator::builtin()] {
        let diagnostics = validator.validate(definition);
        let cron: Vec<&Diagnostic> = diagnostics
            .iter()
            .filter(|d| d.code == DiagnosticCode::InvalidCronExpression)
            .collect();
        assert_eq!(cron.len(), 1, "{diagnostics:?}");
        let cron_activity = definition
            .activities()
            .into_iter()
            .find(|node| node.input("cronExpression").is_some())
            .expect("the file has a cron activity");
        assert_eq!(cron[0].severity, Severity::Error);
        assert_eq!(cron[0].activity_id.as_deref(), cron_activity.id());
        assert_eq!(
            cron[0].path,
            format!(
                "{}.expression.value",
                cron_activity.field_path("cronExpression")
            )
        );
    }
}

#[test]
fn the_hand_written_sample_draws_unknown_types_and_nothing_for_its_comments() {
    let all = readable_definitions();
    let definition = one(&all, HAND_WRITTEN);
    let validator = fixture_validator();
    let diagnostics = validator.validate(definition);
    assert!(!diagnostics.is_empty());
    for diagnostic in &diagnostics {
        assert_eq!(
            diagnostic.code,
            DiagnosticCode::UnknownActivityType,
            "{diagnostic:?}"
        );
        assert_eq!(diagnostic.severity, Severity::Error);
        let node = definition
            .activities()
            .into_iter()
            .find(|n| n.id() == diagnostic.activity_id.as_deref())
            .expect("the diagnostic names an activity");
        assert!(validator.descriptor(node.type_name(), None).is_none());
        assert_eq!(diagnostic.path, node.field_path("type"));
    }
}

/// Against the fixture catalog, the other files draw nothing but unknown types (activities
/// Elsa creates at run time), and warnings only for workflows used as activities.
#[test]
fn other_files_draw_no_structural_findings() {
    let validator = fixture_validator();
    let mut validated = 0;
    for (name, definition) in readable_definitions() {
        if name.contains(BAD_CRON) || name.contains(HAND_WRITTEN) {
            continue;
        }
        for diagnostic in validator.validate(&definition) {
            assert_eq!(
                diagnostic.code,
                DiagnosticCode::UnknownActivityType,
                "{name}: {diagnostic:?}"
            );
            let node = definition
                .activities()
                .into_iter()
                .find(|n| n.id() == diagnostic.activity_id.as_deref())
                .expect("named activity");
            let expected = if node.workflow_definition_id().is_some() {
                Severity::Warning
            } else {
                Severity::Error
            };
            assert_eq!(diagnostic.severity, expected, "{name}: {diagnostic:?}");
        }
        validated += 1;
    }
    assert!(validated > 20);
}

#[test]
fn every_readable_file_validates_against_both_catalogs() {
    let fixture = fixture_validator();
    for (name, definition) in readable_definitions() {
        let mine = DraftValidator::builtin().validate(&definition);
        let theirs = fixture.validate(&definition);
        assert_eq!(
            elsa_workflows::validate::validate(&definition, fixture.catalog()),
            theirs,
            "{name}: the one-off entry point agrees with the indexed validator"
        );
        // The built-in catalog holds everything the fixture catalog does.
        let errors = |d: &[Diagnostic]| d.iter().filter(|d| d.is_error()).count();
        assert!(errors(&mine) <= errors(&theirs), "{name}");
        let json = serde_json::to_value(&mine).expect("serialisable");
        assert!(json.is_array());
    }
}
