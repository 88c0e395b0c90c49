//! What a host hands the server besides the configuration: tools, agents, context providers,
//! a provider, workflow backends, stores, identity and telemetry.

use std::sync::Arc;

use elsa_ai_abstractions::{AiAgentDefinition, AiContextProvider, AiProvider, AiTool};
use elsa_workflows::TenantRouter;

use super::{EnvLookup, StartupError, Weaver, WeaverStores};
use crate::config::WeaverConfig;
use crate::identity::IdentityExtractor;
use crate::telemetry::Telemetry;

/// Builds a [`Weaver`]: the configuration, plus what a host adds of its own (tools, agents,
/// context providers and their attachment kinds, a provider, workflow backends, stores,
/// identity).
pub struct WeaverBuilder {
    pub(super) config: WeaverConfig,
    pub(super) env: EnvLookup,
    pub(super) provider: Option<Arc<dyn AiProvider>>,
    pub(super) tools: Vec<Arc<dyn AiTool>>,
    pub(super) agents: Vec<AiAgentDefinition>,
    pub(super) context_providers: Vec<Arc<dyn AiContextProvider>>,
    pub(super) workflows: Option<TenantRouter>,
    pub(super) stores: Option<WeaverStores>,
    pub(super) identity: Option<Arc<dyn IdentityExtractor>>,
    pub(super) telemetry: Option<Telemetry>,
}

impl std::fmt::Debug for WeaverBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeaverBuilder")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl WeaverBuilder {
    /// Reads environment variables (`*_env` settings, `WEAVER_DEV_KEY`) through `lookup`
    /// instead of the process environment.
    pub fn env(mut self, lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        self.env = Arc::new(lookup);
        self
    }

    /// Uses `provider` instead of the one `[provider]` configures (tests, embedding hosts).
    pub fn provider(mut self, provider: Arc<dyn AiProvider>) -> Self {
        self.provider = Some(provider);
        self
    }

    /// Registers a tool of the host's own beside the linked ones, under the same governance
    /// (a name already taken is a start-up error).
    pub fn tool(mut self, tool: Arc<dyn AiTool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds an agent beside the built-in ones (a name already taken is a start-up error).
    pub fn agent(mut self, agent: AiAgentDefinition) -> Self {
        self.agents.push(agent);
        self
    }

    /// Resolves attachments of the provider's kind with it, instead of the built-in provider
    /// of that kind. A module's own kind ([`AttachmentKind::module`]) is accepted by the API
    /// only once its provider is registered here (any other is 400
    /// `unsupported_attachment_kind`), and resolved only for agents that list it.
    ///
    /// [`AttachmentKind::module`]: elsa_ai_abstractions::AttachmentKind::module
    pub fn context_provider(mut self, provider: Arc<dyn AiContextProvider>) -> Self {
        self.context_providers.push(provider);
        self
    }

    /// Serves the workflow data of the router's tenants from the host's own backends (its
    /// Elsa integration, a test double): every tenant of `router` is served, and applied
    /// proposals of those tenants go to its writer. `[[tenants]]` may still name such a
    /// tenant (for its API keys) but not give it `workflows` or `elsa_url` too; other
    /// tenants keep what `[[tenants]]` says.
    pub fn workflows(mut self, router: TenantRouter) -> Self {
        self.workflows = Some(router);
        self
    }

    /// Keeps proposals, audit, conversations, stream journals and enablement in the host's
    /// stores instead of opening `[store]`. The host closes them (flushing what they batch)
    /// after [`Weaver::serve`] returns.
    pub fn stores(mut self, stores: WeaverStores) -> Self {
        self.stores = Some(stores);
        self
    }

    /// Authenticates requests with the host's own extractor, asked before the API keys and
    /// JWTs of `[auth]`. With it and no `[auth]`, no development key is made: the host
    /// decides who calls.
    pub fn identity(mut self, identity: Arc<dyn IdentityExtractor>) -> Self {
        self.identity = Some(identity);
        self
    }

    /// Exports through `telemetry` (the pipeline whose [`Telemetry::layer`] the process's
    /// subscriber holds, as the `weaver` binary sets it up from `[telemetry]`): the server's
    /// metrics, and its spans redacted with the server's redactor; flushed when
    /// [`Weaver::serve`] ends. Without it, nothing is exported.
    pub fn telemetry(mut self, telemetry: Telemetry) -> Self {
        self.telemetry = Some(telemetry);
        self
    }

    /// Assembles the server; nothing listens yet.
    pub async fn build(self) -> Result<Weaver, StartupError> {
        Weaver::assemble(self).await
    }
}
