//! Orchestration overhead: a whole chat turn through the `ChatOrchestrator` with a scripted
//! provider (20 text deltas, one governed tool call, the reply), and replaying a long
//! conversation from its journal (what a reconnecting client costs).

use std::sync::Arc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use elsa_ai_abstractions::AiOrchestrator;
use elsa_ai_host::testing::chat::{ChatHarness, collect};
use elsa_ai_host::testing::governance::{TestTool, read_tool};
use elsa_ai_scripted::Script;
use serde_json::json;

fn script() -> Script {
    let mut script = Script::new();
    for i in 0..20 {
        script = script.delta(format!("word{i} "));
    }
    script
        .tool_call("demo.lookup", json!({"id": "orders"}))
        .reply("The workflow is called Order fulfilment.")
}

fn harness() -> ChatHarness {
    ChatHarness::builder()
        .tool(Arc::new(TestTool::returning(
            read_tool("demo.lookup"),
            json!({"definitionId": "orders", "name": "Order fulfilment"}),
        )))
        .script(script())
        .build()
}

fn turns(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    c.bench_function("chat_turn/20_deltas_1_tool_call", |b| {
        b.to_async(&runtime).iter_batched(
            harness,
            |harness| async move {
                let events = harness
                    .run(harness.request("What is the orders workflow?"))
                    .await;
                assert!(events.len() > 20);
            },
            BatchSize::SmallInput,
        );
    });

    // One conversation of 50 turns (about 1,400 events), replayed from the start.
    let long = runtime.block_on(async {
        let harness = harness();
        let first = harness.run(harness.request("first")).await;
        let conversation = first[0].conversation_id.clone();
        for _ in 1..50 {
            let mut request = harness.request("again");
            request.conversation_id = Some(conversation.clone());
            harness.run(request).await;
        }
        (harness, conversation)
    });
    let (harness, conversation) = &long;
    let caller = harness.caller();
    let total = harness
        .journal
        .events(conversation, &caller.tenant_id)
        .len();
    c.bench_function(&format!("stream_replay/{total}_events"), |b| {
        b.to_async(&runtime).iter(|| async {
            let stream = harness
                .orchestrator
                .resume(&caller, conversation, 0)
                .await
                .expect("the owner may resume");
            assert_eq!(collect(stream).await.len(), total);
        });
    });
}

criterion_group!(benches, turns);
criterion_main!(benches);
