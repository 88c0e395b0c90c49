//! The `weaver` server's configuration: a TOML file, environment variables and command-line
//! flags, over embedded defaults.
//!
//! Every key is optional; with no file at all the server runs on its defaults. Secrets are
//! never written into the file by necessity: each has a `*_env` form naming the environment
//! variable that holds it, and no secret is ever logged or echoed. Relative paths in a file
//! are resolved against the file's folder. [`REFERENCE`] documents every key; `weaver --help`
//! prints it.

mod mcp;
mod telemetry;
mod tools;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use elsa_ai_host::Redactor;
use serde::Deserialize;

pub use mcp::{McpConfig, McpServerConfig};
pub use telemetry::{DEFAULT_METRICS_INTERVAL, DEFAULT_SERVICE_NAME, OtlpTarget, TelemetryConfig};
pub use tools::{GroundingConfig, ToolEntryConfig, ToolsConfig};

/// The address the server listens on unless configured otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// The SQLite file used when no store is configured (in the working directory).
pub const DEFAULT_SQLITE_FILE: &str = "weaver.db";

/// The tenant served when no `[[tenants]]` are configured and no API key names one.
pub const DEFAULT_TENANT: &str = "default";

/// Every configuration key, as `weaver --help` prints it.
pub const REFERENCE: &str = r#"CONFIGURATION FILE (--config PATH or WEAVER_CONFIG; TOML; every key optional)

  listen = "127.0.0.1:8080"       Address to listen on (flag --listen, env WEAVER_LISTEN).

  [store]                           Where proposals, audit, conversations, stream journals and
                                    enablement decisions are kept. At most one of:
  sqlite = "weaver.db"              SQLite file (default: weaver.db in the working directory;
                                    flag --sqlite, env WEAVER_SQLITE).
  postgres = "postgres://user@host/db"
                                    PostgreSQL URL, for several servers sharing one database
                                    (flag --postgres, env WEAVER_POSTGRES). A database on the
                                    same host is fastest through its Unix socket:
                                    postgres://user@localhost/db?host=/var/run/postgresql
  postgres_env = "DATABASE_URL"     Name of an environment variable holding the URL (use this
                                    when the URL contains a password).
  memory = true                     Keep everything in memory; lost on restart (development).

  [[tenants]]                       The tenants served and their workflow data. Without any,
                                    every tenant an API key names (or "default") gets the
                                    built-in sample workflows.
  id = "acme"                       Tenant id.
  workflows = "data/acme"           Folder of Elsa 3 definition / instance JSON files (also
                                    definitions/, instances/, activities/ subfolders), held in
                                    memory; applied proposals are saved back into it as
                                    <definitionId>.v<version>.json. Without it (and without
                                    elsa_url), the tenant gets the built-in samples (in memory
                                    only). Files that are not valid Elsa JSON are skipped with a
                                    warning at start-up.
  elsa_url = "https://elsa.example.com"
                                    Instead of workflows: the Elsa 3 Server holding the tenant's
                                    workflows, read and written through its REST API (applied
                                    proposals are saved there). Not with workflows.
  elsa_api_path = "elsa/api"        Path of Elsa's API below elsa_url (default elsa/api).
  elsa_api_key_env = "ELSA_KEY"     Environment variable holding the Elsa API key, sent as
                                    "Authorization: ApiKey <key>"; never logged.
  elsa_tenant = "acme"              Elsa tenant id, sent as the X-Tenant-Id header.
  provider = "hosted"               The [[providers]] entry serving this tenant.
  activities = "descriptors.json"   The tenant's activity catalog, as Elsa Server's
                                    GET /elsa/api/descriptors/activities answers it
                                    ({"items": [...]} or a bare array), instead of the built-in
                                    one (folder and samples tenants; an Elsa Server tenant
                                    reads its server's). A file that does not parse stops
                                    start-up, naming the file and the position.

  [[auth.api_keys]]                 Static API keys, sent as "Authorization: ApiKey <key>".
  key_env = "ACME_KEY"              Environment variable holding the key (or: key = "...",
                                    at least 16 characters).
  actor = "alice"                   The actor the key stands for.
  tenant = "acme"                   The tenant the actor works in.
  permissions = ["read:workflows", "read:workflow-instances", "read:activities",
                 "propose:workflows", "apply:workflows", "admin:ai"]
                                    Also: analyze:tenant (tenant-wide runtime searches),
                                    operate:workflow-instances (retry, cancel, restart
                                    proposals), publish:workflows (publish, unpublish,
                                    delete proposals).

  [auth.jwt]                        Bearer JWTs, sent as "Authorization: Bearer <token>".
  algorithm = "HS256"               HS256 or RS256; no other algorithm is accepted.
  secret_env = "WEAVER_JWT_SECRET"  HS256: variable holding the shared secret (>= 32 bytes).
  public_key_path = "issuer.pem"    RS256: the issuer's RSA public key, PEM
                                    (or public_key_env = "VAR" holding the PEM).
  issuer = "https://id.example"     If set, the iss claim must equal it.
  audience = "weaver"               If set, the aud claim must contain it.
  actor_claim = "sub"               Claim holding the actor (default sub).
  tenant_claim = "tenant"           Claim holding the tenant (default tenant).
  permissions_claim = "permissions" Claim holding the permissions: array of strings or a
                                    space-separated string (default permissions). Dotted names
                                    reach into nested objects (realm_access.roles).
  leeway_secs = 60                  Clock skew tolerated on exp and nbf.
  tenant = "acme"                   The tenant of a token without tenant_claim (or, without
                                    tenant_claim, of every token).
  required_claims = { token_use = "access" }
                                    Claims that must hold exactly these strings.
  Elsa's own tokens (Identity:Tokens:SigningKey): algorithm = "HS256", issuer and audience
  "http://elsa.api", tenant_claim =
  "http://schemas.microsoft.com/identity/claims/tenantid", required_claims = { token_use =
  "access" }; Elsa 3.8's header spelling of HS256 (the XML-DSig URI) is accepted.

  [[auth.oidc]]                     An OpenID Provider (Entra ID, Keycloak, Auth0, Okta, …);
                                    one entry per provider. Bearer tokens naming its issuer
                                    are verified with the keys it publishes.
  issuer = "https://id.example.com/realms/acme"
                                    Its issuer (iss); discovery at
                                    {issuer}/.well-known/openid-configuration. https only
                                    (http on loopback addresses).
  jwks_uri = "https://…/certs"      Its key set, instead of discovery.
  audience = "weaver"               Required: the aud a token must include.
  algorithms = ["RS256", "PS256", "ES256"]
                                    Accepted signatures (the default); never none, never HMAC.
  actor_claim = "sub"               Claim holding the actor (default sub).
  tenant_claim = "tenant"           Claim naming the tenant; it must be a served tenant.
  tenant = "acme"                   One tenant for this provider (or the tenant of tokens
                                    without tenant_claim, when both are set).
  permissions_claim = "permissions" Claim holding permissions: a JSON array or a
                                    space-separated string (scope works too). Default
                                    permissions, unless roles_claim is set.
  roles_claim = "roles"             Claim holding roles, mapped by [auth.oidc.roles]:
  [auth.oidc.roles]                 admin = ["admin:ai", "apply:workflows"]; unmapped roles
                                    grant nothing.
  required_claims = { tid = "<directory id>" }
                                    Claims that must hold exactly these strings.
  leeway_secs = 30                  Clock skew tolerated on exp and nbf (default 30).
  console_client_id = "weaver-console"
                                    The console's public client at the provider: the sign-in
                                    page offers "Sign in with <name>" (authorization code with
                                    PKCE; redirect URI: the console's own URL, such as
                                    https://weaver.example.com/console/).
  name = "Acme ID"                  What the sign-in button says (default: the issuer's host).
  console_scopes = "openid"         Scopes the console asks for (default "openid").
  jwks_refetch_secs = 30            Least time between two key fetches; a token naming an
                                    unknown kid fetches the keys again no sooner (default 30).
  Keys are fetched at start-up, kept as the provider's Cache-Control says (1 minute to
  1 day; 15 minutes without it), and fetched again on an unknown kid. A provider that
  cannot be reached does not stop weaver: its tokens get 503 identity_provider_unavailable
  until it answers; other identities keep working.

  Without [auth], the server creates one development key for actor "demo" in every served
  tenant with all permissions (set it with env WEAVER_DEV_KEY; a generated one is printed
  once on standard error, never logged). Only on a loopback address: listening elsewhere
  without [auth] is refused. With [auth], [provider] must be set too.

  [provider]                        The model provider (flag --provider, env WEAVER_PROVIDER).
  kind = "demo"                     demo: a scripted provider, no model (the default without
                                    [auth]; with [auth] it must be chosen here). It is
                                    labelled as such in /ai/capabilities and at start-up.
  kind = "openai"                   An OpenAI-compatible endpoint (Ollama, vLLM, LM Studio,
                                    OpenAI, Azure OpenAI), called directly, with:
    base_url = "http://127.0.0.1:11434/v1"   the API's base URL, up to /v1
    model = "llama3.1"                        the model (Azure: the deployment)
    api_key_env = "OPENAI_API_KEY"   the key is read from this variable, never logged;
                                    optional for local servers (a placeholder shorter than
                                    6 characters is sent but cannot be redacted: weaver
                                    warns, naming the variable)
    api = "chat"                    chat (Chat Completions, default) | responses
    max_tool_rounds = 8             model requests ending in tool calls per turn
    request_timeout_s = 60          per model request, and per streamed chunk
    temperature = 0.0               sampling, sent only when set (0 to 2)
    top_p = 0.9                     nucleus sampling (above 0, at most 1)
    seed = 42                       a fixed seed, where the server supports one
    max_output_tokens = 1024        the most tokens one model request may generate
                                    (max_tokens on chat, max_output_tokens on responses)
    parallel_tool_calls = false     one tool call per model request (sent only when set)
    api_version = "2024-10-21"      Azure: sent as ?api-version=, the key as api-key
    headers = { "X-Team" = "a" }    sent with every request (values of names with key,
                                    token, secret, authorization are secrets)
  kind = "copilot"                  GitHub Copilot through the Copilot CLI, with:
    cli_path = "node_modules/.bin/copilot"   default: COPILOT_CLI_PATH, then copilot on PATH
    model = "gpt-4.1"
    byok_type = "openai"            openai | azure | anthropic
    base_url = "http://127.0.0.1:11434/v1"
    api_key_env = "OPENAI_API_KEY"  the key is read from this variable, never logged
    wire_api = "completions"        completions | responses (openai, azure)
    github_token_env = "GH_TOKEN"   GitHub-hosted models without base_url

  [[providers]]                     Several providers instead of [provider]: each entry has
  name = "local"                    a name and the settings of [provider] (kind included).
  kind = "openai"
  base_url = "http://127.0.0.1:11434/v1"
  model = "llama3.1"
  default_provider = "local"        (top level) serves whoever no route below names; may be
                                    left out when there is one entry.
                                    A tenant's provider = "…" wins over its agent's.
  [[agents]]                        per built-in agent:
  name = "instance-diagnostics"
  provider = "local"                that agent's provider, unless its tenant names one.

  [http]
  base_path = "/elsa/api"           Serve every route under this path (Elsa Studio's
                                    Backend:Url), and the chat route also at
                                    <parent of base_path>/ai/chat, where Studio posts it.
                                    Without it, routes are served at /.
  cors_origins = ["https://studio.example.com"]
                                    Browser origins allowed to call the API (CORS, with
                                    preflight); none by default.

  [[mcp.servers]]                   An external MCP server; its allowlisted tools become
                                    governed tools named mcp.<name>.<tool>, each disabled until
                                    an administrator enables it (PUT
                                    /ai/admin/tools/{name}/enablement). A server that fails to
                                    start is reported in /ai/capabilities and retried; weaver
                                    starts anyway.
  name = "everything"
  command = "mcp-server-everything" stdio: a child started from an empty environment (PATH
  args = []                         plus env and secret_env), killed with weaver, restarted
                                    with backoff when it crashes. Or, instead of command:
  url = "http://127.0.0.1:3001/mcp" streamable HTTP.
  env = { LOG_LEVEL = "info" }      plain variables for the child
  secret_env = { API_TOKEN = "HOST_VAR" }
                                    child variable = the value of the host variable HOST_VAR;
                                    a secret: redacted wherever it would appear
  headers = { "X-Team" = "a" }      HTTP only; secret_headers = { Authorization = "HOST_VAR" }
                                    likewise reads secrets from the host environment
  tools = ["echo", "get-env"]       required allowlist: no other tool of the server exists
  permissions = ["read:workflows"]  what a caller needs to use them (required)
  agents = ["workflow-author"]      agents allowed to use them (default: every agent)
  tenants = ["acme"]                tenants that see the server (default: all)
  mutability = "ReadOnly"           ReadOnly (default) | Proposal | Administrative
  danger_level = "Medium"           Low | Medium (default) | High | Critical
  timeout_s = 30                    per call

  [tools]                           How tools are named to models, MCP clients and /ai/tools.
  names = "contract"                contract (default: workflow.getDefinition, instance.get,
                                    activities.catalog, ...) | grounding (upstream Elsa's
                                    catalog: workflows.getDefinition, instances.get,
                                    activities.search, ...). Every tool answers to both
                                    spellings wherever a tool is named; audit records and
                                    metrics use the contract name (and say which was called).

  [[tools]]                         Enablement decisions applied at start-up, each an audited
                                    change by actor "system" (made only when it differs from
                                    the stored decision), so no admin API call is needed
                                    after a deploy. A later administrator change lasts until
                                    the next start. TOML cannot hold [tools] and [[tools]] in
                                    one file: with [[tools]] entries, give names = "..." in
                                    an entry of its own.
  name = "workflow.proposeUpdate"   The tool, by either name.
  enabled = true
  tenants = ["acme"]                Default: every tenant served at start-up ([[tenants]],
                                    or the API keys' tenants, or "default").
  agents = ["workflow-author"]      Default: tenant-wide (every agent).

  [grounding]                       The grounding families of upstream Elsa's spec 012.
  activities = true                 activities.search, activities.getDescriptor
  workflows = true                  workflows.search, getDefinition, getDefinitionGraph,
                                    listVersions, compareVersions, findUsages, explain
  proposals = true                  workflows.validateDraft, proposeCreate, proposeUpdate,
                                    proposePublish, proposeUnpublish, proposeDelete;
                                    instances.proposeRetry, proposeCancel, proposeRestart
  runtime = true                    instances.*, incidents.*. A family set to false is off for
                                    everyone (never offered, refused if called, reported in
                                    /ai/capabilities as turned off by configuration).
  max_items = 25                    The most items one list result holds (1-500).
  max_result_bytes = 32768          The largest grounding result; a list drops whole items
                                    to fit and says so (truncated, nextOffset). The result
                                    budget of [limits] still clamps what reaches the model.

  [telemetry]                       Telemetry leaving the process; off unless set. Every chat
                                    turn has a trace id either way (in its audit records and
                                    in conversation.started data as traceId).
  otlp_endpoint = "http://127.0.0.1:4318"
                                    OTLP/HTTP (protobuf) collector: spans go to
                                    <endpoint>/v1/traces, metrics to <endpoint>/v1/metrics;
                                    both are flushed when weaver stops. No credentials in the
                                    URL.
  service_name = "weaver"           service.name of what is exported (with otlp_endpoint).
  metrics_interval_secs = 60        Seconds between metric exports (with otlp_endpoint).
  headers = { "X-Scope-OrgID" = "a" }
                                    Headers every export carries (with otlp_endpoint);
  secret_headers = { Authorization = "HOST_VAR" }
                                    the collector's credentials, read from the host
                                    environment and redacted wherever they would appear.
  metrics_listen = "127.0.0.1:9464" A second listener serving GET /metrics (Prometheus text)
                                    to anyone who reaches it, without credentials; the main
                                    listener's /metrics keeps requiring admin:ai. Bind it
                                    where only your scraper reaches.

  [limits]
  max_body_bytes = 262144           Largest request body; larger is 413 (flag --max-body-bytes,
                                    env WEAVER_MAX_BODY_BYTES).
  max_message_bytes = 32768         Largest chat message; larger is 413.
  grace_window_secs = 60            How long a turn goes on without a client, and how long
                                    running turns get at shutdown (flag --grace-window-secs,
                                    env WEAVER_GRACE_WINDOW_SECS).
  result_budget_bytes = 32768       Largest tool result handed to the model; larger results are
                                    clamped (flag --result-budget-bytes,
                                    env WEAVER_RESULT_BUDGET_BYTES).
  retention_days = 30               Conversations idle this long are purged.
  proposal_ttl_days = 7             Proposals nobody acted on expire after this long.
  max_operation_targets = 100       The most instances one retry, cancel or restart proposal
                                    may name (1 to 100).
  turn_lease_secs = 30              With a SQLite or PostgreSQL store: how long a running
                                    turn's claim on its conversation lasts without a heartbeat
                                    (renewed every third of it). Replicas sharing the store
                                    refuse a second turn (409 turn_in_progress) while it runs;
                                    a turn whose server died (killed, crashed) is closed with
                                    conversation.failed, code replica_lost, by another replica
                                    or by the restarted one, within this plus a third of it.
  stalled_connection_secs = 300     A connection whose client has left written data unread
                                    (or unacknowledged) this long is closed: a stream nobody
                                    reads no longer holds its connection (and counts as a
                                    client) for ever. 0 leaves it to the operating system."#;

/// The whole configuration.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeaverConfig {
    /// The address to listen on.
    pub listen: Option<String>,
    /// Where the AI platform's data is kept.
    #[serde(default)]
    pub store: StoreConfig,
    /// The tenants served and their workflow data.
    #[serde(default)]
    pub tenants: Vec<TenantConfig>,
    /// Identity.
    #[serde(default)]
    pub auth: AuthConfig,
    /// The model provider; `None` when the file has no `[provider]` (then the demo provider
    /// serves, unless `[auth]` is configured: see [`WeaverConfig::chosen_provider`]).
    pub provider: Option<ProviderConfig>,
    /// Several named providers (`[[providers]]`), instead of `[provider]`.
    #[serde(default)]
    pub providers: Vec<NamedProviderConfig>,
    /// The `[[providers]]` entry serving whoever no tenant or agent route names.
    pub default_provider: Option<String>,
    /// Settings of the built-in agents (`[[agents]]`): which provider serves each.
    #[serde(default)]
    pub agents: Vec<AgentConfig>,
    /// Sizes and durations.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// Where routes are served and which browser origins may call them.
    #[serde(default)]
    pub http: HttpConfig,
    /// External MCP servers whose allowlisted tools weaver offers.
    #[serde(default)]
    pub mcp: McpConfig,
    /// Telemetry leaving the process: OTLP export, the unauthenticated metrics listener.
    #[serde(default)]
    pub telemetry: TelemetryConfig,
    /// Which spelling tools are offered under, and enablement decisions made at start-up.
    #[serde(default)]
    pub tools: ToolsConfig,
    /// The grounding families and the bounds of their results.
    #[serde(default)]
    pub grounding: GroundingConfig,
}

/// `[http]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// Serve every route under this path (for example `/elsa/api`); the chat route is also
    /// served at `<parent of base_path>/ai/chat`. `None` serves routes at `/`.
    pub base_path: Option<String>,
    /// Origins (`scheme://host[:port]`) allowed to call the API from a browser.
    #[serde(default)]
    pub cors_origins: Vec<String>,
}

impl HttpConfig {
    /// The base path normalised (`/elsa/api`: a leading `/`, no trailing `/`), `None` for
    /// none or `/`; an error for a path with characters a route cannot hold.
    pub fn base_path(&self) -> Result<Option<String>, ConfigError> {
        let Some(path) = &self.base_path else {
            return Ok(None);
        };
        let trimmed = path.trim().trim_end_matches('/');
        if trimmed.is_empty() {
            return Ok(None);
        }
        let normalised = format!("/{}", trimmed.trim_start_matches('/'));
        let valid = normalised[1..].split('/').all(|segment| {
            !segment.is_empty()
                && segment
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~'))
        });
        if valid {
            Ok(Some(normalised))
        } else {
            Err(ConfigError::Invalid(
                "[http] base_path must be a path like \"/elsa/api\": segments of letters, \
                 digits and - _ . ~"
                    .to_owned(),
            ))
        }
    }
}

/// `[store]`. `Debug` never shows a password in the URL.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// A SQLite file.
    pub sqlite: Option<PathBuf>,
    /// A PostgreSQL URL.
    pub postgres: Option<String>,
    /// The environment variable holding a PostgreSQL URL.
    pub postgres_env: Option<String>,
    /// Keep everything in memory.
    #[serde(default)]
    pub memory: bool,
}

