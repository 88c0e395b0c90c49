//! What the API returns: the wire shapes of responses, built from the contract models.
//!
//! They are the handler types the OpenAPI document is generated from, so the document
//! describes exactly what is sent. JSON field names are camelCase.

use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiAgentDefinition, AiAuditEvent, AiConversation, AiMessage, AiProposal, AiProviderInfo,
    AiStreamEvent, AiStreamEventType, AiToolDefinition, AttachmentKind, AuditBehavior,
    AuditOutcome, DangerLevel, MessageRole, OperationPlan, ProposalKind, ProposalStatus,
    StreamPayload, TargetResult, TenantBehavior, ToolEnablement, ToolMutability, ToolSource,
};
use elsa_ai_host::{ProposalAction, TargetState};
use elsa_ai_mcp::McpServerStatus;
use elsa_workflows::{Diagnostic, GraphDiff, Page, WorkflowDefinition};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// One page of a listing, newest first unless the endpoint says otherwise.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageView<T> {
    /// The items on this page.
    pub items: Vec<T>,
    /// How many items matched in all.
    pub total: usize,
    /// The offset this page starts at.
    pub offset: usize,
    /// The page size that was applied.
    pub limit: usize,
    /// Whether more items follow this page.
    pub has_more: bool,
}

impl<T> PageView<T> {
    /// The view of `page`, each item mapped through `view`.
    pub fn of<U>(page: Page<U>, view: impl FnMut(U) -> T) -> Self {
        let has_more = page.has_more();
        let page = page.map(view);
        Self {
            items: page.items,
            total: page.total,
            offset: page.offset,
            limit: page.limit,
            has_more,
        }
    }
}

/// One event of a conversation's stream: the `data` of an SSE event.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StreamEventView {
    /// The event type (also the SSE event name).
    #[serde(rename = "type")]
    #[schema(schema_with = crate::schema::stream_event_type)]
    pub event_type: AiStreamEventType,
    /// The conversation.
    pub conversation_id: String,
    /// Gap-free position in the conversation's stream, from 1 (also the SSE id).
    pub sequence: u64,
    /// When the event was produced.
    pub timestamp: DateTime<Utc>,
    /// Event-specific payload, redacted (shared with the journal and other subscribers).
    #[schema(schema_with = crate::schema::any_json)]
    pub data: StreamPayload,
}

impl From<AiStreamEvent> for StreamEventView {
    fn from(event: AiStreamEvent) -> Self {
        Self {
            event_type: event.event_type,
            conversation_id: event.conversation_id.as_str().to_owned(),
            sequence: event.sequence,
            timestamp: event.timestamp,
            data: event.data,
        }
    }
}

/// A tool's metadata as a caller may see it.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolView {
    /// Stable, namespaced name such as `workflow.getDefinition`, in the spelling the server
    /// offers (`[tools] names`).
    pub name: String,
    /// The other names the tool answers to (upstream Elsa's grounding name, or the canonical
    /// name when the grounding one is offered); calls, enablement and agents accept them too.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// Name for people.
    pub display_name: String,
    /// What the tool does.
    pub description: String,
    /// JSON Schema of the arguments (Elsa Studio's name for it).
    #[schema(schema_with = crate::schema::any_json)]
    pub schema: Value,
    /// The same schema, under the name earlier clients read.
    #[schema(schema_with = crate::schema::any_json)]
    pub input_schema: Value,
    /// Read-only, proposal or administrative.
    #[schema(schema_with = crate::schema::mutability)]
    pub mutability: ToolMutability,
    /// Potential for harm.
    #[schema(schema_with = crate::schema::danger_level)]
    pub danger_level: DangerLevel,
    /// Permissions a caller must hold, all of them.
    #[schema(schema_with = crate::schema::permissions)]
    pub permissions: Vec<String>,
    /// Tenant relationship.
    #[schema(schema_with = crate::schema::tenant_behavior)]
    pub tenant_behavior: TenantBehavior,
    /// What the audit log records.
    #[schema(schema_with = crate::schema::audit_behavior)]
    pub audit_behavior: AuditBehavior,
    /// Agents allowed to use it; absent means any agent whose scope names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_agents: Option<Vec<String>>,
    /// Where the tool comes from.
    #[schema(schema_with = crate::schema::tool_source)]
    pub source: ToolSource,
    /// Whether it is on before an administrator decides.
    pub enabled_by_default: bool,
    /// Whether the caller may use it now (always true: the list holds only enabled tools).
    pub is_enabled: bool,
    /// The execution timeout in milliseconds, when the tool sets one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl From<&AiToolDefinition> for ToolView {
    fn from(tool: &AiToolDefinition) -> Self {
        Self {
            name: tool.name.clone(),
            aliases: Vec::new(),
            display_name: tool.display_name.clone(),
            description: tool.description.clone(),
            schema: tool.input_schema.clone(),
            input_schema: tool.input_schema.clone(),
            mutability: tool.mutability,
            danger_level: tool.danger_level,
            permissions: tool
                .permissions
                .iter()
                .map(|p| p.as_str().to_owned())
                .collect(),
            tenant_behavior: tool.tenant_behavior,
            audit_behavior: tool.audit_behavior,
            allowed_agents: tool.allowed_agents.clone(),
            source: tool.source,
            enabled_by_default: tool.enabled_by_default,
            is_enabled: true,
            timeout_ms: tool
                .timeout
                .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        }
    }
}

