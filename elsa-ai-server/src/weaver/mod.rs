//! The whole server assembled from a [`WeaverConfig`]: workflow data (per tenant, in memory
//! or from an Elsa Server), stores, tools, governance, the orchestrator, proposals, identity
//! and the API, plus serving with a graceful shutdown.

use std::collections::BTreeSet;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::serve::ListenerExt;
use chrono::TimeDelta;
use elsa_ai_abstractions::{
    AiAgentDefinition, AiAuditLog, AiAuditSink, AiCaller, AiContextProvider, AiConversationStore,
    AiProposalStore, AiProvider, AiStreamJournal, AiTool, AiToolEnablementStore, AiToolServices,
    Permission,
};
use elsa_ai_host::{
    AgentRegistry, AttachmentSearch, AuditTrail, ChatOrchestrator, HostCore, InMemoryAuditLog,
    InMemoryConversationStore, InMemoryProposalStore, InMemoryStreamJournal,
    InMemoryToolEnablementStore, Metrics, OrchestratorSettings, ProposalService, Redactor,
    RedactorBuilder, RetentionSweeper, ToolRegistry, builtin_context_providers,
};
use elsa_ai_mcp::{McpClients, McpEndpoint};
use elsa_ai_store::{PostgresStore, SqliteStore};
use elsa_workflows::{
    ElsaServerBackend, ElsaServerConfig, FolderDefinitionWriter, InMemoryWorkflowBackend, TenantId,
    TenantRouter, WorkflowServices, samples,
};
use tokio::net::{TcpListener, TcpSocket};
use tokio_util::sync::CancellationToken;

use crate::api::{WeaverApi, WeaverApiParts};
use crate::config::{
    ApiKeyConfig, ConfigError, DEFAULT_SQLITE_FILE, DEFAULT_TENANT, JwtAlgorithmConfig, JwtConfig,
    StoreConfig, TenantConfig, WeaverConfig,
};
use crate::http_surface::HttpSurface;
use crate::identity::{
    ApiKey, ApiKeyIdentity, IdentityChain, IdentityConfigError, JwtClaimNames, JwtIdentity, JwtKey,
    JwtSettings,
};
use crate::providers::ServedProviders;
use crate::telemetry::{OpenTelemetryTraceIds, Telemetry, TelemetryError};
use crate::views::{PersistenceView, ProviderView};

// Linking the built-in tools registers them (`inventory`).
use elsa_ai_tools as _;

