//! The one run engine: a plain run and a traced run of the same target end the
//! same way (outcome, exit status, failure tail), and a traced run keeps what a
//! plain run measures that the tracer could take from it (the root's rusage).
//! The library is used directly, with the Lab the binary would open.
//!
//! No libtest harness (Cargo.toml: `harness = false`): the tests run one after
//! another on the main thread, as runs do in the binary. A Lab reaps every child
//! of its process (`waitpid(-1)`) and a run's cleanup kills every live run
//! cgroup, so runs in parallel threads (or other tests' children) would
//! interfere: one run at a time per process is the library's contract.

use coldstart_testkit as testkit;

use coldstart_core::run::{run_once, run_traced, RunId, RunOptions};
use coldstart_core::sample::{Outcome, Sample};
use coldstart_core::target::{Readiness, Target};
use std::time::Duration;

fn opts(timeout_ms: u64) -> RunOptions {
    RunOptions::new(Duration::from_millis(timeout_ms))
}

fn id() -> RunId {
    RunId {
        variant: 0,
        round: 0,
        warmup: false,
    }
}

/// (plain, traced) runs of `sh -c SCRIPT`.
fn both(script: &str, ready: &str, timeout_ms: u64) -> (Sample, Sample) {
    coldstart_core::Lab::open().expect("a Lab");
    let target = Target::new(vec!["sh".into(), "-c".into(), script.into()], Vec::new(), None).expect("sh");
    let readiness = Readiness::parse(ready).expect("readiness");
    let plain = run_once(&target, &readiness, &opts(timeout_ms), id()).expect("plain run");
    let traced = run_traced(&target, &readiness, &opts(timeout_ms), id()).expect("traced run");
    (plain, traced)
}

fn a_clean_exit_is_ready_in_both_and_only_the_traced_run_has_a_trace() {
    let (plain, traced) = both("exit 0", "exit", 30_000);
    assert_eq!(plain.outcome, Outcome::Ready, "{plain:?}");
    assert_eq!(traced.outcome, Outcome::Ready, "{traced:?}");
    assert!(plain.trace.is_none());
    let trace = traced.trace.as_ref().expect("the traced run's trace");
    assert!(trace
        .events
        .iter()
        .any(|e| matches!(e.event, coldstart_core::trace::Event::Exec { .. })));
    // Ready at the root's exit, which the tracer saw before the pidfd said so.
    let exit_ns = trace
        .events
        .iter()
        .filter(|e| e.pid == trace.root_pid && matches!(e.event, coldstart_core::trace::Event::Exit { .. }))
        .map(|e| e.ts_ns - trace.t0_ns)
        .max()
        .expect("the root's exit event");
    let ready = traced.ready_ns.expect("ready time");
    assert!(
        exit_ns <= ready,
        "tracer's exit {exit_ns} ns after ready {ready} ns"
    );
}

fn a_crash_is_a_failure_in_both_with_its_status_and_output() {
    let (plain, traced) = both("echo about to fail; exit 3", "exit", 30_000);
    for s in [&plain, &traced] {
        assert_eq!(s.outcome, Outcome::ExitFailure, "{s:?}");
        assert_eq!(s.exit_status.as_ref().and_then(|x| x.code), Some(3), "{s:?}");
        assert!(s.ready_ns.is_none());
        assert!(s.output_tail.iter().any(|l| l.contains("about to fail")), "{s:?}");
    }
}

fn log_readiness_and_timeouts_end_alike() {
    let (plain, traced) = both("echo booting; echo ready now; sleep 30", "log:ready now", 30_000);
    assert_eq!(plain.outcome, Outcome::Ready, "{plain:?}");
    assert_eq!(traced.outcome, Outcome::Ready, "{traced:?}");
    let (plain, traced) = both("sleep 30", "log:never printed", 300);
    assert_eq!(plain.outcome, Outcome::Timeout, "{plain:?}");
    assert_eq!(traced.outcome, Outcome::Timeout, "{traced:?}");
}

/// A root that fails before ready ends the run at once, traced or not, and
/// whether or not it left a child running: "exited before ready", not a timeout.
fn a_root_failing_before_ready_ends_the_run_at_once() {
    let port = testkit::free_port();
    let ready = format!("tcp:127.0.0.1:{port}");
    for script in ["echo giving up; exit 1", "sleep 30 & echo giving up; exit 1"] {
        let started = std::time::Instant::now();
        let (plain, traced) = both(script, &ready, 60_000);
        for s in [&plain, &traced] {
            assert_eq!(s.outcome, Outcome::ExitedEarly, "{script}: {s:?}");
            assert_eq!(
                s.exit_status.as_ref().and_then(|x| x.code),
                Some(1),
                "{script}: {s:?}"
            );
            assert!(s.output_tail.iter().any(|l| l.contains("giving up")), "{s:?}");
        }
        // Both runs together, far from the 60 s timeout either would wait out.
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{script}");
    }
}

