//! Elsa 3 workflow instances.
//!
//! A [`WorkflowInstance`] keeps the JSON document it was read from and exposes typed views
//! of it, the way [`crate::WorkflowDefinition`] does. Elsa hands out instances in several
//! shapes, all read here:
//!
//! - a workflow state (`WorkflowState`: `id`, `definitionId`, `status`, `subStatus`,
//!   `bookmarks`, `incidents`, `activityExecutionContexts`, ...), with or without
//!   `$id`/`$values` reference metadata;
//! - an instance entity or API response that wraps the state: `{"workflowState": {...}}`,
//!   possibly with header fields (`id`, `version`, `status`, ...) beside it;
//! - an instance summary row (`workflowInstanceId` or `id`, `definitionId`, `version`,
//!   `status`, `subStatus`, `incidentCount`, timestamps) with no state at all.
//!
//! Header fields are looked up on the outer document first, then in `workflowState`.

mod journal;
mod records;
mod status;

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

pub use journal::ExecutionLogEntry;
pub use records::{
    ActivityExecutionRecord, Bookmark, ExceptionInfo, ExecutionRecordSource, Incident,
};
pub use status::{ActivityStatus, WorkflowStatus, WorkflowSubStatus};

use crate::ParseError;
use crate::json::{self, Location, Seg};

/// The key of the wrapped workflow state.
const STATE: &str = "workflowState";

/// An Elsa 3 workflow instance that writes back exactly what was read.
///
/// Construction checks the shape: an instance has an id (`id`, or `workflowInstanceId` in
/// summary rows), a status and a sub-status (names or Elsa's numbers); header fields,
/// timestamps, incidents, bookmarks and execution records that are present have the types
/// Elsa gives them. The accessors then never fail. Unknown fields and `$id` metadata are
/// kept untouched.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkflowInstance {
    document: Map<String, Value>,
}

impl WorkflowInstance {
    /// Reads an instance from JSON text (a UTF-8 BOM is ignored).
    pub fn from_json_str(text: &str) -> Result<Self, ParseError> {
        Self::from_value(json::parse_text(text)?)
    }

    /// Reads an instance from JSON bytes (UTF-8, with or without a BOM).
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ParseError> {
        Self::from_value(json::parse_bytes(bytes)?)
    }

    /// Reads an instance from a JSON value, checking its shape.
    pub fn from_value(value: Value) -> Result<Self, ParseError> {
        json::check_depth(&value)?;
        let Value::Object(document) = value else {
            return Err(json::error_at(
                &[],
                format!(
                    "a workflow instance must be a JSON object, found {}",
                    json::kind_of(&value)
                ),
            ));
        };
        let instance = Self { document };
        instance.check()?;
        Ok(instance)
    }

    /// The JSON document, every unknown field included.
    pub fn as_json(&self) -> &Map<String, Value> {
        &self.document
    }

    /// The document as a JSON value.
    pub fn to_value(&self) -> Value {
        Value::Object(self.document.clone())
    }

    /// The wrapped workflow state (`workflowState`), when the document is an entity or API
    /// response rather than a bare state.
    pub fn workflow_state(&self) -> Option<&Map<String, Value>> {
        self.document.get(STATE).and_then(Value::as_object)
    }

    /// The instance id.
    pub fn id(&self) -> &str {
        self.str_field(&["id", "workflowInstanceId"])
            .unwrap_or_default()
    }

    /// The id of the definition this instance runs.
    pub fn definition_id(&self) -> Option<&str> {
        self.str_field(&["definitionId"])
    }

    /// The id of the definition version this instance runs.
    pub fn definition_version_id(&self) -> Option<&str> {
        self.str_field(&["definitionVersionId"])
    }

    /// The number of the definition version this instance runs (`definitionVersion` in a
    /// state, `version` in an entity or summary row).
    pub fn definition_version(&self) -> Option<i32> {
        self.field(&["definitionVersion", "version"])
            .and_then(Value::as_i64)
            .and_then(|v| i32::try_from(v).ok())
    }