/// Looks up an environment variable (by name; the value is a secret or a setting).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Why the server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// The configuration is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An identity extractor cannot be built.
    #[error(transparent)]
    Identity(#[from] IdentityConfigError),
    /// A tenant's workflow folder cannot be read.
    #[error("the workflows of tenant '{tenant}' cannot be read from {path}: {message}")]
    Workflows {
        /// The tenant.
        tenant: String,
        /// The folder.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A built-in tool or agent was refused at registration.
    #[error("the tools cannot be registered: {0}")]
    Tools(String),
    /// The provider cannot be created.
    #[error("the provider cannot be started: {0}")]
    Provider(String),
    /// The store cannot be opened.
    #[error("the store cannot be opened: {0}")]
    Store(String),
    /// `[telemetry]` cannot be used.
    #[error(transparent)]
    Telemetry(#[from] TelemetryError),
}

/// Builds a [`Weaver`]: the configuration, plus what a host adds of its own (tools, agents,
/// context providers, a provider).
pub struct WeaverBuilder {
    config: WeaverConfig,
    env: EnvLookup,
    provider: Option<Arc<dyn AiProvider>>,
    tools: Vec<Arc<dyn AiTool>>,
    agents: Vec<AiAgentDefinition>,
    context_providers: Vec<Arc<dyn AiContextProvider>>,
    telemetry: Option<Telemetry>,
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
    /// of that kind.
    pub fn context_provider(mut self, provider: Arc<dyn AiContextProvider>) -> Self {
        self.context_providers.push(provider);
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

/// The stores of the AI platform, behind their contracts.
struct Stores {
    proposals: Arc<dyn AiProposalStore>,
    audit: Arc<dyn AiAuditSink>,
    audit_log: Arc<dyn AiAuditLog>,
    conversations: Arc<dyn AiConversationStore>,
    journal: Arc<dyn AiStreamJournal>,
    enablement: Arc<dyn AiToolEnablementStore>,
    backend: StoreBackend,
    view: PersistenceView,
}

/// The database behind the stores, for flushing and closing it.
#[derive(Clone)]
enum StoreBackend {
    Memory,
    Sqlite(Arc<SqliteStore>),
    Postgres(Arc<PostgresStore>),
}

impl StoreBackend {
    /// Writes every accepted audit record and closes the database.
    async fn close(&self) {
        match self {
            Self::Memory => {}
            Self::Sqlite(store) => store.close().await,
            Self::Postgres(store) => store.close().await,
        }
    }
}

impl Stores {
    /// Opens the store `[store]` configures: SQLite (`weaver.db` in the working directory
    /// when nothing is configured), PostgreSQL, or memory.
    async fn open(
        config: &StoreConfig,
        env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
        retention_days: i64,
        report: &mut Vec<String>,
    ) -> Result<Self, StartupError> {
        let chosen = [
            config.sqlite.is_some(),
            config.postgres.is_some(),
            config.postgres_env.is_some(),
            config.memory,
        ];
        if chosen.iter().filter(|c| **c).count() > 1 {
            return Err(invalid(
                "[store] takes one of sqlite, postgres, postgres_env or memory".into(),
            ));
        }
        if config.memory {
            report.push("store: in memory (nothing survives a restart)".into());
            return Ok(Self::memory(retention_days));
        }
        let postgres = match (&config.postgres, &config.postgres_env) {
            (Some(url), _) => Some(url.clone()),
            (None, Some(variable)) => {
                Some(env(variable).filter(|v| !v.is_empty()).ok_or_else(|| {
                    invalid(format!(
                        "store.postgres_env names {variable}, which is not set"
                    ))
                })?)
            }
            (None, None) => None,
        };
        if let Some(url) = postgres {
            let store = Arc::new(
                PostgresStore::connect(&url)
                    .await
                    .map_err(|e| StartupError::Store(e.to_string()))?,
            );
            report.push("store: PostgreSQL".into());
            return Ok(Self::durable(
                store.clone(),
                StoreBackend::Postgres(store),
                "postgres",
                retention_days,
            ));
        }
        let path = config
            .sqlite
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_SQLITE_FILE));
        let store = Arc::new(
            SqliteStore::open(&path)
                .await
                .map_err(|e| StartupError::Store(format!("{} ({})", e, path.display())))?,
        );
        report.push(format!("store: SQLite file {}", path.display()));
        Ok(Self::durable(
            store.clone(),
            StoreBackend::Sqlite(store),
            "sqlite",
            retention_days,
        ))
    }

    fn durable<S>(store: Arc<S>, backend: StoreBackend, name: &str, retention_days: i64) -> Self
    where
        S: AiProposalStore
            + AiAuditSink
            + AiAuditLog
            + AiConversationStore
            + AiStreamJournal
            + AiToolEnablementStore
            + 'static,
    {
        Self {
            proposals: store.clone(),
            audit: store.clone(),
            audit_log: store.clone(),
            conversations: store.clone(),
            journal: store.clone(),
            enablement: store,
            backend,
            view: PersistenceView {
                store: name.into(),
                durable: true,
                retention_days,
            },
        }
    }

    fn memory(retention_days: i64) -> Self {
        let audit = Arc::new(InMemoryAuditLog::new());
        let journal = Arc::new(InMemoryStreamJournal::new());
        Self {
            proposals: Arc::new(InMemoryProposalStore::new()),
            audit: audit.clone(),
            audit_log: audit,
            conversations: Arc::new(InMemoryConversationStore::with_journal(journal.clone())),
            journal,
            enablement: Arc::new(InMemoryToolEnablementStore::new()),
            backend: StoreBackend::Memory,
            view: PersistenceView {
                store: "memory".into(),
                durable: false,
                retention_days,
            },
        }
    }
}

/// The assembled server. See [`Weaver::builder`].
pub struct Weaver {
    api: WeaverApi,
    orchestrator: ChatOrchestrator,
    proposals: ProposalService,
    workflows: Arc<InMemoryWorkflowBackend>,
    conversations: Arc<dyn AiConversationStore>,
    tenants: Vec<TenantId>,
    store: StoreBackend,
    providers: ServedProviders,
    redactor: Arc<Redactor>,
    grace_window: Duration,
    retention: TimeDelta,
    development_keys: Vec<DevelopmentKey>,
    report: Vec<String>,
    background: CancellationToken,
    http: HttpSurface,
    mcp: Arc<McpClients>,
    metrics: Arc<Metrics>,
    metrics_listen: Option<SocketAddr>,
    telemetry: Option<Telemetry>,
}

impl std::fmt::Debug for Weaver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Weaver")
            .field("api", &self.api)
            .field("tenants", &self.tenants)
            .finish_non_exhaustive()
    }
}

impl Weaver {
    /// How many connections may wait to be accepted on a [`listen`](Self::listen)ing socket
    /// (the kernel's `somaxconn` caps it).
    pub const LISTEN_BACKLOG: u32 = 1024;

