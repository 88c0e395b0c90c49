//! A writer process killed in the middle of its batches loses nothing it acknowledged.
//!
//! The parent test re-runs this test binary as a child (the ignored test below, selected by
//! an environment variable) that records audit events from many concurrent callers and, at
//! the same time, appends to many stream journals, and prints each audit id and each journal
//! (conversation, sequence) only after `record` or `append` returned. The parent kills it with SIGKILL mid-stream, reopens
//! the store and checks that every printed id is there.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::sync::Arc;

use chrono::Utc;
use elsa_ai_abstractions::{
    AiAuditEvent, AiStreamEvent, AiStreamEventType, AuditAction, AuditEventId, AuditOutcome,
    ConversationId,
};
use elsa_ai_store::{PostgresStore, SqliteStore};
use elsa_workflows::TenantId;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::support::{PATIENCE, Store, TestDb, audit_trail, on_both_backends};

/// Set in the child: `sqlite:<path>` or `postgres:<url>`.
const TARGET: &str = "WEAVER_AUDIT_WRITER_TARGET";
/// Set in the child: the tenant to record in.
const TENANT: &str = "WEAVER_AUDIT_WRITER_TENANT";
/// How many acknowledgements the parent waits for before it kills the child.
const KILL_AFTER: usize = 3000;
const ACK: &str = "ACK ";
/// A journal append acknowledged: `JOURNAL <conversation> <sequence>`.
const JOURNAL: &str = "JOURNAL ";

on_both_backends!(every_acknowledged_record_survives_killing_the_writer);

async fn every_acknowledged_record_survives_killing_the_writer(db: TestDb) {
    // Create the schema first, so the child only writes.
    drop(db.open().await);
    let target = match &db {
        TestDb::Sqlite(_) => format!("sqlite:{}", db.location()),
        TestDb::Postgres(_) => format!("postgres:{}", db.location()),
    };
    let tenant = format!("crash-{}", AuditEventId::generate());
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "crash::audit_writer_child",
            "--nocapture",
        ])
        .env(TARGET, target)
        .env(TENANT, &tenant)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the child writer starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();

    let mut acknowledged = BTreeSet::new();
    let mut journaled: BTreeMap<ConversationId, u64> = BTreeMap::new();
    let mut killed = false;
    let read_all = async {
        // Every complete line is an acknowledgement the child received before it died; a
        // line cut off by the kill does not end in a newline and is not counted.
        while let Some(line) = lines.next_line().await.expect("readable child output") {
            if let Some(append) = line.strip_prefix(JOURNAL) {
                let (conversation, sequence) = append.split_once(' ').expect("JOURNAL id seq");
                let sequence: u64 = sequence.parse().expect("a sequence");
                let last = journaled
                    .entry(ConversationId::new(conversation))
                    .or_default();
                *last = (*last).max(sequence);
            }
            if let Some(id) = line.strip_prefix(ACK) {
                acknowledged.insert(AuditEventId::new(id));
                if acknowledged.len() >= KILL_AFTER && !killed {
                    child.start_kill().expect("the child can be killed");
                    killed = true;
                }
            }
        }
    };
    tokio::time::timeout(PATIENCE, read_all)
        .await
        .expect("the child acknowledges records and dies when killed");
    let status = child.wait().await.unwrap();
    assert!(
        killed,
        "the child stopped by itself after {} records: {status}",
        acknowledged.len()
    );
    assert_eq!(
        status.signal(),
        Some(9),
        "the child died of SIGKILL: {status}"
    );

    let reopened = db.open().await;
    let tenant = TenantId::new(tenant);
    let kept: BTreeSet<AuditEventId> = audit_trail(&*reopened, &tenant)
        .await
        .into_iter()
        .map(|event| event.id)
        .collect();
    eprintln!(
        "child killed after {} acknowledged records; {} found after reopening",
        acknowledged.len(),
        kept.len()
    );
    let lost: Vec<_> = acknowledged.difference(&kept).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged records were lost: {lost:?}",
        lost.len()
    );
    assert!(kept.len() >= acknowledged.len());

    assert!(!journaled.is_empty(), "the child journaled nothing");
    for (conversation, acknowledged) in &journaled {
        let events = reopened
            .read_after(conversation, &tenant, 0, usize::MAX)
            .await
            .unwrap();
        let sequences: Vec<u64> = events.iter().map(|e| e.sequence).collect();
        let last = sequences.len() as u64;
        assert_eq!(sequences, (1..=last).collect::<Vec<_>>(), "gap-free");
        assert!(
            last >= *acknowledged,
            "{conversation}: appended up to {acknowledged} but {last} found after the crash"
        );
    }
}

/// The child half of the crash tests; it does nothing unless a parent set [`TARGET`].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by the crash tests as their child process"]
async fn audit_writer_child() {
    let Ok(target) = std::env::var(TARGET) else {
        return;
    };
    let tenant = TenantId::new(std::env::var(TENANT).expect("the parent names the tenant"));
    let sink: Arc<dyn Store> = match target.split_once(':') {
        Some(("sqlite", path)) => Arc::new(SqliteStore::open(path).await.unwrap()),
        Some(("postgres", url)) => Arc::new(PostgresStore::connect(url).await.unwrap()),
        _ => panic!("unknown target {target}"),
    };
    let callers: Vec<_> = (0..32)
        .map(|caller| {
            let (sink, tenant) = (sink.clone(), tenant.clone());
            tokio::spawn(async move {
                for call in 0u64.. {
                    let mut event = AiAuditEvent::new(
                        tenant.clone(),
                        format!("caller-{caller}"),
                        AuditAction::TOOL_INVOKED,
                        AuditOutcome::Success,
                        format!("call {call}"),
                    );
                    event.details = json!({"caller": caller, "call": call}).into();
                    let id = event.id.clone();
                    sink.record(event).await.expect("the record is written");
                    println!("{ACK}{id}");
                }
            })
        })
        .collect();
    let streams: Vec<_> = (0..32)
        .map(|stream| {
            let (journal, tenant) = (sink.clone(), tenant.clone());
            tokio::spawn(async move {
                let conversation = ConversationId::new(format!("{tenant}-stream-{stream}"));
                for sequence in 1u64.. {
                    let event = AiStreamEvent {
                        event_type: AiStreamEventType::AssistantDelta,
                        conversation_id: conversation.clone(),
                        sequence,
                        timestamp: Utc::now(),
                        data: json!({"text": format!("delta {sequence}")}).into(),
                    };
                    journal
                        .append(&tenant, &event)
                        .await
                        .expect("the event is journaled");
                    println!("{JOURNAL}{conversation} {sequence}");
                }
            })
        })
        .collect();
    for task in callers.into_iter().chain(streams) {
        task.await.unwrap();
    }
}