    /// The instance name.
    pub fn name(&self) -> Option<&str> {
        self.str_field(&["name"])
    }

    /// The correlation id a host gave the run.
    pub fn correlation_id(&self) -> Option<&str> {
        self.str_field(&["correlationId"])
    }

    /// The instance that started this one as a child workflow.
    pub fn parent_instance_id(&self) -> Option<&str> {
        self.str_field(&["parentWorkflowInstanceId"])
    }

    /// The status.
    pub fn status(&self) -> WorkflowStatus {
        self.field(&["status"])
            .and_then(|v| WorkflowStatus::from_json(v).ok())
            .unwrap_or(WorkflowStatus::Running)
    }

    /// The sub-status.
    pub fn sub_status(&self) -> WorkflowSubStatus {
        self.field(&["subStatus"])
            .and_then(|v| WorkflowSubStatus::from_json(v).ok())
            .unwrap_or(WorkflowSubStatus::Pending)
    }

    /// When the instance was created.
    pub fn created_at(&self) -> Option<DateTime<Utc>> {
        self.timestamp("createdAt")
    }

    /// When the instance last changed.
    pub fn updated_at(&self) -> Option<DateTime<Utc>> {
        self.timestamp("updatedAt")
    }

    /// When the instance finished, if it did.
    pub fn finished_at(&self) -> Option<DateTime<Utc>> {
        self.timestamp("finishedAt")
    }

    /// The incidents (faults) recorded while running, oldest first as Elsa lists them.
    pub fn incidents(&self) -> Vec<Incident> {
        self.list("incidents", records::incident)
    }

    /// How many incidents the instance has: the length of its `incidents` list, or the
    /// `incidentCount` of a summary row that carries no list.
    pub fn incident_count(&self) -> usize {
        if self.field(&["incidents"]).is_some() {
            return self.incidents().len();
        }
        self.field(&["incidentCount"])
            .and_then(Value::as_u64)
            .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// The bookmarks the instance waits on.
    pub fn bookmarks(&self) -> Vec<Bookmark> {
        self.list("bookmarks", records::bookmark)
    }

    /// The activity executions of the run, in one shape, ordered by start time (entries
    /// without one last).
    ///
    /// Two sources are read. First `activityExecutionRecords` (on the document or in its
    /// state; a JSON array, `$values` wrapper or API page `{"items": [...]}`): Elsa's
    /// `ActivityExecutionRecord`s, the complete history, as a host attaches them from Elsa's
    /// activity-execution API. Then the state's `activityExecutionContexts`: the executions
    /// still alive when the state was saved; one whose id already appears among the records
    /// is skipped. A context carries no activity type or fault of its own: the type is taken
    /// from the bookmark it waits on (a bookmark's name is its activity's type) or its
    /// incident, and a faulted context gets the exception of the incident recorded for its
    /// node (or activity).
    pub fn execution_records(&self) -> Vec<ActivityExecutionRecord> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for (map, at) in self.layers() {
            for (entry, entry_at) in
                records::entries(map, "activityExecutionRecords", &at).unwrap_or_default()
            {
                if let Ok(record) = records::execution_record(entry, entry_at)
                    && record.id.as_ref().is_none_or(|id| seen.insert(id.clone()))
                {
                    out.push(record);
                }
            }
        }
        let contexts = self.list("activityExecutionContexts", records::execution_context);
        if !contexts.is_empty() {
            let bookmarks = self.bookmarks();
            let incidents = self.incidents();
            for mut record in contexts {
                if record.id.as_ref().is_some_and(|id| seen.contains(id)) {
                    continue;
                }
                enrich_context(&mut record, &bookmarks, &incidents);
                out.push(record);
            }
        }
        // Stable: entries that started together keep their document order.
        out.sort_by_key(|record| (record.started_at.is_none(), record.started_at));
        out
    }

    /// Whether the run ended in a fault.
    pub fn is_faulted(&self) -> bool {
        self.sub_status() == WorkflowSubStatus::Faulted
    }

