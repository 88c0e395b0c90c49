//! The Elsa Server REST backend over a real socket, against the testkit's stand-in for Elsa 3
//! Server's API seeded from the fixture folders: definitions by version, search with text
//! and paging, instances by status, definition and time range, the activity catalog, the
//! writer's compare-and-set, and every failure mapped to a typed error that never carries the
//! API key.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use elsa_workflows::{
    ActivityCatalog, DefinitionQuery, ElsaServerBackend, ElsaServerConfig, InstanceQuery,
    PageRequest, TenantId, TimeRange, VersionOptions, WorkflowDefinition, WorkflowDefinitionStore,
    WorkflowDefinitionWriter, WorkflowError, WorkflowInstance, WorkflowInstanceStore,
    WorkflowStatus, WorkflowSubStatus,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use weaver_testkit::elsa_api::{ConcurrentSave, ElsaApiStandIn};

const KEY: &str = "elsa-key-3f9a71c2";

fn acme() -> TenantId {
    TenantId::new("acme")
}

fn authorization() -> String {
    format!("ApiKey {KEY}")
}

fn config(url: &str) -> ElsaServerConfig {
    ElsaServerConfig::new(url)
        .expect("a valid URL")
        .api_key(KEY)
}

fn backend(config: ElsaServerConfig) -> ElsaServerBackend {
    ElsaServerBackend::new(acme(), config).expect("a usable configuration")
}

async fn seeded() -> (ElsaApiStandIn, ElsaServerBackend) {
    let elsa = ElsaApiStandIn::with_fixtures(&authorization()).await;
    let backend = backend(config(elsa.url()));
    (elsa, backend)
}

fn defs(backend: &ElsaServerBackend) -> &dyn WorkflowDefinitionStore {
    backend
}

fn runs(backend: &ElsaServerBackend) -> &dyn WorkflowInstanceStore {
    backend
}

fn text<'a>(value: &'a Value, field: &str) -> &'a str {
    value.get(field).and_then(Value::as_str).unwrap_or_default()
}

/// Asserts that neither the error's text nor its debug form holds the API key.
fn assert_no_secret(error: &WorkflowError) {
    assert!(!error.to_string().contains(KEY), "key leaked: {error}");
    assert!(!format!("{error:?}").contains(KEY), "key leaked: {error:?}");
}

/// A definition with three versions: 1 published, 2 published (the current one), 3 a draft.
fn three_versions(elsa: &ElsaApiStandIn) {
    for (version, latest, published) in [(1, false, false), (2, false, true), (3, true, false)] {
        elsa.insert_definition(json!({
            "id": format!("versioned-v{version}"),
            "definitionId": "versioned",
            "name": format!("Versioned {version}"),
            "version": version,
            "isLatest": latest,
            "isPublished": published,
            "root": {"id": "Flowchart1", "type": "Elsa.Flowchart", "version": 1,
                     "activities": [], "connections": []},
        }));
    }
}

#[tokio::test]
async fn find_reads_the_latest_the_published_or_a_given_version() {
    let (elsa, backend) = seeded().await;
    three_versions(&elsa);
    let store = defs(&backend);
    let tenant = acme();
    let find = |version| store.find(&tenant, "versioned", version);
    let latest = find(VersionOptions::Latest).await.unwrap().expect("latest");
    assert_eq!((latest.version(), latest.is_published()), (3, false));
    assert_eq!(latest.version_id(), Some("versioned-v3"));
    let published = find(VersionOptions::Published)
        .await
        .unwrap()
        .expect("published");
    assert_eq!((published.version(), published.is_published()), (2, true));
    let first = find(VersionOptions::Specific(1))
        .await
        .unwrap()
        .expect("v1");
    assert_eq!(first.name(), Some("Versioned 1"));
    assert!(find(VersionOptions::Specific(4)).await.unwrap().is_none());
    assert!(
        defs(&backend)
            .find(&acme(), "no-such-definition", VersionOptions::Latest)
            .await
            .unwrap()
            .is_none()
    );
    let asked: Vec<String> = elsa
        .requests()
        .into_iter()
        .map(|r| r.path_and_query)
        .filter(|p| p.contains("/by-definition-id/versioned?"))
        .collect();
    assert_eq!(
        asked,
        [
            "/elsa/api/workflow-definitions/by-definition-id/versioned?versionOptions=Latest",
            "/elsa/api/workflow-definitions/by-definition-id/versioned?versionOptions=Published",
            "/elsa/api/workflow-definitions/by-definition-id/versioned?versionOptions=1",
            "/elsa/api/workflow-definitions/by-definition-id/versioned?versionOptions=4",
        ]
    );
}