    /// A listener on `address` for [`serve`](Self::serve), with room for
    /// [`LISTEN_BACKLOG`](Self::LISTEN_BACKLOG) connections waiting to be accepted. tokio's
    /// and the standard library's `bind` leave room for 128: when more clients than that
    /// connect at once, the kernel drops the others' handshakes and their kernels retry a
    /// second later, which a burst of chat clients sees as a one-second stall.
    ///
    /// # Errors
    ///
    /// When the address cannot be bound (in use, not local, not permitted).
    pub fn listen(address: SocketAddr) -> std::io::Result<TcpListener> {
        let socket = if address.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        // Restarting the server must not wait for the old connections' TIME_WAIT to pass.
        socket.set_reuseaddr(true)?;
        socket.bind(address)?;
        socket.listen(Self::LISTEN_BACKLOG)
    }

    /// A builder over `config`, reading the process environment.
    pub fn builder(config: WeaverConfig) -> WeaverBuilder {
        WeaverBuilder {
            config,
            env: Arc::new(|name| std::env::var(name).ok()),
            provider: None,
            tools: Vec::new(),
            agents: Vec::new(),
            context_providers: Vec::new(),
            telemetry: None,
        }
    }

    async fn assemble(builder: WeaverBuilder) -> Result<Self, StartupError> {
        let WeaverBuilder {
            config,
            env,
            provider,
            tools,
            agents: host_agents,
            context_providers,
            telemetry,
        } = builder;
        let limits = config.limits;
        let http = HttpSurface::new(&config.http)?;
        let metrics_listen = config.telemetry.metrics_listen(config.listen_addr()?)?;
        // Checked here too, for hosts that build a Weaver without the binary's pipeline.
        config.telemetry.otlp()?;
        let retention_days = i64::from(limits.retention_days.unwrap_or(30));
        let grace_window = Duration::from_secs(limits.grace_window_secs.unwrap_or(60));
        let mut report = Vec::new();

        // Workflow data, per tenant: in memory (a folder or the samples) or an Elsa Server.
        let memory = Arc::new(InMemoryWorkflowBackend::new());
        let mut router = TenantRouter::new();
        let mut backend_secrets = Vec::new();
        let tenants = served_tenants(&config);
        for (tenant, source) in &tenants {
            let folder = match source {
                WorkflowSource::ElsaServer(entry) => {
                    let (elsa, secret) = elsa_server(tenant, entry, env.as_ref())?;
                    report.push(format!(
                        "tenant '{tenant}': workflows from the Elsa Server at {}",
                        elsa.api_base()
                    ));
                    backend_secrets.extend(secret);
                    router = router.with(tenant.clone(), WorkflowServices::of(Arc::new(elsa)));
                    continue;
                }
                WorkflowSource::Folder(folder) => Some(folder),
                WorkflowSource::Samples => None,
            };
            let seeded = match folder {
                Some(folder) => memory.seed_from_dir(tenant, folder).map_err(|error| {
                    StartupError::Workflows {
                        tenant: tenant.to_string(),
                        path: folder.clone(),
                        message: error.to_string(),
                    }
                })?,
                None => samples::seed(&memory, tenant),
            };
            if seeded.descriptors == 0 {
                // A folder without an activity catalog validates against Elsa's built-ins.
                memory.set_catalog(tenant, elsa_workflows::builtin_catalog().to_vec());
            }
            report.push(format!(
                "tenant '{tenant}': {} definition versions and {} instances from {}",
                seeded.definitions,
                seeded.instances,
                folder.map_or("the built-in samples".to_owned(), |f| f
                    .display()
                    .to_string())
            ));
            for skipped in &seeded.skipped {
                report.push(format!("tenant '{tenant}': skipped {skipped}"));
            }
            let mut services = WorkflowServices::of(memory.clone());
            if let Some(folder) = folder {
                // Applied proposals are saved into the folder, so a restart keeps them.
                services.writer = Arc::new(FolderDefinitionWriter::new(memory.clone(), folder));
            }
            router = router.with(tenant.clone(), services);
        }
        let workflows = Arc::new(router);

        // Identity and the provider, and the secrets the redactor must know (theirs too).
        let (identity, mut secrets, development_keys) =
            identity(&config, &tenants, env.as_ref(), &mut report)?;
        secrets.extend(backend_secrets);
        let mcp_servers = config.mcp.registrations(env.as_ref())?;
        secrets.extend(
            mcp_servers
                .iter()
                .flat_map(|server| server.transport.secrets())
                .map(|secret| secret.expose().to_owned()),
        );
        let providers = match provider {
            Some(provider) => ServedProviders::given(provider),
            None => ServedProviders::build(&config.provider_plan()?, env.as_ref())?,
        };
        let provider = providers.provider.clone();
        secrets.extend(providers.secrets.iter().cloned());
        let redactor = Arc::new(
            Redactor::builder()
                .secrets(secrets)
                .build()
                .map_err(|e| StartupError::Config(ConfigError::Invalid(e.to_string())))?,
        );
        providers.redact_logs_with(&redactor);

        let stores = Stores::open(&config.store, env.as_ref(), retention_days, &mut report).await?;

        // Every component gets the one redactor, clock, audit sink and stores from here; what
        // they record names the trace OpenTelemetry gave the span it is made in.
        let core = HostCore::builder(redactor, stores.audit.clone())
            .stores(stores.conversations.clone(), stores.journal.clone())
            .traces(Arc::new(OpenTelemetryTraceIds))
            .build();
        // One set of counters for governor, orchestrator and proposals: what /metrics reads.
        let metrics = Arc::new(Metrics::new());
        if let Some(telemetry) = &telemetry {
            telemetry.redact_with(core.redactor().clone());
            telemetry.export_metrics(&metrics);
            if let Some(target) = telemetry.target() {
                report.push(format!(
                    "telemetry: spans to {}, metrics to {} every {} s",
                    target.traces,
                    target.metrics,
                    target.metrics_interval.as_secs()
                ));
            }
        }
        if let Some(address) = metrics_listen {
            report.push(format!(
                "telemetry: GET /metrics without credentials on http://{address}"
            ));
        }
        // Proposals first: the tools hand their drafts to the service.
        let proposals = core
            .proposals(
                stores.proposals.clone(),
                workflows.clone(),
                workflows.clone(),
                workflows.clone(),
            )
            .ttl(
                limits
                    .proposal_ttl_days
                    .map(|days| TimeDelta::days(i64::from(days)))
                    .or(Some(TimeDelta::days(7))),
            )
            .metrics(metrics.clone())
            .build();
        let services = AiToolServices {
            definitions: workflows.clone(),
            instances: workflows.clone(),
            executions: workflows.clone(),
            incidents: workflows.clone(),
            catalog: workflows.clone(),
            proposals: Arc::new(proposals.clone()),
        };
        let agents = AgentRegistry::builder()
            .with_builtin_agents()
            .and_then(|builtin| {
                host_agents
                    .into_iter()
                    .try_fold(builtin, |agents, agent| agents.agent(agent))
            })
            .and_then(|agents| {
                mcp_servers.iter().try_fold(agents, |agents, server| {
                    agents.grant_mcp_server(&server.name, server.allowed_agents.as_deref())
                })
            })
            .map_err(|e| StartupError::Config(ConfigError::Invalid(e.to_string())))?
            .build();
        if let Some(unknown) = config.agents.iter().find(|a| agents.get(&a.name).is_none()) {
            return Err(StartupError::Config(ConfigError::Invalid(format!(
                "[[agents]] names '{}', which is not an agent of this server",
                unknown.name
            ))));
        }
        let tool_error =
            |e: elsa_ai_host::ToolRegistrationError| StartupError::Tools(e.to_string());
        let mcp =
            Arc::new(McpClients::start(mcp_servers, MCP_STARTUP, core.redactor().clone()).await);
        report.extend(mcp_report(&mcp));
        let linked = ToolRegistry::builder().linked_tools().map_err(tool_error)?;
        let registry = Arc::new(
            tools
                .into_iter()
                .try_fold(linked, |registry, tool| registry.tool(tool))
                .and_then(|registry| {
                    mcp.tools().into_iter().try_fold(registry, |registry, mcp| {
                        registry.tool_for_tenants(mcp.tool, mcp.tenants)
                    })
                })
                .map_err(tool_error)?
                .build(Arc::new(agents), stores.enablement.clone()),
        );
        let mut governor = core
            .governor(registry.clone(), services.clone())
            .metrics(metrics.clone());
        if let Some(budget) = limits.result_budget_bytes {
            governor = governor.result_limit(budget);
        }
        let context = core
            .context_resolver()
            .providers(builtin_context_providers(
                services.definitions.clone(),
                services.instances.clone(),
                services.catalog.clone(),
            ))
            .providers(context_providers)
            .build();
        let attachment_kinds = context.kinds().collect();
        let defaults = OrchestratorSettings::default();
        let governor = governor.build();
        let background = CancellationToken::new();
        let mcp_endpoint = McpEndpoint::new(governor.clone(), background.clone());
        let orchestrator = core
            .orchestrator(provider.clone(), governor, context)
            .settings(OrchestratorSettings {
                grace_window,
                max_message_bytes: limits
                    .max_message_bytes
                    .unwrap_or(defaults.max_message_bytes),
                ..defaults
            })
            .build();
        proposals.publish_events_to(orchestrator.events());

        let provider_view = ProviderView::new(provider.info());
        if let Some(notice) = &provider_view.notice {
            report.push(notice.clone());
        }
        let api = WeaverApi::new(WeaverApiParts {
            orchestrator: Arc::new(orchestrator.clone()),
            registry: registry.clone(),
            enablement: Arc::new(core.enablement(registry)),
            conversations: stores.conversations.clone(),
            proposals: proposals.clone(),
            audit: AuditTrail::new(stores.audit_log.clone()),
            metrics: metrics.clone(),
            attachment_search: AttachmentSearch::new(
                services.definitions.clone(),
                services.instances.clone(),
            ),
            identity: Arc::new(identity),
            provider: provider_view,
            providers: providers
                .infos
                .iter()
                .cloned()
                .map(ProviderView::new)
                .collect(),
            persistence: stores.view.clone(),
            attachment_kinds,
            mcp_endpoint,
            mcp_servers: mcp.clone(),
            grace_window_secs: grace_window.as_secs(),
            max_body_bytes: limits
                .max_body_bytes
                .unwrap_or(WeaverApi::DEFAULT_MAX_BODY_BYTES),
        });
        Ok(Self {
            api,
            orchestrator,
            proposals,
            workflows: memory,
            conversations: stores.conversations,
            tenants: tenants.into_iter().map(|(tenant, _)| tenant).collect(),
            store: stores.backend,
            providers,
            redactor: core.redactor().clone(),
            grace_window,
            retention: TimeDelta::days(retention_days),
            development_keys,
            report,
            background,
            http,
            mcp,
            metrics,
            metrics_listen,
            telemetry,
        })
    }

