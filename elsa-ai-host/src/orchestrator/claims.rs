//! Turn claims shared by replicas: the claim a turn takes before it streams, the heartbeat
//! that keeps this replica's claims alive, and the sweep that closes the turns of replicas
//! that died (`conversation.failed`, code `replica_lost`).
//!
//! A process alone (no [`AiTurnClaims`] configured) relies on its channels' turn slots; with
//! a shared store, the store's claim is what makes a conversation's turn unique across
//! replicas and restarts. The local slot is still taken first, so turns of one replica never
//! race to the store.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{
    AiAuditEvent, AiError, AiStreamEventType, AiTurnClaim, AiTurnClaims, AuditAction, AuditOutcome,
    ConversationId, TURN_CLAIM_LAPSED,
};
use elsa_workflows::TenantId;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::Core;
use super::turn::failed_data;
use crate::backoff::Backoff;

/// How long a claim lives without a heartbeat unless configured.
pub const DEFAULT_TURN_LEASE: Duration = Duration::from_secs(30);

/// The shared claims of an orchestrator, with this replica's identity and lease.
pub(crate) struct ReplicaClaims {
    pub store: Arc<dyn AiTurnClaims>,
    /// This process's id in the claims it takes (new at every start).
    pub replica_id: String,
    pub lease: Duration,
    /// This replica's running turns: their claim ids, and a token fired when another replica
    /// took a claim over (the turn is no longer this replica's to end).
    pub running: parking_lot::Mutex<HashMap<(TenantId, ConversationId), RunningClaim>>,
}

/// A claim held by one of this replica's running turns.
#[derive(Clone)]
pub(crate) struct RunningClaim {
    pub turn_id: String,
    pub lost: CancellationToken,
    /// The lease this replica last wrote for the claim (when it claimed, then at each
    /// renewal the store confirmed): no other replica takes the claim over before then.
    pub held_until: DateTime<Utc>,
}

impl ReplicaClaims {
    pub fn new(store: Arc<dyn AiTurnClaims>, lease: Duration) -> Self {
        Self {
            store,
            replica_id: uuid::Uuid::new_v4().to_string(),
            lease: lease.max(Duration::from_millis(300)),
            running: parking_lot::Mutex::default(),
        }
    }

    /// How often the heartbeat renews the leases and the sweep looks for lapsed claims:
    /// three times per lease, so a claim survives two missed beats.
    pub fn heartbeat(&self) -> Duration {
        self.lease / 3
    }

    fn claim_for(&self, core: &Core, tenant_id: &TenantId, id: &ConversationId) -> AiTurnClaim {
        AiTurnClaim {
            tenant_id: tenant_id.clone(),
            conversation_id: id.clone(),
            turn_id: uuid::Uuid::now_v7().to_string(),
            replica_id: self.replica_id.clone(),
            lease_until: core.clock.now() + self.lease,
            attached_until: None,
        }
    }
}

/// A claim taken for a turn that has not ended: dropped without [`ClaimGuard::ended`] (a turn
/// refused after it claimed), it is released in the background.
pub(crate) struct ClaimGuard {
    store: Arc<dyn AiTurnClaims>,
    claim: Option<AiTurnClaim>,
}

impl ClaimGuard {
    pub fn turn_id(&self) -> &str {
        self.claim.as_ref().map_or("", |c| c.turn_id.as_str())
    }

    /// The end of the lease the claim was taken with.
    pub fn lease_until(&self) -> Option<DateTime<Utc>> {
        self.claim.as_ref().map(|c| c.lease_until)
    }

    /// Releases the claim (a no-op when the terminal event's commit already did).
    pub async fn ended(mut self) {
        if let Some(claim) = self.claim.take() {
            release(self.store.clone(), claim).await;
        }
    }
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        if let Some(claim) = self.claim.take() {
            let store = self.store.clone();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(release(store, claim));
            }
        }
    }
}

/// Releases a claim. One that cannot be released now (the store is unreachable) is released
/// in the background as soon as it can be: this replica's heartbeat renews every claim it
/// holds, so a claim left behind would keep its conversation busy (resumed streams waiting,
/// new turns refused) for as long as the process runs.
async fn release(store: Arc<dyn AiTurnClaims>, claim: AiTurnClaim) {
    let Err(error) = try_release(store.as_ref(), &claim).await else {
        return;
    };
    tracing::warn!(code = error.code(), conversation = %claim.conversation_id, "a turn claim could not be released; trying again until it is");
    tokio::spawn(async move {
        let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(5));
        while backoff.wait().await {
            if try_release(store.as_ref(), &claim).await.is_ok() {
                tracing::info!(conversation = %claim.conversation_id, "the turn claim was released");
                return;
            }
        }
    });
}

