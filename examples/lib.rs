//! Examples live in this folder as cargo examples:
//!
//! - `module_author`: a module written outside the Weaver crates adds a read-only tool and a
//!   proposal tool; the proposal tool stays unavailable until an administrator enables it.
//! - `quickstart`: the whole flow in one process over the real HTTP API (chat about a sample
//!   workflow, a proposal, review, approve, apply, the audit trail). Its flow lives in
//!   [`quickstart`], so that `tests/it/quickstart.rs` checks it.

#[path = "src/quickstart.rs"]
pub mod quickstart;
