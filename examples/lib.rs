//! Examples live in this folder as cargo examples:
//!
//! - `module_author`: a module written outside the Weaver crates puts its own tool, agent and
//!   attachment kind (with the context provider that resolves it) on a running weaver through
//!   `WeaverBuilder`, in under 40 lines; `tests/it/module_author.rs` serves it and uses all
//!   three over HTTP.
//! - `quickstart`: the whole flow in one process over the real HTTP API (chat about a sample
//!   workflow, a proposal, review, approve, apply, the audit trail). Its flow lives in
//!   [`quickstart`], so that `tests/it/quickstart.rs` checks it.
//!
//! And one binary, `weaver-eval` (`eval/main.rs`): an evaluation of Weaver with a real model
//! behind it, a suite of tasks (`eval/tasks.toml`) checked against Weaver's events and
//! stores. Its core lives in [`eval`], so that `tests/it/eval.rs` runs it against a scripted
//! model.

#[path = "eval/mod.rs"]
pub mod eval;
#[path = "src/quickstart.rs"]
pub mod quickstart;
