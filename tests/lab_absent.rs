//! An embedder that uses the library without opening a `coldstart_core::Lab`: nothing
//! process-wide happens behind its back, and starting a target fails with an
//! error naming the fix (not a run whose cleanup silently cannot be trusted).
//! Its own test binary, so no other test opens a Lab in this process.

use coldstart_core::run::{run_once, RunId, RunOptions};
use coldstart_core::sample::ExitPolicy;
use coldstart_core::target::{Readiness, Target};
use std::time::Duration;

fn subreaper() -> i32 {
    let mut flag: libc::c_int = -1;
    // SAFETY: PR_GET_CHILD_SUBREAPER writes one int to the pointer we pass.
    let r = unsafe {
        libc::prctl(
            libc::PR_GET_CHILD_SUBREAPER,
            &mut flag as *mut libc::c_int,
            0,
            0,
            0,
        )
    };
    assert_eq!(r, 0, "prctl(PR_GET_CHILD_SUBREAPER)");
    flag
}

/// SIGINT's disposition: SIG_DFL, or SIG_IGN when the test was started in the
/// background of a shell without job control (which ignores it for its children).
fn sigint_disposition() -> libc::sighandler_t {
    // SAFETY: a zeroed sigaction is a valid out-parameter; a null new action only reads.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        assert_eq!(libc::sigaction(libc::SIGINT, std::ptr::null(), &mut old), 0);
        old.sa_sigaction
    }
}

#[test]
fn without_a_lab_running_a_target_is_a_clear_error_and_nothing_global_changed() {
    let sigint_before = sigint_disposition();
    let target = Target::new(vec!["true".into()], Vec::new(), None).expect("`true` on PATH");
    let opts = RunOptions {
        poll_interval: Duration::from_millis(1),
        grace: Duration::from_millis(100),
        tail_lines: 5,
        exit_policy: ExitPolicy::Codes(vec![0]),
        ..RunOptions::new(Duration::from_secs(10))
    };
    let id = RunId {
        variant: 0,
        round: 0,
        warmup: false,
    };
    let err = run_once(&target, &Readiness::Exit, &opts, id).expect_err("a run without a Lab must fail");
    let msg = format!("{err:#}");
    assert!(msg.contains("Lab::open()"), "the error names the fix: {msg}");
    assert!(coldstart_core::Lab::get().is_err());

    // The library did nothing process-wide on its own.
    assert_eq!(subreaper(), 0, "not a subreaper without a Lab");
    assert!(
        [libc::SIG_DFL, libc::SIG_IGN].contains(&sigint_before),
        "no handler of ours before the run either"
    );
    assert_eq!(
        sigint_disposition(),
        sigint_before,
        "no SIGINT handler without a Lab"
    );
    assert!(
        std::env::var_os("COLDSTART_FD").is_none(),
        "environment untouched"
    );
    // And no child was started (nothing to reap, nothing left behind).
    // SAFETY: WNOHANG poll of our own children; ECHILD means we have none.
    let r = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) };
    assert!(r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD));
}
