//! The run engine: one run of one target, spawn → ready → (requests) → stop →
//! cleanup, producing one Sample. The same loop serves every kind of run: a
//! launcher (plain, or under the tracer: `launcher.rs`) starts the target, and
//! instruments — the readiness probe, checkpoint and log marks, the adapters'
//! claimed lines — are driven from one ppoll(2).
//!
//! A single thread waits on the target's pidfd, its output pipes and the probe's
//! descriptor (inotify, or the tcp/http attempt in flight), so exit, log lines,
//! file creation and the probe's progress are seen the moment they happen, and a
//! line printed while a GET is outstanding is stamped when it is read. A new
//! tcp/http attempt starts every poll interval; the `--requests` GETs after ready
//! are driven the same way. A traced run returns the same Sample with its trace.

pub mod cache;
pub mod conditions;
pub mod hooks;
mod launcher;

pub use launcher::Launch;
use launcher::{How, Launched};

use crate::clock::now_ns;
use crate::launch::output::{tail_of_file, LineBuffer, Stream};
use crate::launch::wait::{pollfd, ppoll, TightTimers};
use crate::launch::{signals, tree, usage};
use crate::marks::Marks;
use crate::probe::{self, Probe};
use crate::sample::{ExitStatus, Outcome, Sample};
use crate::target::{Readiness, Target};
use anyhow::{bail, Context, Result};
use std::io::Read;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// How often a daemonized tree (main process gone) is checked for survivors.
const TREE_CHECK_NS: u64 = 10_000_000;
/// How often a traced `--ready listen` run looks at the tracer's first listen.
const TRACER_STATUS_NS: u64 = 200_000;

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub timeout: Duration,
    pub poll_interval: Duration,
    /// Requests to send after ready: to `request_url`, else to the http readiness URL.
    pub requests: usize,
    pub request_url: Option<url::Url>,
    /// SIGTERM → SIGKILL grace at stop.
    pub grace: Duration,
    pub tail_lines: usize,
    /// --mark NAME=REGEX: output lines that become marks.
    pub log_marks: Vec<(String, regex::Regex)>,
    /// Output lines a runtime adapter's switch writes: kept out of the probe,
    /// the marks and the tail, and returned in [`Sample::claimed`].
    pub claims: Vec<regex::Regex>,
    /// Which exit statuses are a success (exit readiness; a daemonizing main process).
    pub exit_policy: crate::sample::ExitPolicy,
    /// `--show-output`: the target's output goes to our stdout/stderr (no failure tail).
    pub show_output: bool,
}

/// The one way to build [`RunOptions`]: [`RunOptions::new`], then what a
/// command changes. Every command's runs share the same defaults this way.
impl RunOptions {
    /// A run that waits for ready and stops: probe every 200 µs, 2 s of grace,
    /// a 10-line failure tail, exit 0 a success, no requests, marks or claims.
    pub fn new(timeout: Duration) -> RunOptions {
        RunOptions {
            timeout,
            poll_interval: Duration::from_micros(200),
            requests: 0,
            request_url: None,
            grace: Duration::from_secs(2),
            tail_lines: 10,
            log_marks: Vec::new(),
            claims: Vec::new(),
            exit_policy: crate::sample::ExitPolicy::default(),
            show_output: false,
        }
    }

    /// `--requests N [--request-url URL]`: without a URL the GETs go to the
    /// http readiness URL (see [`RunOptions::lacks_url`]).
    pub fn requests(mut self, requests: usize, url: Option<&str>) -> Result<RunOptions> {
        self.request_url = url
            .map(|u| url::Url::parse(u).map_err(|e| anyhow::anyhow!("bad --request-url '{u}': {e}")))
            .transpose()?;
        self.requests = requests;
        Ok(self)
    }

    /// `--mark NAME=REGEX`, each.
    pub fn marks(mut self, marks: &[String]) -> Result<RunOptions> {
        self.log_marks = marks
            .iter()
            .map(|m| crate::marks::parse_log_mark(m))
            .collect::<Result<_>>()?;
        Ok(self)
    }