    /// The API state (for hosts that mount the router themselves).
    pub fn api(&self) -> &WeaverApi {
        &self.api
    }

    /// The redactor every boundary shares, with every configured secret registered (API
    /// keys, the JWT secret, Elsa backend and provider keys), for hosts that redact their
    /// own output.
    pub fn redactor(&self) -> &Arc<Redactor> {
        &self.redactor
    }

    /// The API's router, to serve or to nest under a prefix: under `[http] base_path` when
    /// set (the chat route also one level above it), with CORS for `[http] cors_origins`.
    pub fn router(&self) -> Router {
        self.http.router(self.api.clone())
    }

    /// The orchestrator.
    pub fn orchestrator(&self) -> &ChatOrchestrator {
        &self.orchestrator
    }

    /// The proposal service.
    pub fn proposals(&self) -> &ProposalService {
        &self.proposals
    }

    /// The in-memory workflow data of the tenants served from a folder or the samples (and
    /// where applied proposals of those tenants are written). Tenants served by an Elsa
    /// Server keep theirs there.
    pub fn workflows(&self) -> &Arc<InMemoryWorkflowBackend> {
        &self.workflows
    }

    /// The tenants served.
    pub fn tenants(&self) -> &[TenantId] {
        &self.tenants
    }

    /// The development keys created because no `[auth]` is configured. They never reach
    /// the log: the `weaver` binary prints a generated one once on standard error.
    pub fn development_keys(&self) -> &[DevelopmentKey] {
        &self.development_keys
    }

