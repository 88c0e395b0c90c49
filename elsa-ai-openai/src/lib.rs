//! Weaver's OpenAI-compatible provider: [`OpenAiProvider`] implements the host's
//! [`AiProvider`](elsa_ai_abstractions::AiProvider) over the Chat Completions API (every
//! compatible server has it: Ollama, vLLM, LM Studio, llama.cpp, OpenAI, Azure OpenAI) or
//! the Responses API, with no runtime beside weaver.
//!
//! The provider owns the model/tool loop, as the provider contract asks: each round it
//! streams the model's answer (text deltas reported as they arrive, tool calls assembled
//! from their fragments), runs every requested call through the host's invoker (the
//! `ToolGovernor`: permissions, redaction, clamping, audit) in parallel, feeds the results
//! back, and stops after `max_tool_rounds` with `tool_round_limit`. Tool names are offered
//! as function names through the one reversible mapping every provider uses
//! ([`function_names`](elsa_ai_abstractions::function_names)); a name the turn does not know
//! goes to the invoker as written, which refuses and audits it.
//!
//! Failures are typed codes of a 503 [`AiError`](elsa_ai_abstractions::AiError):
//! `model_auth_failed` (401, 403), `model_rate_limited` (429 after retrying within the
//! request timeout, honouring `Retry-After`), `provider_unavailable` (5xx, timeout, refused
//! or broken connection), `model_request_rejected` (another 4xx, such as an unknown model),
//! `provider_protocol_error` (an answer that is not the API's format). A new session checks
//! that the endpoint answers (`GET {base_url}/models`), so these reach a client as HTTP
//! statuses before its stream starts; later they end the turn with `conversation.failed`.
//! Cancelling a turn drops the HTTP stream at once. Token usage is reported per request.
//!
//! The key is read from the variable `api_key_env` names; it, and the values of headers
//! with secret-looking names, are [`OpenAiProvider::secrets`] for the host's redactor, and
//! no `Debug` output or error message of this crate prints them. Nothing of the wire format
//! leaves this crate.
//!
//! # Example
//!
//! ```
//! use elsa_ai_abstractions::AiProvider;
//! use elsa_ai_openai::{OpenAiProvider, OpenAiProviderConfig};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The `[provider]` section of weaver.toml.
//! let config: OpenAiProviderConfig = toml::from_str(
//!     r#"
//!     kind = "openai"
//!     base_url = "http://127.0.0.1:11434/v1"
//!     model = "llama3.1"
//!     "#,
//! )?;
//! let provider = OpenAiProvider::new(&config)?;
//! assert_eq!(provider.name(), "openai");
//! assert_eq!(provider.info().model.as_deref(), Some("llama3.1"));
//! // Hand `provider` to the host's ChatOrchestrator.
//! # Ok(())
//! # }
//! ```

mod chat;
mod client;
mod config;
mod provider;
mod responses;
mod round;
mod turn;

pub use config::{OpenAiApi, OpenAiProviderConfig, PROVIDER_KIND};
pub use provider::OpenAiProvider;

/// The README's examples, compiled and run as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
