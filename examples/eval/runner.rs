//! Runs tasks: a fresh in-process Weaver per task (the built-in samples, in memory, the
//! OpenAI-compatible provider pointed at the endpoint through the counting proxy), one chat
//! turn over real HTTP, then the proposals it stored, judged by the task's criteria.

use std::time::{Duration, Instant};

use elsa_ai_abstractions::Permission;
use elsa_ai_server::config::{
    ApiKeyConfig, AuthConfig, LimitsConfig, ProviderConfig, StoreConfig, TenantConfig,
    ToolEntryConfig, ToolsConfig, WeaverConfig,
};
use elsa_ai_server::{CONVERSATION_ID_HEADER, Weaver};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::time::timeout_at;

use super::criteria::{Observation, ToolCall, TurnOutcome};
use super::proxy::CountingProxy;
use super::report::{FailedCriterion, ProposalReport, Report, TaskReport};
use super::tasks::Task;

/// Where the pinned local model listens (llama-server's OpenAI-compatible API).
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8080/v1";

/// The model name sent when none is given; llama-server answers with the model it loaded
/// whatever the name.
pub const DEFAULT_MODEL: &str = "local";

/// How long one task's turn may take unless told otherwise.
pub const DEFAULT_TASK_TIMEOUT: Duration = Duration::from_secs(300);

/// The tenant the tasks run in; it holds the built-in sample workflows.
pub const TENANT: &str = "eval";

/// The API key the evaluator calls Weaver with (every permission, tenant [`TENANT`]).
const KEY: &str = "weaver-eval-key-0123456789abcdef";

/// The proposal tools, off until enabled, that the propose tasks need.
const PROPOSAL_TOOLS: [&str; 3] = [
    "workflow.validateDraft",
    "workflow.proposeCreate",
    "workflow.proposeUpdate",
];

/// Any failure that stops the evaluation (not a task's failure: that is in the report).
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// How to run the evaluation: the endpoint, the model and its sampling, limits.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalOptions {
    /// The OpenAI-compatible API's base URL, up to `/v1`.
    pub base_url: String,
    /// The model (or deployment) name.
    pub model: String,
    /// The environment variable holding the endpoint's API key, if it needs one.
    pub api_key_env: Option<String>,
    /// `chat` (Chat Completions) or `responses`; the provider's default when `None`.
    pub api: Option<String>,
    /// Model requests ending in tool calls per turn (the provider's `max_tool_rounds`).
    pub max_tool_rounds: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// A fixed seed.
    pub seed: Option<i64>,
    /// The most tokens one model request may generate.
    pub max_output_tokens: Option<u32>,
    /// How long one task's turn may take; a turn still running then is cancelled.
    pub task_timeout: Duration,
}

