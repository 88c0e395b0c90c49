//! Retention: conversations, their journals and idle provider sessions expire after the
//! retention window, measured on a manual clock.

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeDelta, TimeZone, Utc};
use elsa_ai_abstractions::{AiOrchestrator, AiStreamJournal, ManualClock};
use elsa_ai_host::testing::chat::ChatHarness;
use elsa_ai_host::testing::governance::TEST_TENANT;
use elsa_ai_host::{RetentionReport, RetentionSweeper};
use elsa_ai_scripted::Script;
use tokio_util::sync::CancellationToken;

fn harness(clock: Arc<ManualClock>) -> ChatHarness {
    ChatHarness::builder()
        .clock(clock)
        .script(Script::new().reply("kept for a while"))
        .build()
}

#[tokio::test]
async fn conversations_older_than_the_window_are_purged_with_their_journals_and_sessions() {
    let clock = Arc::new(ManualClock::new(
        Utc.with_ymd_and_hms(2026, 1, 1, 9, 0, 0).unwrap(),
    ));
    let harness = harness(clock.clone());
    let old = harness.run(harness.request("old")).await[0]
        .conversation_id
        .clone();
    clock.advance(TimeDelta::days(20));
    let recent = harness.run(harness.request("recent")).await[0]
        .conversation_id
        .clone();
    let sweeper = RetentionSweeper::new(
        harness.orchestrator.conversations().clone(),
        TimeDelta::days(30),
        clock.clone(),
    )
    .with_sessions(harness.orchestrator.sessions().clone());

    clock.advance(TimeDelta::days(9));
    assert_eq!(
        sweeper.sweep().await.unwrap(),
        RetentionReport::default(),
        "29 days: kept"
    );
    clock.advance(TimeDelta::days(2));
    let report = sweeper.sweep().await.unwrap();
    assert_eq!(
        report,
        RetentionReport {
            conversations: 1,
            sessions: 1
        }
    );
    assert_eq!(harness.provider.closed(), 1);
    assert_eq!(
        harness
            .journal
            .last_sequence(&old, &harness.caller().tenant_id)
            .await
            .unwrap(),
        0,
        "the journal went too"
    );
    let gone = harness
        .orchestrator
        .resume(&harness.caller(), &old, 0)
        .await
        .unwrap_err();
    assert_eq!(gone.status(), 404);
    assert!(
        harness
            .orchestrator
            .resume(&harness.caller(), &recent, 0)
            .await
            .is_ok()
    );
    assert!(
        harness
            .journal
            .last_sequence(&recent, &harness.caller().tenant_id)
            .await
            .unwrap()
            > 0
    );

    // Continuing a conversation keeps it: its latest message is what counts.
    let mut again = harness.request("still here");
    again.conversation_id = Some(recent.clone());
    harness.run(again).await;
    clock.advance(TimeDelta::days(25));
    assert_eq!(sweeper.sweep().await.unwrap().conversations, 0);
    clock.advance(TimeDelta::days(6));
    assert_eq!(sweeper.sweep().await.unwrap().conversations, 1);
    assert!(
        harness
            .orchestrator
            .conversations()
            .find(&recent, &TEST_TENANT.into())
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test(start_paused = true)]
async fn the_spawned_sweeper_purges_on_its_interval_until_shut_down() {
    let clock = Arc::new(ManualClock::new(
        Utc.with_ymd_and_hms(2026, 1, 1, 9, 0, 0).unwrap(),
    ));
    let harness = harness(clock.clone());
    harness.run(harness.request("old")).await;
    let shutdown = CancellationToken::new();
    let task = RetentionSweeper::new(
        harness.orchestrator.conversations().clone(),
        TimeDelta::days(30),
        clock.clone(),
    )
    .spawn(Duration::from_secs(3600), shutdown.clone());
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(harness.conversations.len(), 1);
    clock.advance(TimeDelta::days(31));
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(harness.conversations.is_empty());
    shutdown.cancel();
    task.await.unwrap();
}
