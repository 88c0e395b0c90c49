//! Per-conversation channels: the sequencer that journals every event before anyone sees
//! it, the live broadcast, the running-turn slot and the count of attached clients.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use std::time::Duration;

use elsa_ai_abstractions::{
    AiError, AiStreamEvent, AiStreamEventType, AiStreamJournal, AiTurnClaims, Clock,
    ConversationId, StreamPayload,
};
use elsa_workflows::TenantId;
use futures::stream::BoxStream;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::{broadcast, watch};

use super::subscription::{OpenedSubscription, StreamEnd, Subscription};
use crate::backoff::Backoff;
use crate::redaction::{Redacted, Redactor};

/// How the hub is tuned.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HubLimits {
    /// Live events buffered per conversation for slow subscribers before they lag (and
    /// then catch up from the journal).
    pub live_buffer: usize,
    /// Events read from the journal per replay batch.
    pub replay_batch: usize,
}

/// Every conversation's channel, keyed by (tenant, conversation) like the journal, created on
/// demand and dropped when nobody holds it.
pub(crate) struct StreamHub {
    journal: Arc<dyn AiStreamJournal>,
    redactor: Arc<Redactor>,
    clock: Arc<dyn Clock>,
    limits: HubLimits,
    channels: Mutex<Channels>,
    /// The turn claims shared with other replicas, and how often a client following a turn
    /// of another replica looks at the journal even without an announcement.
    remote: Option<(Arc<dyn AiTurnClaims>, Duration)>,
}

/// Whether more events are coming for a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Activity {
    /// A turn of this replica runs.
    Running,
    /// A turn of another replica runs: its events arrive as that replica's commits are
    /// announced.
    RunningElsewhere,
    /// No turn runs; the journal ends at this sequence.
    IdleAt(u64),
}

struct Channels {
    live: HashMap<(TenantId, ConversationId), Weak<Channel>>,
    /// When the map reaches this size, dead entries are swept (amortised O(1) per insert).
    sweep_at: usize,
}

const MIN_SWEEP: usize = 64;

/// The pauses of a turn trying to write its end (terminal event, end record) while the store
/// is unavailable: 100 ms doubling to 2 s, for up to 30 s.
pub(crate) fn turn_end_backoff() -> Backoff {
    Backoff::within(
        Duration::from_millis(100),
        Duration::from_secs(2),
        Duration::from_secs(30),
    )
}

impl StreamHub {
    pub fn new(
        journal: Arc<dyn AiStreamJournal>,
        redactor: Arc<Redactor>,
        clock: Arc<dyn Clock>,
        limits: HubLimits,
        remote: Option<(Arc<dyn AiTurnClaims>, Duration)>,
    ) -> Arc<Self> {
        Arc::new(Self {
            journal,
            redactor,
            clock,
            remote,
            limits: HubLimits {
                live_buffer: limits.live_buffer.max(1),
                replay_batch: limits.replay_batch.max(1),
            },
            channels: Mutex::new(Channels {
                live: HashMap::new(),
                sweep_at: MIN_SWEEP,
            }),
        })
    }

    /// The tenant's conversation's channel, shared by its running turn, its subscribers and
    /// its publishers. A channel nobody holds is dropped; the next one continues the
    /// journal's sequence.
    pub fn channel(self: &Arc<Self>, tenant_id: &TenantId, id: &ConversationId) -> Arc<Channel> {
        self.open(tenant_id, id, None)
    }

    /// The channel of a conversation whose id was generated just now: nothing is journaled
    /// under it yet, so its first append reads nothing from the journal.
    pub fn new_channel(
        self: &Arc<Self>,
        tenant_id: &TenantId,
        id: &ConversationId,
    ) -> Arc<Channel> {
        self.open(tenant_id, id, Some(0))
    }

    fn open(
        self: &Arc<Self>,
        tenant_id: &TenantId,
        id: &ConversationId,
        last: Option<u64>,
    ) -> Arc<Channel> {
        let key = (tenant_id.clone(), id.clone());
        let mut channels = self.channels.lock();
        if let Some(channel) = channels.live.get(&key).and_then(Weak::upgrade) {
            return channel;
        }
        if channels.live.len() >= channels.sweep_at {
            channels
                .live
                .retain(|_, channel| channel.strong_count() > 0);
            channels.sweep_at = (channels.live.len() * 2).max(MIN_SWEEP);
        }
        let (sender, _) = broadcast::channel(self.limits.live_buffer);
        let channel = Arc::new(Channel {
            tenant_id: tenant_id.clone(),
            id: id.clone(),
            hub: self.clone(),
            sender,
            last: tokio::sync::Mutex::new(last),
            turn: watch::Sender::new(None),
            turns: AtomicU64::new(0),
            attached: watch::Sender::new(0),
        });
        channels.live.insert(key, Arc::downgrade(&channel));
        channel
    }

