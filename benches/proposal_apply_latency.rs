//! Latency of applying one approved proposal through the host's `ProposalService`, with the
//! proposal store and the audit trail in SQLite or PostgreSQL (an in-memory Elsa backend
//! takes the definition write). An apply claims the proposal (compare-and-set), checks the
//! baseline, re-validates, writes the definition, records the applied state (compare-and-set)
//! and audits; every store write is durable before the next step.
//!
//! PostgreSQL runs against `WEAVER_TEST_POSTGRES_URL` (or a throwaway server, see
//! `elsa_ai_store::testing::postgres`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use elsa_ai_abstractions::{
    AiAuditSink, AiCaller, AiProposalStore, BaselineRef, ProposalDraft, ProposalId, ProposalKind,
    ProposalStatus,
};
use elsa_ai_host::testing::governance::{TEST_TENANT, all_permissions};
use elsa_ai_host::testing::proposals::sample_definition;
use elsa_ai_host::{HostCore, ProposalService, Redactor};
use elsa_ai_store::testing::TempSqlite;
use elsa_ai_store::testing::postgres::TestDatabase;
use elsa_ai_store::{PostgresStore, SqliteStore};
use elsa_workflows::{InMemoryWorkflowBackend, WorkflowDefinitionWriter, builtin_catalog};

struct Bench {
    service: ProposalService,
    workflows: Arc<InMemoryWorkflowBackend>,
    caller: AiCaller,
}

impl Bench {
    fn new<S: AiProposalStore + AiAuditSink + 'static>(store: Arc<S>) -> Self {
        let workflows = Arc::new(InMemoryWorkflowBackend::new());
        workflows.set_catalog(&TEST_TENANT.into(), builtin_catalog().to_vec());
        let service = HostCore::builder(Arc::new(Redactor::default()), store.clone())
            .build()
            .proposals(
                store,
                workflows.clone(),
                workflows.clone(),
                workflows.clone(),
            )
            .build();
        let caller = AiCaller::new("alice", TEST_TENANT, all_permissions());
        Self {
            service,
            workflows,
            caller,
        }
    }

    /// `n` approved update proposals, each of its own freshly seeded definition.
    async fn approved(&self, n: u64) -> Vec<ProposalId> {
        let mut approved = Vec::new();
        for _ in 0..n {
            let definition_id = ProposalId::generate().to_string();
            let written = self
                .workflows
                .create(
                    &TEST_TENANT.into(),
                    sample_definition(&definition_id, "Hello"),
                )
                .await
                .expect("the seed is written");
            let draft = ProposalDraft {
                conversation_id: None,
                kind: ProposalKind::Update,
                baseline: Some(BaselineRef {
                    definition_id: written.definition_id,
                    version: written.version,
                }),
                definition: sample_definition(&definition_id, "Hello, world"),
                patch: None,
                rationale: "say more".into(),
            };
            let proposal = self
                .service
                .create(&self.caller, draft)
                .await
                .expect("created");
            let proposal = self
                .service
                .approve(&self.caller, &proposal.id)
                .await
                .expect("approved");
            approved.push(proposal.id);
        }
        approved
    }

    /// The time to apply `iterations` approved proposals one after the other.
    async fn apply(&self, iterations: u64) -> Duration {
        let approved = self.approved(iterations).await;
        let start = Instant::now();
        for id in &approved {
            let applied = self.service.apply(&self.caller, id).await.expect("applied");
            assert_eq!(applied.status, ProposalStatus::Applied);
        }
        start.elapsed()
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut group = c.benchmark_group("proposal_apply_latency");

    let file = TempSqlite::new();
    let sqlite = Arc::new(
        runtime
            .block_on(SqliteStore::open(file.path()))
            .expect("SQLite opens"),
    );
    let on_sqlite = Bench::new(sqlite.clone());
    group.bench_function("sqlite", |b| {
        b.to_async(&runtime)
            .iter_custom(|iterations| on_sqlite.apply(iterations));
    });
    runtime.block_on(sqlite.close());

    let database = runtime.block_on(TestDatabase::create());
    let postgres = Arc::new(
        runtime
            .block_on(PostgresStore::connect(database.url()))
            .expect("PostgreSQL connects"),
    );
    let on_postgres = Bench::new(postgres.clone());
    group.bench_function("postgres", |b| {
        b.to_async(&runtime)
            .iter_custom(|iterations| on_postgres.apply(iterations));
    });
    runtime.block_on(postgres.close());
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(10)).sample_size(10);
    targets = bench
}
criterion_main!(benches);
