//! What the handler declarations cannot say in the generated OpenAPI document, added to it
//! once the routes are collected: the links between operations, the shape of each
//! Server-Sent Event, and parameters utoipa cannot mark required.

use serde_json::json;
use utoipa::openapi::path::Operation;
use utoipa::openapi::schema::{AllOfBuilder, AnyOfBuilder, ObjectBuilder, Schema, Type};
use utoipa::openapi::{OpenApi, RefOr};

use super::links;

/// The media type of the streamed responses.
const EVENT_STREAM: &str = "text/event-stream";

/// Parameters whose schema is written by `schema_with`, which makes utoipa drop `required`:
/// (operation id, parameter name).
const REQUIRED_PARAMETERS: &[(&str, &str)] = &[("search_attachments", "kind")];

/// Completes `document`: links, event shapes, required parameters, and the rule on an
/// attachment's `referenceId`.
pub(super) fn complete(document: &mut OpenApi) {
    if let Some(components) = &mut document.components
        && let Some(attachment) = components.schemas.get_mut("AttachmentBody")
    {
        require_references(attachment);
    }
    for item in document.paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ];
        for operation in operations.into_iter().flatten() {
            links::add_to(operation);
            describe_events(operation);
            require_parameters(operation);
        }
    }
}

/// A streamed response documents its events' JSON as its schema; a Server-Sent Event is an
/// envelope of text fields, so the schema becomes the envelope: `event` is the type, `id`
/// the sequence, and `data` a string holding that JSON (`contentMediaType` and
/// `contentSchema`, as JSON Schema describes encoded content).
fn describe_events(operation: &mut Operation) {
    for response in operation.responses.responses.values_mut() {
        let RefOr::T(response) = response else {
            continue;
        };
        let Some(RefOr::T(content)) = response.content.get_mut(EVENT_STREAM) else {
            continue;
        };
        let Some(payload) = content.schema.take() else {
            continue;
        };
        let envelope = json!({
            "type": "object",
            "description": "One Server-Sent Event: `event` is the event type, `id` its \
                sequence number and `data` the JSON event.",
            "required": ["event", "id", "data"],
            "properties": {
                "event": { "type": "string", "enum": crate::schema::names::STREAM_EVENT_TYPE },
                "id": { "type": "string", "pattern": "^[0-9]+$" },
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": payload,
                },
            },
        });
        content.schema = serde_json::from_value::<Schema>(envelope)
            .ok()
            .map(RefOr::T);
    }
}

/// An attachment names what it references (a non-blank `referenceId`), except a `TimeRange`
/// and a `DiagnosticsScope` that covers the caller's whole tenant (400 `invalid_attachment`),
/// and an activity selection names its activity (a non-blank `activityId`, 400
/// `missing_activity_id`): the object schema and those rules, as `allOf`.
fn require_references(attachment: &mut RefOr<Schema>) {
    let unreferenced = [
        elsa_ai_abstractions::AttachmentKind::TimeRange.as_str(),
        elsa_ai_abstractions::AttachmentKind::DiagnosticsScope.as_str(),
    ];
    let not_referencing = ObjectBuilder::new().property(
        "kind",
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(unreferenced)),
    );
    let referencing = ObjectBuilder::new().required("referenceId").property(
        "referenceId",
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(r"\S")),
    );
    let rule = AnyOfBuilder::new().item(not_referencing).item(referencing);
    let selection = [
        elsa_ai_abstractions::AttachmentKind::ActivitySelection.as_str(),
        "Activity",
    ];
    let others: Vec<&str> = elsa_ai_abstractions::AttachmentKind::ALL
        .iter()
        .map(|kind| kind.as_str())
        .filter(|kind| !selection.contains(kind))
        .collect();
    let not_selecting = ObjectBuilder::new().property(
        "kind",
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(others)),
    );
    let selecting = ObjectBuilder::new().required("activityId").property(
        "activityId",
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(r"\S")),
    );
    let selection_rule = AnyOfBuilder::new().item(not_selecting).item(selecting);
    let combined = AllOfBuilder::new()
        .item(attachment.clone())
        .item(rule)
        .item(selection_rule);
    *attachment = RefOr::T(Schema::AllOf(combined.build()));
}

fn require_parameters(operation: &mut Operation) {
    let Some(id) = operation.operation_id.as_deref() else {
        return;
    };
    let names: Vec<&str> = REQUIRED_PARAMETERS
        .iter()
        .filter(|(operation, _)| *operation == id)
        .map(|(_, name)| *name)
        .collect();
    for parameter in operation.parameters.iter_mut().flatten() {
        let RefOr::T(parameter) = parameter else {
            continue;
        };
        if names.contains(&parameter.name.as_str()) {
            parameter.required = utoipa::openapi::Required::True;
        }
    }
}

#[cfg(test)]
mod tests {
    fn document() -> serde_json::Value {
        serde_json::to_value(crate::openapi()).unwrap()
    }

    #[test]
    fn streamed_responses_describe_the_event_envelope_and_the_json_it_carries() {
        let document = document();
        for (path, method) in [
            ("/ai/chat", "post"),
            ("/ai/chat/{conversationId}/events", "get"),
        ] {
            let schema = &document["paths"][path][method]["responses"]["200"]["content"]["text/event-stream"]
                ["schema"];
            assert_eq!(
                schema["required"],
                serde_json::json!(["event", "id", "data"]),
                "{path}"
            );
            let data = &schema["properties"]["data"];
            assert_eq!(data["contentMediaType"], "application/json", "{path}");
            assert_eq!(
                data["contentSchema"]["$ref"], "#/components/schemas/StreamEventView",
                "{path}"
            );
        }
    }

    #[test]
    fn the_kind_of_an_attachment_search_is_required() {
        let document = document();
        let kind = document["paths"]["/ai/attachments/search"]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "kind")
            .unwrap()
            .clone();
        assert_eq!(kind["required"], true);
        assert_eq!(
            kind["schema"]["enum"],
            serde_json::json!(["WorkflowDefinition", "WorkflowInstance"])
        );
    }
}
