//! Telemetry leaving the process: the host's `tracing` spans as OpenTelemetry spans, the
//! shared [`Metrics`] as OpenTelemetry metrics, both exported over OTLP/HTTP (protobuf) when
//! `[telemetry] otlp_endpoint` is set, and the trace ids the host writes into audit records
//! and `conversation.started`.
//!
//! [`Telemetry::layer`] is a `tracing_subscriber` layer that gives weaver's own spans (the
//! `chat` span of each turn, `execute_tool` of each governed call) OpenTelemetry span and
//! trace ids, whether or not anything is exported; with an endpoint, finished spans are
//! batched to `<endpoint>/v1/traces`. Every name, attribute and event text passes the
//! server's redactor before it leaves ([`Telemetry::redact_with`]), as log lines do. Metrics
//! are read from the shared [`Metrics`] at each export (counters), and the two histograms
//! (`weaver.first_event.duration`, `gen_ai.client.token.usage`) are fed as measurements are
//! made. [`Telemetry::shutdown`] flushes both when the server stops.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use elsa_ai_host::{
    FIRST_EVENT_BUCKETS, GovernanceStep, MeasurementObserver, Metrics, Redactor, TokenUsage,
    TraceIdSource,
};
use opentelemetry::metrics::{Histogram, Meter, MeterProvider as _};
use opentelemetry::trace::{Status, TraceContextExt as _, TracerProvider as _};
use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::FilterFn;
use tracing_subscriber::registry::LookupSpan;

use crate::config::{ConfigError, OtlpTarget, TelemetryConfig};

/// The instrumentation scope of weaver's spans and metrics.
const SCOPE: &str = "weaver";

/// How long the exporters get to flush at shutdown.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// The bucket bounds of `gen_ai.client.token.usage`, as the GenAI semantic conventions
/// advise (powers of four).
const TOKEN_BUCKETS: [f64; 14] = [
    1.0,
    4.0,
    16.0,
    64.0,
    256.0,
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262_144.0,
    1_048_576.0,
    4_194_304.0,
    16_777_216.0,
    67_108_864.0,
];

/// The targets whose spans and events become OpenTelemetry data: weaver's own crates, not
/// its dependencies' (which would add noise and text weaver does not choose).
const OWN_TARGETS: [&str; 3] = ["elsa_ai_", "elsa_workflows", "weaver"];

/// Why telemetry cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// `[telemetry]` is not usable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An OTLP exporter cannot be built.
    #[error("[telemetry] the OTLP exporter cannot be built: {0}")]
    Exporter(String),
}

