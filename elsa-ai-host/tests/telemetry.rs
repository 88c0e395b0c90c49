//! Governed tool calls are traced with the OpenTelemetry GenAI attribute names.
//!
//! A binary of its own: `tracing` caches whether a callsite is enabled when the callsite is
//! first hit, and a test without a subscriber hitting it on another thread at the moment a
//! test here installs one can leave it cached as disabled. Every test here installs a
//! subscriber before it runs anything.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use elsa_ai_host::testing::chat::{ChatHarness, ChatHarnessBuilder};
use elsa_ai_host::testing::governance::{
    GovernanceHarness, TestTool, invocation, proposal_tool, read_tool,
};
use elsa_ai_scripted::Script;
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// A span's name and its fields, rendered as strings.
type SpanFields = (String, BTreeMap<String, String>);

/// Every span created, in order, with the fields recorded on it (also later, by id).
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<SpanFields>>>, Arc<Mutex<Vec<u64>>>);

impl Spans {
    /// Records every span this thread creates until the guard drops.
    fn install(&self) -> tracing::subscriber::DefaultGuard {
        tracing::subscriber::set_default(tracing_subscriber::registry().with(self.clone()))
    }

    /// The fields of every span named `name`, in the order they were created.
    fn named(&self, name: &str) -> Vec<BTreeMap<String, String>> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(span, _)| span == name)
            .map(|(_, fields)| fields.clone())
            .collect()
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S> Layer<S> for Spans
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        // The enclosing span, under the pseudo-field `parent`.
        if let Some(parent) = ctx.span(id).and_then(|span| span.parent()) {
            fields.insert("parent".to_owned(), parent.name().to_owned());
        }
        self.0
            .lock()
            .unwrap()
            .push((attrs.metadata().name().to_owned(), fields));
        self.1.lock().unwrap().push(id.into_u64());
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        // Ids of closed spans are reused: the latest span with the id is the live one.
        let index = self
            .1
            .lock()
            .unwrap()
            .iter()
            .rposition(|i| *i == id.into_u64());
        if let Some(index) = index {
            values.record(&mut Fields(&mut self.0.lock().unwrap()[index].1));
        }
    }
}

/// A chat whose scripted turn calls `demo.read` (a tool that echoes its arguments) once and
/// replies `done`.
fn one_tool_call_chat() -> ChatHarnessBuilder {
    ChatHarness::builder()
        .tool(Arc::new(TestTool::echo(read_tool("demo.read"))))
        .script(
            Script::new()
                .tool_call("demo.read", json!({}))
                .reply("done"),
        )
}

#[tokio::test(flavor = "current_thread")]
async fn each_call_has_an_execute_tool_span_with_genai_attributes_and_its_outcome() {
    let spans = Spans::default();
    let _guard = spans.install();
    let harness = GovernanceHarness::builder()
        .definition(read_tool("demo.read"))
        .definition(proposal_tool("demo.propose"))
        .build();
    let invoker = harness.invoker();
    invoker.invoke(invocation("demo.read", json!({}))).await;
    let mut denied = invocation("demo.propose", json!({}));
    denied.call_id = "call-2".into();
    invoker.invoke(denied).await;

    let tools = spans.named("execute_tool");
    assert_eq!(tools.len(), 2);
    let first = &tools[0];
    assert_eq!(first["gen_ai.operation.name"], "execute_tool");
    assert_eq!(first["gen_ai.tool.name"], "demo.read");
    assert_eq!(first["gen_ai.tool.call.id"], "call-1");
    assert_eq!(first["gen_ai.tool.type"], "function");
    assert_eq!(first["otel.name"], "execute_tool demo.read");
    assert_eq!(first["weaver.tool.outcome"], "success");
    assert_eq!(tools[1]["weaver.tool.outcome"], "denied");
    assert_eq!(tools[1]["error.type"], "tool_disabled");
}

