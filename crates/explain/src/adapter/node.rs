//! Node: a CommonJS preload (`NODE_OPTIONS=--require …`, source in
//! `node_require.js`) wraps `Module._load` and records every `require()`:
//! request, resolved file, the load it happened in, and start/end on
//! `process.hrtime.bigint()`. On Linux that is libuv's `uv_hrtime`,
//! `clock_gettime(CLOCK_MONOTONIC)`, the clock of coldstart's time zero, so
//! the records become spans on the run's timeline without any estimate.
//!
//! The preload also switches on V8's `--profile-deserialization` (see `v8.rs`):
//! the code-cache hits after it are facts of the section.
//!
//! Records go to a file in the adapter's directory (never to the target's
//! stdout/stderr), written with one `writeSync` per finished top-level require
//! so that a server killed after ready has already written what it loaded.

use super::{append_option, Adapter, Collected, FinalExec, Injection};
use anyhow::{Context, Result};
use coldstart_core::sample::section::{Section, Span, Table, Value};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;

const PRELOAD: &str = include_str!("node_require.js");
const PRELOAD_FILE: &str = "coldstart-require.js";
const OUT_FILE: &str = "node-requires.jsonl";
/// Names the record file for the preload (the preload does nothing without it).
const OUT_VAR: &str = "COLDSTART_NODE_REQUIRE_OUT";
/// Asks the preload to switch on V8's --profile-deserialization.
const V8_VAR: &str = "COLDSTART_NODE_V8_PROFILE";

/// Rows kept in the grouped table.
const TABLE_ROWS: usize = 15;

pub struct Node;

/// One `Module._load` call, as the preload wrote it.
#[derive(Debug, Clone, Deserialize)]
pub struct Record {
    pub pid: u32,
    pub id: i64,
    /// The load in progress when this one started (-1: none).
    pub parent: i64,
    pub request: String,
    /// Resolved file, `node:<name>` for builtins; None if resolution failed.
    pub file: Option<String>,
    pub builtin: bool,
    /// Already in the module cache (or a builtin already required): no work done.
    pub cached: bool,
    /// The entry point (`node app.js` loads it through Module._load too).
    pub main: bool,
    /// False when the load threw (a missing optional dependency, say).
    pub ok: bool,
    /// CLOCK_MONOTONIC ns, as decimal strings (BigInt in the preload).
    pub start: String,
    pub end: String,
}

/// A record with its times parsed and its place in the tree.
#[derive(Debug)]
struct Load {
    rec: Record,
    start: u64,
    cumulative: u64,
    self_ns: u64,
    package: String,
    children: Vec<usize>,
}

impl Adapter for Node {
    fn name(&self) -> &'static str {
        "node"
    }

    fn detect(&self, exec: &FinalExec) -> bool {
        [exec.exe, exec.path]
            .iter()
            .any(|p| matches!(p.rsplit('/').next(), Some("node" | "nodejs")))
    }

    fn inject(&self, dir: &Path, target_env: &[(String, String)]) -> Result<Injection> {
        let preload = dir.join(PRELOAD_FILE);
        std::fs::write(&preload, PRELOAD).with_context(|| format!("writing {}", preload.display()))?;
        let preload = preload
            .to_str()
            .with_context(|| format!("{} is not UTF-8, NODE_OPTIONS cannot name it", preload.display()))?;
        let out = dir.join(OUT_FILE);
        let out = out
            .to_str()
            .with_context(|| format!("{} is not UTF-8", out.display()))?
            .to_string();
        let require = format!("--require {}", node_options_word(preload));
        Ok(Injection {
            env: vec![
                append_option(target_env, "NODE_OPTIONS", ' ', &require),
                (OUT_VAR.to_string(), out),
                (V8_VAR.to_string(), "1".to_string()),
            ],
            claims: super::v8::claims()?,
        })
    }

    fn collect(&self, got: &Collected) -> Result<Section> {
        let path = got.dir.join(OUT_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let mut section = section(&text, got.t0_mono_ns, got.ready_ns);
        let report = super::v8::parse(got.claimed.iter().map(|(_, l)| l.as_str()));
        super::v8::add_to(&mut section, &report, false);
        Ok(section)
    }
}

