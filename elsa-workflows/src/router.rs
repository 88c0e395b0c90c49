//! Serving each tenant from its own backend: [`TenantRouter`] holds one [`WorkflowServices`]
//! per tenant and implements the service traits by handing every call to the caller's
//! tenant's services.
//!
//! A host that serves some tenants from memory and others from an Elsa server (or from
//! anything else behind the traits) builds one router and passes it wherever a single
//! backend is expected.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;

use crate::{
    ActivityCatalog, ActivityDescriptor, ActivityExecutionRecord, DefinitionQuery,
    DefinitionSummary, DefinitionVersionRef, ExecutionLogEntry, ExecutionRecordStore,
    IncidentQuery, IncidentSearch, IncidentStore, InstanceQuery, Page, PageRequest, TenantId,
    VersionOptions, WorkflowDefinition, WorkflowDefinitionPublisher, WorkflowDefinitionStore,
    WorkflowDefinitionWriter, WorkflowError, WorkflowInstance, WorkflowInstanceOperator,
    WorkflowInstanceStore,
};

/// The workflow services of one tenant.
#[derive(Clone)]
pub struct WorkflowServices {
    /// Reads definitions.
    pub definitions: Arc<dyn WorkflowDefinitionStore>,
    /// Reads instances.
    pub instances: Arc<dyn WorkflowInstanceStore>,
    /// Reads the activity execution records and execution logs of instances.
    pub executions: Arc<dyn ExecutionRecordStore>,
    /// Finds incidents.
    pub incidents: Arc<dyn IncidentStore>,
    /// Lists activity descriptors.
    pub catalog: Arc<dyn ActivityCatalog>,
    /// Writes definitions.
    pub writer: Arc<dyn WorkflowDefinitionWriter>,
    /// Cancels, retries and restarts instances.
    pub operator: Arc<dyn WorkflowInstanceOperator>,
    /// Publishes, unpublishes and deletes definitions.
    pub publisher: Arc<dyn WorkflowDefinitionPublisher>,
}

impl WorkflowServices {
    /// All the services from one backend that implements them all.
    pub fn of<B>(backend: Arc<B>) -> Self
    where
        B: WorkflowDefinitionStore
            + WorkflowInstanceStore
            + ExecutionRecordStore
            + IncidentStore
            + ActivityCatalog
            + WorkflowDefinitionWriter
            + WorkflowInstanceOperator
            + WorkflowDefinitionPublisher
            + 'static,
    {
        Self {
            definitions: backend.clone(),
            instances: backend.clone(),
            executions: backend.clone(),
            incidents: backend.clone(),
            catalog: backend.clone(),
            writer: backend.clone(),
            operator: backend.clone(),
            publisher: backend,
        }
    }
}

impl std::fmt::Debug for WorkflowServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkflowServices").finish_non_exhaustive()
    }
}

/// Hands each call to the services of the caller's tenant.
///
/// A tenant the router does not know sees nothing, exactly as if it had no data: lookups find
/// nothing, searches and catalogs are empty, an update finds no definition and a creation is
/// refused as [`WorkflowError::NotFound`] (there is nowhere to store it).
///
/// ```
/// use std::sync::Arc;
/// use elsa_workflows::{
///     InMemoryWorkflowBackend, TenantId, TenantRouter, VersionOptions, WorkflowDefinitionStore,
///     WorkflowServices, samples,
/// };
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), elsa_workflows::WorkflowError> {
/// let acme = TenantId::new("acme");
/// let memory = Arc::new(InMemoryWorkflowBackend::new());
/// samples::seed(&memory, &acme);
/// let router = TenantRouter::new().with(acme.clone(), WorkflowServices::of(memory));
///
/// let found = router.find(&acme, "sample-order-approval", VersionOptions::Latest).await?;
/// assert!(found.is_some());
/// let globex = TenantId::new("globex");
/// assert!(router.find(&globex, "sample-order-approval", VersionOptions::Latest).await?.is_none());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct TenantRouter {
    tenants: HashMap<TenantId, WorkflowServices>,
}

