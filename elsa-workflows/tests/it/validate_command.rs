//! The command-line validator: the library entry point with captured output, and the built
//! example as a real process.

use std::path::{Path, PathBuf};
use std::process::Command;

use elsa_workflows::validate::{EXIT_ERRORS, EXIT_OK, EXIT_UNREADABLE, run};
use serde_json::{Value, json};
use weaver_testkit::{fixture_files, fixture_files_declared_invalid};

struct Outcome {
    code: i32,
    lines: Vec<Value>,
    stderr: String,
}

fn run_with(args: &[&Path]) -> Outcome {
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let code = run(args.iter().map(|p| p.as_os_str()), &mut stdout, &mut stderr);
    let lines = String::from_utf8(stdout)
        .expect("UTF-8 output")
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect();
    Outcome {
        code,
        lines,
        stderr: String::from_utf8(stderr).expect("UTF-8 errors"),
    }
}

fn write(dir: &Path, name: &str, content: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).expect("writable temp file");
    path
}

fn valid_json() -> Value {
    json!({"definitionId": "ok", "root": {"id": "F", "type": "Elsa.Flowchart", "activities": [
        {"id": "s", "type": "Elsa.Start", "version": 1},
        {"id": "a", "type": "Elsa.WriteLine", "version": 1}
    ], "connections": [{"source": {"activity": "s", "port": "Done"}, "target": {"activity": "a", "port": "In"}}]}})
}

fn with_error_json() -> Value {
    json!({"definitionId": "bad", "root": {"id": "F", "type": "Elsa.Flowchart", "activities": [
        {"id": "s", "type": "Elsa.Start", "version": 1},
        {"id": "a", "type": "Acme.Unknown", "version": 1}
    ], "connections": [{"source": {"activity": "s", "port": "Done"}, "target": {"activity": "a", "port": "In"}}]}})
}

#[test]
fn a_clean_file_exits_zero_silently() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ok = write(dir.path(), "ok.json", valid_json().to_string().as_bytes());
    let outcome = run_with(&[&ok]);
    assert_eq!(outcome.code, EXIT_OK);
    assert!(outcome.lines.is_empty());
    assert!(outcome.stderr.is_empty());
}

#[test]
fn errors_print_one_object_per_diagnostic_and_exit_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ok = write(dir.path(), "ok.json", valid_json().to_string().as_bytes());
    let bad = write(
        dir.path(),
        "bad.json",
        with_error_json().to_string().as_bytes(),
    );
    let outcome = run_with(&[&ok, &bad]);
    assert_eq!(outcome.code, EXIT_ERRORS);
    assert_eq!(
        outcome.lines,
        [json!({
            "file": bad.to_string_lossy(),
            "severity": "Error",
            "code": "unknown_activity_type",
            "message": "unknown activity type 'Acme.Unknown'",
            "activityId": "a",
            "path": "$.root.activities[1].type",
        })]
    );
}

#[test]
fn warnings_alone_exit_zero() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut value = valid_json();
    value["root"]["activities"][1]["version"] = json!(9);
    let file = write(dir.path(), "old.json", value.to_string().as_bytes());
    let outcome = run_with(&[&file]);
    assert_eq!(outcome.code, EXIT_OK);
    assert_eq!(outcome.lines.len(), 1);
    assert_eq!(outcome.lines[0]["severity"], "Warning");
    assert_eq!(outcome.lines[0]["code"], "unknown_activity_version");
}

#[test]
fn unreadable_files_exit_two_naming_file_problem_and_path_and_the_rest_is_still_checked() {
    let dir = tempfile::tempdir().expect("temp dir");
    let broken = write(
        dir.path(),
        "broken.json",
        br#"{"root": {"type": "Elsa.Flowchart", "activities": [{"id": 1}]}}"#,
    );
    let bad = write(
        dir.path(),
        "bad.json",
        with_error_json().to_string().as_bytes(),
    );
    let missing = dir.path().join("missing.json");
    let outcome = run_with(&[&broken, &bad, &missing]);
    assert_eq!(outcome.code, EXIT_UNREADABLE);
    assert_eq!(
        outcome.lines.len(),
        1,
        "the readable file is still reported"
    );
    let broken_line = outcome
        .stderr
        .lines()
        .find(|l| l.contains("broken.json"))
        .expect("names the file");
    assert!(
        broken_line.contains("$.root.activities[0]"),
        "{broken_line}"
    );
    assert!(
        broken_line.contains("not an Elsa 3 workflow definition"),
        "{broken_line}"
    );
    assert!(
        outcome
            .stderr
            .contains("missing.json: cannot read the file")
    );
}

