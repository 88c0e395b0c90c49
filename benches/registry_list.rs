//! Listing 1,000 registered tools (target: under 200 µs per call).
//!
//! The definitions are shared (`Arc`), so this is the cost of filtering by tenant,
//! permissions, agent scope and enablement.

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use elsa_ai_abstractions::{AiCaller, AiToolQuery, AiToolRegistry, Permission, ToolEnablement};
use elsa_ai_host::testing::governance::{TestTool, all_permissions, read_tool, test_agent};
use elsa_ai_host::{AgentRegistry, InMemoryToolEnablementStore, ToolRegistry};
use serde_json::json;

const TOOLS: usize = 1000;

fn registry(runtime: &tokio::runtime::Runtime) -> ToolRegistry {
    let permissions = [
        Permission::READ_WORKFLOWS,
        Permission::READ_WORKFLOW_INSTANCES,
        Permission::READ_ACTIVITIES,
    ];
    let mut builder = ToolRegistry::builder();
    let mut names = Vec::new();
    for i in 0..TOOLS {
        let mut definition = read_tool(&format!("ns{}.tool{i:04}", i % 25));
        definition.description =
            format!("Reads records of kind {i} for the caller's tenant, with paging and filters.");
        definition.permissions = vec![permissions[i % 3].clone()];
        definition.input_schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": format!("Tool{i}Input"),
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The record id."},
                "limit": {"type": "integer", "format": "uint32", "minimum": 0, "maximum": 500},
                "status": {"type": ["string", "null"], "enum": ["Running", "Finished", "Faulted", null]},
            },
            "required": ["id"],
        });
        names.push(definition.name.clone());
        builder = builder
            .tool(Arc::new(TestTool::echo(definition)))
            .expect("valid tool");
    }
    let scoped: Vec<&str> = names.iter().step_by(80).map(String::as_str).collect();
    let agents = AgentRegistry::builder()
        .with_builtin_agents()
        .and_then(|b| b.agent(test_agent("bench-agent", &scoped, &all_permissions())))
        .expect("valid agents")
        .build();
    let enablement = Arc::new(InMemoryToolEnablementStore::new());
    runtime.block_on(async {
        use elsa_ai_abstractions::AiToolEnablementStore;
        for name in names.iter().step_by(100) {
            let decision = ToolEnablement {
                tenant_id: "acme".into(),
                tool_name: name.clone(),
                agent: None,
                enabled: false,
                changed_by: "admin".into(),
                changed_at: chrono::Utc::now(),
            };
            enablement.set(&decision).await.expect("stored");
        }
    });
    builder.build(Arc::new(agents), enablement)
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let registry = registry(&runtime);
    let caller = AiCaller::new("alice", "acme", all_permissions());
    let everything = AiToolQuery::for_caller(caller.clone());
    let agent = AiToolQuery {
        agent: Some("bench-agent".into()),
        ..AiToolQuery::for_caller(caller)
    };
    let reader =
        AiToolQuery::for_caller(AiCaller::new("bob", "acme", [Permission::READ_WORKFLOWS]));
    let listed = runtime.block_on(registry.list(&everything)).expect("list");
    assert_eq!(
        listed.len(),
        TOOLS - TOOLS / 100,
        "all but the disabled ones"
    );

    let mut group = c.benchmark_group("registry_list_1000_tools");
    for (name, query) in [
        ("all_visible", &everything),
        ("one_permission", &reader),
        ("agent_scope", &agent),
    ] {
        group.bench_function(name, |b| {
            b.to_async(&runtime)
                .iter(|| async { registry.list(query).await.expect("list").len() });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
