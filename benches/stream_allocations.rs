//! Heap allocations per streamed event, counted by dhat's allocator (counted, not timed,
//! so a noisy machine does not move the figures).
//!
//! A turn of the `ChatOrchestrator` with a scripted provider streams its text as
//! `assistant.delta` events: each passes redaction, the journal and the live channel to the
//! turn's own stream, and the client serialises it (as the SSE route does). Two turns that
//! differ only in their number of deltas give the allocations of one more event, without the
//! turn's fixed cost. Then the same for a conversation replayed from its journal (a client
//! reconnecting), per replayed event.

use elsa_ai_abstractions::{AiChatStream, AiOrchestrator};
use elsa_ai_host::testing::chat::ChatHarness;
use elsa_ai_scripted::Script;
use futures::StreamExt;

// dhat's allocator counts every allocation (a reallocation counts as one).
#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

fn allocations() -> u64 {
    dhat::HeapStats::get().total_blocks
}

fn harness(deltas: usize) -> ChatHarness {
    let script = (0..deltas).fold(Script::new(), |script, i| script.delta(format!("word{i} ")));
    ChatHarness::builder().script(script.reply("Done.")).build()
}

/// Reads a stream as the SSE route does: every event encoded once.
async fn drain(stream: AiChatStream) -> usize {
    let mut events = stream.events;
    let mut count = 0;
    while let Some(event) = events.next().await {
        let frame = event.to_json().expect("an event serialises");
        std::hint::black_box(frame);
        count += 1;
    }
    count
}

/// Allocations and events of one turn, on a warmed-up harness (its second conversation).
async fn turn(deltas: usize) -> (u64, usize) {
    let harness = harness(deltas);
    let warm_up = harness.orchestrator.execute_chat(harness.request("first"));
    drain(warm_up.await.expect("the turn starts")).await;
    let before = allocations();
    let stream = harness.orchestrator.execute_chat(harness.request("second"));
    let events = drain(stream.await.expect("the turn starts")).await;
    (allocations() - before, events)
}

/// Allocations and events of replaying one whole conversation of one turn.
async fn replay(deltas: usize) -> (u64, usize) {
    let harness = harness(deltas);
    let stream = harness
        .orchestrator
        .execute_chat(harness.request("first"))
        .await
        .expect("the turn starts");
    let conversation = stream.conversation_id.clone();
    drain(stream).await;
    let caller = harness.caller();
    let before = allocations();
    let resumed = harness.orchestrator.resume(&caller, &conversation, 0);
    let events = drain(resumed.await.expect("the owner may resume")).await;
    (allocations() - before, events)
}

fn per_event(small: (u64, usize), large: (u64, usize)) -> f64 {
    (large.0 - small.0) as f64 / (large.1 - small.1) as f64
}

fn main() {
    // Testing mode: statistics only, no profile written on drop.
    let _profiler = dhat::Profiler::builder().testing().build();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let live = per_event(turn(20).await, turn(220).await);
        let replayed = per_event(replay(20).await, replay(220).await);
        println!("stream_allocations/live_event: {live:.1} allocations per streamed event");
        println!("stream_allocations/replayed_event: {replayed:.1} allocations per replayed event");
    });
}
