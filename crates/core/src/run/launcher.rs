//! How a run's target is started: plainly (clone + exec in its own process group
//! and run cgroup) or under the syscall tracer. Either way the engine gets the
//! same handle: the root pid, time zero, a pidfd that becomes readable at exit,
//! and the output streams it must read.

use crate::clock::now_ns;
use crate::launch::spawn::{self, OutputMode};
use crate::sample::ExitStatus;
use crate::target::Target;
use crate::trace::{self, Event, StopWhen, Trace};
use anyhow::{Context, Result};
use std::fs::File;
use std::os::fd::OwnedFd;

/// Which launcher a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launch {
    Plain,
    /// Under the tracer: the Sample gets the trace. `--ready listen` is the
    /// tracer's own first listen(2) (LD_PRELOAD is not used under the tracer).
    /// `lean`: the tracer is only the listen probe (a static or Go program's
    /// `--ready listen` in a plain run), so writes are not traced.
    Traced {
        lean: bool,
    },
    /// A plain spawn sampled by the CPU profiler (explain --profile): the
    /// Sample gets the recording of the tree from its exec to ready.
    Profiled,
}

/// A started target.
pub struct Launched {
    pub pid: i32,
    /// CLOCK_MONOTONIC ns right before the spawn, moved past coldstart's own
    /// cgroup placement wait.
    pub t0: u64,
    /// Readable once the root process has exited. None: a traced root that was
    /// already gone (and reaped by the tracer) when it was opened.
    pub pidfd: Option<OwnedFd>,
    pub stdout: Option<File>,
    pub stderr: Option<File>,
    pub how: How,
    /// The CPU profiler of a profiled run, recording until [`Launched::stop_profile`].
    pub profiler: Option<coldstart_profile::Recorder>,
    /// A limited run's memory cgroup: its peak and OOM kills, read after the run.
    pub memory: Option<crate::launch::limit_cgroups::MemoryWatch>,
}

pub enum How {
    Plain(spawn::Prepared),
    /// The live session, holding the Lab's trace guard (no waitpid(-1) anywhere
    /// until it is finished); taken by [`Launched::finish_trace`].
    Traced(Option<crate::launch::traced::Traced<'static>>),
}

/// Everything a plain spawn needs, prepared outside the timed window.
/// `show`: the output goes to our terminal (unless something must read it).
pub fn prepare_plain(
    target: &Target,
    pipes: bool,
    show: bool,
    env: &[(String, String)],
) -> Result<spawn::Prepared> {
    let mode = if pipes {
        OutputMode::Pipes
    } else if show {
        OutputMode::Inherit
    } else {
        OutputMode::MemFile
    };
    spawn::prepare(target, mode, env)
}

/// Spawn what `prepare_plain` prepared. Time zero is taken right before it.
pub fn spawn_plain(mut prepared: spawn::Prepared, target: &Target) -> Result<Launched> {
    let t0 = now_ns();
    let child = spawn::spawn(&mut prepared, target)?;
    // The kernel's wait while the child entered its run cgroup is coldstart's, not
    // the target's: time zero moves past it (see spawn::Child::placement_ns).
    let t0 = t0 + child.placement_ns;
    let memory = prepared.memory_watch();
    Ok(Launched {
        memory,
        pid: child.pid,
        t0,
        pidfd: Some(child.pidfd),
        stdout: child.stdout.map(|s| File::from(OwnedFd::from(s))),
        stderr: child.stderr.map(|s| File::from(OwnedFd::from(s))),
        how: How::Plain(prepared),
        profiler: None,
    })
}

/// A plain spawn with the CPU profiler's inherited counter opened on this thread
/// just before time zero (only the child's exec switches it on; see
/// coldstart_profile::perf), so the spawn itself is timed as in a plain run.
pub fn spawn_profiled(prepared: spawn::Prepared, target: &Target) -> Result<Launched> {
    let recorder = coldstart_profile::Recorder::start(coldstart_profile::DEFAULT_FREQ_HZ).context(
        "cannot open the CPU profiler (perf_event_open; see /proc/sys/kernel/perf_event_paranoid)",
    )?;
    let mut launched = spawn_plain(prepared, target);
    // Dropped here on a failed spawn; otherwise kept until the run ends (closing
    // it earlier would end the child's inherited copies).
    if let Ok(l) = &mut launched {
        l.profiler = Some(recorder);
    }
    launched
}

/// Start `target` under the tracer, output (stdout and stderr together) into a
/// pipe the engine reads. The tracer takes time zero itself (before its fork)
/// and moves it past the cgroup placement the same way.
pub fn spawn_traced(
    target: &Target,
    env: &[(String, String)],
    lean: bool,
    timeout: std::time::Duration,
) -> Result<Launched> {
    let (read, write) = coldstart_sys::pipe::pipe(true).context("creating the output pipe")?;
    let (mut opts, memory) = crate::launch::traced::options(target)?;
    opts.env.extend(env.iter().cloned());
    opts.timeout = timeout;
    opts.output = Some(write);
    if lean {
        // Writes are not traced when the run ends at the first listen.
        opts.stop_when = StopWhen::Listen;
    }
    let lab = crate::Lab::get()?;
    let mut session = crate::launch::traced::start(lab, &opts).context("cannot trace the target")?;
    let pid = session.root_pid();
    let pidfd = session.take_pidfd();
    Ok(Launched {
        pid,
        t0: session.t0_ns(),
        // Opened by the tracer before the root ran: valid even if it has exited.
        pidfd: pidfd.or_else(|| coldstart_sys::process::pidfd_open(pid).ok()),
        stdout: Some(File::from(read)),
        stderr: None,
        how: How::Traced(Some(session)),
        profiler: None,
        memory,
    })
}

impl Launched {
    pub fn traced(&self) -> bool {
        matches!(self.how, How::Traced(_))
    }

