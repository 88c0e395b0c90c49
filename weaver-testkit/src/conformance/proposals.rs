//! [`AiProposalStore`]: find, save, compare-and-set update and the review-inbox list.

use chrono::{DateTime, Duration};
use elsa_ai_abstractions::{
    AiProposal, AiProposalStore, BaselineRef, ConversationId, OperationPlan, OperationTarget,
    ProposalId, ProposalKind, ProposalPayload, ProposalQuery, ProposalStatus, TargetOutcome,
    TargetResult,
};
use elsa_workflows::{
    DefinitionVersionRef, Diagnostic, DiagnosticCode, GraphDiff, PageRequest, Severity, TenantId,
    WorkflowDefinition, WorkflowStatus, WorkflowSubStatus,
};
use serde_json::json;

use super::{assert_status, case, instant, unique};

/// Every case, in order. `other` is a second handle on the same data (another connection
/// pool, or the same store again for in-memory implementations).
pub async fn run(store: &dyn AiProposalStore, other: &dyn AiProposalStore) {
    save_then_find_round_trips(store).await;
    save_refuses_an_existing_id(store).await;
    update_compares_and_sets_the_revision(store).await;
    update_refuses_a_proposal_without_the_next_revision(store).await;
    update_of_an_unknown_proposal_is_not_found(store).await;
    list_filters_and_pages_newest_first(store).await;
    concurrent_updates_apply_once(store, other, 50).await;
}

/// A proposal with every optional field set and a definition whose JSON has unknown fields
/// in a deliberate key order (it must come back byte for byte).
pub fn sample(tenant: &TenantId, created_at: DateTime<chrono::Utc>) -> AiProposal {
    let definition_id = unique("wf");
    let definition = WorkflowDefinition::from_value(json!({
        "zeta": {"b": 1, "a": [true, null, 2.5]},
        "definitionId": definition_id,
        "name": "Nächtlicher Export ✓",
        "version": 4,
        "root": {"id": "Flowchart1", "type": "Elsa.Flowchart", "activities": [], "connections": []},
        "alpha": "last",
    }))
    .expect("a valid definition");
    AiProposal {
        id: ProposalId::generate(),
        tenant_id: tenant.clone(),
        conversation_id: Some(ConversationId::generate()),
        kind: ProposalKind::Update,
        status: ProposalStatus::Draft,
        baseline: Some(BaselineRef {
            definition_id: definition_id.clone(),
            version: 3,
        }),
        payload: Some(ProposalPayload {
            definition,
            patch: Some(json!({"op": "setName", "value": "Nächtlicher Export ✓"})),
        }),
        operation: None,
        rationale: "rename the export".into(),
        warnings: vec!["renames a published workflow".into()],
        diagnostics: vec![Diagnostic {
            severity: Severity::Warning,
            code: DiagnosticCode::UnreachableActivity,
            message: "activity 'x' is unreachable".into(),
            activity_id: Some("x".into()),
            path: "$.root.activities[0]".into(),
        }],
        graph_diff: GraphDiff::default(),
        created_by: "alice".into(),
        created_at,
        reviewed_by: Some("bob".into()),
        reviewed_at: Some(created_at + Duration::minutes(1)),
        review_reason: Some("looks right".into()),
        applied_by: Some("carol".into()),
        applied_at: Some(created_at + Duration::minutes(2)),
        applied_version: Some(DefinitionVersionRef {
            definition_id,
            version_id: "v5".into(),
            version: 5,
        }),
        expires_at: Some(created_at + Duration::days(7)),
        revision: 0,
    }
}

/// An operation proposal: two instance targets with their baselines, one with its outcome.
pub fn operation(tenant: &TenantId, created_at: DateTime<chrono::Utc>) -> AiProposal {
    let target = |id: &str, outcome: Option<TargetOutcome>| OperationTarget {
        id: id.into(),
        definition_id: "orders".into(),
        version: 2,
        status: Some(WorkflowStatus::Finished),
        sub_status: Some(WorkflowSubStatus::Faulted),
        published_version: None,
        latest_version: None,
        outcome,
    };
    AiProposal {
        kind: ProposalKind::Retry,
        baseline: None,
        payload: None,
        operation: Some(OperationPlan {
            targets: vec![
                target(
                    "i-1",
                    Some(TargetOutcome {
                        result: TargetResult::Stale,
                        reason: Some("instance 'i-1' is Running/Executing now".into()),
                        new_instance_id: None,
                    }),
                ),
                target("i-2", None),
            ],
            deletion: None,
        }),
        applied_version: None,
        ..sample(tenant, created_at)
    }
}

