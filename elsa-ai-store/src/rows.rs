//! The row shapes both backends write and read: every domain object as the columns the
//! queries filter on plus, where the object is rich, its JSON document.
//!
//! Encoding happens in the caller's task (so that the audit writer only writes), and every
//! conversion that can fail returns a typed [`AiError`] instead of writing something partial.

use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiAuditEvent, AiConversation, AiError, AiMessage, AiProposal, AiSessionHandle, AiStreamEvent,
    AiStreamEventType, AiTurnClaim, AuditOutcome, ConversationId, MessageRole, ToolEnablement,
};
use elsa_workflows::TenantId;

use crate::error::corrupt;

/// Nanoseconds since the Unix epoch: the exact on-disk form of every timestamp.
pub(crate) fn to_nanos(at: DateTime<Utc>, what: &str) -> Result<i64, AiError> {
    at.timestamp_nanos_opt().ok_or_else(|| {
        AiError::bad_request(
            "timestamp_out_of_range",
            format!("the {what} timestamp {at} is outside the storable range (1677 to 2262)"),
        )
    })
}

/// A query bound in nanoseconds, clamped to the storable range (a bound beyond it still
/// includes or excludes everything stored, as it would unclamped).
pub(crate) fn clamp_nanos(at: DateTime<Utc>) -> i64 {
    at.timestamp_nanos_opt().unwrap_or(if at.timestamp() < 0 {
        i64::MIN
    } else {
        i64::MAX
    })
}

/// The timestamp stored as `nanos`.
pub(crate) fn from_nanos(nanos: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_nanos(nanos)
}

/// A count, offset or limit as the signed integer SQL wants (saturating: no store holds
/// `i64::MAX` rows).
pub(crate) fn to_sql_count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A count read back from SQL.
pub(crate) fn from_sql_count(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
}

/// A revision or sequence as stored; one beyond `i64::MAX` is refused, never wrapped.
pub(crate) fn to_sql_counter(n: u64, what: &str) -> Result<i64, AiError> {
    i64::try_from(n).map_err(|_| {
        AiError::bad_request(
            "counter_out_of_range",
            format!("the {what} {n} is beyond the storable range"),
        )
    })
}

/// The serialised name of an outcome, as the `outcome` column holds it.
pub(crate) fn outcome_name(outcome: AuditOutcome) -> &'static str {
    outcome.as_str()
}

/// The serialised name of a message role.
pub(crate) fn role_name(role: MessageRole) -> &'static str {
    role.as_str()
}

/// The message role stored as `name`.
pub(crate) fn parse_role(name: &str) -> Result<MessageRole, AiError> {
    match name {
        "User" => Ok(MessageRole::User),
        "Assistant" => Ok(MessageRole::Assistant),
        "Tool" => Ok(MessageRole::Tool),
        other => Err(corrupt("message", format!("unknown role '{other}'"))),
    }
}

/// The key of an enablement decision's scope: `''` for all agents, `agent:<name>` for one,
/// so that the two never collide (not even for an agent named `''`).
pub(crate) fn agent_key(agent: Option<&str>) -> String {
    agent.map_or_else(String::new, |agent| format!("agent:{agent}"))
}

fn to_json<T: serde::Serialize>(value: &T, what: &str) -> Result<String, AiError> {
    serde_json::to_string(value).map_err(|error| unserialisable(what, &error))
}

fn unserialisable(what: &str, error: &serde_json::Error) -> AiError {
    AiError::bad_request(
        "unserialisable_document",
        format!("the {what} cannot be serialised: {error}"),
    )
}

/// A provider session handle as `conversations.provider_session` stores it.
pub(crate) fn encode_session(session: &AiSessionHandle) -> Result<String, AiError> {
    to_json(session, "provider session")
}

/// The provider session a conversation row holds, if any.
pub(crate) fn decode_session(stored: Option<String>) -> Result<Option<AiSessionHandle>, AiError> {
    stored
        .map(|json| serde_json::from_str(&json).map_err(|e| corrupt("provider session", e)))
        .transpose()
}

/// A proposal as the `proposals` table stores it.
#[derive(Debug)]
pub(crate) struct ProposalRow {
    pub id: String,
    pub tenant_id: String,
    pub conversation_id: Option<String>,
    pub definition_id: String,
    pub status: &'static str,
    pub created_by: String,
    pub created_at_ns: i64,
    pub revision: i64,
    pub body: String,
}

