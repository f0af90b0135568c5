//! Nothing left behind: daemons, worker processes, and Ctrl-C / SIGTERM of
//! coldstart itself mid-run. Processes are found by a marker in their environment.

use crate::common::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn double_forking_daemon_is_reaped() {
    let _turn = crate::common::beside();
    let m = marker("daemon");
    let daemon = example("daemon");
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("daemon.ready");
    let o = cs(&[
        "bench",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--env",
        &m,
        "--env",
        &format!("COLDSTART_EXAMPLE_DAEMON_READY_FILE={}", ready.display()),
        "--ready",
        &format!("file:{}", ready.display()),
        "--",
        &daemon,
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        processes_with(&m).is_empty(),
        "daemon grandchildren survived: {:?}",
        processes_with(&m)
    );
}

#[test]
fn daemon_with_exit_readiness_is_reaped() {
    let _turn = crate::common::beside();
    // The parent exits at once (ready = exit); the grandchild lives on until we kill it.
    let m = marker("daemon-exit");
    let o = cs(&[
        "bench",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--env",
        &m,
        "--",
        &example("daemon"),
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        processes_with(&m).is_empty(),
        "daemon survived: {:?}",
        processes_with(&m)
    );
}

#[test]
fn workers_and_threads_are_counted_then_killed() {
    let _turn = crate::common::beside();
    let m = marker("forker");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let o = cs(&[
        "bench",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--env",
        &m,
        "--ready",
        "log:^ready",
        "--export-json",
        json.to_str().unwrap(),
        "--",
        &example("forker"),
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json_file(&json);
    for s in doc["samples"].as_array().unwrap() {
        assert_eq!(s["usage"]["processes"], 4, "parent + 3 workers: {s}");
        assert!(
            s["usage"]["threads"].as_u64().unwrap() >= 6,
            "3 threads in the parent + 3 workers: {s}"
        );
    }
    assert!(processes_with(&m).is_empty());
}

/// Start coldstart on a target that never becomes ready, wait until the target is
/// running (by its marker), signal coldstart, and check it cleans up and says so.
fn interrupt_mid_run(signal: i32, tag: &str) {
    let m = marker(tag);
    let port = free_port();
    let child = coldstart()
        .args(["bench", "--runs", "5", "--timeout", "60", "--env", &m])
        .quiet()
        .args([
            "--ready",
            &format!("tcp:{port}"),
            "--",
            "sh",
            "-c",
            "sleep 60 & sleep 60",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let start = Instant::now();
    while processes_with(&m).len() < 3 {
        assert!(start.elapsed() < Duration::from_secs(20), "target never started");
        std::thread::yield_now();
    }
    // SAFETY: signalling the coldstart we spawned.
    unsafe { libc::kill(child.id() as i32, signal) };
    let out = child.wait_with_output().unwrap();
    // 128 + the signal, as shells and CI systems expect (SIGTERM 143, not 130).
    assert_eq!(
        out.status.code(),
        Some(128 + signal),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        processes_with(&m).is_empty(),
        "left behind: {:?}",
        processes_with(&m)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("stopped: interrupted"));
}

#[test]
fn ctrl_c_mid_run_leaves_nothing() {
    let _turn = crate::common::beside();
    interrupt_mid_run(libc::SIGINT, "sigint");
}

#[test]
fn sigterm_mid_run_leaves_nothing() {
    let _turn = crate::common::beside();
    interrupt_mid_run(libc::SIGTERM, "sigterm");
}

#[test]
fn sighup_mid_run_leaves_nothing_and_exits_129() {
    let _turn = crate::common::beside();
    interrupt_mid_run(libc::SIGHUP, "sighup");
}

// ---------------------------------------------------------------------------
// Any way coldstart ends — SIGKILL included — leaves nothing of its targets,
// including setsid'd and double-forked descendants (issue 10, item 9).

/// How coldstart is stopped.
#[derive(Clone, Copy, Debug)]
enum Stop {
    Signal(i32),
    /// A second SIGINT once the first's cleanup has begun.
    DoubleInt,
}

/// Whether this machine gives coldstart a per-run cgroup (root, or a delegated
/// cgroup). Without one a SIGKILLed coldstart cannot reach setsid'd descendants
/// (documented); those tests skip, loudly, unless COLDSTART_REQUIRE_CGROUP=1.
fn cgroups_available(test: &str) -> bool {
    let o = cs(&["bench", "-r", "1", "-w", "0", "--", "true"])
        .quiet()
        .no_store()
        .run();
    let missing = stderr(&o).contains("no per-run cgroup");
    if missing {
        crate::common::testkit::skip(
            "CGROUP",
            &format!(
                "{test}: no per-run cgroup here (not root, no delegation): {}",
                stderr(&o).trim()
            ),
        );
    }
    !missing
}

/// Wait until `pred` holds or `limit` passes; returns whether it held.
fn wait_until(limit: Duration, mut pred: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !pred() {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// A target tree that never becomes ready: a double-forked, setsid'd daemon,
/// then (exec'd over the shell) a server with 3 worker processes: 5 processes.
fn daemon_and_workers() -> [String; 3] {
    [
        "sh".to_string(),
        "-c".to_string(),
        format!("{} && exec {}", example("daemon"), example("forker")),
    ]
}

/// Start `coldstart ARGS`, wait until `expect` of the marked processes run,
/// stop coldstart, and check that nothing marked survives (waiting for the
/// watchdog, which acts once coldstart is gone). Returns coldstart's status.
fn stop_mid_run(
    cmd: &mut Cs,
    env: &[(&str, &str)],
    m: &str,
    expect: usize,
    stop: Stop,
) -> std::process::ExitStatus {
    let mut child = cmd
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let started = wait_until(Duration::from_secs(30), || processes_with(m).len() >= expect);
    if !started {
        child.kill().ok();
        let out = child.wait_with_output().unwrap();
        panic!("target never started: {:?}\n{}", processes_with(m), stderr(&out));
    }
    let pid = child.id() as i32;
    match stop {
        // SAFETY: signalling the coldstart we spawned (not yet reaped).
        Stop::Signal(sig) => unsafe {
            libc::kill(pid, sig);
        },
        Stop::DoubleInt => {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGINT) };
            // The second once the first's cleanup is under way (processes dying);
            // sent back to back, two pending SIGINTs would merge into one.
            wait_until(Duration::from_secs(10), || {
                processes_with(m).len() < expect || !matches!(child.try_wait(), Ok(None))
            });
            // A second press, not the first delivered twice (one sender's repeat
            // within 50 ms is the same interrupt: see launch::signals).
            std::thread::sleep(Duration::from_millis(100));
            if matches!(child.try_wait(), Ok(None)) {
                // SAFETY: still our unreaped child.
                unsafe { libc::kill(pid, libc::SIGINT) };
            }
        }
    }
    let out = child.wait_with_output().unwrap();
    let gone = wait_until(Duration::from_secs(10), || processes_with(m).is_empty());
    assert!(
        gone,
        "{stop:?}: left behind {:?}\n{}",
        processes_with(m),
        stderr(&out)
    );
    out.status
}

fn bench_stopped(stop: Stop, tag: &str, env: &[(&str, &str)]) -> std::process::ExitStatus {
    let m = marker(tag);
    let dir = tempfile::tempdir().unwrap();
    let never = format!("file:{}", dir.path().join("never").display());
    let target = daemon_and_workers();
    let mut args = vec!["bench", "-r", "5", "--timeout", "60", "--env", &m];
    args.extend(["--ready", &never, "--"]);
    args.extend(target.iter().map(String::as_str));
    stop_mid_run(cs(&args).quiet().no_store(), env, &m, 5, stop)
}

const TRIALS: usize = 5;

#[test]
fn sigkill_of_coldstart_leaves_nothing() {
    let _turn = crate::common::beside();
    if !cgroups_available("sigkill_of_coldstart_leaves_nothing") {
        return;
    }
    for i in 0..TRIALS {
        let st = bench_stopped(Stop::Signal(libc::SIGKILL), &format!("kill{i}"), &[]);
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&st),
            Some(libc::SIGKILL)
        );
    }
}

#[test]
fn sigquit_of_coldstart_leaves_nothing() {
    let _turn = crate::common::beside();
    for i in 0..TRIALS {
        let st = bench_stopped(Stop::Signal(libc::SIGQUIT), &format!("quit{i}"), &[]);
        assert_eq!(st.code(), Some(131));
    }
}

#[test]
fn second_ctrl_c_leaves_nothing() {
    let _turn = crate::common::beside();
    for i in 0..TRIALS {
        let st = bench_stopped(Stop::DoubleInt, &format!("int2-{i}"), &[]);
        assert_eq!(st.code(), Some(130));
    }
}

#[test]
fn sigterm_with_daemon_leaves_nothing() {
    let _turn = crate::common::beside();
    for i in 0..TRIALS {
        let st = bench_stopped(Stop::Signal(libc::SIGTERM), &format!("term{i}"), &[]);
        assert_eq!(st.code(), Some(143));
    }
}

/// The v1 freezer backend, forced (this machine may prefer v2).
#[test]
fn sigkill_with_cgroup_v1_freezer_leaves_nothing() {
    let _turn = crate::common::beside();
    if !std::path::Path::new("/sys/fs/cgroup/freezer").is_dir() || !cgroups_available("v1 freezer") {
        eprintln!("skipping sigkill_with_cgroup_v1_freezer_leaves_nothing: no v1 freezer hierarchy");
        return;
    }
    bench_stopped(
        Stop::Signal(libc::SIGKILL),
        "kill-v1",
        &[("COLDSTART_CGROUP", "v1")],
    );
}

/// Without cgroups: a second Ctrl-C still kills setsid'd descendants (found
/// through the subreaper), and the watchdog kills the process groups of a
/// SIGKILLed coldstart.
#[test]
fn without_cgroups_signals_and_sigkill_still_clean_up() {
    let _turn = crate::common::beside();
    let none = [("COLDSTART_CGROUP", "none")];
    assert_eq!(
        bench_stopped(Stop::DoubleInt, "nocg-int2", &none).code(),
        Some(130)
    );
    assert_eq!(
        bench_stopped(Stop::Signal(libc::SIGQUIT), "nocg-quit", &none).code(),
        Some(131)
    );
    let m = marker("nocg-kill");
    let dir = tempfile::tempdir().unwrap();
    let never = format!("file:{}", dir.path().join("never").display());
    let forker = example("forker");
    let args = [
        "bench",
        "-r",
        "5",
        "--timeout",
        "60",
        "--env",
        &m,
        "--ready",
        &never,
        "--",
        &forker,
    ];
    stop_mid_run(
        cs(&args).quiet().no_store(),
        &none,
        &m,
        4,
        Stop::Signal(libc::SIGKILL),
    );
}

/// explain's tracer forks its own tracee: SIGKILL of coldstart mid-trace, and a
/// Ctrl-C mid-trace while a daemon the target started lives on (a traced wait
/// used to last until --timeout). The target's root runs on for a while after
/// starting the daemon, so the traced run is live when the signal comes.
#[test]
fn explain_sigkill_and_ctrl_c_with_a_daemon() {
    let _turn = crate::common::beside();
    let daemon = example("daemon");
    let script = format!("'{daemon}' && exec sleep 4");
    for (tag, stop) in [("explain-kill", libc::SIGKILL), ("explain-int", libc::SIGINT)] {
        if stop == libc::SIGKILL && !cgroups_available("explain sigkill") {
            continue;
        }
        let m = marker(tag);
        let args = [
            "explain",
            "--adapter",
            "none",
            "--no-otlp",
            "-r",
            "1",
            "--timeout",
            "120",
            "--env",
            &m,
            "--ready",
            "exit",
            "--",
            "sh",
            "-c",
            &script,
        ];
        let mut child = cs(&args)
            .quiet()
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        // The traced run: its daemon is a tracee (TracerPid set).
        let traced = wait_until(Duration::from_secs(30), || {
            processes_with(&m).iter().any(|p| {
                std::fs::read_to_string(format!("/proc/{p}/status"))
                    .unwrap_or_default()
                    .lines()
                    .any(|l| l.starts_with("TracerPid:") && l.split_whitespace().nth(1) != Some("0"))
            })
        });
        if !traced {
            child.kill().ok();
            panic!(
                "{tag}: traced daemon never seen\n{}",
                stderr(&child.wait_with_output().unwrap())
            );
        }
        let start = Instant::now();
        // SAFETY: signalling the coldstart we spawned.
        unsafe { libc::kill(child.id() as i32, stop) };
        let out = child.wait_with_output().unwrap();
        if stop == libc::SIGINT {
            assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
            // Well before the 120 s timeout it used to wait for.
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "took {:?}",
                start.elapsed()
            );
        }
        assert!(
            wait_until(Duration::from_secs(10), || processes_with(&m).is_empty()),
            "{tag}: left behind {:?}",
            processes_with(&m)
        );
    }
}

/// `coldstart lambda` spawns the runtime and extensions through launch::spawn.
#[test]
fn lambda_sigkill_leaves_nothing() {
    let _turn = crate::common::beside();
    if !cgroups_available("lambda_sigkill_leaves_nothing") {
        return;
    }
    let m = marker("lambda-kill");
    let dir = tempfile::tempdir().unwrap();
    let ext = dir.path().join("extensions");
    std::fs::create_dir_all(&ext).unwrap();
    std::fs::copy(
        repo().join("examples/lambda/python/raw_extension.py"),
        ext.join("py-raw"),
    )
    .unwrap();
    let runtime = repo().join("examples/lambda/python/raw_runtime.py");
    let args = [
        "lambda",
        "--runs",
        "3",
        "--init-timeout",
        "60",
        "--runtime",
        runtime.to_str().unwrap(),
        "--extensions",
        ext.to_str().unwrap(),
        "--env",
        &m,
        "--env",
        "CS_RT_MODE=hang",
    ];
    stop_mid_run(
        cs(&args).quiet().no_store(),
        &[],
        &m,
        2,
        Stop::Signal(libc::SIGKILL),
    );
}

/// A parent cgroup left by a coldstart that died together with its watchdog
/// (here: made by hand, with a live process in it, owner pid long gone) is
/// killed and removed by the next coldstart's watchdog.
#[test]
fn stale_run_cgroups_are_removed_at_next_start() {
    let _turn = crate::common::beside();
    if !cgroups_available("stale_run_cgroups_are_removed_at_next_start") {
        return;
    }
    // Our own cgroup v2 directory: coldstart (our child) starts in the same one.
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let Some(mount) = mountinfo.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        let pre: Vec<&str> = pre.split_whitespace().collect();
        (post.starts_with("cgroup2 ") && pre.get(3) == Some(&"/")).then(|| pre[4].to_string())
    }) else {
        eprintln!("skipping stale_run_cgroups_are_removed_at_next_start: no cgroup v2 mount (v1 only)");
        return;
    };
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let own = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .unwrap()
        .trim_start_matches('/')
        .to_string();
    // A pid that is certainly not a live coldstart: a finished child of ours.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let stale = std::path::Path::new(&mount)
        .join(&own)
        .join(format!("coldstart-runs-{dead}-1"));
    let run_dir = stale.join("run-0");
    let mut victim = std::process::Command::new(example("sleeper"))
        .env("COLDSTART_EXAMPLE_DELAY_MS", "600000")
        .spawn()
        .unwrap();
    // Another test's coldstart, starting meanwhile, may remove the stale parent
    // between our mkdir and our write (the very cleanup under test): make it again.
    let placed = (0..20).any(|_| {
        std::fs::create_dir_all(&run_dir).is_ok()
            && std::fs::write(run_dir.join("cgroup.procs"), victim.id().to_string()).is_ok()
    });
    assert!(placed, "could not place the victim in {}", run_dir.display());
    let o = cs(&["bench", "-r", "1", "-w", "0", "--", "true"])
        .quiet()
        .no_store()
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    // The victim is our child: once killed it is a zombie until reaped here.
    let killed = wait_until(Duration::from_secs(10), || {
        matches!(victim.try_wait(), Ok(Some(_)))
    });
    if !killed {
        victim.kill().ok();
    }
    let removed = wait_until(Duration::from_secs(10), || !stale.exists());
    assert!(killed, "the process in the stale cgroup survived");
    assert!(removed, "{} was not removed", stale.display());
}

/// Entering the run cgroup waits in the kernel for an RCU grace period (measured
/// 8–19 ms on a server's runs here): coldstart's time, which must not show up in
/// the target's. A ~1 ms server must measure about the same with and without cgroups.
#[test]
fn the_cgroup_placement_is_not_in_the_measured_time() {
    let _turn = crate::common::beside();
    if !cgroups_available("the_cgroup_placement_is_not_in_the_measured_time") {
        return;
    }
    let server = example("rust-server");
    let port = free_port().to_string();
    let ready = format!("tcp:{port}");
    let median = |env: &[(&str, &str)]| {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        let mut c = coldstart();
        for (k, v) in env {
            c.env(k, v);
        }
        // Interleaved with a server that idles 50 ms first: after idle CPUs the grace
        // period is slow (back-to-back fast runs alone often do not show it).
        let o = c
            .args(["bench", "-r", "10", "--ready", &ready, "--export-json"])
            .arg(&json)
            .args(["--name", "fast", "--", &server, "--port", &port])
            .args(["--name", "idle-first", "--env", "COLDSTART_EXAMPLE_DELAY_MS=50"])
            .args(["--", &server, "--port", &port])
            .quiet()
            .no_store()
            .run();
        assert!(o.status.success(), "{}", stderr(&o));
        let mut ns = ready_ns(&json_file(&json), 0);
        ns.sort();
        ns[ns.len() / 2] as f64
    };
    let with = median(&[]);
    let without = median(&[("COLDSTART_CGROUP", "none")]);
    assert!(
        with < without * 3.0,
        "with a run cgroup {with} ns, without {without} ns: the placement leaked into the figure"
    );
}

/// The cgroup directories `pid` is in that coldstart made (a `coldstart-…`
/// component in the path), each with its `coldstart-…` ancestors.
fn coldstart_cgroups_of(pid: i32) -> Vec<std::path::PathBuf> {
    let own = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    coldstart_cgroup_dirs(&own)
}

/// A process identity that survives pid reuse: (pid, start time).
fn identity(pid: i32) -> Option<(i32, String)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if fields.first().is_some_and(|s| *s == "Z" || *s == "X") {
        return None; // dead, waiting for its reaper
    }
    Some((pid, fields.get(19)?.to_string()))
}