#[test]
fn whatever_a_file_holds_the_validator_does_not_panic() {
    let dir = tempfile::tempdir().expect("temp dir");
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let wide_deep = format!(
        r#"{{"root": {{"type": "Elsa.Flowchart", "activities": [{}]}}}}"#,
        (0..200)
            .map(|i| format!(
                r#"{{"id": "a{i}", "type": "X", "p": {}1{}}}"#,
                "[".repeat(100),
                "]".repeat(100)
            ))
            .collect::<Vec<_>>()
            .join(",")
    );
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty.json", Vec::new()),
        ("binary.json", vec![0xff, 0xfe, 0x00, 0x41]),
        ("bom.json", b"\xEF\xBB\xBF".to_vec()),
        ("number.json", b"42".to_vec()),
        ("deep.json", deep.into_bytes()),
        ("wide.json", wide_deep.into_bytes()),
        ("nulls.json", br#"{"root": {"type": "Elsa.Flowchart", "activities": null, "connections": null, "start": null}}"#.to_vec()),
        ("self.json", br#"{"root": {"id": "F", "type": "Elsa.Flowchart", "start": "F", "activities": [{"id": "F", "type": "Elsa.Flowchart", "activities": []}], "connections": [{"source": "F", "target": "F", "sourcePort": ""}]}}"#.to_vec()),
    ];
    for (name, content) in cases {
        let file = write(dir.path(), name, &content);
        let outcome = run_with(&[&file]);
        assert!(
            [EXIT_OK, EXIT_ERRORS, EXIT_UNREADABLE].contains(&outcome.code),
            "{name}: {}",
            outcome.code
        );
    }
}

#[test]
fn a_catalog_file_replaces_the_builtin_catalog() {
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = write(
        dir.path(),
        "catalog.json",
        json!({"items": [
            {"typeName": "Elsa.Flowchart", "isContainer": true},
            {"typeName": "Elsa.Start"},
            {"typeName": "Acme.Unknown", "ports": [{"name": "Done", "type": "Flow"}]}
        ]})
        .to_string()
        .as_bytes(),
    );
    let bad = write(
        dir.path(),
        "bad.json",
        with_error_json().to_string().as_bytes(),
    );
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let args = ["--catalog".as_ref(), catalog.as_os_str(), bad.as_os_str()];
    assert_eq!(
        run(args, &mut stdout, &mut stderr),
        EXIT_OK,
        "{}",
        String::from_utf8_lossy(&stderr)
    );
    assert!(stdout.is_empty());

    let broken = write(
        dir.path(),
        "broken-catalog.json",
        br#"[{"typeName": "A", "inputs": [{"name": 3}]}]"#,
    );
    let mut stderr = Vec::new();
    let code = run(
        [
            format!("--catalog={}", broken.display()),
            bad.display().to_string(),
        ],
        &mut Vec::new(),
        &mut stderr,
    );
    assert_eq!(code, EXIT_UNREADABLE);
    let stderr = String::from_utf8(stderr).expect("UTF-8");
    assert!(
        stderr.contains("broken-catalog.json") && stderr.contains("$[0].inputs[0].name"),
        "{stderr}"
    );
}

#[test]
fn usage_mistakes_exit_two_and_help_exits_zero() {
    for args in [vec![], vec!["--catalog"], vec!["--frobnicate", "x.json"]] {
        let mut stderr = Vec::new();
        assert_eq!(
            run(args.clone(), &mut Vec::new(), &mut stderr),
            EXIT_UNREADABLE,
            "{args:?}"
        );
        assert!(String::from_utf8_lossy(&stderr).contains("usage:"));
    }
    let mut stdout = Vec::new();
    assert_eq!(run(["--help"], &mut stdout, &mut Vec::new()), EXIT_OK);
    assert!(String::from_utf8_lossy(&stdout).contains("usage:"));
}

#[test]
fn the_fixture_folder_reports_the_bad_cron_file_and_the_unreadable_files() {
    let files = fixture_files("definitions");
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let outcome = run_with(&paths);
    assert_eq!(outcome.code, EXIT_UNREADABLE);
    for invalid in fixture_files_declared_invalid() {
        assert!(outcome.stderr.contains(&invalid), "{invalid} is reported");
    }
    let cron: Vec<&Value> = outcome
        .lines
        .iter()
        .filter(|line| line["code"] == "invalid_cron_expression")
        .collect();
    assert_eq!(cron.len(), 1);
    assert!(
        cron[0]["file"]
            .as_str()
            .is_some_and(|f| f.contains("bad-cron-expression"))
    );
    assert_eq!(cron[0]["severity"], "Error");
}

/// The example binary that `cargo test` builds next to the test binaries
/// (`target/<profile>/examples/validate`); built on demand when only this test was compiled.
fn example_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps");
    let binary = profile_dir
        .join("examples")
        .join(format!("validate{}", std::env::consts::EXE_SUFFIX));
    if !binary.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build.args([
            "build",
            "-q",
            "-p",
            "elsa-workflows",
            "--example",
            "validate",
        ]);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "building the example failed");
    }
    assert!(binary.is_file(), "{} exists", binary.display());
    binary
}

#[test]
fn the_example_binary_exits_with_the_documented_codes() {
    let binary = example_binary();
    let dir = tempfile::tempdir().expect("temp dir");
    let ok = write(dir.path(), "ok.json", valid_json().to_string().as_bytes());
    let bad = write(
        dir.path(),
        "bad.json",
        with_error_json().to_string().as_bytes(),
    );
    let broken = write(dir.path(), "broken.json", b"{\"root\": ");

    let output = Command::new(&binary).arg(&ok).output().expect("runs");
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stdout.is_empty());

    let output = Command::new(&binary)
        .arg(&ok)
        .arg(&bad)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(1));
    let line: Value = serde_json::from_slice(&output.stdout).expect("one JSON line");
    assert_eq!(line["code"], "unknown_activity_type");
    assert_eq!(line["activityId"], "a");

    let output = Command::new(&binary)
        .arg(&broken)
        .arg(&bad)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("broken.json") && stderr.contains("not valid JSON"),
        "{stderr}"
    );
}
