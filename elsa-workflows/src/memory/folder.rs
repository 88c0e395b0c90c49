//! Definitions written back into the folder a tenant's workflows were seeded from.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

use super::InMemoryWorkflowBackend;
use crate::{
    DefinitionVersionRef, TenantId, VersionOptions, WorkflowDefinition, WorkflowDefinitionStore,
    WorkflowDefinitionWriter, WorkflowError,
};

/// The writer of a tenant whose workflows come from a folder: it writes through an
/// [`InMemoryWorkflowBackend`] and saves every version it stores as a JSON file in that
/// folder (in its `definitions/` subfolder when there is one), named
/// `<definitionId>.v<version>.json`, so that
/// [`InMemoryWorkflowBackend::seed_from_dir`] loads it again after a restart.
///
/// A version is reported stored only once its file is durable: written under a temporary
/// name, synced, renamed into place and the folder synced. When the file cannot be written,
/// the in-memory write is undone and the caller gets [`WorkflowError::Backend`]; a stale
/// baseline or a taken id is refused by the backend before any file is touched. Writes are
/// taken one at a time (they are rare: applied proposals), so an undo never reverts another
/// write.
///
/// ```
/// use std::sync::Arc;
/// use elsa_workflows::{
///     FolderDefinitionWriter, InMemoryWorkflowBackend, TenantId, WorkflowDefinition,
///     WorkflowDefinitionWriter,
/// };
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let folder = tempfile::tempdir()?;
/// let acme = TenantId::new("acme");
/// let memory = Arc::new(InMemoryWorkflowBackend::new());
/// let writer = FolderDefinitionWriter::new(memory, folder.path());
/// let draft = WorkflowDefinition::from_json_str(
///     r#"{"definitionId": "greet", "root": {"id": "a", "type": "Elsa.WriteLine"}}"#,
/// )?;
/// writer.create(&acme, draft).await?;
///
/// // A restart seeds the folder again and finds the definition.
/// let restarted = InMemoryWorkflowBackend::new();
/// let report = restarted.seed_from_dir(&acme, folder.path())?;
/// assert_eq!(report.definitions, 1);
/// assert_eq!(restarted.definition_versions(&acme, "greet").len(), 1);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct FolderDefinitionWriter {
    backend: Arc<InMemoryWorkflowBackend>,
    folder: PathBuf,
    /// One write at a time, from the in-memory write to its file (or its undo).
    writing: tokio::sync::Mutex<()>,
}

impl FolderDefinitionWriter {
    /// Writes into `backend` and saves each stored version under `folder`.
    pub fn new(backend: Arc<InMemoryWorkflowBackend>, folder: impl Into<PathBuf>) -> Self {
        Self {
            backend,
            folder: folder.into(),
            writing: tokio::sync::Mutex::new(()),
        }
    }

    /// Runs `write` against the backend, then saves the version it stored; undoes it when
    /// the file cannot be saved.
    async fn save(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        write: impl Future<Output = Result<DefinitionVersionRef, WorkflowError>>,
    ) -> Result<DefinitionVersionRef, WorkflowError> {
        let _one_at_a_time = self.writing.lock().await;
        let before = self.backend.versions_of(tenant, definition_id);
        let stored = write.await?;
        let saved = match self.stored_document(tenant, &stored).await {
            Ok(document) => {
                let dir = self.definitions_dir();
                let stem = file_stem(&stored);
                tokio::task::spawn_blocking(move || write_new_file(&dir, &stem, &document))
                    .await
                    .unwrap_or_else(|panic| Err(std::io::Error::other(panic.to_string())))
                    .map_err(|error| error.to_string())
            }
            Err(error) => Err(error),
        };
        match saved {
            Ok(_) => Ok(stored),
            Err(error) => {
                self.backend.restore_versions(tenant, definition_id, before);
                Err(WorkflowError::Backend {
                    message: format!(
                        "workflow definition '{}' version {} was not saved to {}: {error}",
                        stored.definition_id,
                        stored.version,
                        self.folder.display()
                    ),
                })
            }
        }
    }

