//! [`ProviderRouter`]: several providers behind one, chosen per conversation by tenant,
//! then agent, then a default. Which provider serves whom is policy, so it lives here; each
//! provider still owns its own model/tool loop.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiProvider, AiProviderEvent, AiProviderInfo, AiProviderToolInvoker, AiSessionHandle,
    AiTurnRequest, CreateAiSessionRequest,
};
use elsa_workflows::TenantId;
use futures::stream::BoxStream;

/// Routes each conversation to one of several named providers: the tenant's provider if its
/// tenant names one, else the agent's, else the default. A session remembers the name of the
/// provider that opened it, so every later turn of the conversation goes to the same one.
///
/// ```
/// use std::sync::Arc;
/// use elsa_ai_abstractions::AiProvider;
/// use elsa_ai_host::{ProviderRouter};
/// use elsa_ai_scripted::{ScriptedProvider, Script};
///
/// let local: Arc<dyn AiProvider> = Arc::new(ScriptedProvider::new(Script::new()));
/// let hosted: Arc<dyn AiProvider> = Arc::new(ScriptedProvider::new(Script::new()));
/// let router = ProviderRouter::builder()
///     .provider("local", local)
///     .provider("hosted", hosted)
///     .tenant("acme", "hosted")
///     .agent("instance-diagnostics", "local")
///     .build("local")?;
/// assert_eq!(router.route_name(&"acme".into(), "instance-diagnostics"), "hosted");
/// assert_eq!(router.route_name(&"globex".into(), "instance-diagnostics"), "local");
/// # Ok::<(), elsa_ai_abstractions::AiError>(())
/// ```
pub struct ProviderRouter {
    providers: HashMap<String, Arc<dyn AiProvider>>,
    default: String,
    by_tenant: HashMap<TenantId, String>,
    by_agent: HashMap<String, String>,
}

impl std::fmt::Debug for ProviderRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.providers.keys().collect();
        names.sort();
        f.debug_struct("ProviderRouter")
            .field("providers", &names)
            .field("default", &self.default)
            .field("by_tenant", &self.by_tenant)
            .field("by_agent", &self.by_agent)
            .finish()
    }
}

/// Collects the providers and who uses which; [`build`](Self::build) checks every name.
#[derive(Default)]
pub struct ProviderRouterBuilder {
    providers: Vec<(String, Arc<dyn AiProvider>)>,
    by_tenant: Vec<(TenantId, String)>,
    by_agent: Vec<(String, String)>,
}

impl ProviderRouterBuilder {
    /// Adds a provider under `name`.
    pub fn provider(mut self, name: impl Into<String>, provider: Arc<dyn AiProvider>) -> Self {
        self.providers.push((name.into(), provider));
        self
    }

    /// Routes every conversation of `tenant` to the provider `name`.
    pub fn tenant(mut self, tenant: impl Into<TenantId>, name: impl Into<String>) -> Self {
        self.by_tenant.push((tenant.into(), name.into()));
        self
    }

    /// Routes conversations with `agent` to the provider `name` (unless their tenant names one).
    pub fn agent(mut self, agent: impl Into<String>, name: impl Into<String>) -> Self {
        self.by_agent.push((agent.into(), name.into()));
        self
    }

    /// The router, with `default` serving everyone else. Refuses a provider name given twice
    /// and a route or default naming no provider.
    pub fn build(self, default: impl Into<String>) -> Result<ProviderRouter, AiError> {
        let mut providers = HashMap::new();
        for (name, provider) in self.providers {
            if providers.insert(name.clone(), provider).is_some() {
                return Err(AiError::bad_request(
                    "provider_duplicate",
                    format!("the provider name '{name}' is given twice"),
                ));
            }
        }
        let known = |name: &str, what: &str| {
            if providers.contains_key(name) {
                Ok(())
            } else {
                Err(AiError::bad_request(
                    "provider_unknown",
                    format!("{what} names the provider '{name}', which is not configured"),
                ))
            }
        };
        let default = default.into();
        known(&default, "default_provider")?;
        for (tenant, name) in &self.by_tenant {
            known(name, &format!("tenant '{tenant}'"))?;
        }
        for (agent, name) in &self.by_agent {
            known(name, &format!("agent '{agent}'"))?;
        }
        Ok(ProviderRouter {
            providers,
            default,
            by_tenant: self.by_tenant.into_iter().collect(),
            by_agent: self.by_agent.into_iter().collect(),
        })
    }
}

impl ProviderRouter {
    /// A builder with no providers.
    pub fn builder() -> ProviderRouterBuilder {
        ProviderRouterBuilder::default()
    }

    /// The name of the provider that serves `agent` in `tenant`.
    pub fn route_name(&self, tenant: &TenantId, agent: &str) -> &str {
        self.by_tenant
            .get(tenant)
            .or_else(|| self.by_agent.get(agent))
            .unwrap_or(&self.default)
    }

