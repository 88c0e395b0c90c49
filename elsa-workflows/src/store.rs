//! The service traits through which everything above this crate reaches Elsa data.
//!
//! All of them are async, object-safe and tenant-aware: a call for tenant A never sees
//! tenant B's objects, and an object of another tenant is reported exactly like a missing one.

use std::sync::Arc;

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
#[non_exhaustive]
pub enum VersionOptions {
    /// The newest version, published or not.
    #[default]
    Latest,
    /// The version currently published.
    Published,
    /// Exactly this version number.
    Specific(i32),
}

/// Filters for [`WorkflowDefinitionStore::search`]; every filter given must match.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DefinitionQuery {
    /// Case-insensitive text matched against definition id, name and description.
    pub text: Option<String>,
    /// Only definitions with exactly this name, letter case (and surrounding whitespace of
    /// the name asked for) ignored.
    pub name: Option<String>,
    /// Only the definition with exactly this id.
    pub definition_id: Option<String>,
    /// Which version of each definition is listed: `Latest` its newest, `Published` its
    /// published one, `Specific(n)` its version n (definitions without one are left out).
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

/// Filters for [`WorkflowInstanceStore::search`]; every filter given must match.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceQuery {
    /// Case-insensitive text found in the instance id, name, correlation id or definition id.
    pub text: Option<String>,
    /// Only instances with exactly this correlation id.
    pub correlation_id: Option<String>,
    /// `Some(true)`: only instances with incidents; `Some(false)`: only those without.
    pub has_incidents: Option<bool>,
    /// Only instances with this status.
    pub status: Option<WorkflowStatus>,
    /// Only instances with this sub-status.
    pub sub_status: Option<WorkflowSubStatus>,
    /// Only instances of these definitions (empty = any definition).
    pub definition_ids: Vec<String>,
    /// Only instances created inside this range.
    pub time_range: Option<TimeRange>,
    /// Only instances last updated inside this range (instances without an update time are
    /// left out).
    pub updated_range: Option<TimeRange>,
    /// Paging; results are ordered newest first, then by id.
    pub page: PageRequest,
}

/// Filters for [`IncidentStore::search`]; every filter given must match.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IncidentQuery {
    /// Only incidents of the instance with exactly this id.
    pub instance_id: Option<String>,
    /// Case-insensitive text found in the incident's message, its exception's type or
    /// message, or the message of an inner exception.
    pub text: Option<String>,
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
    /// Finds one version of a definition; `None` when it does not exist for this tenant. The
    /// definition is shared: a backend that holds it hands out its own copy, not a clone.
    async fn find(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        version: VersionOptions,
    ) -> Result<Option<Arc<WorkflowDefinition>>, WorkflowError>;

    /// Searches definitions by text, name, id and version with paging.
    async fn search(
        &self,
        tenant: &TenantId,
        query: &DefinitionQuery,
    ) -> Result<Page<DefinitionSummary>, WorkflowError>;

    /// Every stored version of one definition, oldest first; empty when the tenant has no
    /// such definition.
    ///
    /// The default asks [`Self::find`] for the latest version and then for each earlier
    /// number, newest first, skipping numbers that are missing; it probes at most the newest
    /// 200 version numbers, so a definition with a longer history lists only its newest 200.
    /// Backends that can list versions in one request override it.
    async fn versions(
        &self,
        tenant: &TenantId,
        definition_id: &str,
    ) -> Result<Vec<DefinitionSummary>, WorkflowError> {
        let Some(latest) = self
            .find(tenant, definition_id, VersionOptions::Latest)
            .await?
        else {
            return Ok(Vec::new());
        };
        let newest = latest.version();
        let oldest = newest.saturating_sub(VERSION_PROBE_LIMIT - 1).max(1);
        let mut versions = vec![latest.summary()];
        for number in (oldest..newest).rev() {
            if let Some(version) = self
                .find(tenant, definition_id, VersionOptions::Specific(number))
                .await?
            {
                versions.push(version.summary());
            }
        }
        versions.reverse();
        Ok(versions)
    }

    /// Finds one version by its own id (Elsa's `id` of a definition version, shared by no
    /// other version); `None` when the tenant has no such version.
    ///
    /// The default searches the tenant's definitions (at most the first 1,000) and their
    /// versions for the id, one `versions` call each; backends that can look a version up
    /// directly override it.
    async fn find_version(
        &self,
        tenant: &TenantId,
        version_id: &str,
    ) -> Result<Option<Arc<WorkflowDefinition>>, WorkflowError> {
        let mut offset = 0;
        while offset < VERSION_ID_SCAN_LIMIT {
            let query = DefinitionQuery {
                page: PageRequest::new(offset, PageRequest::MAX_LIMIT),
                ..DefinitionQuery::default()
            };
            let page = self.search(tenant, &query).await?;
            for row in &page.items {
                let versions = self.versions(tenant, &row.definition_id).await?;
                if let Some(found) = versions
                    .iter()
                    .find(|v| v.version_id.as_deref() == Some(version_id))
                {
                    return self
                        .find(
                            tenant,
                            &found.definition_id,
                            VersionOptions::Specific(found.version),
                        )
                        .await;
                }
            }
            if !page.has_more() || page.items.is_empty() {
                break;
            }
            offset += page.items.len();
        }
        Ok(None)
    }
}