    /// The channel of the tenant's conversation if someone holds it.
    fn existing(&self, tenant_id: &TenantId, id: &ConversationId) -> Option<Arc<Channel>> {
        self.channels
            .lock()
            .live
            .get(&(tenant_id.clone(), id.clone()))
            .and_then(Weak::upgrade)
    }

    /// The conversations this replica's clients follow while no turn of this replica runs
    /// in them (a turn of another replica may: the heartbeat reports them as watched).
    pub fn watched(&self) -> Vec<(TenantId, ConversationId)> {
        self.channels
            .lock()
            .live
            .values()
            .filter_map(Weak::upgrade)
            .filter(|c| *c.attached.borrow() > 0 && c.turn.borrow().is_none())
            .map(|c| (c.tenant_id.clone(), c.id.clone()))
            .collect()
    }

    /// Another replica's commit took the conversation's journal to `sequence` (`None`:
    /// unknown): if clients of this replica follow it, the new events are read and sent to
    /// them, in order, each once.
    pub fn journal_advanced(
        &self,
        tenant_id: &TenantId,
        id: &ConversationId,
        sequence: Option<u64>,
    ) {
        let Some(channel) = self.existing(tenant_id, id) else {
            return;
        };
        if channel.sender.receiver_count() == 0 {
            return;
        }
        // This replica's own appends come back announced too: already sent, nothing to do.
        if let (Ok(last), Some(sequence)) = (channel.last.try_lock(), sequence)
            && last.is_some_and(|last| last >= sequence)
        {
            return;
        }
        tokio::spawn(async move { channel.catch_up(sequence).await });
    }

    /// Announcements may have been missed: every followed conversation catches up.
    pub fn journal_missed(&self) {
        let followed: Vec<Arc<Channel>> = self
            .channels
            .lock()
            .live
            .values()
            .filter_map(Weak::upgrade)
            .filter(|c| c.sender.receiver_count() > 0)
            .collect();
        for channel in followed {
            tokio::spawn(async move { channel.catch_up(None).await });
        }
    }
}

/// One conversation's stream, in one tenant.
pub(crate) struct Channel {
    tenant_id: TenantId,
    id: ConversationId,
    hub: Arc<StreamHub>,
    sender: broadcast::Sender<AiStreamEvent>,
    /// The last sequence written; `None` until read from the journal. Holding the lock is
    /// what serialises appends, so broadcast order is sequence order.
    last: tokio::sync::Mutex<Option<u64>>,
    /// The running turn's number, if a turn runs.
    turn: watch::Sender<Option<u64>>,
    turns: AtomicU64,
    /// How many clients are subscribed.
    attached: watch::Sender<usize>,
}

impl Channel {
    pub fn id(&self) -> &ConversationId {
        &self.id
    }

    pub(super) fn tenant_id(&self) -> &TenantId {
        &self.tenant_id
    }

    pub(super) fn journal(&self) -> &dyn AiStreamJournal {
        self.hub.journal.as_ref()
    }

    pub(super) fn replay_batch(&self) -> usize {
        self.hub.limits.replay_batch
    }

    /// Redacts, sequences, journals and broadcasts one event.
    pub async fn append(
        &self,
        event_type: AiStreamEventType,
        data: Value,
    ) -> Result<AiStreamEvent, AiError> {
        let data = self.hub.redactor.redacted_payload(data);
        self.append_ending(event_type, data, None).await
    }

    /// Sequences, journals and broadcasts one event whose data is redacted already (a tool
    /// event, assembled from the governor's redacted arguments or result).
    pub async fn append_redacted(
        &self,
        event_type: AiStreamEventType,
        data: Redacted<Value>,
    ) -> Result<AiStreamEvent, AiError> {
        // What was assembled from redacted parts must be what redaction would make of it.
        debug_assert_eq!(
            self.hub.redactor.redacted_value(&data),
            *data,
            "a {event_type:?} event marked redacted holds something to redact"
        );
        self.append_ending(event_type, data.wrapped(StreamPayload::from), None)
            .await
    }

