//! The host's modules depend on each other in one direction (ARCHITECTURE.md,
//! "example-host"): read from the sources, the graph of which top-level module of
//! `example-host/src` names which other (`crate::x`, `crate::{x, y}`) has
//! no cycle. A cycle is reported with its path, e.g. `items -> platform ->
//! items`, and the lines that make each step.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use platform_tests::workspace_root;

/// Which module each module names, and where (file:line), per edge.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// The top-level module a file under `src` belongs to; `None` for the
/// crate roots, which name every module by definition.
fn top_module(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let name = first.trim_end_matches(".rs").to_string();
    (!matches!(name.as_str(), "lib" | "main" | "main_inprocess")).then_some(name)
}

/// The code of a file without its unit tests (`#[cfg(test)]` modules sit
/// at the end of a file here) and without comments.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, line)| line.trim() != "#[cfg(test)]")
        .map(|(i, line)| (i + 1, line.split("//").next().unwrap_or_default()))
}

/// The modules a `crate::` path names at `rest` (what follows `crate::`):
/// one for `x::...`, each entry of a group for `{x, y::z}`.
fn named_modules(rest: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let Some(group) = rest.strip_prefix('{') else {
        return vec![ident(rest)];
    };
    let (mut depth, mut start, mut out) = (0usize, 0usize, Vec::new());
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                out.push(ident(&group[start..i]));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(ident(&group[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    out
}

/// Every Rust file under `src`: its path relative to `src`, and its text.
fn source_files(src: &Path) -> Vec<(std::path::PathBuf, String)> {
    let (mut out, mut files) = (Vec::new(), vec![src.to_path_buf()]);
    while let Some(path) = files.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("a source folder reads") {
                files.push(entry.expect("a folder entry").path());
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("a source file reads");
            let rel = path.strip_prefix(src).expect("under src").to_path_buf();
            out.push((rel, text));
        }
    }
    out
}

fn module_graph(src: &Path) -> Graph {
    let mut graph = Graph::new();
    for (rel, text) in source_files(src) {
        let rel = rel.as_path();
        let Some(from) = top_module(rel) else {
            continue;
        };
        // A `use crate::{...}` group may span lines: read the code as one
        // string, remembering where each line starts.
        let mut code = String::new();
        let mut starts = Vec::new();
        for (number, line) in code_lines(&text) {
            starts.push((code.len(), number));
            code.push_str(line);
            code.push('\n');
        }
        for (at, _) in code.match_indices("crate::") {
            let line = starts
                .iter()
                .rev()
                .find(|(start, _)| *start <= at)
                .map_or(0, |(_, n)| *n);
            for to in named_modules(&code[at + "crate::".len()..]) {
                if !to.is_empty() && to != from {
                    graph
                        .entry(from.clone())
                        .or_default()
                        .entry(to)
                        .or_insert_with(|| format!("{}:{line}", rel.display()));
                }
            }
        }
    }
    graph
}

/// A cycle of `graph`, as the list of its modules (first repeated last).
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        graph: &Graph,
        node: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flat_map(|edges| edges.keys()) {
            if let Some(cycle) = visit(graph, next, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(graph, node, &mut Vec::new(), &mut done))
}

#[test]
fn the_hosts_modules_form_no_cycle() {
    let graph = module_graph(&workspace_root().join("example-host/src"));
    let edges: usize = graph.values().map(BTreeMap::len).sum();
    println!("{} modules name others, {edges} edges", graph.len());
    // The reader must see the host's real layering, or the check is empty.
    for (from, to) in [
        ("items", "platform"),
        ("platform", "auth"),
        ("auth", "credentials"),
    ] {
        assert!(
            graph.get(from).is_some_and(|e| e.contains_key(to)),
            "the module reader missed `{from}` naming `{to}`: {graph:?}"
        );
    }
    if let Some(cycle) = find_cycle(&graph) {
        let steps: Vec<String> = cycle
            .windows(2)
            .map(|step| format!("{} -> {} ({})", step[0], step[1], graph[&step[0]][&step[1]]))
            .collect();
        panic!("the host's modules form a cycle:\n  {}", steps.join("\n  "));
    }
}

#[test]
fn the_cycle_finder_finds_a_cycle_and_the_group_reader_reads_groups() {
    assert_eq!(
        named_modules("{items::{Session, Who}, platform::Platform, storage};"),
        ["items", "platform", "storage"]
    );
    assert_eq!(named_modules("auth::Auth;"), ["auth"]);
    let edge = |a: &str, b: &str| (a.to_string(), b.to_string());
    let mut graph = Graph::new();
    for (from, to) in [
        edge("a", "b"),
        edge("b", "c"),
        edge("c", "a"),
        edge("c", "d"),
    ] {
        graph.entry(from).or_default().insert(to, String::new());
    }
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    graph.get_mut("c").map(|e| e.remove("a"));
    assert_eq!(find_cycle(&graph), None);
}

/// The public methods of `Platform` in `text`: `pub fn` lines inside its
/// `impl Platform` blocks.
fn public_platform_methods(text: &str) -> Vec<String> {
    let (mut inside, mut out) = (false, Vec::new());
    for (_, line) in code_lines(text) {
        if line.starts_with("impl Platform ") {
            inside = true;
        } else if line.starts_with('}') {
            inside = false;
        } else if inside {
            if let Some(rest) = line.trim_start().strip_prefix("pub fn ") {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.push(name);
            }
        }
    }
    out
}

/// The platform's operations are listed in one file (`items/operations.rs`);
/// building and connecting a platform stays in `platform/mod.rs`. A public
/// method on `Platform` anywhere else is reported with its file.
#[test]
fn the_platforms_operations_are_listed_in_one_file() {
    let src = workspace_root().join("example-host/src");
    let (mut listed, mut elsewhere) = (0, Vec::new());
    for (rel, text) in source_files(&src) {
        let methods = public_platform_methods(&text);
        if rel == Path::new("items/operations.rs") {
            listed = methods.len();
        } else if rel != Path::new("platform/mod.rs") {
            elsewhere.extend(
                methods
                    .into_iter()
                    .map(|m| format!("{}: {m}", rel.display())),
            );
        }
    }
    println!("{listed} operations listed in items/operations.rs");
    assert!(
        listed > 20,
        "the operations' file lists {listed} operations"
    );
    assert!(
        elsewhere.is_empty(),
        "public methods of Platform outside items/operations.rs: {elsewhere:?}"
    );
    let sample = "impl Platform {\n    pub fn read(&self) {}\n    fn helper(&self) {}\n}\npub fn free() {}\n";
    assert_eq!(public_platform_methods(sample), ["read"]);
}
