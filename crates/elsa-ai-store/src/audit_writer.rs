//! Group commit for the audit trail.
//!
//! Every [`record`](elsa_ai_abstractions::AiAuditSink::record) hands its encoded row to one
//! writer task per store and waits for its own acknowledgement. The writer takes whatever has
//! queued up (up to [`AuditBatching::max_batch`]), writes it in one transaction and
//! acknowledges each caller only after the commit, so throughput grows with concurrency while
//! no caller proceeds before its record is durable. Where the database overlaps commits
//! (PostgreSQL), several batches may be committing at once; while every slot is busy, the
//! next batch grows. A failed batch fails each of its callers;
//! a batch refused only because one record's id already exists is retried record by record, so
//! that only the duplicate fails. [`AuditWriter::close`] stops intake, writes everything that
//! was accepted and then ends the task: nothing accepted is lost.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use elsa_ai_abstractions::AiError;
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use crate::error::{failed, is_unique_violation};
use crate::rows::AuditRow;

/// How the audit writer groups records into transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuditBatching {
    /// The most records written in one transaction.
    pub max_batch: usize,
    /// How many records may wait for the writer before `record` itself waits (back-pressure).
    pub queue_capacity: usize,
    /// How long a batch smaller than the previous one waits for more records before it is
    /// written (group commit: callers acknowledged together tend to come back together, and
    /// one commit for all of them costs about what one costs for a few). Zero writes at once.
    pub linger: Duration,
}

impl Default for AuditBatching {
    fn default() -> Self {
        Self {
            max_batch: 512,
            queue_capacity: 8192,
            linger: Duration::from_millis(1),
        }
    }
}

/// What a backend does for the writer: insert rows in one transaction, all or none.
#[async_trait]
pub(crate) trait AuditBatchInsert: Send + Sync + 'static {
    async fn insert(&self, rows: &[AuditRow]) -> Result<(), sqlx::Error>;

    /// How many batches may be committing at once: 1 where writers take turns anyway
    /// (SQLite); more where commits of different transactions overlap (PostgreSQL).
    fn concurrent_batches(&self) -> usize {
        1
    }
}

type Ack = oneshot::Sender<Result<(), AiError>>;

// Nearly every command is a record: boxing it would cost an allocation per record.
#[allow(clippy::large_enum_variant)]
enum Command {
    Record(AuditRow, Ack),
    /// Acknowledged once everything queued before it is committed.
    Flush(oneshot::Sender<()>),
    /// Like `Flush`, and stops intake first.
    Close(oneshot::Sender<()>),
}

/// The handle callers use; one per store, shared by its clones.
#[derive(Debug)]
pub(crate) struct AuditWriter {
    commands: mpsc::Sender<Command>,
    /// Set by `close` before the writer even sees the command, so that intake stops at once.
    closing: AtomicBool,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Record(row, _) => f.debug_tuple("Record").field(&row.id).finish(),
            Self::Flush(_) => f.write_str("Flush"),
            Self::Close(_) => f.write_str("Close"),
        }
    }
}

fn closed() -> AiError {
    AiError::internal(
        "audit_store_closed",
        "the audit store is closed; the record was not written",
    )
}

impl AuditWriter {
    /// Starts the writer task on the current tokio runtime.
    pub fn spawn(backend: impl AuditBatchInsert, batching: AuditBatching) -> Self {
        let (commands, queue) = mpsc::channel(batching.queue_capacity.max(1));
        let task = tokio::spawn(run(Arc::new(backend), queue, batching));
        Self {
            commands,
            closing: AtomicBool::new(false),
            task: Mutex::new(Some(task)),
        }
    }

    /// Writes `row` and returns once it is committed, or with the reason it is not.
    pub async fn record(&self, row: AuditRow) -> Result<(), AiError> {
        if self.closing.load(Ordering::Acquire) {
            return Err(closed());
        }
        let (ack, acknowledged) = oneshot::channel();
        self.commands
            .send(Command::Record(row, ack))
            .await
            .map_err(|_| closed())?;
        // A writer that stops without answering has not committed the record.
        acknowledged.await.map_err(|_| closed())?
    }

    /// Returns once every record accepted before the call is committed (or failed).
    pub async fn flush(&self) -> Result<(), AiError> {
        let (ack, done) = oneshot::channel();
        self.commands
            .send(Command::Flush(ack))
            .await
            .map_err(|_| closed())?;
        done.await.map_err(|_| closed())
    }

    /// Stops intake, writes every accepted record and waits for the writer to end.
    /// Later `record` calls fail with `audit_store_closed`. Idempotent.
    pub async fn close(&self) {
        self.closing.store(true, Ordering::Release);
        let (ack, done) = oneshot::channel();
        if self.commands.send(Command::Close(ack)).await.is_ok() {
            let _ = done.await;
        }
        if let Some(task) = self.task.lock().await.take() {
            let _ = task.await;
        }
    }
}

