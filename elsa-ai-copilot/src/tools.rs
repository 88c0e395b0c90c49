//! The tools of one turn as Copilot SDK tools: every call the model makes goes through the
//! host's invoker (the `ToolGovernor`), and nothing else runs.
//!
//! * An offered tool is an SDK [`Tool`] whose handler ([`GovernedTool`]) calls the invoker.
//! * A call to a tool the turn does not offer never reaches a handler (the runtime answers
//!   "does not exist"); the pre-tool-use hook ([`UnofferedToolGuard`]) sends it to the
//!   invoker anyway, so that governance decides and audits it, and refuses it with the
//!   governor's reason, which the model reads.
//! * The permission handler ([`ToolPermissions`]) approves exactly the offered tools, and
//!   refuses everything of the CLI's own (shell, file writes, URLs, MCP, memory).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiProviderToolInvocation, AiProviderToolInvoker, AiToolDefinition, AiToolResult,
};
use github_copilot_sdk::handler::{PermissionHandler, PermissionResult};
use github_copilot_sdk::hooks::{HookContext, PreToolUseInput, PreToolUseOutput, SessionHooks};
use github_copilot_sdk::tool::{ToolHandler, try_tool_parameters};
use github_copilot_sdk::{
    Error as SdkError, PermissionRequestData, PermissionRequestKind, RequestId, SessionId, Tool,
    ToolInvocation, ToolResult, ToolResultExpanded,
};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::logging::LogRedaction;
use elsa_ai_abstractions::function_names::ToolNames;

/// How long the guard waits for the start event that names an unoffered call.
const CALL_ID_WAIT: Duration = Duration::from_secs(5);

/// The results the invoker returned in this turn, with the Weaver tool name, by call id,
/// until the event stream reports the call's completion.
#[derive(Debug, Default)]
pub(crate) struct ToolResults(Mutex<HashMap<String, (String, AiToolResult)>>);

impl ToolResults {
    pub(crate) fn record(&self, call_id: &str, tool_name: &str, result: AiToolResult) {
        self.0
            .lock()
            .insert(call_id.to_owned(), (tool_name.to_owned(), result));
    }

    pub(crate) fn take(&self, call_id: &str) -> Option<(String, AiToolResult)> {
        self.0.lock().remove(call_id)
    }
}

/// The call ids of unoffered calls, announced by the turn's event loop (the runtime reports
/// a call's start, with its id, before it asks the hook about it) and claimed by the guard.
#[derive(Debug, Default)]
pub(crate) struct UnofferedCalls {
    queue: Mutex<VecDeque<(String, String)>>,
    announced: Notify,
}

impl UnofferedCalls {
    /// Records the call id of a started call to `wire`.
    pub(crate) fn announce(&self, wire: String, call_id: String) {
        self.queue.lock().push_back((wire, call_id));
        self.announced.notify_waiters();
    }

    /// The oldest announced call id for `wire`, waiting up to `wait` for it.
    async fn claim(&self, wire: &str, wait: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let announced = self.announced.notified();
            tokio::pin!(announced);
            announced.as_mut().enable();
            {
                let mut queue = self.queue.lock();
                if let Some(index) = queue.iter().position(|(name, _)| name == wire) {
                    return queue.remove(index).map(|(_, call_id)| call_id);
                }
            }
            if tokio::time::timeout_at(deadline, announced).await.is_err() {
                return None;
            }
        }
    }
}

/// Runs one Weaver tool for the Copilot runtime, through the invoker.
struct GovernedTool {
    definition: Arc<AiToolDefinition>,
    invoker: Arc<dyn AiProviderToolInvoker>,
    results: Arc<ToolResults>,
}

#[async_trait]
impl ToolHandler for GovernedTool {
    async fn call(&self, invocation: ToolInvocation) -> Result<ToolResult, SdkError> {
        let result = self
            .invoker
            .invoke(AiProviderToolInvocation {
                call_id: invocation.tool_call_id.clone(),
                tool_name: self.definition.name.clone(),
                arguments: self.definition.model_arguments(invocation.arguments),
            })
            .await;
        let reply = model_reply(&result);
        self.results
            .record(&invocation.tool_call_id, &self.definition.name, result);
        Ok(ToolResult::Expanded(reply))
    }
}

