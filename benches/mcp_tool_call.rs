//! Per-call cost of an MCP tool through the governor, beside the same call without the
//! governor and beside a built-in (in-process) tool through the governor, all in one run:
//! the repository's `rmcp` fixture server over streamable HTTP on the loopback, and the
//! pinned `server-everything` over stdio (`npm ci --prefix tools/mcp`).
//!
//! governed MCP − raw MCP = what governance adds to an MCP call; governed built-in = what
//! governance costs around a tool that does nothing.

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use elsa_ai_abstractions::{
    AiMcpServerRegistration, AiTool, McpTransport, Permission, ToolMutability,
};
use elsa_ai_host::Redactor;
use elsa_ai_host::testing::governance::{GovernanceHarness, execution_context, read_tool};
use elsa_ai_mcp::McpClients;
use serde_json::json;
use weaver_testkit::mcp::{McpFixtureServer, npm_bin};

fn registration(name: &str, transport: McpTransport, tool: &str) -> AiMcpServerRegistration {
    let mut registration = AiMcpServerRegistration::new(
        name,
        transport,
        vec![tool.to_owned()],
        vec![Permission::READ_WORKFLOWS],
    );
    registration.mutability = ToolMutability::ReadOnly;
    registration
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let (_fixture, clients, harness) = runtime.block_on(async {
        let fixture = McpFixtureServer::start().await;
        let servers = vec![
            registration(
                "fixture",
                McpTransport::Http {
                    url: fixture.url(),
                    headers: Vec::new(),
                    secret_headers: Vec::new(),
                },
                "echo",
            ),
            registration(
                "everything",
                McpTransport::Stdio {
                    command: npm_bin("mcp-server-everything").display().to_string(),
                    args: vec!["stdio".into()],
                    env: Vec::new(),
                    secret_env: Vec::new(),
                },
                "echo",
            ),
        ];
        let clients = McpClients::start(
            servers,
            Duration::from_secs(30),
            Arc::new(Redactor::default()),
        )
        .await;
        let mut builder = GovernanceHarness::builder().definition(read_tool("demo.echo"));
        for registration in clients.tools() {
            builder = builder.tool_for_tenants(registration.tool, registration.tenants);
        }
        let harness = builder.build();
        for tool in ["mcp.fixture.echo", "mcp.everything.echo"] {
            harness.decide(tool, None, true).await;
        }
        (fixture, clients, harness)
    });
    let tools = clients.tools();
    let raw = |name: &str| -> Arc<dyn AiTool> {
        tools
            .iter()
            .find(|t| t.tool.definition().name == name)
            .unwrap_or_else(|| panic!("{name} is registered"))
            .tool
            .clone()
    };

    let mut group = c.benchmark_group("mcp_tool_call");
    group.bench_function("builtin_governed", |b| {
        b.to_async(&runtime)
            .iter(|| harness.call("demo.echo", json!({"text": "hello"})));
    });
    for (label, tool, arguments) in [
        ("http_fixture", "mcp.fixture.echo", json!({"text": "hello"})),
        (
            "stdio_everything",
            "mcp.everything.echo",
            json!({"message": "hello"}),
        ),
    ] {
        let direct = raw(tool);
        let context = execution_context(&harness, arguments.clone());
        group.bench_function(format!("{label}_raw"), |b| {
            b.to_async(&runtime)
                .iter(|| direct.execute(context.clone()));
        });
        group.bench_function(format!("{label}_governed"), |b| {
            b.to_async(&runtime)
                .iter(|| harness.call(tool, arguments.clone()));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
