//! Telemetry: `tracing` spans named and attributed after the OpenTelemetry GenAI semantic
//! conventions, atomic counters for operations dashboards and tests, and the trace ids that
//! tie audit records and stream events to the trace they were made in.
//!
//! The host never names an exporter. What traces spans is the embedding server's business:
//! it tells the host which trace a span belongs to through a [`TraceIdSource`] (the
//! `weaver` server reads OpenTelemetry's), and it receives the measurements only a histogram
//! keeps whole through a [`MeasurementObserver`] on the shared [`Metrics`].
//!
//! Each governed tool call runs inside a span named `execute_tool` with `otel.name =
//! "execute_tool {tool}"`, `gen_ai.operation.name = "execute_tool"`, `gen_ai.tool.name`,
//! `gen_ai.tool.call.id`, `gen_ai.tool.type = "function"`, and, once it ends,
//! `weaver.tool.outcome` (`success` / `error` / `denied`) and `error.type` (the error code).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use elsa_ai_abstractions::{AiAuditEvent, AiAuditSink, AiError, AiToolOutcome, ProposalStatus};
use serde::Serialize;
use tracing::Span;

use crate::governor::GovernanceStep;

/// Every counter the host keeps, grouped by area.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Outcomes of governed tool calls.
    pub tools: ToolCounters,
    /// Proposal transitions and refusals.
    pub proposals: ProposalCounters,
    /// Model tokens used by turns (`gen_ai.client.token.usage`).
    pub tokens: TokenCounters,
    /// How turns ended, and how long their first event took.
    pub turns: TurnCounters,
    /// Who else sees each measurement as it is made (at most one).
    observer: OnceLock<Arc<dyn MeasurementObserver>>,
}

/// Receives, as they are made, the measurements that only a histogram keeps whole (the
/// counters above keep fixed buckets and sums): an exporter with histograms of its own,
/// such as the server's OpenTelemetry meter, registers one with [`Metrics::observe`].
pub trait MeasurementObserver: Send + Sync + std::fmt::Debug {
    /// A turn's first event (`conversation.started`) was journaled `latency` after its
    /// request arrived.
    fn first_event(&self, latency: Duration);

    /// A turn served by `provider` used `usage` model tokens (as the provider reported them).
    fn token_usage(&self, provider: &str, usage: TokenUsage);
}

/// The label under which calls to names the governor did not recognise (refused at steps 1
/// to 3) are counted: those names come from a model, and must not grow the label set.
pub const UNRECOGNISED_TOOL: &str = "_unrecognised";

/// The upper bounds, in seconds, of the first-event latency histogram's buckets.
pub const FIRST_EVENT_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// How turns ended, and a histogram of the time from a chat request to its first stream
/// event (`conversation.started`).
#[derive(Debug, Default)]
pub struct TurnCounters {
    completed: AtomicU64,
    failed: AtomicU64,
    cancelled: AtomicU64,
    /// Per bucket of [`FIRST_EVENT_BUCKETS`], plus one for larger values.
    first_event: [AtomicU64; 13],
    first_event_micros: AtomicU64,
}

/// The values of [`TurnCounters`] at one point in time.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnCountersSnapshot {
    /// Turns the provider completed.
    pub completed: u64,
    /// Turns that failed.
    pub failed: u64,
    /// Turns cancelled by a person, by a client gone past the grace window or by shutdown.
    pub cancelled: u64,
    /// First-event latencies per bucket of [`FIRST_EVENT_BUCKETS`] (not cumulative), the
    /// last for larger values.
    pub first_event_buckets: [u64; 13],
    /// The sum of the first-event latencies, in microseconds.
    pub first_event_micros: u64,
}

impl TurnCounters {
    /// The current values.
    pub fn snapshot(&self) -> TurnCountersSnapshot {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        TurnCountersSnapshot {
            completed: load(&self.completed),
            failed: load(&self.failed),
            cancelled: load(&self.cancelled),
            first_event_buckets: std::array::from_fn(|i| load(&self.first_event[i])),
            first_event_micros: load(&self.first_event_micros),
        }
    }

