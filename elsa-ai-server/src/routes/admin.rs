//! Administration: tool enablement and the audit trail, for callers with `admin:ai`. The
//! permission is checked by the host services these handlers call.

use axum::Json;
use axum::extract::State;
use elsa_ai_host::{EnablementChange, EnablementDecisions, EnablementPolicy};

use crate::api::WeaverApi;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery, Caller};
use crate::requests::{AuditQueryParams, EnablementChangeBody};
use crate::views::{
    AuditEventView, EnablementDecisionView, PageView, ToolEnablementListView, ToolEnablementView,
};

/// Every registered tool with its enablement in the administrator's tenant.
#[utoipa::path(
    get,
    path = "/ai/admin/tools",
    tag = "admin",
    responses(
        (status = 200, description = "Every registered tool and the tenant's decisions.", body = ToolEnablementListView),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 403, description = "The caller lacks `admin:ai`.", body = ErrorBody),
    )
)]
pub(crate) async fn list_enablement(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
) -> Result<Json<ToolEnablementListView>, ApiError> {
    let parts = api.parts();
    let recorded = parts.enablement.decisions(&caller).await?;
    let decisions = EnablementDecisions::new(recorded.clone());
    let tools = parts
        .registry
        .iter_for(&caller.tenant_id)
        .map(|tool| {
            let definition = tool.definition();
            ToolEnablementView {
                name: definition.name.clone(),
                display_name: definition.display_name.clone(),
                mutability: definition.mutability,
                danger_level: definition.danger_level,
                source: definition.source,
                enabled_by_default: EnablementPolicy::default_enabled(definition),
                enabled: decisions.is_enabled(definition, None),
                may_enable: EnablementPolicy::may_enable(definition).is_ok(),
                decisions: recorded
                    .iter()
                    .filter(|d| d.tool_name == definition.name)
                    .cloned()
                    .map(EnablementDecisionView::from)
                    .collect(),
            }
        })
        .collect();
    Ok(Json(ToolEnablementListView { tools }))
}

/// Turns a tool on or off in the administrator's tenant, for every agent or one. The change
/// is audited before it takes effect.
#[utoipa::path(
    put,
    path = "/ai/admin/tools/{toolName}/enablement",
    tag = "admin",
    params(("toolName" = String, Path, description = "The tool, such as `workflow.proposeUpdate`.")),
    request_body = EnablementChangeBody,
    responses(
        (status = 200, description = "The recorded decision.", body = EnablementDecisionView),
        (status = 400, description = "Malformed body.", body = ErrorBody),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 403, description = "The caller lacks `admin:ai`, or the tool is administrative.", body = ErrorBody),
        (status = 404, description = "Unknown tool or agent.", body = ErrorBody),
    )
)]
pub(crate) async fn change_enablement(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiPath(tool_name): ApiPath<String>,
    ApiJson(body): ApiJson<EnablementChangeBody>,
) -> Result<Json<EnablementDecisionView>, ApiError> {
    let decision = api
        .parts()
        .enablement
        .set(
            &caller,
            EnablementChange {
                tool_name,
                agent: body.agent,
                enabled: body.enabled,
            },
        )
        .await?;
    Ok(Json(EnablementDecisionView::from(decision)))
}

/// The tenant's redacted audit trail, newest first. With both `from` and `to`, `from` must
/// not be after `to` (400 `invalid_time_range`); JSON Schema cannot compare two parameters,
/// so the document says it in words.
#[utoipa::path(
    get,
    path = "/ai/audit",
    tag = "admin",
    params(AuditQueryParams),
    responses(
        (status = 200, description = "Matching audit records.", body = PageView<AuditEventView>),
        (status = 400, description = "Invalid filter, or `from` after `to` (`invalid_time_range`).", body = ErrorBody),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 403, description = "The caller lacks `admin:ai`.", body = ErrorBody),
    )
)]
pub(crate) async fn audit(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiQuery(params): ApiQuery<AuditQueryParams>,
) -> Result<Json<PageView<AuditEventView>>, ApiError> {
    let query = params.into_query()?;
    let page = api.parts().audit.query(&caller, &query).await?;
    Ok(Json(PageView::of(page, AuditEventView::from)))
}