#[tokio::test]
async fn every_fixture_definition_reads_back_as_elsa_stored_it() {
    let (elsa, backend) = seeded().await;
    let page = defs(&backend)
        .search(
            &acme(),
            &DefinitionQuery {
                page: PageRequest::new(0, PageRequest::MAX_LIMIT),
                ..DefinitionQuery::default()
            },
        )
        .await
        .unwrap();
    assert!(page.total >= 20, "the fixtures hold many definitions");
    assert_eq!(page.items.len(), page.total);
    for row in &page.items {
        let stored = elsa.versions(&row.definition_id);
        let newest = stored.last().expect("stored");
        let found = defs(&backend)
            .find(&acme(), &row.definition_id, VersionOptions::Latest)
            .await
            .unwrap()
            .expect("every listed definition is found");
        assert_eq!(found.version_id(), Some(text(newest, "id")));
        assert_eq!(
            Some(found.root().type_name()),
            newest["root"]["type"].as_str()
        );
        assert_eq!(row.activity_count, found.activity_count());
    }
    assert!(page.items.iter().any(|row| row.activity_count > 1));
}

#[tokio::test]
async fn search_matches_text_and_pages_like_one_list() {
    let (elsa, backend) = seeded().await;
    let query = |text: Option<&str>, offset, limit| DefinitionQuery {
        text: text.map(str::to_owned),
        version: VersionOptions::Latest,
        page: PageRequest::new(offset, limit),
        ..DefinitionQuery::default()
    };
    let all = defs(&backend)
        .search(&acme(), &query(None, 0, 100))
        .await
        .unwrap();
    let names: Vec<Option<String>> = all.items.iter().map(|r| r.name.clone()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "Elsa orders by name");
    assert!(all.items.iter().all(|r| r.is_latest));

    // Aligned and unaligned windows cut the same list.
    for (offset, limit) in [(0, 4), (4, 4), (2, 5), (7, 3), (all.total - 1, 5)] {
        let page = defs(&backend)
            .search(&acme(), &query(None, offset, limit))
            .await
            .unwrap();
        assert_eq!(page.total, all.total);
        assert_eq!((page.offset, page.limit), (offset, limit));
        let expected: Vec<_> = all.items.iter().skip(offset).take(limit).collect();
        let got: Vec<_> = page.items.iter().collect();
        assert_eq!(got, expected, "offset {offset}, limit {limit}");
    }

    // Text: a word from one name, in other letter case, finds it and only matching rows.
    let name = all
        .items
        .iter()
        .filter_map(|r| r.name.as_deref())
        .find(|n| n.len() > 4)
        .expect("a named definition")
        .to_owned();
    let word = name[..4].to_uppercase();
    let found = defs(&backend)
        .search(&acme(), &query(Some(&format!("  {word} ")), 0, 100))
        .await
        .unwrap();
    assert!(found.items.iter().any(|r| r.name.as_deref() == Some(&name)));
    assert!(found.total < all.total);
    let needle = word.to_lowercase();
    for row in &found.items {
        let fields = [&row.name, &row.description, &row.version_id];
        assert!(
            fields
                .iter()
                .filter_map(|f| f.as_deref())
                .chain([row.definition_id.as_str()])
                .any(|f| f.to_lowercase().contains(&needle)),
            "{row:?} does not match {word}"
        );
    }
    let sent = elsa
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.path_and_query.contains("searchTerm"))
        .expect("the term is sent");
    assert!(sent.path_and_query.contains(&format!("searchTerm={word}")));

    // Published only.
    let published = defs(&backend)
        .search(
            &acme(),
            &DefinitionQuery {
                version: VersionOptions::Published,
                page: PageRequest::new(0, 100),
                ..DefinitionQuery::default()
            },
        )
        .await
        .unwrap();
    assert!(published.items.iter().all(|r| r.is_published));
}

