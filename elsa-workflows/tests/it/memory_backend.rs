//! The in-memory backend over the fixture folder: seeding, tenant isolation, paging, version
//! options, and the writer's compare-and-set under concurrency.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::sync::Arc;

use elsa_workflows::{
    ActivityCatalog, ActivityDescriptor, DefinitionQuery, InMemoryWorkflowBackend, InstanceQuery,
    PageRequest, TenantId, VersionOptions, WorkflowDefinition, WorkflowDefinitionStore,
    WorkflowDefinitionWriter, WorkflowError, WorkflowInstance, WorkflowInstanceStore,
    WorkflowSubStatus,
};
use tokio::sync::Barrier;
use weaver_testkit::{fixture_files, fixture_files_declared_invalid, fixtures_dir};

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The backend as a definition store (it is an instance store too, with the same method names).
fn defs(backend: &InMemoryWorkflowBackend) -> &dyn WorkflowDefinitionStore {
    backend
}

fn seeded(tenant: &TenantId) -> InMemoryWorkflowBackend {
    let backend = InMemoryWorkflowBackend::new();
    backend
        .seed_from_dir(tenant, fixtures_dir())
        .expect("fixture folder seeds");
    backend
}

/// The readable fixture definitions, each with the id it is stored under.
fn readable_definitions() -> Vec<(String, WorkflowDefinition)> {
    let invalid = fixture_files_declared_invalid();
    fixture_files("definitions")
        .into_iter()
        .filter(|path| !invalid.contains(&file_name(path)))
        .map(|path| {
            let definition = WorkflowDefinition::from_slice(&std::fs::read(&path).expect("read"))
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let id = match definition.definition_id() {
                "" => path
                    .file_stem()
                    .expect("stem")
                    .to_string_lossy()
                    .into_owned(),
                id => id.to_owned(),
            };
            (id, definition)
        })
        .collect()
}

#[test]
fn seeding_the_fixture_folder_skips_exactly_the_declared_invalid_files() {
    let acme = TenantId::new("acme");
    let backend = InMemoryWorkflowBackend::new();
    let report = backend
        .seed_from_dir(&acme, fixtures_dir())
        .expect("fixture folder seeds");

    let skipped: BTreeSet<String> = report.skipped.iter().map(|s| file_name(&s.path)).collect();
    let declared: BTreeSet<String> = fixture_files_declared_invalid().into_iter().collect();
    assert_eq!(skipped, declared);
    for file in &report.skipped {
        let WorkflowError::Parse(error) = &file.error else {
            panic!("{file}: not a parse error");
        };
        assert!(error.path.starts_with('$'), "{file}");
        assert!(!error.problem.is_empty(), "{file}");
    }

    let definitions = fixture_files("definitions").len() - declared.len();
    assert_eq!(report.definitions, definitions);
    let instance_ids: HashSet<String> = fixture_files("instances")
        .iter()
        .map(|path| {
            WorkflowInstance::from_slice(&std::fs::read(path).expect("read"))
                .expect("instance")
                .id()
                .to_owned()
        })
        .collect();
    assert_eq!(report.instances, instance_ids.len());
    assert_eq!(
        report.instances + report.superseded.len(),
        fixture_files("instances").len()
    );
    let descriptors: usize = fixture_files("activities")
        .iter()
        .map(|path| {
            ActivityDescriptor::catalog_from_json_str(&std::fs::read_to_string(path).expect("read"))
                .expect("catalog")
                .len()
        })
        .sum();
    assert_eq!(report.descriptors, descriptors);
}

#[tokio::test]
async fn seeded_fixtures_are_served_with_their_version_options() {
    let acme = TenantId::new("acme");
    let backend = seeded(&acme);
    let definitions = readable_definitions();
    for (id, file) in &definitions {
        let latest = defs(&backend)
            .find(&acme, id, VersionOptions::Latest)
            .await
            .expect("find")
            .unwrap_or_else(|| panic!("{id} not stored"));
        assert_eq!(latest.version(), file.version(), "{id}");
        assert_eq!(
            latest.as_json()["root"],
            file.as_json()["root"],
            "{id}: graph changed"
        );
        assert!(latest.is_latest(), "{id}");
        let specific = defs(&backend)
            .find(&acme, id, VersionOptions::Specific(file.version()))
            .await
            .expect("find");
        assert_eq!(specific.as_ref(), Some(&latest), "{id}");
        let published = defs(&backend)
            .find(&acme, id, VersionOptions::Published)
            .await
            .expect("find");
        assert_eq!(published.is_some(), file.is_published(), "{id}");
        assert!(
            defs(&backend)
                .find(&acme, id, VersionOptions::Specific(file.version() + 1))
                .await
                .expect("find")
                .is_none()
        );
    }
    let published_count = definitions.iter().filter(|(_, d)| d.is_published()).count();
    let published = defs(&backend)
        .search(
            &acme,
            &DefinitionQuery {
                version: VersionOptions::Published,
                page: PageRequest::new(0, 500),
                ..DefinitionQuery::default()
            },
        )
        .await
        .expect("search");
    assert_eq!(published.total, published_count);
    assert!(published.items.iter().all(|row| row.is_published));
    assert!(
        published_count < definitions.len(),
        "fixtures hold drafts too"
    );
}

