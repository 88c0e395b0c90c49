//! Extractors whose refusals are contract errors: the caller (401), JSON bodies (400/413),
//! query strings and path segments (400), never axum's plain-text rejections.

use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::HeaderMap;
use axum::http::header::CONTENT_LENGTH;
use axum::http::request::Parts;
use elsa_ai_abstractions::{AiCaller, AiError};
use http_body_util::LengthLimitError;
use serde::de::DeserializeOwned;

use crate::api::WeaverApi;
use crate::error::ApiError;

/// The authenticated caller; 401 `unauthenticated` when no extractor recognises the request.
#[derive(Clone, Debug)]
pub struct Caller(pub AiCaller);

impl FromRequestParts<WeaverApi> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, api: &WeaverApi) -> Result<Self, ApiError> {
        match api.parts().identity.identify(parts).await? {
            Some(caller) => Ok(Self(caller)),
            None => Err(ApiError(AiError::unauthenticated(
                "no credentials: send 'Authorization: ApiKey <key>' or 'Authorization: Bearer <token>'",
            ))),
        }
    }
}

/// A JSON body read within the configured size limit.
///
/// Refusals: 413 `payload_too_large` above the limit, 400 `missing_body`, `invalid_utf8`,
/// `malformed_json` (not JSON) or `invalid_body` (JSON of the wrong shape).
#[derive(Clone, Debug)]
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<WeaverApi> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, api: &WeaverApi) -> Result<Self, ApiError> {
        let limit = api.parts().max_body_bytes;
        let declared = request
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if let Some(declared) = declared
            && declared > limit as u64
        {
            return Err(too_large(limit));
        }
        let bytes = axum::body::to_bytes(request.into_body(), limit)
            .await
            .map_err(|error| {
                if error.into_inner().is::<LengthLimitError>() {
                    too_large(limit)
                } else {
                    ApiError::bad_request("body_unreadable", "the request body could not be read")
                }
            })?;
        parse_json(&bytes).map(Self)
    }
}

fn too_large(limit: usize) -> ApiError {
    ApiError(AiError::payload_too_large(format!(
        "the request body is larger than the limit of {limit} bytes"
    )))
}

/// Parses a JSON body, naming what is wrong with it.
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request(
            "missing_body",
            "the request needs a JSON body",
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|error| {
        ApiError::bad_request(
            "invalid_utf8",
            format!(
                "the request body is not valid UTF-8 (invalid byte at offset {})",
                error.valid_up_to()
            ),
        )
    })?;
    let invalid = |error: serde_json::Error, path: Option<String>| {
        let code = match error.classify() {
            serde_json::error::Category::Data => "invalid_body",
            _ => "malformed_json",
        };
        let at = path.map_or_else(String::new, |path| format!(" at {path}"));
        let message = match code {
            "invalid_body" => {
                format!("the request body does not have the expected shape{at}: {error}")
            }
            _ => format!("the request body is not valid JSON: {error}"),
        };
        ApiError::bad_request(code, message)
    };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        // The path of the field that is wrong (`attachments[0].kind`), "." for the whole body.
        let path = error.path().to_string();
        invalid(error.into_inner(), (path != ".").then_some(path))
    })?;
    deserializer.end().map_err(|error| invalid(error, None))?;
    Ok(value)
}

/// A query string; 400 `invalid_query` naming the parameter that does not parse.
#[derive(Clone, Debug)]
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(value)| Self(value))
            .map_err(|rejection| ApiError::bad_request("invalid_query", rejection.body_text()))
    }
}

/// Path parameters; 400 `invalid_path` when a segment does not decode (for example, it is
/// not UTF-8 once percent-decoded).
#[derive(Clone, Debug)]
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(value)| Self(value))
            .map_err(|rejection| ApiError::bad_request("invalid_path", rejection.body_text()))
    }
}

/// The sequence number a reconnecting client sends in `Last-Event-ID`: `None` without the
/// header, 400 `invalid_last_event_id` unless it is a decimal sequence number (the ids the
/// streams send; surrounding blanks are allowed, signs and other text are not).
pub(crate) fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get(LAST_EVENT_ID) else {
        return Ok(None);
    };
    let invalid = || {
        ApiError::bad_request(
            "invalid_last_event_id",
            "Last-Event-ID must be the sequence number of an event",
        )
    };
    let text = value.to_str().map_err(|_| invalid())?.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    text.parse::<u64>().map(Some).map_err(|_| invalid())
}

/// The header a browser's `EventSource` sends when it reconnects.
pub(crate) const LAST_EVENT_ID: &str = "last-event-id";

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Body {
        message: String,
    }

    fn code(bytes: &[u8]) -> String {
        parse_json::<Body>(bytes).unwrap_err().0.code().to_owned()
    }

    #[test]
    fn each_kind_of_bad_body_has_its_own_code() {
        assert_eq!(code(b""), "missing_body");
        assert_eq!(code(b"  \n"), "missing_body");
        assert_eq!(code(b"{\"message\": \"caf\xe9\"}"), "invalid_utf8");
        assert_eq!(code(b"{\"message\": "), "malformed_json");
        assert_eq!(code(b"{message: 1}"), "malformed_json");
        assert_eq!(code(b"{\"message\": 1}"), "invalid_body");
        assert_eq!(code(b"[]"), "invalid_body");
        assert_eq!(
            parse_json::<Body>(b"{\"message\": \"hi\"}")
                .unwrap()
                .message,
            "hi"
        );
    }
}