    /// The version `stored` refers to, as the JSON its file holds.
    async fn stored_document(
        &self,
        tenant: &TenantId,
        stored: &DefinitionVersionRef,
    ) -> Result<Vec<u8>, String> {
        let definition = self
            .backend
            .find(
                tenant,
                &stored.definition_id,
                VersionOptions::Specific(stored.version),
            )
            .await
            .map_err(|error| error.to_string())?
            .ok_or_else(|| "the stored version is gone".to_owned())?;
        serde_json::to_vec_pretty(&definition).map_err(|error| error.to_string())
    }

    /// Where definition files go: the `definitions/` subfolder when the folder has one (the
    /// layout [`InMemoryWorkflowBackend::seed_from_dir`] reads by kind), else the folder.
    fn definitions_dir(&self) -> PathBuf {
        let sub = self.folder.join("definitions");
        if sub.is_dir() {
            sub
        } else {
            self.folder.clone()
        }
    }
}

#[async_trait]
impl WorkflowDefinitionWriter for FolderDefinitionWriter {
    async fn create(
        &self,
        tenant: &TenantId,
        definition: WorkflowDefinition,
    ) -> Result<DefinitionVersionRef, WorkflowError> {
        let definition_id = definition.definition_id().to_owned();
        self.save(
            tenant,
            &definition_id,
            self.backend.create(tenant, definition),
        )
        .await
    }

    async fn update(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        expected_version: i32,
        definition: WorkflowDefinition,
    ) -> Result<DefinitionVersionRef, WorkflowError> {
        self.save(
            tenant,
            definition_id,
            self.backend
                .update(tenant, definition_id, expected_version, definition),
        )
        .await
    }
}

/// `<definitionId>.v<version>`, with every character that is not a letter, digit, `-` or `_`
/// replaced, so that an id can neither leave the folder nor hide the file.
fn file_stem(stored: &DefinitionVersionRef) -> String {
    let id: String = stored
        .definition_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{id}.v{}", stored.version)
}

