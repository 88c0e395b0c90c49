//! The shared conformance suite (`weaver_testkit::conformance`) on both backends.

use weaver_testkit::conformance;

use crate::support::{TestDb, on_both_backends};

on_both_backends!(
    proposal_store_conforms,
    concurrent_updates_across_two_pools_apply_once,
    audit_trail_conforms,
    conversation_store_conforms,
    stream_journal_conforms,
    tool_enablement_store_conforms,
);

async fn proposal_store_conforms(db: TestDb) {
    let (store, other_pool) = (db.open().await, db.open().await);
    conformance::proposals::run(&*store, &*other_pool).await;
}

/// Fifty replicas' worth of compare-and-set on one proposal, through two connection pools:
/// exactly one update wins, 49 are conflicts.
async fn concurrent_updates_across_two_pools_apply_once(db: TestDb) {
    let (first, second) = (db.open().await, db.open().await);
    conformance::proposals::concurrent_updates_apply_once(&*first, &*second, 50).await;
}

async fn audit_trail_conforms(db: TestDb) {
    conformance::audit::run(&*db.open().await).await;
}

async fn conversation_store_conforms(db: TestDb) {
    let store = db.open().await;
    conformance::conversations::run(&*store, &*store).await;
}

async fn stream_journal_conforms(db: TestDb) {
    conformance::journal::run(&*db.open().await).await;
}

async fn tool_enablement_store_conforms(db: TestDb) {
    conformance::enablement::run(&*db.open().await).await;
}