    /// End the profile's window (at ready, before the stop): no samples after it.
    pub fn stop_profile(&mut self) {
        if let Some(p) = &mut self.profiler {
            p.stop();
        }
    }

    /// The live trace session's view (None for plain runs).
    pub fn trace_status(&self) -> Option<trace::Status> {
        match &self.how {
            How::Traced(Some(s)) => Some(s.status()),
            _ => None,
        }
    }

    /// A traced root's exit status, once it has exited: the tracer reaps it,
    /// possibly a moment after its pidfd said so (hence the patience).
    pub fn traced_root_exit(&self) -> Option<ExitStatus> {
        match &self.how {
            How::Traced(Some(s)) => s
                .root_exit(std::time::Duration::from_secs(2))
                .map(|(code, signal)| ExitStatus { code, signal }),
            _ => None,
        }
    }

    /// Give the tracer up to `patience` to record the listen on `port` that a
    /// probe has already connected to (see `Session::wait_listen_on`).
    pub fn await_traced_listen(&self, port: u16, patience: std::time::Duration) -> bool {
        match &self.how {
            How::Traced(Some(s)) => s.wait_listen_on(port, patience),
            _ => false,
        }
    }

    /// End the trace session (killing what is left of the tree) and return the
    /// trace. After this, reaping with waitpid(-1) is safe again.
    pub fn finish_trace(&mut self) -> Result<Option<Trace>> {
        match &mut self.how {
            How::Traced(session) => match session.take() {
                Some(s) => Ok(Some(s.finish()?)),
                None => Ok(None),
            },
            How::Plain(_) => Ok(None),
        }
    }
}

/// The root's exit status as the tracer saw it.
pub fn traced_exit(trace: &Trace) -> Option<ExitStatus> {
    let exits = || {
        trace.events.iter().filter_map(|e| match e.event {
            Event::Exit { code, signal } if e.pid == trace.root_pid => {
                Some((e.tid, ExitStatus { code, signal }))
            }
            _ => None,
        })
    };
    // The leader's own exit; a leader that exec'd from a thread has a new tid,
    // and then the root process's last exit is the one.
    exits()
        .find(|(tid, _)| *tid == trace.root_pid)
        .or_else(|| exits().next_back())
        .map(|(_, status)| status)
}
