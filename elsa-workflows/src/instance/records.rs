//! The typed parts of an instance: incidents, bookmarks, exceptions and activity execution
//! records, with the readers that check and extract them from the JSON.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::ActivityStatus;
use crate::ParseError;
use crate::json::{self, Location, Seg};

/// An exception as Elsa records it (`ExceptionState`): type, message, stack trace and the
/// exception that caused it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExceptionInfo {
    /// The .NET type, usually assembly-qualified (`System.NullReferenceException, System.Private.CoreLib`).
    pub type_name: Option<String>,
    /// The exception message.
    pub message: Option<String>,
    /// The stack trace, when it was recorded.
    pub stack_trace: Option<String>,
    /// The inner exception, if any.
    pub inner: Option<Box<ExceptionInfo>>,
}

impl ExceptionInfo {
    /// The type name without its assembly (`System.NullReferenceException`).
    pub fn short_type_name(&self) -> Option<&str> {
        self.type_name
            .as_deref()
            .map(|name| name.split(',').next().unwrap_or(name).trim())
    }
}

/// A fault Elsa recorded while running an instance (`ActivityIncident`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Incident {
    /// The activity that faulted.
    pub activity_id: Option<String>,
    /// The faulted activity's node id (its path from the workflow, `Workflow1:Flowchart1:Http1`).
    pub activity_node_id: Option<String>,
    /// The faulted activity's type, for example `Elsa.SendHttpRequest`.
    pub activity_type: Option<String>,
    /// The activity execution that raised it (`activityInstanceId`, recorded by newer Elsa
    /// 3 releases): tells apart the incidents of one node that ran several times.
    pub activity_instance_id: Option<String>,
    /// The incident message.
    pub message: Option<String>,
    /// The exception behind the incident, if recorded.
    pub exception: Option<ExceptionInfo>,
    /// When it happened.
    pub timestamp: Option<DateTime<Utc>>,
    /// JSON path of the incident in the instance document.
    pub path: String,
}

/// A bookmark: what a suspended instance waits for before it resumes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bookmark {
    /// The bookmark id.
    pub id: Option<String>,
    /// The bookmark name: the type of the activity that created it (`Elsa.RunTask`).
    pub name: Option<String>,
    /// The hash Elsa matches incoming stimuli against.
    pub hash: Option<String>,
    /// The activity that created it.
    pub activity_id: Option<String>,
    /// That activity's node id.
    pub activity_node_id: Option<String>,
    /// The activity execution (instance) that waits on it.
    pub activity_instance_id: Option<String>,
    /// When it was created.
    pub created_at: Option<DateTime<Utc>>,
    /// The stimulus data it waits for (null when none).
    pub payload: Value,
    /// JSON path of the bookmark in the instance document.
    pub path: String,
}

/// Where an [`ActivityExecutionRecord`] was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ExecutionRecordSource {
    /// An `activityExecutionRecords` list (Elsa's `ActivityExecutionRecord`, as its API
    /// returns them): the complete history, one entry per activity execution.
    ExecutionRecord,
    /// The workflow state's `activityExecutionContexts`: the executions still alive when the
    /// state was saved (running, waiting or faulted ones), not the completed history.
    ExecutionContext,
}

/// One execution of one activity, in one shape whichever list of the instance it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityExecutionRecord {
    /// The id of the execution (Elsa's activity instance id).
    pub id: Option<String>,
    /// The activity's id in the definition.
    pub activity_id: Option<String>,
    /// The activity's node id (its path from the workflow).
    pub activity_node_id: Option<String>,
    /// The activity type, when the source names it (an execution context does not: it is
    /// taken from the bookmark or incident of the same execution when there is one).
    pub activity_type: Option<String>,
    /// The activity's display name, when recorded.
    pub activity_name: Option<String>,
    /// The execution's status, when recorded.
    pub status: Option<ActivityStatus>,
    /// When the execution started.
    pub started_at: Option<DateTime<Utc>>,
    /// When it completed, if it did.
    pub completed_at: Option<DateTime<Utc>>,
    /// The fault, when the execution failed and the fault was recorded (for an execution
    /// context: the exception of its incident).
    pub exception: Option<ExceptionInfo>,
    /// The evaluated inputs Elsa recorded, by input name (`activityState`; empty when none
    /// was recorded or the log persistence mode left them out).
    pub inputs: Map<String, Value>,
    /// The outputs recorded, by output name (`outputs`).
    pub outputs: Map<String, Value>,
    /// The values of the variables this execution declares, by variable id (Elsa keeps them
    /// in the `Variables` property of the declaring container's execution).
    pub variables: Map<String, Value>,
    /// Which list of the instance it was read from.
    pub source: ExecutionRecordSource,
    /// JSON path of the entry in the instance document.
    pub path: String,
}