    /// What start-up did, for the log: data seeded, files skipped, the provider's label.
    pub fn startup_report(&self) -> &[String] {
        &self.report
    }

    /// Starts the background work: the retention sweep and the proposal expiry, hourly.
    fn start_background(&self) {
        RetentionSweeper::new(
            self.conversations.clone(),
            self.retention,
            Arc::new(elsa_ai_abstractions::SystemClock),
        )
        .with_sessions(self.orchestrator.sessions().clone())
        .spawn(Duration::from_secs(3600), self.background.clone());
        let proposals = self.proposals.clone();
        let tenants = self.tenants.clone();
        let stop = self.background.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(Duration::from_secs(3600));
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    _ = ticks.tick() => {
                        for tenant in &tenants {
                            if let Err(error) = proposals.expire_due(tenant).await {
                                tracing::warn!(code = error.code(), %tenant, "proposal expiry failed");
                            }
                        }
                    }
                }
            }
        });
    }

    /// Serves the API on `listener` until `shutdown` completes, then shuts down gracefully:
    /// no new connections or turns; running turns get the grace window to finish (their
    /// clients receive every event); then what still runs is cancelled, open streams end,
    /// and the stores are flushed.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let metrics_listener = match self.metrics_listen {
            Some(address) => Some(Self::listen(address).map_err(|error| {
                std::io::Error::new(
                    error.kind(),
                    format!("cannot listen on {address} ([telemetry] metrics_listen): {error}"),
                )
            })?),
            None => None,
        };
        self.start_background();
        let stopping = CancellationToken::new();
        if let Some(listener) = metrics_listener {
            let scrape = crate::routes::unauthenticated_metrics(self.metrics.clone());
            let stopped = stopping.clone();
            tokio::spawn(async move {
                let served = axum::serve(listener, scrape)
                    .with_graceful_shutdown(async move { stopped.cancelled().await })
                    .await;
                if let Err(error) = served {
                    tracing::warn!(%error, "the metrics listener failed");
                }
            });
        }
        // A stream is a series of small writes: with Nagle's algorithm on, an event written
        // just after the response head waits for the client's (delayed, ~40 ms) ACK.
        let listener = listener.tap_io(|connection| {
            if let Err(error) = connection.set_nodelay(true) {
                tracing::debug!(%error, "cannot set TCP_NODELAY on a connection");
            }
        });
        let server = axum::serve(listener, self.router()).with_graceful_shutdown({
            let stopping = stopping.clone();
            async move {
                shutdown.await;
                stopping.cancel();
            }
        });
        let drain = {
            let stopping = stopping.clone();
            let orchestrator = self.orchestrator.clone();
            let grace = self.grace_window;
            async move {
                stopping.cancelled().await;
                tracing::info!(
                    grace_secs = grace.as_secs(),
                    "shutting down: running turns get the grace window"
                );
                let cancelled = orchestrator.drain(grace).await;
                if cancelled > 0 {
                    tracing::warn!(
                        cancelled,
                        "turns still running after the grace window were cancelled"
                    );
                }
            }
        };
        let (served, ()) = tokio::join!(
            async {
                let server = server.into_future();
                tokio::pin!(server);
                // Connections normally close once their turns end; a client that never
                // reads is not waited for beyond the grace window plus a margin.
                tokio::select! {
                    served = &mut server => served,
                    () = async {
                        stopping.cancelled().await;
                        tokio::time::sleep(self.grace_window + Duration::from_secs(10)).await;
                    } => Ok(()),
                }
            },
            drain
        );
        self.background.cancel();
        // No Copilot CLI and no MCP server child outlives the server.
        self.providers.shutdown().await;
        self.mcp.shutdown();
        // Every audit record accepted during the drain is written before the store closes.
        self.store.close().await;
        // Every turn's span has ended: the last spans and metrics leave now.
        if let Some(telemetry) = &self.telemetry {
            telemetry.shutdown().await;
        }
        served
    }
}

