//! The syscall tracer behind `coldstart explain`: ptrace plus a seccomp filter,
//! following the whole process tree (forks, vforks, threads, execs).
//!
//! # How it works
//!
//! A dedicated tracer thread forks the target. The child waits until the tracer
//! has `PTRACE_SEIZE`d it (options set atomically with the attach), puts itself in
//! its own process group, sets `no_new_privs`, installs a seccomp filter and
//! execs. The filter (see [`seccomp`]) returns `SECCOMP_RET_TRACE` for the few
//! syscalls we care about and `SECCOMP_RET_ALLOW` for everything else, so the
//! tracee stops only on those: a traced run of `python3 -c pass` stops ~240 times
//! for its ~1,200 syscalls. Where the result of a syscall matters (open success, connect
//! latency, accept's new fd, listen) the tracer lets that one syscall run to its
//! exit stop (`PTRACE_SYSCALL`), then goes back to `PTRACE_CONT`.
//! Timestamps are `CLOCK_MONOTONIC` nanoseconds taken when the tracer sees the stop.
//!
//! # API
//!
//! * [`trace`]: run a target to a stop condition ([`StopWhen`]) or timeout, kill
//!   what is left of its tree, return the [`Trace`]. Nothing is left running.
//! * [`start`] / [`Session`]: the same, step by step, for callers that probe the
//!   target (HTTP, TCP, log) while it is traced: `start` returns once the target has
//!   exec'd; [`Session::status`] / [`Session::wait`] watch it; [`Session::finish`]
//!   kills the rest of the tree and hands back the events.
//!
//! A tracee cannot simply be detached once it has reached `listen`: the seccomp
//! filter stays installed for the life of the process, and without a tracer the
//! kernel fails every `SECCOMP_RET_TRACE`d syscall with `ENOSYS`. So the tracer
//! stays attached until the tree is gone; a server stays usable (and observed:
//! accept, first response) while the caller probes it.
//!
//! Build a `timeline::Timeline` (src/timeline) from a [`Trace`] for phases, marks and groupings,
//! and `report::chrome_trace::to_chrome_trace` for a Perfetto-loadable file.
//!
//! ```ignore
//! // explain --ready exit -- python3 -c pass
//! let mut opts = TraceOptions::new(target.argv.clone(), target.program.clone());
//! opts.env = target.env.clone();
//! opts.cwd = target.cwd.clone();
//! let trace = trace::trace(&opts)?;                  // Outcome::Reached once the tree exited
//! let timeline = coldstart::timeline::build(&trace);
//! let json = report::chrome_trace::to_chrome_trace(&trace, &timeline, &[]);
//!
//! // explain --ready http://127.0.0.1:8080/ -- ./server
//! opts.stop_when = StopWhen::FirstResponse;
//! let mut session = trace::start(&opts)?;            // returns after the target's exec
//! // ... poll the probe on this thread, checking session.status().exited ...
//! // (the tracer sees accept and the first response write while the probe runs)
//! let trace = session.finish()?;                    // kills the tree, returns all events
//! ```
//!
//! # Cost
//!
//! Each stop costs two context switches plus a few syscalls in the tracer (in
//! this VM ~13 µs of kernel time per stop, ~25 µs all in). An open costs two
//! stops (entry, and the exit for its result), everything else one; thread and
//! process exits one each. `python3 -c pass` makes ~240 stops.
//!
//! # Caveats for callers
//!
//! * While a [`Session`] is live, no other thread of this process may call
//!   `wait`/`waitpid(-1, ..)` without `__WNOTHREAD`: Linux lets any thread of the
//!   tracer's process collect the tracees' ptrace stops, and a stolen stop would
//!   leave a tracee stopped forever. Waiting for specific pids is fine, and so is
//!   a reaping `waitpid(-1, WNOHANG)` after [`Session::finish`].
//! * The tracer reaps the root (its own child). Orphans of the tree are
//!   reparented to the nearest child subreaper (coldstart is one): the tracer
//!   collects their exit as their tracer, but the zombie is the new parent's to reap.
//! * The tracer thread's `waitpid` never touches children other threads started.
//!
//! # Limits (reported, never silent)
//!
//! * ptrace denied (Yama `ptrace_scope` 3, a container without `CAP_SYS_PTRACE` /
//!   with a seccomp profile blocking ptrace): [`start`] fails with a message saying so.
//! * setuid/setgid programs run without their privileges (`no_new_privs` is
//!   required to install the filter unprivileged, and ptrace would drop them
//!   anyway): the exec is traced and a warning is added to [`Trace::warnings`].
//! * Only the native syscall ABI is traced (x86_64 or aarch64): 32-bit (i386/x32)
//!   processes in the tree run untraced.
//! * A program that itself uses ptrace (a debugger, strace) cannot attach to its
//!   children while traced.
//! * Non-blocking connects: the syscall returns `EINPROGRESS`; the time until the
//!   socket was usable is taken as the first write on it (see [`Event::FirstWrite`]).

