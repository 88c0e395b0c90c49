//! Definitions over Elsa's REST API: reading them by id and version, the definition list,
//! the activity descriptors, and saving an applied proposal (the writer's compare-and-set).

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::{Method, StatusCode, Url};
use serde_json::{Map, Value, json};

use super::{ElsaServerBackend, IDS_PER_REQUEST, paged_list};
use crate::json::{self as js, Seg};
use crate::memory::same_name;
use crate::{
    ActivityCatalog, ActivityDescriptor, DefinitionQuery, DefinitionSummary, DefinitionVersionRef,
    Page, PageRequest, ParseError, TenantId, VersionOptions, WorkflowDefinition,
    WorkflowDefinitionStore, WorkflowDefinitionWriter, WorkflowError, builtin_descriptor,
};

/// How many rows of Elsa's definition list a search by name reads at most: Elsa's list has no
/// name filter, so the rows its search term narrows to are read and matched here.
pub const NAME_SCAN_LIMIT: usize = 1_000;

/// What a definition search request is called in errors.
const LISTING: &str = "listing workflow definitions";

impl ElsaServerBackend {
    /// The graphs of the versions `ids` names, by version id.
    async fn definitions_by_id(&self, ids: &[String]) -> Result<Map<String, Value>, WorkflowError> {
        let what = "reading workflow definitions by version id";
        let mut found = Map::new();
        for chunk in ids.chunks(IDS_PER_REQUEST) {
            let mut url = self.http.url(&["workflow-definitions", "many-by-id"]);
            {
                let mut query = url.query_pairs_mut();
                for id in chunk {
                    query.append_pair("ids", id);
                }
            }
            let answer = self.http.send(what, Method::GET, url, None).await?;
            if !answer.status.is_success() {
                return Err(self.http.failure(what, &answer));
            }
            let (items, _) = paged_list(self.http.json(what, &answer)?)
                .map_err(|e| self.http.invalid_answer(what, e))?;
            for item in items {
                if let Some(id) = item.get("id").and_then(Value::as_str) {
                    found.insert(id.to_owned(), item);
                }
            }
        }
        Ok(found)
    }

    /// The rows of Elsa's definition list (already narrowed by Elsa) that a search by name
    /// keeps: up to [`NAME_SCAN_LIMIT`] rows are read, page by page, and those whose name is
    /// `wanted` are kept in Elsa's order.
    async fn rows_named(
        &self,
        wanted: &str,
        request: impl Fn(usize, usize) -> (Method, Url, Option<Value>),
    ) -> Result<Vec<DefinitionSummary>, WorkflowError> {
        let mut named = Vec::new();
        let mut read = 0;
        while read < NAME_SCAN_LIMIT {
            let size = PageRequest::MAX_LIMIT.min(NAME_SCAN_LIMIT - read);
            let (rows, total) = self
                .paged(LISTING, PageRequest::new(read, size), &request)
                .await?;
            read += rows.len();
            for summary in summaries(&rows)? {
                if same_name(summary.name.as_deref(), wanted) {
                    named.push(summary);
                }
            }
            if rows.len() < size || read >= total {
                break;
            }
        }
        Ok(named)
    }

    /// Sets each summary's activity count from its version's graph (one `many-by-id`
    /// request per [`IDS_PER_REQUEST`] versions); a graph this crate cannot read counts 0.
    async fn count_activities(
        &self,
        summaries: &mut [DefinitionSummary],
    ) -> Result<(), WorkflowError> {
        let ids: Vec<String> = summaries
            .iter()
            .filter_map(|s| s.version_id.clone())
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        let graphs = self.definitions_by_id(&ids).await?;
        for summary in summaries {
            let graph = summary.version_id.as_ref().and_then(|id| graphs.get(id));
            if let Some(definition) =
                graph.and_then(|g| WorkflowDefinition::from_value(g.clone()).ok())
            {
                summary.activity_count = definition.activity_count();
            }
        }
        Ok(())
    }

