//! Group commit: many callers' rows written in few transactions.
//!
//! Audit records, stream-journal appends, conversation writes and turn claims (both
//! backends) hand their row to a writer (a [`GroupCommitWriter`]: on PostgreSQL one for
//! audit, one for the journal, one for conversation creations and turn claims and one for
//! later conversation writes; on SQLite one for all) and wait for their own acknowledgement.
//! The writer takes whatever has queued up (up to [`Batching::max_batch`]), writes it in one
//! transaction and acknowledges each caller only after the commit, so throughput grows with
//! concurrency while no caller proceeds before its row is durable. Where the database
//! overlaps commits (PostgreSQL), several batches may be committing at once; while every slot
//! is busy, the next batch grows. A failed batch fails each of its callers; a batch refused
//! only because of one row (an audit id that already exists, a journal sequence that is not
//! the next one) is retried row by row, so that only that row's caller fails.
//! [`GroupCommitWriter::close`] stops intake, writes everything that was accepted and then
//! ends the task: nothing accepted is lost.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use elsa_ai_abstractions::AiError;
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::error::{Fault, failed};
use crate::rows::AuditRow;

/// How a group-commit writer (PostgreSQL's audit trail, SQLite's writes) groups rows into
/// transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batching {
    /// The most rows written in one transaction.
    pub max_batch: usize,
    /// How many rows may wait for the writer before the caller itself waits (back-pressure).
    pub queue_capacity: usize,
    /// How long a batch smaller than the previous one waits for more rows before it is
    /// written (group commit: callers acknowledged together tend to come back together, and
    /// one commit for all of them costs about what one costs for a few). Zero writes at once.
    pub linger: Duration,
}

impl Default for Batching {
    fn default() -> Self {
        Self {
            max_batch: 512,
            queue_capacity: 8192,
            linger: Duration::from_millis(1),
        }
    }
}

/// What a backend does for a writer: insert rows in one transaction, all or none, and say
/// what a failure means to the callers.
#[async_trait]
pub(crate) trait BatchInsert: Send + Sync + 'static {
    /// The row one caller writes.
    type Row: Send + Sync + 'static;
    /// Why a batch was not written.
    type Error: Send + 'static;
    /// What a written batch leaves for `after_ack`: `()` for most backends.
    type Aftermath: Send;

    /// Inserts `rows` in one transaction: all of them or none.
    async fn insert(&self, rows: &[Self::Row]) -> Result<Self::Aftermath, Self::Error>;

    /// Finishes a written batch once its callers have their answer: work they need not wait
    /// for. The batch holds its slot until this returns, so it stays bounded.
    async fn after_ack(&self, _aftermath: Self::Aftermath) {}

    /// Releases what the backend holds once the writer has written everything and stops.
    async fn finish(&self) {}

    /// How many batches may be committing at once: 1 where writers take turns anyway
    /// (SQLite); more where commits of different transactions overlap (PostgreSQL).
    fn concurrent_batches(&self) -> usize {
        1
    }

    /// Whether a batch may have been refused because of one of its rows alone; it is then
    /// retried row by row.
    fn is_row_refusal(&self, error: &Self::Error) -> bool;

    /// What the caller of `row` sees when `row`, written alone, failed with `error`.
    async fn row_failed(&self, row: &Self::Row, error: Self::Error) -> AiError;

    /// What every caller of a failed batch of several rows sees.
    fn batch_failed(error: Self::Error) -> AiError;

    /// What the caller of `row` (or of a flush, for `None`) sees once the writer is closed.
    fn closed(row: Option<&Self::Row>) -> AiError;
}

type Ack = oneshot::Sender<Result<(), AiError>>;

enum Command<R> {
    Write(R, Ack),
    /// Acknowledged once everything queued before it is committed.
    Flush(oneshot::Sender<()>),
    /// Like `Flush`, and stops intake first.
    Close(oneshot::Sender<()>),
}

/// The handle callers use; one per store and kind of row, shared by the store's clones.
pub(crate) struct GroupCommitWriter<R> {
    commands: mpsc::Sender<Command<R>>,
    /// Set by `close` before the writer even sees the command, so that intake stops at once.
    closing: AtomicBool,
    closed: fn(Option<&R>) -> AiError,
    /// Answered (or dropped) when the writer has ended.
    ended: Mutex<Option<oneshot::Receiver<()>>>,
}