    /// The redactor every event passes.
    pub fn redactor(&self) -> &Redactor {
        &self.hub.redactor
    }

    async fn append_ending(
        &self,
        event_type: AiStreamEventType,
        data: Redacted<StreamPayload>,
        ends_turn: Option<u64>,
    ) -> Result<AiStreamEvent, AiError> {
        let mut last = self.last.lock().await;
        let previous = match *last {
            Some(previous) => previous,
            None => {
                self.hub
                    .journal
                    .last_sequence(&self.id, &self.tenant_id)
                    .await?
            }
        };
        let mut event = AiStreamEvent {
            event_type,
            conversation_id: self.id.clone(),
            sequence: previous + 1,
            timestamp: self.hub.clock.now(),
            data: data.into_inner(),
        };
        // A turn's terminal event frees the conversation before anyone can see the event
        // (in the journal or live), so a client that saw it may start the next turn at once.
        // Holding `last` keeps the next turn's events behind this one, and keeps readers
        // that ask whether the conversation is idle waiting until the event is journaled.
        if let Some(turn) = ends_turn {
            self.end_turn(turn);
        }
        if let Err(error) = self.hub.journal.append(&self.tenant_id, &event).await {
            if error.code() != "sequence_conflict" {
                *last = None;
                return Err(error);
            }
            // Another process appended meanwhile (a proposal event published by another
            // replica): the event goes after what the journal holds now.
            let now_last = match self
                .hub
                .journal
                .last_sequence(&self.id, &self.tenant_id)
                .await
            {
                Ok(now_last) => now_last,
                Err(error) => {
                    *last = None;
                    return Err(error);
                }
            };
            event.sequence = now_last + 1;
            if let Err(error) = self.hub.journal.append(&self.tenant_id, &event).await {
                *last = None;
                return Err(error);
            }
        }
        *last = Some(event.sequence);
        // Nobody listening is fine: the journal has it.
        let _ = self.sender.send(event.clone());
        Ok(event)
    }

    /// Like [`append`](Self::append), after reading where the journal stands (another
    /// replica may have written to it since this channel last did).
    pub async fn append_reloaded(
        &self,
        event_type: AiStreamEventType,
        data: Value,
    ) -> Result<AiStreamEvent, AiError> {
        *self.last.lock().await = None;
        let data = self.hub.redactor.redacted_payload(data);
        self.append_ending(event_type, data, None).await
    }

    /// Sends this replica's subscribers the journal's events after the last one sent (up to
    /// `sequence` and beyond), holding the sequencer so they interleave with nothing.
    async fn catch_up(&self, sequence: Option<u64>) {
        let mut last = self.last.lock().await;
        if let (Some(last), Some(sequence)) = (*last, sequence)
            && last >= sequence
        {
            return;
        }
        // Not knowing what was sent, send from just before the announced event: a
        // subscriber that is further behind sees a gap and reads the journal itself.
        let mut after = match (*last, sequence) {
            (Some(last), _) => last,
            (None, Some(sequence)) => sequence.saturating_sub(1),
            (None, None) => match self
                .hub
                .journal
                .last_sequence(&self.id, &self.tenant_id)
                .await
            {
                Ok(at) => at.saturating_sub(1),
                Err(_) => return,
            },
        };
        loop {
            let read = self
                .hub
                .journal
                .read_after(
                    &self.id,
                    &self.tenant_id,
                    after,
                    self.hub.limits.replay_batch,
                )
                .await;
            let events = match read {
                Ok(events) if !events.is_empty() => events,
                Ok(_) => break,
                Err(error) => {
                    tracing::warn!(code = error.code(), conversation = %self.id, "cannot read the journal another replica appended to");
                    break;
                }
            };
            for event in events {
                after = event.sequence;
                let _ = self.sender.send(event);
            }
        }
        *last = Some(after);
    }

    /// Claims the conversation for a new turn: 409 `turn_in_progress` while one runs.
    pub fn begin_turn(self: &Arc<Self>) -> Result<TurnSlot, AiError> {
        let number = self.turns.fetch_add(1, Ordering::Relaxed) + 1;
        let claimed = self.turn.send_if_modified(|running| {
            if running.is_some() {
                return false;
            }
            *running = Some(number);
            true
        });
        if !claimed {
            return Err(AiError::conflict(
                "turn_in_progress",
                format!(
                    "conversation '{}' has a turn in progress; wait for it to finish",
                    self.id
                ),
            ));
        }
        Ok(TurnSlot {
            channel: self.clone(),
            number,
        })
    }

