//! The Elsa Server REST backend (feature `elsa-server`): the service traits over the HTTP
//! API of an Elsa 3 server, for one tenant.
//!
//! [`ElsaServerBackend`] serves one Weaver tenant from one Elsa Server (its URL, its
//! credentials, optionally an Elsa tenant id sent as `X-Tenant-Id`). A call for any other
//! tenant is answered exactly like a call for something that does not exist, so several
//! backends (and in-memory ones) combine safely behind a [`crate::TenantRouter`].
//!
//! ```no_run
//! use elsa_workflows::{
//!     ElsaServerBackend, ElsaServerConfig, TenantId, VersionOptions, WorkflowDefinitionStore,
//! };
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let acme = TenantId::new("acme");
//! let config = ElsaServerConfig::new("https://elsa.example/")?.api_key("the-key");
//! let elsa = ElsaServerBackend::new(acme.clone(), config)?;
//! if let Some(definition) = elsa.find(&acme, "order-approval", VersionOptions::Published).await? {
//!     println!("{} v{}", definition.definition_id(), definition.version());
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Endpoints
//!
//! All below the API base (`<url>/elsa/api` unless configured otherwise):
//!
//! | call | request |
//! |---|---|
//! | definition `find` | `GET workflow-definitions/by-definition-id/{definitionId}?versionOptions=Latest\|Published\|{n}` (404 → `None`) |
//! | definition `search` | `GET workflow-definitions?versionOptions=…&searchTerm=…&page=…&pageSize=…`, then `GET workflow-definitions/many-by-id?ids=…` for the activity counts |
//! | instance `find` | `GET workflow-instances/{id}` (404 → `None`) |
//! | instance `search` | `POST workflow-instances` with `page`, `pageSize`, `definitionIds`, `statuses`, `subStatuses`, `timestampFilters` |
//! | catalog `list` | `GET descriptors/activities` |
//! | `activity_executions` | `GET activity-executions/list?workflowInstanceId=…` (`{"items", "count"}`) |
//! | `execution_log` | `GET workflow-instances/{id}/journal?skip=…&take=…` (`{"items", "totalCount"}`, by sequence) |
//! | incident `search` | `POST workflow-instances` with `hasIncidents: true`, `orderBy: UpdatedAt` (at most [`INCIDENT_SCAN_LIMIT`] instances), then `GET workflow-instances/{id}` for each one's `incidents` |
//! | `create` / `update` | `POST workflow-definitions` with `{"model": …, "publish": …}` |
//!
//! Elsa's paged lists (`{"items": […], "totalCount": n}`, items possibly wrapped in
//! `{"$values": […]}`) are read into [`Page`]s; a window whose offset is not a multiple of its
//! limit is cut out of two Elsa pages. Definition search is ordered as Elsa orders it (by
//! name) and matches text as Elsa's store does (`searchTerm` against name, description and
//! ids; letter case as the database compares it). Instance search rows are Elsa's instance
//! summaries (no workflow state); `find` returns the whole instance. A definition's activity
//! count comes from its graph, read with one extra request per page; a version whose graph
//! this crate cannot read counts 0. The catalog is Elsa's, with the dynamic-outcome notes of
//! Elsa's built-in activities added where the server's descriptors cannot express them
//! (a flow switch's case labels, for example).
//!
//! # Writing, and what the compare-and-set guarantees
//!
//! Elsa saves definitions through one endpoint with no conditional form: it saves over the
//! latest version when that is an unpublished draft (same version number and id) and adds a
//! new version after a published one; `publish: true` also publishes the saved version
//! (after Elsa's validation) and un-publishes the previous one. Weaver's writer contract
//! (every successful `update` adds the version after `expected_version`) is built on it so:
//!
//! 1. `update` reads the latest version first and refuses with [`WorkflowError::Conflict`]
//!    unless it is `expected_version` **and published**. A draft on top is refused because
//!    Elsa would save over it in place: that would destroy someone's unpublished work, and
//!    the version number would not change, so a second write from the same baseline could
//!    not be told apart. Publish (or delete) the draft in Elsa first. `create` likewise
//!    refuses a definition id that exists.
//! 2. It saves the document, publishing it when the document says `isPublished: true`.
//! 3. It checks the version Elsa assigned: it must be `expected_version + 1` (1 for
//!    `create`).
//!
//! Steps 1 and 2 are two requests, and nothing holds the definition in between. What can
//! happen in that window (one request's round trip):
//!
//! - another client **publishes or adds** a version: Elsa stores this write after it, step
//!   3 sees the unexpected version number and the call fails with
//!   [`WorkflowError::Conflict`] naming the version Elsa now holds. That version **stays in
//!   Elsa** (the API offers no way to take a save back safely); review it there.
//! - another client **saves a draft** on top of the expected version: Elsa's save then
//!   writes over that draft in place and assigns the predicted number, which the API gives
//!   no way to detect. This is the one race the backend cannot see.
//!
//! Within one Weaver deployment this race does not arise between Weaver's own writes (the
//! proposal service claims a proposal before writing, and a second write from one baseline
//! is refused by step 1 because the first moved the version on). It remains against other
//! Elsa clients, such as Elsa Studio, saving at the same moment.
//!
//! # Errors
//!
//! Every failure is a typed [`WorkflowError`], never a panic:
//!
//! | what happened | error |
//! |---|---|
//! | a lookup answered 404 | `Ok(None)` (`update`: [`WorkflowError::NotFound`]) |
//! | 401: Elsa refused the configured credential | [`WorkflowError::Unauthorized`] |
//! | 5xx, a timeout, connection refused or reset | [`WorkflowError::Unavailable`] |
//! | an answer that is not JSON, or not a readable list, definition, instance or catalog | [`WorkflowError::InvalidAnswer`], its path pointing into Elsa's answer (`$.items[3].status`) |
//! | 409, or a save that lost a race (below) | [`WorkflowError::Conflict`] |
//! | 403, any other 4xx, a redirect, a 404 from a list or save endpoint (a wrong URL), an answer over the size limit | [`WorkflowError::Backend`] |
//!
//! Messages name the server, the operation and the status, with a short excerpt of Elsa's
//! error message. The credential is sent only in the `Authorization` header (marked
//! sensitive, so it is not printed by `Debug`), redirects are not followed (they would carry
//! it elsewhere), and every quoted text is scrubbed of it: no error ever contains it, even
//! when Elsa's error page echoes the request's headers. This crate logs nothing itself.
//!
//! This backend is tested against a stand-in HTTP server that reproduces the endpoints and
//! shapes above (as read from Elsa 3's sources), not against a running Elsa Server.

