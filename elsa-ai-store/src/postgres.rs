//! The shared backend: one PostgreSQL database for several server replicas.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiAuditEvent, AiAuditLog, AiAuditSink, AiConversation, AiConversationStore, AiError,
    AiHeldClaim, AiMessage, AiProposal, AiProposalStore, AiSessionHandle, AiStreamEvent,
    AiStreamJournal, AiToolEnablementStore, AiTurnClaim, AiTurnClaims, AuditQuery, ConversationId,
    ProposalId, ProposalQuery, ToolEnablement,
};
use elsa_workflows::{Page, PageRequest, TenantId};
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnection, PgListener, PgPool, PgPoolOptions};
use sqlx::{ConnectOptions, Connection};
use tokio::sync::mpsc;

use crate::error::{
    Fault, StoreError, failed, is_batch_refusal, is_unique_violation, store_closed,
};
use crate::group_commit::{
    BatchInsert, Batching, GroupCommitWriter, audit_batch_failed, audit_closed, audit_record_failed,
};
use crate::rows::{
    AuditRow, ClaimRow, ConversationRow, EnablementRow, NANOS_PER_DAY, ProposalRow, StreamRow,
    TurnClaimRow, agent_key, claim_from_row, clamp_nanos, conversation_from_row, decode_proposal,
    decode_session, decode_stream_event, enablement_from_row, encode_session, from_nanos,
    from_sql_count, is_terminal, parse_role, role_name, to_nanos, to_sql_count, to_sql_counter,
};
use crate::{conflicts, filters};

static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// Where and how to connect a [`PostgresStore`].
#[derive(Clone)]
pub struct PostgresStoreOptions {
    url: String,
    max_connections: u32,
    acquire_timeout: Duration,
    audit: Batching,
    audit_concurrency: usize,
}

impl std::fmt::Debug for PostgresStoreOptions {
    // The URL may carry a password: it is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStoreOptions")
            .field("max_connections", &self.max_connections)
            .field("acquire_timeout", &self.acquire_timeout)
            .field("audit", &self.audit)
            .field("audit_concurrency", &self.audit_concurrency)
            .finish_non_exhaustive()
    }
}

impl PostgresStoreOptions {
    /// The database at `url` (`postgres://user:password@host:port/database`, or with
    /// `?host=/socket/dir` for a Unix socket), with the defaults: 16 pooled connections, a
    /// 10 s wait for a free one, [`Batching::default`] and up to 2 batches of each kind
    /// committing at once.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            max_connections: 16,
            acquire_timeout: Duration::from_secs(10),
            audit: Batching::default(),
            audit_concurrency: 2,
        }
    }

    /// The most connections the pool opens (reads, and writes that are not group-committed);
    /// the group-commit writers open their own, at most `audit_concurrency` each.
    pub fn max_connections(mut self, connections: u32) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// How long a call waits for a connection before it fails (for example while the
    /// database is unreachable).
    pub fn acquire_timeout(mut self, timeout: Duration) -> Self {
        self.acquire_timeout = timeout;
        self
    }

    /// How audit records (and, by the same rules, stream-journal appends) are grouped into
    /// transactions.
    pub fn audit_batching(mut self, batching: Batching) -> Self {
        self.audit = batching;
        self
    }

    /// How many audit batches (and as many journal batches, opening batches and conversation
    /// batches) may be committing at once, each on a connection of its own (PostgreSQL
    /// overlaps their commits). The writers keep these connections apart from the pool: a
    /// process opens up to four times this many besides `max_connections`. More lets more
    /// commits overlap, fewer makes each batch larger: under `chat_load`'s 500 streams on 2
    /// cores, 2 spent less CPU per turn than 4 and cut the first event's p99.
    pub fn audit_concurrency(mut self, batches: usize) -> Self {
        self.audit_concurrency = batches.max(1);
        self
    }
}

/// Every Weaver store in one PostgreSQL database, shared by any number of processes:
/// proposals, the audit trail, conversations and their messages, the stream journal and tool
/// enablement.
///
/// Correct under concurrent writers in several processes: a proposal's compare-and-set is one
/// conditional `UPDATE` (PostgreSQL re-checks the revision after a concurrent writer commits,
/// so exactly one of them wins), journal sequences are guarded by the primary key, and
/// migrations take PostgreSQL's advisory lock so that replicas starting together migrate
/// once. Audit records, journal appends and conversation writes are group-committed, each
/// writer on connections of its own beside the pool. Clones share the pool and the writers.
#[derive(Clone, Debug)]
pub struct PostgresStore {
    pool: PgPool,
    audit: Arc<GroupCommitWriter<AuditRow>>,
    /// Stream-journal appends, group-committed like the audit records.
    journal: Arc<GroupCommitWriter<StreamRow>>,
    /// What a turn waits for before its first event (conversation creations and turn
    /// claims), group-committed apart from `conversations`: each of its batches is one
    /// statement, never queued behind a transaction of several.
    openings: Arc<GroupCommitWriter<ConversationWrite>>,
    /// The conversation writes a turn makes once it streams (messages appended, provider
    /// sessions recorded), group-committed.
    conversations: Arc<GroupCommitWriter<ConversationWrite>>,
    /// The claims this process holds, and which of them a terminal event's commit has ended.
    held: Arc<HeldClaims>,
}

/// The turn claims this process took, and which of them a commit of their conversation's
/// terminal event has since ended (that commit deletes the claim): releasing one of those
/// has nothing left to delete, so it costs no round trip. Every claim is released when its
/// turn ends, which forgets it here, so this holds at most the turns running now.
#[derive(Debug, Default)]
struct HeldClaims {
    /// (tenant, conversation) → the turn claimed, and whether a commit has ended its claim.
    claims: std::sync::Mutex<HashMap<(String, String), (String, bool)>>,
}

impl HeldClaims {
    fn claims(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), (String, bool)>> {
        self.claims
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Notes a claim whose write has committed.
    fn took(&self, claim: &AiTurnClaim) {
        self.claims().insert(
            (
                claim.tenant_id.as_str().to_owned(),
                claim.conversation_id.as_str().to_owned(),
            ),
            (claim.turn_id.clone(), false),
        );
    }

    /// The turns claimed now of the conversations whose terminal event is in `rows`. Taken
    /// before the batch's statement is sent: a claim noted by then was committed before the
    /// statement ran, so the statement's delete sees it (a claim noted later may not be).
    fn ending(&self, rows: &[StreamRow]) -> Vec<((String, String), String)> {
        let claims = self.claims();
        if claims.is_empty() {
            return Vec::new();
        }
        rows.iter()
            .filter(|row| is_terminal(row.event_type))
            .filter_map(|row| {
                let key = (row.tenant_id.clone(), row.conversation_id.clone());
                let (turn, _) = claims.get(&key)?;
                let turn = turn.clone();
                Some((key, turn))
            })
            .collect()
    }

    /// Marks the claims `ending` found as ended, once their batch has committed.
    fn ended(&self, ending: Vec<((String, String), String)>) {
        let mut claims = self.claims();
        for (key, turn) in ending {
            if let Some((held, ended)) = claims.get_mut(&key)
                && *held == turn
            {
                *ended = true;
            }
        }
    }

    /// Forgets the claim of `turn`; whether a commit had already ended it.
    fn release(&self, tenant_id: &str, conversation_id: &str, turn: &str) -> bool {
        let mut claims = self.claims();
        let key = (tenant_id.to_owned(), conversation_id.to_owned());
        match claims.get(&key) {
            Some((held, ended)) if held == turn => {
                let ended = *ended;
                claims.remove(&key);
                ended
            }
            _ => false,
        }
    }
}

impl PostgresStore {
    /// Connects to the database at `url` with the default options.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(PostgresStoreOptions::new(url)).await
    }