    fn end_turn(&self, number: u64) {
        self.turn.send_if_modified(|running| {
            if *running != Some(number) {
                return false;
            }
            *running = None;
            true
        });
    }

    /// Whether a turn runs (here or on another replica), or where the journal ends.
    pub(super) async fn activity(&self) -> Result<Activity, AiError> {
        let mut last = self.last.lock().await;
        if self.turn.borrow().is_some() {
            return Ok(Activity::Running);
        }
        let sequence = match (&self.hub.remote, *last) {
            (Some((claims, _)), _) => {
                if claims.current(&self.tenant_id, &self.id).await?.is_some() {
                    return Ok(Activity::RunningElsewhere);
                }
                // Read after the claim: the commit that ended it journaled the turn's end.
                self.hub
                    .journal
                    .last_sequence(&self.id, &self.tenant_id)
                    .await?
            }
            (None, Some(sequence)) => sequence,
            (None, None) => {
                self.hub
                    .journal
                    .last_sequence(&self.id, &self.tenant_id)
                    .await?
            }
        };
        *last = Some(sequence);
        Ok(Activity::IdleAt(sequence))
    }

    /// How often a client following another replica's turn reads the journal unprompted.
    pub(super) fn remote_poll(&self) -> Duration {
        self.hub
            .remote
            .as_ref()
            .map_or(Duration::from_secs(1), |(_, poll)| *poll)
    }

    /// Returns once no append is under way: every event sequenced so far has been
    /// journaled and sent live (or has failed).
    pub(super) async fn settled(&self) {
        drop(self.last.lock().await);
    }

    pub(super) fn live(&self) -> broadcast::Receiver<AiStreamEvent> {
        self.sender.subscribe()
    }

    pub(super) fn turn_state(&self) -> watch::Receiver<Option<u64>> {
        self.turn.subscribe()
    }

    /// Counts a client as attached until the returned guard drops.
    pub(super) fn attach(self: &Arc<Self>) -> Attachment {
        self.attached.send_modify(|n| *n += 1);
        Attachment {
            channel: self.clone(),
        }
    }

    /// Watches how many clients are attached.
    pub fn attached(&self) -> watch::Receiver<usize> {
        self.attached.subscribe()
    }

    /// The events after `after`: replayed from the journal, then live, each exactly once.
    pub fn subscribe(
        self: &Arc<Self>,
        after: u64,
        end: StreamEnd,
    ) -> BoxStream<'static, AiStreamEvent> {
        Subscription::start(self.clone(), after, end)
    }

    /// A turn's own stream, opened before the turn's first event is appended: that event is
    /// then handed to it instead of read back from the journal, and what follows comes live.
    /// The turn must hold the conversation ([`TurnSlot`]), so that nothing but the turn
    /// appends from here on.
    pub fn open_turn_stream(self: &Arc<Self>) -> OpenedSubscription {
        Subscription::opened(self.clone(), StreamEnd::AtTerminal)
    }
}

/// A client's presence on a channel, counted while it lives.
pub(super) struct Attachment {
    channel: Arc<Channel>,
}