    pub fn exit_policy(mut self, policy: crate::sample::ExitPolicy) -> RunOptions {
        self.exit_policy = policy;
        self
    }

    pub fn poll_interval(mut self, every: Duration) -> RunOptions {
        self.poll_interval = every;
        self
    }

    pub fn grace(mut self, grace: Duration) -> RunOptions {
        self.grace = grace;
        self
    }

    /// `--output-lines` and `--show-output`.
    pub fn output(mut self, tail_lines: usize, show: bool) -> RunOptions {
        self.tail_lines = tail_lines;
        self.show_output = show;
        self
    }

    /// The same timing and stop, without what belongs to the command's own
    /// target (requests, marks, claims): for runs of another program.
    pub fn bare(&self) -> RunOptions {
        RunOptions {
            requests: 0,
            request_url: None,
            log_marks: Vec::new(),
            claims: Vec::new(),
            ..self.clone()
        }
    }

    /// Requests are asked for but have nowhere to go: no `--request-url` and
    /// a readiness other than http.
    pub fn lacks_url(&self, readiness: &Readiness) -> bool {
        self.requests > 0 && self.request_url.is_none() && !matches!(readiness, Readiness::Http { .. })
    }
}

pub use crate::sample::RunId;

/// What a variant of plain runs is: a target and when it counts as ready.
#[derive(Debug, Clone)]
pub struct Spec {
    pub target: Target,
    pub readiness: Readiness,
}

impl Spec {
    /// The variant as the plan, the store and the reports see it.
    pub fn variant(&self, name: impl Into<String>) -> crate::experiment::Variant {
        crate::experiment::Variant {
            name: name.into(),
            target: self.target.clone(),
            readiness: self.readiness.to_string(),
            params: Vec::new(),
        }
    }
}

/// `bench`'s runner: each variant's spec (in the plan's variant order), run
/// with [`run_once`] and the options every variant shares.
#[derive(Debug, Clone)]
pub struct Plain {
    pub specs: Vec<Spec>,
    pub opts: RunOptions,
    /// Hooks and cache state around each run (untimed).
    pub conditions: conditions::Conditions,
}

impl Plain {
    /// After the experiment: each variant's `--cleanup`.
    pub fn finish(&mut self) -> Result<()> {
        self.conditions.finish(&self.specs)
    }
}

impl crate::experiment::Runner for Plain {
    fn run(&mut self, variant: usize, id: RunId) -> Result<Sample> {
        let Some(spec) = self.specs.get(variant) else {
            bail!("no variant {variant}: the plan and the runner disagree")
        };
        let opts = &self.opts;
        self.conditions.around(variant, spec, opts, id, || {
            run_once(&spec.target, &spec.readiness, opts, id)
        })
    }
}

/// One plain run. Errors here abort the experiment (bad setup); a target that
/// fails to become ready is not an error but a Sample with a failed outcome.
pub fn run_once(target: &Target, readiness: &Readiness, opts: &RunOptions, id: RunId) -> Result<Sample> {
    // LD_PRELOAD cannot see a static or Go program's listen: the tracer can.
    let launch = if matches!(readiness, Readiness::Listen) && probe::listen::needs_tracer(&target.program) {
        Launch::Traced { lean: true }
    } else {
        Launch::Plain
    };
    let mut sample = run(target, readiness, opts, id, launch)?;
    // The tracer was only the listen probe here.
    sample.trace = None;
    Ok(sample)
}

/// One run under the syscall tracer: the same Sample as [`run_once`], with the
/// trace attached.
pub fn run_traced(target: &Target, readiness: &Readiness, opts: &RunOptions, id: RunId) -> Result<Sample> {
    run(target, readiness, opts, id, Launch::Traced { lean: false })
}

/// One plain run sampled by the CPU profiler from its exec to ready: the same
/// Sample as [`run_once`], with the recording attached.
pub fn run_profiled(target: &Target, readiness: &Readiness, opts: &RunOptions, id: RunId) -> Result<Sample> {
    run(target, readiness, opts, id, Launch::Profiled)
}

