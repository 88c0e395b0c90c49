//! Every workflow instance in the fixture folder parses into a typed view and writes back
//! the JSON it was read from.

use elsa_workflows::{ExecutionRecordSource, WorkflowInstance, WorkflowStatus, WorkflowSubStatus};
use serde_json::Value;
use weaver_testkit::fixture_files;

fn read_all() -> Vec<(String, String, WorkflowInstance)> {
    let files = fixture_files("instances");
    assert!(!files.is_empty(), "no instance fixtures");
    files
        .iter()
        .map(|path| {
            let name = path
                .file_name()
                .expect("file name")
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(path).expect("readable fixture");
            let instance = WorkflowInstance::from_json_str(&text)
                .unwrap_or_else(|error| panic!("{name}: {error}"));
            (name, text, instance)
        })
        .collect()
}

#[test]
fn every_fixture_instance_parses_and_round_trips() {
    for (name, text, instance) in read_all() {
        let original: Value =
            serde_json::from_str(text.trim_start_matches('\u{feff}')).expect("fixture is JSON");
        let written = serde_json::to_value(&instance).expect("serialise");
        assert_eq!(written, original, "{name}: JSON changed on round trip");
        let reread = WorkflowInstance::from_json_str(&written.to_string()).expect("re-read");
        assert_eq!(reread, instance, "{name}");
        assert!(!instance.id().is_empty(), "{name}: no id");
        assert!(
            instance.definition_id().is_some(),
            "{name}: no definition id"
        );
    }
}

#[test]
fn fixture_statuses_and_timestamps_are_typed() {
    let instances = read_all();
    let statuses: Vec<_> = instances
        .iter()
        .map(|(_, _, i)| (i.status(), i.sub_status()))
        .collect();
    assert!(statuses.contains(&(WorkflowStatus::Running, WorkflowSubStatus::Suspended)));
    assert!(statuses.contains(&(WorkflowStatus::Finished, WorkflowSubStatus::Finished)));
    assert!(statuses.contains(&(WorkflowStatus::Finished, WorkflowSubStatus::Faulted)));
    for (name, _, instance) in &instances {
        if let (Some(created), Some(updated)) = (instance.created_at(), instance.updated_at()) {
            assert!(created <= updated, "{name}: created after updated");
        }
        if instance.status() == WorkflowStatus::Running {
            assert!(
                instance.finished_at().is_none(),
                "{name}: running but finished"
            );
        }
    }
    // The API responses wrap the state; their header still reads through.
    assert!(
        instances
            .iter()
            .any(|(_, _, i)| i.workflow_state().is_some() && i.definition_id().is_some())
    );
}

#[test]
fn faulted_fixtures_expose_incidents_and_the_faulted_execution() {
    let instances = read_all();
    let faulted: Vec<_> = instances
        .iter()
        .filter(|(_, _, i)| i.is_faulted() && !i.incidents().is_empty())
        .collect();
    assert!(!faulted.is_empty(), "no faulted fixture with incidents");
    for (name, _, instance) in faulted {
        assert_eq!(
            instance.incident_count(),
            instance.incidents().len(),
            "{name}"
        );
        for incident in instance.incidents() {
            assert!(
                incident.activity_id.is_some(),
                "{name}: incident without activity"
            );
            assert!(
                incident.activity_type.is_some(),
                "{name}: incident without type"
            );
            assert!(
                incident.timestamp.is_some(),
                "{name}: incident without time"
            );
            let exception = incident.exception.as_ref().expect("exception recorded");
            assert!(
                exception
                    .short_type_name()
                    .is_some_and(|t| t.ends_with("Exception"))
            );
            assert!(
                exception
                    .stack_trace
                    .as_ref()
                    .is_some_and(|s| !s.is_empty())
            );
        }
        let records = instance.execution_records();
        let failed: Vec<_> = records.iter().filter(|r| r.exception.is_some()).collect();
        assert!(
            !failed.is_empty(),
            "{name}: the faulted execution is not linked to its incident"
        );
        let incident_activities: Vec<_> = instance
            .incidents()
            .into_iter()
            .map(|i| i.activity_id)
            .collect();
        for record in failed {
            assert!(incident_activities.contains(&record.activity_id), "{name}");
            assert_eq!(record.source, ExecutionRecordSource::ExecutionContext);
        }
    }
}

#[test]
fn suspended_fixtures_expose_bookmarks_and_waiting_executions() {
    let instances = read_all();
    let suspended: Vec<_> = instances
        .iter()
        .filter(|(_, _, i)| i.sub_status() == WorkflowSubStatus::Suspended)
        .collect();
    assert!(!suspended.is_empty());
    for (name, _, instance) in suspended {
        let bookmarks = instance.bookmarks();
        assert!(!bookmarks.is_empty(), "{name}: suspended without bookmarks");
        let records = instance.execution_records();
        assert!(!records.is_empty(), "{name}: no execution records");
        assert!(
            records
                .windows(2)
                .all(|w| match (w[0].started_at, w[1].started_at) {
                    (Some(a), Some(b)) => a <= b,
                    (None, Some(_)) => false,
                    _ => true,
                }),
            "{name}: records not ordered by start"
        );
        // Every bookmark's waiting execution is typed by the bookmark.
        for bookmark in bookmarks {
            let waiting = records
                .iter()
                .find(|r| r.id == bookmark.activity_instance_id)
                .unwrap_or_else(|| panic!("{name}: no execution waits on {:?}", bookmark.id));
            assert_eq!(waiting.activity_type, bookmark.name, "{name}");
            assert_eq!(waiting.activity_id, bookmark.activity_id, "{name}");
        }
    }
}