impl ProposalRow {
    /// The row of a proposal, at the revision it carries.
    pub fn new(proposal: &AiProposal) -> Result<Self, AiError> {
        Ok(Self {
            id: proposal.id.as_str().to_owned(),
            tenant_id: proposal.tenant_id.as_str().to_owned(),
            conversation_id: proposal
                .conversation_id
                .as_ref()
                .map(|c| c.as_str().to_owned()),
            definition_id: proposal.definition_id().to_owned(),
            status: proposal.status.as_str(),
            created_by: proposal.created_by.clone(),
            created_at_ns: to_nanos(proposal.created_at, "proposal creation")?,
            revision: to_sql_counter(proposal.revision, "proposal revision")?,
            body: to_json(proposal, "proposal")?,
        })
    }

    /// The row that replaces the proposal stored at `expected_revision`. The caller hands
    /// over the next revision (`expected_revision + 1`); anything else is a caller bug that
    /// would defeat the compare-and-set, refused before anything is written.
    pub fn successor(proposal: &AiProposal, expected_revision: u64) -> Result<Self, AiError> {
        if Some(proposal.revision) != expected_revision.checked_add(1) {
            return Err(AiError::internal(
                "invalid_revision",
                format!(
                    "an update from revision {expected_revision} must carry revision {}, not {}",
                    expected_revision.saturating_add(1),
                    proposal.revision
                ),
            ));
        }
        Self::new(proposal)
    }
}

/// A stored proposal; the `revision` column is authoritative.
pub(crate) fn decode_proposal(revision: i64, body: &str) -> Result<AiProposal, AiError> {
    let mut proposal: AiProposal =
        serde_json::from_str(body).map_err(|error| corrupt("proposal", error))?;
    proposal.revision =
        u64::try_from(revision).map_err(|_| corrupt("proposal", "negative revision"))?;
    Ok(proposal)
}

/// An audit record as the `audit_events` table stores it.
#[derive(Debug)]
pub(crate) struct AuditRow {
    pub id: String,
    pub tenant_id: String,
    pub occurred_at_ns: i64,
    pub actor_id: String,
    pub action: String,
    pub outcome: &'static str,
    pub conversation_id: Option<String>,
    pub proposal_id: Option<String>,
    pub tool_name: Option<String>,
    pub trace_id: Option<String>,
    pub body: String,
}

impl AuditRow {
    /// The row of `event`.
    pub fn new(event: &AiAuditEvent) -> Result<Self, AiError> {
        Ok(Self {
            id: event.id.as_str().to_owned(),
            tenant_id: event.tenant_id.as_str().to_owned(),
            occurred_at_ns: to_nanos(event.timestamp, "audit event")?,
            actor_id: event.actor_id.clone(),
            action: event.action.as_str().to_owned(),
            outcome: outcome_name(event.outcome),
            conversation_id: event
                .conversation_id
                .as_ref()
                .map(|c| c.as_str().to_owned()),
            proposal_id: event.proposal_id.as_ref().map(|p| p.as_str().to_owned()),
            tool_name: event.tool_name.as_deref().map(str::to_owned),
            trace_id: event.trace_id.clone(),
            body: to_json(event, "audit event")?,
        })
    }
}

/// A stored audit record.
pub(crate) fn decode_audit_event(body: &str) -> Result<AiAuditEvent, AiError> {
    serde_json::from_str(body).map_err(|error| corrupt("audit event", error))
}

/// A stream event as the `stream_events` table stores it, keyed by (tenant, conversation,
/// sequence).
#[derive(Debug)]
pub(crate) struct StreamRow {
    pub tenant_id: String,
    pub conversation_id: String,
    pub sequence: i64,
    pub event_type: &'static str,
    pub occurred_at_ns: i64,
    pub body: String,
}

impl StreamRow {
    /// The row of `event` in the tenant's journal.
    pub fn new(tenant_id: &TenantId, event: &AiStreamEvent) -> Result<Self, AiError> {
        Ok(Self {
            tenant_id: tenant_id.as_str().to_owned(),
            conversation_id: event.conversation_id.as_str().to_owned(),
            sequence: to_sql_counter(event.sequence, "stream sequence")?,
            event_type: event.event_type.as_str(),
            occurred_at_ns: to_nanos(event.timestamp, "stream event")?,
            // The event's own encoding: its payload's text is shared with every subscriber.
            body: event
                .to_json()
                .map_err(|error| unserialisable("stream event", &error))?,
        })
    }
}

/// A stored stream event.
pub(crate) fn decode_stream_event(body: &str) -> Result<AiStreamEvent, AiError> {
    serde_json::from_str(body).map_err(|error| corrupt("stream event", error))
}

/// A `conversations` row: id, tenant, owner, agent, title, created and updated (ns), and the
/// conversation's own retention in days.
pub(crate) type ConversationRow = (
    String,
    String,
    String,
    String,
    String,
    i64,
    i64,
    Option<i64>,
);

