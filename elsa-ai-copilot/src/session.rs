//! What a Copilot session is configured with, and what a turn sends it.
//!
//! A Weaver conversation is one Copilot session. It is created once (named, so that the
//! runtime keeps it on disk) and then resumed for every turn with that turn's settings:
//! the agent's instructions as the whole system message, the agent as the session's custom
//! agent, and exactly the tools the host authorized for the turn (nothing of the CLI's own).
//! Between turns it is disconnected, which also makes a restarted CLI pick it up again.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use elsa_ai_abstractions::{AiAgentDefinition, AiMessage, AiResolvedContext, MessageRole};
use github_copilot_sdk::handler::PermissionHandler;
use github_copilot_sdk::hooks::SessionHooks;
use github_copilot_sdk::{
    CustomAgentConfig, LargeToolOutputConfig, ProviderConfig, ResumeSessionConfig, SessionConfig,
    SessionId, SystemMessageConfig, Tool,
};

use crate::config::{ByokEndpoint, ResolvedConfig};

/// How many events a turn's subscription buffers before it reports lag; the turn's event
/// loop drains it continuously, so this only absorbs bursts.
const EVENT_BUFFER: usize = 4096;

/// The settings every session of a provider shares.
#[derive(Clone, Debug)]
pub(crate) struct SessionSettings {
    model: Option<String>,
    endpoint: Option<ByokEndpoint>,
    workspace: PathBuf,
}

/// What one turn adds to the session: its tools and the handlers that govern them.
pub(crate) struct TurnTools {
    /// The SDK tools, one per authorized Weaver tool.
    pub tools: Vec<Tool>,
    /// Their function names, the only tools the session may offer.
    pub wire_names: Vec<String>,
    /// Approves exactly those tools.
    pub permissions: Arc<dyn PermissionHandler>,
    /// Governs calls to any other tool.
    pub guard: Arc<dyn SessionHooks>,
}

impl SessionSettings {
    pub(crate) fn new(config: &ResolvedConfig, workspace: PathBuf) -> Self {
        Self {
            model: config.model.clone(),
            endpoint: config.endpoint.clone(),
            workspace,
        }
    }

    /// The BYOK provider configuration, with the key, when an endpoint is configured.
    /// Never logged: the SDK's `Debug` of it prints the key.
    fn provider(&self) -> Option<ProviderConfig> {
        let endpoint = self.endpoint.as_ref()?;
        let mut provider = ProviderConfig::default();
        provider.provider_type = Some(endpoint.kind.as_str().to_owned());
        provider.base_url = endpoint.base_url.clone();
        provider.api_key = endpoint.api_key.as_ref().map(|key| key.expose().to_owned());
        provider.wire_api = endpoint.wire_api.map(|api| api.as_str().to_owned());
        Some(provider)
    }

    /// Tool results reach the model whole: the host already clamped them to its budget, and
    /// the runtime would otherwise write large ones to a temporary file and show the model
    /// a preview it can only page through with tools the session does not offer.
    fn large_output() -> LargeToolOutputConfig {
        LargeToolOutputConfig::new().with_enabled(false)
    }

    fn system_message(agent: &AiAgentDefinition) -> SystemMessageConfig {
        SystemMessageConfig::new()
            .with_mode("replace")
            .with_content(agent.instructions.clone())
    }

    /// The configuration that creates a conversation's session: no tools at all, and every
    /// permission refused, until a turn resumes it with the turn's tools.
    pub(crate) fn create(
        &self,
        session_id: &str,
        name: String,
        agent: &AiAgentDefinition,
        permissions: Arc<dyn PermissionHandler>,
    ) -> SessionConfig {
        let mut config = SessionConfig::default();
        config.session_id = Some(SessionId::new(session_id));
        config.name = Some(name);
        config.model = self.model.clone();
        config.provider = self.provider();
        config.streaming = Some(true);
        config.system_message = Some(Self::system_message(agent));
        config.available_tools = Some(Vec::new());
        config.working_directory = Some(self.workspace.clone());
        config.large_output = Some(Self::large_output());
        config.enable_config_discovery = Some(false);
        config.enable_session_telemetry = Some(false);
        config.permission_handler = Some(permissions);
        config
    }

