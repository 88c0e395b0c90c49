//! The writer side of the SQLite store: one connection that every write of this process goes
//! through, and the group-commit batches written on it.
//!
//! The connection is used from blocking code only. A batch (audit records, journal appends,
//! conversation writes) runs start to finish on the group-commit writer's own thread: a
//! dozen statements cost microseconds there, where handing each statement to an async
//! driver's worker and back cost a thread wake-up each, and under load a wait for a busy
//! runtime as well. The rarer writes (proposals, enablement, retention) run on tokio's
//! blocking pool and take turns with the batches through the connection's mutex, so writers
//! of this process never poll for SQLite's write lock.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use elsa_ai_abstractions::{AiError, AiMessage, ConversationId};
use rusqlite::{
    Connection, ErrorCode, OpenFlags, OptionalExtension, Transaction, TransactionBehavior, params,
};

use crate::conflicts;
use crate::error::{Fault, failed, store_closed};
use crate::group_commit::{BatchInsert, audit_closed, audit_record_failed};
use crate::rows::{AuditRow, ClaimRow, StreamRow, is_terminal, role_name, to_nanos};

/// Why a write on the writer connection did not happen.
#[derive(Debug)]
pub(super) enum WriteError {
    /// One row of a batch is not acceptable on its own: a journal sequence that is not the
    /// next one, a message for a conversation that is not in the tenant.
    Refused,
    /// SQLite failed or refused a statement.
    Sqlite(rusqlite::Error),
    /// The store was closed before the write.
    Closed,
    /// The blocking task running the write panicked; its transaction was rolled back.
    Panicked,
}

impl From<rusqlite::Error> for WriteError {
    fn from(error: rusqlite::Error) -> Self {
        Self::Sqlite(error)
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused => f.write_str("a row was refused on its own"),
            Self::Sqlite(error) => error.fmt(f),
            Self::Closed => f.write_str("the store is closed"),
            Self::Panicked => f.write_str("the write panicked and was rolled back"),
        }
    }
}

impl Fault for WriteError {
    fn is_unavailable(&self) -> bool {
        matches!(self, Self::Sqlite(error) if error.is_unavailable())
    }
}

impl WriteError {
    /// Whether SQLite refused a row because its unique key already exists.
    pub fn is_unique_violation(&self) -> bool {
        matches!(
            self,
            Self::Sqlite(rusqlite::Error::SqliteFailure(error, _))
                if error.code == ErrorCode::ConstraintViolation
                    && matches!(
                        error.extended_code,
                        rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                            | rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                    )
        )
    }

    /// What a caller sees for a failure while `doing` something: 503 `store_unavailable` or
    /// 500 `store_failed` (see [`failed`]), `store_closed` once the store is closed.
    pub fn into_ai(self, doing: &str) -> AiError {
        match self {
            Self::Closed => store_closed(),
            error => failed(doing, error),
        }
    }
}

/// The one connection every write of this process goes through; `None` once closed.
#[derive(Debug)]
pub(super) struct WriterConnection {
    connection: Mutex<Option<Connection>>,
}

impl WriterConnection {
    /// Opens the (existing, migrated) database at `path` for writing: every commit synced to
    /// disk (`synchronous = FULL`), foreign keys enforced, other processes' write locks
    /// waited for up to `busy_timeout`. The file is already in WAL mode, which persists.
    pub fn open(path: &Path, busy_timeout: Duration) -> rusqlite::Result<Self> {
        let connection = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        connection.busy_timeout(busy_timeout)?;
        connection.pragma_update(None, "synchronous", "FULL")?;
        connection.pragma_update(None, "foreign_keys", "ON")?;
        Ok(Self {
            connection: Mutex::new(Some(connection)),
        })
    }

