//! An in-memory Elsa backend: definitions with their whole version history, instances (with
//! their activity execution records and execution log) and activity catalogs, partitioned by
//! tenant, behind all the service traits.
//!
//! It serves development, tests, demos and the `weaver` server when no Elsa server is
//! configured. Data comes from code ([`InMemoryWorkflowBackend::insert_definition`] and
//! friends), from a folder of Elsa JSON files ([`InMemoryWorkflowBackend::seed_from_dir`])
//! or from the samples shipped with the crate ([`crate::samples`]).

#[cfg(feature = "folder")]
mod folder;
mod operations;
mod seed;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use parking_lot::RwLock;

#[cfg(feature = "folder")]
pub use folder::FolderDefinitionWriter;
pub use seed::{SeedReport, SkippedFile, SupersededSnapshot};

use crate::json::{self, Seg};
use crate::{
    ActivityCatalog, ActivityDescriptor, ActivityExecutionRecord, DefinitionQuery,
    DefinitionSummary, DefinitionVersionRef, ExecutionLogEntry, ExecutionRecordSource,
    ExecutionRecordStore, IncidentQuery, IncidentSearch, IncidentStore, InstanceIncident,
    InstanceQuery, Page, PageRequest, TenantId, VersionOptions, WorkflowDefinition,
    WorkflowDefinitionStore, WorkflowDefinitionWriter, WorkflowError, WorkflowInstance,
    WorkflowInstanceStore,
};

/// Workflow definitions, instances and activity catalogs held in memory, one partition per
/// tenant.
///
/// A tenant never sees another tenant's objects: every lookup and write goes through the
/// caller's partition only, so another tenant's object is reported exactly like a missing
/// one. Definitions keep every version; the backend keeps their `isLatest` flags true for
/// the highest version only and lets at most one version (the highest that claims it) be
/// published. All methods are safe to call from many threads at once; a write is atomic.
#[derive(Debug, Default)]
pub struct InMemoryWorkflowBackend {
    tenants: RwLock<HashMap<TenantId, TenantData>>,
}

/// One tenant's partition.
#[derive(Debug, Default)]
struct TenantData {
    /// Versions of each definition by definition id, keyed by version number.
    definitions: HashMap<String, BTreeMap<i32, Arc<WorkflowDefinition>>>,
    /// Instances by instance id.
    instances: HashMap<String, WorkflowInstance>,
    /// Activity execution records by instance id, as Elsa's activity execution store holds
    /// them beside the instances.
    executions: HashMap<String, Vec<ActivityExecutionRecord>>,
    /// Execution log entries by instance id, in sequence order.
    execution_logs: HashMap<String, Vec<ExecutionLogEntry>>,
    /// The activity descriptors the tenant may use, shared with every reader of a snapshot.
    catalog: Arc<[ActivityDescriptor]>,
}

impl InMemoryWorkflowBackend {
    /// An empty backend.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores one definition version as given (its `definitionId` and `version`; a version id
    /// is generated when it has none) and returns what was stored. Fails with
    /// [`WorkflowError::Conflict`] when the tenant already has that version of that
    /// definition, and with a [`WorkflowError::Parse`] when the definition has no
    /// `definitionId`.
    pub fn insert_definition(
        &self,
        tenant: &TenantId,
        mut definition: WorkflowDefinition,
    ) -> Result<DefinitionVersionRef, WorkflowError> {
        let definition_id = required_definition_id(&definition)?;
        if definition.version_id().is_none_or(str::is_empty) {
            definition.set_version_id(new_version_id());
        }
        let version = definition.version();
        let mut tenants = self.tenants.write();
        let versions = tenants
            .entry(tenant.clone())
            .or_default()
            .definitions
            .entry(definition_id.clone())
            .or_default();
        if versions.contains_key(&version) {
            return Err(WorkflowError::Conflict {
                message: format!(
                    "workflow definition '{definition_id}' already has a version {version}"
                ),
            });
        }
        let stored = version_ref(&definition);
        versions.insert(version, Arc::new(definition));
        normalise_flags(versions);
        Ok(stored)
    }

    /// Stores an instance, replacing any instance with the same id in the tenant's
    /// partition (a newer snapshot of the same run); returns the replaced one.
    pub fn insert_instance(
        &self,
        tenant: &TenantId,
        instance: WorkflowInstance,
    ) -> Option<WorkflowInstance> {
        self.tenants
            .write()
            .entry(tenant.clone())
            .or_default()
            .instances
            .insert(instance.id().to_owned(), instance)
    }

    /// Adds activity execution records of one instance (Elsa keeps them apart from the
    /// instance document). Records are listed in the order they started.
    pub fn insert_activity_executions(
        &self,
        tenant: &TenantId,
        instance_id: &str,
        records: impl IntoIterator<Item = ActivityExecutionRecord>,
    ) {
        let mut tenants = self.tenants.write();
        let stored = tenants
            .entry(tenant.clone())
            .or_default()
            .executions
            .entry(instance_id.to_owned())
            .or_default();
        stored.extend(records);
        stored.sort_by_key(|record| (record.started_at.is_none(), record.started_at));
    }

