//! The search filters and the version listing, asked of both backends holding the same data:
//! the in-memory backend and the Elsa Server backend against the testkit's stand-in. Both must
//! answer alike; the Elsa side also shows which requests carry each filter to Elsa.

use std::sync::Arc;

use chrono::Utc;
use elsa_workflows::{
    DefinitionQuery, DefinitionSummary, ElsaServerBackend, ElsaServerConfig,
    InMemoryWorkflowBackend, IncidentQuery, IncidentSearch, IncidentStore, InstanceQuery,
    PageRequest, TenantId, TenantRouter, TimeRange, VersionOptions, WorkflowDefinition,
    WorkflowDefinitionStore, WorkflowInstance, WorkflowInstanceStore, WorkflowServices,
};
use serde_json::{Value, json};
use weaver_testkit::elsa_api::{ElsaApiStandIn, RecordedRequest};

const AUTHORIZATION: &str = "ApiKey filters-key";

fn acme() -> TenantId {
    TenantId::new("acme")
}

/// `(definitionId, version, name, description, published, latest, activities)`.
type VersionRow = (
    &'static str,
    i32,
    &'static str,
    &'static str,
    bool,
    bool,
    usize,
);

/// The definitions: `orders` with three versions (v2 published, v3 a draft), two more named
/// "Order Approval" in other letter case or with more words, `billing`, and `late` whose only
/// version is 2.
const VERSIONS: [VersionRow; 7] = [
    ("orders", 1, "Order approval", "", false, false, 1),
    ("orders", 2, "Order Approval", "", true, false, 2),
    ("orders", 3, "Order Approval", "", false, true, 3),
    ("shouting", 1, "ORDER APPROVAL", "", true, true, 1),
    ("copy", 1, "Order Approval (copy)", "", true, true, 1),
    (
        "billing",
        1,
        "Billing",
        "Sends invoices for approved orders",
        true,
        true,
        2,
    ),
    ("late", 2, "Late starter", "", true, true, 1),
];

fn definition(row: &VersionRow) -> Value {
    let (id, version, name, description, published, latest, activities) = *row;
    let activities: Vec<Value> = (0..activities)
        .map(|i| json!({"id": format!("w{i}"), "type": "Elsa.WriteLine", "version": 1}))
        .collect();
    json!({
        "id": format!("{id}-v{version}"), "definitionId": id, "version": version, "name": name,
        "description": (!description.is_empty()).then_some(description),
        "isPublished": published, "isLatest": latest,
        "root": {"id": "Flowchart1", "type": "Elsa.Flowchart", "version": 1,
                 "activities": activities, "connections": []},
    })
}

/// The instances: two runs of `orders` (one faulted), two of `billing` (one suspended with
/// an incident, one whose id holds "order").
fn instances() -> Vec<WorkflowInstance> {
    let timeout = json!({
        "activityId": "Pay", "activityNodeId": "Workflow1:Flowchart1:Pay",
        "activityType": "Elsa.SendHttpRequest", "message": "Payment gateway timed out",
        "exception": {
            "type": "System.TimeoutException, System.Private.CoreLib",
            "message": "The operation has timed out.",
            "innerException": {"type": "System.Net.Sockets.SocketException",
                               "message": "Socket closed by peer"}
        },
        "timestamp": "2025-01-02T10:30:00+00:00"
    });
    let missing = json!({
        "activityId": "Render", "activityType": "Elsa.RunJavaScript",
        "message": "Invoice template missing",
        "exception": {"type": "System.IO.FileNotFoundException",
                      "message": "Could not find file 'invoice.liquid'"},
        "timestamp": "2025-01-03T12:00:00+00:00"
    });
    [
        json!({"id": "i1", "definitionId": "orders", "version": 2, "name": "Order 1001",
               "correlationId": "CORR-1001", "status": "Finished", "subStatus": "Finished",
               "createdAt": "2025-01-01T10:00:00+00:00", "updatedAt": "2025-01-05T10:00:00+00:00"}),
        json!({"id": "i2", "definitionId": "orders", "version": 2, "name": "Order 1002",
               "correlationId": "corr-1002", "status": "Finished", "subStatus": "Faulted",
               "createdAt": "2025-01-02T10:00:00+00:00", "updatedAt": "2025-01-02T11:00:00+00:00",
               "incidents": [timeout]}),
        json!({"id": "i3", "definitionId": "billing", "version": 1, "name": "Invoice run",
               "status": "Running", "subStatus": "Suspended",
               "createdAt": "2025-01-03T10:00:00+00:00", "updatedAt": "2025-01-06T00:00:00+00:00",
               "incidents": [missing]}),
        json!({"id": "reorder-7", "definitionId": "billing", "version": 1, "name": "Nightly",
               "status": "Finished", "subStatus": "Finished",
               "createdAt": "2025-01-04T10:00:00+00:00", "updatedAt": "2025-01-04T10:00:00+00:00"}),
    ]
    .into_iter()
    .map(|value| WorkflowInstance::from_value(value).expect("a readable instance"))
    .collect()
}

