//! From a [`Trace`] to marks, phases that tile the run, and groupings.
//!
//! The trace's events carry absolute CLOCK_MONOTONIC times (the tracer's raw
//! data); a timeline counts every time from the run's time zero (ns since the
//! spawn), like a Sample's marks and a Section's spans, so a stored timeline
//! stands on its own. [`Timeline::t0_mono_ns`] says where time zero was.
//!
//! # Phases (each starts where the previous ends)
//!
//! * `exec-chain`: time zero → the exec of the *final program*, the last
//!   successful exec of the root process. Wrappers and shims (the pyenv
//!   `python3` bash shim execs `pyenv`, which execs `pyenv-exec`, which execs
//!   the interpreter) are the steps of [`Timeline::exec_chain`], each with its
//!   own cost.
//! * `loader`: final exec → the last executable mapping of a shared library by
//!   the root process *before its first successful open of a file that is not
//!   part of dynamic loading* (a library, `/etc/ld.so.*`). That first ordinary
//!   open is where the program's own code takes over; libraries `dlopen`ed later
//!   (Python extension modules, `libjvm.so` after `jvm.cfg`) count as init. A
//!   static binary (Go) maps nothing: the phase is empty.
//! * `init`: loader end → the first successful listen(2) anywhere in the tree,
//!   or → the end of the trace when nothing listens.
//!
//! `listen → ready` and `first request` come from the probe, not the tracer:
//! [`add_ready_phases`].

mod counts;
mod exec;
mod files;
mod marks;
mod net;
mod phases;
mod processes;

use crate::trace::{Event, SockAddr, Trace};
use serde::{Deserialize, Serialize};

pub use crate::sample::{Mark, Phase};
pub use files::package_key;
pub use phases::add_ready_phases;

/// One program of the root's exec chain, running from its exec to the next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecStep {
    pub start_ns: u64,
    /// The next exec of the root; `None` for the final program.
    pub end_ns: Option<u64>,
    pub path: String,
    /// What the kernel ran (the interpreter of a script).
    pub exe: String,
    pub argv0: String,
}

/// Opens of one kind, or under one package/directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenGroup {
    pub key: String,
    /// Successful opens.
    pub opened: usize,
    /// Failed opens (module path probing shows up here).
    pub failed: usize,
    pub first_ns: u64,
    pub last_ns: u64,
    /// last − first: the stretch of the run this group's loading covers.
    pub span_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectInfo {
    pub t_ns: u64,
    pub pid: i32,
    pub fd: i32,
    pub addr: Option<SockAddr>,
    pub ok: bool,
    pub errno: i32,
    /// Time until the socket was usable: the syscall itself for a blocking
    /// connect (or a failure), connect → first write for a non-blocking one
    /// (`EINPROGRESS`); `None` when no write followed.
    pub latency_ns: Option<u64>,
    pub during_init: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenInfo {
    pub t_ns: u64,
    pub pid: i32,
    pub fd: i32,
    pub addr: Option<SockAddr>,
}

/// One process of the tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInfo {
    pub pid: i32,
    pub parent: Option<i32>,
    /// Fork time (time zero for the root).
    pub start_ns: u64,
    pub exit_ns: Option<u64>,
    pub exit_code: Option<i32>,
    pub exit_signal: Option<i32>,
    /// Its last exec'd program (inherited from the parent until it execs).
    pub program: String,
    pub execs: usize,
    /// Threads it started.
    pub threads: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub processes: usize,
    /// Threads started beyond each process's main thread.
    pub threads: usize,
    pub execs: usize,
    pub exec_failures: usize,
    pub opens: usize,
    pub opens_failed: usize,
    pub libraries_mapped: usize,
    pub connects: usize,
}

/// Every `*_ns` instant counts from time zero (the spawn); durations are ns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    /// Time zero on CLOCK_MONOTONIC: the trace's `t0_ns`, to line a timeline
    /// up with its raw trace or with instants the target recorded itself.
    pub t0_mono_ns: u64,
    /// The last instant the tracer saw.
    pub end_ns: u64,
    pub root_pid: i32,
    pub exec_chain: Vec<ExecStep>,
    pub phases: Vec<Phase>,
    /// The tracer's marks ([`crate::sample::MarkSource::Tracer`]), in time order.
    pub marks: Vec<Mark>,
    /// Largest (most files opened) first.
    pub opens_by_kind: Vec<OpenGroup>,
    pub opens_by_package: Vec<OpenGroup>,
    pub connects: Vec<ConnectInfo>,
    pub listens: Vec<ListenInfo>,
    pub processes: Vec<ProcessInfo>,
    pub counts: Counts,
}

/// A trace event on the run's clock: the boundary where absolute times become
/// ns since time zero.
struct Ev<'a> {
    t_ns: u64,
    pid: i32,
    tid: i32,
    event: &'a Event,
}

/// The trace's events in time order (ties keep the tracer's order), since time zero.
fn events(trace: &Trace) -> Vec<Ev<'_>> {
    let mut events: Vec<Ev> = trace
        .events
        .iter()
        .map(|e| Ev {
            t_ns: e.ts_ns.saturating_sub(trace.t0_ns),
            pid: e.pid,
            tid: e.tid,
            event: &e.event,
        })
        .collect();
    events.sort_by_key(|e| e.t_ns); // stable
    events
}

/// Build the timeline of a trace.
pub fn build(trace: &Trace) -> Timeline {
    let root = trace.root_pid;
    let events = events(trace);
    let end = trace
        .end_ns
        .saturating_sub(trace.t0_ns)
        .max(events.iter().map(|e| e.t_ns).max().unwrap_or(0));

    let exec_chain = exec::chain(&events, root);
    let final_exec = exec_chain.last().map_or(0, |s| s.start_ns);
    let loader_end = exec::loader_end(&events, root, final_exec);
    let listens = net::listens(&events);
    let init_end = listens.first().map_or(end, |l| l.t_ns).max(loader_end);
    let phases = phases::tiling(final_exec, loader_end, init_end);
    let connects = net::connects(&events, (loader_end, init_end));
    let (opens_by_kind, opens_by_package) = files::open_groups(&events);
    let processes = processes::tree(&events, root);
    let marks = marks::marks(
        &events,
        &marks::Found {
            chain: &exec_chain,
            loader_end,
            first_listen: listens.first(),
            root: &processes[0],
        },
    );
    let counts = counts::tally(&events, &processes, &connects);

    Timeline {
        t0_mono_ns: trace.t0_ns,
        end_ns: end,
        root_pid: root,
        exec_chain,
        phases,
        marks,
        opens_by_kind,
        opens_by_package,
        connects,
        listens,
        processes,
        counts,
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod traced_tests;
