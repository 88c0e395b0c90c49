//! `GET /ai/tools` and `GET /ai/capabilities`.

use axum::Json;
use axum::extract::State;
use elsa_ai_abstractions::{AiToolQuery, AiToolRegistry};
use elsa_ai_host::AgentRegistry;

use crate::api::WeaverApi;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiQuery, Caller};
use crate::requests::ToolsQuery;
use crate::views::{AgentView, CapabilitiesView, McpServerView, StreamingView, ToolView};

/// The tools the caller may use: filtered by tenant, permissions, agent scope, enablement
/// and policy in the host, then by the optional filters. A top-level array, as Elsa Studio
/// reads it.
#[utoipa::path(
    get,
    path = "/ai/tools",
    tag = "tools",
    params(ToolsQuery),
    responses(
        (status = 200, description = "The tools the caller may use, sorted by name.", body = Vec<ToolView>),
        (status = 400, description = "An unknown mutability or danger level.", body = ErrorBody),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 403, description = "The named agent is disabled.", body = ErrorBody),
        (status = 404, description = "The named agent does not exist.", body = ErrorBody),
    )
)]
pub(crate) async fn list_tools(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiQuery(filters): ApiQuery<ToolsQuery>,
) -> Result<Json<Vec<ToolView>>, ApiError> {
    let query = AiToolQuery {
        caller,
        agent: filters.agent,
        mutability: filters.mutability,
        danger_level: filters.danger_level,
    };
    let tools = api.parts().registry.list(&query).await?;
    Ok(Json(
        tools
            .iter()
            .map(|tool| ToolView::from(tool.as_ref()))
            .collect(),
    ))
}

/// What the server can do: streaming, conversation persistence, proposal review, the
/// attachment kinds and agents, and the provider (a scripted one says so).
#[utoipa::path(
    get,
    path = "/ai/capabilities",
    tag = "capabilities",
    responses(
        (status = 200, description = "The server's capabilities.", body = CapabilitiesView),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
    )
)]
pub(crate) async fn capabilities(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
) -> Json<CapabilitiesView> {
    let parts = api.parts();
    let agents = parts
        .registry
        .agents()
        .list()
        .filter(|agent| agent.enabled)
        .map(|agent| AgentView::new(agent, agent.name == AgentRegistry::DEFAULT_AGENT))
        .collect();
    Json(CapabilitiesView {
        streaming: true,
        streaming_details: StreamingView {
            protocol: "sse".into(),
            resumable: true,
            grace_window_secs: parts.grace_window_secs,
        },
        conversation_persistence: parts.persistence.durable,
        persistence: parts.persistence.clone(),
        proposal_review: true,
        supported_attachment_kinds: parts.attachment_kinds.clone(),
        attachment_kinds: parts.attachment_kinds.clone(),
        agents,
        provider: parts.provider.clone(),
        providers: parts.providers.clone(),
        mcp_servers: parts
            .mcp_servers
            .statuses()
            .into_iter()
            .filter(|server| {
                server
                    .tenants
                    .as_ref()
                    .is_none_or(|tenants| tenants.contains(&caller.tenant_id))
            })
            .map(McpServerView::from)
            .collect(),
    })
}
