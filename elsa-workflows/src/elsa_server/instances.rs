//! Instances over Elsa's REST API: one by id, and the instance list with its filters
//! (search term, correlation id, incidents, statuses, definitions, and creation and update
//! times in Elsa's timestamps, its whole-day reading of midnight included).

use async_trait::async_trait;
use chrono::{DateTime, Timelike, Utc};
use reqwest::Method;
use serde_json::{Map, Value, json};

use super::ElsaServerBackend;
use crate::{
    InstanceQuery, Page, PageRequest, TenantId, TimeRange, WorkflowError, WorkflowInstance,
    WorkflowInstanceStore,
};

/// A timestamp as Elsa's `DateTimeOffset` reads it, to its 100 ns precision.
pub(super) fn elsa_timestamp(instant: DateTime<Utc>) -> String {
    format!(
        "{}.{:07}Z",
        instant.format("%Y-%m-%dT%H:%M:%S"),
        instant.nanosecond() % 1_000_000_000 / 100
    )
}

/// Elsa's timestamp filters for "`column` inside `range`" (both ends inclusive); `column` is
/// one of Elsa's instance timestamp columns (`CreatedAt`, `UpdatedAt`).
///
/// Elsa reads a filter timestamp at midnight as a whole day (`<= 2025-01-03T00:00` would
/// include all of January 3rd), so an end at midnight is sent as the strict comparison with
/// the next (or previous) 100 ns tick, which Elsa compares exactly.
fn within(column: &str, range: &TimeRange) -> Vec<Value> {
    let tick = chrono::TimeDelta::nanoseconds(100);
    let midnight = |instant: DateTime<Utc>| {
        instant.num_seconds_from_midnight() == 0 && instant.nanosecond() < 100
    };
    let filter = |operator: &str, instant: DateTime<Utc>| json!({"column": column, "operator": operator, "timestamp": elsa_timestamp(instant)});
    let from = if midnight(range.from) {
        filter("GreaterThan", range.from - tick)
    } else {
        filter("GreaterThanOrEqual", range.from)
    };
    let to = if midnight(range.to) {
        filter("LessThan", range.to + tick)
    } else {
        filter("LessThanOrEqual", range.to)
    };
    vec![from, to]
}

#[async_trait]
impl WorkflowInstanceStore for ElsaServerBackend {
    async fn find(
        &self,
        tenant: &TenantId,
        instance_id: &str,
    ) -> Result<Option<WorkflowInstance>, WorkflowError> {
        if !self.serves(tenant) || !super::client::is_one_segment(instance_id) {
            return Ok(None);
        }
        let what = format!("reading workflow instance '{instance_id}'");
        let url = self.http.url(&["workflow-instances", instance_id]);
        self.http
            .get_optional(&what, url, WorkflowInstance::from_slice)
            .await
    }

    async fn search(
        &self,
        tenant: &TenantId,
        query: &InstanceQuery,
    ) -> Result<Page<WorkflowInstance>, WorkflowError> {
        let window = PageRequest::new(query.page.offset, query.page.limit);
        // Elsa ignores a blank correlation id (no filter at all), so the blank one it cannot
        // ask for is answered here: no instance it lists would have it.
        let blank_correlation = query
            .correlation_id
            .as_deref()
            .is_some_and(|id| id.trim().is_empty());
        if !self.serves(tenant) || blank_correlation {
            return Ok(window.slice(Vec::new()));
        }
        let mut filters = Map::new();
        if let Some(text) = query
            .text
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            filters.insert("searchTerm".into(), json!(text));
        }
        if let Some(correlation_id) = &query.correlation_id {
            filters.insert("correlationId".into(), json!(correlation_id));
        }
        if let Some(has_incidents) = query.has_incidents {
            filters.insert("hasIncidents".into(), json!(has_incidents));
        }
        if !query.definition_ids.is_empty() {
            filters.insert("definitionIds".into(), json!(query.definition_ids));
        }
        if let Some(status) = query.status {
            filters.insert("statuses".into(), json!([status.as_str()]));
        }
        if let Some(sub_status) = query.sub_status {
            filters.insert("subStatuses".into(), json!([sub_status.as_str()]));
        }
        let mut timestamps = Vec::new();
        if let Some(range) = &query.time_range {
            timestamps.extend(within("CreatedAt", range));
        }
        if let Some(range) = &query.updated_range {
            timestamps.extend(within("UpdatedAt", range));
        }
        if !timestamps.is_empty() {
            filters.insert("timestampFilters".into(), Value::Array(timestamps));
        }
        // Elsa's default order is what the trait promises: newest first.
        let (rows, total) = self
            .paged("listing workflow instances", window, |page, size| {
                let mut body = filters.clone();
                body.insert("page".into(), json!(page));
                body.insert("pageSize".into(), json!(size));
                (
                    Method::POST,
                    self.http.url(&["workflow-instances"]),
                    Some(Value::Object(body)),
                )
            })
            .await?;
        let items = rows
            .into_iter()
            .enumerate()
            .map(|(i, row)| {
                WorkflowInstance::from_value(row).map_err(|mut error| {
                    // Name the row inside Elsa's answer.
                    let inner = error.path.trim_start_matches('$');
                    error.path = format!("$.items[{i}]{inner}");
                    self.http
                        .invalid_answer("listing workflow instances", error)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Page {
            items,
            total,
            offset: window.offset,
            limit: window.limit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().expect("a timestamp")
    }

    #[test]
    fn time_ranges_avoid_elsas_whole_day_reading_of_midnight() {
        let range = TimeRange {
            from: at("2025-01-02T08:30:00.123456789Z"),
            to: at("2025-01-03T17:00:00Z"),
        };
        assert_eq!(
            within("CreatedAt", &range),
            [
                json!({"column": "CreatedAt", "operator": "GreaterThanOrEqual", "timestamp": "2025-01-02T08:30:00.1234567Z"}),
                json!({"column": "CreatedAt", "operator": "LessThanOrEqual", "timestamp": "2025-01-03T17:00:00.0000000Z"}),
            ]
        );
        let days = TimeRange {
            from: at("2025-01-02T00:00:00Z"),
            to: at("2025-01-03T00:00:00Z"),
        };
        assert_eq!(
            within("UpdatedAt", &days),
            [
                json!({"column": "UpdatedAt", "operator": "GreaterThan", "timestamp": "2025-01-01T23:59:59.9999999Z"}),
                json!({"column": "UpdatedAt", "operator": "LessThan", "timestamp": "2025-01-03T00:00:00.0000001Z"}),
            ]
        );
    }
}
