//! The embedded backend: one SQLite file in WAL mode.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiAuditEvent, AiAuditLog, AiAuditSink, AiConversation, AiConversationStore, AiError, AiMessage,
    AiProposal, AiProposalStore, AiStreamEvent, AiStreamJournal, AiToolEnablementStore, AuditQuery,
    ConversationId, ProposalId, ProposalQuery, ToolEnablement,
};
use elsa_workflows::{Page, PageRequest, TenantId};
use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use sqlx::{QueryBuilder, Sqlite};

use crate::error::{StoreError, failed, is_unique_violation};
use crate::group_commit::{
    BatchInsert, Batching, GroupCommitWriter, audit_closed, audit_record_failed,
};
use crate::rows::{
    AuditRow, ConversationRow, EnablementRow, ProposalRow, StreamRow, agent_key, clamp_nanos,
    conversation_from_row, decode_proposal, decode_stream_event, enablement_from_row, from_nanos,
    from_sql_count, parse_role, role_name, to_nanos, to_sql_count, to_sql_counter,
};
use crate::{conflicts, filters};

static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

/// Where and how to open a [`SqliteStore`].
#[derive(Clone, Debug)]
pub struct SqliteStoreOptions {
    path: PathBuf,
    busy_timeout: Duration,
    max_connections: u32,
    batching: Batching,
}

impl SqliteStoreOptions {
    /// The database file at `path` (created when missing), with the defaults: a 5 s busy
    /// timeout, 8 reading connections and [`Batching::default`].
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            busy_timeout: Duration::from_secs(5),
            max_connections: 8,
            batching: Batching::default(),
        }
    }

    /// How long a write waits for another connection or process to release the database
    /// before it fails.
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// The most connections opened for reading (readers run in parallel); every write goes
    /// through one more, the writer connection.
    pub fn max_connections(mut self, connections: u32) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// How group-committed writes (audit records, journal appends, conversation writes) are
    /// grouped into transactions.
    pub fn batching(mut self, batching: Batching) -> Self {
        self.batching = batching;
        self
    }
}

/// Every Weaver store in one SQLite file: proposals, the audit trail, conversations and their
/// messages, the stream journal and tool enablement.
///
/// The file is opened in WAL mode with `synchronous = FULL`, so a write that returned is on
/// disk; migrations run on open. Reads use a pool of connections; every write of this process
/// goes through one writer connection, so writers queue in order here instead of polling for
/// SQLite's write lock, and every writing transaction starts `IMMEDIATE` (it holds the lock
/// from its first statement, so it never fails upgrading a read). Audit records, journal
/// appends and conversation writes are group-committed: what many callers queued meanwhile
/// goes into one transaction, and each caller is acknowledged after its commit. Several
/// processes may open the same file: their writers take turns through SQLite's lock (waiting
/// up to the busy timeout) and every compare-and-set is one conditional statement. Clones
/// share the connections and the writer.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    /// Connections for reading.
    pool: SqlitePool,
    /// The one connection every write goes through.
    writer: SqlitePool,
    /// Audit records, journal appends and conversation writes, group-committed.
    writes: Arc<GroupCommitWriter<SqliteWrite>>,
}

impl SqliteStore {
    /// Opens (or creates) the database file at `path` with the default options.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(SqliteStoreOptions::new(path.as_ref())).await
    }

    /// Opens (or creates) the database `options` name and brings its schema up to date.
    pub async fn open_with(options: SqliteStoreOptions) -> Result<Self, StoreError> {
        let connect = SqliteConnectOptions::new()
            .filename(&options.path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(options.busy_timeout);
        // One writer: the pool hands its connection out first come, first served, so writes
        // queue here rather than sleeping in SQLite's busy handler. It never closes for being
        // idle (reopening it would cost a write its latency).
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(connect.clone())
            .await
            .map_err(StoreError::Connect)?;
        // SQLite's migrator takes no lock of its own: one immediate transaction around the
        // whole run makes processes that open a new file together migrate it once, in turn.
        let mut migrating = writer
            .begin_with(BEGIN_WRITE)
            .await
            .map_err(StoreError::Connect)?;
        MIGRATOR
            .run(&mut *migrating)
            .await
            .map_err(StoreError::Migrate)?;
        migrating.commit().await.map_err(StoreError::Connect)?;
        let pool = SqlitePoolOptions::new()
            .max_connections(options.max_connections)
            .connect_with(connect)
            .await
            .map_err(StoreError::Connect)?;
        let writes = GroupCommitWriter::spawn(
            Writes {
                writer: writer.clone(),
                reader: pool.clone(),
            },
            options.batching,
        );
        Ok(Self {
            pool,
            writer,
            writes: Arc::new(writes),
        })
    }

    /// Returns once every audit record (and other group-committed write) accepted so far is
    /// committed.
    pub async fn flush(&self) -> Result<(), AiError> {
        self.writes.flush().await
    }

    /// Writes every accepted audit record, journal append and conversation write, then closes
    /// the database. Later calls on this store (and its clones) fail.
    pub async fn close(&self) {
        self.writes.close().await;
        self.writer.close().await;
        self.pool.close().await;
    }

    /// Starts a writing transaction on the writer connection.
    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, Sqlite>, sqlx::Error> {
        self.writer.begin_with(BEGIN_WRITE).await
    }
}

