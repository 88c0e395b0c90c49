//! OpenID Connect against a real OpenID Provider (`oidc-provider`, pinned in `tools/oidc`):
//! its tokens over REST, SSE and `/mcp`; every rule a token can break, each refused with 401
//! and a code naming it, without the token in the body; key rotation without restarting
//! weaver; a provider that is down (503 for its tokens only); the refetch rate limit under a
//! burst of unknown key ids.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use elsa_ai_server::config::WeaverConfig;
use elsa_ai_server::testing::{ALICE_KEY, SseStream, TestServer, two_tenants};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode, get_current_timestamp};
use reqwest::StatusCode;
use serde_json::{Value, json};
use weaver_testkit::oidc::{OidcProvider, OidcProviderConfig, free_port};

const RESOURCE: &str = "urn:weaver:api";
const SERVICE: (&str, &str) = ("weaver-tests", "weaver-tests-secret-0123456789");
const FOREIGN: (&str, &str) = ("initech-robot", "initech-robot-secret-0123456789");

fn provider_config() -> OidcProviderConfig {
    OidcProviderConfig {
        resource: RESOURCE.into(),
        access_token_ttl_secs: 300,
        clients: vec![
            OidcProviderConfig::service_client(
                SERVICE.0,
                SERVICE.1,
                json!({"tenant": "acme", "permissions": ["read:workflows", "read:activities", "propose:workflows"]}),
            ),
            // A client of a tenant weaver does not serve.
            OidcProviderConfig::service_client(
                FOREIGN.0,
                FOREIGN.1,
                json!({"tenant": "initech", "permissions": ["read:workflows"]}),
            ),
            OidcProviderConfig::public_client("weaver-console", &["http://127.0.0.1:1/console/"]),
        ],
        accounts: json!({"alice": {"claims": {"tenant": "acme", "permissions": "read:workflows admin:ai"}}}),
    }
}

/// Two tenants, their API keys, and the providers at `issuers` (the first with a console
/// client).
fn weaver_config(issuers: &[String], refetch_secs: u64) -> WeaverConfig {
    let mut config = two_tenants();
    let mut toml = String::new();
    for (i, issuer) in issuers.iter().enumerate() {
        toml.push_str(&format!(
            "[[auth.oidc]]\nissuer = \"{issuer}\"\naudience = \"{RESOURCE}\"\n\
             tenant_claim = \"tenant\"\njwks_refetch_secs = {refetch_secs}\n"
        ));
        if i == 0 {
            toml.push_str("console_client_id = \"weaver-console\"\nname = \"Test ID\"\n");
        }
    }
    let oidc = WeaverConfig::from_toml(&toml).expect("the [[auth.oidc]] settings parse");
    config.auth.oidc = oidc.auth.oidc;
    config
}

async fn get(server: &TestServer, path: &str, token: &str) -> (StatusCode, String) {
    let response = server
        .client
        .get(server.url(path))
        .bearer_auth(token)
        .send()
        .await
        .expect("weaver answers");
    (response.status(), response.text().await.unwrap_or_default())
}

/// The code of a refusal, after checking that its body does not echo the token.
async fn refusal(server: &TestServer, token: &str) -> (StatusCode, String) {
    let (status, body) = get(server, "/ai/me", token).await;
    let signature = token.rsplit('.').next().unwrap_or_default();
    assert!(
        !body.contains(token) && (signature.len() < 8 || !body.contains(signature)),
        "the refusal echoes the token: {body}"
    );
    let json: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    (status, json["code"].as_str().unwrap_or(&body).to_owned())
}

/// A token signed with `kid`'s private key from the provider's key directory.
fn signed(provider: &OidcProvider, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    let key = EncodingKey::from_rsa_pem(&provider.private_key_pem(kid)).expect("a PKCS#8 key");
    encode(&header, claims, &key).expect("a token")
}

fn claims(issuer: &str) -> Value {
    let now = get_current_timestamp();
    json!({
        "iss": issuer, "aud": RESOURCE, "sub": "mallory", "tenant": "acme",
        "permissions": ["read:workflows"], "iat": now, "exp": now + 300,
    })
}

fn with(mut claims: Value, changes: Value) -> Value {
    for (name, value) in changes.as_object().expect("an object") {
        claims[name] = value.clone();
    }
    claims
}

