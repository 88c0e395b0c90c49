//! Operations as proposals on the real `ProposalService`: what proposing checks and records,
//! the permissions at each step, targets skipped as stale at apply, apply at most once
//! (concurrently and after a takeover), the per-target audit trail, and dropping targets.

use std::sync::Arc;

use chrono::TimeDelta;
use elsa_ai_abstractions::{
    AuditAction, AuditOutcome, Clock, OperationDraft, Permission, ProposalKind, ProposalStatus,
    TargetOutcome, TargetResult,
};
use elsa_ai_host::ProposalSettings;
use elsa_ai_host::testing::governance::TEST_TENANT;
use elsa_ai_host::testing::proposals::{ProposalHarness, refused, sample_definition};
use elsa_workflows::{
    TenantId, VersionOptions, WorkflowDefinitionPublisher, WorkflowDefinitionStore,
    WorkflowInstance, WorkflowInstanceOperator, WorkflowInstanceStore, WorkflowStatus,
    WorkflowSubStatus,
};
use serde_json::json;

fn tenant() -> TenantId {
    TenantId::from(TEST_TENANT)
}

/// Stores an instance of `orders` v1 in `tenant` in the given state.
fn run(h: &ProposalHarness, tenant: &TenantId, id: &str, status: &str, sub_status: &str) {
    let instance = WorkflowInstance::from_value(json!({
        "id": id, "definitionId": "orders", "version": 1, "correlationId": format!("c-{id}"),
        "status": status, "subStatus": sub_status, "createdAt": "2025-01-05T10:00:00Z",
        "workflowState": {"input": {"order": id}}
    }))
    .expect("an instance");
    h.workflows.insert_instance(tenant, instance);
}

fn faulted(h: &ProposalHarness, id: &str) {
    run(h, &tenant(), id, "Finished", "Faulted");
}

fn draft(kind: ProposalKind, targets: &[&str]) -> OperationDraft {
    OperationDraft {
        conversation_id: None,
        kind,
        targets: targets.iter().map(|t| (*t).to_owned()).collect(),
        version: None,
        rationale: format!("{} them", kind.verb()),
    }
}

async fn state(h: &ProposalHarness, id: &str) -> (WorkflowStatus, WorkflowSubStatus) {
    let instance = WorkflowInstanceStore::find(h.workflows.as_ref(), &tenant(), id)
        .await
        .unwrap()
        .expect("the instance exists");
    (instance.status(), instance.sub_status())
}

#[tokio::test]
async fn a_retry_records_each_targets_state_and_applies_only_after_approval() {
    let h = ProposalHarness::new();
    faulted(&h, "i-1");
    faulted(&h, "i-2");
    let alice = h.caller();
    let proposal = h
        .service
        .create_operation(&alice, draft(ProposalKind::Retry, &["i-1", "i-2", "i-1"]))
        .await
        .unwrap();
    assert_eq!(proposal.kind, ProposalKind::Retry);
    assert_eq!(proposal.status, ProposalStatus::Validated);
    assert!(proposal.payload.is_none());
    let plan = proposal.operation.as_ref().unwrap();
    let ids: Vec<&str> = plan.targets.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["i-1", "i-2"], "duplicates collapse, order kept");
    for target in &plan.targets {
        assert_eq!(target.status, Some(WorkflowStatus::Finished));
        assert_eq!(target.sub_status, Some(WorkflowSubStatus::Faulted));
        assert_eq!(
            (target.definition_id.as_str(), target.version),
            ("orders", 1)
        );
        assert!(target.outcome.is_none());
    }
    assert_eq!(proposal.definition_id(), "orders");
    assert_eq!(h.operations.calls(), 0, "proposing acts on nothing");

    // Nothing happens before approval.
    let error = refused(h.service.apply(&alice, &proposal.id).await);
    assert_eq!((error.status(), error.code()), (409, "invalid_state"));
    h.service.approve(&alice, &proposal.id).await.unwrap();
    let applied = h.service.apply(&alice, &proposal.id).await.unwrap();
    assert_eq!(applied.status, ProposalStatus::Applied);
    for target in &applied.operation.as_ref().unwrap().targets {
        assert_eq!(
            target.outcome.as_ref().map(|o| o.result),
            Some(TargetResult::Done)
        );
    }
    assert_eq!(h.operations.calls(), 2);
    for id in ["i-1", "i-2"] {
        assert_eq!(
            state(&h, id).await,
            (WorkflowStatus::Running, WorkflowSubStatus::Executing)
        );
    }
    assert_eq!(applied.applied_by.as_deref(), Some("alice"));
    assert_eq!(h.stored(&proposal.id).await, applied);

    // The trail: created, approved, applied (before the effect), one record per target.
    let actions: Vec<AuditAction> = h
        .audit_of(&proposal.id)
        .into_iter()
        .map(|r| r.action)
        .collect();
    assert_eq!(
        actions,
        [
            AuditAction::PROPOSAL_CREATED,
            AuditAction::PROPOSAL_APPLIED,
            AuditAction::PROPOSAL_APPROVED,
            AuditAction::PROPOSAL_APPLIED,
            AuditAction::PROPOSAL_TARGET,
            AuditAction::PROPOSAL_TARGET,
        ]
    );
    let targets: Vec<_> = h
        .audit_of(&proposal.id)
        .into_iter()
        .filter(|r| r.action == AuditAction::PROPOSAL_TARGET)
        .collect();
    assert_eq!(targets[0].details["target"], "i-1");
    assert_eq!(targets[0].details["outcome"]["result"], "Done");
    assert_eq!(targets[0].details["baseline"]["subStatus"], "Faulted");
    assert!(targets.iter().all(|r| r.outcome == AuditOutcome::Success));
}

