//! `examples/module_author.rs` runs: the weaver it builds serves the module's tool over
//! `/mcp`, its agent, and its `acme.Ticket` attachment kind in a chat, over HTTP; a kind no
//! module registered is refused, and the agent's scope holds.

#[allow(dead_code)] // its `main` serves on port 8080; the test serves on a free port
#[path = "../../module_author.rs"]
mod example;

use elsa_ai_server::Weaver;
use elsa_ai_server::config::WeaverConfig;
use serde_json::{Value, json};
use weaver_testkit::mcp::{call_tool, weaver_client};

#[tokio::test]
async fn the_modules_tool_agent_and_attachment_kind_work_over_http() {
    let config = WeaverConfig::from_toml("[store]\nmemory = true").unwrap();
    let weaver = example::weaver(config).await.unwrap();
    let key = weaver.development_keys()[0].key.clone();
    let listener = Weaver::listen(([127, 0, 0, 1], 0).into()).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(weaver.serve(listener, async move {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();
    let get = |path: &str| {
        http.get(format!("{base}{path}"))
            .header("authorization", format!("ApiKey {key}"))
    };
    let chat = |body: Value| {
        http.post(format!("{base}/ai/chat"))
            .header("authorization", format!("ApiKey {key}"))
            .json(&body)
            .send()
    };

    let capabilities: Value = get("/ai/capabilities")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let kinds = capabilities["supportedAttachmentKinds"].as_array().unwrap();
    assert!(kinds.contains(&json!("acme.Ticket")), "{kinds:?}");
    assert!(
        kinds.contains(&json!("WorkflowDefinition")),
        "the built-in kinds stay"
    );
    let tools: Value = get("/ai/tools?agent=acme-helpdesk")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["acme.ticketStatus"],
        "the agent's scope is the module's tool"
    );

    // The tool, governed, through /mcp with the module's agent.
    let mcp = weaver_client(&format!("{base}/mcp?agent=acme-helpdesk"), &key).await;
    let open = call_tool(&mcp, "acme.ticketStatus", json!({"id": "T-1"})).await;
    assert_eq!(open.is_error, Some(false), "{open:?}");
    assert_eq!(open.structured_content.as_ref().unwrap()["status"], "open");
    let unknown = call_tool(&mcp, "acme.ticketStatus", json!({"id": "T-9"})).await;
    assert_eq!(unknown.is_error, Some(true), "{unknown:?}");
    drop(mcp);

    // A chat with the agent and a ticket attached: the module's provider resolves it.
    let ticket = json!({"kind": "acme.Ticket", "referenceId": "T-1"});
    let response =
        chat(json!({"agent": "acme-helpdesk", "message": "Status?", "attachments": [ticket]}))
            .await
            .unwrap();
    assert_eq!(response.status(), 200);
    let stream = response.text().await.unwrap();
    assert!(stream.contains("event: conversation.completed"), "{stream}");
    let audit: Value = get("/ai/audit?limit=200")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let resolved = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|record| record["action"] == "context.resolved")
        .expect("the resolution is audited");
    assert_eq!(resolved["details"]["kind"], "acme.Ticket", "{resolved}");

    // Refusals: an unknown ticket, a kind no module registered, an agent that lacks the kind.
    let refused = |body: Value| async {
        let response = chat(body).await.unwrap();
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        (status, body["code"].as_str().unwrap_or_default().to_owned())
    };
    let missing = json!({"kind": "acme.Ticket", "referenceId": "T-9"});
    assert_eq!(
        refused(json!({"agent": "acme-helpdesk", "message": "?", "attachments": [missing]})).await,
        (404, "not_found".into())
    );
    let unregistered = json!({"kind": "acme.Invoice", "referenceId": "I-1"});
    assert_eq!(
        refused(json!({"agent": "acme-helpdesk", "message": "?", "attachments": [unregistered]}))
            .await,
        (400, "unsupported_attachment_kind".into())
    );
    assert_eq!(
        refused(json!({"message": "?", "attachments": [ticket]})).await,
        (400, "unsupported_attachment".into()),
        "workflow-author does not list acme.Ticket"
    );

    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
