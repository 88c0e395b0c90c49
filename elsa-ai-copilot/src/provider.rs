//! [`CopilotProvider`]: Weaver's [`AiProvider`] on the GitHub Copilot runtime.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiProvider, AiProviderEvent, AiProviderInfo, AiProviderToolInvoker, AiSessionHandle,
    AiTextRedactor, AiTurnRequest, CreateAiSessionRequest,
};
use futures::StreamExt;
use futures::stream::BoxStream;
use parking_lot::Mutex;
use tokio_stream::wrappers::UnboundedReceiverStream;

use crate::config::{CopilotProviderConfig, Secret};
use crate::logging::LogRedaction;
use crate::runtime::{CliRuntime, sdk_error};
use crate::session::{SessionSettings, session_name};
use crate::tools::ToolPermissions;
use crate::turn::{self, Reporter, TurnSetup};
use elsa_ai_abstractions::function_names::ToolNames;

/// An [`AiProvider`] that runs turns on GitHub Copilot: the official SDK drives one
/// Copilot CLI process (started on first use, restarted if it died, stopped by
/// [`shutdown`](Self::shutdown)), each Weaver conversation is a Copilot session, and every
/// tool call the model makes goes through the host's tool invoker.
///
/// Cheap to clone; clones share the CLI process and the sessions.
#[derive(Clone)]
pub struct CopilotProvider {
    inner: Arc<Inner>,
}

struct Inner {
    runtime: CliRuntime,
    settings: SessionSettings,
    model: Option<String>,
    /// The secrets read from the configured variables (endpoint key, GitHub token).
    secrets: Vec<Secret>,
    log: Arc<LogRedaction>,
    /// The sessions this provider created, by session id.
    sessions: Mutex<HashMap<String, SessionRecord>>,
}

/// What the provider remembers of a session between turns.
#[derive(Debug, Default)]
struct SessionRecord {
    /// How many turns the session has started.
    turns: u64,
}

impl std::fmt::Debug for CopilotProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CopilotProvider")
            .field("runtime", &self.inner.runtime)
            .field("model", &self.inner.model)
            .field("sessions", &self.inner.sessions.lock().len())
            .finish()
    }
}

impl CopilotProvider {
    /// The provider's name, in session handles, audit records and capability screens.
    pub const NAME: &'static str = "copilot";

    /// A provider for `config`, reading its secrets (`api_key_env`, `github_token_env`)
    /// from the process environment. Nothing is started yet; a configuration that cannot
    /// work is refused now, with a 503 `provider_misconfigured`.
    pub fn new(config: &CopilotProviderConfig) -> Result<Self, AiError> {
        Self::with_secrets(config, |name| std::env::var(name).ok())
    }

