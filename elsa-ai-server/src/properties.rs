//! Property tests of what the server parses from clients and operators: the `Last-Event-ID`
//! header, the `Authorization` header (API keys and bearer JWTs with any claims) and the TOML
//! configuration. Bad input is a typed refusal, never a panic.
//! `WEAVER_PROPTEST_CASES` sets the number of cases (see `weaver_testkit::property`).

use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Request};
use elsa_ai_abstractions::{AiCaller, AiError};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode, get_current_timestamp};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::config::WeaverConfig;
use crate::extract::{LAST_EVENT_ID, last_event_id};
use crate::identity::{
    ApiKey, ApiKeyIdentity, IdentityChain, IdentityExtractor, JwtIdentity, JwtKey, JwtSettings,
};

const API_KEY: &str = "acme-alice-key-0123456789";
const JWT_SECRET: &[u8] = b"a-shared-hs256-secret-of-32-bytes-or-more";

/// Bytes a header value may hold (no NUL, CR or LF), ASCII or not.
fn header_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..24),
        "[ \t]{0,2}[+-]?[0-9]{0,22}[ \t]{0,2}".prop_map(String::into_bytes),
    ]
    .prop_map(|bytes| {
        bytes
            .into_iter()
            .filter(|b| !matches!(b, 0 | b'\r' | b'\n'))
            .collect()
    })
}

fn identities() -> IdentityChain {
    let alice = AiCaller::new("alice", "acme", []);
    let keys = ApiKeyIdentity::new(vec![ApiKey::new(API_KEY, alice).expect("a long key")])
        .expect("one key");
    let jwt = JwtIdentity::new(JwtSettings::new(JwtKey::Hs256 {
        secret: JWT_SECRET.to_vec(),
    }))
    .expect("a long HS256 secret");
    IdentityChain::new()
        .with(std::sync::Arc::new(keys))
        .with(std::sync::Arc::new(jwt))
}

fn request_with(authorization: HeaderValue) -> Parts {
    let mut parts = Request::get("/ai/tools")
        .body(())
        .expect("a plain request")
        .into_parts()
        .0;
    parts.headers.insert(AUTHORIZATION, authorization);
    parts
}

fn identify(chain: &IdentityChain, parts: &Parts) -> Result<Option<AiCaller>, AiError> {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(chain.identify(parts))
}

/// Any JSON value a token's claim could hold, a few levels deep.
fn claim_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[ a-z:*.-]{0,12}".prop_map(Value::from),
        Just(Value::from("ai:chat admin:ai")),
    ];
    leaf.prop_recursive(3, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,6}", inner, 0..3)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// Claims under the names the extractor reads (and others), each present or not.
fn claims() -> impl Strategy<Value = Map<String, Value>> {
    let names = prop::sample::select(vec![
        "sub",
        "tenant",
        "permissions",
        "realm_access",
        "nbf",
        "iat",
        "aud",
        "iss",
        "scope",
    ]);
    (
        prop::collection::vec((names, claim_value()), 0..6),
        prop_oneof![Just(None), (-600i64..600).prop_map(Some)],
    )
        .prop_map(|(pairs, exp)| {
            let mut claims: Map<String, Value> = pairs
                .into_iter()
                .map(|(name, value)| (name.to_owned(), value))
                .collect();
            if let Some(offset) = exp {
                let now = get_current_timestamp() as i64;
                claims.insert("exp".into(), json!(now + 3600 + offset));
            }
            claims
        })
}

/// What a Weaver TOML file may hold, with `marker` as the written string values.
fn toml_document(marker: String) -> impl Strategy<Value = String> {
    let tables = prop::sample::select(vec![
        "",
        "[store]",
        "[http]",
        "[limits]",
        "[provider]",
        "[[tenants]]",
        "[[auth.api_keys]]",
        "[auth.jwt]",
        "[[providers]]",
        "[[agents]]",
        "[unknown]",
    ]);
    let keys = prop::sample::select(vec![
        "listen",
        "sqlite",
        "postgres",
        "postgres_env",
        "memory",
        "id",
        "workflows",
        "elsa_url",
        "provider",
        "key",
        "key_env",
        "actor",
        "tenant",
        "permissions",
        "algorithm",
        "secret_env",
        "kind",
        "base_url",
        "model",
        "api_key_env",
        "headers",
        "name",
        "base_path",
        "cors_origins",
        "max_body_bytes",
        "grace_window_secs",
        "default_provider",
        "leeway_secs",
        "typo",
    ]);
    let values = prop::sample::select(vec![
        "\"{m}\"",
        "'{m}'",
        "\"\"\"{m}\"\"\"",
        "5",
        "-1",
        "18446744073709551616",
        "1.5",
        "true",
        "[\"{m}\", 1]",
        "{ x = \"{m}\" }",
        "1979-05-27",
        "\"demo\"",
        "\"openai\"",
        "\"HS256\"",
        "\"127.0.0.1:0\"",
        "[]",
        "\"{m}",
    ]);
    prop::collection::vec((tables, prop::collection::vec((keys, values), 0..4)), 0..5).prop_map(
        move |sections| {
            let mut text = String::new();
            for (table, entries) in sections {
                text.push_str(table);
                text.push('\n');
                for (key, value) in entries {
                    text.push_str(&format!("{key} = {}\n", value.replace("{m}", &marker)));
                }
            }
            text
        },
    )
}