/// The telemetry pipeline of one `weaver` process. Cheap to clone (shared).
#[derive(Clone)]
pub struct Telemetry {
    tracer: SdkTracerProvider,
    meter: Option<SdkMeterProvider>,
    redactor: Arc<OnceLock<Arc<Redactor>>>,
    target: Option<OtlpTarget>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl Telemetry {
    /// The pipeline `[telemetry]` configures: spans always get trace ids; with
    /// `otlp_endpoint`, spans and metrics are exported there, with the configured headers
    /// (secret ones read through `env`). Nothing is sent until spans end or metrics are due;
    /// an unreachable collector does not stop the server.
    pub fn start(
        config: &TelemetryConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, TelemetryError> {
        let target = config.otlp(env)?;
        let redactor = Arc::new(OnceLock::new());
        let mut tracer = SdkTracerProvider::builder();
        let mut meter = None;
        if let Some(target) = &target {
            let resource = Resource::builder()
                .with_service_name(target.service_name.clone())
                .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
                .build();
            // The exporter percent-decodes header values; encoding `%` keeps them as given.
            let headers: HashMap<String, String> = target
                .all_headers()
                .map(|(name, value)| (name.to_owned(), value.replace('%', "%25")))
                .collect();
            let spans = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_headers(headers.clone())
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(target.traces.clone())
                .build()
                .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
            tracer =
                tracer
                    .with_resource(resource.clone())
                    .with_batch_exporter(RedactingSpanExporter {
                        inner: spans,
                        redactor: redactor.clone(),
                        fallback: Arc::new(Redactor::default()),
                    });
            let metrics = opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_headers(headers)
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(target.metrics.clone())
                .with_temporality(Temporality::Cumulative)
                .build()
                .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
            let reader = PeriodicReader::builder(metrics)
                .with_interval(target.metrics_interval)
                .build();
            meter = Some(
                SdkMeterProvider::builder()
                    .with_resource(resource)
                    .with_reader(reader)
                    .build(),
            );
        }
        Ok(Self {
            tracer: tracer.build(),
            meter,
            redactor,
            target,
        })
    }

    /// Where spans and metrics go, `None` when nothing is exported.
    pub fn target(&self) -> Option<&OtlpTarget> {
        self.target.as_ref()
    }

    /// The layer giving weaver's spans OpenTelemetry ids (and exporting them when an
    /// endpoint is configured); add it to the process's subscriber.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        let own = FilterFn::new(|metadata| {
            OWN_TARGETS
                .iter()
                .any(|prefix| metadata.target().starts_with(prefix))
        });
        tracing_opentelemetry::layer()
            .with_tracer(self.tracer.tracer(SCOPE))
            .with_filter(own)
    }

    /// Redacts every later exported span with `redactor` (the server's, with its secrets);
    /// until then, with the built-in rules. Only the first call takes effect.
    pub fn redact_with(&self, redactor: Arc<Redactor>) {
        let _ = self.redactor.set(redactor);
    }

    /// Exports `metrics` (when an endpoint is configured): the counters read at each export,
    /// the histograms fed from each measurement.
    pub fn export_metrics(&self, metrics: &Arc<Metrics>) {
        let Some(provider) = &self.meter else {
            return;
        };
        let meter = provider.meter(SCOPE);
        register_counters(&meter, metrics);
        let histograms = Arc::new(OtelHistograms {
            first_event: meter
                .f64_histogram("weaver.first_event.duration")
                .with_description("Time from a chat request to its first stream event.")
                .with_unit("s")
                .with_boundaries(FIRST_EVENT_BUCKETS.to_vec())
                .build(),
            tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_description("Model tokens used per chat turn, by token type.")
                .with_unit("{token}")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
        });
        if !metrics.observe(histograms) {
            tracing::warn!("the metrics already have an observer; histograms are not exported");
        }
    }

    /// Flushes what is still batched and stops the exporters (at most a few seconds each).
    pub async fn shutdown(&self) {
        let tracer = self.tracer.clone();
        let meter = self.meter.clone();
        // Both block until their worker threads have exported: not on a runtime thread.
        let stopped = tokio::task::spawn_blocking(move || {
            let spans = tracer.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
            let metrics = meter.map(|m| m.shutdown_with_timeout(SHUTDOWN_TIMEOUT));
            (spans, metrics)
        })
        .await;
        match stopped {
            Ok((spans, metrics)) => {
                if let Err(error) = spans {
                    tracing::warn!(%error, "the last spans could not be exported");
                }
                if let Some(Err(error)) = metrics {
                    tracing::warn!(%error, "the last metrics could not be exported");
                }
            }
            Err(error) => tracing::warn!(%error, "telemetry did not shut down cleanly"),
        }
    }
}

/// Reads trace ids from OpenTelemetry's span context, as the [`Telemetry::layer`] (or any
/// `tracing-opentelemetry` layer in the process's subscriber) assigns them. A span no such
/// layer sees has none.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenTelemetryTraceIds;

impl TraceIdSource for OpenTelemetryTraceIds {
    fn trace_id(&self, span: &Span) -> Option<String> {
        let context = span.context();
        let span_context = context.span().span_context().clone();
        span_context
            .is_valid()
            .then(|| span_context.trace_id().to_string())
    }
}

