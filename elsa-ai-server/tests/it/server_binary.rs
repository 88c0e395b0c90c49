//! The `weaver` server as a user meets it: the configuration file of issue 7 exactly as
//! written, `weaver --help`, the binary starting with no configuration at all, and the
//! binary's Copilot CLI (the pinned real one), which inherits none of weaver's secrets and
//! dies with weaver.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use elsa_ai_copilot::testing::{
    child_processes, pinned_cli, process_environment, running, stopped_within,
};
use elsa_ai_server::Weaver;
use elsa_ai_server::config::{REFERENCE, WeaverConfig};
use elsa_ai_server::testing::TestServer;
use elsa_workflows::{DefinitionQuery, TenantId, WorkflowDefinitionStore};
use reqwest::StatusCode;
use serde_json::json;
use weaver_testkit::mcp::npm_bin;
use weaver_testkit::model_server::{ModelReply, ScriptedModelServer};
use weaver_testkit::process::{free_loopback_address, weaver_command};

/// The configuration file of issue 7, verbatim.
const ISSUE_CONFIG: &str = r#"listen = "127.0.0.1:8080"
[store]
sqlite = "weaver.db"            # or: postgres = "postgres://user@host/db"
[[tenants]]
id = "acme"
workflows = "data/acme"         # folder of Elsa 3 definition / instance JSON files
[[auth.api_keys]]
key_env = "ACME_KEY"            # or: key = "..." ; the key is sent as `Authorization: ApiKey <key>`
actor = "alice"
tenant = "acme"
permissions = ["read:workflows", "read:workflow-instances", "read:activities", "propose:workflows", "apply:workflows", "admin:ai"]
[provider]
kind = "demo"                   # demo | copilot (later: openai)
"#;

const ACME_KEY: &str = "acme-key-from-the-environment";

/// Copies the fixture definitions and instances (by listing their folders) into `dir`.
fn copy_fixtures(dir: &Path) -> usize {
    let mut copied = 0;
    for folder in ["definitions", "instances"] {
        let target = dir.join(folder);
        std::fs::create_dir_all(&target).unwrap();
        for file in weaver_testkit::fixture_files(folder) {
            std::fs::copy(&file, target.join(file.file_name().unwrap())).unwrap();
            copied += 1;
        }
    }
    copied
}

#[tokio::test]
async fn the_issue_configuration_works_exactly_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weaver.toml");
    std::fs::write(&path, ISSUE_CONFIG).unwrap();
    assert!(copy_fixtures(&dir.path().join("data/acme")) > 0);

    let config = WeaverConfig::load(&path).unwrap();
    assert_eq!(config.listen_addr().unwrap().to_string(), "127.0.0.1:8080");
    assert_eq!(config.store.sqlite, Some(dir.path().join("weaver.db")));
    assert_eq!(
        config.tenants[0].workflows,
        Some(dir.path().join("data/acme"))
    );
    assert_eq!(config.provider.as_ref().unwrap().kind(), "demo");

    // Without the key's variable the server refuses to start, naming the variable only.
    let error = Weaver::builder(config.clone())
        .env(|_| None)
        .build()
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("ACME_KEY"), "{error}");

    let server = TestServer::start_with(
        Weaver::builder(config).env(|name| (name == "ACME_KEY").then(|| ACME_KEY.to_owned())),
    )
    .await;
    let (status, capabilities) = server.get("/ai/capabilities", ACME_KEY).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(capabilities["provider"]["name"], "demo");
    assert_eq!(capabilities["persistence"]["store"], "sqlite");
    assert!(
        dir.path().join("weaver.db").is_file(),
        "the SQLite file beside the configuration"
    );

    // The tenant serves the folder's workflows: the demo reads one of them.
    let listed = server
        .workflows
        .search(&TenantId::new("acme"), &DefinitionQuery::default())
        .await
        .unwrap();
    assert!(listed.total > 0, "the folder's definitions were loaded");
    let definition = &listed.items[0].definition_id;
    let events = server
        .chat(
            ACME_KEY,
            &json!({"message": "What is this?", "attachments": [{"kind": "WorkflowDefinition", "referenceId": definition}]}),
        )
        .await
        .collect()
        .await;
    assert!(
        events.iter().any(|e| e.event == "tool.completed"),
        "{events:#?}"
    );
    assert_eq!(events.last().unwrap().event, "conversation.completed");
    let (status, _) = server.get("/ai/audit", ACME_KEY).await;
    assert_eq!(status, StatusCode::OK, "alice holds admin:ai");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn with_auth_and_no_provider_start_up_refuses() {
    let without_provider = ISSUE_CONFIG
        .split("[provider]")
        .next()
        .unwrap()
        .replace("sqlite = \"weaver.db\"", "memory = true")
        .replace("workflows = \"data/acme\"", "");
    let config = WeaverConfig::from_toml(&without_provider).unwrap();
    assert_eq!(config.provider, None);
    let error = Weaver::builder(config)
        .env(|name| (name == "ACME_KEY").then(|| ACME_KEY.to_owned()))
        .build()
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("[provider]") && error.contains("kind = \"demo\""),
        "the message says how to choose: {error}"
    );
}