async fn try_release(store: &dyn AiTurnClaims, claim: &AiTurnClaim) -> Result<(), AiError> {
    store
        .release(&claim.tenant_id, &claim.conversation_id, &claim.turn_id)
        .await
}

impl Core {
    /// Claims the conversation in the shared store (nothing to do without one): 409
    /// `turn_in_progress` while another replica's turn runs; a lapsed claim in the way is
    /// closed first (its turn ends with `replica_lost`).
    pub(super) async fn claim_turn(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
    ) -> Result<Option<ClaimGuard>, AiError> {
        let Some(claims) = &self.claims else {
            return Ok(None);
        };
        let claim = claims.claim_for(self, tenant_id, conversation_id);
        match claims.store.claim(&claim, self.clock.now()).await {
            Ok(()) => {}
            Err(error) if error.code() == TURN_CLAIM_LAPSED => {
                if let Some(lapsed) = claims.store.current(tenant_id, conversation_id).await? {
                    self.recover(claims, &lapsed).await?;
                }
                let claim = AiTurnClaim {
                    lease_until: self.clock.now() + claims.lease,
                    ..claim.clone()
                };
                claims.store.claim(&claim, self.clock.now()).await?;
            }
            Err(error) => return Err(error),
        }
        Ok(Some(ClaimGuard {
            store: claims.store.clone(),
            claim: Some(claim),
        }))
    }

    /// Whether a client of another replica follows the conversation's running turn.
    pub(super) async fn watched_elsewhere(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
    ) -> bool {
        let Some(claims) = &self.claims else {
            return false;
        };
        match claims.store.current(tenant_id, conversation_id).await {
            Ok(Some(claim)) => claim
                .attached_until
                .is_some_and(|until| until > self.clock.now()),
            Ok(None) => false,
            Err(error) => {
                tracing::warn!(
                    code = error.code(),
                    "cannot read whether another replica's client follows the turn"
                );
                false
            }
        }
    }

    /// Whether the turn (of `turn_id`) still holds its conversation's claim: a turn whose
    /// claim another replica took over must not end the conversation's turn a second time.
    ///
    /// Another replica takes a claim over only once its lease has passed (and a deletion
    /// waits for the turn to end), so while the lease this replica last wrote is ahead of
    /// the clock by more than a heartbeat (room for the replicas' clocks to differ), the
    /// claim is still this turn's without asking the store.
    pub(super) async fn still_holds(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
        turn_id: &str,
    ) -> bool {
        let Some(claims) = &self.claims else {
            return true;
        };
        let key = (tenant_id.clone(), conversation_id.clone());
        let margin =
            chrono::Duration::from_std(claims.heartbeat()).unwrap_or(chrono::Duration::MAX);
        let fresh = claims.running.lock().get(&key).is_some_and(|running| {
            running.turn_id == turn_id
                && !running.lost.is_cancelled()
                && self
                    .clock
                    .now()
                    .checked_add_signed(margin)
                    .is_some_and(|later| later < running.held_until)
        });
        if fresh {
            return true;
        }
        match claims.store.current(tenant_id, conversation_id).await {
            Ok(current) => current.is_some_and(|claim| claim.turn_id == turn_id),
            // Cannot tell: ending the turn is what a client waits for.
            Err(_) => true,
        }
    }

    /// Takes a lapsed claim over and closes its turn: `turn.failed` audited and
    /// `conversation.failed` (code `replica_lost`) journaled after whatever the lost replica
    /// wrote, which also ends the claim. Nothing happens when another replica took it first.
    async fn recover(&self, claims: &ReplicaClaims, lapsed: &AiTurnClaim) -> Result<(), AiError> {
        let by = claims.claim_for(self, &lapsed.tenant_id, &lapsed.conversation_id);
        if !claims
            .store
            .take_over(lapsed, &by, self.clock.now())
            .await?
        {
            return Ok(());
        }
        let (tenant_id, conversation_id) = (&lapsed.tenant_id, &lapsed.conversation_id);
        let error = AiError::unavailable(
            "replica_lost",
            "the server running this turn stopped before the turn ended",
        );
        let owner = self
            .conversations
            .find(conversation_id, tenant_id)
            .await?
            .map_or_else(|| "system:turn-recovery".to_owned(), |c| c.owner_id);
        let mut audit = AiAuditEvent::new(
            tenant_id.clone(),
            owner,
            AuditAction::TURN_FAILED,
            AuditOutcome::Failure,
            "turn failed: replica_lost",
        );
        audit.timestamp = self.clock.now();
        audit.conversation_id = Some(conversation_id.clone());
        audit.details = json!({"error": error.to_body(), "replica": lapsed.replica_id}).into();
        self.record(audit).await?;
        let channel = self.hub.channel(tenant_id, conversation_id);
        channel
            .append_reloaded(
                AiStreamEventType::ConversationFailed,
                failed_data(conversation_id, &error),
            )
            .await?;
        self.governor.metrics().turns.ended("failed");
        tracing::warn!(
            conversation = %conversation_id,
            replica = %lapsed.replica_id,
            "closed a turn whose replica stopped renewing its claim"
        );
        release(claims.store.clone(), by).await;
        Ok(())
    }

