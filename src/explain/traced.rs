//! One traced run with a readiness probe. The tracer thread owns the target's
//! ptrace stops; this thread probes. While the session is live nothing here may
//! waitpid(-1): a stolen ptrace stop would hang the tracee (see trace::Session).

use crate::clock::now_ns;
use crate::launch::wait::{pollfd, ppoll, TightTimers};
use crate::launch::{output::LineBuffer, signals, tree};
use crate::probe::{self, Probe};
use crate::target::{Readiness, Target};
use crate::trace::{self, Event, StopWhen, Trace};
use anyhow::{bail, Context, Result};
use std::io::Read;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

const POLL: Duration = Duration::from_micros(200);

/// Spawn → ready under the tracer; returns ready (ns since t0) and the trace.
pub fn run(target: &Target, readiness: &Readiness, timeout: Duration) -> Result<(u64, Trace)> {
    probe::refuse_if_port_taken(readiness)?;
    let mut opts = crate::launch::traced::options(target);
    opts.timeout = timeout;
    if matches!(readiness, Readiness::Exit) {
        opts.stop_when = StopWhen::Exit;
        let trace = trace::trace(&opts).context("cannot trace the target")?;
        tree::kill_all(trace.root_pid);
        let exit = trace
            .events
            .iter()
            .find(|e| e.pid == trace.root_pid && matches!(e.event, Event::Exit { .. }))
            .map(|e| e.ts_ns);
        let Some(exit) = exit else {
            bail!(
                "the traced run did not exit within --timeout ({:.0} s)",
                timeout.as_secs_f64()
            )
        };
        return Ok((exit.saturating_sub(trace.t0_ns), trace));
    }
    // Output goes to a pipe we read (the log probe needs it; others just drain it).
    let (out_read, out_write) = coldstart_sys::pipe::pipe(true).context("creating the output pipe")?;
    let mut out_read = std::fs::File::from(out_read);
    opts.output = Some(out_write);
    let mut probe = Probe::new(readiness)?;
    let session = trace::start(&opts).context("cannot trace the target")?;
    // After the start: the tracer thread (which forks the target) was created
    // from this thread and would have inherited the slack.
    // Timer slack of 1 ns while probing, as in the untraced runs: otherwise
    // every wait stretches and the lag inflates the traced ready time only.
    let _slack = TightTimers::on();
    let _current = signals::Current::set(session.root_pid());
    let t0 = session.t0_ns();
    let deadline = t0 + timeout.as_nanos() as u64;
    let mut lines = LineBuffer::new(10);
    let mut buf = [0u8; 16 * 1024];
    let ready = loop {
        if signals::interrupted() {
            break None;
        }
        let mut line_ready = false;
        while let Ok(n) = out_read.read(&mut buf) {
            if n == 0 {
                break;
            }
            lines.feed(&buf[..n], |l| line_ready |= probe.on_line(l));
        }
        if line_ready || probe.check(Duration::from_nanos(deadline.saturating_sub(now_ns()))) {
            break Some(now_ns() - t0);
        }
        if session.status().exited {
            let trace = session.finish()?;
            tree::kill_all(trace.root_pid);
            bail!(
                "the target exited before ready under the tracer; last output:\n  | {}",
                lines.tail().join("\n  | ")
            );
        }
        if now_ns() >= deadline {
            break None;
        }
        // Output and file events wake us at once; otherwise this is the probe's
        // (and the exit check's) cadence.
        wait(&[Some(out_read.as_raw_fd()), probe.pollfd().map(|p| p.fd)], POLL);
    };
    let trace = session.finish()?;
    tree::kill_all(trace.root_pid);
    match ready {
        Some(ns) => Ok((ns, trace)),
        None if signals::interrupted() => bail!("interrupted"),
        None => bail!(
            "not ready within --timeout ({:.0} s) under the tracer; last output:\n  | {}",
            timeout.as_secs_f64(),
            lines.tail().join("\n  | ")
        ),
    }
}

/// ppoll(2) for readability on `fds` for at most `timeout`. The result does not
/// matter: the caller rechecks everything.
fn wait(fds: &[Option<RawFd>], timeout: Duration) {
    let mut pfds: Vec<libc::pollfd> = fds.iter().flatten().map(|&fd| pollfd(fd)).collect();
    ppoll(&mut pfds, timeout.as_nanos() as u64);
}
