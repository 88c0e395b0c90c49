//! Audited tool invocations per second sustained into the durable stores: many concurrent
//! callers run a no-op tool through the whole governance pipeline (steps 1–11), each call
//! returning only after its audit record is committed (batched by the store's audit writer).
//! Target: at least 20,000 invocations per second into SQLite.
//!
//! PostgreSQL runs against `WEAVER_TEST_POSTGRES_URL` (or a throwaway server, see
//! `elsa_ai_store::testing::postgres`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use elsa_ai_abstractions::{
    AiAuditLog, AiAuditSink, AiCaller, AiProviderToolInvocation, AiProviderToolInvoker, AuditQuery,
    Permission,
};
use elsa_ai_host::testing::governance::{TestTool, empty_services, read_tool, test_agent};
use elsa_ai_host::{
    AgentRegistry, HostCore, InMemoryToolEnablementStore, Redactor, ToolCallScope, ToolRegistry,
};
use elsa_ai_store::testing::TempSqlite;
use elsa_ai_store::testing::postgres::TestDatabase;
use elsa_ai_store::{PostgresStore, SqliteStore};
use serde_json::json;

/// Concurrent callers (think: tool calls of many conversations at once).
const CALLERS: [u64; 2] = [64, 512];

/// A governor auditing into `audit`, bound to one caller and agent.
fn bound_invoker(audit: Arc<dyn AiAuditSink>) -> Arc<dyn AiProviderToolInvoker> {
    let agents = AgentRegistry::builder()
        .with_builtin_agents()
        .and_then(|b| {
            b.agent(test_agent(
                "bench-agent",
                &["workflow.getDefinition"],
                &[Permission::READ_WORKFLOWS],
            ))
        })
        .expect("valid agents")
        .build();
    let registry = ToolRegistry::builder()
        .tool(Arc::new(TestTool::returning(
            read_tool("workflow.getDefinition"),
            json!({"ok": true}),
        )))
        .expect("a valid tool")
        .build(
            Arc::new(agents),
            Arc::new(InMemoryToolEnablementStore::new()),
        );
    let governor = HostCore::builder(Arc::new(Redactor::default()), audit)
        .build()
        .governor(Arc::new(registry), empty_services())
        .build();
    let caller = AiCaller::new("alice", "acme", [Permission::READ_WORKFLOWS]);
    governor.bind(ToolCallScope::new(caller, "bench-agent"))
}

fn invocation() -> AiProviderToolInvocation {
    AiProviderToolInvocation {
        call_id: "call-1".into(),
        tool_name: "workflow.getDefinition".into(),
        arguments: json!({"id": "wf-1"}),
    }
}

/// `iterations` invocations spread over `callers` concurrent tasks; the wall time of all.
async fn run_callers(
    invoker: &Arc<dyn AiProviderToolInvoker>,
    callers: u64,
    iterations: u64,
) -> Duration {
    let start = Instant::now();
    let callers: Vec<_> = (0..callers)
        .map(|caller| {
            let invoker = invoker.clone();
            let calls = iterations / callers + u64::from(caller < iterations % callers);
            tokio::spawn(async move {
                for _ in 0..calls {
                    let result = invoker.invoke(invocation()).await;
                    assert!(result.error.is_none(), "the call succeeds: {result:?}");
                }
            })
        })
        .collect();
    for caller in callers {
        caller.await.expect("a caller finishes");
    }
    start.elapsed()
}

/// One call, then the trail must hold its record: the sink really is the store.
async fn assert_audited<S: AiAuditLog + ?Sized>(invoker: &Arc<dyn AiProviderToolInvoker>, log: &S) {
    let before = log
        .query(&"acme".into(), &AuditQuery::default())
        .await
        .unwrap()
        .total;
    invoker.invoke(invocation()).await;
    let after = log
        .query(&"acme".into(), &AuditQuery::default())
        .await
        .unwrap()
        .total;
    assert_eq!(
        after,
        before + 1,
        "every invocation is audited into the store"
    );
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut group = c.benchmark_group("audited_invocation_throughput");
    group.throughput(Throughput::Elements(1));

    let file = TempSqlite::new();
    let sqlite = runtime
        .block_on(SqliteStore::open(file.path()))
        .expect("SQLite opens");
    let invoker = bound_invoker(Arc::new(sqlite.clone()));
    runtime.block_on(assert_audited(&invoker, &sqlite));
    for callers in CALLERS {
        group.bench_function(format!("sqlite_{callers}_callers"), |b| {
            b.to_async(&runtime)
                .iter_custom(|iterations| run_callers(&invoker, callers, iterations));
        });
    }
    runtime.block_on(sqlite.close());

    let database = runtime.block_on(TestDatabase::create());
    let postgres = runtime
        .block_on(PostgresStore::connect(database.url()))
        .expect("PostgreSQL connects");
    let invoker = bound_invoker(Arc::new(postgres.clone()));
    runtime.block_on(assert_audited(&invoker, &postgres));
    for callers in CALLERS {
        group.bench_function(format!("postgres_{callers}_callers"), |b| {
            b.to_async(&runtime)
                .iter_custom(|iterations| run_callers(&invoker, callers, iterations));
        });
    }
    runtime.block_on(postgres.close());
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(10)).sample_size(20);
    targets = bench
}
criterion_main!(benches);