    /// Cancels this replica's turn of the conversation if it still runs under `turn_id`'s
    /// claim (a cancel asked through another replica, or through the store).
    pub(super) fn cancel_claimed(
        &self,
        tenant_id: &TenantId,
        conversation_id: &ConversationId,
        turn_id: &str,
    ) {
        let Some(claims) = &self.claims else {
            return;
        };
        let key = (tenant_id.clone(), conversation_id.clone());
        let running = claims
            .running
            .lock()
            .get(&key)
            .is_some_and(|c| c.turn_id == turn_id);
        if let Some(stop) = running
            .then(|| self.stops.lock().get(&key).cloned())
            .flatten()
        {
            stop.cancel();
        }
    }

    /// One beat: renews this replica's claims (and marks the turns its clients follow as
    /// watched), fires the lost token of turns whose claims were taken over, cancels those
    /// a client asked through another replica to cancel, then closes the turns of lapsed
    /// claims.
    pub(super) async fn beat(&self, claims: &ReplicaClaims) {
        let watching = self.hub.watched();
        let running: Vec<((TenantId, ConversationId), RunningClaim)> = claims
            .running
            .lock()
            .iter()
            .map(|(key, claim)| (key.clone(), claim.clone()))
            .collect();
        if !running.is_empty() || !watching.is_empty() {
            let until = self.clock.now() + claims.lease;
            match claims
                .store
                .renew(&claims.replica_id, until, &watching)
                .await
            {
                Ok(held) => {
                    let cancelled: HashSet<&str> = held
                        .iter()
                        .filter(|h| h.cancel_requested)
                        .map(|h| h.turn_id.as_str())
                        .collect();
                    let held: HashSet<&str> = held.iter().map(|h| h.turn_id.as_str()).collect();
                    for (key, claim) in running {
                        // Only a turn still running under the same claim can have lost it.
                        let current = claims
                            .running
                            .lock()
                            .get(&key)
                            .is_some_and(|c| c.turn_id == claim.turn_id);
                        if !held.contains(claim.turn_id.as_str()) {
                            if current {
                                tracing::warn!(conversation = %key.1, "another replica took this turn's claim over");
                                claim.lost.cancel();
                            }
                            continue;
                        }
                        if let Some(running) = claims.running.lock().get_mut(&key)
                            && running.turn_id == claim.turn_id
                        {
                            running.held_until = until;
                        }
                        if cancelled.contains(claim.turn_id.as_str()) {
                            self.cancel_claimed(&key.0, &key.1, &claim.turn_id);
                        }
                    }
                }
                Err(error) => {
                    tracing::warn!(code = error.code(), "turn claims could not be renewed");
                }
            }
        }
        match claims.store.lapsed(self.clock.now(), 64).await {
            Ok(lapsed) => {
                for claim in lapsed
                    .iter()
                    .filter(|claim| claim.replica_id != claims.replica_id)
                {
                    if let Err(error) = self.recover(claims, claim).await {
                        tracing::warn!(code = error.code(), conversation = %claim.conversation_id, "a lapsed turn could not be closed; trying again");
                    }
                }
            }
            Err(error) => tracing::warn!(code = error.code(), "lapsed turn claims unreadable"),
        }
    }
}

/// Runs the heartbeat and the sweep until `stop` fires (the first beat at once, so a
/// restarted process closes what its predecessor left as soon as the lease allows).
pub(super) async fn keep(core: Arc<Core>, stop: CancellationToken) {
    let Some(claims) = &core.claims else {
        return;
    };
    let mut ticks = tokio::time::interval(claims.heartbeat());
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = ticks.tick() => core.beat(claims).await,
        }
    }
}