/// What the server can do, for clients to adapt to.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CapabilitiesView {
    /// Whether chat turns stream (always true; Elsa Studio enables Send only when it is).
    pub streaming: bool,
    /// How they stream.
    pub streaming_details: StreamingView,
    /// Whether conversations survive a restart (a durable store).
    pub conversation_persistence: bool,
    /// How conversations are kept.
    pub persistence: PersistenceView,
    /// Whether AI-made changes are reviewable proposals (always true: the model never writes).
    pub proposal_review: bool,
    /// The attachment kinds the server resolves (Elsa Studio's name for them).
    #[schema(schema_with = crate::schema::attachment_kinds)]
    pub supported_attachment_kinds: Vec<AttachmentKind>,
    /// The same kinds, under the name earlier clients read.
    #[schema(schema_with = crate::schema::attachment_kinds)]
    pub attachment_kinds: Vec<AttachmentKind>,
    /// The agents a chat may run under.
    pub agents: Vec<AgentView>,
    /// The model provider behind the chat (the default one, when there are several).
    pub provider: ProviderView,
    /// Every provider the server runs, in configuration order (one unless `[[providers]]`).
    pub providers: Vec<ProviderView>,
    /// The external MCP servers the caller's tenant sees, and their state.
    pub mcp_servers: Vec<McpServerView>,
    /// The grounding families of upstream Elsa's spec 012 (`activities`, `workflows`,
    /// `proposals`, `runtime`), each as the caller may use it.
    pub grounding: Vec<GroundingFamilyView>,
}

/// One grounding family as the caller may use it: computed from their permissions, the
/// enablement decisions of their tenant (and agent), the configuration and the tenant's
/// workflow backend. Upstream's code and its documents name the fields differently; both
/// spellings are sent.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroundingFamilyView {
    /// `activities`, `workflows`, `proposals` or `runtime` (upstream's code).
    pub family: String,
    /// The same (upstream's REST contract).
    pub name: String,
    /// The family's name for people.
    pub display_name: String,
    /// What the family grounds a model in.
    pub description: String,
    /// Whether the caller may use at least one of its tools (upstream's code).
    pub available: bool,
    /// The same (upstream's REST contract).
    pub enabled: bool,
    /// The family's tools the caller may call, named as models see them.
    pub tool_names: Vec<String>,
    /// The attachment kinds that ground the family (upstream's code).
    #[schema(schema_with = crate::schema::attachment_kinds)]
    pub attachment_kinds: Vec<AttachmentKind>,
    /// The same (upstream's REST contract).
    #[schema(schema_with = crate::schema::attachment_kinds)]
    pub supported_attachment_kinds: Vec<AttachmentKind>,
    /// Why the caller may not use the family or some of its tools: a missing permission, a
    /// tool not enabled, a backend without execution records, the family turned off.
    pub disabled_reasons: Vec<String>,
    /// The first of them, when the family is not available at all (upstream's data model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
}

/// An external MCP server as capabilities report it.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerView {
    /// The configured name; its tools are `mcp.<name>.<tool>`.
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// `starting`, `ready`, `restarting` (lost, reconnecting with backoff) or `failed` (never
    /// reached; retried with backoff).
    pub state: String,
    /// Its tools registered at start-up (each disabled until an administrator enables it).
    pub tools: Vec<String>,
    /// Allowlisted tools the server did not offer at start-up.
    pub missing_tools: Vec<String>,
    /// Why the last connection failed or ended (redacted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How often the connection was re-established.
    pub restarts: u32,
}