    /// Counts a turn that ended `completed`, `failed` or `cancelled`.
    pub(crate) fn ended(&self, outcome: &str) {
        let counter = match outcome {
            "completed" => &self.completed,
            "cancelled" => &self.cancelled,
            _ => &self.failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Records the time a turn took to its first event.
    fn first_event(&self, latency: Duration) {
        let seconds = latency.as_secs_f64();
        let bucket = FIRST_EVENT_BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(FIRST_EVENT_BUCKETS.len());
        self.first_event[bucket].fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.first_event_micros.fetch_add(micros, Ordering::Relaxed);
    }
}

/// Model tokens the providers reported, summed over every turn.
#[derive(Debug, Default)]
pub struct TokenCounters {
    input: AtomicU64,
    output: AtomicU64,
}

/// The values of [`TokenCounters`] at one point in time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Prompt (input) tokens.
    pub input_tokens: u64,
    /// Completion (output) tokens.
    pub output_tokens: u64,
}

impl TokenCounters {
    /// The current values.
    pub fn snapshot(&self) -> TokenUsage {
        TokenUsage {
            input_tokens: self.input.load(Ordering::Relaxed),
            output_tokens: self.output.load(Ordering::Relaxed),
        }
    }

    fn add(&self, usage: TokenUsage) {
        self.input.fetch_add(usage.input_tokens, Ordering::Relaxed);
        self.output
            .fetch_add(usage.output_tokens, Ordering::Relaxed);
    }
}

impl Metrics {
    /// Fresh counters, all zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Hands every later first-event latency and token usage to `observer` as well; `false`
    /// (and `observer` unused) when another observer was registered first.
    pub fn observe(&self, observer: Arc<dyn MeasurementObserver>) -> bool {
        self.observer.set(observer).is_ok()
    }

    /// Records the time a turn took to its first event.
    pub(crate) fn first_event(&self, latency: Duration) {
        self.turns.first_event(latency);
        if let Some(observer) = self.observer.get() {
            observer.first_event(latency);
        }
    }

    /// Adds the tokens one turn used.
    pub(crate) fn token_usage(&self, provider: &str, usage: TokenUsage) {
        self.tokens.add(usage);
        if let Some(observer) = self.observer.get() {
            observer.token_usage(provider, usage);
        }
    }
}

/// Tells which trace a `tracing` span belongs to, so that what the host records inside it
/// (audit records, `conversation.started`) can name the trace. The `weaver` server answers
/// with OpenTelemetry's trace id; a host that traces nothing uses [`Untraced`].
pub trait TraceIdSource: Send + Sync {
    /// The W3C trace id of `span` (32 lowercase hex digits), `None` when it is not traced.
    fn trace_id(&self, span: &Span) -> Option<String>;
}

/// The [`TraceIdSource`] of a host that traces nothing: no span has a trace id.
#[derive(Clone, Copy, Debug, Default)]
pub struct Untraced;

impl TraceIdSource for Untraced {
    fn trace_id(&self, _span: &Span) -> Option<String> {
        None
    }
}

/// An audit sink that stamps each record without a trace id with the trace of the span it
/// is recorded in (the chat turn's, for everything a turn audits), then hands it on.
pub struct TracedAuditSink {
    inner: Arc<dyn AiAuditSink>,
    traces: Arc<dyn TraceIdSource>,
}

impl TracedAuditSink {
    /// Wraps `inner`; trace ids come from `traces`.
    pub fn new(inner: Arc<dyn AiAuditSink>, traces: Arc<dyn TraceIdSource>) -> Self {
        Self { inner, traces }
    }
}

impl std::fmt::Debug for TracedAuditSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TracedAuditSink").finish_non_exhaustive()
    }
}

#[async_trait]
impl AiAuditSink for TracedAuditSink {
    async fn record(&self, mut event: AiAuditEvent) -> Result<(), AiError> {
        if event.trace_id.is_none() {
            event.trace_id = self.traces.trace_id(&Span::current());
        }
        self.inner.record(event).await
    }
}

