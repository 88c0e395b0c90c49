//! The whole server assembled from a [`WeaverConfig`]: workflow data (per tenant, in memory
//! or from an Elsa Server), stores, tools, governance, the orchestrator, proposals, identity
//! and the API, plus serving with a graceful shutdown.

mod builder;
mod identity;
mod serve;
mod stores;
mod tenants;
mod tool_settings;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use chrono::TimeDelta;
use elsa_ai_abstractions::{AiConversationStore, AiToolServices};
use elsa_ai_host::{
    AgentRegistry, AttachmentSearch, AuditTrail, ChatOrchestrator, DEFAULT_TURN_LEASE, HostCore,
    Metrics, OperationServices, OrchestratorSettings, ProposalService, Redactor, ToolRegistry,
    builtin_context_providers,
};
use elsa_ai_mcp::{McpClients, McpEndpoint};
use elsa_ai_store::JournalFeed;
use elsa_ai_tools::families::GroundingFamily;
use elsa_workflows::{
    FolderDefinitionWriter, InMemoryWorkflowBackend, TenantId, TenantRouter, WorkflowServices,
    samples,
};
use tokio::net::{TcpListener, TcpSocket};
use tokio_util::sync::CancellationToken;

use crate::api::{GroundingSetup, WeaverApi, WeaverApiParts};
use crate::config::{ConfigError, WeaverConfig};
use crate::http_surface::HttpSurface;
use crate::identity::IdentityConfigError;
use crate::providers::ServedProviders;
use crate::telemetry::{OpenTelemetryTraceIds, Telemetry, TelemetryError};
use crate::views::ProviderView;

pub use builder::WeaverBuilder;
pub use identity::DevelopmentKey;
use identity::identity;
pub use stores::WeaverStores;
use stores::{StoreBackend, Stores};
use tenants::{WorkflowSource, activity_catalog, elsa_server, served_tenants};
pub use tool_settings::SYSTEM_ACTOR;

