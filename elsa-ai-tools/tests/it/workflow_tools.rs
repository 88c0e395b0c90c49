//! `workflow.getDefinition`, `workflow.listDefinitions` and `activities.catalog`, called
//! through the `ToolGovernor` over the fixture definitions and catalog.

use crate::support;

use elsa_ai_abstractions::Permission;
use elsa_ai_host::testing::governance::TEST_TENANT;
use elsa_ai_tools::names;
use elsa_workflows::{
    ActivityDescriptor, DefinitionQuery, PageRequest, TenantId, VersionOptions,
    WorkflowDefinitionStore,
};
use serde_json::{Value, json};
use support::{GLOBEX, GLOBEX_DEFINITION, World, content, refusal, world};

async fn acme_definitions(
    world: &World,
) -> Vec<std::sync::Arc<elsa_workflows::WorkflowDefinition>> {
    let store: &dyn WorkflowDefinitionStore = world.backend.as_ref();
    let tenant = TenantId::new(TEST_TENANT);
    let rows = store
        .search(
            &tenant,
            &DefinitionQuery {
                page: PageRequest::new(0, PageRequest::MAX_LIMIT),
                ..DefinitionQuery::default()
            },
        )
        .await
        .expect("search");
    let mut definitions = Vec::new();
    for row in rows.items {
        definitions.push(
            store
                .find(&tenant, &row.definition_id, VersionOptions::Latest)
                .await
                .expect("find")
                .expect("listed definitions exist"),
        );
    }
    assert!(
        definitions.len() >= 20,
        "the fixtures hold many definitions"
    );
    definitions
}

