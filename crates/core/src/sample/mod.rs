//! What one run measured. Every raw sample is kept; statistics are computed later.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod failure;
pub mod mark;
pub mod phase;
pub mod read_set;
pub mod section;

pub use failure::{describe_failure, describe_untimed};
pub use mark::{Mark, MarkSource};
pub use phase::Phase;
pub use read_set::ReadSet;
pub use section::Section;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    Ready,
    /// The target exited before it was ready.
    ExitedEarly,
    /// `--ready exit`: the target exited with a status that is not success
    /// (a non-zero code not in --success-exit-codes, or a signal).
    ExitFailure,
    /// Not ready within --timeout.
    Timeout,
    /// coldstart was interrupted (Ctrl-C / SIGTERM) during the run.
    Interrupted,
    /// The target reported a failure of its own (Lambda: an `/init/error`, an
    /// extension error, a process exit during init, an invoke error or timeout).
    Failed {
        error_type: String,
    },
    /// The memory limit (`--memory`) killed a process of the run's tree (the
    /// cgroup's OOM kill count says so): before it was ready, or a child while the
    /// root went on.
    OutOfMemory {
        limit_bytes: u64,
        /// The cgroup's `oom_kill` count; 0 in records from before it was kept.
        #[serde(default)]
        kills: u64,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ExitStatus {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl ExitStatus {
    /// From a wait(2) status word.
    pub fn from_wait(status: i32) -> ExitStatus {
        if libc::WIFEXITED(status) {
            ExitStatus {
                code: Some(libc::WEXITSTATUS(status)),
                signal: None,
            }
        } else if libc::WIFSIGNALED(status) {
            ExitStatus {
                code: None,
                signal: Some(libc::WTERMSIG(status)),
            }
        } else {
            ExitStatus {
                code: None,
                signal: None,
            }
        }
    }
}

impl std::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.code, self.signal) {
            (Some(c), _) => write!(f, "exit code {c}"),
            (None, Some(s)) => write!(f, "killed by signal {s}"),
            _ => write!(f, "unknown status"),
        }
    }
}

/// Which exit statuses count as success (for `--ready exit`, and for a main process
/// that exits to leave a daemon behind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitPolicy {
    /// These exit codes; death by a signal never succeeds.
    Codes(Vec<i32>),
    /// `-i/--ignore-failure`: any status counts.
    Ignore,
}

impl Default for ExitPolicy {
    fn default() -> Self {
        ExitPolicy::Codes(vec![0])
    }
}

impl ExitPolicy {
    pub fn accepts(&self, status: &ExitStatus) -> bool {
        match self {
            ExitPolicy::Ignore => true,
            ExitPolicy::Codes(codes) => status.code.is_some_and(|c| codes.contains(&c)),
        }
    }

    /// From the command line's `-i/--ignore-failure` and `--success-exit-codes`
    /// (at most one of them).
    pub fn from_flags(ignore_failure: bool, success_exit_codes: Option<&str>) -> anyhow::Result<ExitPolicy> {
        match (success_exit_codes, ignore_failure) {
            (Some(_), true) => {
                anyhow::bail!("give either -i/--ignore-failure or --success-exit-codes, not both")
            }
            (Some(codes), false) => ExitPolicy::parse_codes(codes),
            (None, true) => Ok(ExitPolicy::Ignore),
            (None, false) => Ok(ExitPolicy::default()),
        }
    }