/// The engine: one run with the given launcher.
pub fn run(
    target: &Target,
    readiness: &Readiness,
    opts: &RunOptions,
    id: RunId,
    launch: Launch,
) -> Result<Sample> {
    probe::refuse_if_port_taken(readiness)?;
    let traced = matches!(launch, Launch::Traced { .. });
    let traced_listen = traced && matches!(readiness, Readiness::Listen);
    let mut probe = if traced_listen {
        // The tracer's first listen is the ready instant; nothing to probe.
        Probe::Exit
    } else {
        Probe::new(readiness)?
    };
    let mut marks = Marks::new(&opts.log_marks)?;
    let mut env = marks.before_spawn();
    if matches!(probe, Probe::Listen) && !traced {
        let existing = crate::target::effective_var(&target.env, "LD_PRELOAD");
        env.push(probe::listen::preload_env(existing.as_deref())?);
    }
    let pipes = probe.needs_pipes() || marks.needs_output() || !opts.claims.is_empty();
    let poll_every = probe.poll_interval(opts.poll_interval);
    let requests = request_endpoint(readiness, opts)?;
    let mut lines = LineBuffer::new(opts.tail_lines)
        .with_claims(opts.claims.clone())
        .with_echo(opts.show_output);

    let mut child = match launch {
        Launch::Plain => {
            let prepared = launcher::prepare_plain(target, pipes, opts.show_output, &env)?;
            launcher::spawn_plain(prepared, target)?
        }
        Launch::Profiled => {
            let prepared = launcher::prepare_plain(target, pipes, opts.show_output, &env)?;
            launcher::spawn_profiled(prepared, target)?
        }
        Launch::Traced { lean } => launcher::spawn_traced(target, &env, lean, opts.timeout)?,
    };
    let t0 = child.t0;
    marks.spawned(t0);
    let _current = signals::Current::set(child.pid);
    // After the spawn: the tracer thread (created by a traced spawn) must not
    // inherit the 1 ns slack, and children inherit it too.
    let _slack = (poll_every.is_some() || traced_listen).then(TightTimers::on);
    // How often the tracer's status is looked at for its first listen (the
    // instant is the tracer's own, so this cadence does not touch the figure).
    // Other traced runs wake only for their events, as plain ones do: the
    // tracee and the tracer thread need the CPUs more than we do.
    let status_every = traced_listen.then_some(TRACER_STATUS_NS);
    let deadline = t0 + opts.timeout.as_nanos() as u64;
    let mut next_check = t0;
    let mut next_status = t0;

    let mut sample = Sample::begin(&id, t0);
    // The root's exit status and rusage once it was reaped (a traced root is
    // reaped by the tracer: its status comes from the trace, no rusage).
    let mut exited: Option<(Option<ExitStatus>, Option<libc::rusage>)> = None;

    // Set when the main process exited with status 0 while its descendants run
    // on (a daemonizing target): readiness is still awaited from them.
    let mut main_exited = child.pidfd.is_none();
    let mut next_tree_check: u64 = 0;

    loop {
        let now = now_ns();
        if now >= deadline {
            sample.outcome = Outcome::Timeout;
            break;
        }
        let mut wait_ns = deadline - now;
        if poll_every.is_some() && !probe.in_flight() {
            wait_ns = wait_ns.min(next_check.saturating_sub(now));
        }
        if main_exited {
            wait_ns = wait_ns.min(next_tree_check.saturating_sub(now));
        }
        if status_every.is_some() {
            wait_ns = wait_ns.min(next_status.saturating_sub(now));
        }
        // Checkpoints are watched live only when one makes the run ready; otherwise
        // they wait in the pipe (its end-of-file at exit would cost the exit
        // probe an extra wake-up) and are read on every wake and at the end.
        let live_marks = if matches!(probe, Probe::Listen) {
            marks.fd()
        } else {
            None
        };
        let mut fds = poll_set(&child, !main_exited, &[live_marks]);
        let probe_at = probe.pollfd().map(|p| {
            fds.push(p);
            fds.len() - 1
        });
        let events = ppoll(&mut fds, wait_ns);
        let woke = now_ns();
        if signals::interrupted() {
            sample.outcome = Outcome::Interrupted;
            break;
        }
        if let Some(every) = status_every.filter(|_| woke >= next_status) {
            next_status = woke + every;
            let first_listen = child.trace_status().and_then(|s| s.first_listen);
            if let Some((t, _)) = first_listen.filter(|_| traced_listen) {
                sample.outcome = Outcome::Ready;
                sample.ready_ns = Some(t.saturating_sub(t0));
                break;
            }
        }
        if events > 0 {
            marks.drain();
            if let Some(t) = marks
                .find(probe::listen::MARK)
                .filter(|_| matches!(probe, Probe::Listen))
            {
                // The shim's own instant: no detection lag at all.
                sample.outcome = Outcome::Ready;
                sample.ready_ns = Some(t);
                break;
            }
            // Output first: a ready line printed just before exiting still counts.
            if drain_pipes(&mut child, &mut lines, &mut probe, &mut marks, woke) {
                sample.outcome = Outcome::Ready;
                sample.ready_ns = Some(woke - t0);
                break;
            }
            if probe_at.is_some_and(|i| fds[i].revents != 0) {
                if let Some(t) = probe.step(left(deadline)) {
                    sample.outcome = Outcome::Ready;
                    sample.ready_ns = Some(t.saturating_sub(t0));
                    break;
                }
                if !probe.in_flight() {
                    next_check = now_ns() + poll_every.map_or(0, |d| d.as_nanos() as u64);
                }
            }
            if !main_exited && fds[0].revents != 0 {
                if child.traced() {
                    // The tracer thread reaps its tracees; the status is read
                    // from the trace at the end.
                    main_exited = true;
                    if matches!(probe, Probe::Exit) && !traced_listen {
                        exited = Some((None, None));
                        sample.outcome = Outcome::Ready;
                        sample.ready_ns = Some(woke - t0);
                        break;
                    }
                    // As in a plain run: a root that fails ends the run now,
                    // whatever it left running (a clean exit may be a daemonizing
                    // start: readiness is still awaited from its tree).
                    match child.traced_root_exit() {
                        Some(status) if !opts.exit_policy.accepts(&status) => {
                            sample.exit_status = Some(status);
                            exited = Some((None, None));
                            sample.outcome = Outcome::ExitedEarly;
                            break;
                        }
                        _ => continue,
                    }
                }
                let (status, ru) = wait_exit(child.pid);
                let clean = opts.exit_policy.accepts(&status);
                sample.exit_status = Some(status.clone());
                exited = Some((Some(status), Some(ru)));
                if matches!(probe, Probe::Exit) {
                    // A crash is not a fast start: only a successful exit is ready.
                    if clean {
                        sample.outcome = Outcome::Ready;
                        sample.ready_ns = Some(woke - t0);
                    } else {
                        sample.outcome = Outcome::ExitFailure;
                    }
                    break;
                }
                if clean && !tree::nothing_left(child.pid) {
                    main_exited = true;
                    continue;
                }
                sample.outcome = Outcome::ExitedEarly;
                break;
            }
        }
        if main_exited && now_ns() >= next_tree_check {
            if tree_gone(&child) {
                sample.outcome = Outcome::ExitedEarly;
                break;
            }
            next_tree_check = now_ns() + TREE_CHECK_NS;
        }
        if poll_every.is_some() && !probe.in_flight() && now_ns() >= next_check {
            if let Some(t) = probe.step(left(deadline)) {
                sample.outcome = Outcome::Ready;
                sample.ready_ns = Some(t.saturating_sub(t0));
                break;
            }
            next_check = now_ns() + poll_every.map_or(0, |d| d.as_nanos() as u64);
        }
    }

    // The profile's window ends at ready (or at the failure), before any request or stop.
    child.stop_profile();
    if sample.ok() {
        if let Some(p) = &child.profiler {
            // A runtime that writes its JIT names only on request or at exit is asked now.
            let _ = p;
            crate::profile::runtimes::at_ready(&tree::members(child.pid));
        }
    }

    // Resource use up to ready: the main process's rusage once it was reaped
    // (covering the children it waited for), plus whatever still runs. A traced
    // root's rusage went to the tracer thread: only what still runs is counted.
    sample.usage = match &exited {
        Some((_, Some(ru))) => {
            let mut u = usage::from_rusage(ru);
            // Skip the procfs scan when the cheap check says nothing was left behind.
            if !tree::nothing_left(child.pid) {
                u.add(&usage::snapshot(&tree::members(child.pid)));
            }
            u
        }
        Some((_, None)) => Default::default(),
        None => usage::snapshot(&tree::members(child.pid)),
    };
    if sample.ok() {
        sample.captures = probe.captures();
    }
    // Traced runs too: `explain --requests` explains the requests' handling.
    if sample.ok() {
        if let Some(endpoint) = &requests {
            for _ in 0..opts.requests {
                let until = now_ns() + left(deadline).max(Duration::from_secs(5)).as_nanos() as u64;
                let Some(ns) = request(endpoint, &mut child, &mut lines, &mut probe, &mut marks, until)
                else {
                    break;
                };
                sample.requests_ns.push(ns);
                drain_pipes(&mut child, &mut lines, &mut probe, &mut marks, now_ns());
            }
        }
    }

    if child.traced() {
        if let Some(port) = probed_port(readiness).filter(|_| sample.ok()) {
            // The probe got in before the tracer saw the listen: wait for it, or
            // the trace would lack the service's listen.
            child.await_traced_listen(port, Duration::from_secs(2));
        }
        // No graceful stop under the tracer: the session kills the tree.
        if let Some(trace) = child.finish_trace()? {
            let status = launcher::traced_exit(&trace);
            let root_exit_was_ready = exited.is_some() && matches!(probe, Probe::Exit) && !traced_listen;
            if let Some(s) = status.as_ref().filter(|_| root_exit_was_ready) {
                // As in a plain run: a crash is not a fast start.
                if !opts.exit_policy.accepts(s) {
                    sample.outcome = Outcome::ExitFailure;
                    sample.ready_ns = None;
                }
            }
            if exited.is_some() || !sample.ok() {
                sample.exit_status = status;
            }
            if let (Some(_), Some(ru)) = (&exited, &trace.root_usage) {
                // The root was reaped by the tracer thread: its wait4 figures.
                let mut u = usage::from_root(ru);
                u.add(&sample.usage);
                sample.usage = u;
            }
            sample.trace = Some(Box::new(trace));
        }
        sample.killed = exited.is_none();
    } else if exited.is_none() {
        // Stop: SIGTERM to the group, grace, then SIGKILL for whatever is left.
        let t_term = now_ns();
        let _ = coldstart_sys::signal::kill_group(child.pid, libc::SIGTERM); // the group we created
                                                                             // On interrupt the group was already SIGKILLed: no grace to wait for.
        if sample.outcome != Outcome::Interrupted {
            let grace_end = t_term + opts.grace.as_nanos() as u64;
            if let Some((woke, status)) =
                wait_for_exit(&mut child, &mut lines, &mut probe, &mut marks, grace_end)
            {
                if !sample.ok() {
                    sample.exit_status = Some(status);
                }
                sample.shutdown_ns = Some(woke - t_term);
            }
        }
        sample.killed = sample.shutdown_ns.is_none();
    }
    if let Some(memory) = &child.memory {
        memory_figures(&mut sample, memory, &opts.exit_policy);
    }
    if !tree::kill_all(child.pid) {
        bail!(
            "could not kill every process of {} (still alive after SIGKILL for 2 s): check `ps -o pid,stat,cmd --ppid {}`",
            target.display_command(),
            std::process::id()
        );
    }
    drain_pipes(&mut child, &mut lines, &mut probe, &mut marks, now_ns());
    lines.finish(now_ns(), |_| {});
    sample.marks = marks.finish();
    sample.profile = child.profiler.take().map(|p| Box::new(p.finish()));
    sample.claimed = lines
        .take_claimed()
        .into_iter()
        .map(|(at, line)| (at.saturating_sub(t0), line))
        .collect();

    if !sample.ok() {
        sample.output_tail = match &mut child.how {
            How::Plain(prepared) => match prepared.output_file.as_mut() {
                Some(file) => tail_of_file(file, opts.tail_lines),
                None => lines.tail(),
            },
            How::Traced(_) => lines.tail(),
        };
    }
    if let Probe::File(f) = &probe {
        // The target created it during this run; the next run needs it gone.
        if f.path().exists() {
            std::fs::remove_file(f.path()).ok();
        }
    }
    Ok(sample)
}

