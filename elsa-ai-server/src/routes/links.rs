//! OpenAPI links: which response supplies the ids another operation takes (the conversation
//! a chat started, the proposals of the inbox, the tools of the enablement list), so that
//! clients and stateful API testers can follow the API from one call to the next.

use utoipa::openapi::RefOr;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::path::Operation;

/// One link: from the 200 response of `from` to the operation `to`, with its parameter taken
/// from the response by a runtime expression.
struct LinkSpec {
    from: &'static str,
    name: &'static str,
    to: &'static str,
    parameter: &'static str,
    expression: &'static str,
    description: &'static str,
}

const fn link(
    from: &'static str,
    name: &'static str,
    to: &'static str,
    (parameter, expression): (&'static str, &'static str),
    description: &'static str,
) -> LinkSpec {
    LinkSpec {
        from,
        name,
        to,
        parameter,
        expression,
        description,
    }
}

const STARTED: (&str, &str) = ("conversationId", "$response.header.x-conversation-id");
const FIRST_CONVERSATION: (&str, &str) = ("conversationId", "$response.body#/items/0/id");
const THIS_CONVERSATION: (&str, &str) = ("conversationId", "$response.body#/id");
const FIRST_PROPOSAL: (&str, &str) = ("proposalId", "$response.body#/items/0/id");
const THIS_PROPOSAL: (&str, &str) = ("proposalId", "$response.body#/id");
const FIRST_TOOL: (&str, &str) = ("toolName", "$response.body#/tools/0/name");

/// Every link of the document, by operation id.
const LINKS: &[LinkSpec] = &[
    link(
        "chat",
        "ResumeStream",
        "resume",
        STARTED,
        "Resume the stream of the conversation this turn runs in.",
    ),
    link(
        "chat",
        "GetConversation",
        "get_conversation",
        STARTED,
        "The conversation this turn runs in.",
    ),
    link("chat", "CancelTurn", "cancel", STARTED, "Stop this turn."),
    link(
        "chat",
        "ConversationProposals",
        "list_proposals",
        STARTED,
        "The proposals this conversation drafted.",
    ),
    link(
        "list_conversations",
        "GetConversation",
        "get_conversation",
        FIRST_CONVERSATION,
        "The first conversation listed.",
    ),
    link(
        "list_conversations",
        "ResumeStream",
        "resume",
        FIRST_CONVERSATION,
        "The stream of the first conversation listed.",
    ),
    link(
        "list_conversations",
        "ConversationProposals",
        "list_proposals",
        FIRST_CONVERSATION,
        "The proposals of the first conversation listed.",
    ),
    link(
        "get_conversation",
        "ResumeStream",
        "resume",
        THIS_CONVERSATION,
        "This conversation's stream.",
    ),
    link(
        "get_conversation",
        "CancelTurn",
        "cancel",
        THIS_CONVERSATION,
        "Stop this conversation's running turn.",
    ),
    link(
        "list_proposals",
        "GetProposal",
        "get_proposal",
        FIRST_PROPOSAL,
        "The first proposal listed.",
    ),
    link(
        "list_proposals",
        "ApproveProposal",
        "approve",
        FIRST_PROPOSAL,
        "Approve the first proposal listed.",
    ),
    link(
        "list_proposals",
        "RejectProposal",
        "reject",
        FIRST_PROPOSAL,
        "Reject the first proposal listed.",
    ),
    link(
        "list_proposals",
        "ApplyProposal",
        "apply",
        FIRST_PROPOSAL,
        "Apply the first proposal listed.",
    ),
    link(
        "get_proposal",
        "ApproveProposal",
        "approve",
        THIS_PROPOSAL,
        "Approve this proposal.",
    ),
    link(
        "get_proposal",
        "RejectProposal",
        "reject",
        THIS_PROPOSAL,
        "Reject this proposal.",
    ),
    link(
        "get_proposal",
        "ApplyProposal",
        "apply",
        THIS_PROPOSAL,
        "Apply this proposal.",
    ),
    link(
        "approve",
        "ApplyProposal",
        "apply",
        THIS_PROPOSAL,
        "Apply the proposal just approved.",
    ),
    link(
        "approve",
        "RejectProposal",
        "reject",
        THIS_PROPOSAL,
        "Reject the proposal after all.",
    ),
    link(
        "approve",
        "GetProposal",
        "get_proposal",
        THIS_PROPOSAL,
        "The proposal as approved.",
    ),
    link(
        "reject",
        "GetProposal",
        "get_proposal",
        THIS_PROPOSAL,
        "The proposal as rejected.",
    ),
    link(
        "apply",
        "GetProposal",
        "get_proposal",
        THIS_PROPOSAL,
        "The proposal as applied.",
    ),
    link(
        "list_enablement",
        "ChangeEnablement",
        "change_enablement",
        FIRST_TOOL,
        "Turn the first tool listed on or off.",
    ),
];

/// Adds the [`LINKS`] that start at `operation` to its 200 response.
pub(super) fn add_to(operation: &mut Operation) {
    let Some(id) = operation.operation_id.as_deref() else {
        return;
    };
    let Some(RefOr::T(ok)) = operation.responses.responses.get_mut("200") else {
        return;
    };
    for spec in LINKS.iter().filter(|spec| spec.from == id) {
        let link = LinkBuilder::new()
            .operation_id(spec.to)
            .parameter(spec.parameter, spec.expression)
            .description(spec.description)
            .build();
        ok.links.insert(spec.name.to_owned(), RefOr::T(link));
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_link_joins_two_operations_of_the_document_through_a_parameter_they_have() {
        let document = crate::openapi();
        let json = serde_json::to_value(&document).unwrap();
        let mut operations = std::collections::HashMap::new();
        for item in json["paths"].as_object().unwrap().values() {
            for operation in item.as_object().unwrap().values() {
                if let Some(id) = operation["operationId"].as_str() {
                    operations.insert(id.to_owned(), operation.clone());
                }
            }
        }
        let mut seen = HashSet::new();
        for spec in LINKS {
            let from = &operations[spec.from];
            let to = operations
                .get(spec.to)
                .unwrap_or_else(|| panic!("no operation {}", spec.to));
            let link = &from["responses"]["200"]["links"][spec.name];
            assert_eq!(link["operationId"], spec.to, "{} {}", spec.from, spec.name);
            assert_eq!(link["parameters"][spec.parameter], spec.expression);
            let takes = to["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|p| p["name"] == spec.parameter);
            assert!(takes, "{} takes no parameter {}", spec.to, spec.parameter);
            assert!(
                seen.insert((spec.from, spec.name)),
                "{} {} twice",
                spec.from,
                spec.name
            );
        }
    }
}
