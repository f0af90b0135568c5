//! Tests of the tracer on real programs, with strace as the oracle.
//!
//! Each test skips (visibly, or fails under its COLDSTART_REQUIRE_* switch; see
//! testkit) when strace or its target program is missing. Every traced run has a timeout, and strace runs are killed (as a
//! process group) at a deadline, so a hang fails the test instead of blocking it.
//!
//! What is compared with strace (`strace -ff -qq -e trace=execve,...`):
//! the multiset of execve paths (successful and failed), the set of paths
//! successfully opened (all-digit path components, i.e. pids, are normalised;
//! strace's relative paths are matched against our resolved ones by suffix),
//! connect addresses, and the number of successful listens.
//!
//! Overhead (traced / untraced / strace ratios) is bench/trace_overhead.py's job.

use super::{start, trace, Event, SockAddr, SocketRole, StopWhen, Trace, TraceOptions};
use crate::testkit;
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(30);

/// The test's own skip (visible, or a failure under its COLDSTART_REQUIRE_* switch)
/// has been reported when this returns early.
macro_rules! require {
    ($e:expr) => {
        match $e {
            Some(v) => v,
            None => return,
        }
    };
}

fn strace_bin() -> Option<PathBuf> {
    testkit::tool("STRACE", "strace")
}

fn opts(program: &Path, argv: &[&str]) -> TraceOptions {
    let mut o = TraceOptions::new(
        argv.iter().map(|s| s.to_string()).collect(),
        program.to_path_buf(),
    );
    o.timeout = TIMEOUT;
    o
}

fn free_port() -> u16 {
    testkit::free_port()
}

/// What both tracers saw, in comparable form.
#[derive(Debug, Default)]
struct Seen {
    /// (path, ok), sorted.
    execs: Vec<(String, bool)>,
    opened: BTreeSet<String>,
    /// Relative paths strace printed (ours are resolved).
    opened_relative: BTreeSet<String>,
    connects: Vec<String>,
    listens: usize,
}

