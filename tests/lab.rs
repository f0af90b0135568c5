//! The Lab's reaping rule, enforced by types: a live trace session holds a guard,
//! and `waitpid(-1)` (reaping, `kill_all`) waits until every session is finished.

use coldstart_core::launch::traced;
use coldstart_core::target::Target;
use coldstart_core::Lab;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The Lab is per process and its reaper takes every child: these tests share
/// it, so they run one at a time (a second test's session or reaper would be
/// counted by the first one's checks).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// `sleep 60` under the tracer: a tree that stays live until it is killed.
fn sleeper() -> coldstart_core::trace::TraceOptions {
    let target = Target::new(vec!["sleep".into(), "60".into()], Vec::new(), None).expect("`sleep` on PATH");
    traced::options(&target).expect("trace options").0
}

/// Wait (bounded) until `pred` holds: the event, not a guessed delay.
fn wait_until(limit: Duration, pred: impl Fn() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if pred() {
            return true;
        }
        std::thread::yield_now();
    }
    pred()
}

#[test]
fn reaping_waits_until_the_trace_session_is_finished() {
    let _one = one_at_a_time();
    let lab = Lab::open().expect("Lab::open");
    let opts = sleeper();
    let session = traced::start(lab, &opts).expect("tracing `sleep` (ptrace allowed?)");
    let root = session.root_pid();
    let order = Arc::new(Mutex::new(Vec::<&str>::new()));
    let (tx, rx) = mpsc::channel();
    let reaper_order = Arc::clone(&order);
    let reaper = std::thread::spawn(move || {
        let lab = Lab::get().expect("the Lab is open");
        let gone = lab.kill_all(root).expect("another thread may reap");
        reaper_order.lock().unwrap().push("reaped");
        tx.send(gone).unwrap();
    });
    assert!(
        wait_until(Duration::from_secs(10), || lab.reapers_waiting() == 1),
        "the reaper thread never reached the lock"
    );
    // The reaper is at the lock while the session is live. Without the guard its
    // kill_all (procfs walk, a few waitpids) ends in well under a millisecond;
    // with it, it cannot end at all until the session is finished.
    assert_eq!(
        rx.recv_timeout(Duration::from_millis(300)),
        Err(RecvTimeoutError::Timeout),
        "kill_all ran while a trace session was live"
    );
    assert!(!session.status().exited, "the tracee is still live and traced");
    order.lock().unwrap().push("finishing");
    let trace = session.finish().expect("finishing the session");
    assert!(trace.killed, "finish killed the sleeper");
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(30)),
        Ok(true),
        "kill_all left nothing"
    );
    reaper.join().unwrap();
    assert_eq!(*order.lock().unwrap(), ["finishing", "reaped"]);
}

#[test]
fn reaping_from_the_thread_that_holds_the_session_is_an_error_not_a_hang() {
    let _one = one_at_a_time();
    let lab = Lab::open().expect("Lab::open");
    let opts = sleeper();
    let session = traced::start(lab, &opts).expect("tracing `sleep` (ptrace allowed?)");
    let err = lab.reaper().err().expect("reaping here would wait for itself");
    assert!(format!("{err:#}").contains("finish the session first"), "{err:#}");
    assert!(lab.try_reaper().is_none());
    // The compatibility function says no (with a line on stderr) instead of hanging.
    assert!(!coldstart_core::launch::tree::kill_all(session.root_pid()));
    let root = session.root_pid();
    session.finish().expect("finishing the session");
    assert_eq!(lab.kill_all(root).ok(), Some(true), "after finish, reaping works");
}

#[test]
fn the_lab_reserves_the_checkpoint_fd_without_touching_the_environment() {
    let _one = one_at_a_time();
    let lab = Lab::open().expect("Lab::open");
    assert!(std::ptr::eq(lab, Lab::open().unwrap()), "one Lab per process");
    assert!(lab.checkpoint_fd() >= 100);
    // SAFETY: F_GETFD only reads the descriptor's flags.
    let flags = unsafe { libc::fcntl(lab.checkpoint_fd(), libc::F_GETFD) };
    assert!(
        flags >= 0 && flags & libc::FD_CLOEXEC != 0,
        "open and close-on-exec between runs"
    );
    assert!(std::env::var_os("COLDSTART_FD").is_none(), "no set_var");
    let mut flag: libc::c_int = 0;
    // SAFETY: PR_GET_CHILD_SUBREAPER writes one int to the pointer we pass.
    unsafe {
        libc::prctl(
            libc::PR_GET_CHILD_SUBREAPER,
            &mut flag as *mut libc::c_int,
            0,
            0,
            0,
        )
    };
    assert_eq!(flag, 1, "the Lab made us a subreaper");
}
