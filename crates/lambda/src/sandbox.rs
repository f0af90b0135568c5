//! Memory → CPU, as Lambda allocates it: a memory limit of the configured size and
//! a CPU quota of memory/1769 vCPU, in a fresh cgroup per run (cgroup v2, or v1's
//! cpu + memory hierarchies; detected), `lambda-<tag>` under the invocation's
//! `coldstart-runs-<pid>-<start>` (see `launch::cgroup`): the watchdog kills what
//! is in it and removes it if coldstart dies. During an on-demand init the quota is
//! the init boost's (`boost`), lowered to memory/1769 when it ends.
//!
//! Every process of the environment enters these cgroups between its clone and
//! its exec (`procs_files`, given to `spawn::Prepared::enter_cgroups`: the one
//! placement mechanism bench's limits use), so the limits hold from its first
//! instruction, nothing it forks escapes, and the peak memory is the whole tree's.

use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};

/// Memory (MB) that buys one vCPU.
pub const MB_PER_VCPU: f64 = 1769.0;
/// Lambda's largest allocation (10,240 MB) is 6 vCPUs.
pub const MAX_VCPUS: f64 = 6.0;
const PERIOD_US: u64 = 100_000;

pub fn vcpus(memory_mb: u64) -> f64 {
    (memory_mb as f64 / MB_PER_VCPU).min(MAX_VCPUS)
}

/// An environment's limits as a plain run expresses them: `--bare` runs under
/// these, so its comparison with the emulated variant is the emulator's
/// difference, not the quota's. A bare run ends at the runtime's first /next:
/// all of it is init, so with the boost on it gets the boosted CPU (for the
/// whole run: a plain run's quota cannot be lowered after `seconds`).
/// `boost_vcpus`: the boost's CPU (`boost::Boost::vcpus`), None without a boost.
pub fn limits(memory_mb: u64, boost_vcpus: Option<f64>) -> coldstart_core::limits::Limits {
    let share = vcpus(memory_mb).max(0.01);
    coldstart_core::limits::Limits {
        cpus: Some(boost_vcpus.map_or(share, |b| b.max(share))),
        cpuset: None,
        memory_bytes: Some(memory_mb << 20),
    }
}

#[derive(Debug, Clone)]
enum Kind {
    V1 { cpu: PathBuf, memory: PathBuf },
    V2 { parent: PathBuf },
}

/// Where run cgroups can be made.
#[derive(Debug, Clone)]
pub struct Cgroups {
    kind: Kind,
}

/// One run's cgroup(s).
#[derive(Debug)]
pub struct Sandbox {
    kind: Kind,
    cpu: PathBuf,
    memory: PathBuf,
    limit_bytes: u64,
}

const FIX: &str = "run coldstart as root (or in a delegated cgroup, e.g. `systemd-run --user --scope -p Delegate=yes coldstart lambda …`), or pass --no-cgroup to measure without memory and CPU limits";

impl Cgroups {
    /// Where this invocation's sandboxes go: its own directory
    /// (`coldstart-runs-<pid>-<start time>`, see `launch::cgroup`) in the v2
    /// hierarchy when that offers cpu and memory, else in the v1 cpu and memory
    /// hierarchies. Named after the invocation, so the watchdog kills and
    /// removes them if coldstart dies, and sweeps them if the watchdog died too.
    pub fn detect() -> Result<Cgroups> {
        use coldstart_core::launch::cgroup::{self, Hierarchy};
        let name = cgroup::parent_name();
        if let Some(own) = cgroup::own_dir(Hierarchy::V2) {
            let controllers = std::fs::read_to_string(own.join("cgroup.controllers")).unwrap_or_default();
            let has = |c: &str| controllers.split_whitespace().any(|x| x == c);
            if has("cpu") && has("memory") {
                prepare_v2(&own)?;
                let parent = own.join(&name);
                make_dir(&parent)?;
                // The invocation's directory hands the controllers on to each sandbox.
                write(&parent.join("cgroup.subtree_control"), "+cpu +memory")?;
                return Ok(Cgroups {
                    kind: Kind::V2 { parent },
                });
            }
        }
        match (
            cgroup::own_dir(Hierarchy::V1("cpu")),
            cgroup::own_dir(Hierarchy::V1("memory")),
        ) {
            (Some(cpu), Some(memory)) => {
                let (cpu, memory) = (cpu.join(&name), memory.join(&name));
                make_dir(&cpu)?;
                make_dir(&memory)?;
                Ok(Cgroups {
                    kind: Kind::V1 { cpu, memory },
                })
            }
            _ => bail!("no cgroup with the cpu and memory controllers is available to coldstart: {FIX}"),
        }
    }

