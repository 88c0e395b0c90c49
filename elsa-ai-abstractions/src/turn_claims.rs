//! Turn claims: which replica runs a conversation's turn, for how long, and who else is
//! watching it. The claim lives in the store every replica shares, so a conversation has one
//! running turn across all of them, and a turn whose replica died is found and closed.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use elsa_workflows::TenantId;
use serde::{Deserialize, Serialize};

use crate::{AiError, ConversationId};

/// A conversation claimed by one running turn on one replica, until `lease_until` unless the
/// replica renews the lease (its heartbeat).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiTurnClaim {
    /// The tenant of the conversation.
    pub tenant_id: TenantId,
    /// The claimed conversation.
    pub conversation_id: ConversationId,
    /// The turn holding the claim (unique per turn).
    pub turn_id: String,
    /// The replica (process) running the turn.
    pub replica_id: String,
    /// When the claim lapses unless renewed.
    pub lease_until: DateTime<Utc>,
    /// Until when a client of another replica was last reported attached to the turn's stream.
    pub attached_until: Option<DateTime<Utc>>,
}

/// A claim a replica still holds, as its heartbeat finds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AiHeldClaim {
    /// The turn holding the claim.
    pub turn_id: String,
    /// Whether a client (of any replica) asked for the turn to be cancelled.
    pub cancel_requested: bool,
}

/// The code of [`AiTurnClaims::claim`]'s refusal while another turn holds a live claim.
pub const TURN_IN_PROGRESS: &str = "turn_in_progress";
/// The code of [`AiTurnClaims::claim`]'s refusal when the claim in the way has lapsed: its
/// replica is gone, and its turn must be closed before the conversation is claimed again.
pub const TURN_CLAIM_LAPSED: &str = "turn_claim_lapsed";

/// The shared record of running turns (the durable stores implement it; one process alone
/// needs none). A claim ends when its turn's terminal event is journaled: a store that keeps
/// both deletes the claim in the transaction that appends the event, so whoever sees the
/// event may claim the conversation at once.
#[async_trait]
pub trait AiTurnClaims: Send + Sync {
    /// Claims the conversation for `claim`'s turn. 409 [`TURN_IN_PROGRESS`] while another
    /// turn's lease runs, 409 [`TURN_CLAIM_LAPSED`] when a lapsed claim is in the way (see
    /// [`take_over`](Self::take_over)).
    async fn claim(&self, claim: &AiTurnClaim, now: DateTime<Utc>) -> Result<(), AiError>;

    /// The conversation's claim, live or lapsed, if any.
    async fn current(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
    ) -> Result<Option<AiTurnClaim>, AiError>;

    /// The replica's heartbeat: extends the lease of each of its claims to `lease_until` and
    /// marks the claims of `watching` (conversations this replica's clients follow, whose
    /// turns run elsewhere) as watched until then. Returns the claims the replica still
    /// holds (a claim taken over after it lapsed is missing).
    async fn renew(
        &self,
        replica_id: &str,
        lease_until: DateTime<Utc>,
        watching: &[(TenantId, ConversationId)],
    ) -> Result<Vec<AiHeldClaim>, AiError>;

    /// Asks the replica running the conversation's turn to cancel it (a client of another
    /// replica asked): marks the live claim, which that replica's next heartbeat reads, and
    /// tells it at once where the store can. `false` when no live claim exists.
    async fn request_cancel(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
        now: DateTime<Utc>,
    ) -> Result<bool, AiError>;

    /// Deletes the turn's claim if it still holds it.
    async fn release(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
        turn_id: &str,
    ) -> Result<(), AiError>;

    /// Every claim whose lease ended before `now`, at most `limit`.
    async fn lapsed(&self, now: DateTime<Utc>, limit: usize) -> Result<Vec<AiTurnClaim>, AiError>;

    /// Replaces the lapsed claim `lapsed` by `by` (same conversation) if it is still there and
    /// still lapsed at `now`; of several replicas trying, exactly one gets `true`.
    async fn take_over(
        &self,
        lapsed: &AiTurnClaim,
        by: &AiTurnClaim,
        now: DateTime<Utc>,
    ) -> Result<bool, AiError>;
}