/// `header.payload.signature` with the header and payload given and a signature made by
/// `sign` over them.
fn raw_token(header: &Value, claims: &Value, sign: impl Fn(&[u8]) -> String) -> String {
    let message = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = sign(message.as_bytes());
    format!("{message}.{signature}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_providers_tokens_work_over_rest_sse_and_mcp() {
    let provider = OidcProvider::start(&provider_config(), &["k1"]).await;
    let server = TestServer::start(weaver_config(&[provider.issuer()], 1)).await;
    let token = provider
        .client_credentials_token(SERVICE.0, SERVICE.1)
        .await;

    let (status, body) = get(&server, "/ai/me", &token).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let me: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(me["actor"], SERVICE.0, "sub of a client-credentials token");
    assert_eq!(me["tenant"], "acme");
    assert_eq!(
        me["permissions"],
        json!(["propose:workflows", "read:activities", "read:workflows"])
    );

    // SSE: a whole turn.
    let response = server
        .client
        .post(server.url("/ai/chat"))
        .bearer_auth(&token)
        .json(&json!({"message": "Which workflows are there?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let events = SseStream::new(response).collect().await;
    assert_eq!(
        events.last().map(|e| e.event.as_str()),
        Some("conversation.completed")
    );

    // MCP: the handshake and the tool list, as this caller may see it.
    let client = weaver_testkit::mcp::weaver_client_authorized(
        &server.url("/mcp"),
        &format!("Bearer {token}"),
    )
    .await;
    let tools = client.list_all_tools().await.expect("the tool list");
    assert!(!tools.is_empty());
    client.cancel().await.unwrap();

    // A person's token from the authorization-code flow, with a space-separated permission
    // string; a person the provider gives no tenant claim is refused.
    let tokens = provider
        .authorization_code_tokens(
            "weaver-console",
            "http://127.0.0.1:1/console/",
            "alice",
            "openid",
        )
        .await;
    let (status, body) = get(&server, "/ai/me", tokens["access_token"].as_str().unwrap()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let me: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (me["actor"].as_str(), me["tenant"].as_str()),
        (Some("alice"), Some("acme"))
    );
    assert_eq!(me["permissions"], json!(["admin:ai", "read:workflows"]));
    let tokens = provider
        .authorization_code_tokens(
            "weaver-console",
            "http://127.0.0.1:1/console/",
            "bob",
            "openid",
        )
        .await;
    let (status, code) = refusal(&server, tokens["access_token"].as_str().unwrap()).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::UNAUTHORIZED, "invalid_token")
    );

    // The console learns how to sign in, without credentials.
    let providers: Value = server
        .client
        .get(server.url("/ai/auth/providers"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let option = &providers["providers"][0];
    assert_eq!(option["name"], "Test ID");
    assert_eq!(option["clientId"], "weaver-console");
    assert_eq!(option["issuer"], provider.issuer().as_str());
    assert!(
        option["authorizationEndpoint"]
            .as_str()
            .unwrap()
            .starts_with(&provider.issuer())
    );
    assert!(
        option["tokenEndpoint"]
            .as_str()
            .unwrap()
            .starts_with(&provider.issuer())
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_broken_rule_is_a_401_naming_it() {
    let provider = OidcProvider::start(&provider_config(), &["k1"]).await;
    // A key the provider does not publish, for forged and unknown-kid tokens.
    let rogue = OidcProvider::start(&provider_config(), &["rogue"]).await;
    let issuer = provider.issuer();
    let server = TestServer::start(weaver_config(std::slice::from_ref(&issuer), 30)).await;
    let valid = provider
        .client_credentials_token(SERVICE.0, SERVICE.1)
        .await;
    assert_eq!(get(&server, "/ai/me", &valid).await.0, StatusCode::OK);
    let now = get_current_timestamp();

    let public_pem = provider.public_key_pem("k1");
    let [header, _, signature] = valid.split('.').collect::<Vec<_>>()[..] else {
        panic!("a JWT has three parts");
    };
    let tampered_claims = with(claims(&issuer), json!({"permissions": ["admin:ai"]}));
    let tampered = format!(
        "{header}.{}.{signature}",
        URL_SAFE_NO_PAD.encode(tampered_claims.to_string())
    );
    let rogue_signed = {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some("k1".into());
        let key = EncodingKey::from_rsa_pem(&rogue.private_key_pem("rogue")).unwrap();
        encode(&header, &claims(&issuer), &key).unwrap()
    };
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "expired",
            signed(
                &provider,
                "k1",
                &with(claims(&issuer), json!({"exp": now - 120})),
            ),
            "token_expired",
        ),
        (
            "not yet valid",
            signed(
                &provider,
                "k1",
                &with(claims(&issuer), json!({"nbf": now + 600})),
            ),
            "token_not_yet_valid",
        ),
        (
            "wrong issuer",
            signed(
                &provider,
                "k1",
                &with(claims(&issuer), json!({"iss": "https://id.other.example"})),
            ),
            "token_issuer_not_accepted",
        ),
        (
            "wrong audience",
            signed(
                &provider,
                "k1",
                &with(claims(&issuer), json!({"aud": "urn:another:api"})),
            ),
            "token_audience_not_accepted",
        ),
        (
            "wrong kid",
            signed(&rogue, "rogue", &claims(&issuer)),
            "token_key_unknown",
        ),
        (
            "signed by another key under the provider's kid",
            rogue_signed,
            "token_signature_invalid",
        ),
        (
            "alg none",
            raw_token(
                &json!({"alg": "none", "kid": "k1"}),
                &claims(&issuer),
                |_| String::new(),
            ),
            "token_algorithm_not_accepted",
        ),
        (
            "HS256 with the public key as the secret",
            raw_token(
                &json!({"alg": "HS256", "typ": "JWT", "kid": "k1"}),
                &claims(&issuer),
                |message| {
                    let key = EncodingKey::from_secret(&public_pem).unwrap();
                    jsonwebtoken::crypto::sign(message, &key, Algorithm::HS256).unwrap()
                },
            ),
            "token_algorithm_not_accepted",
        ),
        ("tampered payload", tampered, "token_signature_invalid"),
        (
            "oversized",
            signed(
                &provider,
                "k1",
                &with(claims(&issuer), json!({"padding": "x".repeat(20_000)})),
            ),
            "token_too_large",
        ),
        (
            "a tenant weaver does not serve",
            provider
                .client_credentials_token(FOREIGN.0, FOREIGN.1)
                .await,
            "token_tenant_not_allowed",
        ),
        (
            "no actor",
            signed(
                &provider,
                "k1",
                &with(claims(&issuer), json!({"sub": null})),
            ),
            "invalid_token",
        ),
    ];
    for (rule, token, code) in cases {
        let (status, got) = refusal(&server, &token).await;
        assert_eq!(
            (status, got.as_str()),
            (StatusCode::UNAUTHORIZED, code),
            "{rule}"
        );
    }
    // The valid token is still fine: no refusal above changed what weaver holds.
    assert_eq!(get(&server, "/ai/me", &valid).await.0, StatusCode::OK);
    server.shutdown().await.unwrap();
}

/// A provider configured with an explicit `jwks_uri` is trusted with the keys found there (not
/// through discovery: a wrong address makes its tokens wait, 503), and the clock leeway (30 s
/// by default) lets a token just past its expiry, or just before its start, through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_key_set_address_is_used_and_the_clock_leeway_is_honoured() {
    let provider = OidcProvider::start(&provider_config(), &["k1"]).await;
    let issuer = provider.issuer();
    let server_with = |jwks_uri: String| {
        let mut config = two_tenants();
        let oidc = WeaverConfig::from_toml(&format!(
            "[[auth.oidc]]\nissuer = \"{issuer}\"\njwks_uri = \"{jwks_uri}\"\n\
             audience = \"{RESOURCE}\"\ntenant_claim = \"tenant\"\n"
        ))
        .expect("the [[auth.oidc]] settings parse");
        config.auth.oidc = oidc.auth.oidc;
        TestServer::start(config)
    };
    let server = server_with(format!("{issuer}/jwks")).await;
    let now = get_current_timestamp();
    for (label, changes, status) in [
        ("expired 10 s ago", json!({"exp": now - 10}), StatusCode::OK),
        (
            "valid 10 s from now",
            json!({"nbf": now + 10}),
            StatusCode::OK,
        ),
        (
            "expired 120 s ago",
            json!({"exp": now - 120}),
            StatusCode::UNAUTHORIZED,
        ),
        (
            "valid 120 s from now",
            json!({"nbf": now + 120}),
            StatusCode::UNAUTHORIZED,
        ),
    ] {
        let token = signed(&provider, "k1", &with(claims(&issuer), changes));
        assert_eq!(refusal(&server, &token).await.0, status, "{label}");
    }

    let elsewhere = server_with(format!("{issuer}/no-keys-here")).await;
    let token = signed(&provider, "k1", &claims(&issuer));
    let (status, code) = refusal(&elsewhere, &token).await;
    assert_eq!(
        (status, code.as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "identity_provider_unavailable"
        ),
        "the configured address, not discovery, is where keys are looked for"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_rotate_without_restarting_weaver() {
    let mut provider = OidcProvider::start(&provider_config(), &["k1"]).await;
    let server = TestServer::start(weaver_config(&[provider.issuer()], 1)).await;
    let first = provider
        .client_credentials_token(SERVICE.0, SERVICE.1)
        .await;
    assert_eq!(get(&server, "/ai/me", &first).await.0, StatusCode::OK);

    // A new signing key, the old one still published: both work.
    provider.restart(&["k2", "k1"]).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let second = provider
        .client_credentials_token(SERVICE.0, SERVICE.1)
        .await;
    assert_eq!(get(&server, "/ai/me", &second).await.0, StatusCode::OK);
    assert_eq!(get(&server, "/ai/me", &first).await.0, StatusCode::OK);

    // The next rotation drops k1: once weaver has fetched the new set (here because a token
    // names k3), k1's tokens fail and k2's still work.
    provider.restart(&["k3", "k2"]).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let third = provider
        .client_credentials_token(SERVICE.0, SERVICE.1)
        .await;
    assert_eq!(get(&server, "/ai/me", &third).await.0, StatusCode::OK);
    let (status, code) = refusal(&server, &first).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::UNAUTHORIZED, "token_key_unknown")
    );
    assert_eq!(get(&server, "/ai/me", &second).await.0, StatusCode::OK);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_is_down_makes_only_its_tokens_wait() {
    let up = OidcProvider::start(&provider_config(), &["k1"]).await;
    let port = free_port();
    let down_issuer = format!("http://127.0.0.1:{port}");
    let server = TestServer::start(weaver_config(&[up.issuer(), down_issuer.clone()], 1)).await;

    let later = OidcProvider::start(&provider_config(), &["later"]).await;
    let early = signed(&later, "later", &claims(&down_issuer));
    let (status, code) = refusal(&server, &early).await;
    assert_eq!(
        (status, code.as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "identity_provider_unavailable"
        )
    );
    // Other identities keep working.
    let token = up.client_credentials_token(SERVICE.0, SERVICE.1).await;
    assert_eq!(get(&server, "/ai/me", &token).await.0, StatusCode::OK);
    assert_eq!(server.get("/ai/me", ALICE_KEY).await.0, StatusCode::OK);

    // The provider comes up: weaver picks its keys up (retrying since start-up, and on
    // tokens at most once per interval) and its tokens work, without a restart.
    let provider = OidcProvider::start_on(port, &provider_config(), &["d1"], None).await;
    let token = provider
        .client_credentials_token(SERVICE.0, SERVICE.1)
        .await;
    let mut answer = get(&server, "/ai/me", &token).await;
    for _ in 0..40 {
        if answer.0 != StatusCode::SERVICE_UNAVAILABLE {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        answer = get(&server, "/ai/me", &token).await;
    }
    assert_eq!(answer.0, StatusCode::OK, "{}", answer.1);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_unknown_key_ids_fetches_the_keys_at_most_once() {
    let provider = OidcProvider::start(&provider_config(), &["k1"]).await;
    let issuer = provider.issuer();
    let server = TestServer::start(weaver_config(std::slice::from_ref(&issuer), 5)).await;
    let valid = provider
        .client_credentials_token(SERVICE.0, SERVICE.1)
        .await;
    assert_eq!(get(&server, "/ai/me", &valid).await.0, StatusCode::OK);
    // Past the interval since the start-up fetch, so that the burst may fetch once.
    tokio::time::sleep(Duration::from_millis(5100)).await;
    let before = provider.jwks_requests().await;

    let key = EncodingKey::from_rsa_pem(&provider.private_key_pem("k1")).unwrap();
    let tokens: Vec<String> = (0..1000)
        .map(|i| {
            let mut header = Header::new(Algorithm::RS256);
            header.kid = Some(format!("unknown-{i}"));
            encode(&header, &claims(&issuer), &key).unwrap()
        })
        .collect();
    let statuses = futures::future::join_all(tokens.iter().map(|token| {
        let request = server
            .client
            .get(server.url("/ai/me"))
            .bearer_auth(token)
            .send();
        async move { request.await.map(|r| r.status()) }
    }))
    .await;
    let refused = statuses
        .iter()
        .filter(|s| matches!(s, Ok(StatusCode::UNAUTHORIZED)))
        .count();
    assert_eq!(refused, 1000, "every unknown kid is refused");
    let fetches = provider.jwks_requests().await - before;
    println!("1000 tokens with unknown kids: {fetches} JWKS request(s)");
    assert_eq!(fetches, 1, "one JWKS request for the whole burst");
    server.shutdown().await.unwrap();
}