mod client;
mod paging;
mod runtime;

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Timelike, Utc};
use reqwest::{Method, Url};
use serde_json::{Map, Value, json};

use self::client::ElsaHttp;
use self::paging::PagePlan;
pub use self::runtime::INCIDENT_SCAN_LIMIT;
use crate::json::{self as js, Seg};
use crate::{
    ActivityCatalog, ActivityDescriptor, DefinitionQuery, DefinitionSummary, DefinitionVersionRef,
    InstanceQuery, Page, PageRequest, ParseError, TenantId, TimeRange, VersionOptions,
    WorkflowDefinition, WorkflowDefinitionStore, WorkflowDefinitionWriter, WorkflowError,
    WorkflowInstance, WorkflowInstanceStore, builtin_descriptor,
};

/// Elsa's default API path below the server's URL.
pub const DEFAULT_API_PATH: &str = "elsa/api";

/// How many version ids one `many-by-id` request names (keeps the URL well below the 8 KiB
/// request line servers accept).
const IDS_PER_REQUEST: usize = 100;

/// How Weaver authenticates to Elsa Server. `Debug` never shows the secret.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum ElsaCredentials {
    /// No `Authorization` header (an Elsa Server with authentication off).
    #[default]
    None,
    /// `Authorization: ApiKey <key>`: an Elsa API key.
    ApiKey(String),
    /// `Authorization: Bearer <token>`: a token from Elsa's identity or another issuer.
    BearerToken(String),
}