    /// Connects as `options` say and brings the schema up to date.
    pub async fn connect_with(options: PostgresStoreOptions) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .connect(&options.url)
            .await
            .map_err(StoreError::connect)?;
        MIGRATOR.run(&pool).await.map_err(StoreError::migrate)?;
        let connections =
            || WriterConnections::new(&pool, options.audit_concurrency, options.acquire_timeout);
        let batches = AuditInserts {
            connections: connections(),
        };
        let audit = GroupCommitWriter::spawn(batches, options.audit);
        let held = Arc::new(HeldClaims::default());
        let appends = JournalInserts {
            pool: pool.clone(),
            connections: connections(),
            held: Arc::clone(&held),
        };
        let journal = GroupCommitWriter::spawn(appends, options.audit);
        let conversation_writer = || {
            let writes = ConversationWrites {
                pool: pool.clone(),
                connections: connections(),
            };
            Arc::new(GroupCommitWriter::spawn(writes, options.audit))
        };
        Ok(Self {
            audit: Arc::new(audit),
            journal: Arc::new(journal),
            openings: conversation_writer(),
            conversations: conversation_writer(),
            held,
            pool,
        })
    }

    /// Returns once every audit record, journal append and conversation write accepted so far
    /// is committed.
    pub async fn flush(&self) -> Result<(), AiError> {
        self.audit.flush().await?;
        self.openings.flush().await?;
        self.conversations.flush().await?;
        self.journal.flush().await
    }

    /// Writes every accepted audit record, journal append and conversation write, then closes
    /// the writers' connections and the pool. Later calls on this store (and its clones)
    /// fail.
    pub async fn close(&self) {
        self.audit.close().await;
        self.openings.close().await;
        self.conversations.close().await;
        self.journal.close().await;
        self.pool.close().await;
    }
}

/// The channel on which every journal commit announces how far its conversations reach.
const JOURNAL_CHANNEL: &str = "weaver_journal";

/// The channel on which a replica asks the replica running a turn to cancel it.
const CANCEL_CHANNEL: &str = "weaver_cancel";

/// The channel on which every change of a tenant's tool enablement is announced (the payload
/// is the tenant).
const ENABLEMENT_CHANNEL: &str = "weaver_enablement";

/// How far one conversation's journal reaches, as a commit announced it to every replica.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalNotice {
    /// The conversation's tenant.
    pub tenant_id: TenantId,
    /// The conversation.
    pub conversation_id: ConversationId,
    /// The last sequence the commit wrote.
    pub sequence: u64,
}

impl JournalNotice {
    fn encode(tenant_id: &str, conversation_id: &str, sequence: i64) -> String {
        serde_json::json!([tenant_id, conversation_id, sequence]).to_string()
    }

    fn decode(payload: &str) -> Option<Self> {
        let (tenant_id, conversation_id, sequence): (String, String, u64) =
            serde_json::from_str(payload).ok()?;
        Some(Self {
            tenant_id: TenantId::new(tenant_id),
            conversation_id: ConversationId::new(conversation_id),
            sequence,
        })
    }
}

/// What a replica hears about the shared journal (see [`PostgresStore::journal_feed`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JournalFeed {
    /// A commit appended to a conversation's journal.
    Appended(JournalNotice),
    /// A client asked another replica to cancel the conversation's turn: the replica
    /// running it cancels it.
    CancelRequested {
        /// The conversation's tenant.
        tenant_id: TenantId,
        /// The conversation.
        conversation_id: ConversationId,
        /// The turn to cancel (a later turn of the conversation is not).
        turn_id: String,
    },
    /// A tenant's tool enablement changed ([`AiToolEnablementStore::set`]): whoever keeps its
    /// decisions reads them again.
    EnablementChanged {
        /// The tenant whose decisions changed.
        tenant_id: TenantId,
    },
    /// The listening connection was lost (and is being restored): announcements made
    /// meanwhile are gone, so whoever follows a journal reads it again, whoever keeps
    /// enablement decisions forgets them (and cancel requests are read from the claims at the
    /// next heartbeat).
    Missed,
}

impl JournalFeed {
    /// What a notification on `channel` with `payload` says, if it is one of Weaver's.
    fn decode(channel: &str, payload: &str) -> Option<Self> {
        if channel == ENABLEMENT_CHANNEL {
            return Some(Self::EnablementChanged {
                tenant_id: TenantId::new(payload),
            });
        }
        if channel == CANCEL_CHANNEL {
            let (tenant_id, conversation_id, turn_id): (String, String, String) =
                serde_json::from_str(payload).ok()?;
            return Some(Self::CancelRequested {
                tenant_id: TenantId::new(tenant_id),
                conversation_id: ConversationId::new(conversation_id),
                turn_id,
            });
        }
        JournalNotice::decode(payload).map(Self::Appended)
    }
}

impl PostgresStore {
    /// Listens for the journal commits of every replica (PostgreSQL `LISTEN`): each commit
    /// announces, per conversation it appended to, the last sequence it wrote; for the
    /// cancel requests of every replica ([`AiTurnClaims::request_cancel`]); and for every
    /// change of a tenant's tool enablement. The feed ends
    /// when the store closes or the receiver is dropped.
    ///
    /// # Errors
    ///
    /// When the listening connection cannot be opened.
    pub async fn journal_feed(&self) -> Result<mpsc::Receiver<JournalFeed>, StoreError> {
        let mut listener = PgListener::connect_with(&self.pool)
            .await
            .map_err(StoreError::connect)?;
        listener
            .listen_all([JOURNAL_CHANNEL, CANCEL_CHANNEL, ENABLEMENT_CHANNEL])
            .await
            .map_err(StoreError::connect)?;
        let (feed, heard) = mpsc::channel(4096);
        tokio::spawn(async move {
            loop {
                let next = match listener.try_recv().await {
                    Ok(Some(notification)) => {
                        match JournalFeed::decode(notification.channel(), notification.payload()) {
                            Some(heard) => heard,
                            None => continue,
                        }
                    }
                    Ok(None) => JournalFeed::Missed,
                    Err(sqlx::Error::PoolClosed) => return,
                    Err(error) => {
                        tracing::warn!(%error, "journal listener failed; listening again");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        JournalFeed::Missed
                    }
                };
                if feed.send(next).await.is_err() {
                    return;
                }
            }
        });
        Ok(heard)
    }
}