fn ids(listing: &Value) -> Vec<String> {
    listing["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| {
            item["definitionId"]
                .as_str()
                .or_else(|| item["id"].as_str())
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn get_definition_returns_the_summary_and_graph_of_every_fixture_definition() {
    let world = world();
    for definition in acme_definitions(&world).await {
        let id = definition.definition_id();
        let result = world
            .call(names::GET_DEFINITION, json!({"definitionId": id}))
            .await;
        assert!(!result.truncated, "{id}: the result fits without clamping");
        let got = content(&result);
        assert_eq!(got["definitionId"], id);
        assert_eq!(got["version"], definition.version());
        assert_eq!(got["name"].as_str(), definition.name(), "{id}");
        assert_eq!(got["activityCount"], definition.activity_count());
        assert_eq!(got["root"]["type"], definition.root().type_name(), "{id}");
        let nodes = definition.activities();
        assert_eq!(got["activities"]["total"], nodes.len() - 1, "{id}");
        let listed = got["activities"]["items"].as_array().expect("items");
        for (item, node) in listed.iter().zip(nodes.iter().skip(1)) {
            assert_eq!(item["id"].as_str(), node.id(), "{id}");
            assert_eq!(item["type"], node.type_name(), "{id}");
        }
        let connections: usize = nodes
            .iter()
            .filter(|n| n.is_flowchart())
            .map(|n| n.connections().len())
            .sum();
        assert_eq!(got["connections"]["total"], connections, "{id}");
        assert_eq!(
            got["variables"]["total"].as_u64().map(|n| n as usize),
            Some(
                definition.variables().len()
                    + nodes
                        .iter()
                        .filter(|n| n.is_container())
                        .map(|n| n.variables().len())
                        .sum::<usize>()
            ),
            "{id}"
        );
    }
}

#[tokio::test]
async fn get_definition_names_types_display_names_and_connections() {
    let world = world();
    let definitions = acme_definitions(&world).await;
    // The fixture with the most connections shows what a graph looks like.
    let richest = definitions
        .iter()
        .max_by_key(|d| d.root().connections().len())
        .expect("definitions");
    let got = content(
        &world
            .call(
                names::GET_DEFINITION,
                json!({"definitionId": richest.definition_id()}),
            )
            .await,
    )
    .clone();
    let first = &richest.root().connections()[0];
    assert_eq!(
        got["connections"]["items"][0]["from"],
        format!("{}:{}", first.source.activity, first.source.port)
    );
    assert_eq!(
        got["connections"]["items"][0]["to"],
        format!("{}:{}", first.target.activity, first.target.port)
    );
    // Display names come from the activity's name, else the designer's display text.
    let (definition, node_id, shown) = definitions
        .iter()
        .find_map(|d| {
            d.activities().into_iter().skip(1).find_map(|n| {
                let shown = n.name().or_else(|| n.display_text())?;
                Some((d, n.id()?.to_owned(), shown.to_owned()))
            })
        })
        .expect("a fixture activity with a display name");
    let got = content(
        &world
            .call(
                names::GET_DEFINITION,
                json!({"definitionId": definition.definition_id()}),
            )
            .await,
    )
    .clone();
    let item = got["activities"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == node_id.as_str())
        .expect("listed");
    assert_eq!(item["displayName"], shown.as_str());
}

#[tokio::test]
async fn get_definition_selects_versions() {
    let world = world();
    let tenant = TenantId::new(TEST_TENANT);
    let base = acme_definitions(&world)
        .await
        .into_iter()
        .find(|d| d.is_published())
        .expect("a published fixture");
    let id = base.definition_id().to_owned();
    let mut draft = elsa_workflows::WorkflowDefinition::clone(&base);
    draft.set_version(base.version() + 1);
    draft.set_published(false);
    draft.set_name(Some("Draft of the next version"));
    draft.set_version_id("next-version");
    world
        .backend
        .insert_definition(&tenant, draft)
        .expect("v+1");

    let latest = world
        .call(names::GET_DEFINITION, json!({"definitionId": id}))
        .await;
    assert_eq!(content(&latest)["version"], base.version() + 1);
    assert_eq!(content(&latest)["name"], "Draft of the next version");
    let published = world
        .call(
            names::GET_DEFINITION,
            json!({"definitionId": id, "version": "published"}),
        )
        .await;
    assert_eq!(content(&published)["version"], base.version());
    let exact = world
        .call(
            names::GET_DEFINITION,
            json!({"definitionId": id, "version": base.version()}),
        )
        .await;
    assert_eq!(content(&exact)["isPublished"], true);
    let missing = world
        .call(
            names::GET_DEFINITION,
            json!({"definitionId": id, "version": 999}),
        )
        .await;
    let (status, code, message) = refusal(&missing);
    assert_eq!((status, code.as_str()), (404, "not_found"));
    assert!(message.contains("version 999"), "{message}");
}

#[tokio::test]
async fn get_definition_refuses_unknown_foreign_and_unpermitted_reads() {
    let world = world();
    let known = acme_definitions(&world).await[0].definition_id().to_owned();
    world
        .assert_standard_refusals(
            names::GET_DEFINITION,
            &Permission::READ_WORKFLOWS,
            |id| json!({"definitionId": id}),
            &known,
            GLOBEX_DEFINITION,
        )
        .await;
    // The other tenant reads its own definition, and none of acme's.
    let globex = elsa_ai_abstractions::AiCaller::new(
        "gina",
        GLOBEX,
        elsa_ai_host::testing::governance::all_permissions(),
    );
    let own = world
        .call_as(
            globex.clone(),
            names::GET_DEFINITION,
            json!({"definitionId": GLOBEX_DEFINITION}),
        )
        .await;
    assert_eq!(content(&own)["name"], "Globex payroll");
    let other = world
        .call_as(
            globex,
            names::GET_DEFINITION,
            json!({"definitionId": known}),
        )
        .await;
    assert_eq!(refusal(&other).0, 404);
}

#[tokio::test]
async fn get_definition_validates_its_arguments() {
    world()
        .assert_invalid_arguments(
            names::GET_DEFINITION,
            &[
                json!({"definitionId": 5}),
                json!({"definitionId": ""}),
                json!({"definitionId": "x", "version": "oldest"}),
                json!({"definitionId": "x", "version": 0}),
                json!({"definitionId": "x", "tenantId": "globex"}),
            ],
        )
        .await;
    // The schema cannot say "one of definitionId and versionId": the tool does.
    let world = world();
    for arguments in [json!({}), json!({"definitionId": "a", "versionId": "b"})] {
        let (status, code, _) = refusal(&world.call(names::GET_DEFINITION, arguments).await);
        assert_eq!((status, code.as_str()), (400, "definition_required"));
    }
    let (status, code, _) = refusal(
        &world
            .call(
                names::GET_DEFINITION,
                json!({"definitionId": "a", "version": 2, "published": true}),
            )
            .await,
    );
    assert_eq!((status, code.as_str()), (400, "conflicting_arguments"));
}

#[tokio::test]
async fn list_definitions_pages_through_everything_with_a_more_available_marker() {
    let world = world();
    let all = acme_definitions(&world).await;
    let first = world
        .call(names::LIST_DEFINITIONS, json!({"limit": 5}))
        .await;
    let page = content(&first);
    assert_eq!(page["total"], all.len());
    assert_eq!(page["returned"], 5);
    assert_eq!(page["truncated"], true);
    assert_eq!(page["nextOffset"], 5);
    let mut seen = ids(page);
    let mut offset = 5;
    loop {
        let next = world
            .call(
                names::LIST_DEFINITIONS,
                json!({"offset": offset, "limit": 50}),
            )
            .await;
        let page = content(&next).clone();
        seen.extend(ids(&page));
        match page["nextOffset"].as_u64() {
            Some(n) => offset = n as usize,
            None => {
                assert_eq!(page["truncated"], false);
                break;
            }
        }
    }
    let mut expected: Vec<String> = all.iter().map(|d| d.definition_id().to_owned()).collect();
    expected.sort();
    seen.sort();
    assert_eq!(seen, expected, "every definition exactly once");
    assert!(!seen.iter().any(|id| id == GLOBEX_DEFINITION));
    // Rows are compact: no graph.
    assert!(page["items"][0].get("activities").is_none());
}

#[tokio::test]
async fn list_definitions_searches_text_and_filters_published() {
    let world = world();
    let all = acme_definitions(&world).await;
    let named = all
        .iter()
        .find_map(|d| d.name().filter(|n| n.len() > 6))
        .expect("a named definition");
    let needle = named[1..named.len() - 1].to_uppercase();
    let found = world
        .call(names::LIST_DEFINITIONS, json!({"text": needle}))
        .await;
    let found = content(&found);
    assert!(
        found["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|row| row["name"] == named),
        "case-insensitive text search finds '{named}'"
    );
    let published = world
        .call(
            names::LIST_DEFINITIONS,
            json!({"filter": "published", "limit": 50}),
        )
        .await;
    let published = content(&published);
    let expected = all.iter().filter(|d| d.is_published()).count();
    assert_eq!(published["total"], expected);
    assert!(
        published["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|row| row["isPublished"] == true)
    );
    let foreign = world
        .call(names::LIST_DEFINITIONS, json!({"text": "payroll"}))
        .await;
    assert_eq!(
        content(&foreign)["total"],
        0,
        "another tenant's definitions are never found"
    );
    let denied = world
        .call_as(
            world.without(&Permission::READ_WORKFLOWS),
            names::LIST_DEFINITIONS,
            json!({}),
        )
        .await;
    assert_eq!(refusal(&denied).0, 403);
    world
        .assert_invalid_arguments(
            names::LIST_DEFINITIONS,
            &[
                json!({"limit": 0}),
                json!({"limit": 51}),
                json!({"filter": "all"}),
                json!({"offset": -1}),
                json!({"version": 0}),
                json!({"published": "yes"}),
            ],
        )
        .await;
}

#[tokio::test]
async fn the_catalog_lists_the_tenants_descriptors_with_inputs_outputs_and_outcomes() {
    let world = world();
    let globex = TenantId::new(GLOBEX);
    let mut secret = ActivityDescriptor::new("Globex.Pay");
    secret.category = Some("Payroll".into());
    world.backend.set_catalog(&globex, vec![secret]);

    let all = world.call(names::ACTIVITIES_CATALOG, json!({})).await;
    let all = content(&all);
    let categories = all["categories"].as_object().expect("categories");
    assert!(categories.len() > 3, "{categories:?}");
    assert!(!categories.contains_key("Payroll"));
    let total: u64 = categories.values().filter_map(Value::as_u64).sum();
    assert_eq!(all["total"], total);
    assert_eq!(all["truncated"], true, "more than one page of descriptors");

    let (category, count) = categories
        .iter()
        .max_by_key(|(_, n)| n.as_u64())
        .expect("a category");
    let by_category = world
        .call(
            names::ACTIVITIES_CATALOG,
            json!({"category": category.to_uppercase(), "limit": 50}),
        )
        .await;
    let by_category = content(&by_category);
    assert_eq!(&by_category["total"], count);
    for row in by_category["items"].as_array().unwrap() {
        assert_eq!(&row["category"], &Value::String(category.clone()));
        assert!(row["type"].is_string() && row["kind"].is_string());
        assert!(!row["outcomes"].as_array().unwrap().is_empty());
    }

    let http = world
        .call(names::ACTIVITIES_CATALOG, json!({"text": "http request"}))
        .await;
    let http = content(&http);
    let row = http["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["type"] == "Elsa.SendHttpRequest")
        .expect("SendHttpRequest matches 'http request'");
    let inputs: Vec<&str> = row["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["name"].as_str())
        .collect();
    assert!(
        inputs.iter().any(|i| i.eq_ignore_ascii_case("url")),
        "{inputs:?}"
    );
    assert!(row["inputs"][0]["type"].is_string());
    assert!(!row["outputs"].as_array().unwrap().is_empty());

    let gina = elsa_ai_abstractions::AiCaller::new(
        "gina",
        GLOBEX,
        elsa_ai_host::testing::governance::all_permissions(),
    );
    let theirs = world
        .call_as(gina, names::ACTIVITIES_CATALOG, json!({}))
        .await;
    let theirs = content(&theirs);
    assert_eq!(theirs["total"], 1);
    assert_eq!(theirs["items"][0]["type"], "Globex.Pay");

    let none = world
        .call(names::ACTIVITIES_CATALOG, json!({"text": "Globex"}))
        .await;
    assert_eq!(content(&none)["total"], 0);
}

#[tokio::test]
async fn the_catalog_needs_read_activities_and_valid_arguments() {
    let world = world();
    let denied = world
        .call_as(
            world.without(&Permission::READ_ACTIVITIES),
            names::ACTIVITIES_CATALOG,
            json!({}),
        )
        .await;
    let (status, code, _) = refusal(&denied);
    assert_eq!((status, code.as_str()), (403, "permission_denied"));
    world
        .assert_invalid_arguments(
            names::ACTIVITIES_CATALOG,
            &[
                json!({"category": ""}),
                json!({"limit": 100}),
                json!({"type": ""}),
                json!({"canStartWorkflow": "yes"}),
                json!({"text": 3}),
            ],
        )
        .await;
}

#[tokio::test]
async fn a_descriptor_is_read_whole_by_type_name_in_the_callers_tenant_only() {
    let world = world();
    let globex = TenantId::new(GLOBEX);
    let mut secret = ActivityDescriptor::new("Globex.Pay");
    secret.category = Some("Payroll".into());
    world.backend.set_catalog(&globex, vec![secret]);

    let http = world
        .call(
            names::ACTIVITIES_GET_DESCRIPTOR,
            json!({"type": "Elsa.SendHttpRequest"}),
        )
        .await;
    let http = content(&http);
    assert_eq!(http["typeName"], "Elsa.SendHttpRequest");
    let inputs = http["inputs"].as_array().expect("inputs");
    let url = inputs
        .iter()
        .find(|i| {
            i["name"]
                .as_str()
                .is_some_and(|n| n.eq_ignore_ascii_case("url"))
        })
        .expect("the Url input");
    assert!(url["type"].is_string(), "{url}");
    assert!(!http["outputs"].as_array().unwrap().is_empty());

    let by_case = world
        .call(
            names::ACTIVITIES_GET_DESCRIPTOR,
            json!({"type": "elsa.sendhttprequest"}),
        )
        .await;
    assert_eq!(content(&by_case)["typeName"], "Elsa.SendHttpRequest");

    // Another tenant's type reads exactly like an unknown one.
    let foreign = refusal(
        &world
            .call(
                names::ACTIVITIES_GET_DESCRIPTOR,
                json!({"type": "Globex.Pay"}),
            )
            .await,
    );
    let unknown = refusal(
        &world
            .call(names::ACTIVITIES_GET_DESCRIPTOR, json!({"type": "No.Such"}))
            .await,
    );
    assert_eq!((foreign.0, foreign.1.as_str()), (404, "not_found"));
    assert_eq!(
        foreign.2.replace("Globex.Pay", "T"),
        unknown.2.replace("No.Such", "T")
    );

    let denied = world
        .call_as(
            world.without(&Permission::READ_ACTIVITIES),
            names::ACTIVITIES_GET_DESCRIPTOR,
            json!({"type": "Elsa.SendHttpRequest"}),
        )
        .await;
    let (status, code, _) = refusal(&denied);
    assert_eq!((status, code.as_str()), (403, "permission_denied"));
    world
        .assert_invalid_arguments(
            names::ACTIVITIES_GET_DESCRIPTOR,
            &[
                json!({"type": ""}),
                json!({"type": 3}),
                json!({"type": "Elsa.WriteLine", "text": "x"}),
                json!({"type": "Elsa.WriteLine", "version": 0}),
            ],
        )
        .await;
    let (status, code, _) = refusal(
        &world
            .call(names::ACTIVITIES_GET_DESCRIPTOR, json!({}))
            .await,
    );
    assert_eq!((status, code.as_str()), (400, "type_required"));
    // Upstream's documents spell it typeName: the same lookup.
    let spelled = world
        .call(
            names::ACTIVITIES_GET_DESCRIPTOR,
            json!({"typeName": "Elsa.SendHttpRequest", "version": 1}),
        )
        .await;
    assert_eq!(content(&spelled)["typeName"], "Elsa.SendHttpRequest");
    assert_eq!(
        content(&spelled)["evidence"][0],
        "descriptor:Elsa.SendHttpRequest@1"
    );
    let (status, code, _) = refusal(
        &world
            .call(
                names::ACTIVITIES_GET_DESCRIPTOR,
                json!({"type": "Elsa.If", "typeName": "Elsa.SendHttpRequest"}),
            )
            .await,
    );
    assert_eq!((status, code.as_str()), (400, "conflicting_arguments"));
}

fn usage_ids(result: &Value) -> Vec<String> {
    let mut ids = ids(result);
    ids.sort();
    ids
}

#[tokio::test]
async fn usages_are_found_by_activity_type_and_by_called_workflow_in_the_callers_tenant_only() {
    let world = world();
    // A Globex workflow that uses a type and calls a workflow Acme has too.
    let globex = TenantId::new(GLOBEX);
    let mut theirs = elsa_workflows::WorkflowDefinition::new_flowchart("globex-caller", "Caller");
    let call = elsa_workflows::Activity::from_json(json!({
        "id": "Call1",
        "type": "Elsa.WriteLine",
        "workflowDefinitionId": "refgraph-child",
    }))
    .unwrap();
    theirs.insert_activity(None, call, None).unwrap();
    world.backend.insert_definition(&globex, theirs).unwrap();

    // What the tool must find, computed from the definitions themselves.
    let expected: Vec<String> = {
        let mut ids: Vec<String> = acme_definitions(&world)
            .await
            .iter()
            .filter(|d| {
                d.activities()
                    .iter()
                    .any(|a| a.type_name().eq_ignore_ascii_case("Elsa.WriteLine"))
            })
            .map(|d| d.definition_id().to_owned())
            .collect();
        ids.sort();
        ids
    };
    assert!(expected.len() > 3, "{expected:?}");
    let by_type = world
        .call(
            names::FIND_USAGES,
            json!({"activityType": "elsa.writeline"}),
        )
        .await;
    let by_type = content(&by_type);
    assert_eq!(by_type["complete"], true);
    assert_eq!(by_type["total"], expected.len());
    if expected.len() <= 50 {
        assert_eq!(usage_ids(by_type), expected);
    }
    assert!(!usage_ids(by_type).contains(&"globex-caller".to_owned()));
    for row in by_type["items"].as_array().unwrap() {
        for activity in row["activities"]["items"].as_array().unwrap() {
            assert!(
                activity["type"]
                    .as_str()
                    .unwrap()
                    .eq_ignore_ascii_case("Elsa.WriteLine")
            );
        }
    }

    // A workflow used as an activity, and one named by Elsa.ExecuteWorkflow's input.
    let as_activity = world
        .call(
            names::FIND_USAGES,
            json!({"workflowDefinitionId": "refgraph-child"}),
        )
        .await;
    assert_eq!(usage_ids(content(&as_activity)), ["refgraph-parent"]);
    let executed = world
        .call(
            names::FIND_USAGES,
            json!({"workflowDefinitionId": "child-with-output"}),
        )
        .await;
    let executed = content(&executed);
    assert_eq!(usage_ids(executed), ["parent-capture-output"]);
    assert_eq!(
        executed["items"][0]["activities"]["items"][0]["id"],
        "ExecuteWorkflow1"
    );

    let none = world
        .call(
            names::FIND_USAGES,
            json!({"activityType": "Globex.Nothing"}),
        )
        .await;
    assert_eq!(content(&none)["total"], 0);

    let denied = world
        .call_as(
            world.without(&Permission::READ_WORKFLOWS),
            names::FIND_USAGES,
            json!({"activityType": "Elsa.WriteLine"}),
        )
        .await;
    let (status, code, _) = refusal(&denied);
    assert_eq!((status, code.as_str()), (403, "permission_denied"));
    world
        .assert_invalid_arguments(
            names::FIND_USAGES,
            &[
                json!({}),
                json!({"activityType": "Elsa.WriteLine", "workflowDefinitionId": "x"}),
                json!({"activityType": ""}),
                json!({"activityType": "  "}),
                json!({"workflowDefinitionId": 3}),
                json!({"text": "x"}),
            ],
        )
        .await;
}

#[tokio::test]
async fn a_definition_is_explained_in_execution_order_in_the_callers_tenant_only() {
    let world = world();
    let explained = world
        .call(
            names::EXPLAIN,
            json!({"definitionId": "parent-capture-output"}),
        )
        .await;
    let explained = content(&explained);
    assert_eq!(explained["definitionId"], "parent-capture-output");
    assert_eq!(explained["activityTypes"]["Elsa.ExecuteWorkflow"], 1);
    let root = &explained["containers"]["items"][0];
    assert_eq!(root["mode"], "sequence");
    let order: Vec<&str> = root["steps"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["ExecuteWorkflow1", "WriteLine1"]);

    // Every fixture flowchart: each child is either a step or unreachable, never both.
    for definition in acme_definitions(&world).await {
        let id = definition.definition_id().to_owned();
        let result = world
            .call(names::EXPLAIN, json!({"definitionId": id}))
            .await;
        let result = content(&result);
        for walk in result["containers"]["items"].as_array().unwrap() {
            let steps: Vec<&Value> = walk["steps"]["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| &s["id"])
                .collect();
            if let Some(unreachable) = walk["unreachable"].as_array() {
                assert!(
                    unreachable.iter().all(|u| !steps.contains(&u)),
                    "{id}: {walk}"
                );
            }
        }
    }

    world
        .assert_standard_refusals(
            names::EXPLAIN,
            &Permission::READ_WORKFLOWS,
            |id| json!({"definitionId": id}),
            "parent-capture-output",
            GLOBEX_DEFINITION,
        )
        .await;
    world
        .assert_invalid_arguments(
            names::EXPLAIN,
            &[
                json!({}),
                json!({"definitionId": ""}),
                json!({"definitionId": "x", "version": 0}),
                json!({"definitionId": "x", "version": "latest"}),
                json!({"definitionId": "x", "text": "y"}),
            ],
        )
        .await;
}
