//! The contract the code and tests cite lives in `docs/`, in the repository:
//! `docs/service-api.md` (the `/svc` service's API, its numbered rules) and
//! `docs/decisions.md` (what that API leaves open and the host's outside
//! contract, §1 to §9). These tests keep it so, reading files only (no host):
//!
//! * no tracked source file cites a document outside the repository, or the
//!   names those documents had before they were brought in;
//! * every `docs/<file>.md` a source file cites exists, and so does every
//!   rule or section it cites there (`docs/service-api.md rule 2`,
//!   `create rule 3`, `auth rule 4`; `docs/decisions.md §7`);
//! * `docs/README.md`, the folder's index, lists every document in it;
//! * ARCHITECTURE.md stays a map: every path it names exists, and it is
//!   short enough to read in one sitting.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use platform_tests::workspace_root;

/// Text that cites the contract outside the repository. Built from pieces so
/// that this file does not match itself.
fn outside_citations() -> Vec<String> {
    let (spec, decisions) = (concat!("SP", "EC"), concat!("DECI", "SIONS"));
    vec![
        format!("..{}shared", '/'),
        format!("{spec}.md"),
        format!("{decisions}.md"),
        format!("{spec} rule"),
        format!("{decisions} §"),
    ]
}

/// The old documents' names as whole words (an identifier that merely
/// starts with one, followed by `_`, is not one): a bare name cites the
/// outside document as surely as its file name does.
fn outside_words() -> [&'static str; 2] {
    [concat!("SP", "EC"), concat!("DECI", "SIONS")]
}

/// The files git tracks or would (`git ls-files`, untracked ones not
/// ignored included), or, outside a git checkout, every
/// file under the workspace; never build output or installed packages.
fn source_files(root: &Path) -> Vec<PathBuf> {
    let listed = Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            o.stdout
                .split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
                .collect::<Vec<_>>()
        });
    let files = listed.unwrap_or_else(|| {
        let mut found = Vec::new();
        walk(root, Path::new(""), &mut found);
        found
    });
    files
        .into_iter()
        .filter(|p| {
            !p.components().any(|c| {
                let c = c.as_os_str();
                c == "target" || c == "node_modules" || c == ".git"
            })
        })
        .collect()
}

fn walk(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root.join(rel)) else {
        return;
    };
    for entry in entries.flatten() {
        let path = rel.join(entry.file_name());
        match entry.file_type() {
            Ok(t) if t.is_dir() => walk(root, &path, out),
            Ok(t) if t.is_file() => out.push(path),
            _ => {}
        }
    }
}

/// The text of each source file that is text (images and movies are not).
fn source_texts(root: &Path) -> Vec<(PathBuf, String)> {
    source_files(root)
        .into_iter()
        .filter_map(|p| {
            let bytes = std::fs::read(root.join(&p)).ok()?;
            String::from_utf8(bytes).ok().map(|text| (p, text))
        })
        .collect()
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `word` occurs in `line` as a whole word.
fn has_word(line: &str, word: &str) -> bool {
    line.match_indices(word).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + word.len()..].chars().next();
        !before.is_some_and(is_word_char) && !after.is_some_and(is_word_char)
    })
}

/// Every `docs/<name>.md` in `text`, with the text that follows it.
fn doc_citations(text: &str) -> Vec<(String, &str)> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("docs/") {
        if text[..at]
            .chars()
            .next_back()
            .is_some_and(|c| is_word_char(c) || c == '/' || c == '.' || c == '-')
        {
            continue; // part of another path (`sdk-docs/`, `../docs/`)
        }
        let rest = &text[at + "docs/".len()..];
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c)))
            .unwrap_or(rest.len());
        let name = rest[..name_len].trim_end_matches('.');
        if let Some(stem) = name.strip_suffix(".md") {
            if !stem.is_empty() && !stem.contains('/') {
                found.push((name.to_string(), &rest[name.len()..]));
            }
        }
    }
    found
}

/// The anchor a citation names right after the document's name, if any:
/// `rule 2` → `rule-2`, `create rule 3` → `create-rule-3`, `auth rule 4` →
/// `auth-rule-4`, `§7` → `section-7`. A citation broken over two comment
/// lines is followed across the comment marker.
fn cited_anchor(after: &str) -> Option<String> {
    let rest = after.trim_start_matches(|c: char| c.is_whitespace() || "/!#*".contains(c));
    let number = |s: &str| -> Option<String> {
        let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
        (!digits.is_empty()).then_some(digits)
    };
    if let Some(n) = rest.strip_prefix('§').and_then(number) {
        return Some(format!("section-{n}"));
    }
    for (label, anchor) in [
        ("create rule ", "create-rule-"),
        ("auth rule ", "auth-rule-"),
        ("rule ", "rule-"),
    ] {
        if let Some(n) = rest.strip_prefix(label).and_then(number) {
            return Some(format!("{anchor}{n}"));
        }
    }
    None
}

