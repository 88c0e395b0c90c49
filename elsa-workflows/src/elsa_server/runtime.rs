//! What Elsa recorded while running instances, read over its API: activity execution
//! records (`activity-executions/list`), the execution log (`workflow-instances/{id}/journal`)
//! and incidents (the `incidents` of the workflow states of instances that have any).

use async_trait::async_trait;
use reqwest::Method;
use serde_json::{Value, json};

use super::{ElsaServerBackend, elsa_timestamp, paged_list};
use crate::json::{self as js, Seg};
use crate::memory::{matching_incidents, sort_incidents};
use crate::{
    ActivityExecutionRecord, ExecutionLogEntry, ExecutionRecordStore, IncidentQuery,
    IncidentSearch, IncidentStore, Page, PageRequest, ParseError, TenantId, WorkflowError,
    WorkflowInstanceStore,
};

/// How many instances with incidents one incident search reads at most: Elsa keeps incidents
/// in each instance's workflow state, so every instance is one more request.
pub const INCIDENT_SCAN_LIMIT: usize = 100;

/// Points an error in item `index` of a list answer at that item.
fn in_item(mut error: ParseError, index: usize) -> ParseError {
    let inner = error.path.trim_start_matches('$').to_owned();
    error.path = format!("$.items[{index}]{inner}");
    error
}

/// Elsa's timestamp filter for "updated at or after `from`", with the midnight adjustment
/// of the instance search's time ranges (Elsa reads a midnight timestamp as a whole day).
fn updated_since(from: chrono::DateTime<chrono::Utc>) -> Value {
    use chrono::Timelike;
    let midnight = from.num_seconds_from_midnight() == 0 && from.nanosecond() < 100;
    let (operator, at) = if midnight {
        ("GreaterThan", from - chrono::TimeDelta::nanoseconds(100))
    } else {
        ("GreaterThanOrEqual", from)
    };
    json!({"column": "UpdatedAt", "operator": operator, "timestamp": elsa_timestamp(at)})
}

impl ElsaServerBackend {
    /// The incidents of one instance that `query` matches: Elsa's instance list cannot be
    /// filtered by instance id, so the instance is read directly.
    async fn incidents_of(
        &self,
        tenant: &TenantId,
        instance_id: &str,
        query: &IncidentQuery,
        window: PageRequest,
    ) -> Result<IncidentSearch, WorkflowError> {
        let instance = WorkflowInstanceStore::find(self, tenant, instance_id).await?;
        let with_incidents = instance.filter(|i| i.incident_count() > 0);
        let mut found = with_incidents
            .as_ref()
            .map(|instance| matching_incidents(instance, query))
            .unwrap_or_default();
        sort_incidents(&mut found);
        Ok(IncidentSearch {
            incidents: window.slice(found),
            instances_read: usize::from(with_incidents.is_some()),
            complete: true,
        })
    }
}

