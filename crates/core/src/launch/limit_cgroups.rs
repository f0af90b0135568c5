//! The cgroups that apply a run's limits (see `limits`), and what they measure:
//! the tree's peak memory and whether the memory limit killed it.
//!
//! Each controller is used where the machine has it. On cgroup v2 the run's own
//! cgroup (the cleanup one, `coldstart-runs-…/run-<n>`) carries the limits once
//! the controller is enabled in its parents' `cgroup.subtree_control`; on v1
//! (or a hybrid machine, whose cpu/cpuset/memory controllers are bound to v1)
//! the run gets `coldstart-runs-…/run-<n>` in each limiting hierarchy. Either
//! way the child enters every one of them before its exec (spawn.rs), so the
//! limits hold from the target's first instruction and for everything it forks.
//!
//! A limited run always joins the memory controller (when there is one), also
//! without `--memory`: the tree's peak comes from there.
//! `COLDSTART_CGROUP=v1|v2` forces the version, as for the cleanup cgroup.
//!
//! [`RunCgroup`] is what a launcher gets for one run: its cleanup cgroup (see
//! `cgroup`) and, when it is limited, these.

use super::cgroup::{self, Hierarchy};
use crate::limits::{Limits, PERIOD_US};
use anyhow::{anyhow, bail, Context, Result};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use super::cgroup::CONTROLLERS;

/// One run's cgroup(s), made before time zero. The child writes "0" to each
/// `cgroup.procs` between its clone and its exec, which moves it in.
pub struct RunCgroup {
    /// The run cgroup of the cleanup hierarchy (None: none here).
    procs: Option<OwnedFd>,
    /// Whether entering `procs` is required (it carries the limits on v2).
    procs_required: bool,
    limits: Option<Box<RunLimits>>,
}

/// One `cgroup.procs` the child writes itself into; `required`: a failure to
/// enter fails the spawn (a limited run must never run unlimited).
pub struct Entry {
    pub procs: OwnedFd,
    pub required: bool,
}

impl RunCgroup {
    /// A fresh cgroup under this invocation's parent; None without one.
    pub fn create() -> Option<RunCgroup> {
        let (procs, _) = cgroup::create_cleanup(cgroup::next_run())?;
        Some(RunCgroup {
            procs: Some(procs),
            procs_required: false,
            limits: None,
        })
    }

    /// The cgroups a run with `limits` needs (as [`create`](Self::create)
    /// without limits). An error says what is missing for the limits.
    pub fn for_limits(limits: &crate::limits::Limits) -> anyhow::Result<Option<RunCgroup>> {
        if limits.is_none() {
            return Ok(RunCgroup::create());
        }
        let n = cgroup::next_run();
        let cleanup = cgroup::create_cleanup(n);
        let v2_dir = cleanup
            .as_ref()
            .filter(|_| cgroup::parent().is_some_and(|p| p.kind == cgroup::Kind::V2))
            .map(|(_, dir)| dir.as_path());
        let made = RunLimits::create(limits, n, v2_dir);
        let limits = match made {
            Ok(l) => l,
            Err(e) => {
                if let Some((_, dir)) = &cleanup {
                    cgroup::discard_cleanup(dir);
                }
                return Err(e);
            }
        };
        cgroup::track_limit_dirs(&limits.dirs);
        Ok(Some(RunCgroup {
            procs_required: limits.on_v2,
            procs: cleanup.map(|(fd, _)| fd),
            limits: Some(Box::new(limits)),
        }))
    }

