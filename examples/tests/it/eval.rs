//! `weaver-eval` against a scripted OpenAI-compatible model: its core judges turns from
//! Weaver's events and stores (a task that passes, one that fails with reasons, a proposal
//! read back from the store), reads rounds and tokens, cancels a turn at its deadline, and
//! its binary runs end to end. The shipped task file covers every kind, names only sample
//! data, Weaver accepts every task's message, agent and attachments and offers the tools
//! it asks for, and each proposal task passes with the change it asks for.

use std::collections::BTreeMap;
use std::time::Duration;

use elsa_workflows::samples;
use serde_json::{Value, json};
use weaver_examples::eval::{
    self, Criterion, EvalOptions, Report, TaskFile, TaskKind, TurnOutcome,
};
use weaver_testkit::model_server::{ModelReply, ScriptedModelServer};

/// Three tasks: an explanation that passes, the same question answered without the facts,
/// and a description change proposed through `workflow.proposeUpdate`.
const TASKS: &str = r#"
[[task]]
id = "explain-pass"
kind = "explain"
message = "What does the Order Approval workflow do?"
criteria = [
  { tool_family = "workflow.get*" },
  { answer_mentions = ["SendEmail", ["500", "1000"]] },
  { no_proposal = true },
  { no_failed_turn = true },
  { max_rounds = 2 },
]

[[task]]
id = "explain-fail"
kind = "explain"
message = "What does the Order Approval workflow do?"
criteria = [
  { tool_family = "workflow.findUsages" },
  { answer_mentions = ["SendEmail"] },
  { no_failed_turn = true },
]

[[task]]
id = "describe-pass"
kind = "propose-description"
message = "Change the description of Order Approval."
attachments = [{ kind = "WorkflowDefinition", id = "sample-order-approval" }]
criteria = [
  { tool_family = "workflow.proposeUpdate" },
  { proposal_status = "Validated" },
  { proposal_kind = "Update" },
  { proposal_definition = "sample-order-approval" },
  { proposal_changes_header = "description" },
  { proposal_diff_contains = "customer is emailed" },
  { no_failed_turn = true },
]
"#;

const GOOD_ANSWER: &str = "Orders above 500 EUR wait for a manager in RequestApproval; then \
                           NotifyCustomer sends an email with Elsa.SendEmail.";
const POOR_ANSWER: &str = "It processes orders.";
const DONE: &str = "I proposed the new description; a reviewer has to approve it.";

fn read_order_approval() -> ModelReply {
    ModelReply::ToolCall {
        // Function names are sanitised: dots become underscores.
        name: "workflow_getDefinition".into(),
        arguments: json!({"definitionId": "sample-order-approval"}),
    }
}

fn propose_description() -> ModelReply {
    ModelReply::ToolCall {
        name: "workflow_proposeUpdate".into(),
        arguments: description_change(),
    }
}

fn description_change() -> Value {
    json!({
            "definitionId": "sample-order-approval",
            "baselineVersion": 2,
            "operations": [{
                "op": "setDescription",
                "description": "Receives orders over HTTP; orders above 500 EUR need a manager's approval before the customer is emailed."
            }],
        "rationale": "The description the user asked for."
    })
}

/// The completion tokens the scripted model reports: one per whitespace-separated word of
/// its output (a tool call's arguments count as their compact JSON text), as its docs
/// promise.
fn words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

fn options(model: &ScriptedModelServer) -> EvalOptions {
    EvalOptions {
        task_timeout: Duration::from_secs(60),
        ..EvalOptions::new(model.base_url(), "scripted-model")
    }
}