/// Writing transactions take the write lock at once: a deferred one that read first could
/// fail with `SQLITE_BUSY` (not wait) when it upgrades while another process writes.
const BEGIN_WRITE: &str = "BEGIN IMMEDIATE";

/// Rows per multi-row statement: few statements per batch, always the same few texts.
const ROWS_PER_STATEMENT: usize = 64;

/// One caller's write, group-committed with others on the writer connection.
enum SqliteWrite {
    Audit(AuditRow),
    /// A journal append, inserted only when it is exactly the next sequence of its
    /// conversation (the batch's earlier appends included).
    Journal(StreamRow),
    Conversation(ConversationWrite),
}

/// The group-commit backend: every batch is one `IMMEDIATE` transaction on the writer
/// connection, whatever kinds of rows it mixes, so a busy store pays one commit per batch.
struct Writes {
    writer: SqlitePool,
    reader: SqlitePool,
}

#[async_trait]
impl BatchInsert for Writes {
    type Row = SqliteWrite;

    async fn insert(&self, rows: &[SqliteWrite]) -> Result<(), sqlx::Error> {
        let mut tx = self.writer.begin_with(BEGIN_WRITE).await?;
        // Kinds are independent of each other; within a kind, rows keep their order.
        let mut audit = Vec::new();
        let mut journal = Vec::new();
        for row in rows {
            match row {
                SqliteWrite::Audit(row) => audit.push(row),
                SqliteWrite::Journal(row) => journal.push(row),
                SqliteWrite::Conversation(write) => write_conversation(&mut tx, write).await?,
            }
        }
        for chunk in audit.chunks(ROWS_PER_STATEMENT) {
            insert_audit(&mut tx, chunk).await?;
        }
        append_stream_events(&mut tx, &journal).await?;
        tx.commit().await
    }

    /// A duplicate key, a journal sequence that is not the next, a message for a conversation
    /// that does not exist.
    fn is_row_refusal(&self, error: &sqlx::Error) -> bool {
        matches!(error, sqlx::Error::RowNotFound) || is_unique_violation(error)
    }

    async fn row_failed(&self, row: &SqliteWrite, error: sqlx::Error) -> AiError {
        match row {
            SqliteWrite::Audit(row) => audit_record_failed(row, error),
            SqliteWrite::Journal(row) if self.is_row_refusal(&error) => {
                match last_sequence(&self.reader, &row.conversation_id).await {
                    Ok(last) => conflicts::sequence_of(
                        &row.conversation_id,
                        u64::try_from(row.sequence).unwrap_or(0),
                        last,
                    ),
                    Err(error) => error,
                }
            }
            SqliteWrite::Journal(_) => failed("appending to the stream journal", error),
            SqliteWrite::Conversation(write) => {
                let id = ConversationId::new(write.conversation_id());
                match write {
                    ConversationWrite::Create { .. } if is_unique_violation(&error) => {
                        conflicts::conversation_exists(&id)
                    }
                    ConversationWrite::Create { .. } => failed("creating a conversation", error),
                    ConversationWrite::Append { .. }
                        if matches!(error, sqlx::Error::RowNotFound) =>
                    {
                        conflicts::conversation_not_found(&id)
                    }
                    ConversationWrite::Append { .. } => failed("appending a message", error),
                }
            }
        }
    }

    fn batch_failed(error: sqlx::Error) -> AiError {
        failed("committing a batch of writes", error)
    }

