//! Truly cold runs: the target's own files out of the page cache before each
//! run (`--cache cold`, no privilege needed), or the whole system's caches
//! dropped (`--drop-caches`, root). The file set is what one traced run of the
//! variant opened, executed or mapped; eviction is posix_fadvise(DONTNEED) per
//! file (after an fdatasync when dirty pages kept some), verified with mincore.
//! Pages mapped by a live process cannot be dropped: shared libraries that
//! coldstart or any other running program also uses stay resident, and are
//! counted as such.

use anyhow::{Context, Result};
use coldstart_sys::pagecache::{self, Residency};
use coldstart_trace::{Event, Trace};
use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// The regular files one traced run of a target used.
#[derive(Debug, Clone, Default)]
pub struct FileSet {
    pub paths: Vec<PathBuf>,
}

/// The page-cache state of a file set at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    pub files: usize,
    pub pages: u64,
    pub resident: u64,
    /// Files with pages still resident, with their resident page counts.
    pub resident_files: Vec<(PathBuf, u64)>,
}

impl State {
    pub fn uncached(&self) -> u64 {
        self.pages - self.resident
    }

    /// The per-run metrics: what the run had to read from disk (at most), and
    /// what was still cached (pages that could not be evicted).
    pub fn metrics(&self) -> [(&'static str, f64); 3] {
        let mib = |pages: u64| (pages * pagecache::page_size()) as f64 / (1024.0 * 1024.0);
        [
            ("uncached_pages", self.uncached() as f64),
            ("uncached_mib", mib(self.uncached())),
            ("cached_mib", mib(self.resident)),
        ]
    }
}

impl FileSet {
    /// Every file the trace shows opened successfully, executed or mapped
    /// executable, that is a regular file now (not /proc, /sys, /dev, not a
    /// directory or socket), in path order.
    pub fn from_trace(trace: &Trace) -> FileSet {
        let mut seen = BTreeSet::new();
        for e in &trace.events {
            match &e.event {
                Event::Exec { path, exe, .. } => {
                    seen.insert(path.clone());
                    seen.insert(exe.clone());
                }
                Event::Open { path, ok: true, .. } | Event::MmapExec { path } => {
                    seen.insert(path.clone());
                }
                _ => {}
            }
        }
        // One path per file: /lib/… and /usr/lib/… are one file on merged-/usr systems.
        let paths: BTreeSet<PathBuf> = seen
            .into_iter()
            .filter(|p| !["/proc/", "/sys/", "/dev/"].iter().any(|pre| p.starts_with(pre)))
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
            .collect();
        FileSet {
            paths: paths.into_iter().collect(),
        }
    }

    /// Drop each file's pages from the page cache; a file whose pages stay
    /// (dirty ones) is synced and dropped again. Files that vanished or cannot
    /// be opened are skipped: the target may recreate them. Returns the state
    /// right after, which is the run's state at its start.
    pub fn evict(&self) -> State {
        self.each(|f| {
            let _ = pagecache::drop_pages(f);
            let mut r = pagecache::residency(f).ok()?;
            if r.resident > 0 && f.sync_data().is_ok() {
                let _ = pagecache::drop_pages(f);
                r = pagecache::residency(f).ok()?;
            }
            Some(r)
        })
    }

    /// The current state, nothing changed.
    pub fn state(&self) -> State {
        self.each(|f| pagecache::residency(f).ok())
    }

    fn each(&self, mut f: impl FnMut(&File) -> Option<Residency>) -> State {
        let mut s = State::default();
        for p in &self.paths {
            let Ok(file) = File::open(p) else { continue };
            let Some(r) = f(&file) else { continue };
            s.files += 1;
            s.pages += r.pages;
            s.resident += r.resident;
            if r.resident > 0 {
                s.resident_files.push((p.clone(), r.resident));
            }
        }
        s
    }
}

/// Refuse `--drop-caches` before any run when it cannot work (not root, or a
/// read-only /proc/sys in a container).
pub fn check_drop_caches() -> Result<()> {
    open_drop_caches().map(drop)
}

fn open_drop_caches() -> Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(DROP_CACHES)
        .with_context(|| {
            format!("--drop-caches needs root (it writes {DROP_CACHES}); without root, --cache cold evicts the target's own files")
        })
}

