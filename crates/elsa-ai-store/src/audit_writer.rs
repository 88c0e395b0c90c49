//! Group commit for the audit trail.
//!
//! Every [`record`](elsa_ai_abstractions::AiAuditSink::record) hands its encoded row to one
//! writer task per store and waits for its own acknowledgement. The writer takes whatever has
//! queued up (up to [`AuditBatching::max_batch`]), writes it in one transaction and
//! acknowledges each caller only after the commit, so throughput grows with concurrency while
//! no caller proceeds before its record is durable. A failed batch fails each of its callers;
//! a batch refused only because one record's id already exists is retried record by record, so
//! that only the duplicate fails. [`AuditWriter::close`] stops intake, writes everything that
//! was accepted and then ends the task: nothing accepted is lost.

use async_trait::async_trait;
use elsa_ai_abstractions::AiError;
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::error::{failed, is_unique_violation};
use crate::rows::AuditRow;

/// How the audit writer groups records into transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuditBatching {
    /// The most records written in one transaction.
    pub max_batch: usize,
    /// How many records may wait for the writer before `record` itself waits (back-pressure).
    pub queue_capacity: usize,
}

impl Default for AuditBatching {
    fn default() -> Self {
        Self {
            max_batch: 512,
            queue_capacity: 8192,
        }
    }
}

/// What a backend does for the writer: insert rows in one transaction, all or none.
#[async_trait]
pub(crate) trait AuditBatchInsert: Send + Sync + 'static {
    async fn insert(&self, rows: &[AuditRow]) -> Result<(), sqlx::Error>;
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
        let task = tokio::spawn(run(backend, queue, batching.max_batch.max(1)));
        Self {
            commands,
            task: Mutex::new(Some(task)),
        }
    }

    /// Writes `row` and returns once it is committed, or with the reason it is not.
    pub async fn record(&self, row: AuditRow) -> Result<(), AiError> {
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
        let (ack, done) = oneshot::channel();
        if self.commands.send(Command::Close(ack)).await.is_ok() {
            let _ = done.await;
        }
        if let Some(task) = self.task.lock().await.take() {
            let _ = task.await;
        }
    }
}

async fn run(backend: impl AuditBatchInsert, mut queue: mpsc::Receiver<Command>, max_batch: usize) {
    let mut rows = Vec::with_capacity(max_batch);
    let mut acks = Vec::with_capacity(max_batch);
    let mut flushed = Vec::new();
    let mut closers = Vec::new();
    while let Some(first) = queue.recv().await {
        let mut next = Some(first);
        while let Some(command) = next.take() {
            match command {
                Command::Record(row, ack) => {
                    rows.push(row);
                    acks.push(ack);
                }
                Command::Flush(ack) => flushed.push(ack),
                Command::Close(ack) => {
                    // Refuse new work; what is already queued is still received and written.
                    queue.close();
                    closers.push(ack);
                }
            }
            if rows.len() < max_batch {
                next = queue.try_recv().ok();
            }
        }
        if !rows.is_empty() {
            write(&backend, &mut rows, &mut acks).await;
        }
        for ack in flushed.drain(..) {
            let _ = ack.send(());
        }
    }
    for ack in closers {
        let _ = ack.send(());
    }
}

async fn write(backend: &impl AuditBatchInsert, rows: &mut Vec<AuditRow>, acks: &mut Vec<Ack>) {
    match backend.insert(rows).await {
        Ok(()) => {
            for ack in acks.drain(..) {
                let _ = ack.send(Ok(()));
            }
        }
        Err(error) if rows.len() > 1 && is_unique_violation(&error) => {
            for (row, ack) in rows.iter().zip(acks.drain(..)) {
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
            for ack in acks.drain(..) {
                let _ = ack.send(Err(error.clone()));
            }
        }
    }
    rows.clear();
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
