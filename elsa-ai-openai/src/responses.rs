//! The Responses API, used statelessly (`store: false`, the whole conversation as `input`
//! every round): the request body, and the streamed events read by their `type`.

use futures::StreamExt;
use serde_json::{Value, json};

use crate::client::{EventStream, ModelError};
use crate::round::{CallAssembler, Item, Reporter, RoundOutput};

/// The request body: instructions apart, the rest as input items, the tools as functions.
pub(crate) fn request(model: &str, items: &[Item], tools: &[Value]) -> Value {
    let mut instructions = Vec::new();
    let mut input = Vec::new();
    for item in items {
        match item {
            Item::System(text) => instructions.push(text.as_str()),
            Item::User(text) => input.push(json!({"role": "user", "content": text})),
            Item::Assistant(text) => input.push(json!({"role": "assistant", "content": text})),
            Item::Calls { text, calls } => {
                if !text.is_empty() {
                    input.push(json!({"role": "assistant", "content": text}));
                }
                input.extend(calls.iter().map(|call| {
                    json!({
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": call.arguments,
                    })
                }));
            }
            Item::Result { call_id, output } => input.push(json!({
                "type": "function_call_output",
                "call_id": call_id,
                "output": output,
            })),
        }
    }
    let mut body = json!({
        "model": model,
        "input": input,
        "stream": true,
        "store": false,
    });
    if !instructions.is_empty() {
        body["instructions"] = json!(instructions.join("\n\n"));
    }
    if !tools.is_empty() {
        body["tools"] = tools
            .iter()
            .map(|tool| {
                let mut function = tool.clone();
                function["type"] = json!("function");
                function
            })
            .collect();
    }
    body
}

/// The key of a function call's fragments: its item id, else its output index.
fn call_key(event: &Value) -> String {
    event["item_id"]
        .as_str()
        .or_else(|| event["item"]["id"].as_str())
        .map_or_else(|| format!("#{}", event["output_index"]), str::to_owned)
}

/// Reads one streamed response, reporting text deltas as they arrive, until
/// `response.completed` (or `response.incomplete`, whose output is used as it stands).
pub(crate) async fn read(
    mut events: EventStream,
    reporter: &Reporter,
    next_id: impl FnMut() -> String,
) -> Result<RoundOutput, ModelError> {
    let mut output = RoundOutput::default();
    let mut calls = CallAssembler::default();
    let mut completed = false;
    while let Some(event) = events.next().await {
        let event = event?;
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            continue;
        }
        let payload: Value = serde_json::from_str(data).map_err(|error| {
            ModelError::Protocol(format!("an event is not Responses API JSON: {error}"))
        })?;
        let kind = payload["type"]
            .as_str()
            .filter(|kind| !kind.is_empty())
            .unwrap_or(event.event.as_str());
        match kind {
            "response.output_text.delta" => {
                let delta = payload["delta"].as_str().unwrap_or_default();
                reporter.delta(&mut output, delta).await?;
            }
            "response.output_item.added" | "response.output_item.done"
                if payload["item"]["type"] == "function_call" =>
            {
                let item = &payload["item"];
                let key = call_key(&payload);
                let call_id = item["call_id"].as_str().or_else(|| item["id"].as_str());
                calls.fragment(&key, call_id, item["name"].as_str(), None);
                if kind == "response.output_item.done"
                    && let Some(arguments) = item["arguments"].as_str()
                {
                    calls.complete_arguments(&key, arguments);
                }
            }
            "response.function_call_arguments.delta" => {
                let key = call_key(&payload);
                calls.fragment(&key, None, None, payload["delta"].as_str());
            }
            "response.function_call_arguments.done" => {
                if let Some(arguments) = payload["arguments"].as_str() {
                    calls.complete_arguments(&call_key(&payload), arguments);
                }
            }
            "response.completed" | "response.incomplete" => {
                let usage = &payload["response"]["usage"];
                if usage.is_object() {
                    output.usage = Some((
                        usage["input_tokens"].as_u64().unwrap_or(0),
                        usage["output_tokens"].as_u64().unwrap_or(0),
                    ));
                }
                completed = true;
                break;
            }
            "response.failed" | "error" => {
                let error = if payload["response"]["error"].is_object() {
                    &payload["response"]["error"]
                } else if payload["error"].is_object() {
                    &payload["error"]
                } else {
                    &payload
                };
                let message = error["message"].as_str().unwrap_or("no message");
                return Err(ModelError::Unavailable(format!(
                    "the model failed mid-answer: {message}"
                )));
            }
            _ => {}
        }
    }
    if !completed {
        return Err(ModelError::Protocol(
            "the response ended before the model completed it".to_owned(),
        ));
    }
    if !calls.is_empty() {
        output.calls = calls.finish(next_id)?;
    }
    Ok(output)
}
