//! Each tenant's enablement decisions, read and indexed once per change instead of on every
//! tool call and listing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use elsa_ai_abstractions::{AiError, AiToolEnablementStore, ToolEnablement};
use elsa_workflows::TenantId;
use parking_lot::RwLock;

use crate::NameMap;
use crate::enablement::EnablementDecisions;

/// How a [`ToolRegistry`](crate::ToolRegistry) keeps each tenant's enablement decisions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum EnablementCaching {
    /// Read from the store for every call and listing: for a store that processes other than
    /// this one change without telling it (a SQLite file several processes share).
    #[default]
    Off,
    /// Read once and kept until a change: one made through the registry's store forgets the
    /// tenant's decisions at once, one made elsewhere must be announced through
    /// [`ToolRegistry::enablement_changed`](crate::ToolRegistry::enablement_changed).
    /// `max_age` bounds how long decisions are kept should an announcement be lost (`None`:
    /// no other process writes the store).
    PerChange {
        /// The longest decisions are kept without a change, if any.
        max_age: Option<Duration>,
    },
}

/// The decisions of one tenant, as read at `read_at`.
struct Kept {
    decisions: Arc<EnablementDecisions>,
    read_at: Instant,
}

/// The registry's enablement store: writes go through to the store it wraps and forget the
/// tenant's kept decisions; [`decisions`](Self::decisions) reads a tenant's once per change.
pub(crate) struct EnablementCache {
    store: Arc<dyn AiToolEnablementStore>,
    caching: EnablementCaching,
    kept: RwLock<NameMap<TenantId, Kept>>,
    /// Advanced by every change: a read that began before a change does not keep what it
    /// read, which may predate the change.
    changes: AtomicU64,
}

impl EnablementCache {
    pub fn new(store: Arc<dyn AiToolEnablementStore>, caching: EnablementCaching) -> Self {
        Self {
            store,
            caching,
            kept: RwLock::default(),
            changes: AtomicU64::new(0),
        }
    }

    /// The tenant's decisions: kept ones while they hold, otherwise read from the store.
    pub async fn decisions(
        &self,
        tenant_id: &TenantId,
    ) -> Result<Arc<EnablementDecisions>, AiError> {
        let EnablementCaching::PerChange { max_age } = self.caching else {
            return Ok(Arc::new(EnablementDecisions::new(
                self.store.list(tenant_id).await?,
            )));
        };
        if let Some(kept) = self.kept.read().get(tenant_id)
            && max_age.is_none_or(|max_age| kept.read_at.elapsed() < max_age)
        {
            return Ok(Arc::clone(&kept.decisions));
        }
        let before = self.changes.load(Ordering::Acquire);
        let read_at = Instant::now();
        let decisions = Arc::new(EnablementDecisions::new(self.store.list(tenant_id).await?));
        let mut kept = self.kept.write();
        if self.changes.load(Ordering::Acquire) == before {
            kept.insert(
                tenant_id.clone(),
                Kept {
                    decisions: Arc::clone(&decisions),
                    read_at,
                },
            );
        }
        Ok(decisions)
    }

    /// Forgets the decisions kept for `tenant_id`, or for every tenant.
    pub fn changed(&self, tenant_id: Option<&TenantId>) {
        let mut kept = self.kept.write();
        self.changes.fetch_add(1, Ordering::AcqRel);
        match tenant_id {
            Some(tenant_id) => {
                kept.remove(tenant_id);
            }
            None => kept.clear(),
        }
    }
}

#[async_trait]
impl AiToolEnablementStore for EnablementCache {
    async fn list(&self, tenant_id: &TenantId) -> Result<Vec<ToolEnablement>, AiError> {
        self.store.list(tenant_id).await
    }

    async fn set(&self, enablement: &ToolEnablement) -> Result<(), AiError> {
        let stored = self.store.set(enablement).await;
        // Forgotten even when the store reports a failure: the write may have happened.
        self.changed(Some(&enablement.tenant_id));
        stored
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use chrono::Utc;

    use super::*;
    use crate::enablement::InMemoryToolEnablementStore;
    use crate::testing::governance::read_tool;

    /// A store that counts its reads.
    #[derive(Default)]
    struct Counted {
        inner: InMemoryToolEnablementStore,
        reads: AtomicUsize,
    }

    #[async_trait]
    impl AiToolEnablementStore for Counted {
        async fn list(&self, tenant_id: &TenantId) -> Result<Vec<ToolEnablement>, AiError> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            self.inner.list(tenant_id).await
        }

        async fn set(&self, enablement: &ToolEnablement) -> Result<(), AiError> {
            self.inner.set(enablement).await
        }
    }

