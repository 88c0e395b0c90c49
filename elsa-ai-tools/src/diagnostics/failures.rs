//! Failures as diagnostics tools see them: one per incident of an instance (or per faulted
//! activity execution when the instance recorded no incident), each with the failing
//! activity, its type, an error category and the evidence it was read from.

use chrono::{DateTime, Utc};
use elsa_workflows::{ActivityExecutionRecord, ActivityStatus, ExceptionInfo, WorkflowInstance};

use crate::support::clip;

/// The activity type reported when the instance does not say which activity failed.
pub(crate) const UNKNOWN_ACTIVITY_TYPE: &str = "(unknown)";

/// One failure of one instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    pub instance_id: String,
    pub definition_id: Option<String>,
    pub activity_id: Option<String>,
    pub activity_type: String,
    /// What kind of error: the exception type, else a normalised message.
    pub category: String,
    pub message: Option<String>,
    /// When it happened: the incident's or execution's time, else the instance's.
    pub timestamp: Option<DateTime<Utc>>,
    /// JSON path of the record it was read from, in the instance document.
    pub evidence: String,
}

/// Whether an execution record is a failed execution.
pub(crate) fn is_faulted(record: &ActivityExecutionRecord) -> bool {
    record.exception.is_some() || record.status == Some(ActivityStatus::Faulted)
}

/// The error category of an exception or message: the exception's type without assembly
/// (`System.NullReferenceException`), else the message with numbers and ids masked (so that
/// "order 17 failed" and "order 42 failed" fall into one category), else `Unknown`.
pub(crate) fn category(exception: Option<&ExceptionInfo>, message: Option<&str>) -> String {
    if let Some(type_name) = exception.and_then(ExceptionInfo::short_type_name) {
        return type_name.to_owned();
    }
    match message.map(str::trim).filter(|m| !m.is_empty()) {
        Some(message) => format!("Message: {}", clip(&mask_variables(message), 80)),
        None => "Unknown".to_owned(),
    }
}

/// Replaces every run of characters holding a digit (numbers, ids, GUIDs) with `#`.
fn mask_variables(message: &str) -> String {
    message
        .split_whitespace()
        .map(|word| {
            if word.chars().any(|c| c.is_ascii_digit()) {
                "#"
            } else {
                word
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every failure of `instance`.
pub(crate) fn failures_of(instance: &WorkflowInstance) -> Vec<Failure> {
    let fallback_time = instance
        .finished_at()
        .or_else(|| instance.updated_at())
        .or_else(|| instance.created_at());
    let base = |activity_id: Option<String>,
                activity_type: Option<String>,
                exception: Option<&ExceptionInfo>,
                message: Option<&str>,
                timestamp: Option<DateTime<Utc>>,
                evidence: String| Failure {
        instance_id: instance.id().to_owned(),
        definition_id: instance.definition_id().map(str::to_owned),
        activity_id,
        activity_type: activity_type.unwrap_or_else(|| UNKNOWN_ACTIVITY_TYPE.to_owned()),
        category: category(exception, message),
        message: message.map(|m| clip(m, 300)),
        timestamp: timestamp.or(fallback_time),
        evidence,
    };
    let incidents = instance.incidents();
    if !incidents.is_empty() {
        return incidents
            .into_iter()
            .map(|incident| {
                let message = incident
                    .message
                    .clone()
                    .or_else(|| incident.exception.as_ref().and_then(|e| e.message.clone()));
                base(
                    incident.activity_id,
                    incident.activity_type,
                    incident.exception.as_ref(),
                    message.as_deref(),
                    incident.timestamp,
                    incident.path,
                )
            })
            .collect();
    }
    let faulted: Vec<Failure> = instance
        .execution_records()
        .into_iter()
        .filter(is_faulted)
        .map(|record| {
            let message = record.exception.as_ref().and_then(|e| e.message.clone());
            base(
                record.activity_id,
                record.activity_type,
                record.exception.as_ref(),
                message.as_deref(),
                record.completed_at.or(record.started_at),
                record.path,
            )
        })
        .collect();
    if !faulted.is_empty() || !instance.is_faulted() {
        return faulted;
    }
    vec![base(
        None,
        None,
        None,
        Some("the instance is Faulted but recorded no incident or faulted activity"),
        None,
        "$.subStatus".to_owned(),
    )]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn categories_prefer_the_exception_type_and_mask_variable_parts() {
        let exception = ExceptionInfo {
            type_name: Some("System.TimeoutException, System.Private.CoreLib".into()),
            message: Some("x".into()),
            stack_trace: None,
            inner: None,
        };
        assert_eq!(category(Some(&exception), None), "System.TimeoutException");
        assert_eq!(
            category(None, Some("Order 17 failed at step 3")),
            category(None, Some("Order 42 failed at step 9"))
        );
        assert_eq!(category(None, None), "Unknown");
    }

    #[test]
    fn a_faulted_instance_without_records_still_reports_a_failure() {
        let instance = WorkflowInstance::from_value(json!({
            "id": "i1", "definitionId": "d", "status": "Finished", "subStatus": "Faulted",
            "finishedAt": "2024-04-18T12:00:00Z"
        }))
        .unwrap();
        let failures = failures_of(&instance);
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].activity_type, UNKNOWN_ACTIVITY_TYPE);
        assert!(failures[0].timestamp.is_some());
        let healthy = WorkflowInstance::from_value(json!({
            "id": "i2", "status": "Finished", "subStatus": "Finished"
        }))
        .unwrap();
        assert!(failures_of(&healthy).is_empty());
    }
}