#[tokio::test]
async fn instances_are_found_and_searched_by_status_definition_and_time() {
    let (elsa, backend) = seeded().await;
    // Besides the fixture runs, one more is still running.
    let running = WorkflowInstance::from_value(json!({
        "id": "still-running", "definitionId": "versioned", "definitionVersionId": "versioned-v2",
        "definitionVersion": 2, "status": "Running", "subStatus": "Suspended",
        "createdAt": "2024-06-03T00:00:00+00:00",
    }))
    .expect("a readable instance");
    elsa.insert_instance(&running, Utc::now());
    let stored = elsa.instances();
    assert!(stored.len() >= 4, "the fixtures hold several instances");

    for model in &stored {
        let found = runs(&backend)
            .find(&acme(), text(model, "id"))
            .await
            .unwrap()
            .expect("stored instances are found");
        assert_eq!(found.status().as_str(), text(model, "status"));
        assert_eq!(found.definition_id(), model["definitionId"].as_str());
    }
    assert!(
        runs(&backend)
            .find(&acme(), "no-such-instance")
            .await
            .unwrap()
            .is_none()
    );

    let search = |query: InstanceQuery| {
        let backend = &backend;
        async move { runs(backend).search(&acme(), &query).await.unwrap() }
    };
    let all = search(InstanceQuery {
        page: PageRequest::new(0, 100),
        ..InstanceQuery::default()
    })
    .await;
    assert_eq!(all.total, stored.len());
    let created: Vec<DateTime<Utc>> = all
        .items
        .iter()
        .map(|i| i.created_at().expect("Elsa always stores a creation time"))
        .collect();
    assert!(created.windows(2).all(|w| w[0] >= w[1]), "newest first");

    // Status.
    let finished = search(InstanceQuery {
        status: Some(WorkflowStatus::Finished),
        page: PageRequest::new(0, 100),
        ..InstanceQuery::default()
    })
    .await;
    let expected = stored.iter().filter(|m| text(m, "status") == "Finished");
    eprintln!(
        "{:?}",
        stored
            .iter()
            .map(|m| (text(m, "status"), text(m, "createdAt")))
            .collect::<Vec<_>>()
    );
    assert_eq!(finished.total, expected.count());
    assert!(finished.total > 0 && finished.total < all.total);
    assert!(
        finished
            .items
            .iter()
            .all(|i| i.status() == WorkflowStatus::Finished)
    );

    let suspended = search(InstanceQuery {
        sub_status: Some(WorkflowSubStatus::Suspended),
        page: PageRequest::new(0, 100),
        ..InstanceQuery::default()
    })
    .await;
    let mut ids: Vec<&str> = suspended.items.iter().map(|i| i.id()).collect();
    ids.sort_unstable();
    let mut expected: Vec<&str> = stored
        .iter()
        .filter(|m| text(m, "subStatus") == "Suspended")
        .map(|m| text(m, "id"))
        .collect();
    expected.sort_unstable();
    assert!(expected.contains(&"still-running"), "{expected:?}");
    assert_eq!(ids, expected);

    // Definition.
    let definition = text(&stored[0], "definitionId").to_owned();
    let of_definition = search(InstanceQuery {
        definition_ids: vec![definition.clone()],
        page: PageRequest::new(0, 100),
        ..InstanceQuery::default()
    })
    .await;
    assert!(of_definition.total >= 1);
    assert!(
        of_definition
            .items
            .iter()
            .all(|i| i.definition_id() == Some(definition.as_str()))
    );

    // Time range, both ends inclusive, including an end at midnight (which Elsa would
    // otherwise read as the whole day).
    let newest = created[0];
    let oldest = *created.last().unwrap();
    let range = TimeRange {
        from: oldest + TimeDelta::seconds(1),
        to: newest,
    };
    let within = search(InstanceQuery {
        time_range: Some(range),
        page: PageRequest::new(0, 100),
        ..InstanceQuery::default()
    })
    .await;
    let expected = created
        .iter()
        .filter(|c| **c >= range.from && **c <= range.to);
    assert_eq!(within.total, expected.count());
    assert!(within.total < all.total);
    let midnight: DateTime<Utc> = format!("{}T00:00:00Z", newest.date_naive())
        .parse()
        .unwrap();
    let before_midnight = search(InstanceQuery {
        time_range: Some(TimeRange {
            from: oldest - TimeDelta::days(3650),
            to: midnight,
        }),
        page: PageRequest::new(0, 100),
        ..InstanceQuery::default()
    })
    .await;
    let expected = created.iter().filter(|c| **c <= midnight);
    assert_eq!(before_midnight.total, expected.count());
    let sent = elsa
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.method == "POST" && r.path_and_query == "/elsa/api/workflow-instances")
        .and_then(|r| r.body)
        .expect("a POSTed filter");
    assert_eq!(sent["timestampFilters"][1]["operator"], "LessThan");

    // Paging: every window is a slice of the one list.
    for (offset, limit) in [(0, 2), (1, 2), (3, 2), (1, 10)] {
        let page = search(InstanceQuery {
            page: PageRequest::new(offset, limit),
            ..InstanceQuery::default()
        })
        .await;
        assert_eq!(page.total, all.total);
        let ids: Vec<&str> = page.items.iter().map(|i| i.id()).collect();
        let expected: Vec<&str> = all
            .items
            .iter()
            .skip(offset)
            .take(limit)
            .map(|i| i.id())
            .collect();
        assert_eq!(ids, expected, "offset {offset}, limit {limit}");
    }
}