/// Both backends, holding the same data for acme.
struct Backends {
    memory: Arc<InMemoryWorkflowBackend>,
    elsa: ElsaApiStandIn,
    server: Arc<ElsaServerBackend>,
}

impl Backends {
    async fn new() -> Self {
        let memory = Arc::new(InMemoryWorkflowBackend::new());
        let elsa = ElsaApiStandIn::start(AUTHORIZATION).await;
        for row in &VERSIONS {
            let document = definition(row);
            let parsed = WorkflowDefinition::from_value(document.clone()).expect("a definition");
            memory.insert_definition(&acme(), parsed).expect("stored");
            elsa.insert_definition(document);
        }
        for instance in instances() {
            elsa.insert_instance(&instance, Utc::now());
            memory.insert_instance(&acme(), instance);
        }
        let config = ElsaServerConfig::new(elsa.url())
            .expect("a valid URL")
            .api_key("filters-key");
        let server = Arc::new(ElsaServerBackend::new(acme(), config).expect("a backend"));
        Self {
            memory,
            elsa,
            server,
        }
    }

    /// The definition search both backends answer, which must agree.
    async fn definitions(&self, query: DefinitionQuery) -> (Vec<String>, usize) {
        let memory = WorkflowDefinitionStore::search(self.memory.as_ref(), &acme(), &query)
            .await
            .expect("memory search");
        let elsa = WorkflowDefinitionStore::search(self.server.as_ref(), &acme(), &query)
            .await
            .expect("Elsa search");
        assert_eq!(memory, elsa, "the backends disagree on {query:?}");
        let rows = memory
            .items
            .iter()
            .map(|row| format!("{} v{}", row.definition_id, row.version))
            .collect();
        (rows, memory.total)
    }

    /// The instance ids both backends find, which must agree.
    async fn instances(&self, query: InstanceQuery) -> Vec<String> {
        let ids = |page: elsa_workflows::Page<WorkflowInstance>| -> Vec<String> {
            page.items.iter().map(|i| i.id().to_owned()).collect()
        };
        let memory = WorkflowInstanceStore::search(self.memory.as_ref(), &acme(), &query)
            .await
            .expect("memory search");
        let elsa = WorkflowInstanceStore::search(self.server.as_ref(), &acme(), &query)
            .await
            .expect("Elsa search");
        assert_eq!(memory.total, elsa.total, "totals for {query:?}");
        let found = ids(memory);
        assert_eq!(found, ids(elsa), "the backends disagree on {query:?}");
        found
    }

