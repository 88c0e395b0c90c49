//! Elsa's workflow execution log (the journal): one entry per event of an activity execution
//! (`Started`, `Completed`, `Faulted`, ...), ordered by sequence number.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::records::timestamp;
use crate::ParseError;
use crate::json;

/// One entry of a workflow instance's execution log, as Elsa's journal endpoint returns it
/// (`ExecutionLogRecord`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionLogEntry {
    /// The entry id.
    pub id: Option<String>,
    /// The activity execution it belongs to.
    pub activity_instance_id: Option<String>,
    /// The execution of the activity's parent.
    pub parent_activity_instance_id: Option<String>,
    /// The activity's id in the definition.
    pub activity_id: Option<String>,
    /// The activity type.
    pub activity_type: Option<String>,
    /// The activity's display name, when it has one.
    pub activity_name: Option<String>,
    /// The activity's node id (`nodeId` in the API, `activityNodeId` in the store).
    pub node_id: Option<String>,
    /// When the event happened.
    pub timestamp: Option<DateTime<Utc>>,
    /// The entry's place in the log.
    pub sequence: i64,
    /// The event (`Started`, `Completed`, `Faulted`, `Suspended`, ...).
    pub event_name: Option<String>,
    /// The message recorded with the event.
    pub message: Option<String>,
    /// Where in Elsa's code the event was recorded.
    pub source: Option<String>,
    /// Extra data recorded with the event (null when none).
    pub payload: Value,
}

impl ExecutionLogEntry {
    /// Reads one entry of Elsa's execution log, checking the types of the fields it knows.
    pub fn from_json(value: &Value) -> Result<Self, ParseError> {
        let map = json::expect_object(value, &[], "an execution log entry")?;
        let string = |field: &str| -> Result<Option<String>, ParseError> {
            Ok(json::optional_str(map, field, &[])?.map(str::to_owned))
        };
        let sequence = match map.get("sequence") {
            None | Some(Value::Null) => 0,
            Some(number) => number.as_i64().ok_or_else(|| {
                json::error_at(
                    &json::key(&[], "sequence"),
                    format!("`sequence` must be an integer, found {number}"),
                )
            })?,
        };
        Ok(Self {
            id: string("id")?,
            activity_instance_id: string("activityInstanceId")?,
            parent_activity_instance_id: string("parentActivityInstanceId")?,
            activity_id: string("activityId")?,
            activity_type: string("activityType")?,
            activity_name: string("activityName")?,
            node_id: match string("nodeId")? {
                Some(node) => Some(node),
                None => string("activityNodeId")?,
            },
            timestamp: timestamp(map, "timestamp", &[])?,
            sequence,
            event_name: string("eventName")?,
            message: string("message")?,
            source: string("source")?,
            payload: map.get("payload").cloned().unwrap_or(Value::Null),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn entries_read_the_api_shape_and_the_store_shape() {
        let entry = ExecutionLogEntry::from_json(&json!({
            "id": "e1", "activityInstanceId": "a1", "activityId": "WriteLine1",
            "activityType": "Elsa.WriteLine", "nodeId": "Workflow1:WriteLine1",
            "timestamp": "2024-04-18T12:00:00+00:00", "sequence": 3, "eventName": "Completed"
        }))
        .unwrap();
        assert_eq!(entry.node_id.as_deref(), Some("Workflow1:WriteLine1"));
        assert_eq!((entry.sequence, entry.payload.clone()), (3, Value::Null));
        let stored =
            ExecutionLogEntry::from_json(&json!({"activityNodeId": "Workflow1:X"})).unwrap();
        assert_eq!(stored.node_id.as_deref(), Some("Workflow1:X"));
        let bad = ExecutionLogEntry::from_json(&json!({"sequence": "3"})).unwrap_err();
        assert_eq!(bad.path, "$.sequence");
        assert!(ExecutionLogEntry::from_json(&json!([1])).is_err());
    }
}
