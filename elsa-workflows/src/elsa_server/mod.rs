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
//! | definition `search` | `GET workflow-definitions?versionOptions=…&searchTerm=…&definitionIds=…&page=…&pageSize=…`, then `GET workflow-definitions/many-by-id?ids=…` for the activity counts |
//! | definition `versions` | `GET workflow-definitions/{definitionId}/versions` (404 → none) |
//! | instance `find` | `GET workflow-instances/{id}` (404 → `None`) |
//! | instance `search` | `POST workflow-instances` with `page`, `pageSize`, `searchTerm`, `correlationId`, `hasIncidents`, `definitionIds`, `statuses`, `subStatuses`, `timestampFilters` |
//! | catalog `list` | `GET descriptors/activities` |
//! | `activity_executions` | `GET activity-executions/list?workflowInstanceId=…` (`{"items", "count"}`) |
//! | `execution_log` | `GET workflow-instances/{id}/journal?skip=…&take=…` (`{"items", "totalCount"}`, by sequence) |
//! | incident `search` | `POST workflow-instances` with `hasIncidents: true`, `orderBy: UpdatedAt` (at most [`INCIDENT_SCAN_LIMIT`] instances), then `GET workflow-instances/{id}` for each one's `incidents`; with an `instance_id`, only `GET workflow-instances/{id}` |
//! | `create` / `update` | `POST workflow-definitions` with `{"model": …, "publish": …}` |
//! | instance operations, publication, deletion | see [below](#operations) |
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
//! [`Page`]: crate::Page
//!
//! # Operations
//!
//! Only an applied proposal reaches these ([`crate::WorkflowInstanceOperator`],
//! [`crate::WorkflowDefinitionPublisher`]):
//!
//! | call | request | Elsa endpoint (module, first release) |
//! |---|---|---|
//! | `cancel` | `GET workflow-instances/{id}` (Elsa answers 200 for unknown ids), then `POST cancel/workflow-instances/{id}` (no body) | `WorkflowInstances/Cancel` (`Elsa.Workflows.Api`, 3.1.0) |
//! | `retry` | `GET workflow-instances/{id}`, then `POST alterations/workflows/retry` with `{"workflowInstanceIds": [id]}`: Elsa schedules the activities of the instance's incidents again and dispatches it; a result with `isSuccessful: false` is a failure | `Workflows/Retry` (`Elsa.Alterations`, 3.0.0; the server must have the alterations module) |
//! | `restart` | `POST workflow-definitions/{definitionId}/dispatch` with `{"versionOptions": "<version>", "correlationId", "input"}`; the answer's `workflowInstanceId` is the new instance | `WorkflowDefinitions/Dispatch` (3.0.0) |
//! | `publish` | `POST workflow-definitions/{definitionId}/publish` with `{}` (publishes the latest version) | `WorkflowDefinitions/Publish` (3.0.0) |
//! | `unpublish` | the published version looked up (none: [`WorkflowError::Conflict`]), then `POST workflow-definitions/{definitionId}/retract` with `{}` | `WorkflowDefinitions/Retract` (3.0.0) |
//! | `delete` | `DELETE workflow-definitions/{definitionId}`: every version, and Elsa deletes the definition's instances with it | `WorkflowDefinitions/Delete` (3.0.0) |
//!
//! Read against elsa-core 3.8.0-rc2 (`src/modules/Elsa.Workflows.Api/Endpoints/`,
//! `src/modules/Elsa.Alterations/Endpoints/`). Elsa's publish takes no version: it publishes
//! whatever is latest, so `publish` first checks that the version asked for is still the
//! latest ([`WorkflowError::Conflict`] otherwise). The window between that check and Elsa's
//! publish, in which another Elsa client could save a newer draft, cannot be closed from
//! outside Elsa; the caller compares states again before and reports what it finds.
//! A 404 from the definition endpoints is [`WorkflowError::NotFound`]; from cancel or retry
//! (after the instance was found) it means the server lacks the endpoint, a
//! [`WorkflowError::Backend`]. Publish and retract are sent `{}`: their request types carry
//! only the route value, and Elsa still expects a JSON body. Dispatch runs in the
//! background, so a restarted instance may not be readable at once.
//!
//! # Filters: what Elsa applies and what is applied here
//!
//! The list endpoints' request types (`WorkflowDefinitions/List`, `WorkflowInstances/List` in
//! `Elsa.Workflows.Api`) take most filters; the rest are applied to Elsa's answer.
//!
//! | filter | sent to Elsa as | applied here |
//! |---|---|---|
//! | [`DefinitionQuery`] `text` | `searchTerm` (name and description without regard to case, version id and definition id as the database compares them) | — |
//! | `DefinitionQuery::name` | `searchTerm` (the name itself, unless `text` is given), narrowing the list | the exact name, letter case ignored: Elsa's list has no name parameter, so up to [`NAME_SCAN_LIMIT`] rows of the narrowed list are read and the page is cut from the matches (beyond that bound, matches are not seen) |
//! | `DefinitionQuery::definition_id` | `definitionIds` | — (an empty id finds nothing without a request) |
//! | `DefinitionQuery::version` | `versionOptions` (`Latest`, `Published` or the number) | — |
//! | [`InstanceQuery`] `text` | `searchTerm`: Elsa 3.3+ matches the name without regard to case and the ids (instance, definition, definition version, correlation) as the database compares them, usually with regard to case; it also matches the definition version id | — (so results may differ from the in-memory backend in those two ways) |
//! | `InstanceQuery::correlation_id` | `correlationId` (exact) | a blank one finds nothing without a request (Elsa would ignore it) |
//! | `InstanceQuery::has_incidents` | `hasIncidents` (`incidentCount > 0`, or `= 0`) | — |
//! | `InstanceQuery::time_range`, `updated_range` | `timestampFilters` on `CreatedAt` and `UpdatedAt` | — |
//! | [`IncidentQuery`] `instance_id` | the instance read directly (`GET workflow-instances/{id}`); the list cannot filter by id | the instance's incidents |
//! | `IncidentQuery::text`, `activity_type`, `time_range` | — (`time_range`'s start also as an `UpdatedAt` filter on the instances) | incidents live in each instance's workflow state, which Elsa cannot search |
//!
//! `searchTerm`, `correlationId`, `hasIncidents` and `timestampFilters` on the instance list
//! are Elsa 3.1+; the versions endpoint (`ListVersions`, `read:workflow-definitions`) is in
//! every Elsa 3 release (3.0.0 onwards) and answers the stored versions as a JSON array,
//! newest first; a version's activity count is read from its graph (`stringData`), 0 when the
//! version has none this crate reads.
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
mod config;
mod definitions;
mod instances;
mod operations;
mod paging;
mod runtime;

use reqwest::{Method, Url};
use serde_json::Value;

use self::client::ElsaHttp;
pub use self::config::{ElsaCredentials, ElsaServerConfig, ElsaServerConfigError};
pub use self::definitions::NAME_SCAN_LIMIT;
use self::instances::elsa_timestamp;
use self::paging::PagePlan;
pub use self::runtime::INCIDENT_SCAN_LIMIT;
use crate::json::{self as js, Seg};
#[cfg(doc)]
use crate::{DefinitionQuery, IncidentQuery, InstanceQuery};
use crate::{PageRequest, ParseError, TenantId, WorkflowError};

/// Elsa's default API path below the server's URL.
pub const DEFAULT_API_PATH: &str = "elsa/api";

/// How many version ids one `many-by-id` request names (keeps the URL well below the 8 KiB
/// request line servers accept).
const IDS_PER_REQUEST: usize = 100;

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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
}
