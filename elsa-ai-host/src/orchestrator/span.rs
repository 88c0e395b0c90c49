//! The span of a chat turn, with the OpenTelemetry GenAI attribute names.

use tracing::Span;

/// The span of one chat turn: `gen_ai.operation.name = "chat"`, the provider as
/// `gen_ai.system` and `gen_ai.provider.name`, the conversation and the agent. It opens when
/// the request is accepted, so the turn's opening audit records are made inside it. How the
/// turn ended is recorded on it as `weaver.turn.outcome` (`completed`, `failed`,
/// `cancelled`, or `refused` for a request refused before it streamed) and `error.type` on
/// failure, and the
/// tokens the provider reported as `gen_ai.usage.input_tokens` and `gen_ai.usage.output_tokens`.
pub fn chat_span(provider: &str, model: Option<&str>, conversation_id: &str, agent: &str) -> Span {
    let otel_name = match model {
        Some(model) => format!("chat {model}"),
        None => format!("chat {provider}"),
    };
    tracing::info_span!(
        "chat",
        otel.name = %otel_name,
        otel.kind = "internal",
        gen_ai.operation.name = "chat",
        gen_ai.system = %provider,
        gen_ai.provider.name = %provider,
        gen_ai.request.model = model,
        gen_ai.conversation.id = %conversation_id,
        gen_ai.agent.name = %agent,
        weaver.turn.outcome = tracing::field::Empty,
        weaver.turn.tool_calls = tracing::field::Empty,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        error.type = tracing::field::Empty,
    )
}
