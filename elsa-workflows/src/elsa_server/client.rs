//! The HTTP side of the Elsa Server backend: requests with the configured credentials, answers
//! read with a size limit, and failures turned into [`WorkflowError`]s that never carry a
//! credential.

use std::error::Error as _;
use std::fmt::Write as _;

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;

use super::{ElsaServerConfig, ElsaServerConfigError};
use crate::json;
use crate::{ParseError, WorkflowError};

/// The header Elsa's multitenancy reads the tenant from (its default `TenantHeaderName`).
const TENANT_HEADER: &str = "x-tenant-id";

/// The longest excerpt of an error answer quoted in an error message.
const EXCERPT_CHARS: usize = 300;

/// The text that replaces a credential found in anything quoted from an answer or an error.
const REDACTED: &str = "[redacted]";

/// A configured connection to one Elsa Server's API.
pub(super) struct ElsaHttp {
    client: reqwest::Client,
    base: Url,
    /// The credential itself, to scrub it from any text quoted in an error.
    secret: Option<String>,
    max_body_bytes: usize,
    timeout_secs: u64,
}

/// A status and a body, read in full.
pub(super) struct Answer {
    pub status: StatusCode,
    pub body: Vec<u8>,
}

impl ElsaHttp {
    pub fn new(config: &ElsaServerConfig) -> Result<Self, ElsaServerConfigError> {
        let mut headers = HeaderMap::new();
        if let Some(value) = config.credentials.header_value() {
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                ElsaServerConfigError::new(
                    "the Elsa credential contains characters an HTTP header cannot carry",
                )
            })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        if let Some(tenant) = &config.elsa_tenant_id {
            let value = HeaderValue::from_str(tenant).map_err(|_| {
                ElsaServerConfigError::new(format!(
                    "the Elsa tenant id '{tenant}' contains characters an HTTP header cannot carry"
                ))
            })?;
            headers.insert(HeaderName::from_static(TENANT_HEADER), value);
        }
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .timeout(config.timeout)
            .connect_timeout(config.connect_timeout)
            // A redirect would carry the credential to wherever it points; Elsa's API does not
            // redirect, so one is reported instead of followed.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("weaver-elsa-workflows/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| {
                ElsaServerConfigError::new(format!("the HTTP client cannot be built: {error}"))
            })?;
        Ok(Self {
            client,
            base: config.api_base_url(),
            secret: config.credentials.secret().map(str::to_owned),
            max_body_bytes: config.max_body_bytes,
            timeout_secs: config.timeout.as_secs(),
        })
    }

    /// The API base, as error messages name it.
    pub fn base(&self) -> &Url {
        &self.base
    }

    /// The URL of an endpoint below the API base; each segment is percent-encoded, so an id
    /// holding `/` or `?` stays one segment. `.` and `..` cannot be sent as segments (the
    /// URL drops them), so callers check ids with [`is_one_segment`] first.
    pub fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// Sends one request and reads the whole answer; only a failure to get an answer is an
    /// error here (every status is returned for the caller to judge).
    pub async fn send(
        &self,
        what: &str,
        method: Method,
        url: Url,
        body: Option<&Value>,
    ) -> Result<Answer, WorkflowError> {
        let mut request = self.client.request(method, url);
        if let Some(body) = body {
            request = request
                .header(CONTENT_TYPE, "application/json")
                .body(serde_json::to_vec(body).unwrap_or_default());
        }
        let mut response = request
            .send()
            .await
            .map_err(|error| self.transport_error(what, &error))?;
        let status = response.status();
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > self.max_body_bytes {
                        return Err(WorkflowError::Backend {
                            message: format!(
                                "Elsa Server at {} answered {what} with more than {} bytes",
                                self.base, self.max_body_bytes
                            ),
                        });
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(error) => return Err(self.transport_error(what, &error)),
            }
        }
        Ok(Answer { status, body })
    }

    /// GETs one object: `None` on 404, the object `parse` reads from a success, a typed
    /// error otherwise.
    pub async fn get_optional<T>(
        &self,
        what: &str,
        url: Url,
        parse: fn(&[u8]) -> Result<T, ParseError>,
    ) -> Result<Option<T>, WorkflowError> {
        let answer = self.send(what, Method::GET, url, None).await?;
        match answer.status {
            StatusCode::NOT_FOUND => Ok(None),
            status if status.is_success() => parse(&answer.body)
                .map(Some)
                .map_err(|e| self.invalid_answer(what, e)),
            _ => Err(self.failure(what, &answer)),
        }
    }

    /// The error for an answer whose status means failure. A 404 reaching this point is a
    /// missing endpoint (lookups handle their own 404 as "not found").
    pub fn failure(&self, what: &str, answer: &Answer) -> WorkflowError {
        let status = answer.status;
        let base = &self.base;
        let excerpt = self.excerpt(&answer.body);
        let detail = if excerpt.is_empty() {
            String::new()
        } else {
            format!(": {excerpt}")
        };
        match status {
            StatusCode::UNAUTHORIZED => WorkflowError::Unauthorized {
                message: format!(
                    "Elsa Server at {base} refused {what}: {status} (check the API key or token \
                     Weaver is configured with)"
                ),
            },
            StatusCode::FORBIDDEN => WorkflowError::Backend {
                message: format!(
                    "Elsa Server at {base} refused {what}: {status} (the credentials lack a \
                     permission, or the definition is read-only){detail}"
                ),
            },
            StatusCode::NOT_FOUND => WorkflowError::Backend {
                message: format!(
                    "Elsa Server at {base} has no endpoint for {what} ({status}); is the URL the \
                     Elsa Server and its API path right?"
                ),
            },
            StatusCode::CONFLICT => WorkflowError::Conflict {
                message: format!("Elsa Server at {base} refused {what}: {status}{detail}"),
            },
            status if status.is_redirection() => WorkflowError::Backend {
                message: format!(
                    "Elsa Server at {base} answered {what} with a redirect ({status}); configure \
                     the URL it redirects to"
                ),
            },
            status if status.is_client_error() => WorkflowError::Backend {
                message: format!("Elsa Server at {base} refused {what}: {status}{detail}"),
            },
            status if status.is_server_error() => WorkflowError::Unavailable {
                message: format!("Elsa Server at {base} failed {what}: {status}{detail}"),
            },
            status => WorkflowError::Backend {
                message: format!("Elsa Server at {base} answered {what} with {status}{detail}"),
            },
        }
    }

    /// The answer's body as JSON.
    pub fn json(&self, what: &str, answer: &Answer) -> Result<Value, WorkflowError> {
        json::parse_bytes(&answer.body).map_err(|error| {
            self.invalid_answer(
                what,
                ParseError {
                    problem: format!("the body is not JSON ({})", error.problem),
                    path: error.path,
                },
            )
        })
    }

    /// The error for an answer that is not what `what` asked for: `error` says what is wrong
    /// where in the answer.
    pub fn invalid_answer(&self, what: &str, error: ParseError) -> WorkflowError {
        WorkflowError::InvalidAnswer(ParseError {
            problem: self.scrub(&format!(
                "Elsa Server at {} answered {what}: {}",
                self.base, error.problem
            )),
            path: error.path,
        })
    }

    fn transport_error(&self, what: &str, error: &reqwest::Error) -> WorkflowError {
        let base = &self.base;
        let message = if error.is_timeout() {
            format!(
                "Elsa Server at {base} did not answer {what} within {} s",
                self.timeout_secs
            )
        } else {
            // The error's own text names the URL, which the message already does; its sources
            // say why (connection refused, DNS, TLS).
            let mut reason = String::new();
            let mut source = error.source();
            while let Some(cause) = source {
                if !reason.is_empty() {
                    reason.push_str(": ");
                }
                let _ = write!(reason, "{cause}");
                source = cause.source();
            }
            if reason.is_empty() {
                reason = "no answer".to_owned();
            }
            let verb = if error.is_connect() {
                "cannot connect to"
            } else {
                "lost the connection to"
            };
            format!("{verb} Elsa Server at {base} for {what}: {reason}")
        };
        // Unreachable, refused, reset or slow: all of them may pass, none is the caller's fault.
        WorkflowError::Unavailable {
            message: self.scrub(&message),
        }
    }

    /// What an error answer says, in one short line: Elsa's `message`/`errors` (FastEndpoints)
    /// or `title`/`detail` (problem details) when the body is JSON, else its text.
    fn excerpt(&self, body: &[u8]) -> String {
        let text = match serde_json::from_slice::<Value>(body) {
            Ok(value) => {
                let mut parts = Vec::new();
                for field in ["message", "title", "detail"] {
                    if let Some(text) = value.get(field).and_then(Value::as_str) {
                        parts.push(text.to_owned());
                    }
                }
                if let Some(errors) = value.get("errors") {
                    collect_strings(errors, &mut parts);
                }
                if parts.is_empty() {
                    value.to_string()
                } else {
                    parts.join("; ")
                }
            }
            Err(_) => String::from_utf8_lossy(body).into_owned(),
        };
        let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let line = self.scrub(&line);
        match line.char_indices().nth(EXCERPT_CHARS) {
            Some((end, _)) => format!("{}…", &line[..end]),
            None => line,
        }
    }

    /// `text` with the credential replaced, wherever it occurs.
    fn scrub(&self, text: &str) -> String {
        match &self.secret {
            Some(secret) if !secret.is_empty() => text.replace(secret.as_str(), REDACTED),
            _ => text.to_owned(),
        }
    }
}