    fn closed(row: Option<&SqliteWrite>) -> AiError {
        match row {
            Some(SqliteWrite::Audit(_)) => audit_closed(),
            _ => AiError::internal(
                "store_closed",
                "the store is closed; the write was not committed",
            ),
        }
    }
}

async fn insert_audit(tx: &mut SqliteConnection, rows: &[&AuditRow]) -> Result<(), sqlx::Error> {
    let mut insert = QueryBuilder::<Sqlite>::new(
        "INSERT INTO audit_events (id, tenant_id, occurred_at_ns, actor_id, action, outcome, \
         conversation_id, proposal_id, tool_name, body) ",
    );
    insert.push_values(rows, |mut values, row| {
        values
            .push_bind(row.id.as_str())
            .push_bind(row.tenant_id.as_str())
            .push_bind(row.occurred_at_ns)
            .push_bind(row.actor_id.as_str())
            .push_bind(row.action.as_str())
            .push_bind(row.outcome)
            .push_bind(row.conversation_id.as_deref())
            .push_bind(row.proposal_id.as_deref())
            .push_bind(row.tool_name.as_deref())
            .push_bind(row.body.as_str());
    });
    insert.build().execute(tx).await?;
    Ok(())
}

/// Appends `rows` in order, each only when it is exactly the next sequence of its
/// conversation (earlier rows of the batch included). The batch runs in an `IMMEDIATE`
/// transaction, so no other writer can append between the check and the insert; a row that is
/// not the next refuses the whole batch, which is then retried row by row.
async fn append_stream_events(
    tx: &mut SqliteConnection,
    rows: &[&StreamRow],
) -> Result<(), sqlx::Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut last: HashMap<&str, i64> = HashMap::with_capacity(rows.len());
    for row in rows {
        last.insert(row.conversation_id.as_str(), 0);
    }
    let conversations: Vec<&str> = last.keys().copied().collect();
    for chunk in conversations.chunks(ROWS_PER_STATEMENT) {
        let mut select = QueryBuilder::<Sqlite>::new(
            "SELECT conversation_id, MAX(sequence) FROM stream_events WHERE conversation_id IN (",
        );
        let mut ids = select.separated(", ");
        for id in chunk {
            ids.push_bind(*id);
        }
        select.push(") GROUP BY conversation_id");
        let found: Vec<(String, i64)> = select.build_query_as().fetch_all(&mut *tx).await?;
        for (id, sequence) in found {
            if let Some(known) = last.get_mut(id.as_str()) {
                *known = sequence;
            }
        }
    }
    for row in rows {
        let known = last
            .get_mut(row.conversation_id.as_str())
            .expect("every conversation of the batch was looked up");
        if row.sequence != known.saturating_add(1) {
            return Err(sqlx::Error::RowNotFound);
        }
        *known = row.sequence;
    }
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let mut insert = QueryBuilder::<Sqlite>::new(
            "INSERT INTO stream_events (conversation_id, sequence, event_type, occurred_at_ns, \
             body) ",
        );
        insert.push_values(chunk, |mut values, row| {
            values
                .push_bind(row.conversation_id.as_str())
                .push_bind(row.sequence)
                .push_bind(row.event_type)
                .push_bind(row.occurred_at_ns)
                .push_bind(row.body.as_str());
        });
        insert.build().execute(&mut *tx).await?;
    }
    Ok(())
}

async fn write_conversation(
    tx: &mut SqliteConnection,
    write: &ConversationWrite,
) -> Result<(), sqlx::Error> {
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
            sqlx::query(
                "INSERT INTO conversations (id, tenant_id, owner_id, agent, title, \
                 created_at_ns, updated_at_ns) VALUES (?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(id.as_str())
            .bind(tenant_id.as_str())
            .bind(owner_id.as_str())
            .bind(agent.as_str())
            .bind(title.as_str())
            .bind(created_at_ns)
            .bind(updated_at_ns)
            .execute(&mut *tx)
            .await?;
            for message in messages {
                insert_message(tx, id, message).await?;
            }
        }
        ConversationWrite::Append {
            conversation_id,
            tenant_id,
            message,
        } => {
            let touched = sqlx::query(
                "UPDATE conversations SET updated_at_ns = MAX(updated_at_ns, ?) \
                 WHERE id = ? AND tenant_id = ?",
            )
            .bind(message.created_at_ns)
            .bind(conversation_id.as_str())
            .bind(tenant_id.as_str())
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if touched == 0 {
                // No such conversation in the tenant: the batch is retried row by row.
                return Err(sqlx::Error::RowNotFound);
            }
            insert_message(tx, conversation_id, message).await?;
        }
    }
    Ok(())
}

