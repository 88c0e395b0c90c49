//! The quickstart: Weaver's whole flow in one process, over its real HTTP API.
//!
//! A Weaver server starts on a free local port with the built-in sample workflows and a
//! scripted provider (no model needed). The user `alice` (every permission) enables the
//! proposal tool, then chats about the sample `sample-http-hello-world` with its definition
//! attached. The provider reads it with `workflow.getDefinition` and proposes a new
//! workflow with `workflow.proposeCreate`. Alice reviews the proposal (diagnostics and graph
//! diff), approves and applies it, and reads the audit trail. Everything is printed.

use std::io::Write;
use std::sync::Arc;

use elsa_ai_scripted::{Script, ScriptStep, ScriptedProvider};
use elsa_ai_server::Weaver;
use elsa_ai_server::config::{ApiKeyConfig, AuthConfig, StoreConfig, TenantConfig, WeaverConfig};
use eventsource_stream::{Event, Eventsource};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// The sample workflow the user asks about.
pub const SAMPLE: &str = "sample-http-hello-world";

/// The workflow the provider proposes.
pub const PROPOSED: &str = "hello-world-console";

const KEY: &str = "quickstart-key-alice-acme";

/// What the quickstart did, for a test to check.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// The streamed events, in order.
    pub events: Vec<Event>,
    /// The proposal as the review screen saw it.
    pub proposal: Value,
    /// The proposal after apply.
    pub applied: Value,
    /// The audit trail, oldest first.
    pub audit: Vec<Value>,
}

/// Any failure of the quickstart, as text.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The script the provider plays: what a model would do with the request.
fn script() -> Script {
    Script::new()
        .delta("Let me read that workflow first. ")
        .tool_call("workflow.getDefinition", json!({"definitionId": SAMPLE}))
        .computed(|turn| {
            let read = turn
                .result_of("workflow.getDefinition")
                .map(|r| r.content.clone())
                .unwrap_or(Value::Null);
            let name = read["name"].as_str().unwrap_or(SAMPLE).to_owned();
            ScriptStep::tool_call(
                "workflow.proposeCreate",
                json!({
                    "draft": {
                        "definitionId": PROPOSED,
                        "name": "Hello world (console)",
                        "description": format!("Writes the greeting of \"{name}\" to the console instead of answering HTTP."),
                        "activities": [
                            {"id": "start", "type": "Elsa.Start", "startsWorkflow": true},
                            {"id": "greet", "type": "Elsa.WriteLine", "inputs": {"Text": {"value": "Hello world!"}}}
                        ],
                        "connections": [{"source": "start", "target": "greet"}]
                    },
                    "rationale": format!("A console variant of \"{name}\", for running without an HTTP trigger."),
                }),
            )
        })
        .computed(|turn| match turn.result_of("workflow.proposeCreate") {
            Some(result) if result.is_success() => ScriptStep::reply(format!(
                "I proposed a new workflow, {PROPOSED}: proposal {} is {}. It changes nothing until you approve and apply it.",
                result.content["proposalId"].as_str().unwrap_or("?"),
                result.content["status"].as_str().unwrap_or("?"),
            )),
            Some(result) => ScriptStep::reply(format!(
                "The proposal was refused: {}",
                result.to_model_text()
            )),
            None => ScriptStep::reply("I could not propose anything."),
        })
}

fn config() -> WeaverConfig {
    WeaverConfig {
        store: StoreConfig {
            memory: true,
            ..StoreConfig::default()
        },
        tenants: vec![TenantConfig {
            id: "acme".into(),
            workflows: None,
            ..TenantConfig::default()
        }],
        auth: AuthConfig {
            api_keys: vec![ApiKeyConfig {
                key: Some(KEY.into()),
                key_env: None,
                actor: "alice".into(),
                tenant: "acme".into(),
                permissions: [
                    "read:workflows",
                    "read:activities",
                    "propose:workflows",
                    "apply:workflows",
                    "admin:ai",
                ]
                .map(String::from)
                .to_vec(),
            }],
            ..AuthConfig::default()
        },
        ..WeaverConfig::default()
    }
}

/// A small client of the API.
struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, Error> {
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .header("authorization", format!("ApiKey {KEY}"));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await?;
        let status = response.status();
        let body: Value = response.json().await?;
        if !status.is_success() {
            return Err(format!("{method} {path} answered {status}: {body}").into());
        }
        Ok(body)
    }
}

/// One line per event: sequence, type and what matters in it.
/// The JSON an event carries.
pub fn data_of(event: &Event) -> Value {
    serde_json::from_str(&event.data).unwrap_or(Value::Null)
}

fn describe(event: &Event) -> String {
    let data = &data_of(event)["data"];
    let detail = match event.event.as_str() {
        "conversation.started" => format!("conversation {}", data["conversationId"]),
        "assistant.delta" => format!("{:?}", data["text"].as_str().unwrap_or("")),
        "assistant.completed" => data["text"].as_str().unwrap_or("").to_owned(),
        "tool.started" => format!(
            "{} {}",
            data["toolName"].as_str().unwrap_or("?"),
            data["arguments"]
        ),
        "tool.completed" | "tool.failed" => format!(
            "{} -> {}",
            data["toolName"].as_str().unwrap_or("?"),
            data.get("outcome").cloned().unwrap_or(Value::Null)
        ),
        "proposal.created" | "proposal.updated" => {
            format!("proposal {} is {}", data["proposalId"], data["status"])
        }
        _ => data.to_string(),
    };
    format!("  #{:<3} {:<24} {detail}", event.id, event.event)
}

