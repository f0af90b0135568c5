//! The shape of the code, read from the sources with a Rust parser (syn):
//!
//! - the crates depend on each other in one direction (core below explain, lambda
//!   and tune; report above them all; the binary on top);
//! - inside every crate, at every folder level, the modules form no import cycle:
//!   a file of module `a` naming anything under its sibling `b` (through `crate::`,
//!   `super::` or `self::`, in a `use` or in a path) is an edge `a → b`;
//! - no function outside tests is longer than 120 lines.
//!
//! Test code (an item under `#[cfg(test)]`, the files such a module includes,
//! `*_tests.rs`, `tests.rs`, the test kit) may reach anywhere and is left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The source roots: the binary's src/ and every crate's src/.
fn source_roots() -> Vec<(String, PathBuf)> {
    let mut roots = vec![("coldstart".to_string(), repo().join("src"))];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(repo().join("crates"))
        .expect("read crates/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    crates.sort();
    for c in crates {
        let name = c
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        roots.push((name, c.join("src")));
    }
    roots
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

/// A file's module path inside its crate: lib.rs → [], a.rs → [a], a/mod.rs → [a],
/// a/b.rs → [a, b].
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if !["mod", "lib", "main"].contains(&stem) {
        parts.push(stem.to_string());
    }
    parts
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta.require_list().is_ok_and(|l| {
                l.tokens
                    .to_string()
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|w| w == "test")
            })
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item::*;
    match item {
        Const(i) => &i.attrs,
        Enum(i) => &i.attrs,
        ExternCrate(i) => &i.attrs,
        Fn(i) => &i.attrs,
        ForeignMod(i) => &i.attrs,
        Impl(i) => &i.attrs,
        Macro(i) => &i.attrs,
        Mod(i) => &i.attrs,
        Static(i) => &i.attrs,
        Struct(i) => &i.attrs,
        Trait(i) => &i.attrs,
        TraitAlias(i) => &i.attrs,
        Type(i) => &i.attrs,
        Union(i) => &i.attrs,
        Use(i) => &i.attrs,
        _ => &[],
    }
}

/// What one file's non-test code names and how long its functions are.
struct FileFacts {
    module: Vec<String>,
    /// Absolute module paths named (crate-relative segments; items included).
    refs: Vec<Vec<String>>,
    /// (function, first line, lines) of every function outside tests.
    fns: Vec<(String, usize, usize)>,
    /// Files of modules this file declares under `#[cfg(test)]`.
    test_files: Vec<PathBuf>,
}

struct Collector<'a> {
    file: &'a Path,
    facts: FileFacts,
}

