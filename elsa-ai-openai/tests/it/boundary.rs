//! The provider boundary: nothing of this crate's wire format, and no type of the crate
//! itself, reaches the policy crates. Only the server (which builds providers from its
//! configuration), the benchmarks and the examples name the crate; the host, the tools, the
//! stores, the abstractions and the other provider know neither it nor the OpenAI event and
//! object names a leaking mapping would carry.

use std::path::{Path, PathBuf};

/// The crate, by both of its spellings, and wire names of the two APIs.
const NEEDLES: &[&str] = &[
    "elsa_ai_openai",
    "elsa-ai-openai",
    "chat.completion.chunk",
    "response.output_text.delta",
    "response.function_call_arguments",
    "function_call_output",
];

/// The crates that must not know the provider.
const POLICY_CRATES: &[&str] = &[
    "elsa-ai-abstractions",
    "elsa-ai-host",
    "elsa-ai-tools",
    "elsa-ai-store",
    "elsa-ai-copilot",
    "elsa-workflows",
];

fn files_below(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if entry.file_name() != "target" {
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

#[test]
fn no_policy_crate_names_the_openai_provider_or_its_wire_format() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for name in POLICY_CRATES {
        let root = workspace.join(name);
        assert!(root.is_dir(), "{name} is a crate of the workspace");
        files_below(&root, &mut files);
    }
    assert!(
        files.len() > 50,
        "the crates' sources were found: {}",
        files.len()
    );
    let found: Vec<String> = files
        .iter()
        .filter_map(|file| Some((file, std::fs::read_to_string(file).ok()?)))
        .flat_map(|(file, text)| {
            NEEDLES
                .iter()
                .filter(move |needle| text.contains(*needle))
                .map(move |needle| format!("{}: {needle}", file.display()))
        })
        .collect();
    assert!(
        found.is_empty(),
        "the provider boundary leaks:\n{}",
        found.join("\n")
    );
}