impl From<McpServerStatus> for McpServerView {
    fn from(status: McpServerStatus) -> Self {
        Self {
            name: status.name,
            transport: status.transport.to_owned(),
            state: status.state.as_str().to_owned(),
            tools: status.tools,
            missing_tools: status.missing,
            error: status.error,
            restarts: status.restarts,
        }
    }
}

/// How chat turns stream.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StreamingView {
    /// Always `sse`.
    pub protocol: String,
    /// A client can resume a conversation's stream after the last event it saw.
    pub resumable: bool,
    /// How long a turn goes on without a client before it is cancelled, in seconds.
    pub grace_window_secs: u64,
}

/// How conversations are kept.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PersistenceView {
    /// The store: `sqlite`, `postgres` or `memory`.
    pub store: String,
    /// Whether conversations survive a restart.
    pub durable: bool,
    /// After how many days without activity a conversation is purged.
    pub retention_days: i64,
}

/// An agent a chat may run under.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentView {
    /// Stable name, such as `workflow-author`.
    pub name: String,
    /// Name for people.
    pub display_name: String,
    /// What the agent is for.
    pub description: String,
    /// The attachment kinds it accepts.
    #[schema(schema_with = crate::schema::attachment_kinds)]
    pub attachment_kinds: Vec<AttachmentKind>,
    /// Whether this is the agent used when a chat names none.
    pub default: bool,
}

impl AgentView {
    /// The view of `agent`; `default` marks the default agent.
    pub fn new(agent: &AiAgentDefinition, default: bool) -> Self {
        Self {
            name: agent.name.clone(),
            display_name: agent.display_name.clone(),
            description: agent.description.clone(),
            attachment_kinds: agent.allowed_context_providers.clone(),
            default,
        }
    }
}

/// The model provider.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderView {
    /// Stable name, such as `demo` or `copilot`.
    pub name: String,
    /// Name for people.
    pub display_name: String,
    /// The model, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// True when answers come from a script, not a model.
    pub scripted: bool,
    /// A notice for people, such as the demo provider's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

impl ProviderView {
    /// The view of `info`; scripted providers carry a notice saying so.
    pub fn new(info: AiProviderInfo) -> Self {
        let notice = info.scripted.then(|| {
            format!(
                "{}: answers are played from a documented script, not produced by a model.",
                info.display_name
            )
        });
        Self {
            name: info.name,
            display_name: info.display_name,
            model: info.model,
            scripted: info.scripted,
            notice,
        }
    }
}

/// A conversation in a listing.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationSummaryView {
    /// The conversation id (to continue it or resume its stream).
    pub id: String,
    /// The agent it runs under.
    pub agent: String,
    /// Its title (the first message, shortened).
    pub title: String,
    /// When it started.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// Days after its last change it is kept, when its owner chose fewer than the server's
    /// retention window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retain_days: Option<u32>,
}

impl From<&AiConversation> for ConversationSummaryView {
    fn from(conversation: &AiConversation) -> Self {
        Self {
            id: conversation.id.as_str().to_owned(),
            agent: conversation.agent.clone(),
            title: conversation.title.clone(),
            created_at: conversation.created_at,
            updated_at: conversation.updated_at,
            retain_days: conversation.retain_days,
        }
    }
}

/// What `DELETE /ai/conversations?actor=…` deleted.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletedConversationsView {
    /// The ids of the conversations deleted.
    pub deleted: Vec<String>,
}

/// A conversation with its messages.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationView {
    /// The conversation id.
    pub id: String,
    /// The agent it runs under.
    pub agent: String,
    /// Its title.
    pub title: String,
    /// When it started.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// Days after its last change it is kept, when its owner chose fewer than the server's
    /// retention window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retain_days: Option<u32>,
    /// Its messages, oldest first (redacted).
    pub messages: Vec<MessageView>,
}

impl From<AiConversation> for ConversationView {
    fn from(conversation: AiConversation) -> Self {
        Self {
            id: conversation.id.as_str().to_owned(),
            agent: conversation.agent,
            title: conversation.title,
            created_at: conversation.created_at,
            updated_at: conversation.updated_at,
            retain_days: conversation.retain_days,
            messages: conversation
                .messages
                .into_iter()
                .map(MessageView::from)
                .collect(),
        }
    }
}

