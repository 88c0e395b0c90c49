//! `POST /ai/chat` and the reconnect path: chat turns as Server-Sent Events.

use std::convert::Infallible;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use elsa_ai_abstractions::{AiChatStream, AiStreamEvent, ConversationId};
use futures::StreamExt;

use crate::api::WeaverApi;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery, Caller, last_event_id};
use crate::requests::{ChatRequestBody, ResumeQuery};
use crate::views::StreamEventView;

/// The response header naming the conversation of a stream, readable before any event.
pub const CONVERSATION_ID_HEADER: &str = "x-conversation-id";

/// Sends one chat message and streams the turn.
///
/// The response is `text/event-stream`: each event's name is the event type, its id the
/// sequence, its data the JSON event. The first event is `conversation.started` (carrying
/// the conversation id); the stream ends after `conversation.completed` or
/// `conversation.failed`. A client that disconnects does not abort the turn: it resumes with
/// `GET /ai/chat/{conversationId}/events`.
#[utoipa::path(
    post,
    path = "/ai/chat",
    tag = "chat",
    request_body = ChatRequestBody,
    responses(
        (status = 200, description = "The turn's events as Server-Sent Events; `data` is this JSON.", content_type = "text/event-stream", body = StreamEventView,
            headers(("x-conversation-id" = String, description = "The conversation the events belong to."))),
        (status = 400, description = "Malformed body, unsupported attachment kind, empty message, wrong agent for the conversation.", body = ErrorBody),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 403, description = "An attachment or agent the caller may not use.", body = ErrorBody),
        (status = 404, description = "Unknown conversation, agent or referenced object.", body = ErrorBody),
        (status = 409, description = "A turn of this conversation is still running.", body = ErrorBody),
        (status = 413, description = "Body or message above the limit.", body = ErrorBody),
        (status = 503, description = "The provider runtime is unavailable, or the server is shutting down.", body = ErrorBody),
    )
)]
pub(crate) async fn chat(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiJson(body): ApiJson<ChatRequestBody>,
) -> Result<Response, ApiError> {
    let request = body.into_request(caller, &api.parts().attachment_kinds)?;
    let stream = api.parts().orchestrator.execute_chat(request).await?;
    Ok(event_stream(stream))
}

/// Resumes a conversation's stream after the last event the client saw.
///
/// Every later event is delivered exactly once and in order, live events included; the
/// stream ends once it has caught up while no turn runs. The `Last-Event-ID` header (as
/// browsers send it) wins over the `after` parameter; without either, the stream starts at
/// the first event.
#[utoipa::path(
    get,
    path = "/ai/chat/{conversationId}/events",
    tag = "chat",
    params(
        ("conversationId" = String, Path, description = "The conversation, as `conversation.started` announced it."),
        ("Last-Event-ID" = Option<u64>, Header, nullable = false, description = "The last sequence the client received (a decimal number)."),
        ResumeQuery,
    ),
    responses(
        (status = 200, description = "The events after the given sequence, as Server-Sent Events.", content_type = "text/event-stream", body = StreamEventView),
        (status = 400, description = "`Last-Event-ID` or `after` is not a sequence number.", body = ErrorBody),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 404, description = "No such conversation of the caller's.", body = ErrorBody),
    )
)]
pub(crate) async fn resume(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiPath(conversation_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<ResumeQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let after = match last_event_id(&headers)? {
        Some(after) => after,
        None => query.after.unwrap_or(0),
    };
    let stream = api
        .parts()
        .orchestrator
        .resume(&caller, &ConversationId::new(conversation_id), after)
        .await?;
    Ok(event_stream(stream))
}

fn event_stream(stream: AiChatStream) -> Response {
    let conversation = HeaderValue::from_str(stream.conversation_id.as_str()).ok();
    let events = stream
        .events
        .map(|event| Ok::<_, Infallible>(sse_event(event)));
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response();
    let headers = response.headers_mut();
    if let Some(conversation) = conversation {
        headers.insert(CONVERSATION_ID_HEADER, conversation);
    }
    // Reverse proxies must pass events on as they come.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// One stream event as an SSE event: name = type, id = sequence, data = the JSON event (the
/// text [`StreamEventView`] documents, with the payload as the journal encoded it).
fn sse_event(event: AiStreamEvent) -> Event {
    let name = event.event_type.as_str();
    let data = event.to_json().unwrap_or_else(|error| {
        // A `Value` with string keys always serialises; keep the event's place regardless.
        tracing::error!(%error, "a stream event could not be encoded");
        serde_json::json!({"type": name, "sequence": event.sequence, "error": "encoding_failed"})
            .to_string()
    });
    Event::default()
        .event(name)
        .id(event.sequence.to_string())
        .data(data)
}

/// Stops the turn running in one of the caller's conversations, on whichever replica runs
/// it. The turn ends with `conversation.failed`, code `cancelled`, on its stream.
#[utoipa::path(
    post,
    path = "/ai/chat/{conversationId}/cancel",
    tag = "chat",
    params(
        ("conversationId" = String, Path, description = "The conversation whose turn to stop."),
    ),
    responses(
        (status = 202, description = "The turn is being stopped; its stream ends with `conversation.failed` (`cancelled`)."),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 404, description = "No such conversation of the caller's.", body = ErrorBody),
        (status = 409, description = "No turn is running in the conversation (`no_turn_in_progress`).", body = ErrorBody),
        (status = 503, description = "The turn runs on another replica and the shared store could not be reached to ask it (`store_unavailable`).", body = ErrorBody),
    )
)]
pub(crate) async fn cancel(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
    ApiPath(conversation_id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    api.parts()
        .orchestrator
        .cancel(&caller, &ConversationId::new(conversation_id))
        .await?;
    Ok(StatusCode::ACCEPTED)
}
