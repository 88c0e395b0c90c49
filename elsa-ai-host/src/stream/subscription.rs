//! One client's view of a conversation's stream: the journal from a sequence on, then the
//! live channel, each event exactly once and in order.
//!
//! The live receiver is opened *before* the journal is read, so an event is always in at
//! least one of the two: appended before the read, it is in the journal; appended after the
//! receiver opened, it is in the receiver (events are journaled before they are broadcast).
//! Events the journal already delivered are skipped when they arrive live. A receiver that
//! lags (its buffer overflowed) or sees a gap goes back to the journal from the last
//! delivered sequence, then continues live.
//!
//! A turn's own stream skips the first read: its receiver is opened before the turn's first
//! event is appended, and the turn holds the conversation, so that event is handed over and
//! everything after it is in the receiver. On the first-event path that saves two journal
//! reads per turn (the event, then the empty read that switches to live). Its end needs no
//! read either: when the turn ends, the terminal event is taken from the receiver once its
//! append is through, and the journal (and where the conversation stands) is consulted only
//! if the event is not there.

use std::collections::VecDeque;
use std::sync::Arc;

use elsa_ai_abstractions::AiStreamEvent;
use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::sync::{broadcast, watch};

use super::Activity;
use super::hub::{Attachment, Channel};

/// When a subscription ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamEnd {
    /// After the first terminal event (`conversation.completed` / `.failed`) it delivers:
    /// the stream of one turn.
    AtTerminal,
    /// Once it has caught up with the journal while no turn runs.
    WhenIdle,
}

pub(super) struct Subscription {
    channel: Arc<Channel>,
    live: broadcast::Receiver<AiStreamEvent>,
    turn: watch::Receiver<Option<u64>>,
    _attachment: Attachment,
    end: StreamEnd,
    /// The last sequence delivered.
    delivered: u64,
    replay: VecDeque<AiStreamEvent>,
    mode: Mode,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Reading the journal.
    Replay,
    /// Following the live channel.
    Live,
    /// Following the live channel while another replica runs the turn: its events come as
    /// its commits are announced, and the journal is read now and then regardless.
    LiveElsewhere,
    /// Nothing more will be delivered.
    Done,
}

/// A subscription opened before its first event is appended (see [`Channel::open_turn_stream`]).
pub(crate) struct OpenedSubscription(Subscription);

impl OpenedSubscription {
    /// The stream from `first` on: `first` is delivered as it is, and what follows comes
    /// live, as the receiver opened before `first` was appended holds it.
    pub fn starting_with(self, first: AiStreamEvent) -> BoxStream<'static, AiStreamEvent> {
        let mut subscription = self.0;
        subscription.delivered = first.sequence.saturating_sub(1);
        subscription.replay.push_back(first);
        subscription.mode = Mode::Live;
        subscription.into_stream()
    }
}

