//! The examples' integration tests: each example runs as a user would run it.

mod quickstart;
