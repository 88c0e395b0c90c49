//! The audit trail: [`AuditTrail`], the permission-checked way to read it, and the in-memory
//! log for development and tests (an [`AiAuditSink`] and the matching [`AiAuditLog`],
//! partitioned by tenant). Production hosts use a durable store instead.

use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiAuditEvent, AiAuditLog, AiAuditSink, AiCaller, AiError, AuditQuery, Permission,
};
use elsa_workflows::{Page, TenantId};
use parking_lot::RwLock;

use crate::NameMap;

/// Reads the audit trail on behalf of a caller: requires `admin:ai` and only ever shows the
/// caller's own tenant. The records were redacted before they were written.
#[derive(Clone)]
pub struct AuditTrail {
    log: Arc<dyn AiAuditLog>,
}

impl std::fmt::Debug for AuditTrail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditTrail").finish_non_exhaustive()
    }
}

impl AuditTrail {
    /// A reader over `log`.
    pub fn new(log: Arc<dyn AiAuditLog>) -> Self {
        Self { log }
    }

    /// The caller's tenant's records matching `query`, newest first; 403
    /// `permission_denied` without `admin:ai`.
    pub async fn query(
        &self,
        caller: &AiCaller,
        query: &AuditQuery,
    ) -> Result<Page<AiAuditEvent>, AiError> {
        caller.require(&Permission::ADMIN_AI, "reading the audit trail")?;
        self.log.query(&caller.tenant_id, query).await
    }
}

/// Keeps every audit record in memory, per tenant, in the order they were recorded.
#[derive(Debug, Default)]
pub struct InMemoryAuditLog {
    tenants: RwLock<NameMap<TenantId, Vec<AiAuditEvent>>>,
}

impl InMemoryAuditLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// The tenant's records, oldest first.
    pub fn events(&self, tenant_id: &TenantId) -> Vec<AiAuditEvent> {
        self.tenants
            .read()
            .get(tenant_id)
            .cloned()
            .unwrap_or_default()
    }

    /// How many records the log holds across all tenants.
    pub fn len(&self) -> usize {
        self.tenants.read().values().map(Vec::len).sum()
    }

    /// Whether the log holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl AiAuditSink for InMemoryAuditLog {
    async fn record(&self, event: AiAuditEvent) -> Result<(), AiError> {
        let mut tenants = self.tenants.write();
        // Looked up before inserting: `entry` would copy the tenant id on every record.
        match tenants.get_mut(&event.tenant_id) {
            Some(events) => events.push(event),
            None => {
                tenants.insert(event.tenant_id.clone(), vec![event]);
            }
        }
        Ok(())
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
            .as_ref()
            .is_none_or(|actor| &event.actor_id == actor)
        && query.outcome.is_none_or(|outcome| event.outcome == outcome)
        && query
            .trace_id
            .as_ref()
            .is_none_or(|trace| event.trace_id.as_ref() == Some(trace))
        && query
            .time_range
            .is_none_or(|range| range.contains(event.timestamp))
}

