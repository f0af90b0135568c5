//! How a run's target is started, behind one trait: [`Executor`] (hyperfine's
//! name for it). The engine (`run::run`) asks an executor to spawn the target,
//! to reap its root, whether its tree is gone, to stop it and clean it up, and
//! never which kind of executor it is:
//!
//! - [`PlainExecutor`]: clone + exec in its own process group and run cgroup
//!   (`launch::spawn`), the root reaped with `launch::reaping`.
//! - [`ProfiledExecutor`]: the same, sampled by the CPU profiler from its exec
//!   to ready (`explain --profile`): the Sample gets the recording.
//! - [`TracedExecutor`]: under the syscall tracer, which reaps its tracees; its
//!   first listen(2) can be the ready instant, and the Sample gets the trace.
//!
//! Either way the engine gets the same handle ([`Launched`]): the root pid, time
//! zero, a pidfd that becomes readable at exit, and the output it must read.

use crate::launch::lab::Lab;
use crate::launch::limit_cgroups::MemoryWatch;
use crate::launch::output::tail_of_file;
use crate::launch::spawn::{self, OutputMode};
use crate::launch::traced::Traced;
use crate::launch::{reaping, signals, tree, usage};
use crate::sample::{ExitPolicy, ExitStatus, Outcome, Sample, Usage};
use crate::target::{Readiness, Target};
use anyhow::{Context, Result};
use coldstart_sys::clock::now_ns;
use coldstart_trace::{Event, StopWhen, Trace};
use std::fs::File;
use std::os::fd::{OwnedFd, RawFd};
use std::time::Duration;

/// How often a traced `--ready listen` run looks at the tracer's first listen.
const TRACER_STATUS_NS: u64 = 200_000;

/// How the engine wants the target's output.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    /// Read live (the log probe, log marks, claimed lines).
    pub pipes: bool,
    /// `--show-output`: to our terminal unless something must read it.
    pub show: bool,
}

/// A started target, whatever started it.
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
    /// A limited run's memory cgroup: its peak and OOM kills, read after the run.
    pub memory: Option<MemoryWatch>,
    /// The run's process group, registered for Ctrl-C and the watchdog while
    /// this lives (None for a target that is no process group of ours).
    pub group: Option<signals::Current>,
}

/// The root's exit, as the executor learned it.
pub struct RootExit {
    /// None: not known (yet), e.g. the tracer had not reaped it.
    pub status: Option<ExitStatus>,
    /// Its rusage when the executor reaped it (the run's CPU and memory then
    /// start from it); None when something else reaped it.
    pub rusage: Option<libc::rusage>,
}

/// How a run ended, for the executor's part of the Sample ([`Executor::finish`]).
pub struct Ended<'a> {
    pub readiness: &'a Readiness,
    pub policy: &'a ExitPolicy,
    /// The root exited (and the run took note) before the run ended.
    pub root_exited: bool,
    /// That exit was the ready instant (`--ready exit`).
    pub exit_was_ready: bool,
}

/// How a target is started, watched and stopped. One executor serves one run.
pub trait Executor {
    /// The fd number the target's checkpoints go to (COLDSTART_FD): the Lab's.
    fn checkpoint_fd(&self) -> Option<RawFd>;

    /// When the executor sees the target's first listen(2) itself: how often
    /// (ns) to read it ([`Executor::first_listen`]). `--ready listen` then
    /// needs no probe and no preload shim.
    fn listen_watch(&self) -> Option<u64> {
        None
    }

    /// Start `target` with `env` added. Time zero is taken here, right before
    /// the spawn, and moved past coldstart's own cgroup placement.
    fn spawn(&mut self, target: &Target, env: &[(String, String)], output: Output) -> Result<Launched>;

    /// How often (ns) the executor needs a turn while the run is live
    /// ([`Executor::tend`]); None: never.
    fn tend_every(&self) -> Option<u64> {
        None
    }

    /// The executor's turn while the run is live (waiting for ready, or for the
    /// exit after the stop): e.g. reaping what a container engine's monitor
    /// leaves exiting under our subreaper, which its client waits for.
    fn tend(&mut self, _root: i32) {}

    /// The target's first listen (absolute ns), once seen.
    fn first_listen(&self) -> Option<u64> {
        None
    }

