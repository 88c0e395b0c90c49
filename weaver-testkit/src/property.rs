//! The configuration of the property tests: how many cases a run tries.
//!
//! Under `cargo test` each property tries the number its test names (a few thousand, so the
//! suite stays quick); `WEAVER_PROPTEST_CASES` overrides it for every property at once, for
//! the long runs (`WEAVER_PROPTEST_CASES=1000000 cargo test --release -p <crate> <filter>`).

use proptest::test_runner::{Config, FileFailurePersistence};

/// The environment variable that sets the number of cases of every property test.
pub const CASES_VAR: &str = "WEAVER_PROPTEST_CASES";

/// A proptest configuration trying `default_cases` cases, or `WEAVER_PROPTEST_CASES` when set.
///
/// # Panics
///
/// When `WEAVER_PROPTEST_CASES` is set to something other than a positive number: a long run
/// that silently fell back to the default would report figures it did not measure.
pub fn config(default_cases: u32) -> Config {
    let cases = match std::env::var(CASES_VAR) {
        Ok(value) => match value.trim().parse::<u32>() {
            Ok(cases) if cases > 0 => cases,
            _ => panic!("{CASES_VAR} must be a positive number of cases, not '{value}'"),
        },
        Err(_) => default_cases,
    };
    Config {
        cases,
        // A failing case is written down next to the test's source, so the next run tries it
        // first.
        failure_persistence: Some(Box::new(FileFailurePersistence::SourceParallel(
            "proptest-regressions",
        ))),
        // Long runs report where they are only through the final count; no per-case output.
        verbose: 0,
        ..Config::default()
    }
}
