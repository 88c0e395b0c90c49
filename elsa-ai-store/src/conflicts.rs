//! The refusals both backends report, worded once.

use elsa_ai_abstractions::{AiError, AiStreamEvent, ConversationId, ProposalId};

/// `save` of a proposal whose id exists (in any tenant).
pub(crate) fn proposal_exists(id: &ProposalId) -> AiError {
    AiError::conflict("proposal_exists", format!("proposal '{id}' already exists"))
}

/// A conditional `update` that matched nothing: 404 when the proposal does not exist in the
/// tenant, otherwise 409 naming the state and revision it is in now.
pub(crate) fn proposal_update_refused(
    id: &ProposalId,
    expected_revision: u64,
    current: Option<(String, i64)>,
) -> AiError {
    match current {
        None => AiError::NotFound {
            code: "proposal_not_found".into(),
            message: format!("proposal '{id}' not found"),
        },
        Some((status, revision)) => AiError::Conflict {
            code: "proposal_revision_conflict".into(),
            message: format!(
                "proposal '{id}' changed concurrently (revision {revision} is not \
                 {expected_revision})"
            ),
            current_state: Some(status),
        },
    }
}

/// `create` of a conversation whose id exists.
pub(crate) fn conversation_exists(id: &ConversationId) -> AiError {
    AiError::conflict(
        "conversation_exists",
        format!("conversation '{id}' already exists"),
    )
}

/// A conversation that does not exist in the tenant (worded like the host's ownership check).
pub(crate) fn conversation_not_found(id: &ConversationId) -> AiError {
    AiError::NotFound {
        code: "conversation_not_found".into(),
        message: format!("conversation '{id}' not found"),
    }
}

/// A journal append whose sequence is not exactly one after `last`.
pub(crate) fn sequence(event: &AiStreamEvent, last: u64) -> AiError {
    sequence_of(event.conversation_id.as_str(), event.sequence, last)
}

/// A journal append of `sequence` to `conversation_id` whose last sequence is `last`.
pub(crate) fn sequence_of(conversation_id: &str, sequence: u64, last: u64) -> AiError {
    AiError::conflict(
        "sequence_conflict",
        format!(
            "conversation '{conversation_id}' expects stream sequence {}, got {sequence}",
            last.saturating_add(1),
        ),
    )
}

/// A claim refused because `current` (a claim whose lease ends at `lease_until_ns`) is in the
/// way at `now_ns`: 409 `turn_in_progress` while it runs, 409 `turn_claim_lapsed` after.
pub(crate) fn turn_claimed(conversation_id: &str, lease_until_ns: i64, now_ns: i64) -> AiError {
    if lease_until_ns < now_ns {
        AiError::conflict(
            elsa_ai_abstractions::TURN_CLAIM_LAPSED,
            format!(
                "conversation '{conversation_id}' is claimed by a turn whose replica stopped \
                 renewing it"
            ),
        )
    } else {
        AiError::conflict(
            elsa_ai_abstractions::TURN_IN_PROGRESS,
            format!(
                "conversation '{conversation_id}' has a turn in progress; wait for it to finish"
            ),
        )
    }
}
