//! What clients send: request bodies and query strings, and how they become contract
//! requests. Unknown fields are refused, so a typo is a 400 rather than silently ignored.

use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiCaller, AiChatRequest, AiContextAttachment, AttachmentKind, AuditOutcome, AuditQuery,
    ConversationId, DangerLevel, ProposalId, ProposalQuery, ProposalStatus, ToolMutability,
};
use elsa_workflows::{PageRequest, TimeRange};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;

/// `POST /ai/chat`: one user message, optionally continuing a conversation.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(example = json!({
    "message": "What does this workflow do?",
    "attachments": [{"kind": "WorkflowDefinition", "referenceId": "order-fulfilment"}]
}))]
pub struct ChatRequestBody {
    /// Continue this conversation (the caller must own it); absent starts a new one. When
    /// given it must not be empty or blank (400 `invalid_conversation_id`).
    #[serde(default)]
    #[schema(pattern = r"\S")]
    pub conversation_id: Option<String>,
    /// The agent; absent means `workflow-author` (or the continued conversation's agent).
    #[serde(default)]
    pub agent: Option<String>,
    /// The user's message; not empty or blank (400 `empty_message`).
    #[schema(pattern = r"\S")]
    pub message: String,
    /// References to resolve as context; clients send references only, never content.
    #[serde(default)]
    pub attachments: Vec<AttachmentBody>,
}

/// A reference attached to a chat message, in the shape Elsa Studio's Weaver panel sends.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttachmentBody {
    /// The client's own id for the attachment; accepted and not used.
    #[serde(default)]
    pub id: Option<String>,
    /// What is referenced (`Activity` is accepted for `ActivitySelection`).
    #[schema(schema_with = crate::schema::attachment_kind_in_request)]
    pub kind: String,
    /// The referenced object's id. Required, except for `TimeRange` and for a
    /// `DiagnosticsScope` that covers the caller's whole tenant.
    #[serde(default)]
    pub reference_id: Option<String>,
    /// A client's scope label; accepted and not used.
    #[serde(default)]
    pub scope: Option<String>,
    /// For `ActivitySelection`: the activity within the definition.
    #[serde(default)]
    pub activity_id: Option<String>,
    /// For `TimeRange` (and optionally `DiagnosticsScope`): the window.
    #[serde(default)]
    pub time_range: Option<TimeRangeBody>,
    /// A client's own annotations; accepted and never passed on (clients send references,
    /// never content, to a model).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A closed time window; `from` must not be after `to` (400 `invalid_time_range`).
#[derive(Clone, Copy, Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TimeRangeBody {
    /// Inclusive start, RFC 3339.
    pub from: DateTime<Utc>,
    /// Inclusive end, RFC 3339.
    pub to: DateTime<Utc>,
}

impl TimeRangeBody {
    fn into_range(self) -> Result<TimeRange, ApiError> {
        if self.from > self.to {
            return Err(ApiError::bad_request(
                "invalid_time_range",
                "a time range's 'from' must not be after its 'to'",
            ));
        }
        Ok(TimeRange {
            from: self.from,
            to: self.to,
        })
    }
}

impl AttachmentBody {
    /// The contract attachment; `kinds` are the kinds the server resolves (the built-in ones
    /// and those modules registered), any other is 400 `unsupported_attachment_kind`.
    fn into_attachment(self, kinds: &[AttachmentKind]) -> Result<AiContextAttachment, ApiError> {
        let kind = match self.kind.as_str() {
            // Elsa Studio's name for an activity selection.
            "Activity" => AttachmentKind::ActivitySelection,
            name => kinds
                .iter()
                .find(|kind| kind.as_str() == name)
                .cloned()
                .ok_or_else(|| {
                    let supported: Vec<&str> = kinds.iter().map(AttachmentKind::as_str).collect();
                    ApiError::bad_request(
                        "unsupported_attachment_kind",
                        format!(
                            "attachment kind '{}' is not supported; the kinds are {}",
                            self.kind,
                            supported.join(", ")
                        ),
                    )
                })?,
        };
        let reference_id = self.reference_id.unwrap_or_default();
        let unreferenced = matches!(
            kind,
            AttachmentKind::TimeRange | AttachmentKind::DiagnosticsScope
        );
        if reference_id.trim().is_empty() && !unreferenced {
            return Err(ApiError::bad_request(
                "invalid_attachment",
                format!("a {kind} attachment needs a referenceId"),
            ));
        }
        Ok(AiContextAttachment {
            kind,
            reference_id: reference_id.trim().to_owned(),
            activity_id: self.activity_id,
            time_range: self.time_range.map(TimeRangeBody::into_range).transpose()?,
        })
    }
}