/// The counters of `metrics`, read at each export.
fn register_counters(meter: &Meter, metrics: &Arc<Metrics>) {
    let turns = metrics.clone();
    meter
        .u64_observable_counter("weaver.turns")
        .with_description("Chat turns by how they ended.")
        .with_unit("{turn}")
        .with_callback(move |observer| {
            let snapshot = turns.turns.snapshot();
            for (outcome, value) in [
                ("completed", snapshot.completed),
                ("failed", snapshot.failed),
                ("cancelled", snapshot.cancelled),
            ] {
                observer.observe(value, &[KeyValue::new("outcome", outcome)]);
            }
        })
        .build();
    let tools = metrics.clone();
    meter
        .u64_observable_counter("weaver.tool.calls")
        .with_description("Governed tool calls by tool and outcome.")
        .with_unit("{call}")
        .with_callback(move |observer| {
            for (tool, counts) in tools.tools.snapshot().by_tool {
                for (outcome, value) in ["success", "error", "denied"].into_iter().zip(counts) {
                    observer.observe(
                        value,
                        &[
                            KeyValue::new("tool", tool.clone()),
                            KeyValue::new("outcome", outcome),
                        ],
                    );
                }
            }
        })
        .build();
    let denials = metrics.clone();
    meter
        .u64_observable_counter("weaver.tool.denials")
        .with_description("Tool calls refused, by the governance step that refused them.")
        .with_unit("{call}")
        .with_callback(move |observer| {
            let by_step = denials.tools.snapshot().denied_by_step;
            for (step, value) in GovernanceStep::ALL.iter().zip(by_step) {
                observer.observe(value, &[KeyValue::new("step", step.as_str())]);
            }
        })
        .build();
    let proposals = metrics.clone();
    meter
        .u64_observable_counter("weaver.proposal.transitions")
        .with_description("Proposals entering each state.")
        .with_unit("{transition}")
        .with_callback(move |observer| {
            let s = proposals.proposals.snapshot();
            for (status, value) in [
                ("Validated", s.validated),
                ("Blocked", s.blocked),
                ("Approved", s.approved),
                ("Rejected", s.rejected),
                ("Applied", s.applied),
                ("Expired", s.expired),
            ] {
                observer.observe(value, &[KeyValue::new("status", status)]);
            }
        })
        .build();
}

/// The histograms fed from each measurement.
#[derive(Debug)]
struct OtelHistograms {
    first_event: Histogram<f64>,
    tokens: Histogram<u64>,
}

impl MeasurementObserver for OtelHistograms {
    fn first_event(&self, latency: Duration) {
        self.first_event.record(latency.as_secs_f64(), &[]);
    }

    fn token_usage(&self, provider: &str, usage: TokenUsage) {
        for (kind, value) in [
            ("input", usage.input_tokens),
            ("output", usage.output_tokens),
        ] {
            self.tokens.record(
                value,
                &[
                    KeyValue::new("gen_ai.operation.name", "chat"),
                    KeyValue::new("gen_ai.provider.name", provider.to_owned()),
                    KeyValue::new("gen_ai.token.type", kind),
                ],
            );
        }
    }
}

/// A span exporter that redacts every text of a span (name, string attributes, events,
/// links, status) before handing the batch on.
#[derive(Debug)]
struct RedactingSpanExporter<E> {
    inner: E,
    redactor: Arc<OnceLock<Arc<Redactor>>>,
    fallback: Arc<Redactor>,
}