    /// Sets the status and sub-status (and `updatedAt`, and `finishedAt` when it finishes)
    /// in every layer that holds them, as an operation on the run would change them.
    pub fn set_status(
        &mut self,
        status: WorkflowStatus,
        sub_status: WorkflowSubStatus,
        at: DateTime<Utc>,
    ) {
        let at = Value::String(at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true));
        let finished = status == WorkflowStatus::Finished;
        let set = |map: &mut Map<String, Value>, force: bool| {
            for (field, value) in [
                ("status", Value::String(status.as_str().into())),
                ("subStatus", Value::String(sub_status.as_str().into())),
                ("updatedAt", at.clone()),
            ] {
                if force || map.contains_key(field) {
                    map.insert(field.into(), value);
                }
            }
            if finished && (force || map.contains_key("finishedAt")) {
                map.insert("finishedAt".into(), at.clone());
            } else if !finished && map.contains_key("finishedAt") {
                map.insert("finishedAt".into(), Value::Null);
            }
        };
        set(&mut self.document, true);
        if let Some(Value::Object(state)) = self.document.get_mut(STATE) {
            set(state, false);
        }
    }

    /// The workflow input the run started with (`input` of the state or the document), if
    /// it is an object.
    pub fn input(&self) -> Option<&Map<String, Value>> {
        self.field(&["input"]).and_then(Value::as_object)
    }

    /// The outer document, then the wrapped state, each with its location.
    fn layers(&self) -> impl Iterator<Item = (&Map<String, Value>, Location)> {
        std::iter::once((&self.document, Vec::new())).chain(
            self.workflow_state()
                .map(|state| (state, vec![Seg::Key(STATE.into())])),
        )
    }

    /// The first non-null value of any of `names`, outer document first.
    fn field(&self, names: &[&str]) -> Option<&Value> {
        self.layers().find_map(|(map, _)| {
            names
                .iter()
                .find_map(|name| map.get(*name).filter(|value| !value.is_null()))
        })
    }

    fn str_field(&self, names: &[&str]) -> Option<&str> {
        self.field(names).and_then(Value::as_str)
    }

    fn timestamp(&self, field: &str) -> Option<DateTime<Utc>> {
        self.layers()
            .find_map(|(map, at)| records::timestamp(map, field, &at).ok().flatten())
    }

    /// The entries of the first layer holding a non-null `field`, read by `read`.
    fn list<T>(
        &self,
        field: &str,
        read: fn(&Map<String, Value>, Location) -> Result<T, ParseError>,
    ) -> Vec<T> {
        let Some((map, at)) = self
            .layers()
            .find(|(map, _)| map.get(field).is_some_and(|v| !v.is_null()))
        else {
            return Vec::new();
        };
        records::entries(map, field, &at)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(entry, entry_at)| read(entry, entry_at).ok())
            .collect()
    }

    /// The shape checks of a whole instance document.
    fn check(&self) -> Result<(), ParseError> {
        if let Some(state) = self.document.get(STATE).filter(|v| !v.is_null()) {
            json::expect_object(state, &[Seg::Key(STATE.into())], "`workflowState`")?;
        }
        for (map, at) in self.layers() {
            check_layer(map, &at)?;
        }
        let innermost: Location = match self.workflow_state() {
            Some(_) => vec![Seg::Key(STATE.into())],
            None => Vec::new(),
        };
        if self.id().is_empty() {
            let hint = if self.document.contains_key("root") {
                " (this looks like a workflow definition)"
            } else {
                ""
            };
            return Err(json::error_at(
                &json::key(&innermost, "id"),
                format!("a workflow instance needs an `id` (or `workflowInstanceId`){hint}"),
            ));
        }
        for field in ["status", "subStatus"] {
            if self.field(&[field]).is_none() {
                return Err(json::error_at(
                    &json::key(&innermost, field),
                    format!("a workflow instance needs a `{field}`"),
                ));
            }
        }
        Ok(())
    }
}

