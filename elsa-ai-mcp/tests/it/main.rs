//! elsa-ai-mcp's integration tests: the real `@modelcontextprotocol/server-everything`
//! (pinned in tools/mcp) over stdio and streamable HTTP, and the repository's own `rmcp`
//! fixture server for crashes, slowness, huge output, secrets and a changing tool list;
//! every call through the host's governor.

mod everything;
mod fixture;
mod support;
