//! A pass-through proxy between Weaver and the model endpoint that counts model requests:
//! Weaver's events say which tools ran, not how many times the model was asked, and a
//! round is exactly one `POST …/chat/completions` (or `…/responses`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::json;
use tokio::sync::oneshot;

/// Headers that belong to one connection, not to the message.
const HOP_BY_HOP: [header::HeaderName; 6] = [
    header::CONNECTION,
    header::HOST,
    header::CONTENT_LENGTH,
    header::TRANSFER_ENCODING,
    header::TE,
    header::UPGRADE,
];

struct ProxyState {
    /// The endpoint's base URL, without a trailing `/`.
    upstream: String,
    client: reqwest::Client,
    model_requests: AtomicU64,
}

/// The proxy, listening on `127.0.0.1`; it stops when dropped.
pub(crate) struct CountingProxy {
    base_url: String,
    state: Arc<ProxyState>,
    stop: Option<oneshot::Sender<()>>,
}

impl CountingProxy {
    /// Starts a proxy in front of `upstream` (an OpenAI-compatible base URL, `…/v1`).
    pub(crate) async fn start(upstream: &str) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let state = Arc::new(ProxyState {
            upstream: upstream.trim_end_matches('/').to_owned(),
            client: reqwest::Client::new(),
            model_requests: AtomicU64::new(0),
        });
        let app = Router::new().fallback(forward).with_state(state.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Self {
            base_url: format!("http://{address}/v1"),
            state,
            stop: Some(stop),
        })
    }

    /// The base URL Weaver's provider is pointed at.
    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }

    /// How many model requests passed through so far.
    pub(crate) fn model_requests(&self) -> u64 {
        self.state.model_requests.load(Ordering::SeqCst)
    }
}

impl Drop for CountingProxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Whether a request asks the model for an answer (a round of the tool loop).
fn is_model_request(method: &Method, path: &str) -> bool {
    method == Method::POST && (path.ends_with("/chat/completions") || path.ends_with("/responses"))
}

fn without_hop_by_hop(mut headers: HeaderMap) -> HeaderMap {
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
    headers
}

async fn forward(State(state): State<Arc<ProxyState>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path();
    let rest = path.strip_prefix("/v1").unwrap_or(path);
    let mut url = format!("{}{rest}", state.upstream);
    if let Some(query) = parts.uri.query() {
        url.push('?');
        url.push_str(query);
    }
    if is_model_request(&parts.method, rest) {
        state.model_requests.fetch_add(1, Ordering::SeqCst);
    }
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(body) => body,
        Err(error) => return failure(StatusCode::BAD_REQUEST, &error.to_string()),
    };
    let answer = state
        .client
        .request(parts.method, url)
        .headers(without_hop_by_hop(parts.headers))
        .body(body)
        .send()
        .await;
    match answer {
        Ok(answer) => {
            let mut response = Response::builder().status(answer.status());
            if let Some(headers) = response.headers_mut() {
                *headers = without_hop_by_hop(answer.headers().clone());
            }
            let stream = answer
                .bytes_stream()
                .map(|chunk| chunk.map_err(std::io::Error::other));
            response
                .body(Body::from_stream(stream))
                .unwrap_or_else(|error| failure(StatusCode::BAD_GATEWAY, &error.to_string()))
        }
        Err(error) => failure(
            StatusCode::BAD_GATEWAY,
            &format!(
                "weaver-eval could not reach the model endpoint: {}",
                super::runner::with_causes(&error)
            ),
        ),
    }
}

/// An OpenAI-style error answer.
fn failure(status: StatusCode, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": {"message": message, "type": "weaver_eval_proxy"}})),
    )
        .into_response()
}