/// The `[provider]` section of issue 6, verbatim.
const COPILOT_PROVIDER: &str = r#"[provider]
kind = "copilot"
cli_path = "node_modules/.bin/copilot"   # default: COPILOT_CLI_PATH, then `copilot` on PATH
model = "gpt-4.1"
byok_type = "openai"                      # openai | azure | anthropic, as the SDK supports
base_url = "http://127.0.0.1:11434/v1"
api_key_env = "OPENAI_API_KEY"            # the key is read from this variable, never logged
"#;

#[tokio::test]
async fn the_copilot_provider_section_of_issue_6_builds_the_copilot_provider() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weaver.toml");
    std::fs::write(&path, format!("[store]\nmemory = true\n{COPILOT_PROVIDER}")).unwrap();
    let config = WeaverConfig::load(&path).unwrap();
    assert_eq!(config.provider.as_ref().unwrap().kind(), "copilot");

    let missing = Weaver::builder(config.clone())
        .env(|_| None)
        .build()
        .await
        .unwrap_err()
        .to_string();
    assert!(missing.contains("OPENAI_API_KEY"), "{missing}");

    // Nothing starts until the first turn: building the server only checks the settings.
    let server = TestServer::start_with(Weaver::builder(config).env(|name| match name {
        "OPENAI_API_KEY" => Some("sk-test-not-a-real-key".to_owned()),
        "WEAVER_DEV_KEY" => Some("copilot-config-dev-key".to_owned()),
        _ => None,
    }))
    .await;
    let (status, capabilities) = server
        .get("/ai/capabilities", "copilot-config-dev-key")
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(capabilities["provider"]["name"], "copilot");
    assert_eq!(capabilities["provider"]["model"], "gpt-4.1");
    assert_eq!(capabilities["provider"]["scripted"], false);
    assert!(capabilities["provider"].get("notice").is_none());
    server.shutdown().await.unwrap();
}

#[test]
fn weaver_help_explains_every_setting() {
    let output = Command::new(env!("CARGO_BIN_EXE_weaver"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    for flag in [
        "--config",
        "--listen",
        "--sqlite",
        "--postgres",
        "--provider",
        "--max-body-bytes",
        "--grace-window-secs",
        "--result-budget-bytes",
    ] {
        assert!(help.contains(flag), "--help does not explain {flag}");
    }
    for variable in [
        "WEAVER_CONFIG",
        "WEAVER_LISTEN",
        "WEAVER_SQLITE",
        "WEAVER_POSTGRES",
        "WEAVER_PROVIDER",
        "WEAVER_MAX_BODY_BYTES",
        "WEAVER_GRACE_WINDOW_SECS",
        "WEAVER_RESULT_BUDGET_BYTES",
        "WEAVER_DEV_KEY",
    ] {
        assert!(help.contains(variable), "--help does not name {variable}");
    }
    assert!(
        help.contains(REFERENCE),
        "--help carries the configuration file reference"
    );
    assert!(help.contains("127.0.0.1:8080"));
}

/// Reads a child's output lines on a thread.
fn lines_of(output: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                return;
            }
        }
    });
    receive
}

/// The `weaver` binary running in a folder of its own, with its log (standard output) and
/// standard error read line by line.
struct RunningBinary {
    child: std::process::Child,
    port: u16,
    log: std::sync::mpsc::Receiver<String>,
    stderr: std::sync::mpsc::Receiver<String>,
    dir: tempfile::TempDir,
}

