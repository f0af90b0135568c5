//! `coldstart explain`: arguments → an experiment of three arms (untraced,
//! traced, adapted) run by the scheduler and recorded by the session → the
//! explanation, stored beside the runs, exported and printed.

use crate::cli::ExplainArgs;
use adapter::Adapter;
use anyhow::{bail, Context, Result};
use coldstart::config;
use coldstart::experiment::{Order, Plan, Runner, StopReason, StopRule, Variant};
use coldstart::explain::{self, adapted, adapter, otlp, ADAPTED, ARMS, TRACED, UNTRACED};
use coldstart::launch::signals;
use coldstart::out;
use coldstart::report::{self, export::Exports};
use coldstart::run::{run_once, run_traced, RunId, RunOptions};
use coldstart::sample::{ExitPolicy, Outcome, Sample};
use coldstart::session::{self, Outputs};
use coldstart::store::Store;
use coldstart::target::{parse_env, Readiness, Target};
use std::time::Duration;

pub fn run(args: &ExplainArgs) -> Result<i32> {
    if args.command.is_empty() {
        bail!("no command to explain: put it after `--`, e.g. `coldstart explain --ready exit -- python3 -c pass`");
    }
    let env = args
        .env
        .iter()
        .map(|e| parse_env(e))
        .collect::<Result<Vec<_>>>()?;
    let limits = args.limits.parse_over(&Default::default())?;
    let target = Target::new(args.command.clone(), env, args.cwd.clone())?.with_limits(limits);
    let readiness = Readiness::parse(args.ready.as_deref().unwrap_or("exit"))?;
    let exports = Exports {
        json: args.export_json.clone(),
        trace: args.export_trace.clone(),
        ..Exports::default()
    };
    exports.check()?;
    let timeout = coldstart::bounds::seconds("--timeout", args.timeout, false)?;
    let runs = coldstart::bounds::runs("--runs", args.runs, 1)?;
    let warmup = coldstart::bounds::runs("--warmup", args.warmup, 0)?;
    let opts = RunOptions {
        timeout,
        poll_interval: Duration::from_micros(200),
        requests: 0,
        request_url: None,
        grace: Duration::from_secs(2),
        tail_lines: 10,
        log_marks: args
            .marks
            .iter()
            .map(|m| coldstart::marks::parse_log_mark(m))
            .collect::<Result<_>>()?,
        claims: Vec::new(),
        exit_policy: ExitPolicy::from_flags(args.ignore_failure, args.success_exit_codes.as_deref())?,
    };
    // An unknown adapter name is refused now, not after the first runs.
    adapter::select(&args.adapter, None)?;
    let root = config::project_root();
    let cfg = config::load(&root)?;
    let plan = Plan {
        variants: ARMS
            .iter()
            .map(|name| Variant {
                name: name.to_string(),
                target: target.clone(),
                readiness: readiness.to_string(),
            })
            .collect(),
        warmup,
        order: Order::Shuffled,
        stop: StopRule::Fixed { runs },
        keep_going: false,
        seed: args
            .seed
            .unwrap_or_else(|| coldstart::clock::now_ns() ^ u64::from(std::process::id())),
    };
    let outputs = Outputs {
        store: (!args.no_store).then(|| config::store_spec(args.store.store.as_deref(), cfg.as_ref(), &root)),
        quiet: args.quiet,
        noise: coldstart::stats::DEFAULT_NOISE,
        // The experiment's own formats are `show`'s; explain writes its explanation below.
        exports: Exports::default(),
    };
    let settings = session::settings(&plan, (&opts).into(), outputs.noise);
    // The untraced and traced runs export to a receiver too (one that keeps
    // nothing), so an app with an OpenTelemetry SDK behaves the same in every kind
    // of run instead of retrying a missing collector in all but the adapted ones.
    let sink = if args.no_otlp {
        None
    } else {
        Some(otlp::Receiver::start().context("starting the OTLP receiver (--no-otlp runs without it)")?)
    };
    let mut run_target = target;
    if let Some(r) = &sink {
        run_target.env.extend(r.env());
    }
    if !args.quiet {
        out::errln!(
            "coldstart explain: {runs} untraced, {runs} traced and {runs} adapted runs, interleaved…"
        );
    }
    let mut arms = Arms {
        args,
        target: run_target,
        readiness,
        opts,
        // `--adapter none` needs no traced run to choose from.
        adapters: (args.adapter.trim() == "none").then(Vec::new),
        adapted: Vec::new(),
    };
    if arms.adapters.is_some() && !args.quiet {
        out::errln!("coldstart explain: adapters: none");
    }
    let (mut m, store_error) = session::run(&plan, &settings, &outputs, &mut arms)?;
    match m.result.stopped {
        Some(StopReason::Interrupted) => {
            if let Some((id, at)) = &m.stored_as {
                out::errln!("coldstart: interrupted; the runs so far are stored as experiment {id} in {at}");
            }
            return Ok(130);
        }
        Some(StopReason::Failure) => {
            let failed = m.result.samples.last().filter(|s| !s.ok());
            let arm = failed.map_or("a", |s| ARMS[s.variant]);
            // Blame the adapters' switches only when the plain program did start.
            let plain_ok = m.result.samples.iter().any(|s| s.variant == UNTRACED && s.ok());
            let hint = if plain_ok && failed.is_some_and(|s| s.variant == ADAPTED) {
                " (it had the adapters' switches on: try --adapter none)"
            } else {
                ""
            };
            let stored = m
                .stored_as
                .as_ref()
                .map(|(id, at)| format!("; its runs are stored as experiment {id} in {at}"))
                .unwrap_or_default();
            // A run that failed is the target's outcome, not bad input: exit 1, as bench.
            out::errln!("coldstart: the explain stopped: {arm} run failed, as shown above{hint}{stored}");
            return Ok(1);
        }
        _ => {}
    }
    let adapters = arms.adapters.take().unwrap_or_default();
    let mut explanation = explain::from_experiment(&mut m.result, &arms.adapted, &adapters)?;
    explanation.otlp = !args.no_otlp;
    let json = serde_json::to_string_pretty(&explanation)? + "\n";
    if let (Some((id, location)), Some(spec)) = (&m.stored_as, &outputs.store) {
        Store::open(spec)
            .and_then(|mut s| s.add_explanation(*id, &json))
            .with_context(|| format!("the runs are stored as experiment {id} in {location}"))?;
    }
    if let Some(p) = &exports.json {
        report::write_export(p, json.as_bytes())?;
    }
    if let (Some(p), Some(trace)) = (&exports.trace, &explanation.trace) {
        let doc = report::chrome_trace::to_chrome_trace(trace, &explanation.timeline, &explanation.sources);
        report::write_export(p, serde_json::to_string(&doc)?.as_bytes())?;
    }
    // Printed last: exports survive a reader that closes stdout early.
    out::out!("{}", report::explain::render(&explanation))?;
    if let Some((id, location)) = &m.stored_as {
        out::outln!("stored as experiment {id} in {location}")?;
    }
    if let Some(e) = store_error {
        return Err(e.context("the runs were measured and printed, but storing them failed"));
    }
    Ok(0)
}

