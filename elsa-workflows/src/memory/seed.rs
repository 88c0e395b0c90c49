//! Seeding an [`InMemoryWorkflowBackend`] from a folder of Elsa JSON files.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::InMemoryWorkflowBackend;
use crate::{
    ActivityDescriptor, TenantId, WorkflowDefinition, WorkflowError, WorkflowInstance, json,
};

/// What a folder's subfolders hold, when it uses the fixture layout.
const SUBFOLDERS: [(&str, FileKind); 3] = [
    ("definitions", FileKind::Definition),
    ("instances", FileKind::Instance),
    ("activities", FileKind::Catalog),
];

/// Fields only a workflow instance (state, entity or summary row) has at its top level.
const INSTANCE_MARKERS: [&str; 7] = [
    "workflowState",
    "workflowInstanceId",
    "status",
    "subStatus",
    "bookmarks",
    "incidents",
    "activityExecutionContexts",
];

/// What one file is read as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FileKind {
    /// Decided by the document's shape.
    Detect,
    Definition,
    Instance,
    Catalog,
}

/// What [`InMemoryWorkflowBackend::seed_from_dir`] stored and what it could not.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeedReport {
    /// Definition versions stored.
    pub definitions: usize,
    /// Distinct instances stored.
    pub instances: usize,
    /// Activity descriptors added to the tenant's catalog.
    pub descriptors: usize,
    /// Files that were not stored, each with the reason; nothing of them was stored.
    pub skipped: Vec<SkippedFile>,
    /// Files holding an instance that another file of the folder also holds: only the newer
    /// snapshot (by `updatedAt`; the later file on a tie) is kept.
    pub superseded: Vec<SupersededSnapshot>,
}

impl SeedReport {
    /// Whether every file was stored.
    pub fn is_complete(&self) -> bool {
        self.skipped.is_empty()
    }
}

/// A file seeding did not store, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct SkippedFile {
    /// The file.
    pub path: PathBuf,
    /// Why: [`WorkflowError::Parse`] for JSON that is not a readable definition, instance or
    /// catalog (with its JSON path), [`WorkflowError::Conflict`] for a definition version
    /// already stored, [`WorkflowError::Backend`] for a file that could not be read.
    pub error: WorkflowError,
}

impl fmt::Display for SkippedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.error)
    }
}

/// Two files of one folder holding snapshots of the same instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SupersededSnapshot {
    /// The instance id both files hold.
    pub instance_id: String,
    /// The file whose snapshot is stored.
    pub kept: PathBuf,
    /// The file whose older snapshot was not stored.
    pub dropped: PathBuf,
}

/// A file's content once read, before it is stored.
enum Loaded {
    Definition(WorkflowDefinition),
    Instance(WorkflowInstance),
    Catalog(Vec<ActivityDescriptor>),
}

impl InMemoryWorkflowBackend {
    /// Stores every `*.json` file of `dir` for `tenant`, and returns what was stored and what
    /// was not.
    ///
    /// Files directly in `dir` are read by their shape: a JSON array (or an object with
    /// `activityDescriptors` or `items`) is an activity catalog, an object with `root` a
    /// definition, one with instance fields (`workflowState`, `status`, `subStatus`,
    /// `workflowInstanceId`, `bookmarks`, `incidents`, `activityExecutionContexts`) an
    /// instance, anything else a definition. The subfolders `definitions/`, `instances/` and
    /// `activities/` (the layout of Weaver's fixtures), when present, hold files of that kind.
    ///
    /// A definition without `definitionId` is stored under its file stem. An instance held by
    /// two files is stored once (see [`SeedReport::superseded`]). A file that cannot be read,
    /// parsed or stored is listed in [`SeedReport::skipped`] and nothing of it is stored.
    /// Fails only when `dir` (or one of those subfolders) cannot be listed.
    pub fn seed_from_dir(
        &self,
        tenant: &TenantId,
        dir: impl AsRef<Path>,
    ) -> Result<SeedReport, WorkflowError> {
        let dir = dir.as_ref();
        let mut files = json_files(dir, FileKind::Detect)?;
        for (folder, kind) in SUBFOLDERS {
            let sub = dir.join(folder);
            if sub.is_dir() {
                files.extend(json_files(&sub, kind)?);
            }
        }
        let mut report = SeedReport::default();
        let mut seeded: HashMap<String, (PathBuf, Option<DateTime<Utc>>)> = HashMap::new();
        for (path, kind) in files {
            let loaded = match load(&path, kind) {
                Ok(loaded) => loaded,
                Err(error) => {
                    report.skipped.push(SkippedFile { path, error });
                    continue;
                }
            };
            match loaded {
                Loaded::Definition(definition) => {
                    match self.insert_definition(tenant, definition) {
                        Ok(_) => report.definitions += 1,
                        Err(error) => report.skipped.push(SkippedFile { path, error }),
                    }
                }
                Loaded::Catalog(descriptors) => {
                    report.descriptors += descriptors.len();
                    self.add_descriptors(tenant, descriptors);
                }
                Loaded::Instance(instance) => {
                    let id = instance.id().to_owned();
                    let updated = instance.updated_at();
                    match seeded.get(&id) {
                        Some((earlier, earlier_updated)) if *earlier_updated > updated => {
                            report.superseded.push(SupersededSnapshot {
                                instance_id: id,
                                kept: earlier.clone(),
                                dropped: path,
                            });
                        }
                        Some((earlier, _)) => {
                            report.superseded.push(SupersededSnapshot {
                                instance_id: id.clone(),
                                kept: path.clone(),
                                dropped: earlier.clone(),
                            });
                            self.insert_instance(tenant, instance);
                            seeded.insert(id, (path, updated));
                        }
                        None => {
                            self.insert_instance(tenant, instance);
                            report.instances += 1;
                            seeded.insert(id, (path, updated));
                        }
                    }
                }
            }
        }
        Ok(report)
    }
}

