//! Test helpers shared by this crate's unit tests, its integration tests and benchmarks, and
//! other crates' suites (feature `testing`; never enabled in production builds). One file
//! per area.

pub mod chat;
pub mod data;
pub mod governance;
pub mod proposals;
pub mod redaction;
