//! A cgroup per run, entered by the child before it execs, so that every process
//! of the run — setsid'd and double-forked ones included — can be found and
//! killed by the kernel, even after coldstart itself died.
//!
//! Layout: one parent per coldstart invocation,
//! `<own cgroup>/coldstart-runs-<pid>-<its start time>`,
//! made at startup, and one child `run-<n>` per spawned target, made before time
//! zero and removed after the run's cleanup. Every other cgroup coldstart makes
//! lives under the same name in its own hierarchy (`invocation_dirs`): the limit
//! cgroups of bench and explain (`limit_cgroups`) and lambda's sandboxes
//! (`lambda::sandbox`) in the v1 cpu, cpuset and memory hierarchies. The
//! watchdog (see `watchdog`) kills what is in all of them and removes them when
//! coldstart dies by any means, and sweeps those of dead coldstarts at startup.
//!
//! Backends, best first:
//! - cgroup v2 with `cgroup.kill` (Linux ≥ 5.14): one write SIGKILLs every
//!   process of a cgroup and its descendants, atomically with respect to forks.
//! - cgroup v1 freezer: freeze, SIGKILL every pid listed, thaw, until empty (a
//!   frozen process cannot fork, so the list is complete).
//!
//! `COLDSTART_CGROUP=v2|v1|none` forces a backend (tests use it to cover the v1
//! and the fallback paths on a v2 machine).
//!
//! A run with limits (`--cpus`, `--cpuset`, `--memory`) uses the same run
//! cgroup on v2, with controllers enabled; on v1 it also gets `run-<n>` in each
//! limiting hierarchy (see `limit_cgroups`, which also holds a run's
//! `RunCgroup`), and the child writes itself into every one of them before its
//! exec: one placement, one time-zero correction.

use super::procfs::start_time;
use super::reaping::Reaper;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

const PREFIX: &str = "coldstart-runs-";

/// The v1 controllers a run can be limited by (`limit_cgroups`), each its own
/// hierarchy (or co-mounted: then the same directory serves both).
pub const CONTROLLERS: [&str; 3] = ["cpu", "cpuset", "memory"];

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
/// Limiting v1 cgroups of live runs, removed once the runs' processes are gone.
static LIVE_LIMITS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

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
    let name = parent_name();
    let mut errors = Vec::new();
    let candidates: &[Kind] = match forced.as_str() {
        "none" => return Err("COLDSTART_CGROUP=none".into()),
        "v1" => &[Kind::V1Freezer],
        "v2" => &[Kind::V2],
        _ => &[Kind::V2, Kind::V1Freezer],
    };
    for &kind in candidates {
        let hierarchy = match kind {
            Kind::V2 => Hierarchy::V2,
            Kind::V1Freezer => Hierarchy::V1("freezer"),
        };
        let Some(base) = own_dir_in(hierarchy, &mountinfo, &own) else {
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

/// `coldstart-runs-<pid>-<start time>`: this invocation's name in every hierarchy.
pub fn parent_name() -> String {
    let pid = std::process::id() as i32;
    format!("{PREFIX}{pid}-{}", start_time(pid).unwrap_or(0))
}

/// This invocation's directory in every mounted hierarchy coldstart may make
/// cgroups in (v2; v1 freezer, cpu, cpuset, memory), whether made yet or not:
/// all a watchdog forked at startup needs to find every cgroup of ours later.
/// Also holds the v2 leaf coldstart may move itself into (`lambda::sandbox`).
pub fn invocation_dirs() -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(|| {
        let (Ok(mountinfo), Ok(own)) = (
            std::fs::read_to_string("/proc/self/mountinfo"),
            std::fs::read_to_string("/proc/self/cgroup"),
        ) else {
            return Vec::new();
        };
        let name = parent_name();
        let mut dirs: Vec<PathBuf> = Vec::new();
        let hierarchies = [Hierarchy::V2, Hierarchy::V1("freezer")]
            .into_iter()
            .chain(CONTROLLERS.iter().map(|c| Hierarchy::V1(c)));
        for h in hierarchies {
            let Some(base) = own_dir_in(h, &mountinfo, &own) else {
                continue;
            };
            if h == Hierarchy::V2 {
                dirs.push(base.join(self_leaf_name()));
            }
            let dir = base.join(&name);
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        dirs
    })
}

/// The v2 leaf coldstart moves itself into when its own cgroup must hand
/// controllers to its children (`lambda::sandbox`), beside the invocation's dir.
pub fn self_leaf_name() -> String {
    format!("coldstart-{}", std::process::id())
}

/// The next run's number (`run-<n>`), shared by all hierarchies.
pub fn next_run() -> u64 {
    NEXT_RUN.fetch_add(1, Ordering::Relaxed)
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::V2 => "cgroup v2",
        Kind::V1Freezer => "cgroup v1 freezer",
    }
}

/// A cgroup hierarchy: the v2 one, or the v1 one a controller is mounted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hierarchy {
    V2,
    V1(&'static str),
}

/// Our own cgroup's directory in `hierarchy`, from /proc/self/mountinfo and
/// /proc/self/cgroup.
pub fn own_dir(hierarchy: Hierarchy) -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    own_dir_in(hierarchy, &mountinfo, &own)
}