#[tokio::test]
async fn the_catalog_is_elsas_descriptors() {
    let (elsa, backend) = seeded().await;
    elsa.insert_descriptor(&json!({
        "typeName": "Acme.Begin", "kind": "Action", "isStart": true, "isBrowsable": false
    }));
    let catalog = ActivityCatalog::list(&backend, &acme()).await.unwrap();
    assert_eq!(catalog.len(), elsa.catalog().len());
    let decision = catalog
        .iter()
        .find(|d| d.type_name == "Elsa.FlowDecision")
        .expect("FlowDecision is in Elsa's catalog");
    assert_eq!(decision.outcomes, ["True", "False"]);
    let fork = catalog
        .iter()
        .find(|d| d.type_name == "Elsa.FlowFork")
        .expect("FlowFork is in Elsa's catalog");
    assert!(fork.dynamic_outcomes.is_some(), "read from the UI hint");
    assert!(
        catalog.iter().any(|d| !d.ports.is_empty()),
        "embedded ports"
    );
    // Elsa Server writes `isBrowsable`, `isStart` and `isTerminal` on every descriptor.
    let begin = catalog
        .iter()
        .find(|d| d.type_name == "Acme.Begin")
        .expect("the inserted descriptor");
    assert!(begin.is_start && !begin.is_browsable && !begin.is_terminal);
    assert!(begin.can_start_workflow());
    assert!(decision.is_browsable && !decision.is_start && !decision.can_start_workflow());
    assert_eq!(
        elsa.catalog()
            .iter()
            .find(|d| d["typeName"] == "Acme.Begin")
            .map(|d| (d["isStart"].clone(), d["isBrowsable"].clone())),
        Some((json!(true), json!(false)))
    );
    // Another Weaver tenant sees nothing, and nothing is asked of Elsa for it.
    let before = elsa.requests().len();
    let other = ActivityCatalog::list(&backend, &TenantId::new("globex"))
        .await
        .unwrap();
    assert!(other.is_empty());
    assert!(
        defs(&backend)
            .find(
                &TenantId::new("globex"),
                "versioned",
                VersionOptions::Latest
            )
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(elsa.requests().len(), before);
}

fn draft(definition_id: &str, name: &str, publish: bool) -> WorkflowDefinition {
    let mut definition = WorkflowDefinition::new_flowchart(definition_id, name);
    definition.set_published(publish);
    definition
}

#[tokio::test]
async fn the_writer_creates_and_updates_returning_the_new_version() {
    let (elsa, backend) = seeded().await;
    let created = backend
        .create(&acme(), draft("weaver-made", "Made by Weaver", true))
        .await
        .unwrap();
    assert_eq!(
        (created.definition_id.as_str(), created.version),
        ("weaver-made", 1)
    );
    let stored = elsa.versions("weaver-made");
    assert_eq!(stored.len(), 1);
    assert_eq!(text(&stored[0], "id"), created.version_id);
    assert_eq!(stored[0]["isPublished"], true);
    let post = elsa
        .requests()
        .into_iter()
        .find(|r| r.method == "POST" && r.path_and_query == "/elsa/api/workflow-definitions")
        .expect("a save request");
    let body = post.body.expect("a JSON body");
    assert_eq!(body["publish"], true);
    assert_eq!(body["model"]["definitionId"], "weaver-made");

    let updated = backend
        .update(
            &acme(),
            "weaver-made",
            1,
            draft("weaver-made", "Renamed", true),
        )
        .await
        .unwrap();
    assert_eq!(updated.version, 2);
    assert_ne!(updated.version_id, created.version_id);
    let stored = elsa.versions("weaver-made");
    assert_eq!(stored.len(), 2);
    assert_eq!(text(&stored[1], "id"), updated.version_id);
    assert_eq!(text(&stored[1], "name"), "Renamed");
    assert_eq!(
        (
            stored[0]["isPublished"].clone(),
            stored[1]["isLatest"].clone()
        ),
        (json!(false), json!(true))
    );
    let latest = defs(&backend)
        .find(&acme(), "weaver-made", VersionOptions::Latest)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest.version_id(), Some(updated.version_id.as_str()));

    // An existing id cannot be created again.
    let error = backend
        .create(&acme(), draft("weaver-made", "Again", true))
        .await
        .unwrap_err();
    assert!(matches!(error, WorkflowError::Conflict { .. }), "{error}");
    assert_eq!(elsa.versions("weaver-made").len(), 2);
}

