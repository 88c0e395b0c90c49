//! Sample Elsa 3 workflows shipped with the crate, so that a fresh checkout (and the `weaver`
//! server) has something to show without any external data.
//!
//! Three workflows, written for Weaver, using only activity types Elsa 3 has:
//!
//! - `sample-http-hello-world`: a flowchart answering `GET /workflows/hello-world`;
//! - `sample-order-approval`: a flowchart that receives an order over HTTP and decides, by the
//!   order total, whether a manager must approve it (a `RunTask`) before the customer is
//!   emailed. Version 1 is published; version 2, the latest, is a draft with a lower limit;
//! - `sample-inventory-sync`: a sequence started every hour by a timer that fetches stock
//!   levels over HTTP.
//!
//! And three runs of them: a finished order (as Elsa's instance API returns it, the entity
//! wrapping its state), an order waiting for approval on a bookmark, and an inventory sync
//! that faulted because the inventory host could not be resolved (with its incident and the
//! faulted execution).

use std::path::PathBuf;
use std::sync::LazyLock;

use crate::{
    InMemoryWorkflowBackend, SeedReport, SkippedFile, TenantId, WorkflowDefinition,
    WorkflowInstance, builtin_catalog,
};

/// The sample definitions: (file under `samples/`, JSON).
const DEFINITION_FILES: [(&str, &str); 4] = [
    (
        "definitions/http-hello-world.json",
        include_str!("../samples/definitions/http-hello-world.json"),
    ),
    (
        "definitions/order-approval.v1.json",
        include_str!("../samples/definitions/order-approval.v1.json"),
    ),
    (
        "definitions/order-approval.v2.json",
        include_str!("../samples/definitions/order-approval.v2.json"),
    ),
    (
        "definitions/inventory-sync.json",
        include_str!("../samples/definitions/inventory-sync.json"),
    ),
];

/// The sample instances: (file under `samples/`, JSON).
const INSTANCE_FILES: [(&str, &str); 3] = [
    (
        "instances/order-approval.finished.json",
        include_str!("../samples/instances/order-approval.finished.json"),
    ),
    (
        "instances/order-approval.suspended.json",
        include_str!("../samples/instances/order-approval.suspended.json"),
    ),
    (
        "instances/inventory-sync.faulted.json",
        include_str!("../samples/instances/inventory-sync.faulted.json"),
    ),
];

// The files are part of the crate and the unit tests below read every one of them: parsing
// them cannot fail at run time.
static DEFINITIONS: LazyLock<Vec<WorkflowDefinition>> = LazyLock::new(|| {
    DEFINITION_FILES
        .iter()
        .map(|(file, text)| {
            WorkflowDefinition::from_json_str(text)
                .unwrap_or_else(|error| panic!("samples/{file} is a valid definition: {error}"))
        })
        .collect()
});

static INSTANCES: LazyLock<Vec<WorkflowInstance>> = LazyLock::new(|| {
    INSTANCE_FILES
        .iter()
        .map(|(file, text)| {
            WorkflowInstance::from_json_str(text)
                .unwrap_or_else(|error| panic!("samples/{file} is a valid instance: {error}"))
        })
        .collect()
});

/// Every sample definition version, oldest version of a definition first.
pub fn definitions() -> &'static [WorkflowDefinition] {
    &DEFINITIONS
}

/// Every sample instance.
pub fn instances() -> &'static [WorkflowInstance] {
    &INSTANCES
}