async fn run<B: AuditBatchInsert>(
    backend: Arc<B>,
    mut queue: mpsc::Receiver<Command>,
    batching: AuditBatching,
) {
    let max_batch = batching.max_batch.max(1);
    let concurrency = backend.concurrent_batches().max(1);
    let mut writing = JoinSet::new();
    let mut closers = Vec::new();
    // The size of the previous batch: what the next one waits (at most `linger`) to reach.
    let mut expected = 1;
    loop {
        // Take the next command only while a batch slot is free; meanwhile records queue up
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
    for ack in closers {
        let _ = ack.send(());
    }
}

/// The batch being gathered: its records with their callers, and flushes waiting for it.
struct Batch {
    rows: Vec<AuditRow>,
    acks: Vec<Ack>,
    flushes: Vec<oneshot::Sender<()>>,
}

impl Batch {
    fn with_capacity(capacity: usize) -> Self {
        Self {
            rows: Vec::with_capacity(capacity),
            acks: Vec::with_capacity(capacity),
            flushes: Vec::new(),
        }
    }

    fn take(
        &mut self,
        command: Command,
        queue: &mut mpsc::Receiver<Command>,
        closers: &mut Vec<oneshot::Sender<()>>,
    ) {
        match command {
            Command::Record(row, ack) => {
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

    /// Takes whatever is already queued, up to `max_batch` records or a flush.
    fn drain(
        &mut self,
        queue: &mut mpsc::Receiver<Command>,
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
        tracing::error!(%error, "an audit batch failed unexpectedly; its records were refused");
    }
}

async fn write(backend: &impl AuditBatchInsert, rows: Vec<AuditRow>, acks: Vec<Ack>) {
    match backend.insert(&rows).await {
        Ok(()) => {
            for ack in acks {
                let _ = ack.send(Ok(()));
            }
        }
        Err(error) if rows.len() > 1 && is_unique_violation(&error) => {
            for (row, ack) in rows.iter().zip(acks) {
                let result = backend
                    .insert(std::slice::from_ref(row))
                    .await
                    .map_err(|error| insert_failed(row, error));
                let _ = ack.send(result);
            }
        }
        Err(error) => {
            let error = match rows.as_slice() {
                [row] => insert_failed(row, error),
                _ => failed("writing audit events", error),
            };
            for ack in acks {
                let _ = ack.send(Err(error.clone()));
            }
        }
    }
}

fn insert_failed(row: &AuditRow, error: sqlx::Error) -> AiError {
    if is_unique_violation(&error) {
        AiError::conflict(
            "audit_event_exists",
            format!("audit event '{}' already exists", row.id),
        )
    } else {
        failed("writing an audit event", error)
    }
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
            }
        }
    }

    impl Gated {
        fn batch_sizes(&self) -> Vec<usize> {
            self.batches.lock().unwrap().iter().map(Vec::len).collect()
        }
    }

    #[async_trait]
    impl AuditBatchInsert for Gated {
        async fn insert(&self, rows: &[AuditRow]) -> Result<(), sqlx::Error> {
            let now = self.committing.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_committing.fetch_max(now, Ordering::SeqCst);
            self.permits.acquire().await.unwrap().forget();
            self.committing.fetch_sub(1, Ordering::SeqCst);
            if self.failing {
                return Err(sqlx::Error::PoolClosed);
            }
            let ids = rows.iter().map(|r| r.id.clone()).collect();
            self.batches.lock().unwrap().push(ids);
            Ok(())
        }

        fn concurrent_batches(&self) -> usize {
            self.concurrency
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

    fn spawn_records(writer: &Arc<AuditWriter>, n: usize) -> Vec<JoinHandle<Result<(), AiError>>> {
        (0..n)
            .map(|i| {
                let writer = writer.clone();
                tokio::spawn(async move { writer.record(row(i)).await })
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
        let writer = Arc::new(AuditWriter::spawn(
            backend.clone(),
            AuditBatching::default(),
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
        let batching = AuditBatching {
            max_batch: 4,
            queue_capacity: 100,
            linger: Duration::ZERO,
        };
        let writer = Arc::new(AuditWriter::spawn(backend.clone(), batching));
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
        let writer = Arc::new(AuditWriter::spawn(
            backend.clone(),
            AuditBatching::default(),
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
        let batching = AuditBatching {
            linger: Duration::from_secs(30),
            ..AuditBatching::default()
        };
        let writer = Arc::new(AuditWriter::spawn(backend.clone(), batching));
        writer.record(row(0)).await.unwrap();
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
        let writer = Arc::new(AuditWriter::spawn(
            backend.clone(),
            AuditBatching::default(),
        ));
        let records = spawn_records(&writer, 5);
        settle().await;
        backend.permits.add_permits(5);
        for record in records {
            let error = record.await.unwrap().unwrap_err();
            assert_eq!((error.status(), error.code()), (500, "store_failed"));
        }
    }

    #[tokio::test]
    async fn flush_returns_after_earlier_records_are_committed() {
        let backend = Gated::default();
        let writer = Arc::new(AuditWriter::spawn(
            backend.clone(),
            AuditBatching::default(),
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
        let writer = Arc::new(AuditWriter::spawn(
            backend.clone(),
            AuditBatching::default(),
        ));
        let accepted = spawn_records(&writer, 6);
        settle().await;
        let close = tokio::spawn({
            let writer = writer.clone();
            async move { writer.close().await }
        });
        settle().await;
        let late = writer.record(row(99)).await.unwrap_err();
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