    /// Saves `definition` as `definition_id` and returns the version Elsa stored.
    async fn save(
        &self,
        definition_id: &str,
        definition: &WorkflowDefinition,
    ) -> Result<DefinitionVersionRef, WorkflowError> {
        let what = format!("saving workflow definition '{definition_id}'");
        let mut model = definition.as_json().clone();
        model.insert("definitionId".into(), Value::String(definition_id.into()));
        let body = json!({"model": model, "publish": definition.is_published()});
        let url = self.http.url(&["workflow-definitions"]);
        let answer = self
            .http
            .send(&what, Method::POST, url, Some(&body))
            .await?;
        if !answer.status.is_success() {
            return Err(self.http.failure(&what, &answer));
        }
        let value = self.http.json(&what, &answer)?;
        // Elsa 3.1+ wraps the saved model in `workflowDefinition`; earlier 3.x answer with the
        // model itself.
        let (saved, at) = match value.get("workflowDefinition") {
            Some(Value::Object(model)) => (model, vec![Seg::Key("workflowDefinition".into())]),
            _ => match value.as_object() {
                Some(model) => (model, Vec::new()),
                None => {
                    let problem =
                        format!("{} instead of the saved definition", js::kind_of(&value));
                    return Err(self.http.invalid_answer(&what, js::error_at(&[], problem)));
                }
            },
        };
        let missing = |field: &str| {
            let problem = format!("the saved version has no `{field}`");
            self.http
                .invalid_answer(&what, js::error_at(&js::key(&at, field), problem))
        };
        let saved_id = saved.get("definitionId").and_then(Value::as_str);
        if saved_id != Some(definition_id) {
            let problem = format!(
                "the saved version belongs to definition '{}'",
                saved_id.unwrap_or_default()
            );
            return Err(self
                .http
                .invalid_answer(&what, js::error_at(&js::key(&at, "definitionId"), problem)));
        }
        let version_id = saved
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .ok_or_else(|| missing("id"))?;
        let version = saved
            .get("version")
            .and_then(Value::as_i64)
            .and_then(|v| i32::try_from(v).ok())
            .ok_or_else(|| missing("version"))?;
        Ok(DefinitionVersionRef {
            definition_id: definition_id.to_owned(),
            version_id: version_id.to_owned(),
            version,
        })
    }
}

/// How Elsa spells version options in a query string (`VersionOptions.FromString`).
fn version_options(version: VersionOptions) -> String {
    match version {
        VersionOptions::Latest => "Latest".to_owned(),
        VersionOptions::Published => "Published".to_owned(),
        VersionOptions::Specific(version) => version.to_string(),
    }
}

/// `text` without surrounding whitespace; `None` when nothing is left.
fn trimmed(text: Option<&str>) -> Option<&str> {
    text.map(str::trim).filter(|text| !text.is_empty())
}

/// A definition search row from one of Elsa's definition summaries (or stored versions) at
/// `at` in an answer; its activity count is left 0.
fn summary_row(row: &Value, at: &[Seg]) -> Result<DefinitionSummary, ParseError> {
    let map = js::expect_object(row, at, "a workflow definition summary")?;
    let definition_id = js::optional_str(map, "definitionId", at)?
        .filter(|id| !id.is_empty())
        .ok_or_else(|| {
            js::error_at(
                &js::key(at, "definitionId"),
                "a definition summary needs a `definitionId`",
            )
        })?;
    Ok(DefinitionSummary {
        definition_id: definition_id.to_owned(),
        version_id: js::optional_str(map, "id", at)?.map(str::to_owned),
        version: js::optional_i32(map, "version", at)?.unwrap_or(1),
        name: js::optional_str(map, "name", at)?.map(str::to_owned),
        description: js::optional_str(map, "description", at)?.map(str::to_owned),
        is_latest: js::optional_bool(map, "isLatest", at)?.unwrap_or(false),
        is_published: js::optional_bool(map, "isPublished", at)?.unwrap_or(false),
        activity_count: 0,
    })
}

/// The search rows of the `items` of one definition list answer.
fn summaries(rows: &[Value]) -> Result<Vec<DefinitionSummary>, ParseError> {
    rows.iter()
        .enumerate()
        .map(|(i, row)| summary_row(row, &[Seg::Key("items".into()), Seg::Index(i)]))
        .collect()
}