/// Start `coldstart ARGS`, wait until `ready` holds the runtime's pid file
/// `runtime` (and `also` more ready files), note every process of the tree (by
/// the marker) and every cgroup it is in, SIGKILL coldstart, and assert that
/// none of those processes and none of those cgroups is left (waiting, bounded,
/// for the watchdog, which acts once coldstart is gone).
fn sigkill_leaves_no_process_and_no_cgroup(cmd: &mut Cs, m: &str, ready: &std::path::Path, also: &[&str]) {
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn();
    let files = || {
        std::iter::once("runtime")
            .chain(also.iter().copied())
            .all(|f| ready.join(f).exists())
    };
    if !wait_until(Duration::from_secs(60), files) {
        child.kill().ok();
        let out = child.wait_with_output().unwrap();
        panic!("the run never got ready\n{}", stderr(&out));
    }
    let pids: Vec<i32> = std::fs::read_to_string(ready.join("runtime"))
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    let mut tree: Vec<(i32, String)> = processes_with(m)
        .into_iter()
        .chain(pids.iter().copied())
        .filter_map(identity)
        .collect();
    tree.sort();
    tree.dedup();
    for p in &pids {
        assert!(
            tree.iter().any(|(q, _)| q == p),
            "process {p} of the run is not live"
        );
    }
    let cgroups = coldstart_cgroups_of(pids[0]);
    assert!(
        !cgroups.is_empty(),
        "the runtime {} is in no cgroup of coldstart's:\n{}",
        pids[0],
        std::fs::read_to_string(format!("/proc/{}/cgroup", pids[0])).unwrap_or_default()
    );
    // SAFETY: signalling the coldstart we spawned (not yet reaped).
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let out = child.wait_with_output().unwrap();
    let survivors = || -> Vec<i32> {
        tree.iter()
            .filter(|(p, start)| identity(*p).is_some_and(|(_, s)| &s == start))
            .map(|(p, _)| *p)
            .collect()
    };
    let left = || cgroups.iter().filter(|d| d.exists()).cloned().collect::<Vec<_>>();
    let clean = wait_until(Duration::from_secs(15), || {
        survivors().is_empty() && left().is_empty()
    });
    assert!(
        clean,
        "after SIGKILL of coldstart: processes left {:?} (of {:?}), cgroups left {:?}\n{}",
        survivors(),
        tree,
        left(),
        stderr(&out)
    );
}

