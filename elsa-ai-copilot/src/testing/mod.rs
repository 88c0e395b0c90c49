//! Test helpers shared by this crate's suites and by other crates' tests (feature `testing`;
//! never enabled in production builds): a scripted OpenAI-compatible model server and the
//! location of the pinned Copilot CLI.

mod model_server;

use std::path::PathBuf;

pub use model_server::{ModelReply, RecordedRequest, ScriptedModelServer, is_valid_function_name};

use crate::config::CLI_PATH_ENV;

/// The command that installs the pinned Copilot CLI, from the workspace root.
pub const INSTALL_CLI: &str = "npm ci --prefix tools/copilot-cli";

/// The Copilot CLI that tests drive: `COPILOT_CLI_PATH` when it is set, else the CLI pinned
/// in the workspace's `tools/copilot-cli` (its `node_modules/.bin/copilot`).
///
/// # Panics
///
/// When that CLI is not there: tests of the real CLI fail rather than skip, and the message
/// names [`INSTALL_CLI`].
pub fn pinned_cli() -> PathBuf {
    if let Some(path) = std::env::var_os(CLI_PATH_ENV).filter(|path| !path.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "{CLI_PATH_ENV} names {}, which does not exist (unset it to use the pinned CLI \
             that `{INSTALL_CLI}` installs)",
            path.display()
        );
        return path;
    }
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let cli = workspace.join("tools/copilot-cli/node_modules/.bin/copilot");
    assert!(
        cli.is_file(),
        "the pinned Copilot CLI is not installed at {}: run `{INSTALL_CLI}` in the workspace root \
         (or set {CLI_PATH_ENV} to a Copilot CLI)",
        cli.display()
    );
    cli
}