/// The connections one group-commit writer's batches run on, kept apart from the pool: a
/// pooled connection costs a batch two more round trips (sqlx checks it when it is taken and
/// again when it is given back), waits a batch's callers need not have. A batch takes an idle
/// connection, or opens one; at most `concurrency` exist because at most that many batches
/// run at once.
struct WriterConnections {
    options: Arc<sqlx::postgres::PgConnectOptions>,
    idle: std::sync::Mutex<Vec<(PgConnection, Instant)>>,
    concurrency: usize,
    /// How long a batch waits for a connection, like a pooled call (the pool's
    /// `acquire_timeout`).
    timeout: Duration,
}

impl WriterConnections {
    /// A connection idle longer than this is checked before a batch uses it (a quiet spell
    /// is when a server or a proxy in between may have closed it); a busy one is not.
    const CHECK_AFTER: Duration = Duration::from_secs(1);

    fn new(pool: &PgPool, concurrency: usize, timeout: Duration) -> Self {
        Self {
            options: pool.connect_options(),
            idle: std::sync::Mutex::new(Vec::with_capacity(concurrency)),
            concurrency,
            timeout,
        }
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<(PgConnection, Instant)>> {
        // Held only to push or pop; nothing panics while it is held.
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A connection for one batch: an idle one that still answers, or a new one; 503
    /// `store_unavailable` (as `PoolTimedOut`) when none is had within the timeout.
    async fn take(&self) -> Result<PgConnection, sqlx::Error> {
        let taken = async {
            loop {
                let Some((mut connection, since)) = self.idle().pop() else {
                    return self.options.connect().await;
                };
                if since.elapsed() < Self::CHECK_AFTER || connection.ping().await.is_ok() {
                    return Ok(connection);
                }
            }
        };
        tokio::time::timeout(self.timeout, taken)
            .await
            .unwrap_or(Err(sqlx::Error::PoolTimedOut))
    }

    /// Runs `batch` on a connection of the writer's, which it keeps unless the batch's failure
    /// may have broken it.
    async fn with<T>(
        &self,
        batch: impl AsyncFnOnce(&mut PgConnection) -> Result<T, sqlx::Error>,
    ) -> Result<T, sqlx::Error> {
        let mut connection = self.take().await?;
        let outcome = batch(&mut connection).await;
        self.settle(connection, &outcome);
        outcome
    }

    /// Closes the idle connections (the writer has stopped; none is in use).
    async fn close(&self) {
        let idle = std::mem::take(&mut *self.idle());
        for (connection, _) in idle {
            let _ = connection.close().await;
        }
    }

    /// Gives `connection` back after a batch ended with `outcome`: kept unless the failure
    /// may have left it broken (anything but the database refusing a statement while
    /// available).
    fn settle<T>(&self, connection: PgConnection, outcome: &Result<T, sqlx::Error>) {
        let usable = match outcome {
            Ok(_) => true,
            Err(error) => {
                matches!(error, sqlx::Error::Database(_) | sqlx::Error::RowNotFound)
                    && !error.is_unavailable()
            }
        };
        if usable {
            self.idle().push((connection, Instant::now()));
        }
    }
}

/// Audit batches, one `INSERT` each.
struct AuditInserts {
    connections: WriterConnections,
}

#[async_trait]
impl BatchInsert for AuditInserts {
    type Row = AuditRow;
    type Error = sqlx::Error;
    type Aftermath = ();

    async fn insert(&self, rows: &[AuditRow]) -> Result<(), sqlx::Error> {
        self.connections
            .with(async |connection| Self::insert_on(connection, rows).await)
            .await
    }

    fn concurrent_batches(&self) -> usize {
        self.connections.concurrency
    }

    fn is_row_refusal(&self, error: &sqlx::Error) -> bool {
        is_unique_violation(error)
    }

    async fn row_failed(&self, row: &AuditRow, error: sqlx::Error) -> AiError {
        audit_record_failed(row, is_unique_violation(&error), error)
    }

    fn batch_failed(error: sqlx::Error) -> AiError {
        audit_batch_failed(error)
    }

    async fn finish(&self) {
        self.connections.close().await;
    }

    fn closed(_: Option<&AuditRow>) -> AiError {
        audit_closed()
    }
}

impl AuditInserts {
    async fn insert_on(
        connection: &mut PgConnection,
        rows: &[AuditRow],
    ) -> Result<(), sqlx::Error> {
        // One statement for the whole batch: the columns travel as arrays.
        let column = |f: fn(&AuditRow) -> &str| rows.iter().map(f).collect::<Vec<_>>();
        let optional = |f: fn(&AuditRow) -> Option<&str>| rows.iter().map(f).collect::<Vec<_>>();
        sqlx::query(
            "INSERT INTO audit_events (id, tenant_id, occurred_at_ns, actor_id, action, outcome, \
             conversation_id, proposal_id, tool_name, trace_id, body) \
             SELECT id, tenant_id, occurred_at_ns, actor_id, action, outcome, conversation_id, \
             proposal_id, tool_name, trace_id, body::json FROM UNNEST($1::text[], \
             $2::text[], $3::int8[], $4::text[], $5::text[], $6::text[], $7::text[], \
             $8::text[], $9::text[], $10::text[], $11::text[]) AS batch (id, tenant_id, \
             occurred_at_ns, actor_id, action, outcome, conversation_id, proposal_id, \
             tool_name, trace_id, body)",
        )
        .bind(column(|r| &r.id))
        .bind(column(|r| &r.tenant_id))
        .bind(rows.iter().map(|r| r.occurred_at_ns).collect::<Vec<_>>())
        .bind(column(|r| &r.actor_id))
        .bind(column(|r| &r.action))
        .bind(column(|r| r.outcome))
        .bind(optional(|r| r.conversation_id.as_deref()))
        .bind(optional(|r| r.proposal_id.as_deref()))
        .bind(optional(|r| r.tool_name.as_deref()))
        .bind(optional(|r| r.trace_id.as_deref()))
        .bind(column(|r| &r.body))
        .execute(connection)
        .await?;
        Ok(())
    }
}

/// Stream-journal batches: one statement that checks each row is exactly the next sequence
/// of its tenant's conversation (the batch's earlier rows included; one index probe per
/// conversation), inserts them all and ends the claims of turns whose terminal event is among
/// them (one round trip, one commit); once the callers are answered, the same connection
/// announces the new ends in a transaction of its own. The primary key refuses a row another
/// process appended meanwhile; the batch is then retried row by row.
///
/// The announcement is apart because PostgreSQL serialises the commits of all notifying
/// transactions of the cluster, holding a lock through each one's WAL flush: with the
/// notices inside, the journal's batches could not commit together. Apart, it writes no
/// data, so its commit waits for no flush and holds that lock only for an instant. A replica
/// that dies between the two leaves followers without the notice; they read the journal at
/// every heartbeat anyway.
struct JournalInserts {
    pool: PgPool,
    connections: WriterConnections,
    /// The store's claims, marked as their conversation's terminal event commits.
    held: Arc<HeldClaims>,
}

#[async_trait]
impl BatchInsert for JournalInserts {
    type Row = StreamRow;
    type Error = sqlx::Error;
    /// The connection that wrote the batch, and the notices to send on it.
    type Aftermath = (PgConnection, Vec<String>);

    async fn insert(&self, rows: &[StreamRow]) -> Result<Self::Aftermath, sqlx::Error> {
        let mut connection = self.connections.take().await?;
        let ending = self.held.ending(rows);
        match Self::insert_on(&mut connection, rows).await {
            Ok(notices) => {
                self.held.ended(ending);
                Ok((connection, notices))
            }
            Err(error) => {
                let failed = Err(error);
                self.connections.settle(connection, &failed);
                failed
            }
        }
    }

    async fn after_ack(&self, (mut connection, notices): Self::Aftermath) {
        let announced =
            sqlx::query("SELECT pg_notify($1, payload) FROM UNNEST($2::text[]) AS n (payload)")
                .bind(JOURNAL_CHANNEL)
                .bind(&notices)
                .execute(&mut connection)
                .await;
        if let Err(error) = &announced {
            // The rows are committed and their callers answered; followers elsewhere read
            // them at their next heartbeat.
            tracing::warn!(%error, "announcing journal commits failed");
        }
        self.connections.settle(connection, &announced);
    }

    fn concurrent_batches(&self) -> usize {
        self.connections.concurrency
    }

    fn is_row_refusal(&self, error: &sqlx::Error) -> bool {
        matches!(error, sqlx::Error::RowNotFound) || is_unique_violation(error)
    }

    async fn row_failed(&self, row: &StreamRow, error: sqlx::Error) -> AiError {
        if !self.is_row_refusal(&error) {
            return failed("appending to the stream journal", error);
        }
        match last_sequence(&self.pool, &row.tenant_id, &row.conversation_id).await {
            Ok(last) => conflicts::sequence_of(
                &row.conversation_id,
                u64::try_from(row.sequence).unwrap_or(0),
                last,
            ),
            Err(error) => error,
        }
    }

    fn batch_failed(error: sqlx::Error) -> AiError {
        failed("appending to the stream journal", error)
    }

    async fn finish(&self) {
        self.connections.close().await;
    }

    fn closed(_: Option<&StreamRow>) -> AiError {
        store_closed()
    }
}

impl JournalInserts {
    /// The batch's one statement; the notices to announce once the callers are answered.
    async fn insert_on(
        connection: &mut PgConnection,
        rows: &[StreamRow],
    ) -> Result<Vec<String>, sqlx::Error> {
        let tenants: Vec<&str> = rows.iter().map(|r| r.tenant_id.as_str()).collect();
        let conversations: Vec<&str> = rows.iter().map(|r| r.conversation_id.as_str()).collect();
        // A turn's terminal event ends its claim in the same commit.
        let ended: Vec<(&str, &str)> = rows
            .iter()
            .filter(|r| is_terminal(r.event_type))
            .map(|r| (r.tenant_id.as_str(), r.conversation_id.as_str()))
            .collect();
        // One statement, so one round trip and one commit: it finds where each conversation's
        // journal ends (one index probe per conversation), and inserts the rows and ends the
        // claims only if every row is exactly the next sequence of its conversation (the
        // batch's earlier rows included). Its snapshot may be behind another process's
        // append; then a sequence that now exists gets through the check, and the primary key
        // refuses it: the journal stays gap-free.
        let appended: i64 = sqlx::query_scalar(
            "WITH batch AS (SELECT * FROM UNNEST($1::text[], $2::text[], $3::int8[], \
             $4::text[], $5::int8[], $6::text[]) WITH ORDINALITY AS b (tenant_id, \
             conversation_id, sequence, event_type, occurred_at_ns, body, n)), \
             journal_end AS (SELECT k.tenant_id, k.conversation_id, COALESCE((SELECT \
             e.sequence FROM stream_events e WHERE e.tenant_id = k.tenant_id AND \
             e.conversation_id = k.conversation_id ORDER BY e.sequence DESC LIMIT 1), 0) AS \
             last FROM (SELECT DISTINCT tenant_id, conversation_id FROM batch) AS k), \
             checked AS (SELECT b.*, j.last + row_number() OVER (PARTITION BY b.tenant_id, \
             b.conversation_id ORDER BY b.n) AS next FROM batch b JOIN journal_end j USING \
             (tenant_id, conversation_id)), \
             appended AS (INSERT INTO stream_events (tenant_id, conversation_id, sequence, \
             event_type, occurred_at_ns, body) SELECT tenant_id, conversation_id, sequence, \
             event_type, occurred_at_ns, body::json FROM checked WHERE NOT EXISTS \
             (SELECT 1 FROM checked WHERE sequence <> next) RETURNING 1), \
             ended AS (DELETE FROM turn_claims WHERE (tenant_id, conversation_id) IN \
             (SELECT * FROM UNNEST($7::text[], $8::text[]) AS e (tenant_id, conversation_id)) \
             AND EXISTS (SELECT 1 FROM appended)) \
             SELECT count(*) FROM appended",
        )
        .bind(&tenants)
        .bind(&conversations)
        .bind(rows.iter().map(|r| r.sequence).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.event_type).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.occurred_at_ns).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.body.as_str()).collect::<Vec<_>>())
        .bind(ended.iter().map(|(t, _)| *t).collect::<Vec<_>>())
        .bind(ended.iter().map(|(_, c)| *c).collect::<Vec<_>>())
        .fetch_one(connection)
        .await?;
        if usize::try_from(appended).ok() != Some(rows.len()) {
            // Some row is not the next sequence: nothing was written, and each row is tried
            // on its own (see `is_row_refusal`).
            return Err(sqlx::Error::RowNotFound);
        }
        // Every replica hears, after the commit, how far each conversation's journal now
        // reaches: the batch's last row of each (the rows of one conversation are in order).
        let mut reached: HashMap<(&str, &str), i64> = HashMap::new();
        for row in rows {
            reached.insert(
                (row.tenant_id.as_str(), row.conversation_id.as_str()),
                row.sequence,
            );
        }
        let notices: Vec<String> = reached
            .iter()
            .map(|((tenant, conversation), sequence)| {
                JournalNotice::encode(tenant, conversation, *sequence)
            })
            .collect();
        Ok(notices)
    }
}

