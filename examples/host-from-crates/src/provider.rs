//! [`OrderDeskProvider`]: Acme's rule-based provider. It owns its "model/tool loop" like any
//! provider: it decides which tools to call, calls them only through the governed invoker the
//! host hands it (so permissions, agent scope, enablement, redaction and audit apply), only
//! calls tools the turn offers it, and reports everything as provider events.
//!
//! The rules, for a message naming an order number (`ORD-1002`):
//!
//! 1. call `acme.orderStatus` with the order number;
//! 2. if a `WorkflowDefinition` is attached, call `workflow.proposeUpdate` on it with a
//!    `setDescription` operation noting the order's status, against the version the
//!    attachment resolved to;
//! 3. answer with the order's facts (the tool's summary) and the proposal's id and status.
//!
//! A message without an order number gets an explanation; refusals are reported as such.

use std::sync::Arc;

use acme_tools::ORDER_STATUS;
use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiProvider, AiProviderEvent, AiProviderInfo, AiProviderToolInvocation,
    AiProviderToolInvoker, AiSessionHandle, AiToolResult, AiTurnRequest, AttachmentKind,
    CreateAiSessionRequest,
};
use futures::StreamExt;
use futures::channel::mpsc::{UnboundedSender, unbounded};
use futures::stream::BoxStream;
use serde_json::{Value, json};

/// The name the provider reports.
pub const PROVIDER_NAME: &str = "acme-rules";

const PROPOSE_UPDATE: &str = "workflow.proposeUpdate";

/// Acme's rule-based provider; see the [module documentation](self).
#[derive(Clone, Copy, Debug, Default)]
pub struct OrderDeskProvider;

#[async_trait]
impl AiProvider for OrderDeskProvider {
    fn name(&self) -> &str {
        PROVIDER_NAME
    }

    fn info(&self) -> AiProviderInfo {
        AiProviderInfo {
            name: PROVIDER_NAME.to_owned(),
            display_name: "Acme order desk (rules, no model)".to_owned(),
            model: None,
            scripted: true,
        }
    }

    async fn create_session(
        &self,
        request: CreateAiSessionRequest,
    ) -> Result<AiSessionHandle, AiError> {
        Ok(AiSessionHandle {
            session_id: format!("{PROVIDER_NAME}-{}", request.conversation_id),
            provider: PROVIDER_NAME.to_owned(),
            conversation_id: request.conversation_id,
        })
    }

    /// The rules keep no state: any replica continues any session.
    async fn continue_session(
        &self,
        recorded: &AiSessionHandle,
        _request: CreateAiSessionRequest,
    ) -> Result<AiSessionHandle, AiError> {
        Ok(recorded.clone())
    }

    fn execute_turn(
        &self,
        request: AiTurnRequest,
        invoker: Arc<dyn AiProviderToolInvoker>,
    ) -> BoxStream<'static, AiProviderEvent> {
        // The turn runs inside the stream it reports on: the host polls it, and dropping
        // the stream stops it.
        let (events, reported) = unbounded();
        let turn = Turn {
            request,
            invoker,
            events,
            calls: 0,
        };
        let running = futures::stream::once(turn.run()).filter_map(|()| async { None });
        futures::stream::select(reported, running).boxed()
    }
}

/// One turn being answered.
struct Turn {
    request: AiTurnRequest,
    invoker: Arc<dyn AiProviderToolInvoker>,
    events: UnboundedSender<AiProviderEvent>,
    calls: usize,
}

impl Turn {
    async fn run(mut self) {
        let end = match self.answer().await {
            Ok(text) => {
                self.say(&text);
                AiProviderEvent::Completed
            }
            Err(error) => AiProviderEvent::Failed { error },
        };
        self.emit(end);
    }

    fn emit(&self, event: AiProviderEvent) {
        // Nobody listens any more only when the host dropped the turn.
        let _ = self.events.unbounded_send(event);
    }

    /// Streams `text` a word at a time, as a model would, then the whole message.
    fn say(&self, text: &str) {
        for word in text.split_inclusive(' ') {
            self.emit(AiProviderEvent::AssistantDelta {
                text: word.to_owned(),
            });
        }
        self.emit(AiProviderEvent::AssistantMessage {
            text: text.to_owned(),
        });
    }

    /// Whether the host offers the tool this turn (a model is shown only those).
    fn offered(&self, tool: &str) -> bool {
        self.request.tools.iter().any(|t| t.name == tool)
    }