    /// Runs `write` in one `IMMEDIATE` transaction (it holds the write lock from its first
    /// statement, so it never fails upgrading a read) and commits it when `write` succeeds;
    /// otherwise nothing of it is kept. Blocks the calling thread.
    pub fn transaction<T>(
        &self,
        write: impl FnOnce(&Transaction<'_>) -> Result<T, WriteError>,
    ) -> Result<T, WriteError> {
        self.with_connection(|connection| {
            let transaction =
                connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let value = write(&transaction)?;
            transaction.commit()?;
            Ok(value)
        })
    }

    /// Runs `use_it` with the connection, outside any transaction (a read needs no write
    /// lock). Blocks the calling thread.
    fn with_connection<T>(
        &self,
        use_it: impl FnOnce(&mut Connection) -> Result<T, WriteError>,
    ) -> Result<T, WriteError> {
        // A panic inside an earlier write rolled its transaction back when it unwound, so the
        // connection behind a poisoned lock is still consistent.
        let mut connection = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        use_it(connection.as_mut().ok_or(WriteError::Closed)?)
    }

    /// [`transaction`](Self::transaction) from async code, on tokio's blocking pool.
    pub async fn run<T: Send + 'static>(
        self: &Arc<Self>,
        write: impl FnOnce(&Transaction<'_>) -> Result<T, WriteError> + Send + 'static,
    ) -> Result<T, WriteError> {
        let writer = Arc::clone(self);
        tokio::task::spawn_blocking(move || writer.transaction(write))
            .await
            .unwrap_or(Err(WriteError::Panicked))
    }

    /// Closes the connection once the write in progress (if any) is done; later writes fail
    /// with [`WriteError::Closed`].
    pub fn close(&self) {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }
}

/// One caller's write, group-committed with others on the writer connection.
pub(super) enum SqliteWrite {
    Audit(AuditRow),
    /// A journal append, inserted only when it is exactly the next sequence of its tenant's
    /// conversation (the batch's earlier appends included).
    Journal(StreamRow),
    Conversation(ConversationWrite),
    /// A turn claim, inserted only when no claim holds the conversation.
    Claim(ClaimRow),
}

/// A message as it is appended to its conversation.
pub(super) struct MessageRow {
    role: &'static str,
    content: String,
    created_at_ns: i64,
}

impl MessageRow {
    pub fn new(message: &AiMessage) -> Result<Self, AiError> {
        Ok(Self {
            role: role_name(message.role),
            content: message.content.clone(),
            created_at_ns: to_nanos(message.timestamp, "message")?,
        })
    }
}

/// One caller's conversation write, group-committed with others.
pub(super) enum ConversationWrite {
    /// A new conversation with its first messages.
    Create {
        id: String,
        tenant_id: String,
        owner_id: String,
        agent: String,
        title: String,
        created_at_ns: i64,
        updated_at_ns: i64,
        messages: Vec<MessageRow>,
    },
    /// A message appended to an existing conversation of the tenant.
    Append {
        conversation_id: String,
        tenant_id: String,
        message: MessageRow,
    },
    /// The provider session of an existing conversation of the tenant (JSON).
    Session {
        conversation_id: String,
        tenant_id: String,
        session: String,
    },
}

impl ConversationWrite {
    fn conversation_id(&self) -> &str {
        match self {
            Self::Create { id, .. } => id,
            Self::Append {
                conversation_id, ..
            }
            | Self::Session {
                conversation_id, ..
            } => conversation_id,
        }
    }
}

/// The group-commit backend: every batch is one `IMMEDIATE` transaction on the writer
/// connection, whatever kinds of rows it mixes, so a busy store pays one commit per batch.
/// Its `insert` blocks: the writer runs on a thread of its own.
pub(super) struct Writes {
    pub writer: Arc<WriterConnection>,
}

#[async_trait]
impl BatchInsert for Writes {
    type Row = SqliteWrite;
    type Error = WriteError;
    type Aftermath = ();

    async fn insert(&self, rows: &[SqliteWrite]) -> Result<(), WriteError> {
        self.writer.transaction(|tx| write_batch(tx, rows))
    }

    /// A duplicate key, a journal sequence that is not the next, a message for a conversation
    /// that does not exist.
    fn is_row_refusal(&self, error: &WriteError) -> bool {
        matches!(error, WriteError::Refused) || error.is_unique_violation()
    }