/// Checks the fields of the outer document or of its wrapped state.
fn check_layer(map: &Map<String, Value>, at: &[Seg]) -> Result<(), ParseError> {
    for field in [
        "id",
        "workflowInstanceId",
        "definitionId",
        "definitionVersionId",
        "name",
        "correlationId",
        "parentWorkflowInstanceId",
    ] {
        json::optional_str(map, field, at)?;
    }
    for field in ["definitionVersion", "version"] {
        json::optional_i32(map, field, at)?;
    }
    if let Some(count) = map.get("incidentCount").filter(|v| !v.is_null())
        && count.as_u64().is_none()
    {
        return Err(json::error_at(
            &json::key(at, "incidentCount"),
            format!("`incidentCount` must be a non-negative integer, found {count}"),
        ));
    }
    check_enum(map, "status", at, WorkflowStatus::from_json)?;
    check_enum(map, "subStatus", at, WorkflowSubStatus::from_json)?;
    for field in ["createdAt", "updatedAt", "finishedAt"] {
        records::timestamp(map, field, at)?;
    }
    for (entry, entry_at) in records::entries(map, "incidents", at)? {
        records::incident(entry, entry_at)?;
    }
    for (entry, entry_at) in records::entries(map, "bookmarks", at)? {
        records::bookmark(entry, entry_at)?;
    }
    for (entry, entry_at) in records::entries(map, "activityExecutionContexts", at)? {
        records::execution_context(entry, entry_at)?;
    }
    for (entry, entry_at) in records::entries(map, "activityExecutionRecords", at)? {
        records::execution_record(entry, entry_at)?;
    }
    Ok(())
}

fn check_enum<T>(
    map: &Map<String, Value>,
    field: &str,
    at: &[Seg],
    read: fn(&Value) -> Result<T, String>,
) -> Result<(), ParseError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(()),
        Some(value) => read(value)
            .map(|_| ())
            .map_err(|problem| json::error_at(&json::key(at, field), problem)),
    }
}

/// Fills in what an execution context does not record from the bookmark it waits on and
/// the incident of its node.
fn enrich_context(
    record: &mut ActivityExecutionRecord,
    bookmarks: &[Bookmark],
    incidents: &[Incident],
) {
    if let Some(bookmark) = record.id.as_ref().and_then(|id| {
        bookmarks
            .iter()
            .find(|b| b.activity_instance_id.as_ref() == Some(id))
    }) {
        record.activity_type = record
            .activity_type
            .take()
            .or_else(|| bookmark.name.clone());
    }
    if record.status != Some(ActivityStatus::Faulted) {
        return;
    }
    let by_node = |i: &&Incident| {
        i.activity_node_id.is_some() && i.activity_node_id == record.activity_node_id
    };
    let by_activity =
        |i: &&Incident| i.activity_id.is_some() && i.activity_id == record.activity_id;
    let incident = incidents
        .iter()
        .find(by_node)
        .or_else(|| incidents.iter().find(by_activity));
    if let Some(incident) = incident {
        record.activity_type = record
            .activity_type
            .take()
            .or_else(|| incident.activity_type.clone());
        record.exception = incident.exception.clone();
    }
}

impl Serialize for WorkflowInstance {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.document.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for WorkflowInstance {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_value(value).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<Value> for WorkflowInstance {
    type Error = ParseError;

    fn try_from(value: Value) -> Result<Self, ParseError> {
        Self::from_value(value)
    }
}

impl std::str::FromStr for WorkflowInstance {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Self, ParseError> {
        Self::from_json_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<WorkflowInstance, ParseError> {
        WorkflowInstance::from_value(value)
    }

