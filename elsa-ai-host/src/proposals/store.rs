//! The in-memory [`AiProposalStore`], for development and tests.

use std::collections::HashMap;

use async_trait::async_trait;
use elsa_ai_abstractions::{AiError, AiProposal, AiProposalStore, ProposalId, ProposalQuery};
use elsa_workflows::{Page, TenantId};
use parking_lot::RwLock;

/// Keeps proposals in memory. Ids are unique across tenants (like a primary key), reads are
/// tenant-scoped, and [`update`](AiProposalStore::update) compares and sets the revision
/// under one write lock, so that of several concurrent updates from the same revision
/// exactly one succeeds.
#[derive(Debug, Default)]
pub struct InMemoryProposalStore {
    proposals: RwLock<HashMap<ProposalId, AiProposal>>,
}

impl InMemoryProposalStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many proposals the store holds, across tenants.
    pub fn len(&self) -> usize {
        self.proposals.read().len()
    }

    /// Whether the store holds no proposal.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn proposal_not_found(id: &ProposalId) -> AiError {
    AiError::NotFound {
        code: "proposal_not_found".into(),
        message: format!("proposal '{id}' not found"),
    }
}

fn matches(proposal: &AiProposal, query: &ProposalQuery) -> bool {
    query.status.is_none_or(|status| proposal.status == status)
        && query
            .conversation_id
            .as_ref()
            .is_none_or(|id| proposal.conversation_id.as_ref() == Some(id))
        && query
            .definition_id
            .as_deref()
            .is_none_or(|id| proposal.definition_id() == id)
        && query
            .created_by
            .as_deref()
            .is_none_or(|actor| proposal.created_by == actor)
}

#[async_trait]
impl AiProposalStore for InMemoryProposalStore {
    async fn find(
        &self,
        id: &ProposalId,
        tenant_id: &TenantId,
    ) -> Result<Option<AiProposal>, AiError> {
        Ok(self
            .proposals
            .read()
            .get(id)
            .filter(|p| &p.tenant_id == tenant_id)
            .cloned())
    }

    async fn save(&self, proposal: &AiProposal) -> Result<(), AiError> {
        let mut proposals = self.proposals.write();
        if proposals.contains_key(&proposal.id) {
            return Err(AiError::conflict(
                "proposal_exists",
                format!("proposal '{}' already exists", proposal.id),
            ));
        }
        proposals.insert(proposal.id.clone(), proposal.clone());
        Ok(())
    }

    async fn update(&self, proposal: &AiProposal, expected_revision: u64) -> Result<(), AiError> {
        if Some(proposal.revision) != expected_revision.checked_add(1) {
            return Err(AiError::internal(
                "invalid_revision",
                format!(
                    "an update from revision {expected_revision} must carry revision {}, not {}",
                    expected_revision.saturating_add(1),
                    proposal.revision
                ),
            ));
        }
        let mut proposals = self.proposals.write();
        let stored = proposals
            .get_mut(&proposal.id)
            .filter(|p| p.tenant_id == proposal.tenant_id)
            .ok_or_else(|| proposal_not_found(&proposal.id))?;
        if stored.revision != expected_revision {
            return Err(AiError::Conflict {
                code: "proposal_revision_conflict".into(),
                message: format!(
                    "proposal '{}' changed concurrently (revision {} is not {expected_revision})",
                    proposal.id, stored.revision
                ),
                current_state: Some(stored.status.as_str().to_owned()),
            });
        }
        *stored = proposal.clone();
        Ok(())
    }