/// Runs the quickstart, printing to `out`.
pub async fn run(out: &mut (dyn Write + Send)) -> Result<Outcome, Error> {
    let weaver = Weaver::builder(config())
        .provider(Arc::new(
            ScriptedProvider::new(script()).named("quickstart-script"),
        ))
        .build()
        .await?;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(weaver.serve(listener, async move {
        let _ = stopped.await;
    }));
    writeln!(
        out,
        "Weaver is listening on {base} (scripted provider, built-in sample workflows).\n"
    )?;
    let client = Client {
        http: reqwest::Client::new(),
        base: base.clone(),
    };

    writeln!(
        out,
        "PUT /ai/admin/tools/workflow.proposeCreate/enablement  (proposal tools are off until an administrator enables them)"
    )?;
    client
        .send(
            reqwest::Method::PUT,
            "/ai/admin/tools/workflow.proposeCreate/enablement",
            Some(json!({"enabled": true})),
        )
        .await?;

    let message = "Could you make a console version of this workflow?";
    writeln!(
        out,
        "\nPOST /ai/chat  \"{message}\" with {SAMPLE} attached; the stream:"
    )?;
    let response = client
        .http
        .post(format!("{base}/ai/chat"))
        .header("authorization", format!("ApiKey {KEY}"))
        .json(&json!({
            "message": message,
            "attachments": [{"kind": "WorkflowDefinition", "referenceId": SAMPLE}],
        }))
        .send()
        .await?;
    if !response.status().is_success() {
        return Err(format!("the chat was refused: {}", response.text().await?).into());
    }
    let mut stream = response.bytes_stream().eventsource();
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        let event = event?;
        writeln!(out, "{}", describe(&event))?;
        events.push(event);
    }
    let proposal_id = events
        .iter()
        .find(|e| e.event == "proposal.created")
        .and_then(|e| data_of(e)["data"]["proposalId"].as_str().map(str::to_owned))
        .ok_or("the provider proposed nothing")?;

    let proposal = client
        .send(
            reqwest::Method::GET,
            &format!("/ai/proposals/{proposal_id}"),
            None,
        )
        .await?;
    writeln!(out, "\nGET /ai/proposals/{proposal_id}")?;
    writeln!(
        out,
        "  {} proposal for {}, status {}\n  rationale: {}",
        proposal["kind"].as_str().unwrap_or("?"),
        proposal["definitionId"].as_str().unwrap_or("?"),
        proposal["status"].as_str().unwrap_or("?"),
        proposal["rationale"].as_str().unwrap_or(""),
    )?;
    let diagnostics = proposal["diagnostics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if diagnostics.is_empty() {
        writeln!(out, "  diagnostics: none, the draft is valid")?;
    }
    for diagnostic in &diagnostics {
        writeln!(
            out,
            "  diagnostic: {} {} at {}: {}",
            diagnostic["severity"].as_str().unwrap_or("?"),
            diagnostic["code"].as_str().unwrap_or("?"),
            diagnostic["path"].as_str().unwrap_or("?"),
            diagnostic["message"].as_str().unwrap_or(""),
        )?;
    }
    writeln!(
        out,
        "  graph diff: {}",
        serde_json::to_string_pretty(&proposal["graphDiff"])?.replace('\n', "\n  ")
    )?;

    let approved = client
        .send(
            reqwest::Method::POST,
            &format!("/ai/proposals/{proposal_id}/approve"),
            None,
        )
        .await?;
    writeln!(
        out,
        "\nPOST /ai/proposals/{proposal_id}/approve -> {}",
        approved["status"]
    )?;
    let applied = client
        .send(
            reqwest::Method::POST,
            &format!("/ai/proposals/{proposal_id}/apply"),
            None,
        )
        .await?;
    writeln!(
        out,
        "POST /ai/proposals/{proposal_id}/apply -> {}, wrote {} version {}",
        applied["status"],
        applied["appliedVersion"]["definitionId"],
        applied["appliedVersion"]["version"]
    )?;

    let trail = client
        .send(reqwest::Method::GET, "/ai/audit?limit=200", None)
        .await?;
    let mut audit: Vec<Value> = trail["items"].as_array().cloned().unwrap_or_default();
    audit.reverse();
    writeln!(out, "\nGET /ai/audit  (oldest first)")?;
    for record in &audit {
        writeln!(
            out,
            "  {} {:<6} {:<26} {:<8} {}",
            record["timestamp"]
                .as_str()
                .unwrap_or("")
                .get(11..23)
                .unwrap_or(""),
            record["actorId"].as_str().unwrap_or("?"),
            record["action"].as_str().unwrap_or("?"),
            record["outcome"].as_str().unwrap_or("?"),
            record["summary"].as_str().unwrap_or(""),
        )?;
    }

    let _ = stop.send(());
    server.await??;
    writeln!(
        out,
        "\nDone. Run `cargo run -p elsa-ai-server --bin weaver` for the server itself."
    )?;
    Ok(Outcome {
        events,
        proposal,
        applied,
        audit,
    })
}
