//! What the stores refuse, and how they fail: an audit record is never reported written when
//! it is not, the trail cannot be changed, and shutting down loses nothing that was accepted.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use elsa_ai_abstractions::{AiAuditEvent, AiAuditLog, AiAuditSink, AuditAction, AuditOutcome};
use elsa_ai_store::{PostgresStoreOptions, SqliteStoreOptions};
use elsa_workflows::TenantId;
use sqlx::Connection;

use crate::support::{PATIENCE, TestDb, on_both_backends};

on_both_backends!(
    audit_records_cannot_be_changed_or_deleted,
    a_duplicate_audit_id_fails_alone,
    closing_writes_every_accepted_record_and_refuses_later_ones,
);

fn event(tenant: &TenantId, summary: &str) -> AiAuditEvent {
    AiAuditEvent::new(
        tenant.clone(),
        "alice",
        AuditAction::TOOL_INVOKED,
        AuditOutcome::Success,
        summary,
    )
}

async fn trail(store: &dyn AiAuditLog, tenant: &TenantId) -> Vec<AiAuditEvent> {
    crate::support::audit_trail(store, tenant).await
}

async fn audit_records_cannot_be_changed_or_deleted(db: TestDb) {
    let store = db.open().await;
    let tenant = TenantId::new("acme");
    store.record(event(&tenant, "kept")).await.unwrap();
    for sql in [
        "UPDATE audit_events SET actor_id = 'mallory'",
        "DELETE FROM audit_events",
    ] {
        let refused = db.execute(sql).await.expect_err("the trail is append-only");
        assert!(
            refused.to_string().contains("append-only"),
            "refused by the schema: {refused}"
        );
    }
    let kept = trail(&*store, &tenant).await;
    assert_eq!((kept.len(), kept[0].actor_id.as_str()), (1, "alice"));
}

async fn a_duplicate_audit_id_fails_alone(db: TestDb) {
    let store = db.open().await;
    let tenant = TenantId::new("acme");
    let first = event(&tenant, "first");
    store.record(first.clone()).await.unwrap();
    let impostor = AiAuditEvent {
        summary: "impostor".into(),
        ..first.clone()
    };
    let others: Vec<AiAuditEvent> = (0..20)
        .map(|i| event(&tenant, &format!("other {i}")))
        .collect();
    // Recorded together, so that the duplicate usually shares a batch with the others.
    let (duplicate, rest) = tokio::join!(
        store.record(impostor),
        futures::future::join_all(others.iter().map(|e| store.record(e.clone())))
    );
    let duplicate = duplicate.expect_err("an existing id is refused");
    assert_eq!(
        (duplicate.status(), duplicate.code()),
        (409, "audit_event_exists")
    );
    assert!(
        rest.iter().all(Result::is_ok),
        "the other records are written: {rest:?}"
    );
    let kept = trail(&*store, &tenant).await;
    assert_eq!(kept.len(), 21);
    assert!(kept.contains(&first));
}

async fn closing_writes_every_accepted_record_and_refuses_later_ones(db: TestDb) {
    let tenant = TenantId::new("acme");
    let store = db.open_concrete().await;
    let sink = store.shared();
    // Callers keep recording until the store refuses; it closes underneath them.
    let acknowledged_so_far = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..8)
        .map(|writer| {
            let (sink, tenant, counter) =
                (sink.clone(), tenant.clone(), acknowledged_so_far.clone());
            tokio::spawn(async move {
                let mut acknowledged = Vec::new();
                for i in 0.. {
                    let event = event(&tenant, &format!("writer {writer} record {i}"));
                    let id = event.id.clone();
                    match sink.record(event).await {
                        Ok(()) => {
                            acknowledged.push(id);
                            counter.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(error) => return (acknowledged, error),
                    }
                }
                unreachable!("a writer stops at its first refusal")
            })
        })
        .collect();
    while acknowledged_so_far.load(Ordering::Relaxed) < 500 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    store.close().await;

    let mut acknowledged = BTreeSet::new();
    for writer in writers {
        let (ids, refusal) = tokio::time::timeout(PATIENCE, writer)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (refusal.status(), refusal.code()),
            (500, "audit_store_closed"),
            "{refusal:?}"
        );
        acknowledged.extend(ids);
    }
    assert!(acknowledged.len() >= 500);
    let after_close = sink.record(event(&tenant, "too late")).await;
    assert_eq!(after_close.unwrap_err().code(), "audit_store_closed");

    let reopened = db.open().await;
    let kept: BTreeSet<_> = trail(&*reopened, &tenant)
        .await
        .into_iter()
        .map(|e| e.id)
        .collect();
    let missing: Vec<_> = acknowledged.difference(&kept).collect();
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");
}

