//! `GET /ai/attachments/search`: what the caller can attach to a message, for pickers.

use axum::Json;
use axum::extract::State;
use elsa_ai_abstractions::AttachmentKind;
use elsa_ai_host::AttachmentCandidate;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::WeaverApi;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiQuery, Caller};

/// Candidates returned when the query names no `limit`.
const DEFAULT_LIMIT: usize = 20;

/// The most candidates one search returns.
const MAX_LIMIT: usize = 50;

/// Which attachments to look for.
#[derive(Clone, Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct AttachmentSearchQuery {
    /// `WorkflowDefinition` or `WorkflowInstance` (required).
    #[param(schema_with = crate::schema::searchable_attachment_kind, required = true)]
    kind: AttachmentKind,
    /// Text the id or name contains (any case); empty or absent matches all.
    #[serde(default)]
    q: Option<String>,
    /// How many to return (1 to 50, default 20).
    #[param(minimum = 1, maximum = 50)]
    #[serde(default)]
    limit: Option<usize>,
}

/// One attachable object.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AttachmentCandidateView {
    /// The attachment kind.
    #[schema(schema_with = crate::schema::attachment_kind)]
    kind: AttachmentKind,
    /// The reference a chat request names.
    reference_id: String,
    /// A title for people.
    title: String,
    /// A short detail (version, status).
    detail: String,
}

/// The candidates found.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub(crate) struct AttachmentSearchView {
    /// The candidates, at most `limit`.
    items: Vec<AttachmentCandidateView>,
}

impl From<AttachmentCandidate> for AttachmentCandidateView {
    fn from(candidate: AttachmentCandidate) -> Self {
        Self {
            kind: candidate.kind,
            reference_id: candidate.reference_id,
            title: candidate.title,
            detail: candidate.detail,
        }
    }
}

/// Definitions or instances of the caller's tenant whose id or name contains the text:
/// definitions need `read:workflows`, instances `read:workflow-instances`.
#[utoipa::path(
    get,
    path = "/ai/attachments/search",
    tag = "chat",
    params(AttachmentSearchQuery),
    responses(
        (status = 200, description = "What can be attached.", body = AttachmentSearchView),
        (status = 400, description = "A kind that cannot be searched, or a bad query (`limit` outside 1 to 50 included).", body = ErrorBody),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 403, description = "The permission the kind needs is missing.", body = ErrorBody),
    )
)]
pub(crate) async fn search_attachments(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiQuery(query): ApiQuery<AttachmentSearchQuery>,
) -> Result<Json<AttachmentSearchView>, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(
            "invalid_query",
            format!("limit must be between 1 and {MAX_LIMIT}"),
        ));
    }
    let found = api
        .parts()
        .attachment_search
        .search(
            &caller,
            query.kind,
            query.q.as_deref().unwrap_or_default(),
            limit,
        )
        .await?;
    Ok(Json(AttachmentSearchView {
        items: found.into_iter().map(Into::into).collect(),
    }))
}
