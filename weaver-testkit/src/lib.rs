//! Test helpers shared by every Weaver test suite, kept in one place.
//!
//! The Elsa test data lives in the repository's `testdata/elsa/` (its README and
//! `SOURCES.tsv` say where each file came from). Tests find it through [`fixtures_dir`] and
//! list its folders; they never name fixture files. Nothing here is used at runtime.

pub mod conformance;
pub mod elsa_api;
pub mod mcp;
pub mod model_server;
pub mod obedient;
pub mod oidc;
pub mod otlp;
pub mod process;
pub mod property;
pub mod runs;

use std::path::{Path, PathBuf};

use elsa_ai_abstractions::{AiCaller, Permission};
use elsa_workflows::{InMemoryWorkflowBackend, TenantId};

/// The root of the Elsa fixture folders (`definitions/`, `instances/`, `activities/`).
///
/// `WEAVER_FIXTURES` overrides the default `<workspace>/testdata/elsa`.
///
/// # Panics
///
/// When the folder does not exist: a suite that needs fixtures cannot run without them.
pub fn fixtures_dir() -> PathBuf {
    let dir = fixtures_location();
    assert!(
        dir.is_dir(),
        "Elsa fixtures not found at {} (set WEAVER_FIXTURES)",
        dir.display()
    );
    dir
}

fn fixtures_location() -> PathBuf {
    std::env::var_os("WEAVER_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("testdata/elsa"))
}

/// The workspace root (the folder holding the root `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every file in one fixture folder (`"definitions"`, `"instances"`, `"activities"`), sorted.
pub fn fixture_files(folder: &str) -> Vec<PathBuf> {
    let dir = fixtures_dir().join(folder);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

/// The file names the fixture README lists as not valid Elsa 3 definitions: the rows of the
/// table under its heading "Files that are not valid Elsa 3 definitions".
pub fn fixture_files_declared_invalid() -> Vec<String> {
    let readme = std::fs::read_to_string(fixtures_dir().join("README.md"))
        .expect("the fixture README is readable");
    let mut in_section = false;
    let mut names = Vec::new();
    for line in readme.lines() {
        if line.starts_with("## ") {
            in_section = line.contains("not valid Elsa 3 definitions");
            continue;
        }
        if !in_section {
            continue;
        }
        // Table rows look like: | `file.json` | why |
        if let Some(cell) = line
            .trim()
            .strip_prefix('|')
            .and_then(|rest| rest.split('|').next())
        {
            let cell = cell.trim().trim_matches('`');
            if cell.ends_with(".json") {
                names.push(cell.to_owned());
            }
        }
    }
    assert!(
        !names.is_empty(),
        "the fixture README lists no invalid files"
    );
    names
}

/// An in-memory Elsa backend holding, for each of `tenants`, every readable fixture: the
/// definitions, the instances and the activity catalog (seeded by listing the folders).
///
/// # Panics
///
/// When seeding skips a file the fixture README does not declare invalid.
pub fn fixture_backend(tenants: &[&str]) -> InMemoryWorkflowBackend {
    let backend = InMemoryWorkflowBackend::new();
    let invalid = fixture_files_declared_invalid();
    for tenant in tenants {
        let report = backend
            .seed_from_dir(&TenantId::new(*tenant), fixtures_dir())
            .expect("the fixture folder can be listed");
        for skipped in &report.skipped {
            let name = skipped
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            assert!(invalid.contains(&name), "fixture skipped: {skipped}");
        }
    }
    backend
}

/// A caller in `tenant` holding every built-in permission.
pub fn full_caller(actor: &str, tenant: &str) -> AiCaller {
    AiCaller::new(
        actor,
        tenant,
        [
            Permission::READ_WORKFLOWS,
            Permission::READ_WORKFLOW_INSTANCES,
            Permission::READ_ACTIVITIES,
            Permission::PROPOSE_WORKFLOWS,
            Permission::APPLY_WORKFLOWS,
            Permission::ADMIN_AI,
        ],
    )
}