impl<R> std::fmt::Debug for GroupCommitWriter<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommitWriter")
            .field("closing", &self.closing)
            .finish_non_exhaustive()
    }
}

impl<R: Send + Sync + 'static> GroupCommitWriter<R> {
    /// Starts the writer as a task on the current tokio runtime, for a backend whose
    /// `insert` only awaits.
    #[cfg(any(feature = "postgres", test))]
    pub fn spawn<B: BatchInsert<Row = R>>(backend: B, batching: Batching) -> Self {
        let (commands, queue) = mpsc::channel(batching.queue_capacity.max(1));
        let (ended, end) = oneshot::channel();
        tokio::spawn(async move {
            run(Arc::new(backend), queue, batching).await;
            let _ = ended.send(());
        });
        Self::handle(commands, B::closed, end)
    }

    /// Starts the writer on a thread of its own, for a backend whose `insert` blocks (it
    /// runs the whole batch synchronously): the batch then never waits for the shared
    /// runtime between statements, and blocks nothing but the writer.
    ///
    /// # Errors
    ///
    /// When the operating system refuses the thread.
    #[cfg(feature = "sqlite")]
    pub fn spawn_on_thread<B: BatchInsert<Row = R>>(
        backend: B,
        batching: Batching,
        name: &str,
    ) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()?;
        let (commands, queue) = mpsc::channel(batching.queue_capacity.max(1));
        let (ended, end) = oneshot::channel();
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                runtime.block_on(run(Arc::new(backend), queue, batching));
                let _ = ended.send(());
            })?;
        Ok(Self::handle(commands, B::closed, end))
    }

    fn handle(
        commands: mpsc::Sender<Command<R>>,
        closed: fn(Option<&R>) -> AiError,
        end: oneshot::Receiver<()>,
    ) -> Self {
        Self {
            commands,
            closing: AtomicBool::new(false),
            closed,
            ended: Mutex::new(Some(end)),
        }
    }

    /// Writes `row` and returns once it is committed, or with the reason it is not.
    pub async fn write(&self, row: R) -> Result<(), AiError> {
        if self.closing.load(Ordering::Acquire) {
            return Err((self.closed)(Some(&row)));
        }
        let (ack, acknowledged) = oneshot::channel();
        if let Err(mpsc::error::SendError(refused)) =
            self.commands.send(Command::Write(row, ack)).await
        {
            let row = match &refused {
                Command::Write(row, _) => Some(row),
                _ => None,
            };
            return Err((self.closed)(row));
        }
        // A writer that stops without answering (it panicked, the runtime ended) has not
        // committed the row.
        acknowledged.await.map_err(|_| (self.closed)(None))?
    }

    /// Returns once every row accepted before the call is committed (or failed).
    pub async fn flush(&self) -> Result<(), AiError> {
        let (ack, done) = oneshot::channel();
        self.commands
            .send(Command::Flush(ack))
            .await
            .map_err(|_| (self.closed)(None))?;
        done.await.map_err(|_| (self.closed)(None))
    }

    /// Stops intake, writes every accepted row and waits for the writer to end. Later
    /// `write` calls fail with the backend's `closed` error. Idempotent.
    pub async fn close(&self) {
        self.closing.store(true, Ordering::Release);
        let (ack, done) = oneshot::channel();
        if self.commands.send(Command::Close(ack)).await.is_ok() {
            let _ = done.await;
        }
        if let Some(end) = self.ended.lock().await.take() {
            let _ = end.await;
        }
    }
}

