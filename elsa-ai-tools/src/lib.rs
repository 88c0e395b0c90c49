//! Weaver's built-in AI tools, each registering itself through `inventory`.
//!
//! Linking this crate is all a host does to get the tools: every tool submits an
//! [`AiToolRegistration`](elsa_ai_abstractions::AiToolRegistration), and the host's
//! `ToolRegistry::builder().linked_tools()` collects them, validates their metadata and
//! governs every call. A binary that never names anything of this crate must still link it,
//! with `use elsa_ai_tools as _;`.
//!
//! | tool | mutability | danger | permissions | audit |
//! |---|---|---|---|---|
//! | `workflow.getDefinition` | ReadOnly | Low | `read:workflows` | invocation |
//! | `workflow.getDefinitionGraph` | ReadOnly | Low | `read:workflows` | invocation |
//! | `workflow.listDefinitions` | ReadOnly | Low | `read:workflows` | invocation |
//! | `workflow.listVersions` | ReadOnly | Low | `read:workflows` | invocation |
//! | `workflow.compareVersions` | ReadOnly | Low | `read:workflows` | invocation |
//! | `workflow.findUsages` | ReadOnly | Low | `read:workflows` | invocation |
//! | `workflow.explain` | ReadOnly | Low | `read:workflows` | invocation |
//! | `activities.catalog` | ReadOnly | Low | `read:activities` | invocation |
//! | `activities.getDescriptor` | ReadOnly | Low | `read:activities` | invocation |
//! | `instance.get` | ReadOnly | Medium | `read:workflow-instances` | invocation |
//! | `instance.search` | ReadOnly | Low | `read:workflow-instances` | invocation |
//! | `instance.getErrors` | ReadOnly | Medium | `read:workflow-instances` | invocation |
//! | `instance.executionHistory` | ReadOnly | Medium | `read:workflow-instances` | invocation |
//! | `instance.summarize` | ReadOnly | Medium | `read:workflow-instances` | invocation |
//! | `instance.getActivityState` | ReadOnly | High | `read:workflow-instances` | invocation |
//! | `incidents.search` | ReadOnly | Medium | `read:workflow-instances` | invocation |
//! | `incidents.get` | ReadOnly | Medium | `read:workflow-instances` | invocation |
//! | `instance.aggregateFailures` | ReadOnly | Medium | `read:workflow-instances` | invocation |
//! | `instance.detectTrends` | ReadOnly | Medium | `read:workflow-instances` | invocation |
//! | `workflow.validateDraft` | Proposal | Medium | `propose:workflows` | invocation and result |
//! | `workflow.proposeCreate` | Proposal | Medium | `propose:workflows` | invocation and result |
//! | `workflow.proposeUpdate` | Proposal | Medium | `propose:workflows`, `read:workflows` | invocation and result |
//! | `instance.proposeRetry` | Proposal | Medium | `propose:workflows`, `operate:workflow-instances` | invocation and result |
//! | `instance.proposeCancel` | Proposal | High | `propose:workflows`, `operate:workflow-instances` | invocation and result |
//! | `instance.proposeRestart` | Proposal | Medium | `propose:workflows`, `operate:workflow-instances` | invocation and result |
//! | `workflow.proposePublish` | Proposal | Medium | `propose:workflows`, `publish:workflows` | invocation and result |
//! | `workflow.proposeUnpublish` | Proposal | Medium | `propose:workflows`, `publish:workflows` | invocation and result |
//! | `workflow.proposeDelete` | Proposal | High | `propose:workflows`, `publish:workflows` | invocation and result |
//!
//! Danger levels: Low for reads of definitions, the catalog and instance search rows; Medium
//! for runtime error details and execution records (exception messages and stack traces can
//! carry data a workflow processed), for `instance.get` (the workflow's own input and output,
//! as upstream's `instances.get` shows them, shortened and keyed by name like every recorded
//! value) and for drafting changes; High for `instance.getActivityState`, which shows the
//! values every activity of a run processed (inputs, outputs, variables), so that a host whose
//! policy stops at Medium keeps them from models altogether.
//! The diagnosis tools read Elsa's own records through
//! [`ExecutionRecordStore`](elsa_workflows::ExecutionRecordStore) and
//! [`IncidentStore`](elsa_workflows::IncidentStore): activity execution records (the whole
//! path that ran, with each execution's inputs, outputs and variables), the execution log and
//! incidents; when a backend has no records for an instance they fall back to what the
//! instance document carries and say that the history is incomplete. Recorded values reach
//! the model only as JSON objects keyed by input, output and variable names, which the
//! governor's redaction sees. Read-only tools are on by
//! default; the proposal tools stay off until an administrator enables them, and none of
//! them writes a workflow: they hand a draft to the host's
//! [`AiProposalIntake`](elsa_ai_abstractions::AiProposalIntake), and a person approves and
//! applies the proposal. `instance.aggregateFailures` and `instance.detectTrends` refuse to
//! run without a `DiagnosticsScope` and a `TimeRange` attached to the turn and read nothing
//! outside them (plus attached instances); `instance.search` and `incidents.search` need a
//! workflow, instance or time range from their arguments or, failing that, the turn's
//! attachments, and search the whole tenant only for a caller holding `analyze:tenant` (400
//! `search_scope_required` otherwise); `workflow.proposeUpdate` takes a purpose-built
//! operation list rather than RFC 6902 ([`proposal::patch`] says why). The six operational
//! tools hand an operation (targets by id) to the same intake, which records each target's
//! state; applying the approved proposal acts only on targets still in that state.
//!
//! Every tool is tenant-scoped: it reads through the `elsa-workflows` service traits in
//! [`AiToolServices`](elsa_ai_abstractions::AiToolServices) with the caller's tenant, and an
//! id of another tenant is reported exactly like an unknown one (404 `not_found`). Inputs are
//! Rust types deriving [`schemars::JsonSchema`], so the schema a model sees is generated from
//! the type the tool deserialises. Results are compact: counts, ids and names, lists cut at a
//! limit with `"total"` and `"truncated": true` when more exist, long values clipped with `…`.
//!
//! ```
//! use std::sync::Arc;
//!
//! use elsa_ai_abstractions::*;
//! use elsa_ai_host::*;
//! use elsa_ai_tools::names;
//! use elsa_workflows::{InMemoryWorkflowBackend, samples};
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! // An Elsa backend with the crate's sample workflows, and the host's proposal service.
//! let backend = Arc::new(InMemoryWorkflowBackend::new());
//! samples::seed(&backend, &"acme".into());
//! let audit = Arc::new(InMemoryAuditLog::new());
//! let core = HostCore::builder(Arc::new(Redactor::default()), audit.clone()).build();
//! let proposals = core
//!     .proposals(
//!         Arc::new(InMemoryProposalStore::new()),
//!         backend.clone(),
//!         backend.clone(),
//!         backend.clone(),
//!     )
//!     .build();
//! let services = AiToolServices {
//!     definitions: backend.clone(),
//!     instances: backend.clone(),
//!     executions: backend.clone(),
//!     incidents: backend.clone(),
//!     catalog: backend.clone(),
//!     proposals: Arc::new(proposals),
//! };
//!
//! // Linking the crate registered the tools: the registry finds them without being told.
//! let registry = Arc::new(ToolRegistry::builder().linked_tools()?.build(
//!     Arc::new(AgentRegistry::builtin()),
//!     Arc::new(InMemoryToolEnablementStore::new()),
//! ));
//! let governor = core.governor(registry.clone(), services).build();
//! let caller = AiCaller::new(
//!     "alice",
//!     "acme",
//!     [Permission::READ_WORKFLOWS, Permission::READ_WORKFLOW_INSTANCES],
//! );
//! let invoker = governor.bind(ToolCallScope::new(caller, INSTANCE_DIAGNOSTICS));
//! let call = |tool: &str, arguments| AiProviderToolInvocation {
//!     call_id: "call-1".into(),
//!     tool_name: tool.into(),
//!     arguments,
//! };
//!
//! let found = invoker.invoke(call(names::LIST_DEFINITIONS, json!({"text": "order"}))).await;
//! assert_eq!(found.content["items"][0]["definitionId"], "sample-order-approval");
//! let graph = invoker
//!     .invoke(call(names::GET_DEFINITION, json!({"definitionId": "sample-order-approval"})))
//!     .await;
//! assert!(graph.content["activities"]["total"].as_u64() > Some(3));
//!
//! // Another tenant's id, or one that never existed: the same 404 the model can read.
//! let missing = invoker.invoke(call(names::INSTANCE_GET, json!({"instanceId": "nope"}))).await;
//! assert_eq!(missing.error.map(|e| e.status), Some(404));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod activities;
mod diagnostics;
mod envelope;
mod explain;
pub mod families;
mod graph;
mod incidents;
mod instance;
pub mod proposal;
mod support;
mod usages;
mod versions;
mod workflow;

