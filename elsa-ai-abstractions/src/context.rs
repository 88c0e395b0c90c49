//! Context attachments: references a client sends, and what the server resolves them to.

use std::sync::Arc;

use async_trait::async_trait;
use elsa_workflows::TimeRange;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AiCaller, AiError, ConversationId};

/// The kinds of reference a chat request may attach: the six of SPEC §2, and the kinds
/// modules add with the context provider that resolves them.
///
/// On the wire a kind is its name (`"WorkflowDefinition"`, `"acme.Ticket"`). A module's kind
/// is namespaced (it contains a dot), so it never collides with a built-in name; whether a
/// server accepts it depends on whether a context provider of that kind is registered there
/// (an unregistered kind is 400 `unsupported_attachment_kind` at the API).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
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
    /// A kind a module adds (`referenceId` required), resolved by the module's context
    /// provider. Made with [`AttachmentKind::module`].
    Module(ModuleAttachmentKind),
}

impl AttachmentKind {
    /// Every built-in kind, in declaration order.
    pub const ALL: [Self; 6] = [
        Self::WorkflowDefinition,
        Self::WorkflowInstance,
        Self::ActivitySelection,
        Self::Tenant,
        Self::DiagnosticsScope,
        Self::TimeRange,
    ];

    /// A module's kind named `name`: namespaced (`acme.Ticket`: ASCII letters, digits, `.`,
    /// `-` and `_`, at most [`ModuleAttachmentKind::MAX_LEN`] characters, with a dot that is
    /// neither first nor last).
    ///
    /// # Errors
    ///
    /// [`AiError::BadRequest`] `invalid_attachment_kind` for any other name.
    pub fn module(name: impl AsRef<str>) -> Result<Self, AiError> {
        ModuleAttachmentKind::new(name.as_ref()).map(Self::Module)
    }

    /// The kind named `name`: a built-in kind, else a module's kind (see
    /// [`module`](Self::module)).
    ///
    /// # Errors
    ///
    /// [`AiError::BadRequest`] `invalid_attachment_kind` for a name that is neither.
    pub fn parse(name: &str) -> Result<Self, AiError> {
        match Self::ALL.into_iter().find(|kind| kind.as_str() == name) {
            Some(kind) => Ok(kind),
            None => Self::module(name),
        }
    }

    /// The kind's wire name.
    pub fn as_str(&self) -> &str {
        match self {
            Self::WorkflowDefinition => "WorkflowDefinition",
            Self::WorkflowInstance => "WorkflowInstance",
            Self::ActivitySelection => "ActivitySelection",
            Self::Tenant => "Tenant",
            Self::DiagnosticsScope => "DiagnosticsScope",
            Self::TimeRange => "TimeRange",
            Self::Module(kind) => kind.as_str(),
        }
    }

    /// Whether this is one of the built-in kinds of [`ALL`](Self::ALL).
    pub fn is_builtin(&self) -> bool {
        !matches!(self, Self::Module(_))
    }
}

impl std::fmt::Display for AttachmentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for AttachmentKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for AttachmentKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Self::parse(&name).map_err(|error| serde::de::Error::custom(error.message()))
    }
}

impl JsonSchema for AttachmentKind {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AttachmentKind".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let builtin: Vec<&str> = Self::ALL.iter().map(Self::as_str).collect();
        schemars::json_schema!({
            "description": "A built-in attachment kind, or a module's namespaced kind.",
            "anyOf": [
                {"type": "string", "enum": builtin},
                {"type": "string", "pattern": ModuleAttachmentKind::PATTERN},
            ]
        })
    }
}

/// The name of a module's attachment kind, checked when it is made (see
/// [`AttachmentKind::module`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ModuleAttachmentKind(Arc<str>);

impl ModuleAttachmentKind {
    /// The longest name a module's kind may have.
    pub const MAX_LEN: usize = 64;

    /// The names a module's kind may have, as a regular expression.
    pub const PATTERN: &'static str = r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$";

