//! Ctrl-C / SIGTERM / SIGHUP of coldstart itself: the running target's group is
//! killed at once and the run loop is told to clean up and stop.

use anyhow::{Context, Result};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static CURRENT_PGID: AtomicI32 = AtomicI32::new(0);

/// Install once at startup: the handler, and the child-subreaper attribute that
/// brings double-forked daemons back to us for cleanup.
pub fn install() -> Result<()> {
    // SAFETY: prctl with constant arguments.
    let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if r != 0 {
        return Err(std::io::Error::last_os_error()).context("prctl(PR_SET_CHILD_SUBREAPER)");
    }
    ctrlc::set_handler(|| {
        let again = INTERRUPTED.swap(true, Ordering::SeqCst);
        let pgid = CURRENT_PGID.load(Ordering::SeqCst);
        if pgid > 0 {
            // SAFETY: signalling the process group we created for the current run.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
        if again {
            eprintln!("coldstart: interrupted twice, exiting now");
            std::process::exit(130);
        }
    })
    .context("installing the Ctrl-C handler")
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Guard that registers the current run's process group for the handler.
pub struct Current;

impl Current {
    pub fn set(pgid: i32) -> Current {
        CURRENT_PGID.store(pgid, Ordering::SeqCst);
        if interrupted() {
            // SAFETY: as in the handler; covers an interrupt that raced the spawn.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
        Current
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        CURRENT_PGID.store(0, Ordering::SeqCst);
    }
}
