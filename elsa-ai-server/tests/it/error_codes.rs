//! `docs/error-codes.md` is the one list of error codes: every code the sources return is
//! listed there, and every code listed there is still returned somewhere.
//!
//! A code is found where the sources make an error: a constructor with a literal code
//! (`AiError::bad_request("empty_message", …)`, `forbidden`, `conflict`, `internal`,
//! `unavailable`, the server's `ApiError::bad_request` and the tools' `invalid`), a `code: "…"` field of an error
//! variant or body, and the literals of a `let code = match …;` / `let code = if …;` that picks
//! one (the OpenAI and Copilot providers map their failures that way). Test modules and the
//! `testing` helpers are not scanned: their codes are made up by tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const CONSTRUCTORS: &[&str] = &[
    "bad_request(",
    "forbidden(",
    "conflict(",
    "internal(",
    "unavailable(",
    // The built-in tools' shorthand for a 400 (`invalid("time_range_required", …)`).
    "invalid(",
    // The identity module's 401 for a token that broke a rule (`refused("token_expired", …)`).
    "refused(",
];

/// Crates whose sources return errors (not the test kit, the examples or the benchmarks).
fn source_roots() -> Vec<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut roots = Vec::new();
    for entry in std::fs::read_dir(&workspace).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let crate_dir = entry.path();
        if crate_dir.join("Cargo.toml").is_file()
            && !["weaver-testkit", "examples", "benches"].contains(&name.as_str())
        {
            roots.push(crate_dir.join("src"));
        }
    }
    assert!(roots.len() >= 9, "the workspace's crates: {roots:?}");
    roots
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if entry.file_name() != "testing" {
                rust_files(&path, found);
            }
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// The snake_case identifier in a string literal that starts `text` (after whitespace).
fn literal_code(text: &str) -> Option<&str> {
    let rest = text.trim_start().strip_prefix('"')?;
    let end = rest.find('"')?;
    let code = &rest[..end];
    let snake = !code.is_empty()
        && code.starts_with(|c: char| c.is_ascii_lowercase())
        && code
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    snake.then_some(code)
}

/// The codes one source file returns.
fn codes_in(text: &str) -> BTreeSet<String> {
    // A file's unit tests (`#[cfg(test)] mod tests`, at any indentation) return no codes.
    let tests = text.match_indices("#[cfg(test)]").find(|(at, attribute)| {
        text[at + attribute.len()..]
            .trim_start()
            .starts_with("mod tests")
    });
    let text = match tests {
        Some((at, _)) => &text[..at],
        None => text,
    };
    let mut codes = BTreeSet::new();
    for needle in CONSTRUCTORS.iter().chain(&["code:"]) {
        for (at, _) in text.match_indices(needle) {
            let before = text[..at].chars().next_back();
            if needle.ends_with('(') && before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue; // `is_bad_request(`, not a constructor
            }
            if let Some(code) = literal_code(&text[at + needle.len()..]) {
                codes.insert(code.to_owned());
            }
        }
    }
    for opener in ["let code = match ", "let code = if "] {
        for (at, _) in text.match_indices(opener) {
            let block = &text[at..];
            let block = &block[..block.find(";\n").unwrap_or(block.len())];
            for piece in block.split('"').skip(1).step_by(2) {
                if let Some(code) = literal_code(&format!("\"{piece}\"")) {
                    codes.insert(code.to_owned());
                }
            }
        }
    }
    codes
}

/// Every code the sources return, with a file that returns it.
fn returned_codes() -> BTreeMap<String, PathBuf> {
    let mut files = Vec::new();
    for root in source_roots() {
        rust_files(&root, &mut files);
    }
    let mut codes = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for code in codes_in(&text) {
            codes.entry(code).or_insert_with(|| file.clone());
        }
    }
    codes
}

/// The codes `docs/error-codes.md` lists: the first cell of each table row.
fn listed_codes() -> BTreeMap<String, u16> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/error-codes.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut listed = BTreeMap::new();
    for row in text.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let code = cells[1].trim_matches('`').to_owned();
        let status: u16 = cells[2]
            .parse()
            .unwrap_or_else(|_| panic!("a status: {row}"));
        assert!(
            listed.insert(code.clone(), status).is_none(),
            "{code} is listed twice"
        );
    }
    listed
}

#[test]
fn the_scanner_finds_each_way_a_code_is_made() {
    // As rustfmt lays sources out: items at the start of their lines.
    let source = [
        r#"fn a() -> AiError { AiError::bad_request("first_code", "m") }"#,
        r#"fn b() -> AiError { ApiError::bad_request("#,
        r#"    "second_code","#,
        r#"    "m","#,
        r#") }"#,
        r#"fn c() -> AiError { AiError::Unauthenticated { code: "third_code".into(), message } }"#,
        r#"fn d(e: &E) -> AiError {"#,
        r#"    let code = match e { E::A => "fourth_code", E::B => "fifth_code" };"#,
        r#"    AiError::unavailable(code, "m")"#,
        r#"}"#,
        r#"fn e() -> bool { is_bad_request("not_a_code") }"#,
        r#"fn f() -> AiError { invalid("sixth_code", "m") }"#,
        r#"fn g() -> ConfigError { self.invalid("a sentence is not a code") }"#,
        r#"#[cfg(test)]"#,
        r#"mod tests {"#,
        r#"    fn t() -> AiError { AiError::internal("test_only_code", "m") }"#,
        r#"}"#,
    ]
    .join("\n");
    let found: Vec<String> = codes_in(&source).into_iter().collect();
    assert_eq!(
        found,
        [
            "fifth_code",
            "first_code",
            "fourth_code",
            "second_code",
            "sixth_code",
            "third_code"
        ]
    );
}

#[test]
fn every_returned_code_is_listed_and_every_listed_code_is_returned() {
    let returned = returned_codes();
    let listed = listed_codes();
    let unlisted: Vec<String> = returned
        .iter()
        .filter(|(code, _)| !listed.contains_key(*code))
        .map(|(code, file)| format!("{code} ({})", file.display()))
        .collect();
    assert!(
        unlisted.is_empty(),
        "codes the sources return that docs/error-codes.md does not list: {unlisted:#?}"
    );
    let stale: Vec<&String> = listed
        .keys()
        .filter(|code| !returned.contains_key(*code))
        .collect();
    assert!(
        stale.is_empty(),
        "codes docs/error-codes.md lists that no source returns any more: {stale:?}"
    );
    for (code, status) in &listed {
        assert!(
            [400, 401, 403, 404, 405, 409, 413, 422, 500, 503].contains(status),
            "{code}: {status}"
        );
    }
}