async fn run<B: BatchInsert>(
    backend: Arc<B>,
    mut queue: mpsc::Receiver<Command<B::Row>>,
    batching: Batching,
) {
    let max_batch = batching.max_batch.max(1);
    let concurrency = backend.concurrent_batches().max(1);
    let mut writing = JoinSet::new();
    let mut closers = Vec::new();
    // The size of the previous batch: what the next one waits (at most `linger`) to reach.
    let mut expected = 1;
    loop {
        // Take the next command only while a batch slot is free; meanwhile rows queue up
        // and the next batch grows.
        let first = tokio::select! {
            biased;
            Some(written) = writing.join_next(), if !writing.is_empty() => {
                report_panic(written);
                continue;
            }
            command = queue.recv(), if writing.len() < concurrency => command,
        };
        let Some(first) = first else {
            break;
        };
        let mut batch = Batch::with_capacity(max_batch);
        batch.take(first, &mut queue, &mut closers);
        batch.drain(&mut queue, &mut closers, max_batch);
        let deadline = Instant::now() + batching.linger;
        while batch.rows.len() < expected.min(max_batch) && batch.flushes.is_empty() {
            match tokio::time::timeout_at(deadline, queue.recv()).await {
                Ok(Some(command)) => {
                    batch.take(command, &mut queue, &mut closers);
                    batch.drain(&mut queue, &mut closers, max_batch);
                }
                Ok(None) | Err(_) => break,
            }
        }
        expected = batch.rows.len().max(1);
        let Batch {
            rows,
            acks,
            flushes,
        } = batch;
        if !rows.is_empty() {
            let backend = backend.clone();
            writing.spawn(async move { write(&*backend, rows, acks).await });
        }
        if !flushes.is_empty() {
            // A flush is a barrier: every batch taken before it is finished first.
            while let Some(written) = writing.join_next().await {
                report_panic(written);
            }
            for ack in flushes {
                let _ = ack.send(());
            }
        }
    }
    while let Some(written) = writing.join_next().await {
        report_panic(written);
    }
    backend.finish().await;
    for ack in closers {
        let _ = ack.send(());
    }
}

/// The batch being gathered: its rows with their callers, and flushes waiting for it.
struct Batch<R> {
    rows: Vec<R>,
    acks: Vec<Ack>,
    flushes: Vec<oneshot::Sender<()>>,
}

impl<R> Batch<R> {
    fn with_capacity(capacity: usize) -> Self {
        Self {
            rows: Vec::with_capacity(capacity),
            acks: Vec::with_capacity(capacity),
            flushes: Vec::new(),
        }
    }

    fn take(
        &mut self,
        command: Command<R>,
        queue: &mut mpsc::Receiver<Command<R>>,
        closers: &mut Vec<oneshot::Sender<()>>,
    ) {
        match command {
            Command::Write(row, ack) => {
                self.rows.push(row);
                self.acks.push(ack);
            }
            Command::Flush(ack) => self.flushes.push(ack),
            Command::Close(ack) => {
                // Refuse new work; what is already queued is still received and written.
                queue.close();
                closers.push(ack);
            }
        }
    }

    /// Takes whatever is already queued, up to `max_batch` rows or a flush.
    fn drain(
        &mut self,
        queue: &mut mpsc::Receiver<Command<R>>,
        closers: &mut Vec<oneshot::Sender<()>>,
        max_batch: usize,
    ) {
        while self.rows.len() < max_batch && self.flushes.is_empty() {
            match queue.try_recv() {
                Ok(command) => self.take(command, queue, closers),
                Err(_) => break,
            }
        }
    }
}

/// A batch task that panicked dropped its acknowledgements: its callers see an error.
fn report_panic(written: Result<(), tokio::task::JoinError>) {
    if let Err(error) = written {
        tracing::error!(%error, "a batch failed unexpectedly; its rows were refused");
    }
}

async fn write<B: BatchInsert>(backend: &B, rows: Vec<B::Row>, acks: Vec<Ack>) {
    match backend.insert(&rows).await {
        Ok(aftermath) => {
            for ack in acks {
                let _ = ack.send(Ok(()));
            }
            backend.after_ack(aftermath).await;
        }
        Err(error) if rows.len() > 1 && backend.is_row_refusal(&error) => {
            for (row, ack) in rows.iter().zip(acks) {
                match backend.insert(std::slice::from_ref(row)).await {
                    Ok(aftermath) => {
                        let _ = ack.send(Ok(()));
                        backend.after_ack(aftermath).await;
                    }
                    Err(error) => {
                        let _ = ack.send(Err(backend.row_failed(row, error).await));
                    }
                }
            }
        }
        Err(error) => {
            let error = match rows.as_slice() {
                [row] => backend.row_failed(row, error).await,
                _ => B::batch_failed(error),
            };
            for ack in acks {
                let _ = ack.send(Err(error.clone()));
            }
        }
    }
}