/// One `[[tenants]]` entry: its workflow data comes from a folder (`workflows`), from an
/// Elsa Server (`elsa_url` and the other `elsa_*` keys), or from the built-in samples.
/// `Debug` never shows a password in the URL.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantConfig {
    /// The tenant id.
    pub id: String,
    /// A folder of Elsa JSON files; with neither this nor `elsa_url`, the built-in samples.
    pub workflows: Option<PathBuf>,
    /// The base URL of the Elsa 3 Server holding the tenant's workflows (instead of
    /// `workflows`).
    pub elsa_url: Option<String>,
    /// The path of Elsa's API below `elsa_url` (default `elsa/api`).
    pub elsa_api_path: Option<String>,
    /// The environment variable holding the Elsa API key (sent as `Authorization: ApiKey
    /// <key>`); without it, requests carry no credentials.
    pub elsa_api_key_env: Option<String>,
    /// The Elsa tenant id, sent as `X-Tenant-Id` (for an Elsa Server resolving its tenant
    /// from that header).
    pub elsa_tenant: Option<String>,
    /// The `[[providers]]` entry that serves this tenant's conversations.
    pub provider: Option<String>,
    /// A file of activity descriptors (what Elsa Server's `GET
    /// /elsa/api/descriptors/activities` answers) that replaces the built-in catalog of a
    /// folder or samples tenant.
    pub activities: Option<PathBuf>,
}