    /// Calls a tool through the governed invoker, reporting the call before and after.
    async fn call(&mut self, tool: &str, arguments: Value) -> Result<AiToolResult, AiError> {
        if self.request.cancellation.is_cancelled() {
            return Err(AiError::unavailable(
                "turn_cancelled",
                "the turn was cancelled",
            ));
        }
        self.calls += 1;
        // Unique within the conversation: the history grows with every turn.
        let call_id = format!(
            "{}-{}-{}",
            self.request.session.session_id,
            self.request.history.len(),
            self.calls
        );
        self.emit(AiProviderEvent::ToolStarted {
            call_id: call_id.clone(),
            tool_name: tool.to_owned(),
            arguments: arguments.clone(),
        });
        let result = self
            .invoker
            .invoke(AiProviderToolInvocation {
                call_id: call_id.clone(),
                tool_name: tool.to_owned(),
                arguments,
            })
            .await;
        self.emit(AiProviderEvent::ToolCompleted {
            call_id,
            tool_name: tool.to_owned(),
            result: result.clone(),
        });
        Ok(result)
    }

    /// Applies the rules; returns the answer.
    async fn answer(&mut self) -> Result<String, AiError> {
        let Some(order) = order_number(&self.request.message) else {
            return Ok(
                "I am Acme's order desk (rules, no model). Ask about an order by its \
                       number, such as ORD-1002, and attach a workflow to have the order noted \
                       on it as a proposal."
                    .to_owned(),
            );
        };
        if !self.offered(ORDER_STATUS) {
            return Ok(format!(
                "I cannot look up {order}: {ORDER_STATUS} is not available to me here."
            ));
        }
        let status = self.call(ORDER_STATUS, json!({ "orderId": order })).await?;
        if !status.is_success() {
            return Ok(format!(
                "I could not read order {order}: {}",
                error_text(&status)
            ));
        }
        let facts = status.content["summary"].as_str().unwrap_or("").to_owned();
        let Some(workflow) = self
            .request
            .context
            .iter()
            .find(|c| c.kind == AttachmentKind::WorkflowDefinition)
        else {
            return Ok(facts);
        };
        let (definition_id, version) = (
            workflow.reference_id.clone(),
            workflow.content["version"].as_i64(),
        );
        if !self.offered(PROPOSE_UPDATE) {
            return Ok(format!(
                "{facts} I cannot note it on {definition_id}: {PROPOSE_UPDATE} is not enabled."
            ));
        }
        let Some(version) = version else {
            return Ok(format!(
                "{facts} I cannot note it on {definition_id}: its version is unknown."
            ));
        };
        let asked: String = self.request.message.chars().take(200).collect();
        let arguments = json!({
            "definitionId": definition_id,
            "baselineVersion": version,
            "operations": [{
                "op": "setDescription",
                "description": format!("Checked by the Acme order desk: {facts}"),
            }],
            "rationale": format!("The order desk read {order} and notes it on the workflow, as asked: \"{asked}\""),
        });
        let proposed = self.call(PROPOSE_UPDATE, arguments).await?;
        if !proposed.is_success() {
            return Ok(format!(
                "{facts} I could not propose the note on {definition_id}: {}",
                error_text(&proposed)
            ));
        }
        Ok(format!(
            "{facts} I proposed noting it on {definition_id} as proposal {} (status {}); \
             nothing changes until a person approves and applies it.",
            proposed.content["proposalId"].as_str().unwrap_or("?"),
            proposed.content["status"].as_str().unwrap_or("?"),
        ))
    }
}

/// The first order number in the message (`ORD-` and digits, in any case).
fn order_number(message: &str) -> Option<String> {
    message
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .map(str::to_ascii_uppercase)
        .find(|word| {
            word.strip_prefix("ORD-").is_some_and(|digits| {
                (1..=10).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit())
            })
        })
}

fn error_text(result: &AiToolResult) -> String {
    match &result.error {
        Some(error) => format!("{} ({})", error.message, error.code),
        None => "the tool returned no result".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::order_number;

    #[test]
    fn order_numbers_are_found_in_any_case_and_punctuation() {
        assert_eq!(
            order_number("Where is ord-1002?").as_deref(),
            Some("ORD-1002")
        );
        assert_eq!(order_number("(ORD-7), please").as_deref(), Some("ORD-7"));
        assert_eq!(order_number("ORD- or ORD-x12 or ORDER-1"), None);
    }
}
