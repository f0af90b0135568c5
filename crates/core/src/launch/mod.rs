//! Starting a target and making sure nothing of it outlives its run.
//!
//! - `spawn`: build the command outside the timed region, spawn it (clone + exec) in its own
//!   process group and run cgroup, capture its output.
//! - `procfs`: a run's processes as /proc shows them (every descendant, including
//!   double-forked daemons, which the child-subreaper attribute brings back to us).
//! - `reaping`: who may `waitpid(-1)` (never while a trace session is live), and the
//!   one reaper of a single exited child (runs and lambda's processes alike).
//! - `tree`: kill and reap everything of a run.
//! - `usage`: CPU, memory, faults, processes/threads from rusage or procfs.
//! - `signals`: Ctrl-C / SIGTERM / SIGHUP / SIGQUIT of coldstart itself kills the running tree.
//! - `cgroup`: a cgroup per run, entered by the child before exec; killed as a whole.
//! - `limit_cgroups`: the cgroups that apply `crate::limits` (v2 or v1), entered with the run's
//!   own before exec; the tree's peak memory and OOM kills read back from them.
//! - `watchdog`: a process that kills the runs' cgroups (and groups) when coldstart dies.
//! - `output`: the target's output lines (per stream), the last few kept, claimed ones set aside.
//! - `wait`: ppoll with ns timeouts and tight timer slack while probing.
//! - `lab`: the Lab, the process-wide state (reserved COLDSTART_FD, watchdog, subreaper,
//!   signals, the reaping lock).
//! - `traced`: options for starting a target under the tracer (crates/trace) with the
//!   same cleanup guarantees as a plain spawn.
//!
//! The files form a tree, no import goes back up (each line imports only from
//! the lines above it): `wait`, `output`, `procfs`, `reaping` · `cgroup`,
//! `usage` · `limit_cgroups`, `watchdog` · `signals` · `lab` · `tree` · `spawn`,
//! `traced`.

pub mod cgroup;
pub mod lab;
pub mod limit_cgroups;
pub mod output;
pub mod procfs;
pub mod reaping;
pub mod signals;
pub mod spawn;
pub mod traced;
pub mod tree;
pub mod usage;
pub mod wait;
pub mod watchdog;
