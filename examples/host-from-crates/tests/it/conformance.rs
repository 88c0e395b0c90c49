//! The host's JSON-lines stores pass the conformance suite every store of the repository runs.

use std::io::Write;

use acme_host::{JsonlAuditSink, JsonlProposalStore};
use elsa_ai_abstractions::{
    AiAuditEvent, AiAuditLog, AiAuditSink, AuditAction, AuditOutcome, AuditQuery,
};
use weaver_testkit::conformance;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_proposal_file_passes_the_conformance_suite_through_two_handles() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("proposals.jsonl");
    // Two handles on one file: what two processes sharing it would have.
    let store = JsonlProposalStore::open(&path).unwrap();
    let other = JsonlProposalStore::open(&path).unwrap();
    conformance::proposals::run(&store, &other).await;

    // A third handle, opened afterwards, reads the proposals back from the file.
    let lines = std::fs::read_to_string(&path).unwrap();
    let last: serde_json::Value = serde_json::from_str(lines.lines().last().unwrap()).unwrap();
    let reopened = JsonlProposalStore::open(&path).unwrap();
    let id = elsa_ai_abstractions::ProposalId::new(last["id"].as_str().unwrap());
    let tenant = elsa_workflows::TenantId::new(last["tenantId"].as_str().unwrap());
    let found = elsa_ai_abstractions::AiProposalStore::find(&reopened, &id, &tenant)
        .await
        .unwrap()
        .expect("the last proposal written is read back");
    assert_eq!(serde_json::to_value(found).unwrap(), last);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_audit_file_passes_the_conformance_suite() {
    let folder = tempfile::tempdir().unwrap();
    let sink = JsonlAuditSink::open(folder.path().join("audit.jsonl")).unwrap();
    conformance::audit::run(&sink).await;
}

#[tokio::test]
async fn a_line_torn_by_a_crash_is_cut_off_before_the_next_record() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("audit.jsonl");
    let sink = JsonlAuditSink::open(&path).unwrap();
    let event = |actor: &str| {
        AiAuditEvent::new(
            "acme".into(),
            actor,
            AuditAction::PROMPT_SUBMITTED,
            AuditOutcome::Success,
            actor,
        )
    };
    sink.record(event("before")).await.unwrap();
    // A writer died in the middle of its line: its caller was never answered.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(br#"{"id":"torn","timest"#).unwrap();
    let read = |sink: JsonlAuditSink| async move {
        let page = sink
            .query(&"acme".into(), &AuditQuery::default())
            .await
            .unwrap();
        page.items
            .into_iter()
            .map(|e| e.actor_id)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        read(sink.clone()).await,
        ["before"],
        "the torn line is not read"
    );
    sink.record(event("after")).await.unwrap();
    assert_eq!(read(sink).await, ["after", "before"]);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("torn"), "{text}");
    assert_eq!(text.lines().count(), 2);
}