#[tokio::test]
async fn definition_search_pages_through_everything_in_name_order() {
    let acme = TenantId::new("acme");
    let backend = seeded(&acme);
    let total = readable_definitions().len();
    let mut collected = Vec::new();
    let mut offset = 0;
    loop {
        let page = defs(&backend)
            .search(
                &acme,
                &DefinitionQuery {
                    page: PageRequest::new(offset, 7),
                    ..DefinitionQuery::default()
                },
            )
            .await
            .expect("search");
        assert_eq!(page.total, total);
        assert!(page.items.len() <= 7);
        offset += page.items.len();
        let more = page.has_more();
        collected.extend(page.items);
        if !more {
            break;
        }
    }
    assert_eq!(collected.len(), total);
    let ids: HashSet<_> = collected.iter().map(|r| r.definition_id.clone()).collect();
    assert_eq!(ids.len(), total, "no row twice");
    let keys: Vec<_> = collected
        .iter()
        .map(|r| (r.name.is_none(), r.name.as_deref().map(str::to_lowercase)))
        .collect();
    assert!(keys.windows(2).all(|w| w[0] <= w[1]), "ordered by name");

    let hello = defs(&backend)
        .search(
            &acme,
            &DefinitionQuery {
                text: Some("HELLO".into()),
                ..DefinitionQuery::default()
            },
        )
        .await
        .expect("search");
    assert!(hello.total > 0 && hello.total < total);
    for row in hello.items {
        let text = format!(
            "{} {} {}",
            row.definition_id,
            row.name.unwrap_or_default(),
            row.description.unwrap_or_default()
        );
        assert!(text.to_lowercase().contains("hello"), "{text}");
    }
}

#[tokio::test]
async fn seeded_instances_are_searchable() {
    let acme = TenantId::new("acme");
    let backend = seeded(&acme);
    let all = WorkflowInstanceStore::search(&backend, &acme, &InstanceQuery::default())
        .await
        .expect("search");
    assert!(all.total >= 2);
    let created: Vec<_> = all.items.iter().map(WorkflowInstance::created_at).collect();
    assert!(
        created.windows(2).all(|w| match (w[0], w[1]) {
            (Some(a), Some(b)) => a >= b,
            (None, Some(_)) => false,
            _ => true,
        }),
        "newest first, undated last"
    );
    let faulted = WorkflowInstanceStore::search(
        &backend,
        &acme,
        &InstanceQuery {
            sub_status: Some(WorkflowSubStatus::Faulted),
            ..InstanceQuery::default()
        },
    )
    .await
    .expect("search");
    assert!(faulted.total > 0);
    for instance in &faulted.items {
        assert!(instance.is_faulted());
        let found = WorkflowInstanceStore::find(&backend, &acme, instance.id())
            .await
            .expect("find");
        assert_eq!(found.as_ref(), Some(instance));
    }
}

