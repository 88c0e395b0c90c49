//! MCP both ways for Weaver, on the official Rust SDK (`rmcp`); no `rmcp` type leaves this
//! crate.
//!
//! * **Weaver as an MCP client** ([`McpClients`]): external MCP servers, configured
//!   server-side, each reached over stdio (a child process started from an empty
//!   environment, killed with weaver, restarted with backoff when it crashes) or streamable
//!   HTTP. Only the tools on a server's allowlist exist for Weaver, as
//!   `mcp.<server>.<tool>` with source `Mcp`; the host registers them like any tool, so every
//!   call passes the governor's eleven steps (schema validation, redaction of arguments and
//!   result, clamping, timeout, audit) and each is off until an administrator enables it.
//! * **Weaver as an MCP server** ([`McpEndpoint`]): the caller's governed tools over
//!   streamable HTTP, listed and called exactly as a provider would see and call them.
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use elsa_ai_abstractions::{AiMcpServerRegistration, McpTransport, Permission};
//! use elsa_ai_host::Redactor;
//! use elsa_ai_mcp::McpClients;
//!
//! # async fn run() {
//! let redactor = std::sync::Arc::new(Redactor::builder().build().unwrap());
//! let everything = AiMcpServerRegistration::new(
//!     "everything",
//!     McpTransport::Stdio {
//!         command: "mcp-server-everything".into(),
//!         args: vec![],
//!         env: vec![],
//!         secret_env: vec![],
//!     },
//!     vec!["echo".into()],
//!     vec![Permission::READ_WORKFLOWS],
//! );
//! let clients = McpClients::start(vec![everything], Duration::from_secs(15), redactor).await;
//! for registration in clients.tools() {
//!     // hand registration.tool to ToolRegistryBuilder::tool_for_tenants
//!     println!("{}", registration.tool.definition().name);
//! }
//! # }
//! ```

mod client;
mod server;

pub use client::{McpClients, McpServerState, McpServerStatus, McpToolRegistration};
pub use server::McpEndpoint;