#[async_trait]
impl ExecutionRecordStore for ElsaServerBackend {
    /// `GET activity-executions/list?workflowInstanceId=…` (Elsa orders them by start time).
    async fn activity_executions(
        &self,
        tenant: &TenantId,
        instance_id: &str,
    ) -> Result<Vec<ActivityExecutionRecord>, WorkflowError> {
        if !self.serves(tenant) || instance_id.is_empty() {
            return Ok(Vec::new());
        }
        let what = format!("listing the activity executions of workflow instance '{instance_id}'");
        let mut url = self.http.url(&["activity-executions", "list"]);
        url.query_pairs_mut()
            .append_pair("workflowInstanceId", instance_id);
        let answer = self.http.send(&what, Method::GET, url, None).await?;
        if !answer.status.is_success() {
            return Err(self.http.failure(&what, &answer));
        }
        let (items, _) = paged_list(self.http.json(&what, &answer)?)
            .map_err(|e| self.http.invalid_answer(&what, e))?;
        let mut records = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            // The filter is Elsa's; a record of another instance is never shown as this one's.
            if item
                .get("workflowInstanceId")
                .and_then(Value::as_str)
                .is_some_and(|id| id != instance_id)
            {
                continue;
            }
            let mut record = ActivityExecutionRecord::from_json(item)
                .map_err(|e| self.http.invalid_answer(&what, in_item(e, index)))?;
            record.path = format!("$.items[{index}]");
            records.push(record);
        }
        records.sort_by_key(|record| (record.started_at.is_none(), record.started_at));
        Ok(records)
    }

    /// `GET workflow-instances/{id}/journal?skip=…&take=…` (ordered by sequence).
    async fn execution_log(
        &self,
        tenant: &TenantId,
        instance_id: &str,
        page: PageRequest,
    ) -> Result<Page<ExecutionLogEntry>, WorkflowError> {
        let window = PageRequest::new(page.offset, page.limit);
        if !self.serves(tenant) || !super::client::is_one_segment(instance_id) {
            return Ok(window.slice(Vec::new()));
        }
        let what = format!("reading the execution log of workflow instance '{instance_id}'");
        let mut url = self
            .http
            .url(&["workflow-instances", instance_id, "journal"]);
        url.query_pairs_mut()
            .append_pair("skip", &window.offset.to_string())
            .append_pair("take", &window.limit.to_string());
        let answer = self.http.send(&what, Method::GET, url, None).await?;
        if !answer.status.is_success() {
            return Err(self.http.failure(&what, &answer));
        }
        let (items, total) = paged_list(self.http.json(&what, &answer)?)
            .map_err(|e| self.http.invalid_answer(&what, e))?;
        let entries = items
            .iter()
            .take(window.limit)
            .enumerate()
            .map(|(index, item)| {
                ExecutionLogEntry::from_json(item)
                    .map_err(|e| self.http.invalid_answer(&what, in_item(e, index)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Page {
            items: entries,
            total,
            offset: window.offset,
            limit: window.limit,
        })
    }
}

#[async_trait]
impl IncidentStore for ElsaServerBackend {
    /// `POST workflow-instances` with `hasIncidents: true` (most recently updated first, at
    /// most [`INCIDENT_SCAN_LIMIT`]), then each instance's workflow state for its incidents;
    /// for one instance (`instance_id`), only that instance's state. The text and the other
    /// incident filters are applied here (Elsa's API cannot filter incidents).
    async fn search(
        &self,
        tenant: &TenantId,
        query: &IncidentQuery,
    ) -> Result<IncidentSearch, WorkflowError> {
        let window = PageRequest::new(query.page.offset, query.page.limit);
        if !self.serves(tenant) {
            return Ok(IncidentSearch {
                incidents: window.slice(Vec::new()),
                instances_read: 0,
                complete: true,
            });
        }
        if let Some(instance_id) = &query.instance_id {
            return self.incidents_of(tenant, instance_id, query, window).await;
        }
        let what = "listing workflow instances with incidents";
        let mut body = json!({
            "hasIncidents": true,
            "orderBy": "UpdatedAt",
            "orderDirection": "Descending",
            "page": 0,
            "pageSize": INCIDENT_SCAN_LIMIT,
        });
        if !query.definition_ids.is_empty() {
            body["definitionIds"] = json!(query.definition_ids);
        }
        // An instance holding an incident of the range was updated at or after its start;
        // the end cannot narrow instances (a later update keeps earlier incidents).
        if let Some(range) = &query.time_range {
            body["timestampFilters"] = json!([updated_since(range.from)]);
        }
        let url = self.http.url(&["workflow-instances"]);
        let answer = self.http.send(what, Method::POST, url, Some(&body)).await?;
        if !answer.status.is_success() {
            return Err(self.http.failure(what, &answer));
        }
        let (rows, total) = paged_list(self.http.json(what, &answer)?)
            .map_err(|e| self.http.invalid_answer(what, e))?;
        let mut found = Vec::new();
        let mut read = 0;
        for (index, row) in rows.iter().take(INCIDENT_SCAN_LIMIT).enumerate() {
            let id = row
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
                .ok_or_else(|| {
                    let at = [
                        Seg::Key("items".into()),
                        Seg::Index(index),
                        Seg::Key("id".into()),
                    ];
                    self.http.invalid_answer(
                        what,
                        js::error_at(&at, "an instance summary needs an `id`"),
                    )
                })?;
            read += 1;
            // An instance deleted since the listing has no incidents any more.
            if let Some(instance) = WorkflowInstanceStore::find(self, tenant, id).await? {
                found.extend(matching_incidents(&instance, query));
            }
        }
        sort_incidents(&mut found);
        Ok(IncidentSearch {
            incidents: window.slice(found),
            instances_read: read,
            complete: read >= total,
        })
    }
}
