//! Retention: conversations (with their stream journals) and idle provider sessions older
//! than the retention window are purged.

use std::sync::Arc;
use std::time::Duration;

use chrono::TimeDelta;
use elsa_ai_abstractions::{AiConversationStore, AiError, Clock};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::orchestrator::ProviderSessions;

/// What one sweep removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetentionReport {
    /// Conversations purged (their journals with them).
    pub conversations: usize,
    /// Provider sessions closed.
    pub sessions: usize,
}

/// Purges what is older than the retention window, on demand ([`sweep`](Self::sweep)) or
/// periodically ([`spawn`](Self::spawn)).
///
/// A conversation expires when it was last updated (its latest message) longer ago than
/// the window, or than its own `retain_days` when its owner chose to keep it shorter; a
/// provider session when it was last used longer ago than the window.
pub struct RetentionSweeper {
    conversations: Arc<dyn AiConversationStore>,
    sessions: Option<ProviderSessions>,
    retention: TimeDelta,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for RetentionSweeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetentionSweeper")
            .field("retention", &self.retention)
            .finish_non_exhaustive()
    }
}

impl RetentionSweeper {
    /// The default retention window: 30 days.
    pub const DEFAULT_RETENTION: TimeDelta = TimeDelta::days(30);

    /// A sweeper purging `conversations` older than `retention`, by `clock`.
    pub fn new(
        conversations: Arc<dyn AiConversationStore>,
        retention: TimeDelta,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            conversations,
            sessions: None,
            retention: retention.max(TimeDelta::zero()),
            clock,
        }
    }

    /// Also closes provider sessions idle for longer than the window.
    pub fn with_sessions(mut self, sessions: ProviderSessions) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// The retention window.
    pub fn retention(&self) -> TimeDelta {
        self.retention
    }

    /// Purges everything older than the window, now.
    pub async fn sweep(&self) -> Result<RetentionReport, AiError> {
        let now = self.clock.now();
        let cutoff = now - self.retention;
        let conversations = self.conversations.purge_expired(cutoff, now).await?;
        let sessions = match &self.sessions {
            Some(sessions) => sessions.close_idle_before(cutoff).await,
            None => 0,
        };
        if conversations + sessions > 0 {
            tracing::info!(
                conversations,
                sessions,
                "retention sweep purged expired data"
            );
        }
        Ok(RetentionReport {
            conversations,
            sessions,
        })
    }

    /// Sweeps every `interval` until `shutdown` is cancelled; a failed sweep is logged and
    /// retried at the next tick.
    pub fn spawn(self, interval: Duration, shutdown: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval.max(Duration::from_millis(1)));
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    _ = ticks.tick() => {
                        if let Err(error) = self.sweep().await {
                            tracing::warn!(code = error.code(), "retention sweep failed");
                        }
                    }
                }
            }
        })
    }
}
