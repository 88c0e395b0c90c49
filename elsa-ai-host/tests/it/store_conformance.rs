//! The in-memory stores pass the same conformance suite as the durable ones
//! (`weaver_testkit::conformance`; `elsa-ai-store` runs it on SQLite and PostgreSQL).

use std::sync::Arc;

use elsa_ai_host::{
    InMemoryAuditLog, InMemoryConversationStore, InMemoryProposalStore, InMemoryStreamJournal,
    InMemoryToolEnablementStore,
};
use weaver_testkit::conformance;

#[tokio::test]
async fn in_memory_proposal_store_conforms() {
    let store = InMemoryProposalStore::new();
    conformance::proposals::run(&store, &store).await;
}

#[tokio::test]
async fn in_memory_audit_log_conforms() {
    conformance::audit::run(&InMemoryAuditLog::new()).await;
}

#[tokio::test]
async fn in_memory_conversation_store_conforms() {
    let journal = Arc::new(InMemoryStreamJournal::new());
    let store = InMemoryConversationStore::with_journal(journal.clone());
    conformance::conversations::run(&store, &*journal).await;
}

#[tokio::test]
async fn in_memory_stream_journal_conforms() {
    conformance::journal::run(&InMemoryStreamJournal::new()).await;
}

#[tokio::test]
async fn in_memory_tool_enablement_store_conforms() {
    conformance::enablement::run(&InMemoryToolEnablementStore::new()).await;
}