mod procfs;
mod ptrace;
pub mod seccomp;

#[cfg(test)]
mod oracle_tests;
#[cfg(test)]
use coldstart_testkit as testkit;

use anyhow::{anyhow, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::net::IpAddr;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What to trace and until when.
#[derive(Debug)]
pub struct TraceOptions {
    /// argv as the program will see it (`argv[0]` included).
    pub argv: Vec<String>,
    /// Resolved path of the program to exec (no PATH lookup is done here).
    pub program: PathBuf,
    /// Variables added to (or overriding) our own environment.
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    /// Upper bound for [`trace`] and [`Session::wait`], counted from time zero.
    pub timeout: Duration,
    pub stop_when: StopWhen,
    /// Where the target's stdout and stderr go (a memfd, a pipe, a file);
    /// `None` sends them to /dev/null. Stdin is always /dev/null.
    pub output: Option<OwnedFd>,
    /// Cgroups' `cgroup.procs`, opened for writing: the child is moved into
    /// each before it is released to exec, so its whole tree is there. The
    /// kernel's wait during the moves is taken out of time zero. A move marked
    /// required (a limiting cgroup) that fails fails the start.
    pub cgroup_procs: Vec<CgroupProcs>,
    /// Asked while waiting: true ends [`Session::wait`] with `Interrupted`
    /// (the embedder's Ctrl-C, say). The tracer installs no signal handler.
    pub interrupted: fn() -> bool,
}

/// One cgroup the traced child is moved into before its exec.
#[derive(Debug)]
pub struct CgroupProcs {
    pub procs: OwnedFd,
    pub required: bool,
}

impl TraceOptions {
    /// Options with no extra env, our cwd, a 60 s timeout, [`StopWhen::Exit`], output discarded.
    pub fn new(argv: Vec<String>, program: PathBuf) -> Self {
        TraceOptions {
            argv,
            program,
            env: Vec::new(),
            cwd: None,
            timeout: Duration::from_secs(60),
            stop_when: StopWhen::Exit,
            output: None,
            cgroup_procs: Vec::new(),
            interrupted: || false,
        }
    }
}

/// When [`trace`] / [`Session::wait`] consider the run done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopWhen {
    /// The whole process tree has exited.
    Exit,
    /// Any process of the tree completed a successful listen(2).
    Listen,
    /// Any process wrote to a socket it had accepted (a first response).
    /// Something else must send the request, e.g. a probe on another thread.
    /// (explain probes on its own thread and uses the session's status instead.)
    #[cfg_attr(not(test), allow(dead_code))]
    FirstResponse,
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The [`StopWhen`] condition was met (for `Exit`: the tree exited).
    Reached,
    /// The whole tree exited before the condition was met.
    Exited,
    /// The timeout passed first.
    TimedOut,
    /// coldstart was interrupted (Ctrl-C, SIGTERM, …) first.
    Interrupted,
    /// Nobody waited (the caller went straight to [`Session::finish`]).
    NotWaited,
}