/// The versions of `definition_id` in the answer of `workflow-definitions/{id}/versions`
/// (stored `WorkflowDefinition` entities, newest first), oldest first.
fn version_rows(answer: &Value, definition_id: &str) -> Result<Vec<DefinitionSummary>, ParseError> {
    let Some((items, step)) = js::array_like(answer) else {
        return Err(js::error_at(
            &[],
            format!(
                "a list of definition versions must be an array, found {}",
                js::kind_of(answer)
            ),
        ));
    };
    let at: Vec<Seg> = step.into_iter().collect();
    let mut versions = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let mut summary = summary_row(item, &js::index(&at, i))?;
        // The filter is Elsa's; a version of another definition is never shown as this one's.
        if summary.definition_id != definition_id {
            continue;
        }
        summary.activity_count = stored_activity_count(item, definition_id);
        versions.push(summary);
    }
    versions.sort_by_key(|summary| summary.version);
    Ok(versions)
}

/// The activity count of a stored version: its graph is the `root` activity, which Elsa's
/// store keeps serialised in `stringData` (JSON materializer); 0 when there is no graph this
/// crate can read (another materializer, say).
fn stored_activity_count(version: &Value, definition_id: &str) -> usize {
    let root = match version.get("root") {
        Some(root @ Value::Object(_)) => root.clone(),
        _ => match version
            .get("stringData")
            .and_then(Value::as_str)
            .and_then(|data| js::parse_text(data).ok())
        {
            Some(root) => root,
            None => return 0,
        },
    };
    WorkflowDefinition::from_value(json!({"definitionId": definition_id, "root": root}))
        .map_or(0, |definition| definition.activity_count())
}

#[async_trait]
impl WorkflowDefinitionStore for ElsaServerBackend {
    async fn find(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        version: VersionOptions,
    ) -> Result<Option<Arc<WorkflowDefinition>>, WorkflowError> {
        if !self.serves(tenant) || !super::client::is_one_segment(definition_id) {
            return Ok(None);
        }
        let what = format!("reading workflow definition '{definition_id}'");
        let mut url = self
            .http
            .url(&["workflow-definitions", "by-definition-id", definition_id]);
        url.query_pairs_mut()
            .append_pair("versionOptions", &version_options(version));
        Ok(self
            .http
            .get_optional(&what, url, WorkflowDefinition::from_slice)
            .await?
            .map(Arc::new))
    }

    /// `GET workflow-definitions/by-id/{id}` (Elsa 3's `GetWorkflowDefinitionById`): the
    /// version with that id, 404 when none.
    async fn find_version(
        &self,
        tenant: &TenantId,
        version_id: &str,
    ) -> Result<Option<Arc<WorkflowDefinition>>, WorkflowError> {
        if !self.serves(tenant) || !super::client::is_one_segment(version_id) {
            return Ok(None);
        }
        let what = format!("reading workflow definition version '{version_id}'");
        let url = self
            .http
            .url(&["workflow-definitions", "by-id", version_id]);
        Ok(self
            .http
            .get_optional(&what, url, WorkflowDefinition::from_slice)
            .await?
            .map(Arc::new))
    }

    async fn search(
        &self,
        tenant: &TenantId,
        query: &DefinitionQuery,
    ) -> Result<Page<DefinitionSummary>, WorkflowError> {
        let window = PageRequest::new(query.page.offset, query.page.limit);
        // No definition has an empty id, and Elsa would read an empty `definitionIds` as no
        // filter at all.
        let no_id = query.definition_id.as_deref().is_some_and(str::is_empty);
        if !self.serves(tenant) || no_id {
            return Ok(window.slice(Vec::new()));
        }
        // Elsa takes one search term; a name search without text narrows by the name (Elsa's
        // term matches names containing it, letter case ignored) and keeps exact names here.
        let term = trimmed(query.text.as_deref()).or(trimmed(query.name.as_deref()));
        let versions = version_options(query.version);
        let request = |page: usize, size: usize| {
            let mut url = self.http.url(&["workflow-definitions"]);
            {
                let mut pairs = url.query_pairs_mut();
                pairs
                    .append_pair("versionOptions", &versions)
                    .append_pair("page", &page.to_string())
                    .append_pair("pageSize", &size.to_string());
                if let Some(term) = term {
                    pairs.append_pair("searchTerm", term);
                }
                if let Some(id) = &query.definition_id {
                    pairs.append_pair("definitionIds", id);
                }
            }
            (Method::GET, url, None)
        };
        let (mut items, total) = match &query.name {
            None => {
                let (rows, total) = self.paged(LISTING, window, request).await?;
                let items = summaries(&rows).map_err(|e| self.http.invalid_answer(LISTING, e))?;
                (items, total)
            }
            Some(wanted) => {
                let page = window.slice(self.rows_named(wanted, request).await?);
                (page.items, page.total)
            }
        };
        self.count_activities(&mut items).await?;
        Ok(Page {
            items,
            total,
            offset: window.offset,
            limit: window.limit,
        })
    }

