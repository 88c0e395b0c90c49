//! Pauses between attempts at a store write that was refused for now (the database restarting):
//! doubling from a first pause up to a longest one, optionally until a deadline.

use std::time::Duration;

use tokio::time::Instant;

/// The pauses of one retried write.
pub(crate) struct Backoff {
    pause: Duration,
    longest: Duration,
    deadline: Option<Instant>,
}

impl Backoff {
    /// Pauses from `first`, doubling up to `longest`, for as long as it takes.
    pub fn new(first: Duration, longest: Duration) -> Self {
        Self {
            pause: first,
            longest,
            deadline: None,
        }
    }

    /// The same, giving up once `limit` has passed from now.
    pub fn within(first: Duration, longest: Duration, limit: Duration) -> Self {
        Self {
            deadline: Some(Instant::now() + limit),
            ..Self::new(first, longest)
        }
    }

    /// Waits before the next attempt; `false` (at once) when the deadline has passed.
    pub async fn wait(&mut self) -> bool {
        if self
            .deadline
            .is_some_and(|deadline| Instant::now() >= deadline)
        {
            return false;
        }
        tokio::time::sleep(self.pause).await;
        self.pause = (self.pause * 2).min(self.longest);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn pauses_double_up_to_the_longest_and_stop_at_the_deadline() {
        let started = Instant::now();
        let mut endless = Backoff::new(Duration::from_millis(100), Duration::from_millis(300));
        let mut slept = Vec::new();
        for _ in 0..4 {
            let before = Instant::now();
            assert!(endless.wait().await);
            slept.push(before.elapsed().as_millis());
        }
        assert_eq!(slept, [100, 200, 300, 300]);

        let mut bounded = Backoff::within(
            Duration::from_millis(100),
            Duration::from_secs(1),
            Duration::from_millis(250),
        );
        assert!(bounded.wait().await);
        assert!(bounded.wait().await, "100 ms passed of 250");
        assert!(
            !bounded.wait().await,
            "300 ms passed of 250: no more attempts"
        );
        assert!(started.elapsed() >= Duration::from_millis(1200));
    }
}
