//! Conversation history, for the caller's own conversations only.

use axum::Json;
use axum::extract::State;
use elsa_ai_abstractions::ConversationId;
use elsa_ai_host::find_owned_conversation;

use crate::api::WeaverApi;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiPath, ApiQuery, Caller};
use crate::requests::PageQuery;
use crate::views::{ConversationSummaryView, ConversationView, PageView};

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
