//! Proposal apply latency with in-memory stores: the checks (permission, tenant, state,
//! baseline, validation against the built-in catalog), the claim, the audit record, the
//! definition write and recording `Applied`; with and without a conversation stream that
//! receives `proposal.updated`. Also the cost of creating a proposal from a draft (validation
//! and graph diff). This is the service's own cost; `proposal_apply_latency` measures the
//! same apply with the proposal store and audit trail in SQLite and PostgreSQL.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use elsa_ai_abstractions::ConversationId;
use elsa_ai_host::testing::proposals::{ProposalHarness, sample_definition};

/// Times `iterations` applies of proposals created and approved beforehand (untimed).
async fn time_applies(iterations: u64, conversation: bool) -> Duration {
    let harness = ProposalHarness::new();
    let stream: Option<ConversationId> = if conversation {
        Some(harness.conversation().await)
    } else {
        None
    };
    let caller = harness.caller();
    let mut approved = Vec::with_capacity(iterations as usize);
    for i in 0..iterations {
        let proposal = harness
            .approved_update(&format!("wf-{i}"), stream.as_ref())
            .await;
        approved.push(proposal.id);
    }
    let start = Instant::now();
    for id in &approved {
        harness
            .service
            .apply(&caller, id)
            .await
            .expect("an approved, current, valid proposal applies");
    }
    start.elapsed()
}

/// Times `iterations` creations of update proposals (validation and graph diff included).
async fn time_creates(iterations: u64) -> Duration {
    let harness = ProposalHarness::new();
    let caller = harness.caller();
    let baseline = harness.seed(sample_definition("orders", "Hello")).await;
    let drafts: Vec<_> = (0..iterations)
        .map(|i| {
            harness.update_draft(
                &baseline,
                sample_definition("orders", &format!("Hello #{i}")),
                None,
            )
        })
        .collect();
    let start = Instant::now();
    for draft in drafts {
        harness
            .service
            .create(&caller, draft)
            .await
            .expect("the draft is accepted");
    }
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut group = c.benchmark_group("proposal");
    group.bench_function("apply", |b| {
        b.iter_custom(|iterations| runtime.block_on(time_applies(iterations, false)));
    });
    group.bench_function("apply_with_stream", |b| {
        b.iter_custom(|iterations| runtime.block_on(time_applies(iterations, true)));
    });
    group.bench_function("create", |b| {
        b.iter_custom(|iterations| runtime.block_on(time_creates(iterations)));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