/// How long start-up waits for the MCP servers' first connections, all together.
const MCP_STARTUP: Duration = Duration::from_secs(20);

/// One start-up line per MCP server: its tools, or why it is not there.
fn mcp_report(mcp: &McpClients) -> Vec<String> {
    mcp.statuses()
        .into_iter()
        .map(|server| {
            let mut line = format!(
                "MCP server '{}' ({}): {}",
                server.name,
                server.transport,
                server.state.as_str()
            );
            if !server.tools.is_empty() {
                line.push_str(&format!(
                    ", tools {} (disabled until an administrator enables them)",
                    server.tools.join(", ")
                ));
            }
            if !server.missing.is_empty() {
                line.push_str(&format!(
                    "; allowlisted but not offered by the server: {}",
                    server.missing.join(", ")
                ));
            }
            if let Some(error) = &server.error {
                line.push_str(&format!("; {error} (retrying in the background)"));
            }
            line
        })
        .collect()
}

/// Where one tenant's workflow data comes from.
enum WorkflowSource {
    /// The built-in sample workflows, in memory.
    Samples,
    /// A folder of Elsa JSON files, read into memory.
    Folder(PathBuf),
    /// An Elsa Server, over its REST API (the tenant's `elsa_*` settings).
    ElsaServer(TenantConfig),
}

/// The tenants served and where their workflow data comes from.
fn served_tenants(config: &WeaverConfig) -> Vec<(TenantId, WorkflowSource)> {
    if !config.tenants.is_empty() {
        return config
            .tenants
            .iter()
            .map(|t| {
                let source = match &t.workflows {
                    _ if t.uses_elsa_server() => WorkflowSource::ElsaServer(t.clone()),
                    Some(folder) => WorkflowSource::Folder(folder.clone()),
                    None => WorkflowSource::Samples,
                };
                (TenantId::new(t.id.clone()), source)
            })
            .collect();
    }
    let named: BTreeSet<&str> = config
        .auth
        .api_keys
        .iter()
        .map(|k| k.tenant.as_str())
        .collect();
    if named.is_empty() {
        return vec![(TenantId::new(DEFAULT_TENANT), WorkflowSource::Samples)];
    }
    named
        .into_iter()
        .map(|tenant| (TenantId::new(tenant), WorkflowSource::Samples))
        .collect()
}