    async fn row_failed(&self, row: &SqliteWrite, error: WriteError) -> AiError {
        if matches!(error, WriteError::Closed) {
            return Self::closed(Some(row));
        }
        match row {
            SqliteWrite::Audit(row) => audit_record_failed(row, error.is_unique_violation(), error),
            SqliteWrite::Journal(row) if self.is_row_refusal(&error) => {
                match self.writer.with_connection(|connection| {
                    Ok(last_sequence(
                        connection,
                        &row.tenant_id,
                        &row.conversation_id,
                    )?)
                }) {
                    Ok(last) => conflicts::sequence_of(
                        &row.conversation_id,
                        u64::try_from(row.sequence).unwrap_or(0),
                        u64::try_from(last).unwrap_or(0),
                    ),
                    Err(error) => error.into_ai("reading the stream journal"),
                }
            }
            SqliteWrite::Journal(_) => failed("appending to the stream journal", error),
            SqliteWrite::Claim(row) if matches!(error, WriteError::Refused) => {
                match self.writer.with_connection(|connection| {
                    Ok(claim_lease(
                        connection,
                        &row.tenant_id,
                        &row.conversation_id,
                    )?)
                }) {
                    // Released in the meantime: the caller may try again.
                    Ok(None) => conflicts::turn_claimed(&row.conversation_id, i64::MAX, 0),
                    Ok(Some(lease)) => {
                        conflicts::turn_claimed(&row.conversation_id, lease, row.now_ns)
                    }
                    Err(error) => error.into_ai("reading a turn claim"),
                }
            }
            SqliteWrite::Claim(_) => failed("claiming a conversation for a turn", error),
            SqliteWrite::Conversation(write) => {
                let id = ConversationId::new(write.conversation_id());
                match write {
                    ConversationWrite::Create { .. } if error.is_unique_violation() => {
                        conflicts::conversation_exists(&id)
                    }
                    ConversationWrite::Create { .. } => failed("creating a conversation", error),
                    ConversationWrite::Append { .. } if matches!(error, WriteError::Refused) => {
                        conflicts::conversation_not_found(&id)
                    }
                    ConversationWrite::Append { .. } => failed("appending a message", error),
                    ConversationWrite::Session { .. } if matches!(error, WriteError::Refused) => {
                        conflicts::conversation_not_found(&id)
                    }
                    ConversationWrite::Session { .. } => {
                        failed("recording a provider session", error)
                    }
                }
            }
        }
    }

    fn batch_failed(error: WriteError) -> AiError {
        error.into_ai("committing a batch of writes")
    }

    fn closed(row: Option<&SqliteWrite>) -> AiError {
        match row {
            Some(SqliteWrite::Audit(_)) => audit_closed(),
            _ => store_closed(),
        }
    }
}

/// Writes one batch inside `tx`: conversation writes, claims and audit records in order,
/// then the journal appends (which may belong to a conversation the batch creates).
fn write_batch(tx: &Transaction<'_>, rows: &[SqliteWrite]) -> Result<(), WriteError> {
    let mut journal = Vec::new();
    for row in rows {
        match row {
            SqliteWrite::Audit(row) => insert_audit(tx, row)?,
            SqliteWrite::Journal(row) => journal.push(row),
            SqliteWrite::Conversation(write) => write_conversation(tx, write)?,
            SqliteWrite::Claim(row) => insert_claim(tx, row)?,
        }
    }
    append_stream_events(tx, &journal)
}

/// Inserts a turn claim unless the conversation is claimed already (refused on its own).
fn insert_claim(tx: &Transaction<'_>, row: &ClaimRow) -> Result<(), WriteError> {
    let inserted = tx
        .prepare_cached(
            "INSERT INTO turn_claims (tenant_id, conversation_id, turn_id, replica_id, \
             lease_until_ns) VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (tenant_id, conversation_id) DO NOTHING",
        )?
        .execute(params![
            row.tenant_id,
            row.conversation_id,
            row.turn_id,
            row.replica_id,
            row.lease_until_ns,
        ])?;
    if inserted == 0 {
        return Err(WriteError::Refused);
    }
    Ok(())
}

/// When the claim on a tenant's conversation lapses, if it is claimed.
fn claim_lease(
    connection: &Connection,
    tenant_id: &str,
    conversation_id: &str,
) -> rusqlite::Result<Option<i64>> {
    connection
        .prepare_cached(
            "SELECT lease_until_ns FROM turn_claims WHERE tenant_id = ?1 AND conversation_id = ?2",
        )?
        .query_row([tenant_id, conversation_id], |row| row.get(0))
        .optional()
}

fn insert_audit(tx: &Transaction<'_>, row: &AuditRow) -> Result<(), WriteError> {
    tx.prepare_cached(
        "INSERT INTO audit_events (id, tenant_id, occurred_at_ns, actor_id, action, outcome, \
         conversation_id, proposal_id, tool_name, trace_id, body) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        row.id,
        row.tenant_id,
        row.occurred_at_ns,
        row.actor_id,
        row.action,
        row.outcome,
        row.conversation_id,
        row.proposal_id,
        row.tool_name,
        row.trace_id,
        row.body,
    ])?;
    Ok(())
}

