//! The providers' own overhead per turn, against the scripted OpenAI-compatible server on
//! loopback: a turn where the model asks for one tool call and then answers. Measured for the
//! OpenAI-compatible adapter on both APIs and for the Copilot adapter (through the pinned
//! Copilot CLI, when `npm ci --prefix tools/copilot-cli` has installed it), beside a baseline
//! in the same process: the same two model requests sent and read with a bare HTTP client,
//! which is the part of a turn no adapter can save.
//!
//! Run with `cargo bench -p weaver-benches --bench provider_turn`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use elsa_ai_abstractions::{
    AiCaller, AiProvider, AiProviderEvent, AiProviderToolInvocation, AiProviderToolInvoker,
    AiToolResult, AiTurnRequest, ConversationId, CreateAiSessionRequest,
};
use elsa_ai_copilot::{CopilotProvider, CopilotProviderConfig};
use elsa_ai_host::testing::governance::{all_permissions, read_tool, test_agent};
use elsa_ai_openai::{OpenAiApi, OpenAiProvider, OpenAiProviderConfig};
use futures::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use weaver_testkit::model_server::{ModelReply, ScriptedModelServer};

/// Answers every call at once: the bench measures the adapter, not a tool.
struct Echo;

#[async_trait]
impl AiProviderToolInvoker for Echo {
    async fn invoke(&self, invocation: AiProviderToolInvocation) -> AiToolResult {
        AiToolResult::success(json!({"echo": invocation.arguments["text"], "len": 5}))
    }
}

/// The model's side of one turn: a tool call, then the answer.
fn replies() -> [ModelReply; 2] {
    [
        ModelReply::ToolCall {
            name: "bench_echo".into(),
            arguments: json!({"text": "hello"}),
        },
        ModelReply::Text("done".into()),
    ]
}

/// One turn on a new session; only `execute_turn` is timed.
async fn timed_turn(provider: &dyn AiProvider, conversation: usize) -> Duration {
    let agent = test_agent("bench-agent", &["bench.echo"], &all_permissions());
    let caller = AiCaller::new("bench", "acme", all_permissions());
    let session = provider
        .create_session(CreateAiSessionRequest {
            conversation_id: ConversationId::new(format!("bench-{conversation}")),
            agent: agent.clone(),
            caller: caller.clone(),
        })
        .await
        .expect("a session");
    let mut tool = read_tool("bench.echo");
    tool.input_schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    let request = AiTurnRequest {
        session: session.clone(),
        agent,
        caller,
        message: "Echo hello.".into(),
        history: Vec::new(),
        context: Vec::new(),
        tools: vec![Arc::new(tool)],
        cancellation: CancellationToken::new(),
    };
    let started = Instant::now();
    let mut events = provider.execute_turn(request, Arc::new(Echo));
    let mut last = None;
    while let Some(event) = events.next().await {
        last = Some(event);
    }
    let elapsed = started.elapsed();
    assert_eq!(last, Some(AiProviderEvent::Completed), "the turn completed");
    let _ = provider.close_session(&session).await;
    elapsed
}

fn openai(server: &ScriptedModelServer, api: OpenAiApi) -> OpenAiProvider {
    let api = match api {
        OpenAiApi::Chat => "chat",
        OpenAiApi::Responses => "responses",
        other => panic!("no benchmark for {other:?}"),
    };
    let config: OpenAiProviderConfig = toml::from_str(&format!(
        "base_url = \"{}\"\nmodel = \"bench\"\napi = \"{api}\"\n",
        server.base_url()
    ))
    .expect("a provider configuration");
    OpenAiProvider::new(&config).expect("a valid configuration")
}

/// The two requests of a turn, sent and read to the end with a bare client.
async fn raw_turn(client: &reqwest::Client, server: &ScriptedModelServer) -> Duration {
    let body = json!({
        "model": "bench",
        "stream": true,
        "messages": [{"role": "user", "content": "Echo hello."}],
        "tools": [{"type": "function", "function": {"name": "bench_echo", "parameters": {"type": "object"}}}],
    });
    let url = format!("{}/chat/completions", server.base_url());
    let started = Instant::now();
    for _ in 0..2 {
        let response = client
            .post(&url)
            .json(&body)
            .send()
            .await
            .expect("an answer");
        let bytes = response.bytes().await.expect("a body");
        assert!(bytes.ends_with(b"data: [DONE]\n\n"));
    }
    started.elapsed()
}

fn copilot(server: &ScriptedModelServer) -> Option<CopilotProvider> {
    let cli = weaver_testkit::workspace_root().join("tools/copilot-cli/node_modules/.bin/copilot");
    if !cli.is_file() {
        eprintln!(
            "provider_turn/copilot skipped: run `npm ci --prefix tools/copilot-cli` to measure it"
        );
        return None;
    }
    let config = CopilotProviderConfig {
        kind: Some("copilot".into()),
        cli_path: Some(cli),
        ..CopilotProviderConfig::openai_compatible(server.base_url(), "gpt-4.1")
    };
    Some(CopilotProvider::new(&config).expect("a valid configuration"))
}

fn provider_turn(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let server = runtime
        .block_on(ScriptedModelServer::start([]))
        .expect("the scripted server");
    let mut group = c.benchmark_group("provider_turn");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(8));

    let client = reqwest::Client::new();
    group.bench_function("baseline_raw_http", |b| {
        b.to_async(&runtime).iter_custom(|iters| {
            let (client, server) = (&client, &server);
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    server.push(replies());
                    total += raw_turn(client, server).await;
                }
                total
            }
        });
    });

    let mut providers: Vec<(&str, Arc<dyn AiProvider>)> = vec![
        ("openai_chat", Arc::new(openai(&server, OpenAiApi::Chat))),
        (
            "openai_responses",
            Arc::new(openai(&server, OpenAiApi::Responses)),
        ),
    ];
    let copilot = copilot(&server);
    if let Some(copilot) = &copilot {
        providers.push(("copilot", Arc::new(copilot.clone())));
    }
    for (name, provider) in providers {
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter_custom(|iters| {
                let (provider, server) = (provider.clone(), &server);
                async move {
                    let mut total = Duration::ZERO;
                    for turn in 0..iters {
                        server.push(replies());
                        total += timed_turn(provider.as_ref(), turn as usize).await;
                    }
                    total
                }
            });
        });
    }
    group.finish();
    if let Some(copilot) = copilot {
        runtime.block_on(copilot.shutdown());
    }
}

criterion_group!(benches, provider_turn);
criterion_main!(benches);
