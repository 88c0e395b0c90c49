//! 1,000 concurrent chat streams for 60 seconds on a SQLite store, over real TCP: every
//! client keeps one stream open all the time, starting its next turn when the last one ends.
//! Every turn must be accepted and stream whole (gap-free, `conversation.started` first,
//! `conversation.completed` last): zero errors. The first-event latencies are printed, not
//! asserted (no timed tests); `cargo bench -p weaver-benches --bench chat_load` measures them
//! and the server's memory in release builds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use elsa_ai_scripted::{Script, ScriptedProvider};
use elsa_ai_server::Weaver;
use elsa_ai_server::config::StoreConfig;
use elsa_ai_server::testing::{ALICE_KEY, SseStream, TestServer, two_tenants};
use reqwest::StatusCode;
use serde_json::json;

const STREAMS: usize = 1000;
const SECONDS: u64 = 60;
/// Each turn: one governed tool call, then this many deltas, `PACE` apart (a turn streams
/// for about 5 s, like a model's answer).
const DELTAS: usize = 20;
const PACE: Duration = Duration::from_millis(250);

fn paced_provider() -> ScriptedProvider {
    let mut script = Script::new().tool_call(
        "workflow.getDefinition",
        json!({"definitionId": "sample-order-approval"}),
    );
    for word in 0..DELTAS {
        script = script.delay(PACE).delta(format!("word{word} "));
    }
    ScriptedProvider::new(script.message("done")).named("paced-script")
}

/// The soft limit of open files, raised (up to the hard limit) to at least `wanted`: this
/// process holds both ends of every stream.
fn raise_open_files(wanted: u64) {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (soft, hard) = (fields[3], fields[4]);
    let soft: u64 = soft.parse().unwrap_or(u64::MAX);
    if soft >= wanted {
        return;
    }
    let hard: u64 = hard.parse().unwrap_or(u64::MAX);
    assert!(
        hard >= wanted,
        "{STREAMS} streams need {wanted} open files; the hard limit is {hard}"
    );
    let status = std::process::Command::new("prlimit")
        .args([
            "--pid",
            &std::process::id().to_string(),
            &format!("--nofile={wanted}:"),
        ])
        .status()
        .unwrap();
    assert!(status.success(), "prlimit --nofile={wanted}:");
}

/// One turn: its first-event latency, or what went wrong.
async fn turn(client: &reqwest::Client, url: &str, message: String) -> Result<Duration, String> {
    let sent = Instant::now();
    let response = client
        .post(url)
        .header("authorization", format!("ApiKey {ALICE_KEY}"))
        .json(&json!({
            "message": message,
            "attachments": [{"kind": "WorkflowDefinition", "referenceId": "sample-order-approval"}],
        }))
        .send()
        .await
        .map_err(|e| format!("request: {e}"))?;
    if response.status() != StatusCode::OK {
        let status = response.status();
        return Err(format!(
            "{status}: {}",
            response.text().await.unwrap_or_default()
        ));
    }
    let mut stream = SseStream::new(response);
    let first = stream.next_event().await.ok_or("no event")?;
    let latency = sent.elapsed();
    if first.event != "conversation.started" {
        return Err(format!("first event {}", first.event));
    }
    let mut events = vec![first];
    events.extend(stream.collect().await);
    let sequences: Vec<u64> = events.iter().map(|e| e.sequence()).collect();
    if sequences != (1..=events.len() as u64).collect::<Vec<_>>() {
        return Err(format!("sequences {sequences:?}"));
    }
    match events.last().map(|e| e.event.as_str()) {
        Some("conversation.completed") => Ok(latency),
        other => Err(format!("ended with {other:?}: {:?}", events.last())),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_streams_for_a_minute_on_sqlite_have_no_errors() {
    raise_open_files(4 * STREAMS as u64);
    let dir = tempfile::tempdir().unwrap();
    let mut config = two_tenants();
    config.store = StoreConfig {
        sqlite: Some(dir.path().join("weaver.db")),
        ..StoreConfig::default()
    };
    let server =
        TestServer::start_with(Weaver::builder(config).provider(Arc::new(paced_provider()))).await;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(STREAMS)
        .build()
        .unwrap();
    let url = server.url("/ai/chat");

    let started = Instant::now();
    let until = started + Duration::from_secs(SECONDS);
    let clients: Vec<_> = (0..STREAMS)
        .map(|i| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move {
                // Clients arrive over the first two seconds, as they would.
                tokio::time::sleep(Duration::from_millis(i as u64 * 2000 / STREAMS as u64)).await;
                let (mut latencies, mut errors, mut n) = (Vec::new(), Vec::new(), 0);
                while Instant::now() < until {
                    n += 1;
                    match turn(&client, &url, format!("Summarise it ({i}.{n})")).await {
                        Ok(latency) => latencies.push(latency),
                        Err(error) => errors.push(error),
                    }
                }
                (latencies, errors)
            })
        })
        .collect();
    let (mut latencies, mut errors) = (Vec::new(), Vec::new());
    for client in clients {
        let (ok, failed) = client.await.unwrap();
        latencies.extend(ok);
        errors.extend(failed);
    }
    latencies.sort();
    let percentile = |p: usize| latencies[(latencies.len() * p).div_ceil(100).max(1) - 1];
    println!(
        "{STREAMS} streams for {SECONDS} s on SQLite (debug build): {} turns in {:.1} s, \
         {} errors; first event p50 {:?}, p99 {:?}, max {:?}",
        latencies.len(),
        started.elapsed().as_secs_f64(),
        errors.len(),
        percentile(50),
        percentile(99),
        latencies.last().unwrap()
    );
    assert!(
        errors.is_empty(),
        "{} of {} turns failed; the first: {:#?}",
        errors.len(),
        errors.len() + latencies.len(),
        &errors[..errors.len().min(5)]
    );
    assert!(latencies.len() >= STREAMS, "every client ran turns");
    server.shutdown().await.unwrap();
}
