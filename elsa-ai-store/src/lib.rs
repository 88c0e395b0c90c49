//! Durable Weaver stores on SQLite and PostgreSQL.
//!
//! One store type per backend implements every storage contract of `elsa-ai-abstractions`:
//! [`AiProposalStore`](elsa_ai_abstractions::AiProposalStore) (compare-and-set updates on the
//! proposal's revision, atomic across processes), [`AiAuditSink`](elsa_ai_abstractions::AiAuditSink)
//! and [`AiAuditLog`](elsa_ai_abstractions::AiAuditLog) (an append-only trail, written in
//! batches that acknowledge each caller only after commit),
//! [`AiConversationStore`](elsa_ai_abstractions::AiConversationStore) with retention,
//! [`AiStreamJournal`](elsa_ai_abstractions::AiStreamJournal) (gap-free sequences for
//! reconnect) and [`AiToolEnablementStore`](elsa_ai_abstractions::AiToolEnablementStore).
//!
//! - [`SqliteStore`] (feature `sqlite`, the default) is the embedded store: one file in WAL
//!   mode (`synchronous = FULL`), every write on disk before it returns. Reads share a pool of
//!   connections; writes queue for one synchronous writer connection and start `IMMEDIATE`
//!   (a batch runs start to finish on the writer's own thread), and stream
//!   journal appends and conversation writes are group-committed together with audit records
//!   (see [`Batching`]), so hundreds of concurrent streams cost one commit per batch instead
//!   of one per event.
//! - [`PostgresStore`] (feature `postgres`) is for several server replicas sharing one
//!   database: the same schema, correct under concurrent writers in different processes.
//!
//! Both run their versioned migrations (`migrations/<backend>/`) on open. Rich documents
//! (proposals, audit records, stream events) are stored as JSON text next to indexed columns
//! for every filter; timestamps are stored as exact nanoseconds. When the database is
//! unavailable every call fails with a 500 [`AiError`](elsa_ai_abstractions::AiError): in
//! particular an audit `record` never reports success for a record that is not committed.
//! `close` (or `flush`) writes every accepted audit record before it returns.
//!
//! ```
//! use elsa_ai_abstractions::*;
//! use elsa_ai_store::SqliteStore;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let dir = tempfile::tempdir()?;
//! let store = SqliteStore::open(dir.path().join("weaver.db")).await?;
//!
//! let event = AiAuditEvent::new(
//!     "acme".into(),
//!     "alice",
//!     AuditAction::TOOL_INVOKED,
//!     AuditOutcome::Success,
//!     "read workflow wf-1",
//! );
//! store.record(event.clone()).await?; // returns once the record is committed
//! store.close().await;
//!
//! // A new process (here: a new handle) finds everything that was acknowledged.
//! let reopened = SqliteStore::open(dir.path().join("weaver.db")).await?;
//! let trail = reopened.query(&"acme".into(), &AuditQuery::default()).await?;
//! assert_eq!(trail.items, [event]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod conflicts;
mod error;
mod filters;
mod group_commit;
#[cfg(feature = "postgres")]
mod postgres;
mod rows;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "testing")]
pub mod testing;

pub use error::StoreError;
pub use group_commit::Batching;
#[cfg(feature = "postgres")]
pub use postgres::{JournalFeed, JournalNotice, PostgresStore, PostgresStoreOptions};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteStore, SqliteStoreOptions};
