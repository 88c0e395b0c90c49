//! The embedded backend: one SQLite file in WAL mode.

mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiAuditEvent, AiAuditLog, AiAuditSink, AiConversation, AiConversationStore, AiError,
    AiHeldClaim, AiMessage, AiProposal, AiProposalStore, AiSessionHandle, AiStreamEvent,
    AiStreamJournal, AiToolEnablementStore, AiTurnClaim, AiTurnClaims, AuditQuery, ConversationId,
    ProposalId, ProposalQuery, ToolEnablement,
};
use elsa_workflows::{Page, PageRequest, TenantId};
use rusqlite::{OptionalExtension, params};
use sqlx::Connection;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};

use crate::error::{StoreError, failed};
use crate::group_commit::{Batching, GroupCommitWriter};
use crate::rows::{
    AuditRow, ClaimRow, ConversationRow, EnablementRow, NANOS_PER_DAY, ProposalRow, StreamRow,
    TurnClaimRow, agent_key, claim_from_row, clamp_nanos, conversation_from_row, decode_proposal,
    decode_session, decode_stream_event, enablement_from_row, encode_session, from_nanos,
    from_sql_count, parse_role, to_nanos, to_sql_count, to_sql_counter,
};
use crate::{conflicts, filters};
use writer::{ConversationWrite, MessageRow, SqliteWrite, WriteError, WriterConnection, Writes};

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

/// Opens the connection that brings the schema up to date and switches the file to WAL (the
/// mode persists in the file), and runs the migrations on it.
///
/// SQLite's migrator takes no lock of its own: one immediate transaction around the whole run
/// makes processes that open a new file together migrate it once, in turn. Switching to WAL
/// needs a lock that SQLite's busy timeout does not wait for, so a connection refused with
/// "database is locked" by another opener is retried until `busy_timeout` has passed.
async fn migrate(
    connect: &SqliteConnectOptions,
    busy_timeout: Duration,
) -> Result<SqliteConnection, StoreError> {
    let connect = connect.clone().journal_mode(SqliteJournalMode::Wal);
    let deadline = tokio::time::Instant::now() + busy_timeout;
    loop {
        match migrate_once(&connect).await {
            Err(StoreError::Connect(error))
                if is_busy(error.as_ref()) && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            done => return done,
        }
    }
}

/// Whether the driver's error is `SQLITE_BUSY`, plain or extended ("database is locked").
fn is_busy(error: &(dyn std::error::Error + Send + Sync + 'static)) -> bool {
    const SQLITE_BUSY: i32 = 5;
    let Some(sqlx::Error::Database(error)) = error.downcast_ref::<sqlx::Error>() else {
        return false;
    };
    error
        .code()
        .and_then(|code| code.parse::<i32>().ok())
        .is_some_and(|code| code & 0xff == SQLITE_BUSY)
}

async fn migrate_once(connect: &SqliteConnectOptions) -> Result<SqliteConnection, StoreError> {
    let mut migrator = SqliteConnection::connect_with(connect)
        .await
        .map_err(StoreError::connect)?;
    let mut migrating = migrator
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(StoreError::connect)?;
    MIGRATOR
        .run(&mut *migrating)
        .await
        .map_err(StoreError::migrate)?;
    migrating.commit().await.map_err(StoreError::connect)?;
    Ok(migrator)
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
/// goes into one transaction, written start to finish on the writer's own thread, and each
/// caller is acknowledged after its commit. Several
/// processes may open the same file: their writers take turns through SQLite's lock (waiting
/// up to the busy timeout) and every compare-and-set is one conditional statement. Clones
/// share the connections and the writer.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    /// Connections for reading.
    pool: SqlitePool,
    /// The one connection every write goes through.
    writer: Arc<WriterConnection>,
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
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(options.busy_timeout);
        let migrator = migrate(&connect, options.busy_timeout).await?;
        let pool = SqlitePoolOptions::new()
            .max_connections(options.max_connections)
            .connect_with(connect)
            .await
            .map_err(StoreError::connect)?;
        let writer = {
            let (path, busy_timeout) = (options.path.clone(), options.busy_timeout);
            tokio::task::spawn_blocking(move || WriterConnection::open(&path, busy_timeout))
                .await
                .map_err(|error| StoreError::Writer(error.into()))?
                .map_err(|error| StoreError::Writer(error.into()))?
        };
        // Closed only once the store's own connections are open: closing the file's last
        // connection checkpoints and removes the WAL under an exclusive lock, which another
        // process opening the file at that moment could not wait for.
        migrator.close().await.map_err(StoreError::connect)?;
        let writer = Arc::new(writer);
        let writes = GroupCommitWriter::spawn_on_thread(
            Writes {
                writer: writer.clone(),
            },
            options.batching,
            "weaver-sqlite-writer",
        )
        .map_err(|error| StoreError::Writer(error.into()))?;
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
        self.writer.close();
        self.pool.close().await;
    }
}

