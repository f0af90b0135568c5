//! Nothing left behind: daemons, worker processes, and Ctrl-C / SIGTERM of
//! coldstart itself mid-run. Processes are found by a marker in their environment.

mod common;
use common::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn double_forking_daemon_is_reaped() {
    let m = marker("daemon");
    let daemon = example("daemon");
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("daemon.ready");
    let o = run(&[
        "bench",
        "-q",
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
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        processes_with(&m).is_empty(),
        "daemon grandchildren survived: {:?}",
        processes_with(&m)
    );
}

#[test]
fn daemon_with_exit_readiness_is_reaped() {
    // The parent exits at once (ready = exit); the grandchild lives on until we kill it.
    let m = marker("daemon-exit");
    let o = run(&[
        "bench",
        "-q",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--env",
        &m,
        "--",
        &example("daemon"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        processes_with(&m).is_empty(),
        "daemon survived: {:?}",
        processes_with(&m)
    );
}

#[test]
fn workers_and_threads_are_counted_then_killed() {
    let m = marker("forker");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let o = run(&[
        "bench",
        "-q",
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
    ]);
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
        .args(["bench", "-q", "--runs", "5", "--timeout", "60", "--env", &m])
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
        .spawn()
        .unwrap();
    let start = Instant::now();
    while processes_with(&m).len() < 3 {
        assert!(start.elapsed() < Duration::from_secs(20), "target never started");
        std::thread::yield_now();
    }
    // SAFETY: signalling the coldstart we spawned.
    unsafe { libc::kill(child.id() as i32, signal) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
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
    interrupt_mid_run(libc::SIGINT, "sigint");
}

#[test]
fn sigterm_mid_run_leaves_nothing() {
    interrupt_mid_run(libc::SIGTERM, "sigterm");
}