    /// The root's pidfd became readable: reap it, or learn its status from
    /// whoever did. `status_now`: its status decides the run (else it may be
    /// left for [`Executor::finish`] to settle).
    fn root_exited(&mut self, pid: i32, status_now: bool) -> RootExit;

    /// Nothing of the run's tree is left (asked once the root has exited).
    fn tree_gone(&self, pid: i32) -> bool;

    /// What the tree's live processes have used so far.
    fn tree_usage(&self, pid: i32) -> Usage;

    /// The measured window ended (ready, or the failure), before any request
    /// or the stop; `ready`: the run became ready.
    fn window_ended(&mut self, _pid: i32, _ready: bool) {}

    /// Begin a graceful stop (SIGTERM to the tree; the engine waits out the
    /// grace). False: none is made, [`Executor::finish`] ends the tree.
    fn terminate(&mut self, pid: i32) -> bool;

    /// After the stop, before the final kill: the executor's part of the Sample.
    fn finish(&mut self, _pid: i32, _sample: &mut Sample, _end: &Ended) -> Result<()> {
        Ok(())
    }

    /// SIGKILL and reap everything left of the run; false if something survived.
    fn kill_all(&mut self, pid: i32) -> bool;

    /// After the cleanup: what the executor recorded over the run.
    fn cleaned_up(&mut self, _sample: &mut Sample) {}

    /// The output's last lines when the executor kept it itself (an in-memory
    /// file); None: the engine's own line buffer has them.
    fn output_tail(&mut self, _lines: usize) -> Option<Vec<String>> {
        None
    }
}

/// A plain spawn: clone + exec in its own process group and run cgroup.
pub struct PlainExecutor<'lab> {
    lab: &'lab Lab,
    /// What the spawn was made from (the in-memory output file among it), kept
    /// until the executor is dropped: freeing it right after the spawn would put
    /// its close(2)s and frees inside the timed window.
    prepared: Option<spawn::Prepared>,
}

impl<'lab> PlainExecutor<'lab> {
    pub fn new(lab: &'lab Lab) -> Self {
        PlainExecutor { lab, prepared: None }
    }

    /// Everything the spawn needs, outside the timed window.
    fn prepare(&self, target: &Target, env: &[(String, String)], output: Output) -> Result<spawn::Prepared> {
        let mode = if output.pipes {
            OutputMode::Pipes
        } else if output.show {
            OutputMode::Inherit
        } else {
            OutputMode::MemFile
        };
        spawn::prepare(self.lab, target, mode, env)
    }

    /// Spawn what `prepare` prepared. Time zero is taken right before it.
    fn launch(&mut self, mut prepared: spawn::Prepared, target: &Target) -> Result<Launched> {
        let t0 = now_ns();
        let child = spawn::spawn(&mut prepared, target)?;
        // The kernel's wait while the child entered its run cgroup is coldstart's, not
        // the target's: time zero moves past it (see spawn::Child::placement_ns).
        let t0 = t0 + child.placement_ns;
        let memory = prepared.memory_watch();
        self.prepared = Some(prepared);
        Ok(Launched {
            memory,
            pid: child.pid,
            t0,
            pidfd: Some(child.pidfd),
            stdout: child.stdout.map(|s| File::from(OwnedFd::from(s))),
            stderr: child.stderr.map(|s| File::from(OwnedFd::from(s))),
            group: Some(signals::Current::set(child.pid)),
        })
    }
}

impl Executor for PlainExecutor<'_> {
    fn checkpoint_fd(&self) -> Option<RawFd> {
        Some(self.lab.checkpoint_fd())
    }

    fn spawn(&mut self, target: &Target, env: &[(String, String)], output: Output) -> Result<Launched> {
        let prepared = self.prepare(target, env, output)?;
        self.launch(prepared, target)
    }

    fn root_exited(&mut self, pid: i32, _status_now: bool) -> RootExit {
        match reaping::reap_exited(pid) {
            Some(r) => RootExit {
                status: Some(r.status),
                rusage: Some(r.rusage),
            },
            // Not ours to collect any more: the status is unknown.
            None => RootExit {
                status: Some(ExitStatus {
                    code: None,
                    signal: None,
                }),
                // SAFETY: an all-zero rusage is a valid value (no use recorded).
                rusage: Some(unsafe { std::mem::zeroed() }),
            },
        }
    }

    fn tree_gone(&self, pid: i32) -> bool {
        tree::nothing_left_in(self.lab, pid)
    }

    fn tree_usage(&self, pid: i32) -> Usage {
        usage::snapshot(&tree::members(pid))
    }

    fn terminate(&mut self, pid: i32) -> bool {
        // The process group we created for the run.
        let _ = coldstart_sys::signal::kill_group(pid, libc::SIGTERM);
        true
    }

    fn kill_all(&mut self, pid: i32) -> bool {
        tree::kill_all_in(self.lab, pid)
    }

    fn output_tail(&mut self, lines: usize) -> Option<Vec<String>> {
        let file = self.prepared.as_mut()?.output_file.as_mut()?;
        Some(tail_of_file(file, lines))
    }
}

