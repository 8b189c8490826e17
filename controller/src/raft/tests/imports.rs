//! The module graph of `controller/src/raft/` has no import circle: no
//! module imports (`use super::…`, `crate::raft::…`, or an inline
//! `super::module::` path) a module that imports it back, directly or
//! through others. A module is a top-level file (`engine.rs`) with its
//! folder (`engine/*.rs`, its own children). `mod.rs` (which declares every
//! module and re-exports the public ones) and this test folder are left
//! out: their items are the vocabulary every module shares.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
};

/// The source files of each module of `dir`: `name.rs` and `name/**/*.rs`.
fn modules(dir: &Path) -> BTreeMap<String, Vec<(bool, String)>> {
    let mut modules: BTreeMap<String, Vec<(bool, String)>> = BTreeMap::new();
    let entries = std::fs::read_dir(dir).expect("read the raft folder");
    for entry in entries {
        let path = entry.expect("a folder entry").path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
            continue;
        };
        if stem == "mod" || stem == "tests" {
            continue;
        }
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("read a module");
            modules.entry(stem).or_default().push((false, text));
        } else if path.is_dir() {
            let mut stack = vec![path];
            while let Some(folder) = stack.pop() {
                for child in std::fs::read_dir(&folder).expect("read a module folder") {
                    let child = child.expect("a folder entry").path();
                    if child.is_dir() {
                        stack.push(child);
                    } else if child.extension().is_some_and(|e| e == "rs") {
                        let text = std::fs::read_to_string(&child).expect("read a module file");
                        modules.entry(stem.clone()).or_default().push((true, text));
                    }
                }
            }
        }
    }
    modules
}

/// The first path segment of each entry of a brace group starting at
/// `text[0] == '{'` (`{a::X, b, c::{Y, Z}}` gives a, b, c).
fn group_heads(text: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut entry = String::new();
    for c in text.chars() {
        match c {
            '{' => {
                depth += 1;
                if depth == 1 {
                    continue;
                }
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    heads.push(std::mem::take(&mut entry));
                    break;
                }
            }
            ',' if depth == 1 => {
                heads.push(std::mem::take(&mut entry));
                continue;
            }
            _ => {}
        }
        if depth >= 1 {
            entry.push(c);
        }
    }
    heads
        .iter()
        .filter_map(|e| {
            let e = e.trim();
            let head: String = e
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (!head.is_empty()).then_some(head)
        })
        .collect()
}

/// The sibling modules `text` names after each of `prefixes`.
fn imported(text: &str, prefixes: &[&str]) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut names = BTreeSet::new();
    for prefix in prefixes {
        let mut rest = code.as_str();
        while let Some(at) = rest.find(prefix) {
            let after = &rest[at + prefix.len()..];
            if after.starts_with('{') {
                names.extend(group_heads(after));
            } else {
                let head: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if after[head.len()..].starts_with("::") || after[head.len()..].starts_with(';') {
                    names.insert(head);
                }
            }
            rest = after;
        }
    }
    names
}

/// The import graph (module -> modules it imports).
fn graph(modules: &BTreeMap<String, Vec<(bool, String)>>) -> BTreeMap<String, BTreeSet<String>> {
    modules
        .iter()
        .map(|(name, files)| {
            let mut edges = BTreeSet::new();
            for (nested, text) in files {
                // In a top-level file `super::` is `raft`; in a module's own
                // folder it is the module itself.
                let prefixes: &[&str] = if *nested {
                    &["crate::raft::"]
                } else {
                    &["super::", "crate::raft::"]
                };
                edges.extend(
                    imported(text, prefixes)
                        .into_iter()
                        .filter(|m| m != name && modules.contains_key(m)),
                );
            }
            (name.clone(), edges)
        })
        .collect()
}

/// A circle of the graph, if any (as the path of modules round it).
fn find_circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut circle = path[start..].to_vec();
            circle.push(node.to_owned());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, graph, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_raft_module_imports_a_module_that_imports_it_back() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/raft");
    let modules = modules(&dir);
    assert!(
        modules.contains_key("engine") && modules.contains_key("leader"),
        "the raft modules are found in {}",
        dir.display()
    );
    let graph = graph(&modules);
    assert!(
        graph["engine"].contains("leader") && graph["leader"].contains("core"),
        "the graph sees imports: {graph:?}"
    );
    assert_eq!(
        find_circle(&graph),
        None,
        "import circle in controller/src/raft"
    );
}

#[test]
fn the_import_check_finds_a_circle_through_use_groups_and_inline_paths() {
    let files = |text: &str| vec![(false, text.to_owned())];
    let modules: BTreeMap<String, Vec<(bool, String)>> = [
        ("a".to_owned(), files("use super::{Result, b::B};\n")),
        ("b".to_owned(), files("fn f() { super::c::g() }\n")),
        ("c".to_owned(), files("use crate::raft::{self as r, a};\n")),
        (
            "d".to_owned(),
            files("// use super::a::A;\nuse super::c;\n"),
        ),
    ]
    .into_iter()
    .collect();
    let graph = graph(&modules);
    assert_eq!(
        graph["d"],
        BTreeSet::from(["c".to_owned()]),
        "comments are skipped"
    );
    assert_eq!(
        find_circle(&graph),
        Some(
            vec!["a", "b", "c", "a"]
                .into_iter()
                .map(str::to_owned)
                .collect()
        )
    );
}
