//! The review inbox and the proposal actions. Permissions, tenant, state transitions and
//! audit are the host's `ProposalService`'s.

use axum::Json;
use axum::extract::State;
use elsa_ai_abstractions::{AiCaller, AiProposal, ProposalId};

use crate::api::WeaverApi;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery, Caller};
use crate::requests::{DropTargetsBody, ProposalQueryParams, RejectBody};
use crate::views::{PageView, ProposalSummaryView, ProposalView};

/// The review inbox: the caller's tenant's proposals, newest first.
#[utoipa::path(
    get,
    path = "/ai/proposals",
    tag = "proposals",
    params(ProposalQueryParams),
    responses(
        (status = 200, description = "Matching proposals.", body = PageView<ProposalSummaryView>),
        (status = 400, description = "An unknown status or invalid paging.", body = ErrorBody),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 403, description = "The caller may neither propose nor apply.", body = ErrorBody),
    )
)]
pub(crate) async fn list_proposals(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiQuery(params): ApiQuery<ProposalQueryParams>,
) -> Result<Json<PageView<ProposalSummaryView>>, ApiError> {
    let page = api
        .parts()
        .proposals
        .list(&caller, &params.into_query())
        .await?;
    let service = &api.parts().proposals;
    Ok(Json(PageView::of(page, |proposal| {
        let allowed = service.allowed_actions(&caller, &proposal);
        ProposalSummaryView::new(proposal, &allowed)
    })))
}

/// One proposal with its proposed definition, diagnostics and graph diff, or for an
/// operation what it will do and each target's state when proposed and now.
#[utoipa::path(
    get,
    path = "/ai/proposals/{proposalId}",
    tag = "proposals",
    params(("proposalId" = String, Path, description = "The proposal.")),
    responses(
        (status = 200, description = "The proposal.", body = ProposalView),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 403, description = "The caller may neither propose nor apply.", body = ErrorBody),
        (status = 404, description = "No such proposal in the caller's tenant.", body = ErrorBody),
    )
)]
pub(crate) async fn get_proposal(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ProposalView>, ApiError> {
    let proposal = api
        .parts()
        .proposals
        .find(&caller, &ProposalId::new(id))
        .await?;
    Ok(Json(view(&api, &caller, proposal).await?))
}

/// Approves a `Validated` proposal; the caller becomes its reviewer.
#[utoipa::path(
    post,
    path = "/ai/proposals/{proposalId}/approve",
    tag = "proposals",
    params(("proposalId" = String, Path, description = "The proposal.")),
    responses(
        (status = 200, description = "The approved proposal.", body = ProposalView),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 403, description = "The caller lacks `apply:workflows`.", body = ErrorBody),
        (status = 404, description = "No such proposal in the caller's tenant.", body = ErrorBody),
        (status = 409, description = "The proposal's state does not allow it (`currentState` says which).", body = ErrorBody),
    )
)]
pub(crate) async fn approve(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ProposalView>, ApiError> {
    let proposal = api
        .parts()
        .proposals
        .approve(&caller, &ProposalId::new(id))
        .await?;
    Ok(Json(view(&api, &caller, proposal).await?))
}

/// Rejects a proposal with a reason for the requester.
#[utoipa::path(
    post,
    path = "/ai/proposals/{proposalId}/reject",
    tag = "proposals",
    params(("proposalId" = String, Path, description = "The proposal.")),
    request_body = RejectBody,
    responses(
        (status = 200, description = "The rejected proposal.", body = ProposalView),
        (status = 400, description = "No reason, or a malformed body.", body = ErrorBody),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 403, description = "The caller lacks `apply:workflows`.", body = ErrorBody),
        (status = 404, description = "No such proposal in the caller's tenant.", body = ErrorBody),
        (status = 409, description = "The proposal's state does not allow it.", body = ErrorBody),
    )
)]
pub(crate) async fn reject(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<RejectBody>,
) -> Result<Json<ProposalView>, ApiError> {
    let proposal = api
        .parts()
        .proposals
        .reject(&caller, &ProposalId::new(id), &body.reason)
        .await?;
    Ok(Json(view(&api, &caller, proposal).await?))
}

/// Applies an `Approved` proposal: validation runs again and the baseline must still be the
/// current version; the written version is in `appliedVersion`.
#[utoipa::path(
    post,
    path = "/ai/proposals/{proposalId}/apply",
    tag = "proposals",
    params(("proposalId" = String, Path, description = "The proposal.")),
    responses(
        (status = 200, description = "The applied proposal.", body = ProposalView),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 403, description = "The caller lacks `apply:workflows`.", body = ErrorBody),
        (status = 404, description = "No such proposal in the caller's tenant.", body = ErrorBody),
        (status = 409, description = "Not approved, already applied, or the workflow changed since (`stale_baseline`).", body = ErrorBody),
        (status = 422, description = "Validation fails now; the diagnostics say why.", body = ErrorBody),
    )
)]
pub(crate) async fn apply(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ProposalView>, ApiError> {
    let proposal = api
        .parts()
        .proposals
        .apply(&caller, &ProposalId::new(id))
        .await?;
    Ok(Json(view(&api, &caller, proposal).await?))
}

/// Removes instances from a `Validated` retry, cancel or restart proposal before it is
/// approved (a new revision, audited).
#[utoipa::path(
    post,
    path = "/ai/proposals/{proposalId}/drop-targets",
    tag = "proposals",
    params(("proposalId" = String, Path, description = "The proposal.")),
    request_body = DropTargetsBody,
    responses(
        (status = 200, description = "The proposal with the remaining targets.", body = ProposalView),
        (status = 400, description = "No targets named, one that is not a target, none would remain, or the proposal has no instance targets.", body = ErrorBody),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 403, description = "The caller lacks `apply:workflows` or the operation's permission.", body = ErrorBody),
        (status = 404, description = "No such proposal in the caller's tenant.", body = ErrorBody),
        (status = 409, description = "The proposal is not `Validated`.", body = ErrorBody),
    )
)]
pub(crate) async fn drop_targets(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<DropTargetsBody>,
) -> Result<Json<ProposalView>, ApiError> {
    let proposal = api
        .parts()
        .proposals
        .drop_targets(&caller, &ProposalId::new(id), &body.targets)
        .await?;
    Ok(Json(view(&api, &caller, proposal).await?))
}

/// The view of `proposal` with the review actions `caller` may take on it now and, for an
/// operation, each target's state now.
async fn view(
    api: &WeaverApi,
    caller: &AiCaller,
    proposal: AiProposal,
) -> Result<ProposalView, ApiError> {
    let service = &api.parts().proposals;
    let allowed = service.allowed_actions(caller, &proposal);
    let current = service.target_states(caller, &proposal).await?;
    Ok(ProposalView::new(proposal, &allowed, current))
}