/// Writes `bytes` as a new `<stem>.json` in `dir` (`<stem>-2.json` and so on when that name
/// is taken: an existing file is never replaced) and makes both the file and its name
/// durable. Returns the path.
fn write_new_file(dir: &Path, stem: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    // Not `.json`: a crash before the rename leaves nothing the seeding would read.
    let temporary = dir.join(format!(".{stem}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let written = (|| {
        let mut file = std::fs::File::create_new(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(error);
    }
    let path = (1..)
        .map(|n| match n {
            1 => dir.join(format!("{stem}.json")),
            n => dir.join(format!("{stem}-{n}.json")),
        })
        .find(|path| !path.exists())
        .expect("some name is free");
    if let Err(error) = std::fs::rename(&temporary, &path) {
        let _ = std::fs::remove_file(&temporary);
        return Err(error);
    }
    // The rename is durable once the folder itself is synced.
    std::fs::File::open(dir)?.sync_all()?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acme() -> TenantId {
        TenantId::new("acme")
    }

    fn definition(id: &str, description: &str) -> WorkflowDefinition {
        WorkflowDefinition::from_json_str(&format!(
            r#"{{"definitionId": {id:?}, "description": {description:?}, "isPublished": true,
                "root": {{"id": "a", "type": "Elsa.WriteLine"}}, "customField": 7}}"#
        ))
        .unwrap()
    }

    fn json_files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// A folder seeded with version 1 of `greet`, its backend and its writer.
    fn seeded(folder: &Path) -> (Arc<InMemoryWorkflowBackend>, FolderDefinitionWriter) {
        std::fs::write(
            folder.join("greet.json"),
            serde_json::to_vec(&definition("greet", "first")).unwrap(),
        )
        .unwrap();
        let memory = Arc::new(InMemoryWorkflowBackend::new());
        memory.seed_from_dir(&acme(), folder).unwrap();
        let writer = FolderDefinitionWriter::new(memory.clone(), folder);
        (memory, writer)
    }

    #[tokio::test]
    async fn an_update_survives_a_restart_as_the_latest_version() {
        let folder = tempfile::tempdir().unwrap();
        let (_, writer) = seeded(folder.path());
        let stored = writer
            .update(&acme(), "greet", 1, definition("greet", "second"))
            .await
            .unwrap();
        assert_eq!(stored.version, 2);
        assert_eq!(json_files(folder.path()), ["greet.json", "greet.v2.json"]);

        let restarted = InMemoryWorkflowBackend::new();
        let report = restarted.seed_from_dir(&acme(), folder.path()).unwrap();
        assert!(report.is_complete(), "{report:?}");
        let latest = restarted
            .find(&acme(), "greet", VersionOptions::Latest)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(latest.version(), 2);
        assert_eq!(latest.description(), Some("second"));
        assert_eq!(latest.version_id(), Some(stored.version_id.as_str()));
        // Fields Weaver does not model are saved as they were.
        assert_eq!(latest.to_value()["customField"], 7);
        let published = restarted
            .find(&acme(), "greet", VersionOptions::Published)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            published.version(),
            2,
            "only the newest claim to be published"
        );
    }

    #[tokio::test]
    async fn a_creation_goes_into_the_definitions_subfolder_when_there_is_one() {
        let folder = tempfile::tempdir().unwrap();
        let definitions = folder.path().join("definitions");
        std::fs::create_dir(&definitions).unwrap();
        let memory = Arc::new(InMemoryWorkflowBackend::new());
        let writer = FolderDefinitionWriter::new(memory, folder.path());
        writer
            .create(&acme(), definition("../../escape me", "new"))
            .await
            .unwrap();
        assert_eq!(json_files(&definitions), ["______escape_me.v1.json"]);

        let restarted = InMemoryWorkflowBackend::new();
        restarted.seed_from_dir(&acme(), folder.path()).unwrap();
        assert_eq!(
            restarted
                .definition_versions(&acme(), "../../escape me")
                .len(),
            1
        );
    }

    #[tokio::test]
    async fn a_stale_baseline_writes_no_file() {
        let folder = tempfile::tempdir().unwrap();
        let (_, writer) = seeded(folder.path());
        let error = writer
            .update(&acme(), "greet", 7, definition("greet", "stale"))
            .await
            .unwrap_err();
        assert!(matches!(error, WorkflowError::Conflict { .. }), "{error}");
        assert_eq!(json_files(folder.path()), ["greet.json"]);
    }

    #[tokio::test]
    async fn a_version_that_cannot_be_saved_is_undone() {
        let folder = tempfile::tempdir().unwrap();
        let (memory, _) = seeded(folder.path());
        // The folder is gone: nothing can be saved there.
        let writer = FolderDefinitionWriter::new(memory.clone(), folder.path().join("gone"));
        let error = writer
            .update(&acme(), "greet", 1, definition("greet", "lost"))
            .await
            .unwrap_err();
        assert!(matches!(error, WorkflowError::Backend { .. }), "{error}");
        let versions = memory.definition_versions(&acme(), "greet");
        assert_eq!(versions.len(), 1, "the in-memory version was undone");
        assert!(versions[0].is_latest() && versions[0].is_published());

        let error = writer
            .create(&acme(), definition("fresh", "lost"))
            .await
            .unwrap_err();
        assert!(matches!(error, WorkflowError::Backend { .. }), "{error}");
        assert!(memory.definition_versions(&acme(), "fresh").is_empty());
    }

    #[test]
    fn an_existing_file_is_never_replaced() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("greet.v2.json"), b"keep").unwrap();
        let path = write_new_file(folder.path(), "greet.v2", b"{}").unwrap();
        assert_eq!(path, folder.path().join("greet.v2-2.json"));
        assert_eq!(
            std::fs::read(folder.path().join("greet.v2.json")).unwrap(),
            b"keep"
        );
        assert_eq!(
            json_files(folder.path()),
            ["greet.v2-2.json", "greet.v2.json"]
        );
    }
}