/// The `*.json` files directly in `dir`, sorted, each to be read as `kind`.
fn json_files(dir: &Path, kind: FileKind) -> Result<Vec<(PathBuf, FileKind)>, WorkflowError> {
    let cannot_list = |error: std::io::Error| WorkflowError::Backend {
        message: format!("cannot list {}: {error}", dir.display()),
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(cannot_list)? {
        let path = entry.map_err(cannot_list)?.path();
        let is_json = path
            .extension()
            .is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
        if is_json && path.is_file() {
            files.push((path, kind));
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(files)
}

/// Reads and parses one file.
fn load(path: &Path, kind: FileKind) -> Result<Loaded, WorkflowError> {
    let bytes = std::fs::read(path).map_err(|error| WorkflowError::Backend {
        message: format!("cannot read the file: {error}"),
    })?;
    let value = json::parse_bytes(&bytes)?;
    let kind = match kind {
        FileKind::Detect => detect(&value),
        known => known,
    };
    Ok(match kind {
        FileKind::Catalog => Loaded::Catalog(ActivityDescriptor::catalog_from_value(&value)?),
        FileKind::Instance => Loaded::Instance(WorkflowInstance::from_value(value)?),
        FileKind::Definition | FileKind::Detect => {
            let mut definition = WorkflowDefinition::from_value(value)?;
            if definition.definition_id().trim().is_empty()
                && let Some(stem) = path.file_stem()
            {
                definition.set_definition_id(stem.to_string_lossy());
            }
            Loaded::Definition(definition)
        }
    })
}

/// What a document in a mixed folder is, by its shape.
fn detect(value: &Value) -> FileKind {
    let Value::Object(map) = value else {
        return FileKind::Catalog;
    };
    if map.contains_key("root") {
        FileKind::Definition
    } else if INSTANCE_MARKERS.iter().any(|key| map.contains_key(*key)) {
        FileKind::Instance
    } else if map.contains_key("activityDescriptors") || map.contains_key("items") {
        FileKind::Catalog
    } else {
        FileKind::Definition
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        ActivityCatalog, VersionOptions, WorkflowDefinitionStore, WorkflowInstanceStore,
        WorkflowSubStatus,
    };
    use serde_json::json;

    fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, content).expect("write test file");
        path
    }

    #[test]
    fn shapes_are_detected() {
        assert_eq!(detect(&json!([])), FileKind::Catalog);
        assert_eq!(detect(&json!({"items": []})), FileKind::Catalog);
        assert_eq!(detect(&json!({"root": {}})), FileKind::Definition);
        assert_eq!(detect(&json!({"workflowState": {}})), FileKind::Instance);
        assert_eq!(
            detect(&json!({"subStatus": "Finished"})),
            FileKind::Instance
        );
        assert_eq!(detect(&json!({"activities": []})), FileKind::Definition);
    }

    #[tokio::test]
    async fn a_mixed_folder_is_seeded_and_bad_files_are_reported() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        write(
            root,
            "unnamed-draft.json",
            r#"{"name": "Draft", "root": {"type": "Elsa.WriteLine"}}"#,
        );
        write(
            root,
            "a-orders.json",
            "\u{feff}{\"definitionId\": \"orders\", \"version\": 2, \"root\": {\"type\": \"Elsa.Flowchart\", \"activities\": []}}",
        );
        write(
            root,
            "b-orders-duplicate.json",
            r#"{"definitionId": "orders", "version": 2, "root": {"type": "Elsa.Sequence"}}"#,
        );
        write(
            root,
            "run.json",
            r#"{"workflowState": {"id": "r1", "definitionId": "orders", "status": "Running", "subStatus": "Suspended", "updatedAt": "2025-01-01T00:00:00Z"}}"#,
        );
        write(
            root,
            "run-later.json",
            r#"{"id": "r1", "definitionId": "orders", "status": 1, "subStatus": 5, "updatedAt": "2025-01-01T00:05:00Z"}"#,
        );
        write(
            root,
            "catalog.json",
            r#"[{"typeName": "Elsa.WriteLine"}, {"typeName": "Elsa.Delay"}]"#,
        );
        let broken = write(root, "broken.json", r#"{"root": {"type": "A"}} /* no */"#);
        let elsa2 = write(
            root,
            "elsa2.json",
            r#"{"activities": [], "connections": []}"#,
        );
        write(root, "notes.md", "not json, not read");
        std::fs::create_dir(root.join("definitions")).expect("subfolder");
        write(
            &root.join("definitions"),
            "nested.json",
            r#"{"definitionId": "nested", "root": {"type": "Elsa.Sequence"}}"#,
        );

        let backend = InMemoryWorkflowBackend::new();
        let acme = TenantId::new("acme");
        let report = backend.seed_from_dir(&acme, root).expect("seeded");
        assert_eq!(report.definitions, 3, "{report:?}");
        assert_eq!(report.instances, 1);
        assert_eq!(report.descriptors, 2);
        let mut skipped: Vec<_> = report
            .skipped
            .iter()
            .map(|s| {
                s.path
                    .file_name()
                    .expect("name")
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        skipped.sort();
        assert_eq!(
            skipped,
            ["b-orders-duplicate.json", "broken.json", "elsa2.json"]
        );
        for file in &report.skipped {
            match &file.error {
                WorkflowError::Parse(error) if file.path == broken => {
                    assert!(error.problem.contains("not valid JSON"), "{file}");
                }
                WorkflowError::Parse(error) if file.path == elsa2 => {
                    assert_eq!(error.path, "$.root", "{file}");
                }
                WorkflowError::Conflict { .. } => {}
                other => panic!("unexpected skip reason {other}"),
            }
        }
        assert_eq!(report.superseded.len(), 1);
        assert!(report.superseded[0].kept.ends_with("run-later.json"));
        assert!(!report.is_complete());

        let draft =
            WorkflowDefinitionStore::find(&backend, &acme, "unnamed-draft", VersionOptions::Latest)
                .await
                .expect("find")
                .expect("stored under its file stem");
        assert_eq!(draft.name(), Some("Draft"));
        let orders =
            WorkflowDefinitionStore::find(&backend, &acme, "orders", VersionOptions::Latest)
                .await
                .expect("find")
                .expect("stored");
        assert_eq!(orders.root().type_name(), "Elsa.Flowchart");
        assert!(
            WorkflowDefinitionStore::find(&backend, &acme, "nested", VersionOptions::Latest)
                .await
                .expect("find")
                .is_some()
        );
        let run = WorkflowInstanceStore::find(&backend, &acme, "r1")
            .await
            .expect("find")
            .expect("stored");
        assert_eq!(run.sub_status(), WorkflowSubStatus::Faulted);
        assert_eq!(backend.list(&acme).await.expect("catalog").len(), 2);
    }

    #[test]
    fn a_missing_folder_is_an_error_and_undecodable_files_are_skipped() {
        let backend = InMemoryWorkflowBackend::new();
        let acme = TenantId::new("acme");
        let error = backend
            .seed_from_dir(&acme, "/definitely/not/here")
            .expect_err("no folder");
        assert!(matches!(error, WorkflowError::Backend { .. }));

        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("folder.json")).expect("a directory named like JSON");
        std::fs::write(dir.path().join("latin1.json"), b"{\"name\": \"caf\xe9\"}").expect("write");
        let report = backend.seed_from_dir(&acme, dir.path()).expect("seeded");
        assert_eq!(report.skipped.len(), 1, "{report:?}");
        assert!(
            matches!(&report.skipped[0].error, WorkflowError::Parse(e) if e.problem.contains("UTF-8"))
        );
    }
}
