//! elsa-ai-server's integration tests, one binary: everything over HTTP on a real socket (the API,
//! streams, Studio's panel, the console in Chromium, MCP with the Inspector CLI, providers, durable
//! stores, an Elsa Server stand-in) and the real `weaver` binary.

mod chat_load;
mod chat_stream;
mod console_browser;
mod conversation_deletion;
mod durable_store;
mod elsa_server;
mod error_codes;
mod grounding;
mod http_api;
mod injection;
mod mcp;
mod oidc;
mod operations;
mod postgres_restart;
mod provider_turns;
mod replicas;
mod review_flow;
mod server_binary;
mod shipped_binary;
mod slow_readers;
mod store_faults;
mod studio_panel;