    #[test]
    fn bare_state_header_fields_are_typed() {
        let instance = parse(json!({
            "id": "i1", "definitionId": "d", "definitionVersionId": "dv", "definitionVersion": 2,
            "name": "Run", "correlationId": "c-9", "status": "Finished", "subStatus": "Faulted",
            "createdAt": "2024-04-18T12:27:32.1942066+00:00",
            "updatedAt": "2024-04-18T12:28:17+00:00",
            "finishedAt": null,
            "extra": {"kept": [1, 2]},
        }))
        .expect("valid");
        assert_eq!(instance.id(), "i1");
        assert_eq!(instance.definition_id(), Some("d"));
        assert_eq!(instance.definition_version_id(), Some("dv"));
        assert_eq!(instance.definition_version(), Some(2));
        assert_eq!(instance.name(), Some("Run"));
        assert_eq!(instance.correlation_id(), Some("c-9"));
        assert_eq!(instance.status(), WorkflowStatus::Finished);
        assert!(instance.is_faulted());
        assert!(instance.created_at().expect("created") < instance.updated_at().expect("updated"));
        assert_eq!(instance.finished_at(), None);
        assert_eq!(instance.as_json()["extra"], json!({"kept": [1, 2]}));
        assert_eq!(instance.incident_count(), 0);
    }

    #[test]
    fn wrapped_state_and_outer_header_are_both_read() {
        let instance = parse(json!({
            "id": "outer", "version": 4, "status": 0, "subStatus": 2,
            "workflowState": {"id": "outer", "definitionId": "d", "status": "Running",
                "subStatus": "Suspended", "createdAt": "2025-01-01T00:00:00Z",
                "bookmarks": [{"id": "b", "name": "Elsa.Event", "activityInstanceId": "x"}]}
        }))
        .expect("valid");
        assert_eq!(instance.id(), "outer");
        assert_eq!(instance.definition_id(), Some("d"));
        assert_eq!(instance.definition_version(), Some(4));
        assert_eq!(instance.sub_status(), WorkflowSubStatus::Suspended);
        assert!(instance.created_at().is_some());
        assert_eq!(instance.bookmarks()[0].path, "$.workflowState.bookmarks[0]");
        assert!(instance.workflow_state().is_some());
    }

    #[test]
    fn summary_rows_count_incidents_without_a_list() {
        let instance = parse(json!({
            "workflowInstanceId": "abc", "definitionId": "d", "version": 3,
            "status": "Finished", "subStatus": "Faulted", "incidentCount": 2
        }))
        .expect("valid");
        assert_eq!(instance.id(), "abc");
        assert_eq!(instance.incident_count(), 2);
        assert!(instance.incidents().is_empty());
    }

    #[test]
    fn wrong_shapes_are_typed_errors_with_paths() {
        let ok = json!({"id": "i", "status": "Running", "subStatus": "Executing"});
        let with = |field: &str, value: Value| {
            let mut doc = ok.clone();
            doc[field] = value;
            doc
        };
        let cases = [
            (json!([]), "$"),
            (
                json!({"status": "Running", "subStatus": "Executing"}),
                "$.id",
            ),
            (json!({"id": "i", "subStatus": "Executing"}), "$.status"),
            (json!({"id": "i", "status": "Running"}), "$.subStatus"),
            (
                json!({"workflowState": {"id": "i", "status": "Running"}}),
                "$.workflowState.subStatus",
            ),
            (json!({"workflowState": []}), "$.workflowState"),
            (with("id", json!(7)), "$.id"),
            (with("status", json!("Sleeping")), "$.status"),
            (with("subStatus", json!(42)), "$.subStatus"),
            (with("definitionVersion", json!("1")), "$.definitionVersion"),
            (with("incidentCount", json!(-1)), "$.incidentCount"),
            (with("createdAt", json!("noon")), "$.createdAt"),
            (with("incidents", json!({"$id": "1"})), "$.incidents"),
            (
                with("incidents", json!([{"activityId": 1}])),
                "$.incidents[0].activityId",
            ),
            (
                with(
                    "incidents",
                    json!({"$values": [{}, {"exception": {"type": []}}]}),
                ),
                "$.incidents.$values[1].exception.type",
            ),
            (with("bookmarks", json!(["b"])), "$.bookmarks[0]"),
            (
                with("activityExecutionContexts", json!([{"status": "Dozing"}])),
                "$.activityExecutionContexts[0].status",
            ),
            (
                with(
                    "activityExecutionRecords",
                    json!({"items": [{"startedAt": 5}]}),
                ),
                "$.activityExecutionRecords.items[0].startedAt",
            ),
        ];
        for (value, path) in cases {
            let error = parse(value.clone()).expect_err("invalid");
            assert_eq!(error.path, path, "{value}: {error}");
        }
    }

