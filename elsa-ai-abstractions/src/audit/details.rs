//! An audit record's details: any JSON value, or the typed details of a governed tool call.

use std::borrow::Cow;
use std::fmt;
use std::ops::Index;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::{AiToolError, AiToolOutcome};

/// The structured details of an audit record (redacted arguments, results, reasons).
///
/// Most records carry a JSON value. The governor writes a record on every tool call, so a
/// call's details are kept as typed fields ([`ToolCallDetails`], [`ToolDenialDetails`])
/// rather than built into a JSON map each time. Every form serialises to, reads as
/// ([`Self::json`]) and compares as the same JSON.
#[derive(Clone, Default)]
pub struct AuditDetails {
    /// A tool call's details, until something changes them as JSON.
    typed: Option<Typed>,
    /// A JSON record's details, or a typed record's JSON made on its first read. Boxed, so
    /// that a record stays small: most are written and never read.
    json: OnceLock<Box<Value>>,
}

/// Serialised as the details it holds, without a tag.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
enum Typed {
    ToolCall(Box<ToolCallDetails>),
    ToolDenial(Box<ToolDenialDetails>),
}

/// The details of a record that has none.
static NULL: Value = Value::Null;

impl AuditDetails {
    /// The details as JSON.
    pub fn json(&self) -> &Value {
        match &self.typed {
            Some(typed) => self.json.get_or_init(|| Box::new(typed.to_json())),
            None => self.json.get().map_or(&NULL, |json| json),
        }
    }

    /// The details as JSON, to change in place (typed details become JSON).
    pub fn json_mut(&mut self) -> &mut Value {
        let json = match (self.json.take(), self.typed.take()) {
            (Some(json), _) => json,
            (None, Some(typed)) => Box::new(typed.to_json()),
            (None, None) => Box::new(Value::Null),
        };
        self.json = OnceLock::from(json);
        match self.json.get_mut() {
            Some(json) => json,
            None => unreachable!("set on the line above"),
        }
    }

    /// The details as JSON, by value.
    pub fn into_json(self) -> Value {
        match (self.json.into_inner(), self.typed) {
            (Some(json), _) => *json,
            (None, Some(typed)) => typed.to_json(),
            (None, None) => Value::Null,
        }
    }
}

impl Typed {
    fn to_json(&self) -> Value {
        // Strings, numbers, booleans and JSON values only: serialising them cannot fail.
        serde_json::to_value(self).unwrap_or_default()
    }
}

impl From<Value> for AuditDetails {
    fn from(value: Value) -> Self {
        match value {
            Value::Null => Self::default(),
            value => Self {
                typed: None,
                json: OnceLock::from(Box::new(value)),
            },
        }
    }
}

impl From<ToolCallDetails> for AuditDetails {
    fn from(details: ToolCallDetails) -> Self {
        Self {
            typed: Some(Typed::ToolCall(Box::new(details))),
            json: OnceLock::new(),
        }
    }
}

impl From<ToolDenialDetails> for AuditDetails {
    fn from(details: ToolDenialDetails) -> Self {
        Self {
            typed: Some(Typed::ToolDenial(Box::new(details))),
            json: OnceLock::new(),
        }
    }
}

impl<'k> Index<&'k str> for AuditDetails {
    type Output = Value;

    /// The JSON under `key` (`null` when there is none), as for a [`Value`].
    fn index(&self, key: &'k str) -> &Value {
        &self.json()[key]
    }
}

impl PartialEq for AuditDetails {
    fn eq(&self, other: &Self) -> bool {
        self.json() == other.json()
    }
}

impl fmt::Debug for AuditDetails {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.typed {
            Some(Typed::ToolCall(details)) => details.fmt(f),
            Some(Typed::ToolDenial(details)) => details.fmt(f),
            None => self.json().fmt(f),
        }
    }
}

impl Serialize for AuditDetails {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // A typed form is written straight from its fields, without a JSON value between.
        match &self.typed {
            Some(typed) => typed.serialize(serializer),
            None => self.json().serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for AuditDetails {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::from)
    }
}