#[tokio::test]
async fn stale_and_concurrent_saves_are_conflicts() {
    let (elsa, backend) = seeded().await;
    backend
        .create(&acme(), draft("contested", "Contested", true))
        .await
        .unwrap();
    backend
        .update(&acme(), "contested", 1, draft("contested", "Second", true))
        .await
        .unwrap();

    // A second write from the same baseline is stale: nothing is sent.
    let saves = |elsa: &ElsaApiStandIn| {
        elsa.requests()
            .iter()
            .filter(|r| r.method == "POST" && r.path_and_query.ends_with("workflow-definitions"))
            .count()
    };
    let before = saves(&elsa);
    let error = backend
        .update(&acme(), "contested", 1, draft("contested", "Stale", true))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, WorkflowError::Conflict { message } if message.contains("version 2")),
        "{error}"
    );
    assert_eq!(saves(&elsa), before);
    assert_eq!(elsa.versions("contested").len(), 2);

    // Another client publishes between Weaver's check and its save: Elsa stores Weaver's
    // change after it, and the writer reports the conflict instead of success.
    elsa.concurrent_save_before_next(ConcurrentSave::PublishedVersion);
    let error = backend
        .update(&acme(), "contested", 2, draft("contested", "Raced", true))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, WorkflowError::Conflict { message } if message.contains("version 4")),
        "{error}"
    );
    assert_eq!(elsa.versions("contested").len(), 4);

    // An unpublished draft on top would be overwritten in place: refused, nothing sent.
    three_versions(&elsa);
    let before = saves(&elsa);
    let error = backend
        .update(
            &acme(),
            "versioned",
            3,
            draft("versioned", "Over a draft", true),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&error, WorkflowError::Conflict { message } if message.contains("draft")),
        "{error}"
    );
    assert_eq!(saves(&elsa), before);

    // A definition Elsa does not have cannot be updated; another tenant's neither.
    let error = backend
        .update(&acme(), "missing", 1, draft("missing", "Missing", true))
        .await
        .unwrap_err();
    assert!(matches!(error, WorkflowError::NotFound { .. }), "{error}");
    let error = backend
        .update(
            &TenantId::new("globex"),
            "contested",
            4,
            draft("contested", "X", true),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, WorkflowError::NotFound { .. }), "{error}");
}

