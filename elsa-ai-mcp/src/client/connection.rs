//! One external MCP server: connecting, supervising and restarting it, and calling its tools.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use elsa_ai_abstractions::{AiError, AiMcpServerRegistration, AiTextRedactor, McpTransport};
use parking_lot::RwLock;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientRequest, Implementation, Tool,
};
use rmcp::service::{NotificationContext, Peer, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

/// Where a server is in its life, as capabilities show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpServerState {
    /// The first connection is being made.
    Starting,
    /// Connected; its allowlisted tools can be called.
    Ready,
    /// The connection was lost; weaver reconnects with backoff.
    Restarting,
    /// The first connection failed; weaver keeps retrying with backoff.
    Failed,
}

impl McpServerState {
    /// `starting`, `ready`, `restarting` or `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Ready => "ready",
            Self::Restarting => "restarting",
            Self::Failed => "failed",
        }
    }
}

/// First and longest wait before reconnecting to a server that went away.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(200), Duration::from_secs(30));
/// A connection that lasted this long resets the backoff.
const STABLE: Duration = Duration::from_secs(30);
/// How long connecting (spawn or HTTP, plus the MCP handshake and tool listing) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// Longest line of a child's stderr copied into the log.
const MAX_LOG_LINE: usize = 2048;

/// What is known about the server now.
struct Live {
    state: McpServerState,
    peer: Option<Peer<RoleClient>>,
    /// The allowlisted tools the server lists now, by the server's name.
    tools: Arc<HashMap<String, Tool>>,
    error: Option<String>,
    restarts: u32,
    pid: Option<u32>,
}

/// The part of [`Live`] that capabilities report.
pub(crate) struct LiveSnapshot {
    pub(crate) state: McpServerState,
    pub(crate) error: Option<String>,
    pub(crate) restarts: u32,
    pub(crate) pid: Option<u32>,
}

/// A supervised connection to one MCP server.
pub(crate) struct McpConnection {
    registration: AiMcpServerRegistration,
    /// Applied to every error text kept for capabilities or logged: a remote answer may
    /// echo a secret header.
    redactor: Arc<dyn AiTextRedactor>,
    live: RwLock<Live>,
    /// Bumped whenever `live` changes, so start-up can wait for the first outcome.
    changes: watch::Sender<u64>,
    /// A call saw the transport fail: reconnect now rather than wait for the close.
    broken: Notify,
    /// The server said its tool list changed.
    list_changed: Arc<Notify>,
}

impl McpConnection {
    pub(crate) fn new(
        registration: AiMcpServerRegistration,
        redactor: Arc<dyn AiTextRedactor>,
    ) -> Arc<Self> {
        Arc::new(Self {
            registration,
            redactor,
            live: RwLock::new(Live {
                state: McpServerState::Starting,
                peer: None,
                tools: Arc::default(),
                error: None,
                restarts: 0,
                pid: None,
            }),
            changes: watch::channel(0).0,
            broken: Notify::new(),
            list_changed: Arc::new(Notify::new()),
        })
    }

    pub(crate) fn registration(&self) -> &AiMcpServerRegistration {
        &self.registration
    }

    pub(crate) fn state(&self) -> McpServerState {
        self.live.read().state
    }

    /// State, last error, restarts and pid read under one lock, so a status never mixes
    /// two moments of the connection's life.
    pub(crate) fn snapshot(&self) -> LiveSnapshot {
        let live = self.live.read();
        LiveSnapshot {
            state: live.state,
            error: live.error.clone(),
            restarts: live.restarts,
            pid: live.pid,
        }
    }

    /// The allowlisted tools the server lists now.
    pub(crate) fn tools(&self) -> Arc<HashMap<String, Tool>> {
        self.live.read().tools.clone()
    }

    fn update(&self, change: impl FnOnce(&mut Live)) {
        change(&mut self.live.write());
        self.changes.send_modify(|n| *n += 1);
    }

    /// Waits until the first connection attempt has an outcome (or `limit` passes).
    pub(crate) async fn first_outcome(&self, limit: Duration) {
        let mut changes = self.changes.subscribe();
        let settled = changes.wait_for(|_| self.state() != McpServerState::Starting);
        let _ = tokio::time::timeout(limit, settled).await;
    }

