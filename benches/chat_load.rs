//! Load benchmark of the `weaver` server: many concurrent chat streams over real TCP.
//!
//! The benchmark runs the server in a child process (this same binary, re-executed with
//! `--serve`), so that the server's memory is measured on its own, and drives it from this
//! process with `--streams` concurrent clients (default 500). Each client starts a chat turn
//! (`POST /ai/chat`) with the demo provider: a workflow definition attached, one governed
//! `workflow.getDefinition` call, a summary streamed word by word. It reports the latency
//! from sending the request to receiving the first event (`conversation.started`), p50 / p99
//! / max, the time until every stream completed, and the server's resident memory (current
//! and peak, from `/proc`).
//!
//! ```text
//! cargo bench -p weaver-benches --bench chat_load                  # 500 streams, in-memory store
//! cargo bench -p weaver-benches --bench chat_load -- --store sqlite --streams 500 --rounds 3
//! ```
//!
//! Targets: first event p99 under 50 ms at 500 concurrent streams on a 2-core machine, server
//! memory under 200 MB.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use elsa_ai_server::Weaver;
use elsa_ai_server::config::{ApiKeyConfig, AuthConfig, StoreConfig, TenantConfig, WeaverConfig};
use elsa_ai_server::testing::SseStream;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::Barrier;

const KEY: &str = "bench-key-alice-acme-0001";

struct Options {
    streams: usize,
    rounds: usize,
    store: String,
}

fn options() -> Options {
    let mut options = Options {
        streams: 500,
        rounds: 3,
        store: "memory".into(),
    };
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if let Some(streams) = value("--streams").and_then(|v| v.parse().ok()) {
        options.streams = streams;
    }
    if let Some(rounds) = value("--rounds").and_then(|v| v.parse().ok()) {
        options.rounds = rounds;
    }
    if let Some(store) = value("--store") {
        options.store = store;
    }
    options
}

fn config(store: &str, dir: &std::path::Path) -> WeaverConfig {
    WeaverConfig {
        store: match store {
            "sqlite" => StoreConfig {
                sqlite: Some(dir.join("weaver-bench.db")),
                ..StoreConfig::default()
            },
            _ => StoreConfig {
                memory: true,
                ..StoreConfig::default()
            },
        },
        tenants: vec![TenantConfig {
            id: "acme".into(),
            workflows: None,
        }],
        auth: AuthConfig {
            api_keys: vec![ApiKeyConfig {
                key: Some(KEY.into()),
                key_env: None,
                actor: "alice".into(),
                tenant: "acme".into(),
                permissions: ["read:workflows", "read:activities"]
                    .map(String::from)
                    .to_vec(),
            }],
            jwt: None,
        },
        ..WeaverConfig::default()
    }
}

/// The child: serves until its standard input closes.
fn serve(store: &str, dir: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let weaver = Weaver::builder(config(store, std::path::Path::new(dir)))
            .build()
            .await
            .expect("the server starts");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        println!("LISTENING {}", listener.local_addr().expect("an address"));
        std::io::stdout().flush().expect("stdout");
        let stdin_closed = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            while std::io::stdin()
                .read_line(&mut line)
                .map(|n| n > 0)
                .unwrap_or(false)
            {}
        });
        weaver
            .serve(listener, async move {
                let _ = stdin_closed.await;
            })
            .await
            .expect("the server runs");
    });
}

/// Resident and peak resident memory of a process, in MiB (Linux).
fn memory_mib(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

struct Round {
    first_event: Vec<Duration>,
    all_done: Duration,
    failures: usize,
}

async fn round(base: &str, client: &reqwest::Client, streams: usize) -> Round {
    let barrier = Arc::new(Barrier::new(streams));
    let started = Instant::now();
    let tasks: Vec<_> = (0..streams)
        .map(|i| {
            let client = client.clone();
            let url = format!("{base}/ai/chat");
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                let sent = Instant::now();
                let response = client
                    .post(url)
                    .header("authorization", format!("ApiKey {KEY}"))
                    .json(&json!({
                        "message": format!("What does this workflow do? ({i})"),
                        "attachments": [{"kind": "WorkflowDefinition", "referenceId": "sample-order-approval"}],
                    }))
                    .send()
                    .await
                    .ok()?;
                if !response.status().is_success() {
                    return None;
                }
                let mut stream = SseStream::new(response);
                let first = stream.next_event().await?;
                let latency = sent.elapsed();
                if first.event != "conversation.started" {
                    return None;
                }
                let rest = stream.collect().await;
                (rest.last()?.event == "conversation.completed").then_some(latency)
            })
        })
        .collect();
    let mut first_event = Vec::with_capacity(streams);
    let mut failures = 0;
    for task in tasks {
        match task.await.ok().flatten() {
            Some(latency) => first_event.push(latency),
            None => failures += 1,
        }
    }
    first_event.sort();
    Round {
        first_event,
        all_done: started.elapsed(),
        failures,
    }
}

fn start_server(store: &str, dir: &std::path::Path) -> (Child, String) {
    let mut child = Command::new(std::env::current_exe().expect("this binary"))
        .args(["--serve", store, dir.to_str().expect("a UTF-8 path")])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the server process starts");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let address = loop {
        let line = lines
            .next()
            .expect("the server announces its address")
            .expect("readable");
        if let Some(address) = line.strip_prefix("LISTENING ") {
            break address.to_owned();
        }
    };
    (child, format!("http://{address}"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        serve(&args[i + 1], &args[i + 2]);
        return;
    }
    let options = options();
    let dir = std::env::temp_dir().join(format!("weaver-chat-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let (mut server, base) = start_server(&options.store, &dir);
    let pid = server.id();
    let (idle_rss, _) = memory_mib(pid);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(options.streams)
            .build()
            .expect("a client");
        // Warm up: connections, lazily built state, allocator.
        let warm = round(&base, &client, options.streams.min(50)).await;
        assert_eq!(warm.failures, 0, "the warm-up turns failed");
        println!(
            "chat_load: {} concurrent streams x {} rounds, demo provider (1 governed tool call per turn), store {}",
            options.streams, options.rounds, options.store
        );
        println!("server idle RSS: {idle_rss:.1} MiB");
        for number in 1..=options.rounds {
            let round = round(&base, &client, options.streams).await;
            let (rss, peak) = memory_mib(pid);
            let ms = |d: Duration| d.as_secs_f64() * 1000.0;
            if round.first_event.is_empty() {
                println!("round {number}: every stream failed");
                continue;
            }
            println!(
                "round {number}: first event p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; all {} streams done in {:.0} ms; failures {}; server RSS {:.1} MiB (peak {:.1} MiB)",
                ms(percentile(&round.first_event, 50.0)),
                ms(percentile(&round.first_event, 99.0)),
                ms(*round.first_event.last().expect("latencies")),
                round.first_event.len(),
                ms(round.all_done),
                round.failures,
                rss,
                peak,
            );
        }
    });
    drop(server.stdin.take());
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