#[tokio::test]
async fn a_target_whose_state_changed_since_is_skipped_as_stale_and_not_acted_on() {
    let h = ProposalHarness::new();
    run(&h, &tenant(), "w-1", "Running", "Suspended");
    run(&h, &tenant(), "w-2", "Running", "Suspended");
    run(&h, &tenant(), "w-3", "Running", "Suspended");
    let alice = h.caller();
    let proposal = h
        .service
        .create_operation(&alice, draft(ProposalKind::Cancel, &["w-1", "w-2", "w-3"]))
        .await
        .unwrap();
    h.service.approve(&alice, &proposal.id).await.unwrap();
    // Meanwhile w-2 resumed and w-3 finished on its own.
    run(&h, &tenant(), "w-2", "Running", "Executing");
    let applied = {
        let mut gone = WorkflowInstanceStore::find(h.workflows.as_ref(), &tenant(), "w-3")
            .await
            .unwrap()
            .unwrap();
        gone.set_status(
            WorkflowStatus::Finished,
            WorkflowSubStatus::Finished,
            chrono::Utc::now(),
        );
        h.workflows.insert_instance(&tenant(), gone);
        h.service.apply(&alice, &proposal.id).await.unwrap()
    };
    let outcomes: Vec<_> = applied
        .operation
        .as_ref()
        .unwrap()
        .targets
        .iter()
        .map(|t| t.outcome.clone().unwrap())
        .collect();
    assert_eq!(outcomes[0].result, TargetResult::Done);
    assert_eq!(outcomes[1].result, TargetResult::Stale);
    assert_eq!(outcomes[2].result, TargetResult::Stale);
    let reason = outcomes[1].reason.as_deref().unwrap();
    assert!(
        reason.contains("Running/Suspended") && reason.contains("Running/Executing"),
        "{reason}"
    );
    assert_eq!(
        h.operations.calls(),
        1,
        "only the unchanged target was acted on"
    );
    assert_eq!(
        state(&h, "w-2").await,
        (WorkflowStatus::Running, WorkflowSubStatus::Executing),
        "the stale target is as it was"
    );
    assert_eq!(
        state(&h, "w-1").await,
        (WorkflowStatus::Finished, WorkflowSubStatus::Cancelled)
    );
    let stale: Vec<_> = h
        .audit_of(&proposal.id)
        .into_iter()
        .filter(|r| {
            r.action == AuditAction::PROPOSAL_TARGET && r.details["outcome"]["result"] == "Stale"
        })
        .collect();
    assert_eq!(stale.len(), 2);
    assert!(stale.iter().all(|r| r.outcome == AuditOutcome::Failure));
}

