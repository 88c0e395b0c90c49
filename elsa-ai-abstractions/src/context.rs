//! Context attachments: references a client sends, and what the server resolves them to.

use async_trait::async_trait;
use elsa_workflows::TimeRange;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AiCaller, AiError, ConversationId};

/// The kinds of reference a chat request may attach.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum AttachmentKind {
    /// A workflow definition (`referenceId` = definition id).
    WorkflowDefinition,
    /// A workflow instance (`referenceId` = instance id).
    WorkflowInstance,
    /// One activity of a definition (`referenceId` = definition id, `activityId` required).
    ActivitySelection,
    /// The caller's tenant (`referenceId` = tenant id; must be the caller's own).
    Tenant,
    /// The workflows a diagnostics tool may analyse (`referenceId` = a definition id; an empty
    /// `referenceId` is every workflow of the caller's tenant).
    DiagnosticsScope,
    /// The time window a diagnostics tool may analyse (`timeRange` required, `referenceId`
    /// optional).
    TimeRange,
}

impl AttachmentKind {
    /// Every kind, in declaration order.
    pub const ALL: [Self; 6] = [
        Self::WorkflowDefinition,
        Self::WorkflowInstance,
        Self::ActivitySelection,
        Self::Tenant,
        Self::DiagnosticsScope,
        Self::TimeRange,
    ];

    /// The kind's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::WorkflowDefinition => "WorkflowDefinition",
            Self::WorkflowInstance => "WorkflowInstance",
            Self::ActivitySelection => "ActivitySelection",
            Self::Tenant => "Tenant",
            Self::DiagnosticsScope => "DiagnosticsScope",
            Self::TimeRange => "TimeRange",
        }
    }
}

/// A reference attached to a chat message. Clients send references only, never content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AiContextAttachment {
    /// What is referenced.
    pub kind: AttachmentKind,
    /// The referenced object's id.
    pub reference_id: String,
    /// For `ActivitySelection`: the activity within the definition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity_id: Option<String>,
    /// For `TimeRange` (and optionally `DiagnosticsScope`): the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<TimeRangeSchema>")]
    pub time_range: Option<TimeRange>,
}

impl AiContextAttachment {
    /// A reference of `kind` to `reference_id`.
    pub fn new(kind: AttachmentKind, reference_id: impl Into<String>) -> Self {
        Self {
            kind,
            reference_id: reference_id.into(),
            activity_id: None,
            time_range: None,
        }
    }
}

/// Schema stand-in for [`TimeRange`], which lives in a crate without schemars.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct TimeRangeSchema {
    /// Inclusive start, RFC 3339.
    from: chrono::DateTime<chrono::Utc>,
    /// Inclusive end, RFC 3339.
    to: chrono::DateTime<chrono::Utc>,
}

/// Asks a context provider to resolve one attachment for one caller.
#[derive(Clone, Debug, PartialEq)]
pub struct AiContextResolutionRequest {
    /// Who asks; the provider checks tenant and permission against this.
    pub caller: AiCaller,
    /// The agent of the conversation.
    pub agent: String,
    /// The conversation, when there is one.
    pub conversation_id: Option<ConversationId>,
    /// The reference to resolve.
    pub attachment: AiContextAttachment,
}

/// An attachment resolved into content a model may read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiResolvedContext {
    /// The attachment kind.
    pub kind: AttachmentKind,
    /// The reference that was resolved.
    pub reference_id: String,
    /// A short title for people and models.
    pub title: String,
    /// The content, compact JSON (clamped and redacted by the host before a provider sees it).
    pub content: Value,
    /// Whether the host clamped `content`.
    #[serde(default)]
    pub truncated: bool,
}

impl AiResolvedContext {
    /// The attachment as a model reads it: a `<context>` element naming kind, reference,
    /// title and whether it was clamped, around the compact JSON, ending in a newline. Every
    /// provider renders attachments this way, so a model sees the same prompt whichever
    /// runtime carries it.
    pub fn prompt_block(&self) -> String {
        fn attribute(value: &str) -> String {
            value.replace(['"', '\n', '\r'], " ")
        }
        format!(
            "<context kind=\"{:?}\" reference=\"{}\" title=\"{}\" truncated=\"{}\">\n{}\n</context>\n",
            self.kind,
            attribute(&self.reference_id),
            attribute(&self.title),
            self.truncated,
            self.content,
        )
    }
}

/// Resolves one attachment kind.
#[async_trait]
pub trait AiContextProvider: Send + Sync {
    /// The kind this provider resolves.
    fn kind(&self) -> AttachmentKind;

    /// Resolves the reference. Unknown, deleted and other tenants' objects are all
    /// [`AiError::NotFound`]; a missing permission is [`AiError::Forbidden`].
    async fn resolve(
        &self,
        request: AiContextResolutionRequest,
    ) -> Result<AiResolvedContext, AiError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachments_use_the_contract_wire_shape() {
        let json = serde_json::json!({
            "kind": "TimeRange",
            "referenceId": "window",
            "timeRange": {"from": "2024-04-18T00:00:00Z", "to": "2024-04-19T00:00:00Z"}
        });
        let attachment: AiContextAttachment = serde_json::from_value(json).unwrap();
        assert_eq!(attachment.kind, AttachmentKind::TimeRange);
        assert!(attachment.time_range.is_some());
        let unknown = serde_json::json!({"kind": "Secrets", "referenceId": "x"});
        assert!(serde_json::from_value::<AiContextAttachment>(unknown).is_err());
        for kind in AttachmentKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }
}