/// The providers a server runs, checked: every name unique and every route naming one.
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderPlan {
    /// The providers, by name.
    pub providers: Vec<NamedProviderConfig>,
    /// The name of the provider serving whoever no route names.
    pub default: String,
    /// Tenant id → provider name.
    pub tenants: Vec<(String, String)>,
    /// Agent name → provider name.
    pub agents: Vec<(String, String)>,
}

/// `[[agents]]`: settings of one agent.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The agent's name, such as `workflow-author`.
    pub name: String,
    /// The `[[providers]]` entry that serves this agent's conversations (unless the tenant
    /// names one).
    pub provider: Option<String>,
}

/// `[[providers]]`: a provider with a name, and the same settings as `[provider]`.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedProviderConfig {
    /// The name tenants and agents use for it.
    pub name: String,
    /// The provider's settings.
    pub config: ProviderConfig,
}

impl<'de> Deserialize<'de> for NamedProviderConfig {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut table = toml::Table::deserialize(deserializer)?;
        let name = match table.remove("name") {
            Some(toml::Value::String(name)) => name,
            Some(_) => return Err(serde::de::Error::custom("providers.name must be a string")),
            None => {
                return Err(serde::de::Error::custom(
                    "every [[providers]] entry needs a name",
                ));
            }
        };
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid {
            return Err(serde::de::Error::custom(format!(
                "the provider name '{name}' must be 1 to 64 letters, digits, '-', '_' or '.'"
            )));
        }
        let config = ProviderConfig::from_table(table).map_err(serde::de::Error::custom)?;
        Ok(Self { name, config })
    }
}

