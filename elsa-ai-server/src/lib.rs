//! Weaver's HTTP API: REST and Server-Sent Events over the host, as an axum
//! [`Router`](axum::Router) a Rust host mounts under any prefix, and the `weaver` server.
//!
//! Every route lives under `/ai` (SPEC §6): `POST /ai/chat` streams a turn's
//! [`AiStreamEvent`](elsa_ai_abstractions::AiStreamEvent)s as Server-Sent Events (event name =
//! type, id = sequence, data = the JSON event), `GET /ai/chat/{conversationId}/events` resumes
//! after `Last-Event-ID` or `?after=`, and there are the tools, capabilities, the proposal
//! inbox and its actions, the caller's conversations, tool enablement and the audit trail for
//! administrators, and the OpenAPI document at `/ai/openapi.json` (generated from the
//! handlers, see [`openapi`]). Handlers authenticate through an
//! [`IdentityExtractor`](identity::IdentityExtractor) (static API keys, HS256/RS256 JWTs,
//! OpenID Providers' tokens) and then only call host services, which enforce tenant and
//! permission. Every error is an [`ErrorBody`] with a stable `code`.
//!
//! [`Weaver`] assembles everything from a [`WeaverConfig`](config::WeaverConfig) (workflow
//! data, stores, tools, governance, orchestrator, proposals, identity) and serves it with a
//! graceful shutdown; `elsa_ai_scripted::demo::DemoProvider` is the scripted provider of the default
//! configuration. A host with its own wiring builds a [`WeaverApi`] and calls [`router`].
//! [`telemetry::Telemetry`] (`[telemetry]`) gives weaver's spans OpenTelemetry trace ids,
//! which the host writes into audit records and `conversation.started`, and exports spans
//! and metrics over OTLP; `[telemetry] metrics_listen` serves `/metrics` on a listener of
//! its own, without credentials.
//!
//! Each `[[tenants]]` entry says where that tenant's workflow data lives: a folder of Elsa
//! JSON (`workflows = "data/acme"`) or the built-in samples, held in memory, or an Elsa 3
//! Server (`elsa_url = "https://elsa.example.com"`, `elsa_api_key_env = "ELSA_KEY"`,
//! optional `elsa_api_path` and `elsa_tenant`), read through its REST API, where applied
//! proposals are saved. The tenants' services sit behind one
//! [`TenantRouter`](elsa_workflows::TenantRouter); [`config::REFERENCE`] documents every key.
//!
//! A host's `main` that mounts the API under a prefix of its own router (here one request
//! goes through the router in process, where a host would serve it):
//!
//! ```
//! use axum::Router;
//! use axum::body::Body;
//! use axum::http::{Request, StatusCode};
//! use elsa_ai_server::Weaver;
//! use elsa_ai_server::config::{StoreConfig, WeaverConfig};
//! use tower::ServiceExt;
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // Usually read from weaver.toml with `WeaverConfig::load`; here in memory.
//!     let config = WeaverConfig {
//!         store: StoreConfig { memory: true, ..StoreConfig::default() },
//!         ..WeaverConfig::default()
//!     };
//!     // No [auth] configured: the server makes a development key for the built-in samples.
//!     let weaver = Weaver::builder(config).env(|_| None).build().await?;
//!     let key = weaver.development_keys()[0].key.clone();
//!
//!     // The host's own routes, and weaver's under /copilot.
//!     let app = Router::new()
//!         .route("/health", axum::routing::get(|| async { "ok" }))
//!         .nest("/copilot", weaver.router());
//!     // A host serves `app` as any axum app:
//!     // axum::serve(tokio::net::TcpListener::bind("127.0.0.1:8080").await?, app).await?;
//!
//!     let request = Request::get("/copilot/ai/capabilities")
//!         .header("authorization", format!("ApiKey {key}"))
//!         .body(Body::empty())?;
//!     let response = app.clone().oneshot(request).await?;
//!     assert_eq!(response.status(), StatusCode::OK);
//!
//!     let anonymous = Request::get("/copilot/ai/tools").body(Body::empty())?;
//!     assert_eq!(app.oneshot(anonymous).await?.status(), StatusCode::UNAUTHORIZED);
//!     Ok(())
//! }
//! ```
//!
//! To serve it as the `weaver` binary does, hand [`Weaver::serve`] a listener and a shutdown
//! signal.

mod api;
pub mod config;
pub mod console;
mod error;
mod extract;
mod http_surface;
pub mod identity;
pub mod log_redaction;
#[cfg(test)]
mod properties;
mod providers;
mod requests;
mod routes;
mod schema;
pub mod telemetry;
#[cfg(feature = "testing")]
pub mod testing;
pub mod views;
pub mod weaver;

pub use api::{GroundingSetup, WeaverApi, WeaverApiParts};
pub use error::{ApiError, ErrorBody};
pub use extract::{ApiJson, ApiPath, ApiQuery, Caller};
pub use requests::{
    AttachmentBody, AuditQueryParams, ChatRequestBody, EnablementChangeBody, PageQuery,
    ProposalQueryParams, RejectBody, ResumeQuery, TimeRangeBody, ToolsQuery,
};
pub use routes::{AI_FEATURE, CONVERSATION_ID_HEADER, openapi, router};
pub use weaver::{
    DevelopmentKey, EnvLookup, SYSTEM_ACTOR, StartupError, Weaver, WeaverBuilder, WeaverStores,
};