impl ElsaCredentials {
    /// The secret itself, if any.
    pub fn secret(&self) -> Option<&str> {
        match self {
            Self::None => None,
            Self::ApiKey(secret) | Self::BearerToken(secret) => Some(secret),
        }
    }

    /// The scheme Elsa reads the secret with (`ApiKey` or `Bearer`).
    pub fn scheme(&self) -> Option<&'static str> {
        match self {
            Self::None => None,
            Self::ApiKey(_) => Some("ApiKey"),
            Self::BearerToken(_) => Some("Bearer"),
        }
    }

    fn header_value(&self) -> Option<String> {
        Some(format!("{} {}", self.scheme()?, self.secret()?))
    }
}

impl std::fmt::Debug for ElsaCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.scheme() {
            None => f.write_str("None"),
            Some(scheme) => write!(f, "{scheme}(<redacted>)"),
        }
    }
}

/// Why an Elsa Server configuration cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ElsaServerConfigError(String);

impl ElsaServerConfigError {
    fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// Where an Elsa Server is and how to talk to it.
#[derive(Clone, Debug)]
pub struct ElsaServerConfig {
    url: Url,
    api_path: String,
    credentials: ElsaCredentials,
    elsa_tenant_id: Option<String>,
    timeout: Duration,
    connect_timeout: Duration,
    max_body_bytes: usize,
}

impl ElsaServerConfig {
    /// The Elsa Server at `url` (`http` or `https`), its API under [`DEFAULT_API_PATH`], with
    /// no credentials, a 30 s request timeout, a 5 s connect timeout and answers of at most
    /// 32 MiB. A URL with a user name or password is refused: credentials are configured
    /// with [`ElsaServerConfig::api_key`] or [`ElsaServerConfig::bearer_token`], where they
    /// are kept out of logs and errors.
    pub fn new(url: &str) -> Result<Self, ElsaServerConfigError> {
        let parsed = Url::parse(url.trim()).map_err(|error| {
            ElsaServerConfigError::new(format!("'{url}' is not a URL: {error}"))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ElsaServerConfigError::new(format!(
                "the Elsa Server URL must be http or https, not {}",
                parsed.scheme()
            )));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            // The URL is not echoed: it holds a credential.
            return Err(ElsaServerConfigError::new(
                "the Elsa Server URL must not contain a user name or password; configure an \
                 API key or a bearer token instead",
            ));
        }
        if parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(ElsaServerConfigError::new(format!(
                "the Elsa Server URL '{url}' must not have a query or fragment"
            )));
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(ElsaServerConfigError::new(format!(
                "the Elsa Server URL '{url}' has no host"
            )));
        }
        Ok(Self {
            url: parsed,
            api_path: DEFAULT_API_PATH.to_owned(),
            credentials: ElsaCredentials::None,
            elsa_tenant_id: None,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            max_body_bytes: 32 * 1024 * 1024,
        })
    }

    /// The path of Elsa's API below the URL (Elsa's `ApiEndpointOptions.RoutePrefix`;
    /// default `elsa/api`; empty when the URL is the API base itself).
    pub fn api_path(mut self, path: &str) -> Self {
        self.api_path = path.trim_matches('/').to_owned();
        self
    }

    /// Authenticates with an Elsa API key (`Authorization: ApiKey <key>`).
    pub fn api_key(self, key: impl Into<String>) -> Self {
        self.credentials(ElsaCredentials::ApiKey(key.into()))
    }

    /// Authenticates with a bearer token (`Authorization: Bearer <token>`).
    pub fn bearer_token(self, token: impl Into<String>) -> Self {
        self.credentials(ElsaCredentials::BearerToken(token.into()))
    }

    /// Authenticates as `credentials` say.
    pub fn credentials(mut self, credentials: ElsaCredentials) -> Self {
        self.credentials = credentials;
        self
    }