/// A limited run's memory, read from its cgroup before the cgroup is removed:
/// the tree's peak (every process, from its first instruction: the metric
/// `memory_peak_mb`), and the processes the memory limit killed. Any such kill
/// fails the run, also when the root went on to exit 0 or become ready (a shell
/// that survives its child's OOM kill has not started what it was asked to):
/// the kill count is stored as the metric `oom_kills`, and `-i/--ignore-failure`
/// keeps such a run a success with a note instead.
fn memory_figures(
    sample: &mut Sample,
    memory: &crate::launch::limit_cgroups::MemoryWatch,
    policy: &crate::sample::ExitPolicy,
) {
    if let Some(peak) = memory.peak_bytes() {
        sample
            .metrics
            .insert(MEMORY_PEAK_METRIC.into(), peak as f64 / (1 << 20) as f64);
    }
    let Some(limit_bytes) = memory.limit_bytes else {
        return;
    };
    let kills = memory.oom_kills();
    if kills == 0 || sample.outcome == Outcome::Interrupted {
        return;
    }
    sample.metrics.insert(OOM_KILLS_METRIC.into(), kills as f64);
    if !sample.ok() || *policy != crate::sample::ExitPolicy::Ignore {
        sample.outcome = Outcome::OutOfMemory { limit_bytes, kills };
        sample.ready_ns = None;
    }
}

