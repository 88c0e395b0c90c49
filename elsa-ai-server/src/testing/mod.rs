//! Test helpers shared by this crate's suites, the examples and the benchmarks (feature
//! `testing`; never enabled in production builds): a real server on a real TCP socket
//! ([`TestServer`]), an SSE reader that parses streams as a browser does ([`sse`]), and a
//! configuration with two tenants and keys of known permissions ([`two_tenants`]).

pub mod sse;

use std::sync::Arc;

use elsa_ai_host::ProposalService;
use elsa_workflows::InMemoryWorkflowBackend;
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::config::{
    ApiKeyConfig, AuthConfig, ProviderConfig, StoreConfig, TenantConfig, WeaverConfig,
};
use crate::{DevelopmentKey, Weaver, WeaverBuilder};
pub use sse::{SseEvent, SseStream};

/// `alice` in `acme`, with every permission.
pub const ALICE_KEY: &str = "test-key-alice-acme-0001";
/// `bob` in `acme`, who may only read workflows.
pub const BOB_KEY: &str = "test-key-bob-acme-readonly";
/// `gina` in `globex`, with every permission.
pub const GINA_KEY: &str = "test-key-gina-globex-0001";

const ALL: [&str; 8] = [
    "read:workflows",
    "read:workflow-instances",
    "read:activities",
    "propose:workflows",
    "apply:workflows",
    "admin:ai",
    "operate:workflow-instances",
    "publish:workflows",
];

/// Two tenants on the built-in samples, in memory, served by the demo provider, with
/// [`ALICE_KEY`], [`BOB_KEY`] and [`GINA_KEY`].
pub fn two_tenants() -> WeaverConfig {
    let key = |key: &str, actor: &str, tenant: &str, permissions: &[&str]| ApiKeyConfig {
        key: Some(key.into()),
        key_env: None,
        actor: actor.into(),
        tenant: tenant.into(),
        permissions: permissions.iter().map(|p| (*p).to_owned()).collect(),
    };
    WeaverConfig {
        store: StoreConfig {
            memory: true,
            ..StoreConfig::default()
        },
        tenants: vec![
            TenantConfig {
                id: "acme".into(),
                workflows: None,
                ..TenantConfig::default()
            },
            TenantConfig {
                id: "globex".into(),
                workflows: None,
                ..TenantConfig::default()
            },
        ],
        auth: AuthConfig {
            api_keys: vec![
                key(ALICE_KEY, "alice", "acme", &ALL),
                key(BOB_KEY, "bob", "acme", &["read:workflows"]),
                key(GINA_KEY, "gina", "globex", &ALL),
            ],
            ..AuthConfig::default()
        },
        provider: Some(ProviderConfig::Demo),
        ..WeaverConfig::default()
    }
}