/// A message as it is appended to its conversation.
struct MessageRow {
    role: &'static str,
    content: String,
    created_at_ns: i64,
}

impl MessageRow {
    fn new(message: &AiMessage) -> Result<Self, AiError> {
        Ok(Self {
            role: role_name(message.role),
            content: message.content.clone(),
            created_at_ns: to_nanos(message.timestamp, "message")?,
        })
    }
}

/// One caller's conversation write, group-committed with others.
enum ConversationWrite {
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
}

impl ConversationWrite {
    fn conversation_id(&self) -> &str {
        match self {
            Self::Create { id, .. } => id,
            Self::Append {
                conversation_id, ..
            } => conversation_id,
        }
    }
}

async fn insert_message(
    tx: &mut SqliteConnection,
    conversation_id: &str,
    message: &MessageRow,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO conversation_messages (conversation_id, role, content, created_at_ns) \
         VALUES (?, ?, ?, ?)",
    )
    .bind(conversation_id)
    .bind(message.role)
    .bind(message.content.as_str())
    .bind(message.created_at_ns)
    .execute(tx)
    .await?;
    Ok(())
}

/// The last journaled sequence of `conversation_id` (0 when there is none).
async fn last_sequence(pool: &SqlitePool, conversation_id: &str) -> Result<u64, AiError> {
    let last: i64 = sqlx::query_scalar(
        "SELECT COALESCE(MAX(sequence), 0) FROM stream_events WHERE conversation_id = ?",
    )
    .bind(conversation_id)
    .fetch_one(pool)
    .await
    .map_err(|e| failed("reading the stream journal", e))?;
    Ok(u64::try_from(last).unwrap_or(0))
}

#[async_trait]
impl AiProposalStore for SqliteStore {
    async fn find(
        &self,
        id: &ProposalId,
        tenant_id: &TenantId,
    ) -> Result<Option<AiProposal>, AiError> {
        let row: Option<(i64, String)> =
            sqlx::query_as("SELECT revision, body FROM proposals WHERE id = ? AND tenant_id = ?")
                .bind(id.as_str())
                .bind(tenant_id.as_str())
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| failed("reading a proposal", e))?;
        row.map(|(revision, body)| decode_proposal(revision, &body))
            .transpose()
    }

    async fn save(&self, proposal: &AiProposal) -> Result<(), AiError> {
        let row = ProposalRow::new(proposal)?;
        sqlx::query(
            "INSERT INTO proposals (id, tenant_id, conversation_id, definition_id, status, \
             created_by, created_at_ns, revision, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(row.id)
        .bind(row.tenant_id)
        .bind(row.conversation_id)
        .bind(row.definition_id)
        .bind(row.status)
        .bind(row.created_by)
        .bind(row.created_at_ns)
        .bind(row.revision)
        .bind(row.body)
        .execute(&self.writer)
        .await
        .map_err(|e| {
            if is_unique_violation(&e) {
                conflicts::proposal_exists(&proposal.id)
            } else {
                failed("saving a proposal", e)
            }
        })?;
        Ok(())
    }

    async fn update(&self, proposal: &AiProposal, expected_revision: u64) -> Result<(), AiError> {
        let row = ProposalRow::successor(proposal, expected_revision)?;
        let expected = to_sql_counter(expected_revision, "proposal revision")?;
        // One conditional statement: SQLite runs it under the database's write lock, so of
        // several writers (threads or processes) holding the same revision exactly one wins.
        let updated = sqlx::query(
            "UPDATE proposals SET conversation_id = ?, definition_id = ?, status = ?, \
             created_by = ?, created_at_ns = ?, revision = ?, body = ? \
             WHERE id = ? AND tenant_id = ? AND revision = ?",
        )
        .bind(row.conversation_id)
        .bind(row.definition_id)
        .bind(row.status)
        .bind(row.created_by)
        .bind(row.created_at_ns)
        .bind(row.revision)
        .bind(row.body)
        .bind(row.id.as_str())
        .bind(row.tenant_id.as_str())
        .bind(expected)
        .execute(&self.writer)
        .await
        .map_err(|e| failed("updating a proposal", e))?
        .rows_affected();
        if updated == 1 {
            return Ok(());
        }
        let current: Option<(String, i64)> =
            sqlx::query_as("SELECT status, revision FROM proposals WHERE id = ? AND tenant_id = ?")
                .bind(row.id)
                .bind(row.tenant_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| failed("reading a proposal", e))?;
        Err(conflicts::proposal_update_refused(
            &proposal.id,
            expected_revision,
            current,
        ))
    }

    async fn list(
        &self,
        tenant_id: &TenantId,
        query: &ProposalQuery,
    ) -> Result<Page<AiProposal>, AiError> {
        filters::proposal_page(&self.pool, "body", tenant_id, query).await
    }
}