/// One caller's conversation write or turn claim, group-committed with others.
#[derive(Debug)]
pub(crate) enum ConversationWrite {
    /// A new conversation with its first messages.
    Create {
        row: (String, String, String, String, String, i64, i64),
        messages: Vec<(&'static str, String, i64)>,
    },
    /// A message appended to an existing conversation of the tenant.
    Append {
        id: String,
        tenant_id: String,
        message: (&'static str, String, i64),
    },
    /// The provider session (JSON) of an existing conversation of the tenant.
    Session {
        id: String,
        tenant_id: String,
        session: String,
    },
    /// A turn claim, inserted only when no claim holds the conversation.
    Claim(ClaimRow),
}

impl ConversationWrite {
    fn message(message: &AiMessage) -> Result<(&'static str, String, i64), AiError> {
        Ok((
            role_name(message.role),
            message.content.clone(),
            to_nanos(message.timestamp, "message")?,
        ))
    }
}

/// Conversation batches: one statement (data-modifying `WITH` clauses, the columns travel as
/// arrays), so one round trip and one commit, all rows or none. A write that cannot stand on
/// its own (an id that exists, a conversation that is not the tenant's, a conversation claimed
/// already) makes the statement fail, which refuses the batch; it is then retried row by row.
struct ConversationWrites {
    pool: PgPool,
    connections: WriterConnections,
}

/// A new conversation as a batch writes it: its row (id, tenant, owner, agent, title,
/// created, updated) and its messages (conversation id, role, content, time).
type CreatedRow = (String, String, String, String, String, i64, i64);
type MessageRow<'a> = (&'a str, &'a str, &'a str, i64);

/// A statement whose columns travel as arrays.
type ArrayQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// One text column of `rows`, as an array to bind.
fn text_column<'q, R>(rows: &[&'q R], field: fn(&R) -> &String) -> Vec<&'q str> {
    rows.iter().map(|row| field(row).as_str()).collect()
}