    fn new(name: &str) -> Result<Self, AiError> {
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_');
        let namespaced = name.contains('.')
            && !name.starts_with('.')
            && !name.ends_with('.')
            && !name.contains("..");
        if name.len() > Self::MAX_LEN || !namespaced || !name.chars().all(allowed) {
            return Err(AiError::bad_request(
                "invalid_attachment_kind",
                format!(
                    "'{}' is neither a built-in attachment kind nor a module's kind (namespaced \
                     like acme.Ticket: letters, digits, '.', '-', '_', at most {} characters)",
                    name.chars().take(Self::MAX_LEN + 1).collect::<String>(),
                    Self::MAX_LEN
                ),
            ));
        }
        Ok(Self(Arc::from(name)))
    }

    /// The kind's name.
    pub fn as_str(&self) -> &str {
        &self.0
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
    /// What a provider resolved `attachment` to: a title and compact JSON content (not
    /// truncated; the host redacts and clamps it).
    pub fn new(attachment: &AiContextAttachment, title: impl Into<String>, content: Value) -> Self {
        Self {
            kind: attachment.kind.clone(),
            reference_id: attachment.reference_id.clone(),
            title: title.into(),
            content,
            truncated: false,
        }
    }

    /// The attachment as a model reads it: a `<context>` element naming kind, reference,
    /// title and whether it was clamped, around the compact JSON, ending in a newline. Every
    /// provider renders attachments this way, so a model sees the same prompt whichever
    /// runtime carries it.
    pub fn prompt_block(&self) -> String {
        fn attribute(value: &str) -> String {
            value.replace(['"', '\n', '\r'], " ")
        }
        format!(
            "<context kind=\"{}\" reference=\"{}\" title=\"{}\" truncated=\"{}\">\n{}\n</context>\n",
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

/// A context provider whose resolution is one async function of the request: the shortest
/// way for a host or a module to resolve its own attachment kind ([`context_provider_fn`]).
pub struct AiContextProviderFn<F> {
    kind: AttachmentKind,
    resolve: F,
}

/// A provider of `kind` attachments that resolves them with `resolve` (see
/// [`AiContextProviderFn`]).
pub fn context_provider_fn<F, Fut>(kind: AttachmentKind, resolve: F) -> Arc<dyn AiContextProvider>
where
    F: Fn(AiContextResolutionRequest) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<AiResolvedContext, AiError>> + Send + 'static,
{
    Arc::new(AiContextProviderFn { kind, resolve })
}

impl<F> std::fmt::Debug for AiContextProviderFn<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AiContextProviderFn")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl<F, Fut> AiContextProvider for AiContextProviderFn<F>
where
    F: Fn(AiContextResolutionRequest) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<AiResolvedContext, AiError>> + Send + 'static,
{
    fn kind(&self) -> AttachmentKind {
        self.kind.clone()
    }

    async fn resolve(
        &self,
        request: AiContextResolutionRequest,
    ) -> Result<AiResolvedContext, AiError> {
        (self.resolve)(request).await
    }
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
            assert_eq!(serde_json::to_value(&kind).unwrap(), kind.as_str());
            assert_eq!(AttachmentKind::parse(kind.as_str()).unwrap(), kind);
            assert!(kind.is_builtin());
        }
    }

    #[test]
    fn a_modules_kind_is_namespaced_and_round_trips_by_name() {
        let ticket = AttachmentKind::module("acme.Ticket").unwrap();
        assert!(!ticket.is_builtin());
        assert_eq!(serde_json::to_value(&ticket).unwrap(), "acme.Ticket");
        let read: AttachmentKind =
            serde_json::from_value(serde_json::json!("acme.Ticket")).unwrap();
        assert_eq!(read, ticket);
        assert_eq!(AttachmentKind::parse("acme.Ticket").unwrap(), ticket);
        let long = format!("acme.{}", "x".repeat(ModuleAttachmentKind::MAX_LEN));
        for bad in [
            "Ticket",
            ".Ticket",
            "acme.",
            "acme..Ticket",
            "acme Ticket.x",
            "",
            &long,
        ] {
            let error = AttachmentKind::module(bad).unwrap_err();
            assert_eq!(
                (error.status(), error.code()),
                (400, "invalid_attachment_kind"),
                "{bad}"
            );
        }
        // A built-in name is never a module's kind, so the two cannot be confused.
        assert!(AttachmentKind::module("WorkflowDefinition").is_err());
        let schema = serde_json::to_value(schemars::schema_for!(AttachmentKind)).unwrap();
        let pattern = schema["anyOf"][1]["pattern"].as_str().unwrap();
        assert_eq!(pattern, ModuleAttachmentKind::PATTERN);
    }
}
