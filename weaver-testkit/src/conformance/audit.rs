//! [`AiAuditSink`] and [`AiAuditLog`]: records kept exactly, every filter, newest first.

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::Duration;
use elsa_ai_abstractions::{
    AiAuditEvent, AiAuditLog, AiAuditSink, AiToolOutcome, AuditAction, AuditOutcome, AuditQuery,
    ConversationId, ProposalId, ToolCallDetails,
};
use elsa_workflows::{PageRequest, TenantId, TimeRange};
use serde_json::json;

use super::{case, instant, unique};

/// Every case, in order.
pub async fn run<S: AiAuditSink + AiAuditLog + ?Sized>(store: &S) {
    record_then_query_round_trips(store).await;
    queries_filter_and_page_newest_first(store).await;
    equal_timestamps_keep_reverse_recording_order(store).await;
    concurrent_records_are_all_kept(store, 200).await;
}

fn tenant() -> TenantId {
    TenantId::new(unique("tenant"))
}

fn event(tenant: &TenantId, actor: &str, outcome: AuditOutcome, seconds: i64) -> AiAuditEvent {
    let mut event = AiAuditEvent::new(
        tenant.clone(),
        actor,
        AuditAction::TOOL_INVOKED,
        outcome,
        format!("{actor} at {seconds}"),
    );
    event.timestamp = instant(seconds);
    event
}

async fn all<S: AiAuditLog + ?Sized>(store: &S, tenant: &TenantId) -> Vec<AiAuditEvent> {
    let query = AuditQuery {
        page: PageRequest::new(0, PageRequest::MAX_LIMIT),
        ..AuditQuery::default()
    };
    store
        .query(tenant, &query)
        .await
        .expect("query succeeds")
        .items
}

/// A record with every field set comes back exactly, details' key order included.
pub async fn record_then_query_round_trips<S: AiAuditSink + AiAuditLog + ?Sized>(store: &S) {
    case("audit: record then query round-trips");
    let tenant = tenant();
    let mut full = event(&tenant, "alice", AuditOutcome::Failure, 0);
    full.action = AuditAction::new("proposal.applied");
    full.conversation_id = Some(ConversationId::generate());
    full.proposal_id = Some(ProposalId::generate());
    full.tool_name = Some("workflow.proposeUpdate".into());
    full.trace_id = Some("4bf92f3577b34da6a3ce929d0e0e4736".into());
    full.summary = "vérifié ✓ — \"quoted\"".into();
    full.details =
        json!({"z": 1, "a": {"y": [1, 2.5, "x", null], "b": false}, "m": "[REDACTED]"}).into();
    store.record(full.clone()).await.expect("record succeeds");
    let bare = event(&tenant, "bob", AuditOutcome::Success, -1);
    store.record(bare.clone()).await.expect("record succeeds");
    // A governed call's typed details are written as the JSON object they stand for.
    let mut call = event(&tenant, "carol", AuditOutcome::Success, -2);
    call.details = ToolCallDetails {
        call_id: "call-1".into(),
        agent: "workflow-assistant".into(),
        called_as: Some("workflows.getDefinition".into()),
        arguments: Arc::new(json!({"definitionId": "wf-1", "version": 3})),
        outcome: AiToolOutcome::Success,
        duration_ms: 4,
        truncated: true,
        error: None,
        result: Some(json!({"echo": "hello"})),
    }
    .into();
    store.record(call.clone()).await.expect("record succeeds");

    let found = all(store, &tenant).await;
    assert_eq!(found, [full.clone(), bare, call.clone()]);
    for (found, written) in [(&found[0], &full), (&found[2], &call)] {
        assert_eq!(
            serde_json::to_string(&found.details).unwrap(),
            serde_json::to_string(&written.details).unwrap(),
            "details keep their key order"
        );
    }
    assert_eq!(found[2].details["arguments"]["version"], 3);
    assert_eq!(found[2].details["calledAs"], "workflows.getDefinition");
}

