//! What every PostgreSQL replica hears of the others (`PostgresStore::journal_feed`): here,
//! the tool enablement changes that replicas keeping decisions between changes act on.

use chrono::Utc;
use elsa_ai_abstractions::{AiToolEnablementStore, ToolEnablement};
use elsa_ai_store::{JournalFeed, PostgresStoreOptions};
use elsa_workflows::TenantId;

use crate::support::{PATIENCE, TestDb};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enablement_change_is_announced_to_every_replica() {
    let db = TestDb::postgres().await;
    let replica = || db.open_postgres(PostgresStoreOptions::new(db.location()));
    let (a, b) = (replica().await, replica().await);
    let mut heard = b.journal_feed().await.unwrap();
    for (tenant, enabled) in [("acme", false), ("initech", true)] {
        a.set(&ToolEnablement {
            tenant_id: TenantId::new(tenant),
            tool_name: "workflow.proposeUpdate".into(),
            agent: None,
            enabled,
            changed_by: "admin".into(),
            changed_at: Utc::now(),
        })
        .await
        .unwrap();
        let notice = tokio::time::timeout(PATIENCE, heard.recv())
            .await
            .expect("announced")
            .expect("the feed is open");
        assert_eq!(
            notice,
            JournalFeed::EnablementChanged {
                tenant_id: TenantId::new(tenant)
            }
        );
    }
}