impl std::fmt::Debug for StoreConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreConfig")
            .field("sqlite", &self.sqlite)
            .field("postgres", &self.postgres.as_deref().map(redact_url))
            .field("postgres_env", &self.postgres_env)
            .field("memory", &self.memory)
            .finish()
    }
}

impl std::fmt::Debug for TenantConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantConfig")
            .field("id", &self.id)
            .field("workflows", &self.workflows)
            .field("elsa_url", &self.elsa_url.as_deref().map(redact_url))
            .field("elsa_api_path", &self.elsa_api_path)
            .field("elsa_api_key_env", &self.elsa_api_key_env)
            .field("elsa_tenant", &self.elsa_tenant)
            .field("activities", &self.activities)
            .field("provider", &self.provider)
            .finish()
    }
}

impl TenantConfig {
    /// Whether the entry names an Elsa Server (any `elsa_*` key is set).
    pub fn uses_elsa_server(&self) -> bool {
        self.elsa_url.is_some()
            || self.elsa_api_path.is_some()
            || self.elsa_api_key_env.is_some()
            || self.elsa_tenant.is_some()
    }
}

/// `[auth]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// Static API keys.
    #[serde(default)]
    pub api_keys: Vec<ApiKeyConfig>,
    /// Bearer JWTs.
    pub jwt: Option<JwtConfig>,
    /// OpenID Providers.
    #[serde(default)]
    pub oidc: Vec<OidcConfig>,
}

impl AuthConfig {
    /// Whether any identity is configured (API keys, JWTs or OpenID Providers).
    pub fn is_configured(&self) -> bool {
        !self.api_keys.is_empty() || self.jwt.is_some() || !self.oidc.is_empty()
    }
}

/// One `[[auth.oidc]]` entry: an OpenID Provider whose access tokens weaver accepts.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcConfig {
    /// The issuer; discovery at `{issuer}/.well-known/openid-configuration`.
    pub issuer: String,
    /// The key set's address, instead of discovery.
    pub jwks_uri: Option<String>,
    /// The audience a token must include.
    pub audience: String,
    /// The accepted algorithms (default RS256, PS256, ES256).
    pub algorithms: Option<Vec<String>>,
    /// The actor claim (default `sub`).
    pub actor_claim: Option<String>,
    /// The tenant claim.
    pub tenant_claim: Option<String>,
    /// One tenant for the provider (or the default for tokens without the tenant claim).
    pub tenant: Option<String>,
    /// The permissions claim (default `permissions` unless `roles_claim` is set).
    pub permissions_claim: Option<String>,
    /// The roles claim, mapped to permissions by `roles`.
    pub roles_claim: Option<String>,
    /// What each role grants.
    #[serde(default)]
    pub roles: BTreeMap<String, Vec<String>>,
    /// Claims that must hold exactly these strings.
    #[serde(default)]
    pub required_claims: BTreeMap<String, String>,
    /// Tolerated clock skew in seconds (default 30).
    pub leeway_secs: Option<u64>,
    /// The console's public client id; set, the console offers sign-in with this provider.
    pub console_client_id: Option<String>,
    /// What the console's sign-in button calls the provider (default: the issuer's host).
    pub name: Option<String>,
    /// The scopes the console asks for (default `openid`).
    pub console_scopes: Option<String>,
    /// The least time between two key fetches, in seconds (default 30).
    pub jwks_refetch_secs: Option<u64>,
}

/// One `[[auth.api_keys]]` entry. `Debug` never shows the key.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyConfig {
    /// The key itself.
    pub key: Option<String>,
    /// The environment variable holding the key.
    pub key_env: Option<String>,
    /// The actor.
    pub actor: String,
    /// The tenant.
    pub tenant: String,
    /// The permissions.
    #[serde(default)]
    pub permissions: Vec<String>,
}

impl std::fmt::Debug for ApiKeyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKeyConfig")
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .field("key_env", &self.key_env)
            .field("actor", &self.actor)
            .field("tenant", &self.tenant)
            .field("permissions", &self.permissions)
            .finish()
    }
}

/// The JWT algorithms accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub enum JwtAlgorithmConfig {
    /// HMAC with SHA-256 and a shared secret.
    #[serde(rename = "HS256")]
    Hs256,
    /// RSA PKCS#1 v1.5 with SHA-256 and the issuer's public key.
    #[serde(rename = "RS256")]
    Rs256,
}

/// `[auth.jwt]`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtConfig {
    /// HS256 or RS256.
    pub algorithm: JwtAlgorithmConfig,
    /// HS256: the variable holding the secret.
    pub secret_env: Option<String>,
    /// RS256: a PEM file with the public key.
    pub public_key_path: Option<PathBuf>,
    /// RS256: the variable holding the PEM.
    pub public_key_env: Option<String>,
    /// The required issuer.
    pub issuer: Option<String>,
    /// The required audience.
    pub audience: Option<String>,
    /// The actor claim.
    pub actor_claim: Option<String>,
    /// The tenant claim.
    pub tenant_claim: Option<String>,
    /// The permissions claim.
    pub permissions_claim: Option<String>,
    /// Tolerated clock skew in seconds.
    pub leeway_secs: Option<u64>,
    /// The tenant of a token without the tenant claim.
    pub tenant: Option<String>,
    /// Claims that must hold exactly these strings.
    #[serde(default)]
    pub required_claims: BTreeMap<String, String>,
}