impl ActivityExecutionRecord {
    /// Reads one of Elsa's `ActivityExecutionRecord`s (as `activity-executions/list` answers
    /// with them), checking the types of the fields it knows; `path` in errors and in the
    /// record is relative to `value`.
    pub fn from_json(value: &Value) -> Result<Self, ParseError> {
        let map = json::expect_object(value, &[], "an activity execution record")?;
        execution_record(map, Vec::new())
    }
}

/// Reads a timestamp field: RFC 3339 (Elsa's `DateTimeOffset`), or an ISO date-time without
/// offset, read as UTC. Null counts as absent.
pub(crate) fn timestamp(
    map: &Map<String, Value>,
    field: &str,
    location: &[Seg],
) -> Result<Option<DateTime<Utc>>, ParseError> {
    let Some(text) = json::optional_str(map, field, location)? else {
        return Ok(None);
    };
    parse_timestamp(text).map(Some).ok_or_else(|| {
        json::error_at(
            &json::key(location, field),
            format!("`{field}` is not a date-time: '{text}'"),
        )
    })
}

fn parse_timestamp(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.to_utc())
        .ok()
        .or_else(|| {
            NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
                .ok()
                .map(|t| t.and_utc())
        })
}

/// Reads an optional string field as an owned string.
fn string(
    map: &Map<String, Value>,
    field: &str,
    location: &[Seg],
) -> Result<Option<String>, ParseError> {
    Ok(json::optional_str(map, field, location)?.map(str::to_owned))
}

/// An object entry of a list with its location.
pub(crate) type Entry<'a> = (&'a Map<String, Value>, Location);

/// The entries of an optional list field (a JSON array, `{"$values": [...]}` or an API page
/// `{"items": [...]}`), each with its path; `$ref` entries point at an entry listed
/// elsewhere and are skipped.
pub(crate) fn entries<'a>(
    map: &'a Map<String, Value>,
    field: &str,
    location: &[Seg],
) -> Result<Vec<Entry<'a>>, ParseError> {
    let at = json::key(location, field);
    let page_items = map
        .get(field)
        .and_then(Value::as_object)
        .and_then(|page| page.get("items"))
        .and_then(Value::as_array);
    let (items, at) = match page_items {
        Some(items) => (items, json::key(&at, "items")),
        None => match json::optional_array(map, field, location)? {
            Some(found) => found,
            None => return Ok(Vec::new()),
        },
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item_at = json::index(&at, i);
        let entry = json::expect_object(item, &item_at, &format!("an entry of `{field}`"))?;
        if !entry.contains_key("$ref") {
            out.push((entry, item_at));
        }
    }
    Ok(out)
}

/// Reads an optional exception object.
pub(crate) fn exception(
    map: &Map<String, Value>,
    field: &str,
    location: &[Seg],
) -> Result<Option<ExceptionInfo>, ParseError> {
    let at = json::key(location, field);
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => {
            let object = json::expect_object(value, &at, &format!("`{field}`"))?;
            Ok(Some(ExceptionInfo {
                type_name: string(object, "type", &at)?,
                message: string(object, "message", &at)?,
                stack_trace: string(object, "stackTrace", &at)?,
                inner: exception(object, "innerException", &at)?.map(Box::new),
            }))
        }
    }
}