    /// The configuration that resumes the session for one turn.
    pub(crate) fn resume(
        &self,
        session_id: &str,
        agent: &AiAgentDefinition,
        turn: TurnTools,
    ) -> ResumeSessionConfig {
        let mut scoped = CustomAgentConfig::new(agent.name.clone(), String::new());
        scoped.display_name = Some(agent.display_name.clone());
        scoped.description = Some(agent.description.clone());
        scoped.tools = Some(turn.wire_names.clone());
        scoped.infer = Some(false);

        let mut config = ResumeSessionConfig::new(SessionId::new(session_id));
        config.model = self.model.clone();
        config.provider = self.provider();
        config.streaming = Some(true);
        config.system_message = Some(Self::system_message(agent));
        config.tools = Some(turn.tools);
        config.available_tools = Some(turn.wire_names);
        config.custom_agents = Some(vec![scoped]);
        config.agent = Some(agent.name.clone());
        config.working_directory = Some(self.workspace.clone());
        config.large_output = Some(Self::large_output());
        config.enable_config_discovery = Some(false);
        config.enable_session_telemetry = Some(false);
        config.permission_handler = Some(turn.permissions);
        config.hooks_handler = Some(turn.guard);
        config.event_buffer_capacity = Some(EVENT_BUFFER);
        config
    }
}

/// The text a turn sends: on a session's first turn, the conversation so far (a session
/// opened for an existing conversation does not know it yet); then the turn's resolved
/// attachments; then the user's message. Everything in it was redacted by the host.
pub(crate) fn turn_prompt(
    message: &str,
    history: &[AiMessage],
    context: &[AiResolvedContext],
) -> String {
    let mut prompt = String::new();
    if !history.is_empty() {
        prompt.push_str("<conversation_history>\n");
        for earlier in history {
            let role = match earlier.role {
                MessageRole::User => "user",
                MessageRole::Assistant => "assistant",
                MessageRole::Tool => "tool",
                // A role newer than this provider is left out of the history.
                _ => continue,
            };
            let _ = writeln!(prompt, "{role}: {}", earlier.content);
        }
        prompt.push_str("</conversation_history>\n\n");
    }
    for attachment in context {
        prompt.push_str(&attachment.prompt_block());
        prompt.push('\n');
    }
    prompt.push_str(message);
    prompt
}

