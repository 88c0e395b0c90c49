//! A real model, end to end: llama.cpp's `llama-server` with Qwen2.5-Coder-0.5B (both pinned and
//! installed by `tools/llm/install.sh`, which `.ci/run` runs) behind the real `weaver` binary's
//! `kind = "openai"` provider. One conversation on a sample workflow: a governed read tool
//! completes and is audited, text streams, and `conversation.completed` carries the usage.
//! The assertions are about Weaver's behaviour, never the model's wording.
//!
//! A test binary of its own, so that cargo runs it alone: one CPU thread of a small machine
//! is all llama-server gets, and a turn takes a minute or two.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use elsa_ai_server::testing::SseStream;
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use weaver_testkit::process::{WeaverProcess, free_loopback_address};
use weaver_testkit::workspace_root;

const KEY: &str = "real-model-test-key-0123456789";
const MODEL_FILE: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";

/// Where `tools/llm/install.sh` put the server and the model: `<target>/llm`, found from this
/// test binary's own place (`<target>/debug/deps/`).
fn llm_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let target = exe
        .ancestors()
        .nth(3)
        .expect("<target>/debug/deps/<binary>");
    target.join("llm")
}

/// `llama-server` on a free port, killed when dropped.
struct ModelServer {
    child: Child,
    base_url: String,
}

impl ModelServer {
    async fn start() -> Self {
        let dir = llm_dir();
        let server = dir.join("venv/bin/llama-server-vulkan");
        let model = dir.join(MODEL_FILE);
        assert!(
            server.is_file() && model.is_file(),
            "the real-model test needs llama-server and the model under {}: run \
             `bash tools/llm/install.sh` (with the same CARGO_TARGET_DIR), as .ci/run does",
            dir.display()
        );
        let template = workspace_root().join("tools/llm/qwen2.5-coder-tools.jinja");
        let address = free_loopback_address();
        let child = Command::new(&server)
            .args(["-m", &model.to_string_lossy()])
            .args(["--device", "none", "-t", "1", "-c", "16384"])
            .args(["--host", "127.0.0.1", "--port", &address.port().to_string()])
            .args(["--chat-template-file", &template.to_string_lossy()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("llama-server starts");
        let base_url = format!("http://{address}");
        let deadline = Instant::now() + Duration::from_secs(180);
        let client = reqwest::Client::new();
        loop {
            let healthy = client
                .get(format!("{base_url}/health"))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if healthy {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "llama-server did not load the model"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        Self { child, base_url }
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_model_drives_a_governed_turn_through_the_weaver_binary() {
    let started = Instant::now();
    let model = ModelServer::start().await;
    let loaded = started.elapsed();
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[store]\nmemory = true\n\
         [provider]\nkind = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"qwen2.5-coder-0.5b\"\n\
         temperature = 0.0\nseed = 42\nmax_output_tokens = 256\nmax_tool_rounds = 4\n\
         parallel_tool_calls = false\nrequest_timeout_s = 900\n\
         [limits]\nresult_budget_bytes = 6000\n",
        model.base_url
    );
    let weaver = WeaverProcess::start(
        Path::new(env!("CARGO_BIN_EXE_weaver")),
        dir.path(),
        &config,
        &[("WEAVER_DEV_KEY", KEY)],
    )
    .await;

    let response = reqwest::Client::new()
        .post(format!("{}/ai/chat", weaver.base_url()))
        .header("authorization", format!("ApiKey {KEY}"))
        .json(&json!({
            "message": "Call workflow_getDefinition with definitionId \
                        \"sample-order-approval\", then tell me how many activities it has."
        }))
        .send()
        .await
        .expect("weaver answers");
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    let mut stream = SseStream::new(response);
    let mut events = Vec::new();
    let mut first_event = None;
    let turn = tokio::time::timeout(Duration::from_secs(1200), async {
        while let Some(event) = stream.next_event().await {
            first_event.get_or_insert_with(|| started.elapsed());
            let end = matches!(
                event.event.as_str(),
                "conversation.completed" | "conversation.failed"
            );
            events.push(event);
            if end {
                break;
            }
        }
    })
    .await;
    assert!(turn.is_ok(), "the turn did not end within 20 minutes");
    let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    println!(
        "model loaded in {loaded:?}; turn ended after {:?}; events: {names:?}",
        started.elapsed()
    );

    let last = events.last().expect("events");
    assert_eq!(last.event, "conversation.completed", "{}", last.data);
    let usage = &last.json()["data"]["usage"];
    println!("usage: {usage}");
    assert!(usage["inputTokens"].as_u64().unwrap_or(0) > 0, "{usage}");
    assert!(usage["outputTokens"].as_u64().unwrap_or(0) > 0, "{usage}");
    assert!(
        names.contains(&"assistant.delta"),
        "text streams as deltas: {names:?}"
    );

    // A governed read tool ran: it completed, and the audit trail has its record.
    let completed: Vec<Value> = events
        .iter()
        .filter(|e| e.event == "tool.completed")
        .map(|e| e.json()["data"].clone())
        .collect();
    assert!(!completed.is_empty(), "a tool call completed: {names:?}");
    let tool = completed[0]["toolName"].as_str().expect("a tool name");
    let audit = weaver
        .get_json("/ai/audit?limit=100", &format!("ApiKey {KEY}"))
        .await;
    let audited = audit["items"]
        .as_array()
        .expect("audit records")
        .iter()
        .any(|record| record["details"]["callId"] == completed[0]["callId"]);
    assert!(audited, "the call of {tool} is in the audit trail: {audit}");
    // Every tool event is one the governor reported: a call it denied (a repeated call, say)
    // is a tool.failed with a code, never a silent gap.
    for failed in events.iter().filter(|e| e.event == "tool.failed") {
        assert!(
            failed.json()["data"]["error"]["code"].is_string(),
            "{}",
            failed.data
        );
    }
    println!("first event after {first_event:?}");
}
