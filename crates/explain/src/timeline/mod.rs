//! From a [`Trace`] to marks, phases that tile the run, and groupings.
//!
//! The trace's events carry absolute CLOCK_MONOTONIC times (the tracer's raw
//! data); a timeline counts every time from the run's time zero (ns since the
//! spawn), like a Sample's marks and a Section's spans, so a stored timeline
//! stands on its own. [`Timeline::t0_mono_ns`] says where time zero was.
//!
//! # The service process
//!
//! The phases are those of one process of the tree, the *service process*
//! ([`Timeline::service`]): the one the readiness probe talks to (tcp/http: the
//! process listening on the probe's port; `listen`: the one whose listen made
//! the run ready; `exit`, log and file: the root's program, past shells (a
//! wrapper such as pyenv's `pip-rehash/pip`) that forked and waited on it).
//! The *path* is the chain of forks from the
//! root to it; every other process is a lane of its own ([`ProcessInfo::role`]
//! `helper`), with the time it held the path ([`ProcessInfo::blocked_ns`]):
//! only while a path process waited for it (wait4/waitid, or reading its output
//! until it ended), never merely for ending inside the path's stretch.
//!
//! # Phases (each starts where the previous ends)
//!
//! * `exec-chain`: time zero → the exec of the *final program*, the service
//!   process's last successful exec. Wrappers and shims (the pyenv `python3`
//!   bash shim execs `pyenv`, which execs `pyenv-exec`, which execs the
//!   interpreter), and the execs of the path's processes before each forked the
//!   next, are the steps of [`Timeline::exec_chain`], each with its own cost.
//! * `loader`: final exec → the last executable mapping of a shared library by
//!   that process *before its first successful open of a file that is not
//!   part of dynamic loading* (a library, `/etc/ld.so.*`). That first ordinary
//!   open is where the program's own code takes over; libraries `dlopen`ed later
//!   (Python extension modules, `libjvm.so` after `jvm.cfg`) count as init. A
//!   static binary (Go) maps nothing: the phase is empty.
//! * `init`: loader end → the service process's listen (on the probe's port),
//!   or → the end of the trace when it does not listen. A helper's listen
//!   (epmd's, a sidecar's) does not end init.
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
mod script;
mod service;

use coldstart_core::trace::{Event, SockAddr, Trace};
use serde::{Deserialize, Serialize};

pub use coldstart_core::sample::{Mark, Phase};
pub use files::package_key;
pub use phases::add_ready_phases;
pub use script::script;
pub use service::{past_shells, ServiceHint};

/// One program on the way to the service process, running from its exec to
/// the next step's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecStep {
    pub start_ns: u64,
    /// The next step's exec; `None` for the final program.
    pub end_ns: Option<u64>,
    pub path: String,
    /// What the kernel ran (the interpreter of a script).
    pub exe: String,
    pub argv0: String,
    /// The process that exec'd (the root, or a process on the path to the service).
    #[serde(default)]
    pub pid: i32,
    #[serde(default)]
    pub argv: Vec<String>,
    /// The script the interpreter runs (`bash start.sh` → start.sh), if any.
    #[serde(default)]
    pub script: Option<String>,
}

impl ExecStep {
    /// What a report names: the script when an interpreter runs one, else the path.
    pub fn label(&self) -> &str {
        self.script.as_deref().unwrap_or(&self.path)
    }
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

/// A thread a process started, with the name it gave itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadInfo {
    pub tid: i32,
    /// Its `/proc/PID/task/TID/comm` as the tracer last read it (at its exit,
    /// or before the kill at the end); `None` when it could not be read.
    pub name: Option<String>,
    pub start_ns: u64,
    pub exit_ns: Option<u64>,
}

/// The process the phases are about, and the fork path to it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceInfo {
    pub pid: i32,
    /// Why this one ("listens on 127.0.0.1:8000, the probe's port").
    pub why: String,
    /// Its listen that ends init (on the probe's port when known).
    pub listen: Option<ListenInfo>,
    /// Root → … → the service, through the forks.
    pub path: Vec<i32>,
    /// How much of the critical path other processes held (the union of their
    /// [`ProcessInfo::blocked_ns`] spans).
    pub blocked_ns: u64,
}

