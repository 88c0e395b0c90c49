//! Errors as HTTP responses: every [`AiError`] becomes its status with a JSON body carrying a
//! stable `code`, a message for people and, for 422, the diagnostics.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use elsa_ai_abstractions::{AiError, AiErrorBody};
use serde::Serialize;
use utoipa::ToSchema;

/// An error a handler returns; the response is the error's status and [`ErrorBody`].
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError(pub AiError);

impl From<AiError> for ApiError {
    fn from(error: AiError) -> Self {
        Self(error)
    }
}

impl ApiError {
    /// A 400 with `code`.
    pub fn bad_request(code: &str, message: impl Into<String>) -> Self {
        Self(AiError::bad_request(code, message))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let error = self.0;
        let status =
            StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if status.is_server_error() {
            tracing::warn!(
                status = status.as_u16(),
                code = error.code(),
                "request failed"
            );
        }
        let unauthenticated = matches!(error, AiError::Unauthenticated { .. });
        let mut response = (status, axum::Json(ErrorBody::from(error.to_body()))).into_response();
        if unauthenticated {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(r#"ApiKey realm="weaver", Bearer realm="weaver""#),
            );
        }
        response
    }
}

/// The body of every error response.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({"code": "proposal_not_found", "message": "proposal 'p-1' not found", "status": 404}))]
pub struct ErrorBody {
    /// Stable machine-readable code, such as `malformed_json` or `stale_baseline`.
    pub code: String,
    /// What went wrong, for people.
    pub message: String,
    /// The HTTP status, repeated.
    pub status: u16,
    /// For 409 from a state machine: the state the object is in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_state: Option<String>,
    /// For 422: the validation findings.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(schema_with = crate::schema::diagnostics)]
    pub diagnostics: Vec<elsa_workflows::Diagnostic>,
}

impl From<AiErrorBody> for ErrorBody {
    fn from(body: AiErrorBody) -> Self {
        Self {
            code: body.code,
            message: body.message,
            status: body.status,
            current_state: body.current_state,
            diagnostics: body.diagnostics,
        }
    }
}

#[cfg(test)]
mod tests {
    use elsa_workflows::{Diagnostic, DiagnosticCode, Severity};

    use super::*;

    async fn body_of(response: Response) -> serde_json::Value {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn errors_become_their_status_and_the_contract_body() {
        let diagnostic = Diagnostic {
            severity: Severity::Error,
            code: DiagnosticCode::UnknownActivityType,
            message: "no such activity".into(),
            activity_id: Some("a1".into()),
            path: "$.root".into(),
        };
        let error = AiError::validation_failed("invalid draft", vec![diagnostic]);
        let expected = serde_json::to_value(error.to_body()).unwrap();
        let response = ApiError(error).into_response();
        assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
        let body = body_of(response).await;
        assert_eq!(
            body, expected,
            "the wire body is the contract's AiErrorBody"
        );
        assert_eq!(body["diagnostics"][0]["code"], "unknown_activity_type");

        let conflict = ApiError(AiError::invalid_state("Applied", "already applied"));
        let body = body_of(conflict.into_response()).await;
        assert_eq!(body["currentState"], "Applied");
        assert!(body.get("diagnostics").is_none());
    }

    #[test]
    fn unauthenticated_responses_name_the_schemes() {
        let response = ApiError(AiError::unauthenticated("no credentials")).into_response();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        let challenge = response.headers()[header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap();
        assert!(challenge.contains("ApiKey") && challenge.contains("Bearer"));
    }
}