/// NODE_OPTIONS splits on spaces but honours double quotes with backslash
/// escapes inside them, so a path with spaces is quoted.
fn node_options_word(s: &str) -> String {
    if !s.is_empty() && !s.chars().any(|c| c.is_whitespace() || c == '"' || c == '\\') {
        return s.to_string();
    }
    let mut quoted = String::from("\"");
    for c in s.chars() {
        if c == '"' || c == '\\' {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    quoted
}

/// The package a loaded file belongs to: the last `node_modules/<pkg>` (or
/// `@scope/pkg`) in its path, `node:<name>` for builtins, `(app)` otherwise.
fn package_of(rec: &Record) -> String {
    if rec.builtin {
        return rec
            .file
            .clone()
            .unwrap_or_else(|| format!("node:{}", rec.request));
    }
    let Some(file) = &rec.file else {
        return "(unresolved)".to_string();
    };
    let Some(pos) = file.rfind("/node_modules/") else {
        return "(app)".to_string();
    };
    let mut parts = file[pos + "/node_modules/".len()..].split('/');
    match (parts.next(), parts.next()) {
        (Some(scope), Some(name)) if scope.starts_with('@') => format!("{scope}/{name}"),
        (Some(name), _) => name.to_string(),
        (None, _) => "(app)".to_string(),
    }
}

#[derive(Debug, Default)]
struct Group {
    /// First loads only: a cache hit is not another module.
    modules: usize,
    self_ns: u64,
    /// Of the group's outermost loads (nested ones are inside them already).
    cumulative_ns: u64,
}

/// The parsed file of one run: the first process's loads and what was set aside.
struct Parsed {
    loads: Vec<Load>,
    roots: Vec<usize>,
    malformed: usize,
    other_pids: usize,
    /// Loads whose enclosing load never finished (the process was killed inside it).
    orphans: usize,
}

fn parse(text: &str) -> Parsed {
    let mut malformed = 0;
    let mut by_pid: HashMap<u32, Vec<Record>> = HashMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Record>(line) {
            Ok(r) => by_pid.entry(r.pid).or_default().push(r),
            Err(_) => malformed += 1,
        }
    }
    let other_pids = by_pid.len().saturating_sub(1);
    // The preload deletes its variable so children do not record, but a child
    // given it explicitly would: the first to start is the program the adapter
    // was chosen for.
    let first = by_pid
        .iter()
        .min_by_key(|(_, recs)| recs.iter().filter_map(|r| r.start.parse::<u64>().ok()).min())
        .map(|(&pid, _)| pid);
    let mut records = first.and_then(|pid| by_pid.remove(&pid)).unwrap_or_default();
    records.sort_by_key(|r| r.id);

    let mut loads: Vec<Load> = Vec::with_capacity(records.len());
    for rec in records {
        let (Ok(start), Ok(end)) = (rec.start.parse::<u64>(), rec.end.parse::<u64>()) else {
            malformed += 1;
            continue;
        };
        loads.push(Load {
            package: package_of(&rec),
            rec,
            start,
            cumulative: end.saturating_sub(start),
            self_ns: 0,
            children: Vec::new(),
        });
    }
    let index: HashMap<i64, usize> = loads.iter().enumerate().map(|(i, l)| (l.rec.id, i)).collect();
    let mut roots = Vec::new();
    let mut orphans = 0;
    // Ids grow in start order, so children are pushed in the order they ran.
    for i in 0..loads.len() {
        match index.get(&loads[i].rec.parent) {
            Some(&p) => loads[p].children.push(i),
            None => {
                if loads[i].rec.parent >= 0 {
                    orphans += 1;
                }
                roots.push(i);
            }
        }
    }
    for i in 0..loads.len() {
        let children: u64 = loads[i].children.iter().map(|&c| loads[c].cumulative).sum();
        loads[i].self_ns = loads[i].cumulative.saturating_sub(children);
    }
    Parsed {
        loads,
        roots,
        malformed,
        other_pids,
        orphans,
    }
}

/// Group by package, walking the tree; the main module belongs to no group
/// (its cumulative time is everything, so it is a fact instead).
fn grouped(p: &Parsed) -> Vec<(String, Group)> {
    let mut groups: HashMap<&str, Group> = HashMap::new();
    let mut stack: Vec<(usize, Vec<&str>)> = p.roots.iter().rev().map(|&i| (i, Vec::new())).collect();
    while let Some((i, outer)) = stack.pop() {
        let load = &p.loads[i];
        let mut inner = outer.clone();
        if !load.rec.main {
            let pkg = load.package.as_str();
            let group = groups.entry(pkg).or_default();
            if load.rec.ok && !load.rec.cached {
                group.modules += 1;
            }
            group.self_ns += load.self_ns;
            if !outer.contains(&pkg) {
                group.cumulative_ns += load.cumulative;
            }
            inner.push(pkg);
        }
        for &c in load.children.iter().rev() {
            stack.push((c, inner.clone()));
        }
    }
    let mut rows: Vec<(String, Group)> = groups.into_iter().map(|(k, g)| (k.to_string(), g)).collect();
    rows.sort_by(|a, b| {
        (b.1.cumulative_ns, b.1.self_ns)
            .cmp(&(a.1.cumulative_ns, a.1.self_ns))
            .then_with(|| a.0.cmp(&b.0))
    });
    rows
}

/// The section's headline facts: modules, requires, the top level and main, the
/// largest self times, failures and loads that finished after ready.
fn facts(p: &Parsed, t0: u64, ready_ns: u64) -> Vec<(String, Value)> {
    let mut facts = Vec::new();
    let loads = &p.loads;
    let main = loads.iter().find(|l| l.rec.main);
    let first_loads: Vec<&Load> = loads
        .iter()
        .filter(|l| l.rec.ok && !l.rec.cached && !l.rec.main)
        .collect();
    let builtin = first_loads.iter().filter(|l| l.rec.builtin).count();
    let top: Vec<usize> = match main {
        Some(m) => m
            .children
            .iter()
            .copied()
            .chain(p.roots.iter().copied())
            .collect(),
        None => p.roots.clone(),
    };
    let top_total: u64 = top
        .iter()
        .filter(|&&i| !loads[i].rec.main)
        .map(|&i| loads[i].cumulative)
        .sum();

    facts.push(("modules loaded".to_string(), Value::count(first_loads.len())));
    facts.push((
        "builtin / files".to_string(),
        Value::parts([
            Value::count(builtin),
            " / ".into(),
            Value::count(first_loads.len() - builtin),
        ]),
    ));
    facts.push((
        "require calls (incl. cache hits)".to_string(),
        Value::count(loads.iter().filter(|l| !l.rec.main).count()),
    ));
    facts.push(("top-level requires".to_string(), Value::Ns(top_total)));
    if let Some(m) = main {
        facts.push((
            "main module (synchronous top level)".to_string(),
            Value::Ns(m.cumulative),
        ));
    }
    let mut by_self: Vec<&&Load> = first_loads.iter().collect();
    by_self.sort_by(|a, b| b.self_ns.cmp(&a.self_ns).then_with(|| a.rec.id.cmp(&b.rec.id)));
    let largest = by_self
        .iter()
        .take(3)
        .map(|l| (l.rec.request.clone(), Value::Ns(l.self_ns)));
    facts.push(("largest self time".to_string(), Value::list(largest)));
    let failed = loads.iter().filter(|l| !l.rec.ok).count();
    if failed > 0 {
        facts.push(("failed requires".to_string(), Value::count(failed)));
    }
    if ready_ns > 0 {
        let ready_abs = t0.saturating_add(ready_ns);
        let late = loads
            .iter()
            .filter(|l| !l.rec.cached && l.start.saturating_add(l.cumulative) > ready_abs)
            .count();
        if late > 0 {
            facts.push(("loads finished after ready".to_string(), Value::count(late)));
        }
    }
    facts
}

fn section(text: &str, t0: u64, ready_ns: u64) -> Section {
    let p = parse(text);
    let mut section = Section {
        source: "node".to_string(),
        title: "Node requires (Module._load preload)".to_string(),
        ..Section::default()
    };
    let esm_note = "ES modules are not seen: `import` (an .mjs entry, \"type\": \"module\", import of a \
                    builtin) bypasses Module._load; only require() and CommonJS files imported from \
                    ESM are recorded";
    if p.loads.is_empty() {
        section.notes.push(
            format!(
                "no requires recorded: the entry may be an ES module, or NODE_OPTIONS was not honoured \
             (node started with a flag that ignores it). {esm_note}"
            )
            .into(),
        );
        return section;
    }
    let loads = &p.loads;
    let main = loads.iter().find(|l| l.rec.main);
    section.facts = facts(&p, t0, ready_ns);

    let mut table = Table::new(&["package", "modules", "self", "cumulative"]);
    for (pkg, g) in grouped(&p) {
        table.rows.push(vec![
            pkg.into(),
            Value::count(g.modules),
            Value::Ns(g.self_ns),
            Value::Ns(g.cumulative_ns),
        ]);
    }
    table.truncate(TABLE_ROWS);
    section.table = table;

    section.spans = spans(&p, t0);
    if loads.iter().any(|l| l.start < t0) {
        section
            .notes
            .push("some loads are stamped before time zero: the clocks disagree, spans are clipped".into());
    }

    section.notes.push(
        "a module counts once, at its first load; later require() calls of a cached module are \
         cache hits, kept in the times but not drawn"
            .into(),
    );
    section.notes.push(
        "the recorder resolves each request once more (Module._load then hits the path cache): \
         its cost is inside each load's time"
            .into(),
    );
    if main.is_none_or(|m| m.rec.file.as_deref().is_some_and(|f| f.ends_with(".mjs"))) {
        section.notes.push(esm_note.into());
    }
    if p.orphans > 0 {
        section.notes.push(
            format!(
                "{} loads ran inside a require that never finished (the process ended inside it): \
             they are shown as roots",
                p.orphans
            )
            .into(),
        );
    }
    if p.other_pids > 0 {
        section.notes.push(
            format!(
                "{} other node processes also recorded; only the first is shown",
                p.other_pids
            )
            .into(),
        );
    }
    if p.malformed > 0 {
        section
            .notes
            .push(format!("{} record lines did not parse and were skipped", p.malformed).into());
    }
    section.notes.push(
        "only the main thread of the first node process is recorded: the preload removes its \
         variable, so worker threads and child processes (which copy the environment) do not record"
            .into(),
    );
    section
}

/// First loads (and failed ones) in pre-order, depth from the tree. Cache hits
/// are leaves, so leaving them out keeps every child one below its parent.
fn spans(p: &Parsed, t0: u64) -> Vec<Span> {
    let mut spans = Vec::new();
    let mut stack: Vec<(usize, usize)> = p.roots.iter().rev().map(|&i| (i, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        let load = &p.loads[i];
        if load.rec.cached {
            continue;
        }
        let mut args = vec![("package".to_string(), Value::Text(load.package.clone()))];
        if let Some(file) = &load.rec.file {
            args.push(("file".to_string(), Value::Text(file.clone())));
        }
        args.push(("self".to_string(), Value::Ns(load.self_ns)));
        if !load.rec.ok {
            args.push(("error".to_string(), "threw".into()));
        }
        spans.push(Span {
            name: if load.rec.main {
                format!("main {}", load.rec.request)
            } else {
                load.rec.request.clone()
            },
            start_ns: load.start.saturating_sub(t0),
            dur_ns: load.cumulative,
            depth,
            args,
        });
        for &c in load.children.iter().rev() {
            stack.push((c, depth + 1));
        }
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    fn write(path: &Path, text: &str) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        std::fs::write(path, text).expect("write");
    }

    /// An app dir with node_modules/alpha and node_modules/beta (beta requires alpha).
    fn app(main: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(
            &root.join("node_modules/alpha/index.js"),
            "module.exports = { name: 'alpha' };\n",
        );
        write(
            &root.join("node_modules/beta/index.js"),
            "const alpha = require('alpha');\nmodule.exports = { name: 'beta', alpha };\n",
        );
        write(
            &root.join("lib.js"),
            "module.exports = require('path').join('a', 'b');\n",
        );
        write(&root.join("app.js"), main);
        dir
    }

    /// The adapter's private directory, with a space to exercise NODE_OPTIONS quoting.
    fn adapter_dir(app: &Path) -> std::path::PathBuf {
        let dir = app.join("adapter dir");
        std::fs::create_dir_all(&dir).expect("mkdir");
        dir
    }

    fn command(node: &Path, app: &Path, injection: &Injection) -> Command {
        let mut cmd = Command::new(node);
        cmd.arg(app.join("app.js"))
            .current_dir(app)
            .env_remove("NODE_OPTIONS")
            .envs(injection.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    fn collect(dir: &Path, t0: u64, claimed: &[(u64, String)]) -> Section {
        Node.collect(&Collected {
            dir,
            claimed,
            ready_ns: 0,
            trace: None,
            t0_mono_ns: t0,
        })
        .expect("collect")
    }

    /// Split output lines as the run does: (claimed, the program's own).
    fn split_claims(text: &str, injection: &Injection) -> (Vec<(u64, String)>, Vec<String>) {
        let (mut claimed, mut own) = (Vec::new(), Vec::new());
        for line in text.lines() {
            if injection.claims.iter().any(|re| re.is_match(line)) {
                claimed.push((0, line.to_string()));
            } else {
                own.push(line.to_string());
            }
        }
        (claimed, own)
    }

    /// Code-cache hits in raw output, counted with string operations only:
    /// (lines, total ns rounded per line).
    fn grep_code_cache_hits(raw: &str) -> (usize, u64) {
        let mut n = 0;
        let mut ns = 0;
        for line in raw.lines().filter(|l| l.starts_with("[Deserializing from ")) {
            let ms = line
                .split(" took ")
                .nth(1)
                .and_then(|t| t.strip_suffix(" ms]"))
                .and_then(|t| t.parse::<f64>().ok())
                .expect("a time");
            n += 1;
            ns += (ms * 1e6).round() as u64;
        }
        (n, ns)
    }

    fn row<'a>(s: &'a Section, pkg: &str) -> &'a [Value] {
        s.table
            .rows
            .iter()
            .find(|r| r[0].as_text() == Some(pkg))
            .unwrap_or_else(|| panic!("no {pkg} row in {:?}", s.table.rows))
    }

    /// Every span lies inside the nearest shallower span before it, one level down.
    fn assert_nested(spans: &[Span]) {
        let mut open: Vec<&Span> = Vec::new();
        for span in spans {
            assert!(span.depth <= open.len(), "{span:?} skips a level");
            open.truncate(span.depth);
            if let Some(parent) = open.last() {
                assert!(
                    span.start_ns >= parent.start_ns,
                    "{span:?} starts before {parent:?}"
                );
                assert!(
                    span.start_ns + span.dur_ns <= parent.start_ns + parent.dur_ns,
                    "{span:?} ends after {parent:?}"
                );
            }
            open.push(span);
        }
    }

    #[test]
    fn node_names_are_recognised_and_options_quoted() {
        let exec = |p| FinalExec { path: p, exe: p };
        assert!(Node.detect(&exec("/usr/bin/node")));
        assert!(Node.detect(&exec("/usr/bin/nodejs")));
        assert!(!Node.detect(&exec("/usr/bin/nodemon")));
        assert_eq!(node_options_word("/tmp/x.js"), "/tmp/x.js");
        assert_eq!(node_options_word("/tmp/a b/x.js"), "\"/tmp/a b/x.js\"");
        assert_eq!(node_options_word("/tmp/a\"b\\c"), "\"/tmp/a\\\"b\\\\c\"");
    }

    #[test]
    fn packages_are_named_from_paths() {
        let rec = |file: Option<&str>, builtin| Record {
            pid: 1,
            id: 0,
            parent: -1,
            request: "x".to_string(),
            file: file.map(str::to_string),
            builtin,
            cached: false,
            main: false,
            ok: true,
            start: "0".to_string(),
            end: "0".to_string(),
        };
        assert_eq!(package_of(&rec(Some("node:http"), true)), "node:http");
        assert_eq!(
            package_of(&rec(Some("/a/node_modules/express/lib/x.js"), false)),
            "express"
        );
        assert_eq!(
            package_of(&rec(
                Some("/a/node_modules/x/node_modules/@aws-sdk/core/i.js"),
                false
            )),
            "@aws-sdk/core"
        );
        assert_eq!(package_of(&rec(Some("/srv/app/lib.js"), false)), "(app)");
        assert_eq!(package_of(&rec(None, false)), "(unresolved)");
    }

    #[test]
    fn real_node_requires_are_recorded() {
        let Some(node) = crate::testkit::tool("NODE", "node") else {
            return;
        };
        let app = app("const http = require('http');\n\
             require('fs'); require('node:path'); require('zlib');\n\
             const beta = require('beta');\n\
             const alpha = require('alpha');\n\
             require('./lib');\n\
             try { require('missing-optional'); } catch (_) {}\n\
             console.log('done', beta.alpha === alpha);\n");
        let dir = adapter_dir(app.path());
        let injection = Node.inject(&dir, &[]).expect("inject");
        let t0 = coldstart_core::clock::now_ns();
        let out = command(&node, app.path(), &injection).output().expect("run node");
        let end = coldstart_core::clock::now_ns() - t0;
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let raw = String::from_utf8_lossy(&out.stdout);
        let (claimed, own) = split_claims(&raw, &injection);
        assert_eq!(own, ["done true"], "only V8's lines are claimed");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "",
            "the preload writes nothing on stderr"
        );

        let s = collect(&dir, t0, &claimed);
        // V8's code-cache hits (http, zlib … compiled from Node's embedded code
        // cache after the preload) against a plain grep of the raw output.
        let (hits, hits_ns) = grep_code_cache_hits(&raw);
        assert!(hits > 0, "V8 printed no code-cache hit: {raw}");
        let v8 = s
            .facts
            .iter()
            .find(|f| f.0 == "code-cache hits (V8)")
            .map(|f| f.1.clone());
        // "N in T (S)": the count and the time agree with the grep.
        let Some(Value::Parts(parts)) = &v8 else {
            panic!("{v8:?}")
        };
        assert_eq!(
            (&parts[0], &parts[2]),
            (&Value::count(hits), &Value::Ns(hits_ns)),
            "{v8:?} vs {hits} lines, {hits_ns} ns"
        );
        assert!(
            s.notes
                .iter()
                .filter_map(Value::as_text)
                .any(|n| n.contains("NODE_OPTIONS")),
            "{:?}",
            s.notes
        );
        let fact = |k: &str| s.facts.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        // http, fs, path, zlib + beta, alpha, lib.js (alpha's second require is a cache hit).
        assert_eq!(fact("modules loaded"), Some(Value::Count(7)), "{:?}", s.facts);
        assert_eq!(
            fact("builtin / files"),
            Some(Value::parts([Value::Count(4), " / ".into(), Value::Count(3)]))
        );
        assert_eq!(fact("failed requires"), Some(Value::Count(1)));
        assert!(fact("main module (synchronous top level)").is_some());
        assert_eq!(row(&s, "alpha")[1], Value::Count(1), "alpha counts once");
        assert_eq!(row(&s, "beta")[1], Value::Count(1));
        assert_eq!(row(&s, "(app)")[1], Value::Count(1));
        for pkg in ["node:http", "node:fs", "node:path", "node:zlib"] {
            assert_eq!(row(&s, pkg)[1], Value::Count(1), "{pkg}");
        }

        assert_nested(&s.spans);
        assert_eq!(s.spans[0].depth, 0);
        assert!(s.spans[0].name.starts_with("main "), "{:?}", s.spans[0]);
        for span in &s.spans {
            assert!(
                span.start_ns > 0 && span.start_ns + span.dur_ns <= end,
                "{span:?} outside the run"
            );
        }
        let beta = s.spans.iter().position(|x| x.name == "beta").expect("beta span");
        let alpha = s
            .spans
            .iter()
            .position(|x| x.name == "alpha")
            .expect("alpha span");
        assert_eq!(alpha, beta + 1, "alpha is first loaded inside beta");
        assert_eq!(s.spans[alpha].depth, s.spans[beta].depth + 1);
        assert_eq!(
            s.spans.iter().filter(|x| x.name == "alpha").count(),
            1,
            "the cache hit is not drawn"
        );
    }

    #[test]
    fn a_server_killed_after_ready_has_written_its_requires() {
        let Some(node) = crate::testkit::tool("NODE", "node") else {
            return;
        };
        let app = app("const http = require('http');\n\
             const beta = require('beta');\n\
             const server = http.createServer((q, r) => r.end(beta.name));\n\
             server.listen(0, '127.0.0.1', () => console.log('listening'));\n");
        let dir = adapter_dir(app.path());
        let injection = Node.inject(&dir, &[]).expect("inject");
        let t0 = coldstart_core::clock::now_ns();
        let mut child = command(&node, app.path(), &injection)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn node");
        let stdout = child.stdout.take().expect("stdout pipe");
        let mut lines = BufReader::new(stdout).lines();
        let mut raw = String::new();
        // V8's code-cache lines come first (the preload switched them on).
        for line in lines.by_ref() {
            let line = line.expect("read");
            raw.push_str(&line);
            raw.push('\n');
            if !injection.claims.iter().any(|re| re.is_match(&line)) {
                assert_eq!(line, "listening");
                break;
            }
        }
        child.kill().expect("SIGKILL");
        child.wait().expect("wait");
        let rest: Vec<String> = lines.map_while(|l| l.ok()).collect();
        assert!(
            rest.iter()
                .all(|l| injection.claims.iter().any(|re| re.is_match(l))),
            "{rest:?}"
        );
        for l in &rest {
            raw.push_str(l);
            raw.push('\n');
        }
        let (claimed, own) = split_claims(&raw, &injection);
        assert_eq!(own, ["listening"]);
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr pipe"), &mut err)
            .expect("read stderr");
        assert_eq!(err, "", "the preload writes nothing");

        let s = collect(&dir, t0, &claimed);
        // Written before ready, so not lost to the kill.
        let (hits, _) = grep_code_cache_hits(&raw);
        assert!(hits > 0, "{raw}");
        assert!(
            s.facts.iter().any(|f| f.0 == "code-cache hits (V8)"
                && matches!(&f.1, Value::Parts(p) if p[0] == Value::count(hits))),
            "{:?}",
            s.facts
        );
        assert_eq!(row(&s, "beta")[1], Value::Count(1));
        assert_eq!(row(&s, "alpha")[1], Value::Count(1));
        assert_eq!(row(&s, "node:http")[1], Value::Count(1));
        assert!(
            s.spans[0].name.starts_with("main "),
            "the main module finished before listening"
        );
        assert_nested(&s.spans);
        assert!(
            !s.notes
                .iter()
                .filter_map(Value::as_text)
                .any(|n| n.contains("did not parse")),
            "{:?}",
            s.notes
        );
    }

    #[test]
    fn no_records_says_why() {
        let s = section("", 0, 0);
        assert!(s.spans.is_empty() && s.table.rows.is_empty());
        assert!(
            s.notes[0].as_text().is_some_and(|n| n.contains("ES modules")),
            "{:?}",
            s.notes
        );
    }
}