impl TenantRouter {
    /// A router that serves no tenant yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves `tenant` from `services` (replacing any services it had).
    pub fn with(mut self, tenant: TenantId, services: WorkflowServices) -> Self {
        self.insert(tenant, services);
        self
    }

    /// Serves `tenant` from `services`; returns the services it had before.
    pub fn insert(
        &mut self,
        tenant: TenantId,
        services: WorkflowServices,
    ) -> Option<WorkflowServices> {
        self.tenants.insert(tenant, services)
    }

    /// The services of `tenant`, if the router serves it.
    pub fn services(&self, tenant: &TenantId) -> Option<&WorkflowServices> {
        self.tenants.get(tenant)
    }

    /// The tenants served, in no particular order.
    pub fn tenants(&self) -> impl Iterator<Item = &TenantId> {
        self.tenants.keys()
    }
}

/// The empty page a tenant without services gets.
fn empty_page<T>(page: PageRequest) -> Page<T> {
    PageRequest::new(page.offset, page.limit).slice(Vec::new())
}

#[async_trait]
impl WorkflowDefinitionStore for TenantRouter {
    async fn find(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        version: VersionOptions,
    ) -> Result<Option<Arc<WorkflowDefinition>>, WorkflowError> {
        match self.services(tenant) {
            Some(services) => {
                services
                    .definitions
                    .find(tenant, definition_id, version)
                    .await
            }
            None => Ok(None),
        }
    }

    async fn search(
        &self,
        tenant: &TenantId,
        query: &DefinitionQuery,
    ) -> Result<Page<DefinitionSummary>, WorkflowError> {
        match self.services(tenant) {
            Some(services) => services.definitions.search(tenant, query).await,
            None => Ok(empty_page(query.page)),
        }
    }

    async fn versions(
        &self,
        tenant: &TenantId,
        definition_id: &str,
    ) -> Result<Vec<DefinitionSummary>, WorkflowError> {
        match self.services(tenant) {
            Some(services) => services.definitions.versions(tenant, definition_id).await,
            None => Ok(Vec::new()),
        }
    }

    async fn find_version(
        &self,
        tenant: &TenantId,
        version_id: &str,
    ) -> Result<Option<Arc<WorkflowDefinition>>, WorkflowError> {
        match self.services(tenant) {
            Some(services) => services.definitions.find_version(tenant, version_id).await,
            None => Ok(None),
        }
    }
}

#[async_trait]
impl WorkflowInstanceStore for TenantRouter {
    async fn find(
        &self,
        tenant: &TenantId,
        instance_id: &str,
    ) -> Result<Option<WorkflowInstance>, WorkflowError> {
        match self.services(tenant) {
            Some(services) => services.instances.find(tenant, instance_id).await,
            None => Ok(None),
        }
    }

    async fn search(
        &self,
        tenant: &TenantId,
        query: &InstanceQuery,
    ) -> Result<Page<WorkflowInstance>, WorkflowError> {
        match self.services(tenant) {
            Some(services) => services.instances.search(tenant, query).await,
            None => Ok(empty_page(query.page)),
        }
    }
}

#[async_trait]
impl ExecutionRecordStore for TenantRouter {
    async fn activity_executions(
        &self,
        tenant: &TenantId,
        instance_id: &str,
    ) -> Result<Vec<ActivityExecutionRecord>, WorkflowError> {
        match self.services(tenant) {
            Some(services) => {
                services
                    .executions
                    .activity_executions(tenant, instance_id)
                    .await
            }
            None => Ok(Vec::new()),
        }
    }

    async fn execution_log(
        &self,
        tenant: &TenantId,
        instance_id: &str,
        page: PageRequest,
    ) -> Result<Page<ExecutionLogEntry>, WorkflowError> {
        match self.services(tenant) {
            Some(services) => {
                services
                    .executions
                    .execution_log(tenant, instance_id, page)
                    .await
            }
            None => Ok(empty_page(page)),
        }
    }

