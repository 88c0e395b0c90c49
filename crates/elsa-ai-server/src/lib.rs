//! Weaver's HTTP API: REST and Server-Sent Events over the host, as an axum [`Router`](axum::Router).
//!
//! (Crate documentation with a mounting example follows once the assembly lands.)

mod api;
pub mod config;
pub mod demo;
mod error;
mod extract;
pub mod identity;
mod requests;
mod routes;
mod schema;
#[cfg(feature = "testing")]
pub mod testing;
pub mod views;
pub mod weaver;

pub use api::{WeaverApi, WeaverApiParts};
pub use error::{ApiError, ErrorBody};
pub use extract::{ApiJson, ApiPath, ApiQuery, Caller};
pub use requests::{
    AttachmentBody, AuditQueryParams, ChatRequestBody, EnablementChangeBody, PageQuery,
    ProposalQueryParams, RejectBody, ResumeQuery, TimeRangeBody, ToolsQuery,
};
pub use routes::{CONVERSATION_ID_HEADER, openapi, router};
pub use weaver::{EnvLookup, StartupError, Weaver, WeaverBuilder};
