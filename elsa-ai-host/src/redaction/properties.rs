//! Property tests of the redactor: a registered secret does not survive wherever it is put
//! in a text or a JSON document, among the credential shapes and keywords the redactor
//! looks for; the output keeps the document's shape; redacting twice changes nothing.
//! `WEAVER_PROPTEST_CASES` sets the number of cases (see `weaver_testkit::property`).

use std::sync::LazyLock;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::patterns::BUILT_IN;
use super::{REDACTED, Redactor};

/// Text around and between secrets: ordinary words, the keywords and separators the
/// credential shapes are anchored on, whole credentials, and characters that end values.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 ]{0,12}",
        prop::sample::select(vec![
            "password",
            "Password=",
            "pwd: ",
            "token",
            "\"token\": \"",
            "apiKey=",
            "secret",
            "Bearer ",
            "bearer ",
            "Authorization: ",
            "authorization",
            "://",
            "https://",
            "postgres://user:",
            "@db/x",
            "@",
            ":",
            "=",
            ";",
            "&",
            "\"",
            "'",
            " ",
            "\n",
            ",",
            "}",
            "]",
            "eyJ",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
            "-----BEGIN ",
            "-----BEGIN PRIVATE KEY-----\n",
            "-----END PRIVATE KEY-----",
            "AKIA",
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_",
            "github_pat_",
            "sk-",
            "xoxb-",
            "npm_",
            "AIza",
            "ü",
            "日本",
            "[REDACTED]",
            "{",
            "[",
            "{\"cookie\": \"",
            "\"}",
            "{\"auth\": 1}",
            "[{\"Set-Cookie\": [\"",
            "\\\"",
        ])
        .prop_map(str::to_owned),
    ]
}

/// A secret a host could register: random text, or text built from the redactor's own
/// anchors (a keyword, a prefix of one, one with a tail) in any ASCII case.
fn secret() -> impl Strategy<Value = String> {
    let literals: Vec<&'static str> = BUILT_IN.iter().map(|(literal, _)| *literal).collect();
    let anchored = (
        prop::sample::select(literals),
        "[a-zA-Z0-9_:=@/.-]{0,10}",
        any::<bool>(),
        0usize..12,
    )
        .prop_map(|(literal, tail, upper, cut)| {
            let mut secret = format!("{literal}{tail}");
            // A prefix of the literal-with-tail, but never shorter than a secret may be.
            secret.truncate(secret.len().saturating_sub(cut).max(6).min(secret.len()));
            if upper {
                secret.make_ascii_uppercase();
            }
            secret
        });
    prop_oneof![
        "[a-zA-Z0-9_:=@/. -]{6,24}",
        "[a-z]{2,6}[-_][a-zA-Z0-9]{4,20}",
        anchored,
    ]
    .prop_filter("a registered secret is at least 6 bytes", |s| s.len() >= 6)
    // The marker's own text cannot be told apart from a marker; brackets could join a
    // secret to a marker the redactor wrote.
    .prop_filter("not part of the marker", |s| {
        !REDACTED.contains(s.as_str()) && !s.contains(['[', ']'])
    })
}

/// Fragments with the secret put in at one or more places (start, middle, end, twice).
fn text_with(secret: String) -> impl Strategy<Value = String> {
    (
        prop::collection::vec(fragment(), 0..10),
        prop::collection::vec(any::<prop::sample::Index>(), 1..3),
    )
        .prop_map(move |(mut fragments, places)| {
            for place in places {
                let at = place.index(fragments.len() + 1);
                fragments.insert(at, secret.clone());
            }
            fragments.concat()
        })
}

/// Secrets drawn once from [`secret`] (with a fixed seed, so failures reproduce) and one
/// redactor that has them all registered: compiling a redactor takes milliseconds, a case
/// must take microseconds.
static POOL: LazyLock<(Vec<String>, Redactor)> = LazyLock::new(|| {
    let mut runner = TestRunner::deterministic();
    let strategy = secret();
    let mut secrets: Vec<String> = Vec::new();
    while secrets.len() < 256 {
        let drawn = strategy
            .new_tree(&mut runner)
            .expect("the secret strategy always yields")
            .current();
        if !secrets.contains(&drawn) {
            secrets.push(drawn);
        }
    }
    let redactor = Redactor::builder()
        .secrets(secrets.iter().cloned())
        .build()
        .expect("secrets of 6 bytes or more are accepted");
    (secrets, redactor)
});

/// One of the registered secrets.
fn registered() -> impl Strategy<Value = String> {
    prop::sample::select(POOL.0.clone())
}

fn redactor() -> &'static Redactor {
    &POOL.1
}

/// A redactor with a few of the secrets: its JSON search has few enough patterns for the
/// vector searcher, where [`redactor`]'s, with all of them, needs the automaton.
static FEW: LazyLock<Redactor> = LazyLock::new(|| {
    Redactor::builder()
        .secrets(POOL.0.iter().take(8).cloned())
        .build()
        .expect("secrets of 6 bytes or more are accepted")
});

