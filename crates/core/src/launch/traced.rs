//! Starting a target under the tracer with what a plain spawn gets here: its
//! own run cgroup (entered before exec, so nothing of the tree escapes cleanup),
//! coldstart's interrupt, and the Lab's reaping rule. The tracer crate knows none
//! of them; it takes the first two as options, and [`start`] holds the third.

use super::lab::Lab;
use super::limit_cgroups::{MemoryWatch, RunCgroup};
use super::reaping::TraceGuard;
use crate::target::Target;
use anyhow::Result;
use coldstart_trace::{Outcome, Session, Status, Trace, TraceOptions};

/// Trace options for `target`: argv, program, env and cwd, a fresh run cgroup's
/// `cgroup.procs` (none when cgroups are unavailable) plus its limiting ones,
/// and `signals::interrupted`. Also where a limited run's memory is read.
pub fn options(target: &Target) -> Result<(TraceOptions, Option<MemoryWatch>)> {
    let mut opts = TraceOptions::new(target.argv.clone(), target.program.clone());
    opts.env = target.env.clone();
    opts.cwd = target.cwd.clone();
    let run = RunCgroup::for_limits(&target.limits)?;
    let memory = run.as_ref().and_then(|r| r.memory());
    opts.cgroup_procs = run
        .map(|r| r.into_entries())
        .unwrap_or_default()
        .into_iter()
        .map(|e| coldstart_trace::CgroupProcs {
            procs: e.procs,
            required: e.required,
        })
        .collect();
    opts.interrupted = super::signals::interrupted;
    Ok((opts, memory))
}

/// A live trace session that holds the Lab's [`TraceGuard`]: no thread can
/// `waitpid(-1)` (and steal a tracee's ptrace stop) until it is finished or
/// dropped. Not `Send`: it stays on the thread that started it.
pub struct Traced<'lab> {
    session: Session,
    // Declared after `session`: dropped after it, once the tracer has let go.
    _guard: TraceGuard<'lab>,
}

/// Start `opts` under the tracer (see `coldstart_trace::start`), the guard taken first:
/// the tracee can stop from the moment it is forked.
pub fn start<'lab>(lab: &'lab Lab, opts: &TraceOptions) -> Result<Traced<'lab>> {
    let guard = lab.trace_guard();
    let session = coldstart_trace::start(opts)?;
    Ok(Traced {
        session,
        _guard: guard,
    })
}

/// Trace `opts` until its stop condition (see `coldstart_trace::trace`), holding the guard.
pub fn trace(lab: &Lab, opts: &TraceOptions) -> Result<Trace> {
    let mut traced = start(lab, opts)?;
    traced.wait();
    traced.finish()
}

impl Traced<'_> {
    pub fn take_pidfd(&mut self) -> Option<std::os::fd::OwnedFd> {
        self.session.take_pidfd()
    }

    pub fn root_pid(&self) -> i32 {
        self.session.root_pid()
    }

    pub fn t0_ns(&self) -> u64 {
        self.session.t0_ns()
    }

    pub fn status(&self) -> Status {
        self.session.status()
    }

    /// The root's exit (code, signal), waiting up to `patience` for the tracer to reap it.
    pub fn root_exit(&self, patience: std::time::Duration) -> Option<(Option<i32>, Option<i32>)> {
        self.session.root_exit(patience)
    }

    pub fn wait_listen_on(&self, port: u16, patience: std::time::Duration) -> bool {
        self.session.wait_listen_on(port, patience)
    }

    pub fn wait(&mut self) -> Outcome {
        self.session.wait()
    }

    pub fn kill(&self) {
        self.session.kill()
    }

    /// Kill what is left, wait for the tracer, release the guard, return the trace.
    pub fn finish(self) -> Result<Trace> {
        let Traced { session, _guard } = self;
        session.finish()
    }
}