#[tokio::test]
async fn another_tenant_sees_none_of_the_fixtures() {
    let acme = TenantId::new("acme");
    let globex = TenantId::new("globex");
    let backend = seeded(&acme);
    for (id, _) in readable_definitions() {
        for options in [VersionOptions::Latest, VersionOptions::Published] {
            assert!(
                defs(&backend)
                    .find(&globex, &id, options)
                    .await
                    .expect("find")
                    .is_none()
            );
        }
        let error = backend
            .update(&globex, &id, 1, WorkflowDefinition::new_flowchart(&id, "x"))
            .await
            .expect_err("not globex's definition");
        assert_eq!(
            error,
            WorkflowError::NotFound {
                what: format!("workflow definition '{id}'")
            }
        );
    }
    let acme_instances = WorkflowInstanceStore::search(&backend, &acme, &InstanceQuery::default())
        .await
        .expect("search");
    for instance in acme_instances.items {
        assert!(
            WorkflowInstanceStore::find(&backend, &globex, instance.id())
                .await
                .expect("find")
                .is_none()
        );
    }
    let definitions = defs(&backend)
        .search(&globex, &DefinitionQuery::default())
        .await
        .expect("search");
    assert_eq!(definitions.total, 0);
    let instances = WorkflowInstanceStore::search(&backend, &globex, &InstanceQuery::default())
        .await
        .expect("search");
    assert_eq!(instances.total, 0);
    assert!(backend.list(&globex).await.expect("catalog").is_empty());
    assert!(!backend.list(&acme).await.expect("catalog").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_updates_from_one_baseline_let_exactly_one_win() {
    const WRITERS: usize = 50;
    let acme = TenantId::new("acme");
    let backend = Arc::new(InMemoryWorkflowBackend::new());
    let created = backend
        .create(&acme, WorkflowDefinition::new_flowchart("orders", "Orders"))
        .await
        .expect("create");
    let barrier = Arc::new(Barrier::new(WRITERS));
    let tasks: Vec<_> = (0..WRITERS)
        .map(|n| {
            let (backend, barrier, acme) = (backend.clone(), barrier.clone(), acme.clone());
            tokio::spawn(async move {
                let draft = WorkflowDefinition::new_flowchart("orders", format!("Orders by {n}"));
                barrier.wait().await;
                backend
                    .update(&acme, "orders", created.version, draft)
                    .await
            })
        })
        .collect();
    let mut wins = Vec::new();
    let mut conflicts = 0;
    for task in tasks {
        match task.await.expect("task") {
            Ok(stored) => wins.push(stored),
            Err(WorkflowError::Conflict { .. }) => conflicts += 1,
            Err(other) => panic!("unexpected error {other}"),
        }
    }
    assert_eq!(wins.len(), 1, "exactly one update wins");
    assert_eq!(conflicts, WRITERS - 1);
    assert_eq!(wins[0].version, 2);
    let versions = backend.definition_versions(&acme, "orders");
    assert_eq!(versions.len(), 2);
    assert_eq!(versions.iter().filter(|d| d.is_latest()).count(), 1);
    let latest = defs(&backend)
        .find(&acme, "orders", VersionOptions::Latest)
        .await
        .expect("find")
        .expect("exists");
    assert_eq!(latest.version_id(), Some(wins[0].version_id.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_of_one_id_let_exactly_one_win() {
    const WRITERS: usize = 20;
    let acme = TenantId::new("acme");
    let backend = Arc::new(InMemoryWorkflowBackend::new());
    let barrier = Arc::new(Barrier::new(WRITERS));
    let tasks: Vec<_> = (0..WRITERS)
        .map(|_| {
            let (backend, barrier, acme) = (backend.clone(), barrier.clone(), acme.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                backend
                    .create(&acme, WorkflowDefinition::new_flowchart("new", "New"))
                    .await
            })
        })
        .collect();
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.expect("task"));
    }
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1);
    assert!(
        results
            .iter()
            .filter_map(|r| r.as_ref().err())
            .all(|e| matches!(e, WorkflowError::Conflict { .. }))
    );
    assert_eq!(backend.definition_versions(&acme, "new").len(), 1);
}

#[tokio::test]
async fn execution_records_logs_and_incidents_are_kept_per_tenant() {
    use elsa_workflows::{ExecutionRecordStore, IncidentQuery, IncidentStore};
    use weaver_testkit::runs::{FaultedRun, UPLOAD_EXECUTION};

    let acme = TenantId::new("acme");
    let globex = TenantId::new("globex");
    let backend = seeded(&acme);
    FaultedRun::new("run-1", "2024-06-03T10:00:00Z").seed(&backend, &acme);
    FaultedRun::new("run-g", "2024-06-05T10:00:00Z").seed(&backend, &globex);

    let records = backend
        .activity_executions(&acme, "run-1")
        .await
        .expect("records");
    assert_eq!(records.len(), 4);
    assert_eq!(records[3].id.as_deref(), Some(UPLOAD_EXECUTION));
    assert!(
        backend
            .activity_executions(&acme, "run-g")
            .await
            .unwrap()
            .is_empty(),
        "globex's run has no records for acme"
    );
    let log = backend
        .execution_log(&acme, "run-1", PageRequest::new(5, 10))
        .await
        .expect("log");
    assert_eq!((log.total, log.items.len()), (7, 2));
    assert_eq!(log.items[1].event_name.as_deref(), Some("Faulted"));
    assert_eq!(
        backend
            .execution_log(&globex, "run-1", PageRequest::new(0, 10))
            .await
            .unwrap()
            .total,
        0
    );

    let incidents = IncidentStore::search(&backend, &acme, &IncidentQuery::default())
        .await
        .expect("incidents");
    let ids: Vec<&str> = incidents
        .incidents
        .items
        .iter()
        .map(|i| i.instance_id.as_str())
        .collect();
    assert!(ids.contains(&"run-1"), "{ids:?}");
    let times: Vec<_> = incidents
        .incidents
        .items
        .iter()
        .map(|i| i.incident.timestamp)
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {times:?}"
    );
    assert!(!ids.contains(&"run-g"));
    let one = IncidentStore::search(
        &backend,
        &acme,
        &IncidentQuery {
            page: PageRequest::new(1, 1),
            ..IncidentQuery::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(one.incidents.total, ids.len());
    assert_eq!(one.incidents.items[0].instance_id, ids[1]);

    // An instance whose document carries Elsa's records lends them when none were stored.
    let embedded = WorkflowInstance::from_value(serde_json::json!({
        "id": "embedded", "status": "Finished", "subStatus": "Finished",
        "activityExecutionRecords": [{"id": "r1", "activityId": "A", "activityState": {"Text": "hi"}}]
    }))
    .unwrap();
    backend.insert_instance(&acme, embedded);
    let lent = backend
        .activity_executions(&acme, "embedded")
        .await
        .unwrap();
    assert_eq!(lent[0].inputs["Text"], "hi");
}
