//! The demo provider: a real [`AiProvider`] that plays a documented script instead of calling
//! a model, so that the whole flow (context, governed tools, proposals, review, audit) can be
//! tried with curl and no model at all.
//!
//! # The script
//!
//! For each turn, looking at the message and the attachments the server resolved:
//!
//! 1. **No `WorkflowDefinition` attached**: it replies with a short explanation of itself and
//!    of what to attach. No tool is called.
//! 2. **A `WorkflowDefinition` attached** (the first one, if several): it calls
//!    `workflow.getDefinition` with `{"definitionId": <referenceId>}` and answers with a
//!    summary built from the tool result: name, id, version, published or not, the number of
//!    activities and connections and the first activity types. If the call is refused or
//!    fails, it says so, quoting the error code.
//! 3. **…and the message contains "propose"** (any case): after reading the definition it
//!    also calls `workflow.proposeUpdate` with the patch
//!    `[{"op": "setDescription", "description": "<name>: described by the Weaver demo provider."}]`
//!    against the version it read (`baselineVersion`) and a rationale quoting the request,
//!    then reports the proposal id and status. Proposal tools are off until an administrator
//!    enables them; a refusal is reported like any other tool error.
//! 4. **…and the message also contains "log"**: the patch also adds an `Elsa.WriteLine`
//!    activity `weaver-demo-log` to the root flowchart, connected after the flowchart's last
//!    activity, so that the proposal changes the graph (what a reviewer's diff draws).
//!
//! Every tool call goes through the invoker the host hands the provider, so the governance
//! pipeline (permissions, enablement, redaction, audit) runs exactly as for a model.

use std::sync::Arc;

use crate::{Script, ScriptStep, ScriptedProvider, TurnSoFar};
use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiProvider, AiProviderEvent, AiProviderInfo, AiProviderToolInvoker, AiSessionHandle,
    AiToolResult, AiTurnRequest, AttachmentKind, CreateAiSessionRequest,
};
use futures::stream::BoxStream;
use serde_json::{Value, json};

/// The name the demo provider reports.
pub const DEMO_PROVIDER: &str = "demo";

const GET_DEFINITION: &str = "workflow.getDefinition";
const PROPOSE_UPDATE: &str = "workflow.proposeUpdate";

/// The demo provider; see the [module documentation](self) for its script.
pub struct DemoProvider {
    script: ScriptedProvider,
}

impl std::fmt::Debug for DemoProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoProvider").finish_non_exhaustive()
    }
}

impl Default for DemoProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl DemoProvider {
    /// The demo provider.
    pub fn new() -> Self {
        Self {
            script: ScriptedProvider::directed(script_for).named(DEMO_PROVIDER),
        }
    }
}

#[async_trait]
impl AiProvider for DemoProvider {
    fn name(&self) -> &str {
        DEMO_PROVIDER
    }

    fn info(&self) -> AiProviderInfo {
        AiProviderInfo {
            name: DEMO_PROVIDER.to_owned(),
            display_name: "Demo provider (scripted, no model)".to_owned(),
            model: None,
            scripted: true,
        }
    }

    async fn create_session(
        &self,
        request: CreateAiSessionRequest,
    ) -> Result<AiSessionHandle, AiError> {
        self.script.create_session(request).await
    }

    fn execute_turn(
        &self,
        request: AiTurnRequest,
        invoker: Arc<dyn AiProviderToolInvoker>,
    ) -> BoxStream<'static, AiProviderEvent> {
        self.script.execute_turn(request, invoker)
    }
}

/// The script of one turn.
fn script_for(turn: &AiTurnRequest) -> Script {
    let Some(definition) = turn
        .context
        .iter()
        .find(|c| c.kind == AttachmentKind::WorkflowDefinition)
    else {
        return Script::new().reply(
            "I am Weaver's demo provider: I follow a fixed script instead of calling a model. \
             Attach a WorkflowDefinition to your message and I will read it with \
             workflow.getDefinition and summarise it; say \"propose\" as well and I will \
             propose a small change to its description with workflow.proposeUpdate.",
        );
    };
    let definition_id = definition.reference_id.clone();
    let lowered = turn.message.to_lowercase();
    let propose = lowered.contains("propose");
    let add_log = lowered.contains("log");
    let request_text = turn.message.clone();
    let script = Script::new()
        .tool_call(GET_DEFINITION, json!({"definitionId": definition_id}))
        .computed(|turn| ScriptStep::reply(summary(turn)));
    if !propose {
        return script;
    }
    script
        .computed(move |turn| match turn.result_of(GET_DEFINITION) {
            Some(read) if read.is_success() => ScriptStep::tool_call(
                PROPOSE_UPDATE,
                proposal_arguments(&read.content, &definition_id, &request_text, add_log),
            ),
            // Nothing to propose against: the summary already said why.
            _ => ScriptStep::Sequence(Vec::new()),
        })
        .computed(|turn| match turn.result_of(PROPOSE_UPDATE) {
            Some(result) => ScriptStep::reply(proposal_report(result)),
            None => ScriptStep::Sequence(Vec::new()),
        })
}

