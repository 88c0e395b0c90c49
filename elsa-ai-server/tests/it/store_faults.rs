//! The `weaver` binary on a SQLite file it cannot write for a while: made read-only (the
//! immutable attribute, which the kernel enforces on open descriptors and for root alike) or
//! full (a file-size limit on the running process, so every write past the limit fails as on
//! a full disk). Requests that need a write get 503 `store_unavailable` (never a 500, never a
//! stream that starts and then breaks), reads keep working, nothing that was acknowledged is
//! lost, and writes succeed again once the file can be written.

use std::path::Path;
use std::process::Command;

use elsa_ai_server::testing::SseStream;
use reqwest::StatusCode;
use serde_json::{Value, json};
use weaver_testkit::process::WeaverProcess;

const KEY: &str = "store-faults-dev-key-0001";
const TOOL: &str = "workflow.proposeUpdate";

/// `weaver` with no configuration (SQLite `weaver.db` in its folder), on a free port.
struct Weaver {
    // Declared before `dir`: the process ends before its folder is removed.
    process: WeaverProcess,
    dir: tempfile::TempDir,
    client: reqwest::Client,
}

impl Weaver {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        // Started as an operator would: weaver itself handles SIGXFSZ, so a write past the
        // file-size limit fails instead of ending the process.
        let process = WeaverProcess::start_without_config(
            env!("CARGO_BIN_EXE_weaver").as_ref(),
            dir.path(),
            &[("WEAVER_DEV_KEY", KEY)],
        )
        .await;
        Self {
            process,
            dir,
            client: reqwest::Client::new(),
        }
    }

    fn file(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        match self
            .client
            .get(format!("{}{path}", self.process.base_url()))
            .header("authorization", format!("ApiKey {KEY}"))
            .send()
            .await
        {
            Ok(response) => (
                response.status(),
                response.json().await.unwrap_or(Value::Null),
            ),
            Err(_) => (StatusCode::SERVICE_UNAVAILABLE, Value::Null),
        }
    }

    /// Turns the tool's enablement on or off (one audited write).
    async fn set_enablement(&self, enabled: bool) -> (StatusCode, Value) {
        let response = self
            .client
            .put(format!(
                "{}/ai/admin/tools/{TOOL}/enablement",
                self.process.base_url()
            ))
            .header("authorization", format!("ApiKey {KEY}"))
            .json(&json!({"enabled": enabled}))
            .send()
            .await
            .unwrap();
        (response.status(), response.json().await.unwrap())
    }

    /// One chat turn: `Ok(conversation id)` when it was accepted and completed, `Err` with
    /// the status and body when it was refused before the stream.
    async fn chat(&self, message: &str) -> Result<String, (StatusCode, Value)> {
        let response = self
            .client
            .post(format!("{}/ai/chat", self.process.base_url()))
            .header("authorization", format!("ApiKey {KEY}"))
            .json(&json!({"message": message}))
            .send()
            .await
            .unwrap();
        if response.status() != StatusCode::OK {
            let status = response.status();
            return Err((status, response.json().await.unwrap()));
        }
        let events = SseStream::new(response).collect().await;
        let last = events.last().expect("an accepted turn streams events");
        assert_eq!(last.event, "conversation.completed", "{events:#?}");
        Ok(events[0].json()["data"]["conversationId"]
            .as_str()
            .unwrap()
            .to_owned())
    }

    /// The actions of every audit record of the tenant, oldest first.
    async fn audit_ids(&self) -> Vec<String> {
        let (status, page) = self.get("/ai/audit?limit=500").await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let mut ids: Vec<String> = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["id"].as_str().unwrap().to_owned())
            .collect();
        ids.reverse();
        ids
    }
}

impl Drop for Weaver {
    fn drop(&mut self) {
        // Whatever happened, leave no immutable file behind (the folder could not be removed).
        for name in ["weaver.db", "weaver.db-wal"] {
            let _ = Command::new("chattr")
                .arg("-i")
                .arg(self.file(name))
                .status();
        }
    }
}