/// A proposal with no optional field set.
pub fn minimal(tenant: &TenantId, created_at: DateTime<chrono::Utc>) -> AiProposal {
    AiProposal {
        conversation_id: None,
        kind: ProposalKind::Create,
        baseline: None,
        payload: Some(ProposalPayload {
            definition: WorkflowDefinition::new_flowchart(unique("wf"), "New"),
            patch: None,
        }),
        warnings: Vec::new(),
        diagnostics: Vec::new(),
        reviewed_by: None,
        reviewed_at: None,
        review_reason: None,
        applied_by: None,
        applied_at: None,
        applied_version: None,
        expires_at: None,
        ..sample(tenant, created_at)
    }
}

fn tenant() -> TenantId {
    TenantId::new(unique("tenant"))
}

async fn stored(store: &dyn AiProposalStore, proposal: &AiProposal) -> AiProposal {
    store
        .find(&proposal.id, &proposal.tenant_id)
        .await
        .expect("find succeeds")
        .expect("the proposal is stored")
}

/// What was saved is found again, exactly, and only in its own tenant.
pub async fn save_then_find_round_trips(store: &dyn AiProposalStore) {
    case("proposals: save then find round-trips");
    let tenant = tenant();
    for proposal in [
        sample(&tenant, instant(0)),
        minimal(&tenant, instant(1)),
        operation(&tenant, instant(2)),
    ] {
        store.save(&proposal).await.expect("save succeeds");
        let found = stored(store, &proposal).await;
        assert_eq!(found, proposal);
        assert_eq!(
            found.definition().map(WorkflowDefinition::to_json_string),
            proposal
                .definition()
                .map(WorkflowDefinition::to_json_string),
            "the definition's JSON comes back byte for byte, key order included"
        );
        assert_eq!(
            store
                .find(&proposal.id, &TenantId::new(unique("other")))
                .await
                .unwrap(),
            None,
            "another tenant does not see the proposal"
        );
    }
    assert_eq!(
        store.find(&ProposalId::generate(), &tenant).await.unwrap(),
        None
    );
}

/// Saving an id that exists is a conflict, in any tenant, and changes nothing.
pub async fn save_refuses_an_existing_id(store: &dyn AiProposalStore) {
    case("proposals: save refuses an existing id");
    let tenant = tenant();
    let proposal = sample(&tenant, instant(0));
    store.save(&proposal).await.unwrap();
    let again = AiProposal {
        rationale: "something else".into(),
        ..proposal.clone()
    };
    assert_status(store.save(&again).await, 409, "saving the same id twice");
    let elsewhere = AiProposal {
        tenant_id: TenantId::new(unique("other")),
        ..again
    };
    assert_status(
        store.save(&elsewhere).await,
        409,
        "saving the id in another tenant",
    );
    assert_eq!(stored(store, &proposal).await, proposal);
}