#[async_trait]
impl AiAuditSink for SqliteStore {
    async fn record(&self, event: AiAuditEvent) -> Result<(), AiError> {
        self.writes
            .write(SqliteWrite::Audit(AuditRow::new(&event)?))
            .await
    }
}

#[async_trait]
impl AiAuditLog for SqliteStore {
    async fn query(
        &self,
        tenant_id: &TenantId,
        query: &AuditQuery,
    ) -> Result<Page<AiAuditEvent>, AiError> {
        filters::audit_page(&self.pool, "body", tenant_id, query).await
    }
}

#[async_trait]
impl AiConversationStore for SqliteStore {
    async fn create(&self, conversation: &AiConversation) -> Result<(), AiError> {
        let write = ConversationWrite::Create {
            id: conversation.id.as_str().to_owned(),
            tenant_id: conversation.tenant_id.as_str().to_owned(),
            owner_id: conversation.owner_id.clone(),
            agent: conversation.agent.as_str().to_owned(),
            title: conversation.title.clone(),
            created_at_ns: to_nanos(conversation.created_at, "conversation creation")?,
            updated_at_ns: to_nanos(conversation.updated_at, "conversation update")?,
            messages: conversation
                .messages
                .iter()
                .map(MessageRow::new)
                .collect::<Result<_, _>>()?,
        };
        self.writes.write(SqliteWrite::Conversation(write)).await
    }

    async fn find(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
    ) -> Result<Option<AiConversation>, AiError> {
        let doing = "reading a conversation";
        // One read transaction: the conversation and its messages come from one snapshot.
        let mut tx = self.pool.begin().await.map_err(|e| failed(doing, e))?;
        let row: Option<ConversationRow> = sqlx::query_as(
            "SELECT id, tenant_id, owner_id, agent, title, created_at_ns, updated_at_ns \
             FROM conversations WHERE id = ? AND tenant_id = ?",
        )
        .bind(id.as_str())
        .bind(tenant_id.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| failed(doing, e))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let messages: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT role, content, created_at_ns FROM conversation_messages \
             WHERE conversation_id = ? ORDER BY seq",
        )
        .bind(id.as_str())
        .fetch_all(&mut *tx)
        .await
        .map_err(|e| failed(doing, e))?;
        tx.commit().await.map_err(|e| failed(doing, e))?;
        let messages = messages
            .into_iter()
            .map(|(role, content, at)| {
                Ok(AiMessage {
                    role: parse_role(&role)?,
                    content,
                    timestamp: from_nanos(at),
                })
            })
            .collect::<Result<_, AiError>>()?;
        Ok(Some(conversation_from_row(row, messages)))
    }

    async fn append_message(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
        message: &AiMessage,
    ) -> Result<(), AiError> {
        let write = ConversationWrite::Append {
            conversation_id: id.as_str().to_owned(),
            tenant_id: tenant_id.as_str().to_owned(),
            message: MessageRow::new(message)?,
        };
        self.writes.write(SqliteWrite::Conversation(write)).await
    }

    async fn list(
        &self,
        tenant_id: &TenantId,
        owner_id: &str,
        page: PageRequest,
    ) -> Result<Page<AiConversation>, AiError> {
        let doing = "listing conversations";
        let total: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM conversations WHERE tenant_id = ? AND owner_id = ?",
        )
        .bind(tenant_id.as_str())
        .bind(owner_id)
        .fetch_one(&self.pool)
        .await
        .map_err(|e| failed(doing, e))?;
        let rows: Vec<ConversationRow> = sqlx::query_as(
            "SELECT id, tenant_id, owner_id, agent, title, created_at_ns, updated_at_ns \
             FROM conversations WHERE tenant_id = ? AND owner_id = ? \
             ORDER BY updated_at_ns DESC, id LIMIT ? OFFSET ?",
        )
        .bind(tenant_id.as_str())
        .bind(owner_id)
        .bind(to_sql_count(page.limit))
        .bind(to_sql_count(page.offset))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| failed(doing, e))?;
        Ok(Page {
            items: rows
                .into_iter()
                .map(|row| conversation_from_row(row, Vec::new()))
                .collect(),
            total: from_sql_count(total),
            offset: page.offset,
            limit: page.limit,
        })
    }

    async fn purge_before(&self, cutoff: DateTime<Utc>) -> Result<usize, AiError> {
        let cutoff = clamp_nanos(cutoff);
        let doing = "purging conversations";
        let mut tx = self.begin_write().await.map_err(|e| failed(doing, e))?;
        sqlx::query(
            "DELETE FROM stream_events WHERE conversation_id IN \
             (SELECT id FROM conversations WHERE updated_at_ns < ?)",
        )
        .bind(cutoff)
        .execute(&mut *tx)
        .await
        .map_err(|e| failed(doing, e))?;
        // Messages go with their conversation (ON DELETE CASCADE).
        let purged = sqlx::query("DELETE FROM conversations WHERE updated_at_ns < ?")
            .bind(cutoff)
            .execute(&mut *tx)
            .await
            .map_err(|e| failed(doing, e))?
            .rows_affected();
        tx.commit().await.map_err(|e| failed(doing, e))?;
        Ok(usize::try_from(purged).unwrap_or(usize::MAX))
    }
}

