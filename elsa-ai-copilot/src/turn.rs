//! One turn against the Copilot runtime: resume the conversation's session with the turn's
//! tools, send the prompt, map the session's events until the turn ends, disconnect.
//!
//! The turn runs in a task of its own and reports through a channel, so its event loop
//! keeps draining the session's events whatever the host does with the stream. When the
//! host cancels the turn, the loop aborts the Copilot turn, waits (briefly) for the runtime
//! to confirm, and disconnects the session either way.

use std::sync::Arc;
use std::time::Duration;

use elsa_ai_abstractions::{AiError, AiProviderEvent, AiProviderToolInvoker, AiTurnRequest};
use github_copilot_sdk::Client;
use github_copilot_sdk::session::Session;
use github_copilot_sdk::subscription::RecvErrorKind;
use tokio::sync::mpsc::UnboundedSender;

use crate::events::{TurnEventMapper, turn_cancelled, unoffered_call};
use crate::logging::LogRedaction;
use crate::runtime::{runtime_lost, sdk_error};
use crate::session::{SessionSettings, TurnTools, turn_prompt};
use crate::tools::{ToolPermissions, ToolResults, UnofferedCalls, UnofferedToolGuard, sdk_tools};
use elsa_ai_abstractions::function_names::ToolNames;

/// How long an aborted turn may take to confirm before the session is disconnected anyway.
const ABORT_GRACE: Duration = Duration::from_secs(10);
/// How long an abort or a disconnect request may take.
const RPC_TIMEOUT: Duration = Duration::from_secs(10);

/// Reports provider events to the host; a closed receiver means nobody listens any more.
pub(crate) struct Reporter(pub UnboundedSender<AiProviderEvent>);

impl Reporter {
    pub(crate) fn send(&self, event: AiProviderEvent) {
        // The host dropped the stream: the turn still runs to its end (tools finish,
        // the session is disconnected), there is just nobody to tell.
        let _ = self.0.send(event);
    }
}

/// Everything a turn needs from its provider.
pub(crate) struct TurnSetup {
    pub client: Client,
    pub settings: SessionSettings,
    /// What the turn's log lines pass through.
    pub log: Arc<LogRedaction>,
    /// Whether this is the session's first turn (it gets the conversation so far).
    pub first_turn: bool,
}

/// Runs the turn to its end and reports exactly one terminal event.
pub(crate) async fn run(
    setup: TurnSetup,
    request: AiTurnRequest,
    invoker: Arc<dyn AiProviderToolInvoker>,
    reporter: &Reporter,
) {
    let outcome = drive(setup, &request, invoker, reporter).await;
    reporter.send(match outcome {
        Ok(()) => AiProviderEvent::Completed,
        Err(error) => AiProviderEvent::Failed { error },
    });
}

async fn drive(
    setup: TurnSetup,
    request: &AiTurnRequest,
    invoker: Arc<dyn AiProviderToolInvoker>,
    reporter: &Reporter,
) -> Result<(), AiError> {
    let names = Arc::new(
        ToolNames::new(request.tools.iter().map(|tool| tool.name.as_str()))?
            .with_known(request.agent.allowed_tools.iter().map(String::as_str)),
    );
    let results = Arc::new(ToolResults::default());
    let unoffered = Arc::new(UnofferedCalls::default());
    let turn_tools = TurnTools {
        tools: sdk_tools(&request.tools, &names, &invoker, &results),
        wire_names: names.wire_names().map(str::to_owned).collect(),
        permissions: Arc::new(ToolPermissions::new(&names)),
        guard: Arc::new(UnofferedToolGuard::new(
            names.clone(),
            invoker.clone(),
            results.clone(),
            unoffered.clone(),
            setup.log.clone(),
        )),
    };
    let session_id = request.session.session_id.as_str();
    let config = setup
        .settings
        .resume(session_id, &request.agent, turn_tools);
    let prepared = setup
        .client
        .prepare_resume_session(config)
        .map_err(|error| sdk_error("resuming the Copilot session", &error))?;
    let mut events = prepared.subscribe();
    let session = prepared
        .start()
        .await
        .map_err(|error| sdk_error("resuming the Copilot session", &error))?;
    tracing::debug!(session = %session_id, tools = names.wire_names().count(), "Copilot session resumed for a turn");

    let history = if setup.first_turn {
        request.history.as_slice()
    } else {
        &[]
    };
    let prompt = turn_prompt(&request.message, history, &request.context);
    let mut mapper = TurnEventMapper::new(names.clone(), results);
    let outcome = async {
        let send = session.send(prompt);
        tokio::pin!(send);
        let mut sending = true;
        let mut aborted: Option<tokio::time::Instant> = None;
        loop {
            let abort_deadline = async {
                match aborted {
                    Some(at) => tokio::time::sleep_until(at + ABORT_GRACE).await,
                    None => std::future::pending().await,
                }
            };
            let mapped = tokio::select! {
                biased;
                () = request.cancellation.cancelled(), if aborted.is_none() => {
                    aborted = Some(tokio::time::Instant::now());
                    abort(&session, &setup.log).await;
                    continue;
                }
                () = abort_deadline => return Err(turn_cancelled()),
                sent = &mut send, if sending => {
                    sending = false;
                    match sent {
                        Ok(message_id) => {
                            if aborted.is_some() {
                                // Cancelled before the runtime took the message: stop it now.
                                abort(&session, &setup.log).await;
                            }
                            mapper.sent(message_id)
                        }
                        Err(error) => return Err(sdk_error("sending the message", &error)),
                    }
                }
                received = events.recv() => match received {
                    Ok(event) => {
                        setup.log.trace_event(session_id, &event);
                        if let Some((call_id, wire)) = unoffered_call(&event, &names) {
                            unoffered.announce(wire, call_id);
                        }
                        mapper.map(&event)
                    }
                    Err(error) if matches!(error.kind(), RecvErrorKind::Closed) => {
                        return Err(runtime_lost("running the turn"));
                    }
                    Err(error) => {
                        tracing::warn!(%error, "the turn's Copilot events lagged; some were skipped");
                        continue;
                    }
                },
            };
            for event in mapped.events {
                match event {
                    AiProviderEvent::Completed => return Ok(()),
                    AiProviderEvent::Failed { error } => return Err(error),
                    other => reporter.send(other),
                }
            }
        }
    }
    .await;
    disconnect(&session, &setup.log).await;
    outcome
}

/// Asks the runtime to stop the turn; the aborted idle (or the deadline) ends the loop.
async fn abort(session: &Session, log: &LogRedaction) {
    match tokio::time::timeout(RPC_TIMEOUT, session.abort()).await {
        Ok(Ok(())) => tracing::info!(session = %session.id(), "Copilot turn aborted"),
        Ok(Err(error)) => {
            let error = log.error(&error);
            tracing::warn!(session = %session.id(), %error, "aborting the Copilot turn failed")
        }
        Err(_) => tracing::warn!(session = %session.id(), "aborting the Copilot turn timed out"),
    }
}

/// Detaches from the session; the runtime keeps it on disk for the next turn.
async fn disconnect(session: &Session, log: &LogRedaction) {
    match tokio::time::timeout(RPC_TIMEOUT, session.disconnect()).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => {
            let error = log.error(&error);
            tracing::warn!(session = %session.id(), %error, "disconnecting the Copilot session failed")
        }
        Err(_) => {
            tracing::warn!(session = %session.id(), "disconnecting the Copilot session timed out")
        }
    }
}
