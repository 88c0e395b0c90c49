//! Parsing and validating a workflow definition against the built-in catalog: what the
//! proposal service does on every create and apply. Throughput is in definitions per second.
//!
//! The definition is the largest readable file of the fixture `definitions/` folder, or a
//! built-in 60-activity flowchart when the fixtures are not checked out.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use elsa_workflows::{DraftValidator, WorkflowDefinition};
use serde_json::json;

/// The bytes of the largest fixture definition that reads as Elsa 3 JSON, with its name.
fn largest_fixture() -> Option<(String, Vec<u8>)> {
    let dir = weaver_testkit::fixtures_dir_if_present()?.join("definitions");
    let mut files: Vec<(u64, std::path::PathBuf)> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| Some((entry.metadata().ok()?.len(), entry.path())))
        .collect();
    files.sort_by_key(|(size, _)| std::cmp::Reverse(*size));
    files.into_iter().find_map(|(_, path)| {
        let bytes = std::fs::read(&path).ok()?;
        WorkflowDefinition::from_slice(&bytes).ok()?;
        Some((path.file_name()?.to_string_lossy().into_owned(), bytes))
    })
}

/// A flowchart of 60 activities: a trigger, a decision, two branches of writes and a join.
fn sample() -> Vec<u8> {
    let text = |value: String| json!({"typeName": "String", "expression": {"type": "Literal", "value": value}});
    let mut activities = vec![
        json!({"id": "start", "type": "Elsa.HttpEndpoint", "version": 1, "canStartWorkflow": true,
               "path": text("/orders".into())}),
        json!({"id": "decide", "type": "Elsa.FlowDecision", "version": 1,
               "condition": {"typeName": "Boolean", "expression": {"type": "JavaScript", "value": "true"}}}),
        json!({"id": "join", "type": "Elsa.FlowJoin", "version": 1}),
    ];
    let mut connections = vec![
        json!({"source": {"activity": "start", "port": "Done"}, "target": {"activity": "decide", "port": "In"}}),
    ];
    for (branch, port) in [("t", "True"), ("f", "False")] {
        let mut previous = ("decide".to_owned(), port);
        for i in 0..28 {
            let id = format!("{branch}{i}");
            activities.push(json!({"id": id, "type": "Elsa.WriteLine", "version": 1,
                "text": text(format!("step {i}")),
                "metadata": {"designer": {"position": {"x": i * 10, "y": 0}}}}));
            connections.push(json!({"source": {"activity": previous.0, "port": previous.1}, "target": {"activity": id, "port": "In"}}));
            previous = (id, "Done");
        }
        connections.push(json!({"source": {"activity": previous.0, "port": "Done"}, "target": {"activity": "join", "port": "In"}}));
    }
    let definition = json!({"definitionId": "bench", "name": "Bench", "version": 1,
        "variables": [{"id": "v", "name": "Order", "typeName": "Object"}],
        "root": {"id": "flow", "type": "Elsa.Flowchart", "version": 1,
                 "activities": activities, "connections": connections}});
    serde_json::to_vec_pretty(&definition).unwrap_or_default()
}

fn bench(c: &mut Criterion) {
    let (name, bytes) = largest_fixture().unwrap_or_else(|| ("built-in sample".into(), sample()));
    let validator = DraftValidator::builtin();
    let parsed = WorkflowDefinition::from_slice(&bytes).expect("the benchmark input reads");
    eprintln!(
        "parse_validate: {name}: {} bytes, {} activities, {} diagnostics",
        bytes.len(),
        parsed.activities().len(),
        validator.validate(&parsed).len()
    );

    let mut group = c.benchmark_group("parse_validate");
    group.throughput(Throughput::Elements(1));
    group.bench_function("parse_and_validate", |b| {
        b.iter(|| {
            let definition = WorkflowDefinition::from_slice(black_box(&bytes)).expect("reads");
            validator.validate(&definition)
        })
    });
    group.bench_function("validate", |b| {
        b.iter(|| validator.validate(black_box(&parsed)))
    });
    group.bench_function("parse", |b| {
        b.iter(|| WorkflowDefinition::from_slice(black_box(&bytes)).expect("reads"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
