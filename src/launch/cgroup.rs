//! A cgroup per run, entered by the child before it execs, so that every process
//! of the run — setsid'd and double-forked ones included — can be found and
//! killed by the kernel, even after coldstart itself died.
//!
//! Layout: one parent per coldstart invocation,
//! `<own cgroup>/coldstart-runs-<pid>-<its start time>`,
//! made at startup, and one child `run-<n>` per spawned target, made before time
//! zero and removed after the run's cleanup. The watchdog (see `watchdog`) kills
//! and removes the parent when coldstart dies by any means.
//!
//! Backends, best first:
//! - cgroup v2 with `cgroup.kill` (Linux ≥ 5.14): one write SIGKILLs every
//!   process of a cgroup and its descendants, atomically with respect to forks.
//! - cgroup v1 freezer: freeze, SIGKILL every pid listed, thaw, until empty (a
//!   frozen process cannot fork, so the list is complete).
//!
//! `COLDSTART_CGROUP=v2|v1|none` forces a backend (tests use it to cover the v1
//! and the fallback paths on a v2 machine).

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

const PREFIX: &str = "coldstart-runs-";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// cgroup v2 with `cgroup.kill`.
    V2,
    /// cgroup v1 freezer hierarchy.
    V1Freezer,
}

/// Where this invocation's run cgroups live.
#[derive(Debug, Clone)]
pub struct Parent {
    pub kind: Kind,
    /// `<own cgroup>/coldstart-runs-<pid>-<start time>`.
    pub dir: PathBuf,
}

static PARENT: OnceLock<Result<Parent, String>> = OnceLock::new();
static NEXT_RUN: AtomicU64 = AtomicU64::new(0);
/// Run cgroups made and not yet removed (removed by `tree::kill_all`).
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Find a hierarchy and make this invocation's parent cgroup. Called once at
/// startup, before the watchdog is forked (it is told the parent's path).
pub fn init() -> Option<&'static Parent> {
    PARENT.get_or_init(make_parent).as_ref().ok()
}

/// The parent, if `init` made one.
pub fn parent() -> Option<&'static Parent> {
    PARENT.get().and_then(|p| p.as_ref().ok())
}

/// Why there is no per-run cgroup (None when there is one, or `init` never ran).
pub fn unavailable_reason() -> Option<&'static str> {
    PARENT.get().and_then(|p| p.as_ref().err()).map(String::as_str)
}

fn make_parent() -> Result<Parent, String> {
    let forced = std::env::var("COLDSTART_CGROUP").unwrap_or_default();
    let mountinfo =
        std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| format!("reading mountinfo: {e}"))?;
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("reading /proc/self/cgroup: {e}"))?;
    let pid = std::process::id() as i32;
    let name = format!("{PREFIX}{pid}-{}", start_time(pid).unwrap_or(0));
    let mut errors = Vec::new();
    let candidates: &[Kind] = match forced.as_str() {
        "none" => return Err("COLDSTART_CGROUP=none".into()),
        "v1" => &[Kind::V1Freezer],
        "v2" => &[Kind::V2],
        _ => &[Kind::V2, Kind::V1Freezer],
    };
    for &kind in candidates {
        let Some(base) = own_dir(kind, &mountinfo, &own) else {
            errors.push(format!("no {} hierarchy mounted", kind_name(kind)));
            continue;
        };
        let dir = base.join(&name);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                errors.push(format!("cannot create {}: {e}", dir.display()));
                continue;
            }
        }
        if kind == Kind::V2 && !dir.join("cgroup.kill").exists() {
            std::fs::remove_dir(&dir).ok();
            errors.push("cgroup v2 has no cgroup.kill (Linux < 5.14)".into());
            continue;
        }
        return Ok(Parent { kind, dir });
    }
    Err(errors.join("; "))
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::V2 => "cgroup v2",
        Kind::V1Freezer => "cgroup v1 freezer",
    }
}