pub(crate) fn incident(map: &Map<String, Value>, at: Location) -> Result<Incident, ParseError> {
    Ok(Incident {
        activity_id: string(map, "activityId", &at)?,
        activity_node_id: string(map, "activityNodeId", &at)?,
        activity_type: string(map, "activityType", &at)?,
        activity_instance_id: string(map, "activityInstanceId", &at)?,
        message: string(map, "message", &at)?,
        exception: exception(map, "exception", &at)?,
        timestamp: timestamp(map, "timestamp", &at)?,
        path: json::render_path(&at),
    })
}

pub(crate) fn bookmark(map: &Map<String, Value>, at: Location) -> Result<Bookmark, ParseError> {
    Ok(Bookmark {
        id: string(map, "id", &at)?,
        name: string(map, "name", &at)?,
        hash: string(map, "hash", &at)?,
        activity_id: string(map, "activityId", &at)?,
        activity_node_id: string(map, "activityNodeId", &at)?,
        activity_instance_id: string(map, "activityInstanceId", &at)?,
        created_at: timestamp(map, "createdAt", &at)?,
        payload: map.get("payload").cloned().unwrap_or(Value::Null),
        path: json::render_path(&at),
    })
}

fn status(
    map: &Map<String, Value>,
    field: &str,
    at: &[Seg],
) -> Result<Option<ActivityStatus>, ParseError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => ActivityStatus::from_json(value)
            .map(Some)
            .map_err(|problem| json::error_at(&json::key(at, field), problem)),
    }
}

/// Reads an optional JSON object of named values (inputs, outputs, properties), without the
/// `$id` metadata of Elsa's reference-preserving serialisation. Null counts as absent.
pub(crate) fn dictionary(
    map: &Map<String, Value>,
    field: &str,
    at: &[Seg],
) -> Result<Map<String, Value>, ParseError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(value) => {
            let object = json::expect_object(value, &json::key(at, field), &format!("`{field}`"))?;
            Ok(object
                .iter()
                .filter(|(key, _)| !key.starts_with('$'))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect())
        }
    }
}

/// The variable values an execution holds: the `Variables` object of its `properties`
/// (Elsa's workflow-instance storage driver keeps a container's variables there, by id).
fn variables(map: &Map<String, Value>, at: &[Seg]) -> Result<Map<String, Value>, ParseError> {
    let properties = dictionary(map, "properties", at)?;
    let at = json::key(at, "properties");
    dictionary(&properties, "Variables", &at)
}

/// Reads an entry of an `activityExecutionRecords` list.
pub(crate) fn execution_record(
    map: &Map<String, Value>,
    at: Location,
) -> Result<ActivityExecutionRecord, ParseError> {
    Ok(ActivityExecutionRecord {
        id: string(map, "id", &at)?,
        activity_id: string(map, "activityId", &at)?,
        activity_node_id: string(map, "activityNodeId", &at)?,
        activity_type: string(map, "activityType", &at)?,
        activity_name: string(map, "activityName", &at)?,
        status: status(map, "status", &at)?,
        started_at: timestamp(map, "startedAt", &at)?,
        completed_at: timestamp(map, "completedAt", &at)?,
        exception: exception(map, "exception", &at)?,
        inputs: dictionary(map, "activityState", &at)?,
        outputs: dictionary(map, "outputs", &at)?,
        variables: variables(map, &at)?,
        source: ExecutionRecordSource::ExecutionRecord,
        path: json::render_path(&at),
    })
}

