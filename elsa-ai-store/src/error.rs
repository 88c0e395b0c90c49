//! Errors: why a store could not be opened, and how database failures become [`AiError`]s.

use elsa_ai_abstractions::AiError;
use thiserror::Error;

/// Why a store could not be opened.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database could not be reached, created or configured (the source is the database
    /// driver's error).
    #[error("cannot open the store: {0}")]
    Connect(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The schema migrations could not be applied (the source is the migrator's error).
    #[error("cannot migrate the store's schema: {0}")]
    Migrate(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The SQLite writer (its connection or its thread) could not be started.
    #[cfg(feature = "sqlite")]
    #[error("cannot start the SQLite writer: {0}")]
    Writer(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    /// The database could not be reached, created or configured.
    pub(crate) fn connect(error: sqlx::Error) -> Self {
        Self::Connect(Box::new(error))
    }

    /// The schema migrations could not be applied.
    pub(crate) fn migrate(error: sqlx::migrate::MigrateError) -> Self {
        Self::Migrate(Box::new(error))
    }
}

/// A database failure as the store's callers see it: either the database cannot be reached
/// or written just now (a 503 a client may retry) or something else went wrong (a 500).
pub(crate) trait Fault: std::fmt::Display {
    /// Whether the failure is the database being unavailable rather than broken: lost or
    /// refused connections, a read-only or full file or disk, a lock held past the busy
    /// timeout, a server shutting down or out of resources.
    fn is_unavailable(&self) -> bool;
}

impl Fault for sqlx::Error {
    fn is_unavailable(&self) -> bool {
        match self {
            Self::Io(_)
            | Self::Tls(_)
            | Self::PoolTimedOut
            | Self::PoolClosed
            | Self::WorkerCrashed => true,
            Self::Database(error) => database_unavailable(error.as_ref()),
            _ => false,
        }
    }
}

/// Whether the database's own error says it is unavailable: SQLite's result codes, or
/// PostgreSQL's SQLSTATE classes.
fn database_unavailable(error: &dyn sqlx::error::DatabaseError) -> bool {
    let Some(code) = error.code() else {
        return false;
    };
    #[cfg(feature = "sqlite")]
    if error
        .try_downcast_ref::<sqlx::sqlite::SqliteError>()
        .is_some()
    {
        // sqlx reports SQLite's extended result code; its low byte is the primary code.
        return code
            .parse::<i32>()
            .is_ok_and(|code| sqlite_code_unavailable(code & 0xff));
    }
    #[cfg(feature = "postgres")]
    if error
        .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
        .is_some()
    {
        return postgres_state_unavailable(&code);
    }
    let _ = code;
    false
}

/// SQLite primary result codes that mean the file cannot be written or read just now.
#[cfg(feature = "sqlite")]
fn sqlite_code_unavailable(primary: i32) -> bool {
    use rusqlite::ffi;
    matches!(
        primary,
        ffi::SQLITE_BUSY
            | ffi::SQLITE_LOCKED
            | ffi::SQLITE_READONLY
            | ffi::SQLITE_IOERR
            | ffi::SQLITE_FULL
            | ffi::SQLITE_CANTOPEN
            | ffi::SQLITE_PROTOCOL
            | ffi::SQLITE_PERM
            | ffi::SQLITE_NOMEM
    )
}

/// PostgreSQL SQLSTATEs that mean the server cannot serve the request just now: connection
/// exceptions (class 08), insufficient resources such as a full disk (class 53), operator
/// intervention such as a shutdown (57P01–57P03), a read-only transaction (25006, a standby),
/// a database that is not accepting connections, in use or locked (55000, 55006, 55P03).
#[cfg(feature = "postgres")]
fn postgres_state_unavailable(state: &str) -> bool {
    state.starts_with("08")
        || state.starts_with("53")
        || matches!(
            state,
            "57P01" | "57P02" | "57P03" | "25006" | "55000" | "55006" | "55P03"
        )
}

#[cfg(feature = "sqlite")]
impl Fault for rusqlite::Error {
    fn is_unavailable(&self) -> bool {
        match self {
            Self::SqliteFailure(error, _) => sqlite_code_unavailable(error.extended_code & 0xff),
            _ => false,
        }
    }
}

/// A database failure while `doing` something: 503 `store_unavailable` when the database is
/// unavailable (see [`Fault`]), else 500 `store_failed`.
///
/// The message names the operation and the driver's reason, never a value that was written.
pub(crate) fn failed(doing: &str, error: impl Fault) -> AiError {
    tracing::warn!(%error, "store failed while {doing}");
    if error.is_unavailable() {
        AiError::unavailable(
            "store_unavailable",
            format!("the store cannot be used just now ({doing}): {error}"),
        )
    } else {
        AiError::internal(
            "store_failed",
            format!("the store failed while {doing}: {error}"),
        )
    }
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

/// Whether PostgreSQL refused a batch of conversation writes because one names a conversation
/// that is not its tenant's: `refuse_conversation_batch` raised it (`no_data_found`), or a
/// message's conversation was gone when its key was checked.
#[cfg(feature = "postgres")]
pub(crate) fn is_batch_refusal(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db)
        if db.code().as_deref() == Some("P0002") || db.is_foreign_key_violation())
}

/// A stored document that no longer reads back as its type (the schema and the code disagree).
pub(crate) fn corrupt(what: &str, error: impl std::fmt::Display) -> AiError {
    tracing::error!(%error, "stored {what} cannot be read");
    AiError::internal(
        "store_corrupt",
        format!("a stored {what} cannot be read: {error}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real SQLite failure: `sql` run on a fresh in-memory database after `setup`.
    #[cfg(feature = "sqlite")]
    fn sqlite_failure(setup: &str, sql: &str) -> rusqlite::Error {
        let connection = rusqlite::Connection::open_in_memory().unwrap();
        connection
            .execute_batch("CREATE TABLE t (v BLOB);")
            .unwrap();
        connection.execute_batch(setup).unwrap();
        connection.execute_batch(sql).unwrap_err()
    }

    #[cfg(feature = "sqlite")]
    #[test]
    fn a_read_only_or_full_sqlite_database_is_unavailable_and_bad_sql_is_not() {
        let read_only = sqlite_failure("PRAGMA query_only = 1;", "INSERT INTO t VALUES (1);");
        let full = sqlite_failure(
            "PRAGMA max_page_count = 3;",
            "INSERT INTO t VALUES (zeroblob(100000));",
        );
        for error in [read_only, full] {
            let answer = failed("writing", error);
            assert_eq!(
                (answer.status(), answer.code()),
                (503, "store_unavailable"),
                "{answer:?}"
            );
        }
        let broken = failed(
            "writing",
            sqlite_failure("", "INSERT INTO missing VALUES (1);"),
        );
        assert_eq!((broken.status(), broken.code()), (500, "store_failed"));
    }

    #[test]
    fn lost_connections_are_unavailable() {
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        for error in [sqlx::Error::Io(reset), sqlx::Error::PoolTimedOut] {
            assert_eq!(failed("reading", error).status(), 503);
        }
        assert_eq!(failed("reading", sqlx::Error::RowNotFound).status(), 500);
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn postgres_states_of_an_unavailable_server() {
        for state in [
            "08006", "08001", "53100", "57P01", "57P03", "25006", "55000",
        ] {
            assert!(postgres_state_unavailable(state), "{state}");
        }
        for state in ["23505", "42P01", "40001", "P0001"] {
            assert!(!postgres_state_unavailable(state), "{state}");
        }
    }
}