/// Everything a traced run produced.
#[derive(Debug, Clone, Serialize)]
pub struct Trace {
    /// Time zero (CLOCK_MONOTONIC ns), taken right before the fork.
    pub t0_ns: u64,
    /// When tracing ended: the last exit seen, or the moment we started killing.
    pub end_ns: u64,
    pub root_pid: i32,
    /// Sorted by `ts_ns` (stable: the tracer's order on ties).
    pub events: Vec<TraceEvent>,
    /// Some of the tree was still running at the end and was killed by us.
    pub killed: bool,
    pub outcome: Outcome,
    /// Things that make the trace less than complete (setuid execs, ...).
    pub warnings: Vec<String>,
    /// The root process's resource use, from the tracer's wait4 when it reaped
    /// it (None if it was still running when tracing ended).
    #[serde(default)]
    pub root_usage: Option<RootUsage>,
    /// The name of every task the tracer could read one for (tid → its
    /// `/proc/tid/comm`: what threads call themselves, "java", "epmd"…),
    /// read while it lived: at its exit, or right before the kill at the end.
    #[serde(default)]
    pub task_names: BTreeMap<i32, String>,
    /// Every ptrace stop of the tree, in the order seen (not serialized: a
    /// server's boot can make hundreds of thousands). What the tracer costs a
    /// run is mostly these: explain's untraced estimate subtracts them.
    #[serde(skip)]
    pub stops: Vec<Stop>,
    /// Processes' main threads' CPU accounting, read at their exec, executable
    /// mmaps, listen and exit: what a phase spent on a CPU, waiting for one,
    /// and neither (off CPU: sleeping, blocked, or held at a stop).
    #[serde(skip)]
    pub cpu: Vec<CpuReading>,
}

/// A process's main thread's scheduler accounting at an instant
/// (`/proc/PID/schedstat`; exec keeps it, so it counts the task's whole life).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuReading {
    /// CLOCK_MONOTONIC ns when it was read.
    pub ts_ns: u64,
    pub pid: i32,
    /// ns it ran on a CPU so far.
    pub run_ns: u64,
    /// ns it waited on a run queue (runnable, not running) so far.
    pub wait_ns: u64,
    /// The tracer thread's own ns on a CPU and waiting for one so far: while
    /// it handles a stop, or waits for a CPU to handle it, the tracee is held
    /// off CPU (the part of a stop's cost a busy machine makes large).
    pub tracer_run_ns: u64,
    pub tracer_wait_ns: u64,
}

/// One ptrace stop: a tracee held by the tracer (or a process's death, which
/// reaches its parent only once the tracer has collected it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop {
    /// CLOCK_MONOTONIC ns when the tracer saw the stop.
    pub ts_ns: u64,
    /// The process (thread group) held.
    pub pid: i32,
    /// How long the tracer took before resuming it (decoding, reading memory
    /// and procfs); the kernel's round trip around it is not in here.
    pub held_ns: u32,
}

/// What wait4(2) reports for a reaped process: its own use plus that of the
/// children it waited for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootUsage {
    pub user_us: u64,
    pub sys_us: u64,
    /// ru_maxrss: the largest resident set of the process or a waited child.
    pub maxrss_kb: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
}

impl RootUsage {
    pub fn from_rusage(ru: &libc::rusage) -> RootUsage {
        let us = |tv: libc::timeval| tv.tv_sec.max(0) as u64 * 1_000_000 + tv.tv_usec.max(0) as u64;
        RootUsage {
            user_us: us(ru.ru_utime),
            sys_us: us(ru.ru_stime),
            maxrss_kb: ru.ru_maxrss.max(0) as u64,
            minor_faults: ru.ru_minflt.max(0) as u64,
            major_faults: ru.ru_majflt.max(0) as u64,
        }
    }
}

/// One thing a traced task did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceEvent {
    /// CLOCK_MONOTONIC ns when the tracer saw the stop. For syscalls whose
    /// result we wait for, the entry stop (the syscall's start), except
    /// `Accept`: its exit (when the connection was taken).
    pub ts_ns: u64,
    /// Process id (thread group id).
    pub pid: i32,
    /// Thread id (== pid for a process's main thread).
    pub tid: i32,
    #[serde(flatten)]
    pub event: Event,
}

