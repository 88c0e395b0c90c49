//! Parsing and validating a workflow definition against the built-in catalog: what the
//! proposal service does on every create and apply. Throughput is in definitions per second.
//!
//! The definition is the largest readable file of the test data's `definitions/` folder.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use elsa_workflows::{DraftValidator, WorkflowDefinition};

/// The bytes of the largest fixture definition that reads as Elsa 3 JSON, with its name.
fn largest_fixture() -> (String, Vec<u8>) {
    let mut files: Vec<(u64, std::path::PathBuf)> = weaver_testkit::fixture_files("definitions")
        .into_iter()
        .filter_map(|path| Some((path.metadata().ok()?.len(), path)))
        .collect();
    files.sort_by_key(|(size, _)| std::cmp::Reverse(*size));
    files
        .into_iter()
        .find_map(|(_, path)| {
            let bytes = std::fs::read(&path).ok()?;
            WorkflowDefinition::from_slice(&bytes).ok()?;
            Some((path.file_name()?.to_string_lossy().into_owned(), bytes))
        })
        .expect("a readable definition in the test data")
}

fn bench(c: &mut Criterion) {
    let (name, bytes) = largest_fixture();
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
