//! The grounding filters of issue 39 (SPEC §9), called by their upstream names through the
//! `ToolGovernor`: `activities.search`, `workflows.search`, `workflows.findUsages` and
//! `workflows.getDefinitionGraph`, over a tenant whose catalog and definitions are written
//! here, so that every count is known exactly.

use crate::support;

use elsa_ai_abstractions::{AiCaller, AiToolOutcome, AiToolResult, Permission};
use elsa_ai_host::testing::governance::all_permissions;
use elsa_ai_tools::names::grounding;
use elsa_workflows::{ActivityDescriptor, TenantId, WorkflowDefinition};
use serde_json::{Value, json};
use support::{World, content, evidence, refusal, summary, world};

/// The tenant this file writes its catalog and definitions for.
const TENANT: &str = "grounded";

/// The catalog of [`TENANT`], as Elsa Server's descriptor endpoint writes it: eight types,
/// one of them hidden from designers, one in two versions, three a workflow can start with
/// (two triggers and a start node).
fn catalog() -> Vec<ActivityDescriptor> {
    [
        json!({"typeName": "Acme.Flow.Begin", "version": 1, "category": "Flow",
               "kind": "Action", "isStart": true}),
        json!({"typeName": "Acme.Http.Listen", "version": 1, "category": "HTTP",
               "kind": "Trigger",
               "inputs": [{"name": "Path", "typeName": "String"}],
               "outputs": [{"name": "Body", "typeName": "Object"}]}),
        json!({"typeName": "Acme.Http.Listen", "version": 2, "category": "HTTP",
               "kind": "Trigger",
               "inputs": [{"name": "Path", "typeName": "String"}],
               "outputs": [{"name": "Body", "typeName": "Object"},
                           {"name": "Headers", "typeName": "Object"}]}),
        json!({"typeName": "Acme.Internal.Probe", "version": 1, "category": "Diagnostics",
               "kind": "Job", "isBrowsable": false,
               "outputs": [{"name": "Body", "typeName": "Object"}]}),
        json!({"typeName": "Acme.Mail.Send", "version": 1, "category": "Email",
               "kind": "Action",
               "inputs": [{"name": "To", "typeName": "String", "isRequired": true}],
               "outputs": [{"name": "MessageId", "typeName": "String"}]}),
        json!({"typeName": "Elsa.Flowchart", "version": 1, "category": "Flow",
               "isContainer": true}),
        json!({"typeName": "Elsa.SetVariable", "version": 1, "category": "Primitives",
               "inputs": [{"name": "Value", "typeName": "Object"}]}),
        json!({"typeName": "Elsa.WriteLine", "version": 1, "category": "Console",
               "inputs": [{"name": "Text", "typeName": "String"}]}),
    ]
    .iter()
    .map(|value| ActivityDescriptor::from_value(value).expect("a valid descriptor"))
    .collect()
}

/// A flowchart definition document.
fn flowchart(header: Value, activities: Value, connections: Value) -> WorkflowDefinition {
    let mut document = header;
    document["root"] = json!({
        "id": "Flowchart1", "type": "Elsa.Flowchart", "version": 1,
        "activities": activities, "connections": connections,
    });
    WorkflowDefinition::from_value(document).expect("a valid definition")
}

/// A `Done -> In` connection.
fn connect(from: &str, to: &str) -> Value {
    json!({"source": {"activity": from, "port": "Done"}, "target": {"activity": to, "port": "In"}})
}

