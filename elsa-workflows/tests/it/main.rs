//! elsa-workflows' integration tests, one binary: real Elsa 3 fixtures through the parser and
//! validator, both backends (in memory and the Elsa Server stand-in) and the `validate` command.

mod catalog_fixtures;
mod elsa_server;
mod fixture_definitions;
mod fixture_instances;
mod memory_backend;
mod operations;
mod query_filters;
mod validate_command;
mod validate_fixtures;
