//! Test helpers stay out of the shipped `weaver` binary: building the workspace (as
//! `cargo build --release` at its root does) enables no crate's `testing` feature. Only
//! dev-dependencies (tests, benchmarks) may turn it on, and cargo leaves their features out of
//! normal builds.

use std::path::Path;
use std::process::Command;

#[test]
fn a_workspace_build_enables_no_testing_feature() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // Without dev edges, `cargo tree` resolves features as a normal build does.
    let output = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--workspace",
            "--edges",
            "normal,build",
            "--prefix",
            "none",
            "--format",
            "{p} [{f}]",
            "--offline",
        ])
        .current_dir(&workspace)
        .output()
        .expect("cargo runs");
    let tree = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let weaver_crates: Vec<&str> = tree
        .lines()
        .filter(|line| line.starts_with("elsa-ai-") || line.starts_with("elsa-workflows"))
        .collect();
    assert!(
        weaver_crates
            .iter()
            .any(|line| line.starts_with("elsa-ai-server ")),
        "the server is in the tree: {tree}"
    );
    let with_testing: Vec<&&str> = weaver_crates
        .iter()
        .filter(|line| {
            let features = line.rsplit_once('[').map_or("", |(_, f)| f);
            features
                .trim_end_matches([']', ' ', '*', '(', ')'])
                .split(',')
                .any(|feature| feature.trim() == "testing")
        })
        .collect();
    assert!(
        with_testing.is_empty(),
        "a normal build enables test helpers: {with_testing:#?}"
    );
}