/// Counters of governed tool calls. Relaxed atomics: each is exact, they are not a snapshot
/// of one instant taken together.
#[derive(Debug, Default)]
pub struct ToolCounters {
    invocations: AtomicU64,
    succeeded: AtomicU64,
    failed: AtomicU64,
    denied: AtomicU64,
    timed_out: AtomicU64,
    truncated: AtomicU64,
    audit_failures: AtomicU64,
    event_failures: AtomicU64,
    denied_by_step: [AtomicU64; 7],
    /// Successes, errors and denials per tool name.
    by_tool: parking_lot::Mutex<BTreeMap<String, [u64; 3]>>,
}

/// The values of [`ToolCounters`] at one point in time.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCountersSnapshot {
    /// Calls that entered the governor.
    pub invocations: u64,
    /// Calls that returned content.
    pub succeeded: u64,
    /// Calls that failed (tool error, invalid arguments, timeout, audit failure).
    pub failed: u64,
    /// Calls governance refused.
    pub denied: u64,
    /// Calls cancelled because the tool exceeded its timeout.
    pub timed_out: u64,
    /// Results clamped to the model-context budget.
    pub truncated: u64,
    /// Audit records that could not be written (the call then failed).
    pub audit_failures: u64,
    /// Tool events the event sink refused.
    pub event_failures: u64,
    /// Denials per check step, steps 1 to 7 in order.
    pub denied_by_step: [u64; 7],
    /// Successes, errors and denials per tool name (names refused before the tool was
    /// recognised count under [`UNRECOGNISED_TOOL`]).
    pub by_tool: BTreeMap<String, [u64; 3]>,
}

impl ToolCounters {
    /// The current values.
    pub fn snapshot(&self) -> ToolCountersSnapshot {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ToolCountersSnapshot {
            invocations: load(&self.invocations),
            succeeded: load(&self.succeeded),
            failed: load(&self.failed),
            denied: load(&self.denied),
            timed_out: load(&self.timed_out),
            truncated: load(&self.truncated),
            audit_failures: load(&self.audit_failures),
            event_failures: load(&self.event_failures),
            denied_by_step: std::array::from_fn(|i| load(&self.denied_by_step[i])),
            by_tool: self.by_tool.lock().clone(),
        }
    }

