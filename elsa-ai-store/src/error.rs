//! Errors: why a store could not be opened, and how database failures become [`AiError`]s.

use elsa_ai_abstractions::AiError;
use thiserror::Error;

/// Why a store could not be opened.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database could not be reached, created or configured.
    #[error("cannot open the store: {0}")]
    Connect(#[source] sqlx::Error),
    /// The schema migrations could not be applied.
    #[error("cannot migrate the store's schema: {0}")]
    Migrate(#[source] sqlx::migrate::MigrateError),
    /// The SQLite writer (its connection or its thread) could not be started.
    #[cfg(feature = "sqlite")]
    #[error("cannot start the SQLite writer: {0}")]
    Writer(String),
}

/// A database failure while `doing` something, as the 500 every caller can report.
///
/// The message names the operation and the driver's reason, never a value that was written.
pub(crate) fn failed(doing: &str, error: impl std::fmt::Display) -> AiError {
    tracing::warn!(%error, "store failed while {doing}");
    AiError::internal(
        "store_failed",
        format!("the store failed while {doing}: {error}"),
    )
}

/// What a write answers once its store is closed (both backends word it alike).
pub(crate) fn store_closed() -> AiError {
    AiError::internal(
        "store_closed",
        "the store is closed; the write was not committed",
    )
}

/// Whether the database refused a write because a unique key already exists.
#[cfg(feature = "postgres")]
pub(crate) fn is_unique_violation(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// A stored document that no longer reads back as its type (the schema and the code disagree).
pub(crate) fn corrupt(what: &str, error: impl std::fmt::Display) -> AiError {
    tracing::error!(%error, "stored {what} cannot be read");
    AiError::internal(
        "store_corrupt",
        format!("a stored {what} cannot be read: {error}"),
    )
}
