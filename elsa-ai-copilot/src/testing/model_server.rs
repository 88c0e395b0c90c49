//! A scripted OpenAI-compatible chat-completions endpoint on 127.0.0.1.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// One reply of the scripted model, in the order the requests arrive.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelReply {
    /// Answer with this text.
    Text(String),
    /// Ask for one call of the function `name` (the wire name, as a model would use it).
    ToolCall {
        /// The function name the model calls.
        name: String,
        /// The arguments it passes.
        arguments: Value,
    },
    /// Answer with `prefix` followed by the content of the request's last tool message.
    QuoteToolResult {
        /// Text before the quoted tool result.
        prefix: String,
    },
    /// Hold the request unanswered until the server stops, like a model still thinking, so
    /// that a test can act while a turn waits for the model.
    Hold,
    /// Fail the request with this HTTP status and an OpenAI-style error body.
    Error {
        /// The HTTP status, such as 401 or 500.
        status: u16,
        /// The error message.
        message: String,
    },
}

/// One request the server received, as it arrived.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRequest {
    /// The HTTP method.
    pub method: String,
    /// The request path, such as `/v1/chat/completions`.
    pub path: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// The body as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
}

impl RecordedRequest {
    /// Whether this is a chat-completions request.
    pub fn is_chat_completion(&self) -> bool {
        self.method == "POST" && self.path.ends_with("/chat/completions")
    }

    /// The names of the functions the request offers the model.
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The contents of the request's `tool` role messages, in order.
    pub fn tool_messages(&self) -> Vec<String> {
        self.messages_with_role("tool")
    }

    /// The text of every message with `role`, in order.
    pub fn messages_with_role(&self, role: &str) -> Vec<String> {
        self.body["messages"]
            .as_array()
            .map(|messages| {
                messages
                    .iter()
                    .filter(|message| message["role"] == role)
                    .map(|message| message_text(&message["content"]))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Message content is a string or a list of text parts.
fn message_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

struct ServerState {
    script: Mutex<VecDeque<ModelReply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Cancelled when the server stops; ends held requests.
    stopped: CancellationToken,
}

/// A small OpenAI-compatible model server that plays a script. It answers
/// `POST /v1/chat/completions`, streamed (SSE) or not, records every request body, and
/// rejects function names that the real APIs reject (`^[a-zA-Z0-9_-]{1,64}$`) with 400.
pub struct ScriptedModelServer {
    address: SocketAddr,
    state: Arc<ServerState>,
    shutdown: CancellationToken,
}

impl ScriptedModelServer {
    /// Binds 127.0.0.1 on a free port and starts serving `script`.
    pub async fn start(script: impl IntoIterator<Item = ModelReply>) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let shutdown = CancellationToken::new();
        let state = Arc::new(ServerState {
            script: Mutex::new(script.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
            stopped: shutdown.clone(),
        });
        let app = Router::new().fallback(handle).with_state(state.clone());
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await;
            if let Err(error) = served {
                tracing::warn!(%error, "scripted model server stopped");
            }
        });
        Ok(Self {
            address,
            state,
            shutdown,
        })
    }

    /// The base URL a provider configuration points at (`http://127.0.0.1:<port>/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.requests.lock().clone()
    }

    /// The chat-completions requests received so far, in order.
    pub fn chat_requests(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(RecordedRequest::is_chat_completion)
            .collect()
    }

    /// How many scripted replies are still unplayed.
    pub fn remaining_replies(&self) -> usize {
        self.state.script.lock().len()
    }
}

impl Drop for ScriptedModelServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Whether OpenAI-style APIs accept `name` as a function name.
pub fn is_valid_function_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

async fn handle(
    State(state): State<Arc<ServerState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = RecordedRequest {
        method: method.to_string(),
        path: uri.path().to_owned(),
        authorization: headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    state.requests.lock().push(request.clone());
    if !request.is_chat_completion() {
        return error(
            StatusCode::NOT_FOUND,
            "not_found",
            "only /v1/chat/completions is served",
        );
    }
    if let Some(bad) = request
        .tool_names()
        .into_iter()
        .find(|name| !is_valid_function_name(name))
    {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            &format!(
                "Invalid 'tools[].function.name': '{bad}' does not match '^[a-zA-Z0-9_-]{{1,64}}$'"
            ),
        );
    }
    let reply = state.script.lock().pop_front();
    let answer = match reply {
        Some(ModelReply::Text(text)) => Answer::Text(text),
        Some(ModelReply::ToolCall { name, arguments }) => Answer::ToolCall { name, arguments },
        Some(ModelReply::QuoteToolResult { prefix }) => {
            let quoted = request.tool_messages().pop().unwrap_or_default();
            Answer::Text(format!("{prefix}{quoted}"))
        }
        Some(ModelReply::Error { status, message }) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return error(status, "api_error", &message);
        }
        Some(ModelReply::Hold) => {
            state.stopped.cancelled().await;
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "api_error",
                "the scripted model server stopped",
            );
        }
        None => Answer::Text("(the scripted model has no more replies)".into()),
    };
    let model = request.body["model"]
        .as_str()
        .unwrap_or("scripted")
        .to_owned();
    if request.body["stream"] == true {
        streamed(&model, answer)
    } else {
        whole(&model, answer)
    }
}

/// A reply with its tool result already quoted.
enum Answer {
    Text(String),
    ToolCall { name: String, arguments: Value },
}

fn error(status: StatusCode, kind: &str, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": kind, "param": null, "code": null}});
    (status, axum::Json(body)).into_response()
}

fn call_id() -> String {
    format!("call_{}", uuid_like())
}