/// The definitions of [`TENANT`]:
///
/// | id | versions | name | uses | declares |
/// |---|---|---|---|---|
/// | `orders` | 1 (published), 2 (latest) | Order intake | v1: Listen, WriteLine; v2: Begin, Mail.Send | v2: variable Counter, input OrderId |
/// | `order-archive` | 1 | Order intake archive | WriteLine with a Liquid text | |
/// | `invoices` | 1 (published) | Invoices | Mail.Send, `to` in JavaScript, `messageId` bound to Receipt | variable Receipt, input CustomerId, output InvoiceNumber |
/// | `shipping` | 1 | Shipping | Begin, Acme.Legacy.Ship (not in the catalog), WriteLine | variable Parcel, input Address, output TrackingCode |
fn definitions() -> Vec<WorkflowDefinition> {
    let literal = |text: &str| json!({"typeName": "String", "expression": {"type": "Literal", "value": text}});
    vec![
        flowchart(
            json!({"definitionId": "orders", "id": "orders-v1", "version": 1,
                   "name": "Order intake", "isPublished": true}),
            json!([
                {"id": "Listen1", "type": "Acme.Http.Listen", "version": 1, "canStartWorkflow": true,
                 "path": literal("/orders")},
                {"id": "Log1", "type": "Elsa.WriteLine", "version": 1, "text": literal("received")},
            ]),
            json!([connect("Listen1", "Log1")]),
        ),
        flowchart(
            json!({"definitionId": "orders", "id": "orders-v2", "version": 2,
                   "name": "Order intake", "isPublished": false,
                   "variables": [{"id": "v-counter", "name": "Counter", "typeName": "Int32"}],
                   "inputs": [{"name": "OrderId", "type": "String"}]}),
            json!([
                {"id": "Begin1", "type": "Acme.Flow.Begin", "version": 1},
                {"id": "Notify1", "type": "Acme.Mail.Send", "version": 1, "to": literal("ops@example.com")},
            ]),
            json!([connect("Begin1", "Notify1")]),
        ),
        flowchart(
            json!({"definitionId": "order-archive", "id": "order-archive-v1", "version": 1,
                   "name": "Order intake archive"}),
            json!([
                {"id": "Log1", "type": "Elsa.WriteLine", "version": 1,
                 "text": {"typeName": "String", "expression": {"type": "Liquid", "value": "{{ Input.OrderId }}"}}},
            ]),
            json!([]),
        ),
        flowchart(
            json!({"definitionId": "invoices", "id": "invoices-v1", "version": 1,
                   "name": "Invoices", "isPublished": true,
                   "variables": [{"id": "v-receipt", "name": "Receipt", "typeName": "String"}],
                   "inputs": [{"name": "CustomerId", "type": "String"}],
                   "outputs": [{"name": "InvoiceNumber", "type": "String"}]}),
            json!([
                {"id": "Send1", "type": "Acme.Mail.Send", "version": 1,
                 "to": {"typeName": "String", "expression": {"type": "JavaScript", "value": "getInput('CustomerId') + '@example.com'"}},
                 "messageId": {"typeName": "String", "memoryReference": {"id": "v-receipt"}}},
            ]),
            json!([]),
        ),
        flowchart(
            json!({"definitionId": "shipping", "id": "shipping-v1", "version": 1,
                   "name": "Shipping",
                   "variables": [{"id": "v-parcel", "name": "Parcel", "typeName": "Object"}],
                   "inputs": [{"name": "Address", "type": "String"}],
                   "outputs": [{"name": "TrackingCode", "type": "String"}]}),
            json!([
                {"id": "Start1", "type": "Acme.Flow.Begin", "version": 1, "name": "Begin"},
                {"id": "Ship1", "type": "Acme.Legacy.Ship", "version": 1,
                 "metadata": {"displayText": "Hand to the carrier"}},
                {"id": "Log1", "type": "Elsa.WriteLine", "version": 1, "name": "LogShipped",
                 "text": literal("shipped")},
            ]),
            json!([connect("Start1", "Ship1"), connect("Ship1", "Log1")]),
        ),
    ]
}

/// The shared governed world, with [`TENANT`]'s catalog and definitions added.
fn grounded_world() -> World {
    let world = world();
    let tenant = TenantId::new(TENANT);
    world.backend.set_catalog(&tenant, catalog());
    for definition in definitions() {
        world
            .backend
            .insert_definition(&tenant, definition)
            .expect("stored");
    }
    world
}

/// `gail` of [`TENANT`] with every permission but `missing`.
fn gail_without(missing: Option<&Permission>) -> AiCaller {
    AiCaller::new(
        "gail",
        TENANT,
        all_permissions().into_iter().filter(|p| Some(p) != missing),
    )
}

/// Calls `tool` as `gail` of [`TENANT`] with every permission.
async fn call(world: &World, tool: &str, arguments: Value) -> AiToolResult {
    world.call_as(gail_without(None), tool, arguments).await
}