/// The details of a `tool.invoked` record: a call that passed governance and ran, or tried
/// to. Every field has passed redaction.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallDetails {
    /// The provider's call id.
    pub call_id: Arc<str>,
    /// The agent the call ran under.
    pub agent: Arc<str>,
    /// The name the call used, when it was not the tool's canonical name (the record's
    /// `toolName`): a grounding name such as `workflows.getDefinition`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub called_as: Option<Arc<str>>,
    /// The redacted arguments, shared with the call's other reports.
    pub arguments: Arc<Value>,
    /// How the call ended.
    pub outcome: AiToolOutcome,
    /// How long the call took, in milliseconds.
    pub duration_ms: u64,
    /// Whether the result was clamped to the result budget.
    pub truncated: bool,
    /// The error, when the call failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<AiToolError>,
    /// The redacted result, when the tool's audit behaviour records results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

/// The details of a `tool.denied` record: a call a governance step refused. Every field has
/// passed redaction.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDenialDetails {
    /// The provider's call id.
    pub call_id: Arc<str>,
    /// The agent the call was made under.
    pub agent: Arc<str>,
    /// The name the call used, when it was not the tool's canonical name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub called_as: Option<Arc<str>>,
    /// The step that refused the call, such as `checkPermissions`.
    pub step: Cow<'static, str>,
    /// The step's number in the governance pipeline (1–7).
    pub step_number: usize,
    /// The redacted arguments the model sent.
    pub arguments: Arc<Value>,
    /// Why the step refused.
    pub error: Option<AiToolError>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call() -> ToolCallDetails {
        ToolCallDetails {
            call_id: "call-1".into(),
            agent: "workflow-assistant".into(),
            called_as: None,
            arguments: Arc::new(json!({"definitionId": "wf-1"})),
            outcome: AiToolOutcome::Error,
            duration_ms: 3,
            truncated: false,
            error: Some(AiToolError {
                code: "not_found".into(),
                status: 404,
                message: "no such workflow".into(),
            }),
            result: None,
        }
    }

    #[test]
    fn a_tool_call_serialises_reads_and_compares_as_its_json_object() {
        let expected = json!({
            "callId": "call-1",
            "agent": "workflow-assistant",
            "arguments": {"definitionId": "wf-1"},
            "outcome": "Error",
            "durationMs": 3,
            "truncated": false,
            "error": {"code": "not_found", "status": 404, "message": "no such workflow"},
        });
        let details = AuditDetails::from(call());
        assert_eq!(
            serde_json::to_string(&details).unwrap(),
            expected.to_string()
        );
        assert_eq!(details.json(), &expected);
        assert_eq!(details["error"]["code"], "not_found");
        assert_eq!(details["result"], Value::Null, "absent, as in a map");
        assert_eq!(details, AuditDetails::from(expected.clone()));
        assert_eq!(details.clone().into_json(), expected);
    }

    #[test]
    fn a_denial_keeps_the_order_of_its_fields_and_reads_back_as_json() {
        let details = AuditDetails::from(ToolDenialDetails {
            call_id: "call-2".into(),
            agent: "a".into(),
            called_as: Some("demo.alias".into()),
            step: "checkPermissions".into(),
            step_number: 6,
            arguments: Arc::new(json!({})),
            error: None,
        });
        let text = serde_json::to_string(&details).unwrap();
        assert_eq!(
            text,
            r#"{"callId":"call-2","agent":"a","calledAs":"demo.alias","step":"checkPermissions","stepNumber":6,"arguments":{},"error":null}"#
        );
        let back: AuditDetails = serde_json::from_str(&text).unwrap();
        assert_eq!(back, details);
    }

    #[test]
    fn no_details_are_json_null_until_set_in_place() {
        let mut details = AuditDetails::default();
        assert_eq!(details.json(), &Value::Null);
        assert_eq!(details, AuditDetails::from(Value::Null));
        assert_eq!(serde_json::to_string(&details).unwrap(), "null");
        details.json_mut()["reason"] = json!("x");
        assert_eq!(details.clone().into_json(), json!({"reason": "x"}));
        assert_eq!(AuditDetails::from(json!([1])).into_json(), json!([1]));
    }

    #[test]
    fn changing_a_typed_form_in_place_changes_what_it_serialises_to() {
        let mut details = AuditDetails::from(call());
        assert_eq!(
            details["callId"], "call-1",
            "its JSON is made on the first read"
        );
        details.json_mut()["callId"] = json!("[REDACTED]");
        assert_eq!(details["callId"], "[REDACTED]");
        assert!(
            serde_json::to_string(&details)
                .unwrap()
                .contains(r#""callId":"[REDACTED]""#)
        );
    }
}
