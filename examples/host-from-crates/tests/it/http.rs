//! The host as its users run it: the `acme-host` binary on a real socket. A turn of its
//! `order-desk` agent calls the host's own tool (linked from `acme-tools`, nothing else) and
//! proposes a change through the built-in proposal tool; the proposal is approved and
//! applied over HTTP; then the host's own files hold the proposal, applied, and every audit
//! record of it all; and a restarted host reads them back.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

use acme_host::{API_KEY_ENV, AUDIT_FILE, PROPOSALS_FILE};
use reqwest::Method;
use serde_json::{Value, json};

const KEY: &str = "acme-test-key-of-alice-0001";
const SAMPLE: &str = "sample-order-approval";

/// A running `acme-host` process, killed if the test ends without stopping it.
struct Host {
    child: Child,
    /// Kept open: the host may write to it.
    _stdout: BufReader<ChildStdout>,
    base: String,
    http: reqwest::Client,
}

impl Host {
    /// Starts the binary on a free port of the loopback with its data in `data`.
    fn start(data: &Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_acme-host"))
            .args(["--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data)
            .env(API_KEY_ENV, KEY)
            .stdout(Stdio::piped())
            .spawn()
            .expect("the host binary starts");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let Some(base) = line.trim().strip_prefix("listening on ") else {
            panic!("the host did not start: {line:?}, {:?}", child.wait());
        };
        Self {
            base: base.to_owned(),
            child,
            _stdout: stdout,
            http: reqwest::Client::new(),
        }
    }

    /// Sends a request as alice; returns the status and the body (JSON, or the text).
    async fn send(&self, method: Method, path: &str, body: Option<Value>) -> (u16, String) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("authorization", format!("ApiKey {KEY}"));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    }

    /// Sends a request that must succeed; returns its JSON.
    async fn json(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let (status, text) = self.send(method.clone(), path, body).await;
        assert_eq!(status, 200, "{method} {path}: {text}");
        serde_json::from_str(&text).unwrap()
    }

    /// Stops the host as an operator would (SIGTERM) and checks that it exits cleanly.
    fn stop(mut self) {
        let stopped = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(stopped.success());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the host exits cleanly: {status}");
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One server-sent event: its type and its JSON (the stream event; its `data` holds the
/// event's own fields).
#[derive(Debug)]
struct Event {
    kind: String,
    data: Value,
}

fn events(stream: &str) -> Vec<Event> {
    stream
        .split("\n\n")
        .filter_map(|block| {
            let (mut kind, mut data) = (None, String::new());
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("event:") {
                    kind = Some(value.trim().to_owned());
                } else if let Some(value) = line.strip_prefix("data:") {
                    data.push_str(value.strip_prefix(' ').unwrap_or(value));
                }
            }
            Some(Event {
                kind: kind?,
                data: serde_json::from_str(&data).ok()?,
            })
        })
        .collect()
}

/// Every line of a JSON-lines file.
fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[tokio::test]
async fn a_turn_calls_the_hosts_tool_and_its_proposal_and_audit_land_in_the_hosts_files() {
    let data = tempfile::tempdir().unwrap();
    let host = Host::start(data.path());

    // The host's tool exists only because the host links acme-tools.
    let tools = host
        .json(Method::GET, "/ai/tools?agent=order-desk", None)
        .await;
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"acme.orderStatus"), "{names:?}");
    let capabilities = host.json(Method::GET, "/ai/capabilities", None).await;
    assert_eq!(
        capabilities["persistence"]["store"], "acme-jsonl",
        "{capabilities}"
    );

    // Proposal tools are off until an administrator enables them.
    host.json(
        Method::PUT,
        "/ai/admin/tools/workflow.proposeUpdate/enablement",
        Some(json!({"enabled": true})),
    )
    .await;

    // The turn: the rule-based provider reads the order and proposes a note on the workflow.
    let (status, stream) = host
        .send(
            Method::POST,
            "/ai/chat",
            Some(json!({
                "agent": "order-desk",
                "message": "Where is order ORD-1002? Note it on the attached workflow, please.",
                "attachments": [{"kind": "WorkflowDefinition", "referenceId": SAMPLE}],
            })),
        )
        .await;
    assert_eq!(status, 200, "{stream}");
    let events = events(&stream);
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"conversation.started"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"conversation.completed"), "{stream}");
    let conversation = events[0].data["data"]["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    let completed = |tool: &str| {
        events
            .iter()
            .find(|e| e.kind == "tool.completed" && e.data["data"]["toolName"] == tool)
            .unwrap_or_else(|| panic!("no tool.completed for {tool}: {kinds:?}"))
    };
    assert_eq!(
        completed("acme.orderStatus").data["data"]["outcome"],
        "Success"
    );
    assert_eq!(
        completed("workflow.proposeUpdate").data["data"]["outcome"],
        "Success"
    );
    let created = events
        .iter()
        .find(|e| e.kind == "proposal.created")
        .unwrap_or_else(|| panic!("no proposal.created: {kinds:?}"));
    let proposal = created.data["data"]["proposalId"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = events
        .iter()
        .find(|e| e.kind == "assistant.completed")
        .map(|e| e.data["data"]["text"].as_str().unwrap().to_owned())
        .expect("an answer");
    for fact in [
        "ORD-1002",
        "Initech",
        "12500.00 EUR",
        "awaiting approval",
        &proposal,
    ] {
        assert!(answer.contains(fact), "{fact} missing from {answer:?}");
    }

    // A person reviews, approves and applies it.
    let path = format!("/ai/proposals/{proposal}");
    let review = host.json(Method::GET, &path, None).await;
    assert_eq!(review["status"], "Validated", "{review}");
    let approved = host
        .json(Method::POST, &format!("{path}/approve"), None)
        .await;
    assert_eq!(approved["status"], "Approved");
    let applied = host
        .json(Method::POST, &format!("{path}/apply"), None)
        .await;
    assert_eq!(applied["status"], "Applied", "{applied}");
    assert_eq!(applied["appliedVersion"]["definitionId"], SAMPLE);

    // The host's proposal file: every saved state, the last one applied.
    let saved: Vec<Value> = lines(&data.path().join(PROPOSALS_FILE))
        .into_iter()
        .filter(|p| p["id"] == proposal.as_str())
        .collect();
    let states: Vec<(u64, &str)> = saved
        .iter()
        .map(|p| {
            (
                p["revision"].as_u64().unwrap(),
                p["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(states.first(), Some(&(0, "Validated")), "{states:?}");
    assert_eq!(states.last().map(|s| s.1), Some("Applied"), "{states:?}");
    assert!(
        states.windows(2).all(|w| w[1].0 == w[0].0 + 1),
        "one line per revision: {states:?}"
    );
    let last = saved.last().unwrap();
    assert_eq!(last["conversationId"], conversation.as_str());
    assert!(
        last["payload"]["definition"]["description"]
            .as_str()
            .unwrap()
            .contains("ORD-1002"),
        "{last}"
    );

    // The host's audit file: the turn, both tool calls and the whole review.
    let audit = lines(&data.path().join(AUDIT_FILE));
    let has = |action: &str, field: &str, value: &str| {
        audit
            .iter()
            .any(|r| r["action"] == action && r[field] == value && r["outcome"] == "Success")
    };
    assert!(has(
        "tool.enablement_changed",
        "toolName",
        "workflow.proposeUpdate"
    ));
    for action in [
        "session.created",
        "context.resolved",
        "prompt.submitted",
        "tool.invoked",
        "turn.completed",
    ] {
        assert!(
            has(action, "conversationId", &conversation),
            "{action} of the turn missing: {audit:#?}"
        );
    }
    for tool in ["acme.orderStatus", "workflow.proposeUpdate"] {
        let call = audit
            .iter()
            .find(|r| r["action"] == "tool.invoked" && r["toolName"] == tool)
            .unwrap_or_else(|| panic!("the call of {tool} is not audited"));
        assert_eq!(call["conversationId"], conversation.as_str());
        assert_eq!(call["actorId"], "alice");
    }
    for action in [
        "proposal.created",
        "proposal.approved",
        "proposal.applied",
        "proposal.written",
    ] {
        assert!(
            has(action, "proposalId", &proposal),
            "{action} missing: {audit:#?}"
        );
    }
    // `GET /ai/audit` reads the same trail back through the host's log: every record, once.
    let trail = host.json(Method::GET, "/ai/audit?limit=500", None).await;
    let ids = |records: &[Value]| {
        let mut ids: Vec<String> = records.iter().map(|r| r["id"].to_string()).collect();
        ids.sort();
        ids
    };
    assert_eq!(
        ids(trail["items"].as_array().unwrap()),
        ids(&audit),
        "{trail}"
    );
    host.stop();

    // Restarted on the same files, the host still knows the proposal and its trail.
    let host = Host::start(data.path());
    let again = host.json(Method::GET, &path, None).await;
    assert_eq!(again["status"], "Applied", "{again}");
    let trail = host
        .json(
            Method::GET,
            &format!("/ai/audit?proposalId={proposal}"),
            None,
        )
        .await;
    assert_eq!(
        trail["total"], 4,
        "created, approved, applied, written: {trail}"
    );
    host.stop();
}