#[tokio::test]
async fn the_evaluator_judges_turns_by_events_and_stores_and_reads_rounds_and_tokens() {
    let model = ScriptedModelServer::start([
        read_order_approval(),
        ModelReply::Text(GOOD_ANSWER.into()),
        read_order_approval(),
        ModelReply::Text(POOR_ANSWER.into()),
        propose_description(),
        ModelReply::Text(DONE.into()),
    ])
    .await
    .unwrap();
    let tasks = TaskFile::parse(TASKS).unwrap().tasks;
    let mut heard = Vec::new();
    let report = eval::run(&tasks, &options(&model), |index, task| {
        heard.push((index, task.id.clone()));
    })
    .await
    .unwrap();
    assert_eq!(model.remaining_replies(), 0);
    assert_eq!(model.model_requests().len(), 6);
    assert_eq!(
        heard,
        [
            (0, "explain-pass".to_owned()),
            (1, "explain-fail".to_owned()),
            (2, "describe-pass".to_owned())
        ]
    );

    let [pass, fail, describe] = report.tasks.as_slice() else {
        panic!("three task reports: {report:#?}");
    };
    // Success, and the failed criteria with their reasons.
    assert!(pass.success, "{pass:#?}");
    assert!(pass.failed_criteria.is_empty());
    assert!(!fail.success);
    let reasons: Vec<(&Criterion, &str)> = fail
        .failed_criteria
        .iter()
        .map(|f| (&f.criterion, f.reason.as_str()))
        .collect();
    assert_eq!(
        reasons,
        [
            (
                &Criterion::ToolFamily(eval::Globs::One("workflow.findUsages".into())),
                "no call of workflow.findUsages completed (called: workflow.getDefinition)"
            ),
            (
                &Criterion::AnswerMentions(vec![eval::Fact::Text("SendEmail".into())]),
                "the answer does not mention \"SendEmail\""
            ),
        ]
    );
    assert!(describe.success, "{describe:#?}");
    assert_eq!(describe.proposals.len(), 1);
    assert_eq!(describe.proposals[0].status, "Validated");
    assert_eq!(describe.proposals[0].kind, "Update");
    assert_eq!(describe.proposals[0].definition_id, "sample-order-approval");

    // What each turn did, from its events.
    for task in [pass, fail, describe] {
        assert_eq!(task.outcome, Some(TurnOutcome::Completed));
        assert_eq!(task.rounds, 2, "{}", task.id);
        // The scripted model reports 7 prompt tokens per request.
        assert_eq!(task.prompt_tokens, Some(14), "{}", task.id);
        let first_event = task.time_to_first_event_ms.unwrap();
        let first_output = task.time_to_first_output_ms.unwrap();
        assert!(first_event <= first_output && first_output <= task.total_ms);
    }
    assert_eq!(pass.completion_tokens, Some(1 + words(GOOD_ANSWER)));
    assert_eq!(fail.completion_tokens, Some(1 + words(POOR_ANSWER)));
    assert_eq!(
        describe.completion_tokens,
        Some(words(&description_change().to_string()) + words(DONE))
    );
    assert_eq!(pass.answer, GOOD_ANSWER);
    let tools: Vec<(&str, bool)> = describe
        .tool_calls
        .iter()
        .map(|c| (c.name.as_str(), c.completed))
        .collect();
    assert_eq!(tools, [("workflow.proposeUpdate", true)]);

    // Overall and per kind.
    assert_eq!(report.overall.tasks, 3);
    assert_eq!(report.overall.passed, 2);
    assert!((report.overall.success_rate - 2.0 / 3.0).abs() < 1e-9);
    assert_eq!(report.overall.rounds, 6);
    assert_eq!(report.overall.prompt_tokens, 42);
    assert!((report.overall.mean_rounds - 2.0).abs() < 1e-9);
    let kinds: Vec<(TaskKind, usize, usize)> = report
        .by_kind
        .iter()
        .map(|k| (k.kind, k.summary.passed, k.summary.tasks))
        .collect();
    assert_eq!(
        kinds,
        [
            (TaskKind::Explain, 1, 2),
            (TaskKind::ProposeDescription, 1, 1)
        ]
    );

    // The table and the JSON say the same.
    let table = report.table();
    for expected in [
        "explain-pass",
        "PASS",
        "FAIL",
        "x answer_mentions \"SendEmail\": the answer does not mention \"SendEmail\"",
        "workflow.proposeUpdate",
        "2 of 3 tasks passed (66.7%)",
    ] {
        assert!(table.contains(expected), "{expected} missing:\n{table}");
    }
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["tasks"][1]["success"], false);
    assert_eq!(
        json["tasks"][1]["failedCriteria"][1]["criterion"],
        json!({"answer_mentions": ["SendEmail"]})
    );
    assert_eq!(json["tasks"][0]["promptTokens"], 14);
    assert_eq!(json["overall"]["passed"], 2);
    let back: Report = serde_json::from_value(json).unwrap();
    assert_eq!(back, report);
}

