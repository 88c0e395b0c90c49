//! The durable stores' integration tests. Every test runs on both backends: SQLite in a
//! temporary file and PostgreSQL in a fresh database of a real server (see
//! `elsa_ai_store::testing::postgres`).

mod support;

mod claims;
mod conformance;
mod crash;
mod durability;
mod failures;
mod feed;
mod journal;
mod migrations;
mod proposal_service;