#[async_trait]
impl AiAuditLog for InMemoryAuditLog {
    async fn query(
        &self,
        tenant_id: &TenantId,
        query: &AuditQuery,
    ) -> Result<Page<AiAuditEvent>, AiError> {
        let mut found: Vec<AiAuditEvent> = self
            .tenants
            .read()
            .get(tenant_id)
            .map(|events| {
                events
                    .iter()
                    .rev()
                    .filter(|e| matches(e, query))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        // Newest first; records with equal timestamps keep reverse recording order.
        found.sort_by_key(|e| std::cmp::Reverse(e.timestamp));
        Ok(query.page.slice(found))
    }
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, Utc};
    use elsa_ai_abstractions::{AuditAction, AuditOutcome, ConversationId};
    use elsa_workflows::{PageRequest, TimeRange};
    use serde_json::json;

    use super::*;
    use crate::redaction::{RedactingAuditSink, Redactor};

    fn event(tenant: &str, actor: &str, outcome: AuditOutcome, minutes_ago: i64) -> AiAuditEvent {
        let mut event = AiAuditEvent::new(
            tenant.into(),
            actor,
            AuditAction::TOOL_INVOKED,
            outcome,
            "x",
        );
        event.timestamp = Utc::now() - Duration::minutes(minutes_ago);
        event
    }

    #[tokio::test]
    async fn queries_are_tenant_partitioned_filtered_and_newest_first() {
        let log = InMemoryAuditLog::new();
        log.record(event("acme", "alice", AuditOutcome::Success, 30))
            .await
            .unwrap();
        log.record(event("acme", "bob", AuditOutcome::Denied, 10))
            .await
            .unwrap();
        log.record(event("acme", "alice", AuditOutcome::Denied, 20))
            .await
            .unwrap();
        log.record(event("globex", "alice", AuditOutcome::Denied, 5))
            .await
            .unwrap();

        let all = log
            .query(&"acme".into(), &AuditQuery::default())
            .await
            .unwrap();
        assert_eq!(all.total, 3, "globex records stay in globex");
        let actors: Vec<&str> = all.items.iter().map(|e| e.actor_id.as_str()).collect();
        assert_eq!(actors, ["bob", "alice", "alice"]);
        assert!(
            all.items
                .windows(2)
                .all(|w| w[0].timestamp >= w[1].timestamp)
        );

        let denied_alice = AuditQuery {
            actor_id: Some("alice".into()),
            outcome: Some(AuditOutcome::Denied),
            ..AuditQuery::default()
        };
        assert_eq!(
            log.query(&"acme".into(), &denied_alice)
                .await
                .unwrap()
                .total,
            1
        );

        let recent = AuditQuery {
            time_range: Some(TimeRange {
                from: Utc::now() - Duration::minutes(15),
                to: Utc::now(),
            }),
            page: PageRequest::new(0, 1),
            ..AuditQuery::default()
        };
        let page = log.query(&"acme".into(), &recent).await.unwrap();
        assert_eq!((page.total, page.items.len()), (1, 1));
        assert_eq!(page.items[0].actor_id, "bob");
        assert!(
            log.query(&"initech".into(), &AuditQuery::default())
                .await
                .unwrap()
                .items
                .is_empty()
        );
    }

    #[tokio::test]
    async fn conversation_filter_matches_only_that_conversation() {
        let log = InMemoryAuditLog::new();
        let mut tagged = event("acme", "alice", AuditOutcome::Success, 1);
        tagged.conversation_id = Some(ConversationId::new("c1"));
        log.record(tagged).await.unwrap();
        log.record(event("acme", "alice", AuditOutcome::Success, 1))
            .await
            .unwrap();
        let query = AuditQuery {
            conversation_id: Some(ConversationId::new("c1")),
            ..AuditQuery::default()
        };
        assert_eq!(log.query(&"acme".into(), &query).await.unwrap().total, 1);
    }

    #[tokio::test]
    async fn the_redacting_sink_redacts_before_the_log_sees_anything() {
        let log = Arc::new(InMemoryAuditLog::new());
        let sink = RedactingAuditSink::new(log.clone(), Arc::new(Redactor::default()));
        let mut secret = event("acme", "alice", AuditOutcome::Success, 0);
        secret.summary = "used ghp_abcdefghijklmnopqrstuvwxyz0123456789".into();
        secret.details = json!({"arguments": {"password": "hunter2"}}).into();
        sink.record(secret).await.unwrap();
        let stored = &log.events(&"acme".into())[0];
        assert_eq!(stored.summary, "used [REDACTED]");
        assert_eq!(stored.details["arguments"]["password"], "[REDACTED]");
    }

    #[tokio::test]
    async fn the_trail_needs_admin_and_shows_only_the_callers_tenant() {
        let log = Arc::new(InMemoryAuditLog::new());
        log.record(event("acme", "alice", AuditOutcome::Success, 1))
            .await
            .unwrap();
        log.record(event("globex", "gina", AuditOutcome::Success, 1))
            .await
            .unwrap();
        let trail = AuditTrail::new(log);
        let admin = AiCaller::new("alice", "acme", [Permission::ADMIN_AI]);
        let page = trail.query(&admin, &AuditQuery::default()).await.unwrap();
        assert_eq!(page.total, 1);
        assert_eq!(page.items[0].tenant_id.as_str(), "acme");
        let reader = AiCaller::new("bob", "acme", [Permission::READ_WORKFLOWS]);
        let denied = trail
            .query(&reader, &AuditQuery::default())
            .await
            .unwrap_err();
        assert_eq!((denied.status(), denied.code()), (403, "permission_denied"));
    }
}