#[tokio::test]
async fn the_weaver_eval_binary_runs_end_to_end_and_writes_its_report() {
    let model =
        ScriptedModelServer::start([read_order_approval(), ModelReply::Text(GOOD_ANSWER.into())])
            .await
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks.toml");
    std::fs::write(&tasks, TASKS).unwrap();
    let json = dir.path().join("report.json");
    let weaver_eval = |args: &[&str]| {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_weaver-eval"));
        command
            .args(["--base-url", &model.base_url(), "--model", "scripted-model"])
            .arg("--tasks")
            .arg(&tasks)
            .args(["--timeout-secs", "60", "--temperature", "0", "--seed", "7"])
            .args(args)
            .env_remove("WEAVER_EVAL_BASE_URL")
            .env_remove("WEAVER_EVAL_MODEL");
        command.output()
    };

    let json_arg = json.to_str().unwrap();
    let run = weaver_eval(&[
        "--only",
        "explain-pass",
        "--json",
        json_arg,
        "--fail-under",
        "1",
    ])
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("task"), "{stdout}");
    assert!(stdout.contains("explain-pass"), "{stdout}");
    assert!(
        stdout.contains("1 of 1 tasks passed (100.0%) with scripted-model"),
        "{stdout}"
    );
    assert!(
        stderr.contains("[1/1] PASS explain-pass (2 rounds"),
        "{stderr}"
    );
    let report: Report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report.tasks.len(), 1);
    assert!(report.tasks[0].success);
    assert_eq!(report.tasks[0].rounds, 2);
    assert_eq!(report.tasks[0].prompt_tokens, Some(14));
    assert_eq!(report.model, "scripted-model");
    assert_eq!(report.base_url, model.base_url());
    // The sampling options reached the model.
    let request = &model.chat_requests()[0].body;
    assert_eq!(request["temperature"], 0.0);
    assert_eq!(request["seed"], 7);
    assert_eq!(request["model"], "scripted-model");

    // A run below --fail-under exits with 2.
    model.push([read_order_approval(), ModelReply::Text(POOR_ANSWER.into())]);
    let run = weaver_eval(&["--only", "explain-fail", "--fail-under", "0.5"])
        .await
        .unwrap();
    assert_eq!(run.status.code(), Some(2), "{run:?}");
    assert!(String::from_utf8_lossy(&run.stdout).contains("FAIL"));

    // An unknown task id stops it before anything runs.
    let run = weaver_eval(&["--only", "explain-pass,nope"]).await.unwrap();
    assert_eq!(run.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("no task has the id nope"),
        "{run:?}"
    );
    assert_eq!(model.remaining_replies(), 0);
}

#[tokio::test]
async fn a_turn_that_outlasts_its_timeout_is_cancelled_and_reported() {
    // The model never answers: the task's deadline passes, the turn is cancelled.
    let model = ScriptedModelServer::start([ModelReply::Hold])
        .await
        .unwrap();
    let tasks = TaskFile::parse(TASKS)
        .unwrap()
        .select(&["explain-fail".to_owned()])
        .unwrap();
    let options = EvalOptions {
        task_timeout: Duration::from_secs(2),
        ..EvalOptions::new(model.base_url(), "scripted-model")
    };
    let report = eval::run(&tasks, &options, |_, _| {}).await.unwrap();
    let task = &report.tasks[0];
    assert_eq!(task.outcome, Some(TurnOutcome::TimedOut));
    assert!(!task.success);
    assert_eq!(task.rounds, 1);
    assert_eq!(task.prompt_tokens, None);
    assert!(task.total_ms >= 2000, "{}", task.total_ms);
    assert!(task.time_to_first_event_ms.is_some());
    let reasons: Vec<&str> = task
        .failed_criteria
        .iter()
        .map(|f| f.reason.as_str())
        .collect();
    assert!(
        reasons.contains(&"the turn did not complete: timed out"),
        "{reasons:?}"
    );
}