/// An update applies only at the expected revision; a stale one is a conflict that changes
/// nothing; another tenant's proposal cannot be updated.
pub async fn update_compares_and_sets_the_revision(store: &dyn AiProposalStore) {
    case("proposals: update compares and sets the revision");
    let tenant = tenant();
    let draft = sample(&tenant, instant(0));
    store.save(&draft).await.unwrap();

    let validated = AiProposal {
        status: ProposalStatus::Validated,
        diagnostics: Vec::new(),
        revision: 1,
        ..draft.clone()
    };
    store
        .update(&validated, 0)
        .await
        .expect("update at the stored revision");
    assert_eq!(stored(store, &draft).await, validated);

    let stale = AiProposal {
        status: ProposalStatus::Rejected,
        revision: 1,
        ..validated.clone()
    };
    let conflict = assert_status(
        store.update(&stale, 0).await,
        409,
        "update at a stale revision",
    );
    assert_eq!(conflict.code(), "proposal_revision_conflict");
    assert_eq!(
        conflict.to_body().current_state.as_deref(),
        Some("Validated"),
        "the conflict names the state the proposal is in"
    );
    assert_eq!(
        stored(store, &draft).await,
        validated,
        "a refused update changes nothing"
    );

    let approved = AiProposal {
        status: ProposalStatus::Approved,
        revision: 2,
        ..validated.clone()
    };
    store
        .update(&approved, 1)
        .await
        .expect("update at the new revision");
    assert_eq!(stored(store, &draft).await, approved);

    let hijacked = AiProposal {
        tenant_id: TenantId::new(unique("other")),
        status: ProposalStatus::Applied,
        revision: 3,
        ..approved.clone()
    };
    assert_status(
        store.update(&hijacked, 2).await,
        404,
        "update from another tenant",
    );
    assert_eq!(stored(store, &draft).await, approved);
}

/// An update must carry the next revision (`expected + 1`); one that does not is refused
/// as a caller bug (500 `invalid_revision`) and changes nothing, so a caller that forgets to
/// count cannot defeat the check.
pub async fn update_refuses_a_proposal_without_the_next_revision(store: &dyn AiProposalStore) {
    case("proposals: update refuses a proposal without the next revision");
    let tenant = tenant();
    let draft = sample(&tenant, instant(0));
    store.save(&draft).await.unwrap();
    for revision in [0, 2] {
        let miscounted = AiProposal {
            status: ProposalStatus::Validated,
            revision,
            ..draft.clone()
        };
        let error = assert_status(
            store.update(&miscounted, 0).await,
            500,
            "an update that does not carry the next revision",
        );
        assert_eq!(error.code(), "invalid_revision");
    }
    assert_eq!(stored(store, &draft).await, draft);
}

/// Updating a proposal that was never saved is a 404 and stores nothing.
pub async fn update_of_an_unknown_proposal_is_not_found(store: &dyn AiProposalStore) {
    case("proposals: update of an unknown proposal is not found");
    let ghost = AiProposal {
        revision: 1,
        ..sample(&tenant(), instant(0))
    };
    let error = assert_status(
        store.update(&ghost, 0).await,
        404,
        "update of an unknown proposal",
    );
    assert_eq!(error.code(), "proposal_not_found");
    assert_eq!(store.find(&ghost.id, &ghost.tenant_id).await.unwrap(), None);
}

