//! One turn: the model/tool loop this provider owns. Each round sends the conversation so
//! far, streams the answer, and when the model asks for tools runs every call through the
//! host's invoker (in parallel) and feeds the results back, up to `max_tool_rounds`.

use std::sync::Arc;

use elsa_ai_abstractions::function_names::{self, ToolNames};
use elsa_ai_abstractions::{
    AiError, AiProviderEvent, AiProviderToolInvocation, AiProviderToolInvoker, AiToolMessage,
    AiTurnRequest, MessageRole,
};
use serde_json::{Value, json};

use crate::client::{ModelClient, ModelError};
use crate::config::OpenAiApi;
use crate::round::{Item, ModelCall, Reporter, RoundOutput};
use crate::{chat, responses};

/// Runs the turn to its end; the caller reports the result as `Completed` or `Failed`.
pub(crate) async fn run(
    client: &ModelClient,
    request: AiTurnRequest,
    invoker: Arc<dyn AiProviderToolInvoker>,
    reporter: &Reporter,
) -> Result<(), AiError> {
    let names = ToolNames::new(request.tools.iter().map(|tool| tool.name.as_str()))?
        .with_known(request.agent.allowed_tools.iter().map(String::as_str));
    let tools: Vec<Value> = request
        .tools
        .iter()
        .filter_map(|tool| {
            Some(json!({
                "name": names.wire(&tool.name)?,
                "description": tool.description,
                "parameters": tool.model_schema(),
            }))
        })
        .collect();
    let mut items = opening_items(&request);
    let settings = &client.settings;
    let mut made_up_ids = 0_u32;
    for _ in 0..settings.max_tool_rounds {
        let output = round(client, &items, &tools, &request, reporter, &mut made_up_ids).await?;
        if let Some((input_tokens, output_tokens)) = output.usage {
            reporter
                .send(AiProviderEvent::Usage {
                    input_tokens,
                    output_tokens,
                })
                .await?;
        }
        if !output.text.is_empty() {
            reporter
                .send(AiProviderEvent::AssistantMessage {
                    text: output.text.clone(),
                })
                .await?;
        }
        if output.calls.is_empty() {
            return Ok(());
        }
        let results =
            call_tools(&output.calls, &names, &request, invoker.as_ref(), reporter).await?;
        items.push(Item::Calls {
            text: output.text,
            calls: output.calls,
        });
        items.extend(results);
    }
    Err(AiError::unavailable(
        "tool_round_limit",
        format!(
            "the model was still asking for tools after {} rounds (max_tool_rounds), so the \
             turn was stopped",
            settings.max_tool_rounds
        ),
    ))
}

/// The agent's instructions, the conversation so far, then the turn's attachments and
/// message as the last user message.
fn opening_items(request: &AiTurnRequest) -> Vec<Item> {
    let mut items = Vec::with_capacity(request.history.len() + 2);
    if !request.agent.instructions.trim().is_empty() {
        items.push(Item::System(request.agent.instructions.clone()));
    }
    for earlier in &request.history {
        match earlier.role {
            MessageRole::User => items.push(Item::User(earlier.content.clone())),
            MessageRole::Assistant => items.push(Item::Assistant(earlier.content.clone())),
            // An earlier turn's tool call, as the model made it and read its result.
            MessageRole::Tool => {
                if let Some(call) = AiToolMessage::from_message(earlier) {
                    items.push(Item::Calls {
                        text: String::new(),
                        calls: vec![ModelCall {
                            id: call.call_id.clone(),
                            name: function_names::wire_name(&call.tool_name),
                            arguments: call.arguments.to_string(),
                        }],
                    });
                    items.push(Item::Result {
                        call_id: call.call_id,
                        output: call.result.to_string(),
                    });
                }
            }
            // A role newer than this provider is left out of the history.
            _ => {}
        }
    }
    let mut message = String::new();
    for attachment in &request.context {
        message.push_str(&attachment.prompt_block());
        message.push('\n');
    }
    message.push_str(&request.message);
    items.push(Item::User(message));
    items
}

/// One model request: sent, streamed and read; cancellation closes the stream at once.
async fn round(
    client: &ModelClient,
    items: &[Item],
    tools: &[Value],
    request: &AiTurnRequest,
    reporter: &Reporter,
    made_up_ids: &mut u32,
) -> Result<RoundOutput, ModelError> {
    let settings = &client.settings;
    let mut body = match settings.api {
        OpenAiApi::Chat => chat::request(&settings.model, items, tools),
        OpenAiApi::Responses => responses::request(&settings.model, items, tools),
    };
    settings.sampling.apply(&mut body, settings.api);
    let cancel = &request.cancellation;
    let events = client.stream(&body, cancel).await?;
    let next_id = || {
        *made_up_ids += 1;
        format!("call_weaver_{made_up_ids}")
    };
    let read = async {
        match settings.api {
            OpenAiApi::Chat => chat::read(events, reporter, next_id).await,
            OpenAiApi::Responses => responses::read(events, reporter, next_id).await,
        }
    };
    // Dropping the read future drops the response body, which closes the connection.
    tokio::select! {
        () = cancel.cancelled() => Err(ModelError::Cancelled),
        output = read => output,
    }
}

/// Runs the calls through the invoker, all at once, and returns their results in order.
/// A name the turn does not know goes to the invoker as written, which refuses and audits it.
async fn call_tools(
    calls: &[ModelCall],
    names: &ToolNames,
    request: &AiTurnRequest,
    invoker: &dyn AiProviderToolInvoker,
    reporter: &Reporter,
) -> Result<Vec<Item>, ModelError> {
    let mut invocations = Vec::with_capacity(calls.len());
    for call in calls {
        let tool_name = names.resolve(&call.name).unwrap_or(&call.name).to_owned();
        let arguments = parse_arguments(&call.arguments);
        let arguments = match request.tools.iter().find(|tool| tool.name == tool_name) {
            Some(tool) => tool.model_arguments(arguments),
            None => arguments,
        };
        reporter
            .send(AiProviderEvent::ToolStarted {
                call_id: call.id.clone(),
                tool_name: tool_name.clone(),
                arguments: arguments.clone(),
            })
            .await?;
        invocations.push(AiProviderToolInvocation {
            call_id: call.id.clone(),
            tool_name,
            arguments,
        });
    }
    // The governed calls run to their end even when the turn is cancelled: the governor
    // sees the cancellation itself, and every call's audit record is written.
    let results = futures::future::join_all(
        invocations
            .iter()
            .map(|invocation| invoker.invoke(invocation.clone())),
    )
    .await;
    let mut items = Vec::with_capacity(calls.len());
    for (invocation, result) in invocations.into_iter().zip(results) {
        items.push(Item::Result {
            call_id: invocation.call_id.clone(),
            output: result.to_model_text(),
        });
        reporter
            .send(AiProviderEvent::ToolCompleted {
                call_id: invocation.call_id,
                tool_name: invocation.tool_name,
                result,
            })
            .await?;
    }
    Ok(items)
}

/// The model's argument text as JSON: empty is `{}`, text that is not JSON is passed on as
/// a string, so that the governor's schema check refuses it and the model reads why.
fn parse_arguments(text: &str) -> Value {
    if text.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse_leniently() {
        assert_eq!(parse_arguments(""), json!({}));
        assert_eq!(parse_arguments(" {\"a\":1} "), json!({"a": 1}));
        assert_eq!(parse_arguments("{\"a\":"), json!("{\"a\":"));
    }
}