/// The summary of the `workflow.getDefinition` result (or why there is none).
fn summary(turn: &TurnSoFar) -> String {
    let Some(result) = turn.result_of(GET_DEFINITION) else {
        return "I could not read the workflow.".to_owned();
    };
    if !result.is_success() {
        return format!("I could not read the workflow: {}", error_text(result));
    }
    let read = &result.content;
    let text = |key: &str| read.get(key).and_then(Value::as_str);
    let id = text("definitionId").unwrap_or("?");
    let name = text("name").unwrap_or(id);
    let version = read.get("version").and_then(Value::as_i64).unwrap_or(0);
    let published = if read.get("isPublished").and_then(Value::as_bool) == Some(true) {
        "published"
    } else {
        "not published"
    };
    let activities = read
        .get("activityCount")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let connections = read
        .pointer("/connections/total")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let mut types: Vec<&str> = read
        .pointer("/activities/items")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|a| a.get("type").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    types.dedup();
    let shown: Vec<String> = types
        .iter()
        .take(5)
        .map(|t| t.rsplit('.').next().unwrap_or(t).to_owned())
        .collect();
    let mut summary = format!(
        "\"{name}\" ({id}, version {version}, {published}) has {activities} activities and \
         {connections} connections."
    );
    if !shown.is_empty() {
        summary.push_str(&format!(" It uses {}.", shown.join(", ")));
    }
    if let Some(description) = text("description").filter(|d| !d.is_empty()) {
        summary.push_str(&format!(" Its description: {description}"));
    }
    summary
}

/// The `workflow.proposeUpdate` arguments: the documented description change.
fn proposal_arguments(read: &Value, definition_id: &str, request: &str, add_log: bool) -> Value {
    let name = read
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or(definition_id);
    let version = read.get("version").and_then(Value::as_i64).unwrap_or(1);
    let request: String = request.chars().take(200).collect();
    let mut operations = vec![json!({
        "op": "setDescription",
        "description": format!("{name}: described by the Weaver demo provider."),
    })];
    if add_log {
        operations.extend(log_operations(read));
    }
    json!({
        "definitionId": definition_id,
        "baselineVersion": version,
        "operations": operations,
        "rationale": format!("The demo provider proposes a clearer description, as asked: \"{request}\""),
    })
}

