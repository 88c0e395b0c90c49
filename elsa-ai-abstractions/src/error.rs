use elsa_workflows::{Diagnostic, WorkflowError};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The error type of every Weaver contract. Each variant is exactly one HTTP status.
///
/// `code` is a stable machine-readable identifier (`snake_case`); `message` is for people
/// and never contains secrets or another tenant's data.
#[derive(Clone, Debug, PartialEq, Error)]
#[non_exhaustive]
pub enum AiError {
    /// 400: malformed request, unsupported attachment, invalid transition request.
    #[error("{message}")]
    BadRequest {
        /// Machine-readable code.
        code: String,
        /// Human-readable message.
        message: String,
    },
    /// 401: no identity could be established.
    #[error("{message}")]
    Unauthenticated {
        /// Machine-readable code.
        code: String,
        /// Human-readable message.
        message: String,
    },
    /// 403: missing permission, tenant mismatch, denied tool or proposal.
    #[error("{message}")]
    Forbidden {
        /// Machine-readable code.
        code: String,
        /// Human-readable message.
        message: String,
    },
    /// 404: unknown reference, conversation or proposal (also another tenant's).
    #[error("{message}")]
    NotFound {
        /// Machine-readable code.
        code: String,
        /// Human-readable message.
        message: String,
    },
    /// 409: stale baseline or an action the current state does not allow.
    #[error("{message}")]
    Conflict {
        /// Machine-readable code.
        code: String,
        /// Human-readable message.
        message: String,
        /// The state the object is in, when a state machine refused.
        current_state: Option<String>,
    },
    /// 413: a request or payload above the configured limit.
    #[error("{message}")]
    PayloadTooLarge {
        /// Machine-readable code.
        code: String,
        /// Human-readable message.
        message: String,
    },
    /// 422: validation failed; the diagnostics say why.
    #[error("{message}")]
    Unprocessable {
        /// Machine-readable code.
        code: String,
        /// Human-readable message.
        message: String,
        /// The validation findings.
        diagnostics: Vec<Diagnostic>,
    },
    /// 500: an internal failure such as an unavailable store.
    #[error("{message}")]
    Internal {
        /// Machine-readable code.
        code: String,
        /// Human-readable message.
        message: String,
    },
    /// 503: the provider runtime is unavailable, misconfigured or incompatible.
    #[error("{message}")]
    Unavailable {
        /// Machine-readable code.
        code: String,
        /// Human-readable message.
        message: String,
    },
}

impl AiError {
    /// A 400 error.
    pub fn bad_request(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::BadRequest {
            code: code.into(),
            message: message.into(),
        }
    }

    /// A 401 error.
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::Unauthenticated {
            code: "unauthenticated".into(),
            message: message.into(),
        }
    }

    /// A 403 error.
    pub fn forbidden(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Forbidden {
            code: code.into(),
            message: message.into(),
        }
    }

    /// A 404 error naming what was not found (for example `proposal 'p1'`).
    pub fn not_found(what: impl std::fmt::Display) -> Self {
        Self::NotFound {
            code: "not_found".into(),
            message: format!("{what} not found"),
        }
    }

    /// A 409 error.
    pub fn conflict(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Conflict {
            code: code.into(),
            message: message.into(),
            current_state: None,
        }
    }

    /// A 409 error from a state machine, naming the current state.
    pub fn invalid_state(current_state: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Conflict {
            code: "invalid_state".into(),
            message: message.into(),
            current_state: Some(current_state.into()),
        }
    }

    /// A 413 error.
    pub fn payload_too_large(message: impl Into<String>) -> Self {
        Self::PayloadTooLarge {
            code: "payload_too_large".into(),
            message: message.into(),
        }
    }

    /// A 422 error carrying the diagnostics.
    pub fn validation_failed(message: impl Into<String>, diagnostics: Vec<Diagnostic>) -> Self {
        Self::Unprocessable {
            code: "validation_failed".into(),
            message: message.into(),
            diagnostics,
        }
    }

    /// A 500 error.
    pub fn internal(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Internal {
            code: code.into(),
            message: message.into(),
        }
    }

    /// A 503 error.
    pub fn unavailable(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Unavailable {
            code: code.into(),
            message: message.into(),
        }
    }

    /// What an action answers when its audit record could not be written because of
    /// `cause`, so the action was not carried out: 500 `audit_failed`, except that a store
    /// that is unavailable just now keeps its 503 and code (`store_unavailable`), so the
    /// client knows a retry may succeed.
    pub fn audit_failed(cause: &AiError, message: impl Into<String>) -> Self {
        match cause {
            Self::Unavailable { code, .. } => Self::unavailable(code.clone(), message),
            _ => Self::internal("audit_failed", message),
        }
    }

    /// The HTTP status this error stands for.
    pub fn status(&self) -> u16 {
        match self {
            Self::BadRequest { .. } => 400,
            Self::Unauthenticated { .. } => 401,
            Self::Forbidden { .. } => 403,
            Self::NotFound { .. } => 404,
            Self::Conflict { .. } => 409,
            Self::PayloadTooLarge { .. } => 413,
            Self::Unprocessable { .. } => 422,
            Self::Internal { .. } => 500,
            Self::Unavailable { .. } => 503,
        }
    }

    /// The machine-readable code.
    pub fn code(&self) -> &str {
        match self {
            Self::BadRequest { code, .. }
            | Self::Unauthenticated { code, .. }
            | Self::Forbidden { code, .. }
            | Self::NotFound { code, .. }
            | Self::Conflict { code, .. }
            | Self::PayloadTooLarge { code, .. }
            | Self::Unprocessable { code, .. }
            | Self::Internal { code, .. }
            | Self::Unavailable { code, .. } => code,
        }
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        match self {
            Self::BadRequest { message, .. }
            | Self::Unauthenticated { message, .. }
            | Self::Forbidden { message, .. }
            | Self::NotFound { message, .. }
            | Self::Conflict { message, .. }
            | Self::PayloadTooLarge { message, .. }
            | Self::Unprocessable { message, .. }
            | Self::Internal { message, .. }
            | Self::Unavailable { message, .. } => message,
        }
    }

    /// The same error (status, code, state and diagnostics) with another message, for
    /// example the message redacted.
    pub fn with_message(mut self, new_message: impl Into<String>) -> Self {
        match &mut self {
            Self::BadRequest { message, .. }
            | Self::Unauthenticated { message, .. }
            | Self::Forbidden { message, .. }
            | Self::NotFound { message, .. }
            | Self::Conflict { message, .. }
            | Self::PayloadTooLarge { message, .. }
            | Self::Unprocessable { message, .. }
            | Self::Internal { message, .. }
            | Self::Unavailable { message, .. } => *message = new_message.into(),
        }
        self
    }

    /// The wire shape of this error: what HTTP bodies, stream events and tool errors carry.
    pub fn to_body(&self) -> AiErrorBody {
        let (current_state, diagnostics) = match self {
            Self::Conflict { current_state, .. } => (current_state.clone(), Vec::new()),
            Self::Unprocessable { diagnostics, .. } => (None, diagnostics.clone()),
            _ => (None, Vec::new()),
        };
        AiErrorBody {
            code: self.code().to_owned(),
            message: self.message().to_owned(),
            status: self.status(),
            current_state,
            diagnostics,
        }
    }
}

