//! A stand-in OTLP/HTTP collector on `127.0.0.1`: it accepts `POST /v1/traces` and
//! `POST /v1/metrics` with protobuf bodies (`application/x-protobuf`), decodes them with the
//! OTLP protobuf definitions, keeps every request, and answers as a collector does (200,
//! an empty protobuf response). Anything else (another content type, a body that does not
//! decode) is answered 400 and counted in [`OtlpReceiver::refused`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point;
use parking_lot::Mutex;
use prost::Message;
use tokio_util::sync::CancellationToken;

/// The content type of OTLP/HTTP protobuf bodies.
pub const PROTOBUF: &str = "application/x-protobuf";

/// One span as received, its ids in lowercase hex.
#[derive(Clone, Debug, PartialEq)]
pub struct ReceivedSpan {
    /// The span name.
    pub name: String,
    /// The trace id (32 hex digits).
    pub trace_id: String,
    /// The span id (16 hex digits).
    pub span_id: String,
    /// The parent's span id, empty for a root span.
    pub parent_span_id: String,
    /// The span's attributes, values rendered as text.
    pub attributes: BTreeMap<String, String>,
    /// The `service.name` of the resource that sent it.
    pub service_name: Option<String>,
}

/// What one metric data point holds.
#[derive(Clone, Debug, PartialEq)]
pub enum ReceivedValue {
    /// A sum's or gauge's value.
    Number(f64),
    /// A histogram's count, sum and per-bucket (not cumulative) counts.
    Histogram {
        /// How many measurements.
        count: u64,
        /// Their sum.
        sum: f64,
        /// The bucket bounds.
        bounds: Vec<f64>,
        /// The count per bucket (one more than `bounds`).
        buckets: Vec<u64>,
    },
}

/// One metric data point as received.
#[derive(Clone, Debug, PartialEq)]
pub struct ReceivedPoint {
    /// The metric name.
    pub metric: String,
    /// The metric's unit.
    pub unit: String,
    /// The point's attributes, values rendered as text.
    pub attributes: BTreeMap<String, String>,
    /// The value.
    pub value: ReceivedValue,
}

#[derive(Default)]
struct Received {
    traces: Vec<ExportTraceServiceRequest>,
    metrics: Vec<ExportMetricsServiceRequest>,
    bodies: Vec<Bytes>,
    headers: Vec<HeaderMap>,
    refused: usize,
}

/// The running receiver; stops when dropped.
pub struct OtlpReceiver {
    address: SocketAddr,
    received: Arc<Mutex<Received>>,
    stop: CancellationToken,
}

