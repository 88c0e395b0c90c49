//! The proposal lifecycle: every transition legal and illegal, the apply checks in order,
//! tenant isolation, permissions, expiry, redaction, audit, stream events and apply-once
//! under concurrency.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::TimeDelta;
use elsa_ai_abstractions::Permission;
use elsa_ai_abstractions::{
    AiAuditEvent, AiAuditSink, AiError, AiProposal, AiStreamEventType as T, AiTool,
    AiToolDefinition, AiToolExecutionContext, AuditAction, AuditOutcome, ProposalDraft, ProposalId,
    ProposalKind, ProposalQuery, ProposalStatus,
};
use elsa_ai_host::testing::chat::REGISTERED_SECRET;
use elsa_ai_host::testing::governance::{
    GovernanceHarness, TEST_AGENT, TEST_TENANT, proposal_tool,
};
use elsa_ai_host::testing::proposals::{ProposalHarness, refused, sample_definition};
use elsa_ai_host::{
    EXPIRY_ACTOR, HostCore, InMemoryAuditLog, ProposalAction, ProposalSettings, REDACTED, Redactor,
};
use elsa_ai_scripted::{Script, ScriptStep};
use elsa_workflows::{
    Activity, DEFAULT_SOURCE_PORT, DEFAULT_TARGET_PORT, DefinitionVersionRef, DiagnosticCode,
    Endpoint, InMemoryWorkflowBackend, TenantId, WorkflowDefinition, WorkflowDefinitionWriter,
    WorkflowError, builtin_catalog,
};
use parking_lot::Mutex;
use serde_json::{Value, json};