    /// Adds execution log entries of one instance; the log is kept in sequence order.
    pub fn insert_execution_log(
        &self,
        tenant: &TenantId,
        instance_id: &str,
        entries: impl IntoIterator<Item = ExecutionLogEntry>,
    ) {
        let mut tenants = self.tenants.write();
        let log = tenants
            .entry(tenant.clone())
            .or_default()
            .execution_logs
            .entry(instance_id.to_owned())
            .or_default();
        log.extend(entries);
        log.sort_by_key(|entry| entry.sequence);
    }

    /// Replaces the tenant's activity catalog.
    pub fn set_catalog(&self, tenant: &TenantId, descriptors: Vec<ActivityDescriptor>) {
        self.tenants
            .write()
            .entry(tenant.clone())
            .or_default()
            .catalog = descriptors.into();
    }

    /// Adds descriptors to the tenant's activity catalog.
    pub fn add_descriptors(
        &self,
        tenant: &TenantId,
        descriptors: impl IntoIterator<Item = ActivityDescriptor>,
    ) {
        let mut tenants = self.tenants.write();
        let catalog = &mut tenants.entry(tenant.clone()).or_default().catalog;
        *catalog = catalog.iter().cloned().chain(descriptors).collect();
    }

    /// Gives the tenant `descriptors` as its catalog when it has none yet; returns whether
    /// it did.
    pub(crate) fn set_catalog_if_empty(
        &self,
        tenant: &TenantId,
        descriptors: &[ActivityDescriptor],
    ) -> bool {
        let mut tenants = self.tenants.write();
        let catalog = &mut tenants.entry(tenant.clone()).or_default().catalog;
        if !catalog.is_empty() {
            return false;
        }
        *catalog = descriptors.into();
        true
    }

    /// Every version of one definition as stored now, for [`Self::restore_versions`].
    #[cfg(feature = "folder")]
    fn versions_of(
        &self,
        tenant: &TenantId,
        definition_id: &str,
    ) -> Option<BTreeMap<i32, Arc<WorkflowDefinition>>> {
        self.tenants
            .read()
            .get(tenant)
            .and_then(|data| data.definitions.get(definition_id))
            .cloned()
    }

    /// Puts back what [`Self::versions_of`] returned (`None`: the definition did not exist).
    #[cfg(feature = "folder")]
    fn restore_versions(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        versions: Option<BTreeMap<i32, Arc<WorkflowDefinition>>>,
    ) {
        let mut tenants = self.tenants.write();
        let definitions = &mut tenants.entry(tenant.clone()).or_default().definitions;
        match versions {
            Some(versions) => definitions.insert(definition_id.to_owned(), versions),
            None => definitions.remove(definition_id),
        };
    }