impl From<WorkflowError> for AiError {
    fn from(error: WorkflowError) -> Self {
        match error {
            WorkflowError::Parse(parse) => {
                Self::bad_request("invalid_workflow_json", parse.to_string())
            }
            WorkflowError::NotFound { what } => Self::not_found(what),
            WorkflowError::Conflict { message } => Self::conflict("workflow_conflict", message),
            WorkflowError::Unauthorized { message } => {
                Self::internal("workflow_backend_unauthorized", message)
            }
            WorkflowError::Unavailable { message } => {
                Self::unavailable("workflow_backend_unavailable", message)
            }
            WorkflowError::InvalidAnswer(parse) => {
                Self::internal("workflow_backend_invalid_answer", parse.to_string())
            }
            WorkflowError::Backend { message } => {
                Self::internal("workflow_backend_failed", message)
            }
            // A kind of backend failure this version does not know yet.
            other => Self::internal("workflow_backend_failed", other.to_string()),
        }
    }
}

/// The serialised form of an [`AiError`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiErrorBody {
    /// Machine-readable code.
    pub code: String,
    /// Human-readable message.
    pub message: String,
    /// The HTTP status of the error.
    pub status: u16,
    /// For 409 from a state machine: the current state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_state: Option<String>,
    /// For 422: the validation diagnostics.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_its_own_status() {
        let errors = [
            AiError::bad_request("x", "m"),
            AiError::unauthenticated("m"),
            AiError::forbidden("x", "m"),
            AiError::not_found("thing"),
            AiError::conflict("x", "m"),
            AiError::payload_too_large("m"),
            AiError::validation_failed("m", vec![]),
            AiError::internal("x", "m"),
            AiError::unavailable("x", "m"),
        ];
        let statuses: Vec<u16> = errors.iter().map(AiError::status).collect();
        assert_eq!(statuses, [400, 401, 403, 404, 409, 413, 422, 500, 503]);
    }

    #[test]
    fn an_unaudited_action_is_503_only_while_the_store_is_unavailable() {
        let down = AiError::unavailable("store_unavailable", "disk full");
        let refused = AiError::audit_failed(&down, "not audited, so not done");
        assert_eq!(
            (refused.status(), refused.code(), refused.message()),
            (503, "store_unavailable", "not audited, so not done")
        );
        let broken = AiError::internal("store_failed", "no such table");
        let refused = AiError::audit_failed(&broken, "not audited, so not done");
        assert_eq!((refused.status(), refused.code()), (500, "audit_failed"));
    }

    #[test]
    fn invalid_state_names_the_state_in_the_body() {
        let body = AiError::invalid_state("Rejected", "cannot approve").to_body();
        assert_eq!(body.status, 409);
        assert_eq!(body.current_state.as_deref(), Some("Rejected"));
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(json["currentState"], "Rejected");
        assert!(json.get("diagnostics").is_none());
    }

    #[test]
    fn workflow_errors_map_to_statuses() {
        let not_found: AiError = WorkflowError::NotFound {
            what: "definition 'x'".into(),
        }
        .into();
        assert_eq!(not_found.status(), 404);
        let conflict: AiError = WorkflowError::Conflict {
            message: "v2 exists".into(),
        }
        .into();
        assert_eq!(conflict.status(), 409);
        let refused: AiError = WorkflowError::Unauthorized {
            message: "401".into(),
        }
        .into();
        assert_eq!(
            (refused.status(), refused.code()),
            (500, "workflow_backend_unauthorized")
        );
        let down: AiError = WorkflowError::Unavailable {
            message: "connection refused".into(),
        }
        .into();
        assert_eq!(
            (down.status(), down.code()),
            (503, "workflow_backend_unavailable")
        );
        let garbled: AiError = WorkflowError::InvalidAnswer(elsa_workflows::ParseError {
            problem: "not a list".into(),
            path: "$.items".into(),
        })
        .into();
        assert_eq!(garbled.status(), 500);
        assert!(garbled.message().contains("$.items"), "{garbled:?}");
    }
}
