//! Load benchmark of the `weaver` server: many concurrent chat streams over real TCP.
//!
//! The server runs in a child process (this same binary, re-executed with `--serve`), so
//! that its memory is measured on its own; this process drives it with `--streams`
//! concurrent clients (default 500) and reports the latency from sending `POST /ai/chat` to
//! receiving the first event (`conversation.started`) as p50 / p99 / max, and the server's
//! resident memory (current and peak, from `/proc`). Two scenarios, each on a fresh server:
//!
//! - **sustained**: `--streams` clients keep a chat stream open all the time, each starting
//!   its next turn when the last one ends, for `--seconds` (default 10). The provider is a
//!   scripted one paced like a model: one governed `workflow.getDefinition` call, then 20
//!   text deltas 100 ms apart (a turn streams for about 2 s). This is the target's
//!   measure: first-event latency of turns started while ~500 streams are open.
//! - **burst**: all `--streams` clients start a turn at the same instant, `--rounds` times
//!   (default 3), against the demo provider (one governed tool call, the reply streamed word
//!   by word without pauses). The worst case: the last request waits for every other one.
//! - **two replicas** (PostgreSQL only): the sustained scenario against two server processes
//!   sharing the database, each client on one of them (every turn claimed in the shared
//!   `turn_claims`, every journal commit announced to the other replica).
//! - **slow readers** (`--slow-readers N`, instead of the others): `N` clients that send
//!   `POST /ai/chat` with a 4 KiB receive buffer and never read the answer, each holding its
//!   connection for `--hold` seconds (default 120) before it closes it and starts again, for
//!   `--seconds`; meanwhile 2 clients run turns and read them whole (one every 5 s each).
//!   Every turn streams about 1 MiB (256 deltas of 4 KiB, 2 ms apart), far past what the
//!   kernel and hyper buffer for a connection. It prints the server's resident memory every
//!   `--every` seconds (default 60), the peak, and the reading clients' turns and failures:
//!   the server's memory must stay bounded however long such clients stay.
//!
//! ```text
//! cargo bench -p weaver-benches --bench chat_load                       # SQLite, 500 streams
//! cargo bench -p weaver-benches --bench chat_load -- --store memory --streams 500 --seconds 10
//! WEAVER_TEST_POSTGRES_URL=postgres://… cargo bench -p weaver-benches --bench chat_load -- --store postgres
//! cargo bench -p weaver-benches --bench chat_load -- --slow-readers 100 --seconds 600   # 10 minutes
//! cargo bench -p weaver-benches --bench chat_load -- --server path/to/baseline/chat_load-…  # its server, this client
//! ```
//!
//! The sustained scenario also reports the server's CPU time per turn (user and system, from
//! `/proc`, over the scenario's turns) and, on one replica, its resident memory per idle
//! conversation: what `--idle` (default 1,000) conversations of one finished turn each add to
//! it after the warm-up, before the load. `--server` runs another build of this bench as the server (a baseline of the
//! previous main, say), so one command compares two servers under the same client.
//!
//! Targets: first event p99 under 50 ms at 500 concurrent streams on a 2-core machine, server
//! memory under 200 MB. Client and server share the machine's cores. On SQLite every turn
//! waits for a few synced commits before its first event, so the figures follow the disk's
//! sync latency: measure on a quiet machine (not right after a build, whose write-back of
//! the target directory slows every `fsync` for a while; `sync` first). On PostgreSQL the
//! machine is CPU-bound, and how the server reaches the database shows in the p99: through
//! the database's Unix socket (a URL with `?host=/var/run/postgresql`; the throwaway server
//! this bench starts when `WEAVER_TEST_POSTGRES_URL` is unset listens on one) costs least, TCP
//! on the loopback more, and TLS on top of TCP (sqlx takes it whenever the server offers it,
//! unless the URL says `sslmode=disable`) more again. Measure with the URL the deployment uses.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use elsa_ai_scripted::{Script, ScriptedProvider};
use elsa_ai_server::Weaver;
use elsa_ai_server::config::{
    ApiKeyConfig, AuthConfig, ProviderConfig, StoreConfig, TenantConfig, WeaverConfig,
};
use elsa_ai_server::testing::SseStream;
use elsa_ai_store::testing::postgres::TestDatabase;
use serde_json::json;
use tokio::sync::Barrier;
use weaver_testkit::process::{json_post, memory_kib, stalled_request};

// The server runs on the allocator the `weaver` binary ships with (ARCHITECTURE.md,
// "Allocator"); the client shares it.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const KEY: &str = "bench-key-alice-acme-0001";