    /// `GET workflow-definitions/{definitionId}/versions` (404 when there are none).
    async fn versions(
        &self,
        tenant: &TenantId,
        definition_id: &str,
    ) -> Result<Vec<DefinitionSummary>, WorkflowError> {
        if !self.serves(tenant) || !super::client::is_one_segment(definition_id) {
            return Ok(Vec::new());
        }
        let what = format!("listing the versions of workflow definition '{definition_id}'");
        let url = self
            .http
            .url(&["workflow-definitions", definition_id, "versions"]);
        let answer = self.http.send(&what, Method::GET, url, None).await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Ok(Vec::new());
        }
        if !answer.status.is_success() {
            return Err(self.http.failure(&what, &answer));
        }
        version_rows(&self.http.json(&what, &answer)?, definition_id)
            .map_err(|e| self.http.invalid_answer(&what, e))
    }
}

#[async_trait]
impl ActivityCatalog for ElsaServerBackend {
    async fn list(&self, tenant: &TenantId) -> Result<Arc<[ActivityDescriptor]>, WorkflowError> {
        if !self.serves(tenant) {
            return Ok(Arc::from([]));
        }
        let what = "listing activity descriptors";
        let url = self.http.url(&["descriptors", "activities"]);
        let answer = self.http.send(what, Method::GET, url, None).await?;
        if !answer.status.is_success() {
            return Err(self.http.failure(what, &answer));
        }
        let mut catalog = ActivityDescriptor::catalog_from_value(&self.http.json(what, &answer)?)
            .map_err(|e| self.http.invalid_answer(what, e))?;
        for descriptor in &mut catalog {
            // Elsa Server's descriptors cannot say that a built-in activity's outcomes depend
            // on its inputs (Elsa Studio knows it); the built-in catalog does.
            if descriptor.dynamic_outcomes.is_none()
                && let Some(builtin) = builtin_descriptor(&descriptor.type_name)
            {
                descriptor
                    .dynamic_outcomes
                    .clone_from(&builtin.dynamic_outcomes);
            }
        }
        Ok(catalog.into())
    }
}

#[async_trait]
impl WorkflowDefinitionWriter for ElsaServerBackend {
    /// Saves `definition` as version 1 of its `definitionId` (published when the document
    /// says so); [`WorkflowError::Conflict`] when the id exists, or when Elsa stored it on top
    /// of a definition created meanwhile (see the module documentation).
    async fn create(
        &self,
        tenant: &TenantId,
        definition: WorkflowDefinition,
    ) -> Result<DefinitionVersionRef, WorkflowError> {
        if !self.serves(tenant) {
            return Err(WorkflowError::NotFound {
                what: format!("tenant '{tenant}'"),
            });
        }
        let definition_id = definition.definition_id().trim().to_owned();
        if definition_id.is_empty() {
            return Err(js::error_at(
                &[Seg::Key("definitionId".into())],
                "a stored workflow definition needs a `definitionId`",
            )
            .into());
        }
        if let Some(existing) =
            WorkflowDefinitionStore::find(self, tenant, &definition_id, VersionOptions::Latest)
                .await?
        {
            return Err(WorkflowError::Conflict {
                message: format!(
                    "workflow definition '{definition_id}' already exists (version {})",
                    existing.version()
                ),
            });
        }
        let written = self.save(&definition_id, &definition).await?;
        if written.version != 1 {
            return Err(WorkflowError::Conflict {
                message: format!(
                    "workflow definition '{definition_id}' was created by another client while \
                     Weaver created it: Elsa stored Weaver's definition as version {} (id {}) \
                     on top of it; review both in Elsa",
                    written.version, written.version_id
                ),
            });
        }
        Ok(written)
    }