/// The runner of the three arms. The adapters are chosen from the first traced
/// run's final exec (what really runs after shims and wrappers), then kept for
/// every adapted run; an adapted run scheduled before any traced one first
/// traces one run, unrecorded, to choose them.
struct Arms<'a> {
    args: &'a ExplainArgs,
    /// The command, with the OTLP receiver's environment when one runs.
    target: Target,
    readiness: Readiness,
    opts: RunOptions,
    adapters: Option<Vec<Box<dyn Adapter>>>,
    /// The measured adapted runs, their adapters' files kept for the sections.
    adapted: Vec<adapted::AdaptedRun>,
}

impl Runner for Arms<'_> {
    fn run(&mut self, v: usize, id: RunId) -> Result<Sample> {
        match v {
            TRACED => {
                let s = self.traced(id)?;
                if self.adapters.is_none() {
                    if let Some(trace) = &s.trace {
                        self.choose(trace)?;
                    }
                }
                Ok(s)
            }
            ADAPTED => {
                if self.adapters.is_none() {
                    let s = self.traced(RunId { warmup: true, ..id })?;
                    match &s.trace {
                        Some(trace) if s.ok() => self.choose(trace)?,
                        // Interrupted (or failed): the scheduler stops on it.
                        _ => return Ok(s),
                    }
                }
                let chosen = self.adapters.as_deref().unwrap_or_default();
                let a = adapted::run(
                    &self.target,
                    &self.readiness,
                    &self.opts,
                    chosen,
                    !self.args.no_otlp,
                    id,
                )?;
                let sample = a.sample.clone();
                if !id.warmup {
                    self.adapted.push(a);
                }
                Ok(sample)
            }
            _ => run_once(&self.target, &self.readiness, &self.opts, id),
        }
    }
}

impl Arms<'_> {
    /// A traced run; one cut short by Ctrl-C is an interrupted sample, so the
    /// scheduler stops as it does for the other arms.
    fn traced(&self, id: RunId) -> Result<Sample> {
        let r = run_traced(&self.target, &self.readiness, &self.opts, id);
        if signals::interrupted() {
            let mut s = match r {
                Ok(s) => s,
                Err(_) => Sample::begin(&id, coldstart::clock::now_ns()),
            };
            s.outcome = Outcome::Interrupted;
            s.ready_ns = None;
            return Ok(s);
        }
        r
    }

    fn choose(&mut self, trace: &coldstart::trace::Trace) -> Result<()> {
        let chosen = explain::choose_adapters(&self.args.adapter, trace)?;
        if !self.args.quiet {
            let names: Vec<&str> = chosen.iter().map(|a| a.name()).collect();
            out::errln!(
                "coldstart explain: adapters: {}",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            );
        }
        self.adapters = Some(chosen);
        Ok(())
    }
}
