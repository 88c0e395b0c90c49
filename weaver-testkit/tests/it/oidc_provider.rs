//! The OpenID Provider helper against the real provider: its tokens verify with the keys it
//! wrote, carry the configured claims, and survive key rotation across restarts.

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Value, json};
use weaver_testkit::oidc::{OidcProvider, OidcProviderConfig, free_port};

const RESOURCE: &str = "urn:weaver:api";
const CONSOLE: &str = "weaver-console";
const CONSOLE_ORIGIN: &str = "http://127.0.0.1:5555";
const CONSOLE_REDIRECT: &str = "http://127.0.0.1:5555/console/";

fn config() -> OidcProviderConfig {
    OidcProviderConfig {
        resource: RESOURCE.to_owned(),
        access_token_ttl_secs: 300,
        clients: vec![
            OidcProviderConfig::service_client(
                "weaver-tests",
                "s3cret",
                json!({"tenant": "acme", "permissions": ["read:workflows"]}),
            ),
            OidcProviderConfig::public_client(CONSOLE, &[CONSOLE_REDIRECT]),
        ],
        accounts: json!({
            "alice": {"claims": {"tenant": "acme", "permissions": "read:workflows propose:workflows"}}
        }),
    }
}

/// The token's claims, after checking its signature with `kid`'s public key, its issuer and
/// its audience.
fn verified(provider: &OidcProvider, token: &str, kid: &str) -> Value {
    let header = jsonwebtoken::decode_header(token).expect("a JWT header");
    assert_eq!(header.kid.as_deref(), Some(kid));
    assert_eq!(header.alg, Algorithm::RS256);
    assert_eq!(header.typ.as_deref(), Some("at+jwt"));
    let key = DecodingKey::from_rsa_pem(&provider.public_key_pem(kid)).expect("a public key");
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_audience(&[RESOURCE]);
    validation.set_issuer(&[provider.issuer()]);
    jsonwebtoken::decode::<Value>(token, &key, &validation)
        .expect("the token verifies")
        .claims
}

async fn jwks_kids(provider: &OidcProvider) -> Vec<String> {
    let jwks: Value = reqwest::get(format!("{}/jwks", provider.issuer()))
        .await
        .expect("the JWKS answers")
        .json()
        .await
        .expect("the JWKS is JSON");
    jwks["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|key| key["kid"].as_str().expect("a kid").to_owned())
        .collect()
}

#[tokio::test]
async fn client_credentials_tokens_carry_the_clients_claims_and_keys_rotate_across_restarts() {
    let mut provider = OidcProvider::start(&config(), &["A"]).await;
    assert_eq!(
        provider.issuer(),
        format!("http://127.0.0.1:{}", provider.port())
    );

    let discovery: Value = reqwest::get(format!(
        "{}/.well-known/openid-configuration",
        provider.issuer()
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(discovery["issuer"], provider.issuer());
    assert_eq!(discovery["jwks_uri"], format!("{}/jwks", provider.issuer()));
    assert_eq!(
        discovery["token_endpoint"],
        format!("{}/token", provider.issuer())
    );

    let token = provider
        .client_credentials_token("weaver-tests", "s3cret")
        .await;
    let claims = verified(&provider, &token, "A");
    assert_eq!(claims["sub"], "weaver-tests");
    assert_eq!(claims["client_id"], "weaver-tests");
    assert_eq!(claims["tenant"], "acme");
    assert_eq!(claims["permissions"], json!(["read:workflows"]));
    let lifetime = claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap();
    assert_eq!(lifetime, 300);

    assert_eq!(provider.jwks_requests().await, 0);
    assert_eq!(jwks_kids(&provider).await, ["A"]);
    assert_eq!(provider.jwks_requests().await, 1);

    // Rotation: B signs, A is still published with the same key material.
    let a_public = provider.public_key_pem("A");
    provider.restart(&["B", "A"]).await;
    assert_eq!(provider.kids(), ["B", "A"]);
    assert_eq!(provider.jwks_requests().await, 0, "the count starts anew");
    assert_eq!(jwks_kids(&provider).await, ["B", "A"]);
    assert_eq!(provider.public_key_pem("A"), a_public);
    let rotated = provider
        .client_credentials_token("weaver-tests", "s3cret")
        .await;
    assert_eq!(verified(&provider, &rotated, "B")["tenant"], "acme");
    // A token signed before the rotation still verifies with A.
    verified(&provider, &token, "A");
    assert!(
        provider
            .private_key_pem("B")
            .starts_with(b"-----BEGIN PRIVATE KEY-----")
    );
    assert!(
        provider
            .public_key_pem("B")
            .starts_with(b"-----BEGIN PUBLIC KEY-----")
    );

    provider.restart(&["B"]).await;
    assert_eq!(jwks_kids(&provider).await, ["B"]);
    assert_eq!(provider.jwks_requests().await, 1);

    provider.stop().await;
    let unreachable = reqwest::get(format!("{}/jwks", provider.issuer())).await;
    assert!(unreachable.is_err(), "{unreachable:?}");
}

#[tokio::test]
async fn a_user_signs_in_through_the_dev_pages_and_gets_a_jwt_for_the_api() {
    let port = free_port();
    let keys = tempfile::tempdir().unwrap();
    let provider =
        OidcProvider::start_on(port, &config(), &["K1"], Some(keys.path().to_owned())).await;
    assert_eq!(provider.issuer(), format!("http://127.0.0.1:{port}"));
    assert!(keys.path().join("K1.jwk.json").is_file());

    // No `api` scope and no `resource` parameter: the token is still for the API.
    let tokens = provider
        .authorization_code_tokens(CONSOLE, CONSOLE_REDIRECT, "alice", "openid")
        .await;
    let claims = verified(&provider, tokens["access_token"].as_str().unwrap(), "K1");
    assert_eq!(claims["sub"], "alice");
    assert_eq!(claims["client_id"], CONSOLE);
    assert_eq!(claims["tenant"], "acme");
    assert_eq!(claims["permissions"], "read:workflows propose:workflows");
    assert!(tokens["id_token"].is_string(), "{tokens}");
    let refresh = tokens["refresh_token"].as_str().expect("a refresh token");

    let with_scope = provider
        .authorization_code_tokens(CONSOLE, CONSOLE_REDIRECT, "bob", "openid api")
        .await;
    let claims = verified(
        &provider,
        with_scope["access_token"].as_str().unwrap(),
        "K1",
    );
    assert_eq!(claims["sub"], "bob");
    assert_eq!(claims["scope"], "api");
    assert!(claims.get("tenant").is_none(), "bob has no extra claims");

    // The console refreshes from its own origin: CORS allows it, and the new access token
    // is again the account's.
    let response = reqwest::Client::new()
        .post(format!("{}/token", provider.issuer()))
        .header("origin", CONSOLE_ORIGIN)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "grant_type=refresh_token&client_id={CONSOLE}&refresh_token={refresh}"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        CONSOLE_ORIGIN
    );
    let refreshed: Value = response.json().await.unwrap();
    let claims = verified(&provider, refreshed["access_token"].as_str().unwrap(), "K1");
    assert_eq!(claims["sub"], "alice");
    assert_eq!(claims["tenant"], "acme");

    // Another origin is refused.
    let refused = reqwest::Client::new()
        .post(format!("{}/token", provider.issuer()))
        .header("origin", "http://127.0.0.1:1")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "grant_type=refresh_token&client_id={CONSOLE}&refresh_token={}",
            refreshed["refresh_token"].as_str().unwrap()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    assert!(
        !refused
            .headers()
            .contains_key("access-control-allow-origin")
    );
}