/// sync(2), then drop the page cache, dentries and inodes of the whole system.
pub fn drop_system_caches() -> Result<()> {
    pagecache::sync_all();
    open_drop_caches()?
        .write_all(b"3\n")
        .with_context(|| format!("writing 3 to {DROP_CACHES}"))
}

/// The line under bench's table after `--cache cold` runs (without
/// `--drop-caches`): eviction per file is not a cold machine. Measured on
/// `python3 -c 'import json, decimal, email'`: warm 61 ms, `--cache cold`
/// 136 ms, a full drop 177 ms (docs/benchmarks.md).
pub fn cold_note(root: bool) -> String {
    let how = if root {
        "you are root: --drop-caches syncs and drops them all before every run"
    } else {
        "--drop-caches (root) syncs and drops them all before every run"
    };
    format!(
        "  --cache cold evicted only the target's own files: the dentry and inode caches, and pages that running processes map (shared libraries), stayed warm; {how}"
    )
}

/// A note for the pages that stayed after eviction: which files, and why.
pub fn stuck_note(variant: &str, s: &State) -> Option<String> {
    if s.resident == 0 {
        return None;
    }
    let mut files = s.resident_files.clone();
    files.sort_by_key(|f| std::cmp::Reverse(f.1));
    let names: Vec<String> = files.iter().take(3).map(|(p, _)| short(p)).collect();
    let more = files.len().saturating_sub(3);
    let kib = s.resident * pagecache::page_size() / 1024;
    Some(format!(
        "coldstart: {variant}: --cache cold: {kib} KiB of {} files stayed in the page cache ({}{}): pages mapped by running processes (shared libraries coldstart or other programs use) cannot be evicted without root; --drop-caches cannot either",
        files.len(),
        names.join(", "),
        if more > 0 { format!(", {more} more") } else { String::new() }
    ))
}

fn short(p: &Path) -> String {
    p.file_name()
        .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use coldstart_trace::{Outcome, TraceEvent};

    fn ev(event: Event) -> TraceEvent {
        TraceEvent {
            ts_ns: 0,
            pid: 1,
            tid: 1,
            event,
        }
    }

    fn open(path: &str, ok: bool) -> TraceEvent {
        ev(Event::Open {
            path: path.into(),
            ok,
            errno: 0,
            flags: 0,
        })
    }

    #[test]
    fn the_file_set_is_the_regular_files_the_run_used_once_each() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data.bin");
        std::fs::write(&data, b"x").expect("write");
        let link = dir.path().join("link.bin");
        std::os::unix::fs::symlink(&data, &link).expect("symlink");
        let lib = dir.path().join("lib.so");
        std::fs::write(&lib, b"elf").expect("write");
        let exe = dir.path().join("prog");
        std::fs::write(&exe, b"elf").expect("write");
        let d = |p: &Path| p.display().to_string();
        let trace = Trace {
            t0_ns: 0,
            end_ns: 0,
            root_pid: 1,
            events: vec![
                ev(Event::Exec {
                    path: d(&exe),
                    exe: d(&exe),
                    argv0: "prog".into(),
                    argv: vec!["prog".into()],
                }),
                open(&d(&data), true),
                open(&d(&link), true),                        // the same file
                open(&d(&dir.path().join("gone")), true),     // removed since
                open(&d(&dir.path().join("missing")), false), // never opened
                open(&d(dir.path()), true),                   // a directory
                open("/proc/self/status", true),
                open("/dev/null", true),
                ev(Event::MmapExec { path: d(&lib) }),
            ],
            killed: false,
            outcome: Outcome::Reached,
            warnings: Vec::new(),
            root_usage: None,
            stops: Vec::new(),
            cpu: Vec::new(),
            task_names: Default::default(),
        };
        let set = FileSet::from_trace(&trace);
        let canon = |p: &Path| std::fs::canonicalize(p).expect("canonical");
        let mut want = vec![canon(&data), canon(&lib), canon(&exe)];
        want.sort();
        assert_eq!(set.paths, want);
        let state = set.state();
        assert_eq!(state.files, 3);
        assert_eq!(state.pages, 3, "one page each");
    }
}