/// One message of a conversation.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageView {
    /// Who wrote it.
    #[schema(schema_with = crate::schema::message_role)]
    pub role: MessageRole,
    /// Its text (redacted).
    pub content: String,
    /// When it was written.
    pub timestamp: DateTime<Utc>,
}

impl From<AiMessage> for MessageView {
    fn from(message: AiMessage) -> Self {
        Self {
            role: message.role,
            content: message.content,
            timestamp: message.timestamp,
        }
    }
}

/// One record of the audit trail (redacted before it was written).
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEventView {
    /// The record id.
    pub id: String,
    /// When it happened.
    pub timestamp: DateTime<Utc>,
    /// The tenant.
    pub tenant_id: String,
    /// Who did it.
    pub actor_id: String,
    /// What it was, such as `tool.invoked` or `proposal.applied`.
    pub action: String,
    /// How it ended.
    #[schema(schema_with = crate::schema::audit_outcome)]
    pub outcome: AuditOutcome,
    /// The conversation, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// The proposal, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposal_id: Option<String>,
    /// The tool, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// A one-line summary.
    pub summary: String,
    /// Structured details (redacted arguments, results, reasons).
    #[schema(schema_with = crate::schema::any_json)]
    pub details: Value,
    /// The W3C trace id of the trace the record was made in (a chat turn's, for what the
    /// turn audited), when the server traces its work.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

impl From<AiAuditEvent> for AuditEventView {
    fn from(event: AiAuditEvent) -> Self {
        Self {
            id: event.id.as_str().to_owned(),
            timestamp: event.timestamp,
            tenant_id: event.tenant_id.as_str().to_owned(),
            actor_id: event.actor_id,
            action: event.action.as_str().to_owned(),
            outcome: event.outcome,
            conversation_id: event.conversation_id.map(|id| id.as_str().to_owned()),
            proposal_id: event.proposal_id.map(|id| id.as_str().to_owned()),
            tool_name: event.tool_name.as_deref().map(str::to_owned),
            summary: event.summary,
            details: event.details.into_json(),
            trace_id: event.trace_id,
        }
    }
}

/// A tool as administrators see it: every registered tool with its enablement in the
/// administrator's tenant.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolEnablementView {
    /// The tool name.
    pub name: String,
    /// Name for people.
    pub display_name: String,
    /// Read-only, proposal or administrative.
    #[schema(schema_with = crate::schema::mutability)]
    pub mutability: ToolMutability,
    /// Potential for harm.
    #[schema(schema_with = crate::schema::danger_level)]
    pub danger_level: DangerLevel,
    /// Where the tool comes from.
    #[schema(schema_with = crate::schema::tool_source)]
    pub source: ToolSource,
    /// Whether the tool is on when no administrator has decided.
    pub enabled_by_default: bool,
    /// Whether it is on tenant-wide now (agent-specific decisions may differ).
    pub enabled: bool,
    /// Whether an administrator may turn it on (administrative tools stay off).
    pub may_enable: bool,
    /// The decisions recorded for it in this tenant.
    pub decisions: Vec<EnablementDecisionView>,
}

/// The administrators' view of every tool.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolEnablementListView {
    /// Every registered tool, sorted by name.
    pub tools: Vec<ToolEnablementView>,
}

/// An administrator's enablement decision.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnablementDecisionView {
    /// The tool.
    pub tool_name: String,
    /// One agent, or absent for every agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// On or off.
    pub enabled: bool,
    /// The administrator who decided.
    pub changed_by: String,
    /// When.
    pub changed_at: DateTime<Utc>,
}

impl From<ToolEnablement> for EnablementDecisionView {
    fn from(decision: ToolEnablement) -> Self {
        Self {
            tool_name: decision.tool_name,
            agent: decision.agent,
            enabled: decision.enabled,
            changed_by: decision.changed_by,
            changed_at: decision.changed_at,
        }
    }
}

/// The definition version a proposal was made against.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BaselineView {
    /// The definition id.
    pub definition_id: String,
    /// The version the change was based on.
    pub version: i32,
}

/// The definition version an apply wrote.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppliedVersionView {
    /// The definition id.
    pub definition_id: String,
    /// The id of the written version.
    pub version_id: String,
    /// The written version number.
    pub version: i32,
}