impl EvalOptions {
    /// Options for `model` at `base_url`, everything else at its default.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: None,
            api: None,
            max_tool_rounds: None,
            temperature: None,
            top_p: None,
            seed: None,
            max_output_tokens: None,
            task_timeout: DEFAULT_TASK_TIMEOUT,
        }
    }

    /// The `[provider]` table of Weaver's configuration, pointed at `base_url`.
    fn provider_table(&self, base_url: &str) -> toml::Table {
        let mut table = toml::Table::new();
        let mut set = |key: &str, value: toml::Value| {
            table.insert(key.to_owned(), value);
        };
        set("kind", "openai".into());
        set("base_url", base_url.into());
        set("model", self.model.as_str().into());
        // The task's own deadline ends a turn that takes too long (and cancels it); the
        // provider's per-request timeout only backs it up.
        let request_timeout = self.task_timeout.as_secs().saturating_add(5).min(3600);
        set(
            "request_timeout_s",
            toml::Value::Integer(i64::try_from(request_timeout).unwrap_or(3600)),
        );
        if let Some(variable) = &self.api_key_env {
            set("api_key_env", variable.as_str().into());
        }
        if let Some(api) = &self.api {
            set("api", api.as_str().into());
        }
        if let Some(rounds) = self.max_tool_rounds {
            set("max_tool_rounds", toml::Value::Integer(rounds.into()));
        }
        if let Some(temperature) = self.temperature {
            set("temperature", toml::Value::Float(temperature));
        }
        if let Some(top_p) = self.top_p {
            set("top_p", toml::Value::Float(top_p));
        }
        if let Some(seed) = self.seed {
            set("seed", toml::Value::Integer(seed));
        }
        if let Some(tokens) = self.max_output_tokens {
            set("max_output_tokens", toml::Value::Integer(tokens.into()));
        }
        table
    }

    /// Weaver's configuration for one task: the samples tenant in memory, one key with
    /// every permission, the proposal tools on, the model behind `base_url`.
    fn weaver_config(&self, base_url: &str) -> WeaverConfig {
        WeaverConfig {
            store: StoreConfig {
                memory: true,
                ..StoreConfig::default()
            },
            tenants: vec![TenantConfig {
                id: TENANT.into(),
                workflows: None,
                ..TenantConfig::default()
            }],
            auth: AuthConfig {
                api_keys: vec![ApiKeyConfig {
                    key: Some(KEY.into()),
                    key_env: None,
                    actor: "weaver-eval".into(),
                    tenant: TENANT.into(),
                    // Every permission, so that only the agents and tools limit a task.
                    permissions: Permission::ALL
                        .iter()
                        .map(|p| p.as_str().to_owned())
                        .collect(),
                }],
                ..AuthConfig::default()
            },
            provider: Some(ProviderConfig::OpenAi(self.provider_table(base_url))),
            tools: ToolsConfig {
                entries: PROPOSAL_TOOLS
                    .iter()
                    .map(|name| ToolEntryConfig {
                        name: (*name).to_owned(),
                        enabled: true,
                        tenants: None,
                        agents: None,
                    })
                    .collect(),
                ..ToolsConfig::default()
            },
            limits: LimitsConfig {
                // Nothing runs on after a task: a short grace window stops each server fast.
                grace_window_secs: Some(2),
                ..LimitsConfig::default()
            },
            ..WeaverConfig::default()
        }
    }
}

/// Runs `tasks` one after another and reports on them; `progress` hears of each task as it
/// ends (its index and report).
///
/// # Errors
///
/// When the evaluation cannot run at all: nothing answers at the base URL, the proxy cannot
/// listen, or Weaver does not start with these options (a bad sampling value, a missing API
/// key variable). A task that fails is not an error: the report says so.
pub async fn run(
    tasks: &[Task],
    options: &EvalOptions,
    mut progress: impl FnMut(usize, &TaskReport),
) -> Result<Report, Error> {
    reachable(&options.base_url).await?;
    let proxy = CountingProxy::start(&options.base_url).await?;
    let mut reports = Vec::with_capacity(tasks.len());
    for (index, task) in tasks.iter().enumerate() {
        let report = run_task(task, options, &proxy).await?;
        progress(index, &report);
        reports.push(report);
    }
    Ok(Report::new(&options.base_url, &options.model, reports))
}

/// Checks that something answers HTTP at `base_url` (any status will do: the provider
/// reports a refusal itself, per task), so that a run against a server that is not up stops
/// at once instead of failing every task.
async fn reachable(base_url: &str) -> Result<(), Error> {
    let url = format!("{}/models", base_url.trim_end_matches('/'));
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(60))
        .build()?;
    match client.get(&url).send().await {
        Ok(_) => Ok(()),
        Err(error) => Err(format!(
            "nothing answers at {base_url} ({}); start the model server or pass --base-url",
            with_causes(&error)
        )
        .into()),
    }
}

/// An error with its chain of causes (reqwest's own text leaves out why a request failed).
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let inner_text = inner.to_string();
        if !text.contains(&inner_text) {
            text.push_str(": ");
            text.push_str(&inner_text);
        }
        cause = inner.source();
    }
    text
}

/// What the stream of one turn showed.
struct Turn {
    outcome: TurnOutcome,
    /// Each event's type and `data`.
    events: Vec<(String, Value)>,
    first_event: Option<Duration>,
    first_output: Option<Duration>,
    total: Duration,
}

