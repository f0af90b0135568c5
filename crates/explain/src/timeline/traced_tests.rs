//! The timeline of real traced programs. The tracer's own events are checked
//! against strace in crates/trace; here, what the timeline makes of them.

use crate::testkit;
use coldstart_core::launch::traced::{start, trace as traced_trace};
use coldstart_core::trace::{Event, Outcome, SockAddr, StopWhen, Trace, TraceOptions};

/// Traced with the Lab's guard held: other unit tests in this process reap
/// children, and a reap must not take a tracee's ptrace stop.
fn trace(o: &TraceOptions) -> anyhow::Result<Trace> {
    traced_trace(coldstart_core::Lab::open()?, o)
}
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(60);

macro_rules! require {
    ($e:expr) => {
        match $e {
            Some(v) => v,
            None => return,
        }
    };
}

fn traced(program: &Path, argv: &[&str]) -> Trace {
    let mut o = TraceOptions::new(
        argv.iter().map(|s| s.to_string()).collect(),
        program.to_path_buf(),
    );
    o.timeout = TIMEOUT;
    let t = trace(&o).expect("trace");
    assert_eq!(t.outcome, Outcome::Reached, "did not exit in time");
    t
}

#[test]
fn python_import_groups_opens_by_kind() {
    let python = require!(testkit::python());
    let py = python.to_str().expect("a UTF-8 interpreter path");
    let t = traced(&python, &[py, "-c", "import json"]);
    let tl = super::build(&t);
    assert!(tl.counts.libraries_mapped >= 1, "python maps libraries");
    assert!(tl
        .opens_by_kind
        .iter()
        .any(|g| g.key.starts_with("python") && g.opened > 10));
}

#[test]
fn shim_chain_is_the_exec_chain_phase() {
    let python = require!(testkit::python());
    // A shim chain of our own (bash script → bash script → interpreter), as pyenv's is.
    let shim = testkit::shim_chain(&python);
    let t = traced(&shim, &["python3", "-c", "pass"]);
    let tl = super::build(&t);
    let final_step = tl.exec_chain.last().expect("an exec chain");
    assert_eq!(
        std::fs::canonicalize(&final_step.exe).ok(),
        std::fs::canonicalize(&python).ok(),
        "final program: {final_step:?}"
    );
    assert!(
        tl.exec_chain.len() >= 3,
        "shim → shim-exec → python: {:?}",
        tl.exec_chain
    );
    // Everything before the real interpreter's exec is the exec-chain phase,
    // made of the shim's steps (bash scripts) with their own costs.
    let chain = &tl.phases[0];
    assert_eq!(chain.name, "exec-chain");
    assert_eq!(chain.end_ns, final_step.start_ns);
    let steps: u64 = tl
        .exec_chain
        .iter()
        .filter_map(|s| Some(s.end_ns? - s.start_ns))
        .sum();
    assert_eq!(steps + tl.exec_chain[0].start_ns, chain.dur_ns);
    assert!(
        tl.exec_chain.iter().any(|s| s.exe.ends_with("/bash")),
        "{:?}",
        tl.exec_chain
    );
}

#[test]
fn python_sockets_become_connects() {
    let python = require!(testkit::python());
    let py = python.to_str().expect("a UTF-8 interpreter path");
    let script = "import socket\n\
        s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen()\n\
        c=socket.create_connection(s.getsockname())\n\
        a,_=s.accept(); a.sendall(b'hi')\n\
        n=socket.socket(); n.setblocking(False); n.connect_ex(s.getsockname()); n.setblocking(True); n.send(b'x')\n\
        u=socket.socket(socket.AF_UNIX)\n\
        try: u.connect('/nonexistent/coldstart.sock')\n\
        except OSError: pass\n";
    let t = traced(&python, &[py, "-c", script]);
    let listen_port = t
        .events
        .iter()
        .find_map(|e| match &e.event {
            Event::Listen {
                addr: Some(SockAddr::Inet { port, .. }),
                ..
            } => Some(*port),
            _ => None,
        })
        .expect("a listen on an inet address");
    let tl = super::build(&t);
    assert_eq!(tl.connects.len(), 3);
    let inet: Vec<String> = tl
        .connects
        .iter()
        .filter_map(|c| c.addr.as_ref().map(|a| a.to_string()))
        .filter(|a| !a.starts_with("unix:"))
        .collect();
    assert_eq!(
        inet,
        vec![format!("127.0.0.1:{listen_port}"); 2],
        "connects go to the listening port"
    );
    assert!(
        tl.connects.iter().all(|c| c.latency_ns.is_some()),
        "{:?}",
        tl.connects
    );
    assert!(tl.connects.iter().any(|c| c
        .addr
        .as_ref()
        .is_some_and(|a| a.to_string().contains("coldstart.sock"))));
}

