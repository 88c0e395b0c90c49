//! Conversation history, for the caller's own conversations only; deleting conversations
//! (their owner, or an administrator of the tenant) and keeping one shorter.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use elsa_ai_abstractions::ConversationId;
use elsa_ai_host::find_owned_conversation;

use crate::api::WeaverApi;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery, Caller};
use crate::requests::{ConversationChange, ConversationsOfActor, PageQuery};
use crate::views::{ConversationSummaryView, ConversationView, DeletedConversationsView, PageView};

/// The caller's conversations in their tenant, most recently updated first.
#[utoipa::path(
    get,
    path = "/ai/conversations",
    tag = "conversations",
    params(PageQuery),
    responses(
        (status = 200, description = "The caller's conversations.", body = PageView<ConversationSummaryView>),
        (status = 400, description = "Invalid paging.", body = ErrorBody),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
    )
)]
pub(crate) async fn list_conversations(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiQuery(page): ApiQuery<PageQuery>,
) -> Result<Json<PageView<ConversationSummaryView>>, ApiError> {
    let page = api
        .parts()
        .conversations
        .list(&caller.tenant_id, &caller.actor_id, page.page())
        .await?;
    Ok(Json(PageView::of(page, |c| {
        ConversationSummaryView::from(&c)
    })))
}

/// One of the caller's conversations with its (redacted) messages. Another actor's or
/// tenant's conversation is reported exactly like a missing one.
#[utoipa::path(
    get,
    path = "/ai/conversations/{conversationId}",
    tag = "conversations",
    params(("conversationId" = String, Path, description = "The conversation.")),
    responses(
        (status = 200, description = "The conversation.", body = ConversationView),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 404, description = "No such conversation of the caller's.", body = ErrorBody),
    )
)]
pub(crate) async fn get_conversation(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ConversationView>, ApiError> {
    let conversation = find_owned_conversation(
        api.parts().conversations.as_ref(),
        &caller,
        &ConversationId::new(id),
    )
    .await?;
    Ok(Json(ConversationView::from(conversation)))
}

/// Deletes a conversation with its messages and stream journal, on every replica: its owner
/// may, and so may an administrator (`admin:ai`) of its tenant. A turn running in it is
/// stopped first (its stream ends with `conversation.failed`, code `cancelled`); proposals
/// made in it stay, without their link to it; the audit trail records who deleted what.
#[utoipa::path(
    delete,
    path = "/ai/conversations/{conversationId}",
    tag = "conversations",
    params(("conversationId" = String, Path, description = "The conversation.")),
    responses(
        (status = 204, description = "Deleted."),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 404, description = "No such conversation the caller may delete.", body = ErrorBody),
        (status = 409, description = "A running turn did not stop in time; nothing was deleted.", body = ErrorBody),
        (status = 503, description = "The store or the audit trail is unavailable; nothing was deleted.", body = ErrorBody),
    )
)]
pub(crate) async fn delete_conversation(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    api.parts()
        .conversation_service
        .delete(&caller, &ConversationId::new(id))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes every conversation one person has in the caller's tenant, each like
/// `DELETE /ai/conversations/{conversationId}`; needs `admin:ai`.
#[utoipa::path(
    delete,
    path = "/ai/conversations",
    tag = "conversations",
    params(ConversationsOfActor),
    responses(
        (status = 200, description = "What was deleted.", body = DeletedConversationsView),
        (status = 400, description = "No actor named, or an empty one.", body = ErrorBody),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 403, description = "The caller is not an administrator.", body = ErrorBody),
        (status = 409, description = "A running turn did not stop in time.", body = ErrorBody),
        (status = 503, description = "The store or the audit trail is unavailable.", body = ErrorBody),
    )
)]
pub(crate) async fn delete_conversations_of(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiQuery(whose): ApiQuery<ConversationsOfActor>,
) -> Result<Json<DeletedConversationsView>, ApiError> {
    if whose.actor.trim().is_empty() {
        return Err(ApiError::bad_request(
            "actor_required",
            "name the actor whose conversations to delete: ?actor=…",
        ));
    }
    let deleted = api
        .parts()
        .conversation_service
        .delete_owned_by(&caller, &whose.actor)
        .await?;
    Ok(Json(DeletedConversationsView {
        deleted: deleted
            .into_iter()
            .map(|d| d.id.as_str().to_owned())
            .collect(),
    }))
}

/// Keeps one of the caller's conversations for fewer days after its last change than the
/// server's retention window (`retainDays`), or under the window again (null).
#[utoipa::path(
    patch,
    path = "/ai/conversations/{conversationId}",
    tag = "conversations",
    params(("conversationId" = String, Path, description = "The conversation.")),
    request_body = ConversationChange,
    responses(
        (status = 200, description = "The conversation.", body = ConversationView),
        (status = 400, description = "An invalid body or retention.", body = ErrorBody),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 404, description = "No such conversation of the caller's.", body = ErrorBody),
    )
)]
pub(crate) async fn change_conversation(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(change): ApiJson<ConversationChange>,
) -> Result<Json<ConversationView>, ApiError> {
    let conversation = api
        .parts()
        .conversation_service
        .set_retention(&caller, &ConversationId::new(id), change.retain_days)
        .await?;
    Ok(Json(ConversationView::from(conversation)))
}
