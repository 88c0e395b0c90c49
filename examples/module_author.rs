//! A module's tool, agent and attachment kind on a running weaver (tests/it/module_author.rs runs it).
use elsa_ai_abstractions::*;
use elsa_ai_server::{StartupError, Weaver, config::WeaverConfig};
use serde_json::{Value, json};

fn ticket(id: &Value) -> Result<Value, AiError> {
    let open = matches!(id.as_str(), Some("T-1" | "T-2"));
    let found = open.then(|| json!({"ticket": id, "status": "open"}));
    found.ok_or_else(|| AiError::not_found(format!("ticket {id}")))
}

/// A weaver with the module: tool `acme.ticketStatus`, kind `acme.Ticket`, agent `acme-helpdesk`.
pub async fn weaver(config: WeaverConfig) -> Result<Weaver, StartupError> {
    let kind = AttachmentKind::module("acme.Ticket").expect("a namespaced name");
    let read = vec![Permission::READ_WORKFLOWS];
    let tool = AiToolDefinition::read_only("acme.ticketStatus", "A ticket's status", read.clone());
    Weaver::builder(config)
        .tool(tool_fn(tool, |c| async move { ticket(&c.arguments["id"]) }))
        .context_provider(context_provider_fn(kind.clone(), |r| async move {
            let content = ticket(&json!(r.attachment.reference_id))?;
            Ok(AiResolvedContext::new(&r.attachment, "A ticket", content))
        }))
        .agent(AiAgentDefinition {
            allowed_tools: vec!["acme.ticketStatus".into()],
            allowed_context_providers: vec![kind],
            permissions: read,
            ..AiAgentDefinition::new("acme-helpdesk", "Answer about the attached tickets.")
        })
        .build()
        .await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let weaver = weaver(WeaverConfig::from_toml("[store]\nmemory = true")?).await?;
    println!("port 8080, ApiKey {}", weaver.development_keys()[0].key);
    let listener = Weaver::listen("127.0.0.1:8080".parse()?)?;
    Ok(weaver.serve(listener, std::future::pending()).await?)
}