/// How many definitions the default [`WorkflowDefinitionStore::find_version`] searches at
/// most (each costs a `versions` call).
const VERSION_ID_SCAN_LIMIT: usize = 1_000;

/// How many version numbers the default [`WorkflowDefinitionStore::versions`] probes at most
/// (each is one `find`, which may be one request to a remote backend).
const VERSION_PROBE_LIMIT: i32 = 200;

/// Reads workflow instances.
#[async_trait]
pub trait WorkflowInstanceStore: Send + Sync {
    /// Finds an instance by id; `None` when it does not exist for this tenant.
    async fn find(
        &self,
        tenant: &TenantId,
        instance_id: &str,
    ) -> Result<Option<WorkflowInstance>, WorkflowError>;

    /// Searches instances by text, correlation id, incidents, status, sub-status, definition
    /// and creation or update time, with paging.
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

    /// Whether the backend keeps activity execution records for the tenant's instances at
    /// all (Elsa Server does; data loaded into memory only when it came with them). Without
    /// them, execution history and activity state come from instance documents alone. The
    /// default says yes.
    async fn keeps_execution_records(&self, _tenant: &TenantId) -> Result<bool, WorkflowError> {
        Ok(true)
    }
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
    /// Every descriptor available to the tenant, as a snapshot shared with other readers
    /// (tools read the catalog on many calls; a copy each time would cost more than the call).
    async fn list(&self, tenant: &TenantId) -> Result<Arc<[ActivityDescriptor]>, WorkflowError>;
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

/// Acts on workflow instances: cancel, retry, restart. Only the proposal applier holds one,
/// so an instance is acted on only by an approved proposal.
///
/// Each call acts on one instance of the caller's tenant; an instance of another tenant is
/// [`WorkflowError::NotFound`], like a missing one. The caller checks the instance's state
/// first (the backend acts on what it is asked to).
#[async_trait]
pub trait WorkflowInstanceOperator: Send + Sync {
    /// Cancels a running instance.
    async fn cancel(&self, tenant: &TenantId, instance_id: &str) -> Result<(), WorkflowError>;

    /// Schedules a faulted instance's faulted activities again and lets it run on.
    async fn retry(&self, tenant: &TenantId, instance_id: &str) -> Result<(), WorkflowError>;