struct Options {
    streams: usize,
    rounds: usize,
    seconds: u64,
    store: String,
    slow_readers: usize,
    hold: u64,
    every: u64,
    /// The binary that serves (`--serve`): this one, or another build of this bench (a
    /// baseline), so that one command measures both with the same client.
    server: PathBuf,
    /// How many conversations the idle measure adds.
    idle: usize,
}

fn options() -> Options {
    let mut options = Options {
        streams: 500,
        rounds: 3,
        seconds: 10,
        store: "sqlite".into(),
        slow_readers: 0,
        hold: 120,
        every: 60,
        server: std::env::current_exe().expect("this binary"),
        idle: 1000,
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
    if let Some(seconds) = value("--seconds").and_then(|v| v.parse().ok()) {
        options.seconds = seconds;
    }
    if let Some(store) = value("--store") {
        options.store = store;
    }
    if let Some(slow_readers) = value("--slow-readers").and_then(|v| v.parse().ok()) {
        options.slow_readers = slow_readers;
    }
    if let Some(hold) = value("--hold").and_then(|v| v.parse().ok()) {
        options.hold = hold;
    }
    if let Some(every) = value("--every").and_then(|v| v.parse().ok()) {
        options.every = every;
    }
    if let Some(server) = value("--server") {
        options.server = server.into();
    }
    if let Some(idle) = value("--idle").and_then(|v| v.parse().ok()) {
        options.idle = idle;
    }
    options
}

/// The server's configuration; `place` is the scratch folder (SQLite) or the database URL
/// (PostgreSQL).
fn config(store: &str, place: &str) -> WeaverConfig {
    WeaverConfig {
        store: match store {
            "sqlite" => StoreConfig {
                sqlite: Some(std::path::Path::new(place).join("weaver-bench.db")),
                ..StoreConfig::default()
            },
            "postgres" => StoreConfig {
                postgres: Some(place.to_owned()),
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
            ..TenantConfig::default()
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
            ..AuthConfig::default()
        },
        // The demo provider serves unless the paced one is handed to the builder.
        provider: Some(ProviderConfig::Demo),
        ..WeaverConfig::default()
    }
}

/// A provider paced like a model: a governed tool call, then 20 deltas 100 ms apart.
fn paced_provider() -> ScriptedProvider {
    let mut script = Script::new().tool_call(
        "workflow.getDefinition",
        json!({"definitionId": "sample-order-approval"}),
    );
    for word in 0..20 {
        script = script
            .delay(Duration::from_millis(100))
            .delta(format!("word{word} "));
    }
    ScriptedProvider::new(script.message("done")).named("paced-script")
}

/// A provider whose every turn streams about 1 MiB: 256 deltas of 4 KiB, 2 ms apart.
fn chatty_provider() -> ScriptedProvider {
    let mut script = Script::new();
    for chunk in 0..256 {
        script = script
            .delay(Duration::from_millis(2))
            .delta(format!("{chunk:04}{} ", "x".repeat(4091)));
    }
    ScriptedProvider::new(script.message("done")).named("chatty-script")
}

/// The child: serves until its standard input closes.
fn serve(store: &str, place: &str, provider: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let mut builder = Weaver::builder(config(store, place));
        match provider {
            "paced" => builder = builder.provider(Arc::new(paced_provider())),
            "chatty" => builder = builder.provider(Arc::new(chatty_provider())),
            _ => {}
        }
        let weaver = builder.build().await.expect("the server starts");
        let listener = Weaver::listen(([127, 0, 0, 1], 0).into()).expect("a port");
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
    memory_kib(pid).map_or((f64::NAN, f64::NAN), |(rss, peak)| {
        (rss as f64 / 1024.0, peak as f64 / 1024.0)
    })
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
    let url = format!("{base}/ai/chat");
    let started = Instant::now();
    let tasks: Vec<_> = (0..streams)
        .map(|i| {
            let client = client.clone();
            let url = url.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                turn(&client, &url, format!("What does this workflow do? ({i})")).await
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

/// The CPU time a process has used (user and system, all its threads), from `/proc`; Linux
/// counts it in ticks of 1/100 s (`USER_HZ`).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command's closing parenthesis: state is field 3, utime 14 and stime 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    match (ticks(11), ticks(12)) {
        (Some(user), Some(system)) => (user + system) / 100.0,
        _ => f64::NAN,
    }
}

fn start_server(server: &Path, store: &str, place: &str, provider: &str) -> (Child, String) {
    let mut child = Command::new(server)
        .args(["--serve", store, place, provider])
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

/// One chat turn: the first-event latency, if the turn streamed to its end.
async fn turn(client: &reqwest::Client, url: &str, message: String) -> Option<Duration> {
    let sent = Instant::now();
    let response = client
        .post(url)
        .header("authorization", format!("ApiKey {KEY}"))
        .json(&json!({
            "message": message,
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
}

/// `streams` clients, each keeping one stream open, for `seconds`; client `i` talks to
/// `bases[i % bases.len()]`.
async fn sustained(
    bases: &[String],
    client: &reqwest::Client,
    streams: usize,
    seconds: u64,
) -> Round {
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    let tasks: Vec<_> = (0..streams)
        .map(|i| {
            let client = client.clone();
            let url = format!("{}/ai/chat", bases[i % bases.len()]);
            tokio::spawn(async move {
                // Clients arrive over the first two seconds, as they would.
                tokio::time::sleep(Duration::from_millis((i as u64 * 2000) / streams as u64)).await;
                let mut latencies = Vec::new();
                let mut failures = 0;
                let mut n = 0;
                while Instant::now() < until {
                    n += 1;
                    match turn(&client, &url, format!("Summarise it ({i}.{n})")).await {
                        Some(latency) => latencies.push(latency),
                        None => failures += 1,
                    }
                }
                (latencies, failures)
            })
        })
        .collect();
    let mut first_event = Vec::new();
    let mut failures = 0;
    for task in tasks {
        let (latencies, failed) = task.await.unwrap_or_default();
        first_event.extend(latencies);
        failures += failed;
    }
    first_event.sort();
    Round {
        first_event,
        all_done: started.elapsed(),
        failures,
    }
}

/// The server's resident memory per idle conversation: what `count` more conversations (one
/// finished turn each, 50 at a time, as many as the warm-up ran) add to it once their streams
/// have ended.
async fn idle_conversations(base: &str, client: &reqwest::Client, count: usize, pid: u32) {
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (before, _) = memory_mib(pid);
    let url = format!("{base}/ai/chat");
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let workers: Vec<_> = (0..50.min(count))
        .map(|_| {
            let (client, url, next) = (client.clone(), url.clone(), next.clone());
            tokio::spawn(async move {
                let mut failures = 0;
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= count {
                        return failures;
                    }
                    if turn(&client, &url, format!("Idle after this ({i})"))
                        .await
                        .is_none()
                    {
                        failures += 1;
                    }
                }
            })
        })
        .collect();
    let mut failures = 0;
    for worker in workers {
        failures += worker.await.unwrap_or(count);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (after, _) = memory_mib(pid);
    println!(
        "idle conversations: {count} more (failures {failures}) took server RSS from {before:.1} to {after:.1} MiB, {:.1} KiB per conversation",
        (after - before) * 1024.0 / count as f64
    );
}

/// The slow-readers scenario: `options.slow_readers` clients that never read, 2 that do,
/// and the server's memory every `options.every` seconds.
async fn slow_readers(base: &str, client: &reqwest::Client, options: &Options, pid: u32) {
    let address: SocketAddr = base
        .trim_start_matches("http://")
        .parse()
        .expect("a socket address");
    let started = Instant::now();
    let until = started + Duration::from_secs(options.seconds);
    let hold = Duration::from_secs(options.hold);
    let count = options.slow_readers as u64;
    let stalled: Vec<_> = (0..options.slow_readers)
        .map(|i| {
            tokio::spawn(async move {
                // Spread over the first 10 seconds, and so their reconnections.
                let spread = (i as u64 * 10_000) / count;
                tokio::time::sleep(Duration::from_millis(spread)).await;
                let (mut opened, mut refused) = (0_u64, 0_u64);
                let mut n = 0;
                while Instant::now() < until {
                    n += 1;
                    let body = json!({"message": format!("Tell me everything ({i}.{n})")});
                    let request = json_post(
                        address,
                        "/ai/chat",
                        &format!("ApiKey {KEY}"),
                        &body.to_string(),
                    );
                    match stalled_request(address, &request).await {
                        Ok(connection) => {
                            opened += 1;
                            tokio::time::sleep(hold.min(until - Instant::now().min(until))).await;
                            drop(connection);
                        }
                        Err(_) => {
                            refused += 1;
                            tokio::time::sleep(Duration::from_secs(1)).await;
                        }
                    }
                }
                (opened, refused)
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|i| {
            let client = client.clone();
            let url = format!("{base}/ai/chat");
            tokio::spawn(async move {
                let (mut latencies, mut failures, mut n) = (Vec::new(), 0, 0);
                while Instant::now() < until {
                    n += 1;
                    match turn(&client, &url, format!("Read it all ({i}.{n})")).await {
                        Some(latency) => latencies.push(latency),
                        None => failures += 1,
                    }
                    tokio::time::sleep(Duration::from_secs(5)).await;
                }
                (latencies, failures)
            })
        })
        .collect();
    let mut peak_seen = 0.0_f64;
    let every = Duration::from_secs(options.every.max(1));
    loop {
        let (rss, _) = memory_mib(pid);
        peak_seen = peak_seen.max(rss);
        println!(
            "slow-readers: t = {:>4} s, server RSS {rss:.1} MiB",
            started.elapsed().as_secs()
        );
        if Instant::now() >= until {
            break;
        }
        tokio::time::sleep(every.min(until - Instant::now())).await;
    }
    let (mut opened, mut refused) = (0, 0);
    for task in stalled {
        let (o, r) = task.await.unwrap_or_default();
        opened += o;
        refused += r;
    }
    let mut first_event = Vec::new();
    let mut failures = 0;
    for task in readers {
        let (latencies, failed) = task.await.unwrap_or_default();
        first_event.extend(latencies);
        failures += failed;
    }
    first_event.sort();
    let (rss, peak) = memory_mib(pid);
    println!(
        "slow-readers: {opened} never-read streams opened ({refused} connections refused); \
         server RSS at the end {rss:.1} MiB, highest sample {peak_seen:.1} MiB, peak (VmHWM) {peak:.1} MiB"
    );
    report(
        "slow-readers (the reading clients)",
        &Round {
            first_event,
            all_done: started.elapsed(),
            failures,
        },
        pid,
    );
}

fn report(label: &str, round: &Round, pid: u32) {
    let (rss, peak) = memory_mib(pid);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    if round.first_event.is_empty() {
        println!("{label}: every turn failed");
        return;
    }
    println!(
        "{label}: {} turns in {:.1} s, first event p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; failures {}; server RSS {:.1} MiB (peak {:.1} MiB)",
        round.first_event.len(),
        round.all_done.as_secs_f64(),
        ms(percentile(&round.first_event, 50.0)),
        ms(percentile(&round.first_event, 99.0)),
        ms(*round.first_event.last().expect("latencies")),
        round.failures,
        rss,
        peak,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        serve(&args[i + 1], &args[i + 2], &args[i + 3]);
        return;
    }
    let options = options();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(options.streams)
        .build()
        .expect("a client");
    println!(
        "chat_load: {} concurrent streams, store {}, client and server on the same machine",
        options.streams, options.store
    );
    let mut scenarios = vec![("sustained", "paced", 1), ("burst", "demo", 1)];
    if options.slow_readers > 0 {
        scenarios = vec![("slow-readers", "chatty", 1)];
    } else if options.store == "postgres" {
        scenarios.push(("two-replicas", "paced", 2));
    }
    for (scenario, provider, replicas) in scenarios {
        let dir = std::env::temp_dir().join(format!(
            "weaver-chat-load-{}-{scenario}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        // A fresh database per scenario, dropped at its end.
        let database =
            (options.store == "postgres").then(|| runtime.block_on(TestDatabase::create()));
        let place = match &database {
            Some(database) => database.url().to_owned(),
            None => dir.to_str().expect("a UTF-8 path").to_owned(),
        };
        let (mut servers, bases): (Vec<Child>, Vec<String>) = (0..replicas)
            .map(|_| start_server(&options.server, &options.store, &place, provider))
            .unzip();
        let pid = servers[0].id();
        let (idle, _) = memory_mib(pid);
        println!("{scenario}: server idle RSS {idle:.1} MiB");
        runtime.block_on(async {
            // Warm up: connections, lazily built state, the allocator.
            for base in &bases {
                let warm = round(base, &client, options.streams.min(50)).await;
                assert_eq!(warm.failures, 0, "the warm-up turns failed");
            }
            if scenario == "slow-readers" {
                slow_readers(&bases[0], &client, &options, pid).await;
            } else if provider == "paced" {
                // Before the load, whose high-water mark the allocator would reuse.
                if replicas == 1 {
                    idle_conversations(&bases[0], &client, options.idle, pid).await;
                }
                let cpu = servers.iter().map(|s| cpu_seconds(s.id())).sum::<f64>();
                let result = sustained(&bases, &client, options.streams, options.seconds).await;
                let cpu = servers.iter().map(|s| cpu_seconds(s.id())).sum::<f64>() - cpu;
                report(scenario, &result, pid);
                println!(
                    "{scenario}: server CPU {:.3} ms per turn ({cpu:.2} s over {} turns)",
                    cpu * 1000.0 / result.first_event.len().max(1) as f64,
                    result.first_event.len()
                );
                for server in &servers[1..] {
                    let (rss, peak) = memory_mib(server.id());
                    println!("{scenario}: other replica RSS {rss:.1} MiB (peak {peak:.1} MiB)");
                }
            } else {
                let base = &bases[0];
                for number in 1..=options.rounds {
                    let result = round(base, &client, options.streams).await;
                    report(&format!("burst round {number}"), &result, pid);
                }
            }
        });
        for server in &mut servers {
            drop(server.stdin.take());
            let _ = server.wait();
        }
        drop(database);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
