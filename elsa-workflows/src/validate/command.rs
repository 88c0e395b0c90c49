//! The command-line validator behind `cargo run -p elsa-workflows --example validate`.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::DraftValidator;
use crate::{ActivityDescriptor, Diagnostic, DiagnosticCode, Severity, WorkflowDefinition};

/// Exit code: no file has an Error.
pub const EXIT_OK: i32 = 0;
/// Exit code: some file has an Error diagnostic.
pub const EXIT_ERRORS: i32 = 1;
/// Exit code: a file (or the catalog) cannot be read as Elsa 3 JSON, or the arguments are wrong.
pub const EXIT_UNREADABLE: i32 = 2;

const USAGE: &str = "usage: validate [--catalog CATALOG.json] FILE...\n\
    Validates Elsa 3 workflow definitions and prints one JSON object per diagnostic per line.\n\
    Exit code 0: no errors; 1: some file has an error; 2: a file cannot be read.";

/// One output line.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    file: &'a str,
    severity: Severity,
    code: DiagnosticCode,
    message: &'a str,
    activity_id: Option<&'a str>,
    path: &'a str,
}

/// Runs the validator over `args` (the arguments after the program name): validates every
/// FILE against the built-in catalog, or the catalog named by `--catalog PATH`, writes one
/// JSON object per diagnostic per line to `stdout` and problems to `stderr`, and returns the
/// exit code ([`EXIT_OK`], [`EXIT_ERRORS`] or [`EXIT_UNREADABLE`]). Files after an unreadable
/// one are still validated; the worst outcome decides the code.
pub fn run<I, A>(args: I, stdout: &mut dyn Write, stderr: &mut dyn Write) -> i32
where
    I: IntoIterator<Item = A>,
    A: Into<OsString>,
{
    let (catalog, files) = match parse_args(args) {
        Ok(Some(parsed)) => parsed,
        Ok(None) => {
            let _ = writeln!(stdout, "{USAGE}");
            return EXIT_OK;
        }
        Err(problem) => {
            let _ = writeln!(stderr, "validate: {problem}\n{USAGE}");
            return EXIT_UNREADABLE;
        }
    };
    let owned;
    let validator = match catalog {
        None => DraftValidator::builtin(),
        Some(path) => match read_catalog(&path) {
            Ok(descriptors) => {
                owned = DraftValidator::new(descriptors);
                &owned
            }
            Err(problem) => {
                let _ = writeln!(stderr, "validate: {problem}");
                return EXIT_UNREADABLE;
            }
        },
    };
    let mut code = EXIT_OK;
    for file in &files {
        let name = file.to_string_lossy();
        let definition = match read_definition(file) {
            Ok(definition) => definition,
            Err(problem) => {
                if writeln!(stderr, "validate: {name}: {problem}").is_err() {
                    return EXIT_UNREADABLE;
                }
                code = EXIT_UNREADABLE;
                continue;
            }
        };
        let diagnostics = validator.validate(&definition);
        if diagnostics.iter().any(Diagnostic::is_error) {
            code = code.max(EXIT_ERRORS);
        }
        for diagnostic in &diagnostics {
            let line = Line {
                file: &name,
                severity: diagnostic.severity,
                code: diagnostic.code,
                message: &diagnostic.message,
                activity_id: diagnostic.activity_id.as_deref(),
                path: &diagnostic.path,
            };
            let written = serde_json::to_string(&line)
                .map_err(std::io::Error::other)
                .and_then(|text| writeln!(stdout, "{text}"));
            if let Err(error) = written {
                let _ = writeln!(stderr, "validate: cannot write the report: {error}");
                return EXIT_UNREADABLE;
            }
        }
    }
    code
}

/// The catalog and files to validate; `None` when help was asked for.
type Parsed = Option<(Option<PathBuf>, Vec<PathBuf>)>;

fn parse_args<I, A>(args: I) -> Result<Parsed, String>
where
    I: IntoIterator<Item = A>,
    A: Into<OsString>,
{
    let mut catalog = None;
    let mut files = Vec::new();
    let mut args = args.into_iter().map(Into::into);
    let mut only_files = false;
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy();
        if only_files {
            files.push(PathBuf::from(arg));
        } else if text == "--" {
            only_files = true;
        } else if text == "--catalog" {
            let path = args.next().ok_or("--catalog needs a file")?;
            catalog = Some(PathBuf::from(path));
        } else if let Some(path) = text.strip_prefix("--catalog=") {
            catalog = Some(PathBuf::from(path));
        } else if text == "-h" || text == "--help" {
            return Ok(None);
        } else if text.starts_with("--") {
            return Err(format!("unknown option {text}"));
        } else {
            files.push(PathBuf::from(arg));
        }
    }
    if files.is_empty() {
        return Err("no FILE given".into());
    }
    Ok(Some((catalog, files)))
}

fn read_definition(path: &Path) -> Result<WorkflowDefinition, String> {
    let bytes = std::fs::read(path).map_err(|error| format!("cannot read the file: {error}"))?;
    WorkflowDefinition::from_slice(&bytes).map_err(|error| {
        format!(
            "not an Elsa 3 workflow definition: {} (at {})",
            error.problem, error.path
        )
    })
}

fn read_catalog(path: &Path) -> Result<Vec<ActivityDescriptor>, String> {
    let name = path.to_string_lossy();
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("{name}: cannot read the catalog: {error}"))?;
    ActivityDescriptor::catalog_from_json_str(&text).map_err(|error| {
        format!(
            "{name}: not an activity catalog: {} (at {})",
            error.problem, error.path
        )
    })
}