#[tokio::test]
async fn proposing_refuses_an_operation_the_targets_state_does_not_allow() {
    let h = ProposalHarness::new();
    let alice = h.caller();
    run(&h, &tenant(), "running", "Running", "Suspended");
    run(&h, &tenant(), "done", "Finished", "Finished");
    h.seed(sample_definition("orders", "v1")).await;
    h.seed(sample_definition("orders", "v2")).await;
    h.workflows.publish(&tenant(), "orders", 2).await.unwrap();
    h.seed(sample_definition("drafts", "v1")).await;
    for (kind, targets, version, code) in [
        (ProposalKind::Retry, "running", None, "instance_not_faulted"),
        (ProposalKind::Cancel, "done", None, "instance_finished"),
        (ProposalKind::Restart, "running", None, "instance_running"),
        (ProposalKind::Publish, "orders", None, "already_published"),
        (
            ProposalKind::Publish,
            "orders",
            Some(1),
            "version_not_latest",
        ),
        (ProposalKind::Unpublish, "drafts", None, "not_published"),
    ] {
        let mut draft = draft(kind, &[targets]);
        draft.version = version;
        let error = refused(h.service.create_operation(&alice, draft).await);
        assert_eq!((error.status(), error.code()), (409, code), "{kind:?}");
    }
    for (targets, code) in [
        (&[][..], "targets_required"),
        (&["  "][..], "targets_required"),
    ] {
        let error = refused(
            h.service
                .create_operation(&alice, draft(ProposalKind::Retry, targets))
                .await,
        );
        assert_eq!((error.status(), error.code()), (400, code));
    }
    let error = refused(
        h.service
            .create_operation(&alice, draft(ProposalKind::Delete, &["orders", "drafts"]))
            .await,
    );
    assert_eq!((error.status(), error.code()), (400, "one_definition"));
    let error = refused(
        h.service
            .create_operation(&alice, draft(ProposalKind::Update, &["orders"]))
            .await,
    );
    assert_eq!((error.status(), error.code()), (400, "not_an_operation"));
    // Every refusal is audited as a denied creation; nothing was stored or done.
    let denied = h
        .audit
        .events(&tenant())
        .into_iter()
        .filter(|r| r.action == AuditAction::PROPOSAL_CREATED && r.outcome == AuditOutcome::Denied)
        .count();
    assert_eq!(denied, 10);
    assert_eq!(h.operations.calls(), 0);
}

#[tokio::test]
async fn another_tenants_or_an_unreadable_target_is_not_found() {
    let h = ProposalHarness::new();
    let globex = TenantId::from("globex");
    run(&h, &globex, "theirs", "Finished", "Faulted");
    faulted(&h, "ours");
    let alice = h.caller();
    let error = refused(
        h.service
            .create_operation(&alice, draft(ProposalKind::Retry, &["ours", "theirs"]))
            .await,
    );
    assert_eq!((error.status(), error.code()), (404, "instance_not_found"));
    assert!(!error.message().contains("globex"));

    // Without read:workflow-instances, even the caller's own instance is not found.
    let blind = h.caller_with(
        "carol",
        TEST_TENANT,
        &[
            Permission::PROPOSE_WORKFLOWS,
            Permission::OPERATE_WORKFLOW_INSTANCES,
        ],
    );
    let error = refused(
        h.service
            .create_operation(&blind, draft(ProposalKind::Retry, &["ours"]))
            .await,
    );
    assert_eq!((error.status(), error.code()), (404, "instance_not_found"));
    let unreadable = h.caller_with(
        "carol",
        TEST_TENANT,
        &[Permission::PROPOSE_WORKFLOWS, Permission::PUBLISH_WORKFLOWS],
    );
    h.seed(sample_definition("orders", "v1")).await;
    let error = refused(
        h.service
            .create_operation(&unreadable, draft(ProposalKind::Delete, &["orders"]))
            .await,
    );
    assert_eq!(
        (error.status(), error.code()),
        (404, "definition_not_found")
    );

    // A globex caller does not see acme's proposal either.
    let proposal = h
        .service
        .create_operation(&alice, draft(ProposalKind::Retry, &["ours"]))
        .await
        .unwrap();
    let gina = h.caller_with(
        "gina",
        "globex",
        &elsa_ai_host::testing::governance::all_permissions(),
    );
    let error = refused(h.service.approve(&gina, &proposal.id).await);
    assert_eq!(error.status(), 404);
}

