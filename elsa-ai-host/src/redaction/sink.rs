use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{AiAuditEvent, AiAuditSink, AiError};

use crate::redaction::Redactor;

/// An audit sink that redacts every record before handing it to the sink it wraps, so that
/// nothing reaches durable audit storage unredacted, whoever produced the record.
#[derive(Clone)]
pub struct RedactingAuditSink {
    inner: Arc<dyn AiAuditSink>,
    redactor: Arc<Redactor>,
}

impl RedactingAuditSink {
    /// Wraps `inner`; records are redacted with `redactor`.
    pub fn new(inner: Arc<dyn AiAuditSink>, redactor: Arc<Redactor>) -> Self {
        Self { inner, redactor }
    }
}

impl std::fmt::Debug for RedactingAuditSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedactingAuditSink").finish_non_exhaustive()
    }
}

#[async_trait]
impl AiAuditSink for RedactingAuditSink {
    async fn record(&self, mut event: AiAuditEvent) -> Result<(), AiError> {
        self.redactor.redact_audit_event(&mut event);
        self.inner.record(event).await
    }
}