/// The runtime of the SIGKILL tests: starts a setsid'd daemon (out of its
/// process group, so only a cgroup reaches it), writes "<own pid> <daemon pid>"
/// to $CS_READY_DIR/runtime, and never asks for an event (init goes on).
fn hanging_runtime_with_a_daemon(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("hanging_runtime.py");
    std::fs::write(
        &path,
        "#!/usr/bin/env python3\n\
         import os, subprocess, time\n\
         d = subprocess.Popen(['sleep', '600'], start_new_session=True)\n\
         ready = os.environ['CS_READY_DIR']\n\
         with open(os.path.join(ready, 'runtime.tmp'), 'w') as f:\n    f.write('%d %d' % (os.getpid(), d.pid))\n\
         os.rename(os.path.join(ready, 'runtime.tmp'), os.path.join(ready, 'runtime'))\n\
         while True:\n    time.sleep(3600)\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// SIGKILL of `coldstart lambda` mid-init (the runtime never asks for an event;
/// the extension waits in /event/next) leaves no process and no cgroup of the
/// sandbox: the watchdog kills what is in the sandbox's cgroups and removes them.
#[test]
fn lambda_sigkill_mid_init_leaves_no_process_and_no_cgroup() {
    let _turn = crate::common::beside();
    if !cgroups_available("lambda_sigkill_mid_init_leaves_no_process_and_no_cgroup") {
        return;
    }
    let m = marker("lambda-kill-cg");
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ready = dir.path().join("ready");
    let ext = dir.path().join("extensions");
    std::fs::create_dir_all(&ready).unwrap();
    std::fs::create_dir_all(&ext).unwrap();
    std::fs::copy(
        repo().join("examples/lambda/python/raw_extension.py"),
        ext.join("py-raw"),
    )
    .unwrap();
    let runtime = hanging_runtime_with_a_daemon(dir.path());
    let ready_env = format!("CS_READY_DIR={}", ready.display());
    let args = [
        "lambda",
        "--runs",
        "1",
        "--init-timeout",
        "120",
        "--runtime",
        runtime.to_str().unwrap(),
        "--extensions",
        ext.to_str().unwrap(),
        "--env",
        &m,
        "--env",
        &ready_env,
    ];
    // py-raw writes its ready file right before its first /event/next.
    sigkill_leaves_no_process_and_no_cgroup(cs(&args).quiet().no_store(), &m, &ready, &["py-raw"]);
}

/// The same for bench and explain (traced) runs with limits: their cgroups in
/// the cpu and memory hierarchies besides the run cgroup.
#[test]
fn limited_bench_and_explain_sigkill_leave_no_process_and_no_cgroup() {
    let _turn = crate::common::beside();
    if !cgroups_available("limited_bench_and_explain_sigkill_leave_no_process_and_no_cgroup") {
        return;
    }
    for command in ["bench", "explain"] {
        let m = marker(&format!("{command}-kill-cg"));
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let ready = dir.path().join("ready");
        std::fs::create_dir_all(&ready).unwrap();
        let runtime = hanging_runtime_with_a_daemon(dir.path());
        let ready_env = format!("CS_READY_DIR={}", ready.display());
        let never = format!("file:{}", dir.path().join("never").display());
        let mut args = vec![command, "-r", "1", "--timeout", "120"];
        let mut cmd = coldstart();
        cmd.quiet();
        if command == "bench" {
            cmd.no_store();
            args.extend(["-w", "0"]);
        } else {
            args.extend(["--adapter", "none", "--no-otlp"]);
        }
        args.extend([
            "--memory",
            "256M",
            "--cpus",
            "1",
            "--env",
            &m,
            "--env",
            &ready_env,
            "--ready",
            &never,
            "--",
            runtime.to_str().unwrap(),
        ]);
        sigkill_leaves_no_process_and_no_cgroup(cmd.args(&args), &m, &ready, &[]);
    }
}

/// This process's own directory in the v1 hierarchy of `controller`.
fn own_v1_dir(controller: &str) -> Option<std::path::PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let (root, mp) = mountinfo.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        let pre: Vec<&str> = pre.split_whitespace().collect();
        let post: Vec<&str> = post.split_whitespace().collect();
        (post.first() == Some(&"cgroup") && post.get(2)?.split(',').any(|c| c == controller))
            .then(|| (pre[3].to_string(), pre[4].to_string()))
    })?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        ctrls
            .split(',')
            .any(|c| c == controller)
            .then(|| path.to_string())
    })?;
    let rel = path
        .strip_prefix(root.as_str())
        .unwrap_or(&path)
        .trim_start_matches('/')
        .to_string();
    Some(std::path::Path::new(&mp).join(rel))
}