    fn decision(tenant: &str, enabled: bool) -> ToolEnablement {
        ToolEnablement {
            tenant_id: TenantId::new(tenant),
            tool_name: "demo.read".into(),
            agent: None,
            enabled,
            changed_by: "admin".into(),
            changed_at: Utc::now(),
        }
    }

    async fn enabled(cache: &EnablementCache, tenant: &str) -> bool {
        let decisions = cache.decisions(&TenantId::new(tenant)).await.unwrap();
        decisions.is_enabled(&read_tool("demo.read"), None)
    }

    #[tokio::test]
    async fn decisions_are_read_once_per_change_and_per_tenant() {
        let store = Arc::new(Counted::default());
        let cache = EnablementCache::new(
            store.clone(),
            EnablementCaching::PerChange { max_age: None },
        );
        assert!(enabled(&cache, "acme").await);
        assert!(enabled(&cache, "acme").await);
        assert_eq!(
            store.reads.load(Ordering::SeqCst),
            1,
            "kept after the first read"
        );

        cache.set(&decision("acme", false)).await.unwrap();
        assert!(
            !enabled(&cache, "acme").await,
            "a change through it applies at once"
        );
        assert!(
            enabled(&cache, "initech").await,
            "another tenant's are its own"
        );
        assert_eq!(store.reads.load(Ordering::SeqCst), 3);

        // A change written elsewhere is seen once it is announced.
        store.set(&decision("acme", true)).await.unwrap();
        assert!(!enabled(&cache, "acme").await, "not announced yet");
        cache.changed(Some(&TenantId::new("acme")));
        assert!(enabled(&cache, "acme").await);
        store.set(&decision("initech", false)).await.unwrap();
        cache.changed(None);
        assert!(!enabled(&cache, "initech").await, "everything forgotten");
    }

    #[tokio::test]
    async fn kept_decisions_expire_after_max_age_and_off_reads_every_time() {
        let store = Arc::new(Counted::default());
        let cache = EnablementCache::new(
            store.clone(),
            EnablementCaching::PerChange {
                max_age: Some(Duration::ZERO),
            },
        );
        store.set(&decision("acme", false)).await.unwrap();
        assert!(!enabled(&cache, "acme").await);
        store.set(&decision("acme", true)).await.unwrap();
        assert!(
            enabled(&cache, "acme").await,
            "an unannounced change after max_age"
        );

        let off = EnablementCache::new(store.clone(), EnablementCaching::Off);
        let before = store.reads.load(Ordering::SeqCst);
        enabled(&off, "acme").await;
        enabled(&off, "acme").await;
        assert_eq!(store.reads.load(Ordering::SeqCst), before + 2);
    }

    #[tokio::test]
    async fn a_read_that_began_before_a_change_is_not_kept() {
        /// A store whose reads wait until released, to interleave a change with a read.
        struct Slow {
            inner: InMemoryToolEnablementStore,
            gate: tokio::sync::Semaphore,
        }

        #[async_trait]
        impl AiToolEnablementStore for Slow {
            async fn list(&self, tenant_id: &TenantId) -> Result<Vec<ToolEnablement>, AiError> {
                let listed = self.inner.list(tenant_id).await;
                self.gate.acquire().await.unwrap().forget();
                listed
            }

            async fn set(&self, enablement: &ToolEnablement) -> Result<(), AiError> {
                self.inner.set(enablement).await
            }
        }

        let store = Arc::new(Slow {
            inner: InMemoryToolEnablementStore::new(),
            gate: tokio::sync::Semaphore::new(0),
        });
        let cache = Arc::new(EnablementCache::new(
            store.clone(),
            EnablementCaching::PerChange { max_age: None },
        ));
        let reading = tokio::spawn({
            let cache = cache.clone();
            async move { enabled(&cache, "acme").await }
        });
        tokio::task::yield_now().await;
        // The read has its (old) decisions; the change lands before it finishes.
        cache.set(&decision("acme", false)).await.unwrap();
        store.gate.add_permits(1);
        assert!(
            reading.await.unwrap(),
            "the read saw the store before the change"
        );
        store.gate.add_permits(1);
        assert!(!enabled(&cache, "acme").await, "what it read was not kept");
    }
}
