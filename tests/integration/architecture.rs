//! The library's module graph has no cycles: data flows one way (plan → run →
//! samples → stats → store → report), and a module that reached back up would
//! bring the import circles back. Read from the sources: every `crate::<module>`
//! path outside test code is an edge between two top-level modules of src/.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Top-level library modules: src/*.rs and src/*/ (the binary's cli.rs, main.rs
/// and cmd/ are not the library).
fn modules(src: &Path) -> BTreeSet<String> {
    let mut mods = BTreeSet::new();
    for entry in std::fs::read_dir(src).expect("read src") {
        let path = entry.expect("dir entry").path();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        let is_rs = path.extension().is_some_and(|e| e == "rs");
        if (is_rs || path.is_dir())
            && !["lib", "main", "cli", "cmd", "testkit"].contains(&name.as_str())
            && !name.ends_with("_tests")
        {
            mods.insert(name);
        }
    }
    mods
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code before the first `#[cfg(test)]` (test modules may reach anywhere).
fn non_test(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |i| &text[..i])
}

/// Every identifier right after `crate::` (and inside `crate::{…}`).
fn crate_refs(code: &str) -> BTreeSet<String> {
    let mut refs = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for part in group[..end].split(',') {
                let id: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                refs.insert(id);
            }
        } else {
            let id: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            refs.insert(id);
        }
    }
    refs
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = repo().join("src");
    let mods = modules(&src);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut g: BTreeMap<String, BTreeSet<String>> =
        mods.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for file in files {
        let rel = file.strip_prefix(&src).expect("under src");
        let first = rel.components().next().expect("a component");
        let module = Path::new(first.as_os_str())
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        let name = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        if !mods.contains(&module) || name.ends_with("_tests") || name == "tests" {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read source");
        for target in crate_refs(non_test(&text)) {
            if target != module && mods.contains(&target) {
                g.get_mut(&module).expect("a module").insert(target);
            }
        }
    }
    g
}

/// A cycle through `start`, if any (depth-first search for a path back to it).
fn cycle_from(g: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    fn dfs(
        g: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        at: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in &g[at] {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if dfs(g, start, next, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    dfs(g, start, start, &mut path, &mut BTreeSet::new()).then_some(path)
}

#[test]
fn library_modules_form_no_import_cycle() {
    let g = graph();
    assert!(g.len() > 10, "found the library's modules: {:?}", g.keys());
    assert!(g["run"].contains("launch"), "the graph reads real edges: {g:?}");
    let cycles: Vec<String> = g
        .keys()
        .filter_map(|m| cycle_from(&g, m))
        .map(|c| c.join(" → "))
        .collect();
    assert!(
        cycles.is_empty(),
        "import cycles between library modules:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_checker_sees_a_cycle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.insert("a".into(), ["b".to_string()].into());
    g.insert("b".into(), ["c".to_string()].into());
    g.insert("c".into(), ["a".to_string()].into());
    assert_eq!(
        cycle_from(&g, "a"),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    g.get_mut("c").expect("c").clear();
    assert_eq!(cycle_from(&g, "a"), None);
}

#[test]
fn the_pure_crates_depend_on_no_other_coldstart_crate() {
    for (krate, allowed) in [
        ("stats", &[][..]),
        ("sys", &[][..]),
        // The testkit only as a dev-dependency (the tests' toolchains and fixtures).
        ("trace", &["coldstart-sys", "coldstart-testkit"][..]),
        ("testkit", &[][..]),
    ] {
        let manifest =
            std::fs::read_to_string(repo().join("crates").join(krate).join("Cargo.toml")).expect("manifest");
        let deps: Vec<&str> = manifest
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|w| w.starts_with("coldstart"))
            .collect();
        for d in deps {
            assert!(allowed.contains(&d), "crates/{krate} depends on {d}");
        }
    }
}