#[tokio::test]
async fn a_refused_key_is_unauthorized_and_never_quoted() {
    let elsa = ElsaApiStandIn::with_fixtures("ApiKey the-right-key").await;
    let backend = backend(config(elsa.url()));
    let error = defs(&backend)
        .find(&acme(), "anything", VersionOptions::Latest)
        .await
        .unwrap_err();
    assert!(
        matches!(error, WorkflowError::Unauthorized { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("401"), "{error}");
    assert_no_secret(&error);
    let error = ActivityCatalog::list(&backend, &acme()).await.unwrap_err();
    assert!(
        matches!(error, WorkflowError::Unauthorized { .. }),
        "{error}"
    );
    // The key went to Elsa in the header, as Elsa's API key scheme reads it.
    let sent = elsa.requests();
    assert!(
        sent.iter()
            .all(|r| r.authorization.as_deref() == Some(authorization().as_str()))
    );
}

#[tokio::test]
async fn a_404_is_none_for_lookups_and_a_wrong_url_otherwise() {
    let elsa = ElsaApiStandIn::with_fixtures(&authorization()).await;
    elsa.fail_with(Some(404));
    let elsa_backend = backend(config(elsa.url()));
    assert!(
        defs(&elsa_backend)
            .find(&acme(), "anything", VersionOptions::Latest)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        runs(&elsa_backend)
            .find(&acme(), "anything")
            .await
            .unwrap()
            .is_none()
    );
    let error = defs(&elsa_backend)
        .search(&acme(), &DefinitionQuery::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, WorkflowError::Backend { message } if message.contains("404")),
        "{error}"
    );
    assert_no_secret(&error);
    elsa.fail_with(None);

    // An API path Elsa does not serve.
    let misplaced = backend(config(elsa.url()).api_path("api/v2"));
    let error = ActivityCatalog::list(&misplaced, &acme())
        .await
        .unwrap_err();
    assert!(matches!(error, WorkflowError::Backend { .. }), "{error}");
}

#[tokio::test]
async fn server_errors_are_unavailable_and_the_echoed_key_is_scrubbed() {
    let elsa = ElsaApiStandIn::with_fixtures(&authorization()).await;
    let backend = backend(config(elsa.url()));
    for status in [500, 502, 503] {
        elsa.fail_with(Some(status));
        let error = defs(&backend)
            .find(&acme(), "anything", VersionOptions::Latest)
            .await
            .unwrap_err();
        assert!(
            matches!(error, WorkflowError::Unavailable { .. }),
            "{error}"
        );
        assert!(error.to_string().contains(&status.to_string()), "{error}");
        // Elsa's error page echoed the header; the excerpt keeps the rest of it.
        assert!(error.to_string().contains("Unhandled exception"), "{error}");
        assert!(error.to_string().contains("[redacted]"), "{error}");
        assert_no_secret(&error);
        let error = backend
            .update(&acme(), "anything", 1, draft("anything", "A", true))
            .await
            .unwrap_err();
        assert!(
            matches!(error, WorkflowError::Unavailable { .. }),
            "{error}"
        );
        assert_no_secret(&error);
    }
    elsa.fail_with(None);
    assert!(ActivityCatalog::list(&backend, &acme()).await.is_ok());
}

#[tokio::test]
async fn refused_connections_and_timeouts_are_unavailable() {
    let elsa = ElsaApiStandIn::start(&authorization()).await;
    let url = elsa.url().to_owned();
    elsa.shutdown().await;
    let gone = backend(config(&url));
    let error = ActivityCatalog::list(&gone, &acme()).await.unwrap_err();
    assert!(
        matches!(&error, WorkflowError::Unavailable { message } if message.contains("cannot connect")),
        "{error}"
    );
    assert_no_secret(&error);

    // A server that accepts the connection and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", silent.local_addr().unwrap());
    let slow = backend(config(&url).timeout(Duration::from_millis(300)));
    let error = runs(&slow).find(&acme(), "x").await.unwrap_err();
    assert!(
        matches!(&error, WorkflowError::Unavailable { message } if message.contains("did not answer")),
        "{error}"
    );
    assert_no_secret(&error);
}

/// A server that answers every request with `200` and `body`.
async fn answering(body: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut seen = Vec::new();
            let mut buffer = [0_u8; 4096];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match socket.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&buffer[..n]),
                }
            }
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(answer.as_bytes()).await;
        }
    });
    url
}