    /// Like [`new`](Self::new), but reads the variables `config` names through `secrets`
    /// (a host's secret store, or a test's own values) instead of the environment.
    pub fn with_secrets(
        config: &CopilotProviderConfig,
        secrets: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, AiError> {
        let resolved = config.resolve(secrets)?;
        let log = Arc::new(LogRedaction::default());
        let runtime = CliRuntime::new(&resolved, log.clone()).map_err(|error| {
            AiError::unavailable(
                "provider_misconfigured",
                format!("the Copilot provider's private directory could not be created: {error}"),
            )
        })?;
        let settings = SessionSettings::new(&resolved, runtime.workspace());
        Ok(Self {
            inner: Arc::new(Inner {
                runtime,
                settings,
                secrets: resolved
                    .endpoint
                    .and_then(|endpoint| endpoint.api_key)
                    .into_iter()
                    .chain(resolved.github_token)
                    .collect(),
                model: resolved.model,
                log,
                sessions: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// Stops the Copilot CLI and refuses further sessions and turns (503
    /// `provider_shut_down`). Running turns fail as the CLI goes away.
    pub async fn shutdown(&self) {
        self.inner.runtime.shutdown().await;
    }

    /// The process id of the running Copilot CLI, if one runs (for diagnostics).
    pub async fn cli_pid(&self) -> Option<u32> {
        self.inner.runtime.pid().await
    }

    /// The secret values this provider read (the endpoint's key, the GitHub token), for the
    /// host to register with its redactor like every other configured secret.
    pub fn secrets(&self) -> Vec<String> {
        let secrets = self.inner.secrets.iter();
        secrets.map(|secret| secret.expose().to_owned()).collect()
    }

    /// Redacts what the provider logs from now on (session events at trace level, the CLI's
    /// error messages) with `redactor`. Until a host calls this, such text is not logged.
    pub fn redact_logs_with(&self, redactor: Arc<dyn AiTextRedactor>) {
        self.inner.log.set(redactor);
    }
}

#[async_trait]
impl AiProvider for CopilotProvider {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn info(&self) -> AiProviderInfo {
        AiProviderInfo {
            name: Self::NAME.to_owned(),
            display_name: "GitHub Copilot".to_owned(),
            model: self.inner.model.clone(),
            scripted: false,
        }
    }

    /// Creates the conversation's Copilot session (starting the CLI if none runs) and
    /// leaves it on disk, disconnected, for the first turn.
    async fn create_session(
        &self,
        request: CreateAiSessionRequest,
    ) -> Result<AiSessionHandle, AiError> {
        let client = self.inner.runtime.client().await?;
        let session_id = format!("weaver-{}", uuid::Uuid::new_v4());
        let config = self.inner.settings.create(
            &session_id,
            session_name(request.conversation_id.as_str()),
            &request.agent,
            Arc::new(ToolPermissions::new(&ToolNames::default())),
        );
        let session = client
            .create_session(config)
            .await
            .map_err(|error| sdk_error("creating a Copilot session", &error))?;
        if let Err(error) = session.disconnect().await {
            let error = self.inner.log.error(&error);
            tracing::warn!(session = %session_id, %error, "the new Copilot session could not be disconnected");
        }
        self.inner
            .sessions
            .lock()
            .insert(session_id.clone(), SessionRecord::default());
        tracing::info!(session = %session_id, conversation = %request.conversation_id, "Copilot session created");
        Ok(AiSessionHandle {
            session_id,
            provider: Self::NAME.to_owned(),
            conversation_id: request.conversation_id,
        })
    }

    fn execute_turn(
        &self,
        request: AiTurnRequest,
        invoker: Arc<dyn AiProviderToolInvoker>,
    ) -> BoxStream<'static, AiProviderEvent> {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        let inner = self.inner.clone();
        tokio::spawn(async move {
            let reporter = Reporter(sender);
            let first_turn = {
                let mut sessions = inner.sessions.lock();
                match sessions.get_mut(&request.session.session_id) {
                    Some(record) => {
                        record.turns += 1;
                        Some(record.turns == 1)
                    }
                    None => None,
                }
            };
            let Some(first_turn) = first_turn else {
                reporter.send(AiProviderEvent::Failed {
                    error: AiError::NotFound {
                        code: "provider_session_not_found".into(),
                        message: "the Copilot session of this conversation is not open".into(),
                    },
                });
                return;
            };
            let client = match inner.runtime.client().await {
                Ok(client) => client,
                Err(error) => {
                    reporter.send(AiProviderEvent::Failed { error });
                    return;
                }
            };
            let setup = TurnSetup {
                client,
                settings: inner.settings.clone(),
                log: inner.log.clone(),
                first_turn,
            };
            turn::run(setup, request, invoker, &reporter).await;
        });
        UnboundedReceiverStream::new(receiver).boxed()
    }

    /// Forgets the session and deletes it from the runtime (when one runs; a stopped
    /// runtime's sessions go with its private directory).
    async fn close_session(&self, session: &AiSessionHandle) -> Result<(), AiError> {
        if self
            .inner
            .sessions
            .lock()
            .remove(&session.session_id)
            .is_none()
        {
            return Ok(());
        }
        let Some(client) = self.inner.runtime.running().await else {
            return Ok(());
        };
        let id = github_copilot_sdk::SessionId::new(session.session_id.as_str());
        match client.delete_session(&id).await {
            Ok(()) => Ok(()),
            Err(error) => Err(sdk_error("deleting the Copilot session", &error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use elsa_ai_abstractions::{AiAgentDefinition, AiCaller, ConversationId};
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use super::*;

    fn agent() -> AiAgentDefinition {
        serde_json::from_value(json!({
            "name": "a", "displayName": "A", "description": "d", "instructions": "i",
            "allowedTools": [], "allowedContextProviders": [], "allowedMcpServers": [],
            "permissions": [], "enabled": true,
        }))
        .unwrap()
    }

    fn provider(cli: &str) -> CopilotProvider {
        let config = CopilotProviderConfig {
            cli_path: Some(cli.into()),
            ..CopilotProviderConfig::openai_compatible("http://127.0.0.1:1/v1", "m")
        };
        CopilotProvider::with_secrets(&config, |_| None).unwrap()
    }

    #[test]
    fn a_configuration_that_cannot_work_is_refused_with_503() {
        let config = CopilotProviderConfig {
            api_key_env: Some("WEAVER_UNSET_KEY".into()),
            ..CopilotProviderConfig::openai_compatible("http://127.0.0.1:1/v1", "m")
        };
        let error = CopilotProvider::with_secrets(&config, |_| None).unwrap_err();
        assert_eq!(
            (error.status(), error.code()),
            (503, "provider_misconfigured")
        );
        assert!(error.message().contains("WEAVER_UNSET_KEY"));
    }

    #[tokio::test]
    async fn a_missing_cli_refuses_sessions_with_503() {
        let provider = provider("/does/not/exist/copilot");
        assert_eq!(provider.name(), "copilot");
        assert!(!provider.info().scripted);
        assert_eq!(provider.info().model.as_deref(), Some("m"));
        let error = provider
            .create_session(CreateAiSessionRequest {
                conversation_id: ConversationId::new("c-1"),
                agent: agent(),
                caller: AiCaller::new("alice", "acme", []),
            })
            .await
            .unwrap_err();
        assert_eq!(
            (error.status(), error.code()),
            (503, "copilot_cli_not_found")
        );
        assert!(error.message().contains("/does/not/exist/copilot"));
        assert_eq!(provider.cli_pid().await, None);
    }

    #[tokio::test]
    async fn a_turn_of_an_unknown_session_fails_with_404() {
        struct NoTools;
        #[async_trait]
        impl AiProviderToolInvoker for NoTools {
            async fn invoke(
                &self,
                _: elsa_ai_abstractions::AiProviderToolInvocation,
            ) -> elsa_ai_abstractions::AiToolResult {
                unreachable!("no tool runs")
            }
        }
        let provider = provider("/does/not/exist/copilot");
        let request = AiTurnRequest {
            session: AiSessionHandle {
                session_id: "weaver-unknown".into(),
                provider: "copilot".into(),
                conversation_id: ConversationId::new("c-1"),
            },
            agent: agent(),
            caller: AiCaller::new("alice", "acme", []),
            message: "hi".into(),
            history: Vec::new(),
            context: Vec::new(),
            tools: Vec::new(),
            cancellation: CancellationToken::new(),
        };
        let events: Vec<AiProviderEvent> = provider
            .execute_turn(request, Arc::new(NoTools))
            .collect()
            .await;
        let [AiProviderEvent::Failed { error }] = events.as_slice() else {
            panic!("{events:?}")
        };
        assert_eq!(
            (error.status(), error.code()),
            (404, "provider_session_not_found")
        );
    }
}