    pub fn version(&self) -> &'static str {
        match self.kind {
            Kind::V1 { .. } => "v1",
            Kind::V2 { .. } => "v2",
        }
    }

    /// A fresh cgroup limited to `memory_mb`, CPU unthrottled until `set_cpu`.
    pub fn create(&self, tag: &str, memory_mb: u64) -> Result<Sandbox> {
        let name = format!("lambda-{tag}");
        let (cpu, memory) = match &self.kind {
            Kind::V1 { cpu, memory } => (cpu.join(&name), memory.join(&name)),
            Kind::V2 { parent } => (parent.join(&name), parent.join(&name)),
        };
        for dir in [&cpu, &memory] {
            make_dir(dir)?;
        }
        let sandbox = Sandbox {
            kind: self.kind.clone(),
            cpu,
            memory,
            limit_bytes: memory_mb << 20,
        };
        let bytes = sandbox.limit_bytes.to_string();
        match &sandbox.kind {
            Kind::V2 { .. } => {
                write(&sandbox.memory.join("memory.max"), &bytes)?;
                // No swap: Lambda has none.
                write(&sandbox.memory.join("memory.swap.max"), "0").ok();
            }
            Kind::V1 { .. } => {
                write(&sandbox.memory.join("memory.limit_in_bytes"), &bytes)?;
                write(&sandbox.memory.join("memory.memsw.limit_in_bytes"), &bytes).ok();
            }
        }
        sandbox.set_cpu(None)?;
        Ok(sandbox)
    }
}

impl Sandbox {
    /// Each cgroup's `cgroup.procs`, open for writing: a process writes itself
    /// into them before its exec.
    pub fn procs_files(&self) -> Result<Vec<std::os::fd::OwnedFd>> {
        // cgroup v2: one directory holds both controllers.
        let dirs: &[&PathBuf] = if self.memory == self.cpu {
            &[&self.cpu]
        } else {
            &[&self.cpu, &self.memory]
        };
        dirs.iter()
            .map(|dir| {
                let path = dir.join("cgroup.procs");
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map(Into::into)
                    .with_context(|| format!("opening {}: {FIX}", path.display()))
            })
            .collect()
    }

    /// SIGKILL every process in the environment's cgroups (cgroup.kill on v2);
    /// returns the pids that were there. Only this environment's: `lambda serve`
    /// keeps others alive beside it.
    pub fn kill_all(&self) -> Vec<i32> {
        let pids = self.pids();
        for &pid in &pids {
            // A member of this cgroup: one of the environment's processes.
            let _ = coldstart_sys::signal::kill(pid, libc::SIGKILL);
        }
        if matches!(self.kind, Kind::V2 { .. }) {
            std::fs::write(self.cpu.join("cgroup.kill"), "1").ok();
        }
        pids
    }

    /// The processes in the environment's cgroups now.
    pub fn pids(&self) -> Vec<i32> {
        let mut pids = Vec::new();
        for dir in [&self.cpu, &self.memory] {
            for pid in std::fs::read_to_string(dir.join("cgroup.procs"))
                .unwrap_or_default()
                .lines()
                .filter_map(|l| l.trim().parse::<i32>().ok())
            {
                if !pids.contains(&pid) {
                    pids.push(pid);
                }
            }
        }
        pids
    }

    /// CPU quota in vCPUs (None: unthrottled).
    pub fn set_cpu(&self, vcpus: Option<f64>) -> Result<()> {
        self.cpu_quota().set(vcpus)
    }

    /// The CPU quota's control, apart from the Sandbox: the init boost's timer
    /// lowers the quota while init still runs.
    pub fn cpu_quota(&self) -> CpuQuota {
        CpuQuota {
            v2: matches!(self.kind, Kind::V2 { .. }),
            dir: self.cpu.clone(),
        }
    }

    /// Peak memory of the cgroup since it was made (None when the kernel does not
    /// track it: cgroup v2 before Linux 5.19). A fresh cgroup per environment, so
    /// nothing of an earlier one is in it; over warm invokes it is the
    /// environment's peak so far.
    pub fn peak_memory_bytes(&self) -> Option<u64> {
        let file = match self.kind {
            Kind::V2 { .. } => "memory.peak",
            Kind::V1 { .. } => "memory.max_usage_in_bytes",
        };
        read_u64(&self.memory.join(file))
    }