/// A proposal in the review inbox.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProposalSummaryView {
    /// The proposal id.
    pub id: String,
    /// Create or update.
    #[schema(schema_with = crate::schema::proposal_kind)]
    pub kind: ProposalKind,
    /// Its state.
    #[schema(schema_with = crate::schema::proposal_status)]
    pub status: ProposalStatus,
    /// The workflow it concerns.
    pub definition_id: String,
    /// The workflow's name in the proposed definition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Operations: how many instances or definitions it acts on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_count: Option<usize>,
    /// The conversation it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// Why the change is proposed (redacted).
    pub rationale: String,
    /// How many validation findings are errors.
    pub error_count: usize,
    /// How many warnings a reviewer should notice.
    pub warning_count: usize,
    /// Who requested it.
    pub created_by: String,
    /// When.
    pub created_at: DateTime<Utc>,
    /// After this instant the proposal expires.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    /// The review actions the caller may take now: `approve`, `reject`, `apply`,
    /// `dropTargets`.
    #[schema(value_type = Vec<String>)]
    pub allowed_actions: Vec<&'static str>,
}

impl ProposalSummaryView {
    /// The inbox row of `proposal` for a caller who may take `allowed_actions`.
    pub fn new(proposal: AiProposal, allowed_actions: &[ProposalAction]) -> Self {
        Self {
            id: proposal.id.as_str().to_owned(),
            kind: proposal.kind,
            status: proposal.status,
            definition_id: proposal.definition_id().to_owned(),
            name: proposal
                .definition()
                .and_then(|definition| definition.name())
                .map(str::to_owned),
            target_count: proposal.operation.as_ref().map(|plan| plan.targets.len()),
            conversation_id: proposal.conversation_id.map(|id| id.as_str().to_owned()),
            rationale: proposal.rationale,
            error_count: proposal.diagnostics.iter().filter(|d| d.is_error()).count(),
            warning_count: proposal.warnings.len(),
            created_by: proposal.created_by,
            created_at: proposal.created_at,
            expires_at: proposal.expires_at,
            allowed_actions: action_names(allowed_actions),
        }
    }
}

fn action_names(actions: &[ProposalAction]) -> Vec<&'static str> {
    actions.iter().map(|action| action.as_str()).collect()
}

/// A proposal with everything a reviewer needs: the proposed definition, its validation
/// diagnostics and the graph diff against the baseline.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProposalView {
    /// The proposal id.
    pub id: String,
    /// The owning tenant.
    pub tenant_id: String,
    /// The conversation it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// Create or update.
    #[schema(schema_with = crate::schema::proposal_kind)]
    pub kind: ProposalKind,
    /// Its state.
    #[schema(schema_with = crate::schema::proposal_status)]
    pub status: ProposalStatus,
    /// The workflow it concerns.
    pub definition_id: String,
    /// For updates: the version the change was made against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineView>,
    /// Create and update: the definition as it would be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = crate::schema::workflow_definition)]
    pub definition: Option<WorkflowDefinition>,
    /// Retry, cancel, restart, publish, unpublish, delete: what will happen, to what.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<OperationView>,
    /// For updates: the structured patch the definition came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = crate::schema::any_json)]
    pub patch: Option<Value>,
    /// Why the change is proposed (redacted).
    pub rationale: String,
    /// Points a reviewer should notice.
    pub warnings: Vec<String>,
    /// The latest validation findings.
    #[schema(schema_with = crate::schema::diagnostics)]
    pub diagnostics: Vec<Diagnostic>,
    /// What changes against the baseline (against an empty workflow for creations).
    #[schema(schema_with = crate::schema::graph_diff)]
    pub graph_diff: GraphDiff,
    /// Who requested it.
    pub created_by: String,
    /// When.
    pub created_at: DateTime<Utc>,
    /// Who approved or rejected it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reviewed_by: Option<String>,
    /// When.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reviewed_at: Option<DateTime<Utc>>,
    /// The reviewer's reason (rejections).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review_reason: Option<String>,
    /// Who applied it (or is applying it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied_by: Option<String>,
    /// When.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied_at: Option<DateTime<Utc>>,
    /// The definition version the apply wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied_version: Option<AppliedVersionView>,
    /// After this instant the proposal expires.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    /// Changes with every stored action.
    pub revision: u64,
    /// The review actions the caller may take now: `approve`, `reject`, `apply`,
    /// `dropTargets`.
    #[schema(value_type = Vec<String>)]
    pub allowed_actions: Vec<&'static str>,
}

