//! Test helpers shared by this crate's suites and by other crates' tests (feature `testing`):
//! a scripted OpenAI-compatible model server and the location of the pinned Copilot CLI.

mod model_server;

pub use model_server::{ModelReply, RecordedRequest, ScriptedModelServer, is_valid_function_name};