impl ChatRequestBody {
    /// The contract request of `caller`; 400 for an attachment kind outside `kinds` (the
    /// kinds the server resolves) or an empty id.
    pub fn into_request(
        self,
        caller: AiCaller,
        kinds: &[AttachmentKind],
    ) -> Result<AiChatRequest, ApiError> {
        let conversation_id = match self.conversation_id {
            Some(id) if id.trim().is_empty() => {
                return Err(ApiError::bad_request(
                    "invalid_conversation_id",
                    "conversationId must not be empty; leave it out to start a new conversation",
                ));
            }
            id => id.map(ConversationId::new),
        };
        Ok(AiChatRequest {
            caller,
            conversation_id,
            agent: self.agent,
            message: self.message,
            attachments: self
                .attachments
                .into_iter()
                .map(|attachment| attachment.into_attachment(kinds))
                .collect::<Result<_, _>>()?,
        })
    }
}

/// Paging of a listing.
#[derive(Clone, Copy, Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Items to skip (default 0).
    #[param(maximum = 18446744073709551615_u64)]
    pub offset: Option<usize>,
    /// Page size (default 50, at most 500: larger sizes are cut to 500).
    #[param(maximum = 18446744073709551615_u64)]
    pub limit: Option<usize>,
}

impl PageQuery {
    /// The page requested.
    pub fn page(self) -> PageRequest {
        let default = PageRequest::default();
        PageRequest::new(
            self.offset.unwrap_or(default.offset),
            self.limit.unwrap_or(default.limit),
        )
    }
}

/// `GET /ai/chat/{conversationId}/events`: where to resume.
#[derive(Clone, Copy, Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ResumeQuery {
    /// Resume after this sequence (the `Last-Event-ID` header wins when both are given).
    pub after: Option<u64>,
}

/// `GET /ai/tools` filters.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ToolsQuery {
    /// Only tools this agent may use (404 for an unknown agent).
    pub agent: Option<String>,
    /// Only tools of this mutability.
    #[param(schema_with = crate::schema::mutability)]
    pub mutability: Option<ToolMutability>,
    /// Only tools of this danger level.
    #[param(schema_with = crate::schema::danger_level)]
    pub danger_level: Option<DangerLevel>,
}

/// `GET /ai/capabilities` options.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CapabilitiesQuery {
    /// Report the grounding families as this agent could use them (404 for an unknown
    /// agent); without it, as the caller could under any agent.
    pub agent: Option<String>,
}

/// `GET /ai/audit` filters.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AuditQueryParams {
    /// Only records of this conversation.
    pub conversation_id: Option<String>,
    /// Only records of this proposal.
    pub proposal_id: Option<String>,
    /// Only records of this actor.
    pub actor: Option<String>,
    /// Only records with this outcome.
    #[param(schema_with = crate::schema::audit_outcome)]
    pub outcome: Option<AuditOutcome>,
    /// Only records made in this trace (a W3C trace id: 32 hex digits).
    #[param(pattern = "^[0-9a-fA-F]{32}$")]
    pub trace_id: Option<String>,
    /// Only records at or after this instant (RFC 3339); not after `to` when both are
    /// given (400 `invalid_time_range`).
    #[param(schema_with = crate::schema::date_time)]
    pub from: Option<DateTime<Utc>>,
    /// Only records at or before this instant (RFC 3339); not before `from` when both are
    /// given (400 `invalid_time_range`).
    #[param(schema_with = crate::schema::date_time)]
    pub to: Option<DateTime<Utc>>,
    /// Items to skip (default 0).
    #[param(maximum = 18446744073709551615_u64)]
    pub offset: Option<usize>,
    /// Page size (default 50, at most 500: larger sizes are cut to 500).
    #[param(maximum = 18446744073709551615_u64)]
    pub limit: Option<usize>,
}