    /// Calls one of the server's tools. A server that is down, or a tool it no longer lists,
    /// is a 503 the model can read; a transport failure also triggers a reconnect.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Value,
    ) -> Result<CallToolResult, AiError> {
        let (peer, listed) = {
            let live = self.live.read();
            (live.peer.clone(), live.tools.contains_key(tool))
        };
        let name = &self.registration.name;
        let Some(peer) = peer else {
            return Err(AiError::unavailable(
                "mcp_server_unavailable",
                format!(
                    "MCP server '{name}' is not connected; weaver is reconnecting, try again shortly"
                ),
            ));
        };
        if !listed {
            return Err(AiError::unavailable(
                "mcp_tool_unavailable",
                format!("MCP server '{name}' does not offer '{tool}' at the moment"),
            ));
        }
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        peer.call_tool(params).await.map_err(|error| {
            let error = self.redactor.redact(&error.to_string()).into_owned();
            tracing::warn!(server = %name, tool, %error, "MCP tool call failed in transport");
            self.broken.notify_one();
            AiError::unavailable(
                "mcp_server_unavailable",
                format!("MCP server '{name}' failed to answer: {error}"),
            )
        })
    }

    /// Keeps the server connected until `shutdown`: connect, serve until the connection
    /// ends, wait with exponential backoff, reconnect.
    pub(crate) async fn supervise(self: Arc<Self>, shutdown: CancellationToken) {
        let name = self.registration.name.clone();
        let mut backoff = BACKOFF.0;
        let mut ever_connected = false;
        loop {
            let attempt = tokio::select! {
                attempt = tokio::time::timeout(CONNECT_TIMEOUT, self.connect()) => attempt
                    .unwrap_or_else(|_| Err(format!("no answer within {}s", CONNECT_TIMEOUT.as_secs()))),
                () = shutdown.cancelled() => return,
            };
            match attempt {
                Ok((service, pid)) => {
                    ever_connected = true;
                    let connected = Instant::now();
                    tracing::info!(server = %name, "MCP server connected");
                    let peer = service.peer().clone();
                    let tools = self.listed_tools(&peer).await;
                    self.update(|live| {
                        live.state = McpServerState::Ready;
                        live.peer = Some(peer.clone());
                        live.tools = Arc::new(tools.unwrap_or_default());
                        live.error = None;
                        live.pid = pid;
                    });
                    let ended = self.serve(service, &peer, &shutdown).await;
                    if connected.elapsed() >= STABLE {
                        backoff = BACKOFF.0;
                    }
                    let Some(reason) = ended else {
                        return;
                    };
                    let reason = self.redactor.redact(&reason).into_owned();
                    tracing::warn!(server = %name, %reason, "MCP server connection ended; reconnecting");
                    self.update(|live| {
                        live.state = McpServerState::Restarting;
                        live.peer = None;
                        live.error = Some(reason);
                        live.pid = None;
                        live.restarts += 1;
                    });
                }
                Err(error) => {
                    let error = self.redactor.redact(&error).into_owned();
                    tracing::warn!(server = %name, %error, "MCP server could not be reached");
                    self.update(|live| {
                        if !ever_connected {
                            live.state = McpServerState::Failed;
                        }
                        live.error = Some(error);
                    });
                }
            }
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                () = shutdown.cancelled() => return,
            }
            backoff = (backoff * 2).min(BACKOFF.1);
        }
    }

    /// Serves one connection; `None` when weaver shuts down, otherwise why it ended.
    async fn serve(
        &self,
        service: RunningService<RoleClient, Listener>,
        peer: &Peer<RoleClient>,
        shutdown: &CancellationToken,
    ) -> Option<String> {
        let stop = service.cancellation_token();
        let closed = service.waiting();
        tokio::pin!(closed);
        loop {
            tokio::select! {
                closed = &mut closed => {
                    return Some(match closed {
                        Ok(reason) => format!("the server closed the connection ({reason:?})"),
                        Err(error) => format!("the connection failed: {error}"),
                    });
                }
                () = self.broken.notified() => {
                    // A failed call: ping before tearing the connection down, so a single
                    // bad answer does not restart a healthy server. (Not a tool listing:
                    // rmcp answers that from its cache when the server is gone.)
                    let ping = ClientRequest::PingRequest(Default::default());
                    if peer.send_request(ping).await.is_err() {
                        stop.cancel();
                        let _ = closed.await;
                        return Some("the server stopped answering".to_owned());
                    }
                }
                () = self.list_changed.notified() => {
                    if let Ok(tools) = self.listed_tools(peer).await {
                        self.update(|live| live.tools = Arc::new(tools));
                    }
                }
                () = shutdown.cancelled() => {
                    stop.cancel();
                    let _ = closed.await;
                    return None;
                }
            }
        }
    }

    /// The allowlisted tools the server lists; anything else it offers does not exist here.
    async fn listed_tools(&self, peer: &Peer<RoleClient>) -> Result<HashMap<String, Tool>, String> {
        let listed = peer.list_all_tools().await.map_err(|e| e.to_string())?;
        let allowlist = &self.registration.tool_allowlist;
        Ok(listed
            .into_iter()
            .filter(|tool| allowlist.iter().any(|name| name == tool.name.as_ref()))
            .map(|tool| (tool.name.to_string(), tool))
            .collect())
    }

    async fn connect(&self) -> Result<(RunningService<RoleClient, Listener>, Option<u32>), String> {
        let listener = Listener {
            list_changed: self.list_changed.clone(),
        };
        match &self.registration.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                secret_env,
            } => {
                let child = child_command(command, args, env, secret_env);
                let (transport, stderr) = TokioChildProcess::builder(child)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("could not start '{command}': {e}"))?;
                let pid = transport.id();
                if let Some(stderr) = stderr {
                    tokio::spawn(log_stderr(self.registration.name.clone(), stderr));
                }
                let service = listener
                    .serve(transport)
                    .await
                    .map_err(|e| format!("'{command}' did not complete the MCP handshake: {e}"))?;
                Ok((service, pid))
            }
            McpTransport::Http {
                url,
                headers,
                secret_headers,
            } => {
                let mut all = HashMap::new();
                for (name, value, secret) in headers
                    .iter()
                    .map(|(n, v)| (n, v.as_str(), false))
                    .chain(secret_headers.iter().map(|(n, v)| (n, v.expose(), true)))
                {
                    let name = http::HeaderName::try_from(name.as_str())
                        .map_err(|_| format!("header name '{name}' is not valid"))?;
                    let mut value = http::HeaderValue::try_from(value)
                        .map_err(|_| format!("the value of header '{name}' is not valid"))?;
                    value.set_sensitive(secret);
                    all.insert(name, value);
                }
                let config =
                    StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(all);
                let transport =
                    StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
                let service = listener
                    .serve(transport)
                    .await
                    .map_err(|e| format!("{url} did not complete the MCP handshake: {e}"))?;
                Ok((service, None))
            }
            other => Err(format!(
                "this build cannot reach '{}' MCP servers",
                other.kind()
            )),
        }
    }
}