/// Tenant-partitioned; each filter alone and combined; the time range is inclusive at
/// both ends to the nanosecond; pages carry the total of all matches.
pub async fn queries_filter_and_page_newest_first<S: AiAuditSink + AiAuditLog + ?Sized>(store: &S) {
    case("audit: queries filter and page newest first");
    let tenant = tenant();
    let other = TenantId::new(unique("other"));
    let conversation = ConversationId::generate();
    let proposal = ProposalId::generate();
    let mut e1 = event(&tenant, "alice", AuditOutcome::Success, -1800);
    e1.conversation_id = Some(conversation.clone());
    let mut e2 = event(&tenant, "bob", AuditOutcome::Denied, -600);
    e2.proposal_id = Some(proposal.clone());
    let mut e3 = event(&tenant, "alice", AuditOutcome::Denied, -1200);
    e3.conversation_id = Some(conversation.clone());
    e3.proposal_id = Some(proposal.clone());
    let mut e4 = event(&tenant, "carol", AuditOutcome::Failure, -300);
    e4.trace_id = Some("0af7651916cd43dd8448eb211c80319c".into());
    e1.trace_id = Some("4bf92f3577b34da6a3ce929d0e0e4736".into());
    for e in [&e1, &e2, &e3, &e4] {
        store.record(e.clone()).await.unwrap();
    }
    store
        .record(event(&other, "alice", AuditOutcome::Denied, -60))
        .await
        .unwrap();

    let names = |events: Vec<AiAuditEvent>| -> Vec<String> {
        events.into_iter().map(|e| e.summary).collect()
    };
    let query = |query: AuditQuery| {
        let tenant = &tenant;
        async move {
            let page = store.query(tenant, &query).await.expect("query succeeds");
            (names(page.items), page.total)
        }
    };
    let expect = |events: &[&AiAuditEvent]| -> (Vec<String>, usize) {
        (
            events.iter().map(|e| e.summary.clone()).collect(),
            events.len(),
        )
    };

    assert_eq!(
        query(AuditQuery::default()).await,
        expect(&[&e4, &e2, &e3, &e1])
    );
    let alice = AuditQuery {
        actor_id: Some("alice".into()),
        ..AuditQuery::default()
    };
    assert_eq!(query(alice.clone()).await, expect(&[&e3, &e1]));
    let denied = AuditQuery {
        outcome: Some(AuditOutcome::Denied),
        ..AuditQuery::default()
    };
    assert_eq!(query(denied.clone()).await, expect(&[&e2, &e3]));
    let in_conversation = AuditQuery {
        conversation_id: Some(conversation),
        ..AuditQuery::default()
    };
    assert_eq!(query(in_conversation).await, expect(&[&e3, &e1]));
    let of_proposal = AuditQuery {
        proposal_id: Some(proposal),
        ..AuditQuery::default()
    };
    assert_eq!(query(of_proposal).await, expect(&[&e2, &e3]));
    let alice_denied = AuditQuery {
        outcome: Some(AuditOutcome::Denied),
        ..alice
    };
    assert_eq!(query(alice_denied).await, expect(&[&e3]));
    let of_trace = AuditQuery {
        trace_id: Some("0af7651916cd43dd8448eb211c80319c".into()),
        ..AuditQuery::default()
    };
    assert_eq!(query(of_trace).await, expect(&[&e4]));

    let between = |from, to| AuditQuery {
        time_range: Some(TimeRange { from, to }),
        ..AuditQuery::default()
    };
    assert_eq!(
        query(between(e3.timestamp, e2.timestamp)).await,
        expect(&[&e2, &e3]),
        "both ends are inclusive"
    );
    let one_ns = Duration::nanoseconds(1);
    assert_eq!(
        query(between(e3.timestamp + one_ns, e2.timestamp)).await,
        expect(&[&e2]),
        "a nanosecond later excludes the record"
    );
    assert_eq!(
        query(between(e3.timestamp, e2.timestamp - one_ns)).await,
        expect(&[&e3])
    );

    let paged = AuditQuery {
        page: PageRequest::new(1, 2),
        ..AuditQuery::default()
    };
    let page = store.query(&tenant, &paged).await.unwrap();
    assert_eq!(
        (names(page.items.clone()), page.total),
        (vec![e2.summary.clone(), e3.summary.clone()], 4)
    );
    assert_eq!((page.offset, page.limit), (1, 2));
    assert!(page.has_more());
    let beyond = AuditQuery {
        page: PageRequest::new(9, 2),
        ..denied
    };
    assert_eq!(query(beyond).await, (vec![], 2));

    assert_eq!(
        all(store, &other).await.len(),
        1,
        "the other tenant's record stays there"
    );
    assert!(
        all(store, &TenantId::new(unique("nobody")))
            .await
            .is_empty()
    );
}

/// Records with the same timestamp come back in reverse recording order.
pub async fn equal_timestamps_keep_reverse_recording_order<S: AiAuditSink + AiAuditLog + ?Sized>(
    store: &S,
) {
    case("audit: equal timestamps keep reverse recording order");
    let tenant = tenant();
    let events: Vec<AiAuditEvent> = ["first", "second", "third"]
        .into_iter()
        .map(|actor| event(&tenant, actor, AuditOutcome::Success, 0))
        .collect();
    for e in &events {
        store.record(e.clone()).await.unwrap();
    }
    let actors: Vec<String> = all(store, &tenant)
        .await
        .into_iter()
        .map(|e| e.actor_id)
        .collect();
    assert_eq!(actors, ["third", "second", "first"]);
}

/// `n` records written at once are all acknowledged and all kept.
pub async fn concurrent_records_are_all_kept<S: AiAuditSink + AiAuditLog + ?Sized>(
    store: &S,
    n: usize,
) {
    case("audit: concurrent records are all kept");
    let tenant = tenant();
    let events: Vec<AiAuditEvent> = (0..n)
        .map(|i| {
            event(
                &tenant,
                &format!("caller-{i}"),
                AuditOutcome::Success,
                i as i64,
            )
        })
        .collect();
    let results = futures::future::join_all(events.iter().map(|e| store.record(e.clone()))).await;
    assert!(
        results.iter().all(Result::is_ok),
        "every record is acknowledged: {results:?}"
    );
    let mut kept = BTreeSet::new();
    let mut offset = 0;
    loop {
        let query = AuditQuery {
            page: PageRequest::new(offset, PageRequest::MAX_LIMIT),
            ..AuditQuery::default()
        };
        let page = store.query(&tenant, &query).await.unwrap();
        assert_eq!(page.total, n);
        offset += page.items.len();
        kept.extend(page.items.into_iter().map(|e| e.id));
        if offset >= n {
            break;
        }
    }
    let written: BTreeSet<_> = events.into_iter().map(|e| e.id).collect();
    assert_eq!(kept, written);
}
