//! Serving: the listener, background sweeps and the graceful shutdown.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use elsa_ai_host::RetentionSweeper;
use elsa_ai_store::JournalFeed;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::Weaver;

impl Weaver {
    /// Starts the background work: the retention sweep and the proposal expiry, hourly; the
    /// turn claims' heartbeat and sweep; other replicas' journal commits to this one's
    /// clients, their clients' cancel requests to this one's turns, and their enablement
    /// changes to this one's registry.
    fn start_background(&mut self) {
        let orchestrator = self.orchestrator.clone();
        let stop = self.background.clone();
        tokio::spawn(async move { orchestrator.keep_claims(stop).await });
        if let Some(mut feed) = self.journal_feed.take() {
            let orchestrator = self.orchestrator.clone();
            let registry = self.api.parts().registry.clone();
            let stop = self.background.clone();
            tokio::spawn(async move {
                loop {
                    let heard = tokio::select! {
                        () = stop.cancelled() => return,
                        heard = feed.recv() => heard,
                    };
                    match heard {
                        Some(JournalFeed::Appended(notice)) => orchestrator.journal_advanced(
                            &notice.tenant_id,
                            &notice.conversation_id,
                            notice.sequence,
                        ),
                        Some(JournalFeed::CancelRequested {
                            tenant_id,
                            conversation_id,
                            turn_id,
                        }) => orchestrator.cancel_requested(&tenant_id, &conversation_id, &turn_id),
                        Some(JournalFeed::EnablementChanged { tenant_id }) => {
                            registry.enablement_changed(Some(&tenant_id));
                        }
                        Some(JournalFeed::Missed) => {
                            registry.enablement_changed(None);
                            orchestrator.journal_missed();
                        }
                        Some(other) => tracing::debug!(?other, "journal notice of an unknown kind"),
                        None => return,
                    }
                }
            });
        }
        RetentionSweeper::new(
            self.conversations.clone(),
            self.retention,
            Arc::new(elsa_ai_abstractions::SystemClock),
        )
        .with_sessions(self.orchestrator.sessions().clone())
        .spawn(Duration::from_secs(3600), self.background.clone());
        let proposals = self.proposals.clone();
        let tenants = self.tenants.clone();
        let stop = self.background.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(Duration::from_secs(3600));
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    _ = ticks.tick() => {
                        for tenant in &tenants {
                            if let Err(error) = proposals.expire_due(tenant).await {
                                tracing::warn!(code = error.code(), %tenant, "proposal expiry failed");
                            }
                        }
                    }
                }
            }
        });
    }

    /// Serves the API on `listener` until `shutdown` completes, then shuts down gracefully:
    /// no new connections or turns; running turns get the grace window to finish (their
    /// clients receive every event); then what still runs is cancelled, open streams end,
    /// and the stores are flushed.
    pub async fn serve(
        mut self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let metrics_listener = match self.metrics_listen {
            Some(address) => Some(Self::listen(address).map_err(|error| {
                std::io::Error::new(
                    error.kind(),
                    format!("cannot listen on {address} ([telemetry] metrics_listen): {error}"),
                )
            })?),
            None => None,
        };
        self.start_background();
        let stopping = CancellationToken::new();
        if let Some(listener) = metrics_listener {
            let scrape = crate::routes::unauthenticated_metrics(self.metrics.clone());
            let stopped = stopping.clone();
            tokio::spawn(async move {
                let served = axum::serve(listener, scrape)
                    .with_graceful_shutdown(async move { stopped.cancelled().await })
                    .await;
                if let Err(error) = served {
                    tracing::warn!(%error, "the metrics listener failed");
                }
            });
        }
        // A stream is a series of small writes: with Nagle's algorithm on, an event written
        // just after the response head waits for the client's (delayed, ~40 ms) ACK. A client
        // that stops reading (or vanishes) leaves written data unacknowledged: the kernel
        // closes such a connection after `stalled_connection` (TCP_USER_TIMEOUT), which ends
        // its stream here and lets the grace window run.
        let stalled = self.stalled_connection;
        let listener = listener.tap_io(move |connection| {
            if let Err(error) = connection.set_nodelay(true) {
                tracing::debug!(%error, "cannot set TCP_NODELAY on a connection");
            }
            if let Some(timeout) = stalled
                && let Err(error) = close_when_stalled(connection, timeout)
            {
                tracing::debug!(%error, "cannot set TCP_USER_TIMEOUT on a connection");
            }
        });
        let server = axum::serve(listener, self.router()).with_graceful_shutdown({
            let stopping = stopping.clone();
            async move {
                shutdown.await;
                stopping.cancel();
            }
        });
        let drain = {
            let stopping = stopping.clone();
            let orchestrator = self.orchestrator.clone();
            let grace = self.grace_window;
            async move {
                stopping.cancelled().await;
                tracing::info!(
                    grace_secs = grace.as_secs(),
                    "shutting down: running turns get the grace window"
                );
                let cancelled = orchestrator.drain(grace).await;
                if cancelled > 0 {
                    tracing::warn!(
                        cancelled,
                        "turns still running after the grace window were cancelled"
                    );
                }
            }
        };
        let (served, ()) = tokio::join!(
            async {
                let server = server.into_future();
                tokio::pin!(server);
                // Connections normally close once their turns end; a client that never
                // reads is not waited for beyond the grace window plus a margin.
                tokio::select! {
                    served = &mut server => served,
                    () = async {
                        stopping.cancelled().await;
                        tokio::time::sleep(self.grace_window + Duration::from_secs(10)).await;
                    } => Ok(()),
                }
            },
            drain
        );
        self.background.cancel();
        // No Copilot CLI and no MCP server child outlives the server.
        self.providers.shutdown().await;
        self.mcp.shutdown();
        // Every audit record accepted during the drain is written before the store closes.
        self.store.close().await;
        // Every turn's span has ended: the last spans and metrics leave now.
        if let Some(telemetry) = &self.telemetry {
            telemetry.shutdown().await;
        }
        served
    }
}

/// Has the kernel close `connection` once data written to it stays unacknowledged for
/// `timeout` (TCP_USER_TIMEOUT, which also bounds a zero window: a client that stopped
/// reading).
#[cfg(target_os = "linux")]
fn close_when_stalled(
    connection: &tokio::net::TcpStream,
    timeout: Duration,
) -> std::io::Result<()> {
    socket2::SockRef::from(connection).set_tcp_user_timeout(Some(timeout))
}

/// Elsewhere the operating system's own timeouts apply.
#[cfg(not(target_os = "linux"))]
fn close_when_stalled(_: &tokio::net::TcpStream, _: Duration) -> std::io::Result<()> {
    Ok(())
}