/// The Elsa Server backend a `[[tenants]]` entry names, and its API key (a secret for the
/// redactor), checked before anything is sent.
fn elsa_server(
    tenant: &TenantId,
    entry: &TenantConfig,
    env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
) -> Result<(ElsaServerBackend, Option<String>), StartupError> {
    let problem = |message: String| invalid(format!("tenant '{tenant}': {message}"));
    if entry.workflows.is_some() {
        return Err(problem(
            "workflows and elsa_url are mutually exclusive: the workflow data comes from a \
             folder or from an Elsa Server, not both"
                .into(),
        ));
    }
    let url = entry.elsa_url.as_deref().ok_or_else(|| {
        problem("elsa_api_path, elsa_api_key_env and elsa_tenant need elsa_url".into())
    })?;
    let mut config = ElsaServerConfig::new(url).map_err(|e| problem(format!("elsa_url: {e}")))?;
    if let Some(path) = &entry.elsa_api_path {
        config = config.api_path(path);
    }
    let mut secret = None;
    if let Some(variable) = &entry.elsa_api_key_env {
        let key = env(variable).filter(|v| !v.is_empty()).ok_or_else(|| {
            problem(format!(
                "elsa_api_key_env names {variable}, which is not set"
            ))
        })?;
        if key.len() < RedactorBuilder::MIN_SECRET_LEN {
            return Err(problem(format!(
                "the Elsa API key in {variable} is shorter than {} characters",
                RedactorBuilder::MIN_SECRET_LEN
            )));
        }
        config = config.api_key(key.clone());
        secret = Some(key);
    }
    if let Some(elsa_tenant) = &entry.elsa_tenant {
        config = config.elsa_tenant_id(elsa_tenant.clone());
    }
    let backend = ElsaServerBackend::new(tenant.clone(), config)
        .map_err(|e| problem(format!("the Elsa Server cannot be used: {e}")))?;
    Ok((backend, secret))
}

/// A key with every permission in one tenant, created because no `[auth]` is configured.
/// `Debug` never shows the key.
#[derive(Clone, PartialEq, Eq)]
pub struct DevelopmentKey {
    /// The tenant it works in.
    pub tenant: String,
    /// The key, sent as `Authorization: ApiKey <key>`.
    pub key: String,
    /// Whether it was generated for this run (else it came from `WEAVER_DEV_KEY`, and
    /// whoever set that variable knows it).
    pub generated: bool,
}

impl std::fmt::Debug for DevelopmentKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevelopmentKey")
            .field("tenant", &self.tenant)
            .field("key", &"<redacted>")
            .field("generated", &self.generated)
            .finish()
    }
}

type Identity = (IdentityChain, Vec<String>, Vec<DevelopmentKey>);

/// The identity chain, the secrets to redact, and the development keys (if created).
fn identity(
    config: &WeaverConfig,
    tenants: &[(TenantId, WorkflowSource)],
    env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
    report: &mut Vec<String>,
) -> Result<Identity, StartupError> {
    let auth = &config.auth;
    let mut chain = IdentityChain::new();
    let mut secrets = Vec::new();
    let mut development = Vec::new();
    let mut keys = Vec::new();
    if !auth.is_configured() {
        // A key with every permission is for the developer's own machine only.
        let address = config.listen_addr()?;
        if !address.ip().is_loopback() {
            return Err(invalid(format!(
                "listening on {address} needs [auth]: without it weaver makes a development key \
                 with every permission, which is for local use only; configure \
                 [[auth.api_keys]] or [auth.jwt], or listen on a loopback address such as \
                 127.0.0.1"
            )));
        }
        for (i, (tenant, _)) in tenants.iter().enumerate() {
            let (key, generated) = match env("WEAVER_DEV_KEY").filter(|_| i == 0) {
                Some(key) => (key, false),
                None => (format!("wv-dev-{}", uuid::Uuid::new_v4().simple()), true),
            };
            let caller = AiCaller::new("demo", tenant.clone(), all_permissions());
            keys.push(ApiKey::new(key.clone(), caller)?);
            report.push(format!(
                "no [auth] configured: development key for actor 'demo' in tenant '{tenant}' \
                 (all permissions, local use only), {}",
                if generated {
                    "generated for this run"
                } else {
                    "from WEAVER_DEV_KEY"
                }
            ));
            development.push(DevelopmentKey {
                tenant: tenant.to_string(),
                key,
                generated,
            });
        }
    }
    for entry in &auth.api_keys {
        keys.push(api_key(entry, config, env)?);
    }
    if !keys.is_empty() {
        secrets.extend(keys.iter().map(|k| k.secret().to_owned()));
        chain = chain.with(Arc::new(ApiKeyIdentity::new(keys)?));
    }
    if let Some(jwt) = &auth.jwt {
        let (identity, secret) = jwt_identity(jwt, env)?;
        secrets.extend(secret);
        chain = chain.with(Arc::new(identity));
    }
    Ok((chain, secrets, development))
}

fn all_permissions() -> Vec<Permission> {
    Permission::ALL.to_vec()
}

fn invalid(message: String) -> StartupError {
    StartupError::Config(ConfigError::Invalid(message))
}

