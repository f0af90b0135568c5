//! Python: `PYTHONPROFILEIMPORTTIME=1` (the environment form of `-X importtime`,
//! Python ≥ 3.7). The interpreter writes one stderr line per import, in the
//! order imports *finish*:
//!
//! ```text
//! import time: self [us] | cumulative | imported package
//! import time:        55 |         55 |     _codecs
//! import time:       405 |        459 |   codecs
//! ```
//!
//! The name is indented two spaces per nesting level, and a module's children
//! are printed before it, so the tree is rebuilt with a stack. Durations are
//! microseconds of the interpreter's monotonic clock; there are no instants.

use super::{Adapter, Collected, FinalExec, Injection};
use anyhow::{Context, Result};
use coldstart_core::sample::section::{Section, Span, Table, Value};
use regex::Regex;
use std::collections::HashMap;
use std::path::Path;

const HEADER: &str = "import time: self [us] | cumulative | imported package";

/// Rows kept in the grouped table.
const TABLE_ROWS: usize = 15;

/// What `site` imports by itself on Linux; anything else directly under `site`
/// was pulled in by a `.pth` file's `import` line or by site customisation.
const SITE_OWN: &[&str] = &[
    "os",
    "_sitebuiltins",
    "sitecustomize",
    "usercustomize",
    "builtins",
    "io",
    "_io",
    "rlcompleter",
    "readline",
];

pub struct Python;

/// One `import time:` data line, with its place in the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Import {
    pub name: String,
    pub self_us: u64,
    pub cumulative_us: u64,
    /// Nesting level as printed (0 = imported by no other import).
    pub level: usize,
    /// Indices into the import list, in execution order.
    pub children: Vec<usize>,
}

/// The parsed stream: every import (in print order) and the roots.
#[derive(Debug, Default)]
pub struct ImportTree {
    pub imports: Vec<Import>,
    /// Level-0 imports (and orphans of a cut-off stream), in execution order.
    pub roots: Vec<usize>,
    /// Header lines seen: more than one means several interpreters wrote here.
    pub headers: usize,
    /// Claimed lines that were neither the header nor a data line.
    pub malformed: usize,
}

impl Adapter for Python {
    fn name(&self) -> &'static str {
        "python"
    }

    fn detect(&self, exec: &FinalExec) -> bool {
        [exec.exe, exec.path].iter().any(|p| is_python_name(file_name(p)))
    }

    fn inject(&self, _dir: &Path, _target_env: &[(String, String)]) -> Result<Injection> {
        Ok(Injection {
            // The value only has to be non-empty; "1" is what the docs show.
            env: vec![("PYTHONPROFILEIMPORTTIME".to_string(), "1".to_string())],
            claims: vec![Regex::new(r"^import time:").context("building the importtime line pattern")?],
        })
    }

    fn collect(&self, got: &Collected) -> Result<Section> {
        let tree = parse(got.claimed.iter().map(|(_, line)| line.as_str()));
        let mut sec = section(&tree);
        // importtime cannot say which .pth file caused an import; the tracer saw
        // which ones site read, and what it opened after each.
        if let Some(trace) = got.trace {
            let pth = pth_files(trace);
            if !pth.is_empty() {
                sec.facts
                    .push((".pth files read (traced run)".into(), pth.join(", ").into()));
                attribute_pth(&mut sec, &tree, trace);
            }
        }
        Ok(sec)
    }
}

