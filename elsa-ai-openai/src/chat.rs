//! The Chat Completions API: the request body, and the streamed answer read leniently, as
//! real servers send it (arguments over many chunks, calls without ids, any
//! `finish_reason`, usage in a last chunk without choices, keep-alive comments).

use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::client::{EventStream, ModelError};
use crate::round::{CallAssembler, Item, Reporter, RoundOutput};

/// The request body: the items as messages, the tools as functions, streamed with usage.
pub(crate) fn request(model: &str, items: &[Item], tools: &[Value]) -> Value {
    let messages: Vec<Value> = items
        .iter()
        .map(|item| match item {
            Item::System(text) => json!({"role": "system", "content": text}),
            Item::User(text) => json!({"role": "user", "content": text}),
            Item::Assistant(text) => json!({"role": "assistant", "content": text}),
            Item::Calls { text, calls } => json!({
                "role": "assistant",
                "content": if text.is_empty() { Value::Null } else { json!(text) },
                "tool_calls": calls.iter().map(|call| json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                })).collect::<Vec<_>>(),
            }),
            Item::Result { call_id, output } => {
                json!({"role": "tool", "tool_call_id": call_id, "content": output})
            }
        })
        .collect();
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !tools.is_empty() {
        body["tools"] = tools
            .iter()
            .map(|tool| json!({"type": "function", "function": tool}))
            .collect();
    }
    body
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Deserialize)]
struct CallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    /// A string on every OpenAI-compatible server seen; an object is accepted too.
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// Reads one streamed answer, reporting text deltas as they arrive. The answer is complete
/// at `[DONE]`, or at the end of the body once a `finish_reason` was seen; a body that ends
/// before either is a protocol error.
pub(crate) async fn read(
    mut events: EventStream,
    reporter: &Reporter,
    next_id: impl FnMut() -> String,
) -> Result<RoundOutput, ModelError> {
    let mut output = RoundOutput::default();
    let mut calls = CallAssembler::default();
    let mut finished = false;
    let mut done = false;
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            // The answer is whole; only the usage chunk or `[DONE]` was still to come.
            Err(_) if finished => break,
            Err(error) => return Err(error),
        };
        let data = event.data.trim();
        if data.is_empty() {
            continue;
        }
        if data == "[DONE]" {
            done = true;
            break;
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|error| {
            ModelError::Protocol(format!("a chunk is not Chat Completions JSON: {error}"))
        })?;
        if let Some(error) = chunk.error {
            let message = error["message"]
                .as_str()
                .map_or_else(|| error.to_string(), str::to_owned);
            return Err(ModelError::Unavailable(format!(
                "the model failed mid-answer: {message}"
            )));
        }
        if let Some(usage) = chunk.usage {
            output.usage = Some((usage.prompt_tokens, usage.completion_tokens));
        }
        // Only the first choice is read: the request never asks for more than one.
        let Some(choice) = chunk.choices.and_then(|choices| choices.into_iter().next()) else {
            continue;
        };
        if let Some(delta) = choice.delta {
            if let Some(text) = delta.content {
                reporter.delta(&mut output, &text).await?;
            }
            for (position, call) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
                let key = call.index.unwrap_or(position as u64).to_string();
                let (name, arguments) = match call.function {
                    Some(function) => (function.name, function.arguments),
                    None => (None, None),
                };
                let arguments = arguments.map(|arguments| match arguments {
                    Value::String(text) => text,
                    other => other.to_string(),
                });
                calls.fragment(
                    &key,
                    call.id.as_deref(),
                    name.as_deref(),
                    arguments.as_deref(),
                );
            }
        }
        // Any finish reason ends the answer: `tool_calls`, `function_call`, `stop` (which
        // some servers send after tool calls too), `length`, `content_filter`, `eos` …;
        // whether it asks for tools is told by the calls it carries.
        if choice.finish_reason.is_some() {
            finished = true;
        }
    }
    if !done && !finished {
        return Err(ModelError::Protocol(
            "the answer ended before the model finished it".to_owned(),
        ));
    }
    if !calls.is_empty() {
        output.calls = calls.finish(next_id)?;
    }
    Ok(output)
}
