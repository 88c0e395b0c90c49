//! `GET /ai/tools` and `GET /ai/capabilities`.

use axum::Json;
use axum::extract::State;
use elsa_ai_abstractions::{AiCaller, AiError, AiToolQuery, AiToolRegistry};
use elsa_ai_host::AgentRegistry;
use elsa_ai_tools::families::GroundingFamily;
use elsa_workflows::ExecutionRecordStore;

use crate::api::WeaverApi;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiQuery, Caller};
use crate::requests::{CapabilitiesQuery, ToolsQuery};
use crate::views::{
    AgentView, CapabilitiesView, GroundingFamilyView, McpServerView, StreamingView, ToolView,
};

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
    let registry = &api.parts().registry;
    let tools = registry.list(&query).await?;
    Ok(Json(
        tools
            .iter()
            .map(|tool| {
                let mut view = ToolView::from(tool.as_ref());
                if let Some(registered) = registry.registered(&tool.name) {
                    view.aliases = registered
                        .definition()
                        .names()
                        .filter(|name| *name != tool.name)
                        .map(str::to_owned)
                        .collect();
                }
                view
            })
            .collect(),
    ))
}

/// What the server can do: streaming, conversation persistence, proposal review, the
/// attachment kinds and agents, the provider (a scripted one says so), and the grounding
/// families as the caller may use them.
#[utoipa::path(
    get,
    path = "/ai/capabilities",
    tag = "capabilities",
    params(CapabilitiesQuery),
    responses(
        (status = 200, description = "The server's capabilities.", body = CapabilitiesView),
        (status = 400, description = "An unknown query parameter.", body = ErrorBody),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 403, description = "The named agent is disabled.", body = ErrorBody),
        (status = 404, description = "The named agent does not exist.", body = ErrorBody),
    )
)]
pub(crate) async fn capabilities(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiQuery(options): ApiQuery<CapabilitiesQuery>,
) -> Result<Json<CapabilitiesView>, ApiError> {
    let grounding = grounding(&api, &caller, options.agent).await?;
    let parts = api.parts();
    let agents = parts
        .registry
        .agents()
        .list()
        .filter(|agent| agent.enabled)
        .map(|agent| AgentView::new(agent, agent.name == AgentRegistry::DEFAULT_AGENT))
        .collect();
    Ok(Json(CapabilitiesView {
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
        grounding,
    }))
}

/// The grounding families as `caller` (under `agent`, if named) may use them.
async fn grounding(
    api: &WeaverApi,
    caller: &AiCaller,
    agent: Option<String>,
) -> Result<Vec<GroundingFamilyView>, ApiError> {
    let parts = api.parts();
    let setup = &parts.grounding;
    let query = AiToolQuery {
        agent,
        ..AiToolQuery::for_caller(caller.clone())
    };
    let served = setup.workflows.services(&caller.tenant_id).is_some();
    let mut families = Vec::new();
    for family in GroundingFamily::ALL {
        let mut tool_names = Vec::new();
        let mut reasons = Vec::new();
        if setup.switched_off.contains(&family) {
            reasons.push(format!(
                "turned off by configuration ([grounding] {} = false)",
                family.name()
            ));
        } else if !served {
            reasons.push(format!(
                "no workflow data is configured for tenant '{}'",
                caller.tenant_id
            ));
        } else {
            if family == GroundingFamily::Runtime
                && !setup
                    .workflows
                    .keeps_execution_records(&caller.tenant_id)
                    .await
                    .map_err(AiError::from)?
            {
                reasons.push(
                    "the tenant's workflow backend keeps no activity execution records: \
                     execution history and activity state come from instance documents only"
                        .to_owned(),
                );
            }
            let availability = parts.registry.availability(family.tools(), &query).await?;
            for tool in availability.into_iter().flatten() {
                let name = tool.tool.offered_definition().name.clone();
                if tool.is_available() {
                    tool_names.push(name);
                } else {
                    let unmet: Vec<String> = tool.unmet.iter().map(ToString::to_string).collect();
                    reasons.push(format!("{name}: {}", unmet.join("; ")));
                }
            }
        }
        let available = !tool_names.is_empty();
        let kinds = family.attachment_kinds().to_vec();
        families.push(GroundingFamilyView {
            family: family.name().to_owned(),
            name: family.name().to_owned(),
            display_name: family.display_name().to_owned(),
            description: family.description().to_owned(),
            available,
            enabled: available,
            tool_names,
            attachment_kinds: kinds.clone(),
            supported_attachment_kinds: kinds,
            disabled_reason: (!available).then(|| reasons.first().cloned()).flatten(),
            disabled_reasons: reasons,
        });
    }
    Ok(families)
}