/// The events. Paths are absolute where the tracer could resolve them
/// (relative paths are joined to the task's cwd or the dirfd's path).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// A successful execve/execveat (seen at `PTRACE_EVENT_EXEC`).
    /// `path` is the path given to execve, `exe` what the kernel ran
    /// (/proc/pid/exe: the interpreter for a script), `argv0` the new `argv[0]`,
    /// `argv` all of it (from /proc/pid/cmdline: for a `#!` script, the
    /// interpreter's argv, the script's path among its arguments).
    Exec {
        path: String,
        exe: String,
        argv0: String,
        argv: Vec<String>,
    },
    /// An execve/execveat that failed (PATH search misses, ENOEXEC, ...).
    ExecFailed { path: String, errno: i32 },
    /// open/openat/openat2. `flags` are the open flags (O_DIRECTORY, O_CREAT, ...).
    Open {
        path: String,
        ok: bool,
        errno: i32,
        flags: u64,
    },
    /// mmap with PROT_EXEC of a file (a library or executable segment).
    MmapExec { path: String },
    /// connect(2). `dur_ns` is the syscall's own duration: the handshake for a
    /// blocking socket, ~0 with `EINPROGRESS` for a non-blocking one.
    Connect {
        fd: i32,
        addr: Option<SockAddr>,
        ok: bool,
        errno: i32,
        dur_ns: u64,
    },
    Bind {
        fd: i32,
        addr: Option<SockAddr>,
        ok: bool,
        errno: i32,
    },
    /// A successful listen(2); `addr` is the bound address (the real port
    /// when bound to port 0), from /proc/pid/net or the earlier bind.
    Listen { fd: i32, addr: Option<SockAddr> },
    /// A successful accept/accept4: `fd` is the new connection.
    Accept { listen_fd: i32, fd: i32 },
    /// First write/writev/sendto/sendmsg on a socket we saw accepted or
    /// connected with `EINPROGRESS` (one per such fd).
    FirstWrite { fd: i32, role: SocketRole },
    /// A wait4/waitid that returned the end (exit or kill) of `child`, reaped
    /// or (WNOWAIT) not: the caller was waiting for that process. `ts_ns` is
    /// the call's entry, `dur_ns` how long it took: a blocking wait entered
    /// before the child ended lasts until then; one that found it already ended
    /// (a shell reading a command substitution's output first) returns at once.
    Wait { child: i32, dur_ns: u64 },
    /// fork/vfork/clone: `child` is the new task id.
    Clone { child: i32, thread: bool },
    /// A task ended. For a thread `tid != pid`; the main thread's exit is the
    /// process's exit. `ts_ns` is the `PTRACE_EVENT_EXIT` stop when seen.
    Exit { code: Option<i32>, signal: Option<i32> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SocketRole {
    Accepted,
    Connected,
}

/// A decoded socket address.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(tag = "family", rename_all = "lowercase")]
pub enum SockAddr {
    Inet {
        ip: IpAddr,
        port: u16,
    },
    /// `path` starts with `@` for the abstract namespace; empty when unnamed.
    Unix {
        path: String,
    },
    Other {
        af: u16,
    },
}

impl fmt::Display for SockAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SockAddr::Inet {
                ip: IpAddr::V4(ip),
                port,
            } => write!(f, "{ip}:{port}"),
            SockAddr::Inet {
                ip: IpAddr::V6(ip),
                port,
            } => write!(f, "[{ip}]:{port}"),
            SockAddr::Unix { path } if path.is_empty() => write!(f, "unix:(unnamed)"),
            SockAddr::Unix { path } => write!(f, "unix:{path}"),
            SockAddr::Other { af } => write!(f, "address family {af}"),
        }
    }
}

/// A non-blocking view of a live session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// Time and address of the first successful listen.
    pub first_listen: Option<(u64, Option<SockAddr>)>,
    /// The ports of every successful listen on an internet socket so far.
    pub listen_ports: Vec<u16>,
    /// Time of the first write on an accepted socket.
    pub first_response: Option<u64>,
    /// The whole tree has exited (or been killed and reaped).
    pub exited: bool,
    /// The root process's exit (code, signal) once the tracer reaped it.
    pub root_exit: Option<(Option<i32>, Option<i32>)>,
}