pub use activities::{
    ActivityCatalogInput, ActivityCatalogTool, GetDescriptor, GetDescriptorInput,
};
pub use diagnostics::{
    AggregateFailures, AggregateFailuresInput, BucketSize, DetectTrends, DetectTrendsInput,
    ExecutionHistory, ExecutionHistoryInput, GetActivityState, GetActivityStateInput, GetErrors,
    Summarize,
};
pub use explain::{Explain, ExplainInput};
pub use incidents::{GetIncident, GetIncidentInput, SearchIncidents, SearchIncidentsInput};
pub use instance::{
    GetInstance, InstanceIdInput, SearchInstances, SearchInstancesInput, StatusFilter,
    SubStatusFilter,
};
pub use proposal::{
    PatchTarget, ProposeCreate, ProposeCreateInput, ProposeUpdate, ProposeUpdateInput,
    ValidateDraft, ValidateDraftInput,
};
pub use usages::{FindUsages, FindUsagesInput};
pub use versions::{CompareVersions, CompareVersionsInput, ListVersions, ListVersionsInput};
pub use workflow::{
    GetDefinition, GetDefinitionGraph, GetDefinitionInput, ListDefinitions, ListDefinitionsInput,
    ListFilter, NamedVersion, VersionSelector,
};

/// The names of the built-in tools, as agents and administrators refer to them: each tool's
/// canonical name (the runtime contract's spelling) and, in [`names::grounding`], the name
/// upstream Elsa's grounding catalog (spec 012) gives it, which it answers to as well.
pub mod names {
    /// `workflow.getDefinition`.
    pub const GET_DEFINITION: &str = "workflow.getDefinition";
    /// `workflow.getDefinitionGraph`.
    pub const GET_DEFINITION_GRAPH: &str = "workflow.getDefinitionGraph";
    /// `workflow.listDefinitions`.
    pub const LIST_DEFINITIONS: &str = "workflow.listDefinitions";
    /// `workflow.listVersions`.
    pub const LIST_VERSIONS: &str = "workflow.listVersions";
    /// `workflow.compareVersions`.
    pub const COMPARE_VERSIONS: &str = "workflow.compareVersions";
    /// `workflow.explain`.
    pub const EXPLAIN: &str = "workflow.explain";
    /// `workflow.findUsages`.
    pub const FIND_USAGES: &str = "workflow.findUsages";
    /// `activities.catalog`.
    pub const ACTIVITIES_CATALOG: &str = "activities.catalog";
    /// `activities.getDescriptor`.
    pub const ACTIVITIES_GET_DESCRIPTOR: &str = "activities.getDescriptor";
    /// `instance.get`.
    pub const INSTANCE_GET: &str = "instance.get";
    /// `instance.search`.
    pub const INSTANCE_SEARCH: &str = "instance.search";
    /// `instance.getErrors`.
    pub const INSTANCE_ERRORS: &str = "instance.getErrors";
    /// `instance.executionHistory`.
    pub const EXECUTION_HISTORY: &str = "instance.executionHistory";
    /// `instance.aggregateFailures`.
    pub const AGGREGATE_FAILURES: &str = "instance.aggregateFailures";
    /// `instance.detectTrends`.
    pub const DETECT_TRENDS: &str = "instance.detectTrends";
    /// `instance.summarize`.
    pub const INSTANCE_SUMMARIZE: &str = "instance.summarize";
    /// `instance.getActivityState`.
    pub const INSTANCE_ACTIVITY_STATE: &str = "instance.getActivityState";
    /// `incidents.search`.
    pub const INCIDENTS_SEARCH: &str = "incidents.search";
    /// `incidents.get`.
    pub const INCIDENTS_GET: &str = "incidents.get";
    /// `workflow.validateDraft`.
    pub const VALIDATE_DRAFT: &str = "workflow.validateDraft";
    /// `workflow.proposeCreate`.
    pub const PROPOSE_CREATE: &str = "workflow.proposeCreate";
    /// `workflow.proposeUpdate`.
    pub const PROPOSE_UPDATE: &str = "workflow.proposeUpdate";
    /// `instance.proposeRetry`.
    pub const PROPOSE_RETRY: &str = "instance.proposeRetry";
    /// `instance.proposeCancel`.
    pub const PROPOSE_CANCEL: &str = "instance.proposeCancel";
    /// `instance.proposeRestart`.
    pub const PROPOSE_RESTART: &str = "instance.proposeRestart";
    /// `workflow.proposePublish`.
    pub const PROPOSE_PUBLISH: &str = "workflow.proposePublish";
    /// `workflow.proposeUnpublish`.
    pub const PROPOSE_UNPUBLISH: &str = "workflow.proposeUnpublish";
    /// `workflow.proposeDelete`.
    pub const PROPOSE_DELETE: &str = "workflow.proposeDelete";