fn run(program: &str, args: &[&str], file: &Path) {
    let output = Command::new(program).args(args).arg(file).output().unwrap();
    assert!(
        output.status.success(),
        "{program} {args:?} {} failed (it needs root, or CAP_LINUX_IMMUTABLE for chattr, on a \
         file system with the attribute such as ext4, as in CI): {}",
        file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// While the database cannot be written, every write answers 503 `store_unavailable`, reads
/// still answer, and afterwards every acknowledged record is there and writes work again.
async fn refused_while_unwritable_then_recovered(
    weaver: &Weaver,
    make_unwritable: impl FnOnce(),
    make_writable: impl FnOnce(),
) {
    let before = weaver
        .chat("before the fault")
        .await
        .expect("a healthy turn");
    let (status, _) = weaver.set_enablement(true).await;
    assert_eq!(status, StatusCode::OK);
    let acknowledged = weaver.audit_ids().await;
    assert!(acknowledged.len() >= 2, "{acknowledged:?}");

    make_unwritable();
    let (status, body) = weaver.set_enablement(false).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("store_unavailable")),
        "{body}"
    );
    let (status, body) = weaver.chat("during the fault").await.unwrap_err();
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("store_unavailable")),
        "a turn that cannot be recorded is refused before its stream: {body}"
    );
    // Reads answer: the trail holds exactly what was acknowledged.
    assert_eq!(weaver.audit_ids().await, acknowledged);
    let (status, enablement) = weaver.get("/ai/admin/tools").await;
    assert_eq!(status, StatusCode::OK, "{enablement}");

    make_writable();
    let (status, body) = weaver.set_enablement(false).await;
    assert_eq!(status, StatusCode::OK, "writes work again: {body}");
    let after = weaver
        .chat("after the fault")
        .await
        .expect("turns work again");
    let trail = weaver.audit_ids().await;
    assert_eq!(
        trail[..acknowledged.len()],
        acknowledged[..],
        "nothing acknowledged was lost"
    );
    assert!(trail.len() > acknowledged.len());
    // Both conversations read back whole from the journal.
    for id in [before, after] {
        let response = weaver
            .client
            .get(format!("{}/ai/chat/{id}/events", weaver.process.base_url()))
            .header("authorization", format!("ApiKey {KEY}"))
            .send()
            .await
            .unwrap();
        let events = SseStream::new(response).collect().await;
        let sequences: Vec<u64> = events.iter().map(|e| e.sequence()).collect();
        assert_eq!(
            sequences,
            (1..=sequences.len() as u64).collect::<Vec<_>>(),
            "gap-free"
        );
        assert_eq!(events.last().unwrap().event, "conversation.completed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_database_file_is_503_and_nothing_acknowledged_is_lost() {
    let weaver = Weaver::start().await;
    let files = [weaver.file("weaver.db"), weaver.file("weaver.db-wal")];
    refused_while_unwritable_then_recovered(
        &weaver,
        || {
            for file in &files {
                run("chattr", &["+i"], file);
            }
        },
        || {
            for file in &files {
                run("chattr", &["-i"], file);
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_database_file_is_503_and_nothing_acknowledged_is_lost() {
    let weaver = Weaver::start().await;
    let pid = weaver.process.pid().to_string();
    let limit = |fsize: &str| {
        let status = Command::new("prlimit")
            .args(["--pid", &pid, &format!("--fsize={fsize}")])
            .status()
            .unwrap();
        assert!(status.success(), "prlimit --fsize={fsize}");
    };
    // 4 KiB: the first frame of the write-ahead log already ends past it.
    refused_while_unwritable_then_recovered(
        &weaver,
        || limit("4096:unlimited"),
        || limit("unlimited:unlimited"),
    )
    .await;
}
