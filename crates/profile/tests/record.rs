//! The recorder on a real process tree: a shell that forks a busy child.

use coldstart_profile::{Recorder, Symbols, DEFAULT_FREQ_HZ};

fn now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[test]
fn a_forked_child_after_exec_is_sampled_and_named() {
    let mut rec = match Recorder::start(DEFAULT_FREQ_HZ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("SKIP: perf_event_open refused here: {e}");
            assert!(
                std::env::var_os("COLDSTART_REQUIRE_PERF").is_none(),
                "perf required: {e}"
            );
            return;
        }
    };
    let t0 = now();
    // The busy loop runs in a forked subshell `( … )`: only inheritance reaches it.
    // The shell then loops too, so that it is sampled however busy the machine is
    // (a shell that only waits may take no sample at all).
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(
            "(i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done); \
             i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done",
        )
        .status()
        .unwrap();
    assert!(status.success());
    let t1 = now();
    rec.stop();
    let recording = rec.finish();
    let mut syms = Symbols::new();
    let r = recording.resolve(&mut syms, t0, t1);
    assert!(r.stacks.len() > 20, "{} samples", r.stacks.len());
    let pids: std::collections::BTreeSet<u32> = r.stacks.iter().map(|s| s.pid).collect();
    assert!(
        pids.len() >= 2,
        "the forked subshell is sampled too: pids {pids:?}"
    );
    // The shell is a real ELF: most of its user frames are resolved to a
    // symbol, or to their module (`[dash]`: Debian's dash is stripped, so its
    // own code has no names — about half the samples here), not `[unknown]`;
    // and the libraries' symbols are named. Samples taken in the kernel alone
    // (fork, exec, page faults) have no user frame, so they are not counted.
    let user = |f: &String| !f.ends_with("_[k]");
    let with_user: Vec<_> = r
        .stacks
        .iter()
        .filter(|s| s.frames.iter().skip(1).any(user))
        .collect();
    let named = with_user
        .iter()
        .filter(|s| s.frames.iter().skip(1).any(|f| user(f) && f != "[unknown]"))
        .count();
    let symbols = with_user
        .iter()
        .filter(|s| s.frames.iter().skip(1).any(|f| user(f) && !f.starts_with('[')))
        .count();
    assert!(symbols > 0, "no user frame named by a symbol");
    eprintln!(
        "{} samples, {named} with a named user frame; e.g. {:?}",
        r.stacks.len(),
        r.stacks.last()
    );
    assert!(
        named * 2 > with_user.len(),
        "{named} of {} samples with a user frame",
        with_user.len()
    );
    assert!(
        r.stacks.iter().all(|s| s.frames[0] == "sh"),
        "{:?}",
        r.stacks[0].frames
    );
}