    /// Saves `definition` as the version after `expected_version`, which must be the latest
    /// and published (published in turn when the document says so); see the module
    /// documentation for exactly what is checked and what a concurrent Elsa client can do.
    async fn update(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        expected_version: i32,
        definition: WorkflowDefinition,
    ) -> Result<DefinitionVersionRef, WorkflowError> {
        let not_found = || WorkflowError::NotFound {
            what: format!("workflow definition '{definition_id}'"),
        };
        if !self.serves(tenant) || !super::client::is_one_segment(definition_id) {
            return Err(not_found());
        }
        let given = definition.definition_id();
        if !given.is_empty() && given != definition_id {
            return Err(js::error_at(
                &[Seg::Key("definitionId".into())],
                format!(
                    "the document's definitionId '{given}' is not the definition being \
                     updated, '{definition_id}'"
                ),
            )
            .into());
        }
        let latest =
            WorkflowDefinitionStore::find(self, tenant, definition_id, VersionOptions::Latest)
                .await?
                .ok_or_else(not_found)?;
        if latest.version() != expected_version {
            return Err(WorkflowError::Conflict {
                message: format!(
                    "workflow definition '{definition_id}' is at version {}, not the expected \
                     version {expected_version}",
                    latest.version()
                ),
            });
        }
        if !latest.is_published() {
            return Err(WorkflowError::Conflict {
                message: format!(
                    "the latest version ({expected_version}) of workflow definition \
                     '{definition_id}' is an unpublished draft in Elsa, which Elsa would \
                     overwrite in place; publish or delete the draft in Elsa first"
                ),
            });
        }
        let written = self.save(definition_id, &definition).await?;
        if Some(written.version) != expected_version.checked_add(1) {
            return Err(WorkflowError::Conflict {
                message: format!(
                    "workflow definition '{definition_id}' changed in Elsa while Weaver wrote \
                     it: version {expected_version} was current, but Elsa stored Weaver's \
                     change as version {} (id {}) after another client's version; review it \
                     in Elsa",
                    written.version, written.version_id
                ),
            });
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn version_options_are_spelled_as_elsa_parses_them() {
        assert_eq!(version_options(VersionOptions::Latest), "Latest");
        assert_eq!(version_options(VersionOptions::Published), "Published");
        assert_eq!(version_options(VersionOptions::Specific(3)), "3");
    }

    #[test]
    fn summary_rows_need_a_definition_id() {
        let row = json!({"id": "v1", "definitionId": "d", "name": "D", "version": 2,
                         "isLatest": true, "isPublished": false, "materializerName": "Json"});
        let summary = summary_row(&row, &[]).unwrap();
        assert_eq!(
            (
                summary.version_id.as_deref(),
                summary.version,
                summary.is_latest
            ),
            (Some("v1"), 2, true)
        );
        let error = summaries(&[row, json!({"id": "v1"})]).unwrap_err();
        assert_eq!(error.path, "$.items[1].definitionId");
    }

    #[test]
    fn stored_versions_are_read_oldest_first_with_their_graphs() {
        let root = json!({"id": "Flowchart1", "type": "Elsa.Flowchart", "activities": [
            {"id": "a", "type": "Elsa.WriteLine"}, {"id": "b", "type": "Elsa.WriteLine"}
        ]});
        let answer = json!({"$id": "1", "$values": [
            {"id": "v2", "definitionId": "d", "version": 2, "isLatest": true,
             "materializerName": "Json", "stringData": root.to_string()},
            {"id": "x1", "definitionId": "other", "version": 1},
            {"id": "v1", "definitionId": "d", "version": 1, "materializerName": "Clr"}
        ]});
        let versions = version_rows(&answer, "d").unwrap();
        let read: Vec<_> = versions
            .iter()
            .map(|v| (v.version_id.as_deref(), v.version, v.activity_count))
            .collect();
        assert_eq!(read, [(Some("v1"), 1, 0), (Some("v2"), 2, 2)]);
        let error = version_rows(&json!([{"id": "v1"}]), "d").unwrap_err();
        assert_eq!(error.path, "$[0].definitionId");
        let error = version_rows(&json!({"items": 1}), "d").unwrap_err();
        assert_eq!(error.path, "$");
    }
}