impl AuditQueryParams {
    /// The contract query; 400 `invalid_time_range` when `from` is after `to`, 400
    /// `invalid_trace_id` when `traceId` is not 32 hex digits.
    pub fn into_query(self) -> Result<AuditQuery, ApiError> {
        let trace_id = match self.trace_id {
            Some(trace) if trace.len() == 32 && trace.bytes().all(|b| b.is_ascii_hexdigit()) => {
                Some(trace.to_ascii_lowercase())
            }
            Some(_) => {
                return Err(ApiError::bad_request(
                    "invalid_trace_id",
                    "traceId must be a W3C trace id: 32 hexadecimal digits",
                ));
            }
            None => None,
        };
        let time_range = match (self.from, self.to) {
            (None, None) => None,
            (from, to) => Some(
                TimeRangeBody {
                    from: from.unwrap_or(DateTime::<Utc>::MIN_UTC),
                    to: to.unwrap_or(DateTime::<Utc>::MAX_UTC),
                }
                .into_range()?,
            ),
        };
        Ok(AuditQuery {
            conversation_id: self.conversation_id.map(ConversationId::new),
            proposal_id: self.proposal_id.map(ProposalId::new),
            actor_id: self.actor,
            outcome: self.outcome,
            trace_id,
            time_range,
            page: PageQuery {
                offset: self.offset,
                limit: self.limit,
            }
            .page(),
        })
    }
}

/// `GET /ai/proposals` filters.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ProposalQueryParams {
    /// Only proposals in this state.
    #[param(schema_with = crate::schema::proposal_status)]
    pub status: Option<ProposalStatus>,
    /// Only proposals of this conversation.
    pub conversation_id: Option<String>,
    /// Only proposals about this workflow (definition id).
    pub workflow: Option<String>,
    /// Only proposals requested by this actor.
    pub created_by: Option<String>,
    /// Items to skip (default 0).
    #[param(maximum = 18446744073709551615_u64)]
    pub offset: Option<usize>,
    /// Page size (default 50, at most 500: larger sizes are cut to 500).
    #[param(maximum = 18446744073709551615_u64)]
    pub limit: Option<usize>,
}

impl ProposalQueryParams {
    /// The contract query.
    pub fn into_query(self) -> ProposalQuery {
        ProposalQuery {
            status: self.status,
            conversation_id: self.conversation_id.map(ConversationId::new),
            definition_id: self.workflow,
            created_by: self.created_by,
            page: PageQuery {
                offset: self.offset,
                limit: self.limit,
            }
            .page(),
        }
    }
}

/// `POST /ai/proposals/{proposalId}/reject`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(example = json!({"reason": "The approval limit must stay at 1000."}))]
pub struct RejectBody {
    /// Why, for the requester (required, not empty or blank: 400 `reason_required`; stored
    /// redacted).
    #[schema(pattern = r"\S")]
    pub reason: String,
}

/// `POST /ai/proposals/{proposalId}/drop-targets`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(example = json!({"targets": ["4f1c2a9b7e3d5a60"]}))]
pub struct DropTargetsBody {
    /// The instance ids to remove from the proposal (at least one must remain).
    #[schema(min_items = 1)]
    pub targets: Vec<String>,
}

/// `PATCH /ai/conversations/{conversationId}`: how long the owner keeps the conversation.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(example = json!({"retainDays": 3}))]
pub struct ConversationChange {
    /// Days after its last change the conversation is kept: 1 up to the server's retention
    /// window (400 `invalid_retention` otherwise), or null for the window. Required.
    #[serde(deserialize_with = "whole_days")]
    #[schema(minimum = 1, nullable, required = true)]
    pub retain_days: Option<u32>,
}

/// A required number of days or null. JSON Schema counts `3.0` as the integer 3, so a whole
/// number written with a fraction is one too.
fn whole_days<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<u32>, D::Error> {
    use serde::de::Error;
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    let days = match number.as_u64() {
        Some(days) => Some(days),
        None => number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= f64::from(u32::MAX))
            .map(|f| f as u64),
    };
    days.and_then(|days| u32::try_from(days).ok())
        .map(Some)
        .ok_or_else(|| {
            D::Error::custom(format!(
                "retainDays must be a whole number of days, got {number}"
            ))
        })
}

