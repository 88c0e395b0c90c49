//! [`OpenAiProvider`]: the host's provider contract over an OpenAI-compatible endpoint.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiProvider, AiProviderEvent, AiProviderInfo, AiProviderToolInvoker, AiSessionHandle,
    AiTurnRequest, CreateAiSessionRequest,
};
use futures::StreamExt;
use futures::stream::BoxStream;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;

use crate::client::ModelClient;
use crate::config::{OpenAiProviderConfig, PROVIDER_KIND};
use crate::round::Reporter;
use crate::turn;

/// How long a successful reachability check stands before a new session checks again.
const PROBE_VALID_FOR: Duration = Duration::from_secs(30);

/// A provider that talks to an OpenAI-compatible endpoint (Chat Completions or Responses)
/// and runs the model/tool loop itself. Cheap to clone; clones share one HTTP client.
#[derive(Clone)]
pub struct OpenAiProvider {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    client: ModelClient,
    /// When the endpoint last answered the reachability check.
    reachable_at: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let settings = &self.inner.client.settings;
        f.debug_struct("OpenAiProvider")
            .field("name", &self.inner.name)
            .field("base_url", &settings.base_url.as_str())
            .field("model", &settings.model)
            .field("api", &settings.api)
            .finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    /// A provider for `config`, reading `api_key_env` from the process environment.
    pub fn new(config: &OpenAiProviderConfig) -> Result<Self, AiError> {
        Self::with_secrets(config, |name| std::env::var(name).ok())
    }

    /// Like [`new`](Self::new), but reads the variables `config` names through `secrets`
    /// (a host's own environment, or a test's).
    pub fn with_secrets(
        config: &OpenAiProviderConfig,
        secrets: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, AiError> {
        let settings = config.resolve(secrets)?;
        Ok(Self {
            inner: Arc::new(Inner {
                name: PROVIDER_KIND.to_owned(),
                client: ModelClient::new(settings)?,
                reachable_at: Mutex::new(None),
            }),
        })
    }

    /// The same provider under another name (for a host serving several providers, where
    /// the name says which one a session belongs to).
    pub fn named(self, name: impl Into<String>) -> Self {
        let inner = &self.inner;
        Self {
            inner: Arc::new(Inner {
                name: name.into(),
                client: inner.client.clone(),
                reachable_at: Mutex::new(*inner.reachable_at.lock()),
            }),
        }
    }

    /// The secrets the configuration resolved (the API key, secret-looking header values):
    /// the host registers them with its redactor.
    pub fn secrets(&self) -> Vec<String> {
        self.inner.client.settings.secrets.clone()
    }
}

#[async_trait]
impl AiProvider for OpenAiProvider {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn info(&self) -> AiProviderInfo {
        let settings = &self.inner.client.settings;
        AiProviderInfo {
            name: self.inner.name.clone(),
            display_name: format!(
                "OpenAI-compatible endpoint at {} ({})",
                settings.base_url.host_str().unwrap_or("?"),
                match settings.api {
                    crate::OpenAiApi::Chat => "Chat Completions",
                    crate::OpenAiApi::Responses => "Responses",
                }
            ),
            model: Some(settings.model.clone()),
            scripted: false,
        }
    }

    /// Checks that the endpoint answers and accepts the key (at most every 30 s), so that
    /// an unreachable or misconfigured endpoint is an HTTP error before the stream starts.
    /// The session itself is this provider's only: the conversation travels with each turn.
    async fn create_session(
        &self,
        request: CreateAiSessionRequest,
    ) -> Result<AiSessionHandle, AiError> {
        let fresh = self
            .inner
            .reachable_at
            .lock()
            .is_some_and(|at| at.elapsed() < PROBE_VALID_FOR);
        if !fresh {
            self.inner.client.probe().await?;
            *self.inner.reachable_at.lock() = Some(Instant::now());
        }
        Ok(AiSessionHandle {
            session_id: uuid::Uuid::new_v4().to_string(),
            provider: self.inner.name.clone(),
            conversation_id: request.conversation_id,
        })
    }

    /// The conversation travels with each turn, so a recorded session continues anywhere
    /// (after the same reachability check as a new one).
    async fn continue_session(
        &self,
        recorded: &AiSessionHandle,
        request: CreateAiSessionRequest,
    ) -> Result<AiSessionHandle, AiError> {
        let fresh = self.create_session(request).await?;
        Ok(AiSessionHandle {
            session_id: recorded.session_id.clone(),
            ..fresh
        })
    }

    fn execute_turn(
        &self,
        request: AiTurnRequest,
        invoker: Arc<dyn AiProviderToolInvoker>,
    ) -> BoxStream<'static, AiProviderEvent> {
        let (sender, receiver) = mpsc::channel(64);
        let inner = self.inner.clone();
        tokio::spawn(async move {
            let reporter = Reporter(sender);
            let end = match turn::run(&inner.client, request, invoker, &reporter).await {
                Ok(()) => AiProviderEvent::Completed,
                Err(error) => {
                    // A failed request may mean the endpoint went away: check it next time.
                    *inner.reachable_at.lock() = None;
                    AiProviderEvent::Failed { error }
                }
            };
            let _ = reporter.0.send(end).await;
        });
        ReceiverStream::new(receiver).boxed()
    }
}