fn api_key(
    entry: &ApiKeyConfig,
    config: &WeaverConfig,
    env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
) -> Result<ApiKey, StartupError> {
    let key = match (&entry.key, &entry.key_env) {
        (Some(key), None) => key.clone(),
        (None, Some(variable)) => env(variable).filter(|v| !v.is_empty()).ok_or_else(|| {
            invalid(format!(
                "the API key of actor '{}' is read from {variable}, which is not set",
                entry.actor
            ))
        })?,
        _ => {
            return Err(invalid(format!(
                "the API key of actor '{}' needs exactly one of key or key_env",
                entry.actor
            )));
        }
    };
    if !config.tenants.is_empty() && !config.tenants.iter().any(|t| t.id == entry.tenant) {
        return Err(invalid(format!(
            "the API key of actor '{}' names tenant '{}', which is not under [[tenants]]",
            entry.actor, entry.tenant
        )));
    }
    let caller = AiCaller::new(
        entry.actor.clone(),
        entry.tenant.clone(),
        entry.permissions.iter().map(|p| Permission::new(p.clone())),
    );
    Ok(ApiKey::new(key, caller)?)
}

fn jwt_identity(
    jwt: &JwtConfig,
    env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
) -> Result<(JwtIdentity, Option<String>), StartupError> {
    let read_env = |setting: &str, variable: &str| {
        env(variable).filter(|v| !v.is_empty()).ok_or_else(|| {
            invalid(format!(
                "auth.jwt.{setting} names {variable}, which is not set"
            ))
        })
    };
    let (key, secret) = match jwt.algorithm {
        JwtAlgorithmConfig::Hs256 => {
            let variable = jwt
                .secret_env
                .as_deref()
                .ok_or_else(|| invalid("auth.jwt with HS256 needs secret_env".into()))?;
            let secret = read_env("secret_env", variable)?;
            (
                JwtKey::Hs256 {
                    secret: secret.clone().into_bytes(),
                },
                Some(secret),
            )
        }
        JwtAlgorithmConfig::Rs256 => {
            let pem = match (&jwt.public_key_path, &jwt.public_key_env) {
                (Some(path), None) => std::fs::read(path).map_err(|e| {
                    invalid(format!(
                        "auth.jwt.public_key_path {} cannot be read: {e}",
                        path.display()
                    ))
                })?,
                (None, Some(variable)) => read_env("public_key_env", variable)?.into_bytes(),
                _ => {
                    return Err(invalid(
                        "auth.jwt with RS256 needs exactly one of public_key_path or public_key_env"
                            .into(),
                    ));
                }
            };
            (
                JwtKey::Rs256 {
                    public_key_pem: pem,
                },
                None,
            )
        }
    };
    let defaults = JwtClaimNames::default();
    let settings = JwtSettings {
        key,
        issuer: jwt.issuer.clone(),
        audience: jwt.audience.clone(),
        claims: JwtClaimNames {
            actor: jwt.actor_claim.clone().unwrap_or(defaults.actor),
            tenant: jwt.tenant_claim.clone().unwrap_or(defaults.tenant),
            permissions: jwt
                .permissions_claim
                .clone()
                .unwrap_or(defaults.permissions),
        },
        leeway_secs: jwt.leeway_secs.unwrap_or(60),
    };
    Ok((JwtIdentity::new(settings)?, secret))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_database_that_cannot_be_reached_is_reported_without_its_password() {
        const PASSWORD: &str = "hunter2-unreachable";
        for url in [
            format!("postgres://weaver:{PASSWORD}@127.0.0.1:1/weaver"),
            format!("postgres://weaver:{PASSWORD}@127.0.0.1:notaport/weaver"),
        ] {
            let config = WeaverConfig {
                store: StoreConfig {
                    postgres: Some(url),
                    ..StoreConfig::default()
                },
                ..WeaverConfig::default()
            };
            let error = Weaver::builder(config)
                .env(|_| None)
                .build()
                .await
                .unwrap_err();
            for shown in [error.to_string(), format!("{error:?}")] {
                assert!(!shown.contains(PASSWORD), "{shown}");
            }
        }
    }

    /// More clients than the standard library's backlog of 128 connect at once while the
    /// server accepts nothing: every handshake still completes (none is dropped for a retry a
    /// second later).
    #[tokio::test]
    async fn a_burst_of_connections_fits_in_the_listen_backlog() {
        let listener = Weaver::listen(([127, 0, 0, 1], 0).into()).unwrap();
        let address = listener.local_addr().unwrap();
        let clients: Vec<_> = (0..300)
            .map(|_| tokio::spawn(tokio::net::TcpStream::connect(address)))
            .collect();
        // A dropped handshake is retried after 1 s, 3 s, 7 s ...: with the queue still full
        // it never completes, so this bound only decides how long a failure takes to show.
        let connected = tokio::time::timeout(Duration::from_secs(10), async {
            let mut connected = Vec::new();
            for client in clients {
                connected.push(client.await.unwrap().unwrap());
            }
            connected
        })
        .await
        .expect("every handshake completes without an accept");
        assert_eq!(connected.len(), 300);
        drop(listener);
    }
}