    /// The incidents both backends find, as `(instance id, message)`, which must agree.
    async fn incidents(&self, query: IncidentQuery) -> (Vec<(String, String)>, usize) {
        let rows = |search: &IncidentSearch| -> Vec<(String, String)> {
            search
                .incidents
                .items
                .iter()
                .map(|i| {
                    let message = i.incident.message.clone().unwrap_or_default();
                    (i.instance_id.clone(), message)
                })
                .collect()
        };
        let memory = IncidentStore::search(self.memory.as_ref(), &acme(), &query)
            .await
            .expect("memory search");
        let elsa = IncidentStore::search(self.server.as_ref(), &acme(), &query)
            .await
            .expect("Elsa search");
        assert_eq!(
            rows(&memory),
            rows(&elsa),
            "the backends disagree on {query:?}"
        );
        assert_eq!(memory.instances_read, elsa.instances_read, "{query:?}");
        assert!(memory.complete && elsa.complete);
        (rows(&memory), memory.instances_read)
    }

    fn requests_since(&self, before: usize) -> Vec<RecordedRequest> {
        self.elsa.requests().split_off(before)
    }
}

/// The path and query of each GET in `requests` that lists definitions.
fn definition_listings(requests: &[RecordedRequest]) -> Vec<String> {
    requests
        .iter()
        .filter(|r| {
            r.method == "GET"
                && r.path_and_query
                    .starts_with("/elsa/api/workflow-definitions?")
        })
        .map(|r| r.path_and_query.clone())
        .collect()
}

/// The body of the last instance listing in `requests`.
fn last_instance_listing(requests: &[RecordedRequest]) -> Value {
    requests
        .iter()
        .rev()
        .find(|r| r.method == "POST" && r.path_and_query == "/elsa/api/workflow-instances")
        .and_then(|r| r.body.clone())
        .expect("an instance listing")
}

#[tokio::test]
async fn definitions_are_found_by_exact_name_without_regard_to_case() {
    let backends = Backends::new().await;
    let before = backends.elsa.requests().len();
    let named = |name: &str, page: PageRequest| DefinitionQuery {
        name: Some(name.to_owned()),
        page,
        ..DefinitionQuery::default()
    };
    // Not "Order Approval (copy)", which only contains the name; Elsa's order (by name).
    let (rows, total) = backends
        .definitions(named(" order APPROVAL ", PageRequest::default()))
        .await;
    assert_eq!(rows, ["shouting v1", "orders v3"]);
    assert_eq!(total, 2);
    let (rows, total) = backends
        .definitions(named("Order Approval", PageRequest::new(1, 1)))
        .await;
    assert_eq!((rows, total), (vec!["orders v3".to_owned()], 2));
    // Text and name together: Elsa's one search term carries the text.
    let (rows, _) = backends
        .definitions(DefinitionQuery {
            text: Some("INVOICES".to_owned()),
            ..named("billing", PageRequest::default())
        })
        .await;
    assert_eq!(rows, ["billing v1"]);
    let (rows, _) = backends
        .definitions(named("order", PageRequest::default()))
        .await;
    assert!(rows.is_empty(), "{rows:?}");

    // Elsa's list has no name parameter: the name narrows it as the search term, and each
    // name search reads the narrowed list from its start (then counts the window's graphs).
    let listings = definition_listings(&backends.requests_since(before));
    assert_eq!(
        listings,
        [
            "/elsa/api/workflow-definitions?versionOptions=Latest&page=0&pageSize=500&searchTerm=order+APPROVAL",
            "/elsa/api/workflow-definitions?versionOptions=Latest&page=0&pageSize=500&searchTerm=Order+Approval",
            "/elsa/api/workflow-definitions?versionOptions=Latest&page=0&pageSize=500&searchTerm=INVOICES",
            "/elsa/api/workflow-definitions?versionOptions=Latest&page=0&pageSize=500&searchTerm=order",
        ]
    );
}