/// Every string inside `value` (the messages of an `errors` object or array), in order.
/// Whether `id` can be sent as one URL path segment naming it: not empty, and not `.` or
/// `..`, which a URL drops (`workflow-instances/..` would be `workflow-instances`, another
/// endpoint). An id that is not can name nothing in Elsa, so it is reported as not found.
pub(crate) fn is_one_segment(id: &str) -> bool {
    !matches!(id, "" | "." | "..")
}

fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| collect_strings(item, out)),
        Value::Object(map) => map.values().for_each(|item| collect_strings(item, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http() -> ElsaHttp {
        let config = ElsaServerConfig::new("https://elsa.example/")
            .expect("a valid URL")
            .api_key("s3cret-key");
        ElsaHttp::new(&config).expect("a client")
    }

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status: StatusCode::from_u16(status).expect("a status"),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn statuses_map_to_typed_errors() {
        let http = http();
        let kind = |status: u16| match http.failure("listing", &answer(status, "")) {
            WorkflowError::Unauthorized { .. } => "unauthorized",
            WorkflowError::Unavailable { .. } => "unavailable",
            WorkflowError::Conflict { .. } => "conflict",
            WorkflowError::Backend { .. } => "backend",
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(kind(401), "unauthorized");
        assert_eq!(kind(409), "conflict");
        for status in [500, 502, 503, 504] {
            assert_eq!(kind(status), "unavailable", "{status}");
        }
        for status in [302, 400, 403, 404, 422] {
            assert_eq!(kind(status), "backend", "{status}");
        }
    }

    #[test]
    fn excerpts_are_short_single_lines_without_the_secret() {
        let http = http();
        let body = r#"{"message": "Boom:\n  header ApiKey s3cret-key", "errors": {"x": ["first", "second"]}}"#;
        let error = http.failure("saving", &answer(500, body)).to_string();
        assert!(
            error.contains("Boom: header ApiKey [redacted]; first; second"),
            "{error}"
        );
        assert!(!error.contains("s3cret-key"), "{error}");
        let long = "x".repeat(2 * EXCERPT_CHARS);
        let error = http.failure("saving", &answer(400, &long)).to_string();
        assert!(error.ends_with('…'), "{error}");
        assert!(error.len() < long.len(), "{error}");
    }

    #[test]
    fn answers_that_are_not_json_are_invalid_at_the_root() {
        let http = http();
        let error = http
            .json("listing", &answer(200, "<html>s3cret-key</html>"))
            .unwrap_err();
        assert!(
            matches!(&error, WorkflowError::InvalidAnswer(p) if p.path == "$"),
            "{error:?}"
        );
        assert!(!format!("{error:?}").contains("s3cret-key"));
    }

    #[test]
    fn dot_segments_would_leave_their_place_so_they_are_no_id() {
        // What the check guards against: the URL drops the segment.
        let url = http().url(&["workflow-instances", "..", "journal"]);
        assert_eq!(
            url.as_str(),
            "https://elsa.example/elsa/api/workflow-instances/journal"
        );
        for id in ["", ".", ".."] {
            assert!(!is_one_segment(id), "{id:?}");
        }
        for id in ["...", ".a", "a..", "a/b", "wf-1"] {
            assert!(is_one_segment(id), "{id:?}");
        }
    }

    #[test]
    fn endpoint_segments_are_percent_encoded() {
        let url = http().url(&["workflow-definitions", "by-definition-id", "a/b?c"]);
        assert_eq!(
            url.as_str(),
            "https://elsa.example/elsa/api/workflow-definitions/by-definition-id/a%2Fb%3Fc"
        );
    }
}