#[tokio::test]
async fn the_operations_own_permission_is_checked_at_proposal_approval_and_apply() {
    let h = ProposalHarness::new();
    faulted(&h, "i-1");
    let alice = h.caller();
    let no_operate = h.caller_with(
        "dave",
        TEST_TENANT,
        &[
            Permission::READ_WORKFLOW_INSTANCES,
            Permission::PROPOSE_WORKFLOWS,
            Permission::APPLY_WORKFLOWS,
            Permission::PUBLISH_WORKFLOWS,
        ],
    );
    let error = refused(
        h.service
            .create_operation(&no_operate, draft(ProposalKind::Retry, &["i-1"]))
            .await,
    );
    assert_eq!((error.status(), error.code()), (403, "permission_denied"));

    let proposal = h
        .service
        .create_operation(&alice, draft(ProposalKind::Retry, &["i-1"]))
        .await
        .unwrap();
    assert!(
        h.service
            .allowed_actions(&no_operate, &proposal)
            .iter()
            .all(|a| a.as_str() == "reject")
    );
    let error = refused(h.service.approve(&no_operate, &proposal.id).await);
    assert_eq!(error.status(), 403);
    h.service.approve(&alice, &proposal.id).await.unwrap();
    let error = refused(h.service.apply(&no_operate, &proposal.id).await);
    assert_eq!(error.status(), 403);
    assert_eq!(h.operations.calls(), 0);
    let denied: Vec<_> = h
        .audit_of(&proposal.id)
        .into_iter()
        .filter(|r| r.outcome == AuditOutcome::Denied)
        .map(|r| r.action)
        .collect();
    assert_eq!(
        denied,
        [
            AuditAction::PROPOSAL_APPROVED,
            AuditAction::PROPOSAL_APPLIED
        ]
    );
    // A reviewer without the operation's permission may still reject it.
    h.service
        .reject(&no_operate, &proposal.id, "not now")
        .await
        .unwrap();
}

