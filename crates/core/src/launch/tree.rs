//! The process tree of a run, and its cleanup.
//!
//! coldstart sets PR_SET_CHILD_SUBREAPER on itself, so a daemon that double-forks
//! and whose parent exits is reparented to us rather than to init. Once the main
//! process is gone, every surviving subtree of the run therefore hangs off a child
//! of coldstart: "our process group is empty and waitpid says we have no child"
//! is a sound test that nothing is left. Finding the processes to kill uses the
//! kernel's per-thread children lists (`procfs`), which can miss a process forked
//! or reparented mid-read (proc(5)), so killing repeats until that test passes.
//!
//! Every `waitpid(-1)` here takes a [`Reaper`]: while a trace session is live none
//! can exist (see `reaping`), so no ptrace stop is ever stolen from the tracer.

use super::cgroup;
use super::lab::Lab;
pub use super::procfs::{members, parse_stat};
use super::reaping::Reaper;
use anyhow::Result;
use std::time::Duration;

/// Nothing of the run is left: its process group is empty and coldstart has no
/// child at all (exited ones are reaped here).
pub fn nothing_left_with(reaper: &Reaper, pgid: i32) -> bool {
    let group_empty = coldstart_sys::signal::kill_group(pgid, 0).is_err();
    if !group_empty {
        return false;
    }
    reaper.reap_exited();
    // ECHILD: we have no child at all (no trace session is live: we hold a Reaper).
    matches!(coldstart_sys::process::try_reap_any(), Err(e) if e.raw_os_error() == Some(libc::ECHILD))
}

/// Reap every child of ours that has exited (orphans reparented to us included);
/// the Reaper proves no trace session is live.
pub fn reap_children(reaper: &Reaper) {
    reaper.reap_exited()
}

/// SIGKILL everything of the run and reap it, until `nothing_left` holds.
/// Returns false if something survived every attempt (reported by the caller).
/// With per-run cgroups the kernel kills every process of every live run first
/// (like the process-group and procfs search below, that covers all of
/// coldstart's current targets, not only `root`'s).
pub fn kill_all_with(reaper: &Reaper, root: i32) -> bool {
    let cgroups_emptied = cgroup::kill_live_runs(Some(reaper));
    let tree_gone = kill_tree(reaper, root);
    cgroups_emptied && tree_gone
}

impl Reaper<'_> {
    /// See [`kill_all_with`].
    pub fn kill_all(&self, root: i32) -> bool {
        kill_all_with(self, root)
    }

    /// See [`nothing_left_with`].
    pub fn nothing_left(&self, pgid: i32) -> bool {
        nothing_left_with(self, pgid)
    }
}

// The Lab's cleanup is here, beside the rest of it: `lab` stays below `tree`.
impl Lab {
    /// SIGKILL and reap everything of the run rooted at `root` (see
    /// [`kill_all_with`]); waits for live trace sessions first. False if something
    /// survived every attempt.
    pub fn kill_all(&self, root: i32) -> Result<bool> {
        Ok(self.reaper()?.kill_all(root))
    }

    /// [`nothing_left_with`] for `pgid`; waits for live trace sessions first.
    pub fn nothing_left(&self, pgid: i32) -> Result<bool> {
        Ok(self.reaper()?.nothing_left(pgid))
    }
}

/// [`Lab::kill_all`] through the process's Lab, for an embedder that holds none.
/// False, with a line on stderr, when there is no Lab or this thread holds a
/// trace session: prefer `Lab::kill_all`, which returns that as an error.
pub fn kill_all(root: i32) -> bool {
    match Lab::get().and_then(|lab| lab.kill_all(root)) {
        Ok(gone) => gone,
        Err(e) => {
            crate::out::errln!("coldstart: error: cannot clean up process group {root}: {e:#}");
            false
        }
    }
}

/// [`Lab::kill_all`], false (with a line on stderr) when this thread holds a
/// trace session.
pub fn kill_all_in(lab: &Lab, root: i32) -> bool {
    match lab.kill_all(root) {
        Ok(gone) => gone,
        Err(e) => {
            crate::out::errln!("coldstart: error: cannot clean up process group {root}: {e:#}");
            false
        }
    }
}

/// [`Lab::nothing_left`], false (with a line on stderr) when this thread holds
/// a trace session.
pub fn nothing_left_in(lab: &Lab, pgid: i32) -> bool {
    match lab.nothing_left(pgid) {
        Ok(gone) => gone,
        Err(e) => {
            crate::out::errln!("coldstart: error: cannot check process group {pgid}: {e:#}");
            false
        }
    }
}

fn kill_tree(reaper: &Reaper, root: i32) -> bool {
    for attempt in 0..400 {
        if nothing_left_with(reaper, root) {
            return true;
        }
        // The process group we created for the run, then its members that left it.
        let _ = coldstart_sys::signal::kill_group(root, libc::SIGKILL);
        for pid in members(root) {
            // These pids belong to the run (see `members`).
            let _ = coldstart_sys::signal::kill(pid, libc::SIGKILL);
        }
        reaper.reap_exited();
        if attempt > 0 {
            std::thread::sleep(Duration::from_micros(if attempt < 20 { 200 } else { 5_000 }));
        }
    }
    nothing_left_with(reaper, root)
}
