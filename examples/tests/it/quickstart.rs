//! The quickstart does what it says: the streamed turn, a valid proposal with its graph
//! diff, approval, apply, and an audit trail of all of it.

use weaver_examples::quickstart::{PROPOSED, run};

#[tokio::test]
async fn the_quickstart_runs_the_whole_flow_and_prints_it() {
    let mut printed = Vec::new();
    let outcome = run(&mut printed).await.unwrap();
    let printed = String::from_utf8(printed).unwrap();

    let names: Vec<&str> = outcome.events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names[0], "conversation.started");
    assert_eq!(*names.last().unwrap(), "conversation.completed");
    for expected in [
        "tool.started",
        "tool.completed",
        "proposal.created",
        "assistant.completed",
    ] {
        assert!(names.contains(&expected), "{expected} missing: {names:?}");
    }
    assert_eq!(outcome.proposal["status"], "Validated");
    assert_eq!(outcome.proposal["definitionId"], PROPOSED);
    assert!(outcome.proposal["graphDiff"].is_object());
    assert_eq!(outcome.applied["status"], "Applied");
    assert_eq!(outcome.applied["appliedVersion"]["version"], 1);

    let actions: Vec<&str> = outcome
        .audit
        .iter()
        .map(|r| r["action"].as_str().unwrap())
        .collect();
    for expected in [
        "tool.enablement_changed",
        "prompt.submitted",
        "tool.invoked",
        "proposal.created",
        "proposal.approved",
        "proposal.applied",
    ] {
        assert!(
            actions.contains(&expected),
            "{expected} missing: {actions:?}"
        );
    }
    for expected in [
        "POST /ai/chat",
        "graph diff",
        "diagnostics",
        "GET /ai/audit",
        "proposal.created",
    ] {
        assert!(
            printed.contains(expected),
            "the output lacks {expected}:\n{printed}"
        );
    }
}
