//! Opened files: what kind each is, which package or directory it belongs to,
//! and the groups of opens by both.

use super::{Ev, OpenGroup};
use coldstart_core::trace::Event;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a file is, for grouping opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum FileKind {
    SharedLib,
    Python,
    Java,
    JavaScript,
    Beam,
    Config,
    Directory,
    Other,
}

impl FileKind {
    pub fn name(self) -> &'static str {
        match self {
            FileKind::SharedLib => "shared libraries (.so)",
            FileKind::Python => "python (.py/.pyc)",
            FileKind::Java => "java (.jar/.class/modules)",
            FileKind::JavaScript => "javascript (.js/.mjs/.cjs)",
            FileKind::Beam => "erlang (.beam/.app)",
            FileKind::Config => "config (.json/.toml/.yaml/.ini/.conf/...)",
            FileKind::Directory => "directories",
            FileKind::Other => "other files",
        }
    }
}

/// Shared objects: `libc.so.6`, `ld-linux-x86-64.so.2`, `_json.cpython-311-x86_64-linux-gnu.so`.
/// (`.so`, or `.so.` followed by a version digit: not `ld.so.cache`).
pub(super) fn is_library(path: &str) -> bool {
    let name = basename(path);
    name.ends_with(".so")
        || name
            .match_indices(".so.")
            .any(|(i, _)| name[i + 4..].starts_with(|c: char| c.is_ascii_digit()))
}

/// Files the dynamic loader itself opens.
pub(super) fn is_loader_file(path: &str) -> bool {
    is_library(path) || path.starts_with("/etc/ld.so")
}

pub(super) fn classify(path: &str, flags: u64) -> FileKind {
    if flags & libc::O_DIRECTORY as u64 != 0 {
        return FileKind::Directory;
    }
    let name = basename(path);
    if is_library(path) || name.ends_with(".node") {
        return FileKind::SharedLib;
    }
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    match ext {
        "py" | "pyc" | "pyo" | "pth" => FileKind::Python,
        "jar" | "class" | "jmod" | "jsa" => FileKind::Java,
        _ if name == "modules" && path.contains("/lib/") => FileKind::Java, // the JDK's jimage
        "js" | "mjs" | "cjs" => FileKind::JavaScript,
        "beam" | "app" | "boot" => FileKind::Beam,
        "json" | "toml" | "yaml" | "yml" | "ini" | "conf" | "cfg" | "properties" => FileKind::Config,
        _ => FileKind::Other,
    }
}

/// The package or directory an opened file belongs to: `site-packages/<pkg>`,
/// `node_modules/<pkg>` (scoped: `node_modules/@scope/pkg`), a jar's file name,
/// an Erlang application (`<app>/ebin`), else the parent directory (with a
/// trailing `__pycache__` dropped, so a module's .py and .pyc group together).
pub fn package_key(path: &str) -> String {
    let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    if let Some(i) = comps
        .iter()
        .rposition(|c| *c == "site-packages" || *c == "dist-packages")
    {
        if let Some(pkg) = comps.get(i + 1) {
            let pkg = pkg.split('.').next().unwrap_or(pkg);
            return format!("{}/{}", comps[i], pkg);
        }
    }
    if let Some(i) = comps.iter().rposition(|c| *c == "node_modules") {
        match (comps.get(i + 1), comps.get(i + 2)) {
            (Some(scope), Some(pkg)) if scope.starts_with('@') => {
                return format!("node_modules/{scope}/{pkg}");
            }
            (Some(pkg), _) => return format!("node_modules/{pkg}"),
            _ => {}
        }
    }
    let name = basename(path);
    if name.ends_with(".jar") || name.ends_with(".jmod") {
        return name.to_string();
    }
    let mut parent: Vec<&str> = comps[..comps.len().saturating_sub(1)].to_vec();
    if parent.last() == Some(&"__pycache__") {
        parent.pop();
    }
    if parent.last() == Some(&"ebin") && parent.len() >= 2 {
        return parent[parent.len() - 2].to_string();
    }
    format!("/{}", parent.join("/"))
}

pub(super) fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Opens grouped by kind and by package, each largest (most files opened) first.
pub(super) fn open_groups(events: &[Ev]) -> (Vec<OpenGroup>, Vec<OpenGroup>) {
    let mut by_kind: BTreeMap<String, GroupAcc> = BTreeMap::new();
    let mut by_pkg: BTreeMap<String, GroupAcc> = BTreeMap::new();
    for e in events {
        if let Event::Open { path, ok, flags, .. } = e.event {
            if path.is_empty() {
                continue;
            }
            by_kind
                .entry(classify(path, *flags).name().to_string())
                .or_default()
                .add(e.t_ns, *ok);
            by_pkg.entry(package_key(path)).or_default().add(e.t_ns, *ok);
        }
    }
    (groups(by_kind), groups(by_pkg))
}

#[derive(Default)]
struct GroupAcc {
    opened: usize,
    failed: usize,
    first: u64,
    last: u64,
}

impl GroupAcc {
    fn add(&mut self, ts: u64, ok: bool) {
        if self.opened + self.failed == 0 {
            self.first = ts;
        }
        self.first = self.first.min(ts);
        self.last = self.last.max(ts);
        if ok {
            self.opened += 1;
        } else {
            self.failed += 1;
        }
    }
}

fn groups(map: BTreeMap<String, GroupAcc>) -> Vec<OpenGroup> {
    let mut v: Vec<OpenGroup> = map
        .into_iter()
        .map(|(key, g)| OpenGroup {
            key,
            opened: g.opened,
            failed: g.failed,
            first_ns: g.first,
            last_ns: g.last,
            span_ns: g.last - g.first,
        })
        .collect();
    v.sort_by(|a, b| {
        (b.opened, b.failed, b.span_ns)
            .cmp(&(a.opened, a.failed, a.span_ns))
            .then_with(|| a.key.cmp(&b.key))
    });
    v
}