/// `DELETE /ai/conversations?actor=…`: whose conversations an administrator erases.
#[derive(Clone, Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ConversationsOfActor {
    /// The actor whose conversations in the caller's tenant are deleted.
    #[param(min_length = 1)]
    pub actor: String,
}

/// `PUT /ai/admin/tools/{toolName}/enablement`: an administrator's decision.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(example = json!({"enabled": true, "agent": "workflow-author"}))]
pub struct EnablementChangeBody {
    /// On or off.
    pub enabled: bool,
    /// One agent; absent decides for every agent.
    #[serde(default)]
    pub agent: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::extract::parse_json;

    fn body(json: serde_json::Value) -> Result<AiChatRequest, ApiError> {
        let body: ChatRequestBody = parse_json(json.to_string().as_bytes())?;
        body.into_request(AiCaller::new("alice", "acme", []), &AttachmentKind::ALL)
    }

    #[test]
    fn the_contract_body_becomes_a_chat_request() {
        let request = body(json!({
            "conversationId": "c-1",
            "message": "hi",
            "attachments": [
                {"kind": "WorkflowDefinition", "referenceId": "orders"},
                {"kind": "ActivitySelection", "referenceId": "orders", "activityId": "a1"},
                {"kind": "TimeRange", "referenceId": "window",
                 "timeRange": {"from": "2024-04-18T00:00:00Z", "to": "2024-04-19T00:00:00Z"}}
            ]
        }))
        .unwrap();
        assert_eq!(request.conversation_id, Some(ConversationId::new("c-1")));
        assert_eq!(
            request.agent, None,
            "the orchestrator applies the default agent"
        );
        assert_eq!(request.attachments.len(), 3);
        assert_eq!(request.attachments[1].activity_id.as_deref(), Some("a1"));
        assert!(request.attachments[2].time_range.is_some());
    }

    #[test]
    fn elsa_studios_chat_body_is_accepted_as_it_is_sent() {
        let request = body(json!({
            "conversationId": null,
            "message": "why did it fail?",
            "agent": null,
            "attachments": [
                {"id": "4f1c2d", "kind": "WorkflowDefinition", "referenceId": "orders",
                 "scope": null, "timeRange": null, "activityId": null, "metadata": {}},
                {"id": "5a", "kind": "Activity", "referenceId": "orders", "scope": null,
                 "timeRange": null, "activityId": "a1", "metadata": {"label": "x"}},
                {"id": "6b", "kind": "TimeRange", "referenceId": null, "scope": null,
                 "timeRange": {"from": "2024-04-18T00:00:00Z", "to": "2024-04-19T00:00:00Z"},
                 "activityId": null, "metadata": {}},
                {"id": "7c", "kind": "DiagnosticsScope", "scope": "tenant", "metadata": {}}
            ]
        }))
        .unwrap();
        assert_eq!(request.conversation_id, None);
        let kinds: Vec<AttachmentKind> =
            request.attachments.iter().map(|a| a.kind.clone()).collect();
        assert_eq!(
            kinds,
            [
                AttachmentKind::WorkflowDefinition,
                AttachmentKind::ActivitySelection,
                AttachmentKind::TimeRange,
                AttachmentKind::DiagnosticsScope
            ]
        );
        assert_eq!(request.attachments[1].activity_id.as_deref(), Some("a1"));
        assert_eq!(request.attachments[2].reference_id, "");
        assert_eq!(
            request.attachments[3].reference_id, "",
            "a scope without a reference covers the caller's tenant"
        );
    }

    #[test]
    fn a_registered_modules_kind_is_accepted_and_needs_a_reference() {
        let ticket = AttachmentKind::module("acme.Ticket").unwrap();
        let kinds = [AttachmentKind::WorkflowDefinition, ticket.clone()];
        let parse = |json: serde_json::Value| {
            let body: ChatRequestBody = parse_json(json.to_string().as_bytes()).unwrap();
            body.into_request(AiCaller::new("alice", "acme", []), &kinds)
        };
        let request = parse(
            json!({"message": "hi", "attachments": [{"kind": "acme.Ticket", "referenceId": "T-1"}]}),
        )
        .unwrap();
        assert_eq!(request.attachments[0].kind, ticket);
        let code = |json| parse(json).unwrap_err().0.code().to_owned();
        assert_eq!(
            code(json!({"message": "hi", "attachments": [{"kind": "acme.Ticket"}]})),
            "invalid_attachment"
        );
        // Only the kinds the server resolves: here not even a built-in one it lacks.
        assert_eq!(
            code(
                json!({"message": "hi", "attachments": [{"kind": "Tenant", "referenceId": "acme"}]})
            ),
            "unsupported_attachment_kind"
        );
    }