/// The child's command line: an empty environment plus `PATH`, `env` and `secret_env`; on
/// Linux wrapped in `setpriv --pdeathsig KILL` (util-linux) so that the child dies with
/// weaver even when weaver is killed outright.
fn child_command(
    command: &str,
    args: &[String],
    env: &[(String, String)],
    secret_env: &[(String, elsa_ai_abstractions::SecretValue)],
) -> tokio::process::Command {
    const SETPRIV: &str = "/usr/bin/setpriv";
    let mut child = if std::path::Path::new(SETPRIV).exists() {
        let mut wrapped = tokio::process::Command::new(SETPRIV);
        wrapped.args(["--pdeathsig", "KILL", "--", command]);
        wrapped
    } else {
        tokio::process::Command::new(command)
    };
    child.args(args).env_clear().kill_on_drop(true);
    if let Some(path) = std::env::var_os("PATH") {
        child.env("PATH", path);
    }
    child.envs(env.iter().map(|(k, v)| (k, v)));
    child.envs(secret_env.iter().map(|(k, v)| (k, v.expose())));
    child
}

/// Copies a child's stderr into the log at debug level, line by line (the server's log
/// layer redacts it like any other line).
async fn log_stderr(server: String, stderr: tokio::process::ChildStderr) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(mut line)) = lines.next_line().await {
        if line.len() > MAX_LOG_LINE {
            let mut end = MAX_LOG_LINE;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            line.truncate(end);
        }
        tracing::debug!(server = %server, "{line}");
    }
}

/// What weaver answers to a server: who it is, and a refresh when the tool list changes.
#[derive(Clone)]
pub(crate) struct Listener {
    list_changed: Arc<Notify>,
}

impl ClientHandler for Listener {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("weaver", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
    }
}