#[tokio::test]
async fn definitions_are_found_by_id_and_by_a_specific_version_number() {
    let backends = Backends::new().await;
    let before = backends.elsa.requests().len();
    let (rows, total) = backends
        .definitions(DefinitionQuery {
            definition_id: Some("orders".to_owned()),
            ..DefinitionQuery::default()
        })
        .await;
    assert_eq!((rows, total), (vec!["orders v3".to_owned()], 1));
    let (rows, _) = backends
        .definitions(DefinitionQuery {
            definition_id: Some("orders".to_owned()),
            version: VersionOptions::Specific(1),
            ..DefinitionQuery::default()
        })
        .await;
    assert_eq!(rows, ["orders v1"]);
    // Every definition's version 2, where it has one; none has a version 4.
    let (rows, _) = backends
        .definitions(DefinitionQuery {
            version: VersionOptions::Specific(2),
            ..DefinitionQuery::default()
        })
        .await;
    assert_eq!(rows, ["late v2", "orders v2"]);
    let (rows, _) = backends
        .definitions(DefinitionQuery {
            version: VersionOptions::Specific(4),
            ..DefinitionQuery::default()
        })
        .await;
    assert!(rows.is_empty());
    // Ids are exact: not a prefix, not another letter case, never empty.
    for id in ["order", "ORDERS", ""] {
        let (rows, total) = backends
            .definitions(DefinitionQuery {
                definition_id: Some(id.to_owned()),
                ..DefinitionQuery::default()
            })
            .await;
        assert_eq!((rows.len(), total), (0, 0), "{id:?}");
    }

    let listings = definition_listings(&backends.requests_since(before));
    assert_eq!(
        listings,
        [
            "/elsa/api/workflow-definitions?versionOptions=Latest&page=0&pageSize=50&definitionIds=orders",
            "/elsa/api/workflow-definitions?versionOptions=1&page=0&pageSize=50&definitionIds=orders",
            "/elsa/api/workflow-definitions?versionOptions=2&page=0&pageSize=50",
            "/elsa/api/workflow-definitions?versionOptions=4&page=0&pageSize=50",
            "/elsa/api/workflow-definitions?versionOptions=Latest&page=0&pageSize=50&definitionIds=order",
            "/elsa/api/workflow-definitions?versionOptions=Latest&page=0&pageSize=50&definitionIds=ORDERS",
        ],
        "an empty id is answered without asking Elsa"
    );
}