/// Cgroups of a coldstart that died with its watchdog, in a v1 hierarchy with
/// no freezer (lambda's cpu and memory cgroups): a sandbox with a live process
/// under `coldstart-runs-<dead pid>-1`, and an empty sandbox named as older
/// coldstarts named them (`coldstart-lambda-<dead pid>-…`), are swept by the
/// next coldstart's watchdog; a live coldstart's are not.
#[test]
fn stale_v1_sandbox_cgroups_are_removed_at_next_start() {
    let _turn = crate::common::beside();
    if !cgroups_available("stale_v1_sandbox_cgroups_are_removed_at_next_start") {
        return;
    }
    let Some(cpu) = own_v1_dir("cpu").filter(|d| d.is_dir()) else {
        eprintln!("skipping stale_v1_sandbox_cgroups_are_removed_at_next_start: no v1 cpu hierarchy");
        return;
    };
    // A pid that is certainly not a live coldstart: a finished child of ours.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let stale = cpu.join(format!("coldstart-runs-{dead}-1"));
    let sandbox = stale.join("lambda-0-0-1");
    let legacy = cpu.join(format!("coldstart-lambda-{dead}-0-0-1"));
    // Ours, live (this test process's pid and start time): must stay.
    let me = std::process::id();
    let stat = std::fs::read_to_string(format!("/proc/{me}/stat")).unwrap();
    let started = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .to_string();
    let live = cpu.join(format!("coldstart-runs-{me}-{started}"));
    std::fs::create_dir_all(&live).unwrap();
    let mut victim = std::process::Command::new(example("sleeper"))
        .env("COLDSTART_EXAMPLE_DELAY_MS", "600000")
        .spawn()
        .unwrap();
    // Another test's coldstart, starting meanwhile, may sweep them between our
    // mkdir and our write (the very cleanup under test): make them again.
    let placed = (0..20).any(|_| {
        std::fs::create_dir_all(&sandbox).is_ok()
            && std::fs::create_dir_all(&legacy).is_ok()
            && std::fs::write(sandbox.join("cgroup.procs"), victim.id().to_string()).is_ok()
    });
    assert!(placed, "could not place the victim in {}", sandbox.display());
    let o = cs(&["bench", "-r", "1", "-w", "0", "--", "true"])
        .quiet()
        .no_store()
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    // The victim is our child: once killed it is a zombie until reaped here.
    let killed = wait_until(Duration::from_secs(10), || {
        matches!(victim.try_wait(), Ok(Some(_)))
    });
    if !killed {
        victim.kill().ok();
    }
    let removed = wait_until(Duration::from_secs(10), || !stale.exists() && !legacy.exists());
    let kept = live.exists();
    std::fs::remove_dir(&live).ok();
    assert!(killed, "the process in the stale sandbox survived");
    assert!(
        removed,
        "left: {:?}",
        [&stale, &legacy]
            .iter()
            .filter(|d| d.exists())
            .collect::<Vec<_>>()
    );
    assert!(kept, "a live coldstart's cgroup {} was removed", live.display());
}

/// `timeout -s INT` signals coldstart and then its process group: one interrupt
/// delivered twice. It must stop as one Ctrl-C does, with the partial results
/// (tables and export), not as a second Ctrl-C that kills and exits at once.
#[test]
fn timeout_s_int_keeps_the_partial_results() {
    let _turn = crate::common::beside();
    // coreutils' timeout, part of every base system (like the `sh` other tests run).
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = std::process::Command::new("timeout")
        .args(["-s", "INT", "2"])
        .arg(env!("CARGO_BIN_EXE_coldstart"))
        .args(["bench", "--no-store", "-r", "100000", "-w", "0", "--export-json"])
        .arg(&json)
        .args(["--", "true"])
        .env("COLDSTART_STORE", dir.path().join("store.db"))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(124), "timeout's own code: {err}");
    assert!(!err.contains("interrupted again"), "{err}");
    let doc = json_file(&json);
    assert_eq!(doc["stopped"], "interrupted", "{err}");
    assert!(
        doc["samples"].as_array().is_some_and(|s| !s.is_empty()),
        "the runs before the interrupt are kept"
    );
}
