//! Tools: their metadata, execution contract, registry and the invoker providers call.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use elsa_workflows::{
    ActivityCatalog, ExecutionRecordStore, IncidentStore, WorkflowDefinitionStore,
    WorkflowInstanceStore,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{AiCaller, AiContextAttachment, AiError, AiProposalIntake, ConversationId, Permission};

/// Whether a tool only reads, drafts a proposal, or changes the system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub enum ToolMutability {
    /// Reads data; never writes.
    ReadOnly,
    /// Produces or validates a proposal; never writes workflows itself.
    Proposal,
    /// Changes the system directly. Always disabled in this release.
    Administrative,
}

/// How much harm a misused tool could do.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[non_exhaustive]
pub enum DangerLevel {
    /// Harmless reads.
    Low,
    /// Reads of sensitive data or drafts of changes.
    Medium,
    /// Changes with visible effect.
    High,
    /// Changes that could break production.
    Critical,
}

/// How a tool relates to tenants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub enum TenantBehavior {
    /// Reads or writes the caller's tenant's data only; needs a tenant.
    TenantScoped,
    /// Works on host-level data that belongs to no tenant.
    HostScoped,
    /// Must never run with a tenant other than the caller's, even when asked to.
    CrossTenantDenied,
}

/// What the audit log records of an invocation. Denials are recorded whatever this says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub enum AuditBehavior {
    /// Nothing beyond denials and failures.
    None,
    /// The invocation with its redacted arguments and its outcome.
    RecordInvocation,
    /// The invocation and its redacted, clamped result.
    RecordInvocationAndResult,
}

/// Where a tool comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub enum ToolSource {
    /// Shipped with Weaver.
    BuiltIn,
    /// Registered by a host or a third-party module.
    Module,
    /// Backed by a registered MCP server.
    Mcp,
}

/// Which spelling of their names tools are offered under (to models, MCP clients and tool
/// lists). Either spelling reaches the same tool; this only decides which one is shown, so
/// that a model never sees one tool twice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ToolNaming {
    /// The names of Weaver's runtime contract (`workflow.getDefinition`, `instance.get`, …).
    #[default]
    Contract,
    /// The names of upstream Elsa's grounding catalog (`workflows.getDefinition`,
    /// `instances.get`, …) where a tool has one.
    Grounding,
}

/// The metadata of a tool: what a model sees and what governance enforces.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiToolDefinition {
    /// Stable, namespaced name such as `workflow.getDefinition`: the tool's canonical name,
    /// which audit records and metrics use whatever name a call used.
    pub name: String,
    /// The name upstream Elsa's grounding catalog (its spec 012) gives the tool, when that
    /// differs from `name` (`workflows.getDefinition` for `workflow.getDefinition`). The tool
    /// answers to both wherever a tool is named; [`ToolNaming::Grounding`] offers this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grounding_name: Option<String>,
    /// Name for people.
    pub display_name: String,
    /// What the tool does, written for a model.
    pub description: String,
    /// JSON Schema of the arguments, generated from the Rust input type.
    pub input_schema: Value,
    /// Read-only, proposal or administrative.
    pub mutability: ToolMutability,
    /// Potential for harm.
    pub danger_level: DangerLevel,
    /// Permissions the caller must hold, all of them.
    pub permissions: Vec<Permission>,
    /// Tenant relationship.
    pub tenant_behavior: TenantBehavior,
    /// What the audit log records.
    pub audit_behavior: AuditBehavior,
    /// Agents allowed to use it; `None` means any agent whose scope names it.
    pub allowed_agents: Option<Vec<String>>,
    /// Origin of the tool.
    pub source: ToolSource,
    /// Whether it is on before an administrator decides. Only read-only tools may say yes.
    pub enabled_by_default: bool,
    /// How long one execution may take before it is cancelled; `None` uses the host default.
    #[serde(
        default,
        rename = "timeoutMs",
        with = "duration_millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<Duration>,
}

