//! From a [`Trace`] to marks, phases that tile the run, and groupings.
//!
//! # Phases (absolute CLOCK_MONOTONIC ns; each starts where the previous ends)
//!
//! * `exec-chain`: time zero → the exec of the *final program*, the last
//!   successful exec of the root process. Wrappers and shims (the pyenv
//!   `python3` bash shim execs `pyenv`, which execs `pyenv-exec`, which execs
//!   the interpreter) are the steps of [`Timeline::exec_chain`], each with its
//!   own cost.
//! * `loader`: final exec → the last executable mapping of a shared library by
//!   the root process *before its first successful open of a file that is not
//!   part of dynamic loading* (a library, `/etc/ld.so.*`). That first ordinary
//!   open is where the program's own code takes over; libraries `dlopen`ed later
//!   (Python extension modules, `libjvm.so` after `jvm.cfg`) count as init. A
//!   static binary (Go) maps nothing: the phase is empty.
//! * `init`: loader end → the first successful listen(2) anywhere in the tree,
//!   or → the end of the trace when nothing listens.
//!
//! `listen → ready` and `first request` come from the probe, not the tracer.

use crate::trace::{Event, SockAddr, SocketRole, Trace, TraceEvent};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

pub use crate::sample::Phase;

/// A named instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    pub name: String,
    pub ts_ns: u64,
    pub pid: i32,
    pub detail: String,
}

/// One program of the root's exec chain, running from its exec to the next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecStep {
    pub start_ns: u64,
    /// The next exec of the root; `None` for the final program.
    pub end_ns: Option<u64>,
    pub path: String,
    /// What the kernel ran (the interpreter of a script).
    pub exe: String,
    pub argv0: String,
}

/// What a file is, for grouping opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileKind {
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

/// Opens of one kind, or under one package/directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenGroup {
    pub key: String,
    /// Successful opens.
    pub opened: usize,
    /// Failed opens (module path probing shows up here).
    pub failed: usize,
    pub first_ns: u64,
    pub last_ns: u64,
    /// last − first: the stretch of the run this group's loading covers.
    pub span_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectInfo {
    pub ts_ns: u64,
    pub pid: i32,
    pub fd: i32,
    pub addr: Option<SockAddr>,
    pub ok: bool,
    pub errno: i32,
    /// Time until the socket was usable: the syscall itself for a blocking
    /// connect (or a failure), connect → first write for a non-blocking one
    /// (`EINPROGRESS`); `None` when no write followed.
    pub latency_ns: Option<u64>,
    pub during_init: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenInfo {
    pub ts_ns: u64,
    pub pid: i32,
    pub fd: i32,
    pub addr: Option<SockAddr>,
}

/// One process of the tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInfo {
    pub pid: i32,
    pub parent: Option<i32>,
    /// Fork time (time zero for the root).
    pub start_ns: u64,
    pub exit_ns: Option<u64>,
    pub exit_code: Option<i32>,
    pub exit_signal: Option<i32>,
    /// Its last exec'd program (inherited from the parent until it execs).
    pub program: String,
    pub execs: usize,
    /// Threads it started.
    pub threads: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub processes: usize,
    /// Threads started beyond each process's main thread.
    pub threads: usize,
    pub execs: usize,
    pub exec_failures: usize,
    pub opens: usize,
    pub opens_failed: usize,
    pub libraries_mapped: usize,
    pub connects: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    pub t0_ns: u64,
    pub end_ns: u64,
    pub root_pid: i32,
    pub exec_chain: Vec<ExecStep>,
    pub phases: Vec<Phase>,
    pub marks: Vec<Mark>,
    /// Largest (most files opened) first.
    pub opens_by_kind: Vec<OpenGroup>,
    pub opens_by_package: Vec<OpenGroup>,
    pub connects: Vec<ConnectInfo>,
    pub listens: Vec<ListenInfo>,
    pub processes: Vec<ProcessInfo>,
    pub counts: Counts,
}