/// State shared by the tracer thread and the [`Session`].
struct Shared {
    state: Mutex<SharedState>,
    changed: Condvar,
    /// Set once the caller wants the tree gone; the tracer SIGKILLs every task it
    /// sees from then on (including ones born after the request).
    kill: AtomicBool,
}

#[derive(Default)]
struct SharedState {
    status: Status,
    /// Processes (tgids) alive as far as the tracer knows: the ones to kill.
    live: HashSet<i32>,
    /// Task names (tid → /proc/tid/comm), read at each task's exit stop and,
    /// for the tasks still alive, right before they are killed.
    names: BTreeMap<i32, String>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, SharedState> {
        // A poisoned lock only means a panic elsewhere; the data is still coherent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn update(&self, f: impl FnOnce(&mut SharedState)) {
        f(&mut self.lock());
        self.changed.notify_all();
    }
}

/// A traced run in progress. Dropping it kills the tree and waits for the tracer.
pub struct Session {
    root_pid: i32,
    t0_ns: u64,
    deadline: Instant,
    stop_when: StopWhen,
    interrupted: fn() -> bool,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<Result<ptrace::Collected>>>,
    outcome: Outcome,
    pidfd: Option<OwnedFd>,
}

/// Start `opts.program` under the tracer. Returns once the target has exec'd
/// (so exec errors and ptrace refusals come back here, as errors).
pub fn start(opts: &TraceOptions) -> Result<Session> {
    let started_at = Instant::now();
    let shared = Arc::new(Shared {
        state: Mutex::new(SharedState::default()),
        changed: Condvar::new(),
        kill: AtomicBool::new(false),
    });
    let prepared = ptrace::Prepared::new(opts)?;
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let thread_shared = Arc::clone(&shared);
    // ptrace binds a tracee to the *thread* that attached it: every ptrace call
    // and the waitpid loop must run on this one thread.
    let thread = std::thread::Builder::new()
        .name("coldstart-tracer".into())
        .spawn(move || ptrace::run(prepared, thread_shared, tx))
        .context("cannot start the tracer thread")?;
    match rx.recv() {
        Ok(Ok(started)) => Ok(Session {
            root_pid: started.root_pid,
            t0_ns: started.t0_ns,
            deadline: started_at + opts.timeout,
            stop_when: opts.stop_when,
            interrupted: opts.interrupted,
            shared,
            thread: Some(thread),
            outcome: Outcome::NotWaited,
            pidfd: started.pidfd,
        }),
        Ok(Err(e)) => {
            // The tracer thread has reaped what it started before reporting.
            let _ = thread.join();
            Err(e)
        }
        Err(_) => match thread.join() {
            Ok(Err(e)) => Err(e),
            Ok(Ok(_)) => Err(anyhow!("the tracer thread ended without starting the target")),
            Err(_) => Err(anyhow!("the tracer thread panicked while starting the target")),
        },
    }
}

impl Session {
    /// A pidfd of the root process, readable once it has exited: opened before
    /// the root was released, so it is valid even if the root is already gone
    /// (the tracer thread reaps it; the pidfd still reports the exit).
    pub fn take_pidfd(&mut self) -> Option<OwnedFd> {
        self.pidfd.take()
    }

    pub fn root_pid(&self) -> i32 {
        self.root_pid
    }

    /// Time zero of this run (CLOCK_MONOTONIC ns, taken right before the fork).
    pub fn t0_ns(&self) -> u64 {
        self.t0_ns
    }

    pub fn status(&self) -> Status {
        self.shared.lock().status.clone()
    }

    /// The root's exit (code, signal), waiting up to `patience` for the tracer
    /// to reap it: a caller that saw the root exit (its pidfd) asks this, the
    /// tracer thread's wait may come a moment later.
    pub fn root_exit(&self, patience: Duration) -> Option<(Option<i32>, Option<i32>)> {
        self.wait_for(patience, |s| {
            (s.status.root_exit.is_some() || s.status.exited).then_some(s.status.root_exit)
        })
        .flatten()
    }