/// Adds `weaver-demo-log` to the root flowchart, after its last activity: nothing when the
/// root is not a flowchart.
fn log_operations(read: &Value) -> Vec<Value> {
    let Some(root) = read
        .get("root")
        .filter(|root| root.get("type").and_then(Value::as_str) == Some("Elsa.Flowchart"))
        .and_then(|root| root.get("id"))
        .and_then(Value::as_str)
    else {
        return Vec::new();
    };
    let last = read
        .pointer("/activities/items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|a| a.get("parent").and_then(Value::as_str) == Some(root))
        .filter(|a| a.get("heldBy").is_none())
        .filter_map(|a| a.get("id").and_then(Value::as_str))
        .next_back();
    let mut operations = vec![json!({
        "op": "addActivity",
        "activity": {
            "id": "weaver-demo-log",
            "type": "Elsa.WriteLine",
            "name": "Log",
            "inputs": {"text": {"value": "Logged by the Weaver demo provider."}},
        },
    })];
    if let Some(last) = last {
        operations.push(json!({"op": "connect", "source": last, "target": "weaver-demo-log"}));
    }
    operations
}

/// What the demo says about the proposal tool's result.
fn proposal_report(result: &AiToolResult) -> String {
    if !result.is_success() {
        return format!("I could not propose the change: {}", error_text(result));
    }
    let content = &result.content;
    let id = content
        .get("proposalId")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let status = content.get("status").and_then(Value::as_str).unwrap_or("?");
    format!(
        "I proposed a new description as proposal {id} (status {status}). Nothing changes until \
         a person approves and applies it."
    )
}

fn error_text(result: &AiToolResult) -> String {
    match &result.error {
        Some(error) => format!("{} ({})", error.message, error.code),
        None => "the tool returned no result".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use elsa_ai_abstractions::{
        AiCaller, AiProviderToolInvocation, AiResolvedContext, ConversationId,
    };
    use futures::StreamExt;
    use tokio_util::sync::CancellationToken;

    use super::*;

    /// Answers like the built-in tools would, and records the calls.
    #[derive(Default)]
    struct Tools(Mutex<Vec<AiProviderToolInvocation>>);

    #[async_trait]
    impl AiProviderToolInvoker for Tools {
        async fn invoke(&self, invocation: AiProviderToolInvocation) -> AiToolResult {
            let result = match invocation.tool_name.as_str() {
                GET_DEFINITION => AiToolResult::success(json!({
                    "definitionId": "orders", "name": "Orders", "version": 3,
                    "isPublished": true, "activityCount": 4,
                    "root": {"id": "f", "type": "Elsa.Flowchart"},
                    "activities": {"total": 4, "items": [
                        {"id": "f", "type": "Elsa.Flowchart"},
                        {"id": "h", "type": "Elsa.HttpEndpoint", "parent": "f"},
                        {"id": "w1", "type": "Elsa.WriteLine", "parent": "f"},
                        {"id": "w2", "type": "Elsa.WriteLine", "parent": "f"}]},
                    "connections": {"total": 2, "items": []}
                })),
                _ => AiToolResult::success(json!({"proposalId": "p-1", "status": "Validated"})),
            };
            self.0.lock().unwrap().push(invocation);
            result
        }
    }

    fn turn(message: &str, attach: bool) -> AiTurnRequest {
        AiTurnRequest {
            session: AiSessionHandle {
                session_id: "s".into(),
                provider: DEMO_PROVIDER.into(),
                conversation_id: ConversationId::new("c"),
            },
            agent: elsa_ai_abstractions::AiAgentDefinition::new(
                "workflow-author",
                "Helps write workflows.",
            ),
            caller: AiCaller::new("alice", "acme", []),
            message: message.into(),
            history: Vec::new(),
            context: attach
                .then(|| AiResolvedContext {
                    kind: AttachmentKind::WorkflowDefinition,
                    reference_id: "orders".into(),
                    title: "Orders".into(),
                    content: json!({}),
                    truncated: false,
                })
                .into_iter()
                .collect(),
            tools: Vec::new(),
            cancellation: CancellationToken::new(),
        }
    }

    async fn play(message: &str, attach: bool) -> (String, Vec<AiProviderToolInvocation>) {
        let tools = Arc::new(Tools::default());
        let events: Vec<AiProviderEvent> = DemoProvider::new()
            .execute_turn(turn(message, attach), tools.clone())
            .collect()
            .await;
        assert_eq!(events.last(), Some(&AiProviderEvent::Completed));
        let messages: Vec<String> = events
            .iter()
            .filter_map(|e| match e {
                AiProviderEvent::AssistantMessage { text } => Some(text.clone()),
                _ => None,
            })
            .collect();
        let calls = tools.0.lock().unwrap().clone();
        (messages.join("\n"), calls)
    }

    #[tokio::test]
    async fn without_a_definition_it_explains_itself_and_calls_nothing() {
        let (text, calls) = play("hello", false).await;
        assert!(text.contains("demo provider"));
        assert!(calls.is_empty());
    }

    #[tokio::test]
    async fn with_a_definition_it_summarises_the_tool_result() {
        let (text, calls) = play("What is this?", true).await;
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].tool_name, GET_DEFINITION);
        assert_eq!(calls[0].arguments, json!({"definitionId": "orders"}));
        assert!(
            text.contains(
                "\"Orders\" (orders, version 3, published) has 4 activities and 2 connections"
            ),
            "{text}"
        );
        assert!(
            text.contains("Flowchart, HttpEndpoint, WriteLine"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn asked_to_propose_it_patches_the_description_and_reports_the_proposal() {
        let (text, calls) = play("Please PROPOSE a better description", true).await;
        assert_eq!(calls.len(), 2);
        let proposal = &calls[1];
        assert_eq!(proposal.tool_name, PROPOSE_UPDATE);
        assert_eq!(proposal.arguments["baselineVersion"], 3);
        assert_eq!(
            proposal.arguments["operations"],
            json!([{"op": "setDescription", "description": "Orders: described by the Weaver demo provider."}])
        );
        assert!(text.contains("proposal p-1 (status Validated)"), "{text}");
    }

    #[tokio::test]
    async fn asked_to_propose_a_log_it_also_adds_a_connected_activity() {
        let (_, calls) = play("Propose a log line too", true).await;
        let operations = calls[1].arguments["operations"].as_array().unwrap().clone();
        let ops: Vec<&str> = operations
            .iter()
            .map(|o| o["op"].as_str().unwrap())
            .collect();
        assert_eq!(
            ops,
            ["setDescription", "addActivity", "connect"],
            "{operations:#?}"
        );
        assert_eq!(operations[1]["activity"]["type"], "Elsa.WriteLine");
        assert_eq!(
            (&operations[2]["source"], &operations[2]["target"]),
            (&json!("w2"), &json!("weaver-demo-log"))
        );
    }

    #[test]
    fn it_is_labelled_as_scripted() {
        let info = DemoProvider::new().info();
        assert!(info.scripted);
        assert!(info.display_name.contains("no model"));
    }
}