fn read_doc(root: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(root.join("docs").join(name)).ok()
}

#[test]
fn no_source_cites_the_contract_outside_the_repository() {
    let root = workspace_root();
    let texts = source_texts(&root);
    assert!(
        texts.iter().any(|(p, _)| p == Path::new("Cargo.toml")),
        "the workspace's files were not found under {}",
        root.display()
    );
    let phrases = outside_citations();
    let mut failures = Vec::new();
    for (path, text) in &texts {
        for (n, line) in text.lines().enumerate() {
            let hits: Vec<&str> = phrases
                .iter()
                .map(String::as_str)
                .filter(|p| line.contains(p))
                .chain(outside_words().into_iter().filter(|w| has_word(line, w)))
                .collect();
            if !hits.is_empty() {
                failures.push(format!(
                    "{}:{}: cites {:?} (cite docs/service-api.md or docs/decisions.md): {}",
                    path.display(),
                    n + 1,
                    hits,
                    line.trim()
                ));
            }
        }
    }
    println!("docs: {} files read", texts.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_cited_document_and_anchor_exists() {
    let root = workspace_root();
    let mut failures = BTreeSet::new();
    let mut citations = 0;
    for (path, text) in source_texts(&root) {
        for (name, after) in doc_citations(&text) {
            citations += 1;
            let Some(doc) = read_doc(&root, &name) else {
                failures.insert(format!(
                    "{}: cites docs/{name}, which does not exist",
                    path.display()
                ));
                continue;
            };
            if let Some(anchor) = cited_anchor(after) {
                if !doc.contains(&format!("<a id=\"{anchor}\"></a>")) {
                    failures.insert(format!(
                        "{}: cites docs/{name} #{anchor}, which it does not have",
                        path.display()
                    ));
                }
            }
        }
    }
    println!("docs: {citations} citations of docs/ checked");
    assert!(citations > 0, "no source file cites docs/");
    assert!(
        failures.is_empty(),
        "{}",
        failures.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_docs_index_lists_every_document() {
    let root = workspace_root();
    let index = read_doc(&root, "README.md").expect("docs/README.md, the index of docs/");
    let mut unlisted = Vec::new();
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let name = entry.expect("docs/ entry").file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".md") && name != "README.md" && !index.contains(&format!("]({name})")) {
            unlisted.push(name.into_owned());
        }
    }
    assert!(
        unlisted.is_empty(),
        "docs/README.md does not link {unlisted:?}"
    );
}

/// The paths ARCHITECTURE.md names in backticks: a file (`http/mod.rs`) or
/// a folder (`tests/fixtures/`), written from its crate or from the root.
fn paths_named_in(text: &str) -> BTreeSet<String> {
    let endings = [".rs", ".md", ".sh", ".toml", ".js", ".json"];
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| {
            !t.is_empty()
                && t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-/".contains(c))
                && !t.starts_with('/')
                && !t.starts_with("target/")
                && !t.contains("..")
                && (t.contains('/') || endings.iter().any(|e| t.ends_with(e)))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn every_path_architecture_names_exists() {
    let root = workspace_root();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let files: Vec<String> = source_files(&root)
        .iter()
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .collect();
    let exists = |named: &str| {
        let name = named.trim_end_matches('/');
        files.iter().any(|f| {
            let as_file = !named.ends_with('/') && (f == name || f.ends_with(&format!("/{name}")));
            let as_folder = f.starts_with(&format!("{name}/")) || f.contains(&format!("/{name}/"));
            as_file || as_folder
        })
    };
    let named = paths_named_in(&text);
    let missing: Vec<&String> = named.iter().filter(|n| !exists(n)).collect();
    println!("ARCHITECTURE.md names {} paths", named.len());
    assert!(named.len() > 50, "the path reader found only {named:?}");
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

/// ARCHITECTURE.md is a map; detail belongs in the modules' own doc
/// comments, figures in docs/benchmarks.md, versions in
/// host-sdk/CHANGELOG.md.
const ARCHITECTURE_MAX_WORDS: usize = 3_000;

#[test]
fn architecture_stays_a_map() {
    let root = workspace_root();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let words = text.split_whitespace().count();
    println!("ARCHITECTURE.md: {words} words");
    assert!(
        words <= ARCHITECTURE_MAX_WORDS,
        "ARCHITECTURE.md has {words} words, over {ARCHITECTURE_MAX_WORDS}: move detail into the modules' doc comments"
    );
}