    /// Sends `X-Tenant-Id: <id>` with every request, for an Elsa Server that resolves its
    /// tenant from that header.
    pub fn elsa_tenant_id(mut self, id: impl Into<String>) -> Self {
        self.elsa_tenant_id = Some(id.into());
        self
    }

    /// How long one request may take in all.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long connecting may take.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The largest answer read, in bytes; a larger one is a [`WorkflowError::Backend`].
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// The API base every endpoint is below: the URL followed by the API path, unless the
    /// URL already ends with that path (`https://elsa.example/elsa/api` is taken as is).
    pub fn api_base(&self) -> Url {
        let mut base = self.url.clone();
        let wanted: Vec<&str> = self.api_path.split('/').filter(|s| !s.is_empty()).collect();
        let present: Vec<&str> = base
            .path_segments()
            .map(|segments| segments.filter(|s| !s.is_empty()).collect())
            .unwrap_or_default();
        if !present.ends_with(&wanted)
            && let Ok(mut path) = base.path_segments_mut()
        {
            path.pop_if_empty().extend(wanted);
        }
        base
    }

    /// The credentials configured.
    pub fn credentials_in_use(&self) -> &ElsaCredentials {
        &self.credentials
    }
}

/// One Weaver tenant's workflows, served by an Elsa 3 server over its REST API. See the
/// [module documentation](self) for the endpoints, errors and write guarantees.
pub struct ElsaServerBackend {
    tenant: TenantId,
    http: ElsaHttp,
}

impl std::fmt::Debug for ElsaServerBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElsaServerBackend")
            .field("tenant", &self.tenant)
            .field("api_base", &self.http.base().as_str())
            .finish_non_exhaustive()
    }
}

impl ElsaServerBackend {
    /// A backend serving `tenant` from the Elsa Server `config` names. Nothing is sent yet.
    pub fn new(tenant: TenantId, config: ElsaServerConfig) -> Result<Self, ElsaServerConfigError> {
        Ok(Self {
            tenant,
            http: ElsaHttp::new(&config)?,
        })
    }

    /// The tenant this backend serves.
    pub fn tenant(&self) -> &TenantId {
        &self.tenant
    }

    /// The API base requests go to (no credentials in it).
    pub fn api_base(&self) -> &str {
        self.http.base().as_str()
    }

    fn serves(&self, tenant: &TenantId) -> bool {
        *tenant == self.tenant
    }

