//! Who may reap, and the one reaper of a single exited child.
//!
//! The reaping rule: while a trace session is live no thread may `waitpid(-1)`
//! (Linux lets any thread of the tracer's process collect a tracee's ptrace stop,
//! and a stolen stop hangs the tracee). A live session holds a [`TraceGuard`]
//! (the read side of one lock) and every `waitpid(-1)` needs a [`Reaper`] (the
//! write side), so a reaper waits until every session has finished. The lock is
//! the Lab's ([`Reaping`]); it lives here, below the Lab, so that the signal
//! thread and the cleanup can hold it without depending on the Lab itself.
//!
//! [`reap_exited`] collects one child by pid (never a tracee's stop: it names
//! the process) once its pidfd said it exited: the run engine's plain launches
//! and lambda's runtime and extension processes are all reaped through it.

use crate::sample::ExitStatus;
use anyhow::{bail, Result};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

thread_local! {
    /// Trace guards held by this thread: reaping from here would wait for itself.
    static GUARDS_HERE: Cell<usize> = const { Cell::new(0) };
}

/// The reaping lock. Read: a live trace session. Write: a `waitpid(-1)`.
pub struct Reaping {
    lock: RwLock<()>,
    /// Reapers blocked on the lock (tests and diagnostics observe it).
    waiting: AtomicUsize,
}

impl Default for Reaping {
    fn default() -> Self {
        Reaping::new()
    }
}

impl Reaping {
    pub const fn new() -> Reaping {
        Reaping {
            lock: RwLock::new(()),
            waiting: AtomicUsize::new(0),
        }
    }

    /// Held for as long as a trace session is live: reapers wait for it.
    /// Take it before starting the session (its tracee stops from the first instant).
    pub fn trace_guard(&self) -> TraceGuard<'_> {
        let lock = self.lock.read().unwrap_or_else(|p| p.into_inner());
        GUARDS_HERE.with(|n| n.set(n.get() + 1));
        TraceGuard { _lock: lock }
    }

    /// The right to `waitpid(-1)`: blocks until no trace session is live. An
    /// error if this very thread holds a trace guard (it would wait for itself).
    pub fn reaper(&self) -> Result<Reaper<'_>> {
        if GUARDS_HERE.with(Cell::get) > 0 {
            bail!("reaping while this thread holds a live trace session would deadlock: finish the session first");
        }
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let lock = self.lock.write().unwrap_or_else(|p| p.into_inner());
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        Ok(Reaper { _lock: lock })
    }

    /// A reaper if no trace session is live now (the second-signal path, which
    /// must not wait for a run loop that may be stuck).
    pub fn try_reaper(&self) -> Option<Reaper<'_>> {
        if GUARDS_HERE.with(Cell::get) > 0 {
            return None;
        }
        match self.lock.try_write() {
            Ok(lock) => Some(Reaper { _lock: lock }),
            Err(TryLockError::Poisoned(p)) => Some(Reaper {
                _lock: p.into_inner(),
            }),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// How many threads wait in [`Reaping::reaper`] right now.
    pub fn reapers_waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }
}

/// A live trace session's hold on the reaping lock. Not `Send`: the count of
/// guards per thread (which turns a self-deadlock into an error) follows it.
pub struct TraceGuard<'lab> {
    _lock: RwLockReadGuard<'lab, ()>,
}

impl Drop for TraceGuard<'_> {
    fn drop(&mut self) {
        GUARDS_HERE.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

/// The right to `waitpid(-1)`: while one exists no trace session is live.
/// Every reaping function of `launch::tree` takes one.
pub struct Reaper<'lab> {
    _lock: RwLockWriteGuard<'lab, ()>,
}

impl Reaper<'_> {
    /// Reap every child of ours that has exited (orphans reparented to us included).
    pub fn reap_exited(&self) {
        while let Ok(Some(_)) = coldstart_sys::process::try_reap_any() {}
    }
}

/// What an exited child left when it was reaped.
#[derive(Clone)]
pub struct Reaped {
    pub status: ExitStatus,
    pub rusage: libc::rusage,
}

/// Reap `pid`, a child of ours whose pidfd said it has exited, with its rusage.
/// None when there is nothing to collect (something else reaped it first): its
/// status is then unknown. Never blocks, so an async task may call it.
pub fn reap_exited(pid: i32) -> Option<Reaped> {
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid value for wait4 to overwrite.
    let mut rusage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: pid names one child of ours (or none: wait4 fails harmlessly);
        // status and rusage are valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut rusage) };
        if r == pid {
            return Some(Reaped {
                status: ExitStatus::from_wait(status),
                rusage,
            });
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return None;
    }
}