    async fn list(
        &self,
        tenant_id: &TenantId,
        query: &ProposalQuery,
    ) -> Result<Page<AiProposal>, AiError> {
        let mut found: Vec<AiProposal> = self
            .proposals
            .read()
            .values()
            .filter(|p| &p.tenant_id == tenant_id && matches(p, query))
            .cloned()
            .collect();
        // Newest first; ids are time-ordered (UUID v7), so they break ties the same way.
        found.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        Ok(query.page.slice(found))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono::{Duration, Utc};
    use elsa_ai_abstractions::{ProposalKind, ProposalPayload, ProposalStatus};
    use elsa_workflows::{GraphDiff, PageRequest, WorkflowDefinition};

    use super::*;

    fn proposal(tenant: &str, definition: &str, minutes_ago: i64) -> AiProposal {
        AiProposal {
            id: ProposalId::generate(),
            tenant_id: tenant.into(),
            conversation_id: None,
            kind: ProposalKind::Create,
            status: ProposalStatus::Validated,
            baseline: None,
            payload: Some(ProposalPayload {
                definition: WorkflowDefinition::new_flowchart(definition, definition),
                patch: None,
            }),
            operation: None,
            rationale: "because".into(),
            warnings: Vec::new(),
            diagnostics: Vec::new(),
            graph_diff: GraphDiff::default(),
            created_by: "alice".into(),
            created_at: Utc::now() - Duration::minutes(minutes_ago),
            reviewed_by: None,
            reviewed_at: None,
            review_reason: None,
            applied_by: None,
            applied_at: None,
            applied_version: None,
            expires_at: None,
            revision: 0,
        }
    }

    #[tokio::test]
    async fn reads_are_tenant_scoped_and_ids_unique() {
        let store = InMemoryProposalStore::new();
        let p = proposal("acme", "orders", 0);
        store.save(&p).await.unwrap();
        assert_eq!(
            store.find(&p.id, &"acme".into()).await.unwrap(),
            Some(p.clone())
        );
        assert_eq!(store.find(&p.id, &"globex".into()).await.unwrap(), None);
        let mut other_tenant = p.clone();
        other_tenant.tenant_id = "globex".into();
        let error = store.save(&other_tenant).await.unwrap_err();
        assert_eq!(error.status(), 409);
        let mut next = other_tenant;
        next.revision = 1;
        let error = store.update(&next, 0).await.unwrap_err();
        assert_eq!((error.status(), error.code()), (404, "proposal_not_found"));
        assert_eq!(store.len(), 1);
    }

    #[tokio::test]
    async fn update_compares_and_sets_the_revision() {
        let store = InMemoryProposalStore::new();
        let p = proposal("acme", "orders", 0);
        store.save(&p).await.unwrap();
        let mut approved = p.clone();
        approved.status = ProposalStatus::Approved;
        approved.revision = 1;
        store.update(&approved, 0).await.unwrap();
        let mut rejected = p.clone();
        rejected.status = ProposalStatus::Rejected;
        rejected.revision = 1;
        let error = store.update(&rejected, 0).await.unwrap_err();
        assert_eq!(error.code(), "proposal_revision_conflict");
        assert_eq!(error.to_body().current_state.as_deref(), Some("Approved"));
        let error = store.update(&approved, 1).await.unwrap_err();
        assert_eq!(
            error.code(),
            "invalid_revision",
            "the new revision must be expected + 1"
        );
        let stored = store.find(&p.id, &"acme".into()).await.unwrap().unwrap();
        assert_eq!(stored, approved);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn of_concurrent_updates_from_one_revision_exactly_one_wins() {
        let store = Arc::new(InMemoryProposalStore::new());
        let p = proposal("acme", "orders", 0);
        store.save(&p).await.unwrap();
        let tasks: Vec<_> = (0..32)
            .map(|i| {
                let store = store.clone();
                let mut next = p.clone();
                next.revision = 1;
                next.review_reason = Some(format!("writer {i}"));
                tokio::spawn(async move { store.update(&next, 0).await.is_ok() })
            })
            .collect();
        let mut wins = 0;
        for task in tasks {
            wins += usize::from(task.await.unwrap());
        }
        assert_eq!(wins, 1);
    }

    #[tokio::test]
    async fn list_filters_and_pages_newest_first() {
        let store = InMemoryProposalStore::new();
        let old = proposal("acme", "orders", 30);
        let mut mid = proposal("acme", "invoices", 20);
        mid.status = ProposalStatus::Approved;
        mid.created_by = "bob".into();
        let new = proposal("acme", "orders", 10);
        for p in [&old, &mid, &new, &proposal("globex", "orders", 0)] {
            store.save(p).await.unwrap();
        }
        let ids = |page: Page<AiProposal>| -> Vec<ProposalId> {
            page.items.into_iter().map(|p| p.id).collect()
        };
        let all = store
            .list(&"acme".into(), &ProposalQuery::default())
            .await
            .unwrap();
        assert_eq!(all.total, 3);
        assert_eq!(
            ids(all),
            vec![new.id.clone(), mid.id.clone(), old.id.clone()]
        );
        let orders = ProposalQuery {
            definition_id: Some("orders".into()),
            page: PageRequest::new(1, 5),
            ..ProposalQuery::default()
        };
        let page = store.list(&"acme".into(), &orders).await.unwrap();
        assert_eq!((page.total, ids(page)), (2, vec![old.id.clone()]));
        let approved_by_bob = ProposalQuery {
            status: Some(ProposalStatus::Approved),
            created_by: Some("bob".into()),
            ..ProposalQuery::default()
        };
        let found = store.list(&"acme".into(), &approved_by_bob).await.unwrap();
        assert_eq!(ids(found), vec![mid.id.clone()]);
    }
}