/// The same command's minor faults as wait4 reports them to a plain parent
/// (std's spawn + wait4): the oracle for the figure the tracer's wait4 gives.
#[allow(clippy::zombie_processes)] // reaped by the wait4 below, which std cannot see
fn faults_by_wait4(script: &str) -> u64 {
    let child = std::process::Command::new("sh")
        .args(["-c", script])
        .spawn()
        .expect("spawn sh");
    let mut status = 0;
    // SAFETY: all-zero is a valid rusage; wait4 fills it for our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for the child we just spawned, writing into our locals.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut ru) };
    assert_eq!(pid, child.id() as i32);
    ru.ru_minflt as u64
}

fn a_traced_exit_keeps_the_roots_resource_use() {
    let script = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done";
    let (_, traced) = both(script, "exit", 60_000);
    assert_eq!(traced.outcome, Outcome::Ready, "{traced:?}");
    assert!(traced.usage.cpu_total_us > 0, "{:?}", traced.usage);
    let oracle = faults_by_wait4(script);
    let ratio = traced.usage.minor_faults as f64 / oracle.max(1) as f64;
    assert!(
        (0.5..2.0).contains(&ratio),
        "minor faults: traced run {} vs wait4 of the same command {oracle}",
        traced.usage.minor_faults
    );
}

fn a_traced_root_that_exits_at_once_is_ready_every_time() {
    // The root can be gone (and reaped by the tracer thread) before the engine
    // looks at it: its pidfd, opened before it ran, still says it exited.
    coldstart_core::Lab::open().expect("a Lab");
    let target = Target::new(vec!["true".into()], Vec::new(), None).expect("true");
    for round in 0..40 {
        let s = run_traced(&target, &Readiness::Exit, &opts(30_000), RunId { round, ..id() })
            .expect("traced run");
        assert_eq!(s.outcome, Outcome::Ready, "round {round}: {s:?}");
    }
}

fn traced_listen_readiness_is_the_tracers_first_listen() {
    let Some(lagprobe) = testkit::c_example("lagprobe", &["-O2"]) else {
        return;
    };
    coldstart_core::Lab::open().expect("a Lab");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("instants");
    let port = testkit::free_port().to_string();
    // lagprobe sleeps this long before it listens: a lower bound no probe can
    // beat (it writes its own instants only after listen(2), when a run that
    // ends at the listen has already killed it).
    let delay_ms: u64 = 150;
    let target = Target::new(
        vec![lagprobe.display().to_string(), port, file.display().to_string()],
        vec![("COLDSTART_EXAMPLE_DELAY_MS".into(), delay_ms.to_string())],
        None,
    )
    .expect("lagprobe");
    let s = run_traced(&target, &Readiness::Listen, &opts(30_000), id()).expect("traced run");
    assert_eq!(s.outcome, Outcome::Ready, "{s:?}");
    let ready = s.ready_ns.expect("ready");
    assert!(
        ready >= delay_ms * 1_000_000,
        "ready at {ready} ns, before the target's {delay_ms} ms sleep ended"
    );
    // The ready instant is the tracer's listen stop itself, not a later poll.
    let trace = s.trace.as_ref().expect("trace");
    let listen_at = trace
        .events
        .iter()
        .find(|e| matches!(e.event, coldstart_core::trace::Event::Listen { .. }))
        .map(|e| e.ts_ns - s.t0_mono_ns)
        .expect("a listen event");
    assert_eq!(listen_at, ready);
}

fn main() {
    let tests: [(&str, fn()); 7] = [
        (
            "a_root_failing_before_ready_ends_the_run_at_once",
            a_root_failing_before_ready_ends_the_run_at_once,
        ),
        (
            "a_clean_exit_is_ready_in_both_and_only_the_traced_run_has_a_trace",
            a_clean_exit_is_ready_in_both_and_only_the_traced_run_has_a_trace,
        ),
        (
            "a_crash_is_a_failure_in_both_with_its_status_and_output",
            a_crash_is_a_failure_in_both_with_its_status_and_output,
        ),
        (
            "log_readiness_and_timeouts_end_alike",
            log_readiness_and_timeouts_end_alike,
        ),
        (
            "a_traced_exit_keeps_the_roots_resource_use",
            a_traced_exit_keeps_the_roots_resource_use,
        ),
        (
            "a_traced_root_that_exits_at_once_is_ready_every_time",
            a_traced_root_that_exits_at_once_is_ready_every_time,
        ),
        (
            "traced_listen_readiness_is_the_tracers_first_listen",
            traced_listen_readiness_is_the_tracers_first_listen,
        ),
    ];
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    for (name, test) in tests {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        test();
        println!("test {name} ... ok");
    }
}