fn own_dir_in(hierarchy: Hierarchy, mountinfo: &str, own: &str) -> Option<PathBuf> {
    for line in mountinfo.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        let pre: Vec<&str> = pre.split_whitespace().collect();
        let post: Vec<&str> = post.split_whitespace().collect();
        let (Some(root), Some(mp), Some(fs)) = (pre.get(3), pre.get(4), post.first()) else {
            continue;
        };
        let path = match (hierarchy, *fs) {
            (Hierarchy::V2, "cgroup2") => own.lines().find_map(|l| l.strip_prefix("0::"))?,
            (Hierarchy::V1(ctrl), "cgroup")
                if post.get(2).is_some_and(|o| o.split(',').any(|c| c == ctrl)) =>
            {
                own.lines().find_map(|l| {
                    let mut parts = l.splitn(3, ':');
                    let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
                    ctrls.split(',').any(|c| c == ctrl).then_some(path)
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

/// `run-<n>` under the cleanup parent, registered for removal, and its open
/// `cgroup.procs`; None without a parent or when it cannot be made.
pub(super) fn create_cleanup(n: u64) -> Option<(OwnedFd, PathBuf)> {
    let parent = parent()?;
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
    LIVE.lock().unwrap_or_else(|p| p.into_inner()).push(dir.clone());
    Some((procs, dir))
}

/// Undo [`create_cleanup`] for a run that will not start.
pub(super) fn discard_cleanup(dir: &Path) {
    LIVE.lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|d| d != dir);
    std::fs::remove_dir(dir).ok();
}

/// Limiting v1 cgroups of a run, removed with the run cgroups once its
/// processes are gone.
pub(super) fn track_limit_dirs(dirs: &[PathBuf]) {
    LIVE_LIMITS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(dirs.iter().cloned());
}

/// Say once that runs go without a cgroup, and what that costs.
/// `why`: the caller's reason for leaving it out, when it did.
pub fn note_unavailable(why: Option<&str>) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        crate::out::errln!(
            "coldstart: note: no per-run cgroup ({}); cleanup uses process groups and the subreaper, so a SIGKILLed coldstart can leave setsid'd target processes behind",
            why.or(unavailable_reason()).unwrap_or("not set up")
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
pub fn kill_live_runs(reaper: Option<&Reaper>) -> bool {
    let limit_dirs = std::mem::take(&mut *LIVE_LIMITS.lock().unwrap_or_else(|p| p.into_inner()));
    let Some(parent) = parent() else {
        // No cleanup hierarchy: the processes are killed through their groups
        // after this; what cannot be removed yet stays listed for the next call.
        let left: Vec<PathBuf> = limit_dirs
            .into_iter()
            .filter(|d| std::fs::remove_dir(d).is_err() && d.exists())
            .collect();
        LIVE_LIMITS.lock().unwrap_or_else(|p| p.into_inner()).extend(left);
        return true;
    };
    let dirs = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|p| p.into_inner()));
    let mut ok = true;
    for dir in &dirs {
        ok &= kill_and_wait(parent.kind, dir, Duration::from_secs(2));
    }
    // Killed orphans were reparented to us (the subreaper): reap before rmdir.
    if let Some(reaper) = reaper {
        reaper.reap_exited();
    }
    for dir in dirs.iter().chain(&limit_dirs) {
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

/// Kill what is in `dirs` (and below) and remove them: the watchdog, at
/// coldstart's death, with every cgroup the invocation may have made. All are
/// killed before any wait, so a tree spread over hierarchies dies at once.
pub fn destroy(dirs: &[PathBuf]) {
    let live: Vec<&PathBuf> = dirs.iter().filter(|d| d.exists()).collect();
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let full: Vec<&&PathBuf> = live.iter().filter(|d| !emptied(d)).collect();
        if full.is_empty() || Instant::now() >= until {
            break;
        }
        for dir in full {
            kill_any(dir);
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    for dir in live {
        for d in subtree(dir) {
            remove(&d);
        }
    }
}

/// One kill pass over `dir` and below, in whatever hierarchy it is: v2's
/// `cgroup.kill`; the v1 freezer; else SIGKILL each listed pid (a forked child
/// is in the cgroup too, so the next pass finds it).
fn kill_any(dir: &Path) {
    if std::fs::write(dir.join("cgroup.kill"), "1").is_ok() {
        return;
    }
    let freezer = dir.join("freezer.state").exists();
    for d in subtree(dir) {
        if freezer {
            freeze_kill_thaw(&d);
        } else {
            for pid in pids(&d) {
                // Listed in a cgroup this invocation made: one of its targets.
                let _ = coldstart_sys::signal::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// No process in `dir` or below, in any hierarchy.
fn emptied(dir: &Path) -> bool {
    match std::fs::read_to_string(dir.join("cgroup.events")) {
        Ok(events) => events.lines().any(|l| l == "populated 0"),
        Err(_) => subtree(dir).iter().all(|d| pids(d).is_empty()),
    }
}

/// Cgroups left by coldstarts that died with their watchdog (both SIGKILLed,
/// or the machine's OOM killer): killed and removed. Looks beside `dirs` (ours)
/// for `coldstart-runs-<pid>-<start time>` whose process is gone (pid and start
/// time name one process for good, so a live coldstart is never touched). Older
/// coldstarts named lambda sandboxes `coldstart-lambda-<pid>-…`, without a start
/// time: those are only removed when empty and no process has that pid.
pub fn remove_stale(dirs: &[PathBuf]) {
    let mut bases: Vec<&Path> = dirs.iter().filter_map(|d| d.parent()).collect();
    bases.dedup();
    for base in bases {
        let Ok(entries) = std::fs::read_dir(base) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            match stale_owner(name) {
                Some(Owner::Dead) => destroy(&[e.path()]),
                Some(Owner::LegacyGone) => {
                    // rmdir refuses a cgroup with processes or children.
                    std::fs::remove_dir(e.path()).ok();
                }
                None => {}
            }
        }
    }
}

enum Owner {
    /// A coldstart-runs-… whose coldstart is gone.
    Dead,
    /// An old coldstart-lambda-<pid>-… whose pid names no process.
    LegacyGone,
}

/// Whether a cgroup named `name` is a dead coldstart's (None: a live one's, or
/// not coldstart's at all).
fn stale_owner(name: &str) -> Option<Owner> {
    if let Some(rest) = name.strip_prefix(PREFIX) {
        let (pid, started) = rest.split_once('-')?;
        let (pid, started) = (pid.parse::<i32>().ok()?, started.parse::<u64>().ok()?);
        return (start_time(pid) != Some(started)).then_some(Owner::Dead);
    }
    let pid: i32 = name
        .strip_prefix(LEGACY_LAMBDA)?
        .split('-')
        .next()?
        .parse()
        .ok()?;
    (pid > 0 && !Path::new(&format!("/proc/{pid}")).exists()).then_some(Owner::LegacyGone)
}

const LEGACY_LAMBDA: &str = "coldstart-lambda-";

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
            own_dir_in(Hierarchy::V2, mi, own),
            Some(PathBuf::from("/sys/fs/cgroup/unified/user.slice/x.scope"))
        );
        assert_eq!(
            own_dir_in(Hierarchy::V1("freezer"), mi, own),
            Some(PathBuf::from("/sys/fs/cgroup/freezer/a/b"))
        );
        assert_eq!(
            own_dir_in(Hierarchy::V1("cpu"), mi, own),
            Some(PathBuf::from("/sys/fs/cgroup/cpu"))
        );
        assert_eq!(own_dir_in(Hierarchy::V1("memory"), mi, own), None);
        // A hierarchy mounted from a sub-root (containers): paths are relative to it.
        let mi = "41 31 0:38 /user.slice /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            own_dir_in(Hierarchy::V2, mi, own),
            Some(PathBuf::from("/sys/fs/cgroup/x.scope"))
        );
        assert_eq!(own_dir_in(Hierarchy::V1("freezer"), mi, own), None);
    }
}
