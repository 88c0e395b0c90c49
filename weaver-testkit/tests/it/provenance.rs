//! Every file of the repository's Elsa test data is accounted for: one `SOURCES.tsv` row
//! names its source, commit and licence, and the licence's text ships beside it.

use std::collections::BTreeSet;
use std::path::Path;

const DATA_FOLDERS: [&str; 3] = ["definitions", "instances", "activities"];

struct Row {
    path: String,
    repo: String,
    licence: String,
}

fn rows(root: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(root.join("SOURCES.tsv")).expect("SOURCES.tsv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split('\t').collect();
    let column = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("SOURCES.tsv has no `{name}` column"))
    };
    let (path, repo, licence) = (column("fixture_path"), column("repo"), column("licence"));
    lines
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let cells: Vec<&str> = line.split('\t').collect();
            assert_eq!(cells.len(), header.len(), "row with missing cells: {line}");
            Row {
                path: cells[path].to_owned(),
                repo: cells[repo].to_owned(),
                licence: cells[licence].to_owned(),
            }
        })
        .collect()
}

#[test]
fn every_test_data_file_has_one_provenance_row_with_a_shipped_licence() {
    let root = weaver_testkit::workspace_root().join("testdata/elsa");
    let rows = rows(&root);
    let listed: BTreeSet<String> = rows.iter().map(|row| row.path.clone()).collect();
    assert_eq!(listed.len(), rows.len(), "a file is listed twice");
    let on_disk: BTreeSet<String> = DATA_FOLDERS
        .iter()
        .flat_map(|folder| {
            std::fs::read_dir(root.join(folder))
                .expect("data folder")
                .map(move |entry| {
                    format!("{folder}/{}", entry.unwrap().file_name().to_string_lossy())
                })
        })
        .collect();
    assert_eq!(listed, on_disk, "SOURCES.tsv and the data folders differ");
    for row in &rows {
        // A licence names its text in LICENSES/, or is this repository's own.
        let files: Vec<&str> = row
            .licence
            .split(['(', ')', ','])
            .map(str::trim)
            .filter(|part| part.starts_with("LICENSES/"))
            .collect();
        if row.repo == "this repository" {
            assert!(row.licence.contains("this repository"), "{}", row.path);
            continue;
        }
        assert!(!files.is_empty(), "{}: no licence text named", row.path);
        for file in files {
            assert!(root.join(file).is_file(), "{}: {file} missing", row.path);
        }
    }
}

#[test]
fn the_default_fixture_root_is_the_repositorys_own_test_data() {
    if std::env::var_os("WEAVER_FIXTURES").is_some() {
        return;
    }
    let root = weaver_testkit::fixtures_dir().canonicalize().unwrap();
    let workspace = weaver_testkit::workspace_root().canonicalize().unwrap();
    assert!(root.starts_with(&workspace), "{}", root.display());
}