    /// Every `cgroup.procs` the child enters, with whether it must.
    pub fn entries(&self) -> impl Iterator<Item = (RawFd, bool)> + '_ {
        let own = self
            .procs
            .as_ref()
            .map(|fd| (fd.as_raw_fd(), self.procs_required));
        own.into_iter().chain(
            self.limits
                .iter()
                .flat_map(|l| l.procs.iter().map(|fd| (fd.as_raw_fd(), true))),
        )
    }

    /// Where the run's peak memory and OOM kills are read (limited runs only).
    pub fn memory(&self) -> Option<MemoryWatch> {
        self.limits.as_ref()?.memory.clone()
    }

    /// The open `cgroup.procs` files (the cgroups themselves are killed and
    /// removed through the invocation's parent and the live lists, so these
    /// handles are all a launcher needs).
    pub fn into_entries(self) -> Vec<Entry> {
        let required = self.procs_required;
        let own = self.procs.map(|procs| Entry { procs, required });
        own.into_iter()
            .chain(self.limits.into_iter().flat_map(|l| l.procs).map(|procs| Entry {
                procs,
                required: true,
            }))
            .collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// Where one controller's run cgroups are made.
#[derive(Debug, Clone)]
struct Place {
    version: Version,
    /// v1: `<own cgroup>/coldstart-runs-…` in the controller's hierarchy.
    /// v2: unused (the run's cleanup cgroup is the place).
    parent: PathBuf,
}

/// Per controller: where it is, or why it is not available.
fn place(controller: &'static str) -> &'static Result<Place, String> {
    static PLACES: [OnceLock<Result<Place, String>>; 3] = [const { OnceLock::new() }; 3];
    let i = CONTROLLERS.iter().position(|c| *c == controller).unwrap_or(0);
    PLACES[i].get_or_init(|| find(controller))
}

const FIX: &str = "run coldstart as root, or in a cgroup delegated to your user (e.g. `systemd-run --user --scope -p Delegate=yes coldstart …`)";

fn find(controller: &'static str) -> Result<Place, String> {
    let forced = std::env::var("COLDSTART_CGROUP").unwrap_or_default();
    if forced == "none" {
        return Err("COLDSTART_CGROUP=none turns cgroups off, and --cpus/--cpuset/--memory need them".into());
    }
    if forced != "v1" {
        if let Some(place) = v2(controller)? {
            return Ok(place);
        }
        if forced == "v2" {
            return Err(format!(
                "no {controller} controller in the cgroup v2 hierarchy (COLDSTART_CGROUP=v2; on this machine it is bound to cgroup v1)"
            ));
        }
    }
    let Some(own) = cgroup::own_dir(Hierarchy::V1(controller)) else {
        return Err(format!(
            "no cgroup hierarchy offers the {controller} controller (cgroup v2 does not list it in cgroup.controllers, and no cgroup v1 hierarchy mounts it)"
        ));
    };
    let parent = own.join(cgroup::parent_name());
    match std::fs::create_dir(&parent) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(format!(
                "cannot create {}: {e}: the {controller} limit needs write access to {} ({FIX})",
                parent.display(),
                own.display()
            ))
        }
    }
    if controller == "cpuset" {
        // A v1 cpuset takes no task until it has CPUs and memory nodes: the
        // parent gets ours, each run its own CPUs out of them.
        for file in ["cpuset.cpus", "cpuset.mems"] {
            let value = std::fs::read_to_string(own.join(file)).unwrap_or_default();
            std::fs::write(parent.join(file), value.trim())
                .map_err(|e| format!("writing {}: {e} ({FIX})", parent.join(file).display()))?;
        }
    }
    Ok(Place {
        version: Version::V1,
        parent,
    })
}

/// The v2 place of `controller`, when the v2 run cgroups are in use and the
/// controller can be enabled for them; Ok(None) when v2 does not offer it.
fn v2(controller: &str) -> Result<Option<Place>, String> {
    let Some(parent) = cgroup::parent().filter(|p| p.kind == cgroup::Kind::V2) else {
        return Ok(None);
    };
    let Some(own) = parent.dir.parent() else {
        return Ok(None);
    };
    let offered = std::fs::read_to_string(own.join("cgroup.controllers")).unwrap_or_default();
    if !offered.split_whitespace().any(|c| c == controller) {
        return Ok(None);
    }
    for dir in [own, parent.dir.as_path()] {
        let control = dir.join("cgroup.subtree_control");
        if let Err(e) = std::fs::write(&control, format!("+{controller}")) {
            let why = if e.raw_os_error() == Some(libc::EBUSY) {
                "cgroup v2 gives controllers only to cgroups without processes of their own, and coldstart's cgroup has some: start coldstart in a cgroup of its own whose parent delegates the controller".to_string()
            } else {
                FIX.to_string()
            };
            return Err(format!(
                "cannot enable the {controller} controller in {}: {e} ({why})",
                control.display()
            ));
        }
    }
    Ok(Some(Place {
        version: Version::V2,
        parent: parent.dir.clone(),
    }))
}

/// Where a run's memory is read after it: the cgroup and its limit.
#[derive(Debug, Clone)]
pub struct MemoryWatch {
    pub version: Version,
    pub dir: PathBuf,
    pub limit_bytes: Option<u64>,
}

impl MemoryWatch {
    /// The tree's peak memory since the cgroup was made (v2 `memory.peak`,
    /// Linux ≥ 5.19; v1 `memory.max_usage_in_bytes`): a fresh cgroup per run,
    /// so nothing of an earlier run is in it.
    pub fn peak_bytes(&self) -> Option<u64> {
        let file = match self.version {
            Version::V2 => "memory.peak",
            Version::V1 => "memory.max_usage_in_bytes",
        };
        read_u64(&self.dir.join(file))
    }

    /// Processes the OOM killer killed in this cgroup (v2 `memory.events`,
    /// v1 `memory.oom_control`: both count `oom_kill`).
    pub fn oom_kills(&self) -> u64 {
        let file = match self.version {
            Version::V2 => "memory.events",
            Version::V1 => "memory.oom_control",
        };
        std::fs::read_to_string(self.dir.join(file))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse().ok())
            .unwrap_or(0)
    }
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// One run's limiting cgroups.
pub struct RunLimits {
    /// The v1 cgroups' `cgroup.procs`, open for the child to write.
    pub procs: Vec<OwnedFd>,
    /// The v1 cgroups made for this run (removed after it).
    pub dirs: Vec<PathBuf>,
    /// The limits live in the v2 run cgroup (its entry is then required).
    pub on_v2: bool,
    pub memory: Option<MemoryWatch>,
}