/// A JSON document whose string leaves are `texts`, under ordinary and sensitive keys.
fn document(texts: Vec<String>) -> impl Strategy<Value = Value> {
    let keys = prop::sample::select(vec![
        "name",
        "note",
        "description",
        "value",
        "password",
        "apiKey",
        "items",
        "token_count",
        "Connection-String",
        "x",
    ]);
    let shapes = prop::collection::vec((keys, 0u8..6, any::<i32>()), texts.len()..=texts.len());
    shapes.prop_map(move |shapes| {
        let mut root = Map::new();
        for (i, ((key, shape, number), text)) in shapes.into_iter().zip(&texts).enumerate() {
            let leaf = Value::String(text.clone());
            let value = match shape {
                0 => leaf,
                1 => Value::Array(vec![leaf, Value::Null, Value::from(number)]),
                2 => serde_json::json!({ "inner": leaf, "flag": number % 2 == 0 }),
                3 => serde_json::json!([{ key: [leaf] }]),
                4 => serde_json::json!({ "n": number, "list": [true, leaf] }),
                _ => Value::from(number),
            };
            root.insert(format!("{key}{i}"), value);
        }
        Value::Object(root)
    })
}

/// Keys for JSON text: sensitive ones in spellings the key rules accept, ordinary ones that
/// share their letters, keys JSON must escape, and random ones.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "pat",
            "PAT_",
            "auth",
            "Auth.",
            "Set-Cookie",
            "api key",
            "session_key",
            "connection.string",
            "x-api-key",
            "dbPwd",
            "refresh_token",
            "credential",
            "path",
            "author",
            "tokens",
            "keyValue",
            "name",
            "p\"q",
            "back\\slash",
            "pass\nword",
            "日本",
        ])
        .prop_map(str::to_owned),
        "[a-zA-Z_ .-]{0,10}",
    ]
}

/// A document like [`document`]'s whose keys come from [`key`].
fn keyed_document(texts: Vec<String>) -> impl Strategy<Value = Value> {
    let shapes = prop::collection::vec((key(), 0u8..7, any::<i32>()), texts.len()..=texts.len());
    shapes.prop_map(move |shapes| {
        let mut root = Map::new();
        for ((key, shape, number), text) in shapes.into_iter().zip(&texts) {
            let leaf = Value::String(text.clone());
            let value = match shape {
                0 => leaf,
                1 => Value::Array(vec![
                    leaf,
                    Value::Null,
                    Value::from(number),
                    Value::from(-0.5),
                ]),
                2 => serde_json::json!({ "inner": leaf, "flag": number % 2 == 0 }),
                3 => serde_json::json!([{ key.clone(): [leaf] }]),
                4 => serde_json::json!({ "n": number, "list": [true, leaf, {}], "e": [] }),
                5 => serde_json::json!({ key.clone(): { "deep": leaf } }),
                _ => Value::from(number),
            };
            root.insert(key, value);
        }
        Value::Object(root)
    })
}

/// What [`Redactor::redact_value`] must produce, by its definition: under a sensitive key
/// every scalar is the marker (nulls stay), elsewhere every string is redacted on its own
/// with [`Redactor::redact_str`]. The batched walk must agree with it exactly.
fn reference(redactor: &Redactor, value: &Value, sensitive: bool) -> Value {
    match value {
        Value::Null => Value::Null,
        Value::Bool(_) | Value::Number(_) if sensitive => Value::String(REDACTED.to_owned()),
        Value::Bool(_) | Value::Number(_) => value.clone(),
        Value::String(_) if sensitive => Value::String(REDACTED.to_owned()),
        Value::String(text) => Value::String(redactor.redact_str(text).into_owned()),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| reference(redactor, item, sensitive))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, item)| {
                    let sensitive = sensitive || redactor.is_sensitive_key(key);
                    (key.clone(), reference(redactor, item, sensitive))
                })
                .collect(),
        ),
    }
}

/// A larger document: `records` objects of ordinary and sensitive keys whose strings are
/// `texts` (cycled), enough bytes that the walk searches its strings in several batches.
fn large_document(texts: Vec<String>, records: usize) -> Value {
    const KEYS: &[&str] = &["name", "note", "url", "password", "apiKey", "log", "x"];
    let mut items = Vec::with_capacity(records);
    for i in 0..records {
        let text = |k: usize| Value::String(texts[(i * 7 + k) % texts.len()].clone());
        let mut record = Map::new();
        for (k, key) in KEYS.iter().enumerate() {
            record.insert((*key).to_owned(), text(k));
        }
        record.insert(
            "nested".to_owned(),
            serde_json::json!({"list": [text(8), i, text(9)], "token": i, "deep": {"v": text(10)}}),
        );
        items.push(Value::Object(record));
    }
    serde_json::json!({ "items": items })
}

/// Every string in a document, keys excluded.
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
        Value::Object(map) => map.values().for_each(|item| strings(item, out)),
        _ => {}
    }
}

/// The document's skeleton: keys and array lengths, with every scalar erased (a sensitive
/// key's number or boolean becomes the marker string, so scalars are compared apart).
fn shape(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(shape).collect()),
        Value::Null => Value::Null,
        _ => Value::Bool(true),
    }
}