    async fn keeps_execution_records(&self, tenant: &TenantId) -> Result<bool, WorkflowError> {
        match self.services(tenant) {
            Some(services) => services.executions.keeps_execution_records(tenant).await,
            None => Ok(false),
        }
    }
}

#[async_trait]
impl IncidentStore for TenantRouter {
    async fn search(
        &self,
        tenant: &TenantId,
        query: &IncidentQuery,
    ) -> Result<IncidentSearch, WorkflowError> {
        match self.services(tenant) {
            Some(services) => services.incidents.search(tenant, query).await,
            None => Ok(IncidentSearch {
                incidents: empty_page(query.page),
                instances_read: 0,
                complete: true,
            }),
        }
    }
}

#[async_trait]
impl ActivityCatalog for TenantRouter {
    async fn list(&self, tenant: &TenantId) -> Result<Arc<[ActivityDescriptor]>, WorkflowError> {
        match self.services(tenant) {
            Some(services) => services.catalog.list(tenant).await,
            None => Ok(Arc::from([])),
        }
    }
}

#[async_trait]
impl WorkflowDefinitionWriter for TenantRouter {
    async fn create(
        &self,
        tenant: &TenantId,
        definition: WorkflowDefinition,
    ) -> Result<DefinitionVersionRef, WorkflowError> {
        match self.services(tenant) {
            Some(services) => services.writer.create(tenant, definition).await,
            None => Err(WorkflowError::NotFound {
                what: format!("tenant '{tenant}'"),
            }),
        }
    }

    async fn update(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        expected_version: i32,
        definition: WorkflowDefinition,
    ) -> Result<DefinitionVersionRef, WorkflowError> {
        match self.services(tenant) {
            Some(services) => {
                services
                    .writer
                    .update(tenant, definition_id, expected_version, definition)
                    .await
            }
            None => Err(WorkflowError::NotFound {
                what: format!("workflow definition '{definition_id}'"),
            }),
        }
    }
}

/// The error of an operation for a tenant the router does not serve.
fn unserved(what: String) -> WorkflowError {
    WorkflowError::NotFound { what }
}

#[async_trait]
impl WorkflowInstanceOperator for TenantRouter {
    async fn cancel(&self, tenant: &TenantId, instance_id: &str) -> Result<(), WorkflowError> {
        match self.services(tenant) {
            Some(services) => services.operator.cancel(tenant, instance_id).await,
            None => Err(unserved(format!("workflow instance '{instance_id}'"))),
        }
    }

    async fn retry(&self, tenant: &TenantId, instance_id: &str) -> Result<(), WorkflowError> {
        match self.services(tenant) {
            Some(services) => services.operator.retry(tenant, instance_id).await,
            None => Err(unserved(format!("workflow instance '{instance_id}'"))),
        }
    }

    async fn restart(
        &self,
        tenant: &TenantId,
        instance: &WorkflowInstance,
    ) -> Result<String, WorkflowError> {
        match self.services(tenant) {
            Some(services) => services.operator.restart(tenant, instance).await,
            None => Err(unserved(format!("workflow instance '{}'", instance.id()))),
        }
    }
}

#[async_trait]
impl WorkflowDefinitionPublisher for TenantRouter {
    async fn publish(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        version: i32,
    ) -> Result<(), WorkflowError> {
        match self.services(tenant) {
            Some(services) => {
                services
                    .publisher
                    .publish(tenant, definition_id, version)
                    .await
            }
            None => Err(unserved(format!("workflow definition '{definition_id}'"))),
        }
    }

    async fn unpublish(&self, tenant: &TenantId, definition_id: &str) -> Result<(), WorkflowError> {
        match self.services(tenant) {
            Some(services) => services.publisher.unpublish(tenant, definition_id).await,
            None => Err(unserved(format!("workflow definition '{definition_id}'"))),
        }
    }

