//! The run engine: one run of one target, spawn → ready → (requests) → stop →
//! cleanup, producing one Sample. The same loop serves every kind of run: an
//! [`Executor`] (plain, profiled or under the tracer: `launcher.rs`) starts,
//! reaps and stops the target without the engine knowing which, and
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
mod container;
pub use container::KUBELET_READY_METRIC;
pub mod hooks;
mod launcher;
mod read_set;

pub use launcher::{
    Ended, Executor, Launched, Output, PlainExecutor, ProfiledExecutor, RootExit, TracedExecutor,
};

use crate::launch::lab::Lab;
use crate::launch::output::{LineBuffer, Stream};
use crate::launch::wait::{pollfd, ppoll, TightTimers};
use crate::launch::{signals, usage};
use crate::marks::Marks;
use crate::probe::{self, Probe};
use crate::sample::{ExitStatus, Outcome, Sample};
use crate::target::{Readiness, Target};
use anyhow::{bail, Context, Result};
use coldstart_sys::clock::now_ns;
use std::io::Read;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// How often a daemonized tree (main process gone) is checked for survivors.
const TREE_CHECK_NS: u64 = 10_000_000;

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
    /// `--read-set`: a container run records which of its image's files it read
    /// until ready (the image's files evicted from the page cache before each run).
    pub read_set: bool,
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
            read_set: false,
        }
    }

    /// `--read-set` for container runs.
    pub fn read_set(mut self, on: bool) -> RunOptions {
        self.read_set = on;
        self
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
    let lab = Lab::get()?;
    if let Some(c) = &target.container {
        container::reap_once(c)?;
        return run(
            &mut container::ContainerExecutor::new(lab, c.as_ref().clone(), opts.read_set),
            target,
            readiness,
            opts,
            id,
        );
    }
    // LD_PRELOAD cannot see a static or Go program's listen: the tracer can.
    let mut sample = if matches!(readiness, Readiness::Listen) && probe::listen::needs_tracer(&target.program)
    {
        run(
            &mut TracedExecutor::new(lab, true, opts.timeout),
            target,
            readiness,
            opts,
            id,
        )?
    } else {
        run(&mut PlainExecutor::new(lab), target, readiness, opts, id)?
    };
    // The tracer was only the listen probe here.
    sample.trace = None;
    Ok(sample)
}

/// One run under the syscall tracer: the same Sample as [`run_once`], with the
/// trace attached.
pub fn run_traced(target: &Target, readiness: &Readiness, opts: &RunOptions, id: RunId) -> Result<Sample> {
    let lab = Lab::get()?;
    run(
        &mut TracedExecutor::new(lab, false, opts.timeout),
        target,
        readiness,
        opts,
        id,
    )
}

/// One plain run sampled by the CPU profiler from its exec to ready: the same
/// Sample as [`run_once`], with the recording attached.
pub fn run_profiled(target: &Target, readiness: &Readiness, opts: &RunOptions, id: RunId) -> Result<Sample> {
    let lab = Lab::get()?;
    run(&mut ProfiledExecutor::new(lab), target, readiness, opts, id)
}

/// The engine: one run of `target`, started by `executor`.
pub fn run(
    executor: &mut dyn Executor,
    target: &Target,
    readiness: &Readiness,
    opts: &RunOptions,
    id: RunId,
) -> Result<Sample> {
    probe::refuse_if_port_taken(readiness)?;
    let mut run = Run::start(executor, target, readiness, opts, id)?;
    run.await_ready();
    run.up_to_ready();
    run.stop()?;
    if !run.exec.kill_all(run.child.pid) {
        bail!(
            "could not kill every process of {} (still alive after SIGKILL for 2 s): check `ps -o pid,stat,cmd --ppid {}`",
            target.display_command(),
            std::process::id()
        );
    }
    Ok(run.into_sample())
}