#[tokio::test]
async fn versions_are_listed_oldest_first_by_every_backend() {
    let backends = Backends::new().await;
    let expected: Vec<(i32, bool, bool, usize)> = vec![
        (1, false, false, 1),
        (2, false, true, 2),
        (3, true, false, 3),
    ];
    let facts = |rows: &[DefinitionSummary]| -> Vec<(i32, bool, bool, usize)> {
        rows.iter()
            .map(|r| (r.version, r.is_latest, r.is_published, r.activity_count))
            .collect()
    };
    let memory = backends
        .memory
        .versions(&acme(), "orders")
        .await
        .expect("memory versions");
    assert_eq!(facts(&memory), expected);
    let before = backends.elsa.requests().len();
    let elsa = backends
        .server
        .versions(&acme(), "orders")
        .await
        .expect("Elsa versions");
    assert_eq!(
        elsa, memory,
        "the same rows, version ids and names included"
    );
    let asked: Vec<String> = backends
        .requests_since(before)
        .into_iter()
        .map(|r| format!("{} {}", r.method, r.path_and_query))
        .collect();
    assert_eq!(
        asked,
        ["GET /elsa/api/workflow-definitions/orders/versions"],
        "one request"
    );
    // A definition whose only version is 2; one that does not exist (Elsa answers 404).
    let late = backends.server.versions(&acme(), "late").await.unwrap();
    assert_eq!(
        late,
        backends.memory.versions(&acme(), "late").await.unwrap()
    );
    assert_eq!(late.len(), 1);
    assert!(
        backends
            .server
            .versions(&acme(), "nope")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        backends
            .memory
            .versions(&acme(), "nope")
            .await
            .unwrap()
            .is_empty()
    );

    // Through a router: each tenant's own backend; an unknown tenant has none, and another
    // tenant's definition is not found by asking the backend of a tenant that is served.
    let globex = TenantId::new("globex");
    let router = TenantRouter::new()
        .with(acme(), WorkflowServices::of(backends.server.clone()))
        .with(
            globex.clone(),
            WorkflowServices::of(backends.memory.clone()),
        );
    let routed = WorkflowDefinitionStore::versions(&router, &acme(), "orders")
        .await
        .unwrap();
    assert_eq!(routed, memory);
    assert!(
        WorkflowDefinitionStore::versions(&router, &globex, "orders")
            .await
            .unwrap()
            .is_empty(),
        "globex's backend holds acme's data only under acme"
    );
    assert!(
        WorkflowDefinitionStore::versions(&router, &TenantId::new("initech"), "orders")
            .await
            .unwrap()
            .is_empty()
    );
    // The Elsa backend serves acme only, and asks nothing for anyone else.
    let before = backends.elsa.requests().len();
    assert!(
        backends
            .server
            .versions(&globex, "orders")
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(backends.elsa.requests().len(), before);
}

#[tokio::test]
async fn instances_are_found_by_text_correlation_incidents_and_update_time() {
    let backends = Backends::new().await;
    let query = |edit: fn(&mut InstanceQuery)| {
        let mut query = InstanceQuery::default();
        edit(&mut query);
        query
    };
    assert_eq!(
        backends.instances(InstanceQuery::default()).await,
        ["reorder-7", "i3", "i2", "i1"]
    );
    // Text: the name without regard to case, the definition id, the instance id.
    assert_eq!(
        backends
            .instances(query(|q| q.text = Some(" order ".into())))
            .await,
        ["reorder-7", "i2", "i1"]
    );
    assert_eq!(
        backends
            .instances(query(|q| q.text = Some("1002".into())))
            .await,
        ["i2"]
    );
    assert_eq!(
        backends
            .instances(query(|q| q.text = Some("CORR-1001".into())))
            .await,
        ["i1"],
        "the correlation id"
    );
    // Correlation ids are exact.
    assert_eq!(
        backends
            .instances(query(|q| q.correlation_id = Some("corr-1002".into())))
            .await,
        ["i2"]
    );
    assert!(
        backends
            .instances(query(|q| q.correlation_id = Some("CORR-1002".into())))
            .await
            .is_empty()
    );
    assert!(
        backends
            .instances(query(|q| q.correlation_id = Some(" ".into())))
            .await
            .is_empty(),
        "a blank correlation id is no wildcard"
    );
    assert_eq!(
        backends
            .instances(query(|q| q.has_incidents = Some(true)))
            .await,
        ["i3", "i2"]
    );
    assert_eq!(
        backends
            .instances(query(|q| q.has_incidents = Some(false)))
            .await,
        ["reorder-7", "i1"]
    );
    // Updated inside January 5th..6th, both ends at midnight and inclusive: i3 was last
    // updated at midnight on the 6th exactly.
    assert_eq!(
        backends
            .instances(query(|q| {
                q.updated_range = Some(TimeRange {
                    from: "2025-01-05T00:00:00Z".parse().unwrap(),
                    to: "2025-01-06T00:00:00Z".parse().unwrap(),
                });
            }))
            .await,
        ["i3", "i1"]
    );
    let before = backends.elsa.requests().len();
    assert_eq!(
        backends
            .instances(query(|q| {
                q.text = Some("order".into());
                q.correlation_id = Some("corr-1002".into());
                q.has_incidents = Some(true);
                q.time_range = Some(TimeRange {
                    from: "2025-01-02T00:00:00Z".parse().unwrap(),
                    to: "2025-01-02T23:00:00Z".parse().unwrap(),
                });
                q.updated_range = Some(TimeRange {
                    from: "2025-01-02T11:00:00Z".parse().unwrap(),
                    to: "2025-01-03T00:00:00Z".parse().unwrap(),
                });
            }))
            .await,
        ["i2"]
    );
    let sent = last_instance_listing(&backends.requests_since(before));
    assert_eq!(
        sent,
        json!({
            "searchTerm": "order",
            "correlationId": "corr-1002",
            "hasIncidents": true,
            "timestampFilters": [
                {"column": "CreatedAt", "operator": "GreaterThan", "timestamp": "2025-01-01T23:59:59.9999999Z"},
                {"column": "CreatedAt", "operator": "LessThanOrEqual", "timestamp": "2025-01-02T23:00:00.0000000Z"},
                {"column": "UpdatedAt", "operator": "GreaterThanOrEqual", "timestamp": "2025-01-02T11:00:00.0000000Z"},
                {"column": "UpdatedAt", "operator": "LessThan", "timestamp": "2025-01-03T00:00:00.0000001Z"},
            ],
            "page": 0,
            "pageSize": 50,
        })
    );
    // The blank correlation id above was answered without a request.
    let blank_sent = backends
        .elsa
        .requests()
        .iter()
        .filter_map(|r| r.body.as_ref())
        .any(|body| body.get("correlationId") == Some(&json!(" ")));
    assert!(!blank_sent);
}

#[tokio::test]
async fn elsas_search_term_compares_ids_with_regard_to_case() {
    // The one documented difference: Elsa's database compares ids (the correlation id too)
    // with regard to case, the in-memory backend does not.
    let backends = Backends::new().await;
    let query = InstanceQuery {
        text: Some("corr".into()),
        ..InstanceQuery::default()
    };
    let ids = |page: elsa_workflows::Page<WorkflowInstance>| -> Vec<String> {
        page.items.iter().map(|i| i.id().to_owned()).collect()
    };
    let memory = WorkflowInstanceStore::search(backends.memory.as_ref(), &acme(), &query)
        .await
        .unwrap();
    let elsa = WorkflowInstanceStore::search(backends.server.as_ref(), &acme(), &query)
        .await
        .unwrap();
    assert_eq!(ids(memory), ["i2", "i1"]);
    assert_eq!(ids(elsa), ["i2"]);
}

#[tokio::test]
async fn incidents_are_found_by_instance_and_by_text() {
    let backends = Backends::new().await;
    let by_text = |text: &str| IncidentQuery {
        text: Some(text.to_owned()),
        ..IncidentQuery::default()
    };
    let timeout = ("i2".to_owned(), "Payment gateway timed out".to_owned());
    let template = ("i3".to_owned(), "Invoice template missing".to_owned());
    let (all, read) = backends.incidents(IncidentQuery::default()).await;
    assert_eq!((all, read), (vec![template.clone(), timeout.clone()], 2));
    // The incident's message, its exception's type and message, an inner exception's message.
    for (text, expected) in [
        ("template MISSING", &template),
        ("timeoutexception", &timeout),
        ("invoice.liquid", &template),
        ("socket closed", &timeout),
    ] {
        let (found, _) = backends.incidents(by_text(text)).await;
        assert_eq!(found, std::slice::from_ref(expected), "{text}");
    }
    // The inner exception's type is not searched.
    assert!(
        backends
            .incidents(by_text("SocketException"))
            .await
            .0
            .is_empty()
    );

    let before = backends.elsa.requests().len();
    let (found, read) = backends
        .incidents(IncidentQuery {
            instance_id: Some("i2".to_owned()),
            ..IncidentQuery::default()
        })
        .await;
    assert_eq!((found, read), (vec![timeout.clone()], 1));
    let asked: Vec<String> = backends
        .requests_since(before)
        .into_iter()
        .map(|r| format!("{} {}", r.method, r.path_and_query))
        .collect();
    assert_eq!(
        asked,
        ["GET /elsa/api/workflow-instances/i2"],
        "one instance read directly, no listing"
    );
    // An instance without incidents, an unknown one, and filters that all must match.
    for id in ["i1", "nope"] {
        let query = IncidentQuery {
            instance_id: Some(id.to_owned()),
            ..IncidentQuery::default()
        };
        assert_eq!(backends.incidents(query).await, (Vec::new(), 0), "{id}");
    }
    let (found, read) = backends
        .incidents(IncidentQuery {
            instance_id: Some("i3".to_owned()),
            ..by_text("payment")
        })
        .await;
    assert_eq!((found.len(), read), (0, 1));
}
