//! The examples' integration tests: each example runs as a user would run it.

mod eval;
mod module_author;
mod quickstart;