#[tokio::test]
async fn too_many_targets_are_refused_at_the_configured_limit() {
    let h = ProposalHarness::builder()
        .settings(ProposalSettings {
            max_targets: 2,
            ..ProposalSettings::default()
        })
        .build();
    for id in ["a", "b", "c"] {
        faulted(&h, id);
    }
    let error = refused(
        h.service
            .create_operation(&h.caller(), draft(ProposalKind::Retry, &["a", "b", "c"]))
            .await,
    );
    assert_eq!((error.status(), error.code()), (400, "too_many_targets"));
    h.service
        .create_operation(&h.caller(), draft(ProposalKind::Retry, &["a", "b"]))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_applies_act_on_each_target_once() {
    let h = ProposalHarness::new();
    for id in ["a", "b", "c"] {
        faulted(&h, id);
    }
    let alice = h.caller();
    let proposal = h
        .service
        .create_operation(&alice, draft(ProposalKind::Restart, &["a", "b", "c"]))
        .await
        .unwrap();
    h.service.approve(&alice, &proposal.id).await.unwrap();
    let barrier = Arc::new(tokio::sync::Barrier::new(20));
    let applies: Vec<_> = (0..20)
        .map(|_| {
            let (service, caller, id, barrier) = (
                h.service.clone(),
                alice.clone(),
                proposal.id.clone(),
                barrier.clone(),
            );
            tokio::spawn(async move {
                barrier.wait().await;
                service.apply(&caller, &id).await
            })
        })
        .collect();
    let mut applied = 0;
    for apply in applies {
        match apply.await.unwrap() {
            Ok(_) => applied += 1,
            Err(error) => assert_eq!(error.status(), 409, "{error:?}"),
        }
    }
    assert_eq!(applied, 1);
    assert_eq!(h.operations.calls(), 3, "each instance restarted once");
    let restarted: Vec<String> = h
        .stored(&proposal.id)
        .await
        .operation
        .unwrap()
        .targets
        .iter()
        .map(|t| t.outcome.clone().unwrap().new_instance_id.unwrap())
        .collect();
    for id in &restarted {
        let new = WorkflowInstanceStore::find(h.workflows.as_ref(), &tenant(), id)
            .await
            .unwrap()
            .expect("the new instance exists");
        assert_eq!(new.sub_status(), WorkflowSubStatus::Pending);
    }
}

#[tokio::test]
async fn an_apply_taking_over_a_lapsed_claim_continues_after_the_recorded_targets() {
    let h = ProposalHarness::new();
    run(&h, &tenant(), "w-1", "Running", "Suspended");
    run(&h, &tenant(), "w-2", "Running", "Suspended");
    let alice = h.caller();
    let proposal = h
        .service
        .create_operation(&alice, draft(ProposalKind::Cancel, &["w-1", "w-2"]))
        .await
        .unwrap();
    let approved = h.service.approve(&alice, &proposal.id).await.unwrap();
    // Another replica claimed it, cancelled w-1, recorded that, and died.
    WorkflowInstanceOperator::cancel(h.workflows.as_ref(), &tenant(), "w-1")
        .await
        .unwrap();
    let mut crashed = approved.clone();
    crashed.applied_by = Some("replica-2".into());
    crashed.applied_at = Some(h.clock.now());
    crashed.operation.as_mut().unwrap().targets[0].outcome = Some(TargetOutcome {
        result: TargetResult::Done,
        reason: None,
        new_instance_id: None,
    });
    crashed.revision += 1;
    h.store.update(&crashed, approved.revision).await.unwrap();

    let error = refused(h.service.apply(&alice, &proposal.id).await);
    assert_eq!((error.status(), error.code()), (409, "apply_in_progress"));
    h.clock
        .advance(ProposalSettings::default().claim_timeout + TimeDelta::minutes(1));
    let applied = h.service.apply(&alice, &proposal.id).await.unwrap();
    assert_eq!(applied.status, ProposalStatus::Applied);
    let results: Vec<_> = applied
        .operation
        .unwrap()
        .targets
        .iter()
        .map(|t| t.outcome.as_ref().unwrap().result)
        .collect();
    assert_eq!(results, [TargetResult::Done, TargetResult::Done]);
    assert_eq!(
        h.operations.calls(),
        1,
        "the recorded target was not acted on again"
    );
    assert_eq!(
        state(&h, "w-2").await,
        (WorkflowStatus::Finished, WorkflowSubStatus::Cancelled)
    );
}

#[tokio::test]
async fn publish_unpublish_and_delete_act_on_the_definition_and_say_what_is_lost() {
    let h = ProposalHarness::new();
    let alice = h.caller();
    h.seed(sample_definition("orders", "v1")).await;
    h.workflows.publish(&tenant(), "orders", 1).await.unwrap();
    h.seed(sample_definition("orders", "v2")).await;
    run(&h, &tenant(), "o-1", "Finished", "Finished");

    let publish = h
        .service
        .create_operation(&alice, draft(ProposalKind::Publish, &["orders"]))
        .await
        .unwrap();
    let target = &publish.operation.as_ref().unwrap().targets[0];
    assert_eq!(
        (
            target.version,
            target.latest_version,
            target.published_version
        ),
        (2, Some(2), Some(1))
    );
    assert!(publish.warnings[0].contains("version 1 is published now"));
    h.service.approve(&alice, &publish.id).await.unwrap();
    h.service.apply(&alice, &publish.id).await.unwrap();
    let published = WorkflowDefinitionStore::find(
        h.workflows.as_ref(),
        &tenant(),
        "orders",
        VersionOptions::Published,
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(published.version(), 2);

    let unpublish = h
        .service
        .create_operation(&alice, draft(ProposalKind::Unpublish, &["orders"]))
        .await
        .unwrap();
    h.service.approve(&alice, &unpublish.id).await.unwrap();
    h.service.apply(&alice, &unpublish.id).await.unwrap();
    assert!(
        WorkflowDefinitionStore::find(
            h.workflows.as_ref(),
            &tenant(),
            "orders",
            VersionOptions::Published
        )
        .await
        .unwrap()
        .is_none()
    );

    let delete = h
        .service
        .create_operation(&alice, draft(ProposalKind::Delete, &["orders"]))
        .await
        .unwrap();
    let deletion = delete.operation.as_ref().unwrap().deletion.clone().unwrap();
    assert_eq!(deletion.versions.len(), 2);
    assert_eq!(deletion.published_version, None);
    assert_eq!(deletion.instance_count, 1);
    // A new version meanwhile makes the deletion stale: it is not carried out.
    h.seed(sample_definition("orders", "v3")).await;
    h.service.approve(&alice, &delete.id).await.unwrap();
    let applied = h.service.apply(&alice, &delete.id).await.unwrap();
    let outcome = applied.operation.unwrap().targets[0]
        .outcome
        .clone()
        .unwrap();
    assert_eq!(outcome.result, TargetResult::Stale);
    assert!(h.latest("orders").await.is_some(), "nothing was deleted");
}

#[tokio::test]
async fn a_reviewer_drops_targets_before_approving() {
    let h = ProposalHarness::new();
    for id in ["a", "b", "c"] {
        faulted(&h, id);
    }
    let alice = h.caller();
    let proposal = h
        .service
        .create_operation(&alice, draft(ProposalKind::Retry, &["a", "b", "c"]))
        .await
        .unwrap();
    assert!(
        h.service
            .allowed_actions(&alice, &proposal)
            .iter()
            .any(|a| a.as_str() == "dropTargets")
    );
    let dropped = h
        .service
        .drop_targets(&alice, &proposal.id, &["b".into()])
        .await
        .unwrap();
    let ids: Vec<&str> = dropped
        .operation
        .as_ref()
        .unwrap()
        .targets
        .iter()
        .map(|t| t.id.as_str())
        .collect();
    assert_eq!(ids, ["a", "c"]);
    assert_eq!(dropped.revision, proposal.revision + 1);
    assert_eq!(dropped.status, ProposalStatus::Validated);
    let record = h.audit_of(&proposal.id).pop().unwrap();
    assert_eq!(record.action, AuditAction::PROPOSAL_TARGETS_DROPPED);
    assert_eq!(record.details["dropped"], json!(["b"]));

    for (targets, code) in [
        (vec!["a".to_owned(), "c".to_owned()], "targets_required"),
        (vec!["zzz".to_owned()], "unknown_target"),
        (Vec::new(), "targets_required"),
    ] {
        let error = refused(h.service.drop_targets(&alice, &proposal.id, &targets).await);
        assert_eq!((error.status(), error.code()), (400, code));
    }
    h.service.approve(&alice, &proposal.id).await.unwrap();
    let error = refused(
        h.service
            .drop_targets(&alice, &proposal.id, &["a".into()])
            .await,
    );
    assert_eq!((error.status(), error.code()), (409, "invalid_state"));
    let applied = h.service.apply(&alice, &proposal.id).await.unwrap();
    assert_eq!(applied.operation.unwrap().targets.len(), 2);
    assert_eq!(h.operations.calls(), 2);
    assert_eq!(
        state(&h, "b").await,
        (WorkflowStatus::Finished, WorkflowSubStatus::Faulted),
        "the dropped target was not retried"
    );
}

#[tokio::test]
async fn a_host_without_operation_services_refuses_operations() {
    let h = ProposalHarness::new();
    faulted(&h, "i-1");
    let bare = elsa_ai_host::HostCore::builder(
        Arc::new(elsa_ai_host::Redactor::default()),
        h.audit.clone(),
    )
    .build()
    .proposals(
        h.store.clone(),
        h.workflows.clone(),
        h.writer.clone(),
        h.workflows.clone(),
    )
    .build();
    let error = refused(
        bare.create_operation(&h.caller(), draft(ProposalKind::Retry, &["i-1"]))
            .await,
    );
    assert_eq!(
        (error.status(), error.code()),
        (503, "operations_unavailable")
    );
}

#[tokio::test]
async fn a_deletion_is_stale_when_the_definition_gained_instances_since() {
    let h = ProposalHarness::new();
    let alice = h.caller();
    h.seed(sample_definition("orders", "v1")).await;
    run(&h, &tenant(), "o-1", "Finished", "Finished");
    let delete = h
        .service
        .create_operation(&alice, draft(ProposalKind::Delete, &["orders"]))
        .await
        .unwrap();
    assert!(
        delete.warnings[0].contains("its 1 instance(s)"),
        "{:?}",
        delete.warnings
    );
    h.service.approve(&alice, &delete.id).await.unwrap();
    // A new run started after the reviewer saw one instance: deleting would delete it too.
    run(&h, &tenant(), "o-2", "Running", "Executing");
    let applied = h.service.apply(&alice, &delete.id).await.unwrap();
    let outcome = applied.operation.unwrap().targets[0]
        .outcome
        .clone()
        .unwrap();
    assert_eq!(outcome.result, TargetResult::Stale);
    assert!(
        outcome
            .reason
            .as_deref()
            .unwrap()
            .contains("1 instance(s) when proposed and has 2"),
        "{outcome:?}"
    );
    assert_eq!(h.operations.calls(), 0);
    assert!(h.latest("orders").await.is_some(), "nothing was deleted");
    assert_eq!(state(&h, "o-2").await.1, WorkflowSubStatus::Executing);
}
