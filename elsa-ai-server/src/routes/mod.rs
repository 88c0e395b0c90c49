//! The routes, and the OpenAPI document generated from the same handler declarations (so
//! the document lists exactly the routes that exist).

mod admin;
mod attachments;
mod auth;
mod chat;
mod conversations;
mod document;
mod features;
mod links;
mod mcp;
mod me;
mod metrics;
mod proposals;
mod tools;

use axum::extract::Extension;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use bytes::Bytes;
use elsa_ai_abstractions::AiError;
use tower_http::trace::TraceLayer;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::WeaverApi;
use crate::error::{ApiError, ErrorBody};

pub use chat::CONVERSATION_ID_HEADER;
pub use features::AI_FEATURE;
pub(crate) use metrics::unauthenticated_metrics;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Weaver API",
        description = "Weaver, the AI copilot for Elsa Workflows: chat with streaming (Server-Sent Events), governed tools, reviewable proposals and an audit trail. Every error body has a stable `code`.",
    ),
    modifiers(&Security),
    security(("apiKey" = []), ("bearer" = [])),
    tags(
        (name = "chat", description = "Chat turns streamed as Server-Sent Events, and resuming them."),
        (name = "tools", description = "The tools a caller may use."),
        (name = "capabilities", description = "What the server can do."),
        (name = "proposals", description = "The review inbox; approving, rejecting and applying proposals."),
        (name = "conversations", description = "The caller's conversation history."),
        (name = "admin", description = "Tool enablement and the audit trail (`admin:ai`)."),
        (name = "meta", description = "This document, and the feature probe Elsa Studio sends."),
    ),
    components(schemas(ErrorBody)),
)]
struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let mut api_key = ApiKeyValue::new("Authorization");
        api_key.description = Some(
            "A key configured on the server, sent as `Authorization: ApiKey <key>`.".to_owned(),
        );
        components.add_security_scheme("apiKey", SecurityScheme::ApiKey(ApiKey::Header(api_key)));
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "A JWT naming actor, tenant and permissions: HS256 or RS256 with the \
                         configured key, or an OpenID Provider's access token.",
                    ))
                    .build(),
            ),
        );
    }
}

fn routes() -> OpenApiRouter<WeaverApi> {
    let mut router = api_routes();
    document::complete(router.get_openapi_mut());
    router
}

fn api_routes() -> OpenApiRouter<WeaverApi> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(chat::chat))
        .routes(routes!(chat::resume))
        .routes(routes!(chat::cancel))
        .routes(routes!(attachments::search_attachments))
        .routes(routes!(tools::list_tools))
        .routes(routes!(tools::capabilities))
        .routes(routes!(proposals::list_proposals))
        .routes(routes!(proposals::get_proposal))
        .routes(routes!(proposals::approve))
        .routes(routes!(proposals::reject))
        .routes(routes!(proposals::apply))
        .routes(routes!(proposals::drop_targets))
        .routes(routes!(
            conversations::list_conversations,
            conversations::delete_conversations_of
        ))
        .routes(routes!(
            conversations::get_conversation,
            conversations::delete_conversation,
            conversations::change_conversation
        ))
        .routes(routes!(admin::list_enablement))
        .routes(routes!(admin::change_enablement))
        .routes(routes!(admin::audit))
        .routes(routes!(me::me))
        .routes(routes!(auth::sign_in_providers))
        .routes(routes!(metrics::metrics))
        .routes(routes!(features::installed_features))
        .routes(routes!(features::installed_feature))
        .routes(routes!(openapi_json))
}

/// The OpenAPI document of the API, generated from the handlers.
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes().into_openapi()
}

/// The serialised document, shared by the handler.
#[derive(Clone)]
struct OpenApiJson(Bytes);

/// The API's routes (under `/ai`, plus the `/features/installed` probe) over `api`. Mount it at the root or under any prefix
/// with [`Router::nest`].
pub fn router(api: WeaverApi) -> Router {
    let (router, document) = routes().split_for_parts();
    let json = document.to_json().map(Bytes::from).unwrap_or_else(|error| {
        tracing::error!(%error, "the OpenAPI document could not be serialised");
        Bytes::new()
    });
    router
        .route("/mcp", mcp::route(&api))
        .fallback(route_not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(Extension(OpenApiJson(json)))
        .layer(TraceLayer::new_for_http())
        .with_state(api)
}

/// Only `POST /ai/chat` over `api`: where Elsa Studio posts its chat when the API is served
/// under a base path (one level above it).
pub(crate) fn chat_router(api: WeaverApi) -> Router {
    Router::new()
        .route("/ai/chat", axum::routing::post(chat::chat))
        .layer(TraceLayer::new_for_http())
        .with_state(api)
}

/// This OpenAPI document.
#[utoipa::path(
    get,
    path = "/ai/openapi.json",
    tag = "meta",
    security(()),
    responses((status = 200, description = "The OpenAPI 3.1 document of this API.", content_type = "application/json"))
)]
async fn openapi_json(Extension(OpenApiJson(json)): Extension<OpenApiJson>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        json,
    )
        .into_response()
}

async fn route_not_found() -> ApiError {
    ApiError(AiError::NotFound {
        code: "route_not_found".into(),
        message: "no such route; the API is described at /ai/openapi.json".into(),
    })
}

async fn method_not_allowed() -> Response {
    let body = ErrorBody {
        code: "method_not_allowed".into(),
        message: "this route does not accept that method; see /ai/openapi.json".into(),
        status: 405,
        current_state: None,
        diagnostics: Vec::new(),
    };
    (axum::http::StatusCode::METHOD_NOT_ALLOWED, Json(body)).into_response()
}