impl Collector<'_> {
    /// `crate::a::b`, `super::a`, `self::a` → an absolute path; other paths name
    /// imports or the prelude and are seen where they are imported.
    fn resolve(&self, segs: &[String]) -> Option<Vec<String>> {
        let first = segs.first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => self.facts.module.clone(),
            "super" => self.facts.module.clone(),
            _ => return None,
        };
        let mut rest = &segs[1..];
        if first == "super" {
            base.pop();
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn add(&mut self, segs: Vec<String>) {
        if let Some(p) = self.resolve(&segs) {
            self.facts.refs.push(p);
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                if n.ident != "self" {
                    full.push(n.ident.to_string());
                }
                self.add(full);
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                if r.ident != "self" {
                    full.push(r.ident.to_string());
                }
                self.add(full);
            }
            syn::UseTree::Glob(_) => self.add(prefix.clone()),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    fn function(&mut self, name: &syn::Ident, block: &syn::Block) {
        let start = name.span().start().line;
        let end = block.brace_token.span.close().end().line;
        self.facts.fns.push((name.to_string(), start, end + 1 - start));
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if is_cfg_test(item_attrs(item)) {
            if let syn::Item::Mod(m) = item {
                if m.content.is_none() {
                    self.facts.test_files.extend(declared_files(self.file, m));
                }
            }
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        if let syn::ImplItem::Fn(f) = item {
            if is_cfg_test(&f.attrs) {
                return;
            }
        }
        syn::visit::visit_impl_item(self, item);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.function(&f.sig.ident, &f.block);
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.function(&f.sig.ident, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.add(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }
}

/// The files a `mod name;` declaration in `file` stands for.
fn declared_files(file: &Path, m: &syn::ItemMod) -> Vec<PathBuf> {
    let dir = file.parent().expect("a parent");
    for a in &m.attrs {
        if a.path().is_ident("path") {
            if let Ok(nv) = a.meta.require_name_value() {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) = &nv.value
                {
                    return vec![dir.join(s.value())];
                }
            }
        }
    }
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let base = if ["mod", "lib", "main"].contains(&stem) {
        dir.to_path_buf()
    } else {
        dir.join(stem)
    };
    let name = m.ident.to_string();
    vec![base.join(format!("{name}.rs")), base.join(&name).join("mod.rs")]
}

fn is_test_name(file: &Path) -> bool {
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    stem.ends_with("_tests") || ["tests", "testkit", "fixtures"].contains(&stem)
}

/// Every non-test file of one crate with what it names.
fn crate_facts(src: &Path) -> Vec<(PathBuf, FileFacts)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut out = Vec::new();
    let mut test_files: BTreeSet<PathBuf> = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read source");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("parse {}: {e}", file.display()));
        let mut c = Collector {
            file: &file,
            facts: FileFacts {
                module: module_path(src, &file),
                refs: Vec::new(),
                fns: Vec::new(),
                test_files: Vec::new(),
            },
        };
        c.visit_file(&ast);
        let facts = c.facts;
        for t in &facts.test_files {
            // `a/../b.rs` and `b.rs` are one file.
            test_files.insert(t.canonicalize().unwrap_or_else(|_| t.clone()));
        }
        out.push((file, facts));
    }
    out.retain(|(f, _)| {
        !is_test_name(f) && !test_files.contains(&f.canonicalize().unwrap_or_else(|_| f.clone()))
    });
    out
}

/// Per folder (a module path), the import edges between its child modules.
type Graphs = BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>>;

fn folder_graphs(facts: &[(PathBuf, FileFacts)]) -> Graphs {
    let modules: BTreeSet<Vec<String>> = facts.iter().map(|(_, f)| f.module.clone()).collect();
    let mut graphs: Graphs = BTreeMap::new();
    for m in &modules {
        if let Some((_, parent)) = m.split_last() {
            graphs
                .entry(parent.to_vec())
                .or_default()
                .entry(m[m.len() - 1].clone())
                .or_default();
        }
    }
    for (_, f) in facts {
        for r in &f.refs {
            let d = f.module.iter().zip(r).take_while(|(a, b)| a == b).count();
            if d >= f.module.len() || d >= r.len() {
                continue;
            }
            // A sibling module, not an item of the parent.
            if !modules.contains(&r[..=d]) {
                continue;
            }
            graphs
                .entry(f.module[..d].to_vec())
                .or_default()
                .entry(f.module[d].clone())
                .or_default()
                .insert(r[d].clone());
        }
    }
    graphs
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
        for next in g.get(at).into_iter().flatten() {
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
fn modules_form_no_import_cycle_at_any_level() {
    let _turn = crate::common::beside();
    let mut cycles = Vec::new();
    let mut edges = 0;
    for (krate, src) in source_roots() {
        let graphs = folder_graphs(&crate_facts(&src));
        for (folder, g) in &graphs {
            edges += g.values().map(BTreeSet::len).sum::<usize>();
            let mut seen: BTreeSet<Vec<String>> = BTreeSet::new();
            for m in g.keys() {
                if let Some(c) = cycle_from(g, m) {
                    let mut key = c[..c.len() - 1].to_vec();
                    key.sort();
                    if seen.insert(key) {
                        let at = if folder.is_empty() {
                            String::new()
                        } else {
                            format!("::{}", folder.join("::"))
                        };
                        cycles.push(format!("{krate}{at}: {}", c.join(" → ")));
                    }
                }
            }
        }
    }
    assert!(edges > 100, "the graphs read real edges: {edges}");
    assert!(
        cycles.is_empty(),
        "import cycles between modules:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_graph_sees_crate_super_and_self_paths() {
    let _turn = crate::common::beside();
    let src = repo().join("crates/core/src");
    let graphs = folder_graphs(&crate_facts(&src));
    let root = &graphs[&Vec::new()];
    assert!(root["run"].contains("launch"), "{root:?}");
    assert!(root["run"].contains("sample"), "{root:?}");
}

#[test]
fn the_checker_sees_a_cycle() {
    let _turn = crate::common::beside();
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
fn no_function_outside_tests_is_longer_than_120_lines() {
    let _turn = crate::common::beside();
    let mut long = Vec::new();
    let mut fns = 0;
    for (_, src) in source_roots() {
        for (file, f) in crate_facts(&src) {
            for (name, line, lines) in &f.fns {
                fns += 1;
                if *lines > 120 {
                    let rel = file.strip_prefix(repo()).unwrap_or(&file).display().to_string();
                    long.push(format!("{rel}:{line} {name}: {lines} lines"));
                }
            }
        }
    }
    assert!(fns > 500, "the parser found the functions: {fns}");
    assert!(long.is_empty(), "functions over 120 lines:\n{}", long.join("\n"));
}

/// Which coldstart crates each crate may depend on: data flows one way.
#[test]
fn crates_depend_in_one_direction() {
    let _turn = crate::common::beside();
    let allowed: &[(&str, &[&str])] = &[
        ("stats", &[]),
        ("sys", &[]),
        ("trace", &["coldstart-sys"]),
        ("profile", &[]),
        ("testkit", &[]),
        (
            "core",
            &[
                "coldstart-stats",
                "coldstart-sys",
                "coldstart-trace",
                "coldstart-profile",
                // A pod variant's probes, by the kubelet's rules.
                "coldstart-pods",
            ],
        ),
        ("explain", &["coldstart-core"]),
        ("tune", &["coldstart-core", "coldstart-explain"]),
        ("lambda", &["coldstart-core", "coldstart-sys"]),
        ("fleet", &["coldstart-core"]),
        // `coldstart pods`: the API's objects read, summarised with the stats crate.
        ("pods", &["coldstart-stats"]),
        // `lambda --aws`: beside the emulator, not on it (the SDK stays out of coldstart-lambda).
        ("aws", &["coldstart-core"]),
        (
            "report",
            &[
                "coldstart-core",
                "coldstart-explain",
                "coldstart-tune",
                "coldstart-lambda",
                "coldstart-stats",
                "coldstart-pods",
            ],
        ),
    ];
    for (krate, allowed) in allowed {
        let manifest =
            std::fs::read_to_string(repo().join("crates").join(krate).join("Cargo.toml")).expect("manifest");
        // Only [dependencies]: a dev-dependency may be anything.
        let deps = manifest
            .split("\n[")
            .find(|s| s.starts_with("dependencies]"))
            .unwrap_or_default();
        for d in deps
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|w| w.starts_with("coldstart"))
        {
            assert!(allowed.contains(&d), "crates/{krate} depends on {d}");
        }
    }
}