/// `[provider]`: which provider, with that provider's own settings. `Debug` shows the
/// settings with passwords in URLs and any secret-looking value hidden.
#[derive(Clone, Default, PartialEq)]
#[non_exhaustive]
pub enum ProviderConfig {
    /// The scripted demo provider.
    #[default]
    Demo,
    /// GitHub Copilot; the settings are the Copilot provider's own (`kind` included).
    Copilot(toml::Table),
    /// An OpenAI-compatible endpoint; the settings are that provider's own (`kind` included).
    OpenAi(toml::Table),
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Demo => f.write_str("Demo"),
            Self::Copilot(table) | Self::OpenAi(table) => {
                let mut settings = f.debug_map();
                for (key, value) in table {
                    settings.entry(key, &SettingValue { key, value });
                }
                settings.finish()
            }
        }
    }
}

/// A provider setting as `Debug` shows it: a value under a secret-looking key (that is not
/// the name of a variable, `*_env`) is hidden, and URLs lose their passwords.
struct SettingValue<'a> {
    key: &'a str,
    value: &'a toml::Value,
}

impl std::fmt::Debug for SettingValue<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secret_looking = ["key", "token", "secret", "password"]
            .iter()
            .any(|word| self.key.contains(word))
            && !self.key.ends_with("_env");
        match self.value {
            _ if secret_looking => f.write_str("<redacted>"),
            // Tables such as `headers` may hold credentials under any name: keys only.
            toml::Value::Table(table) => f.debug_list().entries(table.keys()).finish(),
            toml::Value::String(text) => std::fmt::Debug::fmt(&redact_url(text), f),
            other => write!(f, "{other}"),
        }
    }
}

/// `text` as `Debug` may show it: the host's built-in rules hide URL passwords
/// (`scheme://user:password@host`) and `password=…` assignments.
fn redact_url(text: &str) -> String {
    static BUILT_IN: std::sync::OnceLock<Redactor> = std::sync::OnceLock::new();
    BUILT_IN
        .get_or_init(Redactor::default)
        .redact_str(text)
        .into_owned()
}

impl ProviderConfig {
    /// The provider kind, as `kind` names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Demo => "demo",
            Self::Copilot(_) => "copilot",
            Self::OpenAi(_) => "openai",
        }
    }

    /// The configuration of `kind` with no further settings.
    pub fn of_kind(kind: &str) -> Result<Self, String> {
        let mut table = toml::Table::new();
        table.insert("kind".into(), toml::Value::String(kind.to_owned()));
        Self::from_table(table)
    }

    fn from_table(table: toml::Table) -> Result<Self, String> {
        let kind = match table.get("kind") {
            None => "demo",
            Some(toml::Value::String(kind)) => kind.as_str(),
            Some(_) => return Err("provider.kind must be a string".to_owned()),
        };
        match kind {
            "demo" => match table.keys().find(|k| *k != "kind") {
                Some(key) => Err(format!(
                    "provider.{key} is not a setting of the demo provider (it has none)"
                )),
                None => Ok(Self::Demo),
            },
            "copilot" => Ok(Self::Copilot(table)),
            "openai" => Ok(Self::OpenAi(table)),
            // The value is not repeated: configuration errors never quote what was written.
            _ => Err(
                "provider.kind is not a known provider; use \"demo\", \"openai\" or \"copilot\""
                    .to_owned(),
            ),
        }
    }
}

impl<'de> Deserialize<'de> for ProviderConfig {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let table = toml::Table::deserialize(deserializer)?;
        Self::from_table(table).map_err(serde::de::Error::custom)
    }
}

/// `[limits]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Largest request body in bytes.
    pub max_body_bytes: Option<usize>,
    /// Largest chat message in bytes.
    pub max_message_bytes: Option<usize>,
    /// Grace window in seconds.
    pub grace_window_secs: Option<u64>,
    /// Largest tool result handed to a model, in bytes.
    pub result_budget_bytes: Option<usize>,
    /// Conversation retention in days.
    pub retention_days: Option<u32>,
    /// Proposal time-to-live in days.
    pub proposal_ttl_days: Option<u32>,
    /// The most instances one operation proposal may target.
    pub max_operation_targets: Option<std::num::NonZeroUsize>,
    /// The lease of a running turn's claim in a shared store, in seconds.
    pub turn_lease_secs: Option<u64>,
    /// How long written data may stay unread by a client before its connection is closed,
    /// in seconds (0: the operating system's default).
    pub stalled_connection_secs: Option<u64>,
}

/// Why a configuration cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read the configuration file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML of the expected shape.
    #[error("the configuration file {path} is not valid: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the position.
        message: String,
    },
    /// A setting has a value that cannot work.
    #[error("{0}")]
    Invalid(String),
}

/// Settings given on the command line or through environment variables; they override the
/// file. `Debug` never shows a password in the PostgreSQL URL.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `--listen` / `WEAVER_LISTEN`.
    pub listen: Option<String>,
    /// `--sqlite` / `WEAVER_SQLITE`.
    pub sqlite: Option<PathBuf>,
    /// `--postgres` / `WEAVER_POSTGRES`.
    pub postgres: Option<String>,
    /// `--provider` / `WEAVER_PROVIDER`.
    pub provider: Option<String>,
    /// `--max-body-bytes` / `WEAVER_MAX_BODY_BYTES`.
    pub max_body_bytes: Option<usize>,
    /// `--grace-window-secs` / `WEAVER_GRACE_WINDOW_SECS`.
    pub grace_window_secs: Option<u64>,
    /// `--result-budget-bytes` / `WEAVER_RESULT_BUDGET_BYTES`.
    pub result_budget_bytes: Option<usize>,
}

impl std::fmt::Debug for Overrides {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Overrides")
            .field("listen", &self.listen)
            .field("sqlite", &self.sqlite)
            .field("postgres", &self.postgres.as_deref().map(redact_url))
            .field("provider", &self.provider)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("grace_window_secs", &self.grace_window_secs)
            .field("result_budget_bytes", &self.result_budget_bytes)
            .finish()
    }
}