    /// The operational proposal tools (retry, cancel, restart, publish, unpublish, delete).
    pub const OPERATIONS: &[&str] = &[
        PROPOSE_RETRY,
        PROPOSE_CANCEL,
        PROPOSE_RESTART,
        PROPOSE_PUBLISH,
        PROPOSE_UNPUBLISH,
        PROPOSE_DELETE,
    ];

    /// Every built-in tool, sorted by name.
    pub const ALL: &[&str] = &[
        ACTIVITIES_CATALOG,
        ACTIVITIES_GET_DESCRIPTOR,
        INCIDENTS_GET,
        INCIDENTS_SEARCH,
        AGGREGATE_FAILURES,
        DETECT_TRENDS,
        EXECUTION_HISTORY,
        INSTANCE_GET,
        INSTANCE_ACTIVITY_STATE,
        INSTANCE_ERRORS,
        PROPOSE_CANCEL,
        PROPOSE_RESTART,
        PROPOSE_RETRY,
        INSTANCE_SEARCH,
        INSTANCE_SUMMARIZE,
        COMPARE_VERSIONS,
        EXPLAIN,
        FIND_USAGES,
        GET_DEFINITION,
        GET_DEFINITION_GRAPH,
        LIST_DEFINITIONS,
        LIST_VERSIONS,
        PROPOSE_CREATE,
        PROPOSE_DELETE,
        PROPOSE_PUBLISH,
        PROPOSE_UNPUBLISH,
        PROPOSE_UPDATE,
        VALIDATE_DRAFT,
    ];

