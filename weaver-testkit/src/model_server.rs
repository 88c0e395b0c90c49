//! A scripted OpenAI-compatible model server on 127.0.0.1: Chat Completions
//! (`POST /v1/chat/completions`, streamed or whole), the Responses API (`POST /v1/responses`,
//! streamed) and `GET /v1/models`.
//!
//! It plays one [`ModelReply`] per model request, records every request, and refuses
//! function names the real APIs refuse. [`Quirks`] make its streams look like those of
//! servers that bend the format: arguments split over many chunks, tool calls without ids,
//! other `finish_reason`s, usage only in a last chunk without choices, keep-alive comments.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::obedient::{self, Instruction, Obedience};

/// One reply of the scripted model, in the order the model requests arrive.
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
    /// Ask for several calls at once (parallel tool calls), in this order.
    ToolCalls(Vec<(String, Value)>),
    /// Answer with `prefix` followed by the content of the request's last tool result.
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
    /// Answer 429 with `Retry-After: <seconds>`.
    RateLimited {
        /// The `Retry-After` value, in seconds.
        retry_after_secs: u64,
    },
    /// Start a streamed answer, then send a data line that is not JSON.
    Garbage,
    /// Start a streamed answer with some text, then end the response without finishing it.
    CutOff,
    /// Stream this text, then keep the response open, sending nothing, until the client
    /// goes away or the server stops (see [`ScriptedModelServer::open_streams`]).
    Stall(String),
    /// Answer with this text word by word, pausing `pause` before each word, like a model
    /// that takes its time (a turn that stays live long enough to be watched).
    Paced {
        /// The whole answer.
        text: String,
        /// The pause before each word.
        pause: std::time::Duration,
    },
    /// Answer as the obedient model of [`crate::obedient`]: call every `CALL <function>
    /// <json>` the request's context holds that the conversation has not called yet, or
    /// else answer with text quoting every tool result.
    Obey,
}

/// How the server bends the stream format, as some real servers do. The default is none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Quirks {
    /// Split tool-call arguments into pieces of this many bytes (0: two halves).
    pub argument_piece_len: usize,
    /// Leave tool calls without an `id` (Chat Completions) or `call_id` (Responses).
    pub omit_tool_call_ids: bool,
    /// The `finish_reason` of a chunk that asks for tool calls (default `tool_calls`).
    pub tool_finish_reason: Option<String>,
    /// Put usage only into a last chunk whose `choices` are empty.
    pub usage_in_last_chunk: bool,
    /// Send an SSE comment (`: keep-alive`) before every chunk.
    pub keep_alive_comments: bool,
    /// End the stream without `data: [DONE]`.
    pub omit_done: bool,
    /// Answer 401 to every request without `Authorization: Bearer <this>`.
    pub required_key: Option<String>,
}

/// One request the server received, as it arrived.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRequest {
    /// The HTTP method.
    pub method: String,
    /// The request path, such as `/v1/chat/completions`.
    pub path: String,
    /// The query string, if any.
    pub query: Option<String>,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// Every header, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
}

impl RecordedRequest {
    /// Whether this is a chat-completions request.
    pub fn is_chat_completion(&self) -> bool {
        self.method == "POST" && self.path.ends_with("/chat/completions")
    }

    /// Whether this is a Responses API request.
    pub fn is_response(&self) -> bool {
        self.method == "POST" && self.path.ends_with("/responses")
    }