/// SQLite: another process holds the write lock for longer than the busy timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_audit_record_fails_while_the_database_is_locked() {
    let db = TestDb::sqlite().await;
    let store = db
        .open_sqlite(
            SqliteStoreOptions::new(db.location()).busy_timeout(Duration::from_millis(200)),
        )
        .await;
    let tenant = TenantId::new("acme");
    let mut locker = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.location()))
        .await
        .unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut locker)
        .await
        .unwrap();

    let blocked = store.record(event(&tenant, "while locked")).await;
    let error = blocked.expect_err("a record that cannot be committed is not acknowledged");
    assert_eq!((error.status(), error.code()), (503, "store_unavailable"));

    sqlx::query("ROLLBACK").execute(&mut locker).await.unwrap();
    store.record(event(&tenant, "after")).await.unwrap();
    let kept: Vec<String> = trail(&store, &tenant)
        .await
        .into_iter()
        .map(|e| e.summary)
        .collect();
    assert_eq!(kept, ["after"]);
}

/// PostgreSQL: the database refuses connections and every existing one is terminated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_audit_record_fails_while_the_database_is_unreachable() {
    let db = TestDb::postgres().await;
    let store = db
        .open_postgres(
            PostgresStoreOptions::new(db.location()).acquire_timeout(Duration::from_secs(2)),
        )
        .await;
    let tenant = TenantId::new("acme");
    store.record(event(&tenant, "before")).await.unwrap();

    let TestDb::Postgres(database) = &db else {
        unreachable!()
    };
    let mut admin = sqlx::PgConnection::connect(database.admin_url())
        .await
        .unwrap();
    let name = database.name();
    let set_connections = |allowed: bool| {
        sqlx::AssertSqlSafe(format!(
            "ALTER DATABASE \"{name}\" ALLOW_CONNECTIONS {allowed}"
        ))
    };
    sqlx::query(set_connections(false))
        .execute(&mut admin)
        .await
        .unwrap();
    sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1")
        .bind(name)
        .execute(&mut admin)
        .await
        .unwrap();

    let error = store
        .record(event(&tenant, "while unreachable"))
        .await
        .expect_err("a record that cannot be committed is not acknowledged");
    assert_eq!(
        (error.status(), error.code()),
        (503, "store_unavailable"),
        "{error:?}"
    );

    sqlx::query(set_connections(true))
        .execute(&mut admin)
        .await
        .unwrap();
    store.record(event(&tenant, "after")).await.unwrap();
    let kept: Vec<String> = trail(&store, &tenant)
        .await
        .into_iter()
        .map(|e| e.summary)
        .collect();
    assert_eq!(kept, ["after", "before"]);
}