/// A Weaver server listening on `127.0.0.1` (a free port) in this process.
pub struct TestServer {
    /// `http://127.0.0.1:<port>`.
    pub base_url: String,
    /// A client without timeouts.
    pub client: reqwest::Client,
    /// The proposal service, for checks behind the API.
    pub proposals: ProposalService,
    /// The workflow data (applied proposals land here).
    pub workflows: Arc<InMemoryWorkflowBackend>,
    /// The development keys, when the configuration has no `[auth]`.
    pub development_keys: Vec<DevelopmentKey>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl TestServer {
    /// Starts a server over `config`.
    ///
    /// # Panics
    ///
    /// When it cannot start: the test is wrong.
    pub async fn start(config: WeaverConfig) -> Self {
        Self::start_with(Weaver::builder(config)).await
    }

    /// Starts a server from a prepared builder.
    ///
    /// # Panics
    ///
    /// When it cannot start.
    pub async fn start_with(builder: WeaverBuilder) -> Self {
        let weaver = builder
            .build()
            .await
            .unwrap_or_else(|e| panic!("the test server cannot start: {e}"));
        let listener =
            Weaver::listen(([127, 0, 0, 1], 0).into()).expect("a free port on 127.0.0.1");
        let address = listener.local_addr().expect("a bound address");
        let proposals = weaver.proposals().clone();
        let workflows = weaver.workflows().clone();
        let development_keys = weaver.development_keys().to_vec();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(weaver.serve(listener, async move {
            let _ = stopped.await;
        }));
        Self {
            base_url: format!("http://{address}"),
            client: reqwest::Client::new(),
            proposals,
            workflows,
            development_keys,
            stop: Some(stop),
            task,
        }
    }

    /// The absolute URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// A request with `Authorization: ApiKey <key>`.
    pub fn request(&self, method: Method, path: &str, key: &str) -> RequestBuilder {
        self.client
            .request(method, self.url(path))
            .header("authorization", format!("ApiKey {key}"))
    }

    /// `GET path` as `key`: the status and the JSON body.
    pub async fn get(&self, path: &str, key: &str) -> (StatusCode, Value) {
        json_of(self.request(Method::GET, path, key).send().await).await
    }

    /// `POST path` with a JSON body as `key`: the status and the JSON body.
    pub async fn post(&self, path: &str, key: &str, body: &Value) -> (StatusCode, Value) {
        json_of(
            self.request(Method::POST, path, key)
                .json(body)
                .send()
                .await,
        )
        .await
    }

    /// `POST /ai/proposals/{proposal}/{action}` (`approve`, `apply`, ...) without a body as
    /// `key`: the status and the JSON body.
    pub async fn proposal_action(
        &self,
        key: &str,
        proposal: &str,
        action: &str,
    ) -> (StatusCode, Value) {
        self.post(
            &format!("/ai/proposals/{proposal}/{action}"),
            key,
            &serde_json::json!({}),
        )
        .await
    }

    /// Starts a chat turn as `key` and returns its event stream.
    ///
    /// # Panics
    ///
    /// When the server refuses the turn.
    pub async fn chat(&self, key: &str, body: &Value) -> SseStream {
        let response = self
            .request(Method::POST, "/ai/chat", key)
            .json(body)
            .send()
            .await
            .expect("the server answers");
        let status = response.status();
        if status != StatusCode::OK {
            let body = response.text().await.unwrap_or_default();
            panic!("the chat was refused with {status}: {body}");
        }
        SseStream::new(response)
    }

    /// Turns `tool` on tenant-wide as the administrator `key`.
    ///
    /// # Panics
    ///
    /// When the server refuses.
    pub async fn enable_tool(&self, key: &str, tool: &str) {
        let response = self
            .request(
                Method::PUT,
                &format!("/ai/admin/tools/{tool}/enablement"),
                key,
            )
            .json(&serde_json::json!({"enabled": true}))
            .send()
            .await
            .expect("the server answers");
        assert_eq!(response.status(), StatusCode::OK, "enabling {tool}");
    }

    /// Has the demo provider propose its description change to `definition_id` as `key`
    /// (enabling `workflow.proposeUpdate` first) and returns the proposal id and the turn's
    /// events.
    ///
    /// # Panics
    ///
    /// When no proposal was created.
    pub async fn demo_proposal(&self, key: &str, definition_id: &str) -> (String, Vec<SseEvent>) {
        self.enable_tool(key, "workflow.proposeUpdate").await;
        let events = self
            .chat(
                key,
                &serde_json::json!({
                    "message": "Please propose a clearer description.",
                    "attachments": [{"kind": "WorkflowDefinition", "referenceId": definition_id}],
                }),
            )
            .await
            .collect()
            .await;
        let created = events
            .iter()
            .find(|e| e.event == "proposal.created")
            .unwrap_or_else(|| panic!("no proposal was created: {events:#?}"));
        let id = created.json()["data"]["proposalId"]
            .as_str()
            .expect("proposal.created names the proposal")
            .to_owned();
        (id, events)
    }

    /// Shuts the server down gracefully and waits for it.
    ///
    /// # Panics
    ///
    /// When the server task failed.
    pub async fn shutdown(mut self) -> std::io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await.expect("the server task ends")
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if self.stop.is_some() {
            self.task.abort();
        }
    }
}

/// The status and JSON body of a response (`null` when the body is not JSON).
async fn json_of(response: reqwest::Result<reqwest::Response>) -> (StatusCode, Value) {
    let response = response.expect("the server answers");
    let status = response.status();
    let body = response.bytes().await.expect("a readable body");
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}
