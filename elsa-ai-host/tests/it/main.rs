//! elsa-ai-host's integration tests, one binary: governance step by step, the registries and
//! enablement, context, the orchestrator and reconnects, proposals, retention and the store
//! conformance suite on the in-memory stores. Telemetry has a binary of its own (`telemetry.rs`).

mod context;
mod conversation_deletion;
mod enablement;
mod fixtures;
mod governance;
mod host_core;
mod operations;
mod orchestrator;
mod proposals;
mod reconnect;
mod registry;
mod retention;
mod store_conformance;
mod tool_names;