/// Calls `tool` and returns its successful answer.
async fn answer(world: &World, tool: &str, arguments: Value) -> Value {
    content(&call(world, tool, arguments.clone()).await).clone()
}

/// Checks that `tool` refused `arguments` with 400 `code`.
async fn assert_refused(world: &World, tool: &str, arguments: Value, code: &str) {
    let (status, got, message) = refusal(&call(world, tool, arguments.clone()).await);
    assert_eq!(
        (status, got.as_str()),
        (400, code),
        "{tool} {arguments}: {message}"
    );
}

/// `type@version` of each activity row.
fn activity_rows(result: &Value) -> Vec<String> {
    result["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {result}"))
        .iter()
        .map(|row| format!("{}@{}", row["type"].as_str().expect("type"), row["version"]))
        .collect()
}

/// `definitionId@version` of each definition row.
fn definition_rows(result: &Value) -> Vec<String> {
    result["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {result}"))
        .iter()
        .map(|row| {
            format!(
                "{}@{}",
                row["definitionId"].as_str().expect("definitionId"),
                row["version"]
            )
        })
        .collect()
}

/// Every browsable row of the catalog, in the order the tool lists them (type, then newest
/// version first).
const BROWSABLE: [&str; 7] = [
    "Acme.Flow.Begin@1",
    "Acme.Http.Listen@2",
    "Acme.Http.Listen@1",
    "Acme.Mail.Send@1",
    "Elsa.Flowchart@1",
    "Elsa.SetVariable@1",
    "Elsa.WriteLine@1",
];

#[tokio::test]
async fn activities_search_leaves_out_non_browsable_types_unless_asked() {
    let world = grounded_world();
    let all = answer(&world, grounding::ACTIVITIES_SEARCH, json!({})).await;
    assert_eq!(activity_rows(&all), BROWSABLE);
    assert_eq!(
        (&all["total"], &all["truncated"]),
        (&json!(7), &json!(false))
    );
    assert_eq!(
        evidence(&all),
        BROWSABLE.map(|row| format!("descriptor:{row}")),
        "each row is evidence"
    );
    assert!(
        !all["categories"]
            .as_object()
            .expect("categories")
            .contains_key("Diagnostics"),
        "a hidden type's category is not counted: {}",
        all["categories"]
    );

    let with_hidden = answer(
        &world,
        grounding::ACTIVITIES_SEARCH,
        json!({"includeNonBrowsable": true}),
    )
    .await;
    let mut expected = BROWSABLE.to_vec();
    expected.insert(3, "Acme.Internal.Probe@1");
    assert_eq!(activity_rows(&with_hidden), expected);
    assert_eq!(with_hidden["total"], 8);
    let probe = &with_hidden["items"][3];
    assert_eq!(
        (
            &probe["isBrowsable"],
            &probe["kind"],
            &probe["canStartWorkflow"]
        ),
        (&json!(false), &json!("Job"), &json!(false))
    );

    let not_asked = answer(
        &world,
        grounding::ACTIVITIES_SEARCH,
        json!({"type": "Acme.Internal.Probe", "includeNonBrowsable": false}),
    )
    .await;
    assert_eq!(not_asked["total"], 0);
    let asked = answer(
        &world,
        grounding::ACTIVITIES_SEARCH,
        json!({"type": "Acme.Internal.Probe", "includeNonBrowsable": true}),
    )
    .await;
    assert_eq!(activity_rows(&asked), ["Acme.Internal.Probe@1"]);
}

