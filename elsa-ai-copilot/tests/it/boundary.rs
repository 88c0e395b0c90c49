//! The provider boundary: no Copilot SDK crate, type or event name appears in any crate of
//! the workspace other than `elsa-ai-copilot`. SDK types can only be named through the
//! crate's path, so searching for the crate names finds every use of a type; the event
//! names are the SDK's session event strings a leaking mapping would carry.

use std::path::{Path, PathBuf};

/// The crate, by both of its spellings.
const CRATE_NAMES: &[&str] = &["github_copilot_sdk", "github-copilot-sdk"];

/// Session event names of the Copilot SDK (Weaver's own stream events are named
/// `assistant.delta`, `tool.started` and so on).
const SDK_EVENT_NAMES: &[&str] = &[
    "assistant.message_delta",
    "assistant.message",
    "assistant.turn_start",
    "assistant.turn_end",
    "assistant.reasoning",
    "assistant.idle",
    "session.idle",
    "session.error",
    "session.start",
    "session.resume",
    "user.message",
    "tool.execution_start",
    "tool.execution_progress",
    "tool.execution_complete",
    "tool.execution_partial_result",
    "external_tool.requested",
    "permission.requested",
    "subagent.started",
];

/// The files (sources, manifests, docs) below `dir`, skipping build output and packages.
fn files_below(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "target" && name != "node_modules" && name != ".git" {
                files_below(&path, found);
            }
        } else if path
            .extension()
            .is_some_and(|ext| ext == "rs" || ext == "toml" || ext == "md")
        {
            found.push(path);
        }
    }
}

/// Every `file: needle` where a needle occurs in a file below one of `roots`.
fn violations(roots: &[PathBuf]) -> Vec<String> {
    let mut files = Vec::new();
    for root in roots {
        files_below(root, &mut files);
    }
    let needles = CRATE_NAMES.iter().chain(SDK_EVENT_NAMES);
    let mut found = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for needle in needles.clone() {
            if text.contains(needle) {
                found.push(format!("{}: {needle}", file.display()));
            }
        }
    }
    found
}

/// Every crate of the workspace except this one: each folder beside `Cargo.toml` that holds a
/// crate of its own (the library crates, `examples`, `benches`).
fn other_crates() -> Vec<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let this = Path::new(env!("CARGO_MANIFEST_DIR"))
        .canonicalize()
        .unwrap();
    let mut roots: Vec<PathBuf> = std::fs::read_dir(&workspace)
        .expect("the workspace folder")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.join("Cargo.toml").is_file())
        .filter(|path| path.canonicalize().unwrap() != this)
        .collect();
    roots.sort();
    roots
}

#[test]
fn no_copilot_sdk_name_leaves_the_adapter_crate() {
    let roots = other_crates();
    assert!(
        [
            "elsa-ai-host",
            "elsa-ai-abstractions",
            "elsa-ai-server",
            "examples",
            "benches"
        ]
        .iter()
        .all(|name| roots.iter().any(|root| root.ends_with(name))),
        "the scan covers the other crates: {roots:?}"
    );
    let found = violations(&roots);
    assert!(
        found.is_empty(),
        "Copilot SDK names outside elsa-ai-copilot:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_finds_a_leak() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("leaky/src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("lib.rs"),
        "use github_copilot_sdk::SessionEvent;\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("leaky/Cargo.toml"),
        "[dependencies]\ngithub-copilot-sdk = \"1\"\n",
    )
    .unwrap();
    std::fs::write(
        src.join("events.rs"),
        "match kind { \"session.idle\" => {} }\n",
    )
    .unwrap();
    let target = dir.path().join("leaky/target");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(target.join("ignored.rs"), "github_copilot_sdk").unwrap();

    let mut found = violations(&[dir.path().join("leaky")]);
    found.sort();
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(
        found
            .iter()
            .any(|f| f.ends_with("Cargo.toml: github-copilot-sdk"))
    );
    assert!(
        found
            .iter()
            .any(|f| f.ends_with("lib.rs: github_copilot_sdk"))
    );
    assert!(found.iter().any(|f| f.ends_with("events.rs: session.idle")));
}
