//! The host's `ProposalService` over the durable stores: a proposal is applied at most once
//! even when two replicas (two services, two connection pools, one database) race to apply,
//! whether it writes a definition or acts on instances.

use std::sync::Arc;

use elsa_ai_abstractions::{
    AiProposalStore, AuditAction, AuditOutcome, AuditQuery, OperationDraft, ProposalKind,
};
use elsa_ai_host::testing::governance::TEST_TENANT;
use elsa_ai_host::testing::proposals::ProposalHarness;
use elsa_ai_host::{HostCore, Redactor};
use elsa_workflows::{PageRequest, WorkflowInstance};
use serde_json::json;

use crate::support::{TestDb, on_both_backends};

on_both_backends!(fifty_concurrent_applies_on_two_replicas_write_once);

async fn fifty_concurrent_applies_on_two_replicas_write_once(db: TestDb) {
    let (first, second) = (db.open().await, db.open().await);
    let h = ProposalHarness::builder().store(first.clone()).build();
    // A second replica: its own pool on the same database, the same Elsa backend, auditing
    // into the durable trail.
    let replica = HostCore::builder(Arc::new(Redactor::default()), second.clone())
        .clock(h.clock.clone())
        .build()
        .proposals(
            second.clone(),
            h.workflows.clone(),
            h.writer.clone(),
            h.workflows.clone(),
        )
        .build();
    let proposal = h.approved_update("orders", None).await;

    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let applies: Vec<_> = (0..50)
        .map(|i| {
            let service = if i % 2 == 0 {
                h.service.clone()
            } else {
                replica.clone()
            };
            let (caller, id, barrier) = (h.caller(), proposal.id.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                service.apply(&caller, &id).await
            })
        })
        .collect();
    let mut applied = Vec::new();
    let mut refused = Vec::new();
    for apply in applies {
        match apply.await.unwrap() {
            Ok(proposal) => applied.push(proposal),
            Err(error) => refused.push(error),
        }
    }
    assert_eq!((applied.len(), refused.len()), (1, 49), "{refused:?}");
    assert!(refused.iter().all(|e| e.status() == 409), "{refused:?}");
    assert_eq!(h.writer.attempts(), 1, "only the claim holder writes");
    assert_eq!(h.writer.writes(), 1);
    assert_eq!(h.latest("orders").await.unwrap().version(), 2);
    let stored = AiProposalStore::find(&*second, &proposal.id, &TEST_TENANT.into())
        .await
        .unwrap();
    assert_eq!(
        stored.as_ref(),
        Some(&applied[0]),
        "both pools see the one applied state"
    );

    // Every apply attempt is audited once, by whichever replica made it.
    let durable = AuditQuery {
        proposal_id: Some(proposal.id.clone()),
        page: PageRequest::new(0, PageRequest::MAX_LIMIT),
        ..AuditQuery::default()
    };
    let attempts: Vec<AuditOutcome> = h
        .audit_of(&proposal.id)
        .into_iter()
        .chain(
            second
                .query(&TEST_TENANT.into(), &durable)
                .await
                .unwrap()
                .items,
        )
        .filter(|record| record.action == AuditAction::PROPOSAL_APPLIED)
        .map(|record| record.outcome)
        .collect();
    assert_eq!(attempts.len(), 50);
    assert_eq!(
        attempts
            .iter()
            .filter(|o| **o == AuditOutcome::Success)
            .count(),
        1
    );
}

on_both_backends!(concurrent_applies_of_an_operation_on_two_replicas_act_once);

/// An operation proposal (cancel two running instances) raced by 50 applies on two replicas:
/// one claim wins, each instance is cancelled once, every outcome is in the durable trail.
async fn concurrent_applies_of_an_operation_on_two_replicas_act_once(db: TestDb) {
    let (first, second) = (db.open().await, db.open().await);
    let h = ProposalHarness::builder().store(first.clone()).build();
    let replica = HostCore::builder(Arc::new(Redactor::default()), second.clone())
        .clock(h.clock.clone())
        .build()
        .proposals(
            second.clone(),
            h.workflows.clone(),
            h.writer.clone(),
            h.workflows.clone(),
        )
        .operations(h.operation_services())
        .build();
    let tenant = TEST_TENANT.into();
    for id in ["w-1", "w-2"] {
        h.workflows.insert_instance(
            &tenant,
            WorkflowInstance::from_value(json!({
                "id": id, "definitionId": "orders", "version": 1,
                "status": "Running", "subStatus": "Suspended"
            }))
            .unwrap(),
        );
    }
    let alice = h.caller();
    let proposal = h
        .service
        .create_operation(
            &alice,
            OperationDraft {
                conversation_id: None,
                kind: ProposalKind::Cancel,
                targets: vec!["w-1".into(), "w-2".into()],
                version: None,
                rationale: "stuck".into(),
            },
        )
        .await
        .unwrap();
    replica.approve(&alice, &proposal.id).await.unwrap();

    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let applies: Vec<_> = (0..50)
        .map(|i| {
            let service = if i % 2 == 0 {
                h.service.clone()
            } else {
                replica.clone()
            };
            let (caller, id, barrier) = (alice.clone(), proposal.id.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                service.apply(&caller, &id).await
            })
        })
        .collect();
    let mut applied = Vec::new();
    for apply in applies {
        match apply.await.unwrap() {
            Ok(proposal) => applied.push(proposal),
            Err(error) => assert_eq!(error.status(), 409, "{error:?}"),
        }
    }
    assert_eq!(applied.len(), 1);
    assert_eq!(h.operations.calls(), 2, "each instance cancelled once");
    let stored = AiProposalStore::find(&*second, &proposal.id, &tenant)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored, applied[0], "both pools see the one applied state");
    let durable = AuditQuery {
        proposal_id: Some(proposal.id.clone()),
        page: PageRequest::new(0, PageRequest::MAX_LIMIT),
        ..AuditQuery::default()
    };
    let targets: Vec<_> = h
        .audit_of(&proposal.id)
        .into_iter()
        .chain(second.query(&tenant, &durable).await.unwrap().items)
        .filter(|record| record.action == AuditAction::PROPOSAL_TARGET)
        .map(|record| record.details["target"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        targets.len(),
        2,
        "one outcome record per target: {targets:?}"
    );
}