/// A small client of one task's Weaver.
struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .header("authorization", format!("ApiKey {KEY}"))
    }

    /// Sends the task's message and reads the turn's events until it ends or `limit` passes
    /// (then cancels it).
    async fn chat(&self, task: &Task, limit: Duration) -> Turn {
        let started = Instant::now();
        let deadline = tokio::time::Instant::from_std(started + limit);
        let mut turn = Turn {
            outcome: TurnOutcome::TimedOut,
            events: Vec::new(),
            first_event: None,
            first_output: None,
            total: Duration::ZERO,
        };
        let sent = self
            .request(reqwest::Method::POST, "/ai/chat")
            .json(&task.chat_request())
            .send();
        let response = match timeout_at(deadline, sent).await {
            Err(_) => {
                turn.total = started.elapsed();
                return turn;
            }
            Ok(Err(error)) => {
                turn.outcome = TurnOutcome::Broken {
                    message: with_causes(&error),
                };
                turn.total = started.elapsed();
                return turn;
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            turn.outcome = TurnOutcome::Refused {
                http_status: status.as_u16(),
                body: response.text().await.unwrap_or_default(),
            };
            turn.total = started.elapsed();
            return turn;
        }
        let conversation = response
            .headers()
            .get(CONVERSATION_ID_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let mut stream = response.bytes_stream().eventsource();
        loop {
            let event = match timeout_at(deadline, stream.next()).await {
                Err(_) => {
                    turn.outcome = TurnOutcome::TimedOut;
                    if let Some(conversation) = &conversation {
                        let _ = self
                            .request(
                                reqwest::Method::POST,
                                &format!("/ai/chat/{conversation}/cancel"),
                            )
                            .send()
                            .await;
                    }
                    // The cancelled turn's last events (its failed tool calls, the end).
                    let grace = tokio::time::Instant::now() + Duration::from_secs(10);
                    while let Ok(Some(Ok(event))) = timeout_at(grace, stream.next()).await {
                        let end = record(&mut turn, &event.event, &event.data, started);
                        if end.is_some() {
                            break;
                        }
                    }
                    break;
                }
                Ok(None) => {
                    turn.outcome = TurnOutcome::Broken {
                        message: "the stream ended before the turn did".to_owned(),
                    };
                    break;
                }
                Ok(Some(Err(error))) => {
                    turn.outcome = TurnOutcome::Broken {
                        message: error.to_string(),
                    };
                    break;
                }
                Ok(Some(Ok(event))) => event,
            };
            if let Some(outcome) = record(&mut turn, &event.event, &event.data, started) {
                turn.outcome = outcome;
                break;
            }
        }
        turn.total = started.elapsed();
        turn
    }

    /// The proposal as `GET /ai/proposals/{id}` shows it (an `error` field when it cannot
    /// be read).
    async fn proposal(&self, id: &str) -> Value {
        let read = async {
            let response = self
                .request(reqwest::Method::GET, &format!("/ai/proposals/{id}"))
                .send()
                .await?;
            let status = response.status();
            let body: Value = response.json().await?;
            Ok::<_, reqwest::Error>((status, body))
        };
        match read.await {
            Ok((status, body)) if status.is_success() => body,
            Ok((status, body)) => json!({"id": id, "error": format!("{status}: {body}")}),
            Err(error) => json!({"id": id, "error": with_causes(&error)}),
        }
    }
}

/// Records one event; the turn's outcome when it is the last.
fn record(turn: &mut Turn, kind: &str, data: &str, started: Instant) -> Option<TurnOutcome> {
    let at = started.elapsed();
    turn.first_event.get_or_insert(at);
    if matches!(
        kind,
        "assistant.delta" | "assistant.completed" | "tool.started"
    ) {
        turn.first_output.get_or_insert(at);
    }
    let data = serde_json::from_str::<Value>(data)
        .map(|mut event| event["data"].take())
        .unwrap_or(Value::Null);
    let outcome = match kind {
        "conversation.completed" => Some(TurnOutcome::Completed),
        "conversation.failed" => Some(TurnOutcome::Failed {
            code: data["code"].as_str().unwrap_or("?").to_owned(),
            message: data["error"]["message"]
                .as_str()
                .or_else(|| data["content"].as_str())
                .unwrap_or("")
                .to_owned(),
        }),
        _ => None,
    };
    turn.events.push((kind.to_owned(), data));
    outcome
}

/// Runs one task on a Weaver of its own.
async fn run_task(
    task: &Task,
    options: &EvalOptions,
    proxy: &CountingProxy,
) -> Result<TaskReport, Error> {
    let weaver = Weaver::builder(options.weaver_config(proxy.base_url()))
        .build()
        .await?;
    let listener = Weaver::listen(([127, 0, 0, 1], 0).into())?;
    let client = Client {
        http: reqwest::Client::new(),
        base: format!("http://{}", listener.local_addr()?),
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(weaver.serve(listener, async move {
        let _ = stopped.await;
    }));

    let rounds_before = proxy.model_requests();
    let turn = client.chat(task, options.task_timeout).await;
    let rounds = proxy.model_requests().saturating_sub(rounds_before);

    let mut proposal_ids: Vec<&str> = Vec::new();
    for (kind, data) in &turn.events {
        if kind == "proposal.created"
            && let Some(id) = data["proposalId"].as_str()
            && !proposal_ids.contains(&id)
        {
            proposal_ids.push(id);
        }
    }
    let mut proposals = Vec::with_capacity(proposal_ids.len());
    for id in proposal_ids {
        proposals.push(client.proposal(id).await);
    }

    let _ = stop.send(());
    if let Ok(Ok(Err(error))) = tokio::time::timeout(Duration::from_secs(15), server).await {
        eprintln!(
            "weaver-eval: the server of task {} stopped with {error}",
            task.id
        );
    }

    let observation = observe(&turn, proposals, rounds);
    let failed_criteria = task
        .criteria
        .iter()
        .filter_map(|criterion| {
            criterion
                .check(&observation)
                .err()
                .map(|reason| FailedCriterion {
                    criterion: criterion.clone(),
                    reason,
                })
        })
        .collect::<Vec<_>>();
    let usage = turn
        .events
        .iter()
        .find(|(kind, _)| kind == "conversation.completed")
        .map(|(_, data)| data["usage"].clone())
        .unwrap_or(Value::Null);
    Ok(TaskReport {
        id: task.id.clone(),
        kind: task.kind,
        success: failed_criteria.is_empty(),
        failed_criteria,
        outcome: observation.outcome.clone(),
        rounds,
        prompt_tokens: usage["inputTokens"].as_u64(),
        completion_tokens: usage["outputTokens"].as_u64(),
        time_to_first_event_ms: turn.first_event.map(millis),
        time_to_first_output_ms: turn.first_output.map(millis),
        total_ms: millis(turn.total),
        tool_calls: observation.tool_calls.clone(),
        proposals: observation
            .proposals
            .iter()
            .map(|proposal| {
                let text = |field: &str| proposal[field].as_str().unwrap_or("?").to_owned();
                ProposalReport {
                    id: text("id"),
                    kind: text("kind"),
                    status: text("status"),
                    definition_id: text("definitionId"),
                }
            })
            .collect(),
        answer: observation.answer,
    })
}

/// A failed call's error as `code: message`, the message cut to 200 characters.
fn tool_error(error: &Value) -> Option<String> {
    let code = error["code"].as_str()?;
    Some(match error["message"].as_str() {
        Some(message) => format!("{code}: {}", message.chars().take(200).collect::<String>()),
        None => code.to_owned(),
    })
}

/// What the criteria judge, from the turn's events, its proposals and its model requests.
fn observe(turn: &Turn, proposals: Vec<Value>, rounds: u64) -> Observation {
    let mut answer = Vec::new();
    let mut tool_calls = Vec::new();
    for (kind, data) in &turn.events {
        match kind.as_str() {
            "assistant.completed" => {
                if let Some(text) = data["text"].as_str() {
                    answer.push(text.to_owned());
                }
            }
            "tool.completed" | "tool.failed" => tool_calls.push(ToolCall {
                name: data["toolName"].as_str().unwrap_or("?").to_owned(),
                completed: kind == "tool.completed",
                error: tool_error(&data["error"]),
            }),
            _ => {}
        }
    }
    Observation {
        outcome: Some(turn.outcome.clone()),
        answer: answer.join("\n\n"),
        tool_calls,
        proposals,
        rounds,
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