    /// The second names of the built-in tools: upstream Elsa's grounding catalog (spec 012)
    /// where it names the tool, and the same plural spelling for the tools it lacks, so that
    /// `[tools] names = "grounding"` shows one consistent set.
    pub mod grounding {
        /// `activities.search`, for [`super::ACTIVITIES_CATALOG`].
        pub const ACTIVITIES_SEARCH: &str = "activities.search";
        /// `workflows.search`, for [`super::LIST_DEFINITIONS`].
        pub const WORKFLOWS_SEARCH: &str = "workflows.search";
        /// `workflows.getDefinition`, for [`super::GET_DEFINITION`].
        pub const GET_DEFINITION: &str = "workflows.getDefinition";
        /// `workflows.getDefinitionGraph`, for [`super::GET_DEFINITION_GRAPH`].
        pub const GET_DEFINITION_GRAPH: &str = "workflows.getDefinitionGraph";
        /// `workflows.listVersions`, for [`super::LIST_VERSIONS`].
        pub const LIST_VERSIONS: &str = "workflows.listVersions";
        /// `workflows.compareVersions`, for [`super::COMPARE_VERSIONS`].
        pub const COMPARE_VERSIONS: &str = "workflows.compareVersions";
        /// `workflows.explain`, for [`super::EXPLAIN`].
        pub const EXPLAIN: &str = "workflows.explain";
        /// `workflows.findUsages`, for [`super::FIND_USAGES`].
        pub const FIND_USAGES: &str = "workflows.findUsages";
        /// `workflows.validateDraft`, for [`super::VALIDATE_DRAFT`].
        pub const VALIDATE_DRAFT: &str = "workflows.validateDraft";
        /// `workflows.proposeCreate`, for [`super::PROPOSE_CREATE`].
        pub const PROPOSE_CREATE: &str = "workflows.proposeCreate";
        /// `workflows.proposeUpdate`, for [`super::PROPOSE_UPDATE`].
        pub const PROPOSE_UPDATE: &str = "workflows.proposeUpdate";
        /// `instances.get`, for [`super::INSTANCE_GET`].
        pub const INSTANCE_GET: &str = "instances.get";
        /// `instances.search`, for [`super::INSTANCE_SEARCH`].
        pub const INSTANCE_SEARCH: &str = "instances.search";
        /// `instances.getExecutionHistory`, for [`super::EXECUTION_HISTORY`].
        pub const EXECUTION_HISTORY: &str = "instances.getExecutionHistory";
        /// `instances.getActivityState`, for [`super::INSTANCE_ACTIVITY_STATE`].
        pub const INSTANCE_ACTIVITY_STATE: &str = "instances.getActivityState";
        /// `instances.getErrors`, for [`super::INSTANCE_ERRORS`].
        pub const INSTANCE_ERRORS: &str = "instances.getErrors";
        /// `instances.summarize`, for [`super::INSTANCE_SUMMARIZE`].
        pub const INSTANCE_SUMMARIZE: &str = "instances.summarize";
        /// `instances.aggregateFailures`, for [`super::AGGREGATE_FAILURES`].
        pub const AGGREGATE_FAILURES: &str = "instances.aggregateFailures";
        /// `instances.detectTrends`, for [`super::DETECT_TRENDS`].
        pub const DETECT_TRENDS: &str = "instances.detectTrends";
        /// `instances.proposeRetry`, for [`super::PROPOSE_RETRY`].
        pub const PROPOSE_RETRY: &str = "instances.proposeRetry";
        /// `instances.proposeCancel`, for [`super::PROPOSE_CANCEL`].
        pub const PROPOSE_CANCEL: &str = "instances.proposeCancel";
        /// `instances.proposeRestart`, for [`super::PROPOSE_RESTART`].
        pub const PROPOSE_RESTART: &str = "instances.proposeRestart";
        /// `workflows.proposePublish`, for [`super::PROPOSE_PUBLISH`].
        pub const PROPOSE_PUBLISH: &str = "workflows.proposePublish";
        /// `workflows.proposeUnpublish`, for [`super::PROPOSE_UNPUBLISH`].
        pub const PROPOSE_UNPUBLISH: &str = "workflows.proposeUnpublish";
        /// `workflows.proposeDelete`, for [`super::PROPOSE_DELETE`].
        pub const PROPOSE_DELETE: &str = "workflows.proposeDelete";