/// What the model reads: the content, or the error as JSON it can act on.
fn model_reply(result: &AiToolResult) -> ToolResultExpanded {
    let text = result.to_model_text();
    if result.is_success() {
        ToolResultExpanded::new(text, "success")
    } else {
        let message = result.error.as_ref().map_or_else(
            || text.clone(),
            |error| format!("{}: {}", error.code, error.message),
        );
        ToolResultExpanded::new(text, "failure").with_error(message)
    }
}

/// The SDK tools for a turn's authorized definitions, each under its function name.
pub(crate) fn sdk_tools(
    definitions: &[Arc<AiToolDefinition>],
    names: &ToolNames,
    invoker: &Arc<dyn AiProviderToolInvoker>,
    results: &Arc<ToolResults>,
) -> Vec<Tool> {
    definitions
        .iter()
        .filter_map(|definition| {
            let wire = names.wire(&definition.name)?;
            let mut tool = Tool::new(wire)
                .with_description(definition.description.clone())
                .with_handler(Arc::new(GovernedTool {
                    definition: definition.clone(),
                    invoker: invoker.clone(),
                    results: results.clone(),
                }));
            tool.parameters = parameters(&definition.model_schema());
            Some(tool)
        })
        .collect()
}

/// The schema as the parameters map the protocol wants; anything but an object schema
/// (which tools always have) is offered as an object without properties.
fn parameters(schema: &Value) -> github_copilot_sdk::IndexMap<String, Value> {
    let schema = match schema {
        Value::Object(_) => schema.clone(),
        _ => json!({"type": "object"}),
    };
    try_tool_parameters(schema).unwrap_or_default()
}

/// Sends calls to tools the turn does not offer through the invoker and refuses them with
/// the governor's answer. Offered tools pass (their handlers call the invoker).
pub(crate) struct UnofferedToolGuard {
    names: Arc<ToolNames>,
    invoker: Arc<dyn AiProviderToolInvoker>,
    results: Arc<ToolResults>,
    calls: Arc<UnofferedCalls>,
    /// The tool name is the model's own text, so it is logged redacted.
    log: Arc<LogRedaction>,
}

impl UnofferedToolGuard {
    pub(crate) fn new(
        names: Arc<ToolNames>,
        invoker: Arc<dyn AiProviderToolInvoker>,
        results: Arc<ToolResults>,
        calls: Arc<UnofferedCalls>,
        log: Arc<LogRedaction>,
    ) -> Self {
        Self {
            names,
            invoker,
            results,
            calls,
            log,
        }
    }

    /// Governs an unoffered call and says why it is refused. The governor denies it (the
    /// host lists exactly what it allows); should it allow it after all (the caller's
    /// rights changed during the turn), its outcome is reported to the host while the
    /// model is told the tool is not offered in this turn.
    async fn refuse(&self, wire: &str, arguments: Value) -> String {
        let tool_name = self.names.resolve(wire).unwrap_or(wire).to_owned();
        let call_id = match self.calls.claim(wire, CALL_ID_WAIT).await {
            Some(call_id) => call_id,
            None => {
                let tool = self.log.text(wire);
                tracing::warn!(%tool, "no start event named the unoffered call; using an id of its own");
                format!("weaver-unoffered-{}", uuid::Uuid::new_v4())
            }
        };
        let result = self
            .invoker
            .invoke(AiProviderToolInvocation {
                call_id: call_id.clone(),
                tool_name: tool_name.clone(),
                arguments,
            })
            .await;
        let reason = if result.is_success() {
            AiToolResult::denied(&AiError::forbidden(
                "tool_not_offered",
                format!("tool '{tool_name}' is not offered in this turn"),
            ))
            .to_model_text()
        } else {
            result.to_model_text()
        };
        self.results.record(&call_id, &tool_name, result);
        reason
    }
}