#[test]
fn an_unknown_provider_kind_is_refused_without_repeating_it() {
    let error = WeaverConfig::from_toml("[provider]\nkind = \"sk-live-looking-value\"\n")
        .expect_err("an unknown kind");
    assert!(!error.contains("sk-live-looking-value"), "{error}");
    assert!(
        error.contains("provider.kind") && error.contains("line 1"),
        "{error}"
    );
    let flag = crate::config::ProviderConfig::of_kind("sk-live-looking-value").unwrap_err();
    assert!(!flag.contains("sk-live-looking-value"), "{flag}");
}

proptest! {
    #![proptest_config(weaver_testkit::property::config(4_000))]

    #[test]
    fn last_event_id_is_a_decimal_sequence_number_or_a_400(bytes in header_bytes()) {
        let Ok(value) = HeaderValue::from_bytes(&bytes) else {
            return Ok(());
        };
        let mut headers = HeaderMap::new();
        headers.insert(LAST_EVENT_ID, value);
        let text = std::str::from_utf8(&bytes).ok().map(str::trim);
        let expected = text
            .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|t| t.parse::<u64>().ok());
        match last_event_id(&headers) {
            Ok(found) => prop_assert_eq!(found, Some(expected.expect("accepted only when decimal"))),
            Err(error) => {
                prop_assert_eq!(expected, None, "a sequence number was refused");
                prop_assert_eq!((error.0.status(), error.0.code()), (400, "invalid_last_event_id"));
            }
        }
    }

    #[test]
    fn every_sequence_number_a_stream_sends_is_read_back(sequence in any::<u64>(), pad in "[ \t]{0,2}") {
        let mut headers = HeaderMap::new();
        let value = format!("{pad}{sequence}{pad}");
        headers.insert(LAST_EVENT_ID, HeaderValue::from_str(&value).expect("ASCII"));
        prop_assert_eq!(last_event_id(&headers).ok(), Some(Some(sequence)));
    }

    #[test]
    fn any_authorization_header_is_a_caller_nobody_or_a_401(bytes in prop_oneof![
        header_bytes(),
        (prop::sample::select(vec!["ApiKey", "apikey", "APIKEY", "Bearer", "bearer", "Basic", ""]),
         "[ \t]{0,3}",
         prop_oneof![Just(API_KEY.to_owned()), "[!-~]{0,30}".prop_map(|s| s), Just(format!("{API_KEY}x"))],
         "[ \t]{0,2}")
            .prop_map(|(scheme, gap, credentials, tail)| format!("{scheme}{gap}{credentials}{tail}").into_bytes()),
    ]) {
        let Ok(value) = HeaderValue::from_bytes(&bytes) else {
            return Ok(());
        };
        let text = value.to_str().ok().map(str::trim).map(str::to_owned);
        match identify(&identities(), &request_with(value)) {
            Ok(Some(caller)) => {
                // Only the configured key, under its scheme in any case, is a caller here (no
                // random text is a signed JWT).
                let text = text.expect("an identified header is ASCII");
                let (scheme, credentials) = text.split_once([' ', '\t']).expect("scheme and key");
                prop_assert!(scheme.eq_ignore_ascii_case("ApiKey"), "{text}");
                prop_assert_eq!(credentials.trim(), API_KEY);
                prop_assert_eq!(caller.actor_id.as_str(), "alice");
            }
            Ok(None) => {}
            Err(error) => prop_assert_eq!(error.status(), 401, "{:?}", error),
        }
    }

    #[test]
    fn any_signed_token_is_a_caller_with_actor_and_tenant_or_a_401(claims in claims()) {
        let token = encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(JWT_SECRET).expect("an HMAC key"),
        )
        .expect("claims serialise");
        let value = HeaderValue::from_str(&format!("Bearer {token}")).expect("base64url is ASCII");
        let text_claim = |name: &str| {
            claims.get(name).and_then(Value::as_str).filter(|s| !s.trim().is_empty())
        };
        match identify(&identities(), &request_with(value)) {
            Ok(Some(caller)) => {
                prop_assert_eq!(Some(caller.actor_id.as_str()), text_claim("sub"));
                prop_assert_eq!(Some(caller.tenant_id.as_str()), text_claim("tenant"));
                prop_assert!(claims.contains_key("exp"), "a token without exp was accepted");
            }
            Ok(None) => prop_assert!(false, "a bearer token was not looked at"),
            Err(error) => prop_assert_eq!(error.status(), 401, "{:?}", error),
        }
    }

    #[test]
    fn any_text_is_a_configuration_or_an_error_never_a_panic(text in prop_oneof![
        ".{0,80}",
        prop::collection::vec(prop::sample::select(vec![
            "[", "]", "[[", "]]", "=", "\"", "'", "\n", "listen", "store", "auth.jwt", "{", "}",
            ",", "#", "\\u00e9", "\\", "é", "1979-05-27T07:32:00Z", "0x1f", "inf", "nan", " ",
        ]), 0..24).prop_map(|parts| parts.concat()),
    ]) {
        let _ = WeaverConfig::from_toml(&text);
    }

    #[test]
    fn a_configuration_error_never_repeats_a_value_written_in_the_file(
        (marker, text) in "[a-z0-9]{10}".prop_flat_map(|tail| {
            let marker = format!("s3cr3t-{tail}");
            (Just(marker.clone()), toml_document(marker))
        })
    ) {
        if let Err(message) = WeaverConfig::from_toml(&text) {
            prop_assert!(!message.contains(&marker), "{message}\n--- from ---\n{text}");
            prop_assert!(!message.is_empty());
        }
    }
}