/// Our own cgroup's directory in the hierarchy of `kind`.
fn own_dir(kind: Kind, mountinfo: &str, own: &str) -> Option<PathBuf> {
    for line in mountinfo.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        let pre: Vec<&str> = pre.split_whitespace().collect();
        let post: Vec<&str> = post.split_whitespace().collect();
        let (Some(root), Some(mp), Some(fs)) = (pre.get(3), pre.get(4), post.first()) else {
            continue;
        };
        let path = match (kind, *fs) {
            (Kind::V2, "cgroup2") => own.lines().find_map(|l| l.strip_prefix("0::"))?,
            (Kind::V1Freezer, "cgroup")
                if post.get(2).is_some_and(|o| o.split(',').any(|c| c == "freezer")) =>
            {
                own.lines().find_map(|l| {
                    let mut parts = l.splitn(3, ':');
                    let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
                    ctrls.split(',').any(|c| c == "freezer").then_some(path)
                })?
            }
            _ => continue,
        };
        let rel = if *root != "/" {
            path.strip_prefix(root).unwrap_or(path)
        } else {
            path
        };
        return Some(Path::new(mp).join(rel.trim_start_matches('/')));
    }
    None
}

/// One run's cgroup, made before time zero. The child writes "0" to `procs`
/// between its clone and its exec, which moves it in.
pub struct RunCgroup {
    procs: OwnedFd,
}

impl RunCgroup {
    /// A fresh cgroup under this invocation's parent; None without one.
    pub fn create() -> Option<RunCgroup> {
        let parent = parent()?;
        let n = NEXT_RUN.fetch_add(1, Ordering::Relaxed);
        let dir = parent.dir.join(format!("run-{n}"));
        if std::fs::create_dir(&dir).is_err() {
            return None;
        }
        let procs = match std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
        {
            Ok(f) => OwnedFd::from(f),
            Err(_) => {
                std::fs::remove_dir(&dir).ok();
                return None;
            }
        };
        LIVE.lock().unwrap_or_else(|p| p.into_inner()).push(dir);
        Some(RunCgroup { procs })
    }

    /// Write "0" here from the child (async-signal-safe) to enter the cgroup.
    pub fn procs_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }

    /// The open `cgroup.procs` (the cgroup itself is killed and removed through
    /// the invocation's parent, so this handle is all a launcher needs).
    pub fn into_procs(self) -> OwnedFd {
        self.procs
    }
}

/// Say once that runs go without a cgroup, and what that costs.
pub fn note_unavailable() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        crate::out::errln!(
            "coldstart: note: no per-run cgroup ({}); cleanup uses process groups and the subreaper, so a SIGKILLed coldstart can leave setsid'd target processes behind",
            unavailable_reason().unwrap_or("not set up")
        );
    });
}

/// Say once that a child could not enter its cgroup (permission: moving a
/// process needs write access to the common ancestor's cgroup.procs).
pub fn note_not_entered(errno: i32) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        crate::out::errln!(
            "coldstart: note: a target could not enter its run cgroup ({}); cleanup of that run falls back to process groups and the subreaper",
            std::io::Error::from_raw_os_error(errno)
        );
    });
}

/// Kill every process of every live run cgroup, wait (bounded) until they are
/// empty, and remove them. Returns false if one could not be emptied. Without a
/// reaper (a trace session is live) the killed processes are left unreaped and
/// an rmdir may fail: only the exiting second-signal path does that.
pub fn kill_live_runs(reaper: Option<&crate::launch::lab::Reaper>) -> bool {
    let Some(parent) = parent() else { return true };
    let dirs = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|p| p.into_inner()));
    let mut ok = true;
    for dir in &dirs {
        ok &= kill_and_wait(parent.kind, dir, Duration::from_secs(2));
    }
    // Killed orphans were reparented to us (the subreaper): reap before rmdir.
    if let Some(reaper) = reaper {
        super::tree::reap_children(reaper);
    }
    for dir in &dirs {
        remove(dir);
    }
    ok
}

/// rmdir, retried briefly: the last task can still be leaving the cgroup.
fn remove(dir: &Path) {
    for _ in 0..100 {
        match std::fs::remove_dir(dir) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => std::thread::sleep(Duration::from_micros(200)),
            _ => return,
        }
    }
}

/// SIGKILL everything below this invocation's parent at once (Ctrl-C handler:
/// no waiting, no allocation-heavy work).
pub fn kill_all_runs_now() {
    if let Some(parent) = parent() {
        kill_once(parent.kind, &parent.dir);
    }
}

