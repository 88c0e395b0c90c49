//! The service traits through which everything above this crate reaches Elsa data.
//!
//! All of them are async, object-safe and tenant-aware: a call for tenant A never sees
//! tenant B's objects, and an object of another tenant is reported exactly like a missing one.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{
    ActivityDescriptor, ActivityExecutionRecord, ExecutionLogEntry, Incident, Page, PageRequest,
    TenantId, TimeRange, WorkflowDefinition, WorkflowError, WorkflowInstance, WorkflowStatus,
    WorkflowSubStatus,
};

/// Which version of a definition a lookup wants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum VersionOptions {
    /// The newest version, published or not.
    #[default]
    Latest,
    /// The version currently published.
    Published,
    /// Exactly this version number.
    Specific(i32),
}

/// Filters for [`WorkflowDefinitionStore::search`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DefinitionQuery {
    /// Case-insensitive text matched against definition id, name and description.
    pub text: Option<String>,
    /// `Latest` lists each definition's newest version, `Published` only published versions.
    pub version: VersionOptions,
    /// Paging; results are ordered by name, then definition id.
    pub page: PageRequest,
}

/// The row a definition search returns: enough to pick one, not the whole graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DefinitionSummary {
    /// Stable definition id, shared by all versions.
    pub definition_id: String,
    /// Id of this particular version.
    pub version_id: Option<String>,
    /// Version number.
    pub version: i32,
    /// Display name.
    pub name: Option<String>,
    /// Description, if any.
    pub description: Option<String>,
    /// Whether this is the newest version.
    pub is_latest: bool,
    /// Whether this version is published.
    pub is_published: bool,
    /// Number of activities in the graph, nested ones included.
    pub activity_count: usize,
}

/// Filters for [`WorkflowInstanceStore::search`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceQuery {
    /// Only instances with this status.
    pub status: Option<WorkflowStatus>,
    /// Only instances with this sub-status.
    pub sub_status: Option<WorkflowSubStatus>,
    /// Only instances of these definitions (empty = any definition).
    pub definition_ids: Vec<String>,
    /// Only instances created inside this range.
    pub time_range: Option<TimeRange>,
    /// Paging; results are ordered newest first, then by id.
    pub page: PageRequest,
}

/// Filters for [`IncidentStore::search`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IncidentQuery {
    /// Only incidents of instances of these definitions (empty = any definition).
    pub definition_ids: Vec<String>,
    /// Only incidents of activities of this type (letter case ignored).
    pub activity_type: Option<String>,
    /// Only incidents recorded inside this range.
    pub time_range: Option<TimeRange>,
    /// Paging; incidents are ordered newest first, then by instance id.
    pub page: PageRequest,
}

/// An incident with the instance it was recorded in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceIncident {
    /// The instance's id.
    pub instance_id: String,
    /// The definition the instance runs.
    pub definition_id: Option<String>,
    /// The version of that definition.
    pub definition_version: Option<i32>,
    /// The incident itself.
    pub incident: Incident,
}

/// What an [`IncidentStore::search`] found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IncidentSearch {
    /// The page of matching incidents; `total` counts the matches among the instances read.
    pub incidents: Page<InstanceIncident>,
    /// How many instances with incidents were read.
    pub instances_read: usize,
    /// Whether every instance with incidents was read (a backend that must read instances
    /// one by one stops at a bound, and says so here).
    pub complete: bool,
}

/// Identifies the version a [`WorkflowDefinitionWriter`] wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DefinitionVersionRef {
    /// The definition id.
    pub definition_id: String,
    /// The id of the new version.
    pub version_id: String,
    /// The new version number.
    pub version: i32,
}

/// Reads workflow definitions.
#[async_trait]
pub trait WorkflowDefinitionStore: Send + Sync {
    /// Finds one version of a definition; `None` when it does not exist for this tenant.
    async fn find(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        version: VersionOptions,
    ) -> Result<Option<WorkflowDefinition>, WorkflowError>;

    /// Searches definitions by text with paging.
    async fn search(
        &self,
        tenant: &TenantId,
        query: &DefinitionQuery,
    ) -> Result<Page<DefinitionSummary>, WorkflowError>;
}

/// Reads workflow instances.
#[async_trait]
pub trait WorkflowInstanceStore: Send + Sync {
    /// Finds an instance by id; `None` when it does not exist for this tenant.
    async fn find(
        &self,
        tenant: &TenantId,
        instance_id: &str,
    ) -> Result<Option<WorkflowInstance>, WorkflowError>;

    /// Searches instances by status, sub-status, definition and time range with paging.
    async fn search(
        &self,
        tenant: &TenantId,
        query: &InstanceQuery,
    ) -> Result<Page<WorkflowInstance>, WorkflowError>;
}

/// Reads what Elsa recorded while running an instance: its activity execution records and
/// its execution log. An instance of another tenant has no records, exactly like an unknown
/// one.
#[async_trait]
pub trait ExecutionRecordStore: Send + Sync {
    /// The activity execution records of one instance (inputs, outputs and variables
    /// included), in the order the executions started; empty when there are none. Each
    /// record's `path` is its place in that list (`$.items[3]`), or in the instance document
    /// when the records came from there.
    async fn activity_executions(
        &self,
        tenant: &TenantId,
        instance_id: &str,
    ) -> Result<Vec<ActivityExecutionRecord>, WorkflowError>;

    /// A page of the instance's execution log, in sequence order.
    async fn execution_log(
        &self,
        tenant: &TenantId,
        instance_id: &str,
        page: PageRequest,
    ) -> Result<Page<ExecutionLogEntry>, WorkflowError>;
}

/// Finds the incidents recorded in a tenant's instances.
#[async_trait]
pub trait IncidentStore: Send + Sync {
    /// Incidents matching `query`, newest first.
    async fn search(
        &self,
        tenant: &TenantId,
        query: &IncidentQuery,
    ) -> Result<IncidentSearch, WorkflowError>;
}

/// Lists the activity descriptors a tenant may use.
#[async_trait]
pub trait ActivityCatalog: Send + Sync {
    /// Every descriptor available to the tenant.
    async fn list(&self, tenant: &TenantId) -> Result<Vec<ActivityDescriptor>, WorkflowError>;
}

/// Writes workflow definitions. Only the proposal applier holds one.
#[async_trait]
pub trait WorkflowDefinitionWriter: Send + Sync {
    /// Stores a new definition as version 1; fails with [`WorkflowError::Conflict`] when the
    /// definition id is taken.
    async fn create(
        &self,
        tenant: &TenantId,
        definition: WorkflowDefinition,
    ) -> Result<DefinitionVersionRef, WorkflowError>;

    /// Stores a new version of an existing definition, atomically checking that its latest
    /// version is still `expected_version` ([`WorkflowError::Conflict`] otherwise).
    async fn update(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        expected_version: i32,
        definition: WorkflowDefinition,
    ) -> Result<DefinitionVersionRef, WorkflowError>;
}