impl std::fmt::Debug for OtlpReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpReceiver")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl OtlpReceiver {
    /// Listens on a free port of `127.0.0.1`.
    ///
    /// # Panics
    ///
    /// When no port can be bound.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free port for the OTLP receiver");
        let address = listener.local_addr().expect("the receiver's address");
        let received = Arc::new(Mutex::new(Received::default()));
        let app = Router::new()
            .route("/v1/traces", post(traces))
            .route("/v1/metrics", post(metrics))
            .with_state(received.clone());
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stopped.cancelled().await })
                .await;
        });
        Self {
            address,
            received,
            stop,
        }
    }

    /// The base URL to configure as the OTLP endpoint (`http://127.0.0.1:<port>`).
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Every span received so far, in arrival order.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        let received = self.received.lock();
        let mut spans = Vec::new();
        for request in &received.traces {
            for resource in &request.resource_spans {
                let service_name = resource
                    .resource
                    .as_ref()
                    .and_then(|r| attributes(&r.attributes).remove("service.name"));
                for scope in &resource.scope_spans {
                    for span in &scope.spans {
                        spans.push(ReceivedSpan {
                            name: span.name.clone(),
                            trace_id: hex(&span.trace_id),
                            span_id: hex(&span.span_id),
                            parent_span_id: hex(&span.parent_span_id),
                            attributes: attributes(&span.attributes),
                            service_name: service_name.clone(),
                        });
                    }
                }
            }
        }
        spans
    }

    /// Every metric data point received so far, in arrival order (a metric exported
    /// several times appears once per export).
    pub fn points(&self) -> Vec<ReceivedPoint> {
        let received = self.received.lock();
        let mut points = Vec::new();
        for request in &received.metrics {
            for resource in &request.resource_metrics {
                for scope in &resource.scope_metrics {
                    for metric in &scope.metrics {
                        let point = |attributes: &[KeyValue], value| ReceivedPoint {
                            metric: metric.name.clone(),
                            unit: metric.unit.clone(),
                            attributes: self::attributes(attributes),
                            value,
                        };
                        match &metric.data {
                            Some(Data::Sum(sum)) => points.extend(
                                sum.data_points
                                    .iter()
                                    .map(|p| point(&p.attributes, number(p.value))),
                            ),
                            Some(Data::Gauge(gauge)) => points.extend(
                                gauge
                                    .data_points
                                    .iter()
                                    .map(|p| point(&p.attributes, number(p.value))),
                            ),
                            Some(Data::Histogram(histogram)) => {
                                points.extend(histogram.data_points.iter().map(|p| {
                                    point(
                                        &p.attributes,
                                        ReceivedValue::Histogram {
                                            count: p.count,
                                            sum: p.sum.unwrap_or_default(),
                                            bounds: p.explicit_bounds.clone(),
                                            buckets: p.bucket_counts.clone(),
                                        },
                                    )
                                }));
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
        points
    }

    /// The latest exported value of each (metric, attributes) pair.
    pub fn latest(&self) -> BTreeMap<(String, BTreeMap<String, String>), ReceivedValue> {
        self.points()
            .into_iter()
            .map(|p| ((p.metric, p.attributes), p.value))
            .collect()
    }

    /// Every request body received, as sent (to check that nothing secret was exported).
    pub fn bodies(&self) -> Vec<Bytes> {
        self.received.lock().bodies.clone()
    }

    /// The headers of every request received, in arrival order.
    pub fn headers(&self) -> Vec<HeaderMap> {
        self.received.lock().headers.clone()
    }

    /// How many requests were refused (wrong content type, undecodable body).
    pub fn refused(&self) -> usize {
        self.received.lock().refused
    }

    /// Waits until `ready` holds for what was received, checking every 50 ms; `false` when
    /// `timeout` passes first.
    pub async fn wait_until(&self, timeout: Duration, ready: impl Fn(&Self) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if ready(self) {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Decodes one protobuf body of `T`, or says why not.
fn decode<T: Message + Default>(headers: &HeaderMap, body: &Bytes) -> Result<T, ()> {
    let protobuf = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(PROTOBUF));
    if !protobuf {
        return Err(());
    }
    T::decode(body.clone()).map_err(drop)
}

/// The answer of a collector: an empty export response, or 400.
fn answer(accepted: bool) -> (StatusCode, [(header::HeaderName, &'static str); 1], Vec<u8>) {
    let status = if accepted {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    };
    // Every field of the export responses is optional: the empty message is "all accepted".
    (status, [(header::CONTENT_TYPE, PROTOBUF)], Vec::new())
}

async fn traces(
    State(received): State<Arc<Mutex<Received>>>,
    headers: HeaderMap,
    body: Bytes,
) -> impl axum::response::IntoResponse {
    let mut received = received.lock();
    received.bodies.push(body.clone());
    received.headers.push(headers.clone());
    match decode::<ExportTraceServiceRequest>(&headers, &body) {
        Ok(request) => {
            received.traces.push(request);
            answer(true)
        }
        Err(()) => {
            received.refused += 1;
            answer(false)
        }
    }
}

async fn metrics(
    State(received): State<Arc<Mutex<Received>>>,
    headers: HeaderMap,
    body: Bytes,
) -> impl axum::response::IntoResponse {
    let mut received = received.lock();
    received.bodies.push(body.clone());
    received.headers.push(headers.clone());
    match decode::<ExportMetricsServiceRequest>(&headers, &body) {
        Ok(request) => {
            received.metrics.push(request);
            answer(true)
        }
        Err(()) => {
            received.refused += 1;
            answer(false)
        }
    }
}

fn number(value: Option<number_data_point::Value>) -> ReceivedValue {
    ReceivedValue::Number(match value {
        Some(number_data_point::Value::AsDouble(v)) => v,
        // Counts exported as integers; exact for the counts a test reaches.
        Some(number_data_point::Value::AsInt(v)) => v as f64,
        None => f64::NAN,
    })
}

fn attributes(attributes: &[KeyValue]) -> BTreeMap<String, String> {
    attributes
        .iter()
        .map(|kv| {
            (
                kv.key.clone(),
                kv.value.as_ref().map(text).unwrap_or_default(),
            )
        })
        .collect()
}

fn text(value: &AnyValue) -> String {
    match &value.value {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(any_value::Value::ArrayValue(array)) => {
            let items: Vec<String> = array.values.iter().map(text).collect();
            format!("[{}]", items.join(", "))
        }
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

    #[tokio::test]
    async fn spans_posted_as_protobuf_are_decoded_and_other_bodies_refused() {
        let receiver = OtlpReceiver::start().await;
        let request = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    scope: Some(InstrumentationScope::default()),
                    spans: vec![Span {
                        name: "chat".into(),
                        trace_id: vec![0xab; 16],
                        span_id: vec![1; 8],
                        attributes: vec![KeyValue {
                            key: "gen_ai.operation.name".into(),
                            value: Some(AnyValue {
                                value: Some(any_value::Value::StringValue("chat".into())),
                            }),
                            ..KeyValue::default()
                        }],
                        ..Span::default()
                    }],
                    ..ScopeSpans::default()
                }],
                ..ResourceSpans::default()
            }],
        };
        let url = format!("{}/v1/traces", receiver.endpoint());
        let client = reqwest::Client::new();
        let ok = client
            .post(&url)
            .header("content-type", PROTOBUF)
            .body(request.encode_to_vec())
            .send()
            .await
            .unwrap();
        assert_eq!(ok.status(), 200);
        let refused = client
            .post(&url)
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 400);
        let spans = receiver.spans();
        assert_eq!(spans.len(), 1);
        assert_eq!(spans[0].trace_id, "ab".repeat(16));
        assert_eq!(spans[0].parent_span_id, "");
        assert_eq!(spans[0].attributes["gen_ai.operation.name"], "chat");
        assert_eq!(receiver.refused(), 1);
    }
}