/// A plain spawn sampled by the CPU profiler: its inherited counter is opened
/// on this thread just before time zero (only the child's exec switches it on;
/// see coldstart_profile::perf), so the spawn itself is timed as in a plain run.
pub struct ProfiledExecutor<'lab> {
    plain: PlainExecutor<'lab>,
    /// Recording until the window ends; kept until the run ends (closing it
    /// earlier would end the child's inherited copies).
    recorder: Option<coldstart_profile::Recorder>,
}

impl<'lab> ProfiledExecutor<'lab> {
    pub fn new(lab: &'lab Lab) -> Self {
        ProfiledExecutor {
            plain: PlainExecutor::new(lab),
            recorder: None,
        }
    }
}

impl Executor for ProfiledExecutor<'_> {
    fn checkpoint_fd(&self) -> Option<RawFd> {
        self.plain.checkpoint_fd()
    }

    fn spawn(&mut self, target: &Target, env: &[(String, String)], output: Output) -> Result<Launched> {
        let prepared = self.plain.prepare(target, env, output)?;
        let recorder = coldstart_profile::Recorder::start(coldstart_profile::DEFAULT_FREQ_HZ).context(
            "cannot open the CPU profiler (perf_event_open; see /proc/sys/kernel/perf_event_paranoid)",
        )?;
        // Dropped here on a failed spawn.
        let launched = self.plain.launch(prepared, target)?;
        self.recorder = Some(recorder);
        Ok(launched)
    }

    fn root_exited(&mut self, pid: i32, status_now: bool) -> RootExit {
        self.plain.root_exited(pid, status_now)
    }

    fn tree_gone(&self, pid: i32) -> bool {
        self.plain.tree_gone(pid)
    }

    fn tree_usage(&self, pid: i32) -> Usage {
        self.plain.tree_usage(pid)
    }

    fn window_ended(&mut self, pid: i32, ready: bool) {
        // The profile's window ends at ready (or at the failure).
        if let Some(r) = &mut self.recorder {
            r.stop();
            if ready {
                // A runtime that writes its JIT names only on request or at exit is asked now.
                crate::profile::runtimes::at_ready(&tree::members(pid));
            }
        }
    }

    fn terminate(&mut self, pid: i32) -> bool {
        self.plain.terminate(pid)
    }

    fn kill_all(&mut self, pid: i32) -> bool {
        self.plain.kill_all(pid)
    }

    fn cleaned_up(&mut self, sample: &mut Sample) {
        sample.profile = self.recorder.take().map(|r| Box::new(r.finish()));
    }

    fn output_tail(&mut self, lines: usize) -> Option<Vec<String>> {
        self.plain.output_tail(lines)
    }
}

/// A spawn under the syscall tracer, output (stdout and stderr together) into
/// one pipe the engine reads. The tracer takes time zero itself (before its
/// fork) and moves it past the cgroup placement the same way; its thread reaps
/// the tracees, and no waitpid(-1) runs until the session is finished.
pub struct TracedExecutor<'lab> {
    lab: &'lab Lab,
    /// The tracer is only the listen probe (a static or Go program's
    /// `--ready listen` in a plain run): writes are not traced.
    lean: bool,
    timeout: Duration,
    /// The live session, holding the Lab's trace guard; taken by `finish`.
    session: Option<Traced<'lab>>,
}

