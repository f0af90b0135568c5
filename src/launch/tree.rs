//! The process tree of a run, found through procfs, and its cleanup.
//!
//! coldstart sets PR_SET_CHILD_SUBREAPER on itself, so a daemon that double-forks
//! and whose parent exits is reparented to us rather than to init. A process of
//! the run is therefore always one of: the target, a descendant of it, a member of
//! its process group, or a (descendant of a) process whose parent is coldstart.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

#[derive(Debug, Clone, Copy)]
pub struct ProcStat {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    pub zombie: bool,
}

/// Parse the fields we need from /proc/PID/stat. The comm field may hold spaces
/// and parentheses, so split after the last ')'.
pub fn parse_stat(text: &str) -> Option<(i32, Vec<&str>)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let fields: Vec<&str> = text.get(close + 2..)?.split_whitespace().collect();
    Some((pid, fields))
}

fn read_stat(pid: &str) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (pid, f) = parse_stat(&text)?;
    // After comm: state(0) ppid(1) pgrp(2)
    Some(ProcStat {
        pid,
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        zombie: *f.first()? == "Z",
    })
}

fn all_processes() -> Vec<ProcStat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name();
            let name = name.to_str()?;
            if name.bytes().all(|b| b.is_ascii_digit()) {
                read_stat(name)
            } else {
                None
            }
        })
        .collect()
}

/// Every live process belonging to the run rooted at `root` (root included if alive).
pub fn members(root: i32) -> Vec<i32> {
    let me = std::process::id() as i32;
    let procs = all_processes();
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for p in &procs {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut found: HashSet<i32> = HashSet::new();
    let mut stack: Vec<i32> = procs
        .iter()
        .filter(|p| p.pid == root || p.pgrp == root || (p.ppid == me && p.pid != me))
        .map(|p| p.pid)
        .collect();
    while let Some(pid) = stack.pop() {
        if found.insert(pid) {
            if let Some(kids) = children.get(&pid) {
                stack.extend(kids);
            }
        }
    }
    let zombies: HashSet<i32> = procs.iter().filter(|p| p.zombie).map(|p| p.pid).collect();
    found.into_iter().filter(|p| !zombies.contains(p)).collect()
}

/// Cheap check used after the target exited on its own: nothing is left when its
/// process group is empty and coldstart has no (reparented) children.
pub fn nothing_left(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks existence.
    let group_empty = unsafe { libc::kill(-pgid, 0) } != 0;
    if !group_empty {
        return false;
    }
    reap_children();
    // SAFETY: WNOHANG poll of our own children; ECHILD means we have none.
    let r = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) };
    r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD)
}

/// Reap every child of ours that has exited (orphans reparented to us included).
pub fn reap_children() {
    loop {
        // SAFETY: non-blocking wait for any child; no status needed.
        let r = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) };
        if r <= 0 {
            break;
        }
    }
}

/// SIGKILL everything of the run and reap it; repeats until the tree is empty,
/// since a process may fork while we scan.
pub fn kill_all(root: i32) {
    if nothing_left(root) {
        return;
    }
    for attempt in 0..200 {
        // SAFETY: signalling a process group we created.
        unsafe { libc::kill(-root, libc::SIGKILL) };
        let alive = members(root);
        if alive.is_empty() {
            break;
        }
        for pid in &alive {
            // SAFETY: these pids belong to the run (see `members`).
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        reap_children();
        std::thread::sleep(Duration::from_micros(if attempt < 10 { 200 } else { 5_000 }));
    }
    reap_children();
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
