//! One conformance suite for every implementation of the storage contracts: the in-memory
//! stores of `elsa-ai-host` and the durable stores of `elsa-ai-store` run the same checks, so
//! "durable" never means "slightly different".
//!
//! Each module has a `run` function that checks every behaviour of one contract, one named
//! case after another (each case is public too). Cases create their own tenants and ids, so
//! they can share a store with other data; only the conversation purge case deletes across
//! tenants, and only what is more than 30 days old.

pub mod audit;
pub mod conversations;
pub mod enablement;
pub mod journal;
pub mod proposals;

use chrono::{DateTime, Duration, TimeZone, Utc};
use elsa_ai_abstractions::AiError;

/// A name no other case (or earlier run against the same database) uses.
fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", elsa_ai_abstractions::ProposalId::generate())
}

/// A fixed instant with nanoseconds, plus `seconds`: exact timestamps must survive storage.
fn instant(seconds: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_750_000_000, 123_456_789).unwrap() + Duration::seconds(seconds)
}

/// Names the case about to run, so that a failure's output says which behaviour broke.
fn case(name: &str) {
    eprintln!("conformance case: {name}");
}

/// Asserts that `result` is the error with this HTTP status.
#[track_caller]
fn assert_status<T: std::fmt::Debug>(
    result: Result<T, AiError>,
    status: u16,
    doing: &str,
) -> AiError {
    match result {
        Ok(value) => panic!("{doing}: expected a {status} error, got Ok({value:?})"),
        Err(error) => {
            assert_eq!(error.status(), status, "{doing}: wrong error {error:?}");
            error
        }
    }
}