/// Shared objects: `libc.so.6`, `ld-linux-x86-64.so.2`, `_json.cpython-311-x86_64-linux-gnu.so`.
/// (`.so`, or `.so.` followed by a version digit: not `ld.so.cache`).
pub fn is_library(path: &str) -> bool {
    let name = basename(path);
    name.ends_with(".so")
        || name
            .match_indices(".so.")
            .any(|(i, _)| name[i + 4..].starts_with(|c: char| c.is_ascii_digit()))
}

/// Files the dynamic loader itself opens.
fn is_loader_file(path: &str) -> bool {
    is_library(path) || path.starts_with("/etc/ld.so")
}

pub fn classify(path: &str, flags: u64) -> FileKind {
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

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
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

/// Build the timeline of a trace.
pub fn build(trace: &Trace) -> Timeline {
    let t0 = trace.t0_ns;
    let root = trace.root_pid;
    let end = trace
        .end_ns
        .max(trace.events.iter().map(|e| e.ts_ns).max().unwrap_or(t0))
        .max(t0);
    let mut events: Vec<&TraceEvent> = trace.events.iter().collect();
    events.sort_by_key(|e| e.ts_ns); // stable: keeps the tracer's order on ties

    // Exec chain of the root process.
    let root_execs: Vec<&TraceEvent> = events
        .iter()
        .copied()
        .filter(|e| e.pid == root && matches!(e.event, Event::Exec { .. }))
        .collect();
    let mut exec_chain = Vec::new();
    for (i, e) in root_execs.iter().enumerate() {
        if let Event::Exec { path, exe, argv0 } = &e.event {
            exec_chain.push(ExecStep {
                start_ns: e.ts_ns,
                end_ns: root_execs.get(i + 1).map(|n| n.ts_ns),
                path: path.clone(),
                exe: exe.clone(),
                argv0: argv0.clone(),
            });
        }
    }
    let final_exec = root_execs.last().map_or(t0, |e| e.ts_ns);

    // Loader: last library mapping before the first ordinary open.
    let mut loader_end = final_exec;
    for e in events.iter().filter(|e| e.pid == root && e.ts_ns >= final_exec) {
        match &e.event {
            Event::MmapExec { path } if is_library(path) => loader_end = e.ts_ns,
            Event::Open { path, ok: true, .. } if !is_loader_file(path) => break,
            _ => {}
        }
    }

    let listens: Vec<ListenInfo> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Listen { fd, addr } => Some(ListenInfo {
                ts_ns: e.ts_ns,
                pid: e.pid,
                fd: *fd,
                addr: addr.clone(),
            }),
            _ => None,
        })
        .collect();
    let init_end = listens.first().map_or(end, |l| l.ts_ns).max(loader_end);

    let phases = vec![
        Phase::new("exec-chain", t0, final_exec),
        Phase::new("loader", final_exec, loader_end),
        Phase::new("init", loader_end, init_end),
    ];

    // Marks.
    let mut marks = vec![Mark {
        name: "spawn".into(),
        ts_ns: t0,
        pid: root,
        detail: String::new(),
    }];
    for step in &exec_chain {
        marks.push(Mark {
            name: "exec".into(),
            ts_ns: step.start_ns,
            pid: root,
            detail: step.path.clone(),
        });
    }
    if loader_end > final_exec {
        marks.push(Mark {
            name: "libraries-mapped".into(),
            ts_ns: loader_end,
            pid: root,
            detail: String::new(),
        });
    }
    if let Some(l) = listens.first() {
        marks.push(Mark {
            name: "first-listen".into(),
            ts_ns: l.ts_ns,
            pid: l.pid,
            detail: l.addr.as_ref().map(|a| a.to_string()).unwrap_or_default(),
        });
    }
    let first = |pred: &dyn Fn(&Event) -> bool| events.iter().find(|e| pred(&e.event)).copied();
    if let Some(e) = first(&|ev| matches!(ev, Event::Accept { .. })) {
        marks.push(Mark {
            name: "first-accept".into(),
            ts_ns: e.ts_ns,
            pid: e.pid,
            detail: String::new(),
        });
    }
    if let Some(e) = first(&|ev| {
        matches!(
            ev,
            Event::FirstWrite {
                role: SocketRole::Accepted,
                ..
            }
        )
    }) {
        marks.push(Mark {
            name: "first-response".into(),
            ts_ns: e.ts_ns,
            pid: e.pid,
            detail: String::new(),
        });
    }

    // Opens.
    let mut by_kind: BTreeMap<String, GroupAcc> = BTreeMap::new();
    let mut by_pkg: BTreeMap<String, GroupAcc> = BTreeMap::new();
    let mut counts = Counts::default();
    for e in &events {
        if let Event::Open { path, ok, flags, .. } = &e.event {
            if path.is_empty() {
                continue;
            }
            by_kind
                .entry(classify(path, *flags).name().to_string())
                .or_default()
                .add(e.ts_ns, *ok);
            by_pkg.entry(package_key(path)).or_default().add(e.ts_ns, *ok);
            if *ok {
                counts.opens += 1;
            } else {
                counts.opens_failed += 1;
            }
        }
    }

    // Connects.
    let mut connects = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if let Event::Connect {
            fd,
            addr,
            ok,
            errno,
            dur_ns,
        } = &e.event
        {
            let latency_ns = if *errno == libc::EINPROGRESS {
                events[i + 1..]
                    .iter()
                    .find(|w| {
                        w.pid == e.pid
                            && matches!(w.event, Event::FirstWrite { fd: f, role: SocketRole::Connected } if f == *fd)
                    })
                    .map(|w| w.ts_ns - e.ts_ns)
            } else {
                Some(*dur_ns)
            };
            connects.push(ConnectInfo {
                ts_ns: e.ts_ns,
                pid: e.pid,
                fd: *fd,
                addr: addr.clone(),
                ok: *ok,
                errno: *errno,
                latency_ns,
                during_init: e.ts_ns >= loader_end && e.ts_ns <= init_end,
            });
        }
    }

    // Processes.
    let mut procs: Vec<ProcessInfo> = vec![ProcessInfo {
        pid: root,
        parent: None,
        start_ns: t0,
        exit_ns: None,
        exit_code: None,
        exit_signal: None,
        program: String::new(),
        execs: 0,
        threads: 0,
    }];
    let mut index: HashMap<i32, usize> = HashMap::from([(root, 0)]);
    for e in &events {
        match &e.event {
            Event::Clone { child, thread: false } => {
                let program = index
                    .get(&e.pid)
                    .map(|&i| procs[i].program.clone())
                    .unwrap_or_default();
                index.insert(*child, procs.len());
                procs.push(ProcessInfo {
                    pid: *child,
                    parent: Some(e.pid),
                    start_ns: e.ts_ns,
                    exit_ns: None,
                    exit_code: None,
                    exit_signal: None,
                    program,
                    execs: 0,
                    threads: 0,
                });
            }
            Event::Clone { thread: true, .. } => {
                counts.threads += 1;
                if let Some(&i) = index.get(&e.pid) {
                    procs[i].threads += 1;
                }
            }
            Event::Exec { path, .. } => {
                counts.execs += 1;
                if let Some(&i) = index.get(&e.pid) {
                    procs[i].program = path.clone();
                    procs[i].execs += 1;
                }
            }
            Event::ExecFailed { .. } => counts.exec_failures += 1,
            Event::MmapExec { .. } => counts.libraries_mapped += 1,
            Event::Exit { code, signal } if e.tid == e.pid => {
                if let Some(&i) = index.get(&e.pid) {
                    procs[i].exit_ns = Some(e.ts_ns);
                    procs[i].exit_code = *code;
                    procs[i].exit_signal = *signal;
                }
            }
            _ => {}
        }
    }
    if let Some(p) = procs.first() {
        if let Some(exit) = p.exit_ns {
            marks.push(Mark {
                name: "exit".into(),
                ts_ns: exit,
                pid: root,
                detail: match (p.exit_code, p.exit_signal) {
                    (Some(c), _) => format!("status {c}"),
                    (_, Some(s)) => format!("signal {s}"),
                    _ => String::new(),
                },
            });
        }
    }
    marks.sort_by_key(|m| m.ts_ns);
    counts.processes = procs.len();
    counts.connects = connects.len();

    Timeline {
        t0_ns: t0,
        end_ns: end,
        root_pid: root,
        exec_chain,
        phases,
        marks,
        opens_by_kind: groups(by_kind),
        opens_by_package: groups(by_pkg),
        connects,
        listens,
        processes: procs,
        counts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Outcome;

    const MS: u64 = 1_000_000;

    fn ev(ts_ms: u64, pid: i32, event: Event) -> TraceEvent {
        TraceEvent {
            ts_ns: ts_ms * MS,
            pid,
            tid: pid,
            event,
        }
    }
    fn exec(ts: u64, pid: i32, path: &str) -> TraceEvent {
        ev(
            ts,
            pid,
            Event::Exec {
                path: path.into(),
                exe: path.into(),
                argv0: basename(path).into(),
            },
        )
    }
    fn open(ts: u64, pid: i32, path: &str, ok: bool) -> TraceEvent {
        ev(
            ts,
            pid,
            Event::Open {
                path: path.into(),
                ok,
                errno: if ok { 0 } else { libc::ENOENT },
                flags: libc::O_RDONLY as u64 | libc::O_CLOEXEC as u64,
            },
        )
    }
    fn mmap(ts: u64, pid: i32, path: &str) -> TraceEvent {
        ev(ts, pid, Event::MmapExec { path: path.into() })
    }
    fn trace(events: Vec<TraceEvent>, end_ms: u64) -> Trace {
        Trace {
            t0_ns: 0,
            end_ns: end_ms * MS,
            root_pid: 100,
            events,
            killed: false,
            outcome: Outcome::Reached,
            warnings: vec![],
        }
    }
    fn phase<'a>(t: &'a Timeline, name: &str) -> &'a Phase {
        t.phases.iter().find(|p| p.name == name).unwrap()
    }

    /// The pyenv shim: bash → pyenv → pyenv-exec → python, with helper
    /// subprocesses; the chain's cost is attributed to exec-chain, the real
    /// interpreter's library mapping to loader, its imports to init.
    #[test]
    fn pyenv_shim_chain_loader_and_init() {
        let py = "/home/dev/.pyenv/versions/3.11.7/bin/python3.11";
        let lib = "/home/dev/.pyenv/versions/3.11.7/lib/python3.11";
        let events = vec![
            exec(1, 100, "/home/dev/.pyenv/shims/python3"),
            exec(4, 100, "/home/dev/.pyenv/libexec/pyenv"),
            ev(
                5,
                100,
                Event::Clone {
                    child: 101,
                    thread: false,
                },
            ),
            exec(6, 101, "/usr/bin/head"),
            ev(
                7,
                101,
                Event::Exit {
                    code: Some(0),
                    signal: None,
                },
            ),
            exec(20, 100, "/home/dev/.pyenv/libexec/pyenv-exec"),
            exec(30, 100, py),
            open(31, 100, "/etc/ld.so.cache", true),
            open(31, 100, "/usr/lib/x86_64-linux-gnu/libm.so.6", true),
            mmap(32, 100, "/usr/lib/x86_64-linux-gnu/libm.so.6"),
            mmap(33, 100, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
            open(34, 100, &format!("{lib}/pyvenv.cfg"), false), // failed: not the end
            open(
                35,
                100,
                "/home/dev/.pyenv/versions/3.11.7/bin/pybuilddir.txt",
                true,
            ),
            mmap(36, 100, "/usr/lib/x86_64-linux-gnu/libz.so.1"), // after: init
            open(
                37,
                100,
                &format!("{lib}/encodings/__pycache__/__init__.cpython-311.pyc"),
                true,
            ),
            open(38, 100, &format!("{lib}/encodings/__init__.py"), true),
            open(
                39,
                100,
                &format!("{lib}/site-packages/requests/__init__.py"),
                true,
            ),
            open(40, 100, &format!("{lib}/site-packages/six.py"), true),
            open(41, 100, &format!("{lib}/site-packages/missing.py"), false),
            ev(
                45,
                100,
                Event::Exit {
                    code: Some(0),
                    signal: None,
                },
            ),
        ];
        let t = build(&trace(events, 45));
        assert_eq!(t.exec_chain.len(), 4);
        assert_eq!(t.exec_chain[0].end_ns, Some(4 * MS));
        assert_eq!(t.exec_chain[3].path, py);
        assert_eq!(t.exec_chain[3].end_ns, None);
        assert_eq!(phase(&t, "exec-chain").dur_ns, 30 * MS);
        assert_eq!(phase(&t, "loader").start_ns, 30 * MS);
        assert_eq!(phase(&t, "loader").end_ns, 33 * MS);
        assert_eq!(phase(&t, "init").start_ns, 33 * MS);
        assert_eq!(phase(&t, "init").end_ns, 45 * MS);
        // Phases tile [t0, end].
        for w in t.phases.windows(2) {
            assert_eq!(w[0].end_ns, w[1].start_ns);
        }
        assert_eq!(t.counts.processes, 2);
        assert_eq!(t.counts.execs, 5);
        assert_eq!(t.processes[1].program, "/usr/bin/head");
        assert_eq!(t.processes[0].exit_code, Some(0));
        assert!(t.marks.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
        assert!(t.marks.iter().any(|m| m.name == "exit" && m.ts_ns == 45 * MS));

        let kind = |k: FileKind| t.opens_by_kind.iter().find(|g| g.key == k.name()).unwrap();
        assert_eq!(kind(FileKind::Python).opened, 4);
        assert_eq!(kind(FileKind::Python).failed, 1);
        assert_eq!(kind(FileKind::Python).first_ns, 37 * MS);
        assert_eq!(kind(FileKind::Python).span_ns, 4 * MS);
        assert_eq!(kind(FileKind::SharedLib).opened, 1);
        assert_eq!(t.opens_by_kind[0].key, FileKind::Python.name(), "largest first");
        let pkg = |k: &str| t.opens_by_package.iter().find(|g| g.key == k).unwrap();
        assert_eq!(
            pkg(&format!("{lib}/encodings")).opened,
            2,
            ".py and __pycache__ together"
        );
        assert_eq!(pkg("site-packages/requests").opened, 1);
        assert_eq!(pkg("site-packages/six").opened, 1);
        assert_eq!(pkg("site-packages/missing").failed, 1);
    }

    #[test]
    fn static_binary_has_empty_loader_and_init_ends_at_listen() {
        let addr = SockAddr::Inet {
            ip: "127.0.0.1".parse().unwrap(),
            port: 8080,
        };
        let events = vec![
            exec(2, 100, "/srv/go-server"),
            ev(
                3,
                100,
                Event::Clone {
                    child: 102,
                    thread: true,
                },
            ),
            ev(
                3,
                100,
                Event::Clone {
                    child: 103,
                    thread: true,
                },
            ),
            open(4, 100, "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", true),
            ev(
                5,
                100,
                Event::Connect {
                    fd: 3,
                    addr: Some(addr.clone()),
                    ok: false,
                    errno: libc::EINPROGRESS,
                    dur_ns: 10_000,
                },
            ),
            ev(
                9,
                100,
                Event::FirstWrite {
                    fd: 3,
                    role: SocketRole::Connected,
                },
            ),
            ev(
                10,
                100,
                Event::Connect {
                    fd: 4,
                    addr: None,
                    ok: true,
                    errno: 0,
                    dur_ns: 2 * MS,
                },
            ),
            ev(
                12,
                100,
                Event::Connect {
                    fd: 5,
                    addr: None,
                    ok: false,
                    errno: libc::EINPROGRESS,
                    dur_ns: 1,
                },
            ),
            ev(
                15,
                100,
                Event::Listen {
                    fd: 6,
                    addr: Some(addr.clone()),
                },
            ),
            ev(16, 100, Event::Accept { listen_fd: 6, fd: 7 }),
            ev(
                17,
                100,
                Event::FirstWrite {
                    fd: 7,
                    role: SocketRole::Accepted,
                },
            ),
            ev(
                18,
                100,
                Event::Exit {
                    code: None,
                    signal: Some(9),
                },
            ),
        ];
        let t = build(&trace(events, 18));
        assert_eq!(phase(&t, "loader").dur_ns, 0);
        assert_eq!(phase(&t, "init").start_ns, 2 * MS);
        assert_eq!(phase(&t, "init").end_ns, 15 * MS);
        assert_eq!(t.counts.threads, 2);
        assert_eq!(t.counts.processes, 1);
        assert_eq!(t.connects.len(), 3);
        assert_eq!(
            t.connects[0].latency_ns,
            Some(4 * MS),
            "EINPROGRESS: connect → first write"
        );
        assert_eq!(t.connects[1].latency_ns, Some(2 * MS), "blocking: the syscall");
        assert_eq!(t.connects[2].latency_ns, None, "never written");
        assert!(t.connects.iter().all(|c| c.during_init));
        let names: Vec<&str> = t.marks.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "spawn",
                "exec",
                "first-listen",
                "first-accept",
                "first-response",
                "exit"
            ]
        );
        assert_eq!(t.marks[2].detail, "127.0.0.1:8080");
        assert_eq!(t.listens.len(), 1);
    }

    #[test]
    fn empty_trace_still_tiles() {
        let t = build(&trace(vec![], 5));
        assert_eq!(t.phases.len(), 3);
        assert_eq!(phase(&t, "exec-chain").dur_ns, 0);
        assert_eq!(phase(&t, "init").end_ns, 5 * MS);
        assert_eq!(t.counts.processes, 1);
    }

    #[test]
    fn classification_and_package_keys() {
        let dir = libc::O_DIRECTORY as u64;
        assert_eq!(
            classify("/usr/lib/x86_64-linux-gnu/libc.so.6", 0),
            FileKind::SharedLib
        );
        assert_eq!(classify("/lib64/ld-linux-x86-64.so.2", 0), FileKind::SharedLib);
        assert_eq!(
            classify("/a/_json.cpython-311-x86_64-linux-gnu.so", 0),
            FileKind::SharedLib
        );
        assert_eq!(classify("/a/b.cpython-311.pyc", 0), FileKind::Python);
        assert_eq!(classify("/etc/ld.so.cache", 0), FileKind::Other);
        assert_eq!(classify("/usr/lib/libstdc++.so.6.0.30", 0), FileKind::SharedLib);
        assert_eq!(classify("/usr/lib/jvm/java-17/lib/modules", 0), FileKind::Java);
        assert_eq!(classify("/app/lib/x.jar", 0), FileKind::Java);
        assert_eq!(classify("/app/index.mjs", 0), FileKind::JavaScript);
        assert_eq!(classify("/app/package.json", 0), FileKind::Config);
        assert_eq!(classify("/usr/lib/jvm/java-17/lib/jvm.cfg", 0), FileKind::Config);
        assert_eq!(classify("/otp/lib/kernel-9/ebin/kernel.beam", 0), FileKind::Beam);
        assert_eq!(classify("/app/node_modules", dir), FileKind::Directory);
        assert_eq!(classify("/etc/passwd", 0), FileKind::Other);
        assert_eq!(classify("/usr/share/zoneinfo/UTC", 0), FileKind::Other);

        assert_eq!(
            package_key("/app/node_modules/express/lib/router/index.js"),
            "node_modules/express"
        );
        assert_eq!(
            package_key("/app/node_modules/@aws-sdk/client-s3/dist/index.js"),
            "node_modules/@aws-sdk/client-s3"
        );
        assert_eq!(
            package_key("/app/node_modules/a/node_modules/b/index.js"),
            "node_modules/b",
            "the innermost package"
        );
        assert_eq!(
            package_key("/v/lib/python3.11/site-packages/yaml/__init__.py"),
            "site-packages/yaml"
        );
        assert_eq!(
            package_key("/v/lib/python3.11/site-packages/_yaml.cpython-311.so"),
            "site-packages/_yaml"
        );
        assert_eq!(
            package_key("/v/lib/python3.11/json/__pycache__/decoder.cpython-311.pyc"),
            "/v/lib/python3.11/json"
        );
        assert_eq!(package_key("/app/lib/guava-32.jar"), "guava-32.jar");
        assert_eq!(package_key("/otp/lib/stdlib-5.1/ebin/lists.beam"), "stdlib-5.1");
        assert_eq!(package_key("/etc/hosts"), "/etc");
        assert_eq!(package_key("/x"), "/");
    }
}

#[cfg(test)]
mod traced_tests;