impl WeaverConfig {
    /// Parses a TOML document; relative paths stay as written. An error says what is wrong
    /// and where (line and column), never what was written there: toml's own text quotes the
    /// source line, which may hold a password.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|error| describe_toml_error(&error, text))
    }

    /// The provider to serve: the configured one; with no `[provider]`, the demo provider,
    /// but only on a server without `[auth]` (a server with real identities never falls back
    /// to a scripted stand-in by omission).
    pub fn chosen_provider(&self) -> Result<ProviderConfig, ConfigError> {
        match &self.provider {
            Some(provider) => Ok(provider.clone()),
            None if self.auth.is_configured() => Err(ConfigError::Invalid(
                "[auth] is configured but [provider] is not: name the model provider \
                 ([provider] kind = \"openai\"), or set kind = \"demo\" to serve the scripted \
                 demo provider on purpose"
                    .to_owned(),
            )),
            None => Ok(ProviderConfig::Demo),
        }
    }

    /// The providers to serve and who uses which: the `[[providers]]` entries with their
    /// default and the tenants' and agents' choices, or the one `[provider]` (see
    /// [`chosen_provider`](Self::chosen_provider)) under the name of its kind.
    pub fn provider_plan(&self) -> Result<ProviderPlan, ConfigError> {
        let invalid = |message: String| Err(ConfigError::Invalid(message));
        let tenants: Vec<(String, String)> = self
            .tenants
            .iter()
            .filter_map(|t| Some((t.id.clone(), t.provider.clone()?)))
            .collect();
        let agents: Vec<(String, String)> = self
            .agents
            .iter()
            .filter_map(|a| Some((a.name.clone(), a.provider.clone()?)))
            .collect();
        if self.providers.is_empty() {
            if let Some(default) = &self.default_provider {
                return invalid(format!(
                    "default_provider = \"{default}\" names a [[providers]] entry, but there is none"
                ));
            }
            if let Some((who, name)) = tenants.iter().chain(&agents).next() {
                return invalid(format!(
                    "'{who}' names the provider '{name}': routing by provider name needs \
                     [[providers]] entries"
                ));
            }
            let config = self.chosen_provider()?;
            return Ok(ProviderPlan {
                default: config.kind().to_owned(),
                providers: vec![NamedProviderConfig {
                    name: config.kind().to_owned(),
                    config,
                }],
                tenants,
                agents,
            });
        }
        if self.provider.is_some() {
            return invalid("use either [provider] or [[providers]], not both".to_owned());
        }
        let default = match (&self.default_provider, self.providers.as_slice()) {
            (Some(default), _) => default.clone(),
            (None, [only]) => only.name.clone(),
            (None, _) => {
                return invalid(
                    "several [[providers]] are configured: name the one that serves everyone \
                     else with default_provider = \"name\""
                        .to_owned(),
                );
            }
        };
        let named = |name: &str| self.providers.iter().any(|p| p.name == name);
        for (who, name) in std::iter::once((&"default_provider".to_owned(), &default))
            .chain(tenants.iter().map(|(t, n)| (t, n)))
            .chain(agents.iter().map(|(a, n)| (a, n)))
        {
            if !named(name) {
                return invalid(format!(
                    "'{who}' names the provider '{name}', which no [[providers]] entry has"
                ));
            }
        }
        for (index, provider) in self.providers.iter().enumerate() {
            if self.providers[..index]
                .iter()
                .any(|p| p.name == provider.name)
            {
                return invalid(format!(
                    "the provider name '{}' is given to two [[providers]] entries",
                    provider.name
                ));
            }
        }
        Ok(ProviderPlan {
            providers: self.providers.clone(),
            default,
            tenants,
            agents,
        })
    }

    /// Reads a file; relative paths in it are resolved against its folder.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        let mut config = Self::from_toml(&text).map_err(|message| ConfigError::Parse {
            path: path.to_owned(),
            message,
        })?;
        let base = path.parent().unwrap_or(Path::new(""));
        config.resolve_paths(base);
        Ok(config)
    }

    fn resolve_paths(&mut self, base: &Path) {
        let resolve = |path: &mut PathBuf| {
            if path.is_relative() {
                *path = base.join(&*path);
            }
        };
        if let Some(sqlite) = &mut self.store.sqlite {
            resolve(sqlite);
        }
        for tenant in &mut self.tenants {
            if let Some(activities) = &mut tenant.activities {
                resolve(activities);
            }
            if let Some(workflows) = &mut tenant.workflows {
                resolve(workflows);
            }
        }
        if let Some(jwt) = &mut self.auth.jwt
            && let Some(key) = &mut jwt.public_key_path
        {
            resolve(key);
        }
        let providers = self
            .provider
            .iter_mut()
            .chain(self.providers.iter_mut().map(|named| &mut named.config));
        for provider in providers {
            if let ProviderConfig::Copilot(table) = provider
                && let Some(toml::Value::String(cli)) = table.get_mut("cli_path")
                && Path::new(cli.as_str()).is_relative()
            {
                *cli = base.join(cli.as_str()).to_string_lossy().into_owned();
            }
        }
    }

    /// Applies command-line and environment settings over the file's.
    pub fn apply(&mut self, overrides: Overrides) -> Result<(), ConfigError> {
        if let Some(listen) = overrides.listen {
            self.listen = Some(listen);
        }
        if let Some(sqlite) = overrides.sqlite {
            self.store = StoreConfig {
                sqlite: Some(sqlite),
                ..StoreConfig::default()
            };
        }
        if let Some(postgres) = overrides.postgres {
            self.store = StoreConfig {
                postgres: Some(postgres),
                ..StoreConfig::default()
            };
        }
        if let Some(kind) = overrides.provider
            && self.provider.as_ref().map(ProviderConfig::kind) != Some(kind.as_str())
        {
            self.provider = Some(ProviderConfig::of_kind(&kind).map_err(ConfigError::Invalid)?);
        }
        let limits = &mut self.limits;
        limits.max_body_bytes = overrides.max_body_bytes.or(limits.max_body_bytes);
        limits.grace_window_secs = overrides.grace_window_secs.or(limits.grace_window_secs);
        limits.result_budget_bytes = overrides.result_budget_bytes.or(limits.result_budget_bytes);
        Ok(())
    }

    /// The address to listen on (default `127.0.0.1:8080`).
    pub fn listen_addr(&self) -> Result<SocketAddr, ConfigError> {
        let listen = self.listen.as_deref().unwrap_or(DEFAULT_LISTEN);
        listen.parse().map_err(|_| {
            ConfigError::Invalid(format!(
                "listen = \"{listen}\" is not an address such as {DEFAULT_LISTEN}"
            ))
        })
    }
}

/// toml's message without the values it quotes, and the position as line and column.
fn describe_toml_error(error: &toml::de::Error, text: &str) -> String {
    let message = without_quoted_values(error.message());
    match error.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("{message} (line {line}, column {column})")
        }
        None => message,
    }
}

