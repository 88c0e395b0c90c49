//! elsa-ai-copilot's integration tests, one binary: the adapter against the real Copilot CLI
//! (pinned in tools/copilot-cli) and the boundary check that no Copilot SDK name leaves this crate.

mod boundary;
mod copilot_cli;