impl AiToolDefinition {
    /// A module's read-only tool (`source` [`ToolSource::Module`]): low danger, scoped to the
    /// caller's tenant, invocations audited, on by default, callable by callers holding every
    /// one of `permissions` (the registry refuses an empty list), any arguments object. Change
    /// a field with struct update syntax, e.g. `input_schema` from
    /// [`schema_for`](Self::schema_for).
    pub fn read_only(
        name: impl Into<String>,
        description: impl Into<String>,
        permissions: impl IntoIterator<Item = Permission>,
    ) -> Self {
        let name = name.into();
        Self {
            display_name: name.clone(),
            name,
            grounding_name: None,
            description: description.into(),
            input_schema: serde_json::json!({"type": "object"}),
            mutability: ToolMutability::ReadOnly,
            danger_level: DangerLevel::Low,
            permissions: permissions.into_iter().collect(),
            tenant_behavior: TenantBehavior::TenantScoped,
            audit_behavior: AuditBehavior::RecordInvocation,
            allowed_agents: None,
            source: ToolSource::Module,
            enabled_by_default: true,
            timeout: None,
        }
    }

    /// The same definition, also answering to `name` as its grounding name.
    pub fn with_grounding_name(mut self, name: impl Into<String>) -> Self {
        self.grounding_name = Some(name.into());
        self
    }

    /// Every name the tool answers to: `name`, then `grounding_name` if it has one.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.name.as_str()).chain(
            self.grounding_name
                .as_deref()
                .filter(|grounding| *grounding != self.name),
        )
    }

    /// The name the tool is offered under when tools are named the `naming` way.
    pub fn name_for(&self, naming: ToolNaming) -> &str {
        match naming {
            ToolNaming::Contract => &self.name,
            ToolNaming::Grounding => self.grounding_name.as_deref().unwrap_or(&self.name),
        }
    }

    /// The argument schema as a model is shown it ([`model_schema`](crate::model_schema)):
    /// without what only validation needs; calls are still checked against
    /// [`AiToolDefinition::input_schema`].
    pub fn model_schema(&self) -> Value {
        crate::model_schema(&self.input_schema)
    }

    /// A model's arguments for this tool with the optional ones it left empty taken out
    /// ([`model_arguments`](crate::model_arguments)); providers apply it to every call a
    /// model makes before the call reaches the governor.
    pub fn model_arguments(&self, arguments: Value) -> Value {
        crate::model_arguments(&self.input_schema, arguments)
    }

    /// The JSON Schema of `T`, as tools put it into [`AiToolDefinition::input_schema`].
    pub fn schema_for<T: JsonSchema>() -> Value {
        serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null)
    }
}

mod duration_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

/// The Elsa services a tool may use. There is no definition writer here on purpose:
/// AI-originated writes happen only by applying an approved proposal.
#[derive(Clone)]
pub struct AiToolServices {
    /// Workflow definitions.
    pub definitions: Arc<dyn WorkflowDefinitionStore>,
    /// Workflow instances.
    pub instances: Arc<dyn WorkflowInstanceStore>,
    /// What Elsa recorded while running instances: activity executions and execution logs.
    pub executions: Arc<dyn ExecutionRecordStore>,
    /// Incidents across instances.
    pub incidents: Arc<dyn IncidentStore>,
    /// Activity descriptors.
    pub catalog: Arc<dyn ActivityCatalog>,
    /// Where proposal tools hand their drafts.
    pub proposals: Arc<dyn AiProposalIntake>,
}

impl std::fmt::Debug for AiToolServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AiToolServices").finish_non_exhaustive()
    }
}

/// The bounds of a grounding result (SPEC §9): how many items a list holds and how many
/// bytes of compact JSON the whole result may take. A tool that would exceed them returns
/// fewer items and says so (`truncated`, `nextOffset`); the governor's result clamp still
/// applies after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroundingLimits {
    /// The most items one list result holds (upstream's default: 25).
    pub max_items: usize,
    /// The largest result in bytes of compact JSON, before the governor's clamp.
    pub max_result_bytes: usize,
}

impl Default for GroundingLimits {
    /// 25 items (upstream Elsa's default) and 32 KiB (the governor's default result budget).
    fn default() -> Self {
        Self {
            max_items: 25,
            max_result_bytes: 32 * 1024,
        }
    }
}