#[tokio::test]
async fn unreadable_answers_name_the_json_path() {
    let rows = backend(config(
        &answering(r#"{"items": [{"id": "i1", "status": "Running", "subStatus": "Executing"}, {"id": "i2", "status": 7, "subStatus": "Executing"}], "totalCount": 2}"#)
            .await,
    ));
    let error = runs(&rows)
        .search(&acme(), &InstanceQuery::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, WorkflowError::InvalidAnswer(p) if p.path.starts_with("$.items[1]")),
        "{error:?}"
    );
    let not_a_list = backend(config(&answering(r#"{"items": "none"}"#).await));
    let error = defs(&not_a_list)
        .search(&acme(), &DefinitionQuery::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, WorkflowError::InvalidAnswer(p) if p.path == "$.items"),
        "{error:?}"
    );
    let html = backend(config(&answering("<html>login</html>").await));
    let error = ActivityCatalog::list(&html, &acme()).await.unwrap_err();
    assert!(
        matches!(&error, WorkflowError::InvalidAnswer(_)),
        "{error:?}"
    );
    assert!(error.to_string().contains("not JSON"), "{error}");
    let saved = backend(config(
        &answering(r#"{"workflowDefinition": {"definitionId": "x"}}"#).await,
    ));
    let error = saved
        .create(&acme(), draft("x", "X", false))
        .await
        .unwrap_err();
    // The existence check reads `{"workflowDefinition": …}` as a definition first.
    assert!(
        matches!(&error, WorkflowError::InvalidAnswer(_)),
        "{error:?}"
    );
}

#[tokio::test]
async fn the_elsa_tenant_goes_in_the_tenant_header() {
    let elsa = ElsaApiStandIn::with_fixtures(&authorization()).await;
    elsa.require_tenant_header("elsa-tenant-7");
    let with_tenant = backend(config(elsa.url()).elsa_tenant_id("elsa-tenant-7"));
    assert!(
        !ActivityCatalog::list(&with_tenant, &acme())
            .await
            .unwrap()
            .is_empty()
    );
    let created = with_tenant
        .create(&acme(), draft("tenanted", "Tenanted", true))
        .await
        .unwrap();
    assert_eq!(created.version, 1);
    let sent = elsa.requests();
    assert!(sent.len() >= 3);
    assert!(
        sent.iter()
            .all(|r| r.tenant.as_deref() == Some("elsa-tenant-7"))
    );

    let without = backend(config(elsa.url()));
    let error = ActivityCatalog::list(&without, &acme()).await.unwrap_err();
    assert!(matches!(error, WorkflowError::Backend { .. }), "{error}");
    assert!(elsa.requests().last().unwrap().tenant.is_none());
}

#[tokio::test]
async fn activity_executions_the_execution_log_and_incidents_come_from_elsas_own_records() {
    use elsa_workflows::{ExecutionRecordStore, IncidentQuery, IncidentStore};
    use weaver_testkit::runs::{FaultedRun, RUN_DEFINITION, SECRET_VARIABLE, UPLOAD_EXECUTION};

    let (elsa, backend) = seeded().await;
    FaultedRun::new("run-1", "2024-06-03T10:00:00Z").serve(&elsa);
    FaultedRun::new("run-2", "2024-06-04T10:00:00Z").serve(&elsa);

    let records = backend
        .activity_executions(&acme(), "run-1")
        .await
        .expect("records");
    let ids: Vec<&str> = records.iter().filter_map(|r| r.id.as_deref()).collect();
    assert_eq!(
        ids,
        [
            "exec-flowchart",
            "exec-start",
            "exec-collect",
            UPLOAD_EXECUTION
        ],
        "run-1's records only, in start order"
    );
    let upload = &records[3];
    assert_eq!(upload.inputs["Method"], "PUT");
    assert_eq!(upload.outputs["StatusCode"], 503);
    assert_eq!(
        upload.exception.as_ref().and_then(|e| e.short_type_name()),
        Some("System.Net.Http.HttpRequestException")
    );
    assert_eq!(upload.path, "$.items[3]");
    assert_eq!(records[0].variables["c7e1f0a29b3d4e58"], SECRET_VARIABLE);
    assert_eq!(records[0].variables["invoice-count"], 42);
    let asked = elsa.requests();
    assert!(
        asked.iter().any(|r| r.method == "GET"
            && r.path_and_query == "/elsa/api/activity-executions/list?workflowInstanceId=run-1"),
        "{asked:?}"
    );

    let log = backend
        .execution_log(&acme(), "run-1", PageRequest::new(2, 3))
        .await
        .expect("log");
    assert_eq!(log.total, 7);
    let events: Vec<(i64, &str)> = log
        .items
        .iter()
        .map(|e| (e.sequence, e.event_name.as_deref().unwrap_or_default()))
        .collect();
    assert_eq!(events, [(2, "Completed"), (3, "Started"), (4, "Completed")]);
    assert_eq!(
        log.items[0].node_id.as_deref(),
        Some("Workflow1:Flowchart1:Start1")
    );
    assert!(
        elsa.requests()
            .iter()
            .any(|r| r.path_and_query == "/elsa/api/workflow-instances/run-1/journal?skip=2&take=3")
    );

    // Incidents: both runs' and the fixtures', newest first.
    let all = IncidentStore::search(&backend, &acme(), &IncidentQuery::default())
        .await
        .expect("incidents");
    assert!(all.complete);
    let instances: Vec<&str> = all
        .incidents
        .items
        .iter()
        .map(|i| i.instance_id.as_str())
        .collect();
    let position = |id: &str| instances.iter().position(|i| *i == id);
    assert!(position("run-2") < position("run-1"), "{instances:?}");
    assert!(
        position("run-1").is_some() && instances.len() > 2,
        "the fixtures' faulted instance too"
    );
    let times: Vec<_> = all
        .incidents
        .items
        .iter()
        .map(|i| i.incident.timestamp)
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {times:?}"
    );
    assert_eq!(all.instances_read, instances.len());
    let listing = elsa
        .requests()
        .into_iter()
        .rfind(|r| r.method == "POST")
        .and_then(|r| r.body)
        .expect("an instance listing");
    assert_eq!(listing["hasIncidents"], true);
    assert_eq!(listing["orderBy"], "UpdatedAt");

    let narrowed = IncidentStore::search(
        &backend,
        &acme(),
        &IncidentQuery {
            definition_ids: vec![RUN_DEFINITION.to_owned()],
            activity_type: Some("elsa.sendhttprequest".to_owned()),
            time_range: Some(TimeRange {
                from: "2024-06-04T00:00:00Z".parse().unwrap(),
                to: "2024-06-05T00:00:00Z".parse().unwrap(),
            }),
            page: PageRequest::new(0, 10),
            ..IncidentQuery::default()
        },
    )
    .await
    .expect("incidents");
    let found: Vec<(&str, Option<&str>)> = narrowed
        .incidents
        .items
        .iter()
        .map(|i| {
            (
                i.instance_id.as_str(),
                i.incident.activity_instance_id.as_deref(),
            )
        })
        .collect();
    assert_eq!(found, [("run-2", Some(UPLOAD_EXECUTION))]);
    let listing = elsa
        .requests()
        .into_iter()
        .rfind(|r| r.method == "POST")
        .and_then(|r| r.body)
        .expect("an instance listing");
    assert_eq!(listing["definitionIds"], json!([RUN_DEFINITION]));
    assert_eq!(listing["timestampFilters"][0]["column"], "UpdatedAt");

    // The stand-in applies the endpoint's other filters as Elsa's filter does.
    let list = |query: &'static str| {
        let url = format!("{}elsa/api/activity-executions/list?{query}", elsa.url());
        async move {
            let answer: Value = reqwest::Client::new()
                .get(url)
                .header("Authorization", authorization())
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            answer["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| text(r, "id").to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        list("workflowInstanceId=run-2&activityNodeId=Workflow1:Flowchart1:Start1").await,
        ["exec-start"]
    );
    assert_eq!(
        list("workflowInstanceId=run-2&completed=false").await,
        ["exec-flowchart"]
    );
    assert_eq!(list("completed=true").await.len(), 6, "both runs");
    let journal = |query: &'static str| {
        let url = format!(
            "{}elsa/api/workflow-instances/run-2/journal{query}",
            elsa.url()
        );
        async move {
            let answer: Value = reqwest::Client::new()
                .get(url)
                .header("Authorization", authorization())
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let sequences: Vec<i64> = answer["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|e| e["sequence"].as_i64())
                .collect();
            (sequences, answer["totalCount"].clone())
        }
    };
    assert_eq!(journal("?page=1&pageSize=2").await, (vec![2, 3], json!(7)));
    assert_eq!(journal("").await.0.len(), 7, "page 0 of 100 by default");

    // Another tenant: nothing, and nothing asked of Elsa.
    let before = elsa.requests().len();
    let globex = TenantId::new("globex");
    assert!(
        backend
            .activity_executions(&globex, "run-1")
            .await
            .unwrap()
            .is_empty()
    );
    let log = backend
        .execution_log(&globex, "run-1", PageRequest::new(0, 10))
        .await
        .unwrap();
    assert_eq!(log.total, 0);
    let none = IncidentStore::search(&backend, &globex, &IncidentQuery::default())
        .await
        .unwrap();
    assert_eq!(none.incidents.total, 0);
    assert_eq!(elsa.requests().len(), before);

    // A record Elsa answers with in a shape this crate cannot read names its place.
    elsa.insert_activity_execution(json!({
        "id": "bad", "workflowInstanceId": "run-1", "startedAt": "yesterday"
    }));
    let error = backend
        .activity_executions(&acme(), "run-1")
        .await
        .expect_err("unreadable");
    assert!(
        matches!(&error, WorkflowError::InvalidAnswer(p) if p.path == "$.items[0].startedAt"),
        "{error:?}"
    );
}
