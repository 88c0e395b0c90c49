//! Grounding as upstream Elsa's spec 012 names it, over real sockets: every catalog name over
//! `/mcp`, the `grounding` block of `/ai/capabilities` per caller, version comparison, the
//! runtime scope rule, `[[tools]]` decisions at start-up, a tenant's own descriptor file, and
//! a change to a workflow whose baseline already carries a finding, end to end.

use std::collections::BTreeSet;

use elsa_ai_server::config::{ApiKeyConfig, StoreConfig, WeaverConfig};
use elsa_ai_server::testing::{ALICE_KEY, BOB_KEY, GINA_KEY, TestServer, two_tenants};
use elsa_ai_server::{SYSTEM_ACTOR, Weaver};
use elsa_ai_tools::names::grounding::CATALOG;
use elsa_workflows::{TenantId, VersionOptions, WorkflowDefinition, WorkflowDefinitionStore};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};
use weaver_testkit::fixture_files;
use weaver_testkit::mcp::{call_tool, weaver_client};
use weaver_testkit::runs::FaultedRun;

/// `carol` in `acme`, with every permission and `analyze:tenant`.
const CAROL_KEY: &str = "test-key-carol-acme-analyst";

/// The faulted sample run: the inventory sync whose `FetchStock` failed.
const FAULTED: &str = "4e8b0d2f6a1c9573";

fn with_analyst(mut config: WeaverConfig) -> WeaverConfig {
    let mut permissions = config.auth.api_keys[0].permissions.clone();
    permissions.push("analyze:tenant".into());
    config.auth.api_keys.push(ApiKeyConfig {
        key: Some(CAROL_KEY.into()),
        key_env: None,
        actor: "carol".into(),
        tenant: "acme".into(),
        permissions,
    });
    config
}

fn structured(result: &CallToolResult) -> &Value {
    result
        .structured_content
        .as_ref()
        .unwrap_or_else(|| panic!("no structured content: {result:?}"))
}

fn text(result: &CallToolResult) -> &str {
    result.content[0].as_text().map_or("", |t| t.text.as_str())
}

/// A draft of a new two-activity workflow, as the proposal tools take it.
fn draft() -> Value {
    json!({
        "definitionId": "grounded-greeting",
        "name": "Grounded greeting",
        "activities": [
            {"id": "start", "type": "Elsa.WriteLine", "inputs": {"text": {"value": "Hello"}}},
            {"id": "end", "type": "Elsa.WriteLine", "inputs": {"text": {"value": "Bye"}}}
        ],
        "connections": [{"source": "start", "target": "end"}]
    })
}

