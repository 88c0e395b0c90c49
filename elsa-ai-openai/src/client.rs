//! HTTP to the model endpoint: one streamed request, retried on 429 within the request
//! timeout; every failure a [`ModelError`] that names what went wrong, never the key.

use std::time::Duration;

use elsa_ai_abstractions::AiError;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, RETRY_AFTER};
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::Settings;

/// Why a model request failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ModelError {
    /// 401 or 403: the endpoint refused the credentials.
    #[error("the model endpoint refused the credentials (HTTP {status}): {message}")]
    Auth { status: u16, message: String },
    /// 429 until the request timeout ran out.
    #[error("the model endpoint is rate limiting requests (HTTP 429): {message}")]
    RateLimited { message: String },
    /// 5xx, a timeout, a refused or broken connection.
    #[error("the model endpoint is unavailable: {0}")]
    Unavailable(String),
    /// Another 4xx: the endpoint refused the request itself (unknown model, bad parameter).
    #[error("the model endpoint rejected the request (HTTP {status}): {message}")]
    Rejected { status: u16, message: String },
    /// The answer is not the API's format.
    #[error("the model endpoint answered in a form this provider cannot read: {0}")]
    Protocol(String),
    /// The host cancelled the turn.
    #[error("the turn was cancelled")]
    Cancelled,
}

impl From<ModelError> for AiError {
    fn from(error: ModelError) -> Self {
        let code = match &error {
            ModelError::Auth { .. } => "model_auth_failed",
            ModelError::RateLimited { .. } => "model_rate_limited",
            ModelError::Unavailable(_) => "provider_unavailable",
            ModelError::Rejected { .. } => "model_request_rejected",
            ModelError::Protocol(_) => "provider_protocol_error",
            ModelError::Cancelled => "cancelled",
        };
        AiError::unavailable(code, error.to_string())
    }
}

/// The events of one streamed answer, each within the request timeout of the one before.
pub(crate) type EventStream = BoxStream<'static, Result<Event, ModelError>>;

/// Sends requests to the configured endpoint.
#[derive(Clone)]
pub(crate) struct ModelClient {
    http: reqwest::Client,
    pub settings: Settings,
}

/// The longest an error body is quoted in a message.
const QUOTED_BODY_LEN: usize = 300;

impl ModelClient {
    pub(crate) fn new(settings: Settings) -> Result<Self, AiError> {
        let http = reqwest::Client::builder()
            .default_headers(settings.headers.clone())
            .connect_timeout(settings.request_timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| {
                AiError::unavailable("provider_misconfigured", format!("HTTP client: {e}"))
            })?;
        Ok(Self { http, settings })
    }

    /// Posts `body` to the configured API and returns its event stream once the endpoint
    /// answered 2xx. 429 is retried after `Retry-After` (or a short backoff) as long as the
    /// request timeout allows; cancellation ends the wait at once.
    pub(crate) async fn stream(
        &self,
        body: &Value,
        cancel: &CancellationToken,
    ) -> Result<EventStream, ModelError> {
        let deadline = Instant::now() + self.settings.request_timeout;
        let url = self.settings.url(self.settings.api.path());
        let mut backoff = Duration::from_millis(250);
        loop {
            let send = self
                .http
                .post(url.clone())
                .header(ACCEPT, "text/event-stream")
                .json(body)
                .send();
            let response = tokio::select! {
                () = cancel.cancelled() => return Err(ModelError::Cancelled),
                sent = tokio::time::timeout_at(deadline, send) => match sent {
                    Err(_) => return Err(self.timed_out()),
                    Ok(Err(error)) => return Err(transport(&error)),
                    Ok(Ok(response)) => response,
                },
            };
            let status = response.status();
            if status.is_success() {
                return Ok(self.events(response));
            }
            let retry_after = retry_after(&response).unwrap_or(backoff);
            let message = error_message(response).await;
            if status != StatusCode::TOO_MANY_REQUESTS {
                return Err(classify(status, message));
            }
            if Instant::now() + retry_after >= deadline {
                return Err(ModelError::RateLimited { message });
            }
            tracing::debug!(
                wait_ms = retry_after.as_millis() as u64,
                "model endpoint rate limited; retrying"
            );
            tokio::select! {
                () = cancel.cancelled() => return Err(ModelError::Cancelled),
                () = tokio::time::sleep(retry_after) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(8));
        }
    }