impl Drop for Attachment {
    fn drop(&mut self) {
        self.channel
            .attached
            .send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// The claim of a running turn on its conversation. Only its holder ends the turn, with a
/// terminal event ([`TurnSlot::finish`]); dropping it unfinished (a turn refused before it
/// started) frees the conversation without an event.
pub(crate) struct TurnSlot {
    channel: Arc<Channel>,
    number: u64,
}

impl TurnSlot {
    pub fn channel(&self) -> &Arc<Channel> {
        &self.channel
    }

    /// Appends the turn's terminal event and frees the conversation in the same step, so a
    /// new turn's events always follow this one's end.
    ///
    /// While the journal is unavailable (503) the write is tried again, for up to
    /// 30 s ([`turn_end_backoff`]): a turn's end is what tells every reader the stream is
    /// complete, so a store that is away for a moment must not leave the stream open for good.
    /// The turn still holds its conversation meanwhile, so nothing else can end it.
    pub async fn finish(
        self,
        event_type: AiStreamEventType,
        data: Value,
    ) -> Result<AiStreamEvent, AiError> {
        debug_assert!(event_type.is_terminal());
        let channel = &self.channel;
        let data = channel.hub.redactor.redacted_payload(data);
        let before = *channel.last.lock().await;
        let mut backoff = turn_end_backoff();
        loop {
            let error = match channel
                .append_ending(event_type, data.clone(), Some(self.number))
                .await
            {
                Ok(event) => return Ok(event),
                Err(error) => error,
            };
            if error.status() != 503 {
                return Err(error);
            }
            tracing::warn!(code = error.code(), conversation = %channel.id, "the turn's end could not be journaled");
            if !backoff.wait().await {
                return Err(error);
            }
            // A commit whose answer was lost may have landed: then the journal holds the end
            // already (nothing but this turn can end the conversation while it runs).
            if let Some(before) = before
                && let Ok(written) = channel
                    .journal()
                    .read_after(
                        &channel.id,
                        &channel.tenant_id,
                        before,
                        channel.replay_batch(),
                    )
                    .await
                && let Some(end) = written.iter().find(|e| e.event_type.is_terminal())
            {
                let mut last = channel.last.lock().await;
                *last = written.last().map(|e| e.sequence);
                let _ = channel.sender.send(end.clone());
                return Ok(end.clone());
            }
        }
    }
}

impl Drop for TurnSlot {
    fn drop(&mut self) {
        self.channel.end_turn(self.number);
    }
}

impl std::fmt::Debug for TurnSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnSlot")
            .field("conversation", &self.channel.id)
            .field("turn", &self.number)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;
    use elsa_ai_abstractions::{AiStreamEventType, SystemClock};
    use futures::StreamExt;
    use serde_json::json;

    use super::*;
    use crate::stream::InMemoryStreamJournal;

    /// A journal that stores appends but cannot say where a conversation's stream stands,
    /// and counts how often it is read.
    #[derive(Default)]
    struct NoLastSequence {
        journal: InMemoryStreamJournal,
        reads: AtomicU64,
    }

    #[async_trait]
    impl AiStreamJournal for NoLastSequence {
        async fn append(&self, tenant_id: &TenantId, event: &AiStreamEvent) -> Result<(), AiError> {
            // An append takes a moment, as a real journal's does: readers run meanwhile.
            tokio::task::yield_now().await;
            self.journal.append(tenant_id, event).await
        }

        async fn read_after(
            &self,
            conversation_id: &ConversationId,
            tenant_id: &TenantId,
            after: u64,
            limit: usize,
        ) -> Result<Vec<AiStreamEvent>, AiError> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            self.journal
                .read_after(conversation_id, tenant_id, after, limit)
                .await
        }

        async fn last_sequence(&self, _: &ConversationId, _: &TenantId) -> Result<u64, AiError> {
            Err(AiError::internal(
                "unreadable",
                "the journal cannot be read",
            ))
        }
    }

    fn hub() -> Arc<StreamHub> {
        hub_on(Arc::default())
    }

    fn hub_on(journal: Arc<NoLastSequence>) -> Arc<StreamHub> {
        StreamHub::new(
            journal,
            Arc::new(Redactor::default()),
            Arc::new(SystemClock),
            HubLimits {
                live_buffer: 16,
                replay_batch: 16,
            },
            None,
        )
    }

    #[tokio::test]
    async fn a_new_conversations_channel_starts_at_one_without_reading_the_journal() {
        let hub = hub();
        let tenant = TenantId::new("acme");
        let fresh = ConversationId::generate();
        let started = hub
            .new_channel(&tenant, &fresh)
            .append(AiStreamEventType::ConversationStarted, json!({}))
            .await
            .unwrap();
        assert_eq!(started.sequence, 1);

        // A conversation the hub does not know may have a journal: it must be read first.
        let known = ConversationId::generate();
        let error = hub
            .channel(&tenant, &known)
            .append(AiStreamEventType::ConversationStarted, json!({}))
            .await
            .unwrap_err();
        assert_eq!(error.code(), "unreadable");
    }

