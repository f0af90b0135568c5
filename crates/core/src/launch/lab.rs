//! The process-wide part of coldstart, owned by one handle.
//!
//! Running targets soundly needs state that belongs to the whole process, not to a
//! run: the reserved COLDSTART_FD number, the per-invocation cgroup parent and its
//! watchdog, the child-subreaper attribute (orphans come back to us to be reaped),
//! signal handlers that kill the running trees, and the right to `waitpid(-1)`.
//! None of it exists until [`Lab::open`]: an embedder that only reads the store or
//! computes statistics inherits no side effects. Functions that start targets
//! refuse to run without a Lab (the "nothing left" test of the cleanup is only
//! sound for a subreaper), with an error that says so.
//!
//! The reaping rule (see `reaping`): while a trace session is live no thread may
//! `waitpid(-1)`; the Lab owns the lock that enforces it.
//!
//! There is one Lab per process because what it owns is per process (signal
//! dispositions, the subreaper attribute): `open` sets it up on its first call and
//! returns the same Lab afterwards. Code that starts targets takes a `&Lab`;
//! [`Lab::get`] is the checked accessor for the library's entry points that an
//! embedder calls without one (`run::run_once` and the like).

use super::reaping::Reaping;
use super::{cgroup, signals, watchdog};
use anyhow::{anyhow, Context, Result};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Mutex, OnceLock};

// Where an embedder found them before `reaping` existed.
pub use super::reaping::{Reaper, TraceGuard};

static LAB: OnceLock<Lab> = OnceLock::new();

/// The process-wide setup that running targets needs. See the module docs.
pub struct Lab {
    /// /dev/null between runs, close-on-exec; a run's checkpoint pipe during it.
    checkpoint_fd: OwnedFd,
    /// The watchdog's pipe: it acts when this end closes (our death).
    _watchdog: Option<OwnedFd>,
    /// Read: a live trace session. Write: a `waitpid(-1)`.
    reaping: Reaping,
}

impl Lab {
    /// Set up the process for running targets, once; later calls return the same Lab.
    ///
    /// Call it early in `main`, before starting threads: it forks the watchdog,
    /// which runs ordinary Rust code in the child.
    pub fn open() -> Result<&'static Lab> {
        static OPENING: Mutex<()> = Mutex::new(());
        let _one = OPENING.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(lab) = LAB.get() {
            return Ok(lab);
        }
        let checkpoint_fd = reserve_checkpoint_fd()?;
        cgroup::init();
        // The watchdog must be forked before we become a subreaper (see watchdog).
        let dog = match watchdog::start(cgroup::invocation_dirs()) {
            Ok(fd) => Some(fd),
            Err(e) => {
                crate::out::errln!(
                    "coldstart: warning: no watchdog ({e}): if coldstart is SIGKILLed, its targets survive"
                );
                None
            }
        };
        // SAFETY: prctl with constant arguments.
        if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
            return Err(std::io::Error::last_os_error()).context("prctl(PR_SET_CHILD_SUBREAPER)");
        }
        let lab = LAB.get_or_init(|| Lab {
            checkpoint_fd,
            _watchdog: dog,
            reaping: Reaping::new(),
        });
        // Last: the signal thread reaps under the Lab's lock, so the Lab exists first.
        signals::install(&lab.reaping)?;
        Ok(lab)
    }

    /// The Lab, or an error naming the fix when [`Lab::open`] was never called.
    pub fn get() -> Result<&'static Lab> {
        LAB.get().ok_or_else(|| {
            anyhow!(
                "no coldstart::Lab: call coldstart::Lab::open() once at the start of main before \
                 running targets (it makes coldstart a subreaper and installs the signal handling \
                 that cleanup relies on)"
            )
        })
    }

    /// The fd number targets find in COLDSTART_FD (≥ 100).
    pub fn checkpoint_fd(&self) -> RawFd {
        self.checkpoint_fd.as_raw_fd()
    }

    /// Ctrl-C, SIGTERM, SIGHUP or SIGQUIT reached coldstart.
    pub fn interrupted(&self) -> bool {
        signals::interrupted()
    }

    /// The exit code after an interrupt: 131 for SIGQUIT, else 130.
    pub fn exit_code(&self) -> i32 {
        signals::exit_code()
    }

    /// Held for as long as a trace session is live: reapers wait for it.
    /// Take it before starting the session (its tracee stops from the first instant).
    pub fn trace_guard(&self) -> TraceGuard<'_> {
        self.reaping.trace_guard()
    }

    /// The right to `waitpid(-1)`: blocks until no trace session is live. An
    /// error if this very thread holds a trace guard (it would wait for itself).
    pub fn reaper(&self) -> Result<Reaper<'_>> {
        self.reaping.reaper()
    }

    /// A reaper if no trace session is live now.
    pub fn try_reaper(&self) -> Option<Reaper<'_>> {
        self.reaping.try_reaper()
    }

    /// How many threads wait in [`Lab::reaper`] right now.
    pub fn reapers_waiting(&self) -> usize {
        self.reaping.reapers_waiting()
    }
    // `kill_all` and `nothing_left` are in `tree`, with the rest of the cleanup.
}

/// An fd ≥ 100 holding /dev/null, close-on-exec: a number no target's stdio or
/// ordinary opens are likely to collide with.
fn reserve_checkpoint_fd() -> Result<OwnedFd> {
    let devnull = File::open("/dev/null").context("opening /dev/null")?;
    // SAFETY: F_DUPFD_CLOEXEC on a descriptor we own; the result is a new fd.
    let fd = unsafe { libc::fcntl(devnull.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 100) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()).context("reserving the checkpoint fd");
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