async fn last_sequence(
    pool: &SqlitePool,
    tenant_id: &str,
    conversation_id: &str,
) -> Result<u64, AiError> {
    let last: i64 = sqlx::query_scalar(
        "SELECT COALESCE(MAX(sequence), 0) FROM stream_events \
         WHERE tenant_id = ? AND conversation_id = ?",
    )
    .bind(tenant_id)
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
        self.writer
            .run(move |tx| {
                tx.prepare_cached(
                    "INSERT INTO proposals (id, tenant_id, conversation_id, definition_id, \
                     status, created_by, created_at_ns, revision, body) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )?
                .execute(params![
                    row.id,
                    row.tenant_id,
                    row.conversation_id,
                    row.definition_id,
                    row.status,
                    row.created_by,
                    row.created_at_ns,
                    row.revision,
                    row.body,
                ])?;
                Ok(())
            })
            .await
            .map_err(|e| {
                if e.is_unique_violation() {
                    conflicts::proposal_exists(&proposal.id)
                } else {
                    e.into_ai("saving a proposal")
                }
            })
    }

    async fn update(&self, proposal: &AiProposal, expected_revision: u64) -> Result<(), AiError> {
        let row = ProposalRow::successor(proposal, expected_revision)?;
        let expected = to_sql_counter(expected_revision, "proposal revision")?;
        // One conditional statement: SQLite runs it under the database's write lock, so of
        // several writers (threads or processes) holding the same revision exactly one wins.
        // A refusal reads what is there now in the same transaction.
        let refused = self
            .writer
            .run(move |tx| {
                let updated = tx
                    .prepare_cached(
                        "UPDATE proposals SET conversation_id = ?1, definition_id = ?2, \
                         status = ?3, created_by = ?4, created_at_ns = ?5, revision = ?6, \
                         body = ?7 WHERE id = ?8 AND tenant_id = ?9 AND revision = ?10",
                    )?
                    .execute(params![
                        row.conversation_id,
                        row.definition_id,
                        row.status,
                        row.created_by,
                        row.created_at_ns,
                        row.revision,
                        row.body,
                        row.id,
                        row.tenant_id,
                        expected,
                    ])?;
                if updated == 1 {
                    return Ok(None);
                }
                let current = tx
                    .prepare_cached(
                        "SELECT status, revision FROM proposals WHERE id = ?1 AND tenant_id = ?2",
                    )?
                    .query_row(params![row.id, row.tenant_id], |r| {
                        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
                    })
                    .optional()?;
                Ok(Some(current))
            })
            .await
            .map_err(|e| e.into_ai("updating a proposal"))?;
        match refused {
            None => Ok(()),
            Some(current) => Err(conflicts::proposal_update_refused(
                &proposal.id,
                expected_revision,
                current,
            )),
        }
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
        self.writes.write(SqliteWrite::Conversation(write)).await?;
        // Rare (a conversation is made under the server's window): a write of its own.
        if conversation.retain_days.is_some() {
            self.set_retain_days(
                &conversation.id,
                &conversation.tenant_id,
                conversation.retain_days,
            )
            .await?;
        }
        Ok(())
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
            "SELECT id, tenant_id, owner_id, agent, title, created_at_ns, updated_at_ns, \
             retain_days FROM conversations WHERE id = ? AND tenant_id = ?",
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
            "SELECT id, tenant_id, owner_id, agent, title, created_at_ns, updated_at_ns, \
             retain_days FROM conversations WHERE tenant_id = ? AND owner_id = ? \
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

    async fn purge_expired(
        &self,
        cutoff: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<usize, AiError> {
        let (cutoff, now) = (clamp_nanos(cutoff), clamp_nanos(now));
        self.writer
            .run(move |tx| {
                let expired = "SELECT tenant_id, id FROM conversations WHERE updated_at_ns < ?1 \
                     OR (retain_days IS NOT NULL AND updated_at_ns < ?2 - retain_days * ?3)";
                let args = params![cutoff, now, NANOS_PER_DAY];
                tx.execute(
                    &format!(
                        "DELETE FROM stream_events WHERE (tenant_id, conversation_id) IN ({expired})"
                    ),
                    args,
                )?;
                // Messages go with their conversation (ON DELETE CASCADE).
                Ok(tx.execute(
                    &format!("DELETE FROM conversations WHERE (tenant_id, id) IN ({expired})"),
                    args,
                )?)
            })
            .await
            .map_err(|e| e.into_ai("purging conversations"))
    }

    async fn delete(&self, id: &ConversationId, tenant_id: &TenantId) -> Result<bool, AiError> {
        let (id, tenant_id) = (id.as_str().to_owned(), tenant_id.as_str().to_owned());
        self.writer
            .run(move |tx| Ok(delete_conversations(tx, &tenant_id, &[id])? > 0))
            .await
            .map_err(|e| e.into_ai("deleting a conversation"))
    }

    async fn delete_owned_by(
        &self,
        tenant_id: &TenantId,
        owner_id: &str,
    ) -> Result<Vec<ConversationId>, AiError> {
        let (tenant_id, owner_id) = (tenant_id.as_str().to_owned(), owner_id.to_owned());
        self.writer
            .run(move |tx| {
                let ids: Vec<String> = tx
                    .prepare("SELECT id FROM conversations WHERE tenant_id = ?1 AND owner_id = ?2")?
                    .query_map(params![tenant_id, owner_id], |row| row.get(0))?
                    .collect::<Result<_, _>>()?;
                delete_conversations(tx, &tenant_id, &ids)?;
                Ok(ids.into_iter().map(ConversationId::new).collect())
            })
            .await
            .map_err(|e| e.into_ai("deleting conversations"))
    }

    async fn set_retain_days(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
        retain_days: Option<u32>,
    ) -> Result<(), AiError> {
        let (key, tenant) = (id.as_str().to_owned(), tenant_id.as_str().to_owned());
        let changed = self
            .writer
            .run(move |tx| {
                Ok(tx.execute(
                    "UPDATE conversations SET retain_days = ?1 WHERE id = ?2 AND tenant_id = ?3",
                    params![retain_days, key, tenant],
                )?)
            })
            .await
            .map_err(|e| e.into_ai("setting a conversation's retention"))?;
        if changed == 0 {
            return Err(conflicts::conversation_not_found(id));
        }
        Ok(())
    }

    async fn provider_session(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
    ) -> Result<Option<AiSessionHandle>, AiError> {
        let stored: Option<Option<String>> = sqlx::query_scalar(
            "SELECT provider_session FROM conversations WHERE id = ? AND tenant_id = ?",
        )
        .bind(id.as_str())
        .bind(tenant_id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| failed("reading a provider session", e))?;
        decode_session(stored.flatten())
    }

    async fn set_provider_session(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
        session: &AiSessionHandle,
    ) -> Result<(), AiError> {
        let json = encode_session(session)?;
        // Group-committed with the turn's other writes.
        let write = ConversationWrite::Session {
            conversation_id: id.as_str().to_owned(),
            tenant_id: tenant_id.as_str().to_owned(),
            session: json,
        };
        self.writes.write(SqliteWrite::Conversation(write)).await
    }
}

/// Deletes the conversations `ids` of `tenant_id` with their journals and turn claims (their
/// messages go with them: ON DELETE CASCADE); returns how many conversations went.
fn delete_conversations(
    tx: &rusqlite::Transaction<'_>,
    tenant_id: &str,
    ids: &[String],
) -> Result<usize, WriteError> {
    let mut deleted = 0;
    for id in ids {
        for table in ["stream_events", "turn_claims"] {
            tx.prepare_cached(&format!(
                "DELETE FROM {table} WHERE tenant_id = ?1 AND conversation_id = ?2"
            ))?
            .execute(params![tenant_id, id])?;
        }
        deleted += tx
            .prepare_cached("DELETE FROM conversations WHERE tenant_id = ?1 AND id = ?2")?
            .execute(params![tenant_id, id])?;
    }
    Ok(deleted)
}

#[async_trait]
impl AiStreamJournal for SqliteStore {
    async fn append(&self, tenant_id: &TenantId, event: &AiStreamEvent) -> Result<(), AiError> {
        let Ok(row) = StreamRow::new(tenant_id, event) else {
            // A sequence beyond i64 can never be the next one.
            return Err(self.sequence_conflict(tenant_id, event).await);
        };
        self.writes.write(SqliteWrite::Journal(row)).await
    }

    async fn read_after(
        &self,
        conversation_id: &ConversationId,
        tenant_id: &TenantId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<AiStreamEvent>, AiError> {
        let bodies: Vec<String> = sqlx::query_scalar(
            "SELECT body FROM stream_events WHERE tenant_id = ? AND conversation_id = ? \
             AND sequence > ? ORDER BY sequence LIMIT ?",
        )
        .bind(tenant_id.as_str())
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

    async fn last_sequence(
        &self,
        conversation_id: &ConversationId,
        tenant_id: &TenantId,
    ) -> Result<u64, AiError> {
        last_sequence(&self.pool, tenant_id.as_str(), conversation_id.as_str()).await
    }
}

impl SqliteStore {
    async fn sequence_conflict(&self, tenant_id: &TenantId, event: &AiStreamEvent) -> AiError {
        match self.last_sequence(&event.conversation_id, tenant_id).await {
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
        let enablement = enablement.clone();
        self.writer
            .run(move |tx| {
                tx.prepare_cached(
                    "INSERT INTO tool_enablements (tenant_id, tool_name, agent_key, agent, \
                     enabled, changed_by, changed_at_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
                     ON CONFLICT (tenant_id, tool_name, agent_key) DO UPDATE SET \
                     agent = excluded.agent, enabled = excluded.enabled, \
                     changed_by = excluded.changed_by, changed_at_ns = excluded.changed_at_ns",
                )?
                .execute(params![
                    enablement.tenant_id.as_str(),
                    enablement.tool_name,
                    agent_key(enablement.agent.as_deref()),
                    enablement.agent,
                    enablement.enabled,
                    enablement.changed_by,
                    changed_at,
                ])?;
                Ok(())
            })
            .await
            .map_err(|e| e.into_ai("recording tool enablement"))
    }
}

#[async_trait]
impl AiTurnClaims for SqliteStore {
    async fn claim(&self, claim: &AiTurnClaim, now: DateTime<Utc>) -> Result<(), AiError> {
        // Group-committed with the turn's other opening writes.
        self.writes
            .write(SqliteWrite::Claim(ClaimRow::new(claim, now)?))
            .await
    }

    async fn current(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
    ) -> Result<Option<AiTurnClaim>, AiError> {
        let row: Option<TurnClaimRow> = sqlx::query_as(
            "SELECT tenant_id, conversation_id, turn_id, replica_id, lease_until_ns, \
             attached_until_ns FROM turn_claims WHERE tenant_id = ? AND conversation_id = ?",
        )
        .bind(tenant_id.as_str())
        .bind(conversation_id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| failed("reading a turn claim", e))?;
        Ok(row.map(claim_from_row))
    }

    async fn renew(
        &self,
        replica_id: &str,
        lease_until: DateTime<Utc>,
        watching: &[(TenantId, ConversationId)],
    ) -> Result<Vec<AiHeldClaim>, AiError> {
        let until = to_nanos(lease_until, "turn lease")?;
        let replica_id = replica_id.to_owned();
        let watching: Vec<(String, String)> = watching
            .iter()
            .map(|(t, c)| (t.as_str().to_owned(), c.as_str().to_owned()))
            .collect();
        self.writer
            .run(move |tx| {
                tx.prepare_cached(
                    "UPDATE turn_claims SET lease_until_ns = MAX(lease_until_ns, ?1) \
                     WHERE replica_id = ?2",
                )?
                .execute(params![until, replica_id])?;
                for (tenant_id, conversation_id) in &watching {
                    tx.prepare_cached(
                        "UPDATE turn_claims SET attached_until_ns = ?1 \
                         WHERE tenant_id = ?2 AND conversation_id = ?3",
                    )?
                    .execute(params![until, tenant_id, conversation_id])?;
                }
                let held = tx
                    .prepare_cached(
                        "SELECT turn_id, cancel_requested_ns IS NOT NULL FROM turn_claims \
                         WHERE replica_id = ?1",
                    )?
                    .query_map([&replica_id], |row| {
                        Ok(AiHeldClaim {
                            turn_id: row.get(0)?,
                            cancel_requested: row.get(1)?,
                        })
                    })?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(held)
            })
            .await
            .map_err(|e| e.into_ai("renewing turn claims"))
    }

    async fn release(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
        turn_id: &str,
    ) -> Result<(), AiError> {
        let key = (
            tenant_id.as_str().to_owned(),
            conversation_id.as_str().to_owned(),
            turn_id.to_owned(),
        );
        self.writer
            .run(move |tx| {
                tx.prepare_cached(
                    "DELETE FROM turn_claims WHERE tenant_id = ?1 AND conversation_id = ?2 \
                     AND turn_id = ?3",
                )?
                .execute(params![key.0, key.1, key.2])?;
                Ok(())
            })
            .await
            .map_err(|e| e.into_ai("releasing a turn claim"))
    }

    async fn request_cancel(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
        now: DateTime<Utc>,
    ) -> Result<bool, AiError> {
        let key = (
            tenant_id.as_str().to_owned(),
            conversation_id.as_str().to_owned(),
            clamp_nanos(now),
        );
        self.writer
            .run(move |tx| {
                let marked = tx
                    .prepare_cached(
                        "UPDATE turn_claims SET cancel_requested_ns = ?3 \
                         WHERE tenant_id = ?1 AND conversation_id = ?2 AND lease_until_ns >= ?3",
                    )?
                    .execute(params![key.0, key.1, key.2])?;
                Ok(marked == 1)
            })
            .await
            .map_err(|e| e.into_ai("asking for a turn to be cancelled"))
    }

    async fn lapsed(&self, now: DateTime<Utc>, limit: usize) -> Result<Vec<AiTurnClaim>, AiError> {
        let rows: Vec<TurnClaimRow> = sqlx::query_as(
            "SELECT tenant_id, conversation_id, turn_id, replica_id, lease_until_ns, \
             attached_until_ns FROM turn_claims WHERE lease_until_ns < ? \
             ORDER BY lease_until_ns LIMIT ?",
        )
        .bind(clamp_nanos(now))
        .bind(to_sql_count(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| failed("reading lapsed turn claims", e))?;
        Ok(rows.into_iter().map(claim_from_row).collect())
    }

    async fn take_over(
        &self,
        lapsed: &AiTurnClaim,
        by: &AiTurnClaim,
        now: DateTime<Utc>,
    ) -> Result<bool, AiError> {
        let row = ClaimRow::new(by, now)?;
        let old_turn = lapsed.turn_id.clone();
        self.writer
            .run(move |tx| {
                let taken = tx
                    .prepare_cached(
                        "UPDATE turn_claims SET turn_id = ?1, replica_id = ?2, \
                         lease_until_ns = ?3, attached_until_ns = NULL, \
                         cancel_requested_ns = NULL \
                         WHERE tenant_id = ?4 AND conversation_id = ?5 AND turn_id = ?6 \
                         AND lease_until_ns < ?7",
                    )?
                    .execute(params![
                        row.turn_id,
                        row.replica_id,
                        row.lease_until_ns,
                        row.tenant_id,
                        row.conversation_id,
                        old_turn,
                        row.now_ns,
                    ])?;
                Ok(taken == 1)
            })
            .await
            .map_err(|e| e.into_ai("taking over a turn claim"))
    }
}