#[test]
fn the_shipped_tasks_cover_every_kind_and_name_only_sample_data() {
    let file = TaskFile::load(&eval::default_tasks_path()).unwrap();
    assert!(file.tasks.len() >= 20, "{} tasks", file.tasks.len());
    let mut per_kind: BTreeMap<TaskKind, usize> = BTreeMap::new();
    for task in &file.tasks {
        *per_kind.entry(task.kind).or_default() += 1;
    }
    for (kind, least) in [
        (TaskKind::Explain, 4),
        (TaskKind::Search, 3),
        (TaskKind::FindUsages, 3),
        (TaskKind::Diagnose, 3),
        (TaskKind::ProposeDescription, 4),
        (TaskKind::ProposeActivity, 3),
    ] {
        let count = per_kind.get(&kind).copied().unwrap_or(0);
        assert!(count >= least, "{kind}: {count} tasks, fewer than {least}");
    }

    let definition = |id: &str| {
        samples::definitions()
            .iter()
            .rev()
            .find(|d| d.definition_id() == id)
            .unwrap_or_else(|| panic!("{id} is not a sample definition"))
    };
    for task in &file.tasks {
        for attachment in &task.attachments {
            let id = attachment.id.as_deref().unwrap_or_default();
            match attachment.kind.as_str() {
                "WorkflowDefinition" | "DiagnosticsScope" => {
                    definition(id);
                }
                "ActivitySelection" => {
                    let activity = attachment.activity_id.as_deref().unwrap();
                    assert!(
                        definition(id).find_activity(activity).is_some(),
                        "{}: {id} has no activity {activity}",
                        task.id
                    );
                }
                "WorkflowInstance" => assert!(
                    samples::instances().iter().any(|i| i.id() == id),
                    "{}: {id} is not a sample instance",
                    task.id
                ),
                other => panic!("{}: an attachment of kind {other}", task.id),
            }
        }
        for criterion in &task.criteria {
            if let Criterion::ProposalDefinition(id) = criterion {
                definition(id);
            }
        }
        let proposes = matches!(
            task.kind,
            TaskKind::ProposeDescription | TaskKind::ProposeActivity
        );
        let checks_proposal = task
            .criteria
            .iter()
            .any(|c| matches!(c, Criterion::ProposalStatus(status) if status == "Validated"));
        assert_eq!(proposes, checks_proposal, "{}", task.id);
        if task.kind == TaskKind::Diagnose {
            assert!(
                task.criteria
                    .iter()
                    .any(|c| matches!(c, Criterion::DiagnosisMentions(_))),
                "{}",
                task.id
            );
        }
    }
}

#[tokio::test]
async fn weaver_accepts_every_shipped_task() {
    // A model that answers every task at once: each turn is one round and completes, so
    // every message, agent and attachment of the file was accepted by Weaver.
    let file = TaskFile::load(&eval::default_tasks_path()).unwrap();
    let model = ScriptedModelServer::start(
        file.tasks
            .iter()
            .map(|_| ModelReply::Text("I do not know.".into())),
    )
    .await
    .unwrap();
    let report = eval::run(&file.tasks, &options(&model), |_, _| {})
        .await
        .unwrap();
    for task in &report.tasks {
        assert_eq!(
            task.outcome,
            Some(TurnOutcome::Completed),
            "{}: {:?}",
            task.id,
            task.outcome
        );
        assert_eq!(task.rounds, 1, "{}", task.id);
        // Whatever a task asks, an answer without facts, tools or proposals fails it.
        assert!(!task.success, "{}", task.id);
    }
    // Every tool family a task asks for is offered to its agent (function names are the
    // canonical names with underscores for dots).
    let requests = model.chat_requests();
    assert_eq!(requests.len(), file.tasks.len());
    for (task, request) in file.tasks.iter().zip(&requests) {
        let offered: Vec<String> = request
            .tool_names()
            .iter()
            .map(|name| name.replace('_', "."))
            .collect();
        for criterion in &task.criteria {
            if let Criterion::ToolFamily(globs) = criterion {
                assert!(
                    offered.iter().any(|name| globs.matches(name)),
                    "{}: no tool of {globs} is offered: {offered:?}",
                    task.id
                );
            }
        }
    }
}