#[async_trait]
impl SessionHooks for UnofferedToolGuard {
    async fn on_pre_tool_use(
        &self,
        input: PreToolUseInput,
        _ctx: HookContext,
    ) -> Option<PreToolUseOutput> {
        if self.names.contains_wire(&input.tool_name) {
            return None;
        }
        let reason = self.refuse(&input.tool_name, input.tool_args).await;
        Some(PreToolUseOutput {
            permission_decision: Some("deny".to_owned()),
            permission_decision_reason: Some(reason),
            ..PreToolUseOutput::default()
        })
    }
}

/// Approves exactly the turn's tools and refuses every other permission request
/// (shell, file writes, URLs, MCP, memory: nothing of the CLI's own).
pub(crate) struct ToolPermissions {
    allowed: HashSet<String>,
}

impl ToolPermissions {
    pub(crate) fn new(names: &ToolNames) -> Self {
        Self {
            allowed: names.wire_names().map(str::to_owned).collect(),
        }
    }

    fn allows(&self, data: &PermissionRequestData) -> bool {
        let tool = data.extra["permissionRequest"]["toolName"].as_str();
        data.kind == Some(PermissionRequestKind::CustomTool)
            && tool.is_some_and(|tool| self.allowed.contains(tool))
    }
}

#[async_trait]
impl PermissionHandler for ToolPermissions {
    async fn handle(
        &self,
        _session_id: SessionId,
        _request_id: RequestId,
        data: PermissionRequestData,
    ) -> PermissionResult {
        if self.allows(&data) {
            PermissionResult::approve_once()
        } else {
            tracing::warn!(kind = ?data.kind, "refused a Copilot permission request outside the turn's tools");
            PermissionResult::reject(Some(
                "Only the tools Weaver offered in this turn may run.".to_owned(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use elsa_ai_abstractions::{AiError, AiToolOutcome};

    use super::*;

    struct Recording(Mutex<Vec<AiProviderToolInvocation>>, AiToolResult);

    #[async_trait]
    impl AiProviderToolInvoker for Recording {
        async fn invoke(&self, invocation: AiProviderToolInvocation) -> AiToolResult {
            self.0.lock().push(invocation);
            self.1.clone()
        }
    }

    fn invocation(tool: &str, call: &str) -> ToolInvocation {
        serde_json::from_value(json!({
            "sessionId": "s1",
            "toolCallId": call,
            "toolName": tool,
            "arguments": {"id": "wf-1", "version": 0},
        }))
        .unwrap()
    }

    fn handler(result: AiToolResult) -> (GovernedTool, Arc<Recording>, Arc<ToolResults>) {
        let invoker = Arc::new(Recording(Mutex::new(Vec::new()), result));
        let results = Arc::new(ToolResults::default());
        let schema = json!({
            "type": "object",
            "properties": {"id": {"type": "string"}, "version": {"type": "integer", "minimum": 1}},
        });
        let tool = GovernedTool {
            definition: Arc::new(definition("workflow.getDefinition", schema)),
            invoker: invoker.clone(),
            results: results.clone(),
        };
        (tool, invoker, results)
    }

    #[tokio::test]
    async fn a_call_goes_through_the_invoker_under_its_weaver_name() {
        let (tool, invoker, results) = handler(AiToolResult::success(json!({"name": "Hello"})));
        let reply = tool
            .call(invocation("workflow_getDefinition", "call-1"))
            .await
            .unwrap();
        let calls = invoker.0.lock().clone();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].tool_name, "workflow.getDefinition");
        assert_eq!(calls[0].call_id, "call-1");
        // The model's placeholder version 0, below the parameter's minimum, is taken out.
        assert_eq!(calls[0].arguments, json!({"id": "wf-1"}));
        let ToolResult::Expanded(reply) = reply else {
            panic!("expanded result")
        };
        assert_eq!(reply.result_type, "success");
        assert_eq!(reply.text_result_for_llm, r#"{"name":"Hello"}"#);
        let (name, result) = results.take("call-1").unwrap();
        assert_eq!(name, "workflow.getDefinition");
        assert!(result.is_success());
        assert!(results.take("call-1").is_none(), "taken once");
    }

    #[tokio::test]
    async fn a_denial_reaches_the_model_as_a_readable_error() {
        let denied = AiToolResult::denied(&AiError::forbidden(
            "permission_denied",
            "needs read:workflows",
        ));
        let (tool, _, results) = handler(denied.clone());
        let ToolResult::Expanded(reply) = tool
            .call(invocation("workflow_getDefinition", "c"))
            .await
            .unwrap()
        else {
            panic!("expanded result")
        };
        assert_eq!(reply.result_type, "failure");
        assert_eq!(reply.text_result_for_llm, denied.to_model_text());
        assert_eq!(
            reply.error.as_deref(),
            Some("permission_denied: needs read:workflows")
        );
        assert_eq!(results.take("c").unwrap().1.outcome, AiToolOutcome::Denied);
    }

    fn definition(name: &str, schema: Value) -> AiToolDefinition {
        serde_json::from_value(json!({
            "name": name, "displayName": name, "description": format!("does {name}"),
            "inputSchema": schema, "mutability": "ReadOnly", "dangerLevel": "Low",
            "permissions": ["read:workflows"], "tenantBehavior": "TenantScoped",
            "auditBehavior": "RecordInvocation", "allowedAgents": null, "source": "BuiltIn",
            "enabledByDefault": true,
        }))
        .unwrap()
    }

    #[test]
    fn definitions_become_tools_under_their_function_names() {
        let definitions = [
            definition(
                "workflow.getDefinition",
                json!({"type": "object", "properties": {"id": {"type": "string"}}}),
            ),
            definition("instance.get", Value::Null),
        ];
        let names = ToolNames::new(definitions.iter().map(|d| d.name.as_str())).unwrap();
        let invoker: Arc<dyn AiProviderToolInvoker> = Arc::new(Recording(
            Mutex::new(Vec::new()),
            AiToolResult::success(Value::Null),
        ));
        let tools = sdk_tools(
            &definitions.map(Arc::new),
            &names,
            &invoker,
            &Arc::default(),
        );
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[0].name, "workflow_getDefinition");
        assert_eq!(tools[0].description, "does workflow.getDefinition");
        assert_eq!(tools[0].parameters["properties"]["id"]["type"], "string");
        assert!(tools[0].handler().is_some(), "every tool is served");
        assert_eq!(
            tools[1].parameters["type"], "object",
            "a missing schema is an empty object"
        );
        assert!(
            !tools[0].skip_permission,
            "each call asks the permission handler"
        );
    }

    fn permission(kind: &str, tool: &str) -> PermissionRequestData {
        let extra =
            json!({"requestId": "r", "permissionRequest": {"kind": kind, "toolName": tool}});
        PermissionRequestData {
            kind: serde_json::from_value(json!(kind)).ok(),
            tool_call_id: None,
            managed_approval_required: None,
            managed_settings_enabled: false,
            extra,
        }
    }

    fn guard(
        result: AiToolResult,
    ) -> (
        UnofferedToolGuard,
        Arc<Recording>,
        Arc<ToolResults>,
        Arc<UnofferedCalls>,
    ) {
        let names = ToolNames::new(["workflow.getDefinition"])
            .unwrap()
            .with_known(["instance.get"]);
        let invoker = Arc::new(Recording(Mutex::new(Vec::new()), result));
        let results = Arc::new(ToolResults::default());
        let calls = Arc::new(UnofferedCalls::default());
        let guard = UnofferedToolGuard::new(
            Arc::new(names),
            invoker.clone(),
            results.clone(),
            calls.clone(),
            Arc::default(),
        );
        (guard, invoker, results, calls)
    }

    fn pre_tool_use(tool: &str) -> PreToolUseInput {
        serde_json::from_value(json!({
            "sessionId": "s1", "timestamp": 0.0, "cwd": "/", "toolName": tool, "toolArgs": {"id": "i-1"},
        }))
        .unwrap()
    }

    fn context() -> HookContext {
        HookContext {
            session_id: SessionId::new("s1"),
        }
    }

    #[tokio::test]
    async fn offered_tools_pass_the_guard() {
        let (guard, invoker, _, _) = guard(AiToolResult::success(Value::Null));
        assert!(
            guard
                .on_pre_tool_use(pre_tool_use("workflow_getDefinition"), context())
                .await
                .is_none()
        );
        assert!(
            invoker.0.lock().is_empty(),
            "the handler, not the guard, invokes offered tools"
        );
    }

    #[tokio::test]
    async fn an_unoffered_call_is_governed_under_its_announced_id_and_refused() {
        let denial = AiToolResult::denied(&AiError::forbidden(
            "permission_denied",
            "needs read:workflow-instances",
        ));
        let (guard, invoker, results, calls) = guard(denial.clone());
        let announcer = calls.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            announcer.announce("bash".into(), "other".into());
            announcer.announce("instance_get".into(), "call-9".into());
        });
        let output = guard
            .on_pre_tool_use(pre_tool_use("instance_get"), context())
            .await
            .unwrap();
        assert_eq!(output.permission_decision.as_deref(), Some("deny"));
        assert_eq!(
            output.permission_decision_reason,
            Some(denial.to_model_text())
        );
        let calls_made = invoker.0.lock().clone();
        assert_eq!(calls_made.len(), 1);
        assert_eq!(calls_made[0].call_id, "call-9");
        assert_eq!(
            calls_made[0].tool_name, "instance.get",
            "the known Weaver name"
        );
        assert_eq!(calls_made[0].arguments, json!({"id": "i-1"}));
        assert_eq!(
            results.take("call-9"),
            Some(("instance.get".to_owned(), denial))
        );
    }

    #[tokio::test]
    async fn an_unknown_unoffered_call_is_governed_under_its_own_name() {
        let denial = AiToolResult::denied(&AiError::not_found("tool 'bash'"));
        let (guard, invoker, _, calls) = guard(denial);
        calls.announce("bash".into(), "call-1".into());
        guard
            .on_pre_tool_use(pre_tool_use("bash"), context())
            .await
            .unwrap();
        assert_eq!(invoker.0.lock()[0].tool_name, "bash");
    }

    #[tokio::test]
    async fn an_unoffered_call_the_governor_allows_is_still_refused_to_the_model() {
        let (guard, _, results, calls) = guard(AiToolResult::success(json!({"id": "i-1"})));
        calls.announce("instance_get".into(), "call-2".into());
        let output = guard
            .on_pre_tool_use(pre_tool_use("instance_get"), context())
            .await
            .unwrap();
        let reason: Value =
            serde_json::from_str(&output.permission_decision_reason.unwrap()).unwrap();
        assert_eq!(reason["error"]["code"], "tool_not_offered");
        assert!(
            results.take("call-2").unwrap().1.is_success(),
            "the host learns what really ran"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_unannounced_call_gets_an_id_of_its_own() {
        let (guard, invoker, _, _) = guard(AiToolResult::denied(&AiError::not_found("x")));
        guard
            .on_pre_tool_use(pre_tool_use("instance_get"), context())
            .await
            .unwrap();
        assert!(invoker.0.lock()[0].call_id.starts_with("weaver-unoffered-"));
    }

    #[test]
    fn permissions_allow_only_the_turns_tools() {
        let names = ToolNames::new(["workflow.getDefinition"]).unwrap();
        let guard = ToolPermissions::new(&names);
        assert!(guard.allows(&permission("custom-tool", "workflow_getDefinition")));
        assert!(!guard.allows(&permission("custom-tool", "instance_get")));
        assert!(!guard.allows(&permission("shell", "workflow_getDefinition")));
        assert!(!guard.allows(&permission("write", "edit")));
        assert!(!guard.allows(&permission("url", "web_fetch")));
        let mut no_name = permission("custom-tool", "x");
        no_name.extra = json!({});
        assert!(!guard.allows(&no_name));
    }
}
