//! Ctrl-C / SIGTERM / SIGHUP of coldstart itself: the running target's group is
//! killed at once and the run loop is told to clean up and stop.

use anyhow::{Context, Result};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Process groups of the current run (a Lambda run has one per extension plus the
/// runtime); 0 marks a free slot.
static CURRENT_PGIDS: [AtomicI32; 16] = [const { AtomicI32::new(0) }; 16];

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
        for slot in &CURRENT_PGIDS {
            let pgid = slot.load(Ordering::SeqCst);
            if pgid > 0 {
                // SAFETY: signalling a process group we created for the current run.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
            }
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

/// Guard that registers one of the current run's process groups for the handler.
pub struct Current {
    slot: Option<usize>,
}

impl Current {
    pub fn set(pgid: i32) -> Current {
        let slot = CURRENT_PGIDS.iter().position(|s| {
            s.compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        });
        if interrupted() {
            // SAFETY: as in the handler; covers an interrupt that raced the spawn.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
        Current { slot }
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            CURRENT_PGIDS[i].store(0, Ordering::SeqCst);
        }
    }
}