#[async_trait]
impl AiStreamJournal for SqliteStore {
    async fn append(&self, event: &AiStreamEvent) -> Result<(), AiError> {
        let Ok(row) = StreamRow::new(event) else {
            // A sequence beyond i64 can never be the next one.
            return Err(self.sequence_conflict(event).await);
        };
        self.writes.write(SqliteWrite::Journal(row)).await
    }

    async fn read_after(
        &self,
        conversation_id: &ConversationId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<AiStreamEvent>, AiError> {
        let bodies: Vec<String> = sqlx::query_scalar(
            "SELECT body FROM stream_events WHERE conversation_id = ? AND sequence > ? \
             ORDER BY sequence LIMIT ?",
        )
        .bind(conversation_id.as_str())
        .bind(i64::try_from(after).unwrap_or(i64::MAX))
        .bind(to_sql_count(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| failed("reading the stream journal", e))?;
        bodies
            .iter()
            .map(|body| decode_stream_event(body))
            .collect()
    }

    async fn last_sequence(&self, conversation_id: &ConversationId) -> Result<u64, AiError> {
        last_sequence(&self.pool, conversation_id.as_str()).await
    }
}

impl SqliteStore {
    async fn sequence_conflict(&self, event: &AiStreamEvent) -> AiError {
        match self.last_sequence(&event.conversation_id).await {
            Ok(last) => conflicts::sequence(event, last),
            Err(error) => error,
        }
    }
}

#[async_trait]
impl AiToolEnablementStore for SqliteStore {
    async fn list(&self, tenant_id: &TenantId) -> Result<Vec<ToolEnablement>, AiError> {
        let rows: Vec<EnablementRow> = sqlx::query_as(
            "SELECT tenant_id, tool_name, agent, enabled, changed_by, changed_at_ns \
             FROM tool_enablements WHERE tenant_id = ? ORDER BY tool_name, agent_key",
        )
        .bind(tenant_id.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(|e| failed("reading tool enablement", e))?;
        Ok(rows.into_iter().map(enablement_from_row).collect())
    }

    async fn set(&self, enablement: &ToolEnablement) -> Result<(), AiError> {
        let changed_at = to_nanos(enablement.changed_at, "enablement change")?;
        sqlx::query(
            "INSERT INTO tool_enablements (tenant_id, tool_name, agent_key, agent, enabled, \
             changed_by, changed_at_ns) VALUES (?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (tenant_id, tool_name, agent_key) DO UPDATE SET \
             agent = excluded.agent, enabled = excluded.enabled, \
             changed_by = excluded.changed_by, changed_at_ns = excluded.changed_at_ns",
        )
        .bind(enablement.tenant_id.as_str())
        .bind(enablement.tool_name.as_str())
        .bind(agent_key(enablement.agent.as_deref()))
        .bind(enablement.agent.as_deref())
        .bind(enablement.enabled)
        .bind(enablement.changed_by.as_str())
        .bind(changed_at)
        .execute(&self.writer)
        .await
        .map_err(|e| failed("recording tool enablement", e))?;
        Ok(())
    }
}