/// Everything a tool gets for one execution, after governance has allowed it.
#[derive(Clone, Debug)]
pub struct AiToolExecutionContext {
    /// The provider's id for this tool call (shared with the call's events and audit record).
    pub call_id: Arc<str>,
    /// Who the call is made for, with their permissions narrowed by the agent; shared by
    /// the calls of a turn.
    pub caller: Arc<AiCaller>,
    /// The agent the conversation runs under (shared by the calls of a turn).
    pub agent: Arc<str>,
    /// The conversation, when the call comes from a chat turn.
    pub conversation_id: Option<ConversationId>,
    /// The arguments, schema-validated and redacted; shared with the call's `tool.started`
    /// event and audit record rather than copied for each.
    pub arguments: Arc<Value>,
    /// The references attached to the turn; scope-limited tools read nothing outside them.
    pub attachments: Vec<AiContextAttachment>,
    /// Data access, shared by every call the governor makes (one reference count per call).
    pub services: Arc<AiToolServices>,
    /// Cancelled when the turn is cancelled or the tool's timeout expires.
    pub cancellation: CancellationToken,
    /// How large a grounding result may be.
    pub limits: GroundingLimits,
}

impl AiToolExecutionContext {
    /// Deserialises the arguments into the tool's input type.
    pub fn arguments<T: serde::de::DeserializeOwned>(&self) -> Result<T, AiError> {
        // Read in place: the arguments are not copied to be deserialised.
        T::deserialize(&*self.arguments)
            .map_err(|e| AiError::bad_request("invalid_arguments", e.to_string()))
    }
}

/// How an invocation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub enum AiToolOutcome {
    /// The tool ran and returned content.
    Success,
    /// The tool ran, or tried to, and failed.
    Error,
    /// Governance refused to run it.
    Denied,
}

/// A tool error a model can read: a stable code, the HTTP-like status and a sentence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AiToolError {
    /// Machine-readable code such as `not_found` or `permission_denied`.
    pub code: String,
    /// The status the same error would have over HTTP (404, 403, ...).
    pub status: u16,
    /// What went wrong.
    pub message: String,
}

impl From<&AiError> for AiToolError {
    fn from(error: &AiError) -> Self {
        Self {
            code: error.code().to_owned(),
            status: error.status(),
            message: error.message().to_owned(),
        }
    }
}

/// What a tool invocation returns to the provider (and, through it, the model).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiToolResult {
    /// Success, error or denial.
    pub outcome: AiToolOutcome,
    /// The result content (JSON); `null` on error or denial.
    pub content: Value,
    /// The error, when the outcome is not success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<AiToolError>,
    /// Whether `content` was clamped to the result budget.
    #[serde(default)]
    pub truncated: bool,
}

impl AiToolResult {
    /// A successful result.
    pub fn success(content: Value) -> Self {
        Self {
            outcome: AiToolOutcome::Success,
            content,
            error: None,
            truncated: false,
        }
    }

    /// A failed result.
    pub fn error(error: &AiError) -> Self {
        Self {
            outcome: AiToolOutcome::Error,
            content: Value::Null,
            error: Some(error.into()),
            truncated: false,
        }
    }

    /// A governance denial.
    pub fn denied(error: &AiError) -> Self {
        Self {
            outcome: AiToolOutcome::Denied,
            ..Self::error(error)
        }
    }

    /// Whether the tool ran successfully.
    pub fn is_success(&self) -> bool {
        self.outcome == AiToolOutcome::Success
    }

    /// The text a provider hands the model: the content, or the error as readable JSON.
    pub fn to_model_text(&self) -> String {
        match &self.error {
            None => self.content.to_string(),
            Some(error) => serde_json::json!({ "error": error }).to_string(),
        }
    }
}

/// A tool: metadata plus an async execution.
#[async_trait]
pub trait AiTool: Send + Sync {
    /// The tool's metadata.
    fn definition(&self) -> &AiToolDefinition;

    /// Runs the tool. Only the governance pipeline calls this.
    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError>;
}

/// A tool whose execution is one async function of its context: the shortest way for a host
/// or a module to write a tool ([`tool_fn`]). Governance treats it like any other tool.
pub struct AiToolFn<F> {
    definition: AiToolDefinition,
    execute: F,
}