impl Subscription {
    pub fn start(
        channel: Arc<Channel>,
        after: u64,
        end: StreamEnd,
    ) -> BoxStream<'static, AiStreamEvent> {
        Self::open(channel, after, end).into_stream()
    }

    /// Opens the live receiver: from here on, every event appended is in it.
    pub fn opened(channel: Arc<Channel>, end: StreamEnd) -> OpenedSubscription {
        OpenedSubscription(Self::open(channel, 0, end))
    }

    fn open(channel: Arc<Channel>, after: u64, end: StreamEnd) -> Self {
        Self {
            live: channel.live(),
            turn: channel.turn_state(),
            _attachment: channel.attach(),
            channel,
            end,
            delivered: after,
            replay: VecDeque::new(),
            mode: Mode::Replay,
        }
    }

    fn into_stream(self) -> BoxStream<'static, AiStreamEvent> {
        futures::stream::unfold(self, |mut subscription| async move {
            let event = subscription.next().await?;
            Some((event, subscription))
        })
        .boxed()
    }

    async fn next(&mut self) -> Option<AiStreamEvent> {
        loop {
            if let Some(event) = self.replay.pop_front() {
                if event.sequence <= self.delivered {
                    continue;
                }
                if event.sequence != self.delivered + 1 {
                    // The journal contract forbids gaps; delivering beats hanging forever.
                    tracing::warn!(
                        conversation = %self.channel.id(),
                        expected = self.delivered + 1,
                        found = event.sequence,
                        "stream journal has a gap"
                    );
                }
                return Some(self.deliver(event));
            }
            match self.mode {
                Mode::Done => return None,
                Mode::Replay => self.read_journal().await,
                Mode::Live | Mode::LiveElsewhere => {
                    let Some(event) = self.follow().await else {
                        continue;
                    };
                    if event.sequence == self.delivered + 1 {
                        return Some(self.deliver(event));
                    }
                    if event.sequence > self.delivered {
                        // A gap in what arrived live: the journal has what is missing.
                        self.mode = Mode::Replay;
                    }
                }
            }
        }
    }

    /// Records the event as delivered and decides whether the stream ends after it.
    fn deliver(&mut self, event: AiStreamEvent) -> AiStreamEvent {
        self.delivered = event.sequence;
        if event.event_type.is_terminal() {
            self.mode = match self.end {
                StreamEnd::AtTerminal => Mode::Done,
                // Caught up and idle? The next journal read tells.
                StreamEnd::WhenIdle => Mode::Replay,
            };
            if self.mode == Mode::Done {
                self.replay.clear();
            }
        }
        event
    }

    async fn read_journal(&mut self) {
        let read = self
            .channel
            .journal()
            .read_after(
                self.channel.id(),
                self.channel.tenant_id(),
                self.delivered,
                self.channel.replay_batch(),
            )
            .await;
        match read {
            Ok(events) if !events.is_empty() => self.replay.extend(events),
            Ok(_) => self.mode = self.after_journal().await,
            Err(error) => {
                // The client can resume from its last sequence once the journal is back.
                tracing::warn!(
                    code = error.code(),
                    conversation = %self.channel.id(),
                    "stream journal unreadable; ending the subscription"
                );
                self.mode = Mode::Done;
            }
        }
    }

    /// The journal has nothing after `delivered`: end if nothing more is coming, else go live.
    async fn after_journal(&self) -> Mode {
        match self.channel.activity().await {
            Ok(Activity::IdleAt(last)) if last <= self.delivered => Mode::Done,
            Ok(Activity::IdleAt(_)) => Mode::Replay,
            Ok(Activity::Running) => Mode::Live,
            Ok(Activity::RunningElsewhere) => Mode::LiveElsewhere,
            Err(error) => {
                tracing::warn!(
                    code = error.code(),
                    conversation = %self.channel.id(),
                    "stream journal unreadable; ending the subscription"
                );
                Mode::Done
            }
        }
    }

    /// The next live event, or `None` after switching back to the journal.
    async fn follow(&mut self) -> Option<AiStreamEvent> {
        if self.mode == Mode::LiveElsewhere {
            let poll = self.channel.remote_poll();
            return tokio::select! {
                received = self.live.recv() => match received {
                    Ok(event) => Some(event),
                    Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => {
                        self.mode = Mode::Replay;
                        None
                    }
                },
                // A turn started here meanwhile, or an announcement was lost: the journal
                // and the claims tell.
                () = tokio::time::sleep(poll) => {
                    self.mode = Mode::Replay;
                    None
                }
            };
        }
        tokio::select! {
            received = self.live.recv() => return match received {
                Ok(event) => Some(event),
                // Lagged: the buffer overflowed. Closed cannot happen while this subscription
                // holds the channel, but the journal is the answer to both.
                Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => {
                    self.mode = Mode::Replay;
                    None
                }
            },
            _ = self.turn.wait_for(Option::is_none) => {}
        }
        // The turn ended, and its terminal event is being appended (the turn is freed first).
        // Once that append is through, the event is in the receiver unless it failed or the
        // receiver lagged; only then is the journal read.
        self.channel.settled().await;
        match self.live.try_recv() {
            Ok(event) => Some(event),
            Err(_) => {
                self.mode = Mode::Replay;
                None
            }
        }
    }
}
