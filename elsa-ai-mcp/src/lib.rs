#![doc = include_str!("../README.md")]

mod client;
mod server;

pub use client::{McpClients, McpServerState, McpServerStatus, McpToolRegistration};
pub use server::McpEndpoint;
