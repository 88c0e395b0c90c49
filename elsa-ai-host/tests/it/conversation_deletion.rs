//! Deleting conversations and keeping them shorter: the owner or an administrator of the
//! tenant deletes, a running turn is stopped first, proposals stay without their link, the
//! audit record names who deleted what but not what was said.

use std::time::Duration;

use elsa_ai_abstractions::{
    AiConversationStore, AiOrchestrator, AiStreamEventType as T, AiStreamJournal, AuditAction,
    ConversationId, Permission,
};
use elsa_ai_host::testing::chat::{caller_with, types};
use elsa_ai_host::testing::governance::TEST_TENANT;
use elsa_ai_host::testing::proposals::ProposalHarness;
use elsa_ai_scripted::Script;
use futures::StreamExt;

/// What the harness caller's first conversation says, to check no record repeats it.
const SAID: &str = "Let us change a workflow.";

fn records_of(
    h: &ProposalHarness,
    action: &AuditAction,
) -> Vec<elsa_ai_abstractions::AiAuditEvent> {
    h.audit
        .events(&TEST_TENANT.into())
        .into_iter()
        .filter(|e| &e.action == action)
        .collect()
}

#[tokio::test]
async fn the_owner_deletes_a_conversation_with_its_messages_and_journal_but_not_its_proposals() {
    let h = ProposalHarness::new();
    let conversation = h.conversation().await;
    let proposal = h.validated_update("orders", Some(&conversation)).await;
    assert_eq!(proposal.conversation_id.as_ref(), Some(&conversation));
    let service = h.conversation_service();

    let deleted = service.delete(&h.caller(), &conversation).await.unwrap();
    assert_eq!(deleted.id, conversation);
    assert!(!deleted.stopped_turn);
    assert_eq!(deleted.proposals, std::slice::from_ref(&proposal.id));
    assert!(deleted.messages >= 1, "at least the question");

    let tenant = TEST_TENANT.into();
    assert!(
        h.chat
            .conversations
            .find(&conversation, &tenant)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        h.chat
            .journal
            .last_sequence(&conversation, &tenant)
            .await
            .unwrap(),
        0
    );
    let replay = h
        .chat
        .orchestrator
        .resume(&h.caller(), &conversation, 0)
        .await
        .unwrap_err();
    assert_eq!(
        (replay.status(), replay.code()),
        (404, "conversation_not_found")
    );

    // The proposal stays, for review, without its way back to the deleted text.
    let kept = h.stored(&proposal.id).await;
    assert_eq!(kept.conversation_id, None);
    assert_eq!(kept.status, proposal.status);

    // One record: who deleted what, never what was said.
    let records = records_of(&h, &AuditAction::CONVERSATION_DELETED);
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!(record.actor_id, "alice");
    assert_eq!(record.conversation_id.as_ref(), Some(&conversation));
    assert_eq!(record.details["owner"], "alice");
    assert_eq!(record.details["proposals"][0], proposal.id.as_str());
    let text = serde_json::to_string(record).unwrap();
    assert!(!text.contains(SAID), "{text}");

    let again = service
        .delete(&h.caller(), &conversation)
        .await
        .unwrap_err();
    assert_eq!(again.code(), "conversation_not_found");
}

#[tokio::test]
async fn only_the_owner_or_an_administrator_of_the_tenant_may_delete() {
    let h = ProposalHarness::new();
    let conversation = h.conversation().await;
    let service = h.conversation_service();
    let all = [
        Permission::READ_WORKFLOWS,
        Permission::PROPOSE_WORKFLOWS,
        Permission::APPLY_WORKFLOWS,
    ];
    for (caller, why) in [
        (caller_with("bob", TEST_TENANT, &all), "another person"),
        (
            caller_with("root", "globex", &[Permission::ADMIN_AI]),
            "another tenant's administrator",
        ),
    ] {
        let refused = service.delete(&caller, &conversation).await.unwrap_err();
        assert_eq!(
            (refused.status(), refused.code()),
            (404, "conversation_not_found"),
            "{why}"
        );
    }
    assert!(records_of(&h, &AuditAction::CONVERSATION_DELETED).is_empty());
    let admin = caller_with("root", TEST_TENANT, &[Permission::ADMIN_AI]);
    let deleted = service.delete(&admin, &conversation).await.unwrap();
    assert_eq!(deleted.owner_id, "alice");
    let record = &records_of(&h, &AuditAction::CONVERSATION_DELETED)[0];
    assert_eq!(record.actor_id, "root");
    assert!(record.summary.contains("of alice"), "{}", record.summary);
}