    /// Whether this request asks the model for an answer (either API).
    pub fn is_model_request(&self) -> bool {
        self.is_chat_completion() || self.is_response()
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The names of the functions the request offers the model (either API's shape).
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|tool| {
                        tool["function"]["name"]
                            .as_str()
                            .or_else(|| tool["name"].as_str())
                            .map(str::to_owned)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The tool results the request hands the model, in order: the contents of `tool` role
    /// messages (Chat Completions) or the outputs of `function_call_output` items (Responses).
    pub fn tool_messages(&self) -> Vec<String> {
        if self.is_response() {
            return self.body["input"]
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .filter(|item| item["type"] == "function_call_output")
                        .map(|item| message_text(&item["output"]))
                        .collect()
                })
                .unwrap_or_default();
        }
        self.messages_with_role("tool")
    }

    /// The text of every message with `role`, in order (Chat `messages` or Responses `input`).
    pub fn messages_with_role(&self, role: &str) -> Vec<String> {
        let messages = if self.is_response() {
            &self.body["input"]
        } else {
            &self.body["messages"]
        };
        messages
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
    quirks: Quirks,
    /// Cancelled when the server stops; ends held requests.
    stopped: CancellationToken,
    /// Open response bodies (streams not yet dropped by the client or finished).
    open_streams: Arc<AtomicU64>,
    /// Whether a request that finds the script empty is answered by [`ModelReply::Obey`].
    obedient: bool,
    /// The calls the obedient model asked for, in order.
    obeyed: Mutex<Vec<Instruction>>,
}

/// A small OpenAI-compatible model server that plays a script; see the module docs.
pub struct ScriptedModelServer {
    address: SocketAddr,
    state: Arc<ServerState>,
    shutdown: CancellationToken,
}

impl ScriptedModelServer {
    /// Binds 127.0.0.1 on a free port and starts serving `script` without quirks.
    pub async fn start(script: impl IntoIterator<Item = ModelReply>) -> std::io::Result<Self> {
        Self::start_with(script, Quirks::default()).await
    }

    /// Binds 127.0.0.1 on a free port and starts serving `script` with `quirks`.
    pub async fn start_with(
        script: impl IntoIterator<Item = ModelReply>,
        quirks: Quirks,
    ) -> std::io::Result<Self> {
        Self::serve(script, quirks, false).await
    }

    /// Binds 127.0.0.1 on a free port and answers every request as the obedient model of
    /// [`crate::obedient`] ([`ModelReply::Obey`]), for as many requests as come.
    pub async fn start_obedient(quirks: Quirks) -> std::io::Result<Self> {
        Self::serve([], quirks, true).await
    }

    async fn serve(
        script: impl IntoIterator<Item = ModelReply>,
        quirks: Quirks,
        obedient: bool,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let shutdown = CancellationToken::new();
        let state = Arc::new(ServerState {
            script: Mutex::new(script.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
            quirks,
            stopped: shutdown.clone(),
            open_streams: Arc::new(AtomicU64::new(0)),
            obedient,
            obeyed: Mutex::new(Vec::new()),
        });
        let app = Router::new().fallback(handle).with_state(state.clone());
        let stop = shutdown.clone();
        tokio::spawn(async move {
            // The stop signal ends held requests and streams first; a connection a client
            // keeps open (a pooled keep-alive) must not hold the server up after that.
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await;
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

    /// Adds replies to the end of the script.
    pub fn push(&self, replies: impl IntoIterator<Item = ModelReply>) {
        self.state.script.lock().extend(replies);
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

    /// The model requests (either API) received so far, in order.
    pub fn model_requests(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(RecordedRequest::is_model_request)
            .collect()
    }

    /// Every call the obedient model asked for so far ([`ModelReply::Obey`]), in order.
    pub fn obeyed_calls(&self) -> Vec<Instruction> {
        self.state.obeyed.lock().clone()
    }

    /// How many scripted replies are still unplayed.
    pub fn remaining_replies(&self) -> usize {
        self.state.script.lock().len()
    }

    /// How many response streams are open now: a stream the client closed is counted out
    /// as soon as the server notices.
    pub fn open_streams(&self) -> u64 {
        self.state.open_streams.load(Ordering::SeqCst)
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
        query: uri.query().map(str::to_owned),
        authorization: headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned),
        headers: headers
            .iter()
            .filter_map(|(name, value)| {
                Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
            })
            .collect(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    state.requests.lock().push(request.clone());
    if let Some(key) = &state.quirks.required_key
        && request.authorization.as_deref() != Some(format!("Bearer {key}").as_str())
    {
        return error(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "Incorrect API key provided.",
        );
    }
    if method == Method::GET && uri.path().ends_with("/models") {
        return axum::Json(
            json!({"object": "list", "data": [{"id": "scripted", "object": "model"}]}),
        )
        .into_response();
    }
    if !request.is_model_request() {
        return error(
            StatusCode::NOT_FOUND,
            "not_found",
            "only /v1/chat/completions, /v1/responses and /v1/models are served",
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
    let mut reply = state.script.lock().pop_front();
    if reply.is_none() && state.obedient {
        reply = Some(ModelReply::Obey);
    }
    let answer = match reply {
        Some(ModelReply::Text(text)) => Answer::Text(text, None),
        Some(ModelReply::Paced { text, pause }) => Answer::Text(text, Some(pause)),
        Some(ModelReply::ToolCall { name, arguments }) => {
            Answer::ToolCalls(vec![(name, arguments)])
        }
        Some(ModelReply::ToolCalls(calls)) => Answer::ToolCalls(calls),
        Some(ModelReply::QuoteToolResult { prefix }) => {
            let quoted = request.tool_messages().pop().unwrap_or_default();
            Answer::Text(format!("{prefix}{quoted}"), None)
        }
        Some(ModelReply::Error { status, message }) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return error(status, "api_error", &message);
        }
        Some(ModelReply::RateLimited { retry_after_secs }) => {
            let mut response = error(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                "Rate limit reached; try again later.",
            );
            if let Ok(value) = retry_after_secs.to_string().parse() {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
            return response;
        }
        Some(ModelReply::Hold) => {
            state.stopped.cancelled().await;
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "api_error",
                "the scripted model server stopped",
            );
        }
        Some(ModelReply::Garbage) => Answer::Garbage,
        Some(ModelReply::CutOff) => Answer::CutOff,
        Some(ModelReply::Stall(text)) => Answer::Stall(text),
        Some(ModelReply::Obey) => match obedient::obey(&request) {
            Obedience::Calls(calls) => {
                state.obeyed.lock().extend(calls.iter().cloned());
                Answer::ToolCalls(
                    calls
                        .into_iter()
                        .map(|call| (call.name, call.arguments))
                        .collect(),
                )
            }
            Obedience::Text(text) => Answer::Text(text, None),
        },
        None => Answer::Text("(the scripted model has no more replies)".into(), None),
    };
    let model = request.body["model"]
        .as_str()
        .unwrap_or("scripted")
        .to_owned();
    let stream = request.body["stream"] == true;
    if request.is_response() {
        return sse(&state, responses_events(&state.quirks, &model, answer));
    }
    if stream {
        sse(&state, chat_chunks(&state.quirks, &model, answer))
    } else {
        whole(&model, answer)
    }
}

/// A reply with its tool result already quoted.
enum Answer {
    /// Text, with a pause before each word when paced.
    Text(String, Option<std::time::Duration>),
    ToolCalls(Vec<(String, Value)>),
    Garbage,
    CutOff,
    Stall(String),
}

/// One piece of an SSE body.
enum Frame {
    /// A `data:` event with this JSON (and the `event:` name, for the Responses API).
    Data(Option<String>, Value),
    /// A raw line sequence, written as given.
    Raw(&'static str),
    /// End the body with an I/O error, as a dropped connection does.
    Break,
    /// Send nothing more, keeping the body open until the server stops.
    Stall,
    /// Wait this long before the next frame.
    Pause(std::time::Duration),
}

fn error(status: StatusCode, kind: &str, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": kind, "param": null, "code": null}});
    (status, axum::Json(body)).into_response()
}

fn next_id(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("{prefix}{:08x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn whole(model: &str, answer: Answer) -> Response {
    let (message, finish) = match answer {
        Answer::ToolCalls(calls) => (
            json!({
                "role": "assistant",
                "content": null,
                "tool_calls": calls.iter().map(|(name, arguments)| json!({
                    "id": next_id("call_"),
                    "type": "function",
                    "function": {"name": name, "arguments": arguments.to_string()},
                })).collect::<Vec<_>>(),
            }),
            "tool_calls",
        ),
        Answer::Text(text, _) => (json!({"role": "assistant", "content": text}), "stop"),
        Answer::Garbage | Answer::CutOff | Answer::Stall(_) => {
            return (StatusCode::OK, "{\"choices\": [").into_response();
        }
    };
    let body = json!({
        "id": next_id("chatcmpl-"),
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    });
    axum::Json(body).into_response()
}

/// `text` in pieces of `len` bytes on character boundaries (0: two halves).
fn pieces(text: &str, len: usize) -> Vec<String> {
    let len = if len == 0 {
        text.len().div_ceil(2).max(1)
    } else {
        len
    };
    let mut out = Vec::new();
    let mut current = String::new();
    for ch in text.chars() {
        if current.len() + ch.len_utf8() > len && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        current.push(ch);
    }
    if !current.is_empty() || out.is_empty() {
        out.push(current);
    }
    out
}

/// The usage a scripted answer reports: counted in words, so tests can predict it.
fn usage_of(text: &str) -> (u64, u64) {
    (7, text.split_whitespace().count() as u64)
}

fn chat_chunks(quirks: &Quirks, model: &str, answer: Answer) -> Vec<Frame> {
    let id = next_id("chatcmpl-");
    let chunk = |delta: Value, finish: Value| {
        Frame::Data(
            None,
            json!({
                "id": id,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }),
        )
    };
    let mut frames = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let mut output_words = String::new();
    match answer {
        Answer::ToolCalls(calls) => {
            for (index, (name, arguments)) in calls.iter().enumerate() {
                let arguments = arguments.to_string();
                output_words.push_str(&arguments);
                output_words.push(' ');
                let mut head = json!({"index": index, "type": "function", "function": {"name": name, "arguments": ""}});
                if !quirks.omit_tool_call_ids {
                    head["id"] = json!(next_id("call_"));
                }
                frames.push(chunk(json!({"tool_calls": [head]}), Value::Null));
                for piece in pieces(&arguments, quirks.argument_piece_len) {
                    frames.push(chunk(
                        json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                        Value::Null,
                    ));
                }
            }
            let finish = quirks.tool_finish_reason.as_deref().unwrap_or("tool_calls");
            frames.push(chunk(json!({}), json!(finish)));
        }
        Answer::Text(text, pause) => {
            output_words.push_str(&text);
            for piece in split_words(&text) {
                frames.extend(pause.map(Frame::Pause));
                frames.push(chunk(json!({"content": piece}), Value::Null));
            }
            frames.push(chunk(json!({}), json!("stop")));
        }
        Answer::Garbage => {
            frames.push(chunk(json!({"content": "Partial "}), Value::Null));
            frames.push(Frame::Raw("data: {this is not json\n\n"));
            return frames;
        }
        Answer::CutOff => {
            frames.push(chunk(json!({"content": "Partial "}), Value::Null));
            frames.push(Frame::Break);
            return frames;
        }
        Answer::Stall(text) => {
            frames.push(chunk(json!({"content": text}), Value::Null));
            frames.push(Frame::Stall);
            return frames;
        }
    }
    let (input, output) = usage_of(&output_words);
    let usage = json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output});
    if quirks.usage_in_last_chunk {
        frames.push(Frame::Data(
            None,
            json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": model, "choices": [], "usage": usage}),
        ));
    } else if let Some(Frame::Data(_, last)) = frames.last_mut() {
        last["usage"] = usage;
    }
    if !quirks.omit_done {
        frames.push(Frame::Raw("data: [DONE]\n\n"));
    }
    frames
}

fn responses_events(quirks: &Quirks, model: &str, answer: Answer) -> Vec<Frame> {
    let response_id = next_id("resp_");
    let event = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        Frame::Data(Some(kind.to_owned()), data)
    };
    let mut frames = vec![event(
        "response.created",
        json!({"response": {"id": response_id, "object": "response", "status": "in_progress", "model": model, "output": []}}),
    )];
    let mut output = Vec::new();
    let mut output_words = String::new();
    match answer {
        Answer::Text(text, pause) => {
            let item_id = next_id("msg_");
            frames.push(event(
                "response.output_item.added",
                json!({"output_index": 0, "item": {"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []}}),
            ));
            for piece in split_words(&text) {
                frames.extend(pause.map(Frame::Pause));
                frames.push(event(
                    "response.output_text.delta",
                    json!({"item_id": item_id, "output_index": 0, "content_index": 0, "delta": piece}),
                ));
            }
            frames.push(event(
                "response.output_text.done",
                json!({"item_id": item_id, "output_index": 0, "content_index": 0, "text": text}),
            ));
            let item = json!({"type": "message", "id": item_id, "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text}]});
            frames.push(event(
                "response.output_item.done",
                json!({"output_index": 0, "item": item}),
            ));
            output.push(item);
            output_words.push_str(&text);
        }
        Answer::ToolCalls(calls) => {
            for (index, (name, arguments)) in calls.iter().enumerate() {
                let arguments = arguments.to_string();
                output_words.push_str(&arguments);
                output_words.push(' ');
                let item_id = next_id("fc_");
                let mut item = json!({"type": "function_call", "id": item_id, "name": name, "arguments": "", "status": "in_progress"});
                if !quirks.omit_tool_call_ids {
                    item["call_id"] = json!(next_id("call_"));
                }
                frames.push(event(
                    "response.output_item.added",
                    json!({"output_index": index, "item": item}),
                ));
                for piece in pieces(&arguments, quirks.argument_piece_len) {
                    frames.push(event(
                        "response.function_call_arguments.delta",
                        json!({"item_id": item_id, "output_index": index, "delta": piece}),
                    ));
                }
                frames.push(event(
                    "response.function_call_arguments.done",
                    json!({"item_id": item_id, "output_index": index, "arguments": arguments}),
                ));
                item["arguments"] = json!(arguments);
                item["status"] = json!("completed");
                frames.push(event(
                    "response.output_item.done",
                    json!({"output_index": index, "item": item}),
                ));
                output.push(item);
            }
        }
        Answer::Garbage => {
            frames.push(Frame::Raw(
                "event: response.output_text.delta\ndata: {nope\n\n",
            ));
            return frames;
        }
        Answer::CutOff => {
            frames.push(event(
                "response.output_text.delta",
                json!({"item_id": "msg_cut", "output_index": 0, "content_index": 0, "delta": "Partial "}),
            ));
            frames.push(Frame::Break);
            return frames;
        }
        Answer::Stall(text) => {
            frames.push(event(
                "response.output_text.delta",
                json!({"item_id": "msg_stall", "output_index": 0, "content_index": 0, "delta": text}),
            ));
            frames.push(Frame::Stall);
            return frames;
        }
    }
    let (input, output_tokens) = usage_of(&output_words);
    frames.push(event(
        "response.completed",
        json!({"response": {
            "id": response_id, "object": "response", "status": "completed", "model": model,
            "output": output,
            "usage": {"input_tokens": input, "output_tokens": output_tokens, "total_tokens": input + output_tokens},
        }}),
    ));
    frames
}

/// Counts a response body as open until it is dropped.
struct OpenStream(Arc<AtomicU64>);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn sse(state: &Arc<ServerState>, frames: Vec<Frame>) -> Response {
    let keep_alive = state.quirks.keep_alive_comments;
    state.open_streams.fetch_add(1, Ordering::SeqCst);
    let open = OpenStream(state.open_streams.clone());
    let stopped = state.stopped.clone();
    let body = async_stream(frames, keep_alive, open, stopped);
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// The frames as body chunks, one per chunk (a client may read several in one go, as from a
/// real server), ending at a [`Frame::Break`] with an error, at a [`Frame::Stall`] only when
/// the server stops.
fn async_stream(
    frames: Vec<Frame>,
    keep_alive: bool,
    open: OpenStream,
    stopped: CancellationToken,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send {
    futures::stream::unfold(
        (frames.into_iter(), open, stopped),
        move |(mut frames, open, stopped)| async move {
            if stopped.is_cancelled() {
                return None;
            }
            let mut frame = frames.next()?;
            while let Frame::Pause(pause) = frame {
                tokio::select! {
                    () = stopped.cancelled() => return None,
                    () = tokio::time::sleep(pause) => {}
                }
                frame = frames.next()?;
            }
            let bytes = match frame {
                Frame::Data(name, data) => {
                    let mut text = String::new();
                    if keep_alive {
                        text.push_str(": keep-alive\n\n");
                    }
                    if let Some(name) = name {
                        text.push_str(&format!("event: {name}\n"));
                    }
                    text.push_str(&format!("data: {data}\n\n"));
                    Ok(Bytes::from(text))
                }
                Frame::Raw(raw) => Ok(Bytes::from_static(raw.as_bytes())),
                Frame::Break => Err(std::io::Error::other("the scripted model cut the stream")),
                Frame::Stall => {
                    stopped.cancelled().await;
                    return None;
                }
                // Waited out above; nothing to send.
                Frame::Pause(_) => Ok(Bytes::new()),
            };
            Some((bytes, (frames, open, stopped)))
        },
    )
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

    #[test]
    fn words_keep_their_spaces_and_pieces_their_characters() {
        assert_eq!(split_words("a bc d"), ["a ", "bc ", "d"]);
        assert_eq!(split_words("").len(), 0);
        assert_eq!(pieces("abcdé", 2), ["ab", "cd", "é"]);
        assert_eq!(pieces("abcd", 0), ["ab", "cd"]);
        assert_eq!(pieces("", 3), [""]);
    }

    fn state(script: Vec<ModelReply>) -> Arc<ServerState> {
        Arc::new(ServerState {
            script: Mutex::new(script.into()),
            requests: Mutex::new(Vec::new()),
            quirks: Quirks::default(),
            stopped: CancellationToken::new(),
            open_streams: Arc::new(AtomicU64::new(0)),
            obedient: false,
            obeyed: Mutex::new(Vec::new()),
        })
    }

    async fn post(state: &Arc<ServerState>, path: &'static str, body: Value) -> Response {
        handle(
            State(state.clone()),
            Method::POST,
            Uri::from_static(path),
            HeaderMap::new(),
            Bytes::from(body.to_string()),
        )
        .await
    }

    async fn text(response: Response) -> String {
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn invalid_function_names_are_rejected_like_the_real_apis_do() {
        let state = state(vec![ModelReply::Text("unused".into())]);
        let dotted = json!({"model": "m", "tools": [{"type": "function", "function": {"name": "workflow.getDefinition"}}]});
        let response = post(&state, "/v1/chat/completions", dotted).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        assert!(text(response).await.contains("workflow.getDefinition"));
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
        let call = post(&state, "/v1/chat/completions", offered.clone()).await;
        assert_eq!(call.status(), StatusCode::OK);
        let call: Value = serde_json::from_str(&text(call).await).unwrap();
        let function = &call["choices"][0]["message"]["tool_calls"][0]["function"];
        assert_eq!(function["name"], "workflow_getDefinition");
        assert_eq!(function["arguments"], r#"{"definitionId":"wf-1"}"#);

        let mut with_result = offered;
        with_result["messages"] =
            json!([{"role": "tool", "tool_call_id": "c", "content": "{\"name\":\"Hello\"}"}]);
        with_result["stream"] = json!(true);
        let quoted = text(post(&state, "/v1/chat/completions", with_result).await).await;
        assert!(
            quoted.starts_with("data: ") && quoted.ends_with("data: [DONE]\n\n"),
            "{quoted}"
        );
        let content: String = quoted
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

        let refused = post(&state, "/v1/chat/completions", json!({"model": "m"})).await;
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(state.requests.lock().len(), 3);
    }

    #[tokio::test]
    async fn the_responses_api_streams_named_events_and_quotes_function_outputs() {
        let state = state(vec![
            ModelReply::ToolCall {
                name: "echo".into(),
                arguments: json!({"text": "hi"}),
            },
            ModelReply::QuoteToolResult {
                prefix: "Echo: ".into(),
            },
        ]);
        let first = text(
            post(
                &state,
                "/v1/responses",
                json!({"model": "m", "stream": true}),
            )
            .await,
        )
        .await;
        assert!(first.starts_with("event: response.created\n"), "{first}");
        assert!(first.contains("event: response.function_call_arguments.delta"));
        assert!(first.contains("\"call_id\":\"call_"));
        assert!(first.contains("event: response.completed"));
        let second = text(
            post(
                &state,
                "/v1/responses",
                json!({"model": "m", "stream": true, "input": [
                    {"type": "function_call_output", "call_id": "c", "output": "{\"echo\":\"hi\"}"}
                ]}),
            )
            .await,
        )
        .await;
        let deltas: String = second
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .filter(|event| event["type"] == "response.output_text.delta")
            .filter_map(|event| event["delta"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(deltas, r#"Echo: {"echo":"hi"}"#);
    }
}