    /// Every stored version of a definition, oldest first (empty when the tenant has no
    /// such definition).
    pub fn definition_versions(
        &self,
        tenant: &TenantId,
        definition_id: &str,
    ) -> Vec<WorkflowDefinition> {
        self.tenants
            .read()
            .get(tenant)
            .and_then(|data| data.definitions.get(definition_id))
            .map(|versions| {
                versions
                    .values()
                    .map(|v| WorkflowDefinition::clone(v))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The definition id a stored definition must have.
fn required_definition_id(definition: &WorkflowDefinition) -> Result<String, WorkflowError> {
    let id = definition.definition_id();
    if id.trim().is_empty() {
        return Err(json::error_at(
            &[Seg::Key("definitionId".into())],
            "a stored workflow definition needs a `definitionId`",
        )
        .into());
    }
    Ok(id.to_owned())
}

/// A fresh version id, in the 16-hex-digit style Elsa uses for its ids.
fn new_version_id() -> String {
    let simple = uuid::Uuid::new_v4().simple().to_string();
    simple[..16].to_owned()
}

fn version_ref(definition: &WorkflowDefinition) -> DefinitionVersionRef {
    DefinitionVersionRef {
        definition_id: definition.definition_id().to_owned(),
        version_id: definition.version_id().unwrap_or_default().to_owned(),
        version: definition.version(),
    }
}

/// Makes the highest version the only latest one, and the highest version claiming to be
/// published the only published one. Flags already right are left as they are, so stored
/// documents change only where they must.
fn normalise_flags(versions: &mut BTreeMap<i32, Arc<WorkflowDefinition>>) {
    let latest = versions.keys().next_back().copied();
    let published = versions
        .iter()
        .rev()
        .find(|(_, definition)| definition.is_published())
        .map(|(version, _)| *version);
    for (version, definition) in versions.iter_mut() {
        // Only a version whose flags change is copied (when a reader still holds it).
        let is_latest = Some(*version) == latest;
        if definition.is_latest() != is_latest {
            Arc::make_mut(definition).set_latest(is_latest);
        }
        if definition.is_published() && Some(*version) != published {
            Arc::make_mut(definition).set_published(false);
        }
    }
}

/// The version of one definition that `options` selects.
fn select(
    versions: &BTreeMap<i32, Arc<WorkflowDefinition>>,
    options: VersionOptions,
) -> Option<&Arc<WorkflowDefinition>> {
    match options {
        VersionOptions::Latest => versions.values().next_back(),
        VersionOptions::Published => versions.values().rev().find(|d| d.is_published()),
        VersionOptions::Specific(version) => versions.get(&version),
    }
}

fn matches_text(summary: &DefinitionSummary, needle: &str) -> bool {
    contains_text(
        [
            Some(summary.definition_id.as_str()),
            summary.name.as_deref(),
            summary.description.as_deref(),
        ],
        needle,
    )
}

/// A query's text, trimmed and lowercased for [`contains_text`]; `None` when there is none.
fn text_needle(text: Option<&str>) -> Option<String> {
    text.map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_lowercase)
}

/// Whether any of `fields` contains `needle` (already lowercased), letter case ignored.
fn contains_text<'a>(fields: impl IntoIterator<Item = Option<&'a str>>, needle: &str) -> bool {
    fields
        .into_iter()
        .flatten()
        .any(|field| field.to_lowercase().contains(needle))
}

/// Whether a definition's `name` is the name a [`DefinitionQuery`] asks for: the same
/// letters in any case; the wanted name's surrounding whitespace is ignored.
pub(crate) fn same_name(name: Option<&str>, wanted: &str) -> bool {
    name.is_some_and(|name| name.to_lowercase() == wanted.trim().to_lowercase())
}

/// Whether a definition search row passes the query's text, name and id filters.
fn summary_matches(
    summary: &DefinitionSummary,
    query: &DefinitionQuery,
    needle: Option<&str>,
) -> bool {
    needle.is_none_or(|n| matches_text(summary, n))
        && query
            .name
            .as_deref()
            .is_none_or(|wanted| same_name(summary.name.as_deref(), wanted))
        && query
            .definition_id
            .as_deref()
            .is_none_or(|id| summary.definition_id == id)
}

/// The page a caller asked for, held to [`PageRequest::MAX_LIMIT`] even when built by hand.
fn capped(page: PageRequest) -> PageRequest {
    PageRequest::new(page.offset, page.limit)
}

#[async_trait]
impl WorkflowDefinitionStore for InMemoryWorkflowBackend {
    async fn find(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        version: VersionOptions,
    ) -> Result<Option<Arc<WorkflowDefinition>>, WorkflowError> {
        Ok(self
            .tenants
            .read()
            .get(tenant)
            .and_then(|data| data.definitions.get(definition_id))
            .and_then(|versions| select(versions, version))
            .cloned())
    }

    async fn search(
        &self,
        tenant: &TenantId,
        query: &DefinitionQuery,
    ) -> Result<Page<DefinitionSummary>, WorkflowError> {
        let needle = text_needle(query.text.as_deref());
        let mut rows: Vec<DefinitionSummary> = {
            let tenants = self.tenants.read();
            let Some(data) = tenants.get(tenant) else {
                return Ok(capped(query.page).slice(Vec::new()));
            };
            data.definitions
                .values()
                .filter_map(|versions| select(versions, query.version))
                .map(|definition| definition.summary())
                .filter(|summary| summary_matches(summary, query, needle.as_deref()))
                .collect()
        };
        rows.sort_by_cached_key(|row| {
            (
                row.name.is_none(),
                row.name.as_deref().map(str::to_lowercase),
                row.name.clone(),
                row.definition_id.clone(),
            )
        });
        Ok(capped(query.page).slice(rows))
    }

    async fn versions(
        &self,
        tenant: &TenantId,
        definition_id: &str,
    ) -> Result<Vec<DefinitionSummary>, WorkflowError> {
        // Summarised where they are stored, not copied out first.
        Ok(self
            .tenants
            .read()
            .get(tenant)
            .and_then(|data| data.definitions.get(definition_id))
            .map(|versions| versions.values().map(|v| v.summary()).collect())
            .unwrap_or_default())
    }

    async fn find_version(
        &self,
        tenant: &TenantId,
        version_id: &str,
    ) -> Result<Option<Arc<WorkflowDefinition>>, WorkflowError> {
        Ok(self.tenants.read().get(tenant).and_then(|data| {
            data.definitions
                .values()
                .flat_map(|versions| versions.values())
                .find(|definition| definition.version_id() == Some(version_id))
                .cloned()
        }))
    }
}

fn instance_matches(
    instance: &WorkflowInstance,
    query: &InstanceQuery,
    needle: Option<&str>,
) -> bool {
    needle.is_none_or(|needle| {
        contains_text(
            [
                Some(instance.id()),
                instance.name(),
                instance.correlation_id(),
                instance.definition_id(),
            ],
            needle,
        )
    }) && query
        .correlation_id
        .as_deref()
        .is_none_or(|wanted| instance.correlation_id() == Some(wanted))
        && query
            .has_incidents
            .is_none_or(|wanted| (instance.incident_count() > 0) == wanted)
        && query
            .status
            .is_none_or(|status| instance.status() == status)
        && query
            .sub_status
            .is_none_or(|sub_status| instance.sub_status() == sub_status)
        && (query.definition_ids.is_empty()
            || instance
                .definition_id()
                .is_some_and(|id| query.definition_ids.iter().any(|wanted| wanted == id)))
        && query.time_range.is_none_or(|range| {
            instance
                .created_at()
                .is_some_and(|created| range.contains(created))
        })
        && query.updated_range.is_none_or(|range| {
            instance
                .updated_at()
                .is_some_and(|updated| range.contains(updated))
        })
}

/// Newest first; instances without a creation time last; then by id.
fn newest_first(
    instance: &WorkflowInstance,
) -> (bool, std::cmp::Reverse<Option<DateTime<Utc>>>, String) {
    let created = instance.created_at();
    (
        created.is_none(),
        std::cmp::Reverse(created),
        instance.id().to_owned(),
    )
}

#[async_trait]
impl WorkflowInstanceStore for InMemoryWorkflowBackend {
    async fn find(
        &self,
        tenant: &TenantId,
        instance_id: &str,
    ) -> Result<Option<WorkflowInstance>, WorkflowError> {
        Ok(self
            .tenants
            .read()
            .get(tenant)
            .and_then(|data| data.instances.get(instance_id))
            .cloned())
    }

    async fn search(
        &self,
        tenant: &TenantId,
        query: &InstanceQuery,
    ) -> Result<Page<WorkflowInstance>, WorkflowError> {
        let needle = text_needle(query.text.as_deref());
        let mut rows: Vec<WorkflowInstance> = {
            let tenants = self.tenants.read();
            let Some(data) = tenants.get(tenant) else {
                return Ok(capped(query.page).slice(Vec::new()));
            };
            data.instances
                .values()
                .filter(|instance| instance_matches(instance, query, needle.as_deref()))
                .cloned()
                .collect()
        };
        rows.sort_by_cached_key(newest_first);
        Ok(capped(query.page).slice(rows))
    }
}

#[async_trait]
impl ExecutionRecordStore for InMemoryWorkflowBackend {
    /// The records inserted for the instance; when none were, the `activityExecutionRecords`
    /// its document carries (as a host attaches them from Elsa's API).
    async fn activity_executions(
        &self,
        tenant: &TenantId,
        instance_id: &str,
    ) -> Result<Vec<ActivityExecutionRecord>, WorkflowError> {
        let tenants = self.tenants.read();
        let Some(data) = tenants.get(tenant) else {
            return Ok(Vec::new());
        };
        if let Some(records) = data.executions.get(instance_id).filter(|r| !r.is_empty()) {
            // Paths name each record's place in the list, as the Elsa Server backend's do.
            let mut records = records.clone();
            for (index, record) in records.iter_mut().enumerate() {
                record.path = format!("$.items[{index}]");
            }
            return Ok(records);
        }
        Ok(data
            .instances
            .get(instance_id)
            .map(|instance| {
                instance
                    .execution_records()
                    .into_iter()
                    .filter(|record| record.source == ExecutionRecordSource::ExecutionRecord)
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn execution_log(
        &self,
        tenant: &TenantId,
        instance_id: &str,
        page: PageRequest,
    ) -> Result<Page<ExecutionLogEntry>, WorkflowError> {
        let entries = self
            .tenants
            .read()
            .get(tenant)
            .and_then(|data| data.execution_logs.get(instance_id))
            .cloned()
            .unwrap_or_default();
        Ok(capped(page).slice(entries))
    }

    /// Whether records or a log were inserted for any of the tenant's instances, or any
    /// instance document carries Elsa's activity execution records.
    async fn keeps_execution_records(&self, tenant: &TenantId) -> Result<bool, WorkflowError> {
        Ok(self.tenants.read().get(tenant).is_some_and(|data| {
            data.executions.values().any(|records| !records.is_empty())
                || data.execution_logs.values().any(|log| !log.is_empty())
                || data.instances.values().any(|instance| {
                    instance
                        .execution_records()
                        .iter()
                        .any(|record| record.source == ExecutionRecordSource::ExecutionRecord)
                })
        }))
    }
}

/// Whether an incident of an instance of `definition_id` passes the query's filters (all
/// but `instance_id`, which picks the instances); `needle` is the query's text, lowercased.
fn incident_matches(
    query: &IncidentQuery,
    definition_id: Option<&str>,
    incident: &crate::Incident,
    needle: Option<&str>,
) -> bool {
    needle.is_none_or(|needle| incident_has_text(incident, needle))
        && (query.definition_ids.is_empty()
            || definition_id
                .is_some_and(|id| query.definition_ids.iter().any(|wanted| wanted == id)))
        && query.activity_type.as_deref().is_none_or(|wanted| {
            incident
                .activity_type
                .as_deref()
                .is_some_and(|own| own.eq_ignore_ascii_case(wanted.trim()))
        })
        && query.time_range.is_none_or(|range| {
            incident
                .timestamp
                .is_some_and(|timestamp| range.contains(timestamp))
        })
}

/// Whether `needle` (lowercased) is in the incident's message, its exception's type or
/// message, or the message of an exception inside it.
fn incident_has_text(incident: &crate::Incident, needle: &str) -> bool {
    let exception = incident.exception.as_ref();
    let inner_messages = std::iter::successors(exception.and_then(|e| e.inner.as_deref()), |e| {
        e.inner.as_deref()
    })
    .map(|inner| inner.message.as_deref());
    contains_text(
        [
            incident.message.as_deref(),
            exception.and_then(|e| e.type_name.as_deref()),
            exception.and_then(|e| e.message.as_deref()),
        ]
        .into_iter()
        .chain(inner_messages),
        needle,
    )
}

/// Whether the incidents of `instance` are searched at all: the query names no instance, or
/// names this one.
fn instance_wanted(instance: &WorkflowInstance, query: &IncidentQuery) -> bool {
    query
        .instance_id
        .as_deref()
        .is_none_or(|wanted| instance.id() == wanted)
}

/// Newest first (incidents without a time last), then by instance id.
pub(crate) fn sort_incidents(incidents: &mut [InstanceIncident]) {
    incidents.sort_by(|a, b| {
        let time = |i: &InstanceIncident| i.incident.timestamp;
        (
            time(a).is_none(),
            std::cmp::Reverse(time(a)),
            &a.instance_id,
        )
            .cmp(&(
                time(b).is_none(),
                std::cmp::Reverse(time(b)),
                &b.instance_id,
            ))
    });
}

/// Keeps the incidents of `instance` that `query` matches.
pub(crate) fn matching_incidents(
    instance: &WorkflowInstance,
    query: &IncidentQuery,
) -> Vec<InstanceIncident> {
    if !instance_wanted(instance, query) {
        return Vec::new();
    }
    let needle = text_needle(query.text.as_deref());
    instance
        .incidents()
        .into_iter()
        .filter(|incident| {
            incident_matches(query, instance.definition_id(), incident, needle.as_deref())
        })
        .map(|incident| InstanceIncident {
            instance_id: instance.id().to_owned(),
            definition_id: instance.definition_id().map(str::to_owned),
            definition_version: instance.definition_version(),
            incident,
        })
        .collect()
}

#[async_trait]
impl IncidentStore for InMemoryWorkflowBackend {
    async fn search(
        &self,
        tenant: &TenantId,
        query: &IncidentQuery,
    ) -> Result<IncidentSearch, WorkflowError> {
        let (mut found, instances_read) = {
            let tenants = self.tenants.read();
            let instances: Vec<&WorkflowInstance> = tenants
                .get(tenant)
                .map(|data| {
                    data.instances
                        .values()
                        .filter(|i| i.incident_count() > 0 && instance_wanted(i, query))
                        .collect()
                })
                .unwrap_or_default();
            let found: Vec<InstanceIncident> = instances
                .iter()
                .flat_map(|instance| matching_incidents(instance, query))
                .collect();
            (found, instances.len())
        };
        sort_incidents(&mut found);
        Ok(IncidentSearch {
            incidents: capped(query.page).slice(found),
            instances_read,
            complete: true,
        })
    }
}

#[async_trait]
impl ActivityCatalog for InMemoryWorkflowBackend {
    async fn list(&self, tenant: &TenantId) -> Result<Arc<[ActivityDescriptor]>, WorkflowError> {
        Ok(self
            .tenants
            .read()
            .get(tenant)
            .map_or_else(|| Arc::from([]), |data| Arc::clone(&data.catalog)))
    }
}

#[async_trait]
impl WorkflowDefinitionWriter for InMemoryWorkflowBackend {
    /// Stores `definition` as version 1 of its `definitionId` under a new version id, marked
    /// latest; it is published when the document says so.
    async fn create(
        &self,
        tenant: &TenantId,
        mut definition: WorkflowDefinition,
    ) -> Result<DefinitionVersionRef, WorkflowError> {
        let definition_id = required_definition_id(&definition)?;
        definition.set_version(1);
        definition.set_version_id(new_version_id());
        definition.set_latest(true);
        let mut tenants = self.tenants.write();
        let definitions = &mut tenants.entry(tenant.clone()).or_default().definitions;
        if definitions
            .get(&definition_id)
            .is_some_and(|v| !v.is_empty())
        {
            return Err(WorkflowError::Conflict {
                message: format!("workflow definition '{definition_id}' already exists"),
            });
        }
        let stored = version_ref(&definition);
        let versions = definitions.entry(definition_id).or_default();
        versions.insert(1, Arc::new(definition));
        normalise_flags(versions);
        Ok(stored)
    }

    /// Stores `definition` as the next version after `expected_version` under a new version
    /// id, marked latest (the previous version no longer is); when the document says it is
    /// published, it becomes the only published version. The check and the write happen
    /// under one lock, so of concurrent updates from the same baseline exactly one wins.
    async fn update(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        expected_version: i32,
        mut definition: WorkflowDefinition,
    ) -> Result<DefinitionVersionRef, WorkflowError> {
        let given = definition.definition_id();
        if !given.is_empty() && given != definition_id {
            return Err(json::error_at(
                &[Seg::Key("definitionId".into())],
                format!(
                    "the document's definitionId '{given}' is not the definition being \
                     updated, '{definition_id}'"
                ),
            )
            .into());
        }
        let mut tenants = self.tenants.write();
        let versions = tenants
            .get_mut(tenant)
            .and_then(|data| data.definitions.get_mut(definition_id))
            .filter(|versions| !versions.is_empty())
            .ok_or_else(|| WorkflowError::NotFound {
                what: format!("workflow definition '{definition_id}'"),
            })?;
        let current = versions.keys().next_back().copied().unwrap_or_default();
        if current != expected_version {
            return Err(WorkflowError::Conflict {
                message: format!(
                    "workflow definition '{definition_id}' is at version {current}, not the \
                     expected version {expected_version}"
                ),
            });
        }
        let version = current
            .checked_add(1)
            .ok_or_else(|| WorkflowError::Conflict {
                message: format!(
                    "workflow definition '{definition_id}' has no version after {current}"
                ),
            })?;
        definition.set_definition_id(definition_id);
        definition.set_version(version);
        definition.set_version_id(new_version_id());
        definition.set_latest(true);
        let stored = version_ref(&definition);
        versions.insert(version, Arc::new(definition));
        normalise_flags(versions);
        Ok(stored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{TimeRange, WorkflowStatus, WorkflowSubStatus};
    use serde_json::json;

    fn tenant(name: &str) -> TenantId {
        TenantId::new(name)
    }

    fn definition(id: &str, version: i32, name: &str, published: bool) -> WorkflowDefinition {
        WorkflowDefinition::from_value(json!({
            "definitionId": id, "version": version, "name": name, "isPublished": published,
            "root": {"id": "Flowchart1", "type": "Elsa.Flowchart", "activities": []}
        }))
        .expect("valid definition")
    }

    fn instance(id: &str, definition: &str, sub_status: &str, created: &str) -> WorkflowInstance {
        let status = if matches!(sub_status, "Finished" | "Faulted" | "Cancelled") {
            "Finished"
        } else {
            "Running"
        };
        WorkflowInstance::from_value(json!({
            "id": id, "definitionId": definition, "status": status, "subStatus": sub_status,
            "createdAt": created
        }))
        .expect("valid instance")
    }

    #[tokio::test]
    async fn versions_are_found_by_option_and_flags_are_kept_consistent() {
        let backend = InMemoryWorkflowBackend::new();
        let acme = tenant("acme");
        backend
            .insert_definition(&acme, definition("d", 1, "D", true))
            .expect("v1");
        backend
            .insert_definition(&acme, definition("d", 3, "D", true))
            .expect("v3");
        backend
            .insert_definition(&acme, definition("d", 2, "D", false))
            .expect("v2");
        let find = |options| backend_find(&backend, &acme, "d", options);
        assert_eq!(find(VersionOptions::Latest).await, Some(3));
        assert_eq!(find(VersionOptions::Published).await, Some(3));
        assert_eq!(find(VersionOptions::Specific(2)).await, Some(2));
        assert_eq!(find(VersionOptions::Specific(9)).await, None);
        let versions = backend.definition_versions(&acme, "d");
        let flags: Vec<_> = versions
            .iter()
            .map(|d| (d.version(), d.is_latest(), d.is_published()))
            .collect();
        assert_eq!(
            flags,
            [(1, false, false), (2, false, false), (3, true, true)]
        );
        assert!(versions.iter().all(|d| d.version_id().is_some()));
        let duplicate = backend
            .insert_definition(&acme, definition("d", 2, "again", false))
            .expect_err("duplicate version");
        assert!(matches!(duplicate, WorkflowError::Conflict { .. }));
        let unnamed = WorkflowDefinition::from_value(json!({"root": {"type": "Elsa.WriteLine"}}))
            .expect("valid draft");
        let error = backend
            .insert_definition(&acme, unnamed)
            .expect_err("no definition id");
        assert!(
            matches!(&error, WorkflowError::Parse(p) if p.path == "$.definitionId"),
            "{error}"
        );
    }

    async fn backend_find(
        backend: &InMemoryWorkflowBackend,
        tenant: &TenantId,
        id: &str,
        options: VersionOptions,
    ) -> Option<i32> {
        WorkflowDefinitionStore::find(backend, tenant, id, options)
            .await
            .expect("find")
            .map(|d| d.version())
    }

    #[tokio::test]
    async fn published_lookup_skips_unpublished_latest() {
        let backend = InMemoryWorkflowBackend::new();
        let acme = tenant("acme");
        backend
            .insert_definition(&acme, definition("d", 1, "D", true))
            .expect("v1");
        backend
            .insert_definition(&acme, definition("d", 2, "D", false))
            .expect("v2");
        backend
            .insert_definition(&acme, definition("draft", 1, "Draft", false))
            .expect("draft");
        assert_eq!(
            backend_find(&backend, &acme, "d", VersionOptions::Published).await,
            Some(1)
        );
        assert_eq!(
            backend_find(&backend, &acme, "draft", VersionOptions::Published).await,
            None
        );
        let published = WorkflowDefinitionStore::search(
            &backend,
            &acme,
            &DefinitionQuery {
                version: VersionOptions::Published,
                ..DefinitionQuery::default()
            },
        )
        .await
        .expect("search");
        let rows: Vec<_> = published
            .items
            .iter()
            .map(|r| (r.definition_id.as_str(), r.version, r.is_latest))
            .collect();
        assert_eq!(rows, [("d", 1, false)]);
    }

    #[tokio::test]
    async fn search_matches_text_case_insensitively_and_orders_by_name_then_id() {
        let backend = InMemoryWorkflowBackend::new();
        let acme = tenant("acme");
        for (id, name) in [
            ("b", "beta"),
            ("a2", "Alpha"),
            ("a1", "alpha"),
            ("z", "Zulu"),
            ("s2", "Same"),
            ("s1", "Same"),
        ] {
            backend
                .insert_definition(&acme, definition(id, 1, name, false))
                .expect("insert");
        }
        let mut described = definition("q", 1, "Quiet", false);
        described.set_description(Some("Sends the ALPHA report"));
        backend.insert_definition(&acme, described).expect("insert");
        let search = |text: Option<&str>, page: PageRequest| {
            let query = DefinitionQuery {
                text: text.map(str::to_owned),
                page,
                ..DefinitionQuery::default()
            };
            let backend = &backend;
            let acme = &acme;
            async move {
                WorkflowDefinitionStore::search(backend, acme, &query)
                    .await
                    .expect("search")
            }
        };
        let all = search(None, PageRequest::default()).await;
        let ids: Vec<_> = all.items.iter().map(|r| r.definition_id.as_str()).collect();
        // Names compare without case first, then as written; equal names by id.
        assert_eq!(ids, ["a2", "a1", "b", "q", "s1", "s2", "z"]);
        let alpha = search(Some("ALPHA"), PageRequest::default()).await;
        let ids: Vec<_> = alpha
            .items
            .iter()
            .map(|r| r.definition_id.as_str())
            .collect();
        assert_eq!(ids, ["a2", "a1", "q"]);
        let by_id = search(Some("Z"), PageRequest::default()).await;
        assert_eq!(by_id.total, 1);
        let second_page = search(None, PageRequest::new(2, 2)).await;
        let ids: Vec<_> = second_page
            .items
            .iter()
            .map(|r| r.definition_id.as_str())
            .collect();
        assert_eq!(ids, ["b", "q"]);
        assert_eq!(second_page.total, 7);
        assert!(second_page.has_more());
        let oversized = search(
            None,
            PageRequest {
                offset: 0,
                limit: usize::MAX,
            },
        )
        .await;
        assert_eq!(oversized.limit, PageRequest::MAX_LIMIT);
    }

    #[tokio::test]
    async fn instance_search_filters_and_pages_newest_first() {
        let backend = InMemoryWorkflowBackend::new();
        let acme = tenant("acme");
        let rows = [
            ("i1", "orders", "Finished", "2025-01-01T10:00:00Z"),
            ("i2", "orders", "Faulted", "2025-01-02T10:00:00Z"),
            ("i3", "billing", "Suspended", "2025-01-03T10:00:00Z"),
            ("i4", "orders", "Faulted", "2025-01-04T10:00:00Z"),
        ];
        for (id, definition, sub_status, created) in rows {
            assert!(
                backend
                    .insert_instance(&acme, instance(id, definition, sub_status, created))
                    .is_none()
            );
        }
        let search = |query: InstanceQuery| {
            let backend = &backend;
            let acme = &acme;
            async move {
                let page = WorkflowInstanceStore::search(backend, acme, &query)
                    .await
                    .expect("search");
                page.items
                    .iter()
                    .map(|i| i.id().to_owned())
                    .collect::<Vec<_>>()
            }
        };
        assert_eq!(
            search(InstanceQuery::default()).await,
            ["i4", "i3", "i2", "i1"]
        );
        assert_eq!(
            search(InstanceQuery {
                sub_status: Some(WorkflowSubStatus::Faulted),
                ..InstanceQuery::default()
            })
            .await,
            ["i4", "i2"]
        );
        assert_eq!(
            search(InstanceQuery {
                status: Some(WorkflowStatus::Running),
                ..InstanceQuery::default()
            })
            .await,
            ["i3"]
        );
        assert_eq!(
            search(InstanceQuery {
                definition_ids: vec!["billing".into(), "nope".into()],
                ..InstanceQuery::default()
            })
            .await,
            ["i3"]
        );
        let range = TimeRange {
            from: "2025-01-02T00:00:00Z".parse().expect("time"),
            to: "2025-01-03T10:00:00Z".parse().expect("time"),
        };
        assert_eq!(
            search(InstanceQuery {
                time_range: Some(range),
                ..InstanceQuery::default()
            })
            .await,
            ["i3", "i2"]
        );
        assert_eq!(
            search(InstanceQuery {
                page: PageRequest::new(1, 2),
                ..InstanceQuery::default()
            })
            .await,
            ["i3", "i2"]
        );
        let replaced = backend.insert_instance(
            &acme,
            instance("i1", "orders", "Faulted", "2025-01-01T10:00:00Z"),
        );
        assert_eq!(
            replaced.map(|i| i.sub_status()),
            Some(WorkflowSubStatus::Finished)
        );
    }

    #[tokio::test]
    async fn writer_creates_and_updates_with_compare_and_set() {
        let backend = InMemoryWorkflowBackend::new();
        let acme = tenant("acme");
        let created = backend
            .create(&acme, definition("d", 7, "D", false))
            .await
            .expect("create");
        assert_eq!((created.definition_id.as_str(), created.version), ("d", 1));
        assert_eq!(created.version_id.len(), 16);
        let again = backend
            .create(&acme, definition("d", 1, "D", false))
            .await
            .expect_err("exists");
        assert!(matches!(again, WorkflowError::Conflict { .. }));

        let updated = backend
            .update(&acme, "d", 1, definition("", 1, "D v2", true))
            .await
            .expect("update");
        assert_eq!(updated.version, 2);
        assert_ne!(updated.version_id, created.version_id);
        let stale = backend
            .update(&acme, "d", 1, definition("d", 1, "D v2 again", false))
            .await
            .expect_err("stale");
        assert!(matches!(stale, WorkflowError::Conflict { .. }), "{stale}");
        let mismatched = backend
            .update(&acme, "d", 2, definition("other", 1, "X", false))
            .await
            .expect_err("other id");
        assert!(
            matches!(mismatched, WorkflowError::Parse(_)),
            "{mismatched}"
        );
        let missing = backend
            .update(&acme, "nope", 1, definition("nope", 1, "X", false))
            .await
            .expect_err("missing");
        assert!(matches!(missing, WorkflowError::NotFound { .. }));

        let versions = backend.definition_versions(&acme, "d");
        let flags: Vec<_> = versions
            .iter()
            .map(|d| (d.version(), d.is_latest(), d.definition_id().to_owned()))
            .collect();
        assert_eq!(
            flags,
            [(1, false, "d".to_owned()), (2, true, "d".to_owned())]
        );
        let latest = WorkflowDefinitionStore::find(&backend, &acme, "d", VersionOptions::Latest)
            .await
            .expect("find")
            .expect("exists");
        assert_eq!(latest.name(), Some("D v2"));
        assert_eq!(latest.version_id(), Some(updated.version_id.as_str()));
    }

    /// `find` hands out the stored version itself, not a copy; a later write that changes
    /// its flags replaces the stored one and leaves what a reader holds as it was read.
    #[tokio::test]
    async fn a_found_version_is_shared_and_later_writes_leave_it_as_read() {
        let backend = InMemoryWorkflowBackend::new();
        let acme = tenant("acme");
        backend
            .create(&acme, definition("d", 1, "D", true))
            .await
            .expect("create");
        let find = || WorkflowDefinitionStore::find(&backend, &acme, "d", VersionOptions::Latest);
        let (first, second) = (
            find().await.unwrap().unwrap(),
            find().await.unwrap().unwrap(),
        );
        assert!(Arc::ptr_eq(&first, &second), "one stored version, shared");
        backend
            .update(&acme, "d", 1, definition("d", 1, "D v2", false))
            .await
            .expect("update");
        assert!(first.is_latest(), "what a reader holds is what it read");
        let stored =
            WorkflowDefinitionStore::find(&backend, &acme, "d", VersionOptions::Specific(1))
                .await
                .unwrap()
                .unwrap();
        assert!(
            !stored.is_latest(),
            "the store's version 1 is no longer the latest"
        );
        assert!(stored.is_published());
    }

    #[tokio::test]
    async fn tenants_are_isolated() {
        let backend = InMemoryWorkflowBackend::new();
        let (acme, globex) = (tenant("acme"), tenant("globex"));
        backend
            .insert_definition(&acme, definition("d", 1, "D", true))
            .expect("insert");
        backend.insert_instance(
            &acme,
            instance("i", "d", "Finished", "2025-01-01T00:00:00Z"),
        );
        backend.set_catalog(&acme, vec![ActivityDescriptor::new("Elsa.WriteLine")]);

        assert_eq!(
            backend_find(&backend, &globex, "d", VersionOptions::Latest).await,
            None
        );
        assert!(
            WorkflowInstanceStore::find(&backend, &globex, "i")
                .await
                .expect("find")
                .is_none()
        );
        assert!(
            ActivityCatalog::list(&backend, &globex)
                .await
                .expect("list")
                .is_empty()
        );
        let listed =
            WorkflowDefinitionStore::search(&backend, &globex, &DefinitionQuery::default())
                .await
                .expect("search");
        assert_eq!(listed.total, 0);
        let update = backend
            .update(&globex, "d", 1, definition("d", 1, "D", false))
            .await
            .expect_err("not globex's");
        // Exactly what a definition that never existed gives.
        assert_eq!(
            update,
            WorkflowError::NotFound {
                what: "workflow definition 'd'".into()
            }
        );
        // The same id is free in another tenant.
        backend
            .create(&globex, definition("d", 1, "Globex D", false))
            .await
            .expect("separate namespace");
        assert_eq!(
            backend_find(&backend, &acme, "d", VersionOptions::Latest).await,
            Some(1)
        );
        assert_eq!(
            ActivityCatalog::list(&backend, &acme)
                .await
                .expect("list")
                .len(),
            1
        );
    }
}