/// Looks up an environment variable (by name; the value is a secret or a setting).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Why the server cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// A tenant's activity catalog file cannot be read or parsed.
    #[error("the activity catalog of tenant '{tenant}' cannot be read from {path}: {message}")]
    Activities {
        /// The tenant.
        tenant: String,
        /// The file.
        path: PathBuf,
        /// Why, with the position in the file.
        message: String,
    },
    /// A built-in tool or agent was refused at registration.
    #[error("the tools cannot be registered: {0}")]
    Tools(#[from] elsa_ai_host::ToolRegistrationError),
    /// The provider cannot be created.
    #[error("the provider cannot be started: {message}")]
    Provider {
        /// What is wrong, naming the provider.
        message: String,
        /// The provider's or its configuration's own error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The store cannot be opened (`at`: the SQLite file, for the message).
    #[error("the store cannot be opened: {source}{}", at.as_ref().map(|p| format!(" ({})", p.display())).unwrap_or_default())]
    Store {
        /// Why.
        #[source]
        source: elsa_ai_store::StoreError,
        /// The SQLite file, when it was one.
        at: Option<PathBuf>,
    },
    /// `[telemetry]` cannot be used.
    #[error(transparent)]
    Telemetry(#[from] TelemetryError),
}

fn invalid(message: String) -> StartupError {
    StartupError::Config(ConfigError::Invalid(message))
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
    /// How long a client may leave written data unread before its connection is closed
    /// (`None`: the operating system's default).
    stalled_connection: Option<Duration>,
    retention: TimeDelta,
    development_keys: Vec<DevelopmentKey>,
    report: Vec<String>,
    background: CancellationToken,
    http: HttpSurface,
    mcp: Arc<McpClients>,
    metrics: Arc<Metrics>,
    metrics_listen: Option<SocketAddr>,
    telemetry: Option<Telemetry>,
    /// Other replicas' journal commits, announced by PostgreSQL (taken when serving starts).
    journal_feed: Option<tokio::sync::mpsc::Receiver<JournalFeed>>,
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
            workflows: None,
            stores: None,
            identity: None,
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
            workflows: host_workflows,
            stores: host_stores,
            identity: host_identity,
            telemetry,
        } = builder;
        // Which variable each value came from, so a secret too short to redact can be named
        // by its variable (never by its value).
        let env_reads = Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
        let env: EnvLookup = {
            let reads = env_reads.clone();
            Arc::new(move |name: &str| {
                let value = env(name);
                if let Some(value) = &value {
                    reads
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((name.to_owned(), value.clone()));
                }
                value
            })
        };
        let limits = config.limits;
        let http = HttpSurface::new(&config.http)?;
        let metrics_listen = config.telemetry.metrics_listen(config.listen_addr()?)?;
        // Checked here too, for hosts that build a Weaver without the binary's pipeline; the
        // collector's credentials are secrets the redactor must know.
        let otlp = config.telemetry.otlp(env.as_ref())?;
        let retention_days = i64::from(limits.retention_days.unwrap_or(30));
        // The operation tools' schemas bound a proposal's instances at 100, so a higher limit
        // would be a promise no model or MCP client could use.
        let max_operation_targets = limits.max_operation_targets.map_or(100, |max| max.get());
        if max_operation_targets > 100 {
            return Err(invalid(format!(
                "[limits] max_operation_targets is {max_operation_targets}; it may be 1 to 100"
            )));
        }
        let grace_window = Duration::from_secs(limits.grace_window_secs.unwrap_or(60));
        let stalled_connection = match limits.stalled_connection_secs.unwrap_or(300) {
            0 => None,
            secs => Some(Duration::from_secs(secs)),
        };
        let mut report = Vec::new();

        // Workflow data, per tenant: in memory (a folder or the samples) or an Elsa Server.
        let memory = Arc::new(InMemoryWorkflowBackend::new());
        let mut router = TenantRouter::new();
        let mut backend_secrets = Vec::new();
        let tenants = served_tenants(&config, host_workflows.as_ref())?;
        for (tenant, source) in &tenants {
            let folder = match source {
                WorkflowSource::Host => {
                    let services = host_workflows
                        .as_ref()
                        .and_then(|host| host.services(tenant))
                        .cloned()
                        .ok_or_else(|| {
                            invalid(format!("tenant '{tenant}' has no workflow services"))
                        })?;
                    report.push(format!("tenant '{tenant}': workflows from the host"));
                    router = router.with(tenant.clone(), services);
                    continue;
                }
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
            let catalog_file = config
                .tenants
                .iter()
                .find(|entry| entry.id == tenant.as_str())
                .and_then(|entry| entry.activities.as_ref());
            if let Some(file) = catalog_file {
                // The tenant says which activities its server has: that catalog, only.
                let catalog = activity_catalog(tenant, file)?;
                report.push(format!(
                    "tenant '{tenant}': {} activity descriptors from {}",
                    catalog.len(),
                    file.display()
                ));
                memory.set_catalog(tenant, catalog);
            } else if seeded.descriptors == 0 {
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
            identity(&config, &tenants, host_identity, env.as_ref(), &mut report)?;
        secrets.extend(backend_secrets);
        let mcp_servers = config.mcp.registrations(env.as_ref())?;
        secrets.extend(
            mcp_servers
                .iter()
                .flat_map(|server| server.transport.secrets())
                .map(|secret| secret.expose().to_owned()),
        );
        secrets.extend(
            otlp.iter()
                .flat_map(|target| &target.secret_headers)
                .map(|(_, secret)| secret.expose().to_owned()),
        );
        let providers = match provider {
            Some(provider) => ServedProviders::given(provider),
            None => ServedProviders::build(&config.provider_plan()?, env.as_ref())?,
        };
        let provider = providers.provider.clone();
        secrets.extend(providers.secrets.iter().cloned());
        let secrets = redactable(
            secrets,
            &env_reads
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            &mut report,
        );
        let redactor = Arc::new(
            Redactor::builder()
                .secrets(secrets)
                .build()
                .map_err(|e| StartupError::Config(ConfigError::Invalid(e.to_string())))?,
        );
        providers.redact_logs_with(&redactor);

        let stores = match host_stores {
            Some(stores) => Stores::host(stores, retention_days, &mut report),
            None => Stores::open(&config.store, env.as_ref(), retention_days, &mut report).await?,
        };

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
            .max_targets(max_operation_targets)
            .operations(OperationServices {
                instances: workflows.clone(),
                operator: workflows.clone(),
                publisher: workflows.clone(),
            })
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
        let mcp =
            Arc::new(McpClients::start(mcp_servers, MCP_STARTUP, core.redactor().clone()).await);
        report.extend(mcp_report(&mcp));
        // A family [grounding] turns off is not registered: its tools exist for no one.
        let grounding = &config.grounding;
        let grounding_limits = grounding.limits()?;
        config.tools.check()?;
        let linked = ToolRegistry::builder()
            .naming(config.tools.names)
            .linked_tools_where(|tool| {
                GroundingFamily::of(&tool.name).is_none_or(|family| grounding.is_on(family))
            })?;
        let registry = Arc::new(
            tools
                .into_iter()
                .try_fold(linked, |registry, tool| registry.tool(tool))
                .and_then(|registry| {
                    mcp.tools().into_iter().try_fold(registry, |registry, mcp| {
                        registry.tool_for_tenants(mcp.tool, mcp.tenants)
                    })
                })?
                .enablement_caching(stores.enablement_caching)
                .build(Arc::new(agents), stores.enablement.clone()),
        );
        let mut governor = core
            .governor(registry.clone(), services.clone())
            .metrics(metrics.clone())
            .grounding_limits(grounding_limits);
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
        let mut orchestrator = core
            .orchestrator(provider.clone(), governor, context)
            .settings(OrchestratorSettings {
                grace_window,
                max_message_bytes: limits
                    .max_message_bytes
                    .unwrap_or(defaults.max_message_bytes),
                ..defaults
            });
        if let Some(claims) = &stores.claims {
            let lease = limits
                .turn_lease_secs
                .map_or(DEFAULT_TURN_LEASE, |secs| Duration::from_secs(secs.max(1)));
            orchestrator = orchestrator.turn_claims(claims.clone(), lease);
        }
        let orchestrator = orchestrator.build();
        // Other replicas' journal commits, announced by PostgreSQL, reach this one's clients.
        let journal_feed = match &stores.backend {
            StoreBackend::Postgres(store) => Some(
                store
                    .journal_feed()
                    .await
                    .map_err(|source| StartupError::Store { source, at: None })?,
            ),
            _ => None,
        };
        proposals.publish_events_to(orchestrator.events());

        let enablement = Arc::new(core.enablement(registry.clone()));
        let served: Vec<TenantId> = tenants.iter().map(|(tenant, _)| tenant.clone()).collect();
        tool_settings::apply(
            &config.tools.entries,
            grounding,
            &registry,
            &enablement,
            &served,
            &mut report,
        )
        .await?;

        let provider_view = ProviderView::new(provider.info());
        if let Some(notice) = &provider_view.notice {
            report.push(notice.clone());
        }
        let api = WeaverApi::new(WeaverApiParts {
            orchestrator: Arc::new(orchestrator.clone()),
            registry: registry.clone(),
            enablement,
            conversations: stores.conversations.clone(),
            conversation_service: Arc::new(core.conversation_service(
                orchestrator.clone(),
                proposals.clone(),
                TimeDelta::days(retention_days),
            )),
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
            grounding: GroundingSetup {
                switched_off: GroundingFamily::ALL
                    .into_iter()
                    .filter(|family| !grounding.is_on(*family))
                    .collect(),
                workflows: workflows.clone(),
            },
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
            stalled_connection,
            retention: TimeDelta::days(retention_days),
            development_keys,
            report,
            background,
            http,
            mcp,
            metrics,
            metrics_listen,
            telemetry,
            journal_feed,
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
}

/// How long start-up waits for the MCP servers' first connections, all together.
const MCP_STARTUP: Duration = Duration::from_secs(20);

/// One start-up line per MCP server: its tools, or why it is not there.
/// The secrets the redactor can take. One shorter than its minimum (a placeholder key for a
/// local model server, say) would make it erase ordinary text, so it is left out, and the
/// report and the log say which variable holds it, without its value: weaver still sends
/// it where it was configured.
fn redactable(
    secrets: Vec<String>,
    env_reads: &[(String, String)],
    report: &mut Vec<String>,
) -> Vec<String> {
    let min = elsa_ai_host::RedactorBuilder::MIN_SECRET_LEN;
    let (short, long): (Vec<_>, Vec<_>) = secrets.into_iter().partition(|s| s.len() < min);
    for secret in short.iter().filter(|s| !s.is_empty()) {
        let mut variables: Vec<&str> = env_reads
            .iter()
            .filter(|(_, value)| value == secret)
            .map(|(name, _)| name.as_str())
            .collect();
        variables.sort_unstable();
        variables.dedup();
        let source = if variables.is_empty() {
            "a configured secret".to_owned()
        } else {
            variables.join(", ")
        };
        tracing::warn!(
            source = %source,
            min,
            "a secret is too short to be redacted; it is used, but not redacted"
        );
        report.push(format!(
            "warning: {source} holds a value shorter than {min} characters, too short to be \
             redacted: it is used as configured, but not hidden from logs, events or the audit"
        ));
    }
    long
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StoreConfig;

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

    #[tokio::test]
    async fn unsafe_or_incomplete_openid_providers_stop_start_up_with_a_reason() {
        let provider = |settings: &str| {
            format!(
                "[[tenants]]\nid = \"acme\"\n[provider]\nkind = \"demo\"\n[[auth.oidc]]\n\
                 audience = \"weaver\"\n{settings}\n"
            )
        };
        let cases = [
            ("issuer = \"https://id.example\"", "tenant_claim"),
            (
                "issuer = \"https://id.example\"\ntenant = \"initech\"",
                "'initech' is not under [[tenants]]",
            ),
            (
                "issuer = \"https://id.example\"\ntenant = \"acme\"\nalgorithms = [\"none\"]",
                "algorithm 'none'",
            ),
            (
                "issuer = \"https://id.example\"\ntenant = \"acme\"\nalgorithms = [\"RS256\", \"HS256\"]",
                "HS256 is not accepted",
            ),
            (
                "issuer = \"http://id.example\"\ntenant = \"acme\"",
                "must use https",
            ),
            (
                "issuer = \"https://id.example\"\ntenant = \"acme\"\n[auth.oidc.roles]\nadmin = [\"admin:ai\"]",
                "needs roles_claim",
            ),
        ];
        for (settings, reason) in cases {
            let config = WeaverConfig::from_toml(&provider(settings)).unwrap();
            let error = Weaver::builder(config)
                .env(|_| None)
                .build()
                .await
                .map(|_| ())
                .unwrap_err()
                .to_string();
            assert!(error.contains(reason), "{settings}: {error}");
        }
        let config = WeaverConfig::from_toml(&provider(
            "issuer = \"http://127.0.0.1:9\"\ntenant_claim = \"org\"\nroles_claim = \"roles\"\n\
             [auth.oidc.roles]\nadmin = [\"admin:ai\"]",
        ))
        .unwrap();
        let weaver = Weaver::builder(config).env(|_| None).build().await;
        assert!(
            weaver.is_ok(),
            "a provider that cannot be reached does not stop start-up"
        );
    }

    #[tokio::test]
    async fn an_operation_target_limit_above_the_tools_bound_stops_start_up() {
        let build = |limit: u32| async move {
            let config = WeaverConfig::from_toml(&format!(
                "[store]\nmemory = true\n[limits]\nmax_operation_targets = {limit}\n"
            ))
            .unwrap();
            Weaver::builder(config)
                .env(|_| None)
                .build()
                .await
                .map(|_| ())
        };
        let error = build(101).await.unwrap_err().to_string();
        assert!(error.contains("max_operation_targets is 101"), "{error}");
        assert!(error.contains("1 to 100"), "{error}");
        build(100).await.expect("100 is the tools' own bound");
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
