//! Spawning a target under ptrace and the stepping loop, one job per file:
//!
//! * [`sys`]: the raw ptrace / waitpid calls, each wrapped once with its SAFETY argument.
//! * [`spawn`]: starting the root tracee: everything the child needs, built before the
//!   fork ([`spawn::Prepared`]), the forked child's async-signal-safe setup and exec, and
//!   the parent's seize-then-release.
//! * [`state`]: the state machine: tasks and processes, the `waitpid` loop dispatching
//!   each stop, task births, execs and deaths.
//! * [`decode`]: turning seccomp and syscall-exit stops into [`Event`](super::Event)s.
//!
//! Everything here runs on the tracer thread: Linux binds a tracee to the
//! thread that attached it, so every ptrace request and the `waitpid` loop must
//! come from that one thread.
//!
//! Stops we handle (`status >> 8` of a stopped task):
//!
//! | stop                         | recognised by                              | we do                                   |
//! |------------------------------|--------------------------------------------|-----------------------------------------|
//! | seccomp stop                 | `SIGTRAP | PTRACE_EVENT_SECCOMP << 8`       | read args; CONT, or SYSCALL for the result |
//! | syscall-exit stop            | `SIGTRAP | 0x80` (TRACESYSGOOD)             | read result, emit; CONT                 |
//! | fork / vfork / clone         | `SIGTRAP | PTRACE_EVENT_{FORK,VFORK,CLONE}` | learn the child; CONT                   |
//! | exec                         | `SIGTRAP | PTRACE_EVENT_EXEC << 8`          | tid may have changed; emit; CONT        |
//! | exit                         | `SIGTRAP | PTRACE_EVENT_EXIT << 8`          | note the time; CONT                     |
//! | new task's first stop        | `PTRACE_EVENT_STOP`, task not yet resumed  | CONT                                    |
//! | group-stop                   | `PTRACE_EVENT_STOP` + a stop signal        | LISTEN (stay stopped, report SIGCONT)   |
//! | signal-delivery stop         | any other `WSTOPSIG`, event 0              | resume *with* the signal (reinject)     |
//!
//! Any ptrace request may fail with ESRCH: the task was killed while stopped
//! (SIGKILL needs no tracer consent). That is never an error: its death is
//! reported by `waitpid` a moment later.

mod decode;
mod spawn;
mod state;
mod sys;

pub(super) use spawn::Prepared;
pub(super) use state::run;

use crate::TraceEvent;

/// Reported to [`super::start`] once the root has exec'd (or failed to).
pub(super) struct Started {
    pub root_pid: i32,
    pub t0_ns: u64,
    /// The root's pidfd, opened before it was released (None if pidfd_open failed).
    pub pidfd: Option<std::os::fd::OwnedFd>,
}

/// What the tracer thread hands back.
pub(super) struct Collected {
    pub events: Vec<TraceEvent>,
    pub end_ns: u64,
    pub warnings: Vec<String>,
    pub root_usage: Option<crate::RootUsage>,
    pub stops: Vec<crate::Stop>,
    pub cpu: Vec<crate::CpuReading>,
}