/// One run in progress: what the engine watches between the spawn and the Sample.
struct Run<'a> {
    exec: &'a mut dyn Executor,
    opts: &'a RunOptions,
    readiness: &'a Readiness,
    probe: Probe,
    marks: Marks,
    lines: LineBuffer,
    child: Launched,
    sample: Sample,
    /// The readiness probe's polling interval (tcp, http, polled file).
    poll_every: Option<Duration>,
    /// The executor's own view of the first listen is the ready instant, read this often (ns).
    listen_every: Option<u64>,
    /// The root's exit is the ready instant (`--ready exit`).
    exit_is_ready: bool,
    requests: Option<probe::http::Endpoint>,
    deadline: u64,
    /// Set once the root exited and the run took note: Some(its rusage when
    /// the executor reaped it).
    exited: Option<Option<libc::rusage>>,
    /// Set when the main process exited with status 0 while its descendants run
    /// on (a daemonizing target): readiness is still awaited from them.
    main_exited: bool,
    /// Held from after the spawn to the end of the run.
    _slack: Option<TightTimers>,
}

impl<'a> Run<'a> {
    /// Everything before the timed window, then the spawn.
    fn start(
        exec: &'a mut dyn Executor,
        target: &Target,
        readiness: &'a Readiness,
        opts: &'a RunOptions,
        id: RunId,
    ) -> Result<Run<'a>> {
        let listen_every = exec
            .listen_watch()
            .filter(|_| matches!(readiness, Readiness::Listen));
        let probe = if listen_every.is_some() {
            // The executor's first listen is the ready instant; nothing to probe.
            Probe::Exit
        } else {
            Probe::new(readiness)?
        };
        let mut marks = Marks::new(&opts.log_marks, exec.checkpoint_fd())?;
        let mut env = marks.before_spawn();
        if matches!(probe, Probe::Listen) {
            let existing = crate::target::effective_var(&target.env, "LD_PRELOAD");
            env.push(probe::listen::preload_env(existing.as_deref())?);
        }
        let pipes = probe.needs_pipes() || marks.needs_output() || !opts.claims.is_empty();
        let poll_every = probe.poll_interval(opts.poll_interval);
        let requests = request_endpoint(readiness, opts)?;
        let lines = LineBuffer::new(opts.tail_lines)
            .with_claims(opts.claims.clone())
            .with_echo(opts.show_output);
        let output = Output {
            pipes,
            show: opts.show_output,
        };
        let child = exec.spawn(target, &env, output)?;
        marks.spawned(child.t0);
        // After the spawn: a tracer thread (created by the spawn) must not
        // inherit the 1 ns slack, and children inherit it too.
        let _slack = (poll_every.is_some() || listen_every.is_some()).then(TightTimers::on);
        Ok(Run {
            exit_is_ready: matches!(probe, Probe::Exit) && listen_every.is_none(),
            deadline: child.t0 + opts.timeout.as_nanos() as u64,
            main_exited: child.pidfd.is_none(),
            sample: Sample::begin(&id, child.t0),
            exec,
            opts,
            readiness,
            probe,
            marks,
            lines,
            child,
            poll_every,
            listen_every,
            requests,
            exited: None,
            _slack,
        })
    }

    fn ready_at(&mut self, t: u64) {
        self.sample.outcome = Outcome::Ready;
        self.sample.ready_ns = Some(t.saturating_sub(self.child.t0));
    }

    /// The run loop: wait on the pidfd, the output, the probe and the
    /// executor's own view until the run is ready or has failed.
    fn await_ready(&mut self) {
        let t0 = self.child.t0;
        let (mut next_check, mut next_status, mut next_tree_check) = (t0, t0, 0u64);
        let mut next_tend = t0;
        loop {
            let now = now_ns();
            if now >= self.deadline {
                self.sample.outcome = Outcome::Timeout;
                return;
            }
            let mut wait_ns = self.deadline - now;
            if let Some(every) = self.exec.tend_every() {
                if now >= next_tend {
                    self.exec.tend(self.child.pid);
                    next_tend = now + every;
                }
                wait_ns = wait_ns.min(next_tend.saturating_sub(now));
            }
            if self.poll_every.is_some() && !self.probe.in_flight() {
                wait_ns = wait_ns.min(next_check.saturating_sub(now));
            }
            if self.main_exited {
                wait_ns = wait_ns.min(next_tree_check.saturating_sub(now));
            }
            if self.listen_every.is_some() {
                wait_ns = wait_ns.min(next_status.saturating_sub(now));
            }
            // Checkpoints are watched live only when one makes the run ready; otherwise
            // they wait in the pipe (its end-of-file at exit would cost the exit
            // probe an extra wake-up) and are read on every wake and at the end.
            let live_marks = matches!(self.probe, Probe::Listen)
                .then(|| self.marks.fd())
                .flatten();
            let mut fds = poll_set(&self.child, !self.main_exited, &[live_marks]);
            let probe_at = self.probe.pollfd().map(|p| {
                fds.push(p);
                fds.len() - 1
            });
            let events = ppoll(&mut fds, wait_ns);
            let woke = now_ns();
            if signals::interrupted() {
                self.sample.outcome = Outcome::Interrupted;
                return;
            }
            if let Some(every) = self.listen_every.filter(|_| woke >= next_status) {
                next_status = woke + every;
                if let Some(t) = self.exec.first_listen() {
                    return self.ready_at(t);
                }
            }
            if events > 0 {
                if self.on_events(woke, &fds, probe_at, &mut next_check) {
                    return;
                }
                if !self.main_exited && fds[0].revents != 0 && self.on_root_exit(woke) {
                    return;
                }
            }
            if self.main_exited && now_ns() >= next_tree_check {
                if self.exec.tree_gone(self.child.pid) {
                    self.sample.outcome = Outcome::ExitedEarly;
                    return;
                }
                next_tree_check = now_ns() + TREE_CHECK_NS;
            }
            if self.poll_every.is_some() && !self.probe.in_flight() && now_ns() >= next_check {
                if let Some(t) = self.probe.step(left(self.deadline)) {
                    return self.ready_at(t);
                }
                next_check = now_ns() + self.poll_every.map_or(0, |d| d.as_nanos() as u64);
            }
        }
    }

    /// Checkpoints, output and the probe after a wake with events; true when
    /// the run became ready.
    fn on_events(
        &mut self,
        woke: u64,
        fds: &[libc::pollfd],
        probe_at: Option<usize>,
        next_check: &mut u64,
    ) -> bool {
        self.marks.drain();
        if let Some(t) = self
            .marks
            .find(probe::listen::MARK)
            .filter(|_| matches!(self.probe, Probe::Listen))
        {
            // The shim's own instant: no detection lag at all.
            self.sample.outcome = Outcome::Ready;
            self.sample.ready_ns = Some(t);
            return true;
        }
        // Output first: a ready line printed just before exiting still counts.
        if drain_pipes(
            &mut self.child,
            &mut self.lines,
            &mut self.probe,
            &mut self.marks,
            woke,
        ) {
            self.ready_at(woke);
            return true;
        }
        if probe_at.is_some_and(|i| fds[i].revents != 0) {
            if let Some(t) = self.probe.step(left(self.deadline)) {
                self.ready_at(t);
                return true;
            }
            if !self.probe.in_flight() {
                *next_check = now_ns() + self.poll_every.map_or(0, |d| d.as_nanos() as u64);
            }
        }
        false
    }

    /// The root's pidfd is readable; true when that ends the wait.
    fn on_root_exit(&mut self, woke: u64) -> bool {
        let exit = self.exec.root_exited(self.child.pid, !self.exit_is_ready);
        self.main_exited = true;
        let policy = &self.opts.exit_policy;
        if self.exit_is_ready {
            // A crash is not a fast start: only a successful exit is ready (an
            // executor that cannot tell yet leaves it to its `finish`).
            let clean = exit.status.as_ref().is_none_or(|s| policy.accepts(s));
            if exit.status.is_some() {
                self.sample.exit_status = exit.status;
            }
            self.exited = Some(exit.rusage);
            if clean {
                self.ready_at(woke);
            } else {
                self.sample.outcome = Outcome::ExitFailure;
            }
            return true;
        }
        match exit.status {
            // A root that fails ends the run now, whatever it left running.
            Some(status) if !policy.accepts(&status) => {
                self.sample.exit_status = Some(status);
                self.exited = Some(exit.rusage);
                self.sample.outcome = Outcome::ExitedEarly;
                return true;
            }
            Some(status) if exit.rusage.is_some() => {
                self.sample.exit_status = Some(status);
                self.exited = Some(exit.rusage);
            }
            _ => {}
        }
        // A clean exit may be a daemonizing start: readiness is still awaited
        // from its tree, if anything of it is left.
        if self.exec.tree_gone(self.child.pid) {
            self.sample.outcome = Outcome::ExitedEarly;
            return true;
        }
        false
    }

    /// From ready (or the failure) to the stop: the measured window's end,
    /// resource use up to ready, captures, and the `--requests`.
    fn up_to_ready(&mut self) {
        let pid = self.child.pid;
        self.exec.window_ended(pid, self.sample.ok());
        // The main process's rusage once it was reaped (covering the children it
        // waited for), plus whatever still runs. A root reaped elsewhere (the
        // tracer) leaves only what still runs to be counted here.
        self.sample.usage = match &self.exited {
            Some(Some(ru)) => {
                let mut u = usage::from_rusage(ru);
                // Skip the procfs scan when the cheap check says nothing was left behind.
                if !self.exec.tree_gone(pid) {
                    u.add(&self.exec.tree_usage(pid));
                }
                u
            }
            Some(None) => Default::default(),
            None => self.exec.tree_usage(pid),
        };
        if !self.sample.ok() {
            return;
        }
        self.sample.captures = self.probe.captures();
        // Traced runs too: `explain --requests` explains the requests' handling.
        let Some(endpoint) = &self.requests else {
            return;
        };
        for _ in 0..self.opts.requests {
            let until = now_ns() + left(self.deadline).max(Duration::from_secs(5)).as_nanos() as u64;
            let Some(ns) = request(
                endpoint,
                &mut self.child,
                &mut self.lines,
                &mut self.probe,
                &mut self.marks,
                until,
            ) else {
                break;
            };
            self.sample.requests_ns.push(ns);
            drain_pipes(
                &mut self.child,
                &mut self.lines,
                &mut self.probe,
                &mut self.marks,
                now_ns(),
            );
        }
    }

    /// Stop: SIGTERM to the group, grace, (then SIGKILL for whatever is left,
    /// in `run`); or the executor's own end. Then its part of the Sample.
    fn stop(&mut self) -> Result<()> {
        let pid = self.child.pid;
        if self.exited.is_none() {
            let t_term = now_ns();
            // On interrupt the group was already SIGKILLed: no grace to wait for.
            if self.exec.terminate(pid) && self.sample.outcome != Outcome::Interrupted {
                let grace_end = t_term + self.opts.grace.as_nanos() as u64;
                if let Some((woke, status)) = self.wait_for_exit(grace_end) {
                    if !self.sample.ok() {
                        self.sample.exit_status = Some(status);
                    }
                    self.sample.shutdown_ns = Some(woke - t_term);
                }
            }
        }
        let end = Ended {
            readiness: self.readiness,
            policy: &self.opts.exit_policy,
            root_exited: self.exited.is_some(),
            exit_was_ready: self.exited.is_some() && self.exit_is_ready,
        };
        self.exec.finish(pid, &mut self.sample, &end)?;
        self.sample.killed = self.exited.is_none() && self.sample.shutdown_ns.is_none();
        if let Some(memory) = &self.child.memory {
            memory_figures(&mut self.sample, memory, &self.opts.exit_policy);
        }
        Ok(())
    }

    /// Wait (draining output) until the main process exits or `until` passes;
    /// returns when it exited and its status.
    fn wait_for_exit(&mut self, until: u64) -> Option<(u64, ExitStatus)> {
        loop {
            let now = now_ns();
            if now >= until {
                return None;
            }
            let mut wait_ns = until - now;
            if let Some(every) = self.exec.tend_every() {
                self.exec.tend(self.child.pid);
                wait_ns = wait_ns.min(every);
            }
            let mut fds = poll_set(&self.child, true, &[]);
            ppoll(&mut fds, wait_ns);
            let woke = now_ns();
            self.marks.drain();
            drain_pipes(
                &mut self.child,
                &mut self.lines,
                &mut self.probe,
                &mut self.marks,
                woke,
            );
            if fds[0].revents != 0 {
                let status = self.exec.root_exited(self.child.pid, true).status;
                return Some((
                    woke,
                    status.unwrap_or(ExitStatus {
                        code: None,
                        signal: None,
                    }),
                ));
            }
        }
    }

    /// After the cleanup: the rest of the output, the marks, what the executor
    /// recorded, and the failure's tail.
    fn into_sample(mut self) -> Sample {
        drain_pipes(
            &mut self.child,
            &mut self.lines,
            &mut self.probe,
            &mut self.marks,
            now_ns(),
        );
        self.lines.finish(now_ns(), |_| {});
        let mut sample = self.sample;
        sample.marks = self.marks.finish();
        self.exec.cleaned_up(&mut sample);
        let t0 = self.child.t0;
        sample.claimed = self
            .lines
            .take_claimed()
            .into_iter()
            .map(|(at, line)| (at.saturating_sub(t0), line))
            .collect();
        if !sample.ok() {
            sample.output_tail = match self.exec.output_tail(self.opts.tail_lines) {
                Some(tail) => tail,
                None => self.lines.tail(),
            };
        }
        if let Probe::File(f) = &self.probe {
            // The target created it during this run; the next run needs it gone.
            if f.path().exists() {
                std::fs::remove_file(f.path()).ok();
            }
        }
        sample
    }
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

