//! The REST side over a real socket: every status of SPEC §6 with its stable code, bad
//! bodies, identity (API keys, HS256 and RS256 bearer tokens) and the OpenAPI document.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use elsa_ai_abstractions::AiError;
use elsa_ai_scripted::{Script, ScriptedProvider};
use elsa_ai_server::Weaver;
use elsa_ai_server::config::{JwtAlgorithmConfig, JwtConfig};
use elsa_ai_server::testing::{ALICE_KEY, BOB_KEY, TestServer, two_tenants};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode, get_current_timestamp};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const ORDER_APPROVAL: &str = "sample-order-approval";

fn assert_error(actual: (StatusCode, Value), status: u16, code: &str) {
    let (actual_status, body) = actual;
    assert_eq!(
        (actual_status.as_u16(), body["code"].as_str()),
        (status, Some(code)),
        "{body}"
    );
    assert_eq!(body["status"], status);
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "every error has a message: {body}"
    );
}

async fn raw(
    server: &TestServer,
    method: Method,
    path: &str,
    key: &str,
    body: &'static [u8],
) -> (StatusCode, Value) {
    let response = server
        .request(method, path, key)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn bad_bodies_are_400_with_a_clear_code_never_500() {
    let server = TestServer::start(two_tenants()).await;
    let cases: [(&[u8], &str); 6] = [
        (b"{\"message\": ", "malformed_json"),
        (b"{\"message\": \"caf\xe9\"}", "invalid_utf8"),
        (b"", "missing_body"),
        (b"{\"message\": 42}", "invalid_body"),
        (b"{\"message\": \"hi\", \"conversationID\": \"c\"}", "invalid_body"),
        (
            b"{\"message\": \"hi\", \"attachments\": [{\"kind\": \"Secrets\", \"referenceId\": \"x\"}]}",
            "unsupported_attachment_kind",
        ),
    ];
    for (body, code) in cases {
        assert_error(
            raw(&server, Method::POST, "/ai/chat", ALICE_KEY, body).await,
            400,
            code,
        );
    }
    // A wrong value deep in the body is named by its path; trailing text is refused.
    let (status, body) = raw(
        &server,
        Method::POST,
        "/ai/chat",
        ALICE_KEY,
        b"{\"message\": \"hi\", \"attachments\": [{\"kind\": \"WorkflowDefinition\", \"referenceId\": 7}]}",
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("attachments[0].referenceId"),
        "{body}"
    );
    assert_error(
        raw(
            &server,
            Method::POST,
            "/ai/chat",
            ALICE_KEY,
            b"{\"message\": \"hi\"} {}",
        )
        .await,
        400,
        "malformed_json",
    );
    assert_error(
        server
            .post("/ai/chat", ALICE_KEY, &json!({"message": "  "}))
            .await,
        400,
        "empty_message",
    );
    assert_error(
        server
            .get("/ai/tools?mutability=Sometimes", ALICE_KEY)
            .await,
        400,
        "invalid_query",
    );
    assert_error(
        server.get("/ai/proposals/%FF%FE", ALICE_KEY).await,
        400,
        "invalid_path",
    );
    let response = server
        .request(Method::GET, "/ai/chat/whatever/events", ALICE_KEY)
        .header("last-event-id", "yesterday")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        response.json::<Value>().await.unwrap()["code"],
        "invalid_last_event_id"
    );
    // An invalid transition request: a rejection without a reason.
    let (proposal, _) = server.demo_proposal(ALICE_KEY, ORDER_APPROVAL).await;
    assert_error(
        server
            .post(
                &format!("/ai/proposals/{proposal}/reject"),
                ALICE_KEY,
                &json!({"reason": " "}),
            )
            .await,
        400,
        "reason_required",
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn oversize_bodies_and_messages_are_413() {
    let mut config = two_tenants();
    config.limits.max_body_bytes = Some(2048);
    config.limits.max_message_bytes = Some(512);
    let server = TestServer::start(config).await;
    let big = json!({"message": "x".repeat(4096)});
    assert_error(
        server.post("/ai/chat", ALICE_KEY, &big).await,
        413,
        "payload_too_large",
    );

    // Without a Content-Length the limit is enforced while the body streams in.
    let chunks: Vec<Result<Bytes, std::io::Error>> =
        (0..8).map(|_| Ok(Bytes::from(vec![b' '; 1024]))).collect();
    let response = server
        .request(Method::POST, "/ai/chat", ALICE_KEY)
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        response.json::<Value>().await.unwrap()["code"],
        "payload_too_large"
    );

    // Within the body limit, above the message limit: the orchestrator's 413.
    let long = json!({"message": "y".repeat(1024)});
    assert_error(
        server.post("/ai/chat", ALICE_KEY, &long).await,
        413,
        "payload_too_large",
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn no_or_wrong_credentials_are_401() {
    let server = TestServer::start(two_tenants()).await;
    let response = server
        .client
        .get(server.url("/ai/tools"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(response.headers().contains_key("www-authenticate"));
    assert_eq!(
        response.json::<Value>().await.unwrap()["code"],
        "unauthenticated"
    );
    assert_error(
        server.get("/ai/tools", "not-a-configured-key-at-all").await,
        401,
        "invalid_api_key",
    );
    let bearer = server
        .client
        .get(server.url("/ai/capabilities"))
        .bearer_auth("a.b.c")
        .send()
        .await
        .unwrap();
    assert_eq!(
        bearer.status(),
        StatusCode::UNAUTHORIZED,
        "no JWT issuer is configured"
    );
    // 401 comes before the body is even read.
    let early = server
        .client
        .post(server.url("/ai/chat"))
        .body("{")
        .send()
        .await
        .unwrap();
    assert_eq!(early.status(), StatusCode::UNAUTHORIZED);
    assert_error(
        raw(&server, Method::POST, "/ai/chat", "", b"{").await,
        401,
        "invalid_authorization_header",
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn missing_permissions_are_403() {
    let server = TestServer::start(two_tenants()).await;
    assert_error(
        server.get("/ai/audit", BOB_KEY).await,
        403,
        "permission_denied",
    );
    assert_error(
        server.get("/ai/admin/tools", BOB_KEY).await,
        403,
        "permission_denied",
    );
    let change = server
        .request(
            Method::PUT,
            "/ai/admin/tools/workflow.proposeUpdate/enablement",
            BOB_KEY,
        )
        .json(&json!({"enabled": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(change.status(), StatusCode::FORBIDDEN);
    assert_error(
        server.get("/ai/proposals", BOB_KEY).await,
        403,
        "permission_denied",
    );
    let (proposal, _) = server.demo_proposal(ALICE_KEY, ORDER_APPROVAL).await;
    let (status, _) = server.proposal_action(BOB_KEY, &proposal, "approve").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // The denied enablement change was audited.
    let (_, trail) = server
        .get("/ai/audit?actor=bob&outcome=Denied", ALICE_KEY)
        .await;
    assert!(trail["total"].as_u64().unwrap() >= 1, "{trail}");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn unknown_references_conversations_proposals_and_routes_are_404() {
    let server = TestServer::start(two_tenants()).await;
    let (status, body) = server
        .get("/ai/proposals/no-such-proposal", ALICE_KEY)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_error(
        server
            .get("/ai/conversations/no-such-conversation", ALICE_KEY)
            .await,
        404,
        "conversation_not_found",
    );
    let resume = server
        .request(
            Method::GET,
            "/ai/chat/no-such-conversation/events",
            ALICE_KEY,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resume.status(), StatusCode::NOT_FOUND);
    let (status, _) = server
        .post(
            "/ai/chat",
            ALICE_KEY,
            &json!({"message": "hi", "attachments": [{"kind": "WorkflowDefinition", "referenceId": "no-such-workflow"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = server
        .post(
            "/ai/chat",
            ALICE_KEY,
            &json!({"message": "hi", "agent": "no-such-agent"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(
        server.get("/ai/nothing-here", ALICE_KEY).await,
        404,
        "route_not_found",
    );
    let (status, body) = raw(&server, Method::DELETE, "/ai/tools", ALICE_KEY, b"").await;
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (405, Some("method_not_allowed"))
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_second_turn_while_one_runs_and_acting_on_a_final_proposal_are_409() {
    let server = TestServer::start_with(Weaver::builder(two_tenants()).provider(Arc::new(
        ScriptedProvider::new(Script::new().delay(Duration::from_secs(2)).reply("done")),
    )))
    .await;
    let mut stream = server.chat(ALICE_KEY, &json!({"message": "first"})).await;
    let started = stream.next_event().await.unwrap();
    let conversation = started.json()["conversationId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_error(
        server
            .post(
                "/ai/chat",
                ALICE_KEY,
                &json!({"message": "second", "conversationId": conversation}),
            )
            .await,
        409,
        "turn_in_progress",
    );
    drop(stream);
    server.shutdown().await.unwrap();

    let server = TestServer::start(two_tenants()).await;
    let (proposal, _) = server.demo_proposal(ALICE_KEY, ORDER_APPROVAL).await;
    let act = |action| server.proposal_action(ALICE_KEY, &proposal, action);
    assert_eq!(act("approve").await.0, StatusCode::OK);
    assert_eq!(act("apply").await.0, StatusCode::OK);
    let (status, body) = act("apply").await;
    assert_eq!(status, StatusCode::CONFLICT, "applied at most once: {body}");
    assert_eq!(body["currentState"], "Applied");

    // A proposal against a baseline that moved on is stale.
    let (second, _) = server
        .demo_proposal(ALICE_KEY, "sample-http-hello-world")
        .await;
    let (third, _) = server
        .demo_proposal(ALICE_KEY, "sample-http-hello-world")
        .await;
    for id in [&second, &third] {
        let (status, _) = server.proposal_action(ALICE_KEY, id, "approve").await;
        assert_eq!(status, StatusCode::OK);
    }
    assert_eq!(
        server.proposal_action(ALICE_KEY, &second, "apply").await.0,
        StatusCode::OK
    );
    assert_error(
        server.proposal_action(ALICE_KEY, &third, "apply").await,
        409,
        "stale_baseline",
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_apply_whose_validation_fails_now_is_422_with_the_diagnostics() {
    let server = TestServer::start(two_tenants()).await;
    // A change that adds an activity type the stored workflow does not use.
    server
        .enable_tool(ALICE_KEY, "workflow.proposeUpdate")
        .await;
    let client = weaver_testkit::mcp::weaver_client(&server.url("/mcp"), ALICE_KEY).await;
    let proposed = weaver_testkit::mcp::call_tool(
        &client,
        "workflow.proposeUpdate",
        json!({
            "definitionId": ORDER_APPROVAL, "baselineVersion": 2,
            "operations": [{"op": "addActivity", "activity": {"id": "later", "type": "Elsa.End"}}],
            "rationale": "End explicitly."
        }),
    )
    .await;
    client.cancel().await.unwrap();
    let proposal = proposed.structured_content.expect("a proposal")["proposalId"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _) = server
        .proposal_action(ALICE_KEY, &proposal, "approve")
        .await;
    assert_eq!(status, StatusCode::OK);
    // The tenant's activity catalog loses that type between approval and apply. (Types the
    // stored version uses too would only be warnings: they predate the proposal.)
    let catalog = elsa_workflows::builtin_catalog()
        .iter()
        .filter(|d| d.type_name != "Elsa.End")
        .cloned()
        .collect();
    server.workflows.set_catalog(&"acme".into(), catalog);
    let (status, body) = server.proposal_action(ALICE_KEY, &proposal, "apply").await;
    assert_eq!(status.as_u16(), 422, "{body}");
    assert_eq!(body["code"], "validation_failed");
    let diagnostics = body["diagnostics"].as_array().unwrap();
    assert!(
        diagnostics
            .iter()
            .any(|d| d["activityId"] == "later" && d["severity"] == "Error"),
        "{body}"
    );
    assert!(
        diagnostics
            .iter()
            .all(|d| d["code"].is_string() && d["path"].is_string())
    );
    let (_, after) = server
        .get(&format!("/ai/proposals/{proposal}"), ALICE_KEY)
        .await;
    assert_eq!(after["status"], "Blocked", "nothing was written");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_unavailable_provider_runtime_is_503() {
    let down = ScriptedProvider::new(Script::new()).failing_sessions(AiError::unavailable(
        "provider_unavailable",
        "the model runtime is not reachable",
    ));
    let server =
        TestServer::start_with(Weaver::builder(two_tenants()).provider(Arc::new(down))).await;
    assert_error(
        server
            .post("/ai/chat", ALICE_KEY, &json!({"message": "hi"}))
            .await,
        503,
        "provider_unavailable",
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn hs256_and_rs256_bearer_tokens_identify_callers_by_configured_claims() {
    const SECRET: &str = "a-shared-hs256-secret-of-32-bytes-or-more";
    let mut config = two_tenants();
    config.auth.jwt = Some(JwtConfig {
        algorithm: JwtAlgorithmConfig::Hs256,
        secret_env: Some("TEST_JWT_SECRET".into()),
        public_key_path: None,
        public_key_env: None,
        issuer: Some("https://id.example".into()),
        audience: Some("weaver".into()),
        actor_claim: Some("email".into()),
        tenant_claim: Some("org".into()),
        permissions_claim: Some("scope".into()),
        leeway_secs: None,
        tenant: None,
        required_claims: Default::default(),
    });
    let server = TestServer::start_with(
        Weaver::builder(config.clone())
            .env(|name| (name == "TEST_JWT_SECRET").then(|| SECRET.to_owned())),
    )
    .await;
    let claims = json!({
        "email": "carol@acme.example", "org": "acme", "scope": "read:workflows read:activities",
        "iss": "https://id.example", "aud": "weaver", "exp": get_current_timestamp() + 300,
    });
    let token = encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(SECRET.as_bytes()).unwrap(),
    )
    .unwrap();
    let tools: Value = server
        .client
        .get(server.url("/ai/tools"))
        .bearer_auth(&token)
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
    assert!(names.contains(&"workflow.getDefinition"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("instance.")),
        "the token grants no instance reads"
    );
    let wrong_audience = encode(
        &Header::new(Algorithm::HS256),
        &json!({"email": "c", "org": "acme", "iss": "https://id.example", "aud": "other", "exp": get_current_timestamp() + 300}),
        &EncodingKey::from_secret(SECRET.as_bytes()).unwrap(),
    )
    .unwrap();
    let response = server
        .client
        .get(server.url("/ai/tools"))
        .bearer_auth(wrong_audience)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        response.json::<Value>().await.unwrap()["code"],
        "token_audience_not_accepted"
    );
    // API keys keep working next to the tokens.
    assert_eq!(server.get("/ai/tools", ALICE_KEY).await.0, StatusCode::OK);
    server.shutdown().await.unwrap();

    // RS256 with a key pair made for this test by the openssl command-line tool.
    let dir = tempfile::tempdir().unwrap();
    let private = dir.path().join("private.pem");
    let public = dir.path().join("public.pem");
    let openssl = |args: &[&str]| {
        let status = std::process::Command::new("openssl")
            .args(args)
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "openssl {args:?}");
    };
    openssl(&[
        "genpkey",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        "rsa_keygen_bits:2048",
        "-out",
        private.to_str().unwrap(),
    ]);
    openssl(&[
        "pkey",
        "-in",
        private.to_str().unwrap(),
        "-pubout",
        "-out",
        public.to_str().unwrap(),
    ]);
    config.auth.jwt = Some(JwtConfig {
        algorithm: JwtAlgorithmConfig::Rs256,
        secret_env: None,
        public_key_path: Some(public),
        public_key_env: None,
        issuer: None,
        audience: None,
        actor_claim: None,
        tenant_claim: None,
        permissions_claim: None,
        leeway_secs: None,
        tenant: None,
        required_claims: Default::default(),
    });
    let server = TestServer::start(config).await;
    let key = EncodingKey::from_rsa_pem(&std::fs::read(&private).unwrap()).unwrap();
    let token = encode(
        &Header::new(Algorithm::RS256),
        &json!({"sub": "dave", "tenant": "globex", "permissions": ["admin:ai"], "exp": get_current_timestamp() + 300}),
        &key,
    )
    .unwrap();
    let trail = server
        .client
        .get(server.url("/ai/audit"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(trail.status(), StatusCode::OK, "dave administers globex");
    // An HS256 token signed with the public key (the classic algorithm confusion) is refused.
    let confused = encode(
        &Header::new(Algorithm::HS256),
        &json!({"sub": "eve", "tenant": "globex", "permissions": ["admin:ai"], "exp": get_current_timestamp() + 300}),
        &EncodingKey::from_secret(&std::fs::read(dir.path().join("public.pem")).unwrap()).unwrap(),
    )
    .unwrap();
    let refused = server
        .client
        .get(server.url("/ai/audit"))
        .bearer_auth(confused)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_openapi_document_lists_exactly_the_routes_that_exist() {
    let server = TestServer::start(two_tenants()).await;
    let response = server
        .client
        .get(server.url("/ai/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "the document needs no credentials"
    );
    let document: Value = response.json().await.unwrap();
    assert!(document["openapi"].as_str().unwrap().starts_with("3."));
    let paths = document["paths"].as_object().unwrap();

    // The contract's routes are documented.
    let contract = [
        ("post", "/ai/chat"),
        ("get", "/ai/chat/{conversationId}/events"),
        ("post", "/ai/chat/{conversationId}/cancel"),
        ("get", "/ai/attachments/search"),
        ("get", "/ai/tools"),
        ("get", "/ai/capabilities"),
        ("get", "/ai/proposals"),
        ("get", "/ai/proposals/{proposalId}"),
        ("post", "/ai/proposals/{proposalId}/approve"),
        ("post", "/ai/proposals/{proposalId}/reject"),
        ("post", "/ai/proposals/{proposalId}/apply"),
        ("post", "/ai/proposals/{proposalId}/drop-targets"),
        ("get", "/ai/conversations"),
        ("delete", "/ai/conversations"),
        ("get", "/ai/conversations/{conversationId}"),
        ("delete", "/ai/conversations/{conversationId}"),
        ("patch", "/ai/conversations/{conversationId}"),
        ("get", "/ai/admin/tools"),
        ("put", "/ai/admin/tools/{toolName}/enablement"),
        ("get", "/ai/audit"),
        ("get", "/ai/openapi.json"),
        ("get", "/ai/me"),
        ("get", "/ai/auth/providers"),
        ("get", "/metrics"),
        ("get", "/features/installed"),
        ("get", "/features/installed/{fullName}"),
    ];
    for (method, path) in contract {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} is not documented"
        );
    }

    // Every documented operation is served: without credentials each answers 401 from its
    // handler (the document itself 200), never the fallback's 404 or 405.
    let mut operations = 0;
    for (path, item) in paths {
        let concrete = path
            .replace("{conversationId}", "c-1")
            .replace("{proposalId}", "p-1")
            .replace("{toolName}", "workflow.getDefinition")
            .replace("{fullName}", elsa_ai_server::AI_FEATURE);
        for method in item.as_object().unwrap().keys() {
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let response = server
                .client
                .request(method.clone(), server.url(&concrete))
                .send()
                .await
                .unwrap();
            let open = ["/ai/openapi.json", "/ai/auth/providers"];
            let expected = if open.contains(&path.as_str()) {
                200
            } else {
                401
            };
            assert_eq!(response.status().as_u16(), expected, "{method} {path}");
            operations += 1;
        }
    }
    assert_eq!(
        operations,
        contract.len(),
        "nothing is documented beyond the routes above"
    );

    // Error responses reference the error body schema with its stable code.
    let error = &document["components"]["schemas"]["ErrorBody"];
    assert!(
        error["required"]
            .as_array()
            .unwrap()
            .contains(&json!("code"))
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_feature_probe_answers_as_elsa_studio_expects() {
    let server = TestServer::start(two_tenants()).await;
    let (status, list) = server.get("/features/installed", BOB_KEY).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["count"], 1);
    let feature = &list["items"][0];
    assert_eq!(feature["fullName"], "Elsa.AI.Host.ShellFeatures.AIFeature");
    assert_eq!(feature["namespace"], "Elsa.AI.Host.ShellFeatures");
    assert_eq!(feature["name"], "AIFeature");
    for field in ["displayName", "description"] {
        assert!(feature[field].is_string(), "{field}");
    }
    let (status, single) = server
        .get(
            "/features/installed/Elsa.AI.Host.ShellFeatures.AIFeature",
            BOB_KEY,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(&single, feature);
    let (status, missing) = server
        .get("/features/installed/Elsa.Workflows.Other", BOB_KEY)
        .await;
    assert_eq!(
        (status, missing["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("feature_not_found"))
    );
    let anonymous = server
        .client
        .get(server.url("/features/installed"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_tool_list_is_a_top_level_array_in_elsa_studios_shape() {
    let server = TestServer::start(two_tenants()).await;
    let (status, tools) = server.get("/ai/tools", ALICE_KEY).await;
    assert_eq!(status, StatusCode::OK);
    let tools = tools.as_array().expect("a top-level array");
    assert!(!tools.is_empty());
    for tool in tools {
        for field in [
            "name",
            "displayName",
            "description",
            "mutability",
            "dangerLevel",
            "tenantBehavior",
            "auditBehavior",
        ] {
            assert!(tool[field].is_string(), "{field} of {tool}");
        }
        assert!(tool["schema"].is_object(), "{tool}");
        assert_eq!(tool["schema"], tool["inputSchema"]);
        assert!(
            tool["permissions"]
                .as_array()
                .unwrap()
                .iter()
                .all(Value::is_string)
        );
        assert!(tool["enabledByDefault"].is_boolean());
        assert_eq!(
            tool["isEnabled"], true,
            "only tools the caller may use are listed"
        );
    }
    // A proposal tool an administrator has not enabled is not listed at all.
    assert!(tools.iter().all(|t| t["name"] != "workflow.proposeUpdate"));
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn attachment_search_finds_the_callers_workflows_with_the_permission_each_kind_needs() {
    let server = TestServer::start(two_tenants()).await;
    let (status, found) = server
        .get(
            "/ai/attachments/search?kind=WorkflowDefinition&q=ORDER",
            BOB_KEY,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{found}");
    let items = found["items"].as_array().unwrap();
    assert!(
        items
            .iter()
            .any(|i| i["referenceId"] == ORDER_APPROVAL && i["kind"] == "WorkflowDefinition"),
        "{found}"
    );
    let (status, instances) = server
        .get(
            "/ai/attachments/search?kind=WorkflowInstance&limit=2",
            ALICE_KEY,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(instances["items"].as_array().unwrap().len() <= 2);
    assert_error(
        server
            .get("/ai/attachments/search?kind=WorkflowInstance", BOB_KEY)
            .await,
        403,
        "permission_denied",
    );
    assert_error(
        server
            .get("/ai/attachments/search?kind=TimeRange", ALICE_KEY)
            .await,
        400,
        "search_not_supported",
    );
    for bad in [
        "kind=Secrets",
        "kind=WorkflowDefinition&limit=-1",
        "kind=WorkflowDefinition&limit=0",
        "kind=WorkflowDefinition&limit=51",
        "kind=WorkflowDefinition&sql=1",
        "",
    ] {
        let (status, body) = server
            .get(&format!("/ai/attachments/search?{bad}"), ALICE_KEY)
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
    let (status, _) = server
        .client
        .get(server.url("/ai/attachments/search?kind=WorkflowDefinition"))
        .send()
        .await
        .map(|r| (r.status(), ()))
        .unwrap();
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn metrics_are_prometheus_text_for_administrators_and_pass_promtool() {
    let server = TestServer::start(two_tenants()).await;
    let anonymous = server
        .client
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    assert_error(
        server.get("/metrics", BOB_KEY).await,
        403,
        "permission_denied",
    );

    // A proposal made, approved and applied.
    let (proposal, _) = server.demo_proposal(ALICE_KEY, ORDER_APPROVAL).await;
    for action in ["approve", "apply"] {
        let (status, body) = server.proposal_action(ALICE_KEY, &proposal, action).await;
        assert_eq!(status, StatusCode::OK, "{action}: {body}");
    }
    let response = server
        .request(Method::GET, "/metrics", ALICE_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let text = response.text().await.unwrap();
    let value = |series: &str| -> f64 {
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("{series} missing:\n{text}"))
    };
    assert!(value("weaver_turns_total{outcome=\"completed\"}") >= 1.0);
    assert!(
        value("weaver_tool_calls_total{tool=\"workflow.getDefinition\",outcome=\"success\"}")
            >= 1.0
    );
    assert_eq!(
        value("weaver_proposal_transitions_total{status=\"Applied\"}"),
        1.0
    );
    assert!(value("weaver_first_event_seconds_count") >= 1.0);
    assert_eq!(
        value("weaver_first_event_seconds_bucket{le=\"+Inf\"}"),
        value("weaver_first_event_seconds_count")
    );

    // Prometheus's own checker accepts the exposition (Debian package `prometheus`, which
    // .ci/run installs).
    let promtool = std::path::Path::new("/usr/bin/promtool");
    assert!(
        promtool.exists(),
        "promtool is missing: apt-get install prometheus, as .ci/run does"
    );
    let mut child = std::process::Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let checked = child.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool: {}{}\n{text}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_host_adds_its_own_tool_and_agent_through_the_builder() {
    use elsa_ai_host::testing::governance::{TestTool, read_tool, test_agent};

    let tool = Arc::new(TestTool::returning(
        read_tool("acme.ping"),
        serde_json::json!({"pong": true}),
    ));
    let agent = test_agent(
        "acme-helper",
        &["acme.ping"],
        &[elsa_ai_abstractions::Permission::READ_WORKFLOWS],
    );
    let script = Script::new()
        .tool_call("acme.ping", serde_json::json!({}))
        .reply("Pinged.");
    let server = TestServer::start_with(
        Weaver::builder(two_tenants())
            .tool(tool.clone())
            .agent(agent.clone())
            .provider(Arc::new(ScriptedProvider::new(script))),
    )
    .await;
    let (_, tools) = server.get("/ai/tools?agent=acme-helper", ALICE_KEY).await;
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "acme.ping"),
        "{tools}"
    );
    let (_, capabilities) = server.get("/ai/capabilities", ALICE_KEY).await;
    assert!(
        capabilities["agents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["name"] == "acme-helper")
    );
    let events = server
        .chat(
            ALICE_KEY,
            &serde_json::json!({"message": "Ping.", "agent": "acme-helper"}),
        )
        .await
        .collect()
        .await;
    assert!(
        events.iter().any(|e| e.event == "tool.completed"),
        "{events:#?}"
    );
    assert_eq!(
        tool.calls(),
        1,
        "the host's tool ran once, through governance"
    );
    let (_, audit) = server.get("/ai/audit?actor=alice", ALICE_KEY).await;
    assert!(
        audit["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["toolName"] == "acme.ping")
    );
    server.shutdown().await.unwrap();

    // A name already taken is refused at start-up.
    let taken = Weaver::builder(two_tenants())
        .env(|_| None)
        .agent(test_agent("workflow-author", &[], &[]))
        .build()
        .await;
    assert!(taken.is_err());
    let twice = Weaver::builder(two_tenants())
        .env(|_| None)
        .tool(tool.clone())
        .tool(tool)
        .build()
        .await;
    assert!(twice.unwrap_err().to_string().contains("acme.ping"));
}

#[tokio::test]
async fn a_host_brings_its_own_workflow_backend_stores_and_identity() {
    use elsa_ai_abstractions::{AiCaller, Permission};
    use elsa_ai_host::{
        InMemoryAuditLog, InMemoryConversationStore, InMemoryProposalStore, InMemoryStreamJournal,
        InMemoryToolEnablementStore,
    };
    use elsa_ai_server::WeaverStores;
    use elsa_ai_server::config::{StoreConfig, TenantConfig, WeaverConfig};
    use elsa_ai_server::identity::IdentityExtractor;
    use elsa_workflows::{
        InMemoryWorkflowBackend, TenantId, TenantRouter, WorkflowServices, samples,
    };

    /// The host's own sign-in: a header its gateway sets.
    struct GatewayIdentity;

    #[async_trait::async_trait]
    impl IdentityExtractor for GatewayIdentity {
        async fn identify(
            &self,
            request: &axum::http::request::Parts,
        ) -> Result<Option<AiCaller>, AiError> {
            Ok(request
                .headers
                .get("x-gateway-user")
                .and_then(|user| user.to_str().ok())
                .map(|user| AiCaller::new(user, "initech", [Permission::READ_WORKFLOWS])))
        }
    }

    let initech = TenantId::new("initech");
    let backend = Arc::new(InMemoryWorkflowBackend::new());
    samples::seed(&backend, &initech);
    let router =
        || TenantRouter::new().with(initech.clone(), WorkflowServices::of(backend.clone()));
    let audit = Arc::new(InMemoryAuditLog::new());
    let journal = Arc::new(InMemoryStreamJournal::new());
    let conversations = Arc::new(InMemoryConversationStore::with_journal(journal.clone()));
    let stores = WeaverStores {
        proposals: Arc::new(InMemoryProposalStore::new()),
        audit: audit.clone(),
        audit_log: audit.clone(),
        conversations: conversations.clone(),
        journal,
        enablement: Arc::new(InMemoryToolEnablementStore::new()),
        turn_claims: None,
        name: "host-memory".into(),
        durable: false,
    };
    // `[store]` names a file that is never opened: the host's stores are used.
    let config = WeaverConfig {
        store: StoreConfig {
            sqlite: Some("/nonexistent/weaver.db".into()),
            ..StoreConfig::default()
        },
        ..WeaverConfig::default()
    };
    let server = TestServer::start_with(
        Weaver::builder(config.clone())
            .env(|_| None)
            .workflows(router())
            .stores(stores.clone())
            .identity(Arc::new(GatewayIdentity)),
    )
    .await;
    let as_carol = |request: reqwest::RequestBuilder| request.header("x-gateway-user", "carol");
    let http = reqwest::Client::new();

    // No development key is made: without the gateway's header, nobody is let in.
    let anonymous = http
        .get(server.url("/ai/capabilities"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let capabilities: Value = as_carol(http.get(server.url("/ai/capabilities")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        capabilities["persistence"]["store"], "host-memory",
        "{capabilities}"
    );

    // The demo provider reads the host's workflow data through the governed tool.
    let response = as_carol(http.post(server.url("/ai/chat")))
        .json(&json!({"message": "What is this?",
            "attachments": [{"kind": "WorkflowDefinition", "referenceId": ORDER_APPROVAL}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let stream = response.text().await.unwrap();
    assert!(stream.contains("event: conversation.completed"), "{stream}");
    assert!(
        stream.contains("\"toolName\":\"workflow.getDefinition\""),
        "{stream}"
    );

    // Everything was recorded in the host's stores, under the host's caller.
    let actions: Vec<String> = audit
        .events(&initech)
        .iter()
        .map(|event| format!("{} {}", event.actor_id, event.action.as_str()))
        .collect();
    for expected in [
        "carol prompt.submitted",
        "carol tool.invoked",
        "carol context.resolved",
    ] {
        assert!(
            actions.iter().any(|a| a == expected),
            "{expected}: {actions:?}"
        );
    }
    let carol = AiCaller::new("carol", "initech", [Permission::READ_WORKFLOWS]);
    let listed = elsa_ai_abstractions::AiConversationStore::list(
        conversations.as_ref(),
        &carol.tenant_id,
        &carol.actor_id,
        elsa_workflows::PageRequest::default(),
    )
    .await
    .unwrap();
    assert_eq!(listed.items.len(), 1);
    server.shutdown().await.unwrap();

    // A tenant's data comes from one place: the host's router, or [[tenants]], not both.
    let both = WeaverConfig {
        tenants: vec![TenantConfig {
            id: "initech".into(),
            workflows: Some("/srv/initech".into()),
            ..TenantConfig::default()
        }],
        ..config
    };
    let error = Weaver::builder(both)
        .env(|_| None)
        .workflows(router())
        .stores(stores)
        .identity(Arc::new(GatewayIdentity))
        .build()
        .await
        .unwrap_err();
    assert!(error.to_string().contains("comes from the host"), "{error}");
}

#[tokio::test]
async fn a_provider_that_cannot_start_is_named_and_keeps_its_cause() {
    let mut config = two_tenants();
    // An OpenAI-compatible provider without any of its settings.
    config.provider = Some(elsa_ai_server::config::ProviderConfig::OpenAi(
        toml::Table::new(),
    ));
    let error = Weaver::builder(config)
        .build()
        .await
        .expect_err("the server must not start");
    let message = error.to_string();
    assert!(message.contains("is not valid"), "{message}");
    let cause = std::error::Error::source(&error).expect("the cause is kept");
    assert!(message.contains(&cause.to_string()), "{message} / {cause}");
}