    #[test]
    fn bad_bodies_are_refused_with_a_code() {
        let code = |json| body(json).unwrap_err().0.code().to_owned();
        assert_eq!(
            code(
                json!({"message": "hi", "attachments": [{"kind": "Secrets", "referenceId": "x"}]})
            ),
            "unsupported_attachment_kind"
        );
        assert_eq!(
            code(json!({"message": "hi", "attachments": [{"kind": "Tenant", "referenceId": " "}]})),
            "invalid_attachment"
        );
        // A module's kind that no context provider of this server resolves.
        assert_eq!(
            code(
                json!({"message": "hi", "attachments": [{"kind": "acme.Ticket", "referenceId": "T-1"}]})
            ),
            "unsupported_attachment_kind"
        );
        assert_eq!(
            code(
                json!({"message": "hi", "attachments": [{"kind": "WorkflowInstance", "referenceId": null}]})
            ),
            "invalid_attachment"
        );
        assert_eq!(
            code(
                json!({"message": "hi", "attachments": [{"kind": "Activity", "activityId": "a1"}]})
            ),
            "invalid_attachment"
        );
        assert_eq!(
            code(json!({"message": "hi", "conversationId": ""})),
            "invalid_conversation_id"
        );
        assert_eq!(
            code(json!({"message": "hi", "conversationID": "x"})),
            "invalid_body"
        );
        assert_eq!(code(json!({"attachments": []})), "invalid_body");
        assert_eq!(
            code(
                json!({"message": "hi", "attachments": [{"kind": "TimeRange", "referenceId": "w",
                "timeRange": {"from": "2024-04-19T00:00:00Z", "to": "2024-04-18T00:00:00Z"}}]})
            ),
            "invalid_time_range"
        );
    }

    #[test]
    fn audit_filters_become_a_query_with_an_open_ended_range() {
        let query = AuditQueryParams {
            from: Some("2024-04-18T00:00:00Z".parse().unwrap()),
            outcome: Some(AuditOutcome::Denied),
            limit: Some(10_000),
            ..AuditQueryParams::default()
        }
        .into_query()
        .unwrap();
        let range = query.time_range.unwrap();
        assert!(range.contains(Utc::now()));
        assert_eq!(query.page.limit, PageRequest::MAX_LIMIT);
        assert_eq!(query.outcome, Some(AuditOutcome::Denied));
    }

    #[test]
    fn a_trace_filter_is_a_w3c_trace_id_in_lowercase() {
        let query = |trace: &str| {
            AuditQueryParams {
                trace_id: Some(trace.to_owned()),
                ..AuditQueryParams::default()
            }
            .into_query()
        };
        assert_eq!(
            query("4BF92F3577B34DA6A3CE929D0E0E4736").unwrap().trace_id,
            Some("4bf92f3577b34da6a3ce929d0e0e4736".to_owned())
        );
        // The OpenAPI document says what is accepted, so that clients (and the API fuzzer)
        // know a valid value from an invalid one.
        let document = serde_json::to_value(crate::openapi()).unwrap();
        let parameter = document["paths"]["/ai/audit"]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "traceId")
            .cloned()
            .expect("traceId is documented");
        assert_eq!(parameter["schema"]["pattern"], "^[0-9a-fA-F]{32}$");
        for bad in [
            "",
            "4bf92f35",
            "4bf92f3577b34da6a3ce929d0e0e473g",
            "' OR 1=1 --",
        ] {
            let ApiError(error) = query(bad).unwrap_err();
            assert_eq!(
                (error.status(), error.code()),
                (400, "invalid_trace_id"),
                "{bad}"
            );
        }
    }
}
