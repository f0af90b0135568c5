//! Timelines of hand-made traces: phases, marks, groupings, classification.

use super::files::{basename, classify, FileKind};
use super::*;
use coldstart_core::trace::{Outcome, SocketRole, TraceEvent};

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
            argv: vec![basename(path).into()],
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
        root_usage: None,
        task_names: Default::default(),
        stops: Vec::new(),
        cpu: Vec::new(),
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
    let py = "/opt/fixture/.pyenv/versions/3.11.7/bin/python3.11";
    let lib = "/opt/fixture/.pyenv/versions/3.11.7/lib/python3.11";
    let events = vec![
        exec(1, 100, "/opt/fixture/.pyenv/shims/python3"),
        exec(4, 100, "/opt/fixture/.pyenv/libexec/pyenv"),
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
        exec(20, 100, "/opt/fixture/.pyenv/libexec/pyenv-exec"),
        exec(30, 100, py),
        open(31, 100, "/etc/ld.so.cache", true),
        open(31, 100, "/usr/lib/x86_64-linux-gnu/libm.so.6", true),
        mmap(32, 100, "/usr/lib/x86_64-linux-gnu/libm.so.6"),
        mmap(33, 100, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
        open(34, 100, &format!("{lib}/pyvenv.cfg"), false), // failed: not the end
        open(
            35,
            100,
            "/opt/fixture/.pyenv/versions/3.11.7/bin/pybuilddir.txt",
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
    assert!(t.marks.windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
    assert!(t.marks.iter().any(|m| m.name == "exit" && m.t_ns == 45 * MS));

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

/// The tracer's events are absolute CLOCK_MONOTONIC; a timeline counts from
/// its run's time zero, so the same run traced at another moment gives the
/// same timeline, and a stored one needs no trace beside it.
#[test]
fn times_count_from_time_zero() {
    let addr = SockAddr::Inet {
        ip: "127.0.0.1".parse().unwrap(),
        port: 8080,
    };
    let events = vec![
        exec(2, 100, "/srv/app"),
        mmap(3, 100, "/lib/x86_64-linux-gnu/libc.so.6"),
        open(4, 100, "/srv/app.toml", true),
        ev(
            5,
            100,
            Event::Connect {
                fd: 3,
                addr: None,
                ok: true,
                errno: 0,
                dur_ns: MS,
            },
        ),
        ev(
            6,
            100,
            Event::Listen {
                fd: 4,
                addr: Some(addr),
            },
        ),
        ev(
            9,
            100,
            Event::Exit {
                code: Some(0),
                signal: None,
            },
        ),
    ];
    let at = |t0: u64| {
        let mut t = trace(events.clone(), 9);
        t.t0_ns = t0;
        t.end_ns += t0;
        for e in &mut t.events {
            e.ts_ns += t0;
        }
        build(&t)
    };
    let late = at(5_000 * MS);
    assert_eq!(late.t0_mono_ns, 5_000 * MS);
    assert_eq!(
        Timeline {
            t0_mono_ns: 0,
            ..late.clone()
        },
        at(0),
        "the same timeline whenever the run happened"
    );
    assert_eq!(late.end_ns, 9 * MS);
    assert_eq!(phase(&late, "exec-chain").start_ns, 0);
    assert_eq!(phase(&late, "loader").start_ns, 2 * MS);
    assert_eq!(phase(&late, "init").end_ns, 6 * MS);
    assert_eq!(late.exec_chain[0].start_ns, 2 * MS);
    assert_eq!(late.listens[0].t_ns, 6 * MS);
    assert_eq!(late.connects[0].t_ns, 5 * MS);
    assert_eq!(late.opens_by_kind[0].first_ns, 4 * MS);
    assert_eq!(late.processes[0].exit_ns, Some(9 * MS));
    assert_eq!(
        late.marks[0],
        coldstart_core::sample::Mark::new("spawn", coldstart_core::sample::MarkSource::Tracer, 0).in_pid(100)
    );
    assert!(late
        .marks
        .iter()
        .all(|m| m.source == coldstart_core::sample::MarkSource::Tracer && m.t_ns <= 9 * MS));
}

/// A stored timeline comes back as it was: every field, socket addresses included.
#[test]
fn round_trips_through_json() {
    let addr = SockAddr::Inet {
        ip: "::1".parse().unwrap(),
        port: 8080,
    };
    let events = vec![
        exec(2, 100, "/srv/app"),
        ev(
            3,
            100,
            Event::Clone {
                child: 101,
                thread: false,
            },
        ),
        ev(
            4,
            100,
            Event::Connect {
                fd: 3,
                addr: Some(SockAddr::Unix {
                    path: "/run/db.sock".into(),
                }),
                ok: false,
                errno: libc::ECONNREFUSED,
                dur_ns: 10,
            },
        ),
        ev(
            5,
            100,
            Event::Listen {
                fd: 4,
                addr: Some(addr),
            },
        ),
        open(6, 101, "/app/node_modules", true),
    ];
    let t = build(&trace(events, 7));
    let text = serde_json::to_string(&t).unwrap();
    let back: Timeline = serde_json::from_str(&text).unwrap();
    assert_eq!(back, t);
}

fn fork(ts: u64, parent: i32, child: i32) -> TraceEvent {
    ev(ts, parent, Event::Clone { child, thread: false })
}
fn exec_argv(ts: u64, pid: i32, path: &str, exe: &str, argv: &[&str]) -> TraceEvent {
    ev(
        ts,
        pid,
        Event::Exec {
            path: path.into(),
            exe: exe.into(),
            argv0: argv[0].into(),
            argv: argv.iter().map(|a| a.to_string()).collect(),
        },
    )
}
fn listen(ts: u64, pid: i32, fd: i32, port: u16) -> TraceEvent {
    ev(
        ts,
        pid,
        Event::Listen {
            fd,
            addr: Some(SockAddr::Inet {
                ip: std::net::Ipv4Addr::LOCALHOST.into(),
                port,
            }),
        },
    )
}
fn exit(ts: u64, pid: i32, code: i32) -> TraceEvent {
    ev(
        ts,
        pid,
        Event::Exit {
            code: Some(code),
            signal: None,
        },
    )
}

/// `sh start.sh`: runs `dirname` (waited on), starts a helper that listens
/// first, then forks the server and waits. The probe's port picks the server.
fn start_script_trace() -> Trace {
    trace(
        vec![
            exec_argv(1, 100, "/bin/sh", "/usr/bin/dash", &["sh", "start.sh"]),
            fork(2, 100, 101),
            exec_argv(3, 101, "/usr/bin/dirname", "/usr/bin/dirname", &["dirname", "x"]),
            // The script sat in wait4 for dirname (its `$(dirname "$0")`).
            ev(
                2,
                100,
                Event::Wait {
                    child: 101,
                    dur_ns: 4 * MS,
                },
            ),
            exit(5, 101, 0),
            fork(6, 100, 102),
            exec_argv(
                7,
                102,
                "/usr/bin/python3",
                "/usr/bin/python3.11",
                &["python3", "helper.py"],
            ),
            listen(9, 102, 3, 7001),
            // The helper answers someone first (epmd answering a registration).
            ev(9, 102, Event::Accept { listen_fd: 3, fd: 4 }),
            ev(
                9,
                102,
                Event::FirstWrite {
                    fd: 4,
                    role: SocketRole::Accepted,
                },
            ),
            fork(10, 100, 103),
            exec_argv(
                11,
                103,
                "/usr/bin/java",
                "/usr/lib/jvm/bin/java",
                &["java", "-jar", "app.jar"],
            ),
            mmap(12, 103, "/usr/lib/jvm/lib/server/libjvm.so"),
            open(13, 103, "/srv/app.jar", true),
            listen(20, 103, 5, 7002),
            ev(21, 103, Event::Accept { listen_fd: 5, fd: 6 }),
            ev(
                22,
                103,
                Event::FirstWrite {
                    fd: 6,
                    role: SocketRole::Accepted,
                },
            ),
        ],
        25,
    )
}

#[test]
fn the_probes_port_picks_the_service_and_its_phases() {
    let t = start_script_trace();
    let mut tl = build_for(&t, ServiceHint::Port(7002));
    assert_eq!(tl.service.pid, 103);
    assert_eq!(tl.service.path, vec![100, 103]);
    // The chain: the root's exec before it forked the server, then the server's.
    let chain: Vec<(i32, &str)> = tl.exec_chain.iter().map(|s| (s.pid, s.label())).collect();
    assert_eq!(chain, vec![(100, "start.sh"), (103, "/usr/bin/java")]);
    assert_eq!(phase(&tl, "exec-chain").end_ns, 11 * MS);
    assert_eq!(phase(&tl, "loader").end_ns, 12 * MS);
    assert_eq!(
        phase(&tl, "init").end_ns,
        20 * MS,
        "the server's listen, not the helper's"
    );
    add_ready_phases(&mut tl, &t, 21 * MS);
    assert_eq!(phase(&tl, "listen→ready").start_ns, 20 * MS);
    assert_eq!(
        (
            phase(&tl, "first request").start_ns,
            phase(&tl, "first request").end_ns
        ),
        (21 * MS, 22 * MS)
    );
    let role = |pid: i32| {
        tl.processes
            .iter()
            .find(|p| p.pid == pid)
            .map(|p| (p.role.as_str(), p.blocked_ns))
    };
    assert_eq!(role(100), Some(("launcher", 0)));
    assert_eq!(
        role(101),
        Some(("helper", 3 * MS)),
        "dirname ran and ended on the path"
    );
    assert_eq!(role(102), Some(("helper", 0)), "the helper runs alongside");
    assert_eq!(role(103), Some(("service", 0)));
    assert_eq!(tl.service.blocked_ns, 3 * MS);
    // The helper overlapped the root's stretch from its fork (6) to the server's (10).
    assert_eq!(
        tl.processes.iter().find(|p| p.pid == 102).map(|p| p.overlap_ns),
        Some(4 * MS)
    );
    let mark = |name: &str| tl.marks.iter().find(|m| m.name == name).map(|m| (m.t_ns, m.pid));
    assert_eq!(mark("first-listen"), Some((20 * MS, Some(103))));
    assert_eq!(mark("first-accept"), Some((21 * MS, Some(103))));
    assert_eq!(mark("first-response"), Some((22 * MS, Some(103))));
    let root = &tl.processes[0];
    assert_eq!(root.script.as_deref(), Some("start.sh"));
    assert_eq!(root.label(), "start.sh");
}

#[test]
fn without_a_port_the_service_follows_the_readiness() {
    let t = start_script_trace();
    // listen: whoever listened first (that is what made the run ready).
    assert_eq!(build_for(&t, ServiceHint::FirstListen).service.pid, 102);
    // exit: the root's program past the shell that forked and waited on it
    // (its events end at the trace's end: no listen on a port of the probe's).
    let tl = build_for(&t, ServiceHint::Root);
    assert_eq!(tl.service.pid, 103);
    assert_eq!(tl.service.path, vec![100, 103]);
    assert_eq!(phase(&tl, "exec-chain").end_ns, 11 * MS);
    // log/file: past the shell, to the child it waits on (the last started of
    // those still running), not the earlier helper.
    assert_eq!(build_for(&t, ServiceHint::Output).service.pid, 103);
    // A port nothing listened on: said so, first listen instead.
    let tl = build_for(&t, ServiceHint::Port(7999));
    assert_eq!(tl.service.pid, 102);
    assert!(tl.service.why.contains("7999"), "{}", tl.service.why);
}

/// A helper holds the critical path only while the path process waited for
/// it: not for merely ending inside the stretch (a VM's port helper that exits
/// with the VM: the issue's `erl_child_setup on the critical path`), and
/// from the parent's last traced activity before the helper's end when the
/// parent collected it only afterwards (reading a `$(…)`'s output).
#[test]
fn a_helper_holds_the_path_only_while_waited_for() {
    use coldstart_core::trace::Stop;
    let wait = |ts: u64, pid: i32, child: i32, dur_ms: u64| {
        ev(
            ts,
            pid,
            Event::Wait {
                child,
                dur_ns: dur_ms * MS,
            },
        )
    };
    let mut t = trace(
        vec![
            exec(1, 100, "/usr/bin/vm"),
            // 101: waited for in wait4 from 3 (after some work) to its end at 20.
            fork(2, 100, 101),
            open(3, 100, "/etc/vm.conf", true),
            wait(4, 100, 101, 16),
            exit(20, 101, 0),
            // 102: its output read to EOF (no traced call by the VM), then reaped.
            fork(30, 100, 102),
            exec(31, 102, "/usr/bin/lookup"),
            exit(40, 102, 0),
            wait(41, 100, 102, 0),
            // 103: a port helper that ran beside the VM and ended with it,
            // never waited for; its child 104 neither.
            fork(50, 100, 103),
            fork(51, 103, 104),
            exit(90, 104, 0),
            exit(98, 103, 0),
            exit(99, 100, 0),
        ],
        100,
    );
    let stop = |ms: u64, pid: i32| Stop {
        ts_ns: ms * MS,
        pid,
        held_ns: 0,
    };
    // The VM's stops: its exec, forks, open, wait4 entry; the threads' work
    // until 45 (then it sleeps in a timed wait: no stops).
    t.stops = [1, 2, 3, 4, 30, 41, 45, 50]
        .iter()
        .map(|&ms| stop(ms, 100))
        .collect();
    let tl = build_for(&t, ServiceHint::Root);
    let p = |pid: i32| tl.processes.iter().find(|p| p.pid == pid).expect("the process");
    assert_eq!(tl.service.pid, 100);
    assert_eq!((p(101).blocked_ns, p(101).waited.as_str()), (16 * MS, "wait"));
    assert_eq!(p(101).waited_from_ns, Some(4 * MS));
    assert_eq!((p(102).blocked_ns, p(102).waited.as_str()), (10 * MS, "reaped"));
    assert_eq!(p(103).blocked_ns, 0, "ran beside the VM: {:?}", p(103));
    assert_eq!(p(104).blocked_ns, 0);
    assert!(p(103).overlap_ns > 0);
    assert_eq!(tl.service.blocked_ns, 26 * MS);
}

/// A helper whose end came from our own kill at the end of the run, collected
/// by a parent still alive then (epmd's forking parent), was not waited for
/// on the run's path (it held "144 µs" of it when the kill order fell so).
#[test]
fn an_end_from_our_final_kill_is_no_wait() {
    let mut t = trace(
        vec![
            exec(1, 100, "/usr/bin/vm"),
            fork(2, 100, 101),
            fork(3, 101, 102),
            // The run is ready at 40; we start killing at 50: 102 dies, 101
            // (blocked in wait4 since 3) collects it, then dies itself.
            ev(
                50,
                101,
                Event::Wait {
                    child: 102,
                    dur_ns: 47 * MS,
                },
            ),
            exit(50, 102, 137),
            exit(51, 101, 137),
            exit(52, 100, 137),
        ],
        50,
    );
    t.killed = true;
    t.stops = vec![coldstart_core::trace::Stop {
        ts_ns: 3 * MS,
        pid: 101,
        held_ns: 0,
    }];
    let tl = build_for(&t, ServiceHint::Root);
    let p = tl.processes.iter().find(|p| p.pid == 102).expect("the helper");
    assert_eq!(p.waited_from_ns, None, "{p:?}");
    assert_eq!(p.blocked_ns, 0, "{p:?}");
}
