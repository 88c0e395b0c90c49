//! A probe for data access: Elsa read services over an [`InMemoryWorkflowBackend`] that
//! record every read with its tenant, so a test can prove that a refused request never
//! touched the data (or touched only its own tenant's).

use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::AiToolServices;
use elsa_workflows::{
    ActivityCatalog, ActivityDescriptor, ActivityExecutionRecord, DefinitionQuery,
    DefinitionSummary, ExecutionLogEntry, ExecutionRecordStore, InMemoryWorkflowBackend,
    IncidentQuery, IncidentSearch, IncidentStore, InstanceQuery, Page, PageRequest, TenantId,
    VersionOptions, WorkflowDefinition, WorkflowDefinitionStore, WorkflowError, WorkflowInstance,
    WorkflowInstanceStore,
};
use parking_lot::Mutex;

use super::governance::RefusingProposalIntake;

/// One read of the Elsa services: which tenant's partition, and which trait method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataRead {
    /// The tenant the read was made for.
    pub tenant: TenantId,
    /// `definitions.find`, `definitions.search`, `instances.find`, `instances.search`,
    /// `executions.list`, `executions.log`, `incidents.search` or `catalog.list`.
    pub operation: &'static str,
}

/// The read services of a backend (definitions, instances, execution records, incidents and
/// the activity catalog), recording every read before delegating to it.
#[derive(Debug)]
pub struct RecordingWorkflowData {
    backend: Arc<InMemoryWorkflowBackend>,
    reads: Mutex<Vec<DataRead>>,
}

impl RecordingWorkflowData {
    /// Records the reads of `backend`.
    pub fn new(backend: Arc<InMemoryWorkflowBackend>) -> Arc<Self> {
        Arc::new(Self {
            backend,
            reads: Mutex::new(Vec::new()),
        })
    }

    /// The backend the reads reach.
    pub fn backend(&self) -> &Arc<InMemoryWorkflowBackend> {
        &self.backend
    }

    /// Every read so far, in order.
    pub fn reads(&self) -> Vec<DataRead> {
        self.reads.lock().clone()
    }

    /// Forgets the reads recorded so far.
    pub fn clear(&self) {
        self.reads.lock().clear();
    }

    /// [`AiToolServices`] reading through this probe (proposal intake: refusing).
    pub fn services(self: &Arc<Self>) -> AiToolServices {
        AiToolServices {
            definitions: self.clone(),
            instances: self.clone(),
            executions: self.clone(),
            incidents: self.clone(),
            catalog: self.clone(),
            proposals: Arc::new(RefusingProposalIntake),
        }
    }

    fn record(&self, tenant: &TenantId, operation: &'static str) {
        self.reads.lock().push(DataRead {
            tenant: tenant.clone(),
            operation,
        });
    }
}

#[async_trait]
impl WorkflowDefinitionStore for RecordingWorkflowData {
    async fn find(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        version: VersionOptions,
    ) -> Result<Option<Arc<WorkflowDefinition>>, WorkflowError> {
        self.record(tenant, "definitions.find");
        WorkflowDefinitionStore::find(self.backend.as_ref(), tenant, definition_id, version).await
    }

    async fn search(
        &self,
        tenant: &TenantId,
        query: &DefinitionQuery,
    ) -> Result<Page<DefinitionSummary>, WorkflowError> {
        self.record(tenant, "definitions.search");
        WorkflowDefinitionStore::search(self.backend.as_ref(), tenant, query).await
    }
}

#[async_trait]
impl WorkflowInstanceStore for RecordingWorkflowData {
    async fn find(
        &self,
        tenant: &TenantId,
        instance_id: &str,
    ) -> Result<Option<WorkflowInstance>, WorkflowError> {
        self.record(tenant, "instances.find");
        WorkflowInstanceStore::find(self.backend.as_ref(), tenant, instance_id).await
    }

    async fn search(
        &self,
        tenant: &TenantId,
        query: &InstanceQuery,
    ) -> Result<Page<WorkflowInstance>, WorkflowError> {
        self.record(tenant, "instances.search");
        WorkflowInstanceStore::search(self.backend.as_ref(), tenant, query).await
    }
}

#[async_trait]
impl ExecutionRecordStore for RecordingWorkflowData {
    async fn activity_executions(
        &self,
        tenant: &TenantId,
        instance_id: &str,
    ) -> Result<Vec<ActivityExecutionRecord>, WorkflowError> {
        self.record(tenant, "executions.list");
        self.backend.activity_executions(tenant, instance_id).await
    }

    async fn execution_log(
        &self,
        tenant: &TenantId,
        instance_id: &str,
        page: PageRequest,
    ) -> Result<Page<ExecutionLogEntry>, WorkflowError> {
        self.record(tenant, "executions.log");
        self.backend.execution_log(tenant, instance_id, page).await
    }
}

#[async_trait]
impl IncidentStore for RecordingWorkflowData {
    async fn search(
        &self,
        tenant: &TenantId,
        query: &IncidentQuery,
    ) -> Result<IncidentSearch, WorkflowError> {
        self.record(tenant, "incidents.search");
        IncidentStore::search(self.backend.as_ref(), tenant, query).await
    }
}

#[async_trait]
impl ActivityCatalog for RecordingWorkflowData {
    async fn list(
        &self,
        tenant: &TenantId,
    ) -> Result<std::sync::Arc<[ActivityDescriptor]>, WorkflowError> {
        self.record(tenant, "catalog.list");
        self.backend.list(tenant).await
    }
}