proptest! {
    #![proptest_config(weaver_testkit::property::config(4_000))]

    #[test]
    fn a_registered_secret_never_survives_in_text(
        (secret, text) in registered().prop_flat_map(|s| (Just(s.clone()), text_with(s)))
    ) {
        let redactor = redactor();
        let once = redactor.redact_str(&text).into_owned();
        prop_assert!(
            !once.contains(&secret),
            "secret {secret:?} survives in {once:?} (from {text:?})"
        );
        prop_assert_eq!(redactor.redact_str(&once), once.as_str(), "redacting twice changed it");
    }

    #[test]
    fn documents_keep_their_shape_lose_their_secrets_and_are_stable(
        (secret, value) in registered().prop_flat_map(|s| {
            let texts = prop::collection::vec(
                prop_oneof![text_with(s.clone()), prop::collection::vec(fragment(), 0..6).prop_map(|f| f.concat())],
                1..6,
            );
            (Just(s), texts.prop_flat_map(document))
        })
    ) {
        let redactor = redactor();
        let mut redacted = value.clone();
        redactor.redact_value(&mut redacted);
        prop_assert_eq!(shape(&redacted), shape(&value), "same keys and array lengths");
        let mut texts = Vec::new();
        strings(&redacted, &mut texts);
        for text in &texts {
            prop_assert!(!text.contains(&secret), "secret {secret:?} survives in {text:?}");
        }
        let wire = serde_json::to_string(&redacted).expect("a JSON value serialises");
        let reread: Value = serde_json::from_str(&wire).expect("the output is valid JSON");
        prop_assert_eq!(&reread, &redacted);
        let mut twice = redacted.clone();
        prop_assert!(!redactor.redact_value(&mut twice), "redacting twice changed {redacted}");
        prop_assert_eq!(&twice, &redacted);
        prop_assert_eq!(&redacted, &reference(redactor, &value, false), "as each string alone");
    }
}

#[test]
fn the_json_property_covers_both_search_engines() {
    assert!(
        !redactor().json_search.is_packed(),
        "too many patterns for the vector searcher"
    );
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("ssse3") {
        assert!(
            FEW.json_search.is_packed(),
            "few patterns take the vector searcher"
        );
    }
}

proptest! {
    #![proptest_config(weaver_testkit::property::config(4_000))]

    #[test]
    fn json_text_is_redacted_as_its_parsed_value(
        (value, pretty) in (
            prop::collection::vec(
                prop_oneof![
                    registered().prop_flat_map(text_with),
                    prop::collection::vec(fragment(), 0..6).prop_map(|f| f.concat()),
                ],
                1..6,
            )
            .prop_flat_map(keyed_document),
            any::<bool>(),
        )
    ) {
        let redactor = redactor();
        let text = if pretty {
            serde_json::to_string_pretty(&value)
        } else {
            serde_json::to_string(&value)
        }
        .expect("a JSON value serialises");
        let raw = RawValue::from_string(text).expect("serde_json wrote valid JSON");
        for redactor in [redactor, &*FEW] {
            let redacted = redactor.redact_json(&raw);
            let reread: Value =
                serde_json::from_str(&redacted).expect("the output is valid JSON");
            prop_assert_eq!(&reread, &reference(redactor, &value, false), "from {}", raw.get());
            // The two paths agree: the bytes' result is the tree walk's.
            let walked = redactor.redacted_value(&value);
            prop_assert_eq!(&reread, &walked, "from {}", raw.get());
            // So do the paths that search a value's own text and walk it only when the
            // text holds something to redact (events, tool results).
            let payload = redactor.redacted_payload(value.clone());
            prop_assert_eq!(&**payload, &walked);
            let text = payload.json().expect("a JSON value encodes");
            prop_assert_eq!(&serde_json::from_str::<Value>(text).expect("valid JSON"), &walked);
            let (measured, size) = redactor.redacted_measured(value.clone());
            prop_assert_eq!(&*measured, &walked);
            prop_assert_eq!(size, crate::clamp::json_size(&walked));
        }
    }
}

proptest! {
    // Each case walks up to a few hundred records through both the batched walk and the
    // reference: fewer cases than above keep the test's time in line with the others.
    #![proptest_config(weaver_testkit::property::config(200))]

    #[test]
    fn a_large_document_is_redacted_as_each_string_alone(
        texts in prop::collection::vec(
            prop_oneof![
                registered().prop_flat_map(text_with),
                prop::collection::vec(fragment(), 0..8).prop_map(|f| f.concat()),
                "[a-zA-Z0-9 /.:]{0,40}",
            ],
            1..24,
        ),
        records in 1usize..160,
    ) {
        let redactor = redactor();
        let value = large_document(texts, records);
        let mut redacted = value.clone();
        let changed = redactor.redact_value(&mut redacted);
        let expected = reference(redactor, &value, false);
        prop_assert_eq!(changed, expected != value, "whether anything changed");
        prop_assert_eq!(&redacted, &expected);
    }
}