fn statuses(events: &[elsa_ai_abstractions::AiStreamEvent]) -> Vec<(T, String)> {
    events
        .iter()
        .map(|e| {
            (
                e.event_type,
                e.data["status"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn actions(records: &[AiAuditEvent]) -> Vec<(&str, AuditOutcome, &str)> {
    records
        .iter()
        .map(|r| (r.action.as_str(), r.outcome, r.actor_id.as_str()))
        .collect()
}

#[tokio::test]
async fn the_same_user_requests_approves_and_applies_each_audited() {
    let h = ProposalHarness::new();
    let conversation = h.conversation().await;
    let alice = h.caller();
    let proposal = h.validated_update("orders", Some(&conversation)).await;
    assert_eq!(proposal.status, ProposalStatus::Validated);
    assert_eq!(proposal.created_by, "alice");
    assert_eq!(proposal.baseline.as_ref().unwrap().version, 1);
    assert!(proposal.expires_at.is_some());
    assert_eq!(proposal.diagnostics, [], "the sample is clean");
    assert!(proposal.warnings.is_empty(), "{:?}", proposal.warnings);

    let approved = h.service.approve(&alice, &proposal.id).await.unwrap();
    assert_eq!(approved.status, ProposalStatus::Approved);
    assert_eq!(approved.reviewed_by.as_deref(), Some("alice"));

    let applied = h.service.apply(&alice, &proposal.id).await.unwrap();
    assert_eq!(applied.status, ProposalStatus::Applied);
    assert_eq!(applied.applied_by.as_deref(), Some("alice"));
    let version = applied.applied_version.clone().unwrap();
    assert_eq!(
        (version.definition_id.as_str(), version.version),
        ("orders", 2)
    );
    assert_eq!(h.writer.writes(), 1);
    assert_eq!(h.latest("orders").await.unwrap().version(), 2);
    assert_eq!(
        h.stored(&proposal.id).await,
        applied,
        "what apply returns is stored"
    );

    let records = h.audit_of(&proposal.id);
    assert_eq!(
        actions(&records),
        [
            ("proposal.created", AuditOutcome::Success, "alice"),
            ("proposal.approved", AuditOutcome::Success, "alice"),
            ("proposal.applied", AuditOutcome::Success, "alice"),
            ("proposal.written", AuditOutcome::Success, "alice"),
        ]
    );
    assert!(
        records
            .iter()
            .all(|r| r.tenant_id == TenantId::from(TEST_TENANT))
    );
    assert!(
        records
            .iter()
            .all(|r| r.conversation_id.as_ref() == Some(&conversation))
    );
    assert!(records.windows(2).all(|w| w[0].timestamp <= w[1].timestamp));

    let events = h.proposal_events(&conversation).await;
    assert_eq!(
        statuses(&events),
        [
            (T::ProposalCreated, "Validated".to_owned()),
            (T::ProposalUpdated, "Approved".to_owned()),
            (T::ProposalUpdated, "Applied".to_owned()),
        ]
    );
    assert!(
        events
            .iter()
            .all(|e| e.data["proposalId"] == json!(proposal.id))
    );
    assert_eq!(events[2].data["previousStatus"], "Approved");
    assert_eq!(events[2].data["appliedVersion"]["version"], 2);

    let counters = h.service.metrics().proposals.snapshot();
    assert_eq!(
        (
            counters.created,
            counters.validated,
            counters.approved,
            counters.applied
        ),
        (1, 1, 1, 1)
    );
}

#[tokio::test]
async fn the_audit_trail_carries_the_graph_diff_the_payload_digest_and_the_written_version() {
    let h = ProposalHarness::new();
    let alice = h.caller();
    let proposal = h.validated_update("orders", None).await;
    assert!(
        !proposal.graph_diff.header.is_empty()
            || !proposal.graph_diff.activities_changed.is_empty()
            || !proposal.graph_diff.activities_added.is_empty(),
        "the sample update changes something: {:?}",
        proposal.graph_diff
    );
    h.service.approve(&alice, &proposal.id).await.unwrap();
    let applied = h.service.apply(&alice, &proposal.id).await.unwrap();

    let records = h.audit_of(&proposal.id);
    let record = |action: &AuditAction| {
        records
            .iter()
            .find(|r| &r.action == action && r.outcome == AuditOutcome::Success)
            .unwrap_or_else(|| panic!("no {action:?} record in {records:?}"))
    };
    let created = record(&AuditAction::PROPOSAL_CREATED);
    assert_eq!(
        created.details["graphDiff"],
        serde_json::to_value(&proposal.graph_diff).unwrap(),
        "the creation record holds the diff a reviewer saw"
    );
    let digest = created.details["definitionDigest"].as_str().unwrap();
    assert!(
        digest.starts_with("sha256:") && digest.len() == 7 + 64,
        "{digest}"
    );

    let apply = record(&AuditAction::PROPOSAL_APPLIED);
    assert_eq!(apply.details["definitionDigest"], digest);
    let written = record(&AuditAction::PROPOSAL_WRITTEN);
    assert_eq!(written.details["definitionDigest"], digest);
    assert_eq!(
        written.details["appliedVersion"],
        serde_json::to_value(applied.applied_version.as_ref().unwrap()).unwrap()
    );
    assert_eq!(written.details["appliedVersion"]["version"], 2);
    assert!(
        apply.timestamp <= written.timestamp,
        "the intent is recorded before the effect, the version after it"
    );
}

#[tokio::test]
async fn a_refused_apply_writes_no_version_record() {
    let h = ProposalHarness::new();
    let proposal = h.validated_update("orders", None).await;
    let error = refused(h.service.apply(&h.caller(), &proposal.id).await);
    assert_eq!(error.status(), 409, "not approved yet");
    assert!(
        h.audit_of(&proposal.id)
            .iter()
            .all(|r| r.action != AuditAction::PROPOSAL_WRITTEN)
    );
}

/// A stored proposal of `orders-{n}` in `status`, ready for any action: its baseline is
/// current and its definition valid.
async fn proposal_in(h: &ProposalHarness, status: ProposalStatus, n: usize) -> AiProposal {
    let proposal = h.validated_update(&format!("orders-{n}"), None).await;
    if status == ProposalStatus::Validated {
        return proposal;
    }
    let mut forced = proposal.clone();
    forced.status = status;
    forced.revision += 1;
    h.store.update(&forced, proposal.revision).await.unwrap();
    forced
}

#[tokio::test]
async fn every_action_from_every_state() {
    let h = ProposalHarness::new();
    let alice = h.caller();
    let mut n = 0;
    for status in ProposalStatus::ALL {
        for action in ProposalAction::ALL {
            n += 1;
            let proposal = proposal_in(&h, status, n).await;
            let writes = h.writer.writes();
            let result = match action {
                ProposalAction::Validate => h.service.validate(&alice, &proposal.id).await,
                ProposalAction::Approve => h.service.approve(&alice, &proposal.id).await,
                ProposalAction::Reject => h.service.reject(&alice, &proposal.id, "no").await,
                ProposalAction::Apply => h.service.apply(&alice, &proposal.id).await,
                ProposalAction::Expire => h.service.expire(&alice, &proposal.id).await,
                ProposalAction::DropTargets => {
                    h.service
                        .drop_targets(&alice, &proposal.id, &["i-1".into()])
                        .await
                }
                other => panic!("no call for {other:?} yet"),
            };
            let case = format!("{action:?} from {status:?}");
            if action.is_allowed_from(status) && action == ProposalAction::DropTargets {
                // The state allows it, an update proposal has no targets to drop.
                let error = refused(result);
                assert_eq!(error.code(), "not_droppable", "{case}");
                assert_eq!(h.stored(&proposal.id).await, proposal, "{case}: unchanged");
            } else if action.is_allowed_from(status) {
                let expected = match action {
                    ProposalAction::Validate => ProposalStatus::Validated,
                    ProposalAction::Approve => ProposalStatus::Approved,
                    ProposalAction::Reject => ProposalStatus::Rejected,
                    ProposalAction::Apply => ProposalStatus::Applied,
                    ProposalAction::Expire => ProposalStatus::Expired,
                    ProposalAction::DropTargets => ProposalStatus::Validated,
                    other => panic!("no expected state for {other:?} yet"),
                };
                let done = result.unwrap_or_else(|e| panic!("{case}: refused {e:?}"));
                assert_eq!(done.status, expected, "{case}");
                assert_eq!(
                    done.revision,
                    proposal.revision + 1 + u64::from(action == ProposalAction::Apply),
                    "{case}"
                );
                assert_eq!(h.stored(&proposal.id).await, done, "{case}");
                let expected_writes = writes + usize::from(action == ProposalAction::Apply);
                assert_eq!(h.writer.writes(), expected_writes, "{case}");
            } else {
                let error = refused(result);
                assert_eq!(error.status(), 409, "{case}");
                assert_eq!(error.code(), "invalid_state", "{case}");
                assert_eq!(
                    error.to_body().current_state.as_deref(),
                    Some(status.as_str()),
                    "{case}"
                );
                assert!(error.message().contains(status.as_str()), "{case}");
                assert_eq!(h.stored(&proposal.id).await, proposal, "{case}: unchanged");
                assert_eq!(h.writer.writes(), writes, "{case}: nothing written");
                let last = h.audit_of(&proposal.id).pop().unwrap();
                assert_eq!(last.action, action.audit_action(), "{case}");
                assert_eq!(last.outcome, AuditOutcome::Denied, "{case}");
            }
        }
    }
    assert_eq!(n, 42);
}

#[tokio::test]
async fn apply_without_approval_is_409_and_writes_nothing() {
    let h = ProposalHarness::new();
    let proposal = h.validated_update("orders", None).await;
    let error = refused(h.service.apply(&h.caller(), &proposal.id).await);
    assert_eq!((error.status(), error.code()), (409, "invalid_state"));
    assert_eq!(error.to_body().current_state.as_deref(), Some("Validated"));
    assert_eq!(h.writer.attempts(), 0);
    assert_eq!(h.stored(&proposal.id).await, proposal);
    assert_eq!(h.latest("orders").await.unwrap().version(), 1);
}

#[tokio::test]
async fn a_stale_baseline_is_409_with_nothing_written_and_status_unchanged() {
    let h = ProposalHarness::new();
    let conversation = h.conversation().await;
    let proposal = h.approved_update("orders", Some(&conversation)).await;
    // Someone changes the workflow after the proposal was made.
    h.seed(sample_definition("orders", "Changed meanwhile"))
        .await;

    let error = refused(h.service.apply(&h.caller(), &proposal.id).await);
    assert_eq!((error.status(), error.code()), (409, "stale_baseline"));
    assert_eq!(error.to_body().current_state.as_deref(), Some("Approved"));
    assert!(error.message().contains("version 2"), "{}", error.message());
    assert_eq!(h.writer.attempts(), 0, "nothing written");
    assert_eq!(
        h.stored(&proposal.id).await,
        proposal,
        "status and revision unchanged"
    );
    assert_eq!(h.latest("orders").await.unwrap().version(), 2);
    let last = h.audit_of(&proposal.id).pop().unwrap();
    assert_eq!(
        (last.action, last.outcome),
        (AuditAction::PROPOSAL_APPLIED, AuditOutcome::Denied)
    );
    assert_eq!(h.service.metrics().proposals.snapshot().stale_baselines, 1);
    let events = h.proposal_events(&conversation).await;
    assert_eq!(
        events.len(),
        2,
        "created and approved; the refusal changes nothing"
    );
}

/// The sample workflow with an `Elsa.End` after its WriteLine: an update that adds an
/// activity type the baseline does not use.
fn with_end(definition_id: &str) -> WorkflowDefinition {
    let mut definition = sample_definition(definition_id, "Hello, world");
    definition
        .insert_activity(None, Activity::new("end1", "Elsa.End"), None)
        .and_then(|()| {
            definition.add_connection(
                None,
                Endpoint::new("write1", DEFAULT_SOURCE_PORT),
                Endpoint::new("end1", DEFAULT_TARGET_PORT),
            )
        })
        .expect("the edits fit the sample");
    definition
}

/// The built-in catalog without `type_name`.
fn catalog_without(type_name: &str) -> Vec<elsa_workflows::ActivityDescriptor> {
    builtin_catalog()
        .iter()
        .filter(|d| d.type_name != type_name)
        .cloned()
        .collect()
}

#[tokio::test]
async fn validation_failing_at_apply_time_is_422_blocked_and_writes_nothing() {
    let h = ProposalHarness::new();
    let conversation = h.conversation().await;
    let baseline = h.seed(sample_definition("orders", "Hello")).await;
    let draft = h.update_draft(&baseline, with_end("orders"), Some(&conversation));
    let proposal = h.service.create(&h.caller(), draft).await.unwrap();
    assert_eq!(proposal.status, ProposalStatus::Validated);
    let proposal = h.service.approve(&h.caller(), &proposal.id).await.unwrap();
    // The tenant's catalog no longer offers the activity type the update adds.
    h.workflows
        .set_catalog(&TEST_TENANT.into(), catalog_without("Elsa.End"));

    let error = refused(h.service.apply(&h.caller(), &proposal.id).await);
    assert_eq!((error.status(), error.code()), (422, "validation_failed"));
    let diagnostics = error.to_body().diagnostics;
    assert!(
        diagnostics
            .iter()
            .any(|d| d.code == DiagnosticCode::UnknownActivityType
                && d.activity_id.as_deref() == Some("end1")
                && d.is_error()),
        "{diagnostics:?}"
    );
    assert_eq!(h.writer.attempts(), 0, "nothing written");
    let stored = h.stored(&proposal.id).await;
    assert_eq!(stored.status, ProposalStatus::Blocked);
    assert_eq!(stored.diagnostics, diagnostics);
    assert_eq!(stored.applied_by, None);
    assert_eq!(h.latest("orders").await.unwrap().version(), 1);

    let last = h.audit_of(&proposal.id).pop().unwrap();
    assert_eq!(
        (last.action, last.outcome),
        (AuditAction::PROPOSAL_APPLIED, AuditOutcome::Failure)
    );
    assert_eq!(last.details["toStatus"], "Blocked");
    let events = h.proposal_events(&conversation).await;
    assert_eq!(
        statuses(&events).last().unwrap(),
        &(T::ProposalUpdated, "Blocked".to_owned())
    );

    assert_eq!(
        h.latest("orders").await.unwrap().version(),
        baseline.version
    );

    // Blocked now: approving is refused until validation passes again.
    let error = refused(h.service.approve(&h.caller(), &proposal.id).await);
    assert_eq!(error.to_body().current_state.as_deref(), Some("Blocked"));
    h.workflows
        .set_catalog(&TEST_TENANT.into(), builtin_catalog().to_vec());
    let revalidated = h.service.validate(&h.caller(), &proposal.id).await.unwrap();
    assert_eq!(revalidated.status, ProposalStatus::Validated);
    assert!(revalidated.diagnostics.iter().all(|d| !d.is_error()));
}

#[tokio::test]
async fn a_draft_holding_the_redaction_marker_is_blocked_and_cannot_be_applied() {
    let h = ProposalHarness::new();
    let baseline = h.seed(sample_definition("orders", "Hello")).await;
    // A model saw the secret only as the marker and copied it into its draft.
    let draft = h.update_draft(
        &baseline,
        sample_definition("orders", &format!("Connect with password {REDACTED}")),
        None,
    );
    let proposal = h.service.create(&h.caller(), draft).await.unwrap();
    assert_eq!(proposal.status, ProposalStatus::Blocked);
    let finding = proposal
        .diagnostics
        .iter()
        .find(|d| d.code == DiagnosticCode::RedactedValue)
        .unwrap_or_else(|| panic!("no redacted_value finding: {:?}", proposal.diagnostics));
    assert!(finding.is_error());
    assert_eq!(finding.activity_id.as_deref(), Some("write1"));

    let error = refused(h.service.approve(&h.caller(), &proposal.id).await);
    assert_eq!(error.to_body().current_state.as_deref(), Some("Blocked"));
    let error = refused(h.service.apply(&h.caller(), &proposal.id).await);
    assert_eq!(error.status(), 409, "{error:?}");
    assert_eq!(h.writer.attempts(), 0, "nothing written");
    assert_eq!(h.latest("orders").await.unwrap().version(), 1);
}

#[tokio::test]
async fn another_tenants_proposal_is_indistinguishable_from_a_missing_one() {
    let h = ProposalHarness::new();
    let proposal = h.approved_update("orders", None).await;
    let globex = h.caller_with(
        "mallory",
        "globex",
        &[Permission::PROPOSE_WORKFLOWS, Permission::APPLY_WORKFLOWS],
    );
    let missing = ProposalId::new("no-such-proposal");
    for id in [&proposal.id, &missing] {
        let errors = [
            refused(h.service.find(&globex, id).await),
            refused(h.service.validate(&globex, id).await),
            refused(h.service.approve(&globex, id).await),
            refused(h.service.reject(&globex, id, "mine now").await),
            refused(h.service.apply(&globex, id).await),
            refused(h.service.expire(&globex, id).await),
        ];
        for error in errors {
            assert_eq!((error.status(), error.code()), (404, "proposal_not_found"));
            assert_eq!(error.message(), format!("proposal '{id}' not found"));
        }
    }
    let inbox = h
        .service
        .list(&globex, &ProposalQuery::default())
        .await
        .unwrap();
    assert_eq!(inbox.total, 0);
    assert_eq!(h.writer.attempts(), 0);
    assert_eq!(h.stored(&proposal.id).await, proposal);
    let audit = InMemoryAuditLog::events(&h.audit, &"globex".into());
    assert!(
        audit.iter().all(|r| r.outcome == AuditOutcome::Denied),
        "the probes are audited in the prober's tenant"
    );
}

#[tokio::test]
async fn missing_permissions_are_403() {
    let h = ProposalHarness::new();
    let proposal = h.validated_update("orders", None).await;
    let proposer = h.caller_with("pat", TEST_TENANT, &[Permission::PROPOSE_WORKFLOWS]);
    let reader = h.caller_with("rita", TEST_TENANT, &[Permission::READ_WORKFLOWS]);
    let reviewer = h.caller_with("rob", TEST_TENANT, &[Permission::APPLY_WORKFLOWS]);

    for error in [
        refused(h.service.approve(&proposer, &proposal.id).await),
        refused(h.service.reject(&proposer, &proposal.id, "no").await),
        refused(h.service.apply(&proposer, &proposal.id).await),
        refused(h.service.expire(&proposer, &proposal.id).await),
        refused(h.service.validate(&reviewer, &proposal.id).await),
        refused(
            h.service
                .create(&reviewer, h.create_draft("new", None))
                .await,
        ),
        refused(h.service.find(&reader, &proposal.id).await),
        refused(h.service.list(&reader, &ProposalQuery::default()).await),
    ] {
        assert_eq!((error.status(), error.code()), (403, "permission_denied"));
    }
    // Either permission reads.
    assert_eq!(
        h.service.find(&proposer, &proposal.id).await.unwrap(),
        proposal
    );
    assert_eq!(
        h.service.find(&reviewer, &proposal.id).await.unwrap(),
        proposal
    );
    assert_eq!(h.stored(&proposal.id).await, proposal);
    let denials: Vec<_> = h
        .audit_of(&proposal.id)
        .into_iter()
        .filter(|r| r.outcome == AuditOutcome::Denied)
        .collect();
    assert_eq!(denials.len(), 5, "each refused action is audited");
    assert_eq!(h.service.metrics().proposals.snapshot().denied, 6);

    // A reviewer other than the requester approves and applies.
    h.service.approve(&reviewer, &proposal.id).await.unwrap();
    let applied = h.service.apply(&reviewer, &proposal.id).await.unwrap();
    assert_eq!(applied.applied_by.as_deref(), Some("rob"));
}

#[tokio::test]
async fn a_rejection_needs_a_reason() {
    let h = ProposalHarness::new();
    let proposal = h.validated_update("orders", None).await;
    for blank in ["", "   \n"] {
        let error = refused(h.service.reject(&h.caller(), &proposal.id, blank).await);
        assert_eq!((error.status(), error.code()), (400, "reason_required"));
    }
    assert_eq!(h.stored(&proposal.id).await, proposal);
    let rejected = h
        .service
        .reject(&h.caller(), &proposal.id, " Not what we need. ")
        .await
        .unwrap();
    assert_eq!(rejected.status, ProposalStatus::Rejected);
    assert_eq!(rejected.review_reason.as_deref(), Some("Not what we need."));
    assert_eq!(rejected.reviewed_by.as_deref(), Some("alice"));
    let last = h.audit_of(&proposal.id).pop().unwrap();
    assert_eq!(last.details["reason"], "Not what we need.");
}

#[tokio::test]
async fn proposals_expire_by_sweep_on_access_and_on_request() {
    let h = ProposalHarness::builder()
        .settings(ProposalSettings {
            ttl: Some(TimeDelta::hours(24)),
            ..ProposalSettings::default()
        })
        .build();
    let conversation = h.conversation().await;
    let swept = h.validated_update("swept", Some(&conversation)).await;
    let touched = h.approved_update("touched", None).await;
    let asked = h.validated_update("asked", None).await;
    assert_eq!(
        swept.expires_at,
        Some(swept.created_at + TimeDelta::hours(24))
    );

    // Before the TTL nothing is due, and an explicit expiry works any time.
    assert_eq!(h.service.expire_due(&TEST_TENANT.into()).await.unwrap(), 0);
    let expired = h.service.expire(&h.caller(), &asked.id).await.unwrap();
    assert_eq!(expired.status, ProposalStatus::Expired);
    assert_eq!(h.audit_of(&asked.id).pop().unwrap().actor_id, "alice");

    h.clock.advance(TimeDelta::hours(24));
    // Acting on a due proposal expires it first, then refuses.
    let error = refused(h.service.apply(&h.caller(), &touched.id).await);
    assert_eq!(error.to_body().current_state.as_deref(), Some("Expired"));
    assert_eq!(h.writer.attempts(), 0);
    assert_eq!(h.stored(&touched.id).await.status, ProposalStatus::Expired);

    assert_eq!(h.service.expire_due(&TEST_TENANT.into()).await.unwrap(), 1);
    assert_eq!(h.stored(&swept.id).await.status, ProposalStatus::Expired);
    let record = h.audit_of(&swept.id).pop().unwrap();
    assert_eq!(
        (record.action, record.outcome, record.actor_id.as_str()),
        (
            AuditAction::PROPOSAL_EXPIRED,
            AuditOutcome::Success,
            EXPIRY_ACTOR
        )
    );
    let events = h.proposal_events(&conversation).await;
    assert_eq!(
        statuses(&events).last().unwrap(),
        &(T::ProposalUpdated, "Expired".to_owned())
    );
    assert_eq!(
        h.service.expire_due(&TEST_TENANT.into()).await.unwrap(),
        0,
        "once"
    );
    assert_eq!(h.service.metrics().proposals.snapshot().expired, 3);

    let forever = ProposalHarness::builder()
        .settings(ProposalSettings {
            ttl: None,
            ..ProposalSettings::default()
        })
        .build();
    let kept = forever.validated_update("kept", None).await;
    assert_eq!(kept.expires_at, None);
    forever.clock.advance(TimeDelta::days(3650));
    assert_eq!(
        forever
            .service
            .expire_due(&TEST_TENANT.into())
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn secrets_are_redacted_in_the_stored_proposal_the_audit_and_the_stream() {
    let h = ProposalHarness::new();
    let conversation = h.conversation().await;
    let baseline = h.seed(sample_definition("orders", "Hello")).await;
    let mut draft = h.update_draft(
        &baseline,
        sample_definition("orders", "Hello, world"),
        Some(&conversation),
    );
    draft.rationale =
        format!("Connect with Server=db;Password=hunter2; and the key {REGISTERED_SECRET}.");
    let proposal = h.service.create(&h.caller(), draft).await.unwrap();
    let expected = format!("Connect with Server=db;Password={REDACTED}; and the key {REDACTED}.");
    assert_eq!(proposal.rationale, expected);
    assert_eq!(h.stored(&proposal.id).await.rationale, expected);
    h.service
        .reject(
            &h.caller(),
            &proposal.id,
            "never paste password=hunter2 here",
        )
        .await
        .unwrap();
    assert_eq!(
        h.stored(&proposal.id).await.review_reason.as_deref(),
        Some(format!("never paste password={REDACTED} here").as_str())
    );

    let records = h.audit_of(&proposal.id);
    assert_eq!(records[0].details["rationale"], expected);
    let events = h.proposal_events(&conversation).await;
    assert_eq!(events[0].data["rationale"], expected);
    for text in records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .chain(events.iter().map(|e| serde_json::to_string(e).unwrap()))
    {
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!text.contains(REGISTERED_SECRET), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_applies_write_once() {
    let h = ProposalHarness::new();
    let conversation = h.conversation().await;
    let proposal = h.approved_update("orders", Some(&conversation)).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let service = h.service.clone();
            let caller = h.caller();
            let id = proposal.id.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                service.apply(&caller, &id).await
            })
        })
        .collect();
    let mut applied = Vec::new();
    let mut conflicts = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            Ok(proposal) => applied.push(proposal),
            Err(error) => conflicts.push(error),
        }
    }
    assert_eq!(applied.len(), 1);
    assert_eq!(conflicts.len(), 49);
    assert!(conflicts.iter().all(|e| e.status() == 409), "{conflicts:?}");
    assert_eq!(h.writer.attempts(), 1, "only the claim holder writes");
    assert_eq!(h.writer.writes(), 1);
    assert_eq!(h.latest("orders").await.unwrap().version(), 2);
    assert_eq!(h.stored(&proposal.id).await, applied[0]);
    let applies: Vec<_> = h
        .audit_of(&proposal.id)
        .into_iter()
        .filter(|r| r.action == AuditAction::PROPOSAL_APPLIED)
        .collect();
    assert_eq!(
        applies
            .iter()
            .filter(|r| r.outcome == AuditOutcome::Success)
            .count(),
        1
    );
    assert_eq!(
        applies
            .iter()
            .filter(|r| r.outcome == AuditOutcome::Denied)
            .count(),
        49
    );
    let events = h.proposal_events(&conversation).await;
    assert_eq!(
        events
            .iter()
            .filter(|e| e.data["status"] == "Applied")
            .count(),
        1
    );
}

#[tokio::test]
async fn creations_are_validated_diffed_and_applied_once_per_id() {
    let h = ProposalHarness::new();
    let alice = h.caller();
    let mut unknown = sample_definition("greeter", "Hi");
    unknown
        .insert_activity(None, Activity::new("mystery1", "Acme.Teleport"), None)
        .unwrap();
    let mut draft = h.create_draft("greeter", None);
    draft.definition = unknown;
    let blocked = h.service.create(&alice, draft).await.unwrap();
    assert_eq!(blocked.status, ProposalStatus::Blocked);
    assert!(
        blocked
            .diagnostics
            .iter()
            .any(|d| d.code == DiagnosticCode::UnknownActivityType
                && d.activity_id.as_deref() == Some("mystery1"))
    );
    assert_eq!(
        refused(h.service.approve(&alice, &blocked.id).await).status(),
        409
    );
    // Validation again does not help while the catalog lacks the type.
    let still = h.service.validate(&alice, &blocked.id).await.unwrap();
    assert_eq!(still.status, ProposalStatus::Blocked);

    let first = h
        .service
        .create(&alice, h.create_draft("greeter", None))
        .await
        .unwrap();
    let second = h
        .service
        .create(&alice, h.create_draft("greeter", None))
        .await
        .unwrap();
    assert_eq!(first.kind, ProposalKind::Create);
    assert_eq!(first.status, ProposalStatus::Validated);
    for p in [&first, &second] {
        h.service.approve(&alice, &p.id).await.unwrap();
    }
    let applied = h.service.apply(&alice, &first.id).await.unwrap();
    assert_eq!(applied.applied_version.unwrap().version, 1);
    let error = refused(h.service.apply(&alice, &second.id).await);
    assert_eq!((error.status(), error.code()), (409, "definition_exists"));
    assert_eq!(h.stored(&second.id).await.status, ProposalStatus::Approved);
    assert_eq!(h.writer.writes(), 1);
}

#[tokio::test]
async fn two_proposals_on_one_baseline_apply_only_once() {
    let h = ProposalHarness::new();
    let alice = h.caller();
    let first = h.approved_update("orders", None).await;
    let baseline = first.baseline.clone().unwrap();
    let draft = h.update_draft(&baseline, sample_definition("orders", "Other"), None);
    let second = h.service.create(&alice, draft).await.unwrap();
    h.service.approve(&alice, &second.id).await.unwrap();
    h.service.apply(&alice, &first.id).await.unwrap();
    let error = refused(h.service.apply(&alice, &second.id).await);
    assert_eq!(error.code(), "stale_baseline");
    assert_eq!(h.writer.writes(), 1);
}

#[tokio::test]
async fn drafts_that_do_not_fit_are_refused() {
    let h = ProposalHarness::new();
    let alice = h.caller();
    let baseline = h.seed(sample_definition("orders", "Hello")).await;
    let mut with_baseline = h.create_draft("orders", None);
    with_baseline.baseline = Some(baseline.clone());
    let mut without_baseline = h.update_draft(&baseline, sample_definition("orders", "x"), None);
    without_baseline.baseline = None;
    let mismatch = h.update_draft(&baseline, sample_definition("invoices", "x"), None);
    let mut unknown_version = baseline.clone();
    unknown_version.version = 7;
    let missing = h.update_draft(&unknown_version, sample_definition("orders", "x"), None);
    let cases: [(ProposalDraft, u16, &str); 4] = [
        (with_baseline, 400, "unexpected_baseline"),
        (without_baseline, 400, "baseline_required"),
        (mismatch, 400, "definition_id_mismatch"),
        (missing, 404, "baseline_not_found"),
    ];
    for (draft, status, code) in cases {
        let error = refused(h.service.create(&alice, draft).await);
        assert_eq!((error.status(), error.code()), (status, code));
    }
    let inbox = h
        .service
        .list(&alice, &ProposalQuery::default())
        .await
        .unwrap();
    assert_eq!(inbox.total, 0, "nothing stored");
}

#[tokio::test]
async fn the_inbox_lists_the_tenants_proposals_newest_first_with_filters() {
    let h = ProposalHarness::new();
    let alice = h.caller();
    let conversation = h.conversation().await;
    let a = h.validated_update("a", Some(&conversation)).await;
    h.clock.advance(TimeDelta::minutes(1));
    let b = h.approved_update("b", None).await;
    h.clock.advance(TimeDelta::minutes(1));
    let bob = h.caller_with("bob", TEST_TENANT, &[Permission::PROPOSE_WORKFLOWS]);
    let c = h
        .service
        .create(&bob, h.create_draft("c", None))
        .await
        .unwrap();
    let globex = h.caller_with("gus", "globex", &[Permission::PROPOSE_WORKFLOWS]);
    h.service
        .create(&globex, h.create_draft("g", None))
        .await
        .unwrap();

    let ids = |page: elsa_workflows::Page<AiProposal>| -> Vec<String> {
        page.items.into_iter().map(|p| p.id.to_string()).collect()
    };
    let list = |query: ProposalQuery| {
        let service = h.service.clone();
        let alice = alice.clone();
        async move { service.list(&alice, &query).await.unwrap() }
    };
    let all = list(ProposalQuery::default()).await;
    assert_eq!(all.total, 3, "globex's proposal stays in globex");
    assert_eq!(ids(all), [c.id.as_str(), b.id.as_str(), a.id.as_str()]);
    let approved = ProposalQuery {
        status: Some(ProposalStatus::Approved),
        ..ProposalQuery::default()
    };
    assert_eq!(ids(list(approved).await), [b.id.as_str()]);
    let of_conversation = ProposalQuery {
        conversation_id: Some(conversation.clone()),
        ..ProposalQuery::default()
    };
    assert_eq!(ids(list(of_conversation).await), [a.id.as_str()]);
    let of_definition = ProposalQuery {
        definition_id: Some("b".into()),
        ..ProposalQuery::default()
    };
    assert_eq!(ids(list(of_definition).await), [b.id.as_str()]);
    let by_bob = ProposalQuery {
        created_by: Some("bob".into()),
        ..ProposalQuery::default()
    };
    assert_eq!(ids(list(by_bob).await), [c.id.as_str()]);
    let second = ProposalQuery {
        page: elsa_workflows::PageRequest::new(1, 1),
        ..ProposalQuery::default()
    };
    let page = list(second).await;
    assert_eq!((page.total, page.has_more()), (3, true));
    assert_eq!(ids(page), [b.id.as_str()]);
    assert_eq!(h.service.find(&bob, &a.id).await.unwrap(), a);
}

/// An audit sink that fails while switched off, like a database that went away.
#[derive(Debug, Default)]
struct FlakyAudit {
    log: InMemoryAuditLog,
    down: Mutex<bool>,
}

#[async_trait]
impl AiAuditSink for FlakyAudit {
    async fn record(&self, event: AiAuditEvent) -> Result<(), AiError> {
        if *self.down.lock() {
            return Err(AiError::internal(
                "audit_store_unavailable",
                "the audit store is down",
            ));
        }
        self.log.record(event).await
    }
}

#[tokio::test]
async fn an_action_that_cannot_be_audited_does_not_happen() {
    let h = ProposalHarness::new();
    let audit = Arc::new(FlakyAudit::default());
    let service = HostCore::builder(Arc::new(Redactor::default()), audit.clone())
        .clock(h.clock.clone())
        .build()
        .proposals(
            h.store.clone(),
            h.workflows.clone(),
            h.writer.clone(),
            h.workflows.clone(),
        )
        .build();
    let alice = h.caller();
    let proposal = h.approved_update("orders", None).await;
    *audit.down.lock() = true;

    let error = refused(service.create(&alice, h.create_draft("new", None)).await);
    assert_eq!((error.status(), error.code()), (500, "audit_failed"));
    for error in [
        refused(service.apply(&alice, &proposal.id).await),
        refused(service.reject(&alice, &proposal.id, "no").await),
        refused(service.expire(&alice, &proposal.id).await),
    ] {
        assert_eq!((error.status(), error.code()), (500, "audit_failed"));
    }
    assert_eq!(h.writer.attempts(), 0, "nothing written unaudited");
    let stored = h.stored(&proposal.id).await;
    assert_eq!(stored.status, ProposalStatus::Approved);
    assert_eq!(
        (stored.applied_by, stored.applied_at),
        (None, None),
        "claim released"
    );
    let inbox = h
        .service
        .list(&alice, &ProposalQuery::default())
        .await
        .unwrap();
    assert_eq!(inbox.total, 1, "the unaudited creation was not stored");
    assert!(audit.log.is_empty());
    assert_eq!(service.metrics().proposals.snapshot().audit_failures, 4);

    *audit.down.lock() = false;
    let applied = service.apply(&alice, &proposal.id).await.unwrap();
    assert_eq!(applied.status, ProposalStatus::Applied);
    assert_eq!(h.writer.writes(), 1);
}

/// Marks `proposal` as claimed by an apply on another replica, as if it had crashed.
async fn claim_elsewhere(h: &ProposalHarness, proposal: &AiProposal) -> AiProposal {
    let mut claimed = proposal.clone();
    claimed.applied_by = Some("bob".into());
    claimed.applied_at = Some(elsa_ai_abstractions::Clock::now(h.clock.as_ref()));
    claimed.revision += 1;
    h.store.update(&claimed, proposal.revision).await.unwrap();
    claimed
}

#[tokio::test]
async fn an_apply_claim_holds_off_other_actions_until_it_lapses() {
    let h = ProposalHarness::new();
    let alice = h.caller();
    let timeout = h.service.settings().claim_timeout;

    // A replica claimed the proposal, wrote the definition and crashed before recording it.
    let written = h.approved_update("orders", None).await;
    let claimed = claim_elsewhere(&h, &written).await;
    h.seed(sample_definition("orders", "written by the crashed apply"))
        .await;
    for error in [
        refused(h.service.apply(&alice, &written.id).await),
        refused(h.service.reject(&alice, &written.id, "no").await),
        refused(h.service.expire(&alice, &written.id).await),
    ] {
        assert_eq!((error.status(), error.code()), (409, "apply_in_progress"));
        assert_eq!(error.to_body().current_state.as_deref(), Some("Approved"));
        assert!(error.message().contains("bob"));
    }
    assert_eq!(h.stored(&written.id).await, claimed);
    h.clock.advance(timeout);
    let error = refused(h.service.apply(&alice, &written.id).await);
    assert_eq!(
        error.code(),
        "stale_baseline",
        "the write is never repeated"
    );
    assert_eq!(h.writer.attempts(), 0);
    let rejected = h
        .service
        .reject(&alice, &written.id, "already in the workflow")
        .await
        .unwrap();
    assert_eq!((rejected.applied_by, rejected.applied_at), (None, None));

    // A replica claimed another proposal and crashed before writing: once the claim lapses,
    // the proposal can be applied.
    let unwritten = h.approved_update("invoices", None).await;
    claim_elsewhere(&h, &unwritten).await;
    h.clock.advance(timeout - TimeDelta::seconds(1));
    assert_eq!(
        refused(h.service.apply(&alice, &unwritten.id).await).code(),
        "apply_in_progress"
    );
    h.clock.advance(TimeDelta::seconds(1));
    let applied = h.service.apply(&alice, &unwritten.id).await.unwrap();
    assert_eq!(applied.applied_by.as_deref(), Some("alice"));
    assert_eq!(h.writer.writes(), 1);
}

/// A proposal tool that submits a creation draft through the services it is handed.
struct ProposeCreate(AiToolDefinition);

#[async_trait]
impl AiTool for ProposeCreate {
    fn definition(&self) -> &AiToolDefinition {
        &self.0
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let id = context.arguments["definitionId"]
            .as_str()
            .unwrap_or_default();
        let draft = ProposalDraft {
            conversation_id: context.conversation_id.clone(),
            kind: ProposalKind::Create,
            baseline: None,
            definition: sample_definition(id, "Hello"),
            patch: None,
            rationale: context.arguments["rationale"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        };
        let proposal = context
            .services
            .proposals
            .submit(&context.caller, draft)
            .await?;
        Ok(json!({"proposalId": proposal.id, "status": proposal.status}))
    }
}

#[tokio::test]
async fn a_proposal_tool_submits_through_the_service_onto_the_turns_stream() {
    let h = ProposalHarness::builder()
        .chat(|chat| {
            chat.tool(Arc::new(ProposeCreate(proposal_tool("demo.proposeCreate"))))
                .script(
                    Script::new()
                        .tool_call(
                            "demo.proposeCreate",
                            json!({"definitionId": "greeter", "rationale": "Greets people."}),
                        )
                        .computed(|turn| {
                            let status = turn
                                .result_of("demo.proposeCreate")
                                .map_or(Value::Null, |r| r.content["status"].clone());
                            ScriptStep::reply(format!("Proposed, status {status}."))
                        }),
                )
        })
        .build();
    h.chat
        .registry
        .enablement()
        .set(&elsa_ai_abstractions::ToolEnablement {
            tenant_id: TEST_TENANT.into(),
            tool_name: "demo.proposeCreate".into(),
            agent: Some(TEST_AGENT.into()),
            enabled: true,
            changed_by: "admin".into(),
            changed_at: chrono::Utc::now(),
        })
        .await
        .unwrap();
    let events = h.chat.run(h.chat.request("Make me a greeter.")).await;
    let types: Vec<T> = events.iter().map(|e| e.event_type).collect();
    let started = types.iter().position(|t| *t == T::ToolStarted).unwrap();
    let created = types.iter().position(|t| *t == T::ProposalCreated).unwrap();
    let completed = types.iter().position(|t| *t == T::ToolCompleted).unwrap();
    assert!(started < created && created < completed, "{types:?}");
    assert_eq!(events[created].data["status"], "Validated");
    assert_eq!(events[created].data["rationale"], "Greets people.");

    let conversation = events[0].conversation_id.clone();
    let id: ProposalId =
        serde_json::from_value(events[created].data["proposalId"].clone()).unwrap();
    let stored = h.stored(&id).await;
    assert_eq!(stored.conversation_id.as_ref(), Some(&conversation));
    assert_eq!(stored.created_by, "alice");

    // The review happens outside the turn; its events join the same stream.
    h.service.approve(&h.caller(), &id).await.unwrap();
    h.service.apply(&h.caller(), &id).await.unwrap();
    let proposal_events = h.proposal_events(&conversation).await;
    assert_eq!(
        statuses(&proposal_events),
        [
            (T::ProposalCreated, "Validated".to_owned()),
            (T::ProposalUpdated, "Approved".to_owned()),
            (T::ProposalUpdated, "Applied".to_owned()),
        ]
    );
    assert_eq!(h.latest("greeter").await.unwrap().version(), 1);
}

#[tokio::test]
async fn the_governor_hands_proposal_tools_the_real_service() {
    let h = ProposalHarness::new();
    let governance = GovernanceHarness::builder()
        .services(h.services())
        .tool(Arc::new(ProposeCreate(proposal_tool("demo.proposeCreate"))))
        .build();
    governance
        .decide("demo.proposeCreate", Some(TEST_AGENT), true)
        .await;
    let result = governance
        .call(
            "demo.proposeCreate",
            json!({"definitionId": "greeter", "rationale": "token=abc123secret"}),
        )
        .await;
    assert!(result.error.is_none(), "{:?}", result.error);
    let id: ProposalId = serde_json::from_value(result.content["proposalId"].clone()).unwrap();
    let stored = h.stored(&id).await;
    assert_eq!(stored.status, ProposalStatus::Validated);
    assert_eq!(stored.rationale, format!("token={REDACTED}"));
    assert_eq!(h.audit_of(&id)[0].action, AuditAction::PROPOSAL_CREATED);
}

#[tokio::test]
async fn proposals_carry_the_graph_diff_and_warnings_for_the_reviewer() {
    let h = ProposalHarness::new();
    let alice = h.caller();
    let update = h.validated_update("orders", None).await;
    let changed: Vec<_> = update
        .graph_diff
        .activities_changed
        .iter()
        .map(|c| c.id.as_deref())
        .collect();
    assert_eq!(changed, [Some("write1")]);
    assert_eq!(update.graph_diff.counts().total(), 1);

    let creation = h
        .service
        .create(&alice, h.create_draft("greeter", None))
        .await
        .unwrap();
    let added: Vec<_> = creation
        .graph_diff
        .activities_added
        .iter()
        .filter_map(|a| a.id.as_deref())
        .collect();
    assert!(
        added.contains(&"start1") && added.contains(&"write1"),
        "{added:?}"
    );
    assert_eq!(creation.graph_diff.connections_added.len(), 1);
    let taken = h
        .service
        .create(&alice, h.create_draft("greeter", None))
        .await
        .unwrap();
    assert!(
        taken.warnings.is_empty(),
        "not written yet: {:?}",
        taken.warnings
    );

    let baseline = update.baseline.clone().unwrap();
    let mut shrunk = sample_definition("orders", "Hello");
    shrunk.remove_activity("write1").unwrap();
    let removal = h
        .service
        .create(&alice, h.update_draft(&baseline, shrunk, None))
        .await
        .unwrap();
    assert!(
        removal
            .warnings
            .iter()
            .any(|w| w.contains("removes 1 activity: write1")),
        "{:?}",
        removal.warnings
    );
    assert_eq!(removal.graph_diff.activities_removed.len(), 1);
    let same = h
        .service
        .create(
            &alice,
            h.update_draft(&baseline, sample_definition("orders", "Hello"), None),
        )
        .await
        .unwrap();
    assert_eq!(
        same.warnings,
        ["the update changes nothing in the workflow"]
    );

    h.seed(sample_definition("orders", "Moved on")).await;
    let late = h
        .service
        .create(
            &alice,
            h.update_draft(&baseline, sample_definition("orders", "x"), None),
        )
        .await
        .unwrap();
    assert!(
        late.warnings.iter().any(|w| w.contains("version 2 now")),
        "{:?}",
        late.warnings
    );
}

/// A writer behind which another writer changes the definition just before each update,
/// after the service's own baseline check: the race the writer's compare-and-set settles.
struct OvertakenWriter(Arc<InMemoryWorkflowBackend>);

#[async_trait]
impl WorkflowDefinitionWriter for OvertakenWriter {
    async fn create(
        &self,
        tenant: &TenantId,
        definition: WorkflowDefinition,
    ) -> Result<DefinitionVersionRef, WorkflowError> {
        self.0.create(tenant, definition).await
    }

    async fn update(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        expected_version: i32,
        definition: WorkflowDefinition,
    ) -> Result<DefinitionVersionRef, WorkflowError> {
        let other = sample_definition(definition_id, "Someone else was faster");
        self.0
            .update(tenant, definition_id, expected_version, other)
            .await?;
        self.0
            .update(tenant, definition_id, expected_version, definition)
            .await
    }
}

#[tokio::test]
async fn a_baseline_that_moves_during_the_apply_is_stale_and_the_claim_is_released() {
    let h = ProposalHarness::new();
    let service = HostCore::builder(Arc::new(Redactor::default()), h.audit.clone())
        .clock(h.clock.clone())
        .build()
        .proposals(
            h.store.clone(),
            h.workflows.clone(),
            Arc::new(OvertakenWriter(h.workflows.clone())),
            h.workflows.clone(),
        )
        .build();
    let proposal = h.approved_update("orders", None).await;
    let error = refused(service.apply(&h.caller(), &proposal.id).await);
    assert_eq!((error.status(), error.code()), (409, "stale_baseline"));
    let stored = h.stored(&proposal.id).await;
    assert_eq!(stored.status, ProposalStatus::Approved);
    assert_eq!((stored.applied_by, stored.applied_version), (None, None));
    let versions = h
        .workflows
        .definition_versions(&TEST_TENANT.into(), "orders");
    assert_eq!(
        versions.len(),
        2,
        "only the other writer's version was added"
    );
    let applies: Vec<_> = h
        .audit_of(&proposal.id)
        .into_iter()
        .filter(|r| r.action == AuditAction::PROPOSAL_APPLIED)
        .map(|r| r.outcome)
        .collect();
    assert_eq!(applies, [AuditOutcome::Success, AuditOutcome::Failure]);
    assert_eq!(service.metrics().proposals.snapshot().stale_baselines, 1);
    // The claim is gone, so the proposal can be decided on.
    let rejected = h
        .service
        .reject(&h.caller(), &proposal.id, "stale")
        .await
        .unwrap();
    assert_eq!(rejected.status, ProposalStatus::Rejected);
}

#[tokio::test]
async fn the_actions_a_caller_may_take_follow_permission_state_tenant_and_expiry() {
    let h = ProposalHarness::new();
    let alice = h.caller();
    let proposal = h.validated_update("orders", None).await;
    let allowed = |caller: &elsa_ai_abstractions::AiCaller, proposal: &AiProposal| {
        h.service.allowed_actions(caller, proposal)
    };
    assert_eq!(
        allowed(&alice, &proposal),
        [ProposalAction::Approve, ProposalAction::Reject]
    );
    let proposer = elsa_ai_abstractions::AiCaller::new(
        "paul",
        TEST_TENANT,
        [Permission::PROPOSE_WORKFLOWS, Permission::READ_WORKFLOWS],
    );
    assert_eq!(allowed(&proposer, &proposal), []);
    let stranger = elsa_ai_abstractions::AiCaller::new(
        "gina",
        "globex",
        [Permission::APPLY_WORKFLOWS, Permission::PROPOSE_WORKFLOWS],
    );
    assert_eq!(
        allowed(&stranger, &proposal),
        [],
        "another tenant's proposal"
    );
    let approved = h.service.approve(&alice, &proposal.id).await.unwrap();
    assert_eq!(
        allowed(&alice, &approved),
        [ProposalAction::Reject, ProposalAction::Apply]
    );
    h.clock.advance(TimeDelta::days(8));
    assert_eq!(
        allowed(&alice, &approved),
        [],
        "past its expiry nothing is offered"
    );
}

#[tokio::test]
async fn a_finding_the_baseline_already_had_is_a_warning_and_one_the_change_adds_still_blocks() {
    let h = ProposalHarness::new();
    // The tenant's catalog no longer has WriteLine, which the stored workflow uses.
    h.workflows
        .set_catalog(&TEST_TENANT.into(), catalog_without("Elsa.WriteLine"));
    let baseline = h.seed(sample_definition("orders", "Hello")).await;

    // A description-only change: the unknown type predates it.
    let mut described = sample_definition("orders", "Hello");
    described.set_description(Some("Greets whoever starts it."));
    let draft = h.update_draft(&baseline, described, None);
    let proposal = h.service.create(&h.caller(), draft).await.unwrap();
    assert_eq!(proposal.status, ProposalStatus::Validated, "{proposal:#?}");
    let predating: Vec<_> = proposal
        .diagnostics
        .iter()
        .filter(|d| d.code == DiagnosticCode::UnknownActivityType)
        .collect();
    assert_eq!(predating.len(), 1, "{:?}", proposal.diagnostics);
    assert!(!predating[0].is_error());
    assert!(
        predating[0].message.contains("predates this proposal"),
        "{}",
        predating[0].message
    );
    assert!(
        proposal
            .warnings
            .iter()
            .any(|w| w.contains("predates this proposal")),
        "{:?}",
        proposal.warnings
    );
    // Approved and applied: validation at apply time compares with the baseline too.
    h.service.approve(&h.caller(), &proposal.id).await.unwrap();
    let applied = h.service.apply(&h.caller(), &proposal.id).await.unwrap();
    assert_eq!(applied.status, ProposalStatus::Applied);
    assert_eq!(
        h.latest("orders").await.unwrap().description(),
        Some("Greets whoever starts it.")
    );

    // A change that adds a second unknown activity is blocked by it, and only by it.
    let baseline = elsa_ai_abstractions::BaselineRef {
        definition_id: "orders".into(),
        version: applied.applied_version.unwrap().version,
    };
    let mut added = sample_definition("orders", "Hello");
    added
        .insert_activity(None, Activity::new("write2", "Elsa.WriteLine"), None)
        .unwrap();
    let proposal = h
        .service
        .create(&h.caller(), h.update_draft(&baseline, added, None))
        .await
        .unwrap();
    assert_eq!(proposal.status, ProposalStatus::Blocked);
    let blocking: Vec<_> = proposal
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .collect();
    assert_eq!(blocking.len(), 1, "{blocking:?}");
    assert_eq!(blocking[0].activity_id.as_deref(), Some("write2"));
}
