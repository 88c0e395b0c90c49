//! [`JsonlAuditSink`]: Acme keeps Weaver's audit trail in an append-only JSON-lines file.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use elsa_ai_abstractions::{AiAuditEvent, AiAuditLog, AiAuditSink, AiError, AuditQuery};
use elsa_workflows::{Page, TenantId};

use crate::jsonl::{JsonLines, blocking, line, parse, unavailable};

/// The audit trail as one JSON line per record, appended under the file's exclusive lock
/// and synced before [`record`](AiAuditSink::record) returns (the sink's contract: a
/// record is durable once acknowledged, and a record that cannot be written fails the
/// operation that needed it). Nothing is ever rewritten. It also reads the trail back for
/// `GET /ai/audit`, by reading the whole file: enough for an example, not for years of
/// records.
#[derive(Clone, Debug)]
pub struct JsonlAuditSink {
    path: PathBuf,
    file: Arc<Mutex<JsonLines>>,
}

impl JsonlAuditSink {
    /// Opens (or creates) the file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, AiError> {
        let path = path.as_ref().to_owned();
        let file = JsonLines::open(&path).map_err(|e| unavailable(&path, &e))?;
        Ok(Self {
            path,
            file: Arc::new(Mutex::new(file)),
        })
    }
}

fn matches(event: &AiAuditEvent, query: &AuditQuery) -> bool {
    query
        .conversation_id
        .as_ref()
        .is_none_or(|id| event.conversation_id.as_ref() == Some(id))
        && query
            .proposal_id
            .as_ref()
            .is_none_or(|id| event.proposal_id.as_ref() == Some(id))
        && query
            .actor_id
            .as_deref()
            .is_none_or(|actor| event.actor_id == actor)
        && query.outcome.is_none_or(|outcome| event.outcome == outcome)
        && query
            .trace_id
            .as_deref()
            .is_none_or(|trace| event.trace_id.as_deref() == Some(trace))
        && query
            .time_range
            .as_ref()
            .is_none_or(|range| range.from <= event.timestamp && event.timestamp <= range.to)
}

#[async_trait]
impl AiAuditSink for JsonlAuditSink {
    async fn record(&self, event: AiAuditEvent) -> Result<(), AiError> {
        let line = line(&event)?;
        let (path, file) = (self.path.clone(), self.file.clone());
        blocking(move || {
            let mut file = file
                .lock()
                .map_err(|_| AiError::internal("store_failed", "an audit write panicked"))?;
            // What other processes appended is only skipped: the sink never reads it.
            let (mut locked, _) = file.lock().map_err(|e| unavailable(&path, &e))?;
            locked.append(&line).map_err(|e| unavailable(&path, &e))
        })
        .await
    }
}

#[async_trait]
impl AiAuditLog for JsonlAuditSink {
    async fn query(
        &self,
        tenant_id: &TenantId,
        query: &AuditQuery,
    ) -> Result<Page<AiAuditEvent>, AiError> {
        let (path, tenant_id, query) = (self.path.clone(), tenant_id.clone(), query.clone());
        blocking(move || {
            let lines = JsonLines::read_all(&path).map_err(|e| unavailable(&path, &e))?;
            let mut found = Vec::new();
            for line in lines {
                let event: AiAuditEvent = parse(&path, &line)?;
                if event.tenant_id == tenant_id && matches(&event, &query) {
                    found.push(event);
                }
            }
            // Newest first; records of the same instant in reverse order of recording.
            found.reverse();
            found.sort_by_key(|event| std::cmp::Reverse(event.timestamp));
            Ok(query.page.slice(found))
        })
        .await
    }
}