/// The last journaled sequence of a tenant's conversation (0 for none).
fn last_sequence(
    connection: &Connection,
    tenant_id: &str,
    conversation_id: &str,
) -> rusqlite::Result<i64> {
    connection
        .prepare_cached(
            "SELECT COALESCE(MAX(sequence), 0) FROM stream_events \
             WHERE tenant_id = ?1 AND conversation_id = ?2",
        )?
        .query_row([tenant_id, conversation_id], |row| row.get(0))
}

/// Appends `rows` in order, each only when it is exactly the next sequence of its tenant's
/// conversation (earlier rows of the batch included), whose last sequence is looked up once
/// per batch. The batch holds the write lock, so no other writer can append between the
/// check and the insert; a row that is not the next refuses the whole batch, which is then
/// retried row by row.
fn append_stream_events(tx: &Transaction<'_>, rows: &[&StreamRow]) -> Result<(), WriteError> {
    let mut last: HashMap<(&str, &str), i64> = HashMap::with_capacity(rows.len());
    for row in rows {
        let key = (row.tenant_id.as_str(), row.conversation_id.as_str());
        let known = match last.entry(key) {
            Entry::Occupied(known) => known.into_mut(),
            Entry::Vacant(unknown) => {
                let (tenant_id, conversation_id) = *unknown.key();
                unknown.insert(last_sequence(tx, tenant_id, conversation_id)?)
            }
        };
        if row.sequence != known.saturating_add(1) {
            return Err(WriteError::Refused);
        }
        *known = row.sequence;
        if is_terminal(row.event_type) {
            // The turn's end: its claim ends in the same commit.
            tx.prepare_cached(
                "DELETE FROM turn_claims WHERE tenant_id = ?1 AND conversation_id = ?2",
            )?
            .execute([&row.tenant_id, &row.conversation_id])?;
        }
        tx.prepare_cached(
            "INSERT INTO stream_events (tenant_id, conversation_id, sequence, event_type, \
             occurred_at_ns, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            row.tenant_id,
            row.conversation_id,
            row.sequence,
            row.event_type,
            row.occurred_at_ns,
            row.body,
        ])?;
    }
    Ok(())
}

fn write_conversation(tx: &Transaction<'_>, write: &ConversationWrite) -> Result<(), WriteError> {
    match write {
        ConversationWrite::Create {
            id,
            tenant_id,
            owner_id,
            agent,
            title,
            created_at_ns,
            updated_at_ns,
            messages,
        } => {
            tx.prepare_cached(
                "INSERT INTO conversations (id, tenant_id, owner_id, agent, title, \
                 created_at_ns, updated_at_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                id,
                tenant_id,
                owner_id,
                agent,
                title,
                created_at_ns,
                updated_at_ns
            ])?;
            for message in messages {
                insert_message(tx, id, message)?;
            }
        }
        ConversationWrite::Append {
            conversation_id,
            tenant_id,
            message,
        } => {
            let touched = tx
                .prepare_cached(
                    "UPDATE conversations SET updated_at_ns = MAX(updated_at_ns, ?1) \
                     WHERE id = ?2 AND tenant_id = ?3",
                )?
                .execute(params![message.created_at_ns, conversation_id, tenant_id])?;
            if touched == 0 {
                // No such conversation in the tenant: the batch is retried row by row.
                return Err(WriteError::Refused);
            }
            insert_message(tx, conversation_id, message)?;
        }
        ConversationWrite::Session {
            conversation_id,
            tenant_id,
            session,
        } => {
            let touched = tx
                .prepare_cached(
                    "UPDATE conversations SET provider_session = ?1 \
                     WHERE id = ?2 AND tenant_id = ?3",
                )?
                .execute(params![session, conversation_id, tenant_id])?;
            if touched == 0 {
                return Err(WriteError::Refused);
            }
        }
    }
    Ok(())
}

fn insert_message(
    tx: &Transaction<'_>,
    conversation_id: &str,
    message: &MessageRow,
) -> Result<(), WriteError> {
    tx.prepare_cached(
        "INSERT INTO conversation_messages (conversation_id, role, content, created_at_ns) \
         VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![
        conversation_id,
        message.role,
        message.content,
        message.created_at_ns
    ])?;
    Ok(())
}