/// A tool defined by `definition` that runs `execute` (see [`AiToolFn`]).
pub fn tool_fn<F, Fut>(definition: AiToolDefinition, execute: F) -> Arc<dyn AiTool>
where
    F: Fn(AiToolExecutionContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Value, AiError>> + Send + 'static,
{
    Arc::new(AiToolFn {
        definition,
        execute,
    })
}

impl<F> std::fmt::Debug for AiToolFn<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AiToolFn")
            .field("name", &self.definition.name)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl<F, Fut> AiTool for AiToolFn<F>
where
    F: Fn(AiToolExecutionContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Value, AiError>> + Send + 'static,
{
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        (self.execute)(context).await
    }
}

/// A tool that registers itself when its crate is linked:
/// `inventory::submit! { AiToolRegistration::new(|| Arc::new(MyTool::default())) }`.
pub struct AiToolRegistration {
    create: fn() -> Arc<dyn AiTool>,
}

impl AiToolRegistration {
    /// Registers a constructor of the tool.
    pub const fn new(create: fn() -> Arc<dyn AiTool>) -> Self {
        Self { create }
    }

    /// Builds the tool.
    pub fn create(&self) -> Arc<dyn AiTool> {
        (self.create)()
    }
}

inventory::collect!(AiToolRegistration);

/// Every tool linked into the program through [`AiToolRegistration`].
pub fn linked_tools() -> impl Iterator<Item = Arc<dyn AiTool>> {
    inventory::iter::<AiToolRegistration>
        .into_iter()
        .map(AiToolRegistration::create)
}

/// Who is asking for tools, and optional filters.
#[derive(Clone, Debug, PartialEq)]
pub struct AiToolQuery {
    /// The caller; tools they may not call are never listed.
    pub caller: AiCaller,
    /// The agent; tools outside its scope are never listed.
    pub agent: Option<String>,
    /// Only tools of this mutability.
    pub mutability: Option<ToolMutability>,
    /// Only tools of this danger level.
    pub danger_level: Option<DangerLevel>,
}

impl AiToolQuery {
    /// A query for everything `caller` may use.
    pub fn for_caller(caller: AiCaller) -> Self {
        Self {
            caller,
            agent: None,
            mutability: None,
            danger_level: None,
        }
    }
}

/// The registry of tools, filtered for the caller.
#[async_trait]
pub trait AiToolRegistry: Send + Sync {
    /// The definitions of every tool the query's caller may call, sorted by name. They are
    /// shared, not copied: input schemas dominate the cost of listing many tools.
    async fn list(&self, query: &AiToolQuery) -> Result<Vec<Arc<AiToolDefinition>>, AiError>;

    /// The tool of that name, if the query's caller may call it.
    async fn find(
        &self,
        name: &str,
        query: &AiToolQuery,
    ) -> Result<Option<Arc<dyn AiTool>>, AiError>;
}

/// A tool call as the provider makes it: only name, arguments and the provider's call id.
/// Who is calling and under which agent comes from the turn the invoker is bound to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiProviderToolInvocation {
    /// The provider's id for the call.
    pub call_id: String,
    /// The tool's Weaver name.
    pub tool_name: String,
    /// The arguments as the model produced them.
    pub arguments: Value,
}

/// The one door through which a provider runs a tool: the governance pipeline.
#[async_trait]
pub trait AiProviderToolInvoker: Send + Sync {
    /// Runs the call under governance. Denials and failures are results, never panics.
    async fn invoke(&self, invocation: AiProviderToolInvocation) -> AiToolResult;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_serialise_camel_case_with_timeout_millis() {
        let definition = AiToolDefinition {
            name: "demo.echo".into(),
            grounding_name: None,
            display_name: "Echo".into(),
            description: "Echoes".into(),
            input_schema: serde_json::json!({"type": "object"}),
            mutability: ToolMutability::ReadOnly,
            danger_level: DangerLevel::Low,
            permissions: vec![Permission::READ_WORKFLOWS],
            tenant_behavior: TenantBehavior::TenantScoped,
            audit_behavior: AuditBehavior::RecordInvocation,
            allowed_agents: None,
            source: ToolSource::Module,
            enabled_by_default: true,
            timeout: Some(Duration::from_millis(1500)),
        };
        let json = serde_json::to_value(&definition).unwrap();
        assert_eq!(json["timeoutMs"], 1500);
        assert_eq!(json["mutability"], "ReadOnly");
        assert_eq!(json["tenantBehavior"], "TenantScoped");
        assert_eq!(json["permissions"][0], "read:workflows");
        let back: AiToolDefinition = serde_json::from_value(json).unwrap();
        assert_eq!(back, definition);
    }

    #[test]
    fn error_results_read_as_json_for_the_model() {
        let result = AiToolResult::denied(&AiError::forbidden("permission_denied", "no"));
        assert_eq!(result.outcome, AiToolOutcome::Denied);
        let text: Value = serde_json::from_str(&result.to_model_text()).unwrap();
        assert_eq!(text["error"]["status"], 403);
        assert_eq!(text["error"]["code"], "permission_denied");
    }
}