/// A session name the runtime accepts (at most 100 characters, no quotes or control
/// characters) that says which conversation the session belongs to.
pub(crate) fn session_name(conversation_id: &str) -> String {
    let id: String = conversation_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(64)
        .collect();
    format!("weaver conversation {id}")
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use elsa_ai_abstractions::AttachmentKind;
    use github_copilot_sdk::handler::DenyAllHandler;
    use serde_json::json;

    use super::*;
    use crate::config::CopilotProviderConfig;

    fn agent() -> AiAgentDefinition {
        serde_json::from_value(json!({
            "name": "workflow-author", "displayName": "Workflow author", "description": "Drafts.",
            "instructions": "You help with workflows.", "allowedTools": ["workflow.getDefinition"],
            "allowedContextProviders": [], "allowedMcpServers": [], "permissions": [], "enabled": true,
        }))
        .unwrap()
    }

    fn settings(api_key: Option<&str>) -> SessionSettings {
        let config = CopilotProviderConfig {
            api_key_env: api_key.map(|_| "KEY".to_owned()),
            ..CopilotProviderConfig::openai_compatible("http://127.0.0.1:1/v1", "llama3")
        };
        let key = api_key.map(str::to_owned);
        let resolved = config.resolve(move |_| key.clone()).unwrap();
        SessionSettings::new(&resolved, PathBuf::from("/tmp/workspace"))
    }

    struct NoHooks;
    impl SessionHooks for NoHooks {}

    #[test]
    fn a_session_is_created_without_any_tool() {
        let config = settings(Some("sk-1")).create(
            "s-1",
            "weaver conversation c".into(),
            &agent(),
            Arc::new(DenyAllHandler),
        );
        assert_eq!(config.session_id.as_deref(), Some("s-1"));
        assert_eq!(
            config.available_tools,
            Some(Vec::new()),
            "no CLI built-in tool"
        );
        assert!(config.tools.is_none());
        assert_eq!(config.model.as_deref(), Some("llama3"));
        assert_eq!(config.streaming, Some(true));
        let system = config.system_message.unwrap();
        assert_eq!(system.mode.as_deref(), Some("replace"));
        assert_eq!(system.content.as_deref(), Some("You help with workflows."));
        let provider = config.provider.unwrap();
        assert_eq!(provider.provider_type.as_deref(), Some("openai"));
        assert_eq!(provider.base_url, "http://127.0.0.1:1/v1");
        assert_eq!(provider.api_key.as_deref(), Some("sk-1"));
        assert_eq!(
            config.working_directory.as_deref(),
            Some(std::path::Path::new("/tmp/workspace"))
        );
        assert!(config.permission_handler.is_some());
    }

    #[test]
    fn a_turn_resumes_with_exactly_its_tools_under_the_agent() {
        let turn = TurnTools {
            tools: vec![Tool::new("workflow_getDefinition")],
            wire_names: vec!["workflow_getDefinition".into()],
            permissions: Arc::new(DenyAllHandler),
            guard: Arc::new(NoHooks),
        };
        let config = settings(None).resume("s-1", &agent(), turn);
        assert_eq!(config.session_id, "s-1");
        assert_eq!(
            config.available_tools,
            Some(vec!["workflow_getDefinition".to_owned()])
        );
        assert_eq!(config.tools.as_ref().map(Vec::len), Some(1));
        let agents = config.custom_agents.unwrap();
        assert_eq!(agents.len(), 1);
        assert_eq!(agents[0].name, "workflow-author");
        assert_eq!(
            agents[0].tools,
            Some(vec!["workflow_getDefinition".to_owned()])
        );
        assert_eq!(
            agents[0].prompt, "",
            "the instructions are the system message, once"
        );
        assert_eq!(agents[0].infer, Some(false));
        assert_eq!(config.agent.as_deref(), Some("workflow-author"));
        assert!(config.hooks_handler.is_some() && config.permission_handler.is_some());
        assert_eq!(
            config.large_output.and_then(|l| l.enabled),
            Some(false),
            "results reach the model whole"
        );
        assert_eq!(
            config.provider.unwrap().api_key,
            None,
            "a local endpoint without a key"
        );
    }

    #[test]
    fn the_prompt_carries_history_then_context_then_the_message() {
        assert_eq!(turn_prompt("Hello", &[], &[]), "Hello");
        let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let history = [
            AiMessage {
                role: MessageRole::User,
                content: "What is wf-1?".into(),
                timestamp: at,
            },
            AiMessage {
                role: MessageRole::Assistant,
                content: "A workflow.".into(),
                timestamp: at,
            },
        ];
        let context = [AiResolvedContext {
            kind: AttachmentKind::WorkflowDefinition,
            reference_id: "wf-1".into(),
            title: "Say \"hi\"".into(),
            content: json!({"name": "Hello"}),
            truncated: false,
        }];
        let prompt = turn_prompt("And now?", &history, &context);
        assert_eq!(
            prompt,
            "<conversation_history>\nuser: What is wf-1?\nassistant: A workflow.\n</conversation_history>\n\n\
             <context kind=\"WorkflowDefinition\" reference=\"wf-1\" title=\"Say  hi \" truncated=\"false\">\n\
             {\"name\":\"Hello\"}\n</context>\n\nAnd now?"
        );
    }

    #[test]
    fn session_names_are_what_the_runtime_accepts() {
        assert_eq!(session_name("conv-1"), "weaver conversation conv-1");
        let odd = format!("a\"b\nc{}", "x".repeat(200));
        let name = session_name(&odd);
        assert!(name.len() <= 100 && !name.contains(['"', '\n']), "{name}");
    }
}