    /// Asks the endpoint for its models: a cheap check that it answers and accepts the key.
    /// An endpoint without that route (404, 405) counts as reachable.
    pub(crate) async fn probe(&self) -> Result<(), ModelError> {
        let request = self.http.get(self.settings.url("models")).send();
        let response = tokio::time::timeout(self.settings.request_timeout, request)
            .await
            .map_err(|_| self.timed_out())?
            .map_err(|error| transport(&error))?;
        let status = response.status();
        if status.is_success()
            || matches!(
                status,
                StatusCode::NOT_FOUND
                    | StatusCode::METHOD_NOT_ALLOWED
                    | StatusCode::TOO_MANY_REQUESTS
            )
        {
            return Ok(());
        }
        Err(classify(status, error_message(response).await))
    }

    fn timed_out(&self) -> ModelError {
        ModelError::Unavailable(format!(
            "no answer within the request timeout of {}s",
            self.settings.request_timeout.as_secs()
        ))
    }

    /// The response's SSE events, each of which must arrive within the request timeout.
    fn events(&self, response: reqwest::Response) -> EventStream {
        let idle = self.settings.request_timeout;
        idle_limited(response.bytes_stream().eventsource(), idle).boxed()
    }
}

/// Maps `events` to [`ModelError`]s and ends them with one when the next event takes
/// longer than `idle`.
fn idle_limited(
    events: impl Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send + 'static,
    idle: Duration,
) -> impl Stream<Item = Result<Event, ModelError>> + Send + 'static {
    futures::stream::unfold(Some(Box::pin(events)), move |state| async move {
        let mut events = state?;
        match tokio::time::timeout(idle, events.next()).await {
            Ok(Some(Ok(event))) => Some((Ok(event), Some(events))),
            Ok(Some(Err(EventStreamError::Transport(_)))) => Some((
                Err(ModelError::Unavailable(
                    "the connection to the model broke in the middle of its answer".to_owned(),
                )),
                None,
            )),
            Ok(Some(Err(error))) => Some((
                Err(ModelError::Protocol(format!(
                    "the event stream is malformed: {error}"
                ))),
                None,
            )),
            Ok(None) => None,
            Err(_) => Some((
                Err(ModelError::Unavailable(format!(
                    "no data from the model for {}s (the request timeout)",
                    idle.as_secs()
                ))),
                None,
            )),
        }
    })
}

/// The error for a failed request: a refused connection and a timeout are the endpoint
/// being unavailable, as is anything else on the wire.
fn transport(error: &reqwest::Error) -> ModelError {
    let what = if error.is_connect() {
        "the connection was refused or could not be made"
    } else if error.is_timeout() {
        "the request timed out"
    } else {
        "the request failed on the wire"
    };
    ModelError::Unavailable(what.to_owned())
}

fn classify(status: StatusCode, message: String) -> ModelError {
    match status.as_u16() {
        401 | 403 => ModelError::Auth {
            status: status.as_u16(),
            message,
        },
        429 => ModelError::RateLimited { message },
        code if status.is_server_error() => {
            ModelError::Unavailable(format!("HTTP {code}: {message}"))
        }
        code => ModelError::Rejected {
            status: code,
            message,
        },
    }
}

/// `Retry-After` in seconds (the form model endpoints send), capped at a minute.
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let seconds: f64 = response
        .headers()
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(60.0)))
}

/// The error's message: OpenAI's `{"error": {"message"}}`, else the start of the body.
async fn error_message(response: reqwest::Response) -> String {
    let body = response.text().await.unwrap_or_default();
    if let Ok(json) = serde_json::from_str::<Value>(&body) {
        let message = json["error"]["message"]
            .as_str()
            .or_else(|| json["error"].as_str())
            .or_else(|| json["message"].as_str());
        if let Some(message) = message {
            return quote(message);
        }
    }
    quote(body.trim())
}

fn quote(text: &str) -> String {
    if text.is_empty() {
        return "(no message)".to_owned();
    }
    match text.char_indices().nth(QUOTED_BODY_LEN) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