    /// Starts a new instance of `instance`'s definition version with the same input and
    /// correlation id; returns the new instance's id.
    async fn restart(
        &self,
        tenant: &TenantId,
        instance: &WorkflowInstance,
    ) -> Result<String, WorkflowError>;
}

/// Publishes, unpublishes and deletes workflow definitions. Only the proposal applier holds
/// one.
#[async_trait]
pub trait WorkflowDefinitionPublisher: Send + Sync {
    /// Publishes `version` of the definition, which must be its latest version (Elsa's
    /// publish acts on the latest); the previously published version no longer is.
    /// [`WorkflowError::Conflict`] when `version` is not the latest any more.
    async fn publish(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        version: i32,
    ) -> Result<(), WorkflowError>;

    /// Makes the definition's published version unpublished (Elsa's "retract").
    async fn unpublish(&self, tenant: &TenantId, definition_id: &str) -> Result<(), WorkflowError>;

    /// Deletes the definition with all its versions.
    async fn delete(&self, tenant: &TenantId, definition_id: &str) -> Result<(), WorkflowError>;
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;

    use super::*;

    /// A store that implements only `find` and `search`, as an out-of-tree backend might,
    /// and counts the lookups it answers.
    struct FindOnly {
        versions: BTreeMap<i32, Arc<WorkflowDefinition>>,
        finds: AtomicUsize,
    }

    impl FindOnly {
        fn with(numbers: impl IntoIterator<Item = i32>) -> Self {
            let versions = numbers
                .into_iter()
                .map(|version| {
                    let definition = WorkflowDefinition::from_value(json!({
                        "id": format!("d-v{version}"), "definitionId": "d", "version": version,
                        "name": "D", "isPublished": version == 1,
                        "root": {"id": "Flowchart1", "type": "Elsa.Flowchart", "activities": []}
                    }))
                    .expect("a definition");
                    (version, Arc::new(definition))
                })
                .collect();
            Self {
                versions,
                finds: AtomicUsize::new(0),
            }
        }
    }

    #[async_trait]
    impl WorkflowDefinitionStore for FindOnly {
        async fn find(
            &self,
            tenant: &TenantId,
            definition_id: &str,
            version: VersionOptions,
        ) -> Result<Option<Arc<WorkflowDefinition>>, WorkflowError> {
            self.finds.fetch_add(1, Ordering::Relaxed);
            if tenant.as_str() != "acme" || definition_id != "d" {
                return Ok(None);
            }
            Ok(match version {
                VersionOptions::Latest => self.versions.values().next_back(),
                VersionOptions::Published => self.versions.get(&1),
                VersionOptions::Specific(n) => self.versions.get(&n),
            }
            .cloned())
        }

        async fn search(
            &self,
            _tenant: &TenantId,
            query: &DefinitionQuery,
        ) -> Result<Page<DefinitionSummary>, WorkflowError> {
            Ok(query.page.slice(Vec::new()))
        }
    }

    fn numbers(rows: &[DefinitionSummary]) -> Vec<i32> {
        rows.iter().map(|row| row.version).collect()
    }

    #[tokio::test]
    async fn the_default_versions_probes_each_number_and_skips_missing_ones() {
        let acme = TenantId::new("acme");
        let store = FindOnly::with([1, 2, 4, 7]);
        let versions = store.versions(&acme, "d").await.expect("versions");
        assert_eq!(numbers(&versions), [1, 2, 4, 7]);
        assert_eq!(versions[0].version_id.as_deref(), Some("d-v1"));
        assert!(versions[0].is_published);
        // The latest, then 6 down to 1.
        assert_eq!(store.finds.load(Ordering::Relaxed), 7);

        let unknown = store.versions(&acme, "other").await.expect("versions");
        assert!(unknown.is_empty());
        let globex = store
            .versions(&TenantId::new("globex"), "d")
            .await
            .expect("versions");
        assert!(globex.is_empty());
    }

    #[tokio::test]
    async fn the_default_versions_lists_at_most_the_newest_200() {
        let acme = TenantId::new("acme");
        let store = FindOnly::with(1..=250);
        let versions = store.versions(&acme, "d").await.expect("versions");
        assert_eq!(numbers(&versions), (51..=250).collect::<Vec<_>>());
        assert_eq!(store.finds.load(Ordering::Relaxed), 200);
    }
}