    fn named(&self, name: &str) -> Result<&Arc<dyn AiProvider>, AiError> {
        self.providers.get(name).ok_or_else(|| {
            AiError::unavailable(
                "provider_not_configured",
                format!(
                    "the conversation's provider '{name}' is no longer configured; start a new \
                     conversation"
                ),
            )
        })
    }

    fn default_provider(&self) -> &Arc<dyn AiProvider> {
        &self.providers[&self.default]
    }

    /// The session as the routed provider knows it (its own name, not the route's).
    fn inner_session(
        &self,
        session: &AiSessionHandle,
    ) -> Result<(&Arc<dyn AiProvider>, AiSessionHandle), AiError> {
        let provider = self.named(&session.provider)?;
        let mut inner = session.clone();
        provider.name().clone_into(&mut inner.provider);
        Ok((provider, inner))
    }
}

#[async_trait]
impl AiProvider for ProviderRouter {
    fn name(&self) -> &str {
        &self.default
    }

    /// The default provider's description.
    fn info(&self) -> AiProviderInfo {
        self.default_provider().info()
    }

    async fn create_session(
        &self,
        request: CreateAiSessionRequest,
    ) -> Result<AiSessionHandle, AiError> {
        let name = self
            .route_name(&request.caller.tenant_id, &request.agent.name)
            .to_owned();
        let mut session = self.named(&name)?.create_session(request).await?;
        session.provider = name;
        Ok(session)
    }

    async fn continue_session(
        &self,
        recorded: &AiSessionHandle,
        request: CreateAiSessionRequest,
    ) -> Result<AiSessionHandle, AiError> {
        let (provider, inner) = self.inner_session(recorded)?;
        let mut session = provider.continue_session(&inner, request).await?;
        session.provider.clone_from(&recorded.provider);
        Ok(session)
    }

    fn execute_turn(
        &self,
        mut request: AiTurnRequest,
        invoker: Arc<dyn AiProviderToolInvoker>,
    ) -> BoxStream<'static, AiProviderEvent> {
        match self.inner_session(&request.session) {
            Ok((provider, session)) => {
                request.session = session;
                provider.execute_turn(request, invoker)
            }
            Err(error) => Box::pin(futures::stream::iter([AiProviderEvent::Failed { error }])),
        }
    }

    async fn close_session(&self, session: &AiSessionHandle) -> Result<(), AiError> {
        let (provider, inner) = self.inner_session(session)?;
        provider.close_session(&inner).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::governance::{TEST_AGENT, all_permissions, test_agent};
    use elsa_ai_abstractions::{AiCaller, ConversationId};
    use elsa_ai_scripted::{Script, ScriptedProvider};

    fn scripted() -> Arc<dyn AiProvider> {
        Arc::new(ScriptedProvider::new(Script::new()))
    }

    fn session_request(tenant: &str, agent: &str) -> CreateAiSessionRequest {
        CreateAiSessionRequest {
            conversation_id: ConversationId::new("c"),
            agent: test_agent(agent, &[], &[]),
            caller: AiCaller::new("alice", tenant, all_permissions()),
        }
    }

    #[tokio::test]
    async fn the_tenant_wins_then_the_agent_then_the_default_and_sessions_remember_it() {
        let router = ProviderRouter::builder()
            .provider("a", scripted())
            .provider("b", scripted())
            .provider("c", scripted())
            .tenant("acme", "b")
            .agent(TEST_AGENT, "c")
            .build("a")
            .unwrap();
        let cases = [
            ("acme", TEST_AGENT, "b"),
            ("globex", TEST_AGENT, "c"),
            ("globex", "other", "a"),
        ];
        for (tenant, agent, expected) in cases {
            let session = router
                .create_session(session_request(tenant, agent))
                .await
                .unwrap();
            assert_eq!(session.provider, expected, "{tenant} {agent}");
            let (_, inner) = router.inner_session(&session).unwrap();
            assert_eq!(inner.provider, "scripted", "the provider sees its own name");
        }
    }

    #[tokio::test]
    async fn unknown_names_are_refused_at_build_and_a_forgotten_provider_fails_the_turn() {
        let unknown = ProviderRouter::builder()
            .provider("a", scripted())
            .agent(TEST_AGENT, "missing")
            .build("a")
            .unwrap_err();
        assert_eq!(unknown.code(), "provider_unknown");
        assert!(unknown.message().contains("missing"));
        let twice = ProviderRouter::builder()
            .provider("a", scripted())
            .provider("a", scripted())
            .build("a")
            .unwrap_err();
        assert_eq!(twice.code(), "provider_duplicate");
        assert_eq!(
            ProviderRouter::builder().build("a").unwrap_err().code(),
            "provider_unknown"
        );

        let router = ProviderRouter::builder()
            .provider("a", scripted())
            .build("a")
            .unwrap();
        let gone = AiSessionHandle {
            session_id: "s".into(),
            provider: "retired".into(),
            conversation_id: ConversationId::new("c"),
        };
        let error = router.close_session(&gone).await.unwrap_err();
        assert_eq!(error.code(), "provider_not_configured");
    }
}