/// Why an audit record alone was not written (both backends word it alike); `exists` when
/// the database refused it as a duplicate id.
pub(crate) fn audit_record_failed(row: &AuditRow, exists: bool, error: impl Fault) -> AiError {
    if exists {
        AiError::conflict(
            "audit_event_exists",
            format!("audit event '{}' already exists", row.id),
        )
    } else {
        failed("writing an audit event", error)
    }
}

/// Why a batch of audit records was not written.
#[cfg(any(feature = "postgres", test))]
pub(crate) fn audit_batch_failed(error: impl Fault) -> AiError {
    failed("writing audit events", error)
}

/// What `record` answers once the store is closed.
pub(crate) fn audit_closed() -> AiError {
    AiError::internal(
        "audit_store_closed",
        "the audit store is closed; the record was not written",
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use std::sync::atomic::AtomicUsize;

    use elsa_ai_abstractions::{AiAuditEvent, AuditAction, AuditOutcome};
    use tokio::sync::Semaphore;

    use super::*;

    /// A backend that commits a batch only when the test hands it a permit.
    #[derive(Clone)]
    struct Gated {
        permits: Arc<Semaphore>,
        batches: Arc<std::sync::Mutex<Vec<Vec<String>>>>,
        failing: bool,
        concurrency: usize,
        committing: Arc<AtomicUsize>,
        most_committing: Arc<AtomicUsize>,
        /// Ids whose rows the backend refuses, as a row refusal.
        refused: Vec<String>,
        /// Permits for `after_ack`, one per written batch; unlimited unless a test holds them.
        finishing: Arc<Semaphore>,
        /// The ids of each batch `after_ack` finished.
        finished: Arc<std::sync::Mutex<Vec<Vec<String>>>>,
    }

    impl Default for Gated {
        fn default() -> Self {
            Self {
                permits: Arc::new(Semaphore::new(0)),
                batches: Arc::default(),
                failing: false,
                concurrency: 1,
                committing: Arc::default(),
                most_committing: Arc::default(),
                refused: Vec::new(),
                finishing: Arc::new(Semaphore::new(Semaphore::MAX_PERMITS)),
                finished: Arc::default(),
            }
        }
    }

    impl Gated {
        fn batch_sizes(&self) -> Vec<usize> {
            self.batches.lock().unwrap().iter().map(Vec::len).collect()
        }
    }

    #[async_trait]
    impl BatchInsert for Gated {
        type Row = AuditRow;
        type Error = sqlx::Error;
        type Aftermath = Vec<String>;

        async fn insert(&self, rows: &[AuditRow]) -> Result<Vec<String>, sqlx::Error> {
            let now = self.committing.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_committing.fetch_max(now, Ordering::SeqCst);
            self.permits.acquire().await.unwrap().forget();
            self.committing.fetch_sub(1, Ordering::SeqCst);
            if self.failing {
                return Err(sqlx::Error::PoolClosed);
            }
            if rows.iter().any(|row| self.refused.contains(&row.id)) {
                return Err(sqlx::Error::RowNotFound);
            }
            let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
            self.batches.lock().unwrap().push(ids.clone());
            Ok(ids)
        }

        async fn after_ack(&self, ids: Vec<String>) {
            self.finishing.acquire().await.unwrap().forget();
            self.finished.lock().unwrap().push(ids);
        }

        fn concurrent_batches(&self) -> usize {
            self.concurrency
        }

        fn is_row_refusal(&self, error: &sqlx::Error) -> bool {
            matches!(error, sqlx::Error::RowNotFound)
        }

        async fn row_failed(&self, row: &AuditRow, error: sqlx::Error) -> AiError {
            AiError::conflict("refused", format!("{} refused: {error}", row.id))
        }

        fn batch_failed(error: sqlx::Error) -> AiError {
            audit_batch_failed(error)
        }

        fn closed(_: Option<&AuditRow>) -> AiError {
            audit_closed()
        }
    }

    fn row(n: usize) -> AuditRow {
        let event = AiAuditEvent::new(
            "acme".into(),
            "alice",
            AuditAction::TOOL_INVOKED,
            AuditOutcome::Success,
            format!("call {n}"),
        );
        AuditRow::new(&event).unwrap()
    }

    fn spawn_records(
        writer: &Arc<GroupCommitWriter<AuditRow>>,
        n: usize,
    ) -> Vec<tokio::task::JoinHandle<Result<(), AiError>>> {
        (0..n)
            .map(|i| {
                let writer = writer.clone();
                tokio::spawn(async move { writer.write(row(i)).await })
            })
            .collect()
    }

    /// Lets spawned tasks run until they are all waiting.
    async fn settle() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    #[tokio::test]
    async fn a_record_is_acknowledged_only_after_its_batch_commits() {
        let backend = Gated::default();
        let writer = Arc::new(GroupCommitWriter::spawn(
            backend.clone(),
            Batching::default(),
        ));
        let record = spawn_records(&writer, 1).remove(0);
        settle().await;
        assert!(
            !record.is_finished(),
            "no acknowledgement before the commit"
        );
        backend.permits.add_permits(1);
        record.await.unwrap().unwrap();
        assert_eq!(backend.batch_sizes(), [1]);
    }

    #[tokio::test]
    async fn records_queued_during_a_commit_share_the_next_transaction_up_to_max_batch() {
        let backend = Gated::default();
        let batching = Batching {
            max_batch: 4,
            queue_capacity: 100,
            linger: Duration::ZERO,
        };
        let writer = Arc::new(GroupCommitWriter::spawn(backend.clone(), batching));
        let first = spawn_records(&writer, 1);
        settle().await;
        let rest = spawn_records(&writer, 9);
        settle().await;
        backend.permits.add_permits(10);
        for record in first.into_iter().chain(rest) {
            record.await.unwrap().unwrap();
        }
        assert_eq!(backend.batch_sizes(), [1, 4, 4, 1]);
    }

    #[tokio::test]
    async fn batches_commit_concurrently_up_to_the_backends_limit_while_the_next_one_grows() {
        let backend = Gated {
            concurrency: 2,
            ..Gated::default()
        };
        let writer = Arc::new(GroupCommitWriter::spawn(
            backend.clone(),
            Batching::default(),
        ));
        let mut records = spawn_records(&writer, 1);
        settle().await;
        records.extend(spawn_records(&writer, 1));
        settle().await;
        records.extend(spawn_records(&writer, 5));
        settle().await;
        assert_eq!(backend.most_committing.load(Ordering::SeqCst), 2);
        backend.permits.add_permits(3);
        for record in records {
            record.await.unwrap().unwrap();
        }
        assert_eq!(
            backend.batch_sizes().iter().max(),
            Some(&5),
            "{:?}",
            backend.batch_sizes()
        );
        assert_eq!(backend.batch_sizes().len(), 3);
        assert_eq!(backend.most_committing.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_batch_smaller_than_the_last_one_lingers_for_more_unless_flushed() {
        let backend = Gated::default();
        backend.permits.add_permits(100);
        let batching = Batching {
            linger: Duration::from_secs(30),
            ..Batching::default()
        };
        let writer = Arc::new(GroupCommitWriter::spawn(backend.clone(), batching));
        writer.write(row(0)).await.unwrap();
        for record in spawn_records(&writer, 3) {
            record.await.unwrap().unwrap();
        }
        let sizes = backend.batch_sizes();
        assert_eq!(sizes.iter().sum::<usize>(), 4);
        // The next batch waits until it is as large as the last one.
        let expected = *sizes.last().unwrap();
        let mut stragglers = Vec::new();
        for _ in 0..expected {
            stragglers.extend(spawn_records(&writer, 1));
            settle().await;
        }
        for record in stragglers {
            tokio::time::timeout(Duration::from_secs(5), record)
                .await
                .expect("the batch is written once it is full, long before the linger ends")
                .unwrap()
                .unwrap();
        }
        assert_eq!(backend.batch_sizes().last(), Some(&expected));
        // A flush does not wait for the linger either.
        let lonely = spawn_records(&writer, 1);
        settle().await;
        tokio::time::timeout(Duration::from_secs(5), writer.flush())
            .await
            .expect("a flush ends the linger")
            .unwrap();
        for record in lonely {
            record.await.unwrap().unwrap();
        }
    }

    #[tokio::test]
    async fn a_failed_batch_fails_every_caller_in_it() {
        let backend = Gated {
            failing: true,
            ..Gated::default()
        };
        let writer = Arc::new(GroupCommitWriter::spawn(
            backend.clone(),
            Batching::default(),
        ));
        let records = spawn_records(&writer, 5);
        settle().await;
        backend.permits.add_permits(5);
        for record in records {
            let error = record.await.unwrap().unwrap_err();
            // The backend fails like a pool that is closed: unavailable, not broken.
            assert_eq!((error.status(), error.code()), (503, "store_unavailable"));
        }
    }

    #[tokio::test]
    async fn a_batch_refused_because_of_one_row_is_retried_row_by_row_so_only_its_caller_fails() {
        let rows: Vec<AuditRow> = (0..5).map(row).collect();
        let backend = Gated {
            refused: vec![rows[2].id.clone()],
            ..Gated::default()
        };
        let writer = Arc::new(GroupCommitWriter::spawn(
            backend.clone(),
            Batching::default(),
        ));
        let first = tokio::spawn({
            let writer = writer.clone();
            let row = row(99);
            async move { writer.write(row).await }
        });
        settle().await;
        let records: Vec<_> = rows
            .into_iter()
            .map(|row| {
                let writer = writer.clone();
                tokio::spawn(async move { writer.write(row).await })
            })
            .collect();
        settle().await;
        backend.permits.add_permits(100);
        first.await.unwrap().unwrap();
        for (i, record) in records.into_iter().enumerate() {
            let result = record.await.unwrap();
            if i == 2 {
                assert_eq!(result.unwrap_err().code(), "refused");
            } else {
                result.unwrap();
            }
        }
        // The first batch, then the refused batch of five row by row: four of them written,
        // and each finished on its own.
        assert_eq!(backend.batch_sizes(), [1, 1, 1, 1, 1]);
        assert_eq!(
            *backend.finished.lock().unwrap(),
            *backend.batches.lock().unwrap()
        );
    }

    #[tokio::test]
    async fn a_batch_is_finished_after_its_callers_are_answered_and_before_a_flush_returns() {
        let backend = Gated {
            finishing: Arc::new(Semaphore::new(0)),
            ..Gated::default()
        };
        let writer = Arc::new(GroupCommitWriter::spawn(
            backend.clone(),
            Batching::default(),
        ));
        let record = spawn_records(&writer, 1).remove(0);
        settle().await;
        let flush = tokio::spawn({
            let writer = writer.clone();
            async move { writer.flush().await }
        });
        backend.permits.add_permits(1);
        // Answered while its batch's aftermath still waits.
        tokio::time::timeout(Duration::from_secs(10), record)
            .await
            .expect("the caller is answered before the aftermath")
            .unwrap()
            .unwrap();
        settle().await;
        assert!(backend.finished.lock().unwrap().is_empty());
        assert!(!flush.is_finished(), "a flush waits for the aftermath too");
        backend.finishing.add_permits(1);
        flush.await.unwrap().unwrap();
        assert_eq!(
            *backend.finished.lock().unwrap(),
            *backend.batches.lock().unwrap()
        );
    }

    #[tokio::test]
    async fn flush_returns_after_earlier_records_are_committed() {
        let backend = Gated::default();
        let writer = Arc::new(GroupCommitWriter::spawn(
            backend.clone(),
            Batching::default(),
        ));
        let records = spawn_records(&writer, 3);
        settle().await;
        let flush = tokio::spawn({
            let writer = writer.clone();
            async move { writer.flush().await }
        });
        settle().await;
        assert!(!flush.is_finished());
        backend.permits.add_permits(3);
        flush.await.unwrap().unwrap();
        assert_eq!(backend.batch_sizes().iter().sum::<usize>(), 3);
        for record in records {
            assert!(record.is_finished());
        }
    }

    #[tokio::test]
    async fn close_writes_what_was_accepted_and_refuses_what_comes_after() {
        let backend = Gated::default();
        let writer = Arc::new(GroupCommitWriter::spawn(
            backend.clone(),
            Batching::default(),
        ));
        let accepted = spawn_records(&writer, 6);
        settle().await;
        let close = tokio::spawn({
            let writer = writer.clone();
            async move { writer.close().await }
        });
        settle().await;
        let late = writer.write(row(99)).await.unwrap_err();
        assert_eq!(late.code(), "audit_store_closed");
        backend.permits.add_permits(6);
        close.await.unwrap();
        for record in accepted {
            record.await.unwrap().unwrap();
        }
        assert_eq!(backend.batch_sizes().iter().sum::<usize>(), 6);
        assert_eq!(
            writer.flush().await.unwrap_err().code(),
            "audit_store_closed"
        );
        writer.close().await;
    }
}