    /// Max Memory Used: the cgroup's peak (anonymous memory, kernel memory,
    /// page cache the tree read first), plus the file pages its live processes
    /// map that the kernel charged to another cgroup — on a warm host the
    /// runtime's binary and libraries, which a fresh Lambda environment reads
    /// in itself (see `mapped`). Processes already gone add nothing. At most
    /// the memory size: in Lambda those pages would count against the limit, and
    /// page cache is given back before the limit is passed.
    pub fn max_memory_bytes(&self) -> Option<u64> {
        let peak = self.peak_memory_bytes()?;
        let pids: Vec<i32> = std::fs::read_to_string(self.memory.join("cgroup.procs"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        let mapped = super::mapped::file_resident_bytes(&pids);
        // File pages the cgroup already charged and someone maps: in `peak` already.
        let key = match self.kind {
            Kind::V2 { .. } => "file_mapped ",
            Kind::V1 { .. } => "mapped_file ",
        };
        let charged = std::fs::read_to_string(self.memory.join("memory.stat"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok())
            .unwrap_or(0);
        Some((peak + mapped.saturating_sub(charged)).min(self.limit_bytes.max(peak)))
    }

    /// Whether the kernel's OOM killer killed a process of the cgroup (it hit
    /// the memory size): v2's memory.events `oom_kill`, v1's memory.oom_control
    /// `oom_kill` (Linux 4.13+). Without that counter, v1's memory.failcnt (the
    /// limit was hit) stands in, for the caller to pair with a SIGKILL.
    pub fn oom_killed(&self) -> bool {
        let counter = |file: &str, key: &str| -> Option<u64> {
            std::fs::read_to_string(self.memory.join(file))
                .ok()?
                .lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
        };
        match self.kind {
            Kind::V2 { .. } => counter("memory.events", "oom_kill ").is_some_and(|n| n > 0),
            Kind::V1 { .. } => match counter("memory.oom_control", "oom_kill ") {
                Some(n) => n > 0,
                None => read_u64(&self.memory.join("memory.failcnt")).is_some_and(|n| n > 0),
            },
        }
    }

    /// Throttled time so far (ns), from cpu.stat.
    pub fn throttled_ns(&self) -> Option<u64> {
        let stat = std::fs::read_to_string(self.cpu.join("cpu.stat")).ok()?;
        stat.lines().find_map(|l| match l.split_once(' ')? {
            ("throttled_usec", v) => v.trim().parse::<u64>().ok().map(|us| us * 1000),
            ("throttled_time", v) => v.trim().parse().ok(),
            _ => None,
        })
    }
}

impl Drop for Sandbox {
    /// Called after every process of the run is gone; an empty cgroup can be removed.
    fn drop(&mut self) {
        for dir in [&self.cpu, &self.memory] {
            for _ in 0..50 {
                if !dir.exists() || std::fs::remove_dir(dir).is_ok() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }
}

/// A run cgroup's CPU quota, detached from its Sandbox (a write after the cgroup
/// was removed fails; the boost's timer is stopped before that).
#[derive(Debug, Clone)]
pub struct CpuQuota {
    v2: bool,
    dir: PathBuf,
}

impl CpuQuota {
    /// CPU quota in vCPUs (None: unthrottled).
    pub fn set(&self, vcpus: Option<f64>) -> Result<()> {
        let quota = vcpus.map(|v| ((v * PERIOD_US as f64) as u64).max(1_000));
        if self.v2 {
            write(
                &self.dir.join("cpu.max"),
                &match quota {
                    Some(q) => format!("{q} {PERIOD_US}"),
                    None => format!("max {PERIOD_US}"),
                },
            )
        } else {
            write(&self.dir.join("cpu.cfs_period_us"), &PERIOD_US.to_string())?;
            write(
                &self.dir.join("cpu.cfs_quota_us"),
                &quota.map_or("-1".to_string(), |q| q.to_string()),
            )
        }
    }
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// mkdir, where it is not there yet (co-mounted controllers share one directory).
fn make_dir(dir: &Path) -> Result<()> {
    match std::fs::create_dir(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            Err(e).with_context(|| format!("creating cgroup {}: {FIX}", dir.display()))
        }
        _ => Ok(()),
    }
}

fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).with_context(|| format!("writing {value} to {}: {FIX}", path.display()))
}

/// cgroup v2 lets a cgroup enable controllers for its children only while it holds
/// no process itself (unless it is the root). When coldstart's own cgroup holds
/// processes, coldstart moves itself into a leaf beside the run cgroups first.
fn prepare_v2(own: &Path) -> Result<()> {
    let enable = || std::fs::write(own.join("cgroup.subtree_control"), "+cpu +memory");
    if enable().is_err() {
        // Named so the watchdog removes it (`cgroup::invocation_dirs`).
        let leaf = own.join(coldstart_core::launch::cgroup::self_leaf_name());
        make_dir(&leaf)?;
        write(&leaf.join("cgroup.procs"), &std::process::id().to_string())?;
        enable().map_err(|e| {
            anyhow!(
                "enabling the cpu and memory controllers in {}: {e}; other processes share coldstart's cgroup: {FIX}",
                own.display()
            )
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_in_proportion_to_memory() {
        assert!((vcpus(1769) - 1.0).abs() < 1e-9);
        assert!((vcpus(128) - 0.0724).abs() < 1e-3);
        // Linear credits: 10,240 MB is 5.79 vCPU (AWS's "6 vCPU" is the rounded figure).
        assert!((vcpus(10_240) - 5.788).abs() < 1e-3);
        assert!(vcpus(20_000) <= MAX_VCPUS);
    }
}