/// The `.pth` files the interpreter opened in the traced run, in order.
fn pth_files(trace: &coldstart_core::trace::Trace) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in &trace.events {
        if let coldstart_core::trace::Event::Open { path, ok: true, .. } = &e.event {
            let name = file_name(path);
            if name.ends_with(".pth") && !out.iter().any(|p| p == name) {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// The top-level module a file opened by the import system belongs to:
/// `…/json/__init__.py` → json, `…/__pycache__/six.cpython-311.pyc` → six,
/// `…/_cffi_backend.cpython-311-x86_64-linux-gnu.so` → _cffi_backend.
/// Inside a site directory the first component below it is the top-level
/// package; elsewhere the file's own stem (or its package directory's name).
fn module_of(path: &str) -> Option<&str> {
    let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let name = *comps.last()?;
    if !(name.ends_with(".py") || name.ends_with(".pyc") || name.ends_with(".so")) {
        return None;
    }
    if let Some(i) = comps
        .iter()
        .rposition(|c| *c == "site-packages" || *c == "dist-packages")
    {
        let top = *comps.get(i + 1)?;
        if i + 2 < comps.len() {
            return (top != "__pycache__").then_some(top).or_else(|| stem(name));
        }
        return stem(top);
    }
    match stem(name)? {
        // The package's directory: above `__pycache__` for a compiled __init__.
        "__init__" => comps.iter().rev().skip(1).find(|c| **c != "__pycache__").copied(),
        stem => Some(stem),
    }
}

/// "six.cpython-311.pyc" → "six"; "x.py" → "x".
fn stem(name: &str) -> Option<&str> {
    name.split('.').next().filter(|s| !s.is_empty())
}

/// Which `.pth` file caused each import directly under `site`. `site` reads a
/// .pth file whole, then runs its `import` lines before opening the next one,
/// so the module files opened after a .pth file (and before the next) are what
/// its lines imported: an import under site whose first file open (in the
/// traced run, by the process that read the .pth files) follows `a.pth` came
/// from `a.pth`. Names the file for each; leaves out imports whose file was
/// opened before any .pth file (site's own, a module already cached).
pub(crate) fn pth_of_imports<'a>(
    trace: &coldstart_core::trace::Trace,
    wanted: &[&'a str],
) -> Vec<(&'a str, String)> {
    let Some(pid) = trace.events.iter().find_map(|e| match &e.event {
        coldstart_core::trace::Event::Open { path, ok: true, .. } if path.ends_with(".pth") => Some(e.pid),
        _ => None,
    }) else {
        return Vec::new();
    };
    let mut current: Option<&str> = None;
    let mut found: Vec<(&'a str, String)> = Vec::new();
    for e in trace.events.iter().filter(|e| e.pid == pid) {
        let coldstart_core::trace::Event::Open {
            path,
            ok: true,
            flags,
            ..
        } = &e.event
        else {
            continue;
        };
        if flags & libc::O_DIRECTORY as u64 != 0 {
            continue;
        }
        if path.ends_with(".pth") {
            current = Some(file_name(path));
            continue;
        }
        let (Some(pth), Some(module)) = (current, module_of(path)) else {
            continue;
        };
        if let Some(w) = wanted.iter().find(|w| **w == module) {
            if !found.iter().any(|(f, _)| f == w) {
                found.push((w, pth.to_string()));
            }
        }
    }
    found
}

/// Facts per .pth file (the imports it caused, their cumulative time) and the
/// file on each such import's span.
fn attribute_pth(sec: &mut Section, tree: &ImportTree, trace: &coldstart_core::trace::Trace) {
    let imports = &tree.imports;
    let Some(&site) = tree.roots.iter().find(|&&i| imports[i].name == "site") else {
        return;
    };
    let foreign: Vec<&Import> = imports[site]
        .children
        .iter()
        .map(|&c| &imports[c])
        .filter(|c| !SITE_OWN.contains(&c.name.as_str()))
        .collect();
    if foreign.is_empty() {
        return;
    }
    // A dotted import line (`import a.b`) opens `a` first.
    let tops: Vec<&str> = foreign
        .iter()
        .map(|c| c.name.split('.').next().unwrap_or(&c.name))
        .collect();
    let found = pth_of_imports(trace, &tops);
    let mut by_pth: Vec<(String, Vec<&Import>)> = Vec::new();
    let mut unknown = Vec::new();
    for (c, top) in foreign.iter().zip(&tops) {
        match found.iter().find(|(m, _)| m == top) {
            Some((_, pth)) => match by_pth.iter_mut().find(|(p, _)| p == pth) {
                Some((_, v)) => v.push(c),
                None => by_pth.push((pth.clone(), vec![c])),
            },
            None => unknown.push(c.name.as_str()),
        }
    }
    for (pth, list) in &by_pth {
        let total: u64 = list.iter().map(|c| c.cumulative_us).sum();
        let names: Vec<&str> = list.iter().map(|c| c.name.as_str()).collect();
        sec.facts.push((
            format!("  imports from {pth}"),
            Value::parts([Value::Ns(total * 1000), format!(" ({})", names.join(", ")).into()]),
        ));
    }
    if !unknown.is_empty() {
        sec.facts.push((
            "  imports under site, .pth not known".into(),
            unknown.join(", ").into(),
        ));
    }
    for span in sec.spans.iter_mut().filter(|s| s.depth == 1) {
        let top = span.name.split('.').next().unwrap_or(&span.name);
        if let Some((_, pth)) = found.iter().find(|(m, _)| *m == top) {
            if foreign.iter().any(|c| c.name == span.name) {
                span.args.push(("pth".into(), pth.clone().into()));
            }
        }
    }
    sec.notes.push(
        "a .pth file's imports are named from the traced run: site runs each file's import lines          before opening the next, so a module first opened after a.pth came from a.pth"
            .into(),
    );
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// python, python3, python3.11 (not pythonw, python3-config, python3.11-dbg…).
fn is_python_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("python") else {
        return false;
    };
    let mut parts = rest.splitn(2, '.');
    let major = parts.next().unwrap_or("");
    let minor = parts.next();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match minor {
        None => major.is_empty() || digits(major),
        Some(minor) => digits(major) && digits(minor),
    }
}

/// Parse claimed lines (any order of header and data lines) into the tree.
pub fn parse<'a>(lines: impl IntoIterator<Item = &'a str>) -> ImportTree {
    let mut tree = ImportTree::default();
    // Imports whose parent has not been printed yet: (level, index).
    let mut pending: Vec<(usize, usize)> = Vec::new();
    for line in lines {
        let line = line.trim_end_matches(['\n', '\r']);
        if line.trim_end() == HEADER {
            tree.headers += 1;
            continue;
        }
        let Some((self_us, cumulative_us, level, name)) = parse_line(line) else {
            tree.malformed += 1;
            continue;
        };
        let index = tree.imports.len();
        // Everything pending deeper than this line was imported while it ran.
        let first_child = pending
            .iter()
            .rposition(|&(l, _)| l <= level)
            .map_or(0, |i| i + 1);
        let children: Vec<usize> = pending.drain(first_child..).map(|(_, i)| i).collect();
        tree.imports.push(Import {
            name: name.to_string(),
            self_us,
            cumulative_us,
            level,
            children,
        });
        pending.push((level, index));
    }
    // What is left never got a printed parent: level-0 imports, or the children
    // of an import still running when the stream ended (a killed server).
    tree.roots = pending.into_iter().map(|(_, i)| i).collect();
    tree
}

/// `import time:       405 |        459 |   codecs` → (405, 459, 1, "codecs").
fn parse_line(line: &str) -> Option<(u64, u64, usize, &str)> {
    let rest = line.strip_prefix("import time:")?;
    let mut fields = rest.splitn(3, '|');
    let self_us = fields.next()?.trim().parse().ok()?;
    let cumulative_us = fields.next()?.trim().parse().ok()?;
    // Python prints "| " then two spaces per level, then the name.
    let tail = fields.next()?.strip_prefix(' ')?;
    let name = tail.trim_start_matches(' ');
    let indent = tail.len() - name.len();
    let name = name.trim_end();
    if name.is_empty() {
        return None;
    }
    Some((self_us, cumulative_us, indent / 2, name))
}

/// The top-level package of a dotted module name.
fn package(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

#[derive(Debug, Default)]
struct Group {
    modules: usize,
    self_us: u64,
    /// Cumulative time of the group's outermost imports (nested imports of the
    /// same package are inside their ancestor's cumulative already).
    cumulative_us: u64,
}

/// Imports grouped by top-level package, largest cumulative first. The tree is
/// walked so that an import nested inside another import of the same package
/// is not counted twice in the group's cumulative time.
fn grouped(tree: &ImportTree) -> Vec<(String, Group)> {
    let imports = &tree.imports;
    let mut groups: HashMap<&str, Group> = HashMap::new();
    let mut stack: Vec<(usize, Vec<&str>)> = tree.roots.iter().rev().map(|&i| (i, Vec::new())).collect();
    while let Some((i, outer)) = stack.pop() {
        let import = &imports[i];
        let pkg = package(&import.name);
        let group = groups.entry(pkg).or_default();
        group.modules += 1;
        group.self_us += import.self_us;
        if !outer.contains(&pkg) {
            group.cumulative_us += import.cumulative_us;
        }
        let mut inner = outer;
        inner.push(pkg);
        for &c in import.children.iter().rev() {
            stack.push((c, inner.clone()));
        }
    }
    let mut rows: Vec<(String, Group)> = groups.into_iter().map(|(k, g)| (k.to_string(), g)).collect();
    rows.sort_by(|a, b| {
        (b.1.cumulative_us, b.1.self_us)
            .cmp(&(a.1.cumulative_us, a.1.self_us))
            .then_with(|| a.0.cmp(&b.0))
    });
    rows
}

fn section(tree: &ImportTree) -> Section {
    let imports = &tree.imports;
    let mut section = Section {
        source: "python".to_string(),
        title: "Python imports (PYTHONPROFILEIMPORTTIME)".to_string(),
        ..Section::default()
    };
    if imports.is_empty() {
        section.notes.push(
            "no importtime lines: Python older than 3.7, or PYTHON* variables ignored (-E, -I), \
             or the program is not the Python interpreter"
                .into(),
        );
        return section;
    }

    let groups = grouped(tree);
    let top_total: u64 = tree.roots.iter().map(|&i| imports[i].cumulative_us).sum();
    section
        .facts
        .push(("imports".to_string(), Value::count(imports.len())));
    section
        .facts
        .push(("packages".to_string(), Value::count(groups.len())));
    section
        .facts
        .push(("top-level imports".to_string(), Value::Ns(top_total * 1000)));

    // Interpreter start-up imports (encodings, io, zipimport…) print before
    // `site`, so everything before it is the interpreter's own cost.
    let site = tree.roots.iter().position(|&i| imports[i].name == "site");
    match site {
        Some(pos) => {
            let before: u64 = tree.roots[..pos].iter().map(|&i| imports[i].cumulative_us).sum();
            section.facts.push((
                "interpreter start-up imports".to_string(),
                Value::Ns(before * 1000),
            ));
            site_facts(&mut section, imports, tree.roots[pos]);
        }
        None => section
            .notes
            .push("no `site` import: run with -S (or -I without site), so no .pth cost".into()),
    }

    let mut by_self: Vec<&Import> = imports.iter().collect();
    by_self.sort_by(|a, b| b.self_us.cmp(&a.self_us).then_with(|| a.name.cmp(&b.name)));
    let top = by_self
        .iter()
        .take(3)
        .map(|m| (m.name.clone(), Value::Ns(m.self_us * 1000)));
    section
        .facts
        .push(("largest self time".to_string(), Value::list(top)));

    let mut table = Table::new(&["package", "modules", "self", "cumulative"]);
    for (pkg, g) in &groups {
        table.rows.push(vec![
            pkg.to_string().into(),
            Value::count(g.modules),
            Value::Ns(g.self_us * 1000),
            Value::Ns(g.cumulative_us * 1000),
        ]);
    }
    table.truncate(TABLE_ROWS);
    section.table = table;

    let mut seen: HashMap<&str, usize> = HashMap::new();
    for m in imports {
        *seen.entry(m.name.as_str()).or_default() += 1;
    }
    let repeated = seen.values().filter(|&&n| n > 1).count();
    if repeated > 0 {
        section.notes.push(
            format!(
                "{repeated} module names appear more than once: Python also prints imports that \
             failed (e.g. optional modules probed with try/except), each attempt counts"
            )
            .into(),
        );
    }
    if tree.malformed > 0 {
        section
            .notes
            .push(format!("{} claimed lines did not parse and were skipped", tree.malformed).into());
    }
    if tree.headers > 1 {
        section.notes.push(
            format!(
                "{} Python processes wrote import times to the same stream (PYTHONPROFILEIMPORTTIME \
             is inherited); their imports are mixed here and no timeline is drawn",
                tree.headers
            )
            .into(),
        );
    } else {
        section.spans = lower_bound_spans(tree);
        section.notes.push(
            "importtime gives durations, not instants: the spans are a lower-bound layout, each \
             top-level import placed end to end from spawn (they run one after another on the \
             main thread) and children end to end inside their parent. Real starts are later by \
             exec, interpreter start-up and the code run between imports"
                .into(),
        );
    }
    section.notes.push(
        "PYTHONPROFILEIMPORTTIME is on from interpreter start, so the imports before `site` \
         (the interpreter's own) are included; imports done by other threads would be mixed in"
            .into(),
    );
    section
}

/// `site` processes the .pth files; an `import` line in one runs under site.
fn site_facts(section: &mut Section, imports: &[Import], site: usize) {
    let site = &imports[site];
    section.facts.push((
        "site (incl. .pth files)".to_string(),
        Value::parts([
            Value::Ns(site.cumulative_us * 1000),
            " (".into(),
            Value::Ns(site.self_us * 1000),
            " self)".into(),
        ]),
    ));
    let mut children: Vec<&Import> = site.children.iter().map(|&c| &imports[c]).collect();
    let foreign: u64 = children
        .iter()
        .filter(|c| !SITE_OWN.contains(&c.name.as_str()))
        .map(|c| c.cumulative_us)
        .sum();
    children.sort_by_key(|c| std::cmp::Reverse(c.cumulative_us));
    if !children.is_empty() {
        let top = children
            .iter()
            .take(4)
            .map(|c| (c.name.clone(), Value::Ns(c.cumulative_us * 1000)));
        section
            .facts
            .push(("site imported".to_string(), Value::list(top)));
    }
    section.facts.push((
        "imports from .pth files (under site)".to_string(),
        Value::Ns(foreign * 1000),
    ));
    section.notes.push(
        format!(
            "imports directly under `site` other than {} come from `import` lines in .pth files \
         (importtime does not say which file: the traced run's opens do); the rest of the .pth \
         work is in site's self time",
            SITE_OWN[..4].join(", ")
        )
        .into(),
    );
}

/// Sound only for one interpreter: imports on the main thread are sequential,
/// so each is placed as early as it could have run. Parents precede children.
fn lower_bound_spans(tree: &ImportTree) -> Vec<Span> {
    let imports = &tree.imports;
    let mut spans = Vec::with_capacity(imports.len());
    // (index, start ns, depth), popped in pre-order.
    let mut stack: Vec<(usize, u64, usize)> = Vec::new();
    let mut at = 0;
    let mut roots = Vec::new();
    for &r in &tree.roots {
        roots.push((r, at, 0));
        at += imports[r].cumulative_us * 1000;
    }
    stack.extend(roots.into_iter().rev());
    while let Some((i, start, depth)) = stack.pop() {
        let m = &imports[i];
        spans.push(Span {
            name: m.name.clone(),
            start_ns: start,
            dur_ns: m.cumulative_us * 1000,
            depth,
            args: vec![
                ("package".to_string(), package(&m.name).into()),
                ("self".to_string(), Value::Ns(m.self_us * 1000)),
            ],
        });
        let mut child_at = start;
        let mut kids = Vec::new();
        for &c in &m.children {
            kids.push((c, child_at, depth + 1));
            child_at += imports[c].cumulative_us * 1000;
        }
        stack.extend(kids.into_iter().rev());
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn pth_files_are_named_from_the_traced_opens() {
        use coldstart_core::trace::{Event, Outcome, Trace, TraceEvent};
        let open = |path: &str, ok: bool| TraceEvent {
            ts_ns: 1,
            pid: 7,
            tid: 7,
            event: Event::Open {
                path: path.into(),
                ok,
                errno: if ok { 0 } else { 2 },
                flags: 0,
            },
        };
        let trace = Trace {
            t0_ns: 0,
            end_ns: 2,
            root_pid: 7,
            events: vec![
                open("/x/site-packages/a.pth", true),
                open("/x/site-packages/gone.pth", false),
                open("/x/site-packages/json/__init__.py", true),
                open("/y/a.pth", true),
                open("/x/site-packages/b.pth", true),
            ],
            killed: false,
            outcome: Outcome::Reached,
            warnings: Vec::new(),
            root_usage: None,
            task_names: Default::default(),
            stops: Vec::new(),
            cpu: Vec::new(),
        };
        assert_eq!(pth_files(&trace), ["a.pth", "b.pth"]);
    }

    const SNIPPET: &str = "\
import time: self [us] | cumulative | imported package
import time:       170 |        170 |   _io
import time:       406 |        406 |   posix
import time:       354 |        930 | _frozen_importlib_external
import time:        55 |         55 |     _codecs
import time:       405 |        460 |   codecs
import time:       435 |        435 |   encodings.aliases
import time:       734 |       1629 | encodings
import time:       300 |        300 |   os
import time:      5000 |       5000 |   certifi
import time:      1000 |       6300 | site
import time:       593 |        700 |     re
import time:       100 |        800 |   json.decoder
import time:       400 |       1200 | json
";

    #[test]
    fn python_names_are_recognised() {
        for yes in ["python", "python3", "python3.11", "python2"] {
            assert!(is_python_name(yes), "{yes}");
        }
        for no in [
            "pythonw",
            "python3-config",
            "python3.11-dbg",
            "python3.",
            "ipython",
            "py",
        ] {
            assert!(!is_python_name(no), "{no}");
        }
        let exec = FinalExec {
            path: "/usr/bin/python3.11",
            exe: "/usr/bin/python3.11",
        };
        assert!(Python.detect(&exec));
        // A script run through its shebang: the kernel's exe is the interpreter.
        let script = FinalExec {
            path: "/srv/app/manage.py",
            exe: "/opt/fixture/.pyenv/versions/3.11.7/bin/python3.11",
        };
        assert!(Python.detect(&script));
        let node = FinalExec {
            path: "/usr/bin/node",
            exe: "/usr/bin/node",
        };
        assert!(!Python.detect(&node));
    }

    #[test]
    fn parser_rebuilds_nesting_from_indentation() {
        let tree = parse(SNIPPET.lines());
        assert_eq!(tree.headers, 1);
        assert_eq!(tree.malformed, 0);
        assert_eq!(tree.imports.len(), 13);
        let names =
            |v: &[usize]| -> Vec<String> { v.iter().map(|&i| tree.imports[i].name.clone()).collect() };
        assert_eq!(
            names(&tree.roots),
            ["_frozen_importlib_external", "encodings", "site", "json"]
        );
        let by_name = |n: &str| tree.imports.iter().find(|m| m.name == n).expect("import present");
        assert_eq!(
            names(&by_name("encodings").children),
            ["codecs", "encodings.aliases"]
        );
        assert_eq!(names(&by_name("codecs").children), ["_codecs"]);
        assert_eq!(names(&by_name("json").children), ["json.decoder"]);
        assert_eq!(names(&by_name("json.decoder").children), ["re"]);
        assert_eq!(by_name("re").level, 2);
        assert_eq!(
            (by_name("site").self_us, by_name("site").cumulative_us),
            (1000, 6300)
        );

        let s = section(&tree);
        let fact = |k: &str| s.facts.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(fact("imports"), Some(Value::Count(13)));
        // 930 + 1629 + 6300 + 1200 µs
        assert_eq!(fact("top-level imports"), Some(Value::Ns(10_059_000)));
        assert_eq!(
            fact("imports from .pth files (under site)"),
            Some(Value::Ns(5_000_000))
        );
        assert!(fact("largest self time")
            .is_some_and(|v| matches!(v, Value::Parts(p) if p[0] == "certifi ".into())));
        // json (json + json.decoder, not counted twice): cumulative 1.2 ms.
        let json = s
            .table
            .rows
            .iter()
            .find(|r| r[0] == "json".into())
            .expect("json row");
        assert_eq!(json[1], Value::Count(2));
        assert_eq!(json[3], Value::Ns(1_200_000));
        assert_eq!(s.table.rows[0][0], "site".into());

        // Spans: roots end to end from 0, children inside their parent.
        let span = |n: &str| s.spans.iter().find(|x| x.name == n).expect("span present");
        assert_eq!(span("_frozen_importlib_external").start_ns, 0);
        assert_eq!(span("encodings").start_ns, 930_000);
        assert_eq!(span("codecs").start_ns, 930_000);
        assert_eq!(span("encodings.aliases").start_ns, 930_000 + 460_000);
        assert_eq!(span("re").depth, 2);
        assert_eq!(s.spans.len(), 13);
    }

    #[test]
    fn a_cut_off_stream_keeps_orphans_as_roots() {
        // A server killed while `app` was still importing: its children have no parent line.
        let tree = parse(["import time:        10 |         10 |   a", "garbage"]);
        assert_eq!(tree.roots.len(), 1);
        assert_eq!(tree.malformed, 1);
        let s = section(&tree);
        assert_eq!(s.spans[0].depth, 0);
    }

    #[test]
    fn real_interpreter_imports_are_parsed() {
        let Some(python) = crate::testkit::python() else {
            return;
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let injection = Python.inject(dir.path(), &[]).expect("inject");
        let out = Command::new(python)
            .args([
                "-c",
                "import json, email.parser, http.client, sys; print('app ready', file=sys.stderr)",
            ])
            .envs(injection.env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("run python");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let stderr = String::from_utf8_lossy(&out.stderr);
        let claimed_by = |line: &str| injection.claims.iter().any(|re| re.is_match(line));
        let mut claimed = Vec::new();
        let mut rest = Vec::new();
        for line in stderr.lines() {
            if claimed_by(line) {
                claimed.push((0, line.to_string()));
            } else {
                rest.push(line);
            }
        }
        assert_eq!(rest, ["app ready"], "only the app's own line is left");
        let data_lines = claimed.iter().filter(|(_, l)| l.as_str() != HEADER).count();

        let s = Python
            .collect(&Collected {
                dir: dir.path(),
                claimed: &claimed,
                ready_ns: 0,
                trace: None,
                t0_mono_ns: 0,
            })
            .expect("collect");
        let fact = |k: &str| s.facts.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(fact("imports"), Some(Value::count(data_lines)));
        assert!(data_lines > 20, "{data_lines} imports");
        assert!(fact("site (incl. .pth files)").is_some(), "{:?}", s.facts);

        let tree = parse(claimed.iter().map(|(_, l)| l.as_str()));
        for m in &tree.imports {
            assert!(m.cumulative_us >= m.self_us, "{m:?}");
        }
        let packages: Vec<&str> = tree.imports.iter().map(|m| package(&m.name)).collect();
        assert!(packages.contains(&"json") && packages.contains(&"email"));

        let groups = grouped(&tree);
        assert!(groups.iter().any(|(p, _)| p == "json") && groups.iter().any(|(p, _)| p == "email"));
        assert_eq!(groups.iter().map(|(_, g)| g.modules).sum::<usize>(), data_lines);
        for (pkg, g) in &groups {
            assert!(g.cumulative_us >= g.self_us, "{pkg}: {g:?}");
        }
        for pair in groups.windows(2) {
            assert!(pair[0].1.cumulative_us >= pair[1].1.cumulative_us, "{pair:?}");
        }
        let all = section(&tree);
        let shown: Vec<&str> = all.table.rows.iter().filter_map(|r| r[0].as_text()).collect();
        let expected: Vec<&str> = groups.iter().take(shown.len()).map(|(p, _)| p.as_str()).collect();
        assert_eq!(shown, expected, "the table keeps the grouped order");
        assert_eq!(all.table.rows.len() + all.table.omitted, groups.len());
        // Spans nest: each child lies inside the nearest shallower span before it.
        let mut open: Vec<&Span> = Vec::new();
        for span in &all.spans {
            open.truncate(span.depth);
            if let Some(parent) = open.last() {
                assert_eq!(parent.depth + 1, span.depth);
                assert!(span.start_ns >= parent.start_ns);
                assert!(
                    span.start_ns + span.dur_ns <= parent.start_ns + parent.dur_ns,
                    "{span:?}"
                );
            } else {
                assert_eq!(span.depth, 0);
            }
            open.push(span);
        }
    }

    #[test]
    fn module_names_from_opened_files() {
        assert_eq!(
            module_of("/v/lib/python3.11/site-packages/json_x/__init__.py"),
            Some("json_x")
        );
        assert_eq!(module_of("/v/lib/python3.11/site-packages/six.py"), Some("six"));
        assert_eq!(
            module_of("/v/lib/python3.11/site-packages/__pycache__/six.cpython-311.pyc"),
            Some("six")
        );
        assert_eq!(
            module_of("/v/lib/python3.11/site-packages/_cffi.cpython-311-x86_64-linux-gnu.so"),
            Some("_cffi")
        );
        assert_eq!(
            module_of("/usr/lib/python3.11/json/__pycache__/__init__.cpython-311.pyc"),
            Some("json")
        );
        assert_eq!(module_of("/usr/lib/python3.11/json/__init__.py"), Some("json"));
        assert_eq!(module_of("/usr/lib/python3.11/decimal.py"), Some("decimal"));
        assert_eq!(module_of("/v/x.pth"), None);
    }

    /// The .pth files' own `import` lines, read with string operations only:
    /// file name → modules, in order.
    fn pth_import_lines(dir: &Path, files: &[&str]) -> Vec<(String, Vec<String>)> {
        let mut out = Vec::new();
        for f in files {
            let text = std::fs::read_to_string(dir.join(f)).expect("read .pth");
            let mut mods = Vec::new();
            for line in text.lines().filter(|l| l.starts_with("import ")) {
                for stmt in line.split(';') {
                    if let Some(m) = stmt.trim().strip_prefix("import ") {
                        mods.push(m.trim().to_string());
                    }
                }
            }
            if !mods.is_empty() {
                out.push((f.to_string(), mods));
            }
        }
        out
    }

    /// A venv whose site-packages holds three .pth files (two with import lines,
    /// one with a path only): each import under `site` is named with the .pth
    /// file whose lines imported it, matching the files themselves, and each
    /// file's time is the sum of its imports' importtime lines, grepped.
    #[test]
    fn imports_are_attributed_to_the_pth_file_that_ran_them() {
        let Some(python) = crate::testkit::python() else {
            return;
        };
        let tmp = tempfile::tempdir_in(crate::testkit::fixtures_dir()).expect("tempdir");
        let venv = tmp.path().join("venv");
        let st = Command::new(&python)
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv)
            .status()
            .expect("python -m venv");
        assert!(st.success(), "venv failed");
        let vpy = venv.join("bin").join("python");
        let out = Command::new(&vpy)
            .args(["-c", "import site; print(site.getsitepackages()[0])"])
            .output()
            .expect("site dir");
        let site_dir = std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        let files: &[(&str, &str)] = &[
            ("pthmod_a.py", "A = 1\n"),
            ("pthmod_b.py", "import json\nB = json.dumps(2)\n"),
            ("pthmod_c/__init__.py", "C = 3\n"),
            ("a_first.pth", "import pthmod_a\n"),
            ("b_second.pth", "# a comment\nimport pthmod_b; import pthmod_c\n"),
            ("c_paths.pth", "nonexistent-dir\n"),
        ];
        for (name, text) in files {
            let p = site_dir.join(name);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(&p, text).expect("write");
        }

        // The traced run (which files site opened, in order).
        // argv[0] is the venv's path: Python finds its prefix (pyvenv.cfg) from it.
        let argv: Vec<String> = vec![vpy.display().to_string(), "-c".into(), "print('app')".into()];
        let opts = coldstart_core::trace::TraceOptions::new(argv, vpy.clone());
        let trace = coldstart_core::launch::traced::trace(coldstart_core::Lab::open().expect("a Lab"), &opts)
            .expect("trace");

        // The adapted run.
        let inj = Python.inject(tmp.path(), &[]).expect("inject");
        let out = Command::new(&vpy)
            .args(["-c", "print('app')"])
            .envs(inj.env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("run python");
        assert!(out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let claimed: Vec<(u64, String)> = stderr
            .lines()
            .filter(|l| inj.claims.iter().any(|re| re.is_match(l)))
            .map(|l| (0, l.to_string()))
            .collect();
        let s = Python
            .collect(&Collected {
                dir: tmp.path(),
                claimed: &claimed,
                ready_ns: 0,
                trace: Some(&trace),
                t0_mono_ns: 0,
            })
            .expect("collect");

        // Cumulative µs of an import, grepped from the raw lines.
        let cumulative = |name: &str| -> u64 {
            stderr
                .lines()
                .filter_map(|l| l.strip_prefix("import time:"))
                .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>())
                .find(|cols| cols.len() == 3 && cols[2] == name)
                .and_then(|cols| cols[1].parse().ok())
                .unwrap_or_else(|| panic!("no importtime line for {name}"))
        };
        let expected = pth_import_lines(&site_dir, &["a_first.pth", "b_second.pth", "c_paths.pth"]);
        assert_eq!(expected.len(), 2);
        for (pth, mods) in &expected {
            let total: u64 = mods.iter().map(|m| cumulative(m)).sum();
            let key = format!("  imports from {pth}");
            let fact = s.facts.iter().find(|f| f.0 == key).map(|f| f.1.clone());
            assert_eq!(
                fact,
                Some(Value::parts([
                    Value::Ns(total * 1000),
                    format!(" ({})", mods.join(", ")).into()
                ])),
                "{:?}",
                s.facts
            );
        }
        assert!(!s
            .facts
            .iter()
            .any(|f| f.0.contains("c_paths.pth") && f.0.starts_with("  imports")));
        assert!(
            !s.facts.iter().any(|f| f.0.contains("not known")),
            "{:?}",
            s.facts
        );
        let span = s
            .spans
            .iter()
            .find(|sp| sp.name == "pthmod_b")
            .expect("pthmod_b span");
        assert!(
            span.args.contains(&("pth".to_string(), "b_second.pth".into())),
            "{span:?}"
        );
    }
}
