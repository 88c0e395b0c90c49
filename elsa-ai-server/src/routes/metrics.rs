//! `GET /metrics`: the host's counters in the Prometheus text format, for `admin:ai` on the
//! API, and for anyone on the separate `[telemetry] metrics_listen` listener.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use elsa_ai_abstractions::Permission;
use elsa_ai_host::{FIRST_EVENT_BUCKETS, GovernanceStep, Metrics};

use crate::api::WeaverApi;
use crate::error::{ApiError, ErrorBody};
use crate::extract::Caller;

/// The content type of the Prometheus text exposition format.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Turns by outcome, governed tool calls by tool and outcome, denials by governance step,
/// proposal transitions, model token usage and the first-event latency histogram, in the
/// Prometheus text format.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "meta",
    responses(
        (status = 200, description = "The counters, in the Prometheus text format.", body = String, content_type = "text/plain"),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
        (status = 403, description = "Needs `admin:ai`.", body = ErrorBody),
    )
)]
pub(crate) async fn metrics(
    State(api): State<WeaverApi>,
    Caller(caller): Caller,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(&Permission::ADMIN_AI, "reading metrics")?;
    Ok((
        [(header::CONTENT_TYPE, PROMETHEUS_TEXT)],
        prometheus_text(&api.parts().metrics),
    ))
}

/// The router of the `[telemetry] metrics_listen` listener: `GET /metrics` and nothing else,
/// without credentials (whoever can reach that address may scrape it).
pub(crate) fn unauthenticated_metrics(metrics: Arc<Metrics>) -> Router {
    Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let text = prometheus_text(&metrics);
            async move { ([(header::CONTENT_TYPE, PROMETHEUS_TEXT)], text) }
        }),
    )
}

/// A label value as the format quotes it.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Writes one metric family's `HELP` and `TYPE` lines.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// The counters in the Prometheus text exposition format (version 0.0.4).
pub(crate) fn prometheus_text(metrics: &Metrics) -> String {
    let mut out = String::new();
    let turns = metrics.turns.snapshot();
    family(
        &mut out,
        "weaver_turns_total",
        "counter",
        "Chat turns by how they ended.",
    );
    for (outcome, value) in [
        ("completed", turns.completed),
        ("failed", turns.failed),
        ("cancelled", turns.cancelled),
    ] {
        let _ = writeln!(out, "weaver_turns_total{{outcome=\"{outcome}\"}} {value}");
    }

    let tools = metrics.tools.snapshot();
    family(
        &mut out,
        "weaver_tool_calls_total",
        "counter",
        "Governed tool calls by tool and outcome.",
    );
    for (tool, counts) in &tools.by_tool {
        for (outcome, value) in ["success", "error", "denied"].iter().zip(counts) {
            let _ = writeln!(
                out,
                "weaver_tool_calls_total{{tool=\"{}\",outcome=\"{outcome}\"}} {value}",
                label(tool)
            );
        }
    }
    family(
        &mut out,
        "weaver_tool_denials_total",
        "counter",
        "Tool calls refused, by the governance step that refused them.",
    );
    for (step, value) in GovernanceStep::ALL.iter().zip(tools.denied_by_step) {
        let _ = writeln!(
            out,
            "weaver_tool_denials_total{{step=\"{}\"}} {value}",
            step.as_str()
        );
    }

    let proposals = metrics.proposals.snapshot();
    family(
        &mut out,
        "weaver_proposal_transitions_total",
        "counter",
        "Proposals entering each state.",
    );
    for (status, value) in [
        ("Validated", proposals.validated),
        ("Blocked", proposals.blocked),
        ("Approved", proposals.approved),
        ("Rejected", proposals.rejected),
        ("Applied", proposals.applied),
        ("Expired", proposals.expired),
    ] {
        let _ = writeln!(
            out,
            "weaver_proposal_transitions_total{{status=\"{status}\"}} {value}"
        );
    }

    let tokens = metrics.tokens.snapshot();
    family(
        &mut out,
        "gen_ai_client_token_usage_total",
        "counter",
        "Model tokens used (gen_ai.client.token.usage), by token type.",
    );
    for (kind, value) in [
        ("input", tokens.input_tokens),
        ("output", tokens.output_tokens),
    ] {
        let _ = writeln!(
            out,
            "gen_ai_client_token_usage_total{{gen_ai_token_type=\"{kind}\"}} {value}"
        );
    }

    family(
        &mut out,
        "weaver_first_event_seconds",
        "histogram",
        "Time from a chat request to its first stream event.",
    );
    let mut cumulative = 0;
    for (bound, count) in FIRST_EVENT_BUCKETS.iter().zip(turns.first_event_buckets) {
        cumulative += count;
        let _ = writeln!(
            out,
            "weaver_first_event_seconds_bucket{{le=\"{bound}\"}} {cumulative}"
        );
    }
    cumulative += turns.first_event_buckets[FIRST_EVENT_BUCKETS.len()];
    let _ = writeln!(
        out,
        "weaver_first_event_seconds_bucket{{le=\"+Inf\"}} {cumulative}"
    );
    let _ = writeln!(
        out,
        "weaver_first_event_seconds_sum {}",
        turns.first_event_micros as f64 / 1e6
    );
    let _ = writeln!(out, "weaver_first_event_seconds_count {cumulative}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_host_exposes_every_family_with_zeroes() {
        let text = prometheus_text(&Metrics::new());
        for family in [
            "weaver_turns_total",
            "weaver_tool_calls_total",
            "weaver_tool_denials_total",
            "weaver_proposal_transitions_total",
            "gen_ai_client_token_usage_total",
            "weaver_first_event_seconds",
        ] {
            assert!(
                text.contains(&format!("# TYPE {family} ")),
                "{family}\n{text}"
            );
        }
        assert!(text.contains("weaver_first_event_seconds_bucket{le=\"+Inf\"} 0"));
        assert!(text.contains("weaver_tool_denials_total{step=\"findTool\"} 0"));
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