/// PostgreSQL: the audit writer keeps its connections apart from the pool. One the server
/// terminated fails only the batch that was using it (503, not acknowledged) and is replaced
/// for the next; one terminated during a quiet spell is found dead before a batch uses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_writer_replaces_a_connection_the_server_terminated() {
    let db = TestDb::postgres().await;
    let store = db
        .open_postgres(PostgresStoreOptions::new(db.location()))
        .await;
    let tenant = TenantId::new("acme");
    let TestDb::Postgres(database) = &db else {
        unreachable!()
    };
    let mut admin = sqlx::PgConnection::connect(database.admin_url())
        .await
        .unwrap();
    let terminate_all = async |admin: &mut sqlx::PgConnection| {
        let ended: Vec<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
        )
        .bind(database.name())
        .fetch_all(&mut *admin)
        .await
        .unwrap();
        sqlx::query("SELECT pg_terminate_backend(pid) FROM UNNEST($1::int4[]) AS ended (pid)")
            .bind(&ended)
            .execute(&mut *admin)
            .await
            .unwrap();
        // Termination is a signal: wait until those backends are gone.
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            let left: i64 =
                sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)")
                    .bind(&ended)
                    .fetch_one(&mut *admin)
                    .await
                    .unwrap();
            if left == 0 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "backends still running"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };

    store.record(event(&tenant, "first")).await.unwrap();
    terminate_all(&mut admin).await;
    let error = store
        .record(event(&tenant, "on the dead connection"))
        .await
        .expect_err("a batch whose connection died is not acknowledged");
    assert_eq!(
        (error.status(), error.code()),
        (503, "store_unavailable"),
        "{error:?}"
    );
    store.record(event(&tenant, "second")).await.unwrap();

    terminate_all(&mut admin).await;
    // Past the writer's quiet spell: the idle connection is checked before it is used.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    store.record(event(&tenant, "third")).await.unwrap();

    let kept: Vec<String> = trail(&store, &tenant)
        .await
        .into_iter()
        .map(|e| e.summary)
        .collect();
    assert_eq!(kept, ["third", "second", "first"]);
}

/// PostgreSQL: a server of its own is restarted while writers keep recording. During the
/// outage records fail with 503 `store_unavailable` (never a 500, never acknowledged), the
/// pool reconnects by itself afterwards, and every acknowledged record is in the trail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restarted_under_load_loses_no_acknowledged_record() {
    use elsa_ai_store::PostgresStore;
    use elsa_ai_store::testing::postgres::PrivateServer;
    use std::sync::Mutex;
    use std::sync::atomic::AtomicBool;

    let server = Arc::new(PrivateServer::start().expect("a private PostgreSQL server"));
    let store = Arc::new(
        PostgresStore::connect_with(
            PostgresStoreOptions::new(server.url()).acquire_timeout(Duration::from_secs(1)),
        )
        .await
        .expect("the store connects"),
    );
    let tenant = TenantId::new("acme");
    let stop = Arc::new(AtomicBool::new(false));
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let refused = Arc::new(Mutex::new(Vec::new()));
    let writers: Vec<_> = (0..8)
        .map(|writer| {
            let (store, tenant, stop) = (store.clone(), tenant.clone(), stop.clone());
            let (acknowledged, refused) = (acknowledged.clone(), refused.clone());
            tokio::spawn(async move {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let record = event(&tenant, &format!("writer {writer} record {n}"));
                    let id = record.id.clone();
                    match store.record(record).await {
                        Ok(()) => acknowledged.lock().unwrap().push(id),
                        Err(error) => {
                            refused
                                .lock()
                                .unwrap()
                                .push((error.status(), error.code().to_owned()));
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    }
                }
            })
        })
        .collect();

    tokio::time::sleep(Duration::from_millis(500)).await;
    let before_restart = acknowledged.lock().unwrap().len();
    assert!(before_restart > 0, "the writers were writing");
    let restarting = server.clone();
    tokio::task::spawn_blocking(move || {
        restarting.stop().expect("the server stops");
        std::thread::sleep(Duration::from_secs(2));
        restarting.start_again().expect("the server starts again");
    })
    .await
    .unwrap();
    let after_restart = acknowledged.lock().unwrap().len();
    let deadline = std::time::Instant::now() + PATIENCE;
    while acknowledged.lock().unwrap().len() < after_restart + 100 {
        assert!(
            std::time::Instant::now() < deadline,
            "the store reconnected and writes again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.await.unwrap();
    }

    let refused = refused.lock().unwrap().clone();
    assert!(
        !refused.is_empty(),
        "records failed while the server was down"
    );
    let unexpected: Vec<_> = refused
        .iter()
        .filter(|(status, code)| (*status, code.as_str()) != (503, "store_unavailable"))
        .collect();
    assert!(unexpected.is_empty(), "outage answers: {unexpected:?}");
    let kept: BTreeSet<String> = trail(&*store, &tenant)
        .await
        .into_iter()
        .map(|e| e.id.to_string())
        .collect();
    let acknowledged = acknowledged.lock().unwrap().clone();
    let missing: Vec<_> = acknowledged
        .iter()
        .filter(|id| !kept.contains(&id.to_string()))
        .collect();
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");
    store.close().await;
}