/// The review inbox: tenant-partitioned, newest first, each filter alone and combined, paged
/// with the total of all matches.
pub async fn list_filters_and_pages_newest_first(store: &dyn AiProposalStore) {
    case("proposals: list filters and pages newest first");
    let tenant = tenant();
    let other = TenantId::new(unique("other"));
    let conversation = ConversationId::generate();
    let definition = unique("wf");
    let statuses = [
        ProposalStatus::Validated,
        ProposalStatus::Blocked,
        ProposalStatus::Validated,
        ProposalStatus::Approved,
        ProposalStatus::Applied,
        ProposalStatus::Validated,
    ];
    let mut saved = Vec::new();
    for (i, status) in statuses.into_iter().enumerate() {
        let mut proposal = minimal(&tenant, instant(i as i64 * 60));
        proposal.status = status;
        proposal.created_by = if i % 2 == 0 { "alice" } else { "bob" }.into();
        if i % 3 == 0 {
            proposal.conversation_id = Some(conversation.clone());
        }
        if i >= 3 {
            proposal.kind = ProposalKind::Update;
            proposal.baseline = Some(BaselineRef {
                definition_id: definition.clone(),
                version: 1,
            });
        }
        store.save(&proposal).await.unwrap();
        saved.push(proposal);
    }
    store.save(&minimal(&other, instant(1_000))).await.unwrap();

    // Indexes into `saved`, newest first.
    let (tenant, saved) = (&tenant, &saved);
    let list = |query: ProposalQuery| async move {
        let page = store.list(tenant, &query).await.expect("list succeeds");
        let positions: Vec<usize> = page
            .items
            .iter()
            .map(|p| {
                saved
                    .iter()
                    .position(|s| s.id == p.id)
                    .expect("a proposal of this tenant")
            })
            .collect();
        (positions, page.total)
    };
    let all = list(ProposalQuery::default()).await;
    assert_eq!(
        all,
        (vec![5, 4, 3, 2, 1, 0], 6),
        "every proposal of the tenant, newest first"
    );
    let validated = ProposalQuery {
        status: Some(ProposalStatus::Validated),
        ..ProposalQuery::default()
    };
    assert_eq!(list(validated.clone()).await, (vec![5, 2, 0], 3));
    let by_conversation = ProposalQuery {
        conversation_id: Some(conversation.clone()),
        ..ProposalQuery::default()
    };
    assert_eq!(list(by_conversation).await, (vec![3, 0], 2));
    let by_definition = ProposalQuery {
        definition_id: Some(definition.clone()),
        ..ProposalQuery::default()
    };
    assert_eq!(list(by_definition).await, (vec![5, 4, 3], 3));
    let by_bob = ProposalQuery {
        created_by: Some("bob".into()),
        ..ProposalQuery::default()
    };
    assert_eq!(list(by_bob).await, (vec![5, 3, 1], 3));
    let combined = ProposalQuery {
        created_by: Some("alice".into()),
        definition_id: Some(definition.clone()),
        ..validated.clone()
    };
    assert_eq!(list(combined).await, (vec![], 0));
    let combined = ProposalQuery {
        created_by: Some("bob".into()),
        ..validated
    };
    assert_eq!(list(combined).await, (vec![5], 1));

    let page = ProposalQuery {
        page: PageRequest::new(2, 3),
        ..ProposalQuery::default()
    };
    assert_eq!(list(page.clone()).await, (vec![3, 2, 1], 6));
    let page = store.list(tenant, &page).await.unwrap();
    assert_eq!((page.offset, page.limit), (2, 3));
    assert!(page.has_more());
    assert_eq!(page.items[0], saved[3], "listed proposals are complete");
    let beyond = ProposalQuery {
        page: PageRequest::new(10, 5),
        ..ProposalQuery::default()
    };
    assert_eq!(list(beyond).await, (vec![], 6));

    let theirs = store.list(&other, &ProposalQuery::default()).await.unwrap();
    assert_eq!(
        theirs.total, 1,
        "the other tenant sees only its own proposal"
    );
}

/// Of `n` concurrent updates at the same revision, spread over two handles, exactly one
/// succeeds and every other one is a conflict.
pub async fn concurrent_updates_apply_once(
    store: &dyn AiProposalStore,
    other: &dyn AiProposalStore,
    n: usize,
) {
    case("proposals: concurrent updates apply once");
    let tenant = tenant();
    let approved = AiProposal {
        status: ProposalStatus::Approved,
        ..minimal(&tenant, instant(0))
    };
    store.save(&approved).await.unwrap();
    let updates = (0..n).map(|i| {
        let handle = if i % 2 == 0 { store } else { other };
        let applied = AiProposal {
            status: ProposalStatus::Applied,
            applied_by: Some(format!("replica-{i}")),
            revision: 1,
            ..approved.clone()
        };
        async move { (i, handle.update(&applied, 0).await) }
    });
    let results = futures::future::join_all(updates).await;
    let winners: Vec<usize> = results
        .iter()
        .filter(|(_, result)| result.is_ok())
        .map(|(i, _)| *i)
        .collect();
    assert_eq!(
        winners.len(),
        1,
        "exactly one concurrent update succeeds: {winners:?}"
    );
    for (_, result) in results.into_iter().filter(|(_, r)| r.is_err()) {
        assert_status(result, 409, "a losing concurrent update");
    }
    let found = stored(store, &approved).await;
    assert_eq!(found.revision, 1);
    assert_eq!(found.applied_by, Some(format!("replica-{}", winners[0])));
}
