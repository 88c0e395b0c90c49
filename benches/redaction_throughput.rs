//! Redaction throughput over a 1 MiB JSON document with secrets sprinkled in, beside a raw
//! scan of the same document's bytes (the redactor's anchor search over the serialized
//! text, without walking the document, folding case or verifying a match). Target: the
//! redaction of the document runs at least at half the raw scan's speed; the bench prints
//! that ratio from interleaved timings of the same run, for the document as JSON text
//! (`redact_json`) and as a parsed value (`redact_value`).

use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use elsa_ai_abstractions::StreamPayload;
use elsa_ai_host::Redactor;
use elsa_ai_host::testing::redaction::raw_anchor_scan;
use serde_json::value::RawValue;
use serde_json::{Value, json};

/// Workflow-instance-like records until the document is about `bytes` of compact JSON; with
/// `secrets`, every 25th record carries a secret, cycling through nine kinds: a sensitive
/// key, a bearer token, a connection string, a JWT, an AWS key id, a GitHub token, a PEM
/// private key, URL credentials and a host-registered secret.
fn document(bytes: usize, secrets: bool) -> Value {
    let mut records = Vec::new();
    let mut size = 2;
    let mut i = 0usize;
    while size < bytes {
        let mut record = json!({
            "id": format!("instance-{i:06}"),
            "definitionId": format!("orders-{}", i % 40),
            "status": if i.is_multiple_of(7) { "Faulted" } else { "Finished" },
            "createdAt": "2024-04-18T10:15:30.123Z",
            "variables": {"customer": format!("customer {i}"), "amount": i * 3, "currency": "EUR"},
            "activities": [
                {"id": "a1", "type": "Elsa.HttpEndpoint", "path": "/orders/submit", "url": "https://shop.example.com/api/orders"},
                {"id": "a2", "type": "Elsa.WriteLine", "text": "Order received, sending confirmation to the customer mailbox"},
            ],
            "log": format!("step {i} completed in {} ms without incident; next step scheduled", i % 97),
        });
        if secrets && i.is_multiple_of(25) {
            match (i / 25) % 9 {
                0 => record["variables"]["password"] = json!("hunter2-secret"),
                1 => {
                    record["log"] =
                        json!("calling api with Authorization: Bearer abcdef0123456789xyz")
                }
                2 => {
                    record["activities"][0]["connection"] =
                        json!("Server=db;User Id=sa;Password=P@ssw0rd;")
                }
                3 => {
                    record["variables"]["note"] =
                        json!("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJlLXZhbHVl")
                }
                4 => record["variables"]["aws"] = json!("key AKIAIOSFODNN7EXAMPLE in use"),
                5 => {
                    record["log"] =
                        json!("pushed with ghp_0123456789abcdefghijABCDEFGHIJ012345 by the bot")
                }
                6 => {
                    record["variables"]["signing"] = json!(
                        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
                    )
                }
                7 => {
                    record["activities"][0]["url"] =
                        json!("https://svc:s3cr3t-pass@shop.example.com/api/orders")
                }
                _ => record["log"] = json!("configured with host-registered-secret-value today"),
            }
        }
        size += serde_json::to_string(&record).map_or(0, |s| s.len()) + 1;
        records.push(record);
        i += 1;
    }
    json!({"items": records})
}