#[tokio::test(flavor = "current_thread")]
async fn each_chat_turn_has_a_chat_span_with_genai_attributes_and_its_outcome() {
    use elsa_ai_abstractions::AiStreamEventType;
    use elsa_ai_host::testing::governance::TEST_AGENT;

    let spans = Spans::default();
    let _guard = spans.install();
    let harness = one_tool_call_chat().build();
    let events = harness.run(harness.request("hi")).await;
    assert_eq!(
        events.last().unwrap().event_type,
        AiStreamEventType::ConversationCompleted
    );

    let chats = spans.named("chat");
    assert_eq!(chats.len(), 1);
    let chat = &chats[0];
    assert_eq!(chat["gen_ai.operation.name"], "chat");
    assert_eq!(chat["gen_ai.system"], "scripted");
    assert_eq!(chat["gen_ai.provider.name"], "scripted");
    assert_eq!(
        chat["gen_ai.conversation.id"],
        events[0].conversation_id.as_str()
    );
    assert_eq!(chat["gen_ai.agent.name"], TEST_AGENT);
    assert_eq!(chat["otel.name"], "chat scripted");
    assert_eq!(chat["weaver.turn.tool_calls"], "1");
    assert_eq!(chat["weaver.turn.outcome"], "completed");
    let tools = spans.named("execute_tool");
    let tool = tools.first().expect("the tool call is traced");
    assert_eq!(
        tool.get("parent").map(String::as_str),
        Some("chat"),
        "tool calls are traced inside the turn"
    );
    assert_eq!(tool["gen_ai.tool.name"], "demo.read");
}

/// Trace ids from the `tracing` registry itself: a span's trace is its root span, written as
/// 32 hex digits. It stands in for OpenTelemetry's ids, which the server reads the same way.
struct RootSpanTraces;

impl elsa_ai_host::TraceIdSource for RootSpanTraces {
    fn trace_id(&self, span: &tracing::Span) -> Option<String> {
        let mut root = None;
        span.with_subscriber(|(id, dispatch)| {
            let registry = dispatch.downcast_ref::<tracing_subscriber::Registry>()?;
            root = registry
                .span(id)?
                .scope()
                .from_root()
                .next()
                .map(|root| format!("{:032x}", root.id().into_u64()));
            Some(())
        });
        root
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_turns_audit_records_and_its_first_event_name_the_turns_trace() {
    use elsa_ai_abstractions::{AiAuditLog, AiStreamEventType, AuditQuery};

    let spans = Spans::default();
    let _guard = spans.install();
    let harness = one_tool_call_chat()
        .traces(Arc::new(RootSpanTraces))
        .build();
    let events = harness.run(harness.request("hi")).await;
    let started = &events[0];
    assert_eq!(started.event_type, AiStreamEventType::ConversationStarted);
    let trace = started.data["traceId"]
        .as_str()
        .expect("conversation.started names the trace")
        .to_owned();
    assert_eq!(trace.len(), 32);

    let records = harness
        .audit
        .query(&harness.caller().tenant_id, &AuditQuery::default())
        .await
        .unwrap()
        .items;
    let actions: Vec<&str> = records.iter().map(|r| r.action.as_str()).collect();
    for action in ["prompt.submitted", "tool.invoked", "turn.completed"] {
        assert!(actions.contains(&action), "{action} in {actions:?}");
    }
    for record in &records {
        assert_eq!(
            record.trace_id.as_deref(),
            Some(trace.as_str()),
            "{} names the turn's trace",
            record.action.as_str()
        );
    }

    // A second turn is a trace of its own.
    let next = harness.run(harness.request("again")).await;
    assert_ne!(next[0].data["traceId"].as_str(), Some(trace.as_str()));
}

#[tokio::test(flavor = "current_thread")]
async fn an_untraced_host_writes_no_trace_id() {
    use elsa_ai_abstractions::{AiAuditLog, AuditQuery};

    // Spans exist (as in every test of this suite, so that no test caches a callsite as
    // disabled for the others), but nothing names their trace.
    let _guard = Spans::default().install();
    let harness = ChatHarness::builder()
        .script(Script::new().reply("done"))
        .build();
    let events = harness.run(harness.request("hi")).await;
    assert!(events[0].data.get("traceId").is_none(), "{:?}", events[0]);
    let records = harness
        .audit
        .query(&harness.caller().tenant_id, &AuditQuery::default())
        .await
        .unwrap()
        .items;
    assert!(!records.is_empty());
    assert!(records.iter().all(|r| r.trace_id.is_none()));
}