#[tokio::test]
async fn a_running_turn_is_stopped_and_its_stream_ends_before_the_conversation_goes() {
    let h = ProposalHarness::builder()
        .chat(|chat| {
            chat.script(
                Script::new()
                    .delta("Thinking")
                    .delay(Duration::from_secs(30))
                    .reply("too late"),
            )
        })
        .build();
    let stream = h
        .chat
        .orchestrator
        .execute_chat(h.chat.request("Take your time."))
        .await
        .unwrap();
    let conversation = stream.conversation_id.clone();
    let mut events = stream.events;
    // The turn is under way once its first delta arrives.
    while let Some(event) = events.next().await {
        if event.event_type == T::AssistantDelta {
            break;
        }
    }
    let service = h.conversation_service();
    let deleted = service.delete(&h.caller(), &conversation).await.unwrap();
    assert!(deleted.stopped_turn);
    let rest: Vec<_> = events.collect().await;
    assert_eq!(
        types(&rest).last(),
        Some(&T::ConversationFailed),
        "{rest:?}"
    );
    assert_eq!(rest.last().unwrap().data["code"], "cancelled");
    assert!(
        h.chat
            .conversations
            .find(&conversation, &TEST_TENANT.into())
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn an_administrator_erases_one_persons_conversations_in_the_tenant() {
    let h = ProposalHarness::new();
    let first = h.conversation().await;
    let second = h.conversation().await;
    let service = h.conversation_service();
    let owner = caller_with("alice", TEST_TENANT, &[Permission::READ_WORKFLOWS]);
    let refused = service.delete_owned_by(&owner, "alice").await.unwrap_err();
    assert_eq!(
        (refused.status(), refused.code()),
        (403, "permission_denied")
    );

    let admin = caller_with("root", TEST_TENANT, &[Permission::ADMIN_AI]);
    let mut deleted: Vec<ConversationId> = service
        .delete_owned_by(&admin, "alice")
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.id)
        .collect();
    deleted.sort();
    let mut expected = vec![first, second];
    expected.sort();
    assert_eq!(deleted, expected);
    assert_eq!(records_of(&h, &AuditAction::CONVERSATION_DELETED).len(), 2);
    assert!(
        service
            .delete_owned_by(&admin, "alice")
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn an_owner_keeps_a_conversation_shorter_and_the_sweep_honours_it() {
    let h = ProposalHarness::new();
    let conversation = h.conversation().await;
    let service = h.conversation_service();
    let kept = service
        .set_retention(&h.caller(), &conversation, Some(3))
        .await
        .unwrap();
    assert_eq!(kept.retain_days, Some(3));
    for invalid in [Some(0), Some(31)] {
        let refused = service
            .set_retention(&h.caller(), &conversation, invalid)
            .await
            .unwrap_err();
        assert_eq!(
            (refused.status(), refused.code()),
            (400, "invalid_retention")
        );
    }
    let bob = caller_with("bob", TEST_TENANT, &[Permission::READ_WORKFLOWS]);
    let refused = service
        .set_retention(&bob, &conversation, Some(1))
        .await
        .unwrap_err();
    assert_eq!(refused.status(), 404);
    let record = &records_of(&h, &AuditAction::CONVERSATION_RETENTION_CHANGED)[0];
    assert_eq!(record.details["after"], 3);

    // Four days on, the sweep with the 30-day window takes it.
    h.clock.advance(chrono::TimeDelta::days(4));
    let sweeper = elsa_ai_host::RetentionSweeper::new(
        h.chat.conversations.clone(),
        chrono::TimeDelta::days(30),
        h.clock.clone(),
    );
    assert_eq!(sweeper.sweep().await.unwrap().conversations, 1);
    assert!(
        h.chat
            .conversations
            .find(&conversation, &TEST_TENANT.into())
            .await
            .unwrap()
            .is_none()
    );
}