/// Stores the samples for `tenant`: every definition version and instance, and Elsa's built-in
/// activity catalog when the tenant has no catalog yet.
///
/// A sample definition version the tenant already has is not overwritten: it is reported in
/// [`SeedReport::skipped`] (under its path in the crate's `samples/` folder) with a conflict.
/// Sample instances replace instances with the same id.
pub fn seed(backend: &InMemoryWorkflowBackend, tenant: &TenantId) -> SeedReport {
    let mut report = SeedReport::default();
    for ((file, _), definition) in DEFINITION_FILES.iter().zip(definitions()) {
        match backend.insert_definition(tenant, definition.clone()) {
            Ok(_) => report.definitions += 1,
            Err(error) => report.skipped.push(SkippedFile {
                path: PathBuf::from("samples").join(file),
                error,
            }),
        }
    }
    for instance in instances() {
        backend.insert_instance(tenant, instance.clone());
        report.instances += 1;
    }
    if backend.set_catalog_if_empty(tenant, builtin_catalog()) {
        report.descriptors = builtin_catalog().len();
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        ActivityCatalog, DefinitionQuery, DraftValidator, InstanceQuery, VersionOptions,
        WorkflowDefinitionStore, WorkflowError, WorkflowInstanceStore, WorkflowStatus,
        WorkflowSubStatus,
    };

    #[test]
    fn every_sample_parses_and_round_trips() {
        assert_eq!(definitions().len(), DEFINITION_FILES.len());
        assert_eq!(instances().len(), INSTANCE_FILES.len());
        for ((file, text), definition) in DEFINITION_FILES.iter().zip(definitions()) {
            let original: serde_json::Value = serde_json::from_str(text).expect("JSON");
            assert_eq!(definition.to_value(), original, "{file}");
            assert!(definition.definition_id().starts_with("sample-"), "{file}");
        }
        for ((file, text), instance) in INSTANCE_FILES.iter().zip(instances()) {
            let original: serde_json::Value = serde_json::from_str(text).expect("JSON");
            assert_eq!(instance.to_value(), original, "{file}");
        }
    }

    #[test]
    fn sample_definitions_use_only_builtin_activities_and_draw_no_findings() {
        let validator = DraftValidator::builtin();
        for definition in definitions() {
            for node in definition.activities() {
                assert!(
                    crate::builtin_descriptor(node.type_name()).is_some(),
                    "{}: {} is not an Elsa activity",
                    definition.definition_id(),
                    node.type_name()
                );
            }
            let findings = validator.validate(definition);
            assert!(
                findings.is_empty(),
                "{}: {findings:?}",
                definition.definition_id()
            );
        }
    }

    #[test]
    fn sample_instances_run_sample_definitions_and_cover_the_statuses() {
        for instance in instances() {
            let definition_id = instance.definition_id().expect("definition id");
            let version = instance.definition_version().expect("version");
            assert!(
                definitions()
                    .iter()
                    .any(|d| d.definition_id() == definition_id
                        && d.version() == version
                        && d.version_id() == instance.definition_version_id()),
                "{} runs an unknown definition version",
                instance.id()
            );
            for record in instance.execution_records() {
                let activity = record.activity_id.as_deref().expect("activity id");
                let known = activity == "Workflow1"
                    || definitions().iter().any(|d| {
                        d.definition_id() == definition_id && d.find_activity(activity).is_some()
                    });
                assert!(
                    known,
                    "{}: {activity} is not in the definition",
                    instance.id()
                );
            }
        }
        let statuses: Vec<_> = instances()
            .iter()
            .map(|i| (i.status(), i.sub_status()))
            .collect();
        assert_eq!(
            statuses,
            [
                (WorkflowStatus::Finished, WorkflowSubStatus::Finished),
                (WorkflowStatus::Running, WorkflowSubStatus::Suspended),
                (WorkflowStatus::Finished, WorkflowSubStatus::Faulted),
            ]
        );
        let faulted = &instances()[2];
        let incident = &faulted.incidents()[0];
        assert_eq!(
            incident.activity_type.as_deref(),
            Some("Elsa.SendHttpRequest")
        );
        let failed: Vec<_> = faulted
            .execution_records()
            .into_iter()
            .filter(|r| r.exception.is_some())
            .collect();
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].activity_id.as_deref(), Some("FetchStock"));
        assert_eq!(
            failed[0].activity_type.as_deref(),
            Some("Elsa.SendHttpRequest")
        );
        let waiting = &instances()[1];
        let approval = waiting
            .execution_records()
            .into_iter()
            .find(|r| r.activity_id.as_deref() == Some("RequestApproval"))
            .expect("waiting execution");
        assert_eq!(approval.activity_type.as_deref(), Some("Elsa.RunTask"));
    }

    #[tokio::test]
    async fn a_seeded_backend_serves_the_samples() {
        let backend = InMemoryWorkflowBackend::new();
        let acme = TenantId::new("acme");
        let report = seed(&backend, &acme);
        assert!(report.is_complete(), "{report:?}");
        assert_eq!(report.definitions, 4);
        assert_eq!(report.instances, 3);
        assert_eq!(report.descriptors, builtin_catalog().len());

        let defs: &dyn WorkflowDefinitionStore = &backend;
        let latest = defs
            .find(&acme, "sample-order-approval", VersionOptions::Latest)
            .await
            .expect("find")
            .expect("stored");
        assert_eq!(latest.version(), 2);
        assert!(!latest.is_published());
        let published = defs
            .find(&acme, "sample-order-approval", VersionOptions::Published)
            .await
            .expect("find")
            .expect("stored");
        assert_eq!(published.version(), 1);
        let listed = defs
            .search(&acme, &DefinitionQuery::default())
            .await
            .expect("search");
        let names: Vec<_> = listed
            .items
            .iter()
            .filter_map(|r| r.name.as_deref())
            .collect();
        assert_eq!(
            names,
            [
                "Hourly Inventory Sync",
                "HTTP Hello World",
                "Order Approval"
            ]
        );

        let runs: &dyn WorkflowInstanceStore = &backend;
        let faulted = runs
            .search(
                &acme,
                &InstanceQuery {
                    sub_status: Some(WorkflowSubStatus::Faulted),
                    ..InstanceQuery::default()
                },
            )
            .await
            .expect("search");
        assert_eq!(faulted.total, 1);
        assert_eq!(
            faulted.items[0].definition_id(),
            Some("sample-inventory-sync")
        );
        assert_eq!(
            backend.list(&acme).await.expect("catalog").len(),
            builtin_catalog().len()
        );

        // Seeding again keeps what is there and says so.
        let again = seed(&backend, &acme);
        assert_eq!(again.definitions, 0);
        assert_eq!(again.skipped.len(), 4);
        assert!(
            again
                .skipped
                .iter()
                .all(|s| matches!(s.error, WorkflowError::Conflict { .. }))
        );
        assert_eq!(again.descriptors, 0);
        assert!(again.skipped[0].path.starts_with("samples/definitions"));
    }
}