    async fn delete(&self, tenant: &TenantId, definition_id: &str) -> Result<(), WorkflowError> {
        match self.services(tenant) {
            Some(services) => services.publisher.delete(tenant, definition_id).await,
            None => Err(unserved(format!("workflow definition '{definition_id}'"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InMemoryWorkflowBackend, samples};

    #[tokio::test]
    async fn calls_reach_the_callers_tenant_only() {
        let (acme, globex, initech) = (
            TenantId::new("acme"),
            TenantId::new("globex"),
            TenantId::new("initech"),
        );
        let first = Arc::new(InMemoryWorkflowBackend::new());
        let second = Arc::new(InMemoryWorkflowBackend::new());
        samples::seed(&first, &acme);
        // The second backend holds data under acme too: the router must not reach it for acme.
        samples::seed(&second, &acme);
        second
            .create(
                &globex,
                WorkflowDefinition::new_flowchart("g", "Globex only"),
            )
            .await
            .expect("create");
        let router = TenantRouter::new()
            .with(acme.clone(), WorkflowServices::of(first.clone()))
            .with(globex.clone(), WorkflowServices::of(second.clone()));

        let acme_rows =
            WorkflowDefinitionStore::search(&router, &acme, &DefinitionQuery::default())
                .await
                .expect("search");
        assert!(acme_rows.total > 0);
        let globex_rows =
            WorkflowDefinitionStore::search(&router, &globex, &DefinitionQuery::default())
                .await
                .expect("search");
        let ids: Vec<_> = globex_rows
            .items
            .iter()
            .map(|r| r.definition_id.as_str())
            .collect();
        assert_eq!(ids, ["g"]);

        // A write for acme lands in acme's backend only.
        router
            .create(&acme, WorkflowDefinition::new_flowchart("new", "New"))
            .await
            .expect("create");
        assert_eq!(first.definition_versions(&acme, "new").len(), 1);
        assert!(second.definition_versions(&acme, "new").is_empty());

        // A tenant the router does not serve sees nothing and cannot write.
        assert!(
            WorkflowDefinitionStore::find(&router, &initech, "g", VersionOptions::Latest)
                .await
                .expect("find")
                .is_none()
        );
        let page = WorkflowInstanceStore::search(
            &router,
            &initech,
            &InstanceQuery {
                page: PageRequest::new(5, 10_000),
                ..InstanceQuery::default()
            },
        )
        .await
        .expect("search");
        assert_eq!(
            (page.total, page.offset, page.limit),
            (0, 5, PageRequest::MAX_LIMIT)
        );
        assert!(
            WorkflowInstanceStore::find(&router, &initech, "x")
                .await
                .expect("find")
                .is_none()
        );
        assert!(router.list(&initech).await.expect("list").is_empty());
        let records = router
            .activity_executions(&initech, "x")
            .await
            .expect("records");
        assert!(records.is_empty());
        let log = router
            .execution_log(&initech, "x", PageRequest::new(0, 10))
            .await
            .expect("log");
        assert_eq!(log.total, 0);
        let incidents = IncidentStore::search(&router, &initech, &IncidentQuery::default())
            .await
            .expect("incidents");
        assert_eq!((incidents.incidents.total, incidents.complete), (0, true));
        let created = router
            .create(&initech, WorkflowDefinition::new_flowchart("x", "X"))
            .await
            .expect_err("no backend");
        assert_eq!(
            created,
            WorkflowError::NotFound {
                what: "tenant 'initech'".into()
            }
        );
        let updated = router
            .update(
                &initech,
                "x",
                1,
                WorkflowDefinition::new_flowchart("x", "X"),
            )
            .await
            .expect_err("no backend");
        assert_eq!(
            updated,
            WorkflowError::NotFound {
                what: "workflow definition 'x'".into()
            }
        );
        let mut served: Vec<_> = router.tenants().map(TenantId::as_str).collect();
        served.sort_unstable();
        assert_eq!(served, ["acme", "globex"]);
    }
}