impl<'lab> TracedExecutor<'lab> {
    pub fn new(lab: &'lab Lab, lean: bool, timeout: Duration) -> Self {
        TracedExecutor {
            lab,
            lean,
            timeout,
            session: None,
        }
    }
}

impl Executor for TracedExecutor<'_> {
    fn checkpoint_fd(&self) -> Option<RawFd> {
        Some(self.lab.checkpoint_fd())
    }

    fn listen_watch(&self) -> Option<u64> {
        // The instant is the tracer's own, so this cadence does not touch the figure.
        Some(TRACER_STATUS_NS)
    }

    fn spawn(&mut self, target: &Target, env: &[(String, String)], _: Output) -> Result<Launched> {
        let (read, write) = coldstart_sys::pipe::pipe(true).context("creating the output pipe")?;
        let (mut opts, memory) = crate::launch::traced::options(target)?;
        opts.env.extend(env.iter().cloned());
        opts.timeout = self.timeout;
        opts.output = Some(write);
        if self.lean {
            // Writes are not traced when the run ends at the first listen.
            opts.stop_when = StopWhen::Listen;
        }
        let mut session = crate::launch::traced::start(self.lab, &opts).context("cannot trace the target")?;
        let pid = session.root_pid();
        let pidfd = session.take_pidfd();
        let t0 = session.t0_ns();
        self.session = Some(session);
        Ok(Launched {
            pid,
            t0,
            // Opened by the tracer before the root ran: valid even if it has exited.
            pidfd: pidfd.or_else(|| coldstart_sys::process::pidfd_open(pid).ok()),
            stdout: Some(File::from(read)),
            stderr: None,
            memory,
            group: Some(signals::Current::set(pid)),
        })
    }

    fn first_listen(&self) -> Option<u64> {
        self.session.as_ref()?.status().first_listen.map(|(t, _)| t)
    }

    fn root_exited(&mut self, _pid: i32, status_now: bool) -> RootExit {
        // The tracer thread reaps its tracees (the rusage is in the trace): it may
        // do so a moment after the pidfd said so, hence the patience.
        let status = match &self.session {
            Some(s) if status_now => s
                .root_exit(Duration::from_secs(2))
                .map(|(code, signal)| ExitStatus { code, signal }),
            _ => None,
        };
        RootExit { status, rusage: None }
    }

    fn tree_gone(&self, _pid: i32) -> bool {
        // No waitpid(-1) may run under the tracer (a stolen ptrace stop would
        // hang a tracee): the tracer knows.
        self.session.as_ref().is_none_or(|s| s.status().exited)
    }

    fn tree_usage(&self, pid: i32) -> Usage {
        usage::snapshot(&tree::members(pid))
    }

    fn terminate(&mut self, _pid: i32) -> bool {
        // No graceful stop under the tracer: finishing the session kills the tree.
        false
    }

    fn finish(&mut self, _pid: i32, sample: &mut Sample, end: &Ended) -> Result<()> {
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        if let Some(port) = probed_port(end.readiness).filter(|_| sample.ok()) {
            // The probe got in before the tracer saw the listen: wait for it, or
            // the trace would lack the service's listen.
            session.wait_listen_on(port, Duration::from_secs(2));
        }
        let trace = session.finish()?;
        let status = traced_exit(&trace);
        if let Some(s) = status.as_ref().filter(|_| end.exit_was_ready) {
            // As in a plain run: a crash is not a fast start.
            if !end.policy.accepts(s) {
                sample.outcome = Outcome::ExitFailure;
                sample.ready_ns = None;
            }
        }
        if end.root_exited || !sample.ok() {
            sample.exit_status = status;
        }
        if let (true, Some(ru)) = (end.root_exited, &trace.root_usage) {
            // The root was reaped by the tracer thread: its wait4 figures.
            let mut u = usage::from_root(ru);
            u.add(&sample.usage);
            sample.usage = u;
        }
        sample.trace = Some(Box::new(trace));
        Ok(())
    }

    fn kill_all(&mut self, pid: i32) -> bool {
        tree::kill_all_in(self.lab, pid)
    }
}

/// The port a tcp or http probe connects to.
fn probed_port(readiness: &Readiness) -> Option<u16> {
    match readiness {
        Readiness::Tcp { port, .. } => Some(*port),
        Readiness::Http { url } => url.port_or_known_default(),
        _ => None,
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