#[test]
fn go_server_first_response_is_a_mark() {
    let server = require!(testkit::go_server());
    let port = testkit::free_port();
    let port_s = port.to_string();
    let mut o = TraceOptions::new(vec!["go-server".into(), "--port".into(), port_s], server.clone());
    o.timeout = TIMEOUT;
    o.stop_when = StopWhen::FirstResponse;
    let mut session = start(coldstart_core::Lab::open().expect("a Lab"), &o).expect("start");
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
    assert_eq!(session.wait(), Outcome::Reached);
    let t = session.finish().expect("finish");
    let tl = super::build(&t);
    assert!(tl.marks.iter().any(|m| m.name == "first-response"));
}

#[test]
fn forker_tree_processes_and_threads() {
    let forker = require!(testkit::c_example("forker", &["-O2", "-pthread"]));
    let mut o = TraceOptions::new(vec!["forker".into()], forker.clone());
    o.timeout = Duration::from_millis(1500);
    let t = trace(&o).expect("trace forker");
    assert_eq!(t.outcome, Outcome::TimedOut);
    let tl = super::build(&t);
    assert_eq!(tl.counts.processes, 4, "{:?}", tl.processes);
    assert_eq!(tl.counts.threads, 2);
    for p in &tl.processes {
        assert_eq!(p.exit_signal, Some(libc::SIGKILL), "{p:?}");
    }
}

#[test]
fn threads_are_named_whether_they_ended_or_were_killed() {
    let python = require!(testkit::python());
    let py = python.to_str().expect("a UTF-8 interpreter path");
    // One thread names itself and ends (its name is read at its exit stop),
    // one names itself and lives on until the kill (read right before it);
    // the listen that ends the trace comes after both named themselves.
    let script = "import ctypes, socket, threading\n\
        libc = ctypes.CDLL(None)\n\
        name = lambda n: libc.prctl(15, n, 0, 0, 0)\n\
        t = threading.Thread(target=lambda: name(b'cs-early')); t.start(); t.join()\n\
        named = threading.Event()\n\
        def late():\n    name(b'cs-late'); named.set(); threading.Event().wait()\n\
        threading.Thread(target=late, daemon=True).start()\n\
        named.wait()\n\
        s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n\
        threading.Event().wait()\n";
    let mut o = TraceOptions::new(vec![py.into(), "-c".into(), script.into()], python.clone());
    o.timeout = TIMEOUT;
    o.stop_when = StopWhen::Listen;
    let t = trace(&o).expect("trace");
    assert_eq!(t.outcome, Outcome::Reached);
    let tl = super::build(&t);
    let root = &tl.processes[0];
    let named: Vec<(Option<&str>, bool)> = root
        .thread_list
        .iter()
        .map(|th| (th.name.as_deref(), th.exit_ns.is_some()))
        .collect();
    assert!(named.contains(&(Some("cs-early"), true)), "{named:?}");
    assert!(
        named.contains(&(Some("cs-late"), true)),
        "killed at the end: {named:?}"
    );
    assert_eq!(root.argv.first().map(String::as_str), Some(py));
    assert_eq!(root.argv.get(1).map(String::as_str), Some("-c"));
    assert_eq!(root.script, None, "-c runs no script file");
}
