use serde::{Deserialize, Serialize};

/// How serious a validation finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Severity {
    /// The draft cannot be applied.
    Error,
    /// The draft works but probably not as intended.
    Warning,
    /// Worth knowing, nothing to fix.
    Info,
}

/// The stable, machine-readable identity of a validation rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DiagnosticCode {
    /// An activity's type is not in the catalog.
    UnknownActivityType,
    /// An activity's type is known but not at this type version.
    UnknownActivityVersion,
    /// Two activities share one id.
    DuplicateActivityId,
    /// A connection starts at an activity that does not exist.
    ConnectionSourceMissing,
    /// A connection ends at an activity that does not exist.
    ConnectionTargetMissing,
    /// A connection leaves through a port (outcome) the activity does not have.
    UnknownPort,
    /// An input the descriptor requires has no value.
    MissingRequiredInput,
    /// A flowchart activity that no path from the start reaches.
    UnreachableActivity,
    /// A flowchart with activities but no activity to start from.
    NoStartActivity,
    /// Two variables share one name.
    VariableNameClash,
    /// An input wrapper whose expression object is not `{"type": string, "value": ...}`.
    MalformedExpression,
    /// A literal cron expression that does not parse.
    InvalidCronExpression,
    /// A value holds a redaction marker: a secret the author never saw would be written
    /// into the workflow as the marker's text.
    RedactedValue,
}

impl DiagnosticCode {
    /// The code as it appears in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownActivityType => "unknown_activity_type",
            Self::UnknownActivityVersion => "unknown_activity_version",
            Self::DuplicateActivityId => "duplicate_activity_id",
            Self::ConnectionSourceMissing => "connection_source_missing",
            Self::ConnectionTargetMissing => "connection_target_missing",
            Self::UnknownPort => "unknown_port",
            Self::MissingRequiredInput => "missing_required_input",
            Self::UnreachableActivity => "unreachable_activity",
            Self::NoStartActivity => "no_start_activity",
            Self::VariableNameClash => "variable_name_clash",
            Self::MalformedExpression => "malformed_expression",
            Self::InvalidCronExpression => "invalid_cron_expression",
            Self::RedactedValue => "redacted_value",
        }
    }
}

/// One finding of draft validation, located by activity id and JSON path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostic {
    /// How serious it is.
    pub severity: Severity,
    /// Which rule produced it.
    pub code: DiagnosticCode,
    /// A sentence for a person.
    pub message: String,
    /// The activity concerned, when there is one.
    pub activity_id: Option<String>,
    /// JSON path into the definition, for example `$.root.activities[2].type`.
    pub path: String,
}

impl Diagnostic {
    /// Whether this finding blocks applying the draft.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}
