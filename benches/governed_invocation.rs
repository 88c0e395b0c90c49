//! Overhead of governed tool execution: steps 1–11 around a no-op tool, with an in-memory
//! audit sink and enablement store, the turn's conversation checked for ownership (step 6)
//! and the tool events handed to an event sink (step 11) (target: under 10 µs per call).
//! The same call beside an audit sink that receives each record and keeps none tells the
//! governance apart from the in-memory log's keeping of every record; the same call with its
//! input made beforehand tells it apart from the making of the invocation.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use elsa_ai_abstractions::{
    AiAuditEvent, AiAuditSink, AiCaller, AiConversation, AiConversationStore, AiError,
    AiProviderToolInvocation, AiProviderToolInvoker, AiTool, AiToolDefinition,
    AiToolExecutionContext, ConversationId, Permission,
};
use elsa_ai_host::testing::governance::{empty_services, proposal_tool, read_tool, test_agent};
use elsa_ai_host::{
    AgentRegistry, EnablementCaching, HostCore, InMemoryAuditLog, InMemoryConversationStore,
    InMemoryStreamJournal, InMemoryToolEnablementStore, Redactor, ToolCallScope, ToolEvent,
    ToolEventSink, ToolRegistry,
};
use serde_json::{Value, json};

/// The no-op tool: returns a constant and records nothing, so the figure is the
/// governance around it.
struct NoopTool(AiToolDefinition);

#[async_trait]
impl AiTool for NoopTool {
    fn definition(&self) -> &AiToolDefinition {
        &self.0
    }

    async fn execute(&self, _: AiToolExecutionContext) -> Result<Value, AiError> {
        Ok(Value::Bool(true))
    }
}

/// Receives the tool events of the turn and only counts them: the cost measured is the
/// governor's, not a journal's.
#[derive(Default)]
struct CountingEvents(AtomicU64);

#[async_trait]
impl ToolEventSink for CountingEvents {
    async fn publish(&self, event: ToolEvent) -> Result<(), AiError> {
        std::hint::black_box(event);
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// Receives every audit record, built and redacted like any other, and keeps none.
struct DiscardingAudit;

#[async_trait]
impl AiAuditSink for DiscardingAudit {
    async fn record(&self, event: AiAuditEvent) -> Result<(), AiError> {
        drop(std::hint::black_box(event));
        Ok(())
    }
}

/// A governor over fresh in-memory stores and `audit`, bound to one turn of a conversation
/// the caller owns; fresh per sample so the audit log does not grow without bound across
/// the run.
async fn bound_invoker(audit: Arc<dyn AiAuditSink>) -> Arc<dyn AiProviderToolInvoker> {
    let mut definition = read_tool("workflow.getDefinition");
    definition.input_schema = json!({
        "type": "object",
        "properties": {"definitionId": {"type": "string"}, "version": {"type": "integer"}},
        "required": ["definitionId"],
    });
    let agents = AgentRegistry::builder()
        .with_builtin_agents()
        .and_then(|b| {
            b.agent(test_agent(
                "bench-agent",
                &["workflow.getDefinition", "workflow.proposeCreate"],
                &[Permission::READ_WORKFLOWS, Permission::PROPOSE_WORKFLOWS],
            ))
        })
        .expect("valid agents")
        .build();
    let registry = ToolRegistry::builder()
        .tool(Arc::new(NoopTool(definition)))
        .and_then(|b| b.tool(Arc::new(NoopTool(proposal_tool("workflow.proposeCreate")))))
        .expect("valid tools")
        // As weaver keeps the in-memory store's decisions: read once per change.
        .enablement_caching(EnablementCaching::PerChange { max_age: None })
        .build(
            Arc::new(agents),
            Arc::new(InMemoryToolEnablementStore::new()),
        );
    let conversations = Arc::new(InMemoryConversationStore::new());
    let conversation = ConversationId::new("bench-conversation");
    let now = chrono::Utc::now();
    conversations
        .create(&AiConversation {
            id: conversation.clone(),
            tenant_id: "acme".into(),
            owner_id: "alice".into(),
            agent: "bench-agent".into(),
            title: "bench".into(),
            created_at: now,
            updated_at: now,
            messages: Vec::new(),
            retain_days: None,
        })
        .await
        .expect("stored");
    let governor = HostCore::builder(Arc::new(Redactor::default()), audit)
        .stores(conversations, Arc::new(InMemoryStreamJournal::new()))
        .build()
        .governor(Arc::new(registry), empty_services())
        .build();
    let caller = AiCaller::new(
        "alice",
        "acme",
        [Permission::READ_WORKFLOWS, Permission::PROPOSE_WORKFLOWS],
    );
    governor.bind(
        ToolCallScope::new(caller, "bench-agent")
            .with_conversation(conversation)
            .with_events(Arc::new(CountingEvents::default())),
    )
}

fn invocation(tool: &str) -> AiProviderToolInvocation {
    AiProviderToolInvocation {
        call_id: "call-1".into(),
        tool_name: tool.into(),
        arguments: json!({"definitionId": "wf-1", "version": 3}),
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut group = c.benchmark_group("governed_invocation");
    for (name, tool, keep_records) in [
        ("allowed_noop_tool", "workflow.getDefinition", true),
        ("denied_disabled_tool", "workflow.proposeCreate", true),
        (
            "allowed_noop_tool_records_not_kept",
            "workflow.getDefinition",
            false,
        ),
    ] {
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter_custom(|iterations| async move {
                let audit: Arc<dyn AiAuditSink> = if keep_records {
                    Arc::new(InMemoryAuditLog::new())
                } else {
                    Arc::new(DiscardingAudit)
                };
                let invoker = bound_invoker(audit).await;
                let start = Instant::now();
                for _ in 0..iterations {
                    std::hint::black_box(invoker.invoke(invocation(tool)).await);
                }
                start.elapsed()
            });
        });
    }
    // The same allowed call with its input built beforehand, outside the timing: the figure
    // is the governor's alone, without the provider's making of the invocation it hands over
    // (two strings and a two-key JSON object), which the functions above include.
    group.bench_function("allowed_noop_tool_input_made_beforehand", |b| {
        b.to_async(&runtime).iter_custom(|iterations| async move {
            const BATCH: u64 = 64;
            let invoker = bound_invoker(Arc::new(InMemoryAuditLog::new())).await;
            let mut elapsed = Duration::ZERO;
            let mut left = iterations;
            while left > 0 {
                let inputs: Vec<_> = (0..left.min(BATCH))
                    .map(|_| invocation("workflow.getDefinition"))
                    .collect();
                left -= inputs.len() as u64;
                let start = Instant::now();
                for input in inputs {
                    std::hint::black_box(invoker.invoke(input).await);
                }
                elapsed += start.elapsed();
            }
            elapsed
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
