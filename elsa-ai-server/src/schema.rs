//! OpenAPI schemas for the contract types the API carries but does not own (they live in
//! `elsa-ai-abstractions` and `elsa-workflows`, which know nothing of OpenAPI). Each function
//! is used through `#[schema(schema_with = ...)]` on a field of that type.

use elsa_ai_abstractions::ModuleAttachmentKind;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{AnyOfBuilder, ArrayBuilder, Object, ObjectBuilder, Schema, Type};
use utoipa::openapi::{Array, SchemaFormat};

/// The wire names of the enums the API uses, as their serde representations.
pub(crate) mod names {
    pub const TOOL_MUTABILITY: &[&str] = &["ReadOnly", "Proposal", "Administrative"];
    pub const DANGER_LEVEL: &[&str] = &["Low", "Medium", "High", "Critical"];
    pub const TENANT_BEHAVIOR: &[&str] = &["TenantScoped", "HostScoped", "CrossTenantDenied"];
    pub const AUDIT_BEHAVIOR: &[&str] = &["None", "RecordInvocation", "RecordInvocationAndResult"];
    pub const TOOL_SOURCE: &[&str] = &["BuiltIn", "Module", "Mcp"];
    pub const AUDIT_OUTCOME: &[&str] = &["Success", "Failure", "Denied"];
    pub const MESSAGE_ROLE: &[&str] = &["User", "Assistant", "Tool"];
    pub const STREAM_EVENT_TYPE: &[&str] = &[
        "conversation.started",
        "assistant.delta",
        "assistant.completed",
        "tool.started",
        "tool.progress",
        "tool.completed",
        "tool.failed",
        "proposal.created",
        "proposal.updated",
        "conversation.completed",
        "conversation.failed",
    ];
}

fn string_enum(description: &str, values: &[&str]) -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(description))
        .enum_values(Some(values.iter().copied()))
        .build()
}

fn object(description: &str) -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(description))
        .build()
}

/// `ToolMutability`.
pub(crate) fn mutability() -> Object {
    string_enum(
        "Whether a tool only reads, drafts a proposal or changes the system.",
        names::TOOL_MUTABILITY,
    )
}

/// `DangerLevel`.
pub(crate) fn danger_level() -> Object {
    string_enum(
        "How much harm a misused tool could do.",
        names::DANGER_LEVEL,
    )
}

/// `TenantBehavior`.
pub(crate) fn tenant_behavior() -> Object {
    string_enum("How a tool relates to tenants.", names::TENANT_BEHAVIOR)
}

/// `AuditBehavior`.
pub(crate) fn audit_behavior() -> Object {
    string_enum(
        "What the audit log records of an invocation (denials always).",
        names::AUDIT_BEHAVIOR,
    )
}

/// `ToolSource`.
pub(crate) fn tool_source() -> Object {
    string_enum("Where a tool comes from.", names::TOOL_SOURCE)
}

/// `ProposalKind`.
pub(crate) fn proposal_kind() -> Object {
    let kinds: Vec<&str> = elsa_ai_abstractions::ProposalKind::ALL
        .iter()
        .map(|kind| kind.as_str())
        .collect();
    string_enum(
        "What a proposal does: write a definition (Create, Update) or act on instances \
         (Retry, Cancel, Restart) or a definition (Publish, Unpublish, Delete).",
        &kinds,
    )
}

/// `TargetResult`.
pub(crate) fn target_result() -> Object {
    let results: Vec<&str> = elsa_ai_abstractions::TargetResult::ALL
        .iter()
        .map(|result| result.as_str())
        .collect();
    string_enum("What applying an operation did to one target.", &results)
}

/// `ProposalStatus`.
pub(crate) fn proposal_status() -> Object {
    let states: Vec<&str> = elsa_ai_abstractions::ProposalStatus::ALL
        .iter()
        .map(|status| status.as_str())
        .collect();
    string_enum("The state of a proposal.", &states)
}

/// `AuditOutcome`.
pub(crate) fn audit_outcome() -> Object {
    string_enum("How an audited operation ended.", names::AUDIT_OUTCOME)
}

/// `MessageRole`.
pub(crate) fn message_role() -> Object {
    string_enum("Who wrote a message.", names::MESSAGE_ROLE)
}

/// `AiStreamEventType`.
pub(crate) fn stream_event_type() -> Object {
    string_enum(
        "The event type; also the SSE event name.",
        names::STREAM_EVENT_TYPE,
    )
}