    #[test]
    fn a_definition_is_named_as_such() {
        let error = parse(json!({"definitionId": "d", "root": {"type": "Elsa.Flowchart"}}))
            .expect_err("a definition");
        assert!(error.problem.contains("workflow definition"), "{error}");
    }

    #[test]
    fn execution_records_merge_records_and_contexts() {
        let instance = parse(json!({
            "id": "i", "status": "Finished", "subStatus": "Faulted",
            "incidents": [{"activityId": "Http1", "activityNodeId": "Workflow1:Flow1:Http1",
                "activityType": "Elsa.SendHttpRequest", "message": "boom",
                "exception": {"type": "System.Net.Http.HttpRequestException", "message": "boom"}}],
            "bookmarks": [{"name": "Elsa.Event", "activityInstanceId": "ctx-wait"}],
            "activityExecutionRecords": [
                {"id": "rec-1", "activityId": "Start", "activityType": "Elsa.WriteLine",
                 "status": "Completed", "startedAt": "2025-01-01T00:00:01Z",
                 "completedAt": "2025-01-01T00:00:02Z"},
            ],
            "activityExecutionContexts": {"$values": [
                {"id": "rec-1", "scheduledActivityNodeId": "Workflow1:Flow1:Start", "status": "Completed"},
                {"id": "ctx-http", "scheduledActivityNodeId": "Workflow1:Flow1:Http1",
                 "status": "Faulted", "startedAt": "2025-01-01T00:00:03Z"},
                {"id": "ctx-wait", "scheduledActivityNodeId": "Workflow1:Flow1:Wait1",
                 "status": "Running", "startedAt": "2025-01-01T00:00:00Z"},
                {"$ref": "9"},
            ]},
        }))
        .expect("valid");
        let records = instance.execution_records();
        let ids: Vec<_> = records
            .iter()
            .map(|r| r.id.as_deref().unwrap_or(""))
            .collect();
        assert_eq!(ids, ["ctx-wait", "rec-1", "ctx-http"]);
        assert_eq!(records[0].activity_type.as_deref(), Some("Elsa.Event"));
        assert_eq!(records[0].exception, None);
        assert_eq!(records[1].source, ExecutionRecordSource::ExecutionRecord);
        assert_eq!(records[1].activity_type.as_deref(), Some("Elsa.WriteLine"));
        let http = &records[2];
        assert_eq!(http.source, ExecutionRecordSource::ExecutionContext);
        assert_eq!(http.activity_id.as_deref(), Some("Http1"));
        assert_eq!(http.activity_type.as_deref(), Some("Elsa.SendHttpRequest"));
        assert_eq!(
            http.exception.as_ref().and_then(|e| e.type_name.as_deref()),
            Some("System.Net.Http.HttpRequestException")
        );
        assert_eq!(http.path, "$.activityExecutionContexts.$values[1]");
    }

    #[test]
    fn serde_round_trip_keeps_unknown_fields_and_rejects_bad_shapes() {
        let text =
            r#"{"$id":"1","id":"i","status":1,"subStatus":3,"zeta":{"$id":"2","$values":[]}}"#;
        let instance: WorkflowInstance = serde_json::from_str(text).expect("valid");
        let original: Value = serde_json::from_str(text).expect("json");
        assert_eq!(
            serde_json::to_value(&instance).expect("serialise"),
            original
        );
        assert_eq!(instance.sub_status(), WorkflowSubStatus::Finished);
        assert!(serde_json::from_str::<WorkflowInstance>(r#"{"id": 1}"#).is_err());
        assert!("not json".parse::<WorkflowInstance>().is_err());
    }
}