impl RunningBinary {
    /// Starts `weaver` with no configuration file, listening on `host` (a free port), with
    /// `env` added to a environment without WEAVER_* settings.
    fn start(host: &str, env: &[(&str, &str)]) -> Self {
        Self::launch(None, host, env)
    }

    /// Starts `weaver` with `config` as its configuration file (`weaver.toml` in its folder),
    /// listening on 127.0.0.1 (a free port), with `env` added.
    fn with_config(config: &str, env: &[(&str, &str)]) -> Self {
        Self::launch(Some(config), "127.0.0.1", env)
    }

    fn launch(config: Option<&str>, host: &str, env: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = free_loopback_address().port();
        let mut command = weaver_command(
            env!("CARGO_BIN_EXE_weaver").as_ref(),
            dir.path(),
            config,
            &format!("{host}:{port}"),
            env,
        );
        command
            .env("NO_COLOR", "1")
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let log = lines_of(child.stdout.take().unwrap());
        let stderr = lines_of(child.stderr.take().unwrap());
        Self {
            child,
            port,
            log,
            stderr,
            dir,
        }
    }

    /// Waits for a line of `from` that `wanted` accepts, collecting every line read into
    /// `seen`.
    fn wait_for(
        from: &std::sync::mpsc::Receiver<String>,
        seen: &mut Vec<String>,
        wanted: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let line = from
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("the line did not come: {seen:#?}"));
            seen.push(line.clone());
            if wanted(&line) {
                return line;
            }
        }
    }

    /// `GET /ai/capabilities` with `key`, retried until the server answers.
    async fn capabilities(&self, key: &str) -> serde_json::Value {
        let client = reqwest::Client::new();
        let url = format!("http://127.0.0.1:{}/ai/capabilities", self.port);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match client
                .get(&url)
                .header("authorization", format!("ApiKey {key}"))
                .send()
                .await
            {
                Ok(response) if response.status() == StatusCode::OK => {
                    return response.json().await.unwrap();
                }
                _ if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                other => panic!("the server did not answer: {other:?}"),
            }
        }
    }

    /// Stops the server with SIGTERM and returns everything it wrote: (log, stderr).
    fn stop(mut self) -> (Vec<String>, Vec<String>) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let exit = self.child.wait().unwrap();
        assert!(exit.success(), "a graceful stop exits 0: {exit:?}");
        (
            self.log.try_iter().collect(),
            self.stderr.try_iter().collect(),
        )
    }
}

#[tokio::test]
async fn the_binary_starts_with_no_configuration_and_stops_gracefully() {
    let server = RunningBinary::start("127.0.0.1", &[]);
    let mut stderr = Vec::new();
    let announced = RunningBinary::wait_for(&server.stderr, &mut stderr, |line| {
        line.contains("Authorization: ApiKey ")
    });
    let key = announced
        .split_once("Authorization: ApiKey ")
        .unwrap()
        .1
        .trim()
        .to_owned();
    let capabilities = server.capabilities(&key).await;
    assert_eq!(capabilities["provider"]["name"], "demo");
    assert!(capabilities["provider"]["notice"].is_string());
    let mut log = Vec::new();
    RunningBinary::wait_for(&server.log, &mut log, |line| line.contains("listens on"));
    assert!(
        server.dir.path().join("weaver.db").is_file(),
        "the embedded default keeps its data in weaver.db in the working directory"
    );
    let (rest_of_log, rest_of_stderr) = server.stop();
    log.extend(rest_of_log);
    stderr.extend(rest_of_stderr);
    assert!(
        log.iter().any(|l| l.contains("Demo provider")),
        "the demo provider is labelled at start-up: {log:#?}"
    );
    assert!(
        log.iter().any(|l| l.contains("built-in samples")),
        "{log:#?}"
    );
    assert!(
        log.iter()
            .any(|l| l.contains("development key") && l.contains("generated")),
        "the log says a key was made: {log:#?}"
    );
    assert!(
        log.iter().all(|l| !l.contains(&key)),
        "the generated key never goes through the log: {log:#?}"
    );
    assert_eq!(
        stderr.iter().filter(|l| l.contains(&key)).count(),
        1,
        "the key is shown once on standard error: {stderr:#?}"
    );
}