/// serde's messages quote the offending value right after saying what kind it is
/// (`invalid type: string "…", expected …`, `unknown variant `…``); drop those values and
/// keep the rest (field names and the expected forms say what to fix).
fn without_quoted_values(message: &str) -> String {
    const VALUE_KINDS: [&str; 7] = [
        "string ", "integer ", "float ", "char ", "boolean ", "bytes ", "variant ",
    ];
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(start) = rest.find(['"', '`']) {
        let quote = rest[start..].chars().next().unwrap_or('"');
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let mut escaped = false;
        let end = after.char_indices().find_map(|(i, c)| {
            let closes = c == quote && !escaped;
            escaped = c == '\\' && !escaped;
            closes.then_some(i)
        });
        let Some(end) = end else {
            out.push_str(&rest[start..]);
            return out;
        };
        if VALUE_KINDS.iter().any(|kind| out.ends_with(kind)) {
            out.push_str("<value>");
        } else {
            out.push_str(&rest[start..=start + 1 + end]);
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_names_every_key() {
        let keys = [
            "listen",
            "[store]",
            "sqlite",
            "postgres",
            "postgres_env",
            "memory",
            "[[tenants]]",
            "id",
            "workflows",
            "elsa_url",
            "elsa_api_path",
            "elsa_api_key_env",
            "elsa_tenant",
            "[[auth.api_keys]]",
            "key_env",
            "key =",
            "actor",
            "tenant",
            "permissions",
            "[auth.jwt]",
            "algorithm",
            "secret_env",
            "public_key_path",
            "public_key_env",
            "issuer",
            "audience",
            "actor_claim",
            "tenant_claim",
            "permissions_claim",
            "leeway_secs",
            "required_claims",
            "[[auth.oidc]]",
            "jwks_uri",
            "algorithms",
            "roles_claim",
            "[auth.oidc.roles]",
            "console_client_id",
            "console_scopes",
            "jwks_refetch_secs",
            "[provider]",
            "kind",
            "cli_path",
            "model",
            "byok_type",
            "base_url",
            "api_key_env",
            "wire_api",
            "max_tool_rounds",
            "temperature",
            "top_p",
            "seed",
            "max_output_tokens",
            "parallel_tool_calls",
            "github_token_env",
            "[limits]",
            "max_body_bytes",
            "max_message_bytes",
            "grace_window_secs",
            "result_budget_bytes",
            "retention_days",
            "proposal_ttl_days",
            "max_operation_targets",
            "turn_lease_secs",
            "stalled_connection_secs",
            "WEAVER_DEV_KEY",
            "[[mcp.servers]]",
            "command",
            "url",
            "args",
            "env",
            "secret_env",
            "headers",
            "secret_headers",
            "tools",
            "agents",
            "tenants",
            "mutability",
            "danger_level",
            "timeout_s",
            "[telemetry]",
            "otlp_endpoint",
            "service_name",
            "metrics_interval_secs",
            "metrics_listen",
        ];
        for key in keys {
            assert!(
                REFERENCE.contains(key),
                "the reference does not mention {key}"
            );
        }
    }

    const PASSWORD: &str = "hunter2-db-password";

    #[test]
    fn toml_errors_give_line_and_column_and_never_the_value() {
        let syntax =
            format!("[store]\npostgres = \"postgres://weaver:{PASSWORD}@db/weaver\" oops\n");
        let error = WeaverConfig::from_toml(&syntax).unwrap_err();
        assert!(error.contains("line 2, column"), "{error}");
        assert!(!error.contains(PASSWORD), "{error}");
        assert!(!error.contains("postgres://"), "{error}");

        let typed = format!("[limits]\nmax_body_bytes = \"{PASSWORD}\"\n");
        let error = WeaverConfig::from_toml(&typed).unwrap_err();
        assert!(error.contains("line 2"), "{error}");
        assert!(error.contains("invalid type: string <value>"), "{error}");
        assert!(!error.contains(PASSWORD), "{error}");

        let variant = format!("[auth.jwt]\nalgorithm = \"{PASSWORD}\"\n");
        let error = WeaverConfig::from_toml(&variant).unwrap_err();
        assert!(!error.contains(PASSWORD), "{error}");
        assert!(error.contains("HS256"), "the expected forms stay: {error}");

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("weaver.toml");
        std::fs::write(&path, &syntax).unwrap();
        let error = WeaverConfig::load(&path).unwrap_err().to_string();
        assert!(error.contains("line 2"), "{error}");
        assert!(!error.contains(PASSWORD), "{error}");
    }

    #[test]
    fn debug_of_the_configuration_shows_no_password_or_secret() {
        let config = WeaverConfig::from_toml(&format!(
            "[store]\npostgres = \"postgres://weaver:{PASSWORD}@db:5432/weaver?sslmode=require&password={PASSWORD}\"\n\
             [[tenants]]\nid = \"acme\"\nelsa_url = \"https://elsa:{PASSWORD}@elsa.example.com\"\n\
             [[auth.api_keys]]\nkey = \"{PASSWORD}-api-key\"\nactor = \"a\"\ntenant = \"acme\"\n\
             [provider]\nkind = \"copilot\"\nbase_url = \"http://u:{PASSWORD}@127.0.0.1:11434/v1\"\n\
             api_key_env = \"OPENAI_API_KEY\"\n"
        ))
        .unwrap();
        let overrides = Overrides {
            postgres: Some(format!("postgres://weaver:{PASSWORD}@db/weaver")),
            ..Overrides::default()
        };
        for shown in [
            format!("{config:?}"),
            format!("{config:#?}"),
            format!("{overrides:?}"),
        ] {
            assert!(!shown.contains(PASSWORD), "{shown}");
        }
        let shown = format!("{config:?}");
        assert!(
            shown.contains(
                "postgres://weaver:[REDACTED]@db:5432/weaver?sslmode=require&password=[REDACTED]"
            ),
            "{shown}"
        );
        assert!(
            shown.contains("OPENAI_API_KEY"),
            "variable names stay visible: {shown}"
        );
    }

    #[test]
    fn urls_lose_only_their_passwords() {
        assert_eq!(
            redact_url("postgres://u:p@h/d"),
            "postgres://u:[REDACTED]@h/d"
        );
        assert_eq!(redact_url("postgres://u@h/d"), "postgres://u@h/d");
        assert_eq!(redact_url("https://h/p?x=1#f"), "https://h/p?x=1#f");
        assert_eq!(
            redact_url("postgres://h/d?user=u&password=p"),
            "postgres://h/d?user=u&password=[REDACTED]"
        );
        assert_eq!(redact_url("weaver.db"), "weaver.db");
    }

    #[test]
    fn without_a_provider_the_demo_serves_only_a_server_without_auth() {
        let open = WeaverConfig::default();
        assert_eq!(open.chosen_provider().unwrap(), ProviderConfig::Demo);
        let guarded = WeaverConfig::from_toml(
            "[[auth.api_keys]]\nkey_env = \"K\"\nactor = \"a\"\ntenant = \"t\"\n",
        )
        .unwrap();
        let error = guarded.chosen_provider().unwrap_err().to_string();
        assert!(
            error.contains("[provider]") && error.contains("[auth]"),
            "{error}"
        );
        let chosen = WeaverConfig::from_toml(
            "[[auth.api_keys]]\nkey_env = \"K\"\nactor = \"a\"\ntenant = \"t\"\n[provider]\nkind = \"demo\"\n",
        )
        .unwrap();
        assert_eq!(chosen.chosen_provider().unwrap(), ProviderConfig::Demo);
    }

    #[test]
    fn unknown_keys_and_providers_are_refused_with_their_name() {
        let error = WeaverConfig::from_toml("lsiten = \"x\"").unwrap_err();
        assert!(error.contains("lsiten"), "{error}");
        let error = WeaverConfig::from_toml("[provider]\nkind = \"ollama\"").unwrap_err();
        // The kinds that exist are named; what was written is not repeated.
        assert!(
            !error.contains("ollama") && error.contains("openai"),
            "{error}"
        );
        let error =
            WeaverConfig::from_toml("[provider]\nkind = \"demo\"\nmodel = \"x\"").unwrap_err();
        assert!(error.contains("provider.model"), "{error}");
    }

    const OPENAI: &str =
        "kind = \"openai\"\nbase_url = \"http://127.0.0.1:11434/v1\"\nmodel = \"m\"\n";

    #[test]
    fn one_provider_is_a_plan_of_one_named_after_its_kind() {
        let config = WeaverConfig::from_toml(&format!("[provider]\n{OPENAI}")).unwrap();
        let plan = config.provider_plan().unwrap();
        assert_eq!(plan.default, "openai");
        assert_eq!(plan.providers.len(), 1);
        assert_eq!(plan.providers[0].config.kind(), "openai");
        let demo = WeaverConfig::default().provider_plan().unwrap();
        assert_eq!(
            (demo.default.as_str(), &demo.providers[0].config),
            ("demo", &ProviderConfig::Demo)
        );
    }

    #[test]
    fn several_providers_route_tenants_and_agents_by_name() {
        let config = WeaverConfig::from_toml(&format!(
            "default_provider = \"local\"\n\
             [[providers]]\nname = \"local\"\n{OPENAI}\
             [[providers]]\nname = \"hosted\"\n{OPENAI}api = \"responses\"\n\
             [[tenants]]\nid = \"acme\"\nprovider = \"hosted\"\n\
             [[agents]]\nname = \"instance-diagnostics\"\nprovider = \"local\"\n"
        ))
        .unwrap();
        let plan = config.provider_plan().unwrap();
        assert_eq!(plan.default, "local");
        assert_eq!(plan.tenants, [("acme".to_owned(), "hosted".to_owned())]);
        assert_eq!(
            plan.agents,
            [("instance-diagnostics".to_owned(), "local".to_owned())]
        );
        assert_eq!(plan.providers[1].name, "hosted");
    }

    #[test]
    fn provider_plans_that_cannot_work_are_refused_with_what_to_fix() {
        let one = format!("[[providers]]\nname = \"a\"\n{OPENAI}");
        let cases = [
            (format!("[provider]\n{OPENAI}{one}"), "either"),
            (
                format!("{one}[[providers]]\nname = \"b\"\n{OPENAI}"),
                "default_provider",
            ),
            (format!("default_provider = \"zz\"\n{one}"), "zz"),
            (
                format!("{one}[[tenants]]\nid = \"t\"\nprovider = \"nope\"\n"),
                "nope",
            ),
            (
                format!("default_provider = \"a\"\n{one}[[providers]]\nname = \"a\"\n{OPENAI}"),
                "two",
            ),
            (
                "[[tenants]]\nid = \"t\"\nprovider = \"x\"\n".to_owned(),
                "[[providers]]",
            ),
            ("default_provider = \"x\"\n".to_owned(), "none"),
        ];
        for (text, named) in cases {
            let error = match WeaverConfig::from_toml(&text) {
                Ok(config) => config.provider_plan().unwrap_err().to_string(),
                Err(error) => error,
            };
            assert!(error.contains(named), "{text}\n=> {error}");
        }
        for bad in [
            "[[providers]]\nkind = \"demo\"\n",
            "[[providers]]\nname = \"a b\"\nkind = \"demo\"\n",
        ] {
            assert!(WeaverConfig::from_toml(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn debug_shows_no_provider_header_value() {
        let config = WeaverConfig::from_toml(&format!(
            "[provider]\n{OPENAI}headers = {{ \"X-Gateway\" = \"gw-secret-value-123\" }}\n"
        ))
        .unwrap();
        let shown = format!("{config:?}");
        assert!(
            shown.contains("X-Gateway") && !shown.contains("gw-secret-value-123"),
            "{shown}"
        );
    }

    #[test]
    fn a_tenant_names_a_folder_or_an_elsa_server() {
        let config = WeaverConfig::from_toml(
            "[[tenants]]\nid = \"acme\"\nworkflows = \"data/acme\"\n\
             [[tenants]]\nid = \"globex\"\nelsa_url = \"https://elsa.example.com\"\n\
             elsa_api_key_env = \"ELSA_KEY\"\nelsa_tenant = \"globex-elsa\"\n",
        )
        .unwrap();
        assert!(!config.tenants[0].uses_elsa_server());
        let globex = &config.tenants[1];
        assert!(globex.uses_elsa_server());
        assert_eq!(globex.elsa_url.as_deref(), Some("https://elsa.example.com"));
        assert_eq!(globex.elsa_api_key_env.as_deref(), Some("ELSA_KEY"));
        assert_eq!(globex.elsa_tenant.as_deref(), Some("globex-elsa"));
        assert_eq!(globex.workflows, None);
        let error =
            WeaverConfig::from_toml("[[tenants]]\nid = \"a\"\nelsa_key = \"x\"\n").unwrap_err();
        assert!(error.contains("elsa_key"), "{error}");
    }

    #[test]
    fn relative_paths_resolve_against_the_file_and_overrides_win() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("weaver.toml");
        std::fs::write(
            &path,
            "listen = \"127.0.0.1:9000\"\n[store]\nsqlite = \"w.db\"\n[[tenants]]\nid = \"acme\"\nworkflows = \"data/acme\"\n",
        )
        .unwrap();
        let mut config = WeaverConfig::load(&path).unwrap();
        assert_eq!(config.store.sqlite, Some(dir.path().join("w.db")));
        assert_eq!(
            config.tenants[0].workflows,
            Some(dir.path().join("data/acme"))
        );
        config
            .apply(Overrides {
                listen: Some("127.0.0.1:9001".into()),
                grace_window_secs: Some(5),
                ..Overrides::default()
            })
            .unwrap();
        assert_eq!(config.listen_addr().unwrap().port(), 9001);
        assert_eq!(config.limits.grace_window_secs, Some(5));
        assert_eq!(config.store.sqlite, Some(dir.path().join("w.db")));
        assert!(
            WeaverConfig::default()
                .listen_addr()
                .unwrap()
                .ip()
                .is_loopback()
        );
        let bad = WeaverConfig {
            listen: Some("localhost".into()),
            ..WeaverConfig::default()
        };
        assert!(bad.listen_addr().is_err());
    }

    #[test]
    fn the_telemetry_section_is_read_and_its_unknown_keys_refused() {
        let config = WeaverConfig::from_toml(
            "[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\n\
             metrics_listen = \"127.0.0.1:9464\"\nmetrics_interval_secs = 10\n",
        )
        .unwrap();
        let target = config.telemetry.otlp(&|_| None).unwrap().unwrap();
        assert_eq!(target.metrics, "http://127.0.0.1:4318/v1/metrics");
        assert_eq!(
            config
                .telemetry
                .metrics_listen(config.listen_addr().unwrap())
                .unwrap(),
            Some("127.0.0.1:9464".parse().unwrap())
        );
        assert_eq!(
            WeaverConfig::default().telemetry,
            TelemetryConfig::default()
        );
        let error = WeaverConfig::from_toml("[telemetry]\notlp_endpiont = \"http://c:4318\"\n")
            .unwrap_err();
        assert!(error.contains("otlp_endpiont"), "{error}");
    }

    #[test]
    fn the_http_section_sets_a_checked_base_path_and_origins() {
        let config = WeaverConfig::from_toml(
            "[http]\nbase_path = \"elsa/api/\"\ncors_origins = [\"https://studio.example.com\"]\n",
        )
        .unwrap();
        assert_eq!(
            config.http.base_path().unwrap().as_deref(),
            Some("/elsa/api")
        );
        assert_eq!(config.http.cors_origins, ["https://studio.example.com"]);
        assert_eq!(WeaverConfig::default().http.base_path().unwrap(), None);
        for bad in ["/elsa api", "/elsa//api", "/{id}", "/a?b"] {
            let http = HttpConfig {
                base_path: Some(bad.into()),
                ..HttpConfig::default()
            };
            assert!(http.base_path().is_err(), "{bad}");
        }
        let root = HttpConfig {
            base_path: Some("/".into()),
            ..HttpConfig::default()
        };
        assert_eq!(root.base_path().unwrap(), None);
    }
}
