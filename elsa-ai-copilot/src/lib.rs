//! Weaver's GitHub Copilot provider: [`CopilotProvider`] implements the host's
//! [`AiProvider`](elsa_ai_abstractions::AiProvider) on the official `github-copilot-sdk`,
//! which drives the Copilot CLI (`copilot --server --stdio`).
//!
//! The Copilot runtime owns the agent loop: planning, tool-call sequencing and continuation
//! turns. Weaver keeps governance: every tool the model is offered is one the host
//! authorized for the turn, each call runs through the host's tool invoker (the
//! `ToolGovernor`: permissions, redaction, clamping, audit), a call to anything else is
//! governed and refused, and the CLI's own tools (shell, file edits, web fetch) are never
//! offered. Each Weaver conversation is one Copilot session, each Weaver agent becomes the
//! session's custom agent scoped to the turn's tools, and the session's events are mapped
//! to [`AiProviderEvent`](elsa_ai_abstractions::AiProviderEvent)s: nothing of the SDK's
//! types or event names leaves this crate.
//!
//! With a bring-your-own-key endpoint (`byok_type`, `base_url`, `api_key_env`) the CLI
//! needs no GitHub login and talks only to that endpoint, so any OpenAI-compatible server
//! (Ollama, vLLM, LM Studio, ...) works. One CLI process serves every session; it starts on
//! first use, restarts if it died, and stops on [`CopilotProvider::shutdown`]. A CLI that is
//! missing, misconfigured, of an incompatible version or whose model endpoint fails is
//! reported as a 503 [`AiError::Unavailable`](elsa_ai_abstractions::AiError).
//!
//! Tool names: Weaver's dotted names (`workflow.getDefinition`) are offered to the model as
//! function names (`workflow_getDefinition`), because model APIs allow only
//! `^[a-zA-Z0-9_-]{1,64}$`; the mapping is reversible per turn and two tools that would
//! share a function name are refused.
//!
//! MCP servers: the host registers an MCP server's allowed tools as governed tools
//! (`mcp.<server>.<tool>`, scoped to the agents it names), so they reach this provider like
//! any other authorized tool. The CLI is never given MCP server configurations of its own:
//! it would call those servers itself, outside governance.
//!
//! # Example
//!
//! ```
//! use elsa_ai_abstractions::AiProvider;
//! use elsa_ai_copilot::{CopilotProvider, CopilotProviderConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The `[provider]` section of weaver.toml.
//! let config: CopilotProviderConfig = toml::from_str(
//!     r#"
//!     kind = "copilot"
//!     cli_path = "node_modules/.bin/copilot"
//!     model = "llama3.1"
//!     byok_type = "openai"
//!     base_url = "http://127.0.0.1:11434/v1"
//!     "#,
//! )?;
//! let provider = CopilotProvider::new(&config)?;
//! assert_eq!(provider.name(), "copilot");
//! // Hand `provider` to the host's ChatOrchestrator; on shutdown:
//! provider.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod config;
mod events;
mod logging;
mod provider;
mod runtime;
mod session;
mod tools;
mod turn;

#[cfg(feature = "testing")]
pub mod testing;

pub use config::{
    ByokType, CLI_PATH_ENV, CopilotConfigError, CopilotProviderConfig, PROVIDER_KIND, WireApi,
};
pub use provider::CopilotProvider;

/// The README's examples, compiled and run as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