#[tokio::test]
async fn the_value_of_weaver_dev_key_is_never_echoed() {
    const KEY: &str = "chosen-development-key-0001";
    let server = RunningBinary::start("127.0.0.1", &[("WEAVER_DEV_KEY", KEY)]);
    let capabilities = server.capabilities(KEY).await;
    assert_eq!(capabilities["provider"]["name"], "demo");
    let mut log = Vec::new();
    RunningBinary::wait_for(&server.log, &mut log, |line| line.contains("listens on"));
    let (rest_of_log, stderr) = server.stop();
    log.extend(rest_of_log);
    assert!(
        log.iter().any(|l| l.contains("from WEAVER_DEV_KEY")),
        "{log:#?}"
    );
    for line in log.iter().chain(&stderr) {
        assert!(!line.contains(KEY), "the key was echoed: {line}");
    }
}

#[test]
fn without_auth_a_listen_address_that_is_not_loopback_is_refused() {
    let mut server = RunningBinary::start("0.0.0.0", &[]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let exit = loop {
        if let Some(exit) = server.child.try_wait().unwrap() {
            break exit;
        }
        assert!(Instant::now() < deadline, "weaver did not refuse to start");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!exit.success(), "a refusal exits non-zero: {exit:?}");
    let stderr: Vec<String> = server.stderr.iter().collect();
    assert!(
        stderr
            .iter()
            .any(|l| l.contains("[auth]") && l.contains("0.0.0.0")),
        "{stderr:#?}"
    );
    let log: Vec<String> = server.log.iter().collect();
    assert!(
        log.iter()
            .chain(&stderr)
            .all(|l| !l.contains("ApiKey wv-dev-")),
        "no key was made: {log:#?} {stderr:#?}"
    );
}

/// A variable of weaver's environment that is neither allowlisted nor configured anywhere.
const CANARY: &str = "WEAVER_TEST_CANARY_SECRET";
const MODEL_KEY: &str = "weaver-binary-model-key-0123456789";

/// The `weaver` binary with `[provider] kind = "copilot"` against `model`, once it announced
/// that it listens; `alice` holds `ACME_KEY` as `[auth]` API key.
fn start_copilot_weaver(model: &ScriptedModelServer) -> (RunningBinary, String) {
    let cli = pinned_cli().display().to_string().replace('\\', "/");
    let config = format!(
        "[store]\nmemory = true\n\
         [[auth.api_keys]]\nkey_env = \"ACME_KEY\"\nactor = \"alice\"\ntenant = \"acme\"\n\
         permissions = [\"read:workflows\", \"read:workflow-instances\", \"read:activities\"]\n\
         [provider]\nkind = \"copilot\"\ncli_path = \"{cli}\"\nmodel = \"gpt-4.1\"\n\
         byok_type = \"openai\"\nbase_url = \"{}\"\napi_key_env = \"WEAVER_TEST_MODEL_KEY\"\n",
        model.base_url()
    );
    let weaver = RunningBinary::with_config(
        &config,
        &[
            ("ACME_KEY", ACME_KEY),
            ("WEAVER_TEST_MODEL_KEY", MODEL_KEY),
            (CANARY, "canary-value-that-must-not-leak"),
        ],
    );
    let mut log = Vec::new();
    RunningBinary::wait_for(&weaver.log, &mut log, |line| {
        line.contains("Weaver listens on")
    });
    let url = format!("http://127.0.0.1:{}", weaver.port);
    (weaver, url)
}

/// One chat turn over HTTP, read to its end (the stream closes after the terminal event).
async fn chat_turn(url: &str) -> String {
    let response = reqwest::Client::new()
        .post(format!("{url}/ai/chat"))
        .header("authorization", format!("ApiKey {ACME_KEY}"))
        .json(&json!({"message": "Hello?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.text().await.unwrap()
}

/// The Copilot CLI weaver runs: its one child process.
fn cli_of(weaver: &RunningBinary) -> u32 {
    let children = child_processes(weaver.child.id());
    let [cli] = children.as_slice() else {
        panic!("weaver runs exactly the CLI: {children:?}")
    };
    *cli
}

#[tokio::test]
async fn the_copilot_cli_inherits_none_of_weavers_secrets() {
    let model = ScriptedModelServer::start([ModelReply::Text("Hello from the model.".into())])
        .await
        .unwrap();
    let (mut weaver, url) = start_copilot_weaver(&model);
    let stream = chat_turn(&url).await;
    assert!(stream.contains("conversation.completed"), "{stream}");

    let environment = process_environment(cli_of(&weaver));
    let names: Vec<&str> = environment.iter().map(|(name, _)| name.as_str()).collect();
    for secret in [CANARY, "WEAVER_TEST_MODEL_KEY", "ACME_KEY", "RUST_LOG"] {
        assert!(
            !names.contains(&secret),
            "{secret} reached the CLI: {names:?}"
        );
    }
    assert!(
        !environment
            .iter()
            .any(|(_, value)| value.contains(MODEL_KEY) || value.contains(ACME_KEY)),
        "no secret value reached the CLI"
    );
    assert!(names.contains(&"PATH"), "{names:?}");
    weaver.child.kill().unwrap();
    weaver.child.wait().unwrap();
}

#[tokio::test]
async fn the_copilot_cli_dies_with_weaver_when_weaver_is_killed() {
    let model = ScriptedModelServer::start([ModelReply::Text("Hello from the model.".into())])
        .await
        .unwrap();
    let (mut weaver, url) = start_copilot_weaver(&model);
    let stream = chat_turn(&url).await;
    assert!(stream.contains("conversation.completed"), "{stream}");
    let cli = cli_of(&weaver);
    assert!(running(cli));

    // `kill -9`: weaver runs no shutdown code at all.
    weaver.child.kill().unwrap();
    weaver.child.wait().unwrap();
    let stopped = stopped_within(cli, Duration::from_secs(2)).await;
    assert!(stopped.is_some(), "the CLI outlived weaver by 2 s");
    eprintln!("the CLI stopped {stopped:?} after weaver was killed");
}

#[tokio::test]
async fn an_mcp_server_child_starts_from_an_empty_environment_and_dies_with_weaver() {
    let everything = npm_bin("mcp-server-everything").display().to_string();
    let config = format!(
        "[store]\nmemory = true\n\
         [[auth.api_keys]]\nkey_env = \"ACME_KEY\"\nactor = \"alice\"\ntenant = \"acme\"\n\
         permissions = [\"read:workflows\", \"admin:ai\"]\n\
         [provider]\nkind = \"demo\"\n\
         [[mcp.servers]]\nname = \"everything\"\ncommand = \"{everything}\"\nargs = [\"stdio\"]\n\
         secret_env = {{ API_TOKEN = \"MCP_TOKEN\" }}\ntools = [\"echo\"]\n\
         permissions = [\"read:workflows\"]\n"
    );
    let mut weaver = RunningBinary::with_config(
        &config,
        &[
            ("ACME_KEY", ACME_KEY),
            ("MCP_TOKEN", "mcp-token-value-0123456789"),
            (CANARY, "canary-value-that-must-not-leak"),
        ],
    );
    let mut log = Vec::new();
    RunningBinary::wait_for(&weaver.log, &mut log, |line| {
        line.contains("Weaver listens on")
    });
    assert!(
        log.iter()
            .any(|line| line.contains("MCP server 'everything' (stdio): ready")),
        "{log:#?}"
    );
    let capabilities = weaver.capabilities(ACME_KEY).await;
    assert_eq!(capabilities["mcpServers"][0]["state"], "ready");

    let children = child_processes(weaver.child.id());
    let [child] = children.as_slice() else {
        panic!("weaver runs exactly the MCP server: {children:?}")
    };
    let environment = process_environment(*child);
    let names: BTreeSet<&str> = environment.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, BTreeSet::from(["API_TOKEN", "PATH"]), "{names:?}");

    // `kill -9`: weaver runs no shutdown code, the child goes anyway.
    weaver.child.kill().unwrap();
    weaver.child.wait().unwrap();
    let stopped = stopped_within(*child, Duration::from_secs(2)).await;
    assert!(stopped.is_some(), "the MCP server outlived weaver by 2 s");
    eprintln!("the MCP server stopped {stopped:?} after weaver was killed");
}

/// The key of the model server behind the telemetry test's OpenAI-compatible provider.
const TELEMETRY_MODEL_KEY: &str = "telemetry-model-key-0123456789abcdef";
/// The collector's credential in the telemetry test (with a `%`, which must arrive as is).
const TELEMETRY_COLLECTOR_TOKEN: &str = "Bearer otlp-collector-token-%41-0123456789";

/// Telemetry out, as a user configures it: a real `weaver` with `[telemetry] otlp_endpoint`
/// pointing at a stand-in collector, and `metrics_listen`. One chat turn (the model calls a
/// tool, then answers, reporting token usage) reaches the collector as spans (`chat` with
/// its `execute_tool` child, GenAI attributes, `service.name`) whose trace id is the one in
/// `conversation.started` and in every audit record of the turn, and as metrics, flushed
/// when weaver stops, every export carrying the configured headers (the collector's token
/// from the environment). No configured secret is in anything exported or logged.
// The collector must answer while the test thread waits for weaver to exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_reaches_an_otlp_collector_under_the_trace_id_of_its_audit_records() {
    use weaver_testkit::otlp::{OtlpReceiver, ReceivedValue};

    let collector = OtlpReceiver::start().await;
    let model = ScriptedModelServer::start([
        ModelReply::ToolCalls(vec![
            (
                "workflow_getDefinition".into(),
                json!({"definitionId": "sample-order-approval"}),
            ),
            (format!("steal_{ACME_KEY}"), json!({})),
        ]),
        ModelReply::Text("It approves orders.".into()),
    ])
    .await
    .unwrap();
    let metrics_port = free_loopback_address().port();
    let config = format!(
        "[store]\nmemory = true\n\
         [[auth.api_keys]]\nkey_env = \"ACME_KEY\"\nactor = \"alice\"\ntenant = \"acme\"\n\
         permissions = [\"read:workflows\", \"read:workflow-instances\", \"read:activities\", \"admin:ai\"]\n\
         [provider]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"scripted-model\"\n\
         api_key_env = \"TELEMETRY_MODEL_KEY\"\n\
         [telemetry]\notlp_endpoint = \"{}\"\nservice_name = \"weaver-under-test\"\n\
         metrics_listen = \"127.0.0.1:{metrics_port}\"\n\
         headers = {{ \"X-Scope-OrgID\" = \"weaver-ci\" }}\n\
         secret_headers = {{ Authorization = \"OTLP_TOKEN\" }}\n",
        model.base_url(),
        collector.endpoint()
    );
    let weaver = RunningBinary::with_config(
        &config,
        &[
            ("ACME_KEY", ACME_KEY),
            ("TELEMETRY_MODEL_KEY", TELEMETRY_MODEL_KEY),
            ("OTLP_TOKEN", TELEMETRY_COLLECTOR_TOKEN),
        ],
    );
    weaver.capabilities(ACME_KEY).await;
    let url = format!("http://127.0.0.1:{}", weaver.port);
    let client = reqwest::Client::new();

    let response = client
        .post(format!("{url}/ai/chat"))
        .header("authorization", format!("ApiKey {ACME_KEY}"))
        .json(&json!({"message": format!("What does it do? My key is {ACME_KEY}")}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let events = elsa_ai_server::testing::sse::SseStream::new(response)
        .collect()
        .await;
    assert_eq!(
        events.last().map(|e| e.event.as_str()),
        Some("conversation.completed"),
        "{events:#?}"
    );
    let started = events[0].json();
    assert_eq!(events[0].event, "conversation.started");
    let trace = started["data"]["traceId"]
        .as_str()
        .expect("conversation.started names the turn's trace")
        .to_owned();
    assert!(
        trace.len() == 32
            && trace.bytes().all(|b| b.is_ascii_hexdigit())
            && trace != "0".repeat(32),
        "{trace}"
    );
    let conversation = started["conversationId"].as_str().unwrap().to_owned();

    // Every audit record of the turn names the trace, and the trace finds them again.
    let audit = |query: String| {
        let client = client.clone();
        let url = url.clone();
        async move {
            let response = client
                .get(format!("{url}/ai/audit?{query}"))
                .header("authorization", format!("ApiKey {ACME_KEY}"))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            let page: serde_json::Value = response.json().await.unwrap();
            page["items"].as_array().unwrap().clone()
        }
    };
    let records = audit(format!("conversationId={conversation}")).await;
    let actions: Vec<&str> = records
        .iter()
        .map(|r| r["action"].as_str().unwrap())
        .collect();
    for action in ["prompt.submitted", "tool.invoked", "turn.completed"] {
        assert!(actions.contains(&action), "{action} in {actions:?}");
    }
    for record in &records {
        assert_eq!(record["traceId"], trace.as_str(), "{record:#}");
    }
    assert_eq!(audit(format!("traceId={trace}")).await.len(), records.len());

    // The scrape listener needs no credentials; the API's /metrics still does.
    let scraped = client
        .get(format!("http://127.0.0.1:{metrics_port}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(scraped.status(), StatusCode::OK);
    assert!(
        scraped.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let scraped = scraped.text().await.unwrap();
    assert!(
        scraped.contains("weaver_turns_total{outcome=\"completed\"} 1"),
        "{scraped}"
    );
    assert!(
        scraped.contains(
            "weaver_tool_calls_total{tool=\"workflow.getDefinition\",outcome=\"success\"} 1"
        ),
        "{scraped}"
    );
    let anonymous = client.get(format!("{url}/metrics")).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let other_routes = client
        .get(format!("http://127.0.0.1:{metrics_port}/ai/audit"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        other_routes.status(),
        StatusCode::NOT_FOUND,
        "the scrape listener serves /metrics only"
    );

    // Stopping flushes the last spans and metrics.
    let (log, _) = weaver.stop();
    assert!(
        log.iter().any(|l| l.contains("telemetry: spans to")),
        "start-up says where telemetry goes: {log:#?}"
    );
    assert_eq!(collector.refused(), 0, "every export was OTLP protobuf");
    let spans = collector.spans();
    let chat = spans
        .iter()
        .find(|s| {
            s.trace_id == trace
                && s.attributes
                    .get("gen_ai.operation.name")
                    .map(String::as_str)
                    == Some("chat")
        })
        .unwrap_or_else(|| panic!("the chat span of trace {trace}: {spans:#?}"));
    assert_eq!(chat.name, "chat scripted-model");
    assert_eq!(chat.service_name.as_deref(), Some("weaver-under-test"));
    assert_eq!(chat.attributes["gen_ai.conversation.id"], conversation);
    assert_eq!(chat.attributes["gen_ai.agent.name"], "workflow-author");
    assert_eq!(chat.attributes["gen_ai.request.model"], "scripted-model");
    assert_eq!(chat.attributes["weaver.turn.outcome"], "completed");
    assert!(
        chat.attributes["gen_ai.usage.input_tokens"]
            .parse::<u64>()
            .unwrap()
            > 0
    );
    let tool = spans
        .iter()
        .find(|s| {
            s.attributes.get("gen_ai.tool.name").map(String::as_str)
                == Some("workflow.getDefinition")
        })
        .unwrap_or_else(|| panic!("the execute_tool span: {spans:#?}"));
    assert_eq!(tool.name, "execute_tool workflow.getDefinition");
    assert_eq!(tool.trace_id, trace, "the tool call is in the turn's trace");
    assert_eq!(tool.parent_span_id, chat.span_id);
    assert_eq!(tool.attributes["weaver.tool.outcome"], "success");
    // The model named a tool after a secret: the span carries the name, redacted.
    let stolen = spans
        .iter()
        .find(|s| s.name.starts_with("execute_tool steal_"))
        .unwrap_or_else(|| panic!("the refused call's span: {spans:#?}"));
    assert_eq!(stolen.name, "execute_tool steal_[REDACTED]");
    assert_eq!(stolen.attributes["weaver.tool.outcome"], "denied");
    assert_eq!(stolen.trace_id, trace);

    let metrics = collector.latest();
    let point = |name: &str, labels: &[(&str, &str)]| {
        let labels = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        metrics.get(&(name.to_owned(), labels)).cloned()
    };
    assert_eq!(
        point("weaver.turns", &[("outcome", "completed")]),
        Some(ReceivedValue::Number(1.0)),
        "{metrics:#?}"
    );
    assert_eq!(
        point(
            "weaver.tool.calls",
            &[("tool", "workflow.getDefinition"), ("outcome", "success")]
        ),
        Some(ReceivedValue::Number(1.0))
    );
    assert!(
        point("weaver.tool.denials", &[("step", "findTool")]).is_some(),
        "{metrics:#?}"
    );
    assert!(point("weaver.proposal.transitions", &[("status", "Applied")]).is_some());
    match point("weaver.first_event.duration", &[]) {
        Some(ReceivedValue::Histogram { count, bounds, .. }) => {
            assert_eq!(count, 1);
            assert_eq!(bounds, elsa_ai_host::FIRST_EVENT_BUCKETS);
        }
        other => panic!("the first-event histogram: {other:?}"),
    }
    let tokens = |kind: &str| {
        point(
            "gen_ai.client.token.usage",
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.provider.name", "openai"),
                ("gen_ai.token.type", kind),
            ],
        )
    };
    let units: std::collections::BTreeMap<String, String> = collector
        .points()
        .into_iter()
        .map(|p| (p.metric, p.unit))
        .collect();
    assert_eq!(units["weaver.first_event.duration"], "s");
    assert_eq!(units["gen_ai.client.token.usage"], "{token}");
    assert_eq!(units["weaver.turns"], "{turn}");
    for kind in ["input", "output"] {
        match tokens(kind) {
            Some(ReceivedValue::Histogram { count, sum, .. }) => {
                assert_eq!(count, 1, "one turn");
                assert!(sum > 0.0, "{kind} tokens were counted");
            }
            other => panic!("token usage ({kind}): {other:?} in {metrics:#?}"),
        }
    }

    let received = collector.headers();
    assert!(!received.is_empty());
    for headers in &received {
        assert_eq!(headers["x-scope-orgid"], "weaver-ci");
        assert_eq!(headers["authorization"], TELEMETRY_COLLECTOR_TOKEN);
    }
    for body in collector.bodies() {
        for secret in [ACME_KEY, TELEMETRY_MODEL_KEY, TELEMETRY_COLLECTOR_TOKEN] {
            assert!(
                !body.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "a secret was exported"
            );
        }
    }
    assert!(
        !log.iter().any(|line| line.contains("otlp-collector-token")),
        "the collector's token was logged: {log:#?}"
    );
}

/// A `[telemetry]` that cannot work stops start-up with a message naming the key (and not
/// the password in a URL); a collector that is not there does not stop weaver, which still
/// serves, and still stops promptly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telemetry_settings_are_checked_and_a_missing_collector_is_survived() {
    let mut refused = RunningBinary::with_config(
        "[telemetry]\notlp_endpoint = \"http://otel:hunter2-collector@127.0.0.1:4318\"\n",
        &[],
    );
    let exit = refused.child.wait().unwrap();
    assert!(!exit.success());
    let stderr: Vec<String> = refused.stderr.iter().collect();
    let said = stderr.join("\n");
    assert!(
        said.contains("[telemetry]") && said.contains("otlp_endpoint"),
        "{said}"
    );
    assert!(!said.contains("hunter2-collector"), "{said}");

    // A port nothing listens on.
    let gone = free_loopback_address().port();
    let weaver = RunningBinary::with_config(
        &format!(
            "[store]\nmemory = true\n[telemetry]\notlp_endpoint = \"http://127.0.0.1:{gone}\"\n\
             metrics_interval_secs = 1\n"
        ),
        &[("WEAVER_DEV_KEY", "telemetry-dev-key-0001")],
    );
    let capabilities = weaver.capabilities("telemetry-dev-key-0001").await;
    assert_eq!(capabilities["provider"]["name"], "demo");
    let response = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{}/ai/chat", weaver.port))
        .header("authorization", "ApiKey telemetry-dev-key-0001")
        .json(&json!({"message": "Hello?"}))
        .send()
        .await
        .unwrap();
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains("conversation.completed")
    );
    // Metrics are due every second: at least one export has failed by now.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let stopping = Instant::now();
    let (log, _) = weaver.stop();
    assert!(
        stopping.elapsed() < Duration::from_secs(15),
        "stopped in {:?}: {log:#?}",
        stopping.elapsed()
    );
}
