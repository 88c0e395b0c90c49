use std::sync::Arc;
use async_trait::async_trait;
use elsa_ai_copilot::testing::*;
use github_copilot_sdk::*;
use github_copilot_sdk::handler::{PermissionHandler, PermissionResult};
use github_copilot_sdk::tool::ToolHandler;
use serde_json::json;

struct Echo;
#[async_trait]
impl ToolHandler for Echo {
    async fn call(&self, inv: ToolInvocation) -> std::result::Result<ToolResult, Error> {
        eprintln!("TOOL CALLED: {} {} {}", inv.tool_call_id, inv.tool_name, inv.arguments);
        Ok(ToolResult::Expanded(ToolResultExpanded::new("{\"definitionId\":\"wf-1\"}", "success")))
    }
}
struct Perm;
#[async_trait]
impl PermissionHandler for Perm {
    async fn handle(&self, _s: SessionId, _r: RequestId, _d: PermissionRequestData) -> PermissionResult {
        PermissionResult::approve_once()
    }
}
fn tool(name: &str) -> Tool {
    let mut t = Tool::new(name).with_description("Reads").with_handler(Arc::new(Echo));
    t.parameters = github_copilot_sdk::tool::tool_parameters(json!({"type":"object","properties":{"id":{"type":"string"}}}));
    t
}
async fn start(home: &std::path::Path) -> Client {
    let mut opts = ClientOptions::default();
    opts.program = CliProgram::Path("/work/main/tools/copilot-cli/node_modules/@github/copilot-linux-x64/copilot".into());
    opts.base_directory = Some(home.to_path_buf());
    opts.use_logged_in_user = Some(false);
    opts.disable_client_telemetry = true;
    opts.mode = ClientMode::Empty;
    opts.transport = Transport::Stdio;
    Client::start(opts).await.unwrap()
}
fn provider(url: &str) -> ProviderConfig {
    let mut provider = ProviderConfig::default();
    provider.provider_type = Some("openai".into());
    provider.base_url = url.into();
    provider.bearer_token = Some("sk-test-123".into());
    provider
}
async fn run(session: &session::Session, msg: &str) {
    let mut events = session.subscribe();
    session.send(msg).await.unwrap();
    loop {
        match tokio::time::timeout(std::time::Duration::from_secs(60), events.recv()).await {
            Ok(Ok(ev)) => {
                if matches!(ev.event_type.as_str(), "assistant.message" | "session.idle" | "session.error" | "tool.execution_complete") {
                    let d = ev.data.to_string();
                    eprintln!("EVENT {} {}", ev.event_type, &d[..d.len().min(300)]);
                }
                if ev.event_type == "session.idle" { break; }
            }
            Ok(Err(e)) => { eprintln!("recv err {e:?}"); break; }
            Err(_) => { eprintln!("timeout"); break; }
        }
    }
}

#[tokio::main]
async fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let server = ScriptedModelServer::start([ModelReply::Text("first".into()), ModelReply::Text("second".into())]).await?;
    let home = tempfile::tempdir()?;
    let client = start(home.path()).await;
    let sid = SessionId::new("weaver-test-2");
    let mut config = SessionConfig::default();
    config.session_id = Some(sid.clone());
    config.model = Some("gpt-4.1".into());
    config.streaming = Some(true);
    config.provider = Some(provider(&server.base_url()));
    config.available_tools = Some(vec![]);
    config.permission_handler = Some(Arc::new(Perm));
    let session = client.create_session(config).await?;
    run(&session, "one").await;
    session.disconnect().await?;
    let mut rc = ResumeSessionConfig::new(sid.clone());
    rc.model = Some("gpt-4.1".into());
    rc.streaming = Some(true);
    rc.provider = Some(provider(&server.base_url()));
    rc.available_tools = Some(vec![]);
    rc.permission_handler = Some(Arc::new(Perm));
    let session = client.resume_session(rc).await?;
    let mut events = session.subscribe();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    while let Ok(Ok(ev)) = tokio::time::timeout(std::time::Duration::from_millis(100), events.recv()).await {
        eprintln!("BOOT {} {}", ev.event_type, ev.data.to_string().chars().take(150).collect::<String>());
    }
    let id = session.send("two").await?;
    eprintln!("SENT id {id}");
    loop {
        match tokio::time::timeout(std::time::Duration::from_secs(30), events.recv()).await {
            Ok(Ok(ev)) => {
                eprintln!("EV {} {}", ev.event_type, ev.data.to_string().chars().take(150).collect::<String>());
                if ev.event_type == "session.idle" { break; }
            }
            _ => break,
        }
    }
    client.stop().await.ok();
    Ok(())
}