impl ProposalView {
    /// The view of `proposal` for a caller who may take `allowed_actions`; `current` is
    /// each operation target's state now, in the targets' order (empty when not read).
    pub fn new(
        proposal: AiProposal,
        allowed_actions: &[ProposalAction],
        current: Vec<TargetState>,
    ) -> Self {
        let operation = proposal
            .operation
            .as_ref()
            .map(|plan| OperationView::new(proposal.kind, plan, current));
        let definition_id = proposal.definition_id().to_owned();
        let payload = proposal.payload;
        Self {
            id: proposal.id.as_str().to_owned(),
            tenant_id: proposal.tenant_id.as_str().to_owned(),
            conversation_id: proposal
                .conversation_id
                .as_ref()
                .map(|id| id.as_str().to_owned()),
            kind: proposal.kind,
            status: proposal.status,
            definition_id,
            baseline: proposal.baseline.map(|b| BaselineView {
                definition_id: b.definition_id,
                version: b.version,
            }),
            definition: payload.as_ref().map(|p| p.definition.clone()),
            operation,
            patch: payload.and_then(|p| p.patch),
            rationale: proposal.rationale,
            warnings: proposal.warnings,
            diagnostics: proposal.diagnostics,
            graph_diff: proposal.graph_diff,
            created_by: proposal.created_by,
            created_at: proposal.created_at,
            reviewed_by: proposal.reviewed_by,
            reviewed_at: proposal.reviewed_at,
            review_reason: proposal.review_reason,
            applied_by: proposal.applied_by,
            applied_at: proposal.applied_at,
            applied_version: proposal.applied_version.map(|v| AppliedVersionView {
                definition_id: v.definition_id,
                version_id: v.version_id,
                version: v.version,
            }),
            expires_at: proposal.expires_at,
            revision: proposal.revision,
            allowed_actions: action_names(allowed_actions),
        }
    }
}

/// What an operation proposal will do, in words and as a table of its targets.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperationView {
    /// What applying it does, in one or two sentences.
    pub description: String,
    /// Each target: its state when proposed, its state now, and after the apply its outcome.
    pub targets: Vec<TargetView>,
    /// Delete: what the deletion removes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion: Option<DeletionView>,
}

impl OperationView {
    fn new(kind: ProposalKind, plan: &OperationPlan, current: Vec<TargetState>) -> Self {
        let mut current = current.into_iter();
        Self {
            description: describe(kind, plan),
            targets: plan
                .targets
                .iter()
                .map(|target| TargetView {
                    id: target.id.clone(),
                    definition_id: target.definition_id.clone(),
                    version: target.version,
                    proposed: StateView {
                        exists: true,
                        status: target.status.map(|s| s.as_str()),
                        sub_status: target.sub_status.map(|s| s.as_str()),
                        latest_version: target.latest_version,
                        published_version: target.published_version,
                    },
                    current: current.next().map(|state| StateView {
                        exists: state.exists,
                        status: state.status.map(|s| s.as_str()),
                        sub_status: state.sub_status.map(|s| s.as_str()),
                        latest_version: state.latest_version,
                        published_version: state.published_version,
                    }),
                    outcome: target.outcome.as_ref().map(|outcome| OutcomeView {
                        result: outcome.result,
                        reason: outcome.reason.clone(),
                        new_instance_id: outcome.new_instance_id.clone(),
                    }),
                })
                .collect(),
            deletion: plan.deletion.as_ref().map(|deletion| DeletionView {
                versions: deletion.versions.clone(),
                published_version: deletion.published_version,
                instance_count: deletion.instance_count,
            }),
        }
    }
}