/// The metric a limited run's OOM kills (from its cgroup) are stored as, when any.
pub const OOM_KILLS_METRIC: &str = "oom_kills";

/// The metric a limited run's peak memory (MiB, from its cgroup) is stored as.
pub const MEMORY_PEAK_METRIC: &str = "memory_peak_mb";

/// Whether nothing of the run's tree is left. Under the tracer no waitpid(-1)
/// may run (a stolen ptrace stop would hang a tracee): the tracer knows.
fn tree_gone(child: &Launched) -> bool {
    match child.trace_status() {
        Some(status) => status.exited,
        None => tree::nothing_left(child.pid),
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

fn left(deadline: u64) -> Duration {
    Duration::from_nanos(deadline.saturating_sub(now_ns()))
}

/// Where `--requests` go (resolved before the spawn): `--request-url`, else the
/// http readiness URL.
fn request_endpoint(readiness: &Readiness, opts: &RunOptions) -> Result<Option<probe::http::Endpoint>> {
    if opts.requests == 0 {
        return Ok(None);
    }
    let own_url = match readiness {
        Readiness::Http { url } => Some(url),
        _ => None,
    };
    opts.request_url
        .as_ref()
        .or(own_url)
        .map(|url| probe::http::Endpoint::new(url).with_context(|| format!("--requests to {url}")))
        .transpose()
}

/// One `--requests` GET, driven in the run loop's way: output is read (and
/// stamped) while the response is outstanding. Its latency (start → last byte of
/// the response, whatever the status), or None when it got no response by `until`.
fn request(
    endpoint: &probe::http::Endpoint,
    child: &mut Launched,
    lines: &mut LineBuffer,
    probe: &mut Probe,
    marks: &mut Marks,
    until: u64,
) -> Option<u64> {
    use probe::http::{Answer, Get};
    let start = now_ns();
    let (mut get, mut answer) = Get::start(endpoint, Duration::from_nanos(until.saturating_sub(start)));
    while answer.is_none() {
        let get = get.as_mut()?;
        let now = now_ns();
        if now >= until || signals::interrupted() {
            return None;
        }
        let mut fds = poll_set(child, false, &[]);
        fds.push(get.pollfd());
        ppoll(&mut fds, until - now);
        let woke = now_ns();
        marks.drain();
        drain_pipes(child, lines, probe, marks, woke);
        answer = get.step(endpoint);
    }
    match answer? {
        Answer::Response { end_ns, .. } => Some(end_ns.saturating_sub(start)),
        Answer::Failed => None,
    }
}

/// Wait (draining output) until the main process exits or `until` passes;
/// returns when it exited and its status.
fn wait_for_exit(
    child: &mut Launched,
    lines: &mut LineBuffer,
    probe: &mut Probe,
    marks: &mut Marks,
    until: u64,
) -> Option<(u64, ExitStatus)> {
    loop {
        let now = now_ns();
        if now >= until {
            return None;
        }
        let mut fds = poll_set(child, true, &[]);
        ppoll(&mut fds, until - now);
        let woke = now_ns();
        marks.drain();
        drain_pipes(child, lines, probe, marks, woke);
        if fds[0].revents != 0 {
            return Some((woke, wait_exit(child.pid).0));
        }
    }
}

/// The pidfd first (unless the main process is gone), then the output pipes
/// still open, then the other descriptors given (checkpoints, probe events).
fn poll_set(child: &Launched, with_pidfd: bool, extra: &[Option<RawFd>]) -> Vec<libc::pollfd> {
    let mut fds = Vec::with_capacity(5);
    if with_pidfd {
        if let Some(pidfd) = &child.pidfd {
            fds.push(pollfd(pidfd.as_raw_fd()));
        }
    }
    for fd in [
        child.stdout.as_ref().map(|s| s.as_raw_fd()),
        child.stderr.as_ref().map(|s| s.as_raw_fd()),
    ]
    .into_iter()
    .chain(extra.iter().copied())
    .flatten()
    {
        fds.push(pollfd(fd));
    }
    fds
}

/// Read all available output (seen at `now`); feed lines to the probe and the
/// log marks. True if a line made it ready. A stream at end-of-file is dropped
/// so poll does not keep reporting it.
fn drain_pipes(
    child: &mut Launched,
    lines: &mut LineBuffer,
    probe: &mut Probe,
    marks: &mut Marks,
    now: u64,
) -> bool {
    let mut ready = false;
    let mut buf = [0u8; 16 * 1024];
    let mut on_line = |line: &str| {
        marks.on_line(line, now);
        if !ready && probe.on_line(line) {
            ready = true;
        }
    };
    if let Some(s) = child.stdout.as_mut() {
        if !drain(s, Stream::Stdout, now, &mut buf, lines, &mut on_line) {
            child.stdout = None;
        }
    }
    if let Some(s) = child.stderr.as_mut() {
        if !drain(s, Stream::Stderr, now, &mut buf, lines, &mut on_line) {
            child.stderr = None;
        }
    }
    ready
}

/// Read until it would block; false at end-of-file (or a hard error).
fn drain(
    stream: &mut impl Read,
    which: Stream,
    at_ns: u64,
    buf: &mut [u8],
    lines: &mut LineBuffer,
    on_line: &mut impl FnMut(&str),
) -> bool {
    loop {
        match stream.read(buf) {
            Ok(0) => return false,
            Ok(n) => lines.feed_stream(which, &buf[..n], at_ns, &mut *on_line),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return false,
        }
    }
}

/// Reap the (already exited) target, with its rusage.
fn wait_exit(pid: i32) -> (ExitStatus, libc::rusage) {
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid value for wait4 to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child; status and ru are valid out-pointers.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    if r != pid {
        return (
            ExitStatus {
                code: None,
                signal: None,
            },
            ru,
        );
    }
    (ExitStatus::from_wait(status), ru)
}