    /// Fetches one page window of a paged list; `request` builds the request of one Elsa page.
    async fn paged(
        &self,
        what: &str,
        window: PageRequest,
        request: impl Fn(usize, usize) -> (Method, Url, Option<Value>),
    ) -> Result<(Vec<Value>, usize), WorkflowError> {
        let plan = PagePlan::new(window);
        let mut items = Vec::new();
        let mut total = None;
        for (page, size) in &plan.pages {
            let (method, url, body) = request(*page, *size);
            let answer = self.http.send(what, method, url, body.as_ref()).await?;
            if !answer.status.is_success() {
                return Err(self.http.failure(what, &answer));
            }
            let value = self.http.json(what, &answer)?;
            let (page_items, page_total) =
                paged_list(value).map_err(|e| self.http.invalid_answer(what, e))?;
            let short = page_items.len() < *size;
            total.get_or_insert(page_total);
            items.extend(page_items);
            if short {
                // The list ends on this page.
                break;
            }
        }
        Ok((plan.cut(items), total.unwrap_or_default()))
    }

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

/// The items and total of one of Elsa's list answers: `{"items": [...], "totalCount": n}`
/// (`count` in unpaged lists), items possibly wrapped in `{"$values": [...]}`, or a bare
/// array.
fn paged_list(value: Value) -> Result<(Vec<Value>, usize), ParseError> {
    let problem = |problem: String, location: &[Seg]| js::error_at(location, problem);
    let (items, total) = match value {
        Value::Object(mut map) => {
            let items = map.remove("items").unwrap_or(Value::Null);
            let total = ["totalCount", "count"]
                .into_iter()
                .find_map(|field| map.get(field).and_then(Value::as_u64));
            (items, total)
        }
        other => (other, None),
    };
    let at = [Seg::Key("items".into())];
    let items = match items {
        Value::Array(items) => items,
        Value::Object(mut wrapper) => match wrapper.remove("$values") {
            Some(Value::Array(items)) => items,
            _ => return Err(problem("`items` is not a list".into(), &at)),
        },
        Value::Null => return Err(problem("it has no `items` list".into(), &[])),
        other => {
            return Err(problem(
                format!("`items` must be a list, found {}", js::kind_of(&other)),
                &at,
            ));
        }
    };
    let total = total
        .and_then(|t| usize::try_from(t).ok())
        .unwrap_or(items.len());
    Ok((items, total))
}

/// How Elsa spells version options in a query string (`VersionOptions.FromString`).
fn version_options(version: VersionOptions) -> String {
    match version {
        VersionOptions::Latest => "Latest".to_owned(),
        VersionOptions::Published => "Published".to_owned(),
        VersionOptions::Specific(version) => version.to_string(),
    }
}

/// A definition search row from one of Elsa's definition summaries.
fn summary_row(row: &Value, index: usize) -> Result<DefinitionSummary, ParseError> {
    let at = [Seg::Key("items".into()), Seg::Index(index)];
    let map = js::expect_object(row, &at, "a workflow definition summary")?;
    let definition_id = js::optional_str(map, "definitionId", &at)?
        .filter(|id| !id.is_empty())
        .ok_or_else(|| {
            js::error_at(
                &js::key(&at, "definitionId"),
                "a definition summary needs a `definitionId`",
            )
        })?;
    Ok(DefinitionSummary {
        definition_id: definition_id.to_owned(),
        version_id: js::optional_str(map, "id", &at)?.map(str::to_owned),
        version: js::optional_i32(map, "version", &at)?.unwrap_or(1),
        name: js::optional_str(map, "name", &at)?.map(str::to_owned),
        description: js::optional_str(map, "description", &at)?.map(str::to_owned),
        is_latest: js::optional_bool(map, "isLatest", &at)?.unwrap_or(false),
        is_published: js::optional_bool(map, "isPublished", &at)?.unwrap_or(false),
        activity_count: 0,
    })
}

/// A timestamp as Elsa's `DateTimeOffset` reads it, to its 100 ns precision.
fn elsa_timestamp(instant: DateTime<Utc>) -> String {
    format!(
        "{}.{:07}Z",
        instant.format("%Y-%m-%dT%H:%M:%S"),
        instant.nanosecond() % 1_000_000_000 / 100
    )
}

/// Elsa's timestamp filters for "created inside `range`" (both ends inclusive).
///
/// Elsa reads a filter timestamp at midnight as a whole day (`<= 2025-01-03T00:00` would
/// include all of January 3rd), so an end at midnight is sent as the strict comparison with
/// the next (or previous) 100 ns tick, which Elsa compares exactly.
fn created_within(range: &TimeRange) -> Vec<Value> {
    let tick = chrono::TimeDelta::nanoseconds(100);
    let midnight = |instant: DateTime<Utc>| {
        instant.num_seconds_from_midnight() == 0 && instant.nanosecond() < 100
    };
    let filter = |operator: &str, instant: DateTime<Utc>| json!({"column": "CreatedAt", "operator": operator, "timestamp": elsa_timestamp(instant)});
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
impl WorkflowDefinitionStore for ElsaServerBackend {
    async fn find(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        version: VersionOptions,
    ) -> Result<Option<WorkflowDefinition>, WorkflowError> {
        if !self.serves(tenant) || !client::is_one_segment(definition_id) {
            return Ok(None);
        }
        let what = format!("reading workflow definition '{definition_id}'");
        let mut url = self
            .http
            .url(&["workflow-definitions", "by-definition-id", definition_id]);
        url.query_pairs_mut()
            .append_pair("versionOptions", &version_options(version));
        self.http
            .get_optional(&what, url, WorkflowDefinition::from_slice)
            .await
    }

    async fn search(
        &self,
        tenant: &TenantId,
        query: &DefinitionQuery,
    ) -> Result<Page<DefinitionSummary>, WorkflowError> {
        let window = PageRequest::new(query.page.offset, query.page.limit);
        if !self.serves(tenant) {
            return Ok(window.slice(Vec::new()));
        }
        let text = query
            .text
            .as_deref()
            .map(str::trim)
            .filter(|text| !text.is_empty());
        let versions = version_options(query.version);
        let (rows, total) = self
            .paged("listing workflow definitions", window, |page, size| {
                let mut url = self.http.url(&["workflow-definitions"]);
                {
                    let mut pairs = url.query_pairs_mut();
                    pairs
                        .append_pair("versionOptions", &versions)
                        .append_pair("page", &page.to_string())
                        .append_pair("pageSize", &size.to_string());
                    if let Some(text) = text {
                        pairs.append_pair("searchTerm", text);
                    }
                }
                (Method::GET, url, None)
            })
            .await?;
        let mut summaries = rows
            .iter()
            .enumerate()
            .map(|(i, row)| summary_row(row, i))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.http.invalid_answer("listing workflow definitions", e))?;
        let ids: Vec<String> = summaries
            .iter()
            .filter_map(|s| s.version_id.clone())
            .collect();
        if !ids.is_empty() {
            let graphs = self.definitions_by_id(&ids).await?;
            for summary in &mut summaries {
                let graph = summary.version_id.as_ref().and_then(|id| graphs.get(id));
                if let Some(definition) =
                    graph.and_then(|g| WorkflowDefinition::from_value(g.clone()).ok())
                {
                    summary.activity_count = definition.activity_count();
                }
            }
        }
        Ok(Page {
            items: summaries,
            total,
            offset: window.offset,
            limit: window.limit,
        })
    }
}

#[async_trait]
impl WorkflowInstanceStore for ElsaServerBackend {
    async fn find(
        &self,
        tenant: &TenantId,
        instance_id: &str,
    ) -> Result<Option<WorkflowInstance>, WorkflowError> {
        if !self.serves(tenant) || !client::is_one_segment(instance_id) {
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
        if !self.serves(tenant) {
            return Ok(window.slice(Vec::new()));
        }
        let mut filters = Map::new();
        if !query.definition_ids.is_empty() {
            filters.insert("definitionIds".into(), json!(query.definition_ids));
        }
        if let Some(status) = query.status {
            filters.insert("statuses".into(), json!([status.as_str()]));
        }
        if let Some(sub_status) = query.sub_status {
            filters.insert("subStatuses".into(), json!([sub_status.as_str()]));
        }
        if let Some(range) = &query.time_range {
            filters.insert(
                "timestampFilters".into(),
                Value::Array(created_within(range)),
            );
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

#[async_trait]
impl ActivityCatalog for ElsaServerBackend {
    async fn list(&self, tenant: &TenantId) -> Result<Vec<ActivityDescriptor>, WorkflowError> {
        if !self.serves(tenant) {
            return Ok(Vec::new());
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
        Ok(catalog)
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
        if !self.serves(tenant) || definition_id.is_empty() {
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
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().expect("a timestamp")
    }

    #[test]
    fn the_api_base_follows_the_url() {
        let base = |url: &str, path: Option<&str>| {
            let mut config = ElsaServerConfig::new(url).expect("valid");
            if let Some(path) = path {
                config = config.api_path(path);
            }
            config.api_base().to_string()
        };
        assert_eq!(
            base("https://elsa.example/", None),
            "https://elsa.example/elsa/api"
        );
        assert_eq!(
            base("https://elsa.example", None),
            "https://elsa.example/elsa/api"
        );
        assert_eq!(
            base("https://elsa.example/tools/", None),
            "https://elsa.example/tools/elsa/api"
        );
        assert_eq!(
            base("https://elsa.example/elsa/api/", None),
            "https://elsa.example/elsa/api/"
        );
        assert_eq!(
            base("http://127.0.0.1:9000/", Some("/workflows/api/")),
            "http://127.0.0.1:9000/workflows/api"
        );
        assert_eq!(
            base("http://10.0.0.1:9000/api", Some("")),
            "http://10.0.0.1:9000/api"
        );
    }

    #[test]
    fn bad_urls_are_refused_without_echoing_credentials() {
        for url in [
            "elsa.example",
            "ftp://elsa.example/",
            "https://elsa.example/?x=1",
        ] {
            assert!(ElsaServerConfig::new(url).is_err(), "{url}");
        }
        let error = ElsaServerConfig::new("https://admin:hunter22@elsa.example/").unwrap_err();
        assert!(!error.to_string().contains("hunter22"), "{error}");
        let config = ElsaServerConfig::new("https://elsa.example/")
            .unwrap()
            .api_key("top-secret-key");
        assert!(!format!("{config:?}").contains("top-secret-key"));
        assert_eq!(config.credentials_in_use().scheme(), Some("ApiKey"));
        let backend = ElsaServerBackend::new(TenantId::new("acme"), config).unwrap();
        assert!(!format!("{backend:?}").contains("top-secret-key"));
        let newline = ElsaServerConfig::new("https://elsa.example/")
            .unwrap()
            .bearer_token("a\nb");
        let error = ElsaServerBackend::new(TenantId::new("acme"), newline).unwrap_err();
        assert!(!error.to_string().contains("a\nb"), "{error}");
    }

    #[test]
    fn version_options_are_spelled_as_elsa_parses_them() {
        assert_eq!(version_options(VersionOptions::Latest), "Latest");
        assert_eq!(version_options(VersionOptions::Published), "Published");
        assert_eq!(version_options(VersionOptions::Specific(3)), "3");
    }

    #[test]
    fn time_ranges_avoid_elsas_whole_day_reading_of_midnight() {
        let range = TimeRange {
            from: at("2025-01-02T08:30:00.123456789Z"),
            to: at("2025-01-03T17:00:00Z"),
        };
        assert_eq!(
            created_within(&range),
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
            created_within(&days),
            [
                json!({"column": "CreatedAt", "operator": "GreaterThan", "timestamp": "2025-01-01T23:59:59.9999999Z"}),
                json!({"column": "CreatedAt", "operator": "LessThan", "timestamp": "2025-01-03T00:00:00.0000001Z"}),
            ]
        );
    }

    #[test]
    fn paged_lists_are_read_in_every_envelope() {
        let (items, total) =
            paged_list(json!({"items": [1, 2], "totalCount": 9, "links": []})).unwrap();
        assert_eq!((items.len(), total), (2, 9));
        let (items, total) =
            paged_list(json!({"items": {"$id": "1", "$values": [1]}, "count": 1})).unwrap();
        assert_eq!((items.len(), total), (1, 1));
        let (items, total) = paged_list(json!([1, 2, 3])).unwrap();
        assert_eq!((items.len(), total), (3, 3));
        let error = paged_list(json!({"totalCount": 1})).unwrap_err();
        assert_eq!(error.path, "$", "{error}");
        let error = paged_list(json!({"items": "x"})).unwrap_err();
        assert_eq!(error.path, "$.items", "{error}");
    }

    #[test]
    fn summary_rows_need_a_definition_id() {
        let row = json!({"id": "v1", "definitionId": "d", "name": "D", "version": 2,
                         "isLatest": true, "isPublished": false, "materializerName": "Json"});
        let summary = summary_row(&row, 0).unwrap();
        assert_eq!(
            (
                summary.version_id.as_deref(),
                summary.version,
                summary.is_latest
            ),
            (Some("v1"), 2, true)
        );
        let error = summary_row(&json!({"id": "v1"}), 3).unwrap_err();
        assert_eq!(error.path, "$.items[3].definitionId");
    }
}