    /// Wait up to `patience` for `check` to give an answer on the shared state,
    /// woken by each change the tracer makes.
    fn wait_for<T>(&self, patience: Duration, check: impl Fn(&SharedState) -> Option<T>) -> Option<T> {
        let until = Instant::now() + patience;
        let mut state = self.shared.lock();
        loop {
            if let Some(answer) = check(&state) {
                return Some(answer);
            }
            let now = Instant::now();
            if now >= until {
                return None;
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, until - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Block until the options' [`StopWhen`] holds, the tree exits, or the
    /// options' timeout (from [`start`]) passes.
    pub fn wait(&mut self) -> Outcome {
        let mut state = self.shared.lock();
        let outcome = loop {
            let reached = match self.stop_when {
                StopWhen::Exit => state.status.exited,
                StopWhen::Listen => state.status.first_listen.is_some(),
                StopWhen::FirstResponse => state.status.first_response.is_some(),
            };
            if reached {
                break Outcome::Reached;
            }
            if state.status.exited {
                break Outcome::Exited;
            }
            // The tree may outlive its root (children in other process groups):
            // an interrupt must end the wait by itself, not only through the
            // tree's exit. Checked every 20 ms; the trace's times come from the
            // tracer's own clock, so this cadence does not touch any figure.
            if (self.interrupted)() {
                break Outcome::Interrupted;
            }
            let now = Instant::now();
            if now >= self.deadline {
                break Outcome::TimedOut;
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, (self.deadline - now).min(Duration::from_millis(20)))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
        drop(state);
        self.outcome = outcome;
        outcome
    }

    /// Wait up to `patience` until the tracer has recorded a listen on `port`.
    /// A probe can connect as soon as the kernel has made the socket listen,
    /// before the tracer has handled the listen's syscall-exit stop (the
    /// handshake needs no help from the stopped tracee); killing the tree then
    /// would lose the very listen that made the run ready.
    pub fn wait_listen_on(&self, port: u16, patience: Duration) -> bool {
        self.wait_for(patience, |s| {
            if s.status.listen_ports.contains(&port) {
                Some(true)
            } else {
                s.status.exited.then_some(false)
            }
        })
        .unwrap_or(false)
    }

    /// SIGKILL every live process of the tree (the tracer also kills any task
    /// born after this call). Returns at once; [`Session::finish`] waits.
    pub fn kill(&self) {
        self.shared.kill.store(true, Ordering::SeqCst);
        let mut state = self.shared.lock();
        // Their names die with them: read first (a task born after this, or
        // one that renames itself meanwhile, keeps its exit-stop name or none).
        let live: Vec<i32> = state.live.iter().copied().collect();
        for pid in live {
            for (tid, name) in procfs::thread_names(pid) {
                state.names.insert(tid, name);
            }
        }
        for &pid in &state.live {
            // The pid is a tracee the tracer holds as live; it leaves `live` (under
            // this lock) right after its exit is collected, so a reuse of the number
            // in between would need a full pid wrap-around within microseconds.
            let _ = coldstart_sys::signal::kill(pid, libc::SIGKILL);
        }
    }

    /// Kill what is left of the tree, wait for the tracer to see every task
    /// gone, and return the trace.
    pub fn finish(mut self) -> Result<Trace> {
        let killed = !self.shared.lock().status.exited;
        if killed {
            self.kill();
        }
        let thread = self
            .thread
            .take()
            .ok_or_else(|| anyhow!("trace session already finished"))?;
        let collected = thread
            .join()
            .map_err(|_| anyhow!("the tracer thread panicked"))?
            .context("tracing failed")?;
        Ok(Trace {
            t0_ns: self.t0_ns,
            end_ns: collected.end_ns,
            root_pid: self.root_pid,
            events: collected.events,
            killed,
            outcome: self.outcome,
            warnings: collected.warnings,
            root_usage: collected.root_usage,
            task_names: std::mem::take(&mut self.shared.lock().names),
            stops: collected.stops,
            cpu: collected.cpu,
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.kill();
            let _ = thread.join();
        }
    }
}

/// Trace `opts` until its [`StopWhen`] condition, the tree's exit or the
/// timeout, then kill whatever is left (see the module docs for why the tracer
/// cannot detach and leave a server running).
pub fn trace(opts: &TraceOptions) -> Result<Trace> {
    let mut session = start(opts)?;
    session.wait();
    session.finish()
}