/// Binds the seven columns of new conversations, in [`CreatedRow`] order.
fn bind_created<'q>(query: ArrayQuery<'q>, created: &[&'q CreatedRow]) -> ArrayQuery<'q> {
    let text = |field| text_column(created, field);
    query
        .bind(text(|r| &r.0))
        .bind(text(|r| &r.1))
        .bind(text(|r| &r.2))
        .bind(text(|r| &r.3))
        .bind(text(|r| &r.4))
        .bind(created.iter().map(|r| r.5).collect::<Vec<_>>())
        .bind(created.iter().map(|r| r.6).collect::<Vec<_>>())
}

/// Binds the four columns of messages, in [`MessageRow`] order.
fn bind_messages<'q>(query: ArrayQuery<'q>, messages: &[MessageRow<'q>]) -> ArrayQuery<'q> {
    query
        .bind(messages.iter().map(|m| m.0).collect::<Vec<_>>())
        .bind(messages.iter().map(|m| m.1).collect::<Vec<_>>())
        .bind(messages.iter().map(|m| m.2).collect::<Vec<_>>())
        .bind(messages.iter().map(|m| m.3).collect::<Vec<_>>())
}

/// Binds the five columns of turn claims: tenant, conversation, turn, replica, lease.
fn bind_claims<'q>(query: ArrayQuery<'q>, claims: &[&'q ClaimRow]) -> ArrayQuery<'q> {
    let text = |field| text_column(claims, field);
    query
        .bind(text(|c| &c.tenant_id))
        .bind(text(|c| &c.conversation_id))
        .bind(text(|c| &c.turn_id))
        .bind(text(|c| &c.replica_id))
        .bind(claims.iter().map(|c| c.lease_until_ns).collect::<Vec<_>>())
}

/// What one batch changes on an existing conversation's row.
#[derive(Default)]
struct RowChange<'a> {
    /// The latest time of a message appended to it.
    appended_at: Option<i64>,
    /// The last provider session recorded for it.
    session: Option<&'a str>,
}

impl ConversationWrites {
    /// The batch, on the writer's connection.
    async fn insert_on(
        connection: &mut PgConnection,
        rows: &[ConversationWrite],
    ) -> Result<(), sqlx::Error> {
        let mut created = Vec::new();
        let mut messages: Vec<MessageRow> = Vec::new();
        let mut appended: Vec<MessageRow> = Vec::new();
        // Written in one clause: one new row version per conversation, whatever changed.
        let mut touched: HashMap<(&str, &str), RowChange> = HashMap::new();
        let mut claims = Vec::new();
        for row in rows {
            match row {
                ConversationWrite::Create {
                    row,
                    messages: first,
                } => {
                    created.push(row);
                    for (role, content, at) in first {
                        messages.push((row.0.as_str(), role, content.as_str(), *at));
                    }
                }
                ConversationWrite::Append {
                    id,
                    tenant_id,
                    message: (role, content, at),
                } => {
                    let change = touched
                        .entry((id.as_str(), tenant_id.as_str()))
                        .or_default();
                    change.appended_at = change.appended_at.max(Some(*at));
                    appended.push((id.as_str(), role, content.as_str(), *at));
                }
                ConversationWrite::Session {
                    id,
                    tenant_id,
                    session,
                } => {
                    touched
                        .entry((id.as_str(), tenant_id.as_str()))
                        .or_default()
                        .session = Some(session)
                }
                ConversationWrite::Claim(claim) => claims.push(claim),
            }
        }
        messages.extend(appended);
        // The clauses share one snapshot, so `changed` does not see a conversation `created`
        // makes: a batch that creates one and writes to it is refused and retried row by row
        // (a caller writes to a conversation once its creation is acknowledged, so batches
        // hardly ever hold both). A claim on a conversation another claim holds, like an id
        // that exists, is a unique violation; a conversation `changed` did not find makes the
        // statement call `refuse_conversation_batch` (migration 0007). Either error undoes
        // every clause.
        let query = sqlx::query(
            "WITH created AS (INSERT INTO conversations (id, tenant_id, owner_id, agent, title, \
             created_at_ns, updated_at_ns) SELECT * FROM UNNEST($1::text[], $2::text[], \
             $3::text[], $4::text[], $5::text[], $6::int8[], $7::int8[])), \
             messages AS (INSERT INTO conversation_messages (conversation_id, role, content, \
             created_at_ns) SELECT id, role, content, at FROM UNNEST($8::text[], $9::text[], \
             $10::text[], $11::int8[]) WITH ORDINALITY AS m (id, role, content, at, n) \
             ORDER BY n), \
             claimed AS (INSERT INTO turn_claims (tenant_id, conversation_id, turn_id, \
             replica_id, lease_until_ns) SELECT * FROM UNNEST($12::text[], $13::text[], \
             $14::text[], $15::text[], $16::int8[])), \
             changed AS (UPDATE conversations SET updated_at_ns = GREATEST(updated_at_ns, u.at), \
             provider_session = COALESCE(u.session, provider_session) \
             FROM UNNEST($17::text[], $18::text[], $19::int8[], $20::text[]) \
             AS u (id, tenant_id, at, session) \
             WHERE conversations.id = u.id AND conversations.tenant_id = u.tenant_id \
             RETURNING 1) \
             SELECT refuse_conversation_batch() FROM (SELECT count(*) AS n FROM changed) AS c \
             WHERE c.n <> $21",
        );
        bind_claims(
            bind_messages(bind_created(query, &created), &messages),
            &claims,
        )
        .bind(touched.keys().map(|(id, _)| *id).collect::<Vec<_>>())
        .bind(
            touched
                .keys()
                .map(|(_, tenant)| *tenant)
                .collect::<Vec<_>>(),
        )
        .bind(touched.values().map(|c| c.appended_at).collect::<Vec<_>>())
        .bind(touched.values().map(|c| c.session).collect::<Vec<_>>())
        .bind(to_sql_count(touched.len()))
        .execute(connection)
        .await?;
        Ok(())
    }
}

#[async_trait]
impl BatchInsert for ConversationWrites {
    type Row = ConversationWrite;
    type Error = sqlx::Error;
    type Aftermath = ();

    async fn insert(&self, rows: &[ConversationWrite]) -> Result<(), sqlx::Error> {
        self.connections
            .with(async |connection| Self::insert_on(connection, rows).await)
            .await
    }

    fn concurrent_batches(&self) -> usize {
        self.connections.concurrency
    }

    fn is_row_refusal(&self, error: &sqlx::Error) -> bool {
        is_unique_violation(error) || is_batch_refusal(error)
    }

    async fn row_failed(&self, row: &ConversationWrite, error: sqlx::Error) -> AiError {
        let refused = self.is_row_refusal(&error);
        match row {
            ConversationWrite::Create { row, .. } if refused => {
                conflicts::conversation_exists(&ConversationId::new(row.0.as_str()))
            }
            ConversationWrite::Create { .. } => failed("creating a conversation", error),
            ConversationWrite::Append { id, .. } | ConversationWrite::Session { id, .. }
                if refused =>
            {
                conflicts::conversation_not_found(&ConversationId::new(id.as_str()))
            }
            ConversationWrite::Append { .. } => failed("appending a message", error),
            ConversationWrite::Session { .. } => failed("recording a provider session", error),
            ConversationWrite::Claim(claim) if refused => {
                let lease: Result<Option<i64>, _> = sqlx::query_scalar(
                    "SELECT lease_until_ns FROM turn_claims \
                     WHERE tenant_id = $1 AND conversation_id = $2",
                )
                .bind(&claim.tenant_id)
                .bind(&claim.conversation_id)
                .fetch_optional(&self.pool)
                .await;
                match lease {
                    // Released in the meantime: reported as in progress; try again.
                    Ok(lease) => conflicts::turn_claimed(
                        &claim.conversation_id,
                        lease.unwrap_or(i64::MAX),
                        claim.now_ns,
                    ),
                    Err(error) => failed("reading a turn claim", error),
                }
            }
            ConversationWrite::Claim(_) => failed("claiming a conversation for a turn", error),
        }
    }

    fn batch_failed(error: sqlx::Error) -> AiError {
        failed("committing a batch of conversation writes", error)
    }

    async fn finish(&self) {
        self.connections.close().await;
    }

    fn closed(_: Option<&ConversationWrite>) -> AiError {
        store_closed()
    }
}

async fn last_sequence(
    pool: &PgPool,
    tenant_id: &str,
    conversation_id: &str,
) -> Result<u64, AiError> {
    let last: i64 = sqlx::query_scalar(
        "SELECT COALESCE(MAX(sequence), 0) FROM stream_events \
         WHERE tenant_id = $1 AND conversation_id = $2",
    )
    .bind(tenant_id)
    .bind(conversation_id)
    .fetch_one(pool)
    .await
    .map_err(|e| failed("reading the stream journal", e))?;
    Ok(u64::try_from(last).unwrap_or(0))
}

#[async_trait]
impl AiProposalStore for PostgresStore {
    async fn find(
        &self,
        id: &ProposalId,
        tenant_id: &TenantId,
    ) -> Result<Option<AiProposal>, AiError> {
        let row: Option<(i64, String)> = sqlx::query_as(
            "SELECT revision, body::text FROM proposals WHERE id = $1 AND tenant_id = $2",
        )
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
             created_by, created_at_ns, revision, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::json)",
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
        .execute(&self.pool)
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
        // One conditional statement: a concurrent writer's UPDATE waits for the row lock and
        // then re-checks the revision, so of several writers holding it exactly one wins.
        let updated = sqlx::query(
            "UPDATE proposals SET conversation_id = $1, definition_id = $2, status = $3, \
             created_by = $4, created_at_ns = $5, revision = $6, body = $7::json \
             WHERE id = $8 AND tenant_id = $9 AND revision = $10",
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
        .execute(&self.pool)
        .await
        .map_err(|e| failed("updating a proposal", e))?
        .rows_affected();
        if updated == 1 {
            return Ok(());
        }
        let current: Option<(String, i64)> = sqlx::query_as(
            "SELECT status, revision FROM proposals WHERE id = $1 AND tenant_id = $2",
        )
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
        filters::proposal_page(&self.pool, "body::text", tenant_id, query).await
    }
}

#[async_trait]
impl AiAuditSink for PostgresStore {
    async fn record(&self, event: AiAuditEvent) -> Result<(), AiError> {
        self.audit.write(AuditRow::new(&event)?).await
    }
}

#[async_trait]
impl AiAuditLog for PostgresStore {
    async fn query(
        &self,
        tenant_id: &TenantId,
        query: &AuditQuery,
    ) -> Result<Page<AiAuditEvent>, AiError> {
        filters::audit_page(&self.pool, "body::text", tenant_id, query).await
    }
}

/// Which of a tenant's conversations a deletion takes.
#[derive(Clone, Copy, Debug)]
enum Doomed<'a> {
    /// One conversation, by id.
    One(&'a ConversationId),
    /// Every conversation of one owner.
    OwnedBy(&'a str),
}

impl PostgresStore {
    /// Deletes the tenant's conversations `doomed` names with their journals and turn claims,
    /// in one transaction (their messages go with them: ON DELETE CASCADE); returns the ids
    /// deleted.
    async fn delete_conversations(
        &self,
        tenant_id: &TenantId,
        doomed: Doomed<'_>,
    ) -> Result<Vec<ConversationId>, AiError> {
        let doing = "deleting conversations";
        let (query, key) = match doomed {
            Doomed::One(id) => (
                "DELETE FROM conversations WHERE tenant_id = $1 AND id = $2 RETURNING id",
                id.as_str(),
            ),
            Doomed::OwnedBy(owner) => (
                "DELETE FROM conversations WHERE tenant_id = $1 AND owner_id = $2 RETURNING id",
                owner,
            ),
        };
        let mut tx = self.pool.begin().await.map_err(|e| failed(doing, e))?;
        let ids: Vec<String> = sqlx::query_scalar(query)
            .bind(tenant_id.as_str())
            .bind(key)
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| failed(doing, e))?;
        for rows in [
            "DELETE FROM stream_events WHERE tenant_id = $1 AND conversation_id = ANY($2)",
            "DELETE FROM turn_claims WHERE tenant_id = $1 AND conversation_id = ANY($2)",
        ] {
            sqlx::query(rows)
                .bind(tenant_id.as_str())
                .bind(&ids)
                .execute(&mut *tx)
                .await
                .map_err(|e| failed(doing, e))?;
        }
        tx.commit().await.map_err(|e| failed(doing, e))?;
        Ok(ids.into_iter().map(ConversationId::new).collect())
    }
}

#[async_trait]
impl AiConversationStore for PostgresStore {
    async fn create(&self, conversation: &AiConversation) -> Result<(), AiError> {
        let write = ConversationWrite::Create {
            row: (
                conversation.id.as_str().to_owned(),
                conversation.tenant_id.as_str().to_owned(),
                conversation.owner_id.clone(),
                conversation.agent.clone(),
                conversation.title.clone(),
                to_nanos(conversation.created_at, "conversation creation")?,
                to_nanos(conversation.updated_at, "conversation update")?,
            ),
            messages: conversation
                .messages
                .iter()
                .map(ConversationWrite::message)
                .collect::<Result<_, _>>()?,
        };
        self.openings.write(write).await?;
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
             retain_days FROM conversations WHERE id = $1 AND tenant_id = $2",
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
             WHERE conversation_id = $1 ORDER BY seq",
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
            id: id.as_str().to_owned(),
            tenant_id: tenant_id.as_str().to_owned(),
            message: ConversationWrite::message(message)?,
        };
        self.conversations.write(write).await
    }

    async fn list(
        &self,
        tenant_id: &TenantId,
        owner_id: &str,
        page: PageRequest,
    ) -> Result<Page<AiConversation>, AiError> {
        let doing = "listing conversations";
        let total: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM conversations WHERE tenant_id = $1 AND owner_id = $2",
        )
        .bind(tenant_id.as_str())
        .bind(owner_id)
        .fetch_one(&self.pool)
        .await
        .map_err(|e| failed(doing, e))?;
        let rows: Vec<ConversationRow> = sqlx::query_as(
            "SELECT id, tenant_id, owner_id, agent, title, created_at_ns, updated_at_ns, \
             retain_days FROM conversations WHERE tenant_id = $1 AND owner_id = $2 \
             ORDER BY updated_at_ns DESC, id LIMIT $3 OFFSET $4",
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
        let doing = "purging conversations";
        let mut tx = self.pool.begin().await.map_err(|e| failed(doing, e))?;
        sqlx::query(
            "DELETE FROM stream_events WHERE (tenant_id, conversation_id) IN \
             (SELECT tenant_id, id FROM conversations WHERE updated_at_ns < $1 \
             OR (retain_days IS NOT NULL AND updated_at_ns < $2 - retain_days * $3))",
        )
        .bind(cutoff)
        .bind(now)
        .bind(NANOS_PER_DAY)
        .execute(&mut *tx)
        .await
        .map_err(|e| failed(doing, e))?;
        // Messages go with their conversation (ON DELETE CASCADE).
        let purged = sqlx::query(
            "DELETE FROM conversations WHERE updated_at_ns < $1 \
             OR (retain_days IS NOT NULL AND updated_at_ns < $2 - retain_days * $3)",
        )
        .bind(cutoff)
        .bind(now)
        .bind(NANOS_PER_DAY)
        .execute(&mut *tx)
        .await
        .map_err(|e| failed(doing, e))?
        .rows_affected();
        tx.commit().await.map_err(|e| failed(doing, e))?;
        Ok(usize::try_from(purged).unwrap_or(usize::MAX))
    }

    async fn delete(&self, id: &ConversationId, tenant_id: &TenantId) -> Result<bool, AiError> {
        let deleted = self
            .delete_conversations(tenant_id, Doomed::One(id))
            .await?;
        Ok(!deleted.is_empty())
    }

    async fn delete_owned_by(
        &self,
        tenant_id: &TenantId,
        owner_id: &str,
    ) -> Result<Vec<ConversationId>, AiError> {
        self.delete_conversations(tenant_id, Doomed::OwnedBy(owner_id))
            .await
    }

    async fn set_retain_days(
        &self,
        id: &ConversationId,
        tenant_id: &TenantId,
        retain_days: Option<u32>,
    ) -> Result<(), AiError> {
        let changed = sqlx::query(
            "UPDATE conversations SET retain_days = $1 WHERE id = $2 AND tenant_id = $3",
        )
        .bind(retain_days.map(i64::from))
        .bind(id.as_str())
        .bind(tenant_id.as_str())
        .execute(&self.pool)
        .await
        .map_err(|e| failed("setting a conversation's retention", e))?
        .rows_affected();
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
            "SELECT provider_session FROM conversations WHERE id = $1 AND tenant_id = $2",
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
        self.conversations
            .write(ConversationWrite::Session {
                id: id.as_str().to_owned(),
                tenant_id: tenant_id.as_str().to_owned(),
                session: json,
            })
            .await
    }
}

#[async_trait]
impl AiStreamJournal for PostgresStore {
    async fn append(&self, tenant_id: &TenantId, event: &AiStreamEvent) -> Result<(), AiError> {
        let Ok(row) = StreamRow::new(tenant_id, event) else {
            // A sequence beyond i64 can never be the next one.
            return Err(self.sequence_conflict(tenant_id, event).await);
        };
        self.journal.write(row).await
    }

    async fn read_after(
        &self,
        conversation_id: &ConversationId,
        tenant_id: &TenantId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<AiStreamEvent>, AiError> {
        let bodies: Vec<String> = sqlx::query_scalar(
            "SELECT body::text FROM stream_events WHERE tenant_id = $1 \
             AND conversation_id = $2 AND sequence > $3 ORDER BY sequence LIMIT $4",
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

impl PostgresStore {
    async fn sequence_conflict(&self, tenant_id: &TenantId, event: &AiStreamEvent) -> AiError {
        match self.last_sequence(&event.conversation_id, tenant_id).await {
            Ok(last) => conflicts::sequence(event, last),
            Err(error) => error,
        }
    }
}

#[async_trait]
impl AiToolEnablementStore for PostgresStore {
    async fn list(&self, tenant_id: &TenantId) -> Result<Vec<ToolEnablement>, AiError> {
        let rows: Vec<EnablementRow> = sqlx::query_as(
            "SELECT tenant_id, tool_name, agent, enabled, changed_by, changed_at_ns \
             FROM tool_enablements WHERE tenant_id = $1 ORDER BY tool_name, agent_key",
        )
        .bind(tenant_id.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(|e| failed("reading tool enablement", e))?;
        Ok(rows.into_iter().map(enablement_from_row).collect())
    }

    async fn set(&self, enablement: &ToolEnablement) -> Result<(), AiError> {
        let changed_at = to_nanos(enablement.changed_at, "enablement change")?;
        // The change and its announcement commit together, so every replica that keeps the
        // tenant's decisions hears of it.
        sqlx::query(
            "WITH changed AS (INSERT INTO tool_enablements (tenant_id, tool_name, agent_key, \
             agent, enabled, changed_by, changed_at_ns) VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (tenant_id, tool_name, agent_key) DO UPDATE SET \
             agent = excluded.agent, enabled = excluded.enabled, \
             changed_by = excluded.changed_by, changed_at_ns = excluded.changed_at_ns \
             RETURNING tenant_id) SELECT pg_notify($8, tenant_id) FROM changed",
        )
        .bind(enablement.tenant_id.as_str())
        .bind(enablement.tool_name.as_str())
        .bind(agent_key(enablement.agent.as_deref()))
        .bind(enablement.agent.as_deref())
        .bind(enablement.enabled)
        .bind(enablement.changed_by.as_str())
        .bind(changed_at)
        .bind(ENABLEMENT_CHANNEL)
        .execute(&self.pool)
        .await
        .map_err(|e| failed("recording tool enablement", e))?;
        Ok(())
    }
}

#[async_trait]
impl AiTurnClaims for PostgresStore {
    async fn claim(&self, claim: &AiTurnClaim, now: DateTime<Utc>) -> Result<(), AiError> {
        // Group-committed with the turn's other opening writes.
        self.openings
            .write(ConversationWrite::Claim(ClaimRow::new(claim, now)?))
            .await?;
        self.held.took(claim);
        Ok(())
    }

    async fn current(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
    ) -> Result<Option<AiTurnClaim>, AiError> {
        let row: Option<TurnClaimRow> = sqlx::query_as(
            "SELECT tenant_id, conversation_id, turn_id, replica_id, lease_until_ns, \
             attached_until_ns FROM turn_claims WHERE tenant_id = $1 AND conversation_id = $2",
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
        let doing = "renewing turn claims";
        if !watching.is_empty() {
            sqlx::query(
                "UPDATE turn_claims SET attached_until_ns = $1 WHERE (tenant_id, \
                 conversation_id) IN (SELECT * FROM UNNEST($2::text[], $3::text[]))",
            )
            .bind(until)
            .bind(watching.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>())
            .bind(watching.iter().map(|(_, c)| c.as_str()).collect::<Vec<_>>())
            .execute(&self.pool)
            .await
            .map_err(|e| failed(doing, e))?;
        }
        let held: Vec<(String, bool)> = sqlx::query_as(
            "UPDATE turn_claims SET lease_until_ns = GREATEST(lease_until_ns, $1) \
             WHERE replica_id = $2 RETURNING turn_id, cancel_requested_ns IS NOT NULL",
        )
        .bind(until)
        .bind(replica_id)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| failed(doing, e))?;
        Ok(held
            .into_iter()
            .map(|(turn_id, cancel_requested)| AiHeldClaim {
                turn_id,
                cancel_requested,
            })
            .collect())
    }

    async fn request_cancel(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
        now: DateTime<Utc>,
    ) -> Result<bool, AiError> {
        // The mark and the notice in one statement: the replica running the turn hears of it
        // at once, and reads the mark at its next heartbeat if the notice is lost.
        let marked: Vec<(String,)> = sqlx::query_as(
            "WITH marked AS (UPDATE turn_claims SET cancel_requested_ns = $3 \
             WHERE tenant_id = $1 AND conversation_id = $2 AND lease_until_ns >= $3 \
             RETURNING tenant_id, conversation_id, turn_id) \
             SELECT pg_notify($4, json_build_array(tenant_id, conversation_id, turn_id)::text)\
             ::text FROM marked",
        )
        .bind(tenant_id.as_str())
        .bind(conversation_id.as_str())
        .bind(clamp_nanos(now))
        .bind(CANCEL_CHANNEL)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| failed("asking for a turn to be cancelled", e))?;
        Ok(!marked.is_empty())
    }

    async fn release(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
        turn_id: &str,
    ) -> Result<(), AiError> {
        if self
            .held
            .release(tenant_id.as_str(), conversation_id.as_str(), turn_id)
        {
            return Ok(());
        }
        sqlx::query(
            "DELETE FROM turn_claims WHERE tenant_id = $1 AND conversation_id = $2 \
             AND turn_id = $3",
        )
        .bind(tenant_id.as_str())
        .bind(conversation_id.as_str())
        .bind(turn_id)
        .execute(&self.pool)
        .await
        .map_err(|e| failed("releasing a turn claim", e))?;
        Ok(())
    }

    async fn lapsed(&self, now: DateTime<Utc>, limit: usize) -> Result<Vec<AiTurnClaim>, AiError> {
        let rows: Vec<TurnClaimRow> = sqlx::query_as(
            "SELECT tenant_id, conversation_id, turn_id, replica_id, lease_until_ns, \
             attached_until_ns FROM turn_claims WHERE lease_until_ns < $1 \
             ORDER BY lease_until_ns LIMIT $2",
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
        // One conditional statement: of replicas racing for the claim, one matches.
        let taken = sqlx::query(
            "UPDATE turn_claims SET turn_id = $1, replica_id = $2, lease_until_ns = $3, \
             attached_until_ns = NULL, cancel_requested_ns = NULL WHERE tenant_id = $4 AND conversation_id = $5 \
             AND turn_id = $6 AND lease_until_ns < $7",
        )
        .bind(&row.turn_id)
        .bind(&row.replica_id)
        .bind(row.lease_until_ns)
        .bind(&row.tenant_id)
        .bind(&row.conversation_id)
        .bind(&lapsed.turn_id)
        .bind(row.now_ns)
        .execute(&self.pool)
        .await
        .map_err(|e| failed("taking over a turn claim", e))?
        .rows_affected();
        if taken == 1 {
            self.held.took(by);
        }
        Ok(taken == 1)
    }
}