impl RunLimits {
    /// Make and configure run `n`'s cgroups for `limits`. `v2_run` is the run's
    /// cleanup cgroup when that is a v2 one. On error nothing is left behind.
    pub fn create(limits: &Limits, n: u64, v2_run: Option<&Path>) -> Result<RunLimits> {
        let mut made = RunLimits {
            procs: Vec::new(),
            dirs: Vec::new(),
            on_v2: false,
            memory: None,
        };
        match made.fill(limits, n, v2_run) {
            Ok(()) => Ok(made),
            Err(e) => {
                for d in made.dirs.iter().rev() {
                    std::fs::remove_dir(d).ok();
                }
                Err(e)
            }
        }
    }

    fn fill(&mut self, limits: &Limits, n: u64, v2_run: Option<&Path>) -> Result<()> {
        let wanted = [
            ("cpu", limits.cpus.is_some()),
            ("cpuset", limits.cpuset.is_some()),
            // Joined for the peak even without --memory, where there is one.
            ("memory", true),
        ];
        for (controller, needed) in wanted {
            if !needed {
                continue;
            }
            let place = match place(controller) {
                Ok(p) => p,
                Err(_) if controller == "memory" && limits.memory_bytes.is_none() => continue,
                Err(why) => bail!("{} needs the {controller} controller: {why}", flag(controller)),
            };
            let dir = match place.version {
                Version::V2 => {
                    self.on_v2 = true;
                    v2_run
                        .ok_or_else(|| {
                            anyhow!(
                                "{} is on cgroup v2 here, and the run has no v2 cgroup (COLDSTART_CGROUP=v1 forces v1)",
                                flag(controller)
                            )
                        })?
                        .to_path_buf()
                }
                Version::V1 => {
                    let dir = place.parent.join(format!("run-{n}"));
                    if !self.dirs.contains(&dir) {
                        std::fs::create_dir(&dir).with_context(|| {
                            format!(
                                "creating cgroup {} for {}: {FIX}",
                                dir.display(),
                                flag(controller)
                            )
                        })?;
                        self.dirs.push(dir.clone());
                        let procs = std::fs::OpenOptions::new()
                            .write(true)
                            .open(dir.join("cgroup.procs"))
                            .with_context(|| format!("opening {}/cgroup.procs: {FIX}", dir.display()))?;
                        self.procs.push(procs.into());
                    }
                    dir
                }
            };
            configure(controller, place, &dir, limits)?;
            if controller == "memory" {
                self.memory = Some(MemoryWatch {
                    version: place.version,
                    dir,
                    limit_bytes: limits.memory_bytes,
                });
            }
        }
        Ok(())
    }
}

fn flag(controller: &str) -> &'static str {
    match controller {
        "cpu" => "--cpus",
        "cpuset" => "--cpuset",
        _ => "--memory",
    }
}

/// Write the limit of `controller` into the run's cgroup `dir`.
fn configure(controller: &str, place: &Place, dir: &Path, limits: &Limits) -> Result<()> {
    let v2 = place.version == Version::V2;
    match controller {
        "cpu" => {
            let Some(quota) = limits.quota_us() else {
                return Ok(());
            };
            if v2 {
                write(dir, "cpu.max", &format!("{quota} {PERIOD_US}"))
            } else {
                write(dir, "cpu.cfs_period_us", &PERIOD_US.to_string())?;
                write(dir, "cpu.cfs_quota_us", &quota.to_string())
            }
        }
        "cpuset" => {
            let Some(cpus) = &limits.cpuset else { return Ok(()) };
            if !v2 {
                let mems = std::fs::read_to_string(place.parent.join("cpuset.mems")).unwrap_or_default();
                write(dir, "cpuset.mems", mems.trim())?;
            }
            std::fs::write(dir.join("cpuset.cpus"), cpus).map_err(|e| {
                let allowed = std::fs::read_to_string(dir.join("cpuset.cpus.effective"))
                    .or_else(|_| std::fs::read_to_string(place.parent.join("cpuset.cpus")))
                    .unwrap_or_default();
                anyhow!(
                    "--cpuset {cpus}: the kernel refused it ({e}): name CPUs coldstart may use here ({})",
                    allowed.trim()
                )
            })
        }
        _ => {
            let Some(bytes) = limits.memory_bytes else {
                return Ok(());
            };
            if v2 {
                write(dir, "memory.max", &bytes.to_string())?;
                // No swap beyond the limit, or a run past it would swap, not fail.
                std::fs::write(dir.join("memory.swap.max"), "0").ok();
                Ok(())
            } else {
                write(dir, "memory.limit_in_bytes", &bytes.to_string())?;
                // Absent without swap accounting; then there is nothing to limit.
                std::fs::write(dir.join("memory.memsw.limit_in_bytes"), bytes.to_string()).ok();
                Ok(())
            }
        }
    }
}

fn write(dir: &Path, file: &str, value: &str) -> Result<()> {
    std::fs::write(dir.join(file), value)
        .with_context(|| format!("writing {value} to {}: {FIX}", dir.join(file).display()))
}