    /// `0,3` → Codes([0, 3]).
    pub fn parse_codes(s: &str) -> anyhow::Result<ExitPolicy> {
        let codes = s
            .split(',')
            .map(|c| {
                c.trim()
                    .parse::<i32>()
                    .ok()
                    .filter(|c| (0..=255).contains(c))
                    .ok_or_else(|| {
                        anyhow::anyhow!("bad --success-exit-codes '{s}': write exit codes 0-255 separated by commas, e.g. 0,3")
                    })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(ExitPolicy::Codes(codes))
    }
}

/// Resource use of the whole process tree up to the ready instant.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Usage {
    /// User + system CPU of the tree. Exit readiness: from rusage. Otherwise: the
    /// scheduler's per-thread runtime (ns precision) of live threads plus what
    /// exited children used, never less than the tick-based user + sys below.
    pub cpu_total_us: u64,
    /// User and system split; clock-tick resolution (10 ms) for live processes.
    pub cpu_user_us: u64,
    pub cpu_sys_us: u64,
    /// Exit readiness: ru_maxrss (largest single process). Otherwise: sum of VmHWM
    /// over the processes alive at ready. None when it cannot be told apart from
    /// coldstart's own RSS: after a vfork+exec, Linux starts the child's maxrss at
    /// the parent's high-water mark.
    pub peak_rss_kb: Option<u64>,
    pub minor_faults: u64,
    pub major_faults: u64,
    /// Processes in the tree at ready (exit readiness: the target itself plus
    /// orphans it left; children already waited for by the target are not seen).
    pub processes: u64,
    pub threads: u64,
}

impl Usage {
    /// Add another part of the tree (peak RSS: the larger of the two).
    pub fn add(&mut self, other: &Usage) {
        self.cpu_total_us += other.cpu_total_us;
        self.cpu_user_us += other.cpu_user_us;
        self.cpu_sys_us += other.cpu_sys_us;
        self.peak_rss_kb = self.peak_rss_kb.max(other.peak_rss_kb);
        self.minor_faults += other.minor_faults;
        self.major_faults += other.major_faults;
        self.processes += other.processes;
        self.threads += other.threads;
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sample {
    pub variant: usize,
    /// Round number (0-based); warmups have their own rounds before the first.
    pub round: usize,
    pub warmup: bool,
    /// Time zero: CLOCK_MONOTONIC ns taken immediately before the spawn, so
    /// instants the target records on the same clock line up with ours.
    pub t0_mono_ns: u64,
    pub outcome: Outcome,
    /// Spawn → ready, ns. Present only when outcome is Ready.
    pub ready_ns: Option<u64>,
    /// The target's exit status, when it exited on its own (exit readiness or early exit).
    pub exit_status: Option<ExitStatus>,
    pub usage: Usage,
    /// Named groups of the log readiness regex, per run (text, as the target printed it).
    pub captures: BTreeMap<String, String>,
    /// Numbers a source measured in this run, by name, with the unit in the name
    /// (`billed_ms`, `max_memory_mb`): summarised per variant by analysis.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, f64>,
    /// Latencies of the requests sent after ready (first = cold handler).
    pub requests_ns: Vec<u64>,
    /// SIGTERM → exit of the main process, ns (None if it had already exited or was killed).
    pub shutdown_ns: Option<u64>,
    /// Whether SIGKILL was needed after the grace period.
    pub killed: bool,
    /// Named instants reported during the run, in time order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<Mark>,
    /// Output lines claimed by runtime adapters (ns since t0 when read, line);
    /// explain's adapted runs only, never stored.
    #[serde(skip)]
    pub claimed: Vec<(u64, String)>,
    /// The syscall trace of a run made under the tracer (explain's traced arm).
    /// Raw events are large: kept in memory for the timeline, never stored.
    #[serde(skip)]
    pub trace: Option<Box<coldstart_trace::Trace>>,
    /// The CPU samples of a profiled run (explain --profile), unresolved; never stored.
    #[serde(skip)]
    pub profile: Option<Box<coldstart_profile::Recording>>,
    /// Last lines of the target's stdout+stderr, kept for failed runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_tail: Vec<String>,
    /// The shard of a fleet experiment that ran it (set when read back from the
    /// store, which files each run under its shard); None when not sharded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<u32>,
    /// A container run's reads of its image until ready (`--read-set`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_set: Option<Box<ReadSet>>,
}

/// Where a run is in its experiment.
#[derive(Debug, Clone, Copy)]
pub struct RunId {
    pub variant: usize,
    pub round: usize,
    pub warmup: bool,
}

impl Sample {
    /// A run's record at its spawn: nothing measured yet, and a timeout until
    /// ready, an exit or an interrupt says otherwise.
    pub fn begin(id: &RunId, t0_mono_ns: u64) -> Sample {
        Sample {
            variant: id.variant,
            round: id.round,
            warmup: id.warmup,
            t0_mono_ns,
            outcome: Outcome::Timeout,
            ready_ns: None,
            exit_status: None,
            usage: Usage::default(),
            captures: BTreeMap::new(),
            metrics: BTreeMap::new(),
            requests_ns: Vec::new(),
            shutdown_ns: None,
            killed: false,
            marks: Vec::new(),
            claimed: Vec::new(),
            trace: None,
            profile: None,
            output_tail: Vec::new(),
            shard: None,
            read_set: None,
        }
    }

    pub fn ok(&self) -> bool {
        self.outcome == Outcome::Ready
    }
}