#[tokio::test]
async fn activities_search_rows_carry_kind_namespace_browsability_and_start() {
    let world = grounded_world();
    let listen = answer(
        &world,
        grounding::ACTIVITIES_SEARCH,
        json!({"type": "Acme.Http.Listen", "version": 2}),
    )
    .await;
    assert_eq!(listen["total"], 1);
    assert_eq!(
        listen["items"][0],
        json!({
            "type": "Acme.Http.Listen",
            "version": 2,
            "namespace": "Acme.Http",
            "category": "HTTP",
            "kind": "Trigger",
            "inputs": [{"name": "Path", "type": "String"}],
            "outputs": [{"name": "Body", "type": "Object"}, {"name": "Headers", "type": "Object"}],
            "outcomes": ["Done"],
            "canStartWorkflow": true,
            "isBrowsable": true,
        })
    );
    let rows = answer(&world, grounding::ACTIVITIES_SEARCH, json!({})).await;
    let row = |type_name: &str| {
        rows["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["type"] == type_name)
            .unwrap_or_else(|| panic!("{type_name} listed"))
            .clone()
    };
    // A start node that is not a trigger can still start a workflow.
    let begin = row("Acme.Flow.Begin");
    assert_eq!(
        (
            &begin["kind"],
            &begin["canStartWorkflow"],
            &begin["namespace"]
        ),
        (&json!("Action"), &json!(true), &json!("Acme.Flow"))
    );
    let send = row("Acme.Mail.Send");
    assert_eq!(
        (
            &send["kind"],
            &send["canStartWorkflow"],
            &send["isBrowsable"]
        ),
        (&json!("Action"), &json!(false), &json!(true))
    );
    assert_eq!(
        send["inputs"],
        json!([{"name": "To", "type": "String", "required": true}])
    );
}

#[tokio::test]
async fn activities_search_filters_by_version_output_name_and_start() {
    let world = grounded_world();
    let search = |arguments: Value| {
        let world = &world;
        async move { answer(world, grounding::ACTIVITIES_SEARCH, arguments).await }
    };

    let v2 = search(json!({"version": 2})).await;
    assert_eq!(activity_rows(&v2), ["Acme.Http.Listen@2"]);
    let v1 = search(json!({"version": 1})).await;
    let expected_v1: Vec<&str> = BROWSABLE
        .into_iter()
        .filter(|row| *row != "Acme.Http.Listen@2")
        .collect();
    assert_eq!(activity_rows(&v1), expected_v1);
    assert_eq!(search(json!({"version": 3})).await["total"], 0);

    // Output names match whatever their letter case; inputs of that name do not count.
    let body = search(json!({"outputName": "body"})).await;
    assert_eq!(
        activity_rows(&body),
        ["Acme.Http.Listen@2", "Acme.Http.Listen@1"]
    );
    let body_hidden = search(json!({"outputName": "Body", "includeNonBrowsable": true})).await;
    assert_eq!(
        activity_rows(&body_hidden),
        [
            "Acme.Http.Listen@2",
            "Acme.Http.Listen@1",
            "Acme.Internal.Probe@1"
        ]
    );
    let headers = search(json!({"outputName": "HEADERS"})).await;
    assert_eq!(activity_rows(&headers), ["Acme.Http.Listen@2"]);
    let message = search(json!({"output": "MessageId"})).await;
    assert_eq!(
        activity_rows(&message),
        ["Acme.Mail.Send@1"],
        "output is outputName"
    );
    assert_eq!(search(json!({"outputName": "Path"})).await["total"], 0);
    let both = search(json!({"outputName": "Body", "version": 1})).await;
    assert_eq!(
        activity_rows(&both),
        ["Acme.Http.Listen@1"],
        "filters combine"
    );

    let starters = search(json!({"canStartWorkflow": true})).await;
    assert_eq!(
        activity_rows(&starters),
        [
            "Acme.Flow.Begin@1",
            "Acme.Http.Listen@2",
            "Acme.Http.Listen@1"
        ]
    );
    assert!(
        starters["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|row| row["canStartWorkflow"] == true)
    );
    let others = search(json!({"canStartWorkflow": false})).await;
    assert_eq!(
        activity_rows(&others),
        [
            "Acme.Mail.Send@1",
            "Elsa.Flowchart@1",
            "Elsa.SetVariable@1",
            "Elsa.WriteLine@1"
        ]
    );
    let others_hidden =
        search(json!({"canStartWorkflow": false, "includeNonBrowsable": true})).await;
    assert_eq!(others_hidden["total"], 5);
    assert_eq!(
        search(json!({"trigger": true})).await["items"],
        starters["items"],
        "trigger is canStartWorkflow"
    );
}

#[tokio::test]
async fn activities_search_pages_with_skip_and_take_as_with_offset_and_limit() {
    let world = grounded_world();
    let search = |arguments: Value| {
        let world = &world;
        async move { answer(world, grounding::ACTIVITIES_SEARCH, arguments).await }
    };
    let first = search(json!({"take": 2})).await;
    assert_eq!(activity_rows(&first), BROWSABLE[..2]);
    assert_eq!(
        (
            &first["total"],
            &first["returned"],
            &first["truncated"],
            &first["nextOffset"]
        ),
        (&json!(7), &json!(2), &json!(true), &json!(2))
    );
    let middle = search(json!({"skip": 2, "take": 2})).await;
    assert_eq!(activity_rows(&middle), BROWSABLE[2..4]);
    assert_eq!(middle["nextOffset"], 4);
    assert_eq!(
        middle,
        search(json!({"offset": 2, "limit": 2})).await,
        "skip/take are offset/limit"
    );
    let last = search(json!({"skip": 6, "take": 2})).await;
    assert_eq!(activity_rows(&last), ["Elsa.WriteLine@1"]);
    assert_eq!(
        (&last["returned"], &last["truncated"]),
        (&json!(1), &json!(false))
    );
    assert!(last.get("nextOffset").is_none(), "{last}");
    let past = search(json!({"skip": 7})).await;
    assert_eq!((&past["total"], &past["returned"]), (&json!(7), &json!(0)));
    // The same value under both spellings is one argument.
    let same = search(json!({"skip": 2, "offset": 2, "take": 2, "limit": 2})).await;
    assert_eq!(activity_rows(&same), BROWSABLE[2..4]);
}

#[tokio::test]
async fn activities_search_refuses_conflicting_spellings_and_callers_without_permission() {
    let world = grounded_world();
    for arguments in [
        json!({"skip": 1, "offset": 2}),
        json!({"take": 1, "limit": 2}),
        json!({"canStartWorkflow": true, "trigger": false}),
        json!({"outputName": "Body", "output": "Headers"}),
        json!({"text": "mail", "query": "http"}),
    ] {
        assert_refused(
            &world,
            grounding::ACTIVITIES_SEARCH,
            arguments,
            "conflicting_arguments",
        )
        .await;
    }
    for arguments in [
        json!({"take": 0}),
        json!({"take": 51}),
        json!({"skip": -1}),
        json!({"version": 0}),
        json!({"includeNonBrowsable": "yes"}),
        json!({"includeHidden": true}),
    ] {
        assert_refused(
            &world,
            grounding::ACTIVITIES_SEARCH,
            arguments,
            "invalid_arguments",
        )
        .await;
    }
    let denied = world
        .call_as(
            gail_without(Some(&Permission::READ_ACTIVITIES)),
            grounding::ACTIVITIES_SEARCH,
            json!({"canStartWorkflow": true}),
        )
        .await;
    assert_eq!(denied.outcome, AiToolOutcome::Denied);
    let (status, code, message) = refusal(&denied);
    assert_eq!((status, code.as_str()), (403, "permission_denied"));
    assert!(message.contains("read:activities"), "{message}");
}

#[tokio::test]
async fn workflows_search_filters_by_exact_name_id_version_and_publication() {
    let world = grounded_world();
    let search = |arguments: Value| {
        let world = &world;
        async move { answer(world, grounding::WORKFLOWS_SEARCH, arguments).await }
    };
    let latest = search(json!({})).await;
    assert_eq!(
        definition_rows(&latest),
        ["invoices@1", "orders@2", "order-archive@1", "shipping@1"]
    );

    // Text finds both order workflows; the exact name (any letter case) only one.
    let text = search(json!({"query": "order intake"})).await;
    assert_eq!(definition_rows(&text), ["orders@2", "order-archive@1"]);
    let named = search(json!({"name": "ORDER INTAKE"})).await;
    assert_eq!(definition_rows(&named), ["orders@2"]);
    assert_eq!(
        named["items"][0],
        json!({"definitionId": "orders", "version": 2, "name": "Order intake",
               "isLatest": true, "isPublished": false, "activityCount": 2})
    );
    assert_eq!(search(json!({"name": "Order"})).await["total"], 0);

    let by_id = search(json!({"definitionId": "orders"})).await;
    assert_eq!(definition_rows(&by_id), ["orders@2"]);
    assert_eq!(evidence(&by_id), ["definition:orders@2"]);
    assert_eq!(
        search(json!({"definitionId": "order"})).await["total"],
        0,
        "an id is matched whole"
    );

    let v2 = search(json!({"version": 2})).await;
    assert_eq!(definition_rows(&v2), ["orders@2"]);
    let v1 = search(json!({"version": 1})).await;
    assert_eq!(
        definition_rows(&v1),
        ["invoices@1", "orders@1", "order-archive@1", "shipping@1"]
    );
    let first_orders = search(json!({"definitionId": "orders", "version": 1})).await;
    assert_eq!(definition_rows(&first_orders), ["orders@1"]);
    assert_eq!(
        (
            &first_orders["items"][0]["isLatest"],
            &first_orders["items"][0]["isPublished"]
        ),
        (&json!(false), &json!(true))
    );
    assert_eq!(search(json!({"version": 3})).await["total"], 0);

    let published = search(json!({"published": true})).await;
    assert_eq!(definition_rows(&published), ["invoices@1", "orders@1"]);
    assert!(
        published["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|row| row["isPublished"] == true)
    );
    assert_eq!(search(json!({"filter": "published"})).await, published);
    assert_eq!(
        definition_rows(&search(json!({"published": true, "name": "order intake"})).await),
        ["orders@1"]
    );
    assert_eq!(
        search(json!({"published": true, "definitionId": "shipping"})).await["total"],
        0,
        "shipping has no published version"
    );

    assert_refused(
        &world,
        grounding::WORKFLOWS_SEARCH,
        json!({"published": true, "version": 1}),
        "conflicting_arguments",
    )
    .await;
    assert_refused(
        &world,
        grounding::WORKFLOWS_SEARCH,
        json!({"text": "order", "query": "invoice"}),
        "conflicting_arguments",
    )
    .await;
}

#[tokio::test]
async fn workflows_search_finds_the_versions_that_use_an_activity_type() {
    let world = grounded_world();
    let search = |arguments: Value| {
        let world = &world;
        async move { answer(world, grounding::WORKFLOWS_SEARCH, arguments).await }
    };
    let mail = search(json!({"usesActivityType": "acme.mail.send"})).await;
    assert_eq!(definition_rows(&mail), ["invoices@1", "orders@2"]);
    assert_eq!(
        (&mail["scanned"], &mail["complete"], &mail["total"]),
        (&json!(4), &json!(true), &json!(2))
    );
    assert!(mail.get("warnings").is_none(), "{mail}");
    assert_eq!(
        evidence(&mail),
        ["definition:invoices@1", "definition:orders@2"]
    );

    // Only the published orders version uses the listener; the latest does not.
    let listen = search(json!({"usesActivityType": "Acme.Http.Listen"})).await;
    assert_eq!(
        (&listen["total"], &listen["scanned"]),
        (&json!(0), &json!(4))
    );
    let listen_v1 = search(json!({"usesActivityType": "Acme.Http.Listen", "version": 1})).await;
    assert_eq!(definition_rows(&listen_v1), ["orders@1"]);
    let listen_published =
        search(json!({"usesActivityType": "Acme.Http.Listen", "published": true})).await;
    assert_eq!(definition_rows(&listen_published), ["orders@1"]);
    assert_eq!(listen_published["scanned"], 2);
    let mail_published =
        search(json!({"usesActivityType": "Acme.Mail.Send", "published": true})).await;
    assert_eq!(definition_rows(&mail_published), ["invoices@1"]);

    // A type no catalog has is still found where a definition uses it.
    let legacy = search(json!({"usesActivityType": "Acme.Legacy.Ship"})).await;
    assert_eq!(definition_rows(&legacy), ["shipping@1"]);
    let with_text = search(json!({"usesActivityType": "Elsa.WriteLine", "query": "order"})).await;
    assert_eq!(definition_rows(&with_text), ["order-archive@1"]);
    let nowhere = search(json!({"usesActivityType": "Acme.Internal.Probe"})).await;
    assert_eq!(
        (&nowhere["total"], &nowhere["complete"]),
        (&json!(0), &json!(true))
    );
}

#[tokio::test]
async fn find_usages_by_variable_input_output_and_expression_syntax() {
    let world = grounded_world();
    let find = |arguments: Value| {
        let world = &world;
        async move { answer(world, grounding::FIND_USAGES, arguments).await }
    };
    let only = |result: &Value| -> Value {
        assert_eq!(
            (&result["total"], &result["scanned"], &result["complete"]),
            (&json!(1), &json!(4), &json!(true)),
            "{result}"
        );
        result["items"][0].clone()
    };
    let no_activities = json!({"total": 0, "returned": 0, "truncated": false, "items": []});

    // A variable: where it is declared and the activity bound to it.
    let receipt = find(json!({"variableName": "receipt"})).await;
    assert_eq!(
        only(&receipt),
        json!({
            "definitionId": "invoices", "version": 1, "name": "Invoices",
            "declared": ["variable at $.variables[0]"],
            "activities": {"total": 1, "returned": 1, "truncated": false,
                           "items": [{"id": "Send1", "type": "Acme.Mail.Send", "input": "messageId"}]},
        })
    );
    assert_eq!(evidence(&receipt), ["definition:invoices@1"]);
    let counter = find(json!({"variableName": "Counter"})).await;
    assert_eq!(only(&counter)["definitionId"], "orders");
    assert_eq!(only(&counter)["activities"], no_activities);
    assert_eq!(find(json!({"variableName": "Total"})).await["total"], 0);

    // Workflow inputs and outputs, each only where declared as such.
    let customer = find(json!({"inputName": "CustomerId"})).await;
    assert_eq!(
        only(&customer),
        json!({"definitionId": "invoices", "version": 1, "name": "Invoices",
               "declared": ["input CustomerId"], "activities": no_activities})
    );
    let order_id = find(json!({"inputName": "orderid"})).await;
    assert_eq!(only(&order_id)["definitionId"], "orders");
    assert_eq!(only(&order_id)["declared"], json!(["input OrderId"]));
    assert_eq!(
        find(json!({"inputName": "InvoiceNumber"})).await["total"],
        0,
        "an output is not an input"
    );
    let invoice_number = find(json!({"outputName": "InvoiceNumber"})).await;
    assert_eq!(
        only(&invoice_number),
        json!({"definitionId": "invoices", "version": 1, "name": "Invoices",
               "declared": ["output InvoiceNumber"], "activities": no_activities})
    );
    let tracking = find(json!({"outputName": "TrackingCode"})).await;
    assert_eq!(only(&tracking)["definitionId"], "shipping");
    assert_eq!(
        find(json!({"outputName": "CustomerId"})).await["total"],
        0,
        "an input is not an output"
    );

    // Expression syntaxes, whatever their letter case.
    let javascript = find(json!({"expressionSyntax": "javascript"})).await;
    assert_eq!(
        only(&javascript),
        json!({"definitionId": "invoices", "version": 1, "name": "Invoices",
               "activities": {"total": 1, "returned": 1, "truncated": false,
                              "items": [{"id": "Send1", "type": "Acme.Mail.Send", "input": "to"}]}})
    );
    let liquid = find(json!({"expressionSyntax": "Liquid"})).await;
    assert_eq!(only(&liquid)["definitionId"], "order-archive");
    assert_eq!(
        only(&liquid)["activities"]["items"],
        json!([{"id": "Log1", "type": "Elsa.WriteLine", "input": "text"}])
    );
    assert_eq!(
        find(json!({"expressionSyntax": "CSharp"})).await["total"],
        0
    );

    // Exactly one target.
    for arguments in [
        json!({"variableName": "Receipt", "inputName": "CustomerId"}),
        json!({"outputName": "InvoiceNumber", "expressionSyntax": "JavaScript"}),
        json!({"variableName": "  "}),
    ] {
        assert_refused(
            &world,
            grounding::FIND_USAGES,
            arguments,
            "invalid_arguments",
        )
        .await;
    }
}

#[tokio::test]
async fn the_definition_graph_lists_structure_and_flags_types_missing_from_the_catalog() {
    let world = grounded_world();
    let graph = answer(
        &world,
        grounding::GET_DEFINITION_GRAPH,
        json!({"definitionId": "shipping"}),
    )
    .await;
    let warnings = graph["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let warning = warnings[0].as_str().unwrap();
    assert!(
        warning.contains("'Acme.Legacy.Ship'") && warning.contains("Ship1"),
        "{warning}"
    );
    assert!(
        summary(&graph).contains("3 activities"),
        "{}",
        graph["summary"]
    );
    let mut body = graph.clone();
    for field in ["summary", "warnings"] {
        body.as_object_mut().unwrap().remove(field);
    }
    assert_eq!(
        body,
        json!({
            "definitionId": "shipping",
            "version": 1,
            "name": "Shipping",
            "rootType": "Elsa.Flowchart",
            "activities": {"total": 3, "returned": 3, "truncated": false, "items": [
                {"id": "Start1", "type": "Acme.Flow.Begin", "name": "Begin"},
                {"id": "Ship1", "type": "Acme.Legacy.Ship", "displayText": "Hand to the carrier",
                 "notInCatalog": true},
                {"id": "Log1", "type": "Elsa.WriteLine", "name": "LogShipped"},
            ]},
            "connections": {"total": 2, "returned": 2, "truncated": false, "items": [
                "Start1:Done -> Ship1:In",
                "Ship1:Done -> Log1:In",
            ]},
            "variables": ["Parcel: Object"],
            "inputs": ["Address: String"],
            "outputs": ["TrackingCode: String"],
            "evidence": ["definition:shipping@1"],
        })
    );

    // Every type in the catalog: nothing flagged, no warnings.
    let orders = answer(
        &world,
        grounding::GET_DEFINITION_GRAPH,
        json!({"definitionId": "orders"}),
    )
    .await;
    assert_eq!(orders["version"], 2);
    assert!(orders.get("warnings").is_none(), "{orders}");
    assert_eq!(
        orders["activities"]["items"],
        json!([
            {"id": "Begin1", "type": "Acme.Flow.Begin"},
            {"id": "Notify1", "type": "Acme.Mail.Send"},
        ])
    );
    assert_eq!(orders["variables"], json!(["Counter: Int32"]));
    assert_eq!(orders["inputs"], json!(["OrderId: String"]));
    assert!(orders.get("outputs").is_none(), "none declared: {orders}");

    // The published version, by `published` and by its version id.
    let published = answer(
        &world,
        grounding::GET_DEFINITION_GRAPH,
        json!({"definitionId": "orders", "published": true}),
    )
    .await;
    assert_eq!(published["version"], 1);
    assert_eq!(
        published["connections"]["items"],
        json!(["Listen1:Done -> Log1:In"])
    );
    assert_eq!(
        answer(
            &world,
            grounding::GET_DEFINITION_GRAPH,
            json!({"versionId": "orders-v1"})
        )
        .await,
        published
    );

    // A type that leaves the catalog is flagged from then on.
    world.backend.set_catalog(
        &TenantId::new(TENANT),
        catalog()
            .into_iter()
            .filter(|d| d.type_name != "Acme.Mail.Send")
            .collect(),
    );
    let orders = answer(
        &world,
        grounding::GET_DEFINITION_GRAPH,
        json!({"definitionId": "orders"}),
    )
    .await;
    assert_eq!(
        orders["activities"]["items"],
        json!([
            {"id": "Begin1", "type": "Acme.Flow.Begin"},
            {"id": "Notify1", "type": "Acme.Mail.Send", "notInCatalog": true},
        ])
    );
    assert_eq!(orders["warnings"].as_array().map(Vec::len), Some(1));

    // workflows.getDefinition flags the same activities.
    let full = answer(
        &world,
        grounding::GET_DEFINITION,
        json!({"definitionId": "shipping"}),
    )
    .await;
    let flagged: Vec<&str> = full["activities"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["notInCatalog"] == true)
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(flagged, ["Ship1"]);
    assert_eq!(full["warnings"], graph["warnings"]);

    assert_refused(
        &world,
        grounding::GET_DEFINITION_GRAPH,
        json!({"definitionId": "orders", "version": 2, "published": true}),
        "conflicting_arguments",
    )
    .await;
    // Another tenant's definition reads like an unknown one.
    let (status, code, _) = refusal(
        &call(
            &world,
            grounding::GET_DEFINITION_GRAPH,
            json!({"definitionId": "parent-capture-output"}),
        )
        .await,
    );
    assert_eq!((status, code.as_str()), (404, "not_found"));
}