/// A correct `workflow.proposeUpdate` call for each shipped proposal task.
fn reference_change(task: &str) -> Value {
    let update = |definition: &str, version: i32, operations: Value| {
        json!({
            "definitionId": definition,
            "baselineVersion": version,
            "operations": operations,
            "rationale": "As asked."
        })
    };
    let add_between = |activity: Value, source: &str, target: &str| {
        let id = activity["id"].clone();
        json!([
            {"op": "addActivity", "activity": activity},
            {"op": "disconnect", "source": source, "target": target},
            {"op": "connect", "source": source, "target": id},
            {"op": "connect", "source": id, "target": target},
        ])
    };
    match task {
        "describe-order-approval" => update(
            "sample-order-approval",
            2,
            json!([{"op": "setDescription", "description": "Receives orders over HTTP; orders above 500 EUR need a manager's approval before the customer is emailed."}]),
        ),
        "describe-inventory-sync" => update(
            "sample-inventory-sync",
            1,
            json!([{"op": "setDescription", "description": "Every hour, fetches stock levels from https://inventory.example.com/api/stock and logs how many items were read."}]),
        ),
        "describe-hello-world" => update(
            "sample-http-hello-world",
            1,
            json!([{"op": "setDescription", "description": "Demo endpoint: GET /workflows/hello-world returns a plain-text greeting."}]),
        ),
        "describe-order-approval-sender" => update(
            "sample-order-approval",
            2,
            json!([{"op": "setDescription", "description": "Receives an order over HTTP, confirms orders up to 500 EUR at once and asks a manager to approve larger ones. Customers are notified by email from orders@example.com."}]),
        ),
        "add-writeline-inventory-sync" => update(
            "sample-inventory-sync",
            1,
            json!([{"op": "addActivity", "activity": {"id": "LogFinished", "type": "Elsa.WriteLine", "inputs": {"Text": {"value": "Inventory sync finished"}}}}]),
        ),
        "add-delay-order-approval" => update(
            "sample-order-approval",
            2,
            add_between(
                json!({"id": "Settle", "type": "Elsa.Delay", "inputs": {"TimeSpan": {"value": "00:05:00", "typeName": "TimeSpan"}}}),
                "AcknowledgeOrder",
                "CheckAmount",
            ),
        ),
        "add-email-hello-world" => update(
            "sample-http-hello-world",
            1,
            json!([
                {"op": "addActivity", "activity": {"id": "NotifyOps", "type": "Elsa.SendEmail", "inputs": {
                    "To": {"value": ["ops@example.com"]},
                    "Subject": {"value": "Hello world was called"},
                    "Body": {"value": "The hello-world endpoint was called."}
                }}},
                {"op": "connect", "source": "SayHello", "target": "NotifyOps"},
            ]),
        ),
        "add-log-after-approval" => update(
            "sample-order-approval",
            2,
            add_between(
                json!({"id": "LogApproved", "type": "Elsa.WriteLine", "inputs": {"Text": {"value": "Order approved"}}}),
                "RequestApproval",
                "NotifyCustomer",
            ),
        ),
        other => panic!("no reference change for {other}"),
    }
}

#[tokio::test]
async fn the_shipped_proposal_tasks_pass_with_the_change_they_ask_for() {
    // Guards the task file: a model that makes exactly the change asked for meets every
    // criterion of every proposal task (the proposal is Validated, its diff shows it).
    let file = TaskFile::load(&eval::default_tasks_path()).unwrap();
    let tasks: Vec<_> = file
        .tasks
        .into_iter()
        .filter(|t| {
            matches!(
                t.kind,
                TaskKind::ProposeDescription | TaskKind::ProposeActivity
            )
        })
        .collect();
    let model = ScriptedModelServer::start(tasks.iter().flat_map(|task| {
        [
            ModelReply::ToolCall {
                name: "workflow_proposeUpdate".into(),
                arguments: reference_change(&task.id),
            },
            ModelReply::Text("I proposed the change; a reviewer approves it.".into()),
        ]
    }))
    .await
    .unwrap();
    let report = eval::run(&tasks, &options(&model), |_, _| {})
        .await
        .unwrap();
    assert!(!report.tasks.is_empty());
    for task in &report.tasks {
        assert!(task.success, "{}: {:#?}", task.id, task.failed_criteria);
    }
}