/// One kill pass over `dir` and its descendants.
fn kill_once(kind: Kind, dir: &Path) {
    match kind {
        Kind::V2 => {
            std::fs::write(dir.join("cgroup.kill"), "1").ok();
        }
        Kind::V1Freezer => {
            for d in subtree(dir) {
                freeze_kill_thaw(&d);
            }
        }
    }
}

/// `dir` and every cgroup below it, deepest first (the order rmdir needs).
fn subtree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(subtree(&e.path()));
            }
        }
    }
    out.push(dir.to_path_buf());
    out
}

fn freeze_kill_thaw(dir: &Path) {
    let state = dir.join("freezer.state");
    // The parent's own processes (none, normally) and descendants freeze too.
    if std::fs::write(&state, "FROZEN").is_ok() {
        let until = Instant::now() + Duration::from_millis(500);
        while Instant::now() < until && std::fs::read_to_string(&state).is_ok_and(|s| s.trim() != "FROZEN") {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    for pid in pids(dir) {
        // A pid listed in the run's own cgroup.
        let _ = coldstart_sys::signal::kill(pid, libc::SIGKILL);
    }
    // Pending SIGKILLs take effect as the processes thaw.
    std::fs::write(&state, "THAWED").ok();
}

fn pids(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// No process left in `dir` or below it.
fn is_empty(kind: Kind, dir: &Path) -> bool {
    match kind {
        Kind::V2 => std::fs::read_to_string(dir.join("cgroup.events"))
            .map(|e| e.lines().any(|l| l == "populated 0"))
            .unwrap_or(true),
        Kind::V1Freezer => subtree(dir).iter().all(|d| pids(d).is_empty()),
    }
}

/// Kill until empty or `limit` passes.
pub fn kill_and_wait(kind: Kind, dir: &Path, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    loop {
        if is_empty(kind, dir) {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        kill_once(kind, dir);
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// Kill and remove a whole invocation's parent (the watchdog, at coldstart's death).
pub fn destroy_parent(parent: &Parent) {
    if !parent.dir.exists() {
        return;
    }
    kill_and_wait(parent.kind, &parent.dir, Duration::from_secs(5));
    for d in subtree(&parent.dir) {
        remove(&d);
    }
}

/// Parents left by coldstarts that died with their watchdog (both SIGKILLed,
/// or the machine's OOM killer): killed and removed. Looks beside our own.
pub fn remove_stale(parent: &Parent) {
    let Some(base) = parent.dir.parent() else { return };
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some((pid, started)) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(p, t)| Some((p.parse::<i32>().ok()?, t.parse::<u64>().ok()?)))
        else {
            continue;
        };
        if start_time(pid) == Some(started) {
            continue; // its coldstart still runs
        }
        destroy_parent(&Parent {
            kind: parent.kind,
            dir: e.path(),
        });
    }
}

/// When `pid` started (clock ticks after boot): with the pid it names one
/// process for good, so a reused pid does not pass for the dead owner.
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, fields) = super::tree::parse_stat(&stat)?;
    // Field 22 of proc_pid_stat(5); `fields` starts at field 3.
    fields.get(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_dir_in_each_hierarchy() {
        let mi = "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n\
                  37 31 0:34 / /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer\n\
                  41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        let own = "6:freezer:/a/b\n1:cpu:/\n0::/user.slice/x.scope\n";
        assert_eq!(
            own_dir(Kind::V2, mi, own),
            Some(PathBuf::from("/sys/fs/cgroup/unified/user.slice/x.scope"))
        );
        assert_eq!(
            own_dir(Kind::V1Freezer, mi, own),
            Some(PathBuf::from("/sys/fs/cgroup/freezer/a/b"))
        );
        // A hierarchy mounted from a sub-root (containers): paths are relative to it.
        let mi = "41 31 0:38 /user.slice /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            own_dir(Kind::V2, mi, own),
            Some(PathBuf::from("/sys/fs/cgroup/x.scope"))
        );
        assert_eq!(own_dir(Kind::V1Freezer, mi, own), None);
    }
}