impl<E: SpanExporter> SpanExporter for RedactingSpanExporter<E> {
    async fn export(&self, mut batch: Vec<SpanData>) -> OTelSdkResult {
        let redactor = self.redactor.get().unwrap_or(&self.fallback);
        for span in &mut batch {
            redact_span(redactor, span);
        }
        self.inner.export(batch).await
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// Every text of `span`, redacted.
fn redact_span(redactor: &Redactor, span: &mut SpanData) {
    if let std::borrow::Cow::Owned(name) = redactor.redact_str(&span.name) {
        span.name = name.into();
    }
    redact_attributes(redactor, &mut span.attributes);
    for event in &mut span.events.events {
        if let std::borrow::Cow::Owned(name) = redactor.redact_str(&event.name) {
            event.name = name.into();
        }
        redact_attributes(redactor, &mut event.attributes);
    }
    for link in &mut span.links.links {
        redact_attributes(redactor, &mut link.attributes);
    }
    if let Status::Error { description } = &mut span.status
        && let std::borrow::Cow::Owned(text) = redactor.redact_str(description)
    {
        *description = text.into();
    }
}

fn redact_attributes(redactor: &Redactor, attributes: &mut [KeyValue]) {
    for attribute in attributes {
        let redacted = match &attribute.value {
            Value::String(text) => match redactor.redact_str(text.as_str()) {
                std::borrow::Cow::Owned(text) => Some(Value::String(text.into())),
                std::borrow::Cow::Borrowed(_) => None,
            },
            Value::Array(Array::String(texts)) => Some(Value::Array(Array::String(
                texts
                    .iter()
                    .map(|t| StringValue::from(redactor.redact_str(t.as_str()).into_owned()))
                    .collect(),
            ))),
            _ => None,
        };
        if let Some(value) = redacted {
            attribute.value = value;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanContext, SpanId, SpanKind, TraceFlags, TraceId, TraceState};
    use opentelemetry_sdk::trace::{SpanEvents, SpanLinks};

    const SECRET: &str = "sk-live-telemetry-secret-0123456789";

    fn span_with(text: &str) -> SpanData {
        let mut events = SpanEvents::default();
        events.events.push(opentelemetry::trace::Event::new(
            format!("failed with {text}"),
            std::time::SystemTime::now(),
            vec![KeyValue::new("message", text.to_owned())],
            0,
        ));
        SpanData {
            span_context: SpanContext::new(
                TraceId::from(7),
                SpanId::from(9),
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: format!("execute_tool {text}").into(),
            start_time: std::time::SystemTime::now(),
            end_time: std::time::SystemTime::now(),
            attributes: vec![
                KeyValue::new("gen_ai.tool.name", text.to_owned()),
                KeyValue::new(
                    "args",
                    Value::Array(Array::String(vec![StringValue::from(text.to_owned())])),
                ),
                KeyValue::new("count", 3),
            ],
            dropped_attributes_count: 0,
            events,
            links: SpanLinks::default(),
            status: Status::error(format!("bad {text}")),
            instrumentation_scope: Default::default(),
        }
    }

    #[test]
    fn every_text_of_a_span_is_redacted_before_export() {
        let redactor = Redactor::builder().secret(SECRET).build().unwrap();
        let mut span = span_with(SECRET);
        redact_span(&redactor, &mut span);
        let shown = format!("{span:?}");
        assert!(!shown.contains(SECRET), "{shown}");
        assert!(shown.contains("[REDACTED]"), "{shown}");
        assert_eq!(span.attributes[2], KeyValue::new("count", 3));
        assert_eq!(span.span_context.trace_id(), TraceId::from(7));
    }

    #[test]
    fn without_an_endpoint_nothing_is_exported_but_spans_get_trace_ids() {
        use tracing_subscriber::layer::SubscriberExt as _;

        let telemetry = Telemetry::start(&TelemetryConfig::default(), &|_| None).unwrap();
        assert!(telemetry.target().is_none());
        let metrics = Arc::new(Metrics::new());
        telemetry.export_metrics(&metrics);
        let subscriber = tracing_subscriber::registry().with(telemetry.layer());
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("chat");
            let child = tracing::info_span!(parent: &span, "execute_tool");
            let trace = OpenTelemetryTraceIds.trace_id(&span).expect("a trace id");
            assert_eq!(trace.len(), 32);
            assert!(trace.bytes().all(|b| b.is_ascii_hexdigit()));
            assert_eq!(OpenTelemetryTraceIds.trace_id(&child), Some(trace.clone()));
            let other = tracing::info_span!("chat");
            assert_ne!(OpenTelemetryTraceIds.trace_id(&other), Some(trace));
        });
        assert_eq!(OpenTelemetryTraceIds.trace_id(&Span::none()), None);
    }
}
