//! Governed tool calls are traced with the OpenTelemetry GenAI attribute names.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use elsa_ai_host::testing::governance::{GovernanceHarness, invocation, proposal_tool, read_tool};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// A span's name and its fields, rendered as strings.
type SpanFields = (String, BTreeMap<String, String>);

#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<SpanFields>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: tracing::Subscriber> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        self.0
            .lock()
            .unwrap()
            .push((attrs.metadata().name().to_owned(), fields));
    }

    fn on_record(&self, _: &Id, values: &Record<'_>, _: Context<'_, S>) {
        if let Some((_, fields)) = self.0.lock().unwrap().last_mut() {
            values.record(&mut Fields(fields));
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn each_call_has_an_execute_tool_span_with_genai_attributes_and_its_outcome() {
    let spans = Spans::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));
    let harness = GovernanceHarness::builder()
        .definition(read_tool("demo.read"))
        .definition(proposal_tool("demo.propose"))
        .build();
    let invoker = harness.invoker();
    invoker.invoke(invocation("demo.read", json!({}))).await;
    let mut denied = invocation("demo.propose", json!({}));
    denied.call_id = "call-2".into();
    invoker.invoke(denied).await;

    let spans = spans.0.lock().unwrap().clone();
    let tools: Vec<&BTreeMap<String, String>> = spans
        .iter()
        .filter(|(name, _)| name == "execute_tool")
        .map(|(_, f)| f)
        .collect();
    assert_eq!(tools.len(), 2);
    let first = tools[0];
    assert_eq!(first["gen_ai.operation.name"], "execute_tool");
    assert_eq!(first["gen_ai.tool.name"], "demo.read");
    assert_eq!(first["gen_ai.tool.call.id"], "call-1");
    assert_eq!(first["gen_ai.tool.type"], "function");
    assert_eq!(first["otel.name"], "execute_tool demo.read");
    assert_eq!(first["weaver.tool.outcome"], "success");
    assert_eq!(tools[1]["weaver.tool.outcome"], "denied");
    assert_eq!(tools[1]["error.type"], "tool_disabled");
}
