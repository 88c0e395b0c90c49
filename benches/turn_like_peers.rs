//! A chat turn shaped like the peers' agent benchmarks: a scripted model asks for one call of
//! an `echo` tool with `{"text": "hello sk-live-0123456789abcdefghij"}`, the tool returns
//! `{"echo": text, "len": n}`, and the model answers `done`. The turn runs through the
//! `ChatOrchestrator`, the `ToolGovernor` (schema validation, the secret redacted in the
//! arguments and the result, a 16 KiB result clamp), the stream journal and an in-memory
//! audit sink. Criterion reports the whole turn, and the governed call on its own (the same
//! governor, tool and arguments).
//!
//! The whole turn is measured twice: on a current-thread runtime, where the client and the
//! turn share one thread as the peers' benchmarks share one event loop, and on two worker
//! threads with the client running as a task, as the server's request handlers do (there
//! the turn's events may wake the client on the other thread).
//!
//! Run with `cargo bench -p weaver-benches --bench turn_like_peers`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use elsa_ai_abstractions::{
    AiError, AiProviderToolInvocation, AiStreamEventType, AiTool, AiToolDefinition,
    AiToolExecutionContext,
};
use elsa_ai_host::ToolCallScope;
use elsa_ai_host::testing::chat::ChatHarness;
use elsa_ai_host::testing::governance::{TEST_AGENT, TEST_TENANT, read_tool};
use elsa_ai_scripted::Script;
use serde_json::{Value, json};

const SECRET: &str = "sk-live-0123456789abcdefghij";

/// The peers' `echo` tool; Weaver tool names are namespaced.
const ECHO: &str = "peers.echo";

/// The `echo` tool of the peers' benchmark.
struct Echo(AiToolDefinition);

#[async_trait]
impl AiTool for Echo {
    fn definition(&self) -> &AiToolDefinition {
        &self.0
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let text = context.arguments["text"].as_str().unwrap_or_default();
        Ok(json!({"echo": text, "len": text.chars().count()}))
    }
}

/// The scripted model: one `echo` call, then `done`.
fn harness() -> ChatHarness {
    let mut echo = read_tool(ECHO);
    echo.input_schema = json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": false,
    });
    ChatHarness::builder()
        .tool(Arc::new(Echo(echo)))
        .script(
            Script::new()
                .tool_call(ECHO, json!({"text": format!("hello {SECRET}")}))
                .reply("done"),
        )
        .result_limit(16 * 1024)
        .build()
}

/// Runs `iters` turns on one harness (so the in-memory audit log and journal stay small) and
/// returns their time.
async fn turns(iters: u64) -> Duration {
    let harness = harness();
    let started = Instant::now();
    for _ in 0..iters {
        let events = harness.run(harness.request("Echo hello.")).await;
        std::hint::black_box(events);
    }
    started.elapsed()
}

fn turn_like_peers(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let workers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");

    // Once, checked: the turn completes, the tool ran, and the secret reached no event and
    // no audit record.
    runtime.block_on(async {
        let harness = harness();
        let events = harness.run(harness.request("Echo hello.")).await;
        assert_eq!(
            events.last().unwrap().event_type,
            AiStreamEventType::ConversationCompleted
        );
        let seen = format!("{events:?}{:?}", harness.audit.events(&TEST_TENANT.into()));
        assert!(
            seen.contains("echo") && seen.contains("hello"),
            "the tool ran: {seen}"
        );
        assert!(!seen.contains(SECRET), "the secret is redacted everywhere");
    });

    c.bench_function("turn_like_peers/whole_turn", |b| {
        b.to_async(&runtime).iter_custom(turns);
    });
    c.bench_function("turn_like_peers/whole_turn_multi_thread", |b| {
        b.to_async(&workers).iter_custom(|iters| async move {
            tokio::spawn(turns(iters)).await.expect("the turns ran")
        });
    });

    // The governed call alone: the same governor, tool, arguments and clamp, bound to a turn.
    c.bench_function("turn_like_peers/governed_call", |b| {
        b.to_async(&runtime).iter_custom(|iters| async move {
            let harness = harness();
            let caller = harness.caller();
            let invoker = harness
                .governor
                .bind(ToolCallScope::new(caller, TEST_AGENT.to_owned()));
            let arguments = json!({"text": format!("hello {SECRET}")});
            let started = Instant::now();
            for i in 0..iters {
                let result = invoker
                    .invoke(AiProviderToolInvocation {
                        call_id: format!("call-{i}"),
                        tool_name: ECHO.into(),
                        arguments: arguments.clone(),
                    })
                    .await;
                debug_assert!(result.is_success());
                std::hint::black_box(result);
            }
            started.elapsed()
        });
    });
}

criterion_group!(benches, turn_like_peers);
criterion_main!(benches);