fn bench(c: &mut Criterion) {
    let redactor = Redactor::builder()
        .secret("host-registered-secret-value")
        .build()
        .expect("redactor");
    let doc = document(1024 * 1024, true);
    let bytes = serde_json::to_string(&doc).expect("serialisable").len() as u64;
    let mut probe = doc.clone();
    assert!(
        redactor.redact_value(&mut probe),
        "the document contains secrets"
    );
    let redacted = serde_json::to_string(&probe).expect("serialisable");
    for secret in [
        "hunter2-secret",
        "abcdef0123456789xyz",
        "P@ssw0rd",
        "c2lnbmF0dXJlLXZhbHVl",
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_0123456789",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
        "s3cr3t-pass",
        "host-registered-secret-value",
    ] {
        assert!(!redacted.contains(secret), "{secret} survived redaction");
    }

    let mut group = c.benchmark_group("redaction");
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("redact_value_1mib_json", |b| {
        b.iter_batched(
            || doc.clone(),
            |mut value| {
                redactor.redact_value(&mut value);
                value
            },
            BatchSize::LargeInput,
        );
    });
    let text = serde_json::to_string(&doc).expect("serialisable");
    let raw = RawValue::from_string(text.clone()).expect("valid JSON");
    let redacted_text = redactor.redact_json(&raw);
    assert_eq!(
        serde_json::from_str::<Value>(&redacted_text).expect("valid JSON"),
        probe,
        "JSON text and value are redacted alike"
    );
    group.bench_function("redact_json_1mib_text", |b| {
        b.iter(|| redactor.redact_json(std::hint::black_box(&raw)).len());
    });
    group.bench_function("redact_str_1mib_text", |b| {
        b.iter(|| std::hint::black_box(redactor.redact_str(std::hint::black_box(&text))).len());
    });
    group.bench_function("raw_scan_1mib_text", |b| {
        b.iter(|| raw_anchor_scan(&redactor, std::hint::black_box(text.as_bytes())));
    });
    group.finish();

    // The ratio, from the same process and interleaved rounds, so that load on the machine
    // weighs on both alike.
    let speed = |d: Duration| bytes as f64 / d.as_secs_f64() / (1024.0 * 1024.0);
    // Each ratio pairs its redaction with a raw scan in the same rounds, so that what a
    // round leaves in the caches weighs on both alike.
    let ratio = |name: &str, redact: &mut dyn FnMut() -> Duration| {
        let mut redaction = Vec::new();
        let mut scan = Vec::new();
        for _ in 0..41 {
            redaction.push(redact());
            let started = Instant::now();
            std::hint::black_box(raw_anchor_scan(
                &redactor,
                std::hint::black_box(text.as_bytes()),
            ));
            scan.push(started.elapsed());
        }
        let (redaction, scan) = (median(&mut redaction), median(&mut scan));
        println!(
            "redaction/ratio: {name} {:.0} MiB/s, raw scan {:.2} GiB/s, ratio {:.2} (target >= 0.5)",
            speed(redaction),
            speed(scan) / 1024.0,
            scan.as_secs_f64() / redaction.as_secs_f64(),
        );
    };
    ratio("redact_json", &mut || {
        let started = Instant::now();
        std::hint::black_box(redactor.redact_json(std::hint::black_box(&raw)));
        started.elapsed()
    });
    ratio("redact_value", &mut || {
        let mut value = doc.clone();
        let started = Instant::now();
        std::hint::black_box(redactor.redact_value(&mut value));
        started.elapsed()
    });
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// An event's payload on its way to the journal and the subscribers, which need its JSON
/// text: walked and then encoded, against encoded and then searched as text
/// ([`Redactor::redacted_payload`], which walks only a payload holding something to redact).
fn payloads(c: &mut Criterion) {
    let redactor = Redactor::builder()
        .secret("host-registered-secret-value")
        .build()
        .expect("redactor");
    let mut group = c.benchmark_group("payload");
    for (name, payload) in [
        (
            "delta",
            json!({"messageId": "m-1", "delta": "The workflow starts with an HTTP endpoint and then "}),
        ),
        ("tool_result_8kib", document(8 * 1024, false)),
        ("clean_1mib", document(1024 * 1024, false)),
        ("secrets_1mib", document(1024 * 1024, true)),
    ] {
        let walked = redactor.redacted(payload.clone());
        let searched = redactor.redacted_payload(payload.clone());
        assert_eq!(**searched, *walked, "{name}: both paths redact alike");
        group.bench_function(format!("{name}/walk_then_encode"), |b| {
            b.iter_batched(
                || payload.clone(),
                |value| {
                    let redacted = StreamPayload::from(redactor.redacted(value).into_inner());
                    redacted.json().map(str::len).unwrap_or_default();
                    redacted
                },
                BatchSize::LargeInput,
            );
        });
        group.bench_function(format!("{name}/encode_then_search"), |b| {
            b.iter_batched(
                || payload.clone(),
                |value| {
                    let redacted = redactor.redacted_payload(value).into_inner();
                    redacted.json().map(str::len).unwrap_or_default();
                    redacted
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, bench, payloads);
criterion_main!(benches);