/// Arguments for each catalog name, and the agent it is called under.
fn call_for(name: &str, order_version: i32) -> (&'static str, Value) {
    let author = "workflow-author";
    let diagnostics = "instance-diagnostics";
    let operator = "workflow-operator";
    match name {
        "activities.search" => (author, json!({"query": "http", "take": 5})),
        "activities.getDescriptor" => (author, json!({"typeName": "Elsa.SendHttpRequest"})),
        "workflows.search" => (author, json!({"query": "order"})),
        "workflows.getDefinition" => (
            author,
            json!({"definitionId": "sample-order-approval", "version": 1}),
        ),
        "workflows.getDefinitionGraph" => {
            (author, json!({"definitionId": "sample-order-approval"}))
        }
        "workflows.findUsages" => (author, json!({"activityType": "Elsa.HttpEndpoint"})),
        "workflows.validateDraft" => (author, json!({"draft": draft()})),
        "workflows.proposeCreate" => (
            author,
            json!({"draft": draft(), "rationale": "A greeting for the grounding test."}),
        ),
        "workflows.proposeUpdate" => (
            author,
            json!({
                "definitionId": "sample-order-approval", "baselineVersion": order_version,
                "operations": [{"op": "setDescription", "description": "Grounded."}],
                "rationale": "A clearer description."
            }),
        ),
        "instances.search" => (
            diagnostics,
            json!({"definitionId": "sample-inventory-sync"}),
        ),
        "instances.get" => (diagnostics, json!({"instanceId": FAULTED})),
        "instances.getExecutionHistory" => (diagnostics, json!({"instanceId": FAULTED})),
        "instances.getActivityState" => (
            diagnostics,
            json!({"instanceId": FAULTED, "activityId": "FetchStock"}),
        ),
        "incidents.search" => (
            diagnostics,
            json!({"definitionId": "sample-inventory-sync"}),
        ),
        "incidents.get" => (
            diagnostics,
            json!({"instanceId": FAULTED, "activityId": "FetchStock"}),
        ),
        "instances.proposeRetry" => (
            operator,
            json!({"instanceIds": [FAULTED], "rationale": "A transient fault."}),
        ),
        "instances.proposeCancel" => (
            operator,
            json!({"instanceIds": ["7a1d5e93c04b6f28"], "rationale": "Stuck."}),
        ),
        "instances.proposeRestart" => (
            operator,
            json!({"instanceIds": ["0c6f3e1a9b2d4f57"], "rationale": "Run it again."}),
        ),
        "workflows.proposePublish" | "workflows.proposeUnpublish" | "workflows.proposeDelete" => (
            operator,
            json!({"definitionId": "sample-order-approval", "rationale": "Release work."}),
        ),
        other => panic!("no call written for {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_grounding_name_answers_over_mcp_with_the_envelope() {
    let mut config = two_tenants();
    config.tools = WeaverConfig::from_toml("[tools]\nnames = \"grounding\"\n")
        .unwrap()
        .tools;
    let server = TestServer::start(config).await;
    // Proposal tools are enabled by their grounding names, through the admin API.
    for tool in [
        "workflows.validateDraft",
        "workflows.proposeCreate",
        "workflows.proposeUpdate",
        "instances.proposeRetry",
        "instances.proposeCancel",
        "instances.proposeRestart",
        "workflows.proposePublish",
        "workflows.proposeUnpublish",
        "workflows.proposeDelete",
    ] {
        server.enable_tool(ALICE_KEY, tool).await;
    }
    let acme = TenantId::from("acme");
    let order = server
        .workflows
        .find(&acme, "sample-order-approval", VersionOptions::Latest)
        .await
        .unwrap()
        .unwrap();

    let mut called = BTreeSet::new();
    for agent in [
        "workflow-author",
        "instance-diagnostics",
        "workflow-operator",
    ] {
        let client = weaver_client(&server.url(&format!("/mcp?agent={agent}")), ALICE_KEY).await;
        let listed: BTreeSet<String> = client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect();
        for (name, canonical) in CATALOG {
            let (wanted_agent, arguments) = call_for(name, order.version());
            if wanted_agent != agent {
                continue;
            }
            assert!(
                listed.contains(*name),
                "{name} is offered under grounding names"
            );
            assert!(
                name == canonical || !listed.contains(*canonical),
                "{canonical} is not offered twice"
            );
            let result = call_tool(&client, name, arguments).await;
            assert_eq!(result.is_error, Some(false), "{name}: {}", text(&result));
            let envelope = structured(&result);
            assert!(
                envelope["summary"].as_str().is_some_and(|s| !s.is_empty()),
                "{name}: {envelope}"
            );
            assert!(
                envelope["evidence"]
                    .as_array()
                    .is_some_and(|e| !e.is_empty() && e.iter().all(Value::is_string)),
                "{name}: {envelope}"
            );
            if envelope.get("items").is_some() {
                for field in ["total", "returned", "truncated"] {
                    assert!(envelope.get(field).is_some(), "{name} lacks {field}");
                }
            }
            called.insert(*name);
        }
        client.cancel().await.unwrap();
    }
    assert_eq!(called.len(), CATALOG.len(), "every catalog name was called");

    // /ai/tools lists the offered names, each with the name it also answers to.
    let (_, tools) = server
        .get("/ai/tools?agent=workflow-author", ALICE_KEY)
        .await;
    let graph = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "workflows.getDefinitionGraph")
        .unwrap_or_else(|| panic!("{tools}"));
    assert_eq!(graph["aliases"], json!(["workflow.getDefinitionGraph"]));

    // The audit trail names each tool canonically and says which name the call used.
    let (_, audit) = server
        .get("/ai/audit?actor=alice&limit=200", ALICE_KEY)
        .await;
    let records = audit["items"].as_array().unwrap();
    let graph = records
        .iter()
        .find(|r| r["toolName"] == "workflow.getDefinitionGraph")
        .unwrap_or_else(|| panic!("{audit}"));
    assert_eq!(graph["details"]["calledAs"], "workflows.getDefinitionGraph");
    assert!(
        records.iter().all(|r| r["toolName"]
            .as_str()
            .is_none_or(|t| !t.starts_with("workflows."))),
        "no record is named by a grounding name"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_definition_with_three_versions_compares_any_two() {
    let server = TestServer::start(two_tenants()).await;
    let acme = TenantId::from("acme");
    let mut third = std::sync::Arc::unwrap_or_clone(
        server
            .workflows
            .find(&acme, "sample-order-approval", VersionOptions::Latest)
            .await
            .unwrap()
            .unwrap(),
    );
    assert_eq!(third.version(), 2);
    third.set_version(3);
    third.set_description(Some("Orders above the limit wait for a manager."));
    server.workflows.insert_definition(&acme, third).unwrap();

    let client = weaver_client(&server.url("/mcp"), ALICE_KEY).await;
    let versions = call_tool(
        &client,
        "workflows.listVersions",
        json!({"definitionId": "sample-order-approval"}),
    )
    .await;
    let versions = structured(&versions);
    let numbers: Vec<i64> = versions["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_i64().unwrap())
        .collect();
    assert_eq!(numbers, [1, 2, 3], "{versions}");

    let compared = call_tool(
        &client,
        "workflows.compareVersions",
        json!({"definitionId": "sample-order-approval", "from": 1, "to": 3}),
    )
    .await;
    assert_eq!(compared.is_error, Some(false), "{}", text(&compared));
    let compared = structured(&compared);
    assert_eq!(compared["from"]["version"], 1);
    assert_eq!(compared["to"]["version"], 3);
    assert_eq!(
        compared["evidence"],
        json!([
            "definition:sample-order-approval@1",
            "definition:sample-order-approval@3"
        ])
    );
    let header: Vec<&str> = compared["diff"]["header"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert!(header.contains(&"description"), "{compared}");
    assert!(
        compared["summary"]
            .as_str()
            .unwrap()
            .contains("version 1 to 3"),
        "{compared}"
    );
    // Latest against itself: nothing differs, and the summary says so.
    let same = call_tool(
        &client,
        "workflow.compareVersions",
        json!({"definitionId": "sample-order-approval", "from": "latest"}),
    )
    .await;
    assert!(
        structured(&same)["summary"]
            .as_str()
            .unwrap()
            .contains("do not differ")
    );
    client.cancel().await.unwrap();
}

fn family<'a>(capabilities: &'a Value, name: &str) -> &'a Value {
    capabilities["grounding"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["family"] == name)
        .unwrap_or_else(|| panic!("no {name} family: {capabilities}"))
}

fn reasons(family: &Value) -> Vec<String> {
    family["disabledReasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grounding_block_is_computed_for_each_caller() {
    let server = TestServer::start(two_tenants()).await;
    for tool in [
        "workflow.validateDraft",
        "workflow.proposeCreate",
        "workflow.proposeUpdate",
    ] {
        server.enable_tool(ALICE_KEY, tool).await;
    }

    // An administrator of acme, whose proposal tools are on: every family is available.
    let (_, admin) = server.get("/ai/capabilities", ALICE_KEY).await;
    let names: Vec<&str> = admin["grounding"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["family"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["activities", "workflows", "proposals", "runtime"]);
    for entry in admin["grounding"].as_array().unwrap() {
        assert_eq!(entry["available"], true, "{entry}");
        assert_eq!(entry["enabled"], true, "{entry}");
        assert_eq!(entry["name"], entry["family"]);
        assert_eq!(entry["attachmentKinds"], entry["supportedAttachmentKinds"]);
        assert!(entry.get("disabledReason").is_none(), "{entry}");
        assert!(entry["displayName"].is_string() && entry["description"].is_string());
    }
    // The operational proposal tools are off until enabled, and the block says so.
    let off = reasons(family(&admin, "proposals"));
    assert_eq!(off.len(), 6, "{off:?}");
    assert!(
        off.iter()
            .all(|r| r.contains(".propose") && r.ends_with("not enabled by an administrator")),
        "{off:?}"
    );
    // The samples carry no activity execution records: said, though the tools still run.
    assert_eq!(
        reasons(family(&admin, "runtime")),
        [
            "the tenant's workflow backend keeps no activity execution records: execution \
          history and activity state come from instance documents only"
        ]
    );
    FaultedRun::new("with-records", "2024-05-01T10:00:00Z")
        .seed(&server.workflows, &TenantId::from("acme"));
    let (_, admin) = server.get("/ai/capabilities", ALICE_KEY).await;
    assert!(reasons(family(&admin, "runtime")).is_empty(), "{admin}");
    let runtime = family(&admin, "runtime");
    assert!(
        runtime["toolNames"]
            .as_array()
            .unwrap()
            .contains(&json!("incidents.get")),
        "{runtime}"
    );
    // Studio's fields stay as they were.
    assert_eq!(admin["streaming"], true);
    assert!(admin["supportedAttachmentKinds"].is_array());

    // A reader (read:workflows only): definitions yes, the rest no, each with why.
    let (_, reader) = server.get("/ai/capabilities", BOB_KEY).await;
    assert_eq!(family(&reader, "workflows")["available"], true);
    let activities = family(&reader, "activities");
    assert_eq!(activities["available"], false);
    assert!(
        reasons(activities)
            .iter()
            .any(|r| r.contains("activities.catalog") && r.contains("needs read:activities")),
        "{activities}"
    );
    assert!(
        activities["disabledReason"]
            .as_str()
            .is_some_and(|r| r.contains("read:activities"))
    );
    let runtime = family(&reader, "runtime");
    assert_eq!(runtime["available"], false);
    assert!(
        reasons(runtime)
            .iter()
            .all(|r| r.contains("needs read:workflow-instances")),
        "{runtime}"
    );
    let proposals = family(&reader, "proposals");
    assert_eq!(proposals["available"], false);
    assert!(
        reasons(proposals)
            .iter()
            .any(|r| r.contains("propose:workflows")),
        "{proposals}"
    );

    // An administrator of globex, where nobody enabled the proposal tools.
    let (_, off) = server.get("/ai/capabilities", GINA_KEY).await;
    let proposals = family(&off, "proposals");
    assert_eq!(proposals["available"], false);
    assert_eq!(proposals["toolNames"], json!([]));
    let off_reasons = reasons(proposals);
    assert_eq!(off_reasons.len(), 9, "{off_reasons:?}");
    assert!(
        off_reasons
            .iter()
            .all(|r| r.ends_with("not enabled by an administrator")),
        "{off_reasons:?}"
    );
    assert_eq!(family(&off, "workflows")["available"], true);

    // Under an agent: the author has no runtime tools.
    let (_, author) = server
        .get("/ai/capabilities?agent=workflow-author", ALICE_KEY)
        .await;
    let runtime = family(&author, "runtime");
    assert_eq!(runtime["available"], false);
    assert!(
        reasons(runtime)
            .iter()
            .all(|r| r.contains("not available to agent 'workflow-author'")),
        "{runtime}"
    );
    let (status, _) = server.get("/ai/capabilities?agent=ghost", ALICE_KEY).await;
    assert_eq!(status, reqwest::StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_family_turned_off_by_configuration_exists_for_no_one() {
    let mut config = two_tenants();
    config.grounding = WeaverConfig::from_toml("[grounding]\nruntime = false\n")
        .unwrap()
        .grounding;
    let server = TestServer::start(config).await;
    let (_, capabilities) = server.get("/ai/capabilities", ALICE_KEY).await;
    let runtime = family(&capabilities, "runtime");
    assert_eq!(runtime["available"], false);
    assert_eq!(
        reasons(runtime),
        ["turned off by configuration ([grounding] runtime = false)"]
    );
    let (_, tools) = server
        .get("/ai/tools?agent=instance-diagnostics", ALICE_KEY)
        .await;
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .all(|t| !t["name"].as_str().unwrap().starts_with("instance")),
        "{tools}"
    );
    let client = weaver_client(&server.url("/mcp?agent=instance-diagnostics"), ALICE_KEY).await;
    // The agent names the tool, but no such tool is registered.
    let refused = call_tool(&client, "instance.get", json!({"instanceId": FAULTED})).await;
    assert_eq!(refused.is_error, Some(true));
    assert!(
        text(&refused).contains("tool_not_found"),
        "{}",
        text(&refused)
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_searches_need_a_scope_unless_the_caller_may_analyze_the_tenant() {
    let server = TestServer::start(with_analyst(two_tenants())).await;
    let alice = weaver_client(&server.url("/mcp?agent=instance-diagnostics"), ALICE_KEY).await;
    for tool in ["instances.search", "incidents.search"] {
        let refused = call_tool(&alice, tool, json!({})).await;
        assert_eq!(refused.is_error, Some(true), "{tool}");
        let refusal = text(&refused);
        assert!(
            refusal.contains("search_scope_required"),
            "{tool}: {refusal}"
        );
        assert!(refusal.contains("400"), "{tool}: {refusal}");
        let scoped = call_tool(
            &alice,
            tool,
            json!({"definitionId": "sample-inventory-sync"}),
        )
        .await;
        assert_eq!(scoped.is_error, Some(false), "{tool}: {}", text(&scoped));
    }
    alice.cancel().await.unwrap();

    // analyze:tenant lifts the rule: a tenant-wide search answers.
    let carol = weaver_client(&server.url("/mcp?agent=instance-diagnostics"), CAROL_KEY).await;
    let wide = call_tool(&carol, "instances.search", json!({})).await;
    assert_eq!(wide.is_error, Some(false), "{}", text(&wide));
    assert_eq!(structured(&wide)["total"], 3, "every sample run of acme");
    carol.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_decisions_in_the_configuration_are_applied_once_as_audited_system_changes() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = two_tenants();
    config.store = StoreConfig {
        sqlite: Some(dir.path().join("weaver.db")),
        ..StoreConfig::default()
    };
    config.tools = WeaverConfig::from_toml(
        "[[tools]]\nname = \"workflows.proposeUpdate\"\nenabled = true\ntenants = [\"acme\"]\n\n\
         [[tools]]\nname = \"workflow.validateDraft\"\nenabled = true\nagents = [\"workflow-author\"]\n",
    )
    .unwrap()
    .tools;

    let records = |audit: &Value| -> Vec<Value> {
        audit["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["action"] == "tool.enablement_changed")
            .cloned()
            .collect()
    };
    let server = TestServer::start(config.clone()).await;
    let (_, audit) = server
        .get(&format!("/ai/audit?actor={SYSTEM_ACTOR}"), ALICE_KEY)
        .await;
    let acme = records(&audit);
    assert_eq!(acme.len(), 2, "{audit}");
    let update = acme
        .iter()
        .find(|r| r["toolName"] == "workflow.proposeUpdate")
        .expect("the decision is recorded under the canonical name");
    assert_eq!(update["actorId"], SYSTEM_ACTOR);
    assert_eq!(update["details"]["calledAs"], "workflows.proposeUpdate");
    assert_eq!(update["details"]["after"]["enabled"], true);
    // Only acme got the proposal tool; validateDraft went to both tenants for the author.
    let (_, globex) = server
        .get(&format!("/ai/audit?actor={SYSTEM_ACTOR}"), GINA_KEY)
        .await;
    let globex = records(&globex);
    assert_eq!(globex.len(), 1, "{globex:?}");
    assert_eq!(globex[0]["toolName"], "workflow.validateDraft");
    assert_eq!(globex[0]["details"]["agent"], "workflow-author");
    let (_, tools) = server
        .get("/ai/tools?agent=workflow-author", ALICE_KEY)
        .await;
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "workflow.proposeUpdate")
    );
    server.shutdown().await.unwrap();

    // A restart finds the decisions already made: nothing new is recorded.
    let again = TestServer::start(config.clone()).await;
    let (_, audit) = again
        .get(&format!("/ai/audit?actor={SYSTEM_ACTOR}"), ALICE_KEY)
        .await;
    assert_eq!(records(&audit).len(), 2, "{audit}");
    again.shutdown().await.unwrap();

    // A name no tool answers to stops start-up.
    config.tools.entries[0].name = "workflows.proposeArchive".into();
    let error = Weaver::builder(config).build().await.unwrap_err();
    assert!(
        error.to_string().contains("workflows.proposeArchive"),
        "{error}"
    );
}

/// Elsa Server's descriptor answer for a tenant whose server has one custom activity.
fn descriptors() -> Value {
    let mut items: Vec<Value> = ["Elsa.Flowchart", "Elsa.Start", "Elsa.WriteLine"]
        .iter()
        .map(|t| {
            json!({"typeName": t, "name": t, "version": 1, "kind": "Action",
                        "category": "Primitives", "outcomes": ["Done"], "inputs": [],
                        "outputs": [], "isBrowsable": true})
        })
        .collect();
    items.push(json!({
        "typeName": "Acme.SendInvoice", "namespace": "Acme", "name": "SendInvoice",
        "version": 1, "kind": "Task", "category": "Billing", "displayName": "Send invoice",
        "outcomes": ["Done"], "isBrowsable": true,
        "inputs": [{"name": "Customer", "typeName": "String", "isRequired": true}],
        "outputs": [{"name": "InvoiceId", "typeName": "String"}]
    }));
    json!({"items": items, "count": items.len()})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_with_its_own_descriptor_file_validates_against_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("descriptors.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&descriptors()).unwrap()).unwrap();
    let mut config = two_tenants();
    config.tenants[0].activities = Some(file.clone());
    let server = TestServer::start(config.clone()).await;

    let client = weaver_client(&server.url("/mcp"), ALICE_KEY).await;
    let search = call_tool(&client, "activities.search", json!({})).await;
    let search = structured(&search);
    assert_eq!(search["total"], 4, "only the file's descriptors: {search}");
    let custom = call_tool(
        &client,
        "activities.search",
        json!({"type": "Acme", "inputName": "customer"}),
    )
    .await;
    assert_eq!(
        structured(&custom)["items"][0]["type"],
        "Acme.SendInvoice",
        "{}",
        text(&custom)
    );
    // Globex keeps the built-in catalog.
    let gina = weaver_client(&server.url("/mcp"), GINA_KEY).await;
    let builtin = call_tool(&gina, "activities.search", json!({"type": "Acme"})).await;
    assert_eq!(structured(&builtin)["total"], 0);
    gina.cancel().await.unwrap();

    // A draft using the custom activity passes; one using an Elsa type the server lacks does not.
    server
        .enable_tool(ALICE_KEY, "workflow.validateDraft")
        .await;
    let invoice = json!({"draft": {
        "definitionId": "invoice", "name": "Invoice",
        "activities": [
            {"id": "start", "type": "Elsa.Start"},
            {"id": "send", "type": "Acme.SendInvoice", "inputs": {"Customer": {"value": "ACME"}}}
        ],
        "connections": [{"source": "start", "target": "send"}]
    }});
    let passed = call_tool(&client, "workflows.validateDraft", invoice).await;
    assert_eq!(structured(&passed)["valid"], true, "{}", text(&passed));
    let http = json!({"draft": {
        "definitionId": "fetch", "name": "Fetch",
        "activities": [{"id": "get", "type": "Elsa.SendHttpRequest"}], "connections": []
    }});
    let failed = call_tool(&client, "workflows.validateDraft", http).await;
    assert_eq!(structured(&failed)["valid"], false, "{}", text(&failed));
    client.cancel().await.unwrap();
    server.shutdown().await.unwrap();

    // A file that does not parse stops start-up, naming the file and where.
    std::fs::write(&file, "{\"items\": [\n  {\"typeName\": \"Acme.X\",}\n]}").unwrap();
    let error = Weaver::builder(config.clone()).build().await.unwrap_err();
    let message = error.to_string();
    assert!(message.contains(&file.display().to_string()), "{message}");
    assert!(message.contains("line 2"), "{message}");
    std::fs::write(&file, r#"{"items": [{"typeName": 5}]}"#).unwrap();
    let message = Weaver::builder(config)
        .build()
        .await
        .unwrap_err()
        .to_string();
    assert!(message.contains("$.items[0]"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_to_a_workflow_whose_baseline_has_a_finding_is_validated_approved_and_applied() {
    let server = TestServer::start(two_tenants()).await;
    let fanout = fixture_files("definitions")
        .into_iter()
        .find(|path| path.to_string_lossy().contains("fanout-flowchart"))
        .expect("the Elsa docs' fan-out sample");
    let definition = WorkflowDefinition::from_slice(&std::fs::read(fanout).unwrap()).unwrap();
    let id = definition.definition_id().to_owned();
    let acme = TenantId::from("acme");
    server
        .workflows
        .insert_definition(&acme, definition)
        .unwrap();

    // The model is told about the type the catalog lacks when it reads the workflow.
    let client = weaver_client(&server.url("/mcp"), ALICE_KEY).await;
    let read = call_tool(
        &client,
        "workflows.getDefinition",
        json!({"definitionId": id}),
    )
    .await;
    let read = structured(&read);
    assert!(
        read["warnings"][0]
            .as_str()
            .is_some_and(|w| w.contains("'Elsa.Join'") && w.contains("join-all")),
        "{read}"
    );
    let join = read["activities"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == "join-all")
        .unwrap();
    assert_eq!(join["notInCatalog"], true);
    client.cancel().await.unwrap();

    // The demo provider proposes a clearer description: Validated, with one warning.
    let (proposal, _) = server.demo_proposal(ALICE_KEY, &id).await;
    let (_, stored) = server
        .get(&format!("/ai/proposals/{proposal}"), ALICE_KEY)
        .await;
    assert_eq!(stored["status"], "Validated", "{stored}");
    let blocking: Vec<&Value> = stored["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "Error")
        .collect();
    assert!(blocking.is_empty(), "{blocking:?}");
    let predating: Vec<&Value> = stored["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| {
            w.as_str()
                .is_some_and(|w| w.contains("predates this proposal"))
        })
        .collect();
    assert_eq!(predating.len(), 1, "{stored}");

    for action in ["approve", "apply"] {
        let (status, body) = server.proposal_action(ALICE_KEY, &proposal, action).await;
        assert_eq!(status, reqwest::StatusCode::OK, "{action}: {body}");
    }
    let applied = server
        .workflows
        .find(&acme, &id, VersionOptions::Latest)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(applied.version(), 2);
    assert!(
        applied
            .activities()
            .iter()
            .any(|a| a.type_name() == "Elsa.Join")
    );
}
