//! MCP for tests: where the pinned npm programs are (`npm ci --prefix tools/mcp`), an
//! `rmcp` server of the repository's own over streamable HTTP that misbehaves on request
//! (slowness, huge output, a secret in its output, a changing tool list, going away), and an
//! `rmcp` client of weaver's own `/mcp` ([`weaver_client`], [`call_tool`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// An MCP client connected to weaver's `/mcp` at `url` (add `?agent=…` to pick the agent),
/// sending `Authorization: ApiKey <key>`.
///
/// # Panics
///
/// When the handshake fails.
pub async fn weaver_client(
    url: &str,
    key: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, rmcp::model::ClientConfig> {
    weaver_client_authorized(url, &format!("ApiKey {key}")).await
}

/// An MCP client connected to weaver's `/mcp` at `url`, sending `Authorization:
/// <authorization>` (such as `Bearer <token>`).
///
/// # Panics
///
/// When the handshake fails.
pub async fn weaver_client_authorized(
    url: &str,
    authorization: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, rmcp::model::ClientConfig> {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let value = http::HeaderValue::from_str(authorization).expect("a header value");
    let headers = [(http::header::AUTHORIZATION, value)].into_iter().collect();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).custom_headers(headers),
    );
    rmcp::model::ClientConfig::default()
        .serve(transport)
        .await
        .expect("the MCP handshake succeeds")
}

/// Calls `tool` with `arguments` (a JSON object) through `client`.
///
/// # Panics
///
/// When `arguments` is not an object or the call is not answered.
pub async fn call_tool(
    client: &rmcp::service::RunningService<rmcp::RoleClient, rmcp::model::ClientConfig>,
    tool: &str,
    arguments: Value,
) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object");
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .expect("the call is answered")
}

/// A program installed by `npm ci --prefix tools/mcp` (`mcp-server-everything`,
/// `mcp-inspector`).
///
/// # Panics
///
/// When it is not installed, saying how to install it.
pub fn npm_bin(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tools/mcp/node_modules/.bin")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run `npm ci --prefix tools/mcp` (the README's test command does)",
        path.display()
    );
    path
}

/// The tools the fixture lists at first.
const INITIAL_TOOLS: &[&str] = &["echo", "echo2", "slow", "huge", "whoami", "retire"];

/// The fixture's tool list, shared by every session (`retire` changes it).
#[derive(Clone)]
struct Fixture {
    tools: Arc<Mutex<Vec<&'static str>>>,
}

fn object_schema(properties: Value) -> Arc<serde_json::Map<String, Value>> {
    let schema = json!({"type": "object", "properties": properties});
    Arc::new(schema.as_object().cloned().unwrap_or_default())
}

fn tool(name: &'static str) -> Tool {
    let (description, properties) = match name {
        "echo" | "echo2" | "sneaky" | "late" => {
            ("Echoes the text.", json!({"text": {"type": "string"}}))
        }
        "slow" => (
            "Sleeps ms milliseconds.",
            json!({"ms": {"type": "integer"}}),
        ),
        "huge" => (
            "Returns bytes characters.",
            json!({"bytes": {"type": "integer"}}),
        ),
        "whoami" => ("Returns the Authorization header it received.", json!({})),
        _ => (
            "Stops offering echo2; starts offering sneaky and late.",
            json!({}),
        ),
    };
    Tool::new(name, description, object_schema(properties))
}

fn text(value: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(value)])
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.tools.lock().iter().map(|name| tool(name)).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let result = match request.name.as_ref() {
            "echo" | "echo2" | "sneaky" | "late" => {
                let said = arguments["text"].as_str().unwrap_or_default().to_owned();
                let mut result = text(format!("echo: {said}"));
                result.structured_content = Some(json!({"echo": said}));
                result
            }
            "slow" => {
                let ms = arguments["ms"].as_u64().unwrap_or(1000);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                text("done")
            }
            "huge" => {
                let bytes = arguments["bytes"].as_u64().unwrap_or(1 << 20);
                text("x".repeat(usize::try_from(bytes).unwrap_or(usize::MAX)))
            }
            "whoami" => {
                let header = context
                    .extensions
                    .get::<http::request::Parts>()
                    .and_then(|parts| parts.headers.get("authorization"))
                    .and_then(|value| value.to_str().ok())
                    .unwrap_or("none")
                    .to_owned();
                text(format!("you sent Authorization: {header}"))
            }
            "retire" => {
                *self.tools.lock() = vec!["echo", "slow", "huge", "whoami", "sneaky", "late"];
                let _ = context.peer.notify_tool_list_changed().await;
                text("retired echo2")
            }
            other => CallToolResult::error(vec![ContentBlock::text(format!("no tool {other}"))]),
        };
        Ok(result.into())
    }
}

/// The fixture server on a loopback port, until stopped or dropped.
pub struct McpFixtureServer {
    address: SocketAddr,
    stop: CancellationToken,
    tools: Arc<Mutex<Vec<&'static str>>>,
}

impl McpFixtureServer {
    /// Starts on a free loopback port.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        Self::serve(listener, Arc::new(Mutex::new(INITIAL_TOOLS.to_vec())))
    }

    fn serve(listener: TcpListener, tools: Arc<Mutex<Vec<&'static str>>>) -> Self {
        let address = listener.local_addr().expect("bound");
        let stop = CancellationToken::new();
        let fixture = Fixture {
            tools: tools.clone(),
        };
        let service = StreamableHttpService::new(
            move || Ok(fixture.clone()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token()),
        );
        let router = axum::Router::new().route_service("/mcp", service);
        let shutdown = stop.clone();
        // Without TCP_NODELAY each small SSE write waits for the client's delayed ACK
        // (~40 ms on Linux), which a benchmark would measure instead of MCP.
        let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
            let _ = stream.set_nodelay(true);
        });
        tokio::spawn(async move {
            let served = axum::serve(listener, router)
                .with_graceful_shutdown(async move { shutdown.cancelled().await });
            let _ = served.await;
        });
        Self {
            address,
            stop,
            tools,
        }
    }

    /// The MCP endpoint's URL.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// Stops serving: open connections end, new ones are refused.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Serves again on the same port (after [`stop`](Self::stop)), with the same tool list.
    pub async fn restart(&mut self) {
        let mut attempts = 0;
        let listener = loop {
            match TcpListener::bind(self.address).await {
                Ok(listener) => break listener,
                // The old listener's socket may linger a moment after the stop.
                Err(_) if attempts < 50 => {
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(error) => panic!("cannot bind {} again: {error}", self.address),
            }
        };
        *self = Self::serve(listener, self.tools.clone());
    }
}

impl Drop for McpFixtureServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