/// One process of the tree: a lane of the report.
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
    /// Its current argv (from its last exec, or inherited).
    #[serde(default)]
    pub argv: Vec<String>,
    /// The script its interpreter runs (`bash start.sh` → start.sh).
    #[serde(default)]
    pub script: Option<String>,
    /// Its name (`/proc/PID/comm`) as the tracer last read it.
    #[serde(default)]
    pub name: Option<String>,
    /// `service`, `launcher` (on the fork path to the service) or `helper`.
    #[serde(default)]
    pub role: String,
    /// For a helper: how long it held the critical path: while the path
    /// process it hangs off waited for it (or for the child of that process
    /// it descends from), within that process's stretch of the path; 0 when
    /// it only ran alongside, however it ended (see [`ProcessInfo::waited`]).
    #[serde(default)]
    pub blocked_ns: u64,
    /// Since when its parent waited for it (to its exit): the parent's last
    /// traced activity before the end, a wait4/waitid it was blocked in or an
    /// earlier call. `None` when its parent never collected its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited_from_ns: Option<u64>,
    /// How the tracer knows its parent waited: `wait` (the parent sat in
    /// wait4/waitid for it), `reaped` (the parent collected its end afterwards
    /// and made no traced call from `waited_from_ns` to it: reading its output,
    /// as `$(helper)` does, is the likely reading, an inference); empty: not waited for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub waited: String,
    /// For a helper: how long its life overlapped the critical path's stretch
    /// it started in (≥ `blocked_ns`). A helper still running when the path
    /// moved on may have been waited for all the same (a script waiting for
    /// it to listen): the tracer cannot tell, so this says how much it could
    /// have held.
    #[serde(default)]
    pub overlap_ns: u64,
    /// The threads it started, with their names.
    #[serde(default)]
    pub thread_list: Vec<ThreadInfo>,
}

impl ProcessInfo {
    /// What a report names: its script, else its program (base name), else `pid N`.
    pub fn label(&self) -> String {
        let name = self
            .script
            .as_deref()
            .filter(|s| !s.is_empty())
            .unwrap_or(&self.program);
        match name.rsplit('/').next().filter(|n| !n.is_empty()) {
            Some(n) => n.to_string(),
            None => format!("pid {}", self.pid),
        }
    }
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
    /// The process the phases are about (see the module docs).
    #[serde(default)]
    pub service: ServiceInfo,
    pub exec_chain: Vec<ExecStep>,
    pub phases: Vec<Phase>,
    /// The tracer's marks ([`coldstart_core::sample::MarkSource::Tracer`]), in time order.
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

/// Build the timeline of a trace, the service process found from the first
/// listen (or the root): [`build_for`] with [`ServiceHint::FirstListen`].
pub fn build(trace: &Trace) -> Timeline {
    build_for(trace, ServiceHint::FirstListen)
}

/// Build the timeline of a trace for a readiness probe: `hint` says which
/// process the probe talks to (see [`ServiceHint::of`]).
pub fn build_for(trace: &Trace, hint: ServiceHint) -> Timeline {
    let root = trace.root_pid;
    let events = events(trace);
    let end = trace
        .end_ns
        .saturating_sub(trace.t0_ns)
        .max(events.iter().map(|e| e.t_ns).max().unwrap_or(0));

    let mut processes = processes::tree(&events, root, &trace.task_names);
    service::waits(&events, trace, &mut processes);
    let listens = net::listens(&events);
    let (pid, why, listen) = service::find(&events, &processes, &listens, hint);
    let service = service::resolve(&mut processes, pid, why, listen, end);
    let starts = |p: i32| processes.iter().find(|x| x.pid == p).map_or(0, |x| x.start_ns);
    let exec_chain = exec::chain(&events, &service.path, &starts);
    let (final_exec, final_pid) = exec_chain.last().map_or((0, pid), |s| (s.start_ns, s.pid));
    let loader_end = exec::loader_end(&events, final_pid, final_exec);
    let init_end = service.listen.as_ref().map_or(end, |l| l.t_ns).max(loader_end);
    let phases = phases::tiling(final_exec, loader_end, init_end);
    let connects = net::connects(&events, (loader_end, init_end));
    let (opens_by_kind, opens_by_package) = files::open_groups(&events);
    let marks = marks::marks(
        &events,
        &marks::Found {
            chain: &exec_chain,
            loader_end,
            first_listen: service.listen.as_ref().or(listens.first()),
            root: &processes[0],
        },
    );
    let counts = counts::tally(&events, &processes, &connects);

    Timeline {
        t0_mono_ns: trace.t0_ns,
        end_ns: end,
        root_pid: root,
        service,
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
