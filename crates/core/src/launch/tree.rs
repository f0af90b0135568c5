//! The process tree of a run, found through procfs, and its cleanup.
//!
//! coldstart sets PR_SET_CHILD_SUBREAPER on itself, so a daemon that double-forks
//! and whose parent exits is reparented to us rather than to init. Once the main
//! process is gone, every surviving subtree of the run therefore hangs off a child
//! of coldstart: "our process group is empty and waitpid says we have no child"
//! is a sound test that nothing is left. Finding the processes to kill uses the
//! kernel's per-thread children lists, which can miss a process forked or
//! reparented mid-read (proc(5)), so killing repeats until that test passes.
//!
//! Every `waitpid(-1)` here takes a [`Reaper`]: while a trace session is live none
//! can exist (see `lab`), so no ptrace stop is ever stolen from the tracer.

use crate::launch::lab::{Lab, Reaper};
use std::time::Duration;

/// Parse the fields we need from /proc/PID/stat. The comm field may hold spaces
/// and parentheses, so split after the last ')'.
pub fn parse_stat(text: &str) -> Option<(i32, Vec<&str>)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let fields: Vec<&str> = text.get(close + 2..)?.split_whitespace().collect();
    Some((pid, fields))
}

/// Children of every thread of `pid` ("self" allowed).
fn children_of(pid: &str) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut kids = Vec::new();
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            kids.extend(text.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
        }
    }
    kids
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|t| parse_stat(&t).map(|(_, f)| f.first().is_some_and(|s| *s != "Z" && *s != "X")))
        .unwrap_or(false)
}

/// Every live process of the run rooted at `root`: root and its descendants, and
/// the subtrees reparented to coldstart (whose only children are run processes).
pub fn members(root: i32) -> Vec<i32> {
    let mut stack = children_of("self");
    stack.push(root);
    let mut seen = std::collections::HashSet::new();
    let mut live = Vec::new();
    while let Some(pid) = stack.pop() {
        if !seen.insert(pid) {
            continue;
        }
        if alive(pid) {
            live.push(pid);
        }
        stack.extend(children_of(&pid.to_string()));
    }
    live
}

/// Nothing of the run is left: its process group is empty and coldstart has no
/// child at all (exited ones are reaped here).
pub fn nothing_left_with(reaper: &Reaper, pgid: i32) -> bool {
    let group_empty = coldstart_sys::signal::kill_group(pgid, 0).is_err();
    if !group_empty {
        return false;
    }
    reap_children(reaper);
    // ECHILD: we have no child at all (no trace session is live: we hold a Reaper).
    matches!(coldstart_sys::process::try_reap_any(), Err(e) if e.raw_os_error() == Some(libc::ECHILD))
}

/// Reap every child of ours that has exited (orphans reparented to us included);
/// the Reaper proves no trace session is live.
pub fn reap_children(_: &Reaper) {
    while let Ok(Some(_)) = coldstart_sys::process::try_reap_any() {}
}

/// SIGKILL everything of the run and reap it, until `nothing_left` holds.
/// Returns false if something survived every attempt (reported by the caller).
/// With per-run cgroups the kernel kills every process of every live run first
/// (like the process-group and procfs search below, that covers all of
/// coldstart's current targets, not only `root`'s).
pub fn kill_all_with(reaper: &Reaper, root: i32) -> bool {
    let cgroups_emptied = super::cgroup::kill_live_runs(Some(reaper));
    let tree_gone = kill_tree(reaper, root);
    cgroups_emptied && tree_gone
}

/// [`kill_all_with`] through the process's Lab (waits for live trace sessions).
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

/// [`nothing_left_with`] through the process's Lab; false (with a line on
/// stderr) when there is no Lab or this thread holds a trace session.
pub fn nothing_left(pgid: i32) -> bool {
    match Lab::get().and_then(Lab::reaper) {
        Ok(reaper) => nothing_left_with(&reaper, pgid),
        Err(e) => {
            crate::out::errln!("coldstart: error: cannot check process group {pgid}: {e:#}");
            false
        }
    }
}

/// Every descendant of coldstart (its targets and, through the subreaper
/// attribute, their orphans), SIGKILLed until none is alive or ~2 s passed.
pub fn kill_descendants() {
    for _ in 0..400 {
        let live = members_of_self();
        if live.is_empty() {
            return;
        }
        for pid in live {
            // Descendants of coldstart are target processes (the watchdog is
            // not one: it was double-forked before the subreaper attribute).
            let _ = coldstart_sys::signal::kill(pid, libc::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn members_of_self() -> Vec<i32> {
    let mut stack = children_of("self");
    let mut live = Vec::new();
    let mut seen = std::collections::HashSet::new();
    while let Some(pid) = stack.pop() {
        if seen.insert(pid) {
            if alive(pid) {
                live.push(pid);
            }
            stack.extend(children_of(&pid.to_string()));
        }
    }
    live
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
        reap_children(reaper);
        if attempt > 0 {
            std::thread::sleep(Duration::from_micros(if attempt < 20 { 200 } else { 5_000 }));
        }
    }
    nothing_left_with(reaper, root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_odd_comm() {
        let (pid, f) = parse_stat("42 (a) b (c)) S 7 42 42 0").unwrap();
        assert_eq!(pid, 42);
        assert_eq!(&f[..3], ["S", "7", "42"]);
    }
}