/// Replace all-digit path components (pids) with `N`.
fn norm(path: &str) -> String {
    path.split('/')
        .map(|c| {
            if !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()) {
                "N"
            } else {
                c
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn seen_ours(t: &Trace) -> Seen {
    let mut s = Seen::default();
    for e in &t.events {
        match &e.event {
            Event::Exec { path, .. } => s.execs.push((norm(path), true)),
            Event::ExecFailed { path, .. } => s.execs.push((norm(path), false)),
            Event::Open { path, ok: true, .. } => {
                s.opened.insert(norm(path));
            }
            Event::Connect { addr, .. } => {
                s.connects
                    .push(addr.as_ref().map(|a| a.to_string()).unwrap_or_default());
            }
            Event::Listen { .. } => s.listens += 1,
            _ => {}
        }
    }
    s.execs.sort();
    s.connects.sort();
    s
}

/// The first double-quoted string of a strace line, unescaped (\" \\ \n \t \xNN).
fn quoted(line: &str) -> Option<String> {
    let start = line.find('"')? + 1;
    let mut out = Vec::new();
    let b = line.as_bytes();
    let mut i = start;
    while i < b.len() {
        match b[i] {
            b'"' => return Some(String::from_utf8_lossy(&out).into_owned()),
            b'\\' if i + 1 < b.len() => {
                i += 1;
                match b[i] {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'x' if i + 2 < b.len() => {
                        let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok()?;
                        out.push(u8::from_str_radix(hex, 16).ok()?);
                        i += 2;
                    }
                    c => out.push(c),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    None
}

/// The result of a strace line (`... = 3`, `... = -1 ENOENT (...)`).
fn result(line: &str) -> Option<i64> {
    // strace pads short calls: `listen(3, 128)          = 0`.
    let (call, r) = line.rsplit_once(" = ")?;
    if !call.trim_end().ends_with(')') {
        return None;
    }
    r.split_whitespace().next()?.parse().ok()
}

/// strace's sockaddr text → our Display form.
fn strace_addr(line: &str) -> String {
    let field = |name: &str| -> Option<String> {
        let i = line.find(name)? + name.len();
        let rest = &line[i..];
        let end = rest.find([')', ',', '}']).unwrap_or(rest.len());
        Some(rest[..end].trim_matches('"').to_string())
    };
    if line.contains("AF_INET6") {
        let port = field("sin6_port=htons(").unwrap_or_default();
        let ip = line
            .find("inet_pton(AF_INET6, \"")
            .map(|i| &line[i + 21..])
            .and_then(|r| r.split('"').next())
            .unwrap_or_default();
        format!("[{ip}]:{port}")
    } else if line.contains("AF_INET") {
        let port = field("sin_port=htons(").unwrap_or_default();
        let ip = field("sin_addr=inet_addr(\"").unwrap_or_default();
        format!("{ip}:{port}")
    } else if line.contains("AF_UNIX") {
        let p = line.find("sun_path=").map(|i| &line[i + 9..]).unwrap_or_default();
        let abs = p.starts_with('@');
        let path = quoted(p).unwrap_or_default();
        format!("unix:{}{}", if abs { "@" } else { "" }, path)
    } else {
        String::from("?")
    }
}

/// A child running under strace, killed (whole group) on drop.
struct Straced {
    child: std::process::Child,
    dir: PathBuf,
}

impl Straced {
    fn spawn(program: &Path, argv: &[&str], tag: &str) -> Straced {
        let dir = std::env::temp_dir().join(format!("coldstart-oracle-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut cmd = Command::new(strace_bin().expect("strace"));
        cmd.args(["-ff", "-qq", "-e"])
            .arg("trace=execve,execveat,open,openat,openat2,connect,listen")
            .arg("-o")
            .arg(dir.join("st"))
            .arg("--")
            .arg(program)
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        // Both tracers exec `program` itself (strace with argv[0] = its path).
        let child = cmd.spawn().expect("spawn strace");
        Straced { child, dir }
    }

    /// Wait for strace to finish (the tree exited) within `limit`.
    fn wait(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    /// Kill the traced program (not strace, whose buffered output would be
    /// lost), let strace see it die and exit; then make sure of the group.
    fn kill(&mut self) {
        let pid = self.child.id();
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        for c in children.split_whitespace().filter_map(|c| c.parse::<i32>().ok()) {
            // SAFETY: kill(2) on strace's child (the traced program).
            unsafe { libc::kill(c, libc::SIGKILL) };
        }
        self.wait(Duration::from_secs(10));
        // SAFETY: signalling the process group we created for strace.
        unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }

    fn seen(&self) -> Seen {
        let mut s = Seen::default();
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return s;
        };
        for f in dir.flatten() {
            let text = std::fs::read_to_string(f.path()).unwrap_or_default();
            for line in text.lines() {
                let Some(r) = result(line) else { continue };
                let ok = r >= 0;
                if line.starts_with("execve(") || line.starts_with("execveat(") {
                    if let Some(p) = quoted(line) {
                        s.execs.push((norm(&p), ok));
                    }
                } else if line.starts_with("open") {
                    if let (Some(p), true) = (quoted(line), ok) {
                        // strace prints relative paths as given (relative to the
                        // cwd or a dirfd at that moment); we resolve them.
                        if p.starts_with('/') {
                            s.opened.insert(norm(&p));
                        } else {
                            s.opened_relative.insert(norm(&p));
                        }
                    }
                } else if line.starts_with("connect(") {
                    s.connects.push(strace_addr(line));
                } else if line.starts_with("listen(") && ok {
                    s.listens += 1;
                }
            }
        }
        s.execs.sort();
        s.connects.sort();
        s
    }
}

impl Drop for Straced {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn strace_run(program: &Path, argv: &[&str], tag: &str) -> Seen {
    let mut st = Straced::spawn(program, argv, tag);
    assert!(st.wait(TIMEOUT), "strace run of {argv:?} did not finish");
    st.seen()
}

/// Compare, printing the differences; relative strace paths must be a suffix
/// of one of our resolved paths.
fn assert_same(what: &str, ours: &Seen, theirs: &Seen) {
    assert_eq!(ours.execs, theirs.execs, "{what}: execve paths differ");
    let only_ours: Vec<&String> = ours.opened.difference(&theirs.opened).collect();
    let only_theirs: Vec<&String> = theirs.opened.difference(&ours.opened).collect();
    // A relative strace path `r` matches one of our absolute paths ending in
    // `/r`; `.` matches one of our paths that is a directory.
    let matches = |r: &str, o: &str| -> bool {
        let r = r.trim_start_matches("./");
        if r.is_empty() || r == "." {
            Path::new(o).is_dir()
        } else {
            o.ends_with(&format!("/{r}"))
        }
    };
    let unmatched_rel: Vec<&String> = theirs
        .opened_relative
        .iter()
        .filter(|r| !ours.opened.iter().any(|o| matches(r, o)))
        .collect();
    let only_ours: Vec<&&String> = only_ours
        .iter()
        .filter(|o| !theirs.opened_relative.iter().any(|r| matches(r, o)))
        .collect();
    assert!(
        only_ours.is_empty() && only_theirs.is_empty() && unmatched_rel.is_empty(),
        "{what}: opened paths differ\n only ours: {only_ours:?}\n only strace: {only_theirs:?}\n \
         unmatched relative: {unmatched_rel:?}"
    );
    // Ports of inet addresses can differ between runs (servers bound to port 0).
    let mask = |v: &[String]| -> Vec<String> {
        let mut m: Vec<String> = v
            .iter()
            .map(|a| match a.rsplit_once(':') {
                Some((host, port)) if !a.starts_with("unix:") && port.parse::<u16>().is_ok() => {
                    format!("{host}:PORT")
                }
                _ => a.clone(),
            })
            .collect();
        m.sort();
        m
    };
    assert_eq!(
        mask(&ours.connects),
        mask(&theirs.connects),
        "{what}: connect addresses differ"
    );
    assert_eq!(ours.listens, theirs.listens, "{what}: listen counts differ");
    eprintln!(
        "{what}: {} execve, {} files opened, {} connects, {} listens: same as strace",
        ours.execs.len(),
        ours.opened.len(),
        ours.connects.len(),
        ours.listens
    );
}

/// Trace `argv` with both tracers and compare. Real programs are not fully
/// deterministic (node skips an open of its own binary in ~0.5% of runs, under
/// strace too, depending on its memory layout), so a mismatch is retried: a
/// tracer bug fails every attempt, a program's whim does not.
fn oracle(what: &str, program: &Path, argv: &[&str]) -> Trace {
    const ATTEMPTS: usize = 3;
    for attempt in 1..=ATTEMPTS {
        let t = trace(&opts(program, argv)).unwrap_or_else(|e| panic!("{what}: {e:#}"));
        assert_eq!(t.outcome, super::Outcome::Reached, "{what}: did not exit in time");
        assert!(!t.killed);
        let ours = seen_ours(&t);
        let theirs = strace_run(program, argv, what);
        let compared = std::panic::catch_unwind(|| assert_same(what, &ours, &theirs));
        match compared {
            Ok(()) => return t,
            Err(e) if attempt == ATTEMPTS => std::panic::resume_unwind(e),
            Err(_) => eprintln!("{what}: attempt {attempt} differed from strace, retrying"),
        }
    }
    unreachable!("the last attempt returns or panics")
}

fn root_exit(t: &Trace) -> Option<(Option<i32>, Option<i32>)> {
    t.events.iter().find_map(|e| match e.event {
        Event::Exit { code, signal } if e.tid == t.root_pid => Some((code, signal)),
        _ => None,
    })
}

#[test]
fn oracle_shell_exec() {
    require!(strace_bin());
    let t = oracle(
        "sh-exec",
        Path::new("/bin/sh"),
        &["/bin/sh", "-c", "exec /bin/true"],
    );
    let execs: Vec<&str> = t
        .events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Exec { path, .. } => Some(path.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(execs, ["/bin/sh", "/bin/true"]);
    assert_eq!(root_exit(&t), Some((Some(0), None)));
    // Non-decreasing timestamps, all after time zero.
    assert!(t.events.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
    assert!(t.events.iter().all(|e| e.ts_ns >= t.t0_ns && e.ts_ns <= t.end_ns));
}

#[test]
fn oracle_python_import() {
    require!(strace_bin());
    let python = require!(testkit::python());
    let py = python.to_str().expect("a UTF-8 interpreter path");
    oracle("python-import-json", &python, &[py, "-c", "import json"]);
}

#[test]
fn oracle_shim_chain() {
    require!(strace_bin());
    let python = require!(testkit::python());
    // A shim chain of our own (bash script → bash script → interpreter), as pyenv's is.
    let shim = testkit::shim_chain(&python);
    oracle("shim-chain", &shim, &["python3", "-c", "pass"]);
}

#[test]
fn oracle_node_require() {
    require!(strace_bin());
    let node = require!(testkit::tool("NODE", "node"));
    let t = oracle("node-require-http", &node, &["node", "-e", "require('http')"]);
    let threads = t
        .events
        .iter()
        .filter(|e| matches!(e.event, Event::Clone { thread: true, .. }))
        .count();
    assert!(threads >= 4, "node starts worker threads, saw {threads}");
}

#[test]
fn oracle_jvm_threads() {
    require!(strace_bin());
    let java = require!(testkit::tool("JAVA", "java"));
    let java = std::fs::canonicalize(&java).unwrap_or(java);
    let t = oracle("java-version", &java, &["java", "-version"]);
    let threads = t
        .events
        .iter()
        .filter(|e| matches!(e.event, Event::Clone { thread: true, .. }))
        .count();
    assert!(threads >= 8, "a JVM starts many threads: {threads}");
    // Every thread we saw start, we saw end: no lost exit.
    let started: BTreeSet<i32> = t
        .events
        .iter()
        .filter_map(|e| match e.event {
            Event::Clone { child, .. } => Some(child),
            _ => None,
        })
        .collect();
    let ended: BTreeSet<i32> = t
        .events
        .iter()
        .filter(|e| matches!(e.event, Event::Exit { .. }))
        .map(|e| e.tid)
        .collect();
    assert!(
        started.is_subset(&ended),
        "lost exits: {:?}",
        started.difference(&ended)
    );
}

#[test]
fn oracle_python_sockets() {
    require!(strace_bin());
    let python = require!(testkit::python());
    let py = python.to_str().expect("a UTF-8 interpreter path");
    // Bind to port 0, listen, blocking connect + a non-blocking one, an AF_UNIX
    // connect that fails, a server-side accept and reply.
    let script = "import socket\n\
        s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen()\n\
        c=socket.create_connection(s.getsockname())\n\
        a,_=s.accept(); a.sendall(b'hi')\n\
        n=socket.socket(); n.setblocking(False); n.connect_ex(s.getsockname()); n.setblocking(True); n.send(b'x')\n\
        u=socket.socket(socket.AF_UNIX)\n\
        try: u.connect('/nonexistent/coldstart.sock')\n\
        except OSError: pass\n\
        print(s.getsockname()[1])\n";
    let t = oracle("python-sockets", &python, &[py, "-c", script]);
    let listen = t
        .events
        .iter()
        .find_map(|e| match &e.event {
            Event::Listen { addr, .. } => Some(addr.clone()),
            _ => None,
        })
        .expect("a listen event");
    match listen {
        Some(SockAddr::Inet { port, .. }) => assert_ne!(port, 0, "the real port, not the bound 0"),
        other => panic!("listen address {other:?}"),
    }
    assert!(t.events.iter().any(|e| matches!(e.event, Event::Accept { .. })));
    assert!(t.events.iter().any(|e| matches!(
        e.event,
        Event::FirstWrite {
            role: SocketRole::Accepted,
            ..
        }
    )));
}

#[test]
fn oracle_go_server_until_listen() {
    require!(strace_bin());
    let server = require!(testkit::go_server());
    let port = free_port();
    let port_s = port.to_string();
    let argv = ["go-server", "--port", port_s.as_str()];
    let mut o = opts(&server, &argv);
    o.stop_when = StopWhen::Listen;
    let t = trace(&o).expect("trace go-server");
    assert_eq!(t.outcome, super::Outcome::Reached);
    assert!(t.killed, "the server was running and had to be killed");
    let ours = seen_ours(&t);
    assert_eq!(ours.listens, 1);
    let addr = t.events.iter().find_map(|e| match &e.event {
        Event::Listen { addr, .. } => addr.clone(),
        _ => None,
    });
    assert_eq!(addr.map(|a| a.to_string()), Some(format!("127.0.0.1:{port}")));
    assert!(
        t.events
            .iter()
            .filter(|e| matches!(e.event, Event::Clone { thread: true, .. }))
            .count()
            >= 2,
        "the Go runtime starts threads"
    );

    // strace: run until the port answers, then kill.
    let mut st = Straced::spawn(&server, &argv, "go");
    let deadline = Instant::now() + TIMEOUT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "go-server under strace never listened");
        std::thread::sleep(Duration::from_millis(10));
    }
    st.kill();
    let theirs = st.seen();
    assert_same("go-server", &ours, &theirs);
}

/// A probe on this thread sends a request while the tracer follows the server
/// to its first response.
#[test]
fn go_server_first_response() {
    let server = require!(testkit::go_server());
    let port = free_port();
    let port_s = port.to_string();
    let mut o = opts(&server, &["go-server", "--port", &port_s]);
    o.stop_when = StopWhen::FirstResponse;
    let mut session = start(&o).expect("start");
    let deadline = Instant::now() + TIMEOUT;
    while session.status().first_listen.is_none() {
        assert!(Instant::now() < deadline && !session.status().exited, "no listen");
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to the traced server");
    conn.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("send");
    let mut reply = String::new();
    conn.read_to_string(&mut reply).expect("read the reply");
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert_eq!(session.wait(), super::Outcome::Reached);
    let t = session.finish().expect("finish");
    let listen = t
        .events
        .iter()
        .position(|e| matches!(e.event, Event::Listen { .. }))
        .expect("listen");
    let accept = t
        .events
        .iter()
        .position(|e| matches!(e.event, Event::Accept { .. }))
        .expect("accept");
    let write = t
        .events
        .iter()
        .position(|e| {
            matches!(
                e.event,
                Event::FirstWrite {
                    role: SocketRole::Accepted,
                    ..
                }
            )
        })
        .expect("first response");
    assert!(listen < accept && accept < write);
}

/// A server-ish tree (3 forked workers sleeping forever, 2 threads) is followed
/// and, at the timeout, killed completely.
#[test]
fn forker_tree_is_followed_and_killed() {
    let forker = require!(testkit::c_example("forker", &["-O2", "-pthread"]));
    let mut o = opts(&forker, &["forker"]);
    o.timeout = Duration::from_millis(1500);
    let begun = Instant::now();
    let t = trace(&o).expect("trace forker");
    // Waited for the whole timeout, then stopped: a hang guard relative to it.
    let took = begun.elapsed();
    assert!(took >= o.timeout, "stopped before its timeout: {took:?}");
    assert!(
        took < o.timeout * 20,
        "took {took:?} for a {:?} timeout",
        o.timeout
    );
    assert_eq!(t.outcome, super::Outcome::TimedOut);
    assert!(t.killed);
    let forks = |thread: bool| {
        t.events
            .iter()
            .filter(|e| matches!(e.event, Event::Clone { thread: th, .. } if th == thread))
            .count()
    };
    assert_eq!(forks(false), 3, "3 forked workers");
    assert_eq!(forks(true), 2);
    let pids: BTreeSet<i32> = t.events.iter().map(|e| e.pid).collect();
    assert_eq!(pids.len(), 4, "{pids:?}");
    for pid in pids {
        let signal = t.events.iter().find_map(|e| match e.event {
            Event::Exit { signal, .. } if e.tid == pid => Some(signal),
            _ => None,
        });
        assert_eq!(signal, Some(Some(libc::SIGKILL)), "pid {pid}");
        // Gone (or a zombie waiting for its new parent to reap it).
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            state.is_empty() || state.contains(") Z "),
            "pid {pid} still alive: {state}"
        );
    }
}

/// posix_spawn (clone with CLONE_VM|CLONE_VFORK → PTRACE_EVENT_VFORK) and a
/// thread that execs (the exec'ing thread takes over the leader's tid).
#[test]
fn vfork_and_exec_from_a_thread() {
    let python = require!(testkit::python());
    let py = python.to_str().expect("a UTF-8 interpreter path");
    let script = "import os, threading, time\n\
        pid = os.posix_spawn('/bin/true', ['true'], {}); os.waitpid(pid, 0)\n\
        threading.Thread(target=lambda: os.execv('/bin/echo', ['echo'])).start()\n\
        time.sleep(20)\n";
    let t = trace(&opts(&python, &[py, "-c", script])).expect("trace");
    assert_eq!(
        t.outcome,
        super::Outcome::Reached,
        "the exec'd echo exits at once"
    );
    let spawned = t
        .events
        .iter()
        .find_map(|e| match e.event {
            Event::Clone { child, thread: false } => Some(child),
            _ => None,
        })
        .expect("the posix_spawn child");
    assert!(t
        .events
        .iter()
        .any(|e| e.pid == spawned && matches!(&e.event, Event::Exec { path, .. } if path == "/bin/true")));
    let echo = t
        .events
        .iter()
        .find(|e| matches!(&e.event, Event::Exec { path, .. } if path == "/bin/echo"))
        .expect("the thread's exec");
    assert_eq!(echo.pid, t.root_pid);
    assert_eq!(echo.tid, t.root_pid, "after exec the thread has the leader's tid");
    assert_eq!(root_exit(&t), Some((Some(0), None)));
}

/// Signals are delivered (reinjected), and a self-stopped process stays
/// stopped until SIGCONT (group-stop via PTRACE_LISTEN).
#[test]
fn signals_and_group_stop() {
    let sh = Path::new("/bin/sh");
    let t = trace(&opts(
        sh,
        &["sh", "-c", "trap 'exit 7' USR1; kill -USR1 $$; sleep 5"],
    ))
    .expect("trace");
    assert_eq!(
        root_exit(&t),
        Some((Some(7), None)),
        "SIGUSR1 must reach the handler"
    );

    let mut session = start(&opts(sh, &["sh", "-c", "kill -STOP $$; exit 3"])).expect("start");
    let pid = session.root_pid();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(") ")
            .map(|(_, r)| r.chars().next().unwrap_or('?'));
        if matches!(state, Some('t') | Some('T')) {
            break;
        }
        assert!(Instant::now() < deadline, "never stopped: {stat}");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50));
    assert!(!session.status().exited, "a stopped process must stay stopped");
    // SAFETY: signalling our traced child.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    assert_eq!(session.wait(), super::Outcome::Reached);
    let t = session.finish().expect("finish");
    assert_eq!(root_exit(&t), Some((Some(3), None)));
}

#[test]
fn relative_paths_resolve_against_cwd() {
    let mut o = opts(Path::new("/bin/cat"), &["cat", "hostname"]);
    o.cwd = Some(PathBuf::from("/etc"));
    o.env = vec![("COLDSTART_TEST".into(), "1".into())];
    let t = trace(&o).expect("trace");
    assert!(
        t.events
            .iter()
            .any(|e| matches!(&e.event, Event::Open { path, ok: true, .. } if path == "/etc/hostname")),
        "{:?}",
        t.events
    );
}

#[test]
fn exec_failure_is_an_error() {
    let err = start(&opts(Path::new("/nonexistent/prog"), &["prog"]))
        .err()
        .expect("must fail");
    let msg = format!("{err:#}");
    assert!(msg.contains("cannot execute /nonexistent/prog"), "{msg}");

    let mut o = opts(Path::new("/bin/true"), &["true"]);
    o.cwd = Some(PathBuf::from("/nonexistent-dir"));
    let msg = format!("{:#}", start(&o).err().expect("must fail"));
    assert!(msg.contains("working directory"), "{msg}");
}

/// Ptrace refused (as by a container's seccomp profile): a clear error, not an
/// empty trace. The refusing filter is installed on a scratch thread only
/// (filters and no_new_privs are per thread and inherited by its children).
#[test]
fn ptrace_denied_is_reported() {
    let handle = std::thread::spawn(|| {
        // Filter: ptrace -> EPERM, everything else allowed.
        let ret_errno = 0x0005_0000 | libc::EPERM as u32; // SECCOMP_RET_ERRNO
        let filter = [
            libc::sock_filter {
                code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
                jt: 0,
                jf: 0,
                k: 0,
            },
            libc::sock_filter {
                code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
                jt: 0,
                jf: 1,
                k: libc::SYS_ptrace as u32,
            },
            libc::sock_filter {
                code: (libc::BPF_RET | libc::BPF_K) as u16,
                jt: 0,
                jf: 0,
                k: ret_errno,
            },
            libc::sock_filter {
                code: (libc::BPF_RET | libc::BPF_K) as u16,
                jt: 0,
                jf: 0,
                k: 0x7fff_0000,
            },
        ];
        let prog = super::seccomp::fprog(&filter);
        // SAFETY: per-thread prctl/seccomp on this scratch thread.
        unsafe {
            assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
            assert_eq!(
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0,
                    &prog as *const _
                ),
                0
            );
        }
        start(&opts(Path::new("/bin/true"), &["true"]))
            .err()
            .map(|e| format!("{e:#}"))
    });
    let msg = handle.join().expect("thread").expect("start must fail");
    assert!(msg.contains("ptrace") && msg.contains("refused"), "{msg}");
}

// The tracer's overhead next to strace's is measured by bench/trace_overhead.py
// (through `coldstart explain` and `coldstart bench`, interleaved), not here.

/// Every stop is counted (what explain's untraced estimate subtracts): a shell
/// that opens N missing files stops at least twice per open (entry, and the
/// exit for its result), its children's stops are counted under their own
/// pids, and each process's death is one more.
#[test]
fn stops_are_counted_per_process() {
    let script =
        "for i in 1 2 3 4 5 6 7 8 9 10; do true < /nonexistent/coldstart-$i; done 2>/dev/null; /bin/true";
    let t = trace(&opts(Path::new("/bin/sh"), &["sh", "-c", script])).expect("trace");
    let failed_opens = t
        .events
        .iter()
        .filter(
            |e| matches!(&e.event, Event::Open { path, ok: false, .. } if path.starts_with("/nonexistent/")),
        )
        .count();
    assert_eq!(failed_opens, 10, "{:?}", t.events);
    let root = t.stops.iter().filter(|s| s.pid == t.root_pid).count();
    assert!(
        root >= 2 * failed_opens,
        "root stops {root} for {failed_opens} opens"
    );
    assert!(
        t.stops.iter().any(|s| s.pid != t.root_pid),
        "the /bin/true child's stops are counted too"
    );
    assert!(
        t.stops.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns),
        "in the order seen"
    );
    assert!(t.stops.iter().all(|s| s.ts_ns >= t.t0_ns && s.ts_ns <= t.end_ns));
}

/// wait4 is seen with the child whose end it returned: a foreground command
/// (the shell blocks in wait4 from before the child ends until after), and a
/// command substitution (read to EOF first, then reaped).
#[test]
fn waits_name_the_child_whose_end_they_returned() {
    let t = trace(&opts(
        Path::new("/bin/sh"),
        &["sh", "-c", "sleep 0.5; x=$(/bin/true); exit 0"],
    ))
    .expect("trace");
    let children: Vec<i32> = t
        .events
        .iter()
        .filter_map(|e| match e.event {
            Event::Clone { child, thread: false } if e.pid == t.root_pid => Some(child),
            _ => None,
        })
        .collect();
    assert_eq!(children.len(), 2, "{:?}", t.events);
    let exit = |pid: i32| {
        t.events
            .iter()
            .find(|e| e.tid == pid && matches!(e.event, Event::Exit { .. }))
            .map(|e| e.ts_ns)
            .unwrap_or_else(|| panic!("pid {pid} ended: {:?}", t.events))
    };
    let waits: Vec<(i32, u64, u64)> = t
        .events
        .iter()
        .filter_map(|e| match e.event {
            Event::Wait { child, dur_ns } if e.pid == t.root_pid => Some((child, e.ts_ns, dur_ns)),
            _ => None,
        })
        .collect();
    let waited: Vec<i32> = waits.iter().map(|w| w.0).collect();
    assert_eq!(waited, children, "{waits:?}");
    // The sleep's half second: the shell was in wait4 before it ended and
    // returned after.
    let (c, ts, dur) = waits[0];
    assert!(ts < exit(c) && exit(c) <= ts + dur, "{waits:?}, exit {}", exit(c));
    assert!(waits.iter().all(|w| w.1 >= t.t0_ns && w.1 + w.2 <= t.end_ns));
}