/// A short unique id without pulling in a UUID crate.
fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("{:08x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn whole(model: &str, answer: Answer) -> Response {
    let (message, finish) = match answer {
        Answer::ToolCall { name, arguments } => (
            json!({
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": call_id(),
                    "type": "function",
                    "function": {"name": name, "arguments": arguments.to_string()},
                }],
            }),
            "tool_calls",
        ),
        Answer::Text(text) => (json!({"role": "assistant", "content": text}), "stop"),
    };
    let body = json!({
        "id": format!("chatcmpl-{}", uuid_like()),
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    });
    axum::Json(body).into_response()
}

fn streamed(model: &str, answer: Answer) -> Response {
    let id = format!("chatcmpl-{}", uuid_like());
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    };
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    match answer {
        Answer::ToolCall { name, arguments } => {
            let arguments = arguments.to_string();
            let middle = (0..=arguments.len() / 2)
                .rev()
                .find(|index| arguments.is_char_boundary(*index))
                .unwrap_or(0);
            let (head, tail) = arguments.split_at(middle);
            chunks.push(chunk(
                json!({"tool_calls": [{
                    "index": 0,
                    "id": call_id(),
                    "type": "function",
                    "function": {"name": name, "arguments": head},
                }]}),
                Value::Null,
            ));
            chunks.push(chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": tail}}]}),
                Value::Null,
            ));
            chunks.push(chunk(json!({}), json!("tool_calls")));
        }
        Answer::Text(text) => {
            for piece in split_words(&text) {
                chunks.push(chunk(json!({"content": piece}), Value::Null));
            }
            chunks.push(chunk(json!({}), json!("stop")));
        }
    }
    let mut events: Vec<Result<Bytes, std::io::Error>> = chunks
        .into_iter()
        .map(|chunk| Ok(Bytes::from(format!("data: {chunk}\n\n"))))
        .collect();
    events.push(Ok(Bytes::from_static(b"data: [DONE]\n\n")));
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(futures::stream::iter(events)))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Splits text into word-sized pieces (keeping the spaces) so that a stream has several deltas.
fn split_words(text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    for ch in text.chars() {
        current.push(ch);
        if ch == ' ' {
            pieces.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_names_follow_the_openai_rule() {
        assert!(is_valid_function_name("workflow_getDefinition"));
        assert!(is_valid_function_name("a-b_C9"));
        assert!(!is_valid_function_name("workflow.getDefinition"));
        assert!(!is_valid_function_name(""));
        assert!(!is_valid_function_name(&"x".repeat(65)));
    }

    fn state(script: Vec<ModelReply>) -> Arc<ServerState> {
        Arc::new(ServerState {
            script: Mutex::new(script.into()),
            requests: Mutex::new(Vec::new()),
            stopped: CancellationToken::new(),
        })
    }

    async fn post(state: &Arc<ServerState>, body: Value) -> Response {
        handle(
            State(state.clone()),
            Method::POST,
            Uri::from_static("/v1/chat/completions"),
            HeaderMap::new(),
            Bytes::from(body.to_string()),
        )
        .await
    }

    #[tokio::test]
    async fn invalid_function_names_are_rejected_like_the_real_apis_do() {
        let state = state(vec![ModelReply::Text("unused".into())]);
        let dotted = json!({"model": "m", "tools": [{"type": "function", "function": {"name": "workflow.getDefinition"}}]});
        let response = post(&state, dotted).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        assert!(String::from_utf8_lossy(&body).contains("workflow.getDefinition"));
        assert_eq!(
            state.script.lock().len(),
            1,
            "a rejected request plays no reply"
        );
        assert_eq!(state.requests.lock().len(), 1, "but is recorded");
    }

    #[tokio::test]
    async fn replies_are_played_in_order_and_tool_results_quoted() {
        let state = state(vec![
            ModelReply::ToolCall {
                name: "workflow_getDefinition".into(),
                arguments: json!({"definitionId": "wf-1"}),
            },
            ModelReply::QuoteToolResult {
                prefix: "Got: ".into(),
            },
            ModelReply::Error {
                status: 401,
                message: "bad key".into(),
            },
        ]);
        let offered = json!({"model": "m", "tools": [{"type": "function", "function": {"name": "workflow_getDefinition"}}]});
        let call = post(&state, offered.clone()).await;
        assert_eq!(call.status(), StatusCode::OK);
        let call: Value = serde_json::from_slice(
            &axum::body::to_bytes(call.into_body(), usize::MAX)
                .await
                .unwrap(),
        )
        .unwrap();
        let function = &call["choices"][0]["message"]["tool_calls"][0]["function"];
        assert_eq!(function["name"], "workflow_getDefinition");
        assert_eq!(function["arguments"], r#"{"definitionId":"wf-1"}"#);

        let mut with_result = offered;
        with_result["messages"] =
            json!([{"role": "tool", "tool_call_id": "c", "content": "{\"name\":\"Hello\"}"}]);
        with_result["stream"] = json!(true);
        let quoted = post(&state, with_result).await;
        let text = String::from_utf8(
            axum::body::to_bytes(quoted.into_body(), usize::MAX)
                .await
                .unwrap()
                .to_vec(),
        )
        .unwrap();
        assert!(
            text.starts_with("data: ") && text.ends_with("data: [DONE]\n\n"),
            "{text}"
        );
        let content: String = text
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|chunk| serde_json::from_str::<Value>(chunk).ok())
            .filter_map(|chunk| {
                chunk["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
        assert_eq!(content, r#"Got: {"name":"Hello"}"#);

        let refused = post(&state, json!({"model": "m"})).await;
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(state.requests.lock().len(), 3);
    }

    #[test]
    fn words_keep_their_spaces() {
        assert_eq!(split_words("a bc d"), ["a ", "bc ", "d"]);
        assert_eq!(split_words("").len(), 0);
    }
}