/// Nanoseconds in a day, for the retention sweep's arithmetic in SQL.
pub(crate) const NANOS_PER_DAY: i64 = 86_400_000_000_000;

/// The conversation stored as `row`, with `messages`.
pub(crate) fn conversation_from_row(
    row: ConversationRow,
    messages: Vec<AiMessage>,
) -> AiConversation {
    let (id, tenant_id, owner_id, agent, title, created_at_ns, updated_at_ns, retain_days) = row;
    AiConversation {
        id: ConversationId::new(id),
        tenant_id: TenantId::new(tenant_id),
        owner_id,
        agent,
        title,
        created_at: from_nanos(created_at_ns),
        updated_at: from_nanos(updated_at_ns),
        messages,
        retain_days: retain_days.and_then(|days| u32::try_from(days).ok()),
    }
}

/// A `tool_enablements` row: tenant, tool, agent, enabled, changed by and at (ns).
pub(crate) type EnablementRow = (String, String, Option<String>, bool, String, i64);

/// The decision stored as `row`.
pub(crate) fn enablement_from_row(row: EnablementRow) -> ToolEnablement {
    let (tenant_id, tool_name, agent, enabled, changed_by, changed_at_ns) = row;
    ToolEnablement {
        tenant_id: TenantId::new(tenant_id),
        tool_name,
        agent,
        enabled,
        changed_by,
        changed_at: from_nanos(changed_at_ns),
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn nanosecond_timestamps_round_trip_exactly() {
        let at = Utc.timestamp_opt(1_700_000_000, 123_456_789).unwrap();
        assert_eq!(from_nanos(to_nanos(at, "x").unwrap()), at);
    }

    #[test]
    fn timestamps_beyond_the_range_are_refused_on_write_and_clamped_in_queries() {
        let far = Utc.with_ymd_and_hms(2500, 1, 1, 0, 0, 0).unwrap();
        let error = to_nanos(far, "audit event").unwrap_err();
        assert_eq!(
            (error.status(), error.code()),
            (400, "timestamp_out_of_range")
        );
        assert_eq!(clamp_nanos(far), i64::MAX);
        let early = Utc.with_ymd_and_hms(1500, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(clamp_nanos(early), i64::MIN);
    }

    #[test]
    fn agent_keys_never_collide() {
        assert_ne!(agent_key(None), agent_key(Some("")));
        assert_eq!(agent_key(Some("workflow-author")), "agent:workflow-author");
    }

    #[test]
    fn counters_beyond_i64_are_refused() {
        assert_eq!(to_sql_counter(7, "x").unwrap(), 7);
        assert_eq!(
            to_sql_counter(u64::MAX, "stream sequence")
                .unwrap_err()
                .code(),
            "counter_out_of_range"
        );
    }
}

/// A turn claim as it is inserted: the claim's columns and the instant it is made (what
/// decides whether a claim in the way has lapsed).
#[derive(Debug)]
pub(crate) struct ClaimRow {
    pub tenant_id: String,
    pub conversation_id: String,
    pub turn_id: String,
    pub replica_id: String,
    pub lease_until_ns: i64,
    pub now_ns: i64,
}

impl ClaimRow {
    pub fn new(claim: &AiTurnClaim, now: DateTime<Utc>) -> Result<Self, AiError> {
        Ok(Self {
            tenant_id: claim.tenant_id.as_str().to_owned(),
            conversation_id: claim.conversation_id.as_str().to_owned(),
            turn_id: claim.turn_id.clone(),
            replica_id: claim.replica_id.clone(),
            lease_until_ns: to_nanos(claim.lease_until, "turn lease")?,
            now_ns: to_nanos(now, "turn claim")?,
        })
    }
}

/// A `turn_claims` row: tenant, conversation, turn, replica, lease end and attached-until
/// (ns).
pub(crate) type TurnClaimRow = (String, String, String, String, i64, Option<i64>);

/// The claim a `turn_claims` row holds.
pub(crate) fn claim_from_row(row: TurnClaimRow) -> AiTurnClaim {
    let (tenant_id, conversation_id, turn_id, replica_id, lease_until, attached_until) = row;
    AiTurnClaim {
        tenant_id: TenantId::new(tenant_id),
        conversation_id: ConversationId::new(conversation_id),
        turn_id,
        replica_id,
        lease_until: from_nanos(lease_until),
        attached_until: attached_until.map(from_nanos),
    }
}

/// Whether a journal row of `event_type` ends a turn (and so its claim).
pub(crate) fn is_terminal(event_type: &str) -> bool {
    event_type == AiStreamEventType::ConversationCompleted.as_str()
        || event_type == AiStreamEventType::ConversationFailed.as_str()
}