/// Reads an entry of a workflow state's `activityExecutionContexts`. A context names its
/// activity only by node id (`Workflow1:Flowchart1:SendHttpRequest1`), whose last segment
/// is the activity id; type and fault are filled in later from bookmarks and incidents.
pub(crate) fn execution_context(
    map: &Map<String, Value>,
    at: Location,
) -> Result<ActivityExecutionRecord, ParseError> {
    let node_id = string(map, "scheduledActivityNodeId", &at)?;
    let activity_id = node_id
        .as_deref()
        .and_then(|node| node.rsplit(':').next())
        .filter(|id| !id.is_empty())
        .map(str::to_owned);
    Ok(ActivityExecutionRecord {
        id: string(map, "id", &at)?,
        activity_id,
        activity_node_id: node_id,
        activity_type: None,
        activity_name: None,
        status: status(map, "status", &at)?,
        started_at: timestamp(map, "startedAt", &at)?,
        completed_at: timestamp(map, "completedAt", &at)?,
        exception: None,
        inputs: dictionary(map, "activityState", &at)?,
        outputs: Map::new(),
        variables: variables(map, &at)?,
        source: ExecutionRecordSource::ExecutionContext,
        path: json::render_path(&at),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        json::into_object(value)
    }

    #[test]
    fn timestamps_accept_elsa_precision_offsets_and_naive_times() {
        let map = object(json!({
            "a": "2024-04-18T12:27:32.2106771+00:00",
            "b": "2024-04-18T14:27:32+02:00",
            "c": "2024-04-18T12:27:32",
            "d": "yesterday",
            "e": null,
        }));
        let a = timestamp(&map, "a", &[]).expect("a").expect("some");
        assert_eq!(a.timestamp_subsec_nanos(), 210_677_100);
        let b = timestamp(&map, "b", &[]).expect("b").expect("some");
        let c = timestamp(&map, "c", &[]).expect("c").expect("some");
        assert_eq!(b, c);
        let error = timestamp(&map, "d", &[]).expect_err("not a date");
        assert_eq!(error.path, "$.d");
        assert_eq!(timestamp(&map, "e", &[]), Ok(None));
        assert_eq!(timestamp(&map, "missing", &[]), Ok(None));
    }

    #[test]
    fn entries_read_arrays_wrappers_and_pages_and_skip_refs() {
        let map = object(json!({
            "plain": [{"id": "1"}],
            "wrapped": {"$id": "1", "$values": [{"id": "2"}, {"$ref": "7"}]},
            "page": {"items": [{"id": "3"}], "totalCount": 1},
            "bad": [1],
        }));
        let plain = entries(&map, "plain", &[]).expect("plain");
        assert_eq!(json::render_path(&plain[0].1), "$.plain[0]");
        let wrapped = entries(&map, "wrapped", &[]).expect("wrapped");
        assert_eq!(wrapped.len(), 1);
        assert_eq!(json::render_path(&wrapped[0].1), "$.wrapped.$values[0]");
        let page = entries(&map, "page", &[]).expect("page");
        assert_eq!(json::render_path(&page[0].1), "$.page.items[0]");
        assert_eq!(
            entries(&map, "bad", &[]).expect_err("not objects").path,
            "$.bad[0]"
        );
        assert!(entries(&map, "missing", &[]).expect("absent").is_empty());
    }

    #[test]
    fn exceptions_nest() {
        let map = object(json!({"exception": {
            "type": "System.Net.Http.HttpRequestException, System.Net.Http",
            "message": "outer",
            "innerException": {"type": "System.Net.Sockets.SocketException", "message": "inner"}
        }}));
        let info = exception(&map, "exception", &[])
            .expect("valid")
            .expect("some");
        assert_eq!(
            info.short_type_name(),
            Some("System.Net.Http.HttpRequestException")
        );
        assert_eq!(
            info.inner.and_then(|inner| inner.message),
            Some("inner".to_owned())
        );
        let bad = object(json!({"exception": {"innerException": {"stackTrace": 3}}}));
        assert_eq!(
            exception(&bad, "exception", &[]).expect_err("bad").path,
            "$.exception.innerException.stackTrace"
        );
    }

    #[test]
    fn contexts_take_their_activity_id_from_the_node_id() {
        let map = object(json!({
            "id": "ctx",
            "scheduledActivityNodeId": "Workflow1:Sequence1:ParallelForEach<User>1:RunTask1",
            "status": "Running",
            "startedAt": "2024-04-18T12:27:32Z"
        }));
        let record = execution_context(&map, vec![]).expect("valid");
        assert_eq!(record.activity_id.as_deref(), Some("RunTask1"));
        assert_eq!(record.status, Some(ActivityStatus::Running));
        assert_eq!(record.source, ExecutionRecordSource::ExecutionContext);
        let bad = object(json!({"status": "Dozing"}));
        assert_eq!(
            execution_context(&bad, vec![Seg::Index(4)])
                .expect_err("bad status")
                .path,
            "$[4].status"
        );
    }
}