    pub(crate) fn invoked(&self) {
        self.invocations.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn finished(&self, tool: &str, outcome: AiToolOutcome, truncated: bool) {
        let (counter, index) = match outcome {
            AiToolOutcome::Success => (&self.succeeded, 0),
            AiToolOutcome::Error => (&self.failed, 1),
            AiToolOutcome::Denied => (&self.denied, 2),
            // An outcome newer than this host counts as a failure.
            _ => (&self.failed, 1),
        };
        counter.fetch_add(1, Ordering::Relaxed);
        // The name is copied only the first time it is counted.
        let mut by_tool = self.by_tool.lock();
        match by_tool.get_mut(tool) {
            Some(counts) => counts[index] += 1,
            None => by_tool.entry(tool.to_owned()).or_default()[index] += 1,
        }
        if truncated {
            self.truncated.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn denied_at(&self, step: GovernanceStep) {
        if let Some(counter) = step
            .number()
            .checked_sub(1)
            .and_then(|i| self.denied_by_step.get(i))
        {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn timed_out(&self) {
        self.timed_out.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn audit_failed(&self) {
        self.audit_failures.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn event_failed(&self) {
        self.event_failures.fetch_add(1, Ordering::Relaxed);
    }
}

/// Counters of the proposal lifecycle: one per state a transition reaches, and the ways an
/// action can be refused or fail. Relaxed atomics, like [`ToolCounters`].
#[derive(Debug, Default)]
pub struct ProposalCounters {
    created: AtomicU64,
    /// Indexed by [`status_index`].
    entered: [AtomicU64; 7],
    denied: AtomicU64,
    invalid_transitions: AtomicU64,
    stale_baselines: AtomicU64,
    lost_races: AtomicU64,
    audit_failures: AtomicU64,
    event_failures: AtomicU64,
}

/// The values of [`ProposalCounters`] at one point in time.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProposalCountersSnapshot {
    /// Proposals created from drafts (each also counts in `validated` or `blocked`).
    pub created: u64,
    /// Transitions into `Validated`.
    pub validated: u64,
    /// Transitions into `Blocked` (at creation, re-validation or apply).
    pub blocked: u64,
    /// Transitions into `Approved`.
    pub approved: u64,
    /// Transitions into `Rejected`.
    pub rejected: u64,
    /// Transitions into `Applied`.
    pub applied: u64,
    /// Transitions into `Expired`.
    pub expired: u64,
    /// Actions refused for a missing permission (403).
    pub denied: u64,
    /// Actions the current state does not allow (409 `invalid_state`, `apply_in_progress`).
    pub invalid_transitions: u64,
    /// Applies refused because the baseline is no longer current (409).
    pub stale_baselines: u64,
    /// Actions that lost a compare-and-set race against another action (409).
    pub lost_races: u64,
    /// Audit records that could not be written (the action then failed).
    pub audit_failures: u64,
    /// `proposal.*` stream events that could not be published.
    pub event_failures: u64,
}

fn status_index(status: ProposalStatus) -> Option<usize> {
    match status {
        ProposalStatus::Draft => Some(0),
        ProposalStatus::Validated => Some(1),
        ProposalStatus::Blocked => Some(2),
        ProposalStatus::Approved => Some(3),
        ProposalStatus::Rejected => Some(4),
        ProposalStatus::Applied => Some(5),
        ProposalStatus::Expired => Some(6),
        // A state newer than this host has no counter.
        _ => None,
    }
}

impl ProposalCounters {
    /// The current values.
    pub fn snapshot(&self) -> ProposalCountersSnapshot {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let entered = |status| status_index(status).map_or(0, |i| load(&self.entered[i]));
        ProposalCountersSnapshot {
            created: load(&self.created),
            validated: entered(ProposalStatus::Validated),
            blocked: entered(ProposalStatus::Blocked),
            approved: entered(ProposalStatus::Approved),
            rejected: entered(ProposalStatus::Rejected),
            applied: entered(ProposalStatus::Applied),
            expired: entered(ProposalStatus::Expired),
            denied: load(&self.denied),
            invalid_transitions: load(&self.invalid_transitions),
            stale_baselines: load(&self.stale_baselines),
            lost_races: load(&self.lost_races),
            audit_failures: load(&self.audit_failures),
            event_failures: load(&self.event_failures),
        }
    }

    pub(crate) fn created(&self) {
        self.created.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn entered(&self, status: ProposalStatus) {
        if let Some(index) = status_index(status) {
            self.entered[index].fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn denied(&self) {
        self.denied.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn invalid_transition(&self) {
        self.invalid_transitions.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn stale_baseline(&self) {
        self.stale_baselines.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn lost_race(&self) {
        self.lost_races.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn audit_failed(&self) {
        self.audit_failures.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn event_failed(&self) {
        self.event_failures.fetch_add(1, Ordering::Relaxed);
    }
}

/// The span of one governed tool call, a child of `parent` (the chat turn's span; a call
/// outside a turn passes [`Span::current`]).
pub fn tool_span(parent: &Span, tool_name: &str, call_id: &str) -> Span {
    tracing::info_span!(
        parent: parent,
        "execute_tool",
        otel.name = %format_args!("execute_tool {tool_name}"),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool_name,
        gen_ai.tool.call.id = %call_id,
        gen_ai.tool.type = "function",
        weaver.tool.outcome = tracing::field::Empty,
        error.type = tracing::field::Empty,
    )
}

/// Records how the call ended on its span.
pub(crate) fn record_outcome(span: &Span, outcome: AiToolOutcome, error_code: Option<&str>) {
    let outcome = match outcome {
        AiToolOutcome::Success => "success",
        AiToolOutcome::Error => "error",
        AiToolOutcome::Denied => "denied",
        _ => "unknown",
    };
    span.record("weaver.tool.outcome", outcome);
    if let Some(code) = error_code {
        span.record("error.type", code);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_count_outcomes_and_denials_per_step() {
        let counters = ToolCounters::default();
        counters.invoked();
        counters.finished("demo.read", AiToolOutcome::Success, true);
        counters.invoked();
        counters.denied_at(GovernanceStep::CheckEnablement);
        counters.finished("demo.read", AiToolOutcome::Denied, false);
        let snapshot = counters.snapshot();
        assert_eq!(
            (snapshot.invocations, snapshot.succeeded, snapshot.denied),
            (2, 1, 1)
        );
        assert_eq!(snapshot.truncated, 1);
        assert_eq!(snapshot.denied_by_step, [0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(snapshot.by_tool["demo.read"], [1, 0, 1]);
    }

    #[test]
    fn turns_count_outcomes_and_place_first_event_latencies_in_buckets() {
        let turns = TurnCounters::default();
        turns.ended("completed");
        turns.ended("cancelled");
        turns.ended("failed");
        turns.first_event(Duration::from_micros(800));
        turns.first_event(Duration::from_millis(40));
        turns.first_event(Duration::from_secs(9));
        let snapshot = turns.snapshot();
        assert_eq!(
            (snapshot.completed, snapshot.failed, snapshot.cancelled),
            (1, 1, 1)
        );
        let mut expected = [0; 13];
        expected[0] = 1; // <= 1 ms
        expected[5] = 1; // <= 50 ms
        expected[12] = 1; // beyond 5 s
        assert_eq!(snapshot.first_event_buckets, expected);
        assert_eq!(snapshot.first_event_micros, 800 + 40_000 + 9_000_000);
    }

    /// Keeps what it observes.
    #[derive(Debug, Default)]
    struct Seen(parking_lot::Mutex<Vec<String>>);

    impl MeasurementObserver for Seen {
        fn first_event(&self, latency: Duration) {
            self.0.lock().push(format!("first {}", latency.as_millis()));
        }

        fn token_usage(&self, provider: &str, usage: TokenUsage) {
            self.0.lock().push(format!(
                "{provider} {} {}",
                usage.input_tokens, usage.output_tokens
            ));
        }
    }

    #[test]
    fn an_observer_sees_each_measurement_the_counters_keep() {
        let metrics = Metrics::new();
        metrics.first_event(Duration::from_millis(3));
        let seen = Arc::new(Seen::default());
        assert!(metrics.observe(seen.clone()));
        assert!(!metrics.observe(Arc::new(Seen::default())), "one observer");
        metrics.first_event(Duration::from_millis(40));
        let usage = TokenUsage {
            input_tokens: 12,
            output_tokens: 5,
        };
        metrics.token_usage("openai", usage);
        assert_eq!(*seen.0.lock(), ["first 40", "openai 12 5"]);
        assert_eq!(metrics.tokens.snapshot(), usage);
        assert_eq!(
            metrics
                .turns
                .snapshot()
                .first_event_buckets
                .iter()
                .sum::<u64>(),
            2,
            "the counters keep every measurement, observed or not"
        );
    }

    #[test]
    fn proposal_counters_count_each_state_entered() {
        let counters = ProposalCounters::default();
        counters.created();
        counters.entered(ProposalStatus::Validated);
        counters.entered(ProposalStatus::Approved);
        counters.entered(ProposalStatus::Applied);
        counters.lost_race();
        let snapshot = counters.snapshot();
        assert_eq!(
            (snapshot.created, snapshot.validated, snapshot.approved),
            (1, 1, 1)
        );
        assert_eq!(
            (snapshot.applied, snapshot.blocked, snapshot.lost_races),
            (1, 0, 1)
        );
    }
}