        /// The catalog of upstream spec 012 that Weaver serves, each name with the tool
        /// serving it (`activities.getDescriptor`, `incidents.search` and `incidents.get`
        /// are spelled alike in both).
        pub const CATALOG: &[(&str, &str)] = &[
            (ACTIVITIES_SEARCH, super::ACTIVITIES_CATALOG),
            (
                super::ACTIVITIES_GET_DESCRIPTOR,
                super::ACTIVITIES_GET_DESCRIPTOR,
            ),
            (WORKFLOWS_SEARCH, super::LIST_DEFINITIONS),
            (GET_DEFINITION, super::GET_DEFINITION),
            (GET_DEFINITION_GRAPH, super::GET_DEFINITION_GRAPH),
            (FIND_USAGES, super::FIND_USAGES),
            (VALIDATE_DRAFT, super::VALIDATE_DRAFT),
            (PROPOSE_CREATE, super::PROPOSE_CREATE),
            (PROPOSE_UPDATE, super::PROPOSE_UPDATE),
            (INSTANCE_SEARCH, super::INSTANCE_SEARCH),
            (INSTANCE_GET, super::INSTANCE_GET),
            (EXECUTION_HISTORY, super::EXECUTION_HISTORY),
            (INSTANCE_ACTIVITY_STATE, super::INSTANCE_ACTIVITY_STATE),
            (super::INCIDENTS_SEARCH, super::INCIDENTS_SEARCH),
            (super::INCIDENTS_GET, super::INCIDENTS_GET),
            (PROPOSE_RETRY, super::PROPOSE_RETRY),
            (PROPOSE_CANCEL, super::PROPOSE_CANCEL),
            (PROPOSE_RESTART, super::PROPOSE_RESTART),
            (PROPOSE_DELETE, super::PROPOSE_DELETE),
            (PROPOSE_PUBLISH, super::PROPOSE_PUBLISH),
            (PROPOSE_UNPUBLISH, super::PROPOSE_UNPUBLISH),
        ];
    }
}