/// What applying `plan` does, for a reviewer.
fn describe(kind: ProposalKind, plan: &OperationPlan) -> String {
    let count = plan.targets.len();
    let instances = if count == 1 {
        "1 workflow instance".to_owned()
    } else {
        format!("{count} workflow instances")
    };
    let target = plan.targets.first();
    let definition = target.map_or("", |t| t.id.as_str());
    let version = target.map_or(0, |t| t.version);
    let skipped = "Any target whose state changed since the proposal is skipped, not acted on.";
    match kind {
        ProposalKind::Retry => format!(
            "Retry {instances}: each faulted instance runs again from its faulted activities. \
             {skipped}"
        ),
        ProposalKind::Cancel => {
            format!("Cancel {instances}: each stops for good and cannot resume. {skipped}")
        }
        ProposalKind::Restart => format!(
            "Restart {instances}: each is started again as a new instance of the same \
             definition version, with the same input and correlation id; the old instance \
             stays as it is. {skipped}"
        ),
        ProposalKind::Publish => format!(
            "Publish version {version} of workflow '{definition}'{}: its triggers start new \
             instances of this version from then on. {skipped}",
            target
                .and_then(|t| t.published_version)
                .map_or_else(String::new, |v| format!(
                    " (replacing the published version {v})"
                ))
        ),
        ProposalKind::Unpublish => format!(
            "Unpublish version {version} of workflow '{definition}': no version is published \
             afterwards, so its triggers no longer start it; running instances go on. {skipped}"
        ),
        ProposalKind::Delete => {
            let (versions, instances) = plan
                .deletion
                .as_ref()
                .map_or((0, 0), |d| (d.versions.len(), d.instance_count));
            format!(
                "Delete workflow '{definition}' with all its {versions} version(s); this cannot \
                 be undone. Its {instances} instance(s) are deleted with it. \
                 {skipped}"
            )
        }
        ProposalKind::Create | ProposalKind::Update => String::new(),
        // A kind newer than this server: named, with its targets counted.
        other => format!("{} {count} target(s). {skipped}", other.as_str()),
    }
}

/// One target of an operation.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetView {
    /// The instance id, or for definition operations the definition id.
    pub id: String,
    /// The definition (of the instance).
    pub definition_id: String,
    /// The definition version the instance runs, or the version acted on.
    pub version: i32,
    /// The state when proposed (the baseline the apply compares against).
    pub proposed: StateView,
    /// The state now, when it was read for this answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current: Option<StateView>,
    /// After the apply: what happened to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<OutcomeView>,
}

/// A target's state: status and sub-status for instances, versions for definitions.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateView {
    /// Whether the target exists.
    pub exists: bool,
    /// Instances: the status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<&'static str>,
    /// Instances: the sub-status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub_status: Option<&'static str>,
    /// Definitions: the latest version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_version: Option<i32>,
    /// Definitions: the published version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published_version: Option<i32>,
}

/// What the apply did to one target.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeView {
    /// `Done`, `Stale` (its state changed; not acted on) or `Failed`.
    #[schema(schema_with = crate::schema::target_result)]
    pub result: TargetResult,
    /// Why it was skipped or failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Restart: the new instance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_instance_id: Option<String>,
}

/// What deleting a definition removes.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletionView {
    /// Every version number it has.
    pub versions: Vec<i32>,
    /// The published version, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published_version: Option<i32>,
    /// How many instances of it exist.
    pub instance_count: u64,
}

#[cfg(test)]
mod tests {
    use elsa_ai_abstractions::ConversationId;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_stream_event_view_serialises_like_the_contract_event() {
        let event = AiStreamEvent {
            event_type: AiStreamEventType::ToolCompleted,
            conversation_id: ConversationId::new("c-1"),
            sequence: 7,
            timestamp: Utc::now(),
            data: json!({"callId": "x"}).into(),
        };
        let contract = serde_json::to_value(&event).unwrap();
        // What SSE sends is the event's own encoding: the view documents that text exactly.
        let sent = event.to_json().unwrap();
        let view = StreamEventView::from(event);
        assert_eq!(serde_json::to_value(&view).unwrap(), contract);
        assert_eq!(serde_json::to_string(&view).unwrap(), sent);
    }

    #[test]
    fn the_audit_view_serialises_like_the_contract_record() {
        let mut event = AiAuditEvent::new(
            "acme".into(),
            "alice",
            elsa_ai_abstractions::AuditAction::TOOL_INVOKED,
            AuditOutcome::Success,
            "ran",
        );
        event.tool_name = Some("workflow.getDefinition".into());
        event.conversation_id = Some(ConversationId::new("c-1"));
        event.trace_id = Some("4bf92f3577b34da6a3ce929d0e0e4736".into());
        let mut contract = serde_json::to_value(&event).unwrap();
        contract.as_object_mut().unwrap().remove("proposalId");
        let view = serde_json::to_value(AuditEventView::from(event)).unwrap();
        assert_eq!(view, contract, "absent ids are left out, the rest is equal");
    }
}