/// `AttachmentKind`: a built-in kind, or the namespaced kind of a module a host registered.
pub(crate) fn attachment_kind() -> RefOr<Schema> {
    let builtin: Vec<&str> = elsa_ai_abstractions::AttachmentKind::ALL
        .iter()
        .map(|kind| kind.as_str())
        .collect();
    let kinds = AnyOfBuilder::new()
        .description(Some(
            "A kind of context attachment: a built-in kind, or a module's namespaced kind.",
        ))
        .item(string_enum("A built-in kind.", &builtin))
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some(
                    "A kind a module added (namespaced, such as acme.Ticket).",
                ))
                .pattern(Some(ModuleAttachmentKind::PATTERN)),
        )
        .build();
    RefOr::T(Schema::AnyOf(kinds))
}

/// `AttachmentKind` as a chat request may name it: the kinds, and Elsa Studio's `Activity`
/// for `ActivitySelection`.
pub(crate) fn attachment_kind_in_request() -> Object {
    let mut kinds: Vec<&str> = elsa_ai_abstractions::AttachmentKind::ALL
        .iter()
        .map(|kind| kind.as_str())
        .collect();
    kinds.push("Activity");
    string_enum(
        "A kind of context attachment (`Activity` is Elsa Studio's name for \
         `ActivitySelection`). A server whose host registered a module's context provider \
         also accepts that module's namespaced kind (such as `acme.Ticket`).",
        &kinds,
    )
}

/// The `AttachmentKind`s `GET /ai/attachments/search` looks for.
pub(crate) fn searchable_attachment_kind() -> Object {
    string_enum(
        "A kind of attachment that can be searched for.",
        &[
            elsa_ai_abstractions::AttachmentKind::WorkflowDefinition.as_str(),
            elsa_ai_abstractions::AttachmentKind::WorkflowInstance.as_str(),
        ],
    )
}

/// A list of `AttachmentKind`s.
pub(crate) fn attachment_kinds() -> Array {
    ArrayBuilder::new().items(attachment_kind()).build()
}

/// A list of permission names.
pub(crate) fn permissions() -> Array {
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some("A permission name such as `read:workflows`.")),
        )
        .build()
}

/// An RFC 3339 instant.
pub(crate) fn date_time() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::KnownFormat(
            utoipa::openapi::KnownFormat::DateTime,
        )))
        .build()
}

/// `Diagnostic` findings of draft validation.
pub(crate) fn diagnostics() -> Array {
    let diagnostic = ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(
            "One validation finding, located by activity id and JSON path.",
        ))
        .property(
            "severity",
            string_enum("How serious it is.", &["Error", "Warning", "Info"]),
        )
        .required("severity")
        .property(
            "code",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some("The rule, such as `unknown_activity_type`.")),
        )
        .required("code")
        .property("message", ObjectBuilder::new().schema_type(Type::String))
        .required("message")
        .property("activityId", ObjectBuilder::new().schema_type(Type::String))
        .property(
            "path",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some("JSON path into the definition.")),
        )
        .required("path");
    ArrayBuilder::new().items(diagnostic).build()
}

/// An Elsa 3 workflow definition, as Elsa serialises it.
pub(crate) fn workflow_definition() -> Object {
    object("An Elsa 3 workflow definition (Elsa's own JSON, unknown fields preserved).")
}

/// A graph diff between two definitions.
pub(crate) fn graph_diff() -> Object {
    object(
        "What changed between the baseline and the proposed definition (activities, inputs, \
         connections, variables, header, with counts), for review screens.",
    )
}

/// Free-form JSON.
pub(crate) fn any_json() -> Object {
    object("Free-form JSON.")
}

#[cfg(test)]
mod tests {
    use elsa_ai_abstractions::{
        AuditBehavior, AuditOutcome, DangerLevel, MessageRole, ProposalKind, TenantBehavior,
        ToolMutability, ToolSource,
    };
    use serde::de::DeserializeOwned;

    use super::names;

    fn all_parse<T: DeserializeOwned>(values: &[&str]) {
        for value in values {
            serde_json::from_value::<T>(serde_json::json!(value)).unwrap_or_else(|e| {
                panic!("'{value}' is not a {}: {e}", std::any::type_name::<T>())
            });
        }
    }

    #[test]
    fn documented_enum_values_are_the_wire_names() {
        all_parse::<ToolMutability>(names::TOOL_MUTABILITY);
        all_parse::<DangerLevel>(names::DANGER_LEVEL);
        all_parse::<TenantBehavior>(names::TENANT_BEHAVIOR);
        all_parse::<AuditBehavior>(names::AUDIT_BEHAVIOR);
        all_parse::<ToolSource>(names::TOOL_SOURCE);
        let kinds: Vec<&str> = ProposalKind::ALL.iter().map(|k| k.as_str()).collect();
        all_parse::<ProposalKind>(&kinds);
        all_parse::<AuditOutcome>(names::AUDIT_OUTCOME);
        all_parse::<MessageRole>(names::MESSAGE_ROLE);
        all_parse::<elsa_ai_abstractions::AiStreamEventType>(names::STREAM_EVENT_TYPE);
    }
}