/// The engine's decisions (ready, timeout, failure, the stop) with an executor
/// that starts nothing: its "pidfd" and output are pipes the test writes to
/// before the run, so every event is already there when the engine looks.
#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// What the mock was asked to do.
    #[derive(Default, Debug)]
    struct Calls {
        env: Vec<(String, String)>,
        terminated: bool,
        finished: bool,
        killed_all: bool,
    }

    /// A target that "exits" with `exit` (the pidfd readable from the start)
    /// or never, prints `output` (then keeps its stdout open), and whose first
    /// listen the executor sees `listen_after` ns after time zero.
    struct Mock {
        exit: Option<i32>,
        output: &'static str,
        listen_after: Option<u64>,
        tree_gone: bool,
        t0: u64,
        /// The write ends, open until the run ends (no end-of-file before).
        held: Vec<std::fs::File>,
        calls: Calls,
    }

    impl Mock {
        fn new() -> Mock {
            Mock {
                exit: None,
                output: "",
                listen_after: None,
                tree_gone: true,
                t0: 0,
                held: Vec::new(),
                calls: Calls::default(),
            }
        }
    }

    fn pipe() -> (std::fs::File, std::fs::File) {
        let (r, w) = coldstart_sys::pipe::pipe(false).expect("a pipe");
        coldstart_sys::fd::set_nonblocking(r.as_fd()).expect("non-blocking");
        (std::fs::File::from(r), std::fs::File::from(w))
    }

    use std::os::fd::{AsFd, OwnedFd};

    impl Executor for Mock {
        fn checkpoint_fd(&self) -> Option<RawFd> {
            None
        }

        fn listen_watch(&self) -> Option<u64> {
            self.listen_after.map(|_| 100_000)
        }

        fn spawn(&mut self, _: &Target, env: &[(String, String)], _: Output) -> Result<Launched> {
            self.calls.env = env.to_vec();
            let (exit_r, mut exit_w) = pipe();
            if self.exit.is_some() {
                exit_w.write_all(b"x").expect("the exit pipe");
            }
            let (out_r, mut out_w) = pipe();
            out_w.write_all(self.output.as_bytes()).expect("the output pipe");
            self.held.extend([exit_w, out_w]);
            self.t0 = now_ns();
            Ok(Launched {
                pid: 1 << 30,
                t0: self.t0,
                pidfd: Some(OwnedFd::from(exit_r)),
                stdout: Some(out_r),
                stderr: None,
                memory: None,
                group: None,
            })
        }

        fn first_listen(&self) -> Option<u64> {
            self.listen_after.map(|after| self.t0 + after)
        }

        fn root_exited(&mut self, _: i32, _: bool) -> RootExit {
            RootExit {
                status: self.exit.map(|code| ExitStatus {
                    code: Some(code),
                    signal: None,
                }),
                // SAFETY: an all-zero rusage is a valid value.
                rusage: Some(unsafe { std::mem::zeroed() }),
            }
        }

        fn tree_gone(&self, _: i32) -> bool {
            self.tree_gone
        }

        fn tree_usage(&self, _: i32) -> crate::sample::Usage {
            Default::default()
        }

        fn terminate(&mut self, _: i32) -> bool {
            self.calls.terminated = true;
            true
        }

        fn finish(&mut self, _: i32, _: &mut Sample, _: &Ended) -> Result<()> {
            self.calls.finished = true;
            Ok(())
        }

        fn kill_all(&mut self, _: i32) -> bool {
            self.calls.killed_all = true;
            true
        }
    }

    fn opts(timeout_ms: u64) -> RunOptions {
        RunOptions {
            poll_interval: Duration::from_millis(1),
            grace: Duration::from_millis(20),
            tail_lines: 5,
            ..RunOptions::new(Duration::from_millis(timeout_ms))
        }
    }

    fn run_mock(mock: &mut Mock, readiness: Readiness, timeout_ms: u64) -> Sample {
        let target = Target::new(vec!["true".into()], Vec::new(), None).expect("a target");
        let id = RunId {
            variant: 0,
            round: 0,
            warmup: false,
        };
        run(mock, &target, &readiness, &opts(timeout_ms), id).expect("the engine")
    }

    fn log(regex: &str) -> Readiness {
        Readiness::Log {
            regex: regex::Regex::new(regex).expect("a regex"),
        }
    }

    #[test]
    fn a_matching_line_is_ready_and_the_target_is_stopped_gracefully() {
        let mut mock = Mock::new();
        mock.output = "starting\nlistening on 8080\n";
        let s = run_mock(&mut mock, log("listening on (?P<port>\\d+)"), 10_000);
        assert_eq!(s.outcome, Outcome::Ready);
        assert!(s.ready_ns.is_some());
        assert_eq!(s.captures.get("port").map(String::as_str), Some("8080"));
        // Still running at ready: SIGTERM, no exit within the grace, killed.
        assert!(mock.calls.terminated && mock.calls.finished && mock.calls.killed_all);
        assert!(s.killed);
        assert!(s.shutdown_ns.is_none());
    }

    #[test]
    fn nothing_happening_is_a_timeout_with_the_output_tail() {
        let mut mock = Mock::new();
        mock.output = "still warming up\n";
        let s = run_mock(&mut mock, log("^ready$"), 30);
        assert_eq!(s.outcome, Outcome::Timeout);
        assert_eq!(s.ready_ns, None);
        assert_eq!(s.output_tail, ["still warming up"]);
        assert!(mock.calls.terminated && mock.calls.killed_all && s.killed);
    }

    #[test]
    fn a_failed_exit_is_no_fast_start_and_needs_no_stop() {
        let mut mock = Mock::new();
        mock.exit = Some(3);
        let s = run_mock(&mut mock, Readiness::Exit, 10_000);
        assert_eq!(s.outcome, Outcome::ExitFailure);
        assert_eq!(s.ready_ns, None);
        assert_eq!(s.exit_status.as_ref().and_then(|e| e.code), Some(3));
        assert!(!mock.calls.terminated, "an exited root gets no SIGTERM");
        assert!(!s.killed);
        assert!(mock.calls.killed_all, "the tree is still cleaned up");
    }

    #[test]
    fn a_clean_exit_is_ready_with_exit_readiness() {
        let mut mock = Mock::new();
        mock.exit = Some(0);
        let s = run_mock(&mut mock, Readiness::Exit, 10_000);
        assert_eq!(s.outcome, Outcome::Ready);
        assert_eq!(s.exit_status.as_ref().and_then(|e| e.code), Some(0));
    }

    #[test]
    fn a_clean_exit_that_leaves_nothing_before_ready_exited_early() {
        let mut mock = Mock::new();
        mock.exit = Some(0);
        let s = run_mock(&mut mock, log("^ready$"), 10_000);
        assert_eq!(s.outcome, Outcome::ExitedEarly);
    }

    #[test]
    fn a_clean_exit_whose_tree_lives_on_is_still_awaited() {
        // A daemonizing start: the root exits 0, its tree runs on, readiness
        // is awaited from it (here: in vain, until the deadline).
        let mut mock = Mock::new();
        mock.exit = Some(0);
        mock.tree_gone = false;
        let s = run_mock(&mut mock, log("^ready$"), 30);
        assert_eq!(s.outcome, Outcome::Timeout);
        assert!(!mock.calls.terminated, "the root was reaped: nothing to SIGTERM");
    }

    #[test]
    fn the_executors_own_first_listen_is_ready_without_the_preload_shim() {
        let mut mock = Mock::new();
        mock.listen_after = Some(5_000);
        let s = run_mock(&mut mock, Readiness::Listen, 10_000);
        assert_eq!(s.outcome, Outcome::Ready);
        assert_eq!(s.ready_ns, Some(5_000));
        assert!(
            !mock.calls.env.iter().any(|(k, _)| k == "LD_PRELOAD"),
            "no shim when the executor sees the listen: {:?}",
            mock.calls.env
        );
    }
}