    #[tokio::test]
    async fn one_conversation_id_in_two_tenants_gets_two_channels() {
        let hub = hub();
        let (acme, globex) = (TenantId::new("acme"), TenantId::new("globex"));
        let id = ConversationId::generate();
        let acme_channel = hub.new_channel(&acme, &id);
        acme_channel
            .append(AiStreamEventType::ConversationStarted, json!({}))
            .await
            .unwrap();
        assert!(Arc::ptr_eq(&acme_channel, &hub.channel(&acme, &id)));

        // Globex's channel is its own: it does not continue acme's sequence but asks the
        // journal where globex's stream stands.
        let error = hub
            .channel(&globex, &id)
            .append(AiStreamEventType::ConversationStarted, json!({}))
            .await
            .unwrap_err();
        assert_eq!(error.code(), "unreadable");
    }

    /// A turn on `channel`, its own stream and its first event (sequence 1, not yet read).
    async fn started_turn(channel: &Arc<Channel>) -> (TurnSlot, BoxStream<'static, AiStreamEvent>) {
        let slot = channel.begin_turn().unwrap();
        let stream = channel.open_turn_stream();
        let started = channel
            .append(AiStreamEventType::ConversationStarted, json!({}))
            .await
            .unwrap();
        (slot, stream.starting_with(started))
    }

    #[tokio::test]
    async fn a_turns_own_stream_gets_every_event_of_the_turn_without_reading_the_journal() {
        let journal = Arc::new(NoLastSequence::default());
        let hub = hub_on(journal.clone());
        let tenant = TenantId::new("acme");
        let channel = hub.new_channel(&tenant, &ConversationId::generate());
        let (slot, mut stream) = started_turn(&channel).await;
        let delta = channel
            .append(AiStreamEventType::AssistantDelta, json!({"text": "hi"}))
            .await
            .unwrap();
        let first = stream.next().await.unwrap();
        let second = stream.next().await.unwrap();
        assert_eq!((first.sequence, second.sequence), (1, delta.sequence));
        assert_eq!(
            journal.reads.load(Ordering::SeqCst),
            0,
            "no journal read while live"
        );

        // The client waits for more when the turn ends: it is told the turn ended while the
        // terminal event is still being journaled, and takes that event live all the same.
        let rest = tokio::spawn(stream.map(|e| e.sequence).collect::<Vec<u64>>());
        tokio::task::yield_now().await;
        slot.finish(AiStreamEventType::ConversationCompleted, json!({}))
            .await
            .unwrap();
        let rest = rest.await.unwrap();
        assert_eq!(rest, [3], "the end, exactly once, and then the stream ends");
        assert_eq!(
            journal.reads.load(Ordering::SeqCst),
            0,
            "no journal read at the end either"
        );
    }

    /// Counts how often a subscriber's task is woken.
    #[derive(Default)]
    struct Wakes(AtomicU64);

    impl futures::task::ArcWake for Wakes {
        fn wake_by_ref(this: &Arc<Self>) {
            this.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Polls `stream` until it has nothing ready; returns the sequences it delivered.
    fn drain(
        stream: &mut BoxStream<'static, AiStreamEvent>,
        cx: &mut std::task::Context<'_>,
    ) -> Vec<u64> {
        let mut delivered = Vec::new();
        while let std::task::Poll::Ready(Some(event)) = stream.poll_next_unpin(cx) {
            delivered.push(event.sequence);
        }
        delivered
    }

    #[tokio::test]
    async fn a_subscriber_behind_by_a_batch_is_woken_once_for_it() {
        let hub = hub();
        let channel = hub.new_channel(&TenantId::new("acme"), &ConversationId::generate());
        let (_slot, mut stream) = started_turn(&channel).await;
        let wakes = Arc::new(Wakes::default());
        let waker = futures::task::waker(wakes.clone());
        let mut cx = std::task::Context::from_waker(&waker);
        assert_eq!(drain(&mut stream, &mut cx), [1]);

        // Within the live buffer (16 here), and beyond it: the second batch overflows the
        // subscriber's ring, so it reads what it missed from the journal.
        let mut next = 2;
        for batch in [10, 40] {
            for _ in 0..batch {
                channel
                    .append(AiStreamEventType::AssistantDelta, json!({"text": "x"}))
                    .await
                    .unwrap();
            }
            assert_eq!(
                wakes.0.swap(0, Ordering::SeqCst),
                1,
                "one wake for a batch of {batch} events, not one per event"
            );
            let expected: Vec<u64> = (next..next + batch).collect();
            assert_eq!(
                drain(&mut stream, &mut cx),
                expected,
                "the whole batch, in order"
            );
            next += batch;
        }
        assert_eq!(wakes.0.load(Ordering::SeqCst), 0, "reading woke nobody");
    }
}
